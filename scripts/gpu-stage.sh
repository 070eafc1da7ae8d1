#!/usr/bin/env bash
# Builds here everything one GPU-machine call needs and stages it in gpu_carry/NAME (ignored by
# git through .git/info/exclude; the device tool carries it with `carry: ["gpu_carry/NAME"]`):
#   libcelerity.so and the unit-test binary (release, --features mpi,cuda), the
#   runtime_throughput, granularity and million_tasks bench binaries, COMMIT, and optionally a
#   base library to compare against (BASE_LIB=path/to/libcelerity.so, e.g. an older staging).
#   EXTRA_FEATURES (e.g. mimalloc) adds cargo features to mpi,cuda.
# Then, on the device: `bash scripts/gpu-session.sh gpu_carry/NAME` (docs/gpu.md).
#   scripts/gpu-stage.sh NAME
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/gpu-stage.sh NAME}
dest=gpu_carry/$name
# The exclude file of the repository, also from a worktree (where .git is a file).
exclude=$(git rev-parse --git-common-dir)/info/exclude
grep -qx 'gpu_carry/' "$exclude" 2>/dev/null || echo 'gpu_carry/' >> "$exclude"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/gpu}
features=mpi,cuda${EXTRA_FEATURES:+,$EXTRA_FEATURES}
cargo build --locked --release --features "$features" --lib
executables() { # cargo's JSON messages -> the executables it built
    python3 -c 'import json,sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("executable"): print(m["target"]["name"], m["executable"])'
}
tests=$(cargo test --locked --release --features "$features" --lib --no-run --message-format=json | executables)
benches=$(cargo bench --locked --no-run --features "$features" --bench runtime_throughput \
    --bench granularity --bench million_tasks --message-format=json | executables)
rm -rf "$dest" && mkdir -p "$dest/bin"
cp "$CARGO_TARGET_DIR/release/libcelerity.so" "$dest/"
cp "$(echo "$tests" | awk '$1 == "celerity" {print $2}' | head -1)" "$dest/celerity_unit_tests"
echo "$benches" | while read -r bench path; do cp "$path" "$dest/bin/$bench"; done
if [ -n "${BASE_LIB:-}" ]; then mkdir -p "$dest/base" && cp "$BASE_LIB" "$dest/base/libcelerity.so"; fi
strip --strip-debug "$dest"/libcelerity.so "$dest"/celerity_unit_tests "$dest"/bin/* "$dest"/base/* 2>/dev/null || true
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+dirty')${EXTRA_FEATURES:+ +$EXTRA_FEATURES}" > "$dest/COMMIT"
du -sh "$dest"
echo "staged $dest ($(cat "$dest/COMMIT")); on the device: bash scripts/gpu-session.sh $dest"

#!/usr/bin/env bash
# Stages in gpu_carry/NAME what a side-by-side run of the graph benchmarks against C++ Celerity
# needs on the device machine, whose 16 quiet cores give steadier figures than this VM but which
# has no Rust toolchain: our four criterion bench binaries (task_graph, command_graph,
# instruction_graph, scheduler), C++ Celerity's Catch2 `benchmarks` binary with the shared
# libraries it loads from outside the base system, ../shared/tools/celerity-anchor's
# bench-side-by-side.sh, and a `cargo` stand-in that answers its `cargo bench --no-run` with the
# staged binaries. On the device (carry gpu_carry/NAME):
#   OUT=$OUT/sbs ROUNDS=2 bash gpu_carry/NAME/run.sh   (PAIRS, SAMPLES, CRIT_* as the script takes)
#   scripts/gpu-stage-dag-benches.sh NAME CELERITY_BENCHMARKS_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/gpu-stage-dag-benches.sh NAME CELERITY_BENCHMARKS_BINARY}
cpp_bin=$(realpath "${2:?usage: scripts/gpu-stage-dag-benches.sh NAME CELERITY_BENCHMARKS_BINARY}")
anchor=$(realpath ../shared/tools/celerity-anchor)
dest=gpu_carry/$name
# The exclude file of the repository, also from a worktree (where .git is a file).
exclude=$(git rev-parse --git-common-dir)/info/exclude
grep -qx 'gpu_carry/' "$exclude" 2>/dev/null || echo 'gpu_carry/' >> "$exclude"
benches=$(cargo bench --locked --no-run --bench task_graph --bench command_graph \
    --bench instruction_graph --bench scheduler --message-format=json | python3 -c 'import json,sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("executable"): print(m["target"]["name"], m["executable"])')
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib" "$dest/shim"
echo "$benches" | while read -r bench path; do cp "$path" "$dest/bin/$bench"; done
cp "$cpp_bin" "$dest/benchmarks"
# the libraries the C++ binary loads from a build tree or an extra package (mimalloc,
# boost_context); the device machine has glibc and libstdc++ of its own
ldd "$cpp_bin" | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libstdc\+\+|libgcc_s)\.so/ {print $3}' |
    while read -r lib; do cp -L "$lib" "$dest/lib/"; done
cp "$anchor/bench-side-by-side.sh" "$dest/"
strip --strip-debug "$dest"/bin/* 2>/dev/null || true
cat > "$dest/shim/cargo" <<'SHIM'
#!/usr/bin/env bash
# Stand-in for `cargo bench --no-run --message-format=json`: the staged bench binaries.
bin=$(cd "$(dirname "$0")/../bin" && pwd)
for b in "$bin"/*; do
  printf '{"reason":"compiler-artifact","executable":"%s","target":{"name":"%s","kind":["bench"]}}\n' "$b" "$(basename "$b")"
done
SHIM
cat > "$dest/shim/git" <<'SHIM'
#!/usr/bin/env bash
# Stand-in for the `git -C DIR rev-parse HEAD` that names "our commit" in load.log: the staged
# commit (the device copy's own head is whatever main was when it was copied).
if [ $# = 4 ] && [ "$1" = -C ] && [ "$3" = rev-parse ] && [ "$4" = HEAD ]; then
  cat "$(cd "$(dirname "$0")/.." && pwd)/COMMIT"
else
  PATH=${PATH#*/shim:} exec git "$@"
fi
SHIM
cat > "$dest/run.sh" <<'RUN'
#!/usr/bin/env bash
# The side-by-side run on the device machine with the staged binaries (see
# scripts/gpu-stage-dag-benches.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
echo "our commit $(cat "$here/COMMIT")"
PATH=$here/shim:$PATH LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  LOAD_WAIT_MIN=${LOAD_WAIT_MIN:-0} bash "$here/bench-side-by-side.sh" "$here/benchmarks" "$here"
RUN
chmod +x "$dest/shim/cargo" "$dest/shim/git" "$dest/run.sh"
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src benches || echo '+dirty')" > "$dest/COMMIT"
du -sh "$dest"
echo "staged $dest ($(cat "$dest/COMMIT")); on the device: OUT=\$OUT/sbs bash $dest/run.sh"

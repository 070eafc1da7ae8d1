#!/usr/bin/env bash
# The single test entry point (CI runs exactly this): set-up, formatting and lints, Rust tests,
# the CMake build, install and the C tests under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
export CARGO_TERM_COLOR=never

step() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; }

step "setup"
scripts/setup.sh

# The fresh-machine check (set-up inside a minimal Debian root) is mostly downloads: it runs
# beside the other steps and is waited for at the end.
# The fresh root builds offline from this machine's cargo registry: fetch what Cargo.lock names.
cargo fetch --locked >/dev/null
step "fresh-machine check (in the background)"
fresh_log=$(mktemp /tmp/celerity-fresh-check.XXXXXX.log)
timeout 1500 scripts/fresh-machine-check.sh >"$fresh_log" 2>&1 &
fresh_pid=$!

# The MPI feature needs an MPI installation; the CUDA feature never needs the toolkit.
features=cuda
if command -v mpicc >/dev/null; then features="mpi,cuda"; fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (features: $features)"
cargo clippy --locked --all-targets --features "$features" -- -D warnings

# A link to a private or missing item renders as plain text in the published docs: it fails here.
step "cargo doc (features: $features)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --features "$features"

step "cargo test (features: $features)"
cargo test --locked --features "$features"

step "cmake configure + build (Release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"

step "cmake install -> $root/install"
cmake --install build --prefix "$root/install"

step "ctest"
ctest --test-dir build --output-on-failure -j "$jobs"

step "fresh-machine check (waiting)"
if ! wait "$fresh_pid"; then
    cat "$fresh_log"
    echo "fresh-machine check failed" >&2
    exit 1
fi
cat "$fresh_log"

step "all tests passed"

#!/usr/bin/env bash
# Builds the library and the examples (Release) and runs the demo program.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target hello >/dev/null
start=$EPOCHREALTIME
build/examples/hello
awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "demo time: %.3f s\n", b - a }'

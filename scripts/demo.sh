#!/usr/bin/env bash
# Builds the library and the examples (Release) and runs the demo: a 512 x 512 heat stencil for
# 100 steps on emulated host devices (CELERITY_DEVICES, default host:4), checked against a serial
# computation. Extra arguments go to the program: scripts/demo.sh [N] [steps].
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target heat >/dev/null
export CELERITY_DEVICES="${CELERITY_DEVICES:-host:4}"
start=$EPOCHREALTIME
build/examples/heat "$@"
awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "demo time: %.3f s\n", b - a }'

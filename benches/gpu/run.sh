#!/usr/bin/env bash
# Runs every GPU figure of issue 16 on the GPU machine in one go (docs/gpu.md, docs/benchmarks.md).
# LIB_DIR (default gpu_carry) holds libcelerity.so built with `--features cuda` (and may hold
# celerity.h and a COMMIT file); gpu_bench.cu sits beside this script. Writes the table
# (table_MODE.md), the raw log and the machine to OUT. With PROFILE=1 it also runs the task
# floor alone with a Chrome trace (floor_trace.json) for the per-hop profile.
# In modes all and floor the per-task figures are measured again with cuda_graphs=off (every
# kernel launched on its stream) and with accessor boundary checking on (device-side records per
# chunk).
#   benches/gpu/run.sh [all|transfer-options|transfers|floor|late-read|...]   (gpu_bench.cu lists the modes)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LIB_DIR=$(cd "${LIB_DIR:-gpu_carry}" && pwd)
OUT=${OUT:-$PWD}
mkdir -p "$OUT"
MODE=${1:-all}
BUILD=$(mktemp -d)
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nvcc --version | tail -1
    echo "commit: $(cat "$LIB_DIR/COMMIT" 2>/dev/null || echo unknown)"
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "cpus: $(nproc), $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | xargs)"
} | tee "$OUT/machine.txt"
nvcc -O3 -std=c++17 -arch=sm_90 -I"$LIB_DIR" -I"$HERE/../../include" "$HERE/gpu_bench.cu" -L"$LIB_DIR" -lcelerity \
    -Xlinker -rpath -Xlinker "$LIB_DIR" -o "$BUILD/gpu_bench"
CELERITY_LOG_LEVEL=warn "$BUILD/gpu_bench" "$MODE" 2>&1 | tee "$OUT/gpu_bench_$MODE.log"
if [ "$MODE" = all ] || [ "$MODE" = floor ]; then
    # without graph batches: every kernel launched on its stream (what undeclared launchers get)
    CELERITY_LOG_LEVEL=warn CELERITY_CUDA_GRAPHS=off "$BUILD/gpu_bench" floor 2>&1 \
        | grep '^| per task' | tee -a "$OUT/gpu_bench_$MODE.log"
    # the per-task cost of device-side accessor boundary records (issue 15)
    CELERITY_LOG_LEVEL=warn CELERITY_ACCESSOR_BOUNDARY_CHECK=on "$BUILD/gpu_bench" floor 2>&1 \
        | grep '^| per task' | tee -a "$OUT/gpu_bench_$MODE.log"
fi
grep '^|' "$OUT/gpu_bench_$MODE.log" > "$OUT/table_$MODE.md" || true
if [ "${PROFILE:-0}" = 1 ]; then
    CELERITY_LOG_LEVEL=warn CELERITY_TRACE_FILE="$OUT/floor_trace.json" "$BUILD/gpu_bench" floor \
        > "$OUT/floor_trace.log" 2>&1 || true
fi
if [ -f "$OUT/floor_trace.json" ] && command -v python3 > /dev/null; then
    python3 "$HERE/trace_summary.py" "$OUT/floor_trace.json" | tee "$OUT/floor_profile.txt"
    rm -f "$OUT/floor_trace.json"
fi

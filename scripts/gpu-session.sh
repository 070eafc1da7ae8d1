#!/usr/bin/env bash
# One call on the GPU machine with what scripts/gpu-stage.sh staged in DIR: the CUDA unit tests,
# the C end-to-end test, the C++ examples under nvcc, 2 ranks on the GPU and the GPU benchmark
# (scripts/gpu-verify.sh); device-code bounds checks (tests/cuda/run_bounds.sh); the GPU task
# floor, base and new library alternating when DIR/base exists; a trace of the floor; and the host
# figures on the GPU machine's quiet CPU. Logs and tables go to $OUT.
#   bash scripts/gpu-session.sh DIR
set -uo pipefail
dir=$(cd "${1:?usage: scripts/gpu-session.sh DIR}" && pwd)
OUT=${OUT:-/tmp/celerity_gpu_session}
mkdir -p "$OUT"
export CELERITY_LOG_LEVEL=warn
{ nproc; uptime; echo "commit: $(cat "$dir/COMMIT")"; } > "$OUT/machine.txt" 2>&1
echo "=== gpu-verify"
LIB_DIR="$dir" OUT="$OUT/verify" timeout 300 bash scripts/gpu-verify.sh > "$OUT/verify.log" 2>&1
echo "verify rc=$?"
grep -E '^==|^test |test result|rc=|pass|fail|FAIL|^\|' "$OUT/verify.log" | head -90
echo "=== device-code bounds checks"
LIB_DIR="$dir" timeout 200 bash tests/cuda/run_bounds.sh > "$OUT/bounds.log" 2>&1
echo "bounds rc=$? ($(grep -c 'rc=0' "$OUT/bounds.log") runs passed, $(grep -c 'rc=[1-9]' "$OUT/bounds.log") failed)"
echo "=== GPU task floor"
versions=new
[ -f "$dir/base/libcelerity.so" ] && versions="base new"
for v in $versions; do
    lib=$dir; [ "$v" = base ] && lib=$dir/base
    nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude benches/gpu/gpu_bench.cu -L"$lib" -lcelerity \
        -Xlinker -rpath -Xlinker "$lib" -o "$OUT/gpu_bench_$v" || echo "nvcc ($v) failed"
done
for round in 1 2 3; do
    for v in $versions; do
        echo "$v $round: $(timeout 60 "$OUT/gpu_bench_$v" floor 2>&1 | grep -E '^\| (per task|METG)' | tr '\n' ' ')"
    done
done
echo "=== floor trace (new)"
CELERITY_TRACE_FILE="$OUT/floor_trace.json" timeout 60 "$OUT/gpu_bench_new" floor > /dev/null 2>&1
python3 benches/gpu/trace_summary.py "$OUT/floor_trace.json" && rm -f "$OUT/floor_trace.json"
echo "=== host figures on this machine's CPU"
timeout 90 "$dir/bin/runtime_throughput" --bench --warm-up-time 1 --measurement-time 2 --noplot 2>&1 \
    | grep -E '^runtime throughput|time:' | paste - - | sed -E 's/ +/ /g'
for d in 1 2; do
    echo "-- granularity host:$d"
    GRANULARITY_DEVICES=$d timeout 60 "$dir/bin/granularity" 2>&1 | grep -v '^$' | tail -16
done
echo "-- granularity mpirun -n 2"
timeout 90 mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 "$dir/bin/granularity" 2>&1 | grep -v '^$' | tail -16
echo "-- million tasks"
SAMPLE_EVERY=100000 timeout 90 "$dir/bin/million_tasks" 2>&1 | tail -16

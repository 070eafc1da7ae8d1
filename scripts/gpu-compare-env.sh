#!/usr/bin/env bash
# One call on the GPU machine that measures one runtime setting against another with the same
# library (staged by scripts/gpu-stage.sh in DIR): every figure is taken with VAR=A and VAR=B
# alternating, three rounds, so both see the same machine. Figures: the GPU task floor and METG
# (gpu_bench floor), a million-task run on host:1 (per task), the runtime throughput benches,
# the granularity METG on host:1, host:2 and under mpirun -n 2. Logs go to $OUT.
#   bash scripts/gpu-compare-env.sh DIR VAR A B      e.g. ... CELERITY_SCHEDULER_THREADS 1 2
set -uo pipefail
dir=$(cd "${1:?usage: scripts/gpu-compare-env.sh DIR VAR A B}" && pwd)
var=${2:?VAR}
values=("${3:?A}" "${4:?B}")
OUT=${OUT:-/tmp/celerity_gpu_compare}
mkdir -p "$OUT"
export CELERITY_LOG_LEVEL=warn
{ nproc; uptime; echo "commit: $(cat "$dir/COMMIT")"; } | tee "$OUT/machine.txt"
nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude benches/gpu/gpu_bench.cu -L"$dir" -lcelerity \
    -Xlinker -rpath -Xlinker "$dir" -o "$OUT/gpu_bench" || echo "nvcc failed"
each() { # each LABEL COMMAND...: runs COMMAND under every value, three rounds, label per line
    local label=$1 round v
    shift
    for round in 1 2 3; do
        for v in "${values[@]}"; do
            echo "$label $var=$v round $round: $(env "$var=$v" "$@" 2>&1 | tr '\n' ' ')"
        done
    done
}
echo "=== GPU task floor (gpu_bench floor)"
each floor bash -c "timeout 60 '$OUT/gpu_bench' floor | grep -E '^\| (per task|METG)'"
echo "=== million tasks, host:1 (200,000 tasks, half independent, half a chain)"
each million bash -c "MILLION_TASKS=200000 SAMPLE_EVERY=200000 timeout 60 '$dir/bin/million_tasks' | tail -1"
echo "=== runtime throughput (criterion, µs per task)"
each throughput bash -c "timeout 120 '$dir/bin/runtime_throughput' --bench --warm-up-time 1 --measurement-time 2 --noplot \
    | grep -E '^runtime throughput|time:' | paste - - | sed -E 's/ +/ /g; s/runtime throughput\///'"
for d in 1 2; do
    echo "=== granularity host:$d"
    each "granularity host:$d" bash -c "GRANULARITY_DEVICES=$d timeout 90 '$dir/bin/granularity' | grep -iE 'METG|^\| *1 µs|^\| *10 µs'"
done
echo "=== granularity mpirun -n 2"
each "granularity mpirun" bash -c "timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -x $var -n 2 '$dir/bin/granularity' | grep -iE 'METG|^\| *1 µs|^\| *10 µs'"
echo "=== CUDA unit tests"
"$dir/celerity_unit_tests" cuda 2>&1 | grep -E 'test result|FAILED|panicked' | head
echo "=== gpu_bench all, default settings (the issue-16 table)"
timeout 300 "$OUT/gpu_bench" all > "$OUT/gpu_bench_all.log" 2>&1
echo "rc=$?"; grep '^|' "$OUT/gpu_bench_all.log"

#!/usr/bin/env bash
# Runs every host benchmark and rewrites the figures table in docs/benchmarks.md (between the
# `bench-table` markers) with machine, date and commit.
#
#   scripts/bench.sh                       # our criterion benches only
#   scripts/bench.sh --celerity BINARY     # also C++ Celerity's dag benchmarks, alternating with
#                                          # ours in the same sitting, and the ratio column
#
# BINARY is the `benchmarks` executable that ../shared/tools/celerity-anchor/build-celerity-cpp.sh
# builds (e.g. /work/anchor-build/celerity-build/test/benchmarks; that script installs clang-19,
# ninja-build and libboost-context-dev with apt-get, which only this comparison needs: the
# project's build, tests and demo do not). Environment: WARMUP=1 TIME=3
# (criterion seconds per benchmark), BENCHES (a subset of the default list), ROUNDS (side-by-side
# rounds, default 3), DOC (the file to rewrite). The side-by-side run also takes PAIRS (a subset
# of tdag handling cdag1 cdag4 cdag16 idag1 idag4 idag16 sched1 sched4), SAMPLES, CRIT_WARMUP,
# CRIT_TIME, LOAD_MAX and LOAD_WAIT_MIN (minutes to wait for the load to drop below LOAD_MAX
# before the first round; default 5 here, then it starts anyway and logs the load). On a 2-core
# machine Celerity's binary exits 1 after each case (its thread pinner warns that there are too
# few cores and its test main fails a case that logged a warning); the figures are still written.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

celerity=""
while (($# > 0)); do
    case $1 in
        --celerity) celerity=$(realpath "${2:?--celerity needs the path of the Celerity benchmarks binary}"); shift 2 ;;
        *) echo "usage: scripts/bench.sh [--celerity BINARY]" >&2; exit 2 ;;
    esac
done

benches=${BENCHES:-"task_graph command_graph instruction_graph scheduler runtime_throughput observability grid"}
warmup=${WARMUP:-1}
time=${TIME:-3}
doc=${DOC:-docs/benchmarks.md}
criterion_dir=${CARGO_TARGET_DIR:-$root/target}/criterion
out=$(mktemp -d /tmp/celerity-bench.XXXXXX)

for bench in $benches; do
    echo "== cargo bench --bench $bench"
    # Only this run's estimates go into the table.
    cargo bench --locked --bench "$bench" -- --warm-up-time "$warmup" --measurement-time "$time" \
        --save-baseline bench-sh 2>&1 | tee "$out/$bench.log" | grep 'time:' || true
done

side_by_side=""
if [[ -n $celerity ]]; then
    echo "== side by side with C++ Celerity ($celerity)"
    OUT="$out/side-by-side" ROUNDS=${ROUNDS:-3} LOAD_WAIT_MIN=${LOAD_WAIT_MIN:-5} \
        "$root/../shared/tools/celerity-anchor/bench-side-by-side.sh" "$celerity" "$root"
    side_by_side="$out/side-by-side/summary.md"
fi

python3 "$root/scripts/bench_table.py" "$criterion_dir" "$doc" "$side_by_side"

#!/usr/bin/env bash
# Builds the library and the examples (Release) and runs the demo: wave_sim (examples/wave_sim.cc,
# C++ Celerity's API) on 2 MPI ranks, a 512 x 512 wave field for 200 steps, checked against a
# serial computation. Each rank uses emulated host devices (CELERITY_DEVICES, default host:2);
# on a machine with a GPU and nvcc the same source is built with nvcc and runs on CUDA. Writes the
# task/command/instruction graphs and a Perfetto trace to build/demo/ and says where they went.
# Extra arguments go to the program: scripts/demo.sh [-N size] [-T steps].
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target wave_sim >/dev/null

program=build/examples/wave_sim
devices="${CELERITY_DEVICES:-host:2}"
if command -v nvcc >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  # One source for both: the kernels are CELERITY_DEVICE_LAMBDA (__host__ __device__ under nvcc).
  libdir="$(sed -n 's/^CELERITY_CARGO_TARGET_DIR:PATH=//p' build/CMakeCache.txt)/release"
  nvcc -std=c++17 -O2 --extended-lambda -x cu examples/wave_sim.cc -Iinclude -L"$libdir" -lcelerity \
       -Xlinker -rpath,"$libdir" -o build/demo_wave_sim_cuda
  program=build/demo_wave_sim_cuda
  devices="${CELERITY_DEVICES:-cuda}"
fi

out=build/demo
rm -rf "$out" && mkdir -p "$out"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-N 512 -T 200)
launch=()
if command -v mpirun >/dev/null; then
  launch=(mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 -x CELERITY_DEVICES -x CELERITY_PRINT_GRAPHS
          -x CELERITY_GRAPH_DIR -x CELERITY_TRACE_FILE -x CELERITY_LOG_LEVEL)
else
  echo "mpirun not found: running one process"
fi
export CELERITY_DEVICES="$devices" CELERITY_PRINT_GRAPHS=on CELERITY_GRAPH_DIR="$out" \
       CELERITY_TRACE_FILE="$out/trace.json" CELERITY_LOG_LEVEL="${CELERITY_LOG_LEVEL:-warn}"
if [ ${#launch[@]} -gt 0 ]; then ranks=2; else ranks=1; fi
echo "wave_sim on $ranks rank(s), devices=$CELERITY_DEVICES per rank"
start=$EPOCHREALTIME
"${launch[@]}" "$program" "${args[@]}"
awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "demo time: %.3f s (including start-up)\n", b - a }'
echo "graphs and traces in $out/:"
ls -1 "$out" | sed 's/^/  /'
echo "view the .dot files with Graphviz (dot -Tsvg), the traces at https://ui.perfetto.dev"

#!/usr/bin/env bash
# Builds the C++ examples with nvcc against libcelerity.so in $CELERITY_LIB_DIR (default gpu_carry/;
# built with --features cuda) and runs each on the GPU (devices=cuda) and on emulated host devices
# (host:2); test_cxx_frontend, whose kernels are host lambdas on purpose (it tests the host-device
# path, and refuses CUDA by design), is built with nvcc too but runs on host:2 only. Sources come
# from $CELERITY_SRC_DIR (default: the working directory, the repository root). Compiler
# warnings are counted per file (nvcc diagnostic numbers shown); results go to $OUT (default
# /tmp/celerity_gpu_out). Exits non-zero when a build or a run failed; exit 77 (distr_io without
# parallel HDF5) counts as skipped.
set -uo pipefail
L=$(cd "${CELERITY_LIB_DIR:-$PWD/gpu_carry}" && pwd)
S=$(cd "${CELERITY_SRC_DIR:-$PWD}" && pwd)
B=${CELERITY_BIN_DIR:-/tmp/celerity_bin}
OUT=${OUT:-/tmp/celerity_gpu_out}
mkdir -p "$OUT" "$B"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1
# --expt-relaxed-constexpr: see docs/cuda-kernels.md (helper templates called with host lambdas).
flags=(-std=c++17 -O2 --extended-lambda --expt-relaxed-constexpr -x cu -Xcudafe --display_error_number -I"$S/include")
examples="hello_world matmul wave_sim convolution reduction syncing nbody distr_io"
build() { # name source
  nvcc "${flags[@]}" "$2" -L"$L" -lcelerity -Xlinker -rpath,"$L" -o "$B/$1" >"$OUT/build_$1.log" 2>&1
  echo "build $1 rc=$? warnings=$(grep -c 'warning' "$OUT/build_$1.log")" >"$OUT/rc_$1"
}
for e in $examples; do build "$e" "$S/examples/$e.cc" & done
build test_cxx_frontend "$S/c_tests/test_cxx_frontend.cpp" &
wait
cat "$OUT"/rc_*
failures=$(grep -L 'rc=0' "$OUT"/rc_* | wc -l)
for f in "$OUT"/build_*.log; do
  if grep -q -E 'error|warning' "$f"; then echo "== $f"; grep -E 'error|warning' "$f" | sort | uniq -c | sort -rn | head -8; fi
done
run() { # label devices binary args...
  local label=$1 devices=$2; shift 2
  local log="$OUT/run_${label}_${devices/:/}.log" rc
  CELERITY_DEVICES=$devices timeout 120 "$@" >"$log" 2>&1
  rc=$?
  case $rc in
    0) echo "pass    $devices $label: $(grep -v '^\[N' "$log" | tail -1)" ;;
    77) echo "skipped $devices $label: $(tail -1 "$log")" ;;
    *) echo "FAILED  $devices $label (rc=$rc): $(tail -3 "$log" | tr '\n' ' ')"; failures=$((failures + 1)) ;;
  esac
}
for e in $examples; do
  [ -x "$B/$e" ] || continue
  run "$e" cuda "$B/$e"
  run "$e" host:2 "$B/$e"
done
[ -x "$B/wave_sim" ] && run wave_sim_2048 cuda "$B/wave_sim" -N 2048 -T 200 --check 0
[ -x "$B/matmul" ] && run matmul_1024 cuda "$B/matmul" -n 1024
[ -x "$B/test_cxx_frontend" ] && run test_cxx_frontend host:2 "$B/test_cxx_frontend"
# The frontend declares its device lambdas launch-only, so with cuda_graphs=auto (the default)
# their back-to-back launches must be captured into graph batches, in a release build of the
# program (-DNDEBUG) and in a debug build, whose kernels carry accessor boundary records in
# pinned memory: the backend's shutdown summary (debug level) counts them.
captured() { # label binary
  local log="$OUT/run_$1_graphs.log" rc count
  CELERITY_DEVICES=cuda CELERITY_LOG_LEVEL=debug timeout 120 "$2" -N 2048 -T 200 --check 0 >"$log" 2>&1
  rc=$?
  count=$(grep -o '[0-9]* kernel(s) launched in [0-9]* CUDA graph' "$log" | awk '{s += $1} END {print s + 0}')
  if [ "$rc" -eq 0 ] && [ "$count" -gt 0 ]; then
    echo "pass    cuda $1: $(grep -o '[0-9]* kernel(s) launched in [0-9]* CUDA graph batch(es)' "$log" | head -1)"
  else
    echo "FAILED  cuda $1: rc=$rc, no device lambda captured into a graph batch (cuda_graphs=auto)"
    failures=$((failures + 1))
  fi
}
if nvcc "${flags[@]}" -DNDEBUG "$S/examples/wave_sim.cc" -L"$L" -lcelerity -Xlinker -rpath,"$L" \
    -o "$B/wave_sim_ndebug" >"$OUT/build_wave_sim_ndebug.log" 2>&1; then
  captured wave_sim_ndebug "$B/wave_sim_ndebug"
else
  echo "FAILED  build wave_sim -DNDEBUG: $(tail -3 "$OUT/build_wave_sim_ndebug.log" | tr '\n' ' ')"
  failures=$((failures + 1))
fi
[ -x "$B/wave_sim" ] && captured wave_sim_debug "$B/wave_sim"
echo "gpu-examples: $failures failure(s)"
[ "$failures" -eq 0 ]

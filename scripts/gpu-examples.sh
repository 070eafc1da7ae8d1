#!/usr/bin/env bash
# Builds the C++ examples with nvcc against libcelerity.so in $CELERITY_LIB_DIR (default gpu_carry/;
# built with --features cuda) and runs them on the GPU (devices=cuda) and on emulated host
# devices (host:2). Results go to $OUT (default /tmp/celerity_gpu_out). Run from the repository root.
L=${CELERITY_LIB_DIR:-$PWD/gpu_carry}
B=/tmp/celerity_bin
OUT=${OUT:-/tmp/celerity_gpu_out}
mkdir -p "$OUT"
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1
examples="hello_world matmul wave_sim convolution reduction syncing nbody"
for e in $examples; do
  (nvcc -std=c++17 -O2 --extended-lambda -x cu -Iinclude examples/$e.cc -L$L -lcelerity -Xlinker -rpath,$L -o $B/$e > $OUT/build_$e.log 2>&1; echo "build $e rc=$?" > $OUT/rc_$e) &
done
(nvcc -std=c++17 -O2 --extended-lambda -x cu -Iinclude c_tests/test_cxx_frontend.cpp -L$L -lcelerity -Xlinker -rpath,$L -o $B/test_cxx_frontend > $OUT/build_test_cxx_frontend.log 2>&1; echo "build test_cxx_frontend rc=$?" > $OUT/rc_test) &
wait
cat $OUT/rc_*
for f in $OUT/build_*.log; do if [ -s $f ]; then echo "== $f"; grep -E "error|warning" $f | head -8; fi; done
for e in $examples; do
  [ -x $B/$e ] || continue
  CELERITY_DEVICES=cuda timeout 60 $B/$e 2>&1 | tail -3; echo "cuda $e rc=${PIPESTATUS[0]}"
  CELERITY_DEVICES=host:2 timeout 60 $B/$e 2>&1 | tail -1; echo "host:2 $e rc=${PIPESTATUS[0]}"
done
[ -x $B/wave_sim ] && CELERITY_DEVICES=cuda timeout 60 $B/wave_sim -N 2048 -T 200 --check 0 2>&1 | tail -1
[ -x $B/matmul ] && CELERITY_DEVICES=cuda timeout 60 $B/matmul -n 1024 2>&1 | tail -1
[ -x $B/test_cxx_frontend ] && CELERITY_DEVICES=host:2 timeout 60 $B/test_cxx_frontend 2>&1 | tail -1

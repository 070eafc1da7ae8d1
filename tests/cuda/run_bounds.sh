#!/usr/bin/env bash
# Accessor boundary checks in CUDA device code on the GPU machine (issue 15; docs/gpu.md). Builds
# tests/cuda/bounds_check_cuda.cu (c_tests/test_bounds_check.c with CUDA kernels) and
# c_tests/test_bounds_check_cxx.cpp (the C++ accessor in a device lambda) with nvcc against
# libcelerity.so in LIB_DIR (--features mpi,cuda), then runs every mistake under every policy: on
# devices=cuda (one chunk) and on 2 MPI ranks sharing the GPU (two chunks, so the wrong-mapper
# and swapped-slice mistakes become visible). Each program asserts its complete log and status.
# Run from the repository root; prints one "rc=" line per run.
set -uo pipefail
LIB_DIR=$(cd "${LIB_DIR:?LIB_DIR: the folder with libcelerity.so}" && pwd)
B=$(mktemp -d)
nvcc -std=c++17 -O2 -x cu -arch=sm_90 -Iinclude -Ic_tests tests/cuda/bounds_check_cuda.cu -L"$LIB_DIR" -lcelerity \
    -Xlinker -rpath,"$LIB_DIR" -o "$B/bounds_check_cuda" || exit 1
nvcc -std=c++17 -O2 --extended-lambda -x cu -arch=sm_90 -Iinclude -Ic_tests c_tests/test_bounds_check_cxx.cpp \
    -L"$LIB_DIR" -lcelerity -Xlinker -rpath,"$LIB_DIR" -o "$B/bounds_check_cxx_cuda" || exit 1
run() { # label, command...
    local label=$1
    shift
    timeout 120 "$@" > "$B/out.txt" 2>&1
    local rc=$?
    grep -E "ERROR|expected|unexpected|chunk\(s\)|checks passed|check\(s\) failed" "$B/out.txt" | head -8
    echo "$label rc=$rc"
}
for check in on error off; do
    for mistake in stencil matmul swapped; do
        run "cuda $mistake $check" env CELERITY_DEVICES=cuda "$B/bounds_check_cuda" $mistake $check
        run "mpi2 cuda $mistake $check" mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 -x CELERITY_DEVICES=cuda \
            "$B/bounds_check_cuda" $mistake $check
    done
done
for check in on error; do
    run "cxx cuda stencil $check" env CELERITY_LOG_LEVEL=info CELERITY_DEVICES=cuda CELERITY_ACCESSOR_BOUNDARY_CHECK=$check "$B/bounds_check_cxx_cuda"
done

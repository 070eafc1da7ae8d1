#!/usr/bin/env bash
# One call on the GPU machine (docs/gpu.md): everything built here is in $LIB_DIR (libcelerity.so
# with --features mpi,cuda, the unit-test binary celerity_unit_tests, COMMIT). Runs the CUDA unit
# tests, the C end-to-end test on devices=cuda, the C++ examples built with nvcc (on cuda and on
# host:2), wave_sim on 2 MPI ranks sharing the GPU, and the GPU benchmark; writes logs to $OUT.
set -uo pipefail
LIB_DIR=$(cd "${LIB_DIR:?LIB_DIR: the folder with libcelerity.so}" && pwd)
OUT=${OUT:-/tmp/celerity_gpu_verify}
mkdir -p "$OUT"
log() { echo "== $*"; }
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nvcc --version | tail -1
    echo "commit: $(cat "$LIB_DIR/COMMIT" 2>/dev/null)"
} 2>&1 | tee "$OUT/machine.txt"

log "CUDA unit tests (backend::cuda, with an nvcc-built kernel library)"
K=$(mktemp -d)
nvcc -O2 -shared -Xcompiler -fPIC -o "$K/libscale.so" tests/cuda/scale_kernel.cu
CELERITY_TEST_CUDA_KERNEL_LIB="$K/libscale.so" timeout 300 "$LIB_DIR/celerity_unit_tests" --test-threads=1 --nocapture backend::cuda 2>&1 | grep -E '^test |skipped|test result|panicked' | head -30

log "C end to end on devices=cuda (saxpy + reduction + fences)"
B=$(mktemp -d)
nvcc -O2 -c -Xcompiler -fPIC tests/cuda/saxpy_kernels.cu -o "$B/saxpy.o" \
  && gcc -O2 -std=c11 -Wall -Wextra -Iinclude tests/cuda/runtime_cuda.c "$B/saxpy.o" -L"$LIB_DIR" -lcelerity \
         -L/usr/local/cuda/lib64 -lcudart -lstdc++ -lm -Wl,-rpath,"$LIB_DIR" -o "$B/runtime_cuda" \
  && CELERITY_DEVICES=cuda timeout 120 "$B/runtime_cuda" 2>&1 | tail -5
echo "runtime_cuda rc=${PIPESTATUS[0]}"

log "C++ examples with nvcc"
CELERITY_LIB_DIR="$LIB_DIR" OUT="$OUT/examples" timeout 400 bash scripts/gpu-examples.sh 2>&1 | tail -60

log "wave_sim (nvcc) on 2 MPI ranks sharing the GPU"
if [ -x /tmp/celerity_bin/wave_sim ]; then
  timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 -x CELERITY_DEVICES=cuda -x CELERITY_LOG_LEVEL=info \
      /tmp/celerity_bin/wave_sim -N 1024 -T 100 2>&1 | grep -E 'celerity 0|check|WARN|ERROR|time' | head -12
  echo "wave_sim mpi2 rc=${PIPESTATUS[0]}"
fi

log "GPU benchmark (issue 16 figures)"
LIB_DIR="$LIB_DIR" OUT="$OUT" timeout 400 bash benches/gpu/run.sh all 2>&1 | tail -30

// CUDA kernels for tests/cuda/runtime_cuda.c: launched from celerity kernel callbacks on the
// stream the runtime hands over (ctx->stream).
#include <cuda_runtime.h>
#include <cstddef>

__global__ void saxpy(float* y, const float* x, float a, size_t y_first, size_t x_first, size_t count, float* sum) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < count) {
        float v = a * x[x_first + i] + y[y_first + i];
        y[y_first + i] = v;
        atomicAdd(sum, v);
    }
}

// y[i] = a * x[i] + y[i] for the chunk; `sum` accumulates the new values (reduction slot).
extern "C" int launch_saxpy(float* y, const float* x, float a, size_t y_first, size_t x_first, size_t count, float* sum,
                            void* stream) {
    unsigned blocks = (unsigned)((count + 255) / 256);
    saxpy<<<blocks, 256, 0, (cudaStream_t)stream>>>(y, x, a, y_first, x_first, count, sum);
    return (int)cudaGetLastError();
}

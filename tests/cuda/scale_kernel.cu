// Test kernel for the CUDA backend (src/backend/tests/cuda.rs): built with nvcc on the GPU
// machine, loaded at run time, launched through the CUDA runtime API on a stream that the
// backend created in the device's primary context.
#include <cuda_runtime.h>
#include <cstddef>

__global__ void scale(float* data, size_t n, float factor) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) data[i] *= factor;
}

extern "C" int celerity_test_scale(float* data, size_t n, float factor, void* stream) {
    unsigned blocks = (unsigned)((n + 255) / 256);
    scale<<<blocks, 256, 0, (cudaStream_t)stream>>>(data, n, factor);
    return (int)cudaGetLastError();
}

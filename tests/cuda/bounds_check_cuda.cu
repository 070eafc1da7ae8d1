// Accessor boundary checking in CUDA device code: c_tests/test_bounds_check.c (the wrong-mapper,
// off-by-one and swapped-slice programs and their complete expected logs) with its kernels as
// CUDA kernels, which index through celerity_accessor_ptr on the device. The runtime hands each
// accessor a record in device memory and copies it back after the kernel (src/backend/cuda/
// records.rs). Built with nvcc and run with devices=cuda (docs/gpu.md):
//   nvcc -std=c++17 -x cu -Iinclude -Ic_tests tests/cuda/bounds_check_cuda.cu -lcelerity ...
//   CELERITY_DEVICES=cuda ./bounds_check_cuda stencil on
//   mpirun -n 2 ./bounds_check_cuda matmul error     (two chunks: one per rank)
#define TEST_BOUNDS_CHECK_DEVICE_KERNELS 1
#include <cuda_runtime.h>

#include "test_bounds_check.c"

#define DEVICE_AT(acc, i, j) (*(double*)celerity_accessor_ptr(&(acc), (i), (j), 0))

__global__ void matmul_kernel(celerity_accessor a, celerity_accessor b, celerity_accessor c, celerity_subrange chunk) {
    size_t i = chunk.offset[0] + blockIdx.y * blockDim.y + threadIdx.y;
    size_t j = chunk.offset[1] + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= chunk.offset[0] + chunk.range[0] || j >= chunk.offset[1] + chunk.range[1]) return;
    double sum = 0;
    for (size_t k = 0; k < N; ++k) sum += DEVICE_AT(a, i, k) * DEVICE_AT(b, k, j);
    DEVICE_AT(c, i, j) = sum;
}

__global__ void stencil_kernel(celerity_accessor in, celerity_accessor out, celerity_subrange chunk) {
    size_t i = chunk.offset[0] + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= chunk.offset[0] + chunk.range[0]) return;
    DEVICE_AT(out, i, 0) = DEVICE_AT(in, i, 0) + DEVICE_AT(in, i + 1, 0);
}

static celerity_subrange chunk_box(const celerity_kernel_context* ctx) {
    celerity_subrange b;
    for (int d = 0; d < 3; ++d) b.offset[d] = ctx->chunk.offset[d], b.range[d] = ctx->chunk.range[d];
    return b;
}

static int matmul(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    record_chunk(ctx);
    if (ctx->accessors[0].record == NULL) return 0;
    dim3 block(16, 16), grid((unsigned)((ctx->chunk.range[1] + 15) / 16), (unsigned)((ctx->chunk.range[0] + 15) / 16));
    matmul_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(ctx->accessors[0], ctx->accessors[1], ctx->accessors[2],
                                                                 chunk_box(ctx));
    return (int)cudaGetLastError();
}

static int stencil(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    record_chunk(ctx);
    if (ctx->accessors[0].record == NULL) return 0;
    stencil_kernel<<<(unsigned)((ctx->chunk.range[0] + 63) / 64), 64, 0, (cudaStream_t)ctx->stream>>>(
        ctx->accessors[0], ctx->accessors[1], chunk_box(ctx));
    return (int)cudaGetLastError();
}

/* matmul in C: C = A * B for the small-integer matrices of matmul.cc (exact in float), with
 * A read through SLICE(1), B through SLICE(0), and hand-written row loops (i-k-j order, so the
 * inner loop runs along rows). The product is fenced and compared element by element with a
 * serial one; prints the time.
 *
 *   matmul_c [N (128)] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "example_common.h"

static float a_at(size_t i, size_t j) { return (float)((i + 2 * j) % 7) - 3.f; }
static float b_at(size_t i, size_t j) { return (float)((3 * i + j) % 5) - 2.f; }

static int multiply_kernel(const celerity_kernel_context* ctx, void* user_data) {
    size_t n = *(const size_t*)user_data;
    size_t j0 = ctx->chunk.offset[1], j1 = j0 + ctx->chunk.range[1];
    for (size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        const float* a = example_row(&ctx->accessors[0], i);
        float* c = example_row(&ctx->accessors[2], i);
        for (size_t j = j0; j < j1; ++j) c[j] = 0.f;
        for (size_t k = 0; k < n; ++k) {
            const float* b = example_row(&ctx->accessors[1], k);
            for (size_t j = j0; j < j1; ++j) c[j] += a[k] * b[j];
        }
    }
    return 0;
}


int main(int argc, char** argv) {
    example_name = "matmul_c";
    static size_t n;
    n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 128;
    float* a = malloc(n * n * sizeof(float));
    float* b = malloc(n * n * sizeof(float));
    float* c = malloc(n * n * sizeof(float));
    if (!a || !b || !c || n == 0) return 1;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) a[i * n + j] = a_at(i, j), b[i * n + j] = b_at(i, j);

    TRY(celerity_runtime_init(&argc, &argv, NULL));
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    size_t range[3] = {n, n, 1};
    celerity_buffer *ba = NULL, *bb = NULL, *bc = NULL;
    TRY(celerity_buffer_create(2, range, sizeof(float), _Alignof(float), a, &ba));
    TRY(celerity_buffer_create(2, range, sizeof(float), _Alignof(float), b, &bb));
    TRY(celerity_buffer_create(2, range, sizeof(float), _Alignof(float), NULL, &bc));
    celerity_cg* cg = NULL;
    TRY(celerity_cg_create(&cg));
    celerity_range_mapper rows = celerity_slice(1), cols = celerity_slice(0), same = celerity_one_to_one();
    TRY(celerity_cg_access(cg, ba, CELERITY_ACCESS_READ, &rows));
    TRY(celerity_cg_access(cg, bb, CELERITY_ACCESS_READ, &cols));
    TRY(celerity_cg_access(cg, bc, CELERITY_ACCESS_DISCARD_WRITE, &same));
    TRY(celerity_cg_set_name(cg, "multiply"));
    TRY(celerity_submit_parallel_for(cg, 2, range, NULL, multiply_kernel, &n, NULL));
    celerity_future* f = NULL;
    TRY(celerity_fence_buffer(bc, NULL, c, n * n * sizeof(float), &f));
    TRY(celerity_future_wait(f));
    celerity_future_release(f);
    double seconds = seconds_since(&start);

    size_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) {
            float expected = 0.f;
            for (size_t k = 0; k < n; ++k) expected += a_at(i, k) * b_at(k, j);
            mismatches += c[i * n + j] != expected;
        }
    }
    printf("matmul_c: check %s: %zux%zu, %zu mismatches, time %.3f ms\n", mismatches ? "FAILED" : "passed", n, n, mismatches, seconds * 1e3);
    TRY(celerity_buffer_release(ba));
    TRY(celerity_buffer_release(bb));
    TRY(celerity_buffer_release(bc));
    TRY(celerity_runtime_shutdown());
    free(a), free(b), free(c);
    return mismatches ? 1 : 0;
}

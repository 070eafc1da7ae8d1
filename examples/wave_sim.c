/* wave_sim in C: the 2-D wave equation scheme of wave_sim.cc (5-point stencil read through
 * NEIGHBORHOOD_ALONG_AXES, two buffers swapped each step), written against the C API with
 * hand-written row loops. The final field is checked against a serial run; prints the time.
 *
 *   wave_sim_c [N (256)] [steps (100)] */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_common.h"

static const float courant2 = 0.25f;

static float initial_wave(size_t i, size_t j, size_t n) {
    float dy = (float)i - (float)n / 4.f, dx = (float)j - (float)n / 4.f, s = (float)n / 16.f;
    return expf(-(dx * dx + dy * dy) / (2.f * s * s));
}

/* next = 2 u - prev + c2 * laplacian(u) for the rows of one chunk; `up`, `row`, `down` are
 * rows i-1, i, i+1 of u (mirrored at the border). */
static void update_row(float* prev, const float* up, const float* row, const float* down, size_t j0, size_t j1, size_t n) {
    for (size_t j = j0; j < j1; ++j) {
        size_t l = j > 0 ? j - 1 : j, r = j + 1 < n ? j + 1 : j;
        float c = row[j];
        float lap = up[j] + down[j] + row[l] + row[r] - 4.f * c;
        prev[j] = 2.f * c - prev[j] + courant2 * lap;
    }
}

static int step_kernel(const celerity_kernel_context* ctx, void* user_data) {
    size_t n = *(const size_t*)user_data;
    const celerity_accessor* rw = &ctx->accessors[0];
    const celerity_accessor* in = &ctx->accessors[1];
    size_t j0 = ctx->chunk.offset[1], j1 = j0 + ctx->chunk.range[1];
    for (size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        size_t up = i > 0 ? i - 1 : i, down = i + 1 < n ? i + 1 : i;
        update_row(example_row(rw, i), example_row(in, up), example_row(in, i), example_row(in, down), j0, j1, n);
    }
    return 0;
}


int main(int argc, char** argv) {
    example_name = "wave_sim_c";
    static size_t n;
    n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 256;
    size_t steps = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 100;
    if (n < 2) return 2;
    float* u0 = malloc(n * n * sizeof(float));
    float* expected = malloc(n * n * sizeof(float));
    float* other = malloc(n * n * sizeof(float));
    float* result = malloc(n * n * sizeof(float));
    if (!u0 || !expected || !other || !result) return 1;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) u0[i * n + j] = initial_wave(i, j, n);

    TRY(celerity_runtime_init(&argc, &argv, NULL));
    size_t range[3] = {n, n, 1};
    celerity_buffer *u = NULL, *prev = NULL;
    TRY(celerity_buffer_create(2, range, sizeof(float), _Alignof(float), u0, &u));
    TRY(celerity_buffer_create(2, range, sizeof(float), _Alignof(float), u0, &prev));
    TRY(celerity_wait());

    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t s = 0; s < steps; ++s) {
        celerity_cg* cg = NULL;
        TRY(celerity_cg_create(&cg));
        celerity_range_mapper same = celerity_one_to_one(), cross = celerity_neighborhood_along_axes(1, 1, 0);
        TRY(celerity_cg_access(cg, prev, CELERITY_ACCESS_READ_WRITE, &same));
        TRY(celerity_cg_access(cg, u, CELERITY_ACCESS_READ, &cross));
        TRY(celerity_submit_parallel_for(cg, 2, range, NULL, step_kernel, &n, NULL));
        celerity_buffer* t = u;
        u = prev, prev = t;
    }
    celerity_future* f = NULL;
    TRY(celerity_fence_buffer(u, NULL, result, n * n * sizeof(float), &f));
    TRY(celerity_future_wait(f));
    celerity_future_release(f);
    double seconds = seconds_since(&start);

    memcpy(expected, u0, n * n * sizeof(float));
    memcpy(other, u0, n * n * sizeof(float));
    for (size_t s = 0; s < steps; ++s) {
        for (size_t i = 0; i < n; ++i) {
            size_t up = i > 0 ? i - 1 : i, down = i + 1 < n ? i + 1 : i;
            update_row(other + i * n, expected + up * n, expected + i * n, expected + down * n, 0, n, n);
        }
        float* t = expected;
        expected = other, other = t;
    }
    float max_error = 0.f;
    for (size_t i = 0; i < n * n; ++i) max_error = fmaxf(max_error, fabsf(result[i] - expected[i]));
    int ok = max_error <= 1e-4f;
    printf("wave_sim_c: check %s: %zux%zu, %zu steps, %f ms/step, max error %f, time %.3f ms\n", ok ? "passed" : "FAILED", n, n, steps,
           seconds / (double)(steps ? steps : 1) * 1e3, max_error, seconds * 1e3);
    TRY(celerity_buffer_release(u));
    TRY(celerity_buffer_release(prev));
    TRY(celerity_runtime_shutdown());
    free(u0), free(expected), free(other), free(result);
    return ok ? 0 : 1;
}

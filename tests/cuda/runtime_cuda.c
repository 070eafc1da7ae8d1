/* The runtime end to end on CUDA devices (devices=cuda): host-initialised buffers copied to the
 * GPU, a kernel launched through the CUDA runtime API on the runtime's stream, a SUM reduction
 * whose per-chunk slot lives in device memory, and a fence back to host memory. Built on the GPU
 * machine (docs/gpu.md). Exits 0 when every value matches the serial computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "celerity.h"

int launch_saxpy(float* y, const float* x, float a, size_t y_first, size_t x_first, size_t count, float* sum, void* stream);

enum { N = 1 << 20, STEPS = 5 };

static int saxpy_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    const celerity_accessor* x = &ctx->accessors[0];
    const celerity_accessor* y = &ctx->accessors[1];
    size_t first = ctx->chunk.offset[0];
    return launch_saxpy((float*)y->base, (const float*)x->base, 2.0f, first - y->allocation.offset[0],
                        first - x->allocation.offset[0], ctx->chunk.range[0], (float*)ctx->reductions[0], ctx->stream);
}

#define OK(call)                                                                                  \
    do {                                                                                          \
        celerity_status s_ = (call);                                                              \
        if (s_ != CELERITY_OK) {                                                                  \
            fprintf(stderr, "%s: %s (%s)\n", #call, celerity_status_string(s_), celerity_last_error_message()); \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

int main(void) {
    celerity_config* cfg = NULL;
    OK(celerity_config_create(&cfg));
    OK(celerity_config_set(cfg, "devices", "cuda"));
    OK(celerity_runtime_init(NULL, NULL, cfg));
    celerity_config_destroy(cfg);
    celerity_runtime_info info;
    OK(celerity_runtime_get_info(&info));
    printf("backend %s, %u device(s)\n", info.backend == CELERITY_BACKEND_CUDA ? "cuda" : "host", info.num_devices);
    if (info.backend != CELERITY_BACKEND_CUDA) return 1;

    float* xs = malloc(sizeof(float) * N);
    float* ys = malloc(sizeof(float) * N);
    for (size_t i = 0; i < N; ++i) xs[i] = (float)(i % 100), ys[i] = 1.0f;
    size_t range[3] = {N, 1, 1}, one[3] = {1, 1, 1};
    celerity_buffer *x = NULL, *y = NULL, *sum = NULL;
    OK(celerity_buffer_create(1, range, sizeof(float), 4, xs, &x));
    OK(celerity_buffer_create(1, range, sizeof(float), 4, ys, &y));
    OK(celerity_buffer_create(0, one, sizeof(float), 4, NULL, &sum));
    celerity_range_mapper o2o = celerity_one_to_one();
    celerity_reduction_op op = {CELERITY_REDUCE_SUM, CELERITY_TYPE_F32, 0, NULL, NULL, NULL};
    for (int step = 0; step < STEPS; ++step) {
        celerity_cg* cg = NULL;
        OK(celerity_cg_create(&cg));
        OK(celerity_cg_access(cg, x, CELERITY_ACCESS_READ, &o2o));
        OK(celerity_cg_access(cg, y, CELERITY_ACCESS_READ_WRITE, &o2o));
        OK(celerity_cg_reduction(cg, sum, &op, true));
        OK(celerity_cg_set_name(cg, "saxpy"));
        OK(celerity_submit_parallel_for(cg, 1, range, NULL, saxpy_kernel, NULL, NULL));
    }
    float* result = malloc(sizeof(float) * N);
    float total = 0;
    celerity_future *f1 = NULL, *f2 = NULL;
    OK(celerity_fence_buffer(y, NULL, result, sizeof(float) * N, &f1));
    OK(celerity_fence_buffer(sum, NULL, &total, sizeof total, &f2));
    OK(celerity_future_wait(f1));
    OK(celerity_future_wait(f2));
    celerity_future_release(f1);
    celerity_future_release(f2);
    size_t bad = 0;
    double expected_total = 0;
    for (size_t i = 0; i < N; ++i) {
        float v = 1.0f;
        for (int s = 0; s < STEPS; ++s) v = 2.0f * xs[i] + v;
        expected_total += v;
        if (result[i] != v) ++bad;
    }
    double rel = fabs(total - expected_total) / expected_total;
    printf("mismatches: %zu of %d; last-step sum %.6g, expected %.6g (rel. error %.2g)\n", bad, N, total, expected_total, rel);
    OK(celerity_runtime_shutdown());
    free(xs), free(ys), free(result);
    return bad == 0 && rel < 1e-3 ? 0 : 1;
}

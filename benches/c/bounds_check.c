/* Cost of accessor boundary checking (docs/diagnostics.md), not a test:
 *   bench_bounds_check [ELEMENTS_PER_SIDE] [TASKS] [off|on]
 * 1. Per element access: a 5-point stencil over an N x N chunk through
 *    celerity_accessor_ptr_unchecked (what CELERITY_ACCESSOR_BOUNDARY_CHECK=0 compiles to),
 *    celerity_accessor_ptr with a NULL record (checking off at run time) and with a record
 *    (checking on, every access in bounds). Best of 5 runs each.
 * 2. Per chunk: TASKS small kernels with accessor_boundary_check off or on (the records the
 *    runtime allocates and inspects), on the devices of CELERITY_DEVICES; a process initialises
 *    the runtime once, so compare two runs. */
#define _POSIX_C_SOURCE 200809L
#define CELERITY_ACCESSOR_BOUNDARY_CHECK 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "celerity.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { UNCHECKED, RECORD_NULL, RECORD_SET };

/* Kept out of line so that each variant is measured as the same loop. */
__attribute__((noinline)) static double stencil(const celerity_accessor* in, const celerity_accessor* out, size_t n,
                                                int variant) {
    for (size_t i = 1; i + 1 < n; ++i) {
        for (size_t j = 1; j + 1 < n; ++j) {
            double sum;
            if (variant == UNCHECKED) {
                sum = *(double*)celerity_accessor_ptr_unchecked(in, i - 1, j, 0) +
                      *(double*)celerity_accessor_ptr_unchecked(in, i + 1, j, 0) +
                      *(double*)celerity_accessor_ptr_unchecked(in, i, j - 1, 0) +
                      *(double*)celerity_accessor_ptr_unchecked(in, i, j + 1, 0) +
                      *(double*)celerity_accessor_ptr_unchecked(in, i, j, 0);
                *(double*)celerity_accessor_ptr_unchecked(out, i, j, 0) = 0.2 * sum;
            } else {
                sum = *(double*)celerity_accessor_ptr(in, i - 1, j, 0) + *(double*)celerity_accessor_ptr(in, i + 1, j, 0) +
                      *(double*)celerity_accessor_ptr(in, i, j - 1, 0) + *(double*)celerity_accessor_ptr(in, i, j + 1, 0) +
                      *(double*)celerity_accessor_ptr(in, i, j, 0);
                *(double*)celerity_accessor_ptr(out, i, j, 0) = 0.2 * sum;
            }
        }
    }
    return *(double*)celerity_accessor_ptr_unchecked(out, n / 2, n / 2, 0);
}

static int tiny_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    const celerity_accessor* a = &ctx->accessors[0];
    for (size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        *(float*)celerity_accessor_ptr(a, i, 0, 0) += 1.0f;
    }
    return 0;
}

static double run_tasks(const char* check, int tasks) {
    celerity_config* cfg = NULL;
    celerity_config_create(&cfg);
    celerity_config_set(cfg, "accessor_boundary_check", check);
    celerity_config_set(cfg, "log_level", "warn");
    if (celerity_runtime_init(NULL, NULL, cfg) != CELERITY_OK) {
        fprintf(stderr, "init: %s\n", celerity_last_error_message());
        exit(1);
    }
    celerity_config_destroy(cfg);
    enum { E = 1024 };
    static float init[E];
    size_t range[3] = {E, 1, 1};
    celerity_buffer* buf = NULL;
    celerity_buffer_create(1, range, sizeof(float), sizeof(float), init, &buf);
    celerity_wait();
    double start = now();
    for (int t = 0; t < tasks; ++t) {
        celerity_cg* cg = NULL;
        celerity_cg_create(&cg);
        celerity_range_mapper m = celerity_one_to_one();
        celerity_cg_access(cg, buf, CELERITY_ACCESS_READ_WRITE, &m);
        celerity_submit_parallel_for(cg, 1, range, NULL, tiny_kernel, NULL, NULL);
    }
    celerity_wait();
    double elapsed = now() - start;
    celerity_buffer_release(buf);
    celerity_runtime_shutdown();
    return elapsed;
}

int main(int argc, char** argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    int tasks = argc > 2 ? atoi(argv[2]) : 2000;
    const char* check = argc > 3 ? argv[3] : "off";
    double* in_mem = calloc(n * n, sizeof(double));
    double* out_mem = calloc(n * n, sizeof(double));
    double fallback = 0;
    celerity_accessor_record record = {0, {INT64_MAX, INT64_MAX, INT64_MAX}, {INT64_MIN, INT64_MIN, INT64_MIN},
                                       &fallback, sizeof fallback};
    celerity_subrange whole = {{0, 0, 0}, {n, n, 1}};
    celerity_accessor in = {in_mem, whole, whole, sizeof(double), NULL};
    celerity_accessor out = {out_mem, whole, whole, sizeof(double), NULL};
    const char* names[3] = {"unchecked (macro 0)", "record NULL (config off)", "record set (config on)"};
    double best[3];
    for (int v = 0; v < 3; ++v) {
        in.record = out.record = v == RECORD_SET ? &record : NULL;
        best[v] = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
            double t0 = now();
            volatile double sink = stencil(&in, &out, n, v);
            (void)sink;
            double t = now() - t0;
            if (t < best[v]) best[v] = t;
        }
    }
    double accesses = 6.0 * (double)(n - 2) * (double)(n - 2);
    for (int v = 0; v < 3; ++v) {
        printf("per access, %-26s %7.3f ns  (%.2fx)\n", names[v], 1e9 * best[v] / accesses, best[v] / best[0]);
    }
    if (record.count != 0) printf("unexpected violations: %llu\n", (unsigned long long)record.count);
    double elapsed = run_tasks(check, tasks);
    printf("per task (%d tasks, accessor_boundary_check=%s) %7.2f us\n", tasks, check, 1e6 * elapsed / tasks);
    free(in_mem);
    free(out_mem);
    return 0;
}

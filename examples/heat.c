/* 2-D heat diffusion with celerity: a 5-point stencil over an N x N grid (default 512 x 512,
 * 100 steps). Each step reads the old grid through a NEIGHBORHOOD_ALONG_AXES range mapper and
 * writes the new one (double buffering); every 10th step also reduces the squared change
 * (the residual) with a SUM reduction, read back asynchronously with a 0-D fence. The final
 * grid is fenced and compared with the same computation done serially.
 *
 *   heat [N] [steps]       devices: CELERITY_DEVICES (host:4 when unset)
 *
 * Prints the check result and the elapsed times; exits non-zero on a mismatch. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_common.h"

enum { RESIDUAL_EVERY = 10, MAX_RESIDUALS = 1024 };

typedef struct {
    size_t n;     /* grid size */
    double alpha; /* diffusion coefficient times dt / dx^2 (stable for <= 0.25) */
} heat_params;

/* One step. Accessor 0: old grid (cross-shaped neighbourhood), accessor 1: new grid. With a
 * reduction, also sums (new - old)^2 over the chunk. Boundary cells stay fixed (Dirichlet). */
static int heat_step(const celerity_kernel_context* ctx, void* user_data) {
    const heat_params* p = (const heat_params*)user_data;
    const celerity_accessor* in = &ctx->accessors[0];
    const celerity_accessor* out = &ctx->accessors[1];
    double residual = 0;
    for (size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        for (size_t j = ctx->chunk.offset[1]; j < ctx->chunk.offset[1] + ctx->chunk.range[1]; ++j) {
            double c = *(const double*)celerity_accessor_ptr(in, i, j, 0), v = c;
            if (i > 0 && j > 0 && i + 1 < p->n && j + 1 < p->n) {
                double north = *(const double*)celerity_accessor_ptr(in, i - 1, j, 0);
                double south = *(const double*)celerity_accessor_ptr(in, i + 1, j, 0);
                double west = *(const double*)celerity_accessor_ptr(in, i, j - 1, 0);
                double east = *(const double*)celerity_accessor_ptr(in, i, j + 1, 0);
                v = c + p->alpha * (north + south + west + east - 4.0 * c);
            }
            *(double*)celerity_accessor_ptr(out, i, j, 0) = v;
            residual += (v - c) * (v - c);
        }
    }
    if (ctx->num_reductions == 1) *(double*)ctx->reductions[0] += residual;
    return 0;
}

static double initial_value(size_t n, size_t i, size_t j) {
    /* A hot square in the middle and a warm stripe, on a cold plate. */
    if (i > n * 3 / 8 && i < n * 5 / 8 && j > n * 3 / 8 && j < n * 5 / 8) return 100.0;
    if (j > n / 8 && j < n / 8 + 4 && i > 0 && i + 1 < n) return 50.0;
    return 0.0;
}


int main(int argc, char** argv) {
    example_name = "heat";
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 512;
    int steps = argc > 2 ? atoi(argv[2]) : 100;
    if (n < 3 || steps < 1 || steps / RESIDUAL_EVERY > MAX_RESIDUALS) {
        fprintf(stderr, "usage: heat [N >= 3] [steps >= 1]\n");
        return 2;
    }
    static heat_params params;
    params.n = n;
    params.alpha = 0.2;

    double* grid = malloc(n * n * sizeof(double));
    double* result = malloc(n * n * sizeof(double));
    double* next = malloc(n * n * sizeof(double));
    if (grid == NULL || result == NULL || next == NULL) return 1;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) grid[i * n + j] = initial_value(n, i, j);

    /* Configuration from the environment; emulated host devices unless CELERITY_DEVICES says
     * otherwise (the kernel is CPU code). */
    celerity_config* cfg = NULL;
    TRY(celerity_config_create(&cfg));
    if (getenv("CELERITY_DEVICES") == NULL) TRY(celerity_config_set(cfg, "devices", "host:4"));
    TRY(celerity_runtime_init(&argc, &argv, cfg));
    celerity_config_destroy(cfg);
    celerity_runtime_info info;
    TRY(celerity_runtime_get_info(&info));
    if (info.backend != CELERITY_BACKEND_HOST) {
        fprintf(stderr, "heat: the kernel is CPU code; run with CELERITY_DEVICES=host or host:N\n");
        celerity_runtime_shutdown();
        return 2;
    }
    printf("heat: %zu x %zu grid, %d steps, alpha %.2f, on %u node(s) x %u emulated host device(s)\n", n, n, steps,
           params.alpha, info.num_nodes, info.num_devices);

    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    size_t range[3] = {n, n, 1};
    celerity_buffer *a = NULL, *b = NULL, *residual = NULL;
    TRY(celerity_buffer_create(2, range, sizeof(double), sizeof(double), grid, &a));
    TRY(celerity_buffer_create(2, range, sizeof(double), sizeof(double), NULL, &b));
    size_t scalar[3] = {1, 1, 1};
    TRY(celerity_buffer_create(0, scalar, sizeof(double), sizeof(double), NULL, &residual));
    TRY(celerity_buffer_set_name(a, "grid_a"));
    TRY(celerity_buffer_set_name(b, "grid_b"));
    TRY(celerity_buffer_set_name(residual, "residual"));
    celerity_reduction_op sum;
    memset(&sum, 0, sizeof sum);
    sum.kind = CELERITY_REDUCE_SUM;
    sum.type = CELERITY_TYPE_F64;
    celerity_range_mapper cross = celerity_neighborhood_along_axes(1, 1, 0);
    celerity_range_mapper one = celerity_one_to_one();

    static double residuals[MAX_RESIDUALS];
    static celerity_future* residual_futures[MAX_RESIDUALS];
    int num_residuals = 0;
    for (int step = 1; step <= steps; ++step) {
        celerity_cg* cg = NULL;
        TRY(celerity_cg_create(&cg));
        TRY(celerity_cg_set_name(cg, "heat_step"));
        TRY(celerity_cg_access(cg, a, CELERITY_ACCESS_READ, &cross));
        TRY(celerity_cg_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, &one));
        int with_residual = step % RESIDUAL_EVERY == 0;
        if (with_residual) TRY(celerity_cg_reduction(cg, residual, &sum, true));
        TRY(celerity_submit_parallel_for(cg, 2, range, NULL, heat_step, &params, NULL));
        if (with_residual) { /* asynchronous: waited for at the end */
            TRY(celerity_fence_buffer(residual, NULL, &residuals[num_residuals], sizeof(double),
                                      &residual_futures[num_residuals]));
            ++num_residuals;
        }
        celerity_buffer* t = a;
        a = b, b = t;
    }
    celerity_future* final_fence = NULL;
    TRY(celerity_fence_buffer(a, NULL, result, n * n * sizeof(double), &final_fence));
    TRY(celerity_future_wait(final_fence));
    celerity_future_release(final_fence);
    for (int r = 0; r < num_residuals; ++r) {
        TRY(celerity_future_wait(residual_futures[r]));
        celerity_future_release(residual_futures[r]);
    }
    double celerity_time = seconds_since(&start);
    TRY(celerity_buffer_release(a));
    TRY(celerity_buffer_release(b));
    TRY(celerity_buffer_release(residual));
    TRY(celerity_runtime_shutdown());

    /* The serial reference, same arithmetic per cell. */
    clock_gettime(CLOCK_MONOTONIC, &start);
    double serial_residuals[MAX_RESIDUALS];
    int num_serial = 0;
    for (int step = 1; step <= steps; ++step) {
        double res = 0;
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n; ++j) {
                double c = grid[i * n + j], v = c;
                if (i > 0 && j > 0 && i + 1 < n && j + 1 < n) {
                    v = c + params.alpha * (grid[(i - 1) * n + j] + grid[(i + 1) * n + j] + grid[i * n + j - 1] +
                                            grid[i * n + j + 1] - 4.0 * c);
                }
                next[i * n + j] = v;
                res += (v - c) * (v - c);
            }
        if (step % RESIDUAL_EVERY == 0) serial_residuals[num_serial++] = res;
        double* t = grid;
        grid = next, next = t;
    }
    double serial_time = seconds_since(&start);

    double max_diff = 0, heat = 0;
    for (size_t e = 0; e < n * n; ++e) {
        double d = fabs(result[e] - grid[e]);
        if (!(d <= max_diff)) max_diff = d; /* also catches NaN */
        heat += grid[e];
    }
    int ok = max_diff <= 1e-9;
    for (int r = 0; r < num_residuals; ++r) {
        int good = fabs(residuals[r] - serial_residuals[r]) <= 1e-9 * fabs(serial_residuals[r]) + 1e-12;
        ok &= good;
        printf("step %4d: residual %.6e (serial %.6e)%s\n", (r + 1) * RESIDUAL_EVERY, residuals[r],
               serial_residuals[r], good ? "" : "  MISMATCH");
    }
    printf("check: %s (max |celerity - serial| = %.3g, total heat %.6f)\n", ok ? "OK" : "MISMATCH", max_diff, heat);
    printf("time: celerity %.3f s (%u device(s)), serial %.3f s\n", celerity_time, info.num_devices, serial_time);
    free(grid);
    free(next);
    free(result);
    return ok ? 0 : 1;
}

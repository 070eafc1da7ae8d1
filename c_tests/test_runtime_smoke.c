/* The smallest end-to-end program: init, a kernel writing i*i through one_to_one, a kernel
 * reading it through a neighborhood, a SUM reduction, fences, shutdown. */
#include "test_check.h"

enum { N = 1000 };

static int square(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    const celerity_accessor* out = &ctx->accessors[0];
    for (size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        *(double*)celerity_accessor_ptr(out, i, 0, 0) = (double)i * (double)i;
    }
    return 0;
}

static int smooth_and_sum(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    const celerity_accessor* in = &ctx->accessors[0];
    const celerity_accessor* out = &ctx->accessors[1];
    double partial = 0;
    for (size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        double left = *(double*)celerity_accessor_ptr(in, i == 0 ? 0 : i - 1, 0, 0);
        double right = *(double*)celerity_accessor_ptr(in, i == N - 1 ? N - 1 : i + 1, 0, 0);
        double v = (left + *(double*)celerity_accessor_ptr(in, i, 0, 0) + right) / 3.0;
        *(double*)celerity_accessor_ptr(out, i, 0, 0) = v;
        partial += v;
    }
    *(double*)ctx->reductions[0] += partial;
    return 0;
}

static int drops = 0;
static void count_drop(void* user_data) { (void)user_data; ++drops; }

int main(void) {
    CHECK_OK(celerity_runtime_init(NULL, NULL, NULL));
    celerity_runtime_info info;
    CHECK_OK(celerity_runtime_get_info(&info));
    printf("node %u of %u, %u device(s)\n", info.node, info.num_nodes, info.num_devices);

    size_t range[3] = {N, 1, 1};
    size_t one[3] = {1, 1, 1};
    celerity_buffer *squares = NULL, *smoothed = NULL, *sum = NULL;
    CHECK_OK(celerity_buffer_create(1, range, sizeof(double), _Alignof(double), NULL, &squares));
    CHECK_OK(celerity_buffer_create(1, range, sizeof(double), _Alignof(double), NULL, &smoothed));
    double zero = 0;
    CHECK_OK(celerity_buffer_create(0, one, sizeof(double), _Alignof(double), &zero, &sum));
    CHECK_OK(celerity_buffer_set_name(squares, "squares"));

    celerity_cg* cg = NULL;
    CHECK_OK(celerity_cg_create(&cg));
    celerity_range_mapper o2o = celerity_one_to_one();
    CHECK_OK(celerity_cg_access(cg, squares, CELERITY_ACCESS_DISCARD_WRITE, &o2o));
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, square, NULL, count_drop));

    CHECK_OK(celerity_cg_create(&cg));
    celerity_range_mapper nb = celerity_neighborhood(1, 0, 0);
    CHECK_OK(celerity_cg_access(cg, squares, CELERITY_ACCESS_READ, &nb));
    CHECK_OK(celerity_cg_access(cg, smoothed, CELERITY_ACCESS_DISCARD_WRITE, &o2o));
    celerity_reduction_op op = {CELERITY_REDUCE_SUM, CELERITY_TYPE_F64, 0, NULL, NULL, NULL};
    CHECK_OK(celerity_cg_reduction(cg, sum, &op, true));
    CHECK_OK(celerity_cg_set_name(cg, "smooth"));
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, smooth_and_sum, NULL, count_drop));

    static double result[N];
    double total = -1;
    celerity_future *f1 = NULL, *f2 = NULL;
    CHECK_OK(celerity_fence_buffer(smoothed, NULL, result, sizeof result, &f1));
    CHECK_OK(celerity_fence_buffer(sum, NULL, &total, sizeof total, &f2));
    CHECK_OK(celerity_future_wait(f1));
    CHECK_OK(celerity_future_wait(f2));
    celerity_future_release(f1);
    celerity_future_release(f2);

    double expected_total = 0;
    int mismatches = 0;
    for (size_t i = 0; i < N; ++i) {
        double l = (double)(i == 0 ? 0 : i - 1), r = (double)(i == N - 1 ? N - 1 : i + 1), c = (double)i;
        double expected = (l * l + c * c + r * r) / 3.0;
        expected_total += expected;
        if (result[i] != expected) ++mismatches;
    }
    CHECK(mismatches == 0);
    CHECK(total > expected_total * (1 - 1e-12) && total < expected_total * (1 + 1e-12));
    CHECK_OK(celerity_buffer_release(squares));
    CHECK_OK(celerity_buffer_release(smoothed));
    CHECK_OK(celerity_buffer_release(sum));
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(drops == 2);
    CHECK_STATUS(celerity_wait(), CELERITY_ERROR_INVALID_STATE);
    return celerity_test_finish("test_runtime_smoke");
}

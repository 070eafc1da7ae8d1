// The runtime API used from C++17: a 2-D stencil whose kernels, range mapper, combiner and drop
// are captureless lambdas turned into function pointers, user data owned by a heap object
// released through `drop`, a built-in and a custom reduction, and fences into std::vector.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test_runtime.h"

namespace {

constexpr size_t R0 = 40, R1 = 36;
constexpr int STEPS = 12;

struct step_params {
    double alpha;
    int step;
};

std::atomic<int> drops{0};

double at(const std::vector<double>& v, size_t i, size_t j) { return v[i * R1 + j]; }

}  // namespace

int main(int argc, char** argv) {
    test_init(&argc, &argv);

    std::vector<double> host(R0 * R1);
    for (size_t i = 0; i < R0; ++i)
        for (size_t j = 0; j < R1; ++j) host[i * R1 + j] = double((i * 7 + j * 3) % 10);

    celerity_buffer* a = test_buffer(2, R0, R1, 1, sizeof(double), host.data(), "a");
    celerity_buffer* b = test_buffer(2, R0, R1, 1, sizeof(double), nullptr, "b");
    const std::array<size_t, 3> range{R0, R1, 1};

    celerity_kernel_fn stencil = [](const celerity_kernel_context* ctx, void* user_data) -> int {
        const auto* p = static_cast<const step_params*>(user_data);
        const celerity_accessor& in = ctx->accessors[0];
        const celerity_accessor& out = ctx->accessors[1];
        auto get = [&](size_t i, size_t j) { return *static_cast<const double*>(celerity_accessor_ptr(&in, i, j, 0)); };
        TEST_FOR_CHUNK(ctx, i, j, k) {
            (void)k;
            double c = get(i, j);
            double n = i > 0 ? get(i - 1, j) : c, s = i + 1 < R0 ? get(i + 1, j) : c;
            double w = j > 0 ? get(i, j - 1) : c, e = j + 1 < R1 ? get(i, j + 1) : c;
            *static_cast<double*>(celerity_accessor_ptr(&out, i, j, 0)) =
                c + p->alpha * (n + s + w + e - 4 * c) + (p->step == 0 ? 0.0 : 0.0);
        }
        return 0;
    };
    void (*drop)(void*) = [](void* user_data) {
        delete static_cast<step_params*>(user_data);
        drops.fetch_add(1);
    };

    for (int step = 0; step < STEPS; ++step) {
        celerity_cg* cg = test_cg("cxx_stencil");
        test_access(cg, a, CELERITY_ACCESS_READ, celerity_neighborhood_along_axes(1, 1, 0));
        test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        CHECK_OK(celerity_submit_parallel_for(cg, 2, range.data(), nullptr, stencil, new step_params{0.1, step}, drop));
        std::swap(a, b);
    }

    // Serial reference (same arithmetic per element).
    std::vector<double> cur = host, next(R0 * R1);
    for (int step = 0; step < STEPS; ++step) {
        for (size_t i = 0; i < R0; ++i)
            for (size_t j = 0; j < R1; ++j) {
                double c = at(cur, i, j);
                double n = i > 0 ? at(cur, i - 1, j) : c, s = i + 1 < R0 ? at(cur, i + 1, j) : c;
                double w = j > 0 ? at(cur, i, j - 1) : c, e = j + 1 < R1 ? at(cur, i, j + 1) : c;
                next[i * R1 + j] = c + 0.1 * (n + s + w + e - 4 * c) + (step == 0 ? 0.0 : 0.0);
            }
        std::swap(cur, next);
    }

    // A built-in SUM and a custom (min, max) reduction over the result.
    struct minmax {
        double lo, hi;
    };
    celerity_buffer* sum = test_buffer(0, 1, 1, 1, sizeof(double), nullptr, "sum");
    celerity_buffer* mm = nullptr;
    const size_t unit[3] = {1, 1, 1};
    CHECK_OK(celerity_buffer_create(0, unit, sizeof(minmax), alignof(minmax), nullptr, &mm));
    celerity_reduction_op sum_op{};
    sum_op.kind = CELERITY_REDUCE_SUM;
    sum_op.type = CELERITY_TYPE_F64;
    static const minmax identity{INFINITY, -INFINITY};
    celerity_reduction_op mm_op{};
    mm_op.kind = CELERITY_REDUCE_CUSTOM;
    mm_op.elem_size = sizeof(minmax);
    mm_op.identity = &identity;
    mm_op.combine = [](void*, void* acc, const void* value) {
        auto* x = static_cast<minmax*>(acc);
        const auto* v = static_cast<const minmax*>(value);
        x->lo = std::min(x->lo, v->lo);
        x->hi = std::max(x->hi, v->hi);
    };
    celerity_cg* cg = test_cg("cxx_reduce");
    test_access(cg, a, CELERITY_ACCESS_READ, celerity_one_to_one());
    CHECK_OK(celerity_cg_reduction(cg, sum, &sum_op, true));
    CHECK_OK(celerity_cg_reduction(cg, mm, &mm_op, true));
    CHECK_OK(celerity_submit_parallel_for(
        cg, 2, range.data(), nullptr,
        [](const celerity_kernel_context* ctx, void*) -> int {
            auto* s = static_cast<double*>(ctx->reductions[0]);
            auto* m = static_cast<minmax*>(ctx->reductions[1]);
            TEST_FOR_CHUNK(ctx, i, j, k) {
                double v = TEST_ELEM(double, ctx, 0, i, j, k);
                *s += v;
                m->lo = std::min(m->lo, v);
                m->hi = std::max(m->hi, v);
            }
            return 0;
        },
        nullptr, nullptr));

    std::vector<double> got(R0 * R1, -1.0);
    CHECK_OK(test_read(a, nullptr, got.data(), got.size() * sizeof(double)));
    double max_diff = 0;
    for (size_t e = 0; e < got.size(); ++e) max_diff = std::max(max_diff, std::fabs(got[e] - cur[e]));
    CHECK(max_diff <= 1e-12);

    double got_sum = 0, want_sum = 0;
    for (double v : cur) want_sum += v;
    CHECK_OK(test_read(sum, nullptr, &got_sum, sizeof got_sum));
    CHECK(std::fabs(got_sum - want_sum) <= 1e-9 * std::fabs(want_sum));
    minmax got_mm{0, 0};
    CHECK_OK(test_read(mm, nullptr, &got_mm, sizeof got_mm));
    CHECK(got_mm.lo == *std::min_element(cur.begin(), cur.end()));
    CHECK(got_mm.hi == *std::max_element(cur.begin(), cur.end()));

    // A sub-box fence into a std::array.
    std::array<double, 3 * 4> box{};
    celerity_subrange sr = test_subrange(10, 20, 0, 3, 4, 1);
    CHECK_OK(test_read(a, &sr, box.data(), sizeof box));
    for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 4; ++j) CHECK(std::fabs(box[i * 4 + j] - at(cur, 10 + i, 20 + j)) <= 1e-12);

    for (celerity_buffer* buf : {a, b, sum, mm}) CHECK_OK(celerity_buffer_release(buf));
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(drops.load() == STEPS);
    printf("max difference from serial: %g\n", max_diff);
    return celerity_test_finish("test_api_cxx");
}

// The cost of the C++ frontend over the C API: the same wave_sim step and the same matmul
// through celerity.hpp (item-wise kernels) and through the C API (hand-written row loops), and
// the per-task submission cost of queue.submit versus celerity_cg_create + access + submit.
// Prints the best of several repetitions (variants interleaved). Run on one emulated device for stable figures:
//   CELERITY_DEVICES=host:1 bench_cxx_vs_c [repetitions (7)]
#include <celerity.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {
using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// The fastest repetition: on a shared machine other jobs only ever add time.
double best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void check(celerity_status s) { celerity::detail::check(s); }

// ---- wave_sim step --------------------------------------------------------------------------
constexpr float c2 = 0.25f;

void wave_cxx(celerity::queue& q, celerity::buffer<float, 2> prev, celerity::buffer<float, 2> u) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor rw{prev, cgh, celerity::access::one_to_one{}, celerity::read_write};
        celerity::accessor in{u, cgh, celerity::access::neighborhood{{1, 1}, celerity::neighborhood_shape::along_axes}, celerity::read_only};
        const size_t n = u.get_range()[0];
        cgh.parallel_for(u.get_range(), [=](celerity::item<2> it) {
            const size_t i = it[0], j = it[1];
            const size_t up = i > 0 ? i - 1 : i, down = i + 1 < n ? i + 1 : i, l = j > 0 ? j - 1 : j, r = j + 1 < n ? j + 1 : j;
            const float c = in[i][j];
            rw[it] = 2.f * c - rw[it] + c2 * (in[up][j] + in[down][j] + in[i][l] + in[i][r] - 4.f * c);
        });
    });
}

float* row(const celerity_accessor& a, size_t i) { return static_cast<float*>(celerity_accessor_ptr(&a, i, a.allocation.offset[1], 0)) - a.allocation.offset[1]; }

int wave_c_kernel(const celerity_kernel_context* ctx, void* user_data) {
    const size_t n = *static_cast<const size_t*>(user_data);
    const size_t j0 = ctx->chunk.offset[1], j1 = j0 + ctx->chunk.range[1];
    for(size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        float* p = row(ctx->accessors[0], i);
        const float* u = row(ctx->accessors[1], i);
        const float* up = row(ctx->accessors[1], i > 0 ? i - 1 : i);
        const float* down = row(ctx->accessors[1], i + 1 < n ? i + 1 : i);
        for(size_t j = j0; j < j1; ++j) {
            const size_t l = j > 0 ? j - 1 : j, r = j + 1 < n ? j + 1 : j;
            p[j] = 2.f * u[j] - p[j] + c2 * (up[j] + down[j] + u[l] + u[r] - 4.f * u[j]);
        }
    }
    return 0;
}

void wave_c(celerity_buffer* prev, celerity_buffer* u, size_t* n) {
    celerity_cg* cg = nullptr;
    check(celerity_cg_create(&cg));
    const celerity_range_mapper same = celerity_one_to_one(), cross = celerity_neighborhood_along_axes(1, 1, 0);
    check(celerity_cg_access(cg, prev, CELERITY_ACCESS_READ_WRITE, &same));
    check(celerity_cg_access(cg, u, CELERITY_ACCESS_READ, &cross));
    const size_t range[3] = {*n, *n, 1};
    check(celerity_submit_parallel_for(cg, 2, range, nullptr, wave_c_kernel, n, nullptr));
}

// ---- matmul (one dot product per element, same loop order on both sides) ---------------------
void matmul_cxx(celerity::queue& q, celerity::buffer<float, 2> a, celerity::buffer<float, 2> b, celerity::buffer<float, 2> c) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor ra{a, cgh, celerity::access::slice<2>(1), celerity::read_only};
        celerity::accessor rb{b, cgh, celerity::access::slice<2>(0), celerity::read_only};
        celerity::accessor wc{c, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        const size_t n = a.get_range()[0];
        cgh.parallel_for(c.get_range(), [=](celerity::item<2> it) {
            float sum = 0.f;
            for(size_t k = 0; k < n; ++k) sum += ra[it[0]][k] * rb[k][it[1]];
            wc[it] = sum;
        });
    });
}

int matmul_c_kernel(const celerity_kernel_context* ctx, void* user_data) {
    const size_t n = *static_cast<const size_t*>(user_data);
    const size_t j0 = ctx->chunk.offset[1], j1 = j0 + ctx->chunk.range[1];
    for(size_t i = ctx->chunk.offset[0]; i < ctx->chunk.offset[0] + ctx->chunk.range[0]; ++i) {
        const float* a = row(ctx->accessors[0], i);
        float* c = row(ctx->accessors[2], i);
        for(size_t j = j0; j < j1; ++j) {
            float sum = 0.f;
            for(size_t k = 0; k < n; ++k) sum += a[k] * row(ctx->accessors[1], k)[j];
            c[j] = sum;
        }
    }
    return 0;
}

void matmul_c(celerity_buffer* a, celerity_buffer* b, celerity_buffer* c, size_t* n) {
    celerity_cg* cg = nullptr;
    check(celerity_cg_create(&cg));
    const celerity_range_mapper rows = celerity_slice(1), cols = celerity_slice(0), same = celerity_one_to_one();
    check(celerity_cg_access(cg, a, CELERITY_ACCESS_READ, &rows));
    check(celerity_cg_access(cg, b, CELERITY_ACCESS_READ, &cols));
    check(celerity_cg_access(cg, c, CELERITY_ACCESS_DISCARD_WRITE, &same));
    const size_t range[3] = {*n, *n, 1};
    check(celerity_submit_parallel_for(cg, 2, range, nullptr, matmul_c_kernel, n, nullptr));
}

int empty_c_kernel(const celerity_kernel_context*, void*) { return 0; }

} // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
    celerity::queue q;
    static size_t n_wave = 512, n_mat = 256;

    // Both variants share the buffers, so memory placement is the same.
    std::vector<float> init(n_wave * n_wave, 0.5f), mat(n_mat * n_mat, 1.f);
    celerity::buffer<float, 2> u(init.data(), celerity::range<2>(n_wave, n_wave)), prev(init.data(), celerity::range<2>(n_wave, n_wave));
    celerity::buffer<float, 2> a(mat.data(), celerity::range<2>(n_mat, n_mat)), b(mat.data(), celerity::range<2>(n_mat, n_mat)), c(celerity::range<2>(n_mat, n_mat));
    celerity_buffer *cu = celerity::detail::raw_buffer(u), *cprev = celerity::detail::raw_buffer(prev);
    celerity_buffer *ca = celerity::detail::raw_buffer(a), *cb = celerity::detail::raw_buffer(b), *cc = celerity::detail::raw_buffer(c);
    q.wait();

    const int steps = 20;
    std::vector<double> wave_cxx_t, wave_c_t, mat_cxx_t, mat_c_t, sub_cxx_t, sub_c_t;
    for(int r = 0; r < reps; ++r) {
        auto t = clock_type::now();
        for(int s = 0; s < steps; ++s) wave_cxx(q, s % 2 ? u : prev, s % 2 ? prev : u);
        q.wait();
        wave_cxx_t.push_back(since(t) / steps);

        t = clock_type::now();
        for(int s = 0; s < steps; ++s) wave_c(s % 2 ? cu : cprev, s % 2 ? cprev : cu, &n_wave);
        check(celerity_wait());
        wave_c_t.push_back(since(t) / steps);

        t = clock_type::now();
        for(int s = 0; s < 4; ++s) matmul_cxx(q, a, b, c);
        q.wait();
        mat_cxx_t.push_back(since(t) / 4);

        t = clock_type::now();
        for(int s = 0; s < 4; ++s) matmul_c(ca, cb, cc, &n_mat);
        check(celerity_wait());
        mat_c_t.push_back(since(t) / 4);

        // Submission only: 2000 one-item tasks, timed up to the last submit call.
        const int tasks = 2000;
        t = clock_type::now();
        for(int s = 0; s < tasks; ++s) {
            q.submit([&](celerity::handler& cgh) {
                celerity::accessor w{c, cgh, celerity::access::all{}, celerity::read_write};
                cgh.parallel_for(celerity::range<1>(1), [=](celerity::item<1>) { (void)w; });
            });
        }
        sub_cxx_t.push_back(since(t) / tasks);
        q.wait();
        t = clock_type::now();
        for(int s = 0; s < tasks; ++s) {
            celerity_cg* cg = nullptr;
            check(celerity_cg_create(&cg));
            const celerity_range_mapper all = celerity_all();
            check(celerity_cg_access(cg, cc, CELERITY_ACCESS_READ_WRITE, &all));
            const size_t one[3] = {1, 1, 1};
            check(celerity_submit_parallel_for(cg, 1, one, nullptr, empty_c_kernel, nullptr, nullptr));
        }
        sub_c_t.push_back(since(t) / tasks);
        q.wait();
    }
    const auto row_out = [](const char* what, double cxx, double c, const char* unit, double scale) {
        std::printf("%-34s C++ %9.3f %s   C %9.3f %s   C++/C %.3f   diff %+.3f %s\n", what, cxx * scale, unit, c * scale, unit, cxx / c, (cxx - c) * scale, unit);
    };
    std::printf("best of %d repetitions\n", reps);
    row_out("wave_sim step 512x512", best(wave_cxx_t), best(wave_c_t), "ms", 1e3);
    row_out("matmul 256x256", best(mat_cxx_t), best(mat_c_t), "ms", 1e3);
    row_out("submission per task", best(sub_cxx_t), best(sub_c_t), "us", 1e6);
    return 0;
}

// wave_sim: the 2-D wave equation by finite differences (a 5-point stencil read through
// access::neighborhood along axes), two buffers swapped every step. The final field is
// checked against the same scheme computed serially; the time per step is printed.
//   wave_sim [-N grid size (256)] [-T steps (100)] [--check 0|1 (1)]
#include <celerity.h>

#include "example_common.hpp"

namespace {
struct wave_params {
    float courant2 = 0.25f; // (c dt / dx)^2, stable below 0.5
};

CELERITY_HD float initial_wave(size_t i, size_t j, size_t n) {
    const float dy = static_cast<float>(i) - n / 4.f, dx = static_cast<float>(j) - n / 4.f, s = n / 16.f;
    return sycl::exp(-(dx * dx + dy * dy) / (2.f * s * s));
}

/// One update of cell (i, j): next = 2 u - prev + c2 * laplacian(u), with mirrored borders.
template <typename Get>
CELERITY_HD float update_cell(size_t i, size_t j, size_t n, float prev, float c2, const Get& u) {
    const size_t up = i > 0 ? i - 1 : i, down = i + 1 < n ? i + 1 : i;
    const size_t left = j > 0 ? j - 1 : j, right = j + 1 < n ? j + 1 : j;
    const float center = u(i, j);
    const float lap = u(up, j) + u(down, j) + u(i, left) + u(i, right) - 4.f * center;
    return 2.f * center - prev + c2 * lap;
}

void init(celerity::queue& q, celerity::buffer<float, 2> u, celerity::buffer<float, 2> prev) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor out_u{u, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        celerity::accessor out_prev{prev, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        const size_t n = u.get_range()[0];
        celerity::debug::set_task_name(cgh, "initial wave");
        cgh.parallel_for(u.get_range(), [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) {
            out_u[it] = initial_wave(it[0], it[1], n);
            out_prev[it] = out_u[it];
        });
    });
}

void step(celerity::queue& q, celerity::buffer<float, 2> next_and_prev, celerity::buffer<float, 2> u, wave_params p) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor rw{next_and_prev, cgh, celerity::access::one_to_one{}, celerity::read_write};
        celerity::accessor in{u, cgh, celerity::access::neighborhood{{1, 1}, celerity::neighborhood_shape::along_axes}, celerity::read_only};
        const size_t n = u.get_range()[0];
        cgh.parallel_for(u.get_range(), [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) {
            rw[it] = update_cell(it[0], it[1], n, rw[it], p.courant2, [&](size_t i, size_t j) { return in[i][j]; });
        });
    });
}

std::vector<float> serial(size_t n, size_t steps, wave_params p) {
    std::vector<float> u(n * n), prev(n * n);
    for(size_t i = 0; i < n; ++i) {
        for(size_t j = 0; j < n; ++j) u[i * n + j] = prev[i * n + j] = initial_wave(i, j, n);
    }
    for(size_t s = 0; s < steps; ++s) {
        for(size_t i = 0; i < n; ++i) {
            for(size_t j = 0; j < n; ++j) {
                prev[i * n + j] = update_cell(i, j, n, prev[i * n + j], p.courant2, [&](size_t a, size_t b) { return u[a * n + b]; });
            }
        }
        std::swap(u, prev);
    }
    return u;
}
} // namespace

int main(int argc, char** argv) {
    const size_t n = static_cast<size_t>(example::option(argc, argv, "-N", 256));
    const size_t steps = static_cast<size_t>(example::option(argc, argv, "-T", 100));
    const bool check = example::option(argc, argv, "--check", 1) != 0;
    const wave_params params;

    celerity::queue q;
    celerity::buffer<float, 2> u(celerity::range<2>(n, n)), prev(celerity::range<2>(n, n));
    celerity::debug::set_buffer_name(u, "u");
    celerity::debug::set_buffer_name(prev, "prev");
    init(q, u, prev);
    q.wait();

    example::timer timer;
    for(size_t s = 0; s < steps; ++s) {
        step(q, prev, u, params);
        std::swap(u, prev);
    }
    const auto result = q.fence(u).get();
    const double seconds = timer.seconds();

    bool ok = true;
    std::string detail = std::to_string(n) + "x" + std::to_string(n) + ", " + std::to_string(steps) + " steps, "
                         + std::to_string(seconds / static_cast<double>(steps == 0 ? 1 : steps) * 1e3) + " ms/step";
    if(check) {
        const auto expected = serial(n, steps, params);
        float max_error = 0.f;
        for(size_t i = 0; i < n * n; ++i) max_error = std::max(max_error, std::fabs(result.get_data()[i] - expected[i]));
        ok = max_error <= 1e-4f;
        detail += ", max error " + std::to_string(max_error);
    }
    return example::report("wave_sim", ok, seconds, detail);
}

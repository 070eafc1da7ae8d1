// nbody: gravitational N-body steps (all-pairs forces: positions read through access::all,
// velocities updated one-to-one), checked against the same scheme computed serially and
// against conservation of total momentum.
//   nbody [-n bodies (512)] [-T steps (10)]
#include <celerity.h>

#include "example_common.hpp"

namespace {
// Used in kernels as float(dt): a value, not a reference to a host variable (nvcc).
constexpr float dt = 0.01f;
constexpr float softening = 0.05f;

sycl::float3 initial_position(size_t i) {
    const float t = static_cast<float>(i);
    return sycl::float3(std::cos(t * 0.37f) * (1.f + 0.001f * t), std::sin(t * 0.37f) * (1.f + 0.001f * t), std::sin(t * 0.11f) * 0.2f);
}
CELERITY_HD float mass(size_t i) { return 1.f + static_cast<float>(i % 3); }

template <typename Pos>
CELERITY_HD sycl::float3 acceleration(size_t i, size_t n, const Pos& pos) {
    sycl::float3 a(0.f, 0.f, 0.f);
    const sycl::float3 pi = pos(i);
    for(size_t j = 0; j < n; ++j) {
        const sycl::float3 d = pos(j) - pi;
        const float r2 = sycl::dot(d, d) + softening * softening;
        const float inv = 1.f / (r2 * sycl::sqrt(r2));
        a += (mass(j) * inv) * d;
    }
    return a;
}
} // namespace

int main(int argc, char** argv) {
    const size_t n = static_cast<size_t>(example::option(argc, argv, "-n", 512));
    const size_t steps = static_cast<size_t>(example::option(argc, argv, "-T", 10));
    std::vector<sycl::float3> p0(n), v0(n, sycl::float3(0.f, 0.f, 0.f));
    for(size_t i = 0; i < n; ++i) p0[i] = initial_position(i);

    example::timer timer;
    celerity::queue q;
    celerity::buffer<sycl::float3, 1> pos(p0.data(), celerity::range<1>(n)), vel(v0.data(), celerity::range<1>(n));
    for(size_t s = 0; s < steps; ++s) {
        q.submit([&](celerity::handler& cgh) {
            celerity::accessor p{pos, cgh, celerity::access::all{}, celerity::read_only};
            celerity::accessor v{vel, cgh, celerity::access::one_to_one{}, celerity::read_write};
            celerity::debug::set_task_name(cgh, "forces");
            cgh.parallel_for(celerity::range<1>(n), [=] CELERITY_DEVICE_LAMBDA(celerity::item<1> it) { v[it] += float(dt) * acceleration(it[0], n, [&](size_t j) { return p[j]; }); });
        });
        q.submit([&](celerity::handler& cgh) {
            celerity::accessor v{vel, cgh, celerity::access::one_to_one{}, celerity::read_only};
            celerity::accessor p{pos, cgh, celerity::access::one_to_one{}, celerity::read_write};
            celerity::debug::set_task_name(cgh, "move");
            cgh.parallel_for(celerity::range<1>(n), [=] CELERITY_DEVICE_LAMBDA(celerity::item<1> it) { p[it] += float(dt) * v[it]; });
        });
    }
    const auto got_p = q.fence(pos).get();
    const auto got_v = q.fence(vel).get();
    const double seconds = timer.seconds();

    std::vector<sycl::float3> p = p0, v = v0;
    for(size_t s = 0; s < steps; ++s) {
        for(size_t i = 0; i < n; ++i) v[i] += dt * acceleration(i, n, [&](size_t j) { return p[j]; });
        for(size_t i = 0; i < n; ++i) p[i] += dt * v[i];
    }
    float max_error = 0.f;
    sycl::float3 momentum(0.f, 0.f, 0.f);
    for(size_t i = 0; i < n; ++i) {
        const sycl::float3 d = got_p.get_data()[i] - p[i];
        max_error = std::max(max_error, sycl::length(d));
        momentum += mass(i) * got_v.get_data()[i];
    }
    // Forces are pairwise antisymmetric up to the mass factor: total momentum stays ~0.
    const float drift = sycl::length(momentum);
    // Positions are of order 1. On host devices the kernels compute exactly what the serial loop
    // does (error 0); on CUDA, fused multiply-adds and the device's sqrt leave ~1e-4 after 10
    // steps (measured on the H200). A wrong range mapper or a missed transfer gives errors of
    // order 1, far above this bound.
    const bool ok = max_error <= 1e-3f && drift <= 1e-2f;
    return example::report("nbody", ok, seconds,
        std::to_string(n) + " bodies, " + std::to_string(steps) + " steps, max error " + std::to_string(max_error) + ", momentum drift " + std::to_string(drift));
}

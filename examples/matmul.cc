// matmul: C = A * B for small-integer matrices (so float sums are exact), tiled through
// work-group local memory with group_barrier, then checked element by element against a serial
// product. Each node checks the rows it holds in a distributed host task and reports through
// a host object.
#include <celerity.h>

#include "example_common.hpp"

namespace {
constexpr size_t tile = 8;

CELERITY_HD float a_at(size_t i, size_t j) { return static_cast<float>((i + 2 * j) % 7) - 3.f; }
CELERITY_HD float b_at(size_t i, size_t j) { return static_cast<float>((3 * i + j) % 5) - 2.f; }

void fill(celerity::queue& q, celerity::buffer<float, 2> m, bool is_a) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor out{m, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        celerity::debug::set_task_name(cgh, is_a ? "fill A" : "fill B");
        cgh.parallel_for(m.get_range(), [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) { out[it] = is_a ? a_at(it[0], it[1]) : b_at(it[0], it[1]); });
    });
}

void multiply(celerity::queue& q, celerity::buffer<float, 2> a, celerity::buffer<float, 2> b, celerity::buffer<float, 2> c) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in_a{a, cgh, celerity::access::slice<2>(1), celerity::read_only};
        celerity::accessor in_b{b, cgh, celerity::access::slice<2>(0), celerity::read_only};
        celerity::accessor out{c, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        celerity::local_accessor<float, 2> tile_a{{tile, tile}, cgh};
        celerity::local_accessor<float, 2> tile_b{{tile, tile}, cgh};
        celerity::debug::set_task_name(cgh, "tiled multiply");
        const size_t n = a.get_range()[0];
        cgh.parallel_for(celerity::nd_range<2>{c.get_range(), {tile, tile}}, [=] CELERITY_DEVICE_LAMBDA(celerity::nd_item<2> it) {
            const size_t row = it.get_global_id(0), col = it.get_global_id(1);
            const size_t lr = it.get_local_id(0), lc = it.get_local_id(1);
            float sum = 0.f;
            for(size_t k0 = 0; k0 < n; k0 += tile) {
                tile_a[lr][lc] = in_a[row][k0 + lc];
                tile_b[lr][lc] = in_b[k0 + lr][col];
                celerity::group_barrier(it.get_group());
                for(size_t k = 0; k < tile; ++k) sum += tile_a[lr][k] * tile_b[k][lc];
                celerity::group_barrier(it.get_group());
            }
            out[it.get_global_id()] = sum;
        });
    });
}
} // namespace

int main(int argc, char** argv) {
    const size_t n = static_cast<size_t>(example::option(argc, argv, "-n", 128)) / tile * tile;
    example::timer timer;
    celerity::queue q;
    const celerity::range<2> extent(n, n);
    celerity::buffer<float, 2> a(extent), b(extent), c(extent);
    celerity::debug::set_buffer_name(a, "A");
    celerity::debug::set_buffer_name(b, "B");
    celerity::debug::set_buffer_name(c, "C");
    fill(q, a, true);
    fill(q, b, false);
    multiply(q, a, b, c);

    celerity::experimental::host_object<size_t> mismatches(0);
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor result{c, cgh, celerity::access::one_to_one{}, celerity::read_only_host_task};
        celerity::experimental::side_effect count{mismatches, cgh};
        cgh.host_task(extent, [=](celerity::partition<2> part) {
            const auto sr = part.get_subrange();
            for(size_t i = sr.offset[0]; i < sr.offset[0] + sr.range[0]; ++i) {
                for(size_t j = sr.offset[1]; j < sr.offset[1] + sr.range[1]; ++j) {
                    float expected = 0.f;
                    for(size_t k = 0; k < n; ++k) expected += a_at(i, k) * b_at(k, j);
                    if(result[i][j] != expected) {
                        if(*count == 0) CELERITY_ERROR("C[{}][{}] = {}, expected {}", i, j, result[i][j], expected);
                        ++*count;
                    }
                }
            }
        });
    });
    const size_t bad = q.fence(mismatches).get();
    return example::report("matmul", bad == 0, timer.seconds(), std::to_string(n) + "x" + std::to_string(n) + ", " + std::to_string(bad) + " mismatches on this node");
}

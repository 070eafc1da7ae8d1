// Accessor boundary checking through the C++ accessor (celerity.hpp): an off-by-one stencil
// reads in[i + 1] for every i, one past the end of the buffer at i = 63. The chunk that holds
// i = 63 is reported once, naming task, chunk, accessor, buffer and both boxes, and the read
// yields the zeroed scratch element; with CELERITY_ACCESSOR_BOUNDARY_CHECK=error (environment)
// the fence fails with CELERITY_ERROR_ACCESS_PATTERN. The complete log of the run is asserted.
// The kernel is a device lambda: built with nvcc (`-x cu --extended-lambda`) the same test runs
// on CUDA with devices=cuda, the accessor checking in device code (docs/gpu.md).
#define CELERITY_ACCESSOR_BOUNDARY_CHECK 1
#include <celerity.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "test_log.h"

int main() {
    const char* env = std::getenv("CELERITY_ACCESSOR_BOUNDARY_CHECK");
    const bool error_policy = env != nullptr && std::strcmp(env, "error") == 0;
    test_log log;
    test_log_begin(&log);
    celerity_runtime_info info{};
    celerity_status status = CELERITY_OK;
    std::vector<float> result;
    {
        celerity::queue q;
        CHECK_OK(celerity_runtime_get_info(&info));
        std::vector<float> init(64);
        std::iota(init.begin(), init.end(), 0.0f);
        celerity::buffer<float, 1> in(init.data(), celerity::range<1>(64));
        celerity::buffer<float, 1> out(celerity::range<1>(64));
        celerity::debug::set_buffer_name(in, "in");
        celerity::debug::set_buffer_name(out, "out");
        q.submit([&](celerity::handler& cgh) {
            celerity::debug::set_task_name(cgh, "stencil");
            celerity::accessor a{in, cgh, celerity::access::neighborhood{celerity::range<1>(1)}, celerity::read_only};
            celerity::accessor b{out, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
            cgh.parallel_for(celerity::range<1>(64), [=] CELERITY_DEVICE_LAMBDA(celerity::item<1> it) { b[it] = a[it] + a[it[0] + 1]; });
        });
        try {
            auto snapshot = q.fence(out).get();
            for(size_t i = 0; i < 64; ++i) result.push_back(snapshot[i]);
        } catch(const celerity::error& e) {
            status = e.status();
        }
    }
    test_log_end(&log);

    std::vector<const char*> expected;
    char startup[64], report[512];
    std::snprintf(startup, sizeof startup, "[N%u] INFO celerity *", info.node);
    expected.push_back(startup);
    std::snprintf(report, sizeof report,
        "[N%u] ERROR Device kernel T1 \"stencil\" (chunk [*,64) on D*): accessor 0 (read access of buffer B0 \"in\") used "
        "[64,65) (1 element access) outside its declared box [*,64); the range mapper declares what each chunk may access",
        info.node);
    // Only the node whose chunk holds i = 63 reads past the end: the last one (a 1-D range is
    // split across nodes in node order).
    const bool ran_last_element = info.node + 1 == info.num_nodes;
    if(ran_last_element) expected.push_back(report);
    test_log_expect(&log, expected.data(), expected.size());
    // Fail-stop across ranks: the violation on the node holding i = 63 fails every node's fence.
    if(error_policy && (ran_last_element || info.num_nodes > 1)) {
        CHECK_STATUS(status, CELERITY_ERROR_ACCESS_PATTERN);
    } else {
        CHECK_STATUS(status, CELERITY_OK);
        CHECK(result.size() == 64);
        for(size_t i = 0; i + 1 < result.size(); ++i) CHECK(result[i] == 2.0f * static_cast<float>(i) + 1.0f);
        if(result.size() == 64) CHECK(result[63] == 63.0f); // in[64] read the zeroed scratch element
    }
    return celerity_test_finish("test_bounds_check_cxx");
}

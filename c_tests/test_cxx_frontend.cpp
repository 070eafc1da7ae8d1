// The C++ frontend (celerity.hpp) end to end: buffers of 0-3 dims and their shared-handle
// copies, every range mapper (incl. custom callables and even_split), access modes and
// no_init, nd_range kernels with local memory and group_barrier, reductions (built-in and
// user-defined), host tasks of every kind, host objects by value / reference / void, fences,
// hints, and errors: a failing C call throws celerity::error with its status, an exception in
// a kernel or host task fails the task with the exception's message at the next wait.
#include <celerity.h>

#include <atomic>
#include <cstdio>
#include <numeric>

static int failures = 0;
#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if(!(cond)) {                                                                                                  \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                             \
            ++failures;                                                                                                \
        }                                                                                                              \
    } while(0)

namespace {

void buffers_and_mappers(celerity::queue& q) {
    // 1-D from a host pointer; a copy of the buffer object is the same buffer.
    std::vector<int> init(100);
    std::iota(init.begin(), init.end(), 0);
    celerity::buffer<int, 1> a(init.data(), celerity::range<1>(100));
    celerity::buffer<int, 1> alias = a;
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor acc{alias, cgh, celerity::access::one_to_one{}, celerity::read_write};
        cgh.parallel_for(celerity::range<1>(100), [=](celerity::id<1> i) { acc[i] *= 2; });
    });
    auto snap = q.fence(a).get();
    bool doubled = true;
    for(int i = 0; i < 100; ++i) doubled = doubled && snap[i] == 2 * i;
    EXPECT(doubled);

    // 3-D with an offset kernel and chained subscripts; a fenced subrange.
    celerity::buffer<float, 3> cube(celerity::range<3>(6, 5, 4));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor acc{cube, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<3>(6, 5, 4), [=](celerity::item<3> it) { acc[it[0]][it[1]][it[2]] = static_cast<float>(it.get_linear_id()); });
    });
    auto part = q.fence(cube, celerity::subrange<3>({1, 2, 3}, {2, 2, 1})).get();
    EXPECT(part.get_range() == celerity::range<3>(2, 2, 1));
    EXPECT((part[{2, 3, 3}] == static_cast<float>((2 * 5 + 3) * 4 + 3)));

    // slice, fixed and a custom transposing mapper on a 2-D buffer.
    const size_t n = 16;
    celerity::buffer<int, 2> m(celerity::range<2>(n, n)), t(celerity::range<2>(n, n)), rowsum(celerity::range<2>(n, 1));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor out{m, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<2>(n, n), [=](celerity::item<2> it) { out[it] = static_cast<int>(it[0] * 100 + it[1]); });
    });
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{m, cgh, celerity::access::one_to_one{}, celerity::read_only};
        auto transposed = [](celerity::chunk<2> c) { return celerity::subrange<2>({c.offset[1], c.offset[0]}, {c.range[1], c.range[0]}); };
        celerity::accessor out{t, cgh, transposed, celerity::write_only, celerity::no_init};
        celerity::experimental::hint(cgh, celerity::experimental::hints::split_2d{});
        cgh.parallel_for(celerity::range<2>(n, n), [=](celerity::item<2> it) { out[{it[1], it[0]}] = in[it]; });
    });
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{t, cgh, celerity::access::slice<2>(1), celerity::read_only};
        // A 1-D kernel writing a column of a 2-D buffer through a custom mapper.
        auto column = [](celerity::chunk<1> c) { return celerity::subrange<2>({c.offset[0], 0}, {c.range[0], 1}); };
        celerity::accessor out{rowsum, cgh, column, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<1>(n), [=](celerity::item<1> it) {
            int s = 0;
            for(size_t j = 0; j < n; ++j) s += in[it[0]][j];
            out[{it[0], 0}] = s;
        });
    });
    auto sums = q.fence(rowsum).get();
    bool sums_ok = true;
    for(size_t i = 0; i < n; ++i) {
        int expected = 0;
        for(size_t j = 0; j < n; ++j) expected += static_cast<int>(j * 100 + i);
        sums_ok = sums_ok && sums[{i, 0}] == expected;
    }
    EXPECT(sums_ok);

    // neighborhood along axes: a 1-D three-point stencil over an offset range.
    celerity::buffer<double, 1> src(celerity::range<1>(100)), dst(celerity::range<1>(100));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor out{src, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<1>(100), [=](celerity::item<1> it) { out[it] = static_cast<double>(it[0] * it[0]); });
    });
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{src, cgh, celerity::access::neighborhood{{1}, celerity::neighborhood_shape::along_axes}, celerity::read_only};
        celerity::accessor out{dst, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<1>(98), celerity::id<1>(1), [=](celerity::item<1> it) { out[it] = in[it[0] - 1] + in[it[0] + 1] - 2 * in[it]; });
    });
    auto second = q.fence(dst, celerity::subrange<1>(1, 98)).get();
    bool second_ok = true;
    for(size_t i = 1; i < 99; ++i) second_ok = second_ok && second[i] == 2.0;
    EXPECT(second_ok);
}

void nd_range_kernels(celerity::queue& q) {
    // Each work group reverses its part through local memory: needs a working barrier.
    constexpr size_t n = 256, group = 16;
    celerity::buffer<int, 1> in{celerity::range<1>(n)}, out{celerity::range<1>(n)};
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor w{in, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<1>(n), [=](celerity::item<1> it) { w[it] = static_cast<int>(it[0]); });
    });
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor r{in, cgh, celerity::access::one_to_one{}, celerity::read_only};
        celerity::accessor w{out, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        celerity::local_accessor<int, 1> scratch{group, cgh};
        cgh.parallel_for(celerity::nd_range<1>(n, group), [=](celerity::nd_item<1> it) {
            const size_t l = it.get_local_id(0);
            scratch[l] = r[it.get_global_id()];
            celerity::group_barrier(it.get_group());
            w[it.get_global_id()] = scratch[group - 1 - l];
        });
    });
    auto reversed = q.fence(out).get();
    bool ok = true;
    for(size_t i = 0; i < n; ++i) ok = ok && reversed[i] == static_cast<int>(i / group * group + (group - 1 - i % group));
    EXPECT(ok);

    // 2-D groups without a barrier (items run directly), checking the nd_item geometry.
    celerity::buffer<size_t, 2> ids(celerity::range<2>(8, 12));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor w{ids, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::nd_range<2>({8, 12}, {4, 3}), [=](celerity::nd_item<2> it) {
            w[it.get_global_id()] = it.get_group_linear_id() * 100 + it.get_local_linear_id();
        });
    });
    auto geometry = q.fence(ids).get();
    EXPECT((geometry[{5, 7}] == (1 * 4 + 2) * 100 + 1 * 3 + 1));
}

struct max_abs {
    // Host and device: under nvcc a reduction's functor also runs in the kernel's atomics.
    CELERITY_HD int operator()(int a, int b) const { return (a < 0 ? -a : a) > (b < 0 ? -b : b) ? a : b; }
};

void reductions(celerity::queue& q) {
    std::vector<int> values(1000);
    for(int i = 0; i < 1000; ++i) values[i] = (i * 37) % 201 - 100;
    values[613] = -500;
    celerity::buffer<int, 1> in(values.data(), celerity::range<1>(1000));
    celerity::buffer<int, 0> sum, extreme;
    celerity::buffer<int64_t, 0> prior(int64_t{1000});
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor r{in, cgh, celerity::access::one_to_one{}, celerity::read_only};
        auto s = celerity::reduction(sum, cgh, sycl::plus<int>(), celerity::property::reduction::initialize_to_identity{});
        auto e = celerity::reduction(extreme, cgh, 0, max_abs{}, celerity::property::reduction::initialize_to_identity{});
        auto p = celerity::reduction(prior, cgh, sycl::plus<int64_t>()); // includes the buffer's value
        cgh.parallel_for(celerity::range<1>(1000), s, e, p, [=](celerity::item<1> it, auto& rs, auto& re, auto& rp) {
            rs += r[it];
            re.combine(r[it]);
            rp.combine(1);
        });
    });
    EXPECT(*q.fence(sum).get() == std::accumulate(values.begin(), values.end(), 0));
    EXPECT(*q.fence(extreme).get() == -500);
    EXPECT(*q.fence(prior).get() == 2000);
}

void host_tasks_and_objects(celerity::queue& q) {
    celerity::experimental::host_object<std::vector<int>> log;
    celerity::buffer<int, 0> scalar;
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor w{scalar, cgh, celerity::write_only_host_task, celerity::no_init};
        celerity::experimental::side_effect l{log, cgh};
        cgh.host_task(celerity::on_master_node, [=] {
            *w = 42;
            l->push_back(1);
        });
    });
    q.submit([&](celerity::handler& cgh) {
        celerity::experimental::side_effect l{log, cgh};
        cgh.host_task(celerity::once, [=] { l.get().push_back(2); });
    });
    // Distributed host task: the partitions cover the range exactly once (per node: its share).
    std::atomic<size_t> covered{0};
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor r{scalar, cgh, celerity::read_only_host_task};
        cgh.host_task(celerity::range<2>(10, 10), [=, &covered](celerity::partition<2> part) {
            if(*r == 42 && part.get_global_size() == celerity::range<2>(10, 10)) covered += part.get_subrange().range.size();
        });
    });
    // Collective host task with even_split: each node writes its own rows.
    celerity::buffer<int, 2> rows(celerity::range<2>(12, 3));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor w{rows, cgh, celerity::experimental::access::even_split<2>{}, celerity::write_only_host_task, celerity::no_init};
        cgh.host_task(celerity::experimental::collective, [=](celerity::experimental::collective_partition part) {
            const auto window = w.get_allocation_window(part);
            for(size_t i = 0; i < window.get_window_range()[0]; ++i) {
                for(size_t j = 0; j < 3; ++j) w[window.get_window_offset_in_buffer()[0] + i][j] = static_cast<int>(part.get_subrange().offset[0]) + 1;
            }
        });
    });
    q.wait();
    auto row_owner = q.fence(rows).get();
    bool rows_ok = true;
    for(size_t i = 0; i < 12; ++i) rows_ok = rows_ok && row_owner[{i, 0}] >= 1;
    EXPECT(rows_ok);
    EXPECT(*q.fence(scalar).get() == 42);
    auto logged = q.fence(log).get();
    EXPECT(logged.size() <= 2); // on node 0 both entries, elsewhere at most the `once` one
    EXPECT(covered.load() > 0);

    // By reference and void host objects.
    int counter = 0;
    celerity::experimental::host_object<int&> ref(counter);
    celerity::experimental::host_object<void> order;
    for(int i = 0; i < 5; ++i) {
        q.submit([&](celerity::handler& cgh) {
            celerity::experimental::side_effect c{ref, cgh};
            celerity::experimental::side_effect o{order, cgh};
            cgh.host_task(celerity::experimental::collective, [=](celerity::experimental::collective_partition) { ++*c; });
        });
    }
    q.fence(order).get();
    EXPECT(counter == 5);
    EXPECT(q.fence(ref).get() == 5);
}

// The deprecated distr_queue still works (C++ Celerity 0.7 programs use it).
void deprecated_distr_queue() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    celerity::distr_queue dq;
    celerity::buffer<int, 1> b(celerity::range<1>(32));
    dq.submit([&](celerity::handler& cgh) {
        celerity::accessor w{b, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<1>(32), [=](celerity::item<1> it) { w[it] = 3 * static_cast<int>(it[0]); });
    });
    dq.slow_full_sync();
    EXPECT(dq.fence(b).get()[31] == 93);
#pragma GCC diagnostic pop
}

// The `{}` formatting of the logging macros and the fmt::format / fmt::print that C++ Celerity
// programs (distr_io) call without including {fmt}: positional and automatic indices, escapes,
// ignored specs, bools as words, a placeholder without its argument left as written.
void formatting() {
    EXPECT(celerity::detail::format("{} of {} {{x}} {:>4}", 3, "seven", 2.5) == "3 of seven {x} 2.5");
    EXPECT(celerity::detail::format("{1}-{0}-{1}", 'a', std::string("b")) == "b-a-b");
    EXPECT(celerity::detail::format("equal: {}, missing: {} {5}", true, 1) == "equal: true, missing: 1 {5}");
#if defined(CELERITY_FMT_COMPAT)
    EXPECT(fmt::format("=> Files are {}equal", false ? "" : "NOT ") == "=> Files are NOT equal");
    fmt::print(stderr, "formatting: usage of {0}: {0} --flag\n", "prog");
#endif
}

void c_call_errors(celerity::queue& q) {
    celerity::buffer<int, 1> b(celerity::range<1>(10));
    bool thrown = false;
    try {
        q.submit([&](celerity::handler& cgh) {
            celerity::accessor acc{b, cgh, celerity::access::fixed<1>({5, 10}), celerity::read_only}; // outside the buffer
            cgh.parallel_for(celerity::range<1>(1), [=](celerity::item<1>) { (void)acc; });
        });
    } catch(const celerity::error& e) {
        thrown = e.status() == CELERITY_ERROR_INVALID_ARGUMENT && std::string(e.what()).find("FIXED") != std::string::npos;
        if(!thrown) std::fprintf(stderr, "unexpected error: %s\n", e.what());
    }
    EXPECT(thrown);
    thrown = false;
    try {
        q.submit([&](celerity::handler&) {});
    } catch(const celerity::error& e) { thrown = e.status() == CELERITY_ERROR_INVALID_ARGUMENT; }
    EXPECT(thrown);
    q.wait(celerity::experimental::barrier); // still usable
}

void kernel_exception(celerity::queue& q, bool in_host_task, bool in_fibers) {
    celerity::buffer<int, 1> b(celerity::range<1>(64));
    q.submit([&](celerity::handler& cgh) {
        celerity::debug::set_task_name(cgh, "throwing task");
        if(in_host_task) {
            celerity::accessor acc{b, cgh, celerity::access::all{}, celerity::write_only_host_task, celerity::no_init};
            cgh.host_task(celerity::on_master_node, [=] {
                (void)acc;
                throw std::runtime_error("host task gave up");
            });
        } else if(in_fibers) {
            // Thrown on a work item's fiber after a barrier.
            celerity::accessor acc{b, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
            celerity::local_accessor<int, 1> scratch{8, cgh};
            cgh.parallel_for(celerity::nd_range<1>(64, 8), [=](celerity::nd_item<1> it) {
                scratch[it.get_local_id(0)] = 1;
                celerity::group_barrier(it.get_group());
                if(it.get_local_id(0) == 1) throw std::out_of_range("element " + std::to_string(it.get_global_id(0)) + " is cursed");
                acc[it.get_global_id()] = scratch[0];
            });
        } else {
            celerity::accessor acc{b, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
            cgh.parallel_for(celerity::range<1>(64), [=](celerity::item<1> it) {
                if(it[0] % 4 == 1) throw std::out_of_range("element " + std::to_string(it[0]) + " is cursed"); // in every chunk
                acc[it] = 1;
            });
        }
    });
    bool reported = false;
    try {
        q.wait();
        // Only the rank that ran the failing task is sure to know about it by now.
        celerity_runtime_info info{};
        reported = celerity_runtime_get_info(&info) == CELERITY_OK && in_host_task && info.node != 0;
    } catch(const celerity::error& e) {
        const std::string what = e.what();
        reported = e.status() == CELERITY_ERROR_TASK_FAILED && what.find(in_host_task ? "host task gave up" : " is cursed") != std::string::npos
                   && what.find("throwing task") != std::string::npos;
        if(!reported) std::fprintf(stderr, "unexpected report: %s\n", what.c_str());
    }
    EXPECT(reported);
}

} // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "kernel";
    celerity::queue q;
    buffers_and_mappers(q);
    nd_range_kernels(q);
    reductions(q);
    host_tasks_and_objects(q);
    deprecated_distr_queue();
    formatting();
    c_call_errors(q);
    kernel_exception(q, mode == "host_task", mode == "nd_range");
    std::printf("test_cxx_frontend: %s\n", failures == 0 ? "all checks passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}

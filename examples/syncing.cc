// syncing: a distributed kernel writes i*i, a collective host task on every node copies the
// whole buffer into a host vector, and queue.wait() makes that vector safe to read. A host
// object counts the host tasks that ran, read back with a fence after a barrier.
#include <celerity.h>

#include "example_common.hpp"

int main(int argc, char** argv) {
    const size_t n = static_cast<size_t>(example::option(argc, argv, "-n", 4096));
    example::timer timer;
    celerity::queue q;
    celerity::buffer<uint64_t, 1> squares(n);
    celerity::experimental::host_object<int> runs(0);

    q.submit([&](celerity::handler& cgh) {
        celerity::accessor out{squares, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<1>(n), [=] CELERITY_DEVICE_LAMBDA(celerity::item<1> it) { out[it] = uint64_t{it[0]} * it[0]; });
    });

    std::vector<uint64_t> host_copy(n);
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{squares, cgh, celerity::access::all{}, celerity::read_only_host_task};
        celerity::experimental::side_effect counter{runs, cgh};
        // host_copy is captured by reference: it must outlive the task, which queue.wait() below ensures.
        cgh.host_task(celerity::experimental::collective, [=, &host_copy](celerity::experimental::collective_partition) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20)); // a late task would be noticed below
            for(size_t i = 0; i < n; ++i) host_copy[i] = in[i];
            ++*counter;
        });
    });
    q.wait();

    bool ok = true;
    for(size_t i = 0; i < n; ++i) ok = ok && host_copy[i] == uint64_t{i} * i;
    q.wait(celerity::experimental::barrier);
    const int ran = q.fence(runs).get();
    ok = ok && ran == 1; // one collective chunk per node
    return example::report("syncing", ok, timer.seconds(), "host tasks on this node: " + std::to_string(ran));
}

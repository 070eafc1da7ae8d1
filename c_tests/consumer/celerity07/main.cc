// A C++ Celerity program (no SYCL underneath): one kernel, one fence, fmt::print for the
// result, as programs written for C++ Celerity 0.7 do.
#include <celerity.h>

int main() {
    celerity::queue q;
    celerity::buffer<int, 1> buf(celerity::range<1>(64));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor w{buf, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(buf.get_range(), [=](celerity::item<1> it) { w[it] = static_cast<int>(it[0]) * 2; });
    });
    const auto values = q.fence(buf).get();
    int wrong = 0;
    for(size_t i = 0; i < 64; ++i) wrong += values[i] != static_cast<int>(i) * 2 ? 1 : 0;
    fmt::print(stderr, "celerity07 consumer: {} of {} wrong\n", wrong, 64);
    return wrong == 0 ? 0 : 1;
}

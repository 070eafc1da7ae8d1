// hello_world: every character of a shifted message is shifted back by a distributed kernel,
// then the result is fenced and compared with the plain text.
#include <celerity.h>

#include "example_common.hpp"

int main() {
    const std::string plain = "Hello World!";
    std::string shifted = plain;
    for(auto& c : shifted) c = static_cast<char>(c + 1);

    example::timer timer;
    celerity::queue q;
    celerity::buffer<char, 1> text(shifted.data(), celerity::range<1>(shifted.size()));
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor chars{text, cgh, celerity::access::one_to_one{}, celerity::read_write};
        cgh.parallel_for(text.get_range(), [=] CELERITY_DEVICE_LAMBDA(celerity::item<1> it) { chars[it] -= 1; });
    });
    const auto snapshot = q.fence(text).get();
    const std::string result(snapshot.get_data(), snapshot.size());
    std::printf("%s\n", result.c_str());
    return example::report("hello_world", result == plain, timer.seconds());
}

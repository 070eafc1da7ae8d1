// Shared by the C++ examples: a wall-clock timer, integer options and the result line every
// example prints ("<name>: check passed|FAILED ..., <time>").
#ifndef CELERITY_EXAMPLE_COMMON_HPP
#define CELERITY_EXAMPLE_COMMON_HPP

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace example {

class timer {
  public:
    timer() : m_start(std::chrono::steady_clock::now()) {}
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count(); }

  private:
    std::chrono::steady_clock::time_point m_start;
};

/// The value after `flag` in argv (e.g. `-N 512`), or `fallback`.
inline long option(int argc, char** argv, const char* flag, long fallback) {
    for(int i = 1; i + 1 < argc; ++i) {
        if(std::strcmp(argv[i], flag) == 0) return std::strtol(argv[i + 1], nullptr, 10);
    }
    return fallback;
}

/// Prints the result line and returns the exit status (non-zero on a failed check).
inline int report(const char* name, bool passed, double seconds, const std::string& detail = "") {
    std::printf("%s: check %s%s%s, time %.3f ms\n", name, passed ? "passed" : "FAILED", detail.empty() ? "" : ": ", detail.c_str(), seconds * 1e3);
    std::fflush(stdout);
    return passed ? EXIT_SUCCESS : EXIT_FAILURE;
}

} // namespace example

#endif

// CELERITY_C_API_ONLY: a C++ translation unit that defines it before including <celerity.h>
// gets the C API alone (no celerity.hpp, no celerity:: or sycl:: names), and the C API works.
#define CELERITY_C_API_ONLY
#include <celerity.h>

#include <cstdio>

#ifdef CELERITY_HPP
#error "CELERITY_C_API_ONLY must keep celerity.hpp out"
#endif

namespace sycl {
struct vec {}; // would clash with the frontend's sycl::vec template
} // namespace sycl

int main() {
    const bool ok = celerity_abi_compatible() && celerity_succeeded(CELERITY_OK);
    std::printf("test_c_api_only: %s\n", ok ? "all checks passed" : "FAILED");
    return ok ? 0 : 1;
}

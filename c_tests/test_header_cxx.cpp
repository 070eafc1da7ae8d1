// The header compiles as C++17 (extern "C" linkage, no C-only constructs), twice-included is
// harmless, and it links with a C translation unit that includes it too.
#include "celerity.h"
#include "celerity.h"

#include <cstdio>
#include <cstring>

extern "C" int second_translation_unit_abi_version(void);

int main() {
    static_assert(CELERITY_OK == 0, "CELERITY_OK is 0");
    static_assert(sizeof(celerity_status) == 4, "celerity_status is 32 bits");
    celerity_config* cfg = nullptr;
    if (celerity_config_create(&cfg) != CELERITY_OK) return 1;
    celerity_config_destroy(cfg);
    if (second_translation_unit_abi_version() != static_cast<int>(CELERITY_ABI_VERSION)) return 2;
    if (std::strcmp(celerity_version_string(), CELERITY_VERSION_STRING) != 0) return 3;
    if (!celerity_abi_compatible()) return 4;
    std::puts("test_header_cxx: all checks passed");
    return 0;
}

// The smallest C++ user program: the header and the library agree, a runtime starts and stops.
#include <celerity.h>

#include <cstdio>
#include <cstring>

int main() {
    if (!celerity_abi_compatible()) {
        std::fprintf(stderr, "ABI mismatch: header %u, library %u\n", CELERITY_ABI_VERSION, celerity_abi_version());
        return 1;
    }
    if (std::strcmp(celerity_version_string(), CELERITY_VERSION_STRING) != 0) {
        std::fprintf(stderr, "version mismatch: header %s, library %s\n", CELERITY_VERSION_STRING,
                     celerity_version_string());
        return 1;
    }
    celerity_config* cfg = nullptr;
    if (celerity_config_create(&cfg) != CELERITY_OK || celerity_config_set(cfg, "devices", "host:2") != CELERITY_OK ||
        celerity_config_set(cfg, "log_level", "warn") != CELERITY_OK) {
        std::fprintf(stderr, "config failed: %s\n", celerity_last_error_message());
        return 1;
    }
    const celerity_status init = celerity_runtime_init(nullptr, nullptr, cfg);
    celerity_config_destroy(cfg);
    celerity_runtime_info info{};
    if (init != CELERITY_OK || celerity_runtime_get_info(&info) != CELERITY_OK || info.num_devices != 2 ||
        celerity_runtime_shutdown() != CELERITY_OK) {
        std::fprintf(stderr, "runtime failed: %s\n", celerity_last_error_message());
        return 1;
    }
    std::printf("consumer (C++): celerity %s, %u device(s)\n", celerity_version_string(), info.num_devices);
    return 0;
}

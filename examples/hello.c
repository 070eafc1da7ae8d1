/* The smallest celerity program: checks that the header and the library agree, builds a
 * configuration and shows how errors are reported. Later examples run real kernels. */
#include <stdio.h>
#include <string.h>

#include <celerity.h>

int main(void) {
    printf("celerity %s (header %s, ABI %u)\n", celerity_version_string(), CELERITY_VERSION_STRING,
           celerity_abi_version());
    if (!celerity_abi_compatible()) {
        fprintf(stderr, "ABI mismatch between header and library\n");
        return 1;
    }
    celerity_config* cfg = NULL;
    if (celerity_config_create(&cfg) != CELERITY_OK) return 1;
    celerity_status s = celerity_config_set(cfg, "devices", "host:4");
    printf("config_set(devices, host:4) -> %s\n", celerity_status_string(s));
    s = celerity_config_set(cfg, "devices", "gpu:1");
    printf("config_set(devices, gpu:1)  -> %s\n  message: %s\n", celerity_status_string(s),
           celerity_last_error_message());
    celerity_config_destroy(cfg);
    return s == CELERITY_ERROR_INVALID_ARGUMENT ? 0 : 1;
}

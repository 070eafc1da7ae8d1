/* The smallest user program: checks that header and library agree and that a call works. */
#include <stdio.h>
#include <string.h>

#include <celerity.h>

int main(void) {
    if (!celerity_abi_compatible()) {
        fprintf(stderr, "ABI mismatch: header %u, library %u\n", CELERITY_ABI_VERSION, celerity_abi_version());
        return 1;
    }
    if (strcmp(celerity_version_string(), CELERITY_VERSION_STRING) != 0) {
        fprintf(stderr, "version mismatch: header %s, library %s\n", CELERITY_VERSION_STRING,
                celerity_version_string());
        return 1;
    }
    celerity_config* cfg = NULL;
    if (celerity_config_create(&cfg) != CELERITY_OK || celerity_config_set(cfg, "devices", "host:2") != CELERITY_OK) {
        fprintf(stderr, "config failed: %s\n", celerity_last_error_message());
        return 1;
    }
    celerity_config_destroy(cfg);
    printf("consumer: linked against celerity %s (ABI %u)\n", celerity_version_string(), celerity_abi_version());
    return 0;
}

/* ABI conventions through the real library: version, ABI version, status strings, the
 * thread-local last error message, and misuse of handles (NULL, released, forged). */
#include <pthread.h>
#include <stdint.h>

#include "test_check.h"

static void* other_thread(void* arg) {
    const char** seen = (const char**)arg;
    /* A fresh thread has no error, whatever failed on the main thread. */
    seen[0] = strcmp(celerity_last_error_message(), "") == 0 ? "empty" : "not empty";
    celerity_config_create(NULL);
    seen[1] = strstr(celerity_last_error_message(), "`out`") != NULL ? "own error" : "wrong error";
    return NULL;
}

int main(void) {
    /* Version and ABI. */
    CHECK(strcmp(celerity_version_string(), CELERITY_VERSION_STRING) == 0);
    CHECK(celerity_abi_version() == CELERITY_ABI_VERSION);
    CHECK(celerity_abi_compatible());

    /* Status strings: every status has its name, unknown values a fixed string, never NULL. */
    static const char* const names[] = {
        "CELERITY_OK", "CELERITY_ERROR_INVALID_ARGUMENT", "CELERITY_ERROR_INVALID_STATE",
        "CELERITY_ERROR_UNSUPPORTED", "CELERITY_ERROR_OUT_OF_MEMORY", "CELERITY_ERROR_DEVICE",
        "CELERITY_ERROR_COMMUNICATION", "CELERITY_ERROR_ACCESS_PATTERN",
        "CELERITY_ERROR_TASK_FAILED", "CELERITY_ERROR_INTERNAL"};
    for (celerity_status s = CELERITY_OK; s <= CELERITY_ERROR_INTERNAL; ++s) {
        CHECK(strcmp(celerity_status_string(s), names[s]) == 0);
    }
    CHECK(strcmp(celerity_status_string(10), "CELERITY_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(celerity_status_string(UINT32_MAX), "CELERITY_UNKNOWN_STATUS") == 0);
    CHECK(celerity_succeeded(CELERITY_OK) && !celerity_succeeded(CELERITY_ERROR_INTERNAL));

    /* Last error: "" before any failure, set by a failure, cleared by the next success. */
    CHECK(celerity_last_error_message() != NULL);
    CHECK(strcmp(celerity_last_error_message(), "") == 0);
    CHECK_STATUS(celerity_config_create(NULL), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("celerity_config_create");
    CHECK_MESSAGE_CONTAINS("`out`");

    celerity_config* cfg = NULL;
    CHECK_OK(celerity_config_create(&cfg));
    CHECK(cfg != NULL);
    CHECK(strcmp(celerity_last_error_message(), "") == 0);

    /* Messages are per thread. */
    CHECK_STATUS(celerity_config_set(cfg, "no_such_key", "1"), CELERITY_ERROR_INVALID_ARGUMENT);
    const char* seen[2] = {NULL, NULL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, other_thread, (void*)seen) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(seen[0] != NULL && strcmp(seen[0], "empty") == 0);
    CHECK(seen[1] != NULL && strcmp(seen[1], "own error") == 0);
    CHECK_MESSAGE_CONTAINS("no_such_key");

    /* Config keys and values are validated and the message names the valid choices. */
    CHECK_OK(celerity_config_set(cfg, "devices", "host:4"));
    CHECK_STATUS(celerity_config_set(cfg, "horizon_stpe", "2"), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("did you mean \"horizon_step\"");
    CHECK_STATUS(celerity_config_set(cfg, "lookahead", "sometimes"), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("none, auto, infinite");
    CHECK_STATUS(celerity_config_set(cfg, NULL, "x"), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`key`");
    CHECK_STATUS(celerity_config_set(cfg, "lookahead", NULL), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`value`");

    /* NULL handle. */
    CHECK_STATUS(celerity_config_set(NULL, "lookahead", "none"), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`cfg`");
    CHECK_MESSAGE_CONTAINS("NULL");

    /* Forged handles: garbage bits, a pointer to real memory. */
    CHECK_STATUS(celerity_config_set((celerity_config*)(uintptr_t)0x1234, "lookahead", "none"),
                 CELERITY_ERROR_INVALID_STATE);
    CHECK_MESSAGE_CONTAINS("not a celerity_config handle");
    int not_a_handle = 0;
    CHECK_STATUS(celerity_config_set((celerity_config*)&not_a_handle, "lookahead", "none"),
                 CELERITY_ERROR_INVALID_STATE);

    /* Released handle: detected, also after its slot was reused by a new config. */
    celerity_config_destroy(cfg);
    CHECK_STATUS(celerity_config_set(cfg, "lookahead", "none"), CELERITY_ERROR_INVALID_STATE);
    CHECK_MESSAGE_CONTAINS("already released");
    celerity_config* reused = NULL;
    CHECK_OK(celerity_config_create(&reused));
    CHECK(reused != cfg);
    CHECK_STATUS(celerity_config_set(cfg, "lookahead", "none"), CELERITY_ERROR_INVALID_STATE);
    CHECK_OK(celerity_config_set(reused, "lookahead", "none"));

    /* Double destroy is reported, not fatal; NULL is ignored. */
    celerity_config_destroy(cfg);
    CHECK_MESSAGE_CONTAINS("already released");
    celerity_config_destroy(NULL);
    celerity_config_destroy(reused);

    /* The process is still fine. */
    celerity_config* last = NULL;
    CHECK_OK(celerity_config_create(&last));
    celerity_config_destroy(last);
    return celerity_test_finish("test_abi");
}

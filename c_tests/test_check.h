/* Minimal assertion helpers shared by the C tests: every failure prints file, line, the
 * expression, and celerity's last error message, then the test exits non-zero. */
#ifndef CELERITY_TEST_CHECK_H
#define CELERITY_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "celerity.h"

static int celerity_test_failures = 0;

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: \"%s\"\n", __FILE__, __LINE__, \
                    #cond, celerity_last_error_message());                                       \
            ++celerity_test_failures;                                                            \
        }                                                                                        \
    } while (0)

/* Expects `call` to return `expected` status. */
#define CHECK_STATUS(call, expected)                                                             \
    do {                                                                                         \
        celerity_status check_status_ = (call);                                                  \
        if (check_status_ != (expected)) {                                                       \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s; last error: \"%s\"\n", __FILE__,  \
                    __LINE__, #call, celerity_status_string(check_status_),                      \
                    celerity_status_string(expected), celerity_last_error_message());            \
            ++celerity_test_failures;                                                            \
        }                                                                                        \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, CELERITY_OK)

/* Expects the last error message to contain `needle`. */
#define CHECK_MESSAGE_CONTAINS(needle)                                                           \
    do {                                                                                         \
        const char* check_message_ = celerity_last_error_message();                              \
        if (strstr(check_message_, (needle)) == NULL) {                                          \
            fprintf(stderr, "%s:%d: last error \"%s\" does not contain \"%s\"\n", __FILE__,      \
                    __LINE__, check_message_, (needle));                                         \
            ++celerity_test_failures;                                                            \
        }                                                                                        \
    } while (0)

static inline int celerity_test_finish(const char* name) {
    if (celerity_test_failures != 0) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, celerity_test_failures);
        return EXIT_FAILURE;
    }
    printf("%s: all checks passed\n", name);
    return EXIT_SUCCESS;
}

#endif

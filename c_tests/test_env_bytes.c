/* The environment is read byte-wise (issue 18): a variable that is not valid UTF-8 is ignored
 * unless its name starts with CELERITY_, in which case init is INVALID_ARGUMENT naming it; the
 * failed init leaves the process able to initialise once the variable is fixed. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "test_runtime.h"

int main(int argc, char** argv) {
    CHECK(setenv("CELERITY_LOG_LEVEL", "w\xff\xfe", 1) == 0);
    CHECK_STATUS(celerity_runtime_init(&argc, &argv, NULL), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("CELERITY_LOG_LEVEL");
    CHECK(unsetenv("CELERITY_LOG_LEVEL") == 0);

    /* A foreign variable with bytes that are not UTF-8, in its value and in its name. */
    CHECK(setenv("FOREIGN_NOT_UTF8", "\xc3\x28\xff", 1) == 0);
    CHECK(setenv("FOREIGN_\xe9\xff", "latin-1 name", 1) == 0);
    test_init(&argc, &argv);
    CHECK_OK(celerity_runtime_shutdown());
    return celerity_test_finish("test_env_bytes");
}

/* celerity_kernel_fail: a kernel that records a message fails its task with
 * CELERITY_ERROR_TASK_FAILED, and the report at the next wait names the message (also when the
 * kernel returns 0 afterwards); a NULL context is INVALID_ARGUMENT. */
#include "test_runtime.h"

/* Fails the chunk containing element 5 with a message naming the element; returns 0 anyway. */
static int fails_with_message(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) {
        TEST_ELEM(int, ctx, 0, i, j, k) = (int)i;
        if (i == 5 && celerity_kernel_fail(ctx, "pixel 5 is out of gamut") != CELERITY_OK) return 1;
    }
    return 0;
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);

    CHECK_STATUS(celerity_kernel_fail(NULL, "x"), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS_I("ctx");

    celerity_buffer* b = test_buffer(1, 16, 1, 1, sizeof(int), NULL, "pixels");
    celerity_cg* cg = test_cg("tone mapping");
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {16, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, fails_with_message, NULL, NULL));

    CHECK_STATUS(celerity_wait(), CELERITY_ERROR_TASK_FAILED);
    CHECK_MESSAGE_CONTAINS_I("pixel 5 is out of gamut");
    CHECK_MESSAGE_CONTAINS_I("tone mapping");

    CHECK_OK(celerity_buffer_release(b));
    CHECK_OK(celerity_runtime_shutdown());
    return celerity_test_finish("test_kernel_fail");
}

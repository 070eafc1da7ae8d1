/* A task that fails (a kernel or host task returning non-zero) is reported as
 * CELERITY_ERROR_TASK_FAILED, with the task's name in the message, by the next synchronising
 * call; afterwards new submissions are refused with INVALID_STATE and shutdown is clean.
 * The runtime stays failed, so each detection point is its own run:
 *   test_task_failure [wait|barrier|fence|host_task|shutdown]   (default: wait) */
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int drops, runs;

static void count_drop(void* user_data) {
    (void)user_data;
    atomic_fetch_add(&drops, 1);
}

/* Fails in the chunk that contains element 7. */
static int exploding(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    atomic_fetch_add(&runs, 1);
    int fail = 0;
    TEST_FOR_CHUNK(ctx, i, j, k) {
        TEST_ELEM(double, ctx, 0, i, j, k) = 1.0;
        if (i == 7) fail = 1;
    }
    return fail ? 42 : 0;
}

static int failing_host_task(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    atomic_fetch_add(&runs, 1);
    return -1;
}

static int good_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 0, i, j, k) = 2.0;
    return 0;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "wait";
    if (strcmp(mode, "wait") != 0 && strcmp(mode, "barrier") != 0 && strcmp(mode, "fence") != 0 &&
        strcmp(mode, "host_task") != 0 && strcmp(mode, "shutdown") != 0) {
        fprintf(stderr, "usage: %s [wait|barrier|fence|host_task|shutdown]\n", argv[0]);
        return 2;
    }
    printf("mode: %s\n", mode);
    test_init(&argc, &argv);
    enum { N = 64 };
    size_t range[3] = {N, 1, 1};
    celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(double), NULL, "exploded");
    const char* task_name = strcmp(mode, "host_task") == 0 ? "failing_host_task" : "exploding_kernel";
    celerity_cg* cg = test_cg(task_name);
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, strcmp(mode, "host_task") == 0 ? celerity_all() : celerity_one_to_one());
    if (strcmp(mode, "host_task") == 0) {
        CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, failing_host_task, NULL,
                                           count_drop));
    } else {
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, exploding, NULL, count_drop));
    }

    celerity_status s;
    double dest[N];
    if (strcmp(mode, "fence") == 0) {
        celerity_future* f = NULL;
        CHECK_OK(celerity_fence_buffer(b, NULL, dest, sizeof dest, &f));
        s = celerity_future_wait(f);
        CHECK_STATUS(s, CELERITY_ERROR_TASK_FAILED);
        CHECK_MESSAGE_CONTAINS(task_name);
        celerity_future_release(f);
    } else if (strcmp(mode, "barrier") == 0) {
        s = celerity_barrier();
        CHECK_STATUS(s, CELERITY_ERROR_TASK_FAILED);
        CHECK_MESSAGE_CONTAINS(task_name);
    } else if (strcmp(mode, "shutdown") == 0) {
        /* Nothing synchronises before shutdown: shutdown reports the failure. */
        s = celerity_runtime_shutdown();
        CHECK_STATUS(s, CELERITY_ERROR_TASK_FAILED);
        CHECK_MESSAGE_CONTAINS(task_name);
        CHECK(atomic_load(&drops) == 1);
        CHECK(atomic_load(&runs) >= 1);
        CHECK_STATUS(celerity_wait(), CELERITY_ERROR_INVALID_STATE);
        return celerity_test_finish("test_task_failure");
    } else {
        s = celerity_wait();
        CHECK_STATUS(s, CELERITY_ERROR_TASK_FAILED);
        CHECK_MESSAGE_CONTAINS(task_name);
    }
    printf("reported: %s\n", celerity_last_error_message());
    CHECK(atomic_load(&runs) >= 1);

    /* New submissions are refused. */
    cg = NULL;
    s = celerity_cg_create(&cg);
    CHECK(s == CELERITY_OK || s == CELERITY_ERROR_INVALID_STATE);
    if (s == CELERITY_OK) {
        s = celerity_cg_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, &(celerity_range_mapper){0});
        if (s == CELERITY_OK) {
            CHECK_STATUS(celerity_submit_parallel_for(cg, 1, range, NULL, good_kernel, NULL, NULL),
                         CELERITY_ERROR_INVALID_STATE);
        } else {
            CHECK_STATUS(s, CELERITY_ERROR_INVALID_STATE);
            celerity_cg_destroy(cg);
        }
    }
    /* A fence is refused too, or at least never completes successfully. */
    celerity_future* f = NULL;
    s = celerity_fence_buffer(b, NULL, dest, sizeof dest, &f);
    if (s == CELERITY_OK) {
        CHECK(celerity_future_wait(f) != CELERITY_OK);
        celerity_future_release(f);
    } else {
        CHECK_STATUS(s, CELERITY_ERROR_INVALID_STATE);
    }
    cg = NULL;
    if (celerity_cg_create(&cg) == CELERITY_OK) {
        CHECK_STATUS(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ONCE, 0, NULL, NULL, good_kernel, NULL, NULL),
                     CELERITY_ERROR_INVALID_STATE);
    }

    /* Shutdown is clean: the failure was already reported. */
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&drops) == 1);
    return celerity_test_finish("test_task_failure");
}

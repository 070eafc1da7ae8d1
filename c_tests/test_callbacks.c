/* Callbacks may call the API without deadlock (issue 18): a kernel, a host task, a drop callback
 * and a host-object destroy callback each call celerity_runtime_get_info and get either normal
 * service (OK) or INVALID_STATE (off the application thread); a future is waited on from a helper
 * thread while the application thread blocks in celerity_wait. A deadlock fails the test through
 * ctest's timeout. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int bad_answers, drops, destroys, kernel_calls;
static atomic_int main_waiting, helper_done;
static celerity_future* shared_future;
static celerity_status helper_status = CELERITY_ERROR_INTERNAL;

/* Any call from a callback: OK or INVALID_STATE, never anything else (and never a hang). */
static void call_api_from_callback(void) {
    celerity_runtime_info info;
    celerity_status s = celerity_runtime_get_info(&info);
    if (s != CELERITY_OK && s != CELERITY_ERROR_INVALID_STATE) atomic_fetch_add(&bad_answers, 1);
    s = celerity_flush();
    if (s != CELERITY_OK && s != CELERITY_ERROR_INVALID_STATE) atomic_fetch_add(&bad_answers, 1);
}

static int calling_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    call_api_from_callback();
    atomic_fetch_add(&kernel_calls, 1);
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int, ctx, 0, i, j, k) = (int)i;
    return 0;
}

static void calling_drop(void* user_data) {
    (void)user_data;
    call_api_from_callback();
    atomic_fetch_add(&drops, 1);
}

static void calling_destroy(void* instance) {
    (void)instance;
    call_api_from_callback();
    atomic_fetch_add(&destroys, 1);
}

/* Blocks until the helper thread's future wait has returned. */
static int blocking_host_task(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    call_api_from_callback();
    while (!atomic_load(&helper_done)) sched_yield();
    return 0;
}

static void* helper(void* arg) {
    (void)arg;
    while (!atomic_load(&main_waiting)) sched_yield();
    helper_status = celerity_future_wait(shared_future);
    atomic_store(&helper_done, 1);
    return NULL;
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);
    enum { N = 32 };
    size_t r[3] = {N, 1, 1};
    celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(int), NULL, "data");
    static int instance;
    celerity_host_object* h = NULL;
    CHECK_OK(celerity_host_object_create(&instance, calling_destroy, &h));

    /* Many tasks with calling drop callbacks, so that some are pruned (and dropped) while the
     * application thread is inside the runtime. */
    for (int t = 0; t < 40; ++t) {
        celerity_cg* cg = test_cg("calling_kernel");
        test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, calling_kernel, NULL, calling_drop));
        if (t % 8 == 0) CHECK_OK(celerity_wait());
    }
    int data[N];
    CHECK_OK(celerity_fence_buffer(b, NULL, data, sizeof data, &shared_future));

    celerity_cg* cg = test_cg("blocking_host_task");
    CHECK_OK(celerity_cg_side_effect(cg, h));
    CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, blocking_host_task,
                                       NULL, calling_drop));
    CHECK_OK(celerity_host_object_release(h));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, helper, NULL) == 0);
    atomic_store(&main_waiting, 1);
    CHECK_OK(celerity_wait());
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_STATUS(helper_status, CELERITY_OK);
    for (int i = 0; i < N; ++i) CHECK(data[i] == i);
    celerity_future_release(shared_future);

    CHECK_OK(celerity_buffer_release(b));
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&kernel_calls) >= 40);
    CHECK(atomic_load(&drops) == 41);
    CHECK(atomic_load(&destroys) == 1);
    CHECK(atomic_load(&bad_answers) == 0);
    return celerity_test_finish("test_callbacks");
}

/* A program that returns from main without celerity_runtime_shutdown: the runtime shuts down at
 * exit, so submitted work completes and every drop and destroy callback runs exactly once. Our
 * own atexit handler, registered before celerity_runtime_init, runs after the runtime's and
 * checks that. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "celerity.h"

static atomic_int drops = 0, destroys = 0, chunks = 0;

static void count_drop(void* user_data) {
    (void)user_data;
    atomic_fetch_add(&drops, 1);
}

static void count_destroy(void* instance) {
    (void)instance;
    atomic_fetch_add(&destroys, 1);
}

static int kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    atomic_fetch_add(&chunks, 1);
    return 0;
}

static void check_at_exit(void) {
    int ok = atomic_load(&drops) == 3 && atomic_load(&destroys) == 1 && atomic_load(&chunks) >= 3;
    printf("at exit: %d drops, %d destroys, %d chunks -> %s\n", atomic_load(&drops), atomic_load(&destroys),
           atomic_load(&chunks), ok ? "all checks passed" : "FAILED");
    fflush(stdout);
    if (!ok) _exit(1);
}

int main(void) {
    atexit(check_at_exit);
    if (celerity_runtime_init(NULL, NULL, NULL) != CELERITY_OK) return 1;
    int instance = 0;
    celerity_host_object* obj = NULL;
    if (celerity_host_object_create(&instance, count_destroy, &obj) != CELERITY_OK) return 1;
    size_t range[3] = {8, 1, 1};
    for (int i = 0; i < 3; ++i) {
        celerity_cg* cg = NULL;
        if (celerity_cg_create(&cg) != CELERITY_OK) return 1;
        if (i == 0 && celerity_cg_side_effect(cg, obj) != CELERITY_OK) return 1;
        if (i == 0) {
            if (celerity_submit_host_task(cg, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, kernel, NULL, count_drop) != CELERITY_OK) return 1;
        } else if (celerity_submit_parallel_for(cg, 1, range, NULL, kernel, NULL, count_drop) != CELERITY_OK) {
            return 1;
        }
    }
    return 0; /* no celerity_runtime_shutdown */
}

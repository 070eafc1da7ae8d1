/* Faults across ranks (issue 18, API.md "Faults across ranks"), run under mpirun -n 3 by
 * run_rank_faults.sh, which bounds the run with `timeout`:
 *   task_failure: a kernel fails on rank 1 only. Every rank's fence of the whole buffer (which
 *                 needs rank 1's data) fails naming rank 1 and the task; no fence returns OK;
 *                 every rank's shutdown returns; the job ends.
 *   exit:         rank 1 calls exit(3) without celerity_runtime_shutdown while the others keep
 *                 submitting work that needs its data; every other rank's fence fails with
 *                 COMMUNICATION naming rank 1, or the job is aborted with a message naming it.
 *   die:          as exit, but rank 1 is killed (SIGKILL): nothing of it can speak; the job must
 *                 still end (the launcher ends it), never hang.
 *   spmd_skip, spmd_range, spmd_extra_buffer: with check_spmd on, rank 1 skips a submission,
 *                 rank 2 submits another range, or rank 1 accesses an extra buffer; every rank's
 *                 next wait fails naming an SPMD divergence and the first divergent task.
 * Each rank prints "rank N: fault checks passed" when its checks hold. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdatomic.h>

#include "test_runtime.h"

enum { N = 96 };

static int fill(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int, ctx, 0, i, j, k) = (int)i;
    return ctx->node == 1 ? 7 : 0;
}

static int increment(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int, ctx, 1, i, j, k) = TEST_ELEM(int, ctx, 0, 0, 0, 0) + 1;
    return 0;
}

static int fill_ok(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int, ctx, 0, i, j, k) = (int)i;
    return 0;
}

static void submit(celerity_buffer* b, const char* name, celerity_kernel_fn kernel) {
    celerity_cg* cg = test_cg(name);
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t r[3] = {N, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, kernel, NULL, NULL));
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "task_failure";
    celerity_runtime_info info = test_init(&argc, &argv);
    CHECK(info.num_nodes == 3);
    celerity_buffer* a = test_buffer(1, N, 1, 1, sizeof(int), NULL, "a");
    int data[N];
    if (strcmp(mode, "task_failure") == 0) {
        submit(a, "fails_on_rank_1", fill);
        celerity_future* f = NULL;
        CHECK_OK(celerity_fence_buffer(a, NULL, data, sizeof data, &f));
        celerity_status s = celerity_future_wait(f);
        CHECK(s != CELERITY_OK);
        CHECK_MESSAGE_CONTAINS("rank 1");
        CHECK_MESSAGE_CONTAINS("fails_on_rank_1");
        printf("rank %u: fence: %s: %s\n", info.node, celerity_status_string(s), celerity_last_error_message());
        celerity_future_release(f);
        /* Afterwards the runtime is failed: nothing returns OK that depends on the failure. */
        CHECK(celerity_wait() != CELERITY_OK);
    } else if (strcmp(mode, "exit") == 0 || strcmp(mode, "die") == 0) {
        submit(a, "fill", fill_ok);
        CHECK_OK(test_read(a, NULL, data, sizeof data));
        /* Every rank has its copy of `a` before rank 1 leaves: a fence still pending when rank
         * 1's departure notice arrives fails, even when its data was already sent (see
         * docs/reliability.md), and this read is not what the test is about. */
        CHECK_OK(celerity_barrier());
        if (info.node == 1) {
            printf("rank 1: %s without celerity_runtime_shutdown\n", strcmp(mode, "die") == 0 ? "dying" : "exiting");
            fflush(stdout);
            if (strcmp(mode, "die") == 0) raise(SIGKILL);
            exit(3);
        }
        /* Work that needs rank 1's part of `b` every round; rank 1 is gone. */
        celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(int), NULL, "b");
        celerity_status s = CELERITY_OK;
        char message[1024] = "";
        for (int round = 0; round < 1000 && s == CELERITY_OK; ++round) {
            celerity_cg* cg = test_cg("needs_rank_1");
            test_access(cg, a, CELERITY_ACCESS_READ, celerity_all());
            test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
            size_t r[3] = {N, 1, 1};
            s = celerity_submit_parallel_for(cg, 1, r, NULL, increment, NULL, NULL);
            if (s == CELERITY_OK) {
                celerity_future* f = NULL;
                s = celerity_fence_buffer(b, NULL, data, sizeof data, &f);
                if (s == CELERITY_OK) s = celerity_future_wait(f);
                snprintf(message, sizeof message, "%s", celerity_last_error_message());
                if (f != NULL) celerity_future_release(f);
            }
        }
        CHECK(s == CELERITY_ERROR_COMMUNICATION);
        CHECK(strstr(message, "rank 1") != NULL);
        printf("rank %u: lost rank 1: %s: %s\n", info.node, celerity_status_string(s), message);
        fflush(stdout);
        CHECK_OK(celerity_buffer_release(b));
    } else if (strncmp(mode, "spmd_", 5) == 0) {
        celerity_buffer* extra = test_buffer(1, N, 1, 1, sizeof(int), NULL, "extra");
        submit(a, "same_everywhere", fill_ok);
        int skip = strcmp(mode, "spmd_skip") == 0 && info.node == 1;
        if (!skip) {
            celerity_cg* cg = test_cg("divergent");
            test_access(cg, a, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one());
            if (strcmp(mode, "spmd_extra_buffer") == 0 && info.node == 1)
                test_access(cg, extra, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
            size_t r[3] = {strcmp(mode, "spmd_range") == 0 && info.node == 2 ? N / 2 : N, 1, 1};
            CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, fill_ok, NULL, NULL));
        }
        submit(a, "after_divergence", fill_ok);
        celerity_status s = celerity_wait();
        CHECK(s != CELERITY_OK);
        CHECK_MESSAGE_CONTAINS("SPMD divergence");
        printf("rank %u: divergence reported: %s: %s\n", info.node, celerity_status_string(s),
               celerity_last_error_message());
        fflush(stdout);
        CHECK_OK(celerity_buffer_release(extra));
    } else {
        fprintf(stderr, "usage: %s [task_failure|exit|spmd_skip|spmd_range|spmd_extra_buffer]\n", argv[0]);
        return 2;
    }
    celerity_status s = celerity_runtime_shutdown();
    printf("rank %u: shutdown returned %s\n", info.node, celerity_status_string(s));
    if (celerity_test_failures == 0) printf("rank %u: fault checks passed\n", info.node);
    fflush(stdout);
    return celerity_test_failures == 0 ? 0 : 1;
}

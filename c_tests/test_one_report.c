/* One problem, one report (issue 15): each condition the runtime detects is logged once, at one
 * level, naming task, buffer and node, and after a failure the runtime stops without follow-on
 * errors. The complete log of each run is asserted.
 *   test_one_report CONDITION
 * CONDITION  uninit_log / uninit_error:   a kernel reads a buffer nothing wrote
 *            overlap_log / overlap_error: every chunk writes the whole buffer (needs 2+ chunks)
 *            task_failure:                a kernel returns non-zero
 *            oom:                         a kernel's buffer does not fit in device memory
 *            stall:                       a kernel runs until the stall report appears
 *            leaks:                       handles never released are named at shutdown and cleaned up */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <time.h>

#include "test_log.h"
#include "test_runtime.h"

enum { N = 64 };

static atomic_int chunks_run;

static int write_ones(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    atomic_fetch_add(&chunks_run, 1);
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(float, ctx, 0, i, j, k) = 1.0f;
    return 0;
}

static int write_everything(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    atomic_fetch_add(&chunks_run, 1);
    for (size_t i = 0; i < N; ++i) TEST_ELEM(float, ctx, 0, i, 0, 0) = 1.0f;
    return 0;
}

static int fail_with_7(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    atomic_fetch_add(&chunks_run, 1);
    return 7;
}

static int touch_nothing(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    atomic_fetch_add(&chunks_run, 1);
    return 0;
}

/* The captured log, for the kernel that runs until its stall is reported. */
static test_log* captured;

static int run_until_stall_reported(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    atomic_fetch_add(&chunks_run, 1);
    test_log_wait_for(captured, "stall on N");
    return 0;
}

static atomic_int destroyed;

static void count_destroy(void* instance) {
    (void)instance;
    atomic_fetch_add(&destroyed, 1);
}

static celerity_status submit(const char* name, celerity_buffer* buf, celerity_access_mode mode,
                              celerity_range_mapper mapper, celerity_kernel_fn fn) {
    celerity_cg* cg = test_cg(name);
    test_access(cg, buf, mode, mapper);
    size_t range[3] = {N, 1, 1};
    return celerity_submit_parallel_for(cg, 1, range, NULL, fn, NULL, NULL);
}

int main(int argc, char** argv) {
    const char* condition = argc > 1 ? argv[1] : "";
    printf("condition: %s\n", condition);
    test_log log;
    test_log_begin(&log);
    celerity_config* cfg = NULL;
    CHECK_OK(celerity_config_create(&cfg));
    CHECK_OK(celerity_config_set(cfg, "log_level", "info"));
    if (strstr(condition, "uninit") == condition) {
        CHECK_OK(celerity_config_set(cfg, "uninitialized_read", strstr(condition, "error") ? "error" : "log"));
    }
    if (strstr(condition, "overlap") == condition) {
        CHECK_OK(celerity_config_set(cfg, "overlapping_write", strstr(condition, "error") ? "error" : "log"));
    }
    if (strcmp(condition, "stall") == 0) CHECK_OK(celerity_config_set(cfg, "stall_timeout", "0.3"));
    CHECK_OK(celerity_runtime_init(&argc, &argv, cfg));
    celerity_config_destroy(cfg);
    celerity_runtime_info info;
    CHECK_OK(celerity_runtime_get_info(&info));

    const char* expected[8];
    char lines[8][TEST_LOG_LINE];
    size_t n = 0;
    snprintf(lines[n], sizeof lines[n], "[N%u] INFO celerity *", info.node);
    expected[n] = lines[n], ++n;
    celerity_status shutdown_status = CELERITY_OK;

    if (strcmp(condition, "uninit_log") == 0 || strcmp(condition, "uninit_error") == 0) {
        celerity_buffer* buf = test_buffer(1, N, 1, 1, sizeof(float), NULL, "never_written");
        celerity_status s = submit("reader", buf, CELERITY_ACCESS_READ, celerity_one_to_one(), touch_nothing);
        int error = strcmp(condition, "uninit_error") == 0;
        CHECK_STATUS(s, error ? CELERITY_ERROR_ACCESS_PATTERN : CELERITY_OK);
        CHECK_STATUS(celerity_wait(), CELERITY_OK);
        snprintf(lines[n], sizeof lines[n],
                 "[N%u] %s Device kernel T1 \"reader\" declares a reading access on uninitialized B0 \"never_written\" {[0,64)}.",
                 info.node, error ? "ERROR" : "WARN");
        /* Under error the submission is refused and reports itself; nothing is logged. */
        if (!error) expected[n] = lines[n], ++n;
        celerity_buffer_release(buf);
    } else if (strcmp(condition, "overlap_log") == 0 || strcmp(condition, "overlap_error") == 0) {
        celerity_buffer* buf = test_buffer(1, N, 1, 1, sizeof(float), NULL, "shared");
        celerity_subrange whole = test_subrange(0, 0, 0, N, 1, 1);
        celerity_status s = submit("writer", buf, CELERITY_ACCESS_DISCARD_WRITE, celerity_fixed(whole), write_everything);
        int error = strcmp(condition, "overlap_error") == 0;
        CHECK_OK(s);
        CHECK_STATUS(celerity_wait(), error ? CELERITY_ERROR_ACCESS_PATTERN : CELERITY_OK);
        snprintf(lines[n], sizeof lines[n],
                 "[N%u] %s Device kernel T1 \"writer\" has overlapping writes between chunks on N%u *in B0 \"shared\" "
                 "{[0,64)}; choose a non-overlapping range mapper for the write or constrain the split",
                 info.node, error ? "ERROR" : "WARN", info.node);
        expected[n] = lines[n], ++n;
        celerity_buffer_release(buf);
    } else if (strcmp(condition, "task_failure") == 0) {
        celerity_buffer* buf = test_buffer(1, N, 1, 1, sizeof(float), NULL, "output");
        CHECK_OK(submit("exploding", buf, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one(), fail_with_7));
        CHECK_STATUS(celerity_wait(), CELERITY_ERROR_TASK_FAILED);
        snprintf(lines[n], sizeof lines[n], "[N%u] ERROR task T1 \"exploding\" (device kernel I*): the kernel returned 7",
                 info.node);
        expected[n] = lines[n], ++n;
        celerity_buffer_release(buf);
    } else if (strcmp(condition, "oom") == 0) {
        size_t range[3] = {(size_t)1 << 46, 1, 1};
        celerity_buffer* buf = NULL;
        CHECK_OK(celerity_buffer_create(1, range, 1, 1, NULL, &buf));
        CHECK_OK(celerity_buffer_set_name(buf, "huge"));
        celerity_cg* cg = test_cg("huge_writer");
        test_access(cg, buf, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, touch_nothing, NULL, NULL));
        CHECK_STATUS(celerity_wait(), CELERITY_ERROR_OUT_OF_MEMORY);
        snprintf(lines[n], sizeof lines[n],
                 "[N%u] ERROR Device kernel T1 \"huge_writer\": cannot allocate buffer B0 \"huge\": allocating in M*: host "
                 "allocation of * bytes aligned to 1 failed",
                 info.node);
        expected[n] = lines[n], ++n;
        celerity_buffer_release(buf);
    } else if (strcmp(condition, "stall") == 0) {
        celerity_buffer* buf = test_buffer(1, N, 1, 1, sizeof(float), NULL, "slow_output");
        /* The kernel runs until the report is in the log, so exactly one report (once per
         * stall) is written however loaded the machine is, and no timing is assumed. */
        captured = &log;
        CHECK_OK(submit("slow", buf, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one(), run_until_stall_reported));
        CHECK_OK(celerity_wait());
        snprintf(lines[n], sizeof lines[n],
                 "[N%u] WARN stall on N%u: no instruction completed for *ms; * pending | I* device kernel of task T1 "
                 "\"slow\" on D0: running on D0 lane 0 | *epoch T2 (celerity_wait): waiting on I*",
                 info.node, info.node);
        expected[n] = lines[n], ++n;
        celerity_buffer_release(buf);
    } else if (strcmp(condition, "leaks") == 0) {
        static float init[N], dest[N];
        celerity_buffer* grid = test_buffer(1, N, 1, 1, sizeof(float), init, "grid");
        test_buffer(1, N, 1, 1, sizeof(float), init, NULL);
        celerity_host_object* obj = NULL;
        CHECK_OK(celerity_host_object_create(&destroyed, count_destroy, &obj));
        celerity_future* f = NULL;
        CHECK_OK(celerity_fence_buffer(grid, NULL, dest, sizeof dest, &f));
        CHECK_OK(celerity_future_wait(f));
        test_cg("forgotten");
        snprintf(lines[n], sizeof lines[n],
                 "[N%u] WARN celerity_runtime_shutdown: the program did not release 2 buffers (B0 \"grid\", B1), 1 host "
                 "object, 1 future and 1 command group never submitted (\"forgotten\"); releasing them now",
                 info.node);
        expected[n] = lines[n], ++n;
        CHECK_OK(celerity_runtime_shutdown());
        CHECK(atomic_load(&destroyed) == 1);
        CHECK_STATUS(celerity_future_wait(f), CELERITY_ERROR_INVALID_STATE);
    } else {
        fprintf(stderr, "unknown condition \"%s\"\n", condition);
        return 2;
    }
    CHECK_STATUS(celerity_runtime_shutdown(), shutdown_status);
    test_log_end(&log);
    test_log_expect(&log, expected, n);
    printf("%d chunk(s) ran on node %u\n", atomic_load(&chunks_run), info.node);
    (void)write_ones;
    return celerity_test_finish("test_one_report");
}

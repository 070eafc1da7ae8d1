/* Fences: buffer fences of sub-boxes (1-D, 2-D, 3-D, spanning several devices' chunks), whole
 * buffers (NULL region), 0-D buffers, a fence sees exactly the tasks submitted before it,
 * several outstanding fences waited in any order and from another thread, host-object fences,
 * future_is_ready / future_wait / future_release, and the argument checks (dest_bytes too
 * small, NULL dest or out, region outside the buffer). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "test_runtime.h"

static double f3(size_t i, size_t j, size_t k) { return (double)(i * 10000 + j * 100 + k); }

static int fill3(const celerity_kernel_context* ctx, void* user_data) {
    double add = *(const double*)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 0, i, j, k) = f3(i, j, k) + add;
    return 0;
}

static void submit_fill(celerity_buffer* b, uint32_t dims, const size_t range[3], const double* add) {
    celerity_cg* cg = test_cg("fill3");
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, dims, range, NULL, fill3, (void*)add, NULL));
}

static void check_region(const double* got, const celerity_subrange* sr, double add, const char* what) {
    size_t bad = 0, e = 0;
    for (size_t i = sr->offset[0]; i < sr->offset[0] + sr->range[0]; ++i)
        for (size_t j = sr->offset[1]; j < sr->offset[1] + sr->range[1]; ++j)
            for (size_t k = sr->offset[2]; k < sr->offset[2] + sr->range[2]; ++k, ++e) {
                if (got[e] != f3(i, j, k) + add && bad++ < 3) {
                    fprintf(stderr, "%s: (%zu,%zu,%zu) = %g, expected %g\n", what, i, j, k, got[e], f3(i, j, k) + add);
                }
            }
    CHECK(bad == 0);
}

static const double zero = 0, one = 1, two = 2;

static void test_regions(void) {
    static double got[40 * 30 * 5];
    /* 1-D */
    size_t r1[3] = {1000, 1, 1};
    celerity_buffer* b1 = test_buffer(1, 1000, 1, 1, sizeof(double), NULL, "b1");
    submit_fill(b1, 1, r1, &zero);
    celerity_subrange s1 = test_subrange(123, 0, 0, 700, 1, 1); /* spans several devices' chunks */
    CHECK_OK(test_read(b1, &s1, got, 700 * sizeof(double)));
    check_region(got, &s1, 0, "1-D subrange");
    celerity_subrange all1 = test_subrange(0, 0, 0, 1000, 1, 1);
    CHECK_OK(test_read(b1, NULL, got, 1000 * sizeof(double)));
    check_region(got, &all1, 0, "1-D whole");
    celerity_subrange one1 = test_subrange(999, 0, 0, 1, 1, 1);
    CHECK_OK(test_read(b1, &one1, got, sizeof(double)));
    check_region(got, &one1, 0, "1-D last element");

    /* 2-D */
    size_t r2[3] = {40, 30, 1};
    celerity_buffer* b2 = test_buffer(2, 40, 30, 1, sizeof(double), NULL, "b2");
    submit_fill(b2, 2, r2, &one);
    celerity_subrange s2 = test_subrange(7, 3, 0, 25, 20, 1);
    CHECK_OK(test_read(b2, &s2, got, 25 * 20 * sizeof(double)));
    check_region(got, &s2, 1, "2-D subrange");
    celerity_subrange col = test_subrange(0, 29, 0, 40, 1, 1);
    CHECK_OK(test_read(b2, &col, got, 40 * sizeof(double)));
    check_region(got, &col, 1, "2-D column");
    celerity_subrange all2 = test_subrange(0, 0, 0, 40, 30, 1);
    CHECK_OK(test_read(b2, NULL, got, 40 * 30 * sizeof(double)));
    check_region(got, &all2, 1, "2-D whole");

    /* 3-D, with a larger destination than needed */
    size_t r3[3] = {40, 30, 5};
    celerity_buffer* b3 = test_buffer(3, 40, 30, 5, sizeof(double), NULL, "b3");
    submit_fill(b3, 3, r3, &two);
    celerity_subrange s3 = test_subrange(10, 2, 1, 20, 9, 3);
    CHECK_OK(test_read(b3, &s3, got, sizeof got));
    check_region(got, &s3, 2, "3-D subrange");

    /* 0-D, with and without host_init, fenced with NULL and with the full region */
    double v = 3.5, w = 0;
    celerity_buffer* s = test_buffer(0, 1, 1, 1, sizeof(double), &v, "scalar");
    CHECK_OK(test_read(s, NULL, &w, sizeof w));
    CHECK(w == 3.5);
    celerity_subrange unit = test_subrange(0, 0, 0, 1, 1, 1);
    w = 0;
    CHECK_OK(test_read(s, &unit, &w, sizeof w));
    CHECK(w == 3.5);

    CHECK_OK(celerity_buffer_release(b1));
    CHECK_OK(celerity_buffer_release(b2));
    CHECK_OK(celerity_buffer_release(b3));
    CHECK_OK(celerity_buffer_release(s));
}

/* ---- ordering, several outstanding fences, futures ----------------------------------------- */

static int add_one(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 0, i, j, k) += 1;
    return 0;
}

typedef struct {
    celerity_future* f;
    celerity_status status;
} wait_arg;

static void* wait_thread(void* arg) {
    wait_arg* w = (wait_arg*)arg;
    w->status = celerity_future_wait(w->f);
    return NULL;
}

static void test_ordering(void) {
    enum { N = 256, STEPS = 6 };
    static double init[N], dest[STEPS][N];
    for (int i = 0; i < N; ++i) init[i] = i;
    celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(double), init, "counter");
    celerity_future* futures[STEPS];
    size_t range[3] = {N, 1, 1};
    for (int s = 0; s < STEPS; ++s) {
        celerity_cg* cg = test_cg("add_one");
        test_access(cg, b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one());
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, add_one, NULL, NULL));
        futures[s] = NULL;
        CHECK_OK(celerity_fence_buffer(b, NULL, dest[s], sizeof dest[s], &futures[s]));
        CHECK(futures[s] != NULL);
    }
    /* Waited in reverse order; one from another thread (future functions are thread-safe). */
    wait_arg w = {futures[2], CELERITY_ERROR_INTERNAL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
    for (int s = STEPS - 1; s >= 0; --s) {
        if (s == 2) continue;
        CHECK_OK(celerity_future_wait(futures[s]));
    }
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_OK(w.status);
    for (int s = 0; s < STEPS; ++s) {
        bool ready = false;
        CHECK_OK(celerity_future_is_ready(futures[s], &ready));
        CHECK(ready);
        CHECK_OK(celerity_future_wait(futures[s])); /* waiting again is fine */
        celerity_future_release(futures[s]);
        size_t bad = 0;
        for (int i = 0; i < N; ++i) bad += dest[s][i] != i + s + 1;
        CHECK(bad == 0);
    }

    /* Polling future_is_ready until it turns true (at most 20 s). */
    static double poll_dest[N];
    celerity_future* f = NULL;
    CHECK_OK(celerity_fence_buffer(b, NULL, poll_dest, sizeof poll_dest, &f));
    bool ready = false;
    for (int spin = 0; spin < 20000 && !ready; ++spin) {
        CHECK_OK(celerity_future_is_ready(f, &ready));
        if (!ready) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK(ready);
    for (int i = 0; i < N; ++i) CHECK(poll_dest[i] == i + STEPS);
    CHECK_OK(celerity_future_wait(f));
    celerity_future_release(f);

    /* Releasing a future without waiting for it is allowed (its destination stays valid). */
    static double unwaited[N];
    f = NULL;
    CHECK_OK(celerity_fence_buffer(b, NULL, unwaited, sizeof unwaited, &f));
    celerity_future_release(f);
    celerity_future_release(NULL);
    CHECK_OK(celerity_wait());
    CHECK_OK(celerity_buffer_release(b));
}

/* ---- host-object fences -------------------------------------------------------------------- */

static int bump(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    int* counter = (int*)ctx->host_objects[0];
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL); /* give the fence a chance to overtake, were it wrong */
    ++*counter;
    return 0;
}

static void test_host_object_fence(void) {
    static int counter = 0;
    celerity_host_object* h = NULL;
    CHECK_OK(celerity_host_object_create(&counter, NULL, &h));
    for (int round = 1; round <= 3; ++round) {
        for (int t = 0; t < 10; ++t) {
            celerity_cg* cg = test_cg("bump");
            CHECK_OK(celerity_cg_side_effect(cg, h));
            CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_COLLECTIVE, 0, NULL, NULL, bump, NULL, NULL));
        }
        celerity_future* f = NULL;
        CHECK_OK(celerity_fence_host_object(h, &f));
        CHECK_OK(celerity_future_wait(f));
        CHECK(counter == 10 * round);
        bool ready = false;
        CHECK_OK(celerity_future_is_ready(f, &ready));
        CHECK(ready);
        celerity_future_release(f);
    }
    CHECK_OK(celerity_host_object_release(h));
}

/* ---- argument checks ----------------------------------------------------------------------- */

static void test_bad_arguments(void) {
    size_t r2[3] = {10, 8, 1};
    celerity_buffer* b = test_buffer(2, 10, 8, 1, sizeof(double), NULL, "args");
    submit_fill(b, 2, r2, &zero);
    double dest[80];
    celerity_future* sentinel = (celerity_future*)(uintptr_t)0x5e57;
    celerity_future* f = sentinel;

    CHECK_STATUS(celerity_fence_buffer(b, NULL, dest, 79 * sizeof(double), &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("dest_bytes");
    CHECK(f == sentinel);
    celerity_subrange sr = test_subrange(2, 2, 0, 3, 3, 1);
    CHECK_STATUS(celerity_fence_buffer(b, &sr, dest, 9 * sizeof(double) - 1, &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("dest_bytes");
    CHECK_STATUS(celerity_fence_buffer(b, &sr, dest, 0, &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("dest_bytes");
    CHECK_STATUS(celerity_fence_buffer(b, NULL, NULL, sizeof dest, &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`dest`");
    CHECK_STATUS(celerity_fence_buffer(b, NULL, dest, sizeof dest, NULL), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`out`");
    CHECK_STATUS(celerity_fence_buffer(NULL, NULL, dest, sizeof dest, &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`buf`");
    celerity_subrange outside = test_subrange(8, 0, 0, 3, 8, 1);
    CHECK_STATUS(celerity_fence_buffer(b, &outside, dest, sizeof dest, &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("region");
    CHECK(f == sentinel);
    CHECK_STATUS(celerity_fence_host_object(NULL, &f), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`obj`");
    CHECK_STATUS(celerity_future_wait(NULL), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`f`");
    bool ready = true;
    CHECK_STATUS(celerity_future_is_ready(NULL, &ready), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`f`");

    /* Exactly large enough works, and the buffer is unchanged by the failed calls. */
    CHECK_OK(test_read(b, &sr, dest, 9 * sizeof(double)));
    check_region(dest, &sr, 0, "after bad fences");
    CHECK_OK(celerity_fence_buffer(b, NULL, dest, sizeof dest, &f));
    CHECK(f != sentinel && f != NULL);
    CHECK_STATUS(celerity_future_is_ready(f, NULL), CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS("`out`");
    CHECK_OK(celerity_future_wait(f));
    celerity_future_release(f);
    CHECK_STATUS(celerity_future_wait(f), CELERITY_ERROR_INVALID_STATE); /* released */
    celerity_subrange all = test_subrange(0, 0, 0, 10, 8, 1);
    check_region(dest, &all, 0, "whole after bad fences");
    CHECK_OK(celerity_buffer_release(b));
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);
    test_regions();
    test_ordering();
    test_host_object_fence();
    test_bad_arguments();
    CHECK_OK(celerity_runtime_shutdown());
    return celerity_test_finish("test_fences");
}

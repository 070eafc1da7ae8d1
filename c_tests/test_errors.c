/* Every line of API.md's "Bad input" list: each call returns the named status with a message
 * naming the argument, leaves its out-pointer untouched, changes nothing, and the runtime stays
 * usable (a command group that saw failing calls is still submitted and computes the right
 * result, and a real kernel runs at the end). Also: calls before init, after shutdown, a second
 * init and calls from another thread are INVALID_STATE; released and forged handles are
 * INVALID_STATE; devices=cuda without a CUDA driver is UNSUPPORTED at init; a custom range
 * mapper returning a subrange outside the buffer is clamped. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "test_runtime.h"

static atomic_int kernel_errors;

/* Expects `call` to fail with `status` and the message to contain `needle` (case-insensitive). */
#define EXPECT(call, status, needle)                                                             \
    do {                                                                                         \
        CHECK_STATUS(call, status);                                                              \
        CHECK_MESSAGE_CONTAINS_I(needle);                                                        \
    } while (0)
#define EXPECT_ARG(call, needle) EXPECT(call, CELERITY_ERROR_INVALID_ARGUMENT, needle)
#define EXPECT_STATE(call, needle) EXPECT(call, CELERITY_ERROR_INVALID_STATE, needle)

/* Release functions given NULL: API.md's "any NULL handle" says INVALID_ARGUMENT, the header's
 * conventions say release functions accept NULL; either answer is accepted. */
#define EXPECT_NULL_RELEASE(call)                                                                \
    do {                                                                                         \
        celerity_status s_ = (call);                                                             \
        CHECK(s_ == CELERITY_OK || s_ == CELERITY_ERROR_INVALID_ARGUMENT);                       \
    } while (0)

static int noop_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    return 0;
}

static void dummy_mapper(void* user_data, const celerity_chunk* chunk, uint32_t buffer_dims,
                         const size_t buffer_range[3], celerity_subrange* out) {
    (void)user_data, (void)buffer_dims, (void)buffer_range;
    for (int d = 0; d < 3; ++d) out->offset[d] = chunk->offset[d], out->range[d] = chunk->range[d];
}

/* ---- before init, devices=cuda, init --------------------------------------------------------- */

static void test_before_init(void) {
    size_t r[3] = {4, 1, 1};
    celerity_buffer* sentinel = (celerity_buffer*)(uintptr_t)0xb0f;
    celerity_buffer* b = sentinel;
    EXPECT_STATE(celerity_buffer_create(1, r, 8, 8, NULL, &b), "celerity_buffer_create");
    CHECK(b == sentinel);
    celerity_cg* cg = NULL;
    EXPECT_STATE(celerity_cg_create(&cg), "celerity_cg_create");
    CHECK(cg == NULL);
    celerity_host_object* h = NULL;
    int instance = 0;
    EXPECT_STATE(celerity_host_object_create(&instance, NULL, &h), "celerity_host_object_create");
    celerity_collective_group* g = NULL;
    EXPECT_STATE(celerity_collective_group_create(&g), "celerity_collective_group_create");
    EXPECT_STATE(celerity_wait(), "celerity_wait");
    EXPECT_STATE(celerity_barrier(), "celerity_barrier");
    EXPECT_STATE(celerity_flush(), "celerity_flush");
    EXPECT_STATE(celerity_set_lookahead(CELERITY_LOOKAHEAD_AUTO), "celerity_set_lookahead");
    celerity_runtime_info info;
    EXPECT_STATE(celerity_runtime_get_info(&info), "celerity_runtime_get_info");
    EXPECT_STATE(celerity_runtime_shutdown(), "celerity_runtime_shutdown");
}

static void test_cuda_unsupported(int* argc, char*** argv) {
    void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (libcuda != NULL) {
        dlclose(libcuda);
        printf("SKIP devices=cuda -> UNSUPPORTED: a CUDA driver (libcuda.so.1) is present\n");
        return;
    }
    celerity_config* cfg = NULL;
    CHECK_OK(celerity_config_create(&cfg));
    CHECK_OK(celerity_config_set(cfg, "devices", "cuda"));
    EXPECT(celerity_runtime_init(argc, argv, cfg), CELERITY_ERROR_UNSUPPORTED, "cuda");
    celerity_config_destroy(cfg);
    /* Still not initialised. */
    EXPECT_STATE(celerity_wait(), "celerity_wait");
}

/* ---- calls from another thread ----------------------------------------------------------------- */

typedef struct {
    celerity_status wait, create, cg, info;
    int untouched;
    int message_ok;
} thread_result;

static void* other_thread(void* arg) {
    thread_result* r = (thread_result*)arg;
    r->wait = celerity_wait();
    /* The thread is named by its role, never by a Rust thread id. */
    r->message_ok = test_contains_i(celerity_last_error_message(), "the application thread that initialised the runtime") &&
                    !test_contains_i(celerity_last_error_message(), "ThreadId");
    size_t range[3] = {4, 1, 1};
    celerity_buffer* sentinel = (celerity_buffer*)(uintptr_t)0xb0f;
    celerity_buffer* b = sentinel;
    r->create = celerity_buffer_create(1, range, 8, 8, NULL, &b);
    r->untouched = b == sentinel;
    r->message_ok &= test_contains_i(celerity_last_error_message(), "celerity_buffer_create");
    celerity_cg* cg = NULL;
    r->cg = celerity_cg_create(&cg);
    celerity_runtime_info info;
    r->info = celerity_runtime_get_info(&info);
    return NULL;
}

static void test_other_thread(void) {
    thread_result r;
    memset(&r, 0, sizeof r);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &r) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_STATUS(r.wait, CELERITY_ERROR_INVALID_STATE);
    CHECK_STATUS(r.create, CELERITY_ERROR_INVALID_STATE);
    CHECK_STATUS(r.cg, CELERITY_ERROR_INVALID_STATE);
    CHECK_STATUS(r.info, CELERITY_ERROR_INVALID_STATE);
    CHECK(r.untouched);
    CHECK(r.message_ok);
    /* The failures were the other thread's: this thread's last error is unaffected. */
    CHECK_OK(celerity_wait());
    CHECK(strcmp(celerity_last_error_message(), "") == 0);
}

/* ---- NULL handles and out-pointers, dims, elem_size, elem_align, enum values -------------------- */

static void test_buffer_args(void) {
    size_t r[3] = {10, 1, 1};
    celerity_buffer* sentinel = (celerity_buffer*)(uintptr_t)0xb0f;
    celerity_buffer* b = sentinel;
    EXPECT_ARG(celerity_buffer_create(1, r, 8, 8, NULL, NULL), "`out`");
    EXPECT_ARG(celerity_buffer_create(1, NULL, 8, 8, NULL, &b), "`range`");
    EXPECT_ARG(celerity_buffer_create(4, r, 8, 8, NULL, &b), "`dims`");
    EXPECT_ARG(celerity_buffer_create(17, r, 8, 8, NULL, &b), "`dims`");
    EXPECT_ARG(celerity_buffer_create(1, r, 0, 8, NULL, &b), "`elem_size`");
    EXPECT_ARG(celerity_buffer_create(1, r, 8, 3, NULL, &b), "`elem_align`");
    EXPECT_ARG(celerity_buffer_create(1, r, 8, 0, NULL, &b), "`elem_align`");
    EXPECT_ARG(celerity_buffer_create(1, r, 24, 12, NULL, &b), "`elem_align`");
    CHECK(b == sentinel);

    b = test_buffer(1, 10, 1, 1, 8, NULL, "args");
    EXPECT_ARG(celerity_buffer_set_name(NULL, "x"), "`buf`");
    EXPECT_ARG(celerity_buffer_set_name(b, NULL), "`name`");
    size_t got[3] = {7, 7, 7};
    EXPECT_ARG(celerity_buffer_get_range(NULL, got), "`buf`");
    EXPECT_ARG(celerity_buffer_get_range(b, NULL), "`out_range`");
    CHECK(got[0] == 7 && got[1] == 7 && got[2] == 7);
    EXPECT_NULL_RELEASE(celerity_buffer_release(NULL));

    /* Released and forged buffer handles. */
    CHECK_OK(celerity_buffer_release(b));
    EXPECT_STATE(celerity_buffer_set_name(b, "x"), "released");
    EXPECT_STATE(celerity_buffer_get_range(b, got), "released");
    EXPECT_STATE(celerity_buffer_release(b), "released");
    double dest[10];
    celerity_future* f = NULL;
    EXPECT_STATE(celerity_fence_buffer(b, NULL, dest, sizeof dest, &f), "released");
    CHECK(f == NULL);
    celerity_cg* cg = test_cg("released_buffer");
    celerity_range_mapper m = celerity_one_to_one();
    EXPECT_STATE(celerity_cg_access(cg, b, CELERITY_ACCESS_READ, &m), "released");
    celerity_cg_destroy(cg);
    int not_a_handle = 0;
    CHECK_STATUS(celerity_buffer_get_range((celerity_buffer*)&not_a_handle, got), CELERITY_ERROR_INVALID_STATE);

    /* Host objects and groups. */
    celerity_host_object* h = NULL;
    EXPECT_ARG(celerity_host_object_create(&not_a_handle, NULL, NULL), "`out`");
    EXPECT_NULL_RELEASE(celerity_host_object_release(NULL));
    EXPECT_ARG(celerity_collective_group_create(NULL), "`out`");
    EXPECT_NULL_RELEASE(celerity_collective_group_release(NULL));
    CHECK_OK(celerity_host_object_create(&not_a_handle, NULL, &h));
    CHECK_OK(celerity_host_object_release(h));
    EXPECT_STATE(celerity_host_object_release(h), "released");
    EXPECT_STATE(celerity_fence_host_object(h, &f), "released");
    cg = test_cg("released_object");
    EXPECT_STATE(celerity_cg_side_effect(cg, h), "released");
    celerity_cg_destroy(cg);
    celerity_collective_group* g = NULL;
    CHECK_OK(celerity_collective_group_create(&g));
    CHECK_OK(celerity_collective_group_release(g));
    EXPECT_STATE(celerity_collective_group_release(g), "released");
    cg = test_cg("released_group");
    EXPECT_STATE(celerity_submit_host_task(cg, CELERITY_HOST_TASK_COLLECTIVE, 0, NULL, g, noop_kernel, NULL, NULL),
                 "released");
}

/* The kernel of the command group that survives the failing calls: dst[i] = src[i] + 1, and it
 * must see exactly the accessors and reductions that were accepted. */
typedef struct {
    uint32_t accessors, reductions;
} probe_expect;

static int probe_kernel(const celerity_kernel_context* ctx, void* user_data) {
    const probe_expect* e = (const probe_expect*)user_data;
    if (ctx->num_accessors != e->accessors || ctx->num_reductions != e->reductions || ctx->num_host_objects != 0) {
        atomic_fetch_add(&kernel_errors, 1);
        return 0;
    }
    TEST_FOR_CHUNK(ctx, i, j, k) {
        double v = TEST_ELEM(double, ctx, 0, i, j, k) + 1;
        TEST_ELEM(double, ctx, 1, i, j, k) = v;
        if (e->reductions == 1) *(double*)ctx->reductions[0] += v;
    }
    return 0;
}

/* A command group whose access fails either at celerity_cg_access or, where only the kernel
 * range reveals the problem, at submission. Either way INVALID_ARGUMENT naming `needle`. */
static void expect_bad_access(celerity_buffer* buf, celerity_access_mode mode, celerity_range_mapper m,
                              uint32_t kernel_dims, const size_t range[3], const char* needle) {
    celerity_cg* cg = test_cg("bad_access");
    celerity_status s = celerity_cg_access(cg, buf, mode, &m);
    if (s == CELERITY_OK) {
        s = celerity_submit_parallel_for(cg, kernel_dims, range, NULL, noop_kernel, NULL, NULL);
        CHECK_STATUS(s, CELERITY_ERROR_INVALID_ARGUMENT);
        CHECK_MESSAGE_CONTAINS_I(needle);
    } else {
        CHECK_STATUS(s, CELERITY_ERROR_INVALID_ARGUMENT);
        CHECK_MESSAGE_CONTAINS_I(needle);
        celerity_cg_destroy(cg);
    }
}

static void test_cg_args(void) {
    enum { N = 64 };
    double init[N];
    for (int i = 0; i < N; ++i) init[i] = i;
    celerity_buffer* src = test_buffer(1, N, 1, 1, sizeof(double), init, "src");
    celerity_buffer* dst = test_buffer(1, N, 1, 1, sizeof(double), NULL, "dst");
    celerity_buffer* grid = test_buffer(2, 8, 8, 1, sizeof(double), NULL, "grid");
    double zero = 0;
    celerity_buffer* r0 = test_buffer(0, 1, 1, 1, sizeof(double), &zero, "r0");
    celerity_buffer* r1 = test_buffer(1, 1, 1, 1, sizeof(double), &zero, "r1");
    size_t range[3] = {N, 1, 1};
    celerity_range_mapper one = celerity_one_to_one();

    celerity_cg* sentinel = (celerity_cg*)(uintptr_t)0xc9;
    celerity_cg* cgp = sentinel;
    EXPECT_ARG(celerity_cg_create(NULL), "`out`");

    /* The probe group: one accepted READ access, then only failing calls, then an accepted write. */
    celerity_cg* cg = test_cg("probe");
    CHECK_OK(celerity_cg_access(cg, src, CELERITY_ACCESS_READ, &one));
    EXPECT_ARG(celerity_cg_access(NULL, src, CELERITY_ACCESS_READ, &one), "`cg`");
    EXPECT_ARG(celerity_cg_access(cg, NULL, CELERITY_ACCESS_READ, &one), "`buf`");
    EXPECT_ARG(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, NULL), "`mapper`");
    EXPECT_ARG(celerity_cg_access(cg, dst, 5, &one), "`mode`");
    EXPECT_ARG(celerity_cg_access(cg, dst, 0xffffffffu, &one), "`mode`");
    celerity_range_mapper bad_kind = celerity_one_to_one();
    bad_kind.kind = 7;
    EXPECT_ARG(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, &bad_kind), "mapper");
    celerity_range_mapper custom_null = celerity_custom(NULL, NULL);
    EXPECT_ARG(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, &custom_null), "custom");
    /* FIXED outside the buffer (detectable here: the buffer is known). */
    celerity_range_mapper fixed_out = celerity_fixed(test_subrange(0, 0, 0, 2 * N, 1, 1));
    EXPECT_ARG(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, &fixed_out), "fixed");
    celerity_range_mapper fixed_off = celerity_fixed(test_subrange(N, 0, 0, 1, 1, 1));
    EXPECT_ARG(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, &fixed_off), "fixed");
    celerity_range_mapper fixed_dim2 = celerity_fixed(test_subrange(0, 0, 0, 1, 9, 1));
    EXPECT_ARG(celerity_cg_access(cg, grid, CELERITY_ACCESS_READ, &fixed_dim2), "fixed");
    /* SLICE dim >= buffer dims. */
    celerity_range_mapper slice1 = celerity_slice(1);
    EXPECT_ARG(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, &slice1), "slice");
    celerity_range_mapper slice3 = celerity_slice(3);
    EXPECT_ARG(celerity_cg_access(cg, grid, CELERITY_ACCESS_READ, &slice3), "slice");
    /* Side effects, names, hints. */
    celerity_host_object* obj = NULL;
    int obj_instance = 0;
    CHECK_OK(celerity_host_object_create(&obj_instance, NULL, &obj));
    EXPECT_ARG(celerity_cg_side_effect(NULL, obj), "`cg`");
    EXPECT_ARG(celerity_cg_side_effect(cg, NULL), "`obj`");
    EXPECT_ARG(celerity_cg_set_name(NULL, "x"), "`cg`");
    EXPECT_ARG(celerity_cg_set_name(cg, NULL), "`name`");
    EXPECT_ARG(celerity_cg_hint_split_2d(NULL), "`cg`");
    EXPECT_ARG(celerity_cg_hint_oversubscribe(NULL, 2), "`cg`");
    EXPECT_ARG(celerity_cg_hint_launch_only(NULL), "`cg`");
    EXPECT_ARG(celerity_cg_hint_oversubscribe(cg, 0), "`factor`");
    size_t gran[3] = {1, 1, 1};
    EXPECT_ARG(celerity_cg_constrain_split(NULL, gran), "`cg`");
    EXPECT_ARG(celerity_cg_constrain_split(cg, NULL), "`granularity`");
    /* Reductions: a buffer of more than one element, bad ops. */
    celerity_reduction_op sum;
    memset(&sum, 0, sizeof sum);
    sum.kind = CELERITY_REDUCE_SUM;
    sum.type = CELERITY_TYPE_F64;
    EXPECT_ARG(celerity_cg_reduction(NULL, r0, &sum, true), "`cg`");
    EXPECT_ARG(celerity_cg_reduction(cg, NULL, &sum, true), "`buf`");
    EXPECT_ARG(celerity_cg_reduction(cg, r0, NULL, true), "`op`");
    EXPECT_ARG(celerity_cg_reduction(cg, dst, &sum, true), "buf");
    EXPECT_ARG(celerity_cg_reduction(cg, grid, &sum, true), "buf");
    celerity_reduction_op bad = sum;
    bad.kind = 5;
    EXPECT_ARG(celerity_cg_reduction(cg, r0, &bad, true), "kind");
    bad = sum;
    bad.type = 6;
    EXPECT_ARG(celerity_cg_reduction(cg, r0, &bad, true), "type");
    bad = sum;
    bad.kind = CELERITY_REDUCE_CUSTOM;
    bad.elem_size = sizeof(double);
    bad.identity = &zero;
    bad.combine = NULL;
    EXPECT_ARG(celerity_cg_reduction(cg, r0, &bad, true), "combine");
    /* Now the accepted calls: write dst, reduce into r0. */
    CHECK_OK(celerity_cg_access(cg, dst, CELERITY_ACCESS_DISCARD_WRITE, &one));
    CHECK_OK(celerity_cg_reduction(cg, r0, &sum, true));
    /* Two reductions on one buffer; reduction then access of the same buffer. */
    EXPECT_ARG(celerity_cg_reduction(cg, r0, &sum, true), "buf");
    EXPECT_ARG(celerity_cg_reduction(cg, r0, &sum, false), "buf");
    EXPECT_ARG(celerity_cg_access(cg, r0, CELERITY_ACCESS_READ, &one), "buf");
    celerity_range_mapper all = celerity_all();
    EXPECT_ARG(celerity_cg_access(cg, r0, CELERITY_ACCESS_READ, &all), "buf");
    /* Submission argument errors consume the group: use copies. */
    static probe_expect expect = {2, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, probe_kernel, &expect, NULL));
    double got[N], total = 0;
    CHECK_OK(test_read(dst, NULL, got, sizeof got));
    for (int i = 0; i < N; ++i) CHECK(got[i] == i + 1.0);
    CHECK_OK(test_read(r0, NULL, &total, sizeof total));
    CHECK(total == N * (N + 1) / 2.0);
    /* The group was consumed by the submission. */
    EXPECT_STATE(celerity_cg_access(cg, dst, CELERITY_ACCESS_READ, &one), "cg");
    EXPECT_STATE(celerity_submit_parallel_for(cg, 1, range, NULL, probe_kernel, &expect, NULL), "cg");

    /* Reduction first, then an access of the same buffer, in a fresh group (r1: a one-element 1-D buffer). */
    cg = test_cg("reduction_then_access");
    CHECK_OK(celerity_cg_reduction(cg, r1, &sum, true));
    EXPECT_ARG(celerity_cg_access(cg, r1, CELERITY_ACCESS_READ, &all), "buf");
    celerity_cg_destroy(cg);
    EXPECT_STATE(celerity_cg_set_name(cg, "x"), "cg"); /* destroyed */
    /* Access first, then a reduction of the same (one-element) buffer. */
    celerity_buffer* r_src = test_buffer(0, 1, 1, 1, sizeof(double), &zero, "r_src");
    cg = test_cg("access_then_reduction");
    CHECK_OK(celerity_cg_access(cg, r_src, CELERITY_ACCESS_READ, &all));
    EXPECT_ARG(celerity_cg_reduction(cg, r_src, &sum, true), "buf");
    celerity_cg_destroy(cg);
    celerity_cg_destroy(NULL);

    /* ONE_TO_ONE with kernel dims != buffer dims (found at submission). */
    size_t range2[3] = {8, 8, 1};
    expect_bad_access(grid, CELERITY_ACCESS_DISCARD_WRITE, one, 1, range, "one_to_one");
    expect_bad_access(dst, CELERITY_ACCESS_READ, one, 2, range2, "one_to_one");
    expect_bad_access(dst, CELERITY_ACCESS_READ, slice1, 1, range, "slice");
    expect_bad_access(dst, CELERITY_ACCESS_READ, fixed_out, 1, range, "fixed");

    /* Granularity that does not divide the range (found at submission), zero granularity. */
    size_t gran7[3] = {7, 1, 1};
    size_t gran0[3] = {0, 1, 1};
    const size_t* grans[2] = {gran7, gran0};
    for (int g = 0; g < 2; ++g) {
        cg = test_cg("granularity");
        celerity_status s = celerity_cg_constrain_split(cg, grans[g]);
        int consumed = s == CELERITY_OK;
        if (consumed) s = celerity_submit_parallel_for(cg, 1, range, NULL, noop_kernel, NULL, NULL);
        CHECK_STATUS(s, CELERITY_ERROR_INVALID_ARGUMENT);
        CHECK_MESSAGE_CONTAINS_I("granularity");
        if (!consumed) celerity_cg_destroy(cg);
    }

    /* Submission arguments (each consumes its group). */
    EXPECT_ARG(celerity_submit_parallel_for(NULL, 1, range, NULL, noop_kernel, NULL, NULL), "`cg`");
    cgp = test_cg("dims4");
    EXPECT_ARG(celerity_submit_parallel_for(cgp, 4, range, NULL, noop_kernel, NULL, NULL), "`dims`");
    EXPECT_STATE(celerity_cg_set_name(cgp, "x"), "cg"); /* consumed, also on error */
    cgp = test_cg("null_range");
    EXPECT_ARG(celerity_submit_parallel_for(cgp, 1, NULL, NULL, noop_kernel, NULL, NULL), "`range`");
    cgp = test_cg("null_kernel");
    EXPECT_ARG(celerity_submit_parallel_for(cgp, 1, range, NULL, NULL, NULL, NULL), "`kernel`");
    EXPECT_ARG(celerity_submit_host_task(NULL, CELERITY_HOST_TASK_ONCE, 0, NULL, NULL, noop_kernel, NULL, NULL), "`cg`");
    cgp = test_cg("bad_kind");
    EXPECT_ARG(celerity_submit_host_task(cgp, 4, 0, NULL, NULL, noop_kernel, NULL, NULL), "`kind`");
    cgp = test_cg("distributed_null_range");
    EXPECT_ARG(celerity_submit_host_task(cgp, CELERITY_HOST_TASK_DISTRIBUTED, 1, NULL, NULL, noop_kernel, NULL, NULL),
               "`range`");
    cgp = test_cg("distributed_dims4");
    EXPECT_ARG(celerity_submit_host_task(cgp, CELERITY_HOST_TASK_DISTRIBUTED, 4, range, NULL, noop_kernel, NULL, NULL),
               "`dims`");
    cgp = test_cg("null_fn");
    EXPECT_ARG(celerity_submit_host_task(cgp, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, NULL, NULL, NULL), "`fn`");
    (void)sentinel;

    /* Fences and futures. */
    double dest[N];
    celerity_future* fsent = (celerity_future*)(uintptr_t)0xf0;
    celerity_future* f = fsent;
    EXPECT_ARG(celerity_fence_buffer(NULL, NULL, dest, sizeof dest, &f), "`buf`");
    EXPECT_ARG(celerity_fence_buffer(dst, NULL, NULL, sizeof dest, &f), "`dest`");
    EXPECT_ARG(celerity_fence_buffer(dst, NULL, dest, sizeof dest, NULL), "`out`");
    EXPECT_ARG(celerity_fence_buffer(dst, NULL, dest, sizeof dest - 1, &f), "dest_bytes");
    celerity_subrange outside = test_subrange(N - 2, 0, 0, 4, 1, 1);
    EXPECT_ARG(celerity_fence_buffer(dst, &outside, dest, sizeof dest, &f), "region");
    EXPECT_ARG(celerity_fence_host_object(NULL, &f), "`obj`");
    celerity_host_object* h = NULL;
    int inst = 0;
    CHECK_OK(celerity_host_object_create(&inst, NULL, &h));
    EXPECT_ARG(celerity_fence_host_object(h, NULL), "`out`");
    CHECK(f == fsent);
    EXPECT_ARG(celerity_future_wait(NULL), "`f`");
    bool ready = false;
    EXPECT_ARG(celerity_future_is_ready(NULL, &ready), "`f`");
    CHECK_OK(celerity_fence_host_object(h, &f));
    EXPECT_ARG(celerity_future_is_ready(f, NULL), "`out`");
    CHECK_OK(celerity_future_wait(f));
    celerity_future_release(f);
    EXPECT_STATE(celerity_future_wait(f), "released");
    EXPECT_STATE(celerity_future_is_ready(f, &ready), "released");
    celerity_future_release(NULL);
    CHECK_OK(celerity_host_object_release(h));

    /* Runtime-level arguments. */
    EXPECT_ARG(celerity_runtime_get_info(NULL), "`out`");
    EXPECT_ARG(celerity_set_lookahead(3), "`mode`");
    EXPECT_ARG(celerity_set_lookahead(0xffffffffu), "`mode`");

    CHECK_OK(celerity_buffer_release(src));
    CHECK_OK(celerity_buffer_release(dst));
    CHECK_OK(celerity_buffer_release(grid));
    CHECK_OK(celerity_buffer_release(r0));
    CHECK_OK(celerity_buffer_release(r1));
    CHECK_OK(celerity_buffer_release(r_src));
    CHECK_OK(celerity_host_object_release(obj));
    (void)dummy_mapper;
}

/* ---- a custom mapper returning a subrange outside the buffer: clamped --------------------------- */

enum { NC = 100 };

static void overshoot_mapper(void* user_data, const celerity_chunk* chunk, uint32_t buffer_dims,
                             const size_t buffer_range[3], celerity_subrange* out) {
    (void)user_data, (void)buffer_dims, (void)buffer_range;
    for (int d = 0; d < 3; ++d) out->offset[d] = chunk->offset[d], out->range[d] = chunk->range[d];
    out->range[0] += 1000; /* far past the end */
}

static void beyond_mapper(void* user_data, const celerity_chunk* chunk, uint32_t buffer_dims,
                          const size_t buffer_range[3], celerity_subrange* out) {
    (void)user_data, (void)chunk, (void)buffer_dims, (void)buffer_range;
    *out = test_subrange(5000, 0, 0, 10, 1, 1); /* entirely outside: clamped to empty */
}

/* out[i] = in[i] + in[min(i + 3, NC - 1)], through the overshooting mapper; accessor 2 is empty. */
static int clamped_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    const celerity_accessor* in = &ctx->accessors[0];
    size_t lo = ctx->chunk.offset[0], hi = lo + ctx->chunk.range[0];
    if (in->accessed.offset[0] != lo || in->accessed.offset[0] + in->accessed.range[0] != NC) {
        atomic_fetch_add(&kernel_errors, 1);
        return 0;
    }
    if (ctx->accessors[2].base != NULL) atomic_fetch_add(&kernel_errors, 1);
    for (size_t i = lo; i < hi; ++i) {
        size_t n = i + 3 < NC ? i + 3 : NC - 1;
        TEST_ELEM(double, ctx, 1, i, 0, 0) = TEST_ELEM(double, ctx, 0, i, 0, 0) + TEST_ELEM(double, ctx, 0, n, 0, 0);
    }
    return 0;
}

static void test_clamped_custom(void) {
    double init[NC];
    for (int i = 0; i < NC; ++i) init[i] = i * i;
    celerity_buffer* in = test_buffer(1, NC, 1, 1, sizeof(double), init, "clamp_in");
    celerity_buffer* out = test_buffer(1, NC, 1, 1, sizeof(double), NULL, "clamp_out");
    celerity_buffer* other = test_buffer(1, NC, 1, 1, sizeof(double), init, "clamp_other");
    /* Capture stderr (the runtime's log) while the two tasks are scheduled and run. */
    fflush(stderr);
    FILE* log = tmpfile();
    int saved_stderr = dup(fileno(stderr));
    if (log != NULL) dup2(fileno(log), fileno(stderr));
    for (int rep = 0; rep < 2; ++rep) { /* the warning comes once per task */
        celerity_cg* cg = test_cg("clamped_custom");
        test_access(cg, in, CELERITY_ACCESS_READ, celerity_custom(overshoot_mapper, NULL));
        test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        test_access(cg, other, CELERITY_ACCESS_READ, celerity_custom(beyond_mapper, NULL));
        size_t range[3] = {NC, 1, 1};
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, clamped_kernel, NULL, NULL));
    }
    double got[NC];
    CHECK_OK(test_read(out, NULL, got, sizeof got));
    CHECK_OK(celerity_wait());
    fflush(stderr);
    dup2(saved_stderr, fileno(stderr));
    close(saved_stderr);
    for (int i = 0; i < NC; ++i) CHECK(got[i] == init[i] + init[i + 3 < NC ? i + 3 : NC - 1]);
    /* A warning per task (not per chunk or per call): lines mentioning the clamping. */
    if (log != NULL) {
        char line[1024];
        int warnings = 0;
        rewind(log);
        while (fgets(line, sizeof line, log) != NULL) {
            fputs(line, stderr);
            warnings += test_contains_i(line, "clamp");
        }
        fclose(log);
        if (warnings < 1 || warnings > 2 * 2)
            fprintf(stderr, "expected one clamping warning per task (per accessor at most), saw %d\n", warnings);
        CHECK(warnings >= 1 && warnings <= 2 * 2);
    }
    CHECK_OK(celerity_buffer_release(in));
    CHECK_OK(celerity_buffer_release(out));
    CHECK_OK(celerity_buffer_release(other));
}

/* ---- the runtime is still usable: a real kernel ------------------------------------------------ */

static int square_plus(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int64_t, ctx, 1, i, j, k) =
        TEST_ELEM(int64_t, ctx, 0, i, j, k) * TEST_ELEM(int64_t, ctx, 0, i, j, k) + (int64_t)(i + j);
    return 0;
}

static void test_still_usable(void) {
    enum { A = 30, B = 20 };
    int64_t init[A * B], got[A * B];
    for (int e = 0; e < A * B; ++e) init[e] = e - 300;
    celerity_buffer* in = test_buffer(2, A, B, 1, sizeof(int64_t), init, "final_in");
    celerity_buffer* out = test_buffer(2, A, B, 1, sizeof(int64_t), NULL, "final_out");
    celerity_cg* cg = test_cg("final");
    test_access(cg, in, CELERITY_ACCESS_READ, celerity_one_to_one());
    test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {A, B, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 2, range, NULL, square_plus, NULL, NULL));
    CHECK_OK(test_read(out, NULL, got, sizeof got));
    for (int i = 0; i < A; ++i)
        for (int j = 0; j < B; ++j) CHECK(got[i * B + j] == init[i * B + j] * init[i * B + j] + i + j);
    CHECK_OK(celerity_buffer_release(in));
    CHECK_OK(celerity_buffer_release(out));
}

int main(int argc, char** argv) {
    test_before_init();
    test_cuda_unsupported(&argc, &argv);
    test_init(&argc, &argv);
    celerity_config* cfg = NULL;
    CHECK_OK(celerity_config_create(&cfg));
    EXPECT_STATE(celerity_runtime_init(&argc, &argv, NULL), "celerity_runtime_init");
    EXPECT_STATE(celerity_runtime_init(&argc, &argv, cfg), "celerity_runtime_init");
    celerity_config_destroy(cfg);
    test_other_thread();
    test_buffer_args();
    test_cg_args();
    test_clamped_custom();
    test_still_usable();
    test_other_thread();

    /* A buffer that outlives the runtime's shutdown. */
    celerity_buffer* late = test_buffer(1, 4, 1, 1, 8, NULL, "late");
    CHECK_OK(celerity_runtime_shutdown());
    size_t r[3] = {4, 1, 1};
    celerity_buffer* b = NULL;
    EXPECT_STATE(celerity_buffer_create(1, r, 8, 8, NULL, &b), "celerity_buffer_create");
    CHECK(b == NULL);
    EXPECT_STATE(celerity_buffer_get_range(late, r), "celerity_buffer_get_range");
    EXPECT_STATE(celerity_wait(), "celerity_wait");
    celerity_cg* cg = NULL;
    EXPECT_STATE(celerity_cg_create(&cg), "celerity_cg_create");
    /* Shutdown is idempotent (issue 8: "idempotent epoch"); everything else after it is refused. */
    CHECK_OK(celerity_runtime_shutdown());
    EXPECT_STATE(celerity_runtime_init(&argc, &argv, NULL), "celerity_runtime_init");
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_errors");
}

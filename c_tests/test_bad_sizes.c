/* Sizes from the program that overflow or need absurd memory are refused with a status naming the
 * argument, never an abort or a wrapped size (issue 18): buffer extents whose element count or
 * byte size overflows, kernel offset + range overflow, an absurd oversubscribe factor, a CUSTOM
 * reduction of huge elements. A handle released between celerity_cg_access /
 * celerity_cg_side_effect and submission is INVALID_STATE at submit. After all of it the runtime
 * still computes a correct result. */
#include <stdint.h>

#include "test_runtime.h"

#define EXPECT(call, status, needle)                                                             \
    do {                                                                                         \
        CHECK_STATUS(call, status);                                                              \
        CHECK_MESSAGE_CONTAINS_I(needle);                                                        \
    } while (0)

static int fill_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int, ctx, 0, i, j, k) = (int)i;
    return 0;
}

static int noop_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)ctx, (void)user_data;
    return 0;
}

static void noop_combine(void* user_data, void* acc, const void* value) {
    (void)user_data, (void)acc, (void)value;
}

static void test_buffer_extents(void) {
    celerity_buffer* sentinel = (celerity_buffer*)(uintptr_t)0xb0f;
    celerity_buffer* b = sentinel;
    /* 2^32 x 2^32 elements: the element count overflows 64 bits. */
    size_t count_overflow[3] = {(size_t)1 << 32, (size_t)1 << 32, 1};
    EXPECT(celerity_buffer_create(2, count_overflow, 1, 1, NULL, &b), CELERITY_ERROR_INVALID_ARGUMENT, "range");
    CHECK(b == sentinel);
    size_t count_overflow3[3] = {(size_t)1 << 22, (size_t)1 << 21, (size_t)1 << 21};
    EXPECT(celerity_buffer_create(3, count_overflow3, 1, 1, NULL, &b), CELERITY_ERROR_INVALID_ARGUMENT, "range");
    /* The count fits, the byte size does not. */
    size_t bytes_overflow[3] = {(size_t)1 << 62, 1, 1};
    EXPECT(celerity_buffer_create(1, bytes_overflow, 8, 8, NULL, &b), CELERITY_ERROR_INVALID_ARGUMENT, "elem_size");
    /* Above what any allocation can hold (isize::MAX). */
    size_t too_big[3] = {(size_t)1 << 63, 1, 1};
    EXPECT(celerity_buffer_create(1, too_big, 1, 1, NULL, &b), CELERITY_ERROR_INVALID_ARGUMENT, "range");
    CHECK(b == sentinel);
}

static void test_kernel_geometry(celerity_buffer* out) {
    /* offset + range overflows in dimension 0. */
    celerity_cg* cg = test_cg("offset_overflow");
    size_t range[3] = {16, 1, 1};
    size_t offset[3] = {SIZE_MAX - 4, 0, 0};
    EXPECT(celerity_submit_parallel_for(cg, 1, range, offset, noop_kernel, NULL, NULL),
           CELERITY_ERROR_INVALID_ARGUMENT, "offset");
    /* The kernel's item count overflows. */
    cg = test_cg("range_overflow");
    size_t huge[3] = {(size_t)1 << 32, (size_t)1 << 32, 2};
    EXPECT(celerity_submit_parallel_for(cg, 3, huge, NULL, noop_kernel, NULL, NULL), CELERITY_ERROR_INVALID_ARGUMENT,
           "range");
    /* An absurd oversubscribe factor: refused at the hint or at submission, never an abort. */
    cg = test_cg("oversubscribed");
    test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    celerity_status s = celerity_cg_hint_oversubscribe(cg, (uint32_t)1 << 28);
    CHECK(s == CELERITY_OK || s == CELERITY_ERROR_INVALID_ARGUMENT);
    if (s == CELERITY_OK) {
        size_t r[3] = {64, 1, 1};
        EXPECT(celerity_submit_parallel_for(cg, 1, r, NULL, fill_kernel, NULL, NULL), CELERITY_ERROR_INVALID_ARGUMENT,
               "oversubscribe");
    } else {
        CHECK_MESSAGE_CONTAINS_I("factor");
        celerity_cg_destroy(cg);
    }
}

static void test_huge_reduction(void) {
    /* One element of 2^40 bytes: creating the buffer is fine (nothing is allocated yet), the
     * reduction's identity cannot be held. */
    size_t one[3] = {1, 1, 1};
    celerity_buffer* b = NULL;
    size_t huge = (size_t)1 << 40;
    CHECK_OK(celerity_buffer_create(0, one, huge, 8, NULL, &b));
    celerity_cg* cg = test_cg("huge_reduction");
    static char identity[16];
    celerity_reduction_op op;
    memset(&op, 0, sizeof op);
    op.kind = CELERITY_REDUCE_CUSTOM;
    op.elem_size = huge;
    op.identity = identity;
    op.combine = noop_combine;
    /* The operator must agree with the buffer: a mismatch is refused before the identity is read. */
    celerity_buffer* small = NULL;
    CHECK_OK(celerity_buffer_create(0, one, 16, 8, NULL, &small));
    EXPECT(celerity_cg_reduction(cg, small, &op, true), CELERITY_ERROR_INVALID_ARGUMENT, "elem_size");
    celerity_status s = celerity_cg_reduction(cg, b, &op, true);
    CHECK(s == CELERITY_ERROR_OUT_OF_MEMORY || s == CELERITY_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_CONTAINS_I("elem_size");
    celerity_cg_destroy(cg);
    CHECK_OK(celerity_buffer_release(small));
    CHECK_OK(celerity_buffer_release(b));
}

static void test_released_before_submit(void) {
    celerity_buffer* b = test_buffer(1, 16, 1, 1, sizeof(int), NULL, "released_early");
    celerity_cg* cg = test_cg("uses_released_buffer");
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_buffer_release(b));
    size_t r[3] = {16, 1, 1};
    EXPECT(celerity_submit_parallel_for(cg, 1, r, NULL, fill_kernel, NULL, NULL), CELERITY_ERROR_INVALID_STATE,
           "released");

    static int instance;
    celerity_host_object* h = NULL;
    CHECK_OK(celerity_host_object_create(&instance, NULL, &h));
    cg = test_cg("uses_released_host_object");
    CHECK_OK(celerity_cg_side_effect(cg, h));
    CHECK_OK(celerity_host_object_release(h));
    EXPECT(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, noop_kernel, NULL, NULL),
           CELERITY_ERROR_INVALID_STATE, "released");
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);
    enum { N = 64 };
    celerity_buffer* out = test_buffer(1, N, 1, 1, sizeof(int), NULL, "out");
    test_buffer_extents();
    test_kernel_geometry(out);
    test_huge_reduction();
    test_released_before_submit();

    /* The runtime is still usable. */
    celerity_cg* cg = test_cg("fill");
    test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t r[3] = {N, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, fill_kernel, NULL, NULL));
    int data[N];
    CHECK_OK(test_read(out, NULL, data, sizeof data));
    for (int i = 0; i < N; ++i) CHECK(data[i] == i);
    CHECK_OK(celerity_buffer_release(out));
    CHECK_OK(celerity_runtime_shutdown());
    return celerity_test_finish("test_bad_sizes");
}

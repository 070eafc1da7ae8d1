/* The header's static inline helpers (range-mapper constructors, celerity_accessor_ptr and its
 * boundary check) and the layout of the by-value structs, which the Rust side asserts too. */
/* ctest builds in Release (NDEBUG): switch the boundary check on explicitly. */
#define CELERITY_ACCESSOR_BOUNDARY_CHECK 1
#include "test_check.h"

_Static_assert(sizeof(celerity_subrange) == 48, "celerity_subrange layout");
_Static_assert(sizeof(celerity_chunk) == 80, "celerity_chunk layout");
_Static_assert(sizeof(celerity_range_mapper) == 104, "celerity_range_mapper layout");
_Static_assert(sizeof(celerity_accessor) == 120, "celerity_accessor layout");
_Static_assert(sizeof(celerity_accessor_record) == 72, "celerity_accessor_record layout");
_Static_assert(sizeof(celerity_kernel_context) == 184, "celerity_kernel_context layout");
_Static_assert(sizeof(celerity_reduction_op) == 40, "celerity_reduction_op layout");

static void my_mapper(void* user_data, const celerity_chunk* chunk, uint32_t buffer_dims, const size_t buffer_range[3],
                      celerity_subrange* out) {
    (void)user_data, (void)chunk, (void)buffer_dims, (void)buffer_range, (void)out;
}

int main(void) {
    CHECK(celerity_one_to_one().kind == CELERITY_RANGE_MAPPER_ONE_TO_ONE);
    CHECK(celerity_all().kind == CELERITY_RANGE_MAPPER_ALL);
    celerity_subrange fixed = {{1, 2, 0}, {3, 4, 1}};
    celerity_range_mapper f = celerity_fixed(fixed);
    CHECK(f.kind == CELERITY_RANGE_MAPPER_FIXED && f.fixed.offset[1] == 2 && f.fixed.range[0] == 3);
    celerity_range_mapper s = celerity_slice(1);
    CHECK(s.kind == CELERITY_RANGE_MAPPER_SLICE && s.slice_dim == 1);
    celerity_range_mapper n = celerity_neighborhood(1, 2, 3);
    CHECK(n.kind == CELERITY_RANGE_MAPPER_NEIGHBORHOOD && n.neighborhood[0] == 1 && n.neighborhood[2] == 3);
    celerity_range_mapper a = celerity_neighborhood_along_axes(4, 5, 0);
    CHECK(a.kind == CELERITY_RANGE_MAPPER_NEIGHBORHOOD_ALONG_AXES && a.neighborhood[1] == 5);
    int token = 7;
    celerity_range_mapper c = celerity_custom(my_mapper, &token);
    CHECK(c.kind == CELERITY_RANGE_MAPPER_CUSTOM && c.custom == my_mapper && c.custom_user_data == &token);

    /* A 4x5 allocation of doubles covering buffer rows [10, 14) and columns [20, 25). */
    double storage[4 * 5];
    for (int i = 0; i < 20; ++i) storage[i] = i;
    celerity_accessor acc = {storage, {{10, 20, 0}, {4, 5, 1}}, {{11, 21, 0}, {2, 2, 1}}, sizeof(double), NULL};
    /* Without a record (checking off at run time) nothing is checked. */
    CHECK(*(double*)celerity_accessor_ptr(&acc, 10, 20, 0) == 0.0);
    CHECK(*(double*)celerity_accessor_ptr(&acc, 12, 23, 0) == 2 * 5 + 3);
    CHECK(*(double*)celerity_accessor_ptr(&acc, 13, 24, 0) == 19.0);

    /* With a record: accesses outside the declared box [11,13)x[21,23) are recorded (bounding
     * box, signed) and redirected to the fallback element; accesses inside are untouched. */
    double fallback = -1.0;
    celerity_accessor_record record = {0, {INT64_MAX, INT64_MAX, INT64_MAX}, {INT64_MIN, INT64_MIN, INT64_MIN},
                                       &fallback, sizeof(fallback)};
    acc.record = &record;
    CHECK(*(double*)celerity_accessor_ptr(&acc, 12, 22, 0) == 2 * 5 + 2);
    CHECK(record.count == 0);
    CHECK(celerity_accessor_ptr(&acc, 10, 20, 0) == &fallback);
    *(double*)celerity_accessor_ptr(&acc, 13, 22, 0) = 42.0;
    CHECK(storage[3 * 5 + 2] == 3 * 5 + 2 && fallback == 42.0);
    CHECK(record.count == 2);
    CHECK(record.min[0] == 10 && record.max[0] == 13 && record.min[1] == 20 && record.max[1] == 22);
    CHECK(record.min[2] == 0 && record.max[2] == 0);
    /* An underflowing index shows as -1. */
    CHECK(celerity_accessor_ptr(&acc, 11, (size_t)21 - 22, 0) == &fallback);
    CHECK(record.min[1] == -1 && record.count == 3);
    /* Boxes for frontends: inside, and partly outside. */
    size_t lo[3] = {11, 21, 0}, hi[3] = {13, 23, 1}, wide[3] = {13, 24, 1};
    CHECK(celerity_accessor_check_box(&acc, lo, hi));
    CHECK(!celerity_accessor_check_box(&acc, lo, wide) && record.max[1] == 23 && record.count == 4);
    /* Elements larger than the fallback are clamped into the allocation. */
    record.fallback_size = 0;
    CHECK(celerity_accessor_ptr(&acc, 99, 0, 0) == &storage[3 * 5 + 0]);
    return celerity_test_finish("test_inline_helpers");
}

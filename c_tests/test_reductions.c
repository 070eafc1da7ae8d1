/* Reductions: SUM, PRODUCT, MIN and MAX over every scalar type, each with and without
 * initialize_to_identity (without it, the buffer's previous value is included exactly once),
 * CUSTOM operators (a struct with a combiner, and a combiner using user_data), two reductions
 * in one kernel, a one-element 1-D reduction buffer, and results consumed by later kernels.
 * Every result is read back through a 0-D fence and compared with a serial fold. */
#include <math.h>
#include <stdatomic.h>

#include "test_runtime.h"

enum { N = 1000 };
static atomic_int kernel_errors;

typedef union {
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
} scalar;

static const size_t type_size[6] = {4, 8, 4, 8, 4, 8};
static const char* const type_names[6] = {"i32", "i64", "u32", "u64", "f32", "f64"};
static const char* const kind_names[4] = {"sum", "product", "min", "max"};

/* The contribution of item i, as a double (exactly representable in every type used). */
static double item_value(celerity_reduction_kind kind, celerity_scalar_type type, size_t i) {
    int is_unsigned = type == CELERITY_TYPE_U32 || type == CELERITY_TYPE_U64;
    int is_float = type == CELERITY_TYPE_F32 || type == CELERITY_TYPE_F64;
    switch (kind) {
    case CELERITY_REDUCE_SUM: return is_unsigned ? (double)(i % 13) : (double)(i % 13) - 6;
    case CELERITY_REDUCE_PRODUCT:
        if (i % 37 == 0) return 2;
        if (!is_unsigned && i % 53 == 7) return -1;
        if (is_float && i % 29 == 3) return 0.5;
        return 1;
    default: return (double)((i * 7919) % 1009) + (is_unsigned ? 3.0 : -500.0);
    }
}

static scalar to_scalar(celerity_scalar_type type, double v) {
    scalar s;
    memset(&s, 0, sizeof s);
    switch (type) {
    case CELERITY_TYPE_I32: s.i32 = (int32_t)v; break;
    case CELERITY_TYPE_I64: s.i64 = (int64_t)v; break;
    case CELERITY_TYPE_U32: s.u32 = (uint32_t)v; break;
    case CELERITY_TYPE_U64: s.u64 = (uint64_t)v; break;
    case CELERITY_TYPE_F32: s.f32 = (float)v; break;
    default: s.f64 = v; break;
    }
    return s;
}

#define APPLY(kind, acc, v)                                                                      \
    do {                                                                                         \
        switch (kind) {                                                                          \
        case CELERITY_REDUCE_SUM: (acc) += (v); break;                                           \
        case CELERITY_REDUCE_PRODUCT: (acc) *= (v); break;                                       \
        case CELERITY_REDUCE_MIN:                                                                \
            if ((v) < (acc)) (acc) = (v);                                                        \
            break;                                                                               \
        default:                                                                                 \
            if ((v) > (acc)) (acc) = (v);                                                        \
            break;                                                                               \
        }                                                                                        \
    } while (0)

/* acc = acc (op) v for any type. */
static void combine(celerity_reduction_kind kind, celerity_scalar_type type, void* acc, double v) {
    switch (type) {
    case CELERITY_TYPE_I32: { int32_t x = (int32_t)v; APPLY(kind, *(int32_t*)acc, x); break; }
    case CELERITY_TYPE_I64: { int64_t x = (int64_t)v; APPLY(kind, *(int64_t*)acc, x); break; }
    case CELERITY_TYPE_U32: { uint32_t x = (uint32_t)v; APPLY(kind, *(uint32_t*)acc, x); break; }
    case CELERITY_TYPE_U64: { uint64_t x = (uint64_t)v; APPLY(kind, *(uint64_t*)acc, x); break; }
    case CELERITY_TYPE_F32: { float x = (float)v; APPLY(kind, *(float*)acc, x); break; }
    default: { double x = v; APPLY(kind, *(double*)acc, x); break; }
    }
}

typedef struct {
    celerity_reduction_kind kind;
    celerity_scalar_type type;
} builtin_case;

static int builtin_kernel(const celerity_kernel_context* ctx, void* user_data) {
    const builtin_case* c = (const builtin_case*)user_data;
    if (ctx->num_reductions != 1 || ctx->reductions[0] == NULL) {
        atomic_fetch_add(&kernel_errors, 1);
        return 0;
    }
    void* acc = ctx->reductions[0];
    /* Pre-set to the identity (checked where the identity is unambiguous). */
    scalar zero = to_scalar(c->type, 0), one = to_scalar(c->type, 1);
    if (c->kind == CELERITY_REDUCE_SUM && memcmp(acc, &zero, type_size[c->type]) != 0) atomic_fetch_add(&kernel_errors, 1);
    if (c->kind == CELERITY_REDUCE_PRODUCT && memcmp(acc, &one, type_size[c->type]) != 0) atomic_fetch_add(&kernel_errors, 1);
    TEST_FOR_CHUNK(ctx, i, j, k) combine(c->kind, c->type, acc, item_value(c->kind, c->type, i));
    return 0;
}

static double previous_value(celerity_reduction_kind kind, celerity_scalar_type type) {
    int is_unsigned = type == CELERITY_TYPE_U32 || type == CELERITY_TYPE_U64;
    switch (kind) {
    case CELERITY_REDUCE_SUM: return 5;
    case CELERITY_REDUCE_PRODUCT: return 3;
    case CELERITY_REDUCE_MIN: return is_unsigned ? 1 : -1000; /* below every item */
    default: return 100000;                                    /* above every item */
    }
}

static int scalar_equal(celerity_scalar_type type, const scalar* a, const scalar* b) {
    return memcmp(a, b, type_size[type]) == 0;
}

static double scalar_as_double(celerity_scalar_type type, const scalar* s) {
    switch (type) {
    case CELERITY_TYPE_I32: return s->i32;
    case CELERITY_TYPE_I64: return (double)s->i64;
    case CELERITY_TYPE_U32: return s->u32;
    case CELERITY_TYPE_U64: return (double)s->u64;
    case CELERITY_TYPE_F32: return s->f32;
    default: return s->f64;
    }
}

static void test_builtin(void) {
    static builtin_case cases[4 * 6];
    size_t range[3] = {N, 1, 1};
    for (celerity_reduction_kind kind = CELERITY_REDUCE_SUM; kind <= CELERITY_REDUCE_MAX; ++kind) {
        for (celerity_scalar_type type = CELERITY_TYPE_I32; type <= CELERITY_TYPE_F64; ++type) {
            builtin_case* c = &cases[kind * 6 + type];
            c->kind = kind;
            c->type = type;
            celerity_reduction_op op;
            memset(&op, 0, sizeof op);
            op.kind = kind;
            op.type = type;
            for (int init_identity = 0; init_identity < 2; ++init_identity) {
                char name[64];
                snprintf(name, sizeof name, "%s_%s_%s", kind_names[kind], type_names[type],
                         init_identity ? "identity" : "previous");
                double prev = init_identity ? 77 : previous_value(kind, type);
                scalar host = to_scalar(type, prev);
                /* 0-D buffers, and a one-element 1-D buffer for the F64 cases. */
                uint32_t dims = type == CELERITY_TYPE_F64 ? 1 : 0;
                celerity_buffer* buf = test_buffer(dims, 1, 1, 1, type_size[type], &host, name);
                celerity_cg* cg = test_cg(name);
                CHECK_OK(celerity_cg_reduction(cg, buf, &op, init_identity != 0));
                CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, builtin_kernel, c, NULL));

                scalar want = init_identity ? to_scalar(type, kind == CELERITY_REDUCE_PRODUCT ? 1 : 0) : host;
                if (init_identity && kind >= CELERITY_REDUCE_MIN) want = to_scalar(type, item_value(kind, type, 0));
                for (size_t i = (init_identity && kind >= CELERITY_REDUCE_MIN) ? 1 : 0; i < N; ++i)
                    combine(kind, type, &want, item_value(kind, type, i));
                scalar got;
                memset(&got, 0xab, sizeof got);
                CHECK_OK(test_read(buf, NULL, &got, type_size[type]));
                if (!scalar_equal(type, &got, &want)) {
                    fprintf(stderr, "%s: got %.17g, expected %.17g\n", name, scalar_as_double(type, &got),
                            scalar_as_double(type, &want));
                    ++celerity_test_failures;
                }
                CHECK_OK(celerity_buffer_release(buf));
            }
        }
    }
}

/* ---- CUSTOM -------------------------------------------------------------------------------- */

typedef struct {
    double sum;
    int64_t count;
    double max;
} stats;

static atomic_int combine_calls;

static void combine_stats(void* user_data, void* accumulator, const void* value) {
    stats* a = (stats*)accumulator;
    const stats* v = (const stats*)value;
    if (user_data != (void*)&combine_calls) atomic_fetch_add(&kernel_errors, 1);
    atomic_fetch_add(&combine_calls, 1);
    a->sum += v->sum;
    a->count += v->count;
    if (v->max > a->max) a->max = v->max;
}

static int stats_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    stats* acc = (stats*)ctx->reductions[0];
    if (acc->count != 0 || acc->sum != 0 || !(acc->max == -INFINITY)) atomic_fetch_add(&kernel_errors, 1);
    TEST_FOR_CHUNK(ctx, i, j, k) {
        double x = (double)((i * 31) % 19) * 0.5;
        acc->sum += x;
        acc->count += 1;
        if (x > acc->max) acc->max = x;
    }
    return 0;
}

static void mod_sum(void* user_data, void* accumulator, const void* value) {
    uint64_t m = *(const uint64_t*)user_data;
    *(uint64_t*)accumulator = (*(uint64_t*)accumulator + *(const uint64_t*)value) % m;
}

static const uint64_t modulus = 1000003;

static int mod_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    uint64_t* acc = (uint64_t*)ctx->reductions[0];
    TEST_FOR_CHUNK(ctx, i, j, k) *acc = (*acc + (uint64_t)i * i * i) % modulus;
    return 0;
}

static void test_custom(void) {
    static const stats identity = {0, 0, -INFINITY};
    celerity_reduction_op op;
    memset(&op, 0, sizeof op);
    op.kind = CELERITY_REDUCE_CUSTOM;
    op.elem_size = sizeof(stats);
    op.identity = &identity;
    op.combine = combine_stats;
    op.user_data = &combine_calls;
    size_t range[3] = {N, 1, 1}, offset[3] = {10, 0, 0};
    for (int init_identity = 0; init_identity < 2; ++init_identity) {
        stats prev = {100, 7, 1e6};
        size_t r[3] = {1, 1, 1};
        celerity_buffer* buf = NULL;
        CHECK_OK(celerity_buffer_create(0, r, sizeof(stats), _Alignof(stats), &prev, &buf));
        celerity_cg* cg = test_cg(init_identity ? "stats_identity" : "stats_previous");
        CHECK_OK(celerity_cg_reduction(cg, buf, &op, init_identity != 0));
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, offset, stats_kernel, NULL, NULL));
        stats want = init_identity ? identity : prev;
        for (size_t i = 10; i < 10 + N; ++i) {
            double x = (double)((i * 31) % 19) * 0.5;
            want.sum += x;
            want.count += 1;
            if (x > want.max) want.max = x;
        }
        stats got = {-1, -1, -1};
        CHECK_OK(test_read(buf, NULL, &got, sizeof got));
        CHECK(got.sum == want.sum && got.count == want.count && got.max == want.max);
        CHECK_OK(celerity_buffer_release(buf));
    }
    CHECK(atomic_load(&combine_calls) > 0);

    /* A combiner that needs its user_data. */
    celerity_reduction_op mop;
    memset(&mop, 0, sizeof mop);
    static const uint64_t zero = 0;
    mop.kind = CELERITY_REDUCE_CUSTOM;
    mop.elem_size = sizeof(uint64_t);
    mop.identity = &zero;
    mop.combine = mod_sum;
    mop.user_data = (void*)&modulus;
    uint64_t prev = 11;
    celerity_buffer* buf = test_buffer(0, 1, 1, 1, sizeof(uint64_t), &prev, "mod_sum");
    celerity_cg* cg = test_cg("mod_sum");
    CHECK_OK(celerity_cg_reduction(cg, buf, &mop, false));
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, mod_kernel, NULL, NULL));
    uint64_t want = prev, got = 0;
    for (uint64_t i = 0; i < N; ++i) want = (want + i * i * i) % modulus;
    CHECK_OK(test_read(buf, NULL, &got, sizeof got));
    CHECK(got == want);
    CHECK_OK(celerity_buffer_release(buf));
}

/* ---- two reductions in one kernel; results consumed by later kernels ------------------------ */

static int two_reductions(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    if (ctx->num_reductions != 2 || ctx->num_accessors != 1) {
        atomic_fetch_add(&kernel_errors, 1);
        return 0;
    }
    int64_t* sum = (int64_t*)ctx->reductions[0];
    double* max = (double*)ctx->reductions[1];
    TEST_FOR_CHUNK(ctx, i, j, k) {
        int64_t v = TEST_ELEM(int64_t, ctx, 0, i, j, k);
        *sum += v;
        if ((double)v > *max) *max = (double)v;
    }
    return 0;
}

/* data[i] += sum % 7 + i % 3, reading the 0-D sum through ALL. */
static int add_sum(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    int64_t s = *(const int64_t*)celerity_accessor_ptr(&ctx->accessors[0], 0, 0, 0);
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int64_t, ctx, 1, i, j, k) += s % 7 + (int64_t)(i % 3);
    return 0;
}

static void test_chain(void) {
    int64_t data[N];
    for (int i = 0; i < N; ++i) data[i] = (i * 13) % 101;
    celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(int64_t), data, "data");
    celerity_buffer* sum = test_buffer(0, 1, 1, 1, sizeof(int64_t), NULL, "sum");
    celerity_buffer* max = test_buffer(0, 1, 1, 1, sizeof(double), NULL, "max");
    celerity_reduction_op sum_op, max_op;
    memset(&sum_op, 0, sizeof sum_op);
    memset(&max_op, 0, sizeof max_op);
    sum_op.kind = CELERITY_REDUCE_SUM;
    sum_op.type = CELERITY_TYPE_I64;
    max_op.kind = CELERITY_REDUCE_MAX;
    max_op.type = CELERITY_TYPE_F64;
    size_t range[3] = {N, 1, 1};
    for (int step = 0; step < 20; ++step) {
        celerity_cg* cg = test_cg("two_reductions");
        test_access(cg, b, CELERITY_ACCESS_READ, celerity_one_to_one());
        CHECK_OK(celerity_cg_reduction(cg, sum, &sum_op, true));
        CHECK_OK(celerity_cg_reduction(cg, max, &max_op, true));
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, two_reductions, NULL, NULL));
        cg = test_cg("add_sum");
        test_access(cg, sum, CELERITY_ACCESS_READ, celerity_all());
        test_access(cg, b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one());
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, add_sum, NULL, NULL));

        int64_t s = 0;
        double m = -INFINITY;
        for (int i = 0; i < N; ++i) {
            s += data[i];
            if ((double)data[i] > m) m = (double)data[i];
        }
        for (int i = 0; i < N; ++i) data[i] += s % 7 + i % 3;
        int64_t got_sum = -1;
        double got_max = -1;
        CHECK_OK(test_read(sum, NULL, &got_sum, sizeof got_sum));
        CHECK_OK(test_read(max, NULL, &got_max, sizeof got_max));
        if (got_sum != s || got_max != m) {
            fprintf(stderr, "chain step %d: sum %lld (expected %lld), max %g (expected %g)\n", step,
                    (long long)got_sum, (long long)s, got_max, m);
        }
        CHECK(got_sum == s);
        CHECK(got_max == m);
    }
    int64_t got[N];
    CHECK_OK(test_read(b, NULL, got, sizeof got));
    CHECK(memcmp(got, data, sizeof got) == 0);
    CHECK_OK(celerity_buffer_release(b));
    CHECK_OK(celerity_buffer_release(sum));
    CHECK_OK(celerity_buffer_release(max));
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);
    test_builtin();
    test_custom();
    test_chain();
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_reductions");
}

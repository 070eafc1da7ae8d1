/* Buffers of 0 to 3 dimensions (with and without host_init, set_name, get_range, release while
 * work is pending, a 12-byte element type) and every range mapper on 1-D, 2-D and 3-D buffers:
 * each kernel reads through the mapper under test, writes ONE_TO_ONE, and the result is fenced
 * and compared with the same computation done serially. Inside the kernel every read is
 * checked against the accessor's `accessed` box, and `accessed` against the mapper's expected
 * region for the chunk. */
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int kernel_errors;

static void kernel_error(const char* what, const celerity_kernel_context* ctx) {
    if (atomic_fetch_add(&kernel_errors, 1) < 10) {
        fprintf(stderr, "kernel error: %s (chunk offset {%zu,%zu,%zu} range {%zu,%zu,%zu})\n", what,
                ctx->chunk.offset[0], ctx->chunk.offset[1], ctx->chunk.offset[2], ctx->chunk.range[0],
                ctx->chunk.range[1], ctx->chunk.range[2]);
    }
}

static double init_value(size_t i, size_t j, size_t k) { return (double)((i * 131 + j * 31 + k * 7) % 97); }

enum { M_ONE_TO_ONE, M_ALL, M_FIXED, M_SLICE, M_NEIGHBORHOOD, M_ALONG_AXES, M_CUSTOM };
static const char* const mapper_names[] = {"one_to_one", "all", "fixed", "slice", "neighborhood",
                                           "neighborhood_along_axes", "custom"};

typedef struct {
    int kind;
    uint32_t dims;
    size_t R[3];               /* buffer range = kernel range */
    celerity_subrange fixed;   /* FIXED */
    uint32_t slice_dim;        /* SLICE */
    size_t n[3];               /* NEIGHBORHOOD, NEIGHBORHOOD_ALONG_AXES */
    size_t shift;              /* CUSTOM: the chunk shifted by `shift` along dimension 0 */
} mapper_case;

/* Reads element x of the input: from a host array or from a kernel accessor. */
typedef double (*getter)(const void* src, const size_t R[3], const size_t x[3]);

static double get_host(const void* src, const size_t R[3], const size_t x[3]) {
    return ((const double*)src)[test_lin(R, x[0], x[1], x[2])];
}

typedef struct {
    const celerity_kernel_context* ctx;
    const celerity_accessor* acc;
} acc_src;

static double get_acc(const void* src, const size_t R[3], const size_t x[3]) {
    const acc_src* s = (const acc_src*)src;
    (void)R;
    for (int d = 0; d < 3; ++d) {
        if (x[d] < s->acc->accessed.offset[d] || x[d] >= s->acc->accessed.offset[d] + s->acc->accessed.range[d] ||
            x[d] < s->acc->allocation.offset[d] ||
            x[d] >= s->acc->allocation.offset[d] + s->acc->allocation.range[d]) {
            kernel_error("read outside the accessor's accessed region or allocation", s->ctx);
            return -1e9;
        }
    }
    return *(const double*)celerity_accessor_ptr(s->acc, x[0], x[1], x[2]);
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* The value at x of a kernel reading `src` through the mapper of case c. */
static double compute(const mapper_case* c, getter get, const void* src, const size_t x[3]) {
    size_t y[3] = {x[0], x[1], x[2]};
    double sum = 0;
    switch (c->kind) {
    case M_ONE_TO_ONE: return get(src, c->R, x);
    case M_ALL:
        for (int d = 0; d < 3; ++d) y[d] = c->R[d] - 1 - x[d];
        return get(src, c->R, y);
    case M_FIXED:
        for (int d = 0; d < 3; ++d) y[d] = c->fixed.offset[d] + x[d] % c->fixed.range[d];
        return get(src, c->R, y);
    case M_SLICE:
        for (size_t t = 0; t < c->R[c->slice_dim]; ++t) {
            y[c->slice_dim] = t;
            sum += get(src, c->R, y) * (double)(t + 1);
        }
        return sum;
    case M_NEIGHBORHOOD: {
        size_t lo[3], hi[3];
        for (int d = 0; d < 3; ++d) {
            lo[d] = x[d] >= c->n[d] ? x[d] - c->n[d] : 0;
            hi[d] = min_sz(c->R[d] - 1, x[d] + c->n[d]);
        }
        for (y[0] = lo[0]; y[0] <= hi[0]; ++y[0])
            for (y[1] = lo[1]; y[1] <= hi[1]; ++y[1])
                for (y[2] = lo[2]; y[2] <= hi[2]; ++y[2]) sum += get(src, c->R, y);
        return sum;
    }
    case M_ALONG_AXES:
        sum = get(src, c->R, x);
        for (int d = 0; d < 3; ++d) {
            for (size_t t = 1; t <= c->n[d]; ++t) {
                y[0] = x[0], y[1] = x[1], y[2] = x[2];
                if (x[d] >= t) {
                    y[d] = x[d] - t;
                    sum += get(src, c->R, y) * (double)(d + 2);
                }
                if (x[d] + t < c->R[d]) {
                    y[d] = x[d] + t;
                    sum += get(src, c->R, y) * (double)(d + 5);
                }
            }
        }
        return sum;
    case M_CUSTOM:
        y[0] = x[0] + c->shift;
        return y[0] < c->R[0] ? get(src, c->R, y) : -1.0;
    default: return -2.0;
    }
}

/* The region the mapper of case c yields for `chunk` (clamped to the buffer). */
static celerity_subrange expected_accessed(const mapper_case* c, const celerity_chunk* chunk) {
    celerity_subrange sr = test_subrange(0, 0, 0, c->R[0], c->R[1], c->R[2]);
    for (int d = 0; d < 3; ++d) {
        size_t lo = chunk->offset[d], hi = chunk->offset[d] + chunk->range[d];
        switch (c->kind) {
        case M_ONE_TO_ONE: break;
        case M_ALL: lo = 0, hi = c->R[d]; break;
        case M_FIXED: lo = c->fixed.offset[d], hi = lo + c->fixed.range[d]; break;
        case M_SLICE:
            if ((uint32_t)d == c->slice_dim) lo = 0, hi = c->R[d];
            break;
        case M_NEIGHBORHOOD:
        case M_ALONG_AXES: /* the bounding box of the cross is the box */
            lo = lo >= c->n[d] ? lo - c->n[d] : 0;
            hi = min_sz(c->R[d], hi + c->n[d]);
            break;
        case M_CUSTOM:
            if (d == 0) lo = min_sz(c->R[0], lo + c->shift), hi = min_sz(c->R[0], hi + c->shift);
            break;
        default: break;
        }
        sr.offset[d] = lo;
        sr.range[d] = hi - lo;
    }
    return sr;
}

static void shift_mapper(void* user_data, const celerity_chunk* chunk, uint32_t buffer_dims,
                         const size_t buffer_range[3], celerity_subrange* out) {
    const mapper_case* c = (const mapper_case*)user_data;
    (void)buffer_dims, (void)buffer_range;
    for (int d = 0; d < 3; ++d) {
        out->offset[d] = chunk->offset[d];
        out->range[d] = chunk->range[d];
    }
    out->offset[0] += c->shift; /* may leave the buffer at the end: clamped by the runtime */
}

static int mapper_kernel(const celerity_kernel_context* ctx, void* user_data) {
    const mapper_case* c = (const mapper_case*)user_data;
    if (ctx->num_accessors != 2 || ctx->backend != CELERITY_BACKEND_HOST || ctx->stream != NULL) {
        kernel_error("bad context", ctx);
        return 0;
    }
    const celerity_accessor* in = &ctx->accessors[0];
    if (in->elem_size != sizeof(double) || ctx->accessors[1].elem_size != sizeof(double)) {
        kernel_error("elem_size", ctx);
    }
    celerity_subrange want = expected_accessed(c, &ctx->chunk);
    size_t area = want.range[0] * want.range[1] * want.range[2];
    if (area == 0) {
        if (in->base != NULL) kernel_error("empty accessed region but base != NULL", ctx);
    } else {
        if (in->base == NULL) kernel_error("base == NULL", ctx);
        if (memcmp(&want, &in->accessed, sizeof want) != 0) kernel_error("accessed != mapper's region", ctx);
    }
    acc_src src = {ctx, in};
    TEST_FOR_CHUNK(ctx, i, j, k) {
        size_t x[3] = {i, j, k};
        TEST_ELEM(double, ctx, 1, i, j, k) = compute(c, get_acc, &src, x);
    }
    return 0;
}

static celerity_range_mapper mapper_of(mapper_case* c) {
    switch (c->kind) {
    case M_ONE_TO_ONE: return celerity_one_to_one();
    case M_ALL: return celerity_all();
    case M_FIXED: return celerity_fixed(c->fixed);
    case M_SLICE: return celerity_slice(c->slice_dim);
    case M_NEIGHBORHOOD: return celerity_neighborhood(c->n[0], c->n[1], c->n[2]);
    case M_ALONG_AXES: return celerity_neighborhood_along_axes(c->n[0], c->n[1], c->n[2]);
    default: return celerity_custom(shift_mapper, c);
    }
}

#define MAX_CASES 32
static mapper_case cases[MAX_CASES]; /* the custom mapper's user data lives until shutdown */

static void test_mappers(uint32_t dims, size_t r0, size_t r1, size_t r2, int* next_case) {
    size_t R[3] = {r0, r1, r2}, n = r0 * r1 * r2;
    double* host_in = malloc(n * sizeof(double));
    double* expected = malloc(n * sizeof(double));
    double* got = malloc(n * sizeof(double));
    for (size_t i = 0; i < r0; ++i)
        for (size_t j = 0; j < r1; ++j)
            for (size_t k = 0; k < r2; ++k) host_in[test_lin(R, i, j, k)] = init_value(i, j, k);
    celerity_buffer* in = test_buffer(dims, r0, r1, r2, sizeof(double), host_in, "mapper_in");
    celerity_buffer* out = test_buffer(dims, r0, r1, r2, sizeof(double), NULL, "mapper_out");
    size_t got_range[3] = {0, 0, 0};
    CHECK_OK(celerity_buffer_get_range(in, got_range));
    CHECK(got_range[0] == r0 && got_range[1] == r1 && got_range[2] == r2);

    static const celerity_subrange fixed_by_dims[4] = {
        {{0, 0, 0}, {1, 1, 1}}, {{5, 0, 0}, {7, 1, 1}}, {{3, 4, 0}, {5, 3, 1}}, {{1, 2, 1}, {3, 2, 2}}};
    static const size_t n_by_dims[4][3] = {{0, 0, 0}, {2, 0, 0}, {1, 2, 0}, {1, 1, 1}};
    for (int kind = M_ONE_TO_ONE; kind <= M_CUSTOM; ++kind) {
        for (uint32_t sd = 0; sd < (kind == M_SLICE ? dims : 1); ++sd) {
            CHECK(*next_case < MAX_CASES);
            mapper_case* c = &cases[(*next_case)++];
            memset(c, 0, sizeof *c);
            c->kind = kind;
            c->dims = dims;
            memcpy(c->R, R, sizeof R);
            c->fixed = fixed_by_dims[dims];
            c->slice_dim = sd;
            memcpy(c->n, n_by_dims[dims], sizeof c->n);
            c->shift = 4 - dims;

            char name[64];
            snprintf(name, sizeof name, "%s_%uD", mapper_names[kind], dims);
            celerity_cg* cg = test_cg(name);
            test_access(cg, in, CELERITY_ACCESS_READ, mapper_of(c));
            test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
            CHECK_OK(celerity_submit_parallel_for(cg, dims, R, NULL, mapper_kernel, c, NULL));

            for (size_t i = 0; i < r0; ++i)
                for (size_t j = 0; j < r1; ++j)
                    for (size_t k = 0; k < r2; ++k) {
                        size_t x[3] = {i, j, k};
                        expected[test_lin(R, i, j, k)] = compute(c, get_host, host_in, x);
                    }
            for (size_t e = 0; e < n; ++e) got[e] = -12345.0;
            CHECK_OK(test_read(out, NULL, got, n * sizeof(double)));
            size_t bad = 0;
            for (size_t e = 0; e < n; ++e) {
                if (got[e] != expected[e] && bad++ < 3) {
                    fprintf(stderr, "%s: element %zu is %g, expected %g\n", name, e, got[e], expected[e]);
                }
            }
            CHECK(bad == 0);
        }
    }
    /* The input was only read. */
    CHECK_OK(test_read(in, NULL, got, n * sizeof(double)));
    CHECK(memcmp(got, host_in, n * sizeof(double)) == 0);
    CHECK_OK(celerity_buffer_release(in));
    CHECK_OK(celerity_buffer_release(out));
    free(host_in);
    free(expected);
    free(got);
}

/* ---- 0-D buffers --------------------------------------------------------------------------- */

static int scalar_update(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    double* v = (double*)celerity_accessor_ptr(&ctx->accessors[0], 0, 0, 0);
    *v = *v * 2 + 1;
    return 0;
}

static int scalar_set7(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    *(double*)celerity_accessor_ptr(&ctx->accessors[0], 0, 0, 0) = 7.0;
    return 0;
}

/* out[i] = scalar + i, reading a 0-D buffer through ALL from a 1-D kernel. */
static int broadcast_scalar(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    double s = *(const double*)celerity_accessor_ptr(&ctx->accessors[0], 0, 0, 0);
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 1, i, j, k) = s + (double)i;
    return 0;
}

static void test_scalars(void) {
    double init = 42.0, got = 0;
    celerity_buffer* a = test_buffer(0, 1, 1, 1, sizeof(double), &init, "scalar_a");
    init = -1; /* host_init was copied before buffer_create returned */
    size_t r[3] = {0, 0, 0};
    CHECK_OK(celerity_buffer_get_range(a, r));
    CHECK(r[0] == 1 && r[1] == 1 && r[2] == 1);
    CHECK_OK(test_read(a, NULL, &got, sizeof got));
    CHECK(got == 42.0);

    celerity_cg* cg = test_cg("scalar_update");
    test_access(cg, a, CELERITY_ACCESS_READ_WRITE, celerity_all());
    CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, scalar_update, NULL,
                                       NULL));
    CHECK_OK(test_read(a, NULL, &got, sizeof got));
    CHECK(got == 85.0);

    /* Uninitialised 0-D buffer written by a host task, then broadcast to a 1-D kernel. */
    celerity_buffer* b = test_buffer(0, 1, 1, 1, sizeof(double), NULL, "scalar_b");
    cg = test_cg("scalar_set7");
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_all());
    CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ONCE, 0, NULL, NULL, scalar_set7, NULL, NULL));
    celerity_buffer* out = test_buffer(1, 100, 1, 1, sizeof(double), NULL, "broadcast_out");
    cg = test_cg("broadcast_scalar");
    test_access(cg, b, CELERITY_ACCESS_READ, celerity_all());
    test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {100, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, broadcast_scalar, NULL, NULL));
    double v[100];
    CHECK_OK(test_read(out, NULL, v, sizeof v));
    for (int i = 0; i < 100; ++i) CHECK(v[i] == 7.0 + i);
    CHECK_OK(test_read(b, NULL, &got, sizeof got));
    CHECK(got == 7.0);
    CHECK_OK(celerity_buffer_release(a));
    CHECK_OK(celerity_buffer_release(b));
    CHECK_OK(celerity_buffer_release(out));
}

/* ---- buffers without host_init, odd element types, release while work is pending ----------- */

static int fill_init_value(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 0, i, j, k) = init_value(i, j, k);
    return 0;
}

static void test_uninitialised(uint32_t dims, size_t r0, size_t r1, size_t r2) {
    size_t R[3] = {r0, r1, r2}, n = r0 * r1 * r2;
    celerity_buffer* b = test_buffer(dims, r0, r1, r2, sizeof(double), NULL, NULL);
    CHECK_OK(celerity_buffer_set_name(b, "uninitialised"));
    CHECK_OK(celerity_buffer_set_name(b, "renamed"));
    size_t got_range[3] = {0, 0, 0};
    CHECK_OK(celerity_buffer_get_range(b, got_range));
    CHECK(memcmp(got_range, R, sizeof R) == 0);
    celerity_cg* cg = test_cg("fill_init_value");
    test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, dims, R, NULL, fill_init_value, NULL, NULL));
    double* got = malloc(n * sizeof(double));
    CHECK_OK(test_read(b, NULL, got, n * sizeof(double)));
    size_t bad = 0;
    for (size_t i = 0; i < r0; ++i)
        for (size_t j = 0; j < r1; ++j)
            for (size_t k = 0; k < r2; ++k) bad += got[test_lin(R, i, j, k)] != init_value(i, j, k);
    CHECK(bad == 0);
    free(got);
    CHECK_OK(celerity_buffer_release(b));
}

typedef struct {
    float x, y, z;
} vec3;

static int vec3_update(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    if (ctx->accessors[0].elem_size != sizeof(vec3)) kernel_error("vec3 elem_size", ctx);
    TEST_FOR_CHUNK(ctx, i, j, k) {
        vec3* p = (vec3*)celerity_accessor_ptr(&ctx->accessors[0], i, j, k);
        p->x += p->y * p->z;
        p->z = (float)(i * 100 + j);
    }
    return 0;
}

static void test_vec3(void) {
    enum { R0 = 13, R1 = 7 };
    vec3 host[R0 * R1], got[R0 * R1];
    for (int e = 0; e < R0 * R1; ++e) host[e] = (vec3){(float)e, (float)(e % 5), 2.0f};
    size_t range[3] = {R0, R1, 1};
    celerity_buffer* b = NULL;
    CHECK_OK(celerity_buffer_create(2, range, sizeof(vec3), _Alignof(vec3), host, &b));
    celerity_cg* cg = test_cg("vec3_update");
    test_access(cg, b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, 2, range, NULL, vec3_update, NULL, NULL));
    CHECK_OK(test_read(b, NULL, got, sizeof got));
    for (int i = 0; i < R0; ++i)
        for (int j = 0; j < R1; ++j) {
            int e = i * R1 + j;
            CHECK(got[e].x == host[e].x + host[e].y * 2.0f && got[e].y == host[e].y &&
                  got[e].z == (float)(i * 100 + j));
        }
    CHECK_OK(celerity_buffer_release(b));
}

static int write_twice_index(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 0, i, j, k) = 2.0 * (double)i;
    return 0;
}

/* res[i] = tmp[i-1] + tmp[i] + tmp[i+1] (clamped). */
static int sum3(const celerity_kernel_context* ctx, void* user_data) {
    size_t n = *(const size_t*)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) {
        double s = TEST_ELEM(double, ctx, 0, i, j, k);
        if (i > 0) s += TEST_ELEM(double, ctx, 0, i - 1, j, k);
        if (i + 1 < n) s += TEST_ELEM(double, ctx, 0, i + 1, j, k);
        TEST_ELEM(double, ctx, 1, i, j, k) = s;
    }
    return 0;
}

static void test_release_pending(void) {
    enum { N = 300 };
    static const size_t n = N;
    size_t range[3] = {N, 1, 1};
    celerity_buffer* tmp = test_buffer(1, N, 1, 1, sizeof(double), NULL, "tmp");
    celerity_buffer* res = test_buffer(1, N, 1, 1, sizeof(double), NULL, "res");
    celerity_cg* cg = test_cg("write_tmp");
    test_access(cg, tmp, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, write_twice_index, NULL, NULL));
    cg = test_cg("read_tmp");
    test_access(cg, tmp, CELERITY_ACCESS_READ, celerity_neighborhood(1, 0, 0));
    test_access(cg, res, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, sum3, (void*)&n, NULL));
    CHECK_OK(celerity_buffer_release(tmp)); /* both tasks may still be pending */
    double got[N];
    CHECK_OK(test_read(res, NULL, got, sizeof got));
    for (size_t i = 0; i < N; ++i) {
        double want = 2.0 * (double)i + (i > 0 ? 2.0 * (double)(i - 1) : 0) + (i + 1 < N ? 2.0 * (double)(i + 1) : 0);
        CHECK(got[i] == want);
    }
    /* Released right after a write that nobody reads, and right after creation. */
    celerity_buffer* lone = test_buffer(2, 40, 40, 1, sizeof(double), NULL, "lone");
    cg = test_cg("write_lone");
    test_access(cg, lone, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range2[3] = {40, 40, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 2, range2, NULL, fill_init_value, NULL, NULL));
    CHECK_OK(celerity_buffer_release(lone));
    double init[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK_OK(celerity_buffer_release(test_buffer(3, 2, 2, 2, sizeof(double), init, "unused")));
    CHECK_OK(celerity_wait());
    CHECK_OK(celerity_buffer_release(res));
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);
    test_scalars();
    test_uninitialised(1, 1000, 1, 1);
    test_uninitialised(2, 33, 17, 1);
    test_uninitialised(3, 9, 8, 7);
    test_vec3();
    int next_case = 0;
    test_mappers(1, 64, 1, 1, &next_case);
    test_mappers(2, 16, 12, 1, &next_case);
    test_mappers(3, 6, 5, 4, &next_case);
    test_release_pending();
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_buffers");
}

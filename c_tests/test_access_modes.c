/* Every access mode, checked against a serial model of the buffer:
 * READ leaves the buffer unchanged; WRITE keeps every element the kernel does not write, also
 * inside the accessed region (so a device must receive the old contents first); READ_WRITE
 * updates in place; DISCARD_WRITE and DISCARD_READ_WRITE overwrite their region and leave the
 * rest of the buffer alone. Partial writes use a global offset, sub-box mappers and kernels
 * that skip elements; a neighbourhood read after each step moves data between devices. */
#include <stdatomic.h>

#include "test_runtime.h"

enum { N = 200, R0 = 24, R1 = 18 };

static atomic_int kernel_errors;

typedef struct {
    int mode;      /* which update (see kernel) */
    double value;  /* a constant mixed into the update */
} update;

/* One kernel for all 1-D modes; accessor 0 is the buffer under test, accessor 1 (if any) a copy. */
static int kernel_1d(const celerity_kernel_context* ctx, void* user_data) {
    const update* u = (const update*)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) {
        double* p = (double*)celerity_accessor_ptr(&ctx->accessors[0], i, j, k);
        switch (u->mode) {
        case 0: /* READ: copy to accessor 1 */ TEST_ELEM(double, ctx, 1, i, j, k) = *p + u->value; break;
        case 1: /* WRITE, only every third element */
            if (i % 3 == 0) *p = u->value + (double)i;
            break;
        case 2: /* READ_WRITE */ *p = *p * 2 + u->value; break;
        case 3: /* DISCARD_WRITE: all elements of the chunk */ *p = u->value - (double)i; break;
        case 4: /* DISCARD_READ_WRITE: write, then read back own writes into accessor 1 */
            *p = u->value * (double)i;
            TEST_ELEM(double, ctx, 1, i, j, k) = *(volatile double*)p + 1;
            break;
        default: atomic_fetch_add(&kernel_errors, 1);
        }
    }
    return 0;
}

static void submit_1d(const char* name, celerity_buffer* buf, celerity_access_mode mode, celerity_buffer* aux,
                      size_t begin, size_t end, update* u) {
    celerity_cg* cg = test_cg(name);
    test_access(cg, buf, mode, celerity_one_to_one());
    if (aux != NULL) test_access(cg, aux, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {end - begin, 1, 1}, offset[3] = {begin, 0, 0};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, offset, kernel_1d, u, NULL));
}

/* A full-range neighbourhood read of `buf` into `copy`, so that the next step needs data that
 * other devices hold: copy[i] = buf[i-1] + 10 * buf[i] + 100 * buf[i+1]. */
static int mix3(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) {
        double s = 10 * TEST_ELEM(double, ctx, 0, i, j, k);
        if (i > 0) s += TEST_ELEM(double, ctx, 0, i - 1, j, k);
        if (i + 1 < N) s += 100 * TEST_ELEM(double, ctx, 0, i + 1, j, k);
        TEST_ELEM(double, ctx, 1, i, j, k) = s;
    }
    return 0;
}

static void check_1d(const char* step, celerity_buffer* buf, const double* model, celerity_buffer* copy) {
    double got[N];
    for (int i = 0; i < N; ++i) got[i] = -777;
    CHECK_OK(test_read(buf, NULL, got, sizeof got));
    int bad = 0;
    for (int i = 0; i < N; ++i) {
        if (got[i] != model[i] && bad++ < 3) fprintf(stderr, "%s: a[%d] = %g, expected %g\n", step, i, got[i], model[i]);
    }
    CHECK(bad == 0);
    /* Spread the data over the devices again. */
    celerity_cg* cg = test_cg("mix3");
    test_access(cg, buf, CELERITY_ACCESS_READ, celerity_neighborhood(1, 0, 0));
    test_access(cg, copy, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {N, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, mix3, NULL, NULL));
    CHECK_OK(test_read(copy, NULL, got, sizeof got));
    bad = 0;
    for (int i = 0; i < N; ++i) {
        double s = 10 * model[i] + (i > 0 ? model[i - 1] : 0) + (i + 1 < N ? 100 * model[i + 1] : 0);
        bad += got[i] != s;
    }
    CHECK(bad == 0);
}

static void test_1d(void) {
    double model[N], aux_model[N];
    for (int i = 0; i < N; ++i) model[i] = (double)(i * 7 % 23);
    celerity_buffer* a = test_buffer(1, N, 1, 1, sizeof(double), model, "a");
    celerity_buffer* aux = test_buffer(1, N, 1, 1, sizeof(double), NULL, "aux");
    celerity_buffer* copy = test_buffer(1, N, 1, 1, sizeof(double), NULL, "copy");
    static update u[16];
    int next = 0;

    /* READ over the whole range: a unchanged, aux = a + 0.5. */
    u[next] = (update){0, 0.5};
    submit_1d("read", a, CELERITY_ACCESS_READ, aux, 0, N, &u[next++]);
    CHECK_OK(test_read(aux, NULL, aux_model, sizeof aux_model));
    for (int i = 0; i < N; ++i) CHECK(aux_model[i] == model[i] + 0.5);
    check_1d("read", a, model, copy);

    /* WRITE over the whole range, writing every third element: the others keep their values. */
    u[next] = (update){1, 1000};
    submit_1d("write_every_third", a, CELERITY_ACCESS_WRITE, NULL, 0, N, &u[next++]);
    for (int i = 0; i < N; i += 3) model[i] = 1000 + i;
    check_1d("write_every_third", a, model, copy);

    /* WRITE over [37, 151) with a global offset, every third element. */
    u[next] = (update){1, 2000};
    submit_1d("write_partial", a, CELERITY_ACCESS_WRITE, NULL, 37, 151, &u[next++]);
    for (int i = 37; i < 151; ++i)
        if (i % 3 == 0) model[i] = 2000 + i;
    check_1d("write_partial", a, model, copy);

    /* READ_WRITE over [0, 120) and then over [80, 200). */
    u[next] = (update){2, 1};
    submit_1d("read_write_lo", a, CELERITY_ACCESS_READ_WRITE, NULL, 0, 120, &u[next++]);
    u[next] = (update){2, 3};
    submit_1d("read_write_hi", a, CELERITY_ACCESS_READ_WRITE, NULL, 80, N, &u[next++]);
    for (int i = 0; i < 120; ++i) model[i] = model[i] * 2 + 1;
    for (int i = 80; i < N; ++i) model[i] = model[i] * 2 + 3;
    check_1d("read_write", a, model, copy);

    /* DISCARD_WRITE over [10, 90): outside it the old values stay. */
    u[next] = (update){3, 5000};
    submit_1d("discard_write_partial", a, CELERITY_ACCESS_DISCARD_WRITE, NULL, 10, 90, &u[next++]);
    for (int i = 10; i < 90; ++i) model[i] = 5000 - i;
    check_1d("discard_write_partial", a, model, copy);

    /* DISCARD_WRITE over everything. */
    u[next] = (update){3, 300};
    submit_1d("discard_write_all", a, CELERITY_ACCESS_DISCARD_WRITE, NULL, 0, N, &u[next++]);
    for (int i = 0; i < N; ++i) model[i] = 300 - i;
    check_1d("discard_write_all", a, model, copy);

    /* DISCARD_READ_WRITE over [150, 200): the kernel reads its own writes. */
    u[next] = (update){4, 3};
    submit_1d("discard_read_write", a, CELERITY_ACCESS_DISCARD_READ_WRITE, aux, 150, N, &u[next++]);
    for (int i = 150; i < N; ++i) model[i] = 3.0 * i;
    double got_aux[N];
    CHECK_OK(test_read(aux, NULL, got_aux, sizeof got_aux));
    for (int i = 0; i < N; ++i) CHECK(got_aux[i] == (i >= 150 ? 3.0 * i + 1 : aux_model[i]));
    check_1d("discard_read_write", a, model, copy);

    CHECK_OK(celerity_buffer_release(a));
    CHECK_OK(celerity_buffer_release(aux));
    CHECK_OK(celerity_buffer_release(copy));
}

/* ---- 2-D: partial boxes through FIXED and offsets ------------------------------------------- */

/* Accessor 0 with the given mode; writes value*1000 + i*R1 + j where (i + j) % 2 == parity
 * (parity 2: everywhere), reading first for READ_WRITE. */
typedef struct {
    double value;
    int parity;
    int read_first;
} box_update;

static int box_kernel(const celerity_kernel_context* ctx, void* user_data) {
    const box_update* u = (const box_update*)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) {
        if (u->parity != 2 && (int)((i + j) % 2) != u->parity) continue;
        double* p = (double*)celerity_accessor_ptr(&ctx->accessors[0], i, j, k);
        *p = (u->read_first ? *p : 0) + u->value * 1000 + (double)(i * R1 + j);
    }
    return 0;
}

static void box_model(double* model, size_t o0, size_t o1, size_t r0, size_t r1, const box_update* u) {
    for (size_t i = o0; i < o0 + r0; ++i)
        for (size_t j = o1; j < o1 + r1; ++j) {
            if (u->parity != 2 && (int)((i + j) % 2) != u->parity) continue;
            double* p = &model[i * R1 + j];
            *p = (u->read_first ? *p : 0) + u->value * 1000 + (double)(i * R1 + j);
        }
}

static void check_2d(const char* step, celerity_buffer* b, const double* model) {
    static double got[R0 * R1];
    CHECK_OK(test_read(b, NULL, got, sizeof got));
    int bad = 0;
    for (int e = 0; e < R0 * R1; ++e)
        if (got[e] != model[e] && bad++ < 3) fprintf(stderr, "%s: [%d] = %g, expected %g\n", step, e, got[e], model[e]);
    CHECK(bad == 0);
    /* A sub-box fence too. */
    double sub[5 * 4];
    celerity_subrange sr = test_subrange(9, 7, 0, 5, 4, 1);
    CHECK_OK(test_read(b, &sr, sub, sizeof sub));
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 4; ++j) CHECK(sub[i * 4 + j] == model[(9 + i) * R1 + 7 + j]);
}

static void test_2d(void) {
    static double model[R0 * R1];
    for (int e = 0; e < R0 * R1; ++e) model[e] = (double)(e % 11);
    celerity_buffer* b = test_buffer(2, R0, R1, 1, sizeof(double), model, "b2");
    static box_update u[8];

    struct step {
        const char* name;
        celerity_access_mode mode;
        size_t o0, o1, r0, r1; /* kernel offset and range */
        box_update u;
    } steps[] = {
        {"write_checkerboard", CELERITY_ACCESS_WRITE, 0, 0, R0, R1, {1, 0, 0}},
        {"write_box_checkerboard", CELERITY_ACCESS_WRITE, 5, 3, 11, 9, {2, 1, 0}},
        {"read_write_box", CELERITY_ACCESS_READ_WRITE, 2, 6, 20, 10, {3, 2, 1}},
        {"discard_write_box", CELERITY_ACCESS_DISCARD_WRITE, 12, 0, 12, 18, {4, 2, 0}},
        {"discard_read_write_box", CELERITY_ACCESS_DISCARD_READ_WRITE, 0, 1, 7, 5, {5, 2, 0}},
        {"read_write_all", CELERITY_ACCESS_READ_WRITE, 0, 0, R0, R1, {6, 2, 1}},
    };
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; ++s) {
        u[s] = steps[s].u;
        celerity_cg* cg = test_cg(steps[s].name);
        test_access(cg, b, steps[s].mode, celerity_one_to_one());
        size_t range[3] = {steps[s].r0, steps[s].r1, 1}, offset[3] = {steps[s].o0, steps[s].o1, 0};
        CHECK_OK(celerity_cg_hint_split_2d(cg));
        CHECK_OK(celerity_submit_parallel_for(cg, 2, range, offset, box_kernel, &u[s], NULL));
        box_model(model, steps[s].o0, steps[s].o1, steps[s].r0, steps[s].r1, &u[s]);
        check_2d(steps[s].name, b, model);
    }

    /* WRITE through a FIXED box from a single-item kernel: the box's other elements keep their values. */
    static box_update one = {9, 2, 0};
    celerity_cg* cg = test_cg("write_fixed_box");
    test_access(cg, b, CELERITY_ACCESS_WRITE, celerity_fixed(test_subrange(3, 3, 0, 6, 6, 1)));
    size_t range[3] = {1, 1, 1}, offset[3] = {4, 5, 0};
    CHECK_OK(celerity_submit_parallel_for(cg, 2, range, offset, box_kernel, &one, NULL));
    box_model(model, 4, 5, 1, 1, &one);
    check_2d("write_fixed_box", b, model);
    CHECK_OK(celerity_buffer_release(b));
}

int main(int argc, char** argv) {
    test_init(&argc, &argv);
    test_1d();
    test_2d();
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_access_modes");
}

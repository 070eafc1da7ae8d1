/* Synchronisation and scheduling controls: celerity_wait and celerity_barrier return after all
 * submitted work finished, celerity_flush, celerity_set_lookahead NONE / AUTO / INFINITE and the
 * hints (split_2d, oversubscribe, constrain_split, launch_only) all give the serial result, and a chain of
 * 200 small tasks exercises horizons. */
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int kernel_errors;
static atomic_long items_done;
static celerity_runtime_info info;

enum { N1 = 512, STEPS1 = 20, R0 = 48, R1 = 40, STEPS2 = 8 };
static const int64_t MOD = 1000003;

/* ---- a 1-D and a 2-D stencil workload ----------------------------------------------------- */

enum { HINT_NONE, HINT_SPLIT_2D, HINT_OVERSUBSCRIBE, HINT_CONSTRAIN, HINT_ALL };
static const char* const hint_names[] = {"none", "split_2d", "oversubscribe", "constrain_split", "all"};

typedef struct {
    int64_t step;
    size_t granularity[3]; /* chunks must be multiples of this (1 when unconstrained) */
} stencil_arg;

static void check_granularity(const celerity_kernel_context* ctx, const stencil_arg* a) {
    for (int d = 0; d < 3; ++d) {
        if (ctx->chunk.offset[d] % a->granularity[d] != 0 || ctx->chunk.range[d] % a->granularity[d] != 0) {
            if (atomic_fetch_add(&kernel_errors, 1) < 5)
                fprintf(stderr, "chunk dim %d offset %zu range %zu not a multiple of %zu\n", d, ctx->chunk.offset[d],
                        ctx->chunk.range[d], a->granularity[d]);
        }
    }
}

static int stencil_1d(const celerity_kernel_context* ctx, void* user_data) {
    const stencil_arg* a = (const stencil_arg*)user_data;
    check_granularity(ctx, a);
    TEST_FOR_CHUNK(ctx, i, j, k) {
        int64_t s = 2 * TEST_ELEM(int64_t, ctx, 0, i, j, k) + a->step;
        if (i > 0) s += TEST_ELEM(int64_t, ctx, 0, i - 1, j, k);
        if (i + 1 < N1) s += TEST_ELEM(int64_t, ctx, 0, i + 1, j, k);
        TEST_ELEM(int64_t, ctx, 1, i, j, k) = s % MOD;
    }
    atomic_fetch_add(&items_done, (long)ctx->chunk.range[0]);
    return 0;
}

static int stencil_2d(const celerity_kernel_context* ctx, void* user_data) {
    const stencil_arg* a = (const stencil_arg*)user_data;
    check_granularity(ctx, a);
    TEST_FOR_CHUNK(ctx, i, j, k) {
        int64_t s = 4 * TEST_ELEM(int64_t, ctx, 0, i, j, k) + a->step;
        if (i > 0) s += TEST_ELEM(int64_t, ctx, 0, i - 1, j, k);
        if (i + 1 < R0) s += 3 * TEST_ELEM(int64_t, ctx, 0, i + 1, j, k);
        if (j > 0) s += 5 * TEST_ELEM(int64_t, ctx, 0, i, j - 1, k);
        if (j + 1 < R1) s += 7 * TEST_ELEM(int64_t, ctx, 0, i, j + 1, k);
        TEST_ELEM(int64_t, ctx, 1, i, j, k) = s % MOD;
    }
    return 0;
}

static void apply_hint(celerity_cg* cg, int hint, stencil_arg* a, uint32_t dims) {
    for (int d = 0; d < 3; ++d) a->granularity[d] = 1;
    if (hint == HINT_SPLIT_2D || hint == HINT_ALL) CHECK_OK(celerity_cg_hint_split_2d(cg));
    if (hint == HINT_OVERSUBSCRIBE || hint == HINT_ALL) CHECK_OK(celerity_cg_hint_oversubscribe(cg, 3));
    if (hint == HINT_ALL) CHECK_OK(celerity_cg_hint_launch_only(cg)); /* host devices ignore it */
    if (hint == HINT_CONSTRAIN || hint == HINT_ALL) {
        a->granularity[0] = 8;
        if (dims == 2) a->granularity[1] = 4;
        CHECK_OK(celerity_cg_constrain_split(cg, a->granularity));
    }
}

static int64_t serial_1d[N1], serial_2d[R0 * R1];

static void compute_serial(void) {
    static int64_t a[N1], b[N1];
    for (int i = 0; i < N1; ++i) a[i] = i % 17;
    for (int s = 0; s < STEPS1; ++s) {
        for (int i = 0; i < N1; ++i) b[i] = (2 * a[i] + s + (i > 0 ? a[i - 1] : 0) + (i + 1 < N1 ? a[i + 1] : 0)) % MOD;
        memcpy(a, b, sizeof a);
    }
    memcpy(serial_1d, a, sizeof a);
    static int64_t c[R0 * R1], d[R0 * R1];
    for (int e = 0; e < R0 * R1; ++e) c[e] = e % 23;
    for (int s = 0; s < STEPS2; ++s) {
        for (int i = 0; i < R0; ++i)
            for (int j = 0; j < R1; ++j) {
                int64_t v = 4 * c[i * R1 + j] + s;
                if (i > 0) v += c[(i - 1) * R1 + j];
                if (i + 1 < R0) v += 3 * c[(i + 1) * R1 + j];
                if (j > 0) v += 5 * c[i * R1 + j - 1];
                if (j + 1 < R1) v += 7 * c[i * R1 + j + 1];
                d[i * R1 + j] = v % MOD;
            }
        memcpy(c, d, sizeof c);
    }
    memcpy(serial_2d, c, sizeof c);
}

static void run_workload(const char* label, int hint) {
    static stencil_arg args1[STEPS1], args2[STEPS2];
    int64_t init1[N1];
    static int64_t init2[R0 * R1], got2[R0 * R1];
    for (int i = 0; i < N1; ++i) init1[i] = i % 17;
    for (int e = 0; e < R0 * R1; ++e) init2[e] = e % 23;
    celerity_buffer* a = test_buffer(1, N1, 1, 1, sizeof(int64_t), init1, "a");
    celerity_buffer* b = test_buffer(1, N1, 1, 1, sizeof(int64_t), NULL, "b");
    celerity_buffer* c = test_buffer(2, R0, R1, 1, sizeof(int64_t), init2, "c");
    celerity_buffer* d = test_buffer(2, R0, R1, 1, sizeof(int64_t), NULL, "d");
    size_t r1[3] = {N1, 1, 1}, r2[3] = {R0, R1, 1};
    for (int s = 0; s < STEPS1; ++s) {
        celerity_cg* cg = test_cg("stencil_1d");
        test_access(cg, a, CELERITY_ACCESS_READ, celerity_neighborhood(1, 0, 0));
        test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        args1[s].step = s;
        apply_hint(cg, hint, &args1[s], 1);
        CHECK_OK(celerity_submit_parallel_for(cg, 1, r1, NULL, stencil_1d, &args1[s], NULL));
        celerity_buffer* t = a;
        a = b, b = t;
        if (s < STEPS2) { /* interleave the 2-D workload */
            cg = test_cg("stencil_2d");
            test_access(cg, c, CELERITY_ACCESS_READ, celerity_neighborhood_along_axes(1, 1, 0));
            test_access(cg, d, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
            args2[s].step = s;
            apply_hint(cg, hint, &args2[s], 2);
            CHECK_OK(celerity_submit_parallel_for(cg, 2, r2, NULL, stencil_2d, &args2[s], NULL));
            t = c;
            c = d, d = t;
        }
    }
    int64_t got1[N1];
    CHECK_OK(test_read(a, NULL, got1, sizeof got1));
    CHECK_OK(test_read(c, NULL, got2, sizeof got2));
    int bad1 = memcmp(got1, serial_1d, sizeof got1) != 0, bad2 = memcmp(got2, serial_2d, sizeof got2) != 0;
    if (bad1 || bad2) fprintf(stderr, "workload %s / hint %s: 1-D %s, 2-D %s\n", label, hint_names[hint],
                              bad1 ? "WRONG" : "ok", bad2 ? "WRONG" : "ok");
    CHECK(!bad1 && !bad2);
    CHECK_OK(celerity_buffer_release(a));
    CHECK_OK(celerity_buffer_release(b));
    CHECK_OK(celerity_buffer_release(c));
    CHECK_OK(celerity_buffer_release(d));
}

/* ---- wait / barrier / flush ---------------------------------------------------------------- */

static void test_wait_barrier_flush(void) {
    static stencil_arg arg = {0, {1, 1, 1}};
    static int64_t zeros[N1];
    size_t r1[3] = {N1, 1, 1};
    CHECK_OK(celerity_wait()); /* nothing pending */
    CHECK_OK(celerity_barrier());
    CHECK_OK(celerity_flush());
    celerity_buffer* a = test_buffer(1, N1, 1, 1, sizeof(int64_t), zeros, "wa");
    celerity_buffer* b = test_buffer(1, N1, 1, 1, sizeof(int64_t), zeros, "wb");
    for (int phase = 0; phase < 3; ++phase) {
        atomic_store(&items_done, 0);
        for (int s = 0; s < 10; ++s) {
            celerity_cg* cg = test_cg("counted");
            test_access(cg, a, CELERITY_ACCESS_READ, celerity_neighborhood(1, 0, 0));
            test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
            CHECK_OK(celerity_submit_parallel_for(cg, 1, r1, NULL, stencil_1d, &arg, NULL));
            celerity_buffer* t = a;
            a = b, b = t;
            if (phase == 2) CHECK_OK(celerity_flush());
        }
        if (phase == 1) {
            CHECK_OK(celerity_barrier());
        } else {
            CHECK_OK(celerity_wait());
        }
        /* Every item of every submitted kernel ran before wait / barrier returned (on several
         * nodes, this node's share). */
        long done = atomic_load(&items_done);
        if (info.num_nodes == 1) {
            CHECK(done == 10L * N1);
        } else {
            CHECK(done > 0 && done <= 10L * N1);
        }
    }
    CHECK_OK(celerity_buffer_release(a));
    CHECK_OK(celerity_buffer_release(b));
}

/* ---- a long chain --------------------------------------------------------------------------- */

enum { CHAIN = 200, NC = 64 };

static int add_step(const celerity_kernel_context* ctx, void* user_data) {
    int64_t t = (int64_t)(intptr_t)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int64_t, ctx, 0, i, j, k) += t;
    return 0;
}

static int rotate(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int64_t, ctx, 1, i, j, k) = TEST_ELEM(int64_t, ctx, 0, (i + 1) % NC, j, k);
    return 0;
}

static void test_chain(void) {
    int64_t model[NC], tmp[NC];
    for (int i = 0; i < NC; ++i) model[i] = i * 1000;
    celerity_buffer* a = test_buffer(1, NC, 1, 1, sizeof(int64_t), model, "chain_a");
    celerity_buffer* b = test_buffer(1, NC, 1, 1, sizeof(int64_t), NULL, "chain_b");
    size_t r[3] = {NC, 1, 1};
    for (int t = 0; t < CHAIN; ++t) {
        celerity_cg* cg = test_cg(t % 10 == 9 ? "rotate" : "add_step");
        if (t % 10 == 9) {
            test_access(cg, a, CELERITY_ACCESS_READ, celerity_all());
            test_access(cg, b, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
            CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, rotate, NULL, NULL));
            celerity_buffer* x = a;
            a = b, b = x;
            for (int i = 0; i < NC; ++i) tmp[i] = model[(i + 1) % NC];
            memcpy(model, tmp, sizeof model);
        } else {
            test_access(cg, a, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one());
            CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, add_step, (void*)(intptr_t)t, NULL));
            for (int i = 0; i < NC; ++i) model[i] += t;
        }
        if (t == CHAIN / 2) CHECK_OK(celerity_flush());
    }
    int64_t got[NC];
    CHECK_OK(test_read(a, NULL, got, sizeof got));
    CHECK(memcmp(got, model, sizeof got) == 0);
    CHECK_OK(celerity_buffer_release(a));
    CHECK_OK(celerity_buffer_release(b));
}

int main(int argc, char** argv) {
    info = test_init(&argc, &argv);
    compute_serial();
    test_wait_barrier_flush();
    static const struct {
        celerity_lookahead mode;
        const char* name;
    } modes[] = {{CELERITY_LOOKAHEAD_NONE, "lookahead none"},
                 {CELERITY_LOOKAHEAD_INFINITE, "lookahead infinite"},
                 {CELERITY_LOOKAHEAD_AUTO, "lookahead auto"}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; ++m) {
        CHECK_OK(celerity_set_lookahead(modes[m].mode));
        run_workload(modes[m].name, HINT_NONE);
        if (m == 1) test_chain();
    }
    for (int hint = HINT_SPLIT_2D; hint <= HINT_ALL; ++hint) run_workload("hints", hint);
    test_chain();
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_sync");
}

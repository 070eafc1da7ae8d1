/* The four host-task kinds (ON_MASTER_NODE, ONCE, DISTRIBUTED over 1-D and 2-D ranges,
 * COLLECTIVE in the default group and in created groups), mixed with device kernels so data
 * moves between host and devices in both directions, and the kernel-context fields (chunk,
 * global range and offset, device, node, counts) of kernels and host tasks. drop(user_data)
 * runs exactly once per submission. */
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int kernel_errors;
static celerity_runtime_info info;

#define KCHECK(cond)                                                                             \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            if (atomic_fetch_add(&kernel_errors, 1) < 10)                                        \
                fprintf(stderr, "%s:%d: in a kernel: %s failed\n", __FILE__, __LINE__, #cond);   \
        }                                                                                        \
    } while (0)

static atomic_int drops;
static void count_drop(void* user_data) {
    (void)user_data;
    atomic_fetch_add(&drops, 1);
}

/* Fields every host task context has. */
static void check_host_ctx(const celerity_kernel_context* ctx) {
    KCHECK(ctx->backend == CELERITY_BACKEND_HOST);
    KCHECK(ctx->device == 0);
    KCHECK(ctx->stream == NULL);
    KCHECK(ctx->node == info.node && ctx->num_nodes == info.num_nodes);
    KCHECK(ctx->num_reductions == 0 && ctx->num_host_objects == 0);
}

/* ---- ON_MASTER_NODE and ONCE --------------------------------------------------------------- */

enum { N = 500 };
static atomic_int master_runs, once_runs;

static int fill_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 0, i, j, k) = (double)(i % 17);
    return 0;
}

/* Sums buffer accessor 0 (whole 1-D buffer of N) into the 0-D accessor 1. */
static int master_sum(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    atomic_fetch_add(&master_runs, 1);
    check_host_ctx(ctx);
    KCHECK(ctx->node == 0);
    KCHECK(ctx->num_accessors == 2);
    double s = 0;
    for (size_t i = 0; i < N; ++i) s += *(const double*)celerity_accessor_ptr(&ctx->accessors[0], i, 0, 0);
    *(double*)celerity_accessor_ptr(&ctx->accessors[1], 0, 0, 0) = s;
    return 0;
}

static int once_task(const celerity_kernel_context* ctx, void* user_data) {
    atomic_fetch_add(&once_runs, 1);
    check_host_ctx(ctx);
    *(double*)celerity_accessor_ptr(&ctx->accessors[0], 0, 0, 0) = *(const double*)user_data;
    return 0;
}

static void test_master_and_once(void) {
    celerity_buffer* data = test_buffer(1, N, 1, 1, sizeof(double), NULL, "data");
    celerity_buffer* sum = test_buffer(0, 1, 1, 1, sizeof(double), NULL, "sum");
    celerity_cg* cg = test_cg("fill");
    test_access(cg, data, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {N, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, fill_kernel, NULL, count_drop));

    cg = test_cg("master_sum");
    test_access(cg, data, CELERITY_ACCESS_READ, celerity_all());
    test_access(cg, sum, CELERITY_ACCESS_DISCARD_WRITE, celerity_all());
    CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ON_MASTER_NODE, 0, NULL, NULL, master_sum, NULL,
                                       count_drop));
    double got = -1, want = 0;
    for (size_t i = 0; i < N; ++i) want += (double)(i % 17);
    CHECK_OK(test_read(sum, NULL, &got, sizeof got));
    CHECK(got == want);
    CHECK(atomic_load(&master_runs) == (info.node == 0 ? 1 : 0));

    static const double once_value = 123.25;
    cg = test_cg("once");
    test_access(cg, sum, CELERITY_ACCESS_DISCARD_WRITE, celerity_all());
    CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_ONCE, 0, NULL, NULL, once_task, (void*)&once_value,
                                       count_drop));
    CHECK_OK(test_read(sum, NULL, &got, sizeof got)); /* every node receives the value */
    CHECK(got == once_value);
    if (info.num_nodes == 1) CHECK(atomic_load(&once_runs) == 1);
    CHECK_OK(celerity_buffer_release(data));
    CHECK_OK(celerity_buffer_release(sum));
}

/* ---- DISTRIBUTED --------------------------------------------------------------------------- */

enum { D0 = 20, D1 = 15 };
static atomic_int covered[N];

typedef struct {
    uint32_t dims;
    size_t range[3];
} dist_case;

static int distributed_task(const celerity_kernel_context* ctx, void* user_data) {
    const dist_case* c = (const dist_case*)user_data;
    check_host_ctx(ctx);
    KCHECK(ctx->chunk.dims == c->dims);
    for (int d = 0; d < 3; ++d) {
        KCHECK(ctx->chunk.global_range[d] == c->range[d]);
        KCHECK(ctx->chunk.offset[d] + ctx->chunk.range[d] <= c->range[d]);
        KCHECK(ctx->global_offset[d] == 0);
    }
    TEST_FOR_CHUNK(ctx, i, j, k) {
        atomic_fetch_add(&covered[test_lin(c->range, i, j, k)], 1);
        TEST_ELEM(double, ctx, 0, i, j, k) = (double)(i * 1000 + j);
    }
    return 0;
}

/* out[i, j] = in[i, j] * 2 on the devices. */
static int double_kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(double, ctx, 1, i, j, k) = 2 * TEST_ELEM(double, ctx, 0, i, j, k);
    return 0;
}

static void test_distributed(uint32_t dims, size_t r0, size_t r1) {
    static dist_case cases[2];
    dist_case* c = &cases[dims - 1];
    c->dims = dims;
    c->range[0] = r0, c->range[1] = r1, c->range[2] = 1;
    size_t n = r0 * r1;
    for (size_t e = 0; e < n; ++e) atomic_store(&covered[e], 0);
    celerity_buffer* in = test_buffer(dims, r0, r1, 1, sizeof(double), NULL, "dist_in");
    celerity_buffer* out = test_buffer(dims, r0, r1, 1, sizeof(double), NULL, "dist_out");
    celerity_cg* cg = test_cg("distributed");
    test_access(cg, in, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_DISTRIBUTED, dims, c->range, NULL, distributed_task, c,
                                       count_drop));
    cg = test_cg("double");
    test_access(cg, in, CELERITY_ACCESS_READ, celerity_one_to_one());
    test_access(cg, out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, dims, c->range, NULL, double_kernel, NULL, count_drop));
    double got[N];
    CHECK_OK(test_read(out, NULL, got, n * sizeof(double)));
    for (size_t i = 0; i < r0; ++i)
        for (size_t j = 0; j < r1; ++j) CHECK(got[i * r1 + j] == 2.0 * (double)(i * 1000 + j));
    if (info.num_nodes == 1) {
        size_t bad = 0;
        for (size_t e = 0; e < n; ++e) bad += atomic_load(&covered[e]) != 1;
        CHECK(bad == 0);
    }
    CHECK_OK(celerity_buffer_release(in));
    CHECK_OK(celerity_buffer_release(out));
}

/* ---- COLLECTIVE ---------------------------------------------------------------------------- */

typedef struct {
    int log[16];
    atomic_int count;
    atomic_int in_flight;
} group_log;

typedef struct {
    group_log* log;
    int id;
} collective_arg;

static int collective_task(const celerity_kernel_context* ctx, void* user_data) {
    const collective_arg* a = (const collective_arg*)user_data;
    check_host_ctx(ctx);
    if (ctx->chunk.dims == 1) {
        KCHECK(ctx->chunk.offset[0] == info.node && ctx->chunk.range[0] == 1);
        KCHECK(ctx->chunk.global_range[0] == info.num_nodes);
    }
    KCHECK(atomic_fetch_add(&a->log->in_flight, 1) == 0); /* serialised per group */
    /* Reads the whole 1-D buffer (accessor 0): element i is i. */
    for (size_t i = 0; i < N; ++i) KCHECK(*(const double*)celerity_accessor_ptr(&ctx->accessors[0], i, 0, 0) == (double)i);
    int slot = atomic_fetch_add(&a->log->count, 1);
    if (slot < 16) a->log->log[slot] = a->id;
    atomic_fetch_sub(&a->log->in_flight, 1);
    return 0;
}

static void test_collective(void) {
    static double init[N];
    for (int i = 0; i < N; ++i) init[i] = i;
    celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(double), init, "collective_in");
    celerity_collective_group *g1 = NULL, *g2 = NULL;
    CHECK_OK(celerity_collective_group_create(&g1));
    CHECK_OK(celerity_collective_group_create(&g2));
    static group_log logs[3]; /* default, g1, g2 */
    static collective_arg args[12];
    celerity_collective_group* groups[3] = {NULL, g1, g2};
    for (int t = 0; t < 12; ++t) {
        int g = t % 3;
        args[t].log = &logs[g];
        args[t].id = t;
        char name[32];
        snprintf(name, sizeof name, "collective_%d", t);
        celerity_cg* cg = test_cg(name);
        test_access(cg, b, CELERITY_ACCESS_READ, celerity_all());
        CHECK_OK(celerity_submit_host_task(cg, CELERITY_HOST_TASK_COLLECTIVE, 0, NULL, groups[g], collective_task,
                                           &args[t], count_drop));
    }
    CHECK_OK(celerity_collective_group_release(g1)); /* tasks in g1 may still be pending */
    CHECK_OK(celerity_wait());
    for (int g = 0; g < 3; ++g) {
        CHECK(atomic_load(&logs[g].count) == 4);
        for (int s = 0; s < 4; ++s) CHECK(logs[g].log[s] == g + 3 * s);
    }
    CHECK_OK(celerity_collective_group_release(g2));
    CHECK_OK(celerity_buffer_release(b));
}

/* ---- kernel context of device kernels ------------------------------------------------------ */

typedef struct {
    uint32_t dims;
    size_t range[3], offset[3];
    atomic_int* hits;         /* per element of the range */
    atomic_int devices_used;  /* bit per device */
    atomic_int chunks;
} ctx_case;

static int ctx_kernel(const celerity_kernel_context* ctx, void* user_data) {
    ctx_case* c = (ctx_case*)user_data;
    KCHECK(ctx->backend == CELERITY_BACKEND_HOST && ctx->stream == NULL);
    KCHECK(ctx->device < info.num_devices);
    KCHECK(ctx->node == info.node && ctx->num_nodes == info.num_nodes);
    KCHECK(ctx->num_accessors == 1 && ctx->num_reductions == 0 && ctx->num_host_objects == 0);
    KCHECK(ctx->mpi_comm == NULL);
    KCHECK(ctx->chunk.dims == c->dims);
    for (int d = 0; d < 3; ++d) {
        KCHECK(ctx->global_offset[d] == c->offset[d]);
        KCHECK(ctx->chunk.global_range[d] == c->range[d]);
        KCHECK(ctx->chunk.offset[d] >= c->offset[d]);
        KCHECK(ctx->chunk.offset[d] + ctx->chunk.range[d] <= c->offset[d] + c->range[d]);
        KCHECK(ctx->accessors[0].accessed.offset[d] == ctx->chunk.offset[d]);
        KCHECK(ctx->accessors[0].accessed.range[d] == ctx->chunk.range[d]);
    }
    atomic_fetch_or(&c->devices_used, 1 << (ctx->device & 31));
    atomic_fetch_add(&c->chunks, 1);
    TEST_FOR_CHUNK(ctx, i, j, k) {
        atomic_fetch_add(&c->hits[test_lin(c->range, i - c->offset[0], j - c->offset[1], k - c->offset[2])], 1);
        TEST_ELEM(int32_t, ctx, 0, i, j, k) = (int32_t)(i * 10000 + j * 100 + k);
    }
    return 0;
}

static void test_kernel_context(uint32_t dims, const size_t range[3], const size_t offset[3], int expect_all_devices) {
    static ctx_case cases[4];
    static int next = 0;
    ctx_case* c = &cases[next++];
    c->dims = dims;
    size_t n = 1, buf_range[3];
    for (int d = 0; d < 3; ++d) {
        c->range[d] = range[d];
        c->offset[d] = offset ? offset[d] : 0;
        buf_range[d] = c->range[d] + c->offset[d] + (d < (int)dims ? 2 : 0);
        n *= range[d];
    }
    c->hits = calloc(n, sizeof(atomic_int));
    size_t bn = buf_range[0] * buf_range[1] * buf_range[2];
    int32_t* host = malloc(bn * sizeof(int32_t));
    for (size_t e = 0; e < bn; ++e) host[e] = -1;
    celerity_buffer* b = test_buffer(dims, buf_range[0], buf_range[1], buf_range[2], sizeof(int32_t), host, "ctx");
    celerity_cg* cg = test_cg("ctx_kernel");
    test_access(cg, b, CELERITY_ACCESS_WRITE, celerity_one_to_one());
    CHECK_OK(celerity_submit_parallel_for(cg, dims, range, offset, ctx_kernel, c, count_drop));
    CHECK_OK(test_read(b, NULL, host, bn * sizeof(int32_t)));
    size_t bad = 0;
    for (size_t i = 0; i < buf_range[0]; ++i)
        for (size_t j = 0; j < buf_range[1]; ++j)
            for (size_t k = 0; k < buf_range[2]; ++k) {
                int inside = i >= c->offset[0] && i < c->offset[0] + range[0] && j >= c->offset[1] &&
                             j < c->offset[1] + range[1] && k >= c->offset[2] && k < c->offset[2] + range[2];
                int32_t want = inside ? (int32_t)(i * 10000 + j * 100 + k) : -1;
                bad += host[test_lin(buf_range, i, j, k)] != want;
            }
    CHECK(bad == 0);
    /* Each item ran once on this node (on several nodes: at most once here; the fenced buffer
     * above shows that all items ran somewhere). */
    bad = 0;
    for (size_t e = 0; e < n; ++e) bad += info.num_nodes == 1 ? atomic_load(&c->hits[e]) != 1 : atomic_load(&c->hits[e]) > 1;
    CHECK(bad == 0);
    if (expect_all_devices && info.num_devices <= 31) {
        int used = atomic_load(&c->devices_used);
        if (used != (1 << info.num_devices) - 1) {
            fprintf(stderr, "kernel of %zu items used device mask %#x with %u devices\n", n, (unsigned)used,
                    info.num_devices);
        }
        CHECK(used == (1 << info.num_devices) - 1);
    }
    free(c->hits);
    free(host);
    CHECK_OK(celerity_buffer_release(b));
}

int main(int argc, char** argv) {
    info = test_init(&argc, &argv);
    int submissions = 0;
    test_master_and_once();
    submissions += 3;
    test_distributed(1, N, 1);
    test_distributed(2, D0, D1);
    submissions += 4;
    test_collective();
    submissions += 12;
    size_t r1[3] = {400, 1, 1}, o1[3] = {5, 0, 0};
    test_kernel_context(1, r1, NULL, 1);
    test_kernel_context(1, r1, o1, 1);
    size_t r3[3] = {4, 5, 6}, o3[3] = {1, 2, 3};
    test_kernel_context(3, r3, o3, 0);
    size_t r2[3] = {64, 64, 1};
    test_kernel_context(2, r2, NULL, 1);
    submissions += 4;
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&drops) == submissions);
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_host_tasks");
}

/* Accessor boundary checking with the mistakes users make (issue 15):
 *   test_bounds_check MISTAKE CHECK
 * MISTAKE  matmul:  C = A * B with B mapped one_to_one instead of slice(0)
 *          stencil: out[i] = in[i] + in[i + 1] over the whole buffer (off by one at the end)
 *          swapped: C = A * B with A mapped slice(0) and B slice(1) (the dimensions swapped)
 * CHECK    on:    every chunk that used an accessor outside its declared box is reported once
 *                 (task, chunk, device, accessor, buffer, declared and offending box), the run
 *                 succeeds and out-of-bounds reads yield 0 (the zeroed scratch element);
 *          error: the same report, and the task fails with CELERITY_ERROR_ACCESS_PATTERN;
 *          off:   accessors carry no record and nothing is reported; the kernels then skip their
 *                 wrong accesses, which would be undefined behaviour.
 * The expected reports are derived from the chunks the kernels actually ran (a single chunk that
 * covers the whole buffer hides the matmul and swapped mistakes: nothing is outside its box), and
 * the complete log of the run is compared with them.
 * tests/cuda/bounds_check_cuda.cu includes this file with TEST_BOUNDS_CHECK_DEVICE_KERNELS
 * defined and its own `matmul` and `stencil` launchers, whose CUDA kernels use the same helpers
 * in device code (built with nvcc, run with devices=cuda; docs/gpu.md). */
#define _POSIX_C_SOURCE 200809L
/* ctest builds in Release (NDEBUG): switch the helpers' check on explicitly. */
#define CELERITY_ACCESSOR_BOUNDARY_CHECK 1
#include <stdint.h>
#ifdef __cplusplus
#include <atomic>
typedef std::atomic<int> atomic_int;
using std::atomic_fetch_add;
using std::atomic_load;
#else
#include <stdatomic.h>
#endif

#include "test_log.h"
#include "test_runtime.h"

enum { N = 16, S = 64, MAX_CHUNKS = 16 };

typedef struct recorded_chunk {
    size_t offset[3], range[3];
    uint32_t device;
    int saw_record;
} recorded_chunk;

static recorded_chunk chunks[MAX_CHUNKS];
static atomic_int num_chunks;

static void record_chunk(const celerity_kernel_context* ctx) {
    int c = atomic_fetch_add(&num_chunks, 1);
    if (c >= MAX_CHUNKS) return;
    for (int d = 0; d < 3; ++d) chunks[c].offset[d] = ctx->chunk.offset[d], chunks[c].range[d] = ctx->chunk.range[d];
    chunks[c].device = ctx->device;
    chunks[c].saw_record = ctx->num_accessors > 0 && ctx->accessors[0].record != NULL;
}

#ifdef TEST_BOUNDS_CHECK_DEVICE_KERNELS
/* Launchers of CUDA kernels, defined by the including file. */
static int matmul(const celerity_kernel_context* ctx, void* user_data);
static int stencil(const celerity_kernel_context* ctx, void* user_data);
#else
#define AT(acc, i, j) (*(double*)celerity_accessor_ptr(&ctx->accessors[acc], (i), (j), 0))

static int matmul(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    record_chunk(ctx);
    if (ctx->accessors[0].record == NULL) return 0;
    TEST_FOR_CHUNK(ctx, i, j, unused) {
        (void)unused;
        double sum = 0;
        for (size_t k = 0; k < N; ++k) sum += AT(0, i, k) * AT(1, k, j);
        AT(2, i, j) = sum;
    }
    return 0;
}

static int stencil(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    record_chunk(ctx);
    if (ctx->accessors[0].record == NULL) return 0;
    TEST_FOR_CHUNK(ctx, i, j, k) AT(1, i, 0) = AT(0, i, 0) + AT(0, i + 1, 0);
    return 0;
}
#endif

/* ---- the expected report, by replaying a chunk's accesses against its declared boxes ---- */

typedef struct replay {
    size_t declared_min[3], declared_max[3];
    int64_t min[3], max[3];
    uint64_t count;
} replay;

static void replay_init(replay* r, const size_t declared_min[3], const size_t declared_max[3]) {
    for (int d = 0; d < 3; ++d) {
        r->declared_min[d] = declared_min[d], r->declared_max[d] = declared_max[d];
        r->min[d] = INT64_MAX, r->max[d] = INT64_MIN;
    }
    r->count = 0;
}

static void replay_access(replay* r, size_t i, size_t j) {
    size_t idx[3] = {i, j, 0};
    int inside = 1;
    for (int d = 0; d < 3; ++d) inside = inside && idx[d] >= r->declared_min[d] && idx[d] < r->declared_max[d];
    if (inside) return;
    ++r->count;
    for (int d = 0; d < 3; ++d) {
        if ((int64_t)idx[d] < r->min[d]) r->min[d] = (int64_t)idx[d];
        if ((int64_t)idx[d] > r->max[d]) r->max[d] = (int64_t)idx[d];
    }
}

static void fmt_box(char* out, size_t n, uint32_t dims, const int64_t min[3], const int64_t max_exclusive[3]) {
    size_t used = 0;
    for (uint32_t d = 0; d < dims; ++d) {
        used += (size_t)snprintf(out + used, n - used, "%s[%lld,%lld)", d ? "x" : "", (long long)min[d],
                                 (long long)max_exclusive[d]);
    }
}

/* Appends "accessor A (MODE access of buffer B "NAME") used ... outside its declared box ..." */
static void append_violation(char* line, size_t n, int* any, uint32_t accessor, const char* mode, uint32_t bid,
                             const char* name, uint32_t dims, const replay* r) {
    if (r->count == 0) return;
    int64_t dmin[3], dmax[3], omax[3];
    for (int d = 0; d < 3; ++d) {
        dmin[d] = (int64_t)r->declared_min[d], dmax[d] = (int64_t)r->declared_max[d], omax[d] = r->max[d] + 1;
    }
    char offending[128], declared[128];
    fmt_box(offending, sizeof offending, dims, r->min, omax);
    fmt_box(declared, sizeof declared, dims, dmin, dmax);
    size_t used = strlen(line);
    snprintf(line + used, n - used,
             "%saccessor %u (%s access of buffer B%u \"%s\") used %s (%llu element access%s) outside its declared box %s",
             *any ? "; " : "", accessor, mode, bid, name, offending, (unsigned long long)r->count,
             r->count == 1 ? "" : "es", declared);
    *any = 1;
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* The report line of chunk `c`, or "" when it stayed inside its boxes. */
static void expected_line(const char* mistake, const celerity_runtime_info* info, const recorded_chunk* c, char* line,
                          size_t n) {
    size_t lo[3] = {c->offset[0], c->offset[1], 0}, hi[3] = {c->offset[0] + c->range[0], c->offset[1] + c->range[1], 1};
    char head[256];
    line[0] = '\0';
    int any = 0;
    char body[1024] = "";
    if (strcmp(mistake, "stencil") == 0) {
        size_t nb_lo[3] = {lo[0] > 0 ? lo[0] - 1 : 0, 0, 0}, nb_hi[3] = {min_sz(hi[0] + 1, S), 1, 1};
        replay in;
        replay_init(&in, nb_lo, nb_hi);
        for (size_t i = lo[0]; i < hi[0]; ++i) replay_access(&in, i, 0), replay_access(&in, i + 1, 0);
        append_violation(body, sizeof body, &any, 0, "read", 0, "in", 1, &in);
        snprintf(head, sizeof head, "Device kernel T1 \"stencil\" (chunk [%zu,%zu) on D%u): ", lo[0], hi[0], c->device);
    } else {
        int swapped = strcmp(mistake, "swapped") == 0;
        /* slice(1) of the chunk: its rows, all columns; slice(0): all rows, its columns */
        size_t rows_lo[3] = {lo[0], 0, 0}, rows_hi[3] = {hi[0], N, 1};
        size_t cols_lo[3] = {0, lo[1], 0}, cols_hi[3] = {N, hi[1], 1};
        replay a, b;
        if (swapped) {
            replay_init(&a, cols_lo, cols_hi);
            replay_init(&b, rows_lo, rows_hi);
        } else {
            replay_init(&a, rows_lo, rows_hi);
            replay_init(&b, lo, hi);
        }
        for (size_t i = lo[0]; i < hi[0]; ++i)
            for (size_t j = lo[1]; j < hi[1]; ++j)
                for (size_t k = 0; k < N; ++k) replay_access(&a, i, k), replay_access(&b, k, j);
        append_violation(body, sizeof body, &any, 0, "read", 0, "A", 2, &a);
        append_violation(body, sizeof body, &any, 1, "read", 1, "B", 2, &b);
        snprintf(head, sizeof head, "Device kernel T1 \"%s\" (chunk [%zu,%zu)x[%zu,%zu) on D%u): ", mistake, lo[0],
                 hi[0], lo[1], hi[1], c->device);
    }
    if (any) {
        snprintf(line, n, "[N%u] ERROR %s%s; the range mapper declares what each chunk may access", info->node, head,
                 body);
    }
}

int main(int argc, char** argv) {
    const char* mistake = argc > 2 ? argv[1] : "";
    const char* check = argc > 2 ? argv[2] : "";
    if ((strcmp(mistake, "matmul") != 0 && strcmp(mistake, "stencil") != 0 && strcmp(mistake, "swapped") != 0) ||
        (strcmp(check, "on") != 0 && strcmp(check, "error") != 0 && strcmp(check, "off") != 0)) {
        fprintf(stderr, "usage: %s matmul|stencil|swapped on|error|off\n", argv[0]);
        return 2;
    }
    printf("mistake: %s, check: %s\n", mistake, check);
    test_log log;
    test_log_begin(&log);
    celerity_config* cfg = NULL;
    CHECK_OK(celerity_config_create(&cfg));
    CHECK_OK(celerity_config_set(cfg, "accessor_boundary_check", check));
    CHECK_OK(celerity_config_set(cfg, "log_level", "info"));
    CHECK_OK(celerity_runtime_init(&argc, &argv, cfg));
    celerity_config_destroy(cfg);
    celerity_runtime_info info;
    CHECK_OK(celerity_runtime_get_info(&info));

    celerity_status expected_status = strcmp(check, "error") == 0 ? CELERITY_ERROR_ACCESS_PATTERN : CELERITY_OK;
    celerity_status status;
    static double a[N * N], b[N * N], c[N * N];
    static double in[S], out[S];
    if (strcmp(mistake, "stencil") == 0) {
        for (size_t i = 0; i < S; ++i) in[i] = (double)i;
        celerity_buffer* bin = test_buffer(1, S, 1, 1, sizeof(double), in, "in");
        celerity_buffer* bout = test_buffer(1, S, 1, 1, sizeof(double), NULL, "out");
        celerity_cg* cg = test_cg("stencil");
        test_access(cg, bin, CELERITY_ACCESS_READ, celerity_neighborhood(1, 0, 0));
        test_access(cg, bout, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        size_t range[3] = {S, 1, 1};
        CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, stencil, NULL, NULL));
        status = test_read(bout, NULL, out, sizeof out);
        if (status == CELERITY_OK && strcmp(check, "off") != 0) {
            /* The last element read the zeroed scratch element instead of in[S]. */
            for (size_t i = 0; i + 1 < S; ++i) CHECK(out[i] == 2.0 * (double)i + 1.0);
            CHECK(out[S - 1] == (double)(S - 1));
        }
        celerity_buffer_release(bin);
        celerity_buffer_release(bout);
    } else {
        for (size_t i = 0; i < N * N; ++i) a[i] = 1.0, b[i] = (double)i;
        celerity_buffer* ba = test_buffer(2, N, N, 1, sizeof(double), a, "A");
        celerity_buffer* bb = test_buffer(2, N, N, 1, sizeof(double), b, "B");
        celerity_buffer* bc = test_buffer(2, N, N, 1, sizeof(double), NULL, "C");
        celerity_cg* cg = test_cg(mistake);
        int swapped = strcmp(mistake, "swapped") == 0;
        test_access(cg, ba, CELERITY_ACCESS_READ, swapped ? celerity_slice(0) : celerity_slice(1));
        test_access(cg, bb, CELERITY_ACCESS_READ, swapped ? celerity_slice(1) : celerity_one_to_one());
        test_access(cg, bc, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
        size_t range[3] = {N, N, 1};
        CHECK_OK(celerity_submit_parallel_for(cg, 2, range, NULL, matmul, NULL, NULL));
        status = test_read(bc, NULL, c, sizeof c);
        celerity_buffer_release(ba);
        celerity_buffer_release(bb);
        celerity_buffer_release(bc);
    }
    CHECK_OK(celerity_runtime_shutdown());
    test_log_end(&log);

    /* What the kernels saw, and what the log must say about it. */
    const char* lines[MAX_CHUNKS + 2];
    static char storage[MAX_CHUNKS][TEST_LOG_LINE];
    char startup[64];
    snprintf(startup, sizeof startup, "[N%u] INFO celerity *", info.node);
    size_t n = 0;
    lines[n++] = startup;
#ifdef TEST_BOUNDS_CHECK_DEVICE_KERNELS
    /* Ranks of one host sharing its GPU are warned about once each (before the node id is known,
     * hence any prefix). */
    if (info.num_nodes > 1) lines[n++] = "[*] WARN * processes on this host share * CUDA device(s)*";
#endif
    int violations = 0;
    int count = atomic_load(&num_chunks);
    for (int i = 0; i < count && i < MAX_CHUNKS; ++i) {
        CHECK(chunks[i].saw_record == (strcmp(check, "off") != 0));
        if (strcmp(check, "off") == 0) continue;
        expected_line(mistake, &info, &chunks[i], storage[i], sizeof storage[i]);
        if (storage[i][0] != '\0') lines[n++] = storage[i], ++violations;
    }
    /* Fail-stop across ranks: under policy error a violation on any node fails every node's call
     * (every mistake here has one on some node); a single node fails only for its own. */
    if (violations == 0 && info.num_nodes == 1) expected_status = CELERITY_OK;
    CHECK_STATUS(status, expected_status);
    if (status == CELERITY_OK && strcmp(mistake, "stencil") != 0 && strcmp(check, "off") != 0) {
        /* Out-of-bounds reads yield 0, so C[i][j] sums B[k][j] over the k that both A's declared
         * columns and B's declared rows of the chunk of (i, j) contain (all k on one chunk). */
        int swapped = strcmp(mistake, "swapped") == 0;
        for (int x = 0; x < count && x < MAX_CHUNKS; ++x) {
            const recorded_chunk* ch = &chunks[x];
            size_t k0 = ch->offset[0], k1 = ch->offset[0] + ch->range[0];
            if (swapped && ch->offset[1] > k0) k0 = ch->offset[1];
            if (swapped && ch->offset[1] + ch->range[1] < k1) k1 = ch->offset[1] + ch->range[1];
            for (size_t i = ch->offset[0]; i < ch->offset[0] + ch->range[0]; ++i) {
                for (size_t j = ch->offset[1]; j < ch->offset[1] + ch->range[1]; ++j) {
                    double sum = 0;
                    for (size_t k = k0; k < k1; ++k) sum += b[k * N + j];
                    CHECK(c[i * N + j] == sum);
                }
            }
        }
    }
    test_log_expect(&log, lines, n);
    printf("%d chunk(s) on node %u, %d reported\n", count, info.node, violations);
    return celerity_test_finish("test_bounds_check");
}

/* A program whose accessor helpers are compiled without the boundary check (the default under
 * NDEBUG, here CELERITY_ACCESSOR_BOUNDARY_CHECK=0) gets no bounds records, although the runtime
 * switch accessor_boundary_check is on: nothing would write them, so no chunk allocates them.
 * The header routes celerity_runtime_init to celerity_runtime_init_for_program, which says so. */
#define CELERITY_ACCESSOR_BOUNDARY_CHECK 0
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int chunks_with_records, chunks;

static int kernel(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    atomic_fetch_add(&chunks, 1);
    for (uint32_t a = 0; a < ctx->num_accessors; ++a) {
        if (ctx->accessors[a].record != NULL) atomic_fetch_add(&chunks_with_records, 1);
    }
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(float, ctx, 0, i, 0, 0) = (float)i;
    return 0;
}

int main(int argc, char** argv) {
    celerity_config* cfg = NULL;
    CHECK_OK(celerity_config_create(&cfg));
    CHECK_OK(celerity_config_set(cfg, "accessor_boundary_check", "on"));
    CHECK_OK(celerity_runtime_init(&argc, &argv, cfg));
    celerity_config_destroy(cfg);
    float out[64];
    celerity_buffer* buf = test_buffer(1, 64, 1, 1, sizeof(float), NULL, "out");
    celerity_cg* cg = test_cg("fill");
    test_access(cg, buf, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one());
    size_t range[3] = {64, 1, 1};
    CHECK_OK(celerity_submit_parallel_for(cg, 1, range, NULL, kernel, NULL, NULL));
    CHECK_OK(test_read(buf, NULL, out, sizeof out));
    for (size_t i = 0; i < 64; ++i) CHECK(out[i] == (float)i);
    celerity_buffer_release(buf);
    CHECK_OK(celerity_runtime_shutdown());
    CHECK(atomic_load(&chunks) >= 1);
    CHECK(atomic_load(&chunks_with_records) == 0);
    printf("%d chunk(s), %d with records\n", atomic_load(&chunks), atomic_load(&chunks_with_records));
    return celerity_test_finish("test_bounds_check_compiled_out");
}

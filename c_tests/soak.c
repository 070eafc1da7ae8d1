/* Soak measurement (issue 18, docs/reliability.md): submits N small kernels (default 200000) on one
 * buffer and prints the resident set size after each tenth, so that growth over a long run shows.
 * Not a test (it asserts only correctness of the final value); run: soak [N]. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <unistd.h>

#include "test_runtime.h"

static long rss_kib(void) {
    long pages = 0, resident = 0;
    FILE* f = fopen("/proc/self/statm", "r");
    if (f == NULL) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int increment(const celerity_kernel_context* ctx, void* user_data) {
    (void)user_data;
    TEST_FOR_CHUNK(ctx, i, j, k) TEST_ELEM(int, ctx, 0, i, j, k) += 1;
    return 0;
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    test_init(&argc, &argv);
    enum { N = 64 };
    int zeros[N] = {0};
    celerity_buffer* b = test_buffer(1, N, 1, 1, sizeof(int), zeros, "soaked");
    size_t r[3] = {N, 1, 1};
    for (long t = 1; t <= n; ++t) {
        celerity_cg* cg = NULL;
        CHECK_OK(celerity_cg_create(&cg));
        test_access(cg, b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one());
        CHECK_OK(celerity_submit_parallel_for(cg, 1, r, NULL, increment, NULL, NULL));
        if (t % (n / 10 > 0 ? n / 10 : 1) == 0) {
            CHECK_OK(celerity_wait());
            printf("soak: %ld tasks, rss %ld KiB\n", t, rss_kib());
            fflush(stdout);
        }
    }
    int data[N];
    CHECK_OK(test_read(b, NULL, data, sizeof data));
    for (int i = 0; i < N; ++i) CHECK(data[i] == (int)n);
    CHECK_OK(celerity_buffer_release(b));
    CHECK_OK(celerity_runtime_shutdown());
    return celerity_test_finish("soak");
}

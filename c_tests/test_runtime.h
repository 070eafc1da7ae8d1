/* Helpers shared by the C tests that run the runtime: initialisation from the environment,
 * buffer / command-group shorthands, blocking read-back through a fence, and a loop over a
 * kernel's chunk. Every helper reports failures through test_check.h. */
#ifndef CELERITY_TEST_RUNTIME_H
#define CELERITY_TEST_RUNTIME_H

#include <ctype.h>

#include "test_check.h"

/* Case-insensitive substring test. */
static inline int test_contains_i(const char* haystack, const char* needle) {
    size_t n = strlen(needle);
    for (const char* h = haystack; *h != '\0'; ++h) {
        size_t i = 0;
        while (i < n && h[i] != '\0' &&
               tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) {
            ++i;
        }
        if (i == n) return 1;
    }
    return n == 0;
}

/* Expects the last error message to contain `needle`, ignoring case. */
#define CHECK_MESSAGE_CONTAINS_I(needle)                                                         \
    do {                                                                                         \
        const char* check_message_ = celerity_last_error_message();                              \
        if (!test_contains_i(check_message_, (needle))) {                                        \
            fprintf(stderr, "%s:%d: last error \"%s\" does not contain \"%s\" (any case)\n",     \
                    __FILE__, __LINE__, check_message_, (needle));                               \
            ++celerity_test_failures;                                                            \
        }                                                                                        \
    } while (0)

/* Initialises the runtime from the environment (NULL config; ctest sets CELERITY_DEVICES) and
 * returns its info. The kernels of these tests are CPU code, so the backend must be HOST. */
static inline celerity_runtime_info test_init(int* argc, char*** argv) {
    celerity_runtime_info info;
    memset(&info, 0, sizeof info);
    celerity_status s = celerity_runtime_init(argc, argv, NULL);
    if (s != CELERITY_OK) {
        fprintf(stderr, "celerity_runtime_init failed: %s: %s\n", celerity_status_string(s),
                celerity_last_error_message());
        exit(EXIT_FAILURE);
    }
    CHECK_OK(celerity_runtime_get_info(&info));
    if (info.backend != CELERITY_BACKEND_HOST) {
        fprintf(stderr, "these tests run CPU kernels: set CELERITY_DEVICES=host or host:N\n");
        celerity_runtime_shutdown();
        exit(EXIT_FAILURE);
    }
    printf("node %u of %u, %u emulated host device(s)\n", info.node, info.num_nodes, info.num_devices);
    return info;
}

static inline celerity_buffer* test_buffer(uint32_t dims, size_t r0, size_t r1, size_t r2, size_t elem_size,
                                           const void* host_init, const char* name) {
    size_t range[3] = {r0, r1, r2};
    celerity_buffer* buf = NULL;
    CHECK_OK(celerity_buffer_create(dims, range, elem_size, elem_size, host_init, &buf));
    if (buf != NULL && name != NULL) CHECK_OK(celerity_buffer_set_name(buf, name));
    return buf;
}

static inline celerity_cg* test_cg(const char* name) {
    celerity_cg* cg = NULL;
    CHECK_OK(celerity_cg_create(&cg));
    if (cg != NULL && name != NULL) CHECK_OK(celerity_cg_set_name(cg, name));
    return cg;
}

static inline void test_access(celerity_cg* cg, celerity_buffer* buf, celerity_access_mode mode,
                               celerity_range_mapper mapper) {
    CHECK_OK(celerity_cg_access(cg, buf, mode, &mapper));
}

static inline celerity_subrange test_subrange(size_t o0, size_t o1, size_t o2, size_t r0, size_t r1, size_t r2) {
    celerity_subrange sr;
    sr.offset[0] = o0, sr.offset[1] = o1, sr.offset[2] = o2;
    sr.range[0] = r0, sr.range[1] = r1, sr.range[2] = r2;
    return sr;
}

/* Fences `region` (NULL: the whole buffer) into `dest` and waits for it. */
static inline celerity_status test_read(celerity_buffer* buf, const celerity_subrange* region, void* dest,
                                        size_t dest_bytes) {
    celerity_future* f = NULL;
    celerity_status s = celerity_fence_buffer(buf, region, dest, dest_bytes, &f);
    if (s != CELERITY_OK) return s;
    s = celerity_future_wait(f);
    celerity_future_release(f);
    return s;
}

static inline size_t test_lin(const size_t r[3], size_t i, size_t j, size_t k) {
    return (i * r[1] + j) * r[2] + k;
}

/* Loops i, j, k over the chunk of kernel context `ctx` (buffer coordinates; unused dims run 0..1). */
#define TEST_FOR_CHUNK(ctx, i, j, k)                                                                 \
    for (size_t i = (ctx)->chunk.offset[0]; i < (ctx)->chunk.offset[0] + (ctx)->chunk.range[0]; ++i) \
        for (size_t j = (ctx)->chunk.offset[1]; j < (ctx)->chunk.offset[1] + (ctx)->chunk.range[1]; ++j) \
            for (size_t k = (ctx)->chunk.offset[2]; k < (ctx)->chunk.offset[2] + (ctx)->chunk.range[2]; ++k)

#define TEST_ELEM(type, ctx, acc, i, j, k) (*(type*)celerity_accessor_ptr(&(ctx)->accessors[acc], (i), (j), (k)))

#endif

// Every GPU figure of issue 16 in one run: the runtime (devices=cuda, C ABI) beside a raw CUDA
// baseline measured in the same process. Built and run on the GPU machine by run.sh; prints one
// markdown table (and raw lines starting with "raw:"), exits non-zero on a wrong result.
//
//   gpu_bench [all|transfer-options|transfers|floor|graphs|register|staging|late-read]
//     all: every figure; transfer-options: only the raw measurements of the ways to move user
//     memory; transfers: those and the runtime's transfers; floor: the per-task figures only;
//     graphs: raw CUDA only, the cost of an event per kernel and of CUDA graph launches;
//     register: raw CUDA only, page-locking user memory per transfer against the staged copy;
//     staging: raw CUDA only, the staged D2H into pageable memory by chunk size and slot count;
//     late-read: what slows a read that comes a while after its buffer's create
#include <cuda_runtime.h>
#include <emmintrin.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "celerity.h"

static double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CU(call)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)
#define OK(call)                                                                                              \
    do {                                                                                                      \
        celerity_status s_ = (call);                                                                          \
        if (s_ != CELERITY_OK) {                                                                              \
            fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, celerity_status_string(s_),     \
                    celerity_last_error_message());                                                           \
            exit(3);                                                                                          \
        }                                                                                                     \
    } while (0)

static const size_t GIB = size_t(1) << 30;
static int failures = 0;
static double g_pinned_h2d = 0, g_pinned_d2h = 0;  // bytes per second, raw pinned cudaMemcpy

struct Row {
    std::string figure, runtime, raw, ratio, target;
};
static std::vector<Row> rows;
static std::string g_row_suffix;  // names a non-default configuration in every row
static void row(const std::string& figure, const std::string& runtime, const std::string& raw, const std::string& ratio,
                const std::string& target) {
    rows.push_back({figure + g_row_suffix, runtime, raw, ratio, target});
    printf("| %s%s | %s | %s | %s | %s |\n", figure.c_str(), g_row_suffix.c_str(), runtime.c_str(), raw.c_str(), ratio.c_str(), target.c_str());
    fflush(stdout);
}
static std::string fmt(const char* f, double v) {
    char b[64];
    snprintf(b, sizeof b, f, v);
    return b;
}

// ---------------------------------------------------------------------------------------------
// kernels

__global__ void empty_kernel() {}

__device__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__global__ void spin_kernel(float* slot, unsigned ns) {
    unsigned long long start = global_ns();
    while (global_ns() - start < ns) {
    }
    if (slot) *slot += 1.0f;
}
__global__ void touch_kernel(const float* in, size_t n, float* out) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n && in[i] == -12345.0f) *out = 1.0f;  // reads every element, writes nothing in practice
}
// 5-point stencil on rows [row0, row0 + rows) of an n x n grid; boundary cells are copied.
// `in` / `out` point at element (in_row0, 0) / (out_row0, 0) of their allocations.
__global__ void stencil_kernel(const float* in, size_t in_row0, float* out, size_t out_row0, size_t row0, size_t rows,
                               size_t n) {
    size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t i = row0 + blockIdx.y * (size_t)blockDim.y + threadIdx.y;
    if (j >= n || i >= row0 + rows) return;
    const float* c = in + (i - in_row0) * n;
    float v = c[j];
    if (i > 0 && i + 1 < n && j > 0 && j + 1 < n) v = 0.2f * (v + c[j - 1] + c[j + 1] + c[j - n] + c[j + n]);
    out[(i - out_row0) * n + j] = v;
}

// ---------------------------------------------------------------------------------------------
// celerity kernel callbacks

static int k_empty(const celerity_kernel_context* ctx, void*) {
    empty_kernel<<<1, 1, 0, (cudaStream_t)ctx->stream>>>();
    return (int)cudaGetLastError();
}
static int k_spin(const celerity_kernel_context* ctx, void* ns) {
    float* slot = ctx->num_accessors ? (float*)ctx->accessors[0].base : nullptr;
    spin_kernel<<<1, 1, 0, (cudaStream_t)ctx->stream>>>(slot, (unsigned)(size_t)ns);
    return (int)cudaGetLastError();
}
static int k_touch(const celerity_kernel_context* ctx, void*) {
    const celerity_accessor* a = &ctx->accessors[0];
    size_t n = ctx->chunk.range[0];
    touch_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)ctx->stream>>>(
        (const float*)a->base + (ctx->chunk.offset[0] - a->allocation.offset[0]), n, (float*)ctx->accessors[1].base);
    return (int)cudaGetLastError();
}
static int k_stencil(const celerity_kernel_context* ctx, void*) {
    const celerity_accessor* in = &ctx->accessors[0];
    const celerity_accessor* out = &ctx->accessors[1];
    size_t n = ctx->chunk.global_range[1];
    dim3 block(32, 8), grid((unsigned)((n + 31) / 32), (unsigned)((ctx->chunk.range[0] + 7) / 8));
    stencil_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
        (const float*)in->base, in->allocation.offset[0], (float*)out->base, out->allocation.offset[0],
        ctx->chunk.offset[0], ctx->chunk.range[0], n);
    return (int)cudaGetLastError();
}
static int k_fail(const celerity_kernel_context* ctx, void*) {
    // An invalid launch (block too large): the returned cudaError_t names the failure.
    empty_kernel<<<1, 4096, 0, (cudaStream_t)ctx->stream>>>();
    return (int)cudaGetLastError();
}

static celerity_buffer* buffer(uint32_t dims, size_t r0, size_t r1, const void* init, const char* name) {
    size_t range[3] = {r0, r1, 1};
    celerity_buffer* b = nullptr;
    OK(celerity_buffer_create(dims, range, sizeof(float), 4, init, &b));
    OK(celerity_buffer_set_name(b, name));
    return b;
}
struct Access {
    celerity_buffer* buf;
    celerity_access_mode mode;
    celerity_range_mapper rm;
};
static void submit(const char* name, uint32_t dims, size_t r0, size_t r1, std::vector<Access> accesses,
                   celerity_kernel_fn fn, void* user = nullptr) {
    celerity_cg* cg = nullptr;
    OK(celerity_cg_create(&cg));
    for (auto& a : accesses) OK(celerity_cg_access(cg, a.buf, a.mode, &a.rm));
    OK(celerity_cg_set_name(cg, name));
    // Every launcher here only launches its kernel: with cuda_graphs=auto (the default) the
    // runtime may capture them into graph batches (CELERITY_CUDA_GRAPHS=off measures without).
    OK(celerity_cg_hint_launch_only(cg));
    size_t range[3] = {r0, r1, 1};
    OK(celerity_submit_parallel_for(cg, dims, range, nullptr, fn, user, nullptr));
}
static void fence(celerity_buffer* b, void* dest, size_t bytes) {
    celerity_future* f = nullptr;
    OK(celerity_fence_buffer(b, nullptr, dest, bytes, &f));
    OK(celerity_future_wait(f));
    celerity_future_release(f);
}

// ---------------------------------------------------------------------------------------------
// raw measurements of the ways to move user memory

// `bytes` split into page-aligned pieces, one per thread, each copied by `piece`
static void split_copy(void (*piece)(char*, const char*, size_t), void* dst, const void* src, size_t bytes,
                       int threads) {
    std::vector<std::thread> ts;
    size_t per = (bytes / threads + 4095) & ~size_t(4095);
    for (int t = 0; t < threads; ++t) {
        size_t off = t * per;
        if (off >= bytes) break;
        size_t len = std::min(per, bytes - off);
        ts.emplace_back([=] { piece((char*)dst + off, (const char*)src + off, len); });
    }
    for (auto& t : ts) t.join();
}
static void memcpy_piece(char* dst, const char* src, size_t len) { memcpy(dst, src, len); }
static void parallel_copy(void* dst, const void* src, size_t bytes, int threads) {
    split_copy(memcpy_piece, dst, src, bytes, threads);
}

// The same with non-temporal (streaming) stores: the destination's cache lines are not read
// first, which saves a third of the memory traffic of a copy whose destination the CPU does not
// read again soon (a staging slot the DMA engine reads, or user memory after a fence).
static void nt_copy_piece(char* dst, const char* src, size_t len) {
    size_t head = std::min(len, (size_t)((16 - ((uintptr_t)dst & 15)) & 15));
    memcpy(dst, src, head);
    size_t i = head;
    for (; i + 64 <= len; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i*)(src + i)), b = _mm_loadu_si128((const __m128i*)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i*)(src + i + 32)), d = _mm_loadu_si128((const __m128i*)(src + i + 48));
        _mm_stream_si128((__m128i*)(dst + i), a);
        _mm_stream_si128((__m128i*)(dst + i + 16), b);
        _mm_stream_si128((__m128i*)(dst + i + 32), c);
        _mm_stream_si128((__m128i*)(dst + i + 48), d);
    }
    memcpy(dst + i, src + i, len - i);
    _mm_sfence();
}
static void parallel_nt_copy(void* dst, const void* src, size_t bytes, int threads) {
    split_copy(nt_copy_piece, dst, src, bytes, threads);
}
static char* huge_page_malloc(size_t bytes) {
    char* p = (char*)aligned_alloc(size_t(2) << 20, bytes);
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static double time_copy(cudaMemcpyKind kind, void* dst, const void* src, size_t bytes, int reps) {
    double best = 1e9;
    for (int r = 0; r < reps; ++r) {
        double t0 = now();
        CU(cudaMemcpy(dst, src, bytes, kind));
        best = std::min(best, now() - t0);
    }
    return best;
}

// H2D from pageable `src` through `slots` pinned chunks, host copies by `threads` threads
// overlapping the DMA of the previous chunk.
typedef void (*copy_fn)(void*, const void*, size_t, int);
static double staged_h2d(void* dev, const char* src, size_t bytes, char* pinned, size_t chunk, int slots, int threads,
                         cudaStream_t s, copy_fn copy = parallel_copy) {
    std::vector<cudaEvent_t> ev(slots);
    for (auto& e : ev) CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    double t0 = now();
    for (size_t off = 0, i = 0; off < bytes; off += chunk, ++i) {
        size_t len = std::min(chunk, bytes - off);
        int k = i % slots;
        if (i >= (size_t)slots) CU(cudaEventSynchronize(ev[k]));
        copy(pinned + k * chunk, src + off, len, threads);
        CU(cudaMemcpyAsync((char*)dev + off, pinned + k * chunk, len, cudaMemcpyHostToDevice, s));
        CU(cudaEventRecord(ev[k], s));
    }
    CU(cudaStreamSynchronize(s));
    double t = now() - t0;
    for (auto& e : ev) CU(cudaEventDestroy(e));
    return t;
}
// The D2H half of the staged pipeline: `wait(event)` until a slot's DMA is done, then
// `copy_out(dst, slot, len)`.
template <typename Wait, typename CopyOut>
static double staged_d2h_with(char* dst, const void* dev, size_t bytes, char* pinned, size_t chunk, int slots,
                              cudaStream_t s, Wait wait, CopyOut copy_out) {
    size_t n = (bytes + chunk - 1) / chunk;
    std::vector<cudaEvent_t> ev(slots);
    for (auto& e : ev) CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    double t0 = now();
    auto issue = [&](size_t i) {
        size_t off = i * chunk, len = std::min(chunk, bytes - off);
        CU(cudaMemcpyAsync(pinned + (i % slots) * chunk, (const char*)dev + off, len, cudaMemcpyDeviceToHost, s));
        CU(cudaEventRecord(ev[i % slots], s));
    };
    for (size_t i = 0; i < std::min(n, (size_t)slots); ++i) issue(i);
    for (size_t i = 0; i < n; ++i) {
        size_t off = i * chunk, len = std::min(chunk, bytes - off);
        wait(ev[i % slots]);
        copy_out(dst + off, pinned + (i % slots) * chunk, len);
        if (i + slots < n) issue(i + slots);
    }
    double t = now() - t0;
    for (auto& e : ev) CU(cudaEventDestroy(e));
    return t;
}
static double staged_d2h(char* dst, const void* dev, size_t bytes, char* pinned, size_t chunk, int slots, int threads,
                         cudaStream_t s, copy_fn copy = parallel_copy) {
    return staged_d2h_with(
        dst, dev, bytes, pinned, chunk, slots, s, [](cudaEvent_t e) { CU(cudaEventSynchronize(e)); },
        [&](char* d, const char* slot, size_t len) { copy(d, slot, len, threads); });
}

// Huge pages, streaming stores, slot counts and the cost of pinning staging slots (issue 16,
// the options behind the runtime's data path; docs/gpu.md).
static void copy_kinds(void* dev, char* user, char* pinned, cudaStream_t s) {
    const size_t bytes = GIB;
    char mode[128] = "?";
    if (FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
        if (!fgets(mode, sizeof mode, f)) mode[0] = 0;
        fclose(f);
        mode[strcspn(mode, "\n")] = 0;
    }
    printf("raw: glibc %s, transparent huge pages: %s\n", gnu_get_libc_version(), mode);
    for (int threads : {8, 16}) {
        char* fresh = huge_page_malloc(bytes);
        double t0 = now();
        parallel_copy(fresh, user, bytes, threads);
        double t_huge = now() - t0;
        free(fresh);
        fresh = huge_page_malloc(bytes);
        t0 = now();
        parallel_nt_copy(fresh, user, bytes, threads);
        double t_huge_nt = now() - t0;
        t0 = now();
        parallel_copy(fresh, user, bytes, threads);
        double t_warm = now() - t0;
        t0 = now();
        parallel_nt_copy(fresh, user, bytes, threads);
        double t_warm_nt = now() - t0;
        free(fresh);
        t0 = now();
        parallel_nt_copy(pinned, user, bytes, threads);
        double t_pinned_nt = now() - t0;
        printf("raw: copy 1 GiB, %d threads: into fresh huge-page memory %.1f ms (streaming stores %.1f ms), into warm "
               "memory %.1f ms (streaming %.1f ms), into warm pinned with streaming stores %.1f ms\n",
               threads, t_huge * 1e3, t_huge_nt * 1e3, t_warm * 1e3, t_warm_nt * 1e3, t_pinned_nt * 1e3);
    }
    for (int slots : {2, 4}) {
        for (int threads : {8, 16}) {
            size_t chunk = size_t(64) << 20;
            double h = staged_h2d(dev, user, bytes, pinned, chunk, slots, threads, s);
            double d = staged_d2h(user, dev, bytes, pinned, chunk, slots, threads, s);
            double hn = staged_h2d(dev, user, bytes, pinned, chunk, slots, threads, s, parallel_nt_copy);
            double dn = staged_d2h(user, dev, bytes, pinned, chunk, slots, threads, s, parallel_nt_copy);
            printf("raw: staged 64 MiB x%d slots, %d threads: memcpy H2D %.2f D2H %.2f GB/s, streaming stores H2D %.2f "
                   "D2H %.2f GB/s\n", slots, threads, bytes / h / 1e9, bytes / d / 1e9, bytes / hn / 1e9, bytes / dn / 1e9);
        }
    }
    // what pinning four 64 MiB staging slots costs: the driver's allocation, or huge pages
    // registered after touching them
    const size_t slot = size_t(64) << 20;
    std::vector<void*> slots(4);
    double t0 = now();
    for (auto& p : slots) CU(cudaHostAlloc(&p, slot, cudaHostAllocPortable));
    double t_alloc = now() - t0;
    for (auto p : slots) CU(cudaFreeHost(p));
    t0 = now();
    for (auto& p : slots) {
        p = huge_page_malloc(slot);
        memset(p, 0, slot);
        CU(cudaHostRegister(p, slot, cudaHostRegisterPortable));
    }
    double t_reg = now() - t0;
    for (auto p : slots) {
        CU(cudaHostUnregister(p));
        free(p);
    }
    char* huge = huge_page_malloc(bytes);
    parallel_copy(huge, user, bytes, 16);
    t0 = now();
    CU(cudaHostRegister(huge, bytes, cudaHostRegisterPortable));
    double t_reg_huge = now() - t0;
    double h2d_huge = time_copy(cudaMemcpyHostToDevice, dev, huge, bytes, 2);
    t0 = now();
    CU(cudaHostUnregister(huge));
    double t_unreg_huge = now() - t0;
    free(huge);
    printf("raw: pinning 4 x 64 MiB slots: cudaHostAlloc %.1f ms, huge pages + touch + cudaHostRegister %.1f ms; "
           "cudaHostRegister of 1 GiB touched huge-page memory %.1f ms (then H2D %.2f GB/s), unregister %.1f ms\n",
           t_alloc * 1e3, t_reg * 1e3, t_reg_huge * 1e3, bytes / h2d_huge / 1e9, t_unreg_huge * 1e3);
}

// The set-up of the D2H option measurements: 1 GiB on the device (every byte 3), a stream,
// 1 GiB of pinned memory, the raw pinned D2H time and 1 GiB of warm pageable "user" memory.
struct D2hSetup {
    const size_t bytes = GIB;
    void* dev = nullptr;
    cudaStream_t stream = nullptr;
    char* pinned = nullptr;
    char* user = nullptr;
    double d2h_pinned = 0;
    D2hSetup() {
        CU(cudaMalloc(&dev, bytes));
        CU(cudaMemset(dev, 3, bytes));
        CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        CU(cudaHostAlloc((void**)&pinned, bytes, cudaHostAllocPortable));
        memset(pinned, 1, bytes);
        d2h_pinned = time_copy(cudaMemcpyDeviceToHost, pinned, dev, bytes, 3);
        printf("raw: pinned D2H %.2f GB/s (%.1f ms)\n", bytes / d2h_pinned / 1e9, d2h_pinned * 1e3);
        user = (char*)malloc(bytes);
        memset(user, 2, bytes);
    }
    ~D2hSetup() {
        free(user);
        CU(cudaFreeHost(pinned));
        CU(cudaStreamDestroy(stream));
        CU(cudaFree(dev));
    }
};
// Page-locking pageable user memory for the length of one transfer, instead of a host copy
// through staging slots: one cudaHostRegister of the whole range, the range split over several
// registering threads, and registration pipelined with the DMA chunk by chunk (a chunk's DMA is
// enqueued as soon as its registration returns). Compared with the staged copy in the same run.
struct RangeSplit {
    std::vector<std::pair<size_t, size_t>> pieces;  // offset, length; page-aligned boundaries
    RangeSplit(size_t bytes, size_t piece) {
        for (size_t off = 0; off < bytes; off += piece) pieces.push_back({off, std::min(piece, bytes - off)});
    }
};
static double parallel_over(const RangeSplit& split, int threads, const std::function<void(size_t, size_t)>& f) {
    std::atomic<size_t> next{0};
    double t0 = now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&] {
            for (size_t i; (i = next.fetch_add(1)) < split.pieces.size();) f(split.pieces[i].first, split.pieces[i].second);
        });
    for (auto& t : ts) t.join();
    return now() - t0;
}
static void register_options() {
    D2hSetup d;
    for (unsigned flags : {(unsigned)cudaHostRegisterDefault, (unsigned)cudaHostRegisterPortable}) {
        double t0 = now();
        CU(cudaHostRegister(d.user, d.bytes, flags));
        double t_reg = now() - t0;
        double d2h = time_copy(cudaMemcpyDeviceToHost, d.user, d.dev, d.bytes, 1);
        t0 = now();
        CU(cudaHostUnregister(d.user));
        printf("raw: register 1 GiB warm, one call, flags %u: %.1f ms, D2H %.1f ms, unregister %.1f ms\n", flags,
               t_reg * 1e3, d2h * 1e3, (now() - t0) * 1e3);
    }
    for (size_t piece : {size_t(16) << 20, size_t(64) << 20}) {
        RangeSplit split(d.bytes, piece);
        for (int threads : {1, 4, 8, 16}) {
            double t_reg = parallel_over(split, threads, [&](size_t off, size_t len) {
                CU(cudaHostRegister(d.user + off, len, cudaHostRegisterDefault));
            });
            double t0 = now();
            for (auto [off, len] : split.pieces)
                CU(cudaMemcpyAsync(d.user + off, (char*)d.dev + off, len, cudaMemcpyDeviceToHost, d.stream));
            CU(cudaStreamSynchronize(d.stream));
            double t_dma = now() - t0;
            double t_unreg = parallel_over(split, threads, [&](size_t off, size_t) { CU(cudaHostUnregister(d.user + off)); });
            printf("raw: register 1 GiB warm in %zu MiB pieces on %d threads: %.1f ms, D2H %.1f ms, unregister %.1f ms\n",
                   piece >> 20, threads, t_reg * 1e3, t_dma * 1e3, t_unreg * 1e3);
        }
    }
    // pipelined: registering threads work through the chunks in order; the main thread enqueues
    // each chunk's DMA once it is registered, then unregisters everything in parallel
    for (size_t piece : {size_t(16) << 20, size_t(32) << 20, size_t(64) << 20}) {
        for (int threads : {4, 8, 16}) {
            RangeSplit split(d.bytes, piece);
            std::vector<std::atomic<int>> ready(split.pieces.size());
            for (auto& r : ready) r = 0;
            std::atomic<size_t> next{0};
            double t0 = now();
            std::vector<std::thread> ts;
            for (int t = 0; t < threads; ++t)
                ts.emplace_back([&] {
                    for (size_t i; (i = next.fetch_add(1)) < split.pieces.size();) {
                        CU(cudaHostRegister(d.user + split.pieces[i].first, split.pieces[i].second, cudaHostRegisterDefault));
                        ready[i].store(1, std::memory_order_release);
                    }
                });
            for (size_t i = 0; i < split.pieces.size(); ++i) {
                while (!ready[i].load(std::memory_order_acquire)) _mm_pause();
                auto [off, len] = split.pieces[i];
                CU(cudaMemcpyAsync(d.user + off, (char*)d.dev + off, len, cudaMemcpyDeviceToHost, d.stream));
            }
            CU(cudaStreamSynchronize(d.stream));
            double t_copied = now() - t0;
            for (auto& t : ts) t.join();
            double t_unreg = parallel_over(split, threads, [&](size_t off, size_t) { CU(cudaHostUnregister(d.user + off)); });
            double total = t_copied + t_unreg;
            printf("raw: pipelined register + D2H, %zu MiB pieces, %d threads: copied after %.1f ms (%.2f GB/s), "
                   "+ unregister %.1f ms = %.1f ms (%.2f GB/s, %.2f of pinned)\n",
                   piece >> 20, threads, t_copied * 1e3, d.bytes / t_copied / 1e9, t_unreg * 1e3, total * 1e3,
                   d.bytes / total / 1e9, d.d2h_pinned / total);
        }
    }
    // fresh (never touched) d.user memory: registration faults the pages in
    for (int threads : {1, 16}) {
        char* fresh = (char*)malloc(d.bytes);
        RangeSplit split(d.bytes, size_t(64) << 20);
        double t_reg = parallel_over(split, threads, [&](size_t off, size_t len) {
            CU(cudaHostRegister(fresh + off, len, cudaHostRegisterDefault));
        });
        double t_unreg = parallel_over(split, threads, [&](size_t off, size_t) { CU(cudaHostUnregister(fresh + off)); });
        printf("raw: register 1 GiB fresh in 64 MiB pieces on %d threads: %.1f ms, unregister %.1f ms\n", threads,
               t_reg * 1e3, t_unreg * 1e3);
        free(fresh);
    }
    for (int rep = 0; rep < 2; ++rep) {
        double t = staged_d2h(d.user, d.dev, d.bytes, d.pinned, size_t(64) << 20, 4, 16, d.stream, parallel_nt_copy);
        printf("raw: staged D2H 64 MiB x4 slots, 16 threads, streaming stores: %.1f ms (%.2f GB/s, %.2f of pinned)\n",
               t * 1e3, d.bytes / t / 1e9, d.d2h_pinned / t);
    }
}

// The staged D2H into pageable memory with persistent copy threads (spinning, no thread start
// per chunk) and chunks split over every thread however small: which chunk size and slot count
// keep the DMA engine busy while the copy-out keeps up? (Small chunks may still sit in the
// last-level cache when the copy reads them.)
struct SpinPool {
    std::vector<std::thread> threads;
    std::atomic<uint64_t> generation{0};
    std::atomic<int> remaining{0};
    std::atomic<bool> stop{false};
    char* dst = nullptr;
    const char* src = nullptr;
    size_t len = 0;
    explicit SpinPool(int n) {
        for (int t = 0; t < n; ++t)
            threads.emplace_back([this, t, n] {
                uint64_t seen = 0;
                for (;;) {
                    uint64_t g;
                    while ((g = generation.load(std::memory_order_acquire)) == seen) {
                        if (stop.load(std::memory_order_relaxed)) return;
                        _mm_pause();
                    }
                    seen = g;
                    size_t per = ((len + n - 1) / n + 63) & ~size_t(63);
                    size_t off = t * per;
                    if (off < len) nt_copy_piece(dst + off, src + off, std::min(per, len - off));
                    remaining.fetch_sub(1, std::memory_order_acq_rel);
                }
            });
    }
    void copy(char* d, const char* s, size_t l) {
        dst = d, src = s, len = l;
        remaining.store((int)threads.size(), std::memory_order_relaxed);
        generation.fetch_add(1, std::memory_order_acq_rel);
        while (remaining.load(std::memory_order_acquire) != 0) _mm_pause();
    }
    ~SpinPool() {
        stop = true;
        for (auto& t : threads) t.join();
    }
};
static double staged_d2h_spin(char* dst, const void* dev, size_t bytes, char* pinned, size_t chunk, int slots,
                              SpinPool& pool, cudaStream_t s) {
    return staged_d2h_with(
        dst, dev, bytes, pinned, chunk, slots, s,
        [](cudaEvent_t e) {
            while (cudaEventQuery(e) == cudaErrorNotReady) _mm_pause();
        },
        [&](char* d, const char* slot, size_t len) { pool.copy(d, slot, len); });
}
static void staging_options() {
    D2hSetup d;
    double t0 = now();
    parallel_nt_copy(d.user, d.pinned, d.bytes, 16);
    printf("raw: copy 1 GiB pinned -> warm user memory, 16 threads, streaming stores: %.1f ms\n", (now() - t0) * 1e3);
    for (int threads : {8, 15}) {
        SpinPool pool(threads);
        for (size_t mib : {1, 2, 4, 8, 16, 64}) {
            for (int slots : {4, 8, 16}) {
                double best = 1e9;
                for (int rep = 0; rep < 2; ++rep)
                    best = std::min(best, staged_d2h_spin(d.user, d.dev, d.bytes, d.pinned, mib << 20, slots, pool, d.stream));
                printf("raw: staged D2H, spinning pool of %d threads, %zu MiB x%d slots: %.1f ms (%.2f GB/s, %.2f of pinned)\n",
                       threads, mib, slots, best * 1e3, d.bytes / best / 1e9, d.d2h_pinned / best);
            }
        }
    }
    bool ok = true;
    for (size_t i = 0; i < d.bytes; i += 4096) ok &= d.user[i] == 3;
    printf("raw: staged data %s\n", ok ? "correct" : "WRONG");
}

static void transfer_options() {
    const size_t bytes = GIB;
    void* dev = nullptr;
    CU(cudaMalloc(&dev, bytes));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    double t0 = now();
    char* pinned = nullptr;
    CU(cudaHostAlloc((void**)&pinned, bytes, cudaHostAllocPortable));
    double t_alloc = now() - t0;
    t0 = now();
    memset(pinned, 1, bytes);
    double t_touch = now() - t0;
    double h2d_pinned = time_copy(cudaMemcpyHostToDevice, dev, pinned, bytes, 3);
    double d2h_pinned = time_copy(cudaMemcpyDeviceToHost, pinned, dev, bytes, 3);
    printf("raw: cudaHostAlloc 1 GiB %.1f ms, first memset %.1f ms, pinned H2D %.2f GB/s, D2H %.2f GB/s\n",
           t_alloc * 1e3, t_touch * 1e3, bytes / h2d_pinned / 1e9, bytes / d2h_pinned / 1e9);

    char* user = (char*)malloc(bytes);
    t0 = now();
    memset(user, 2, bytes);
    printf("raw: first touch of 1 GiB malloc (memset, 1 thread) %.1f ms\n", (now() - t0) * 1e3);
    double h2d_pageable = time_copy(cudaMemcpyHostToDevice, dev, user, bytes, 2);
    double d2h_pageable = time_copy(cudaMemcpyDeviceToHost, user, dev, bytes, 2);
    printf("raw: pageable H2D %.2f GB/s, D2H %.2f GB/s\n", bytes / h2d_pageable / 1e9, bytes / d2h_pageable / 1e9);

    for (int threads : {1, 4, 8, 16}) {
        char* fresh = (char*)malloc(bytes);
        t0 = now();
        parallel_copy(fresh, user, bytes, threads);
        double t_fresh = now() - t0;
        t0 = now();
        parallel_copy(pinned, user, bytes, threads);
        double t_warm = now() - t0;
        printf("raw: copy 1 GiB with %d threads: into fresh malloc %.1f ms, into warm pinned %.1f ms\n", threads,
               t_fresh * 1e3, t_warm * 1e3);
        free(fresh);
    }

    t0 = now();
    CU(cudaHostRegister(user, bytes, cudaHostRegisterPortable));
    double t_reg = now() - t0;
    double h2d_reg = time_copy(cudaMemcpyHostToDevice, dev, user, bytes, 2);
    double d2h_reg = time_copy(cudaMemcpyDeviceToHost, user, dev, bytes, 2);
    t0 = now();
    CU(cudaHostUnregister(user));
    double t_unreg = now() - t0;
    printf("raw: cudaHostRegister 1 GiB (touched) %.1f ms, then H2D %.2f GB/s, D2H %.2f GB/s, unregister %.1f ms\n",
           t_reg * 1e3, bytes / h2d_reg / 1e9, bytes / d2h_reg / 1e9, t_unreg * 1e3);

    for (size_t chunk : {size_t(4) << 20, size_t(16) << 20, size_t(64) << 20}) {
        for (int threads : {4, 8, 16}) {
            double h = staged_h2d(dev, user, bytes, pinned, chunk, 4, threads, s);
            double d = staged_d2h(user, dev, bytes, pinned, chunk, 4, threads, s);
            printf("raw: staged chunk %zu MiB x4 slots, %d threads: H2D %.2f GB/s, D2H %.2f GB/s\n", chunk >> 20, threads,
                   bytes / h / 1e9, bytes / d / 1e9);
        }
    }
    copy_kinds(dev, user, pinned, s);
    t0 = now();
    CU(cudaFreeHost(pinned));
    printf("raw: cudaFreeHost 1 GiB %.1f ms\n", (now() - t0) * 1e3);
    free(user);
    CU(cudaFree(dev));
    CU(cudaStreamDestroy(s));
    row("raw pinned cudaMemcpy 1 GiB H2D / D2H", "", fmt("%.1f", bytes / h2d_pinned / 1e9) + " / " +
        fmt("%.1f GB/s", bytes / d2h_pinned / 1e9), "", "reference");
    row("raw pageable cudaMemcpy 1 GiB H2D / D2H", "", fmt("%.1f", bytes / h2d_pageable / 1e9) + " / " +
        fmt("%.1f GB/s", bytes / d2h_pageable / 1e9), "", "reference");
    g_pinned_h2d = bytes / h2d_pinned;
    g_pinned_d2h = bytes / d2h_pinned;
}

// ---------------------------------------------------------------------------------------------
// runtime figures, each beside its raw baseline

static void runtime_transfers() {
    const size_t n = GIB / sizeof(float);
    float* init = (float*)malloc(GIB);
    for (size_t i = 0; i < n; ++i) init[i] = (float)(i % 1000);
    float flag = 0;
    celerity_buffer* flag_buf = buffer(1, 1, 1, &flag, "flag");
    OK(celerity_wait());

    // what the create's copy costs done by hand, just before it (same memory state)
    char* fresh = huge_page_malloc(GIB);
    double t0 = now();
    parallel_nt_copy(fresh, init, GIB, 16);
    double t_raw_create = now() - t0;
    free(fresh);

    t0 = now();
    celerity_buffer* b = buffer(1, n, 1, init, "user-1GiB");
    double t_create = now() - t0;
    submit("touch", 1, n, 1, {{b, CELERITY_ACCESS_READ, celerity_one_to_one()}, {flag_buf, CELERITY_ACCESS_READ_WRITE, celerity_all()}},
           k_touch);
    OK(celerity_wait());
    double t_first = now() - t0;
    printf("raw: runtime create 1 GiB %.1f ms, create + first device read %.1f ms\n", t_create * 1e3, t_first * 1e3);

    // a second upload: a new host-initialised buffer (pools are warm now); the read alone
    // is the transfer from the runtime's copy of the user data to the device
    t0 = now();
    celerity_buffer* b2 = buffer(1, n, 1, init, "user-1GiB-again");
    double t_read0 = now();
    submit("touch", 1, n, 1, {{b2, CELERITY_ACCESS_READ, celerity_one_to_one()}, {flag_buf, CELERITY_ACCESS_READ_WRITE, celerity_all()}},
           k_touch);
    OK(celerity_wait());
    double t_second = now() - t0, t_read = now() - t_read0;
    OK(celerity_buffer_release(b2));

    // the same, read 100 ms after its create (the program did other work meanwhile)
    celerity_buffer* b3 = buffer(1, n, 1, init, "user-1GiB-later");
    usleep(100000);
    double t_late0 = now();
    submit("touch", 1, n, 1, {{b3, CELERITY_ACCESS_READ, celerity_one_to_one()}, {flag_buf, CELERITY_ACCESS_READ_WRITE, celerity_all()}},
           k_touch);
    OK(celerity_wait());
    double t_read_late = now() - t_late0;
    OK(celerity_buffer_release(b3));

    // the fences below read device data: a read_write kernel (which leaves the values as they
    // are) makes the device the only holder of the newest contents, as after any real kernel
    submit("dirty", 1, n, 1, {{b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one()}}, k_empty);
    OK(celerity_wait());

    // a fence into memory the program pinned itself goes straight to DMA
    float* pinned_back = nullptr;
    CU(cudaMallocHost((void**)&pinned_back, GIB));
    memset(pinned_back, 0, GIB);
    fence(b, pinned_back, GIB);
    t0 = now();
    fence(b, pinned_back, GIB);
    double t_fence_pinned = now() - t0;
    if (memcmp(pinned_back, init, GIB) != 0) {
        printf("FAIL: fenced data (pinned destination) differs\n");
        ++failures;
    }
    CU(cudaFreeHost(pinned_back));

    float* back = (float*)malloc(GIB);  // untouched: the fence pays the first touch
    t0 = now();
    fence(b, back, GIB);
    double t_fence_cold = now() - t0;
    bool same = memcmp(back, init, GIB) == 0;
    t0 = now();
    fence(b, back, GIB);
    double t_fence_warm = now() - t0;
    same = same && memcmp(back, init, GIB) == 0;
    if (!same) {
        printf("FAIL: fenced data differs from the host-initialised data\n");
        ++failures;
    }
    printf("raw: runtime second create + read %.1f ms, fence into fresh memory %.1f ms, fence again %.1f ms\n",
           t_second * 1e3, t_fence_cold * 1e3, t_fence_warm * 1e3);
    OK(celerity_buffer_release(b));
    OK(celerity_buffer_release(flag_buf));
    OK(celerity_wait());
    free(init);
    free(back);
    double h2d = GIB / t_read, d2h = GIB / t_fence_warm;
    row("H2D 1 GiB host-initialised buffer, first device read", fmt("%.1f GB/s", h2d / 1e9), fmt("%.1f GB/s pinned", g_pinned_h2d / 1e9),
        fmt("%.2f", h2d / g_pinned_h2d), ">= 0.90");
    row("H2D 1 GiB, create + first read (pools warm)", fmt("%.1f ms", t_second * 1e3), "", "", "");
    row("H2D 1 GiB host-initialised buffer, read 100 ms after its create", fmt("%.1f GB/s", GIB / t_read_late / 1e9),
        fmt("%.1f GB/s pinned", g_pinned_h2d / 1e9), fmt("%.2f", GIB / t_read_late / g_pinned_h2d), ">= 0.90");
    row("D2H 1 GiB fence into pinned user memory", fmt("%.1f GB/s", GIB / t_fence_pinned / 1e9), fmt("%.1f GB/s pinned", g_pinned_d2h / 1e9),
        fmt("%.2f", GIB / t_fence_pinned / g_pinned_d2h), ">= 0.90");
    row("D2H 1 GiB fence into user memory (2nd fence)", fmt("%.1f GB/s", d2h / 1e9), fmt("%.1f GB/s pinned", g_pinned_d2h / 1e9),
        fmt("%.2f", d2h / g_pinned_d2h), ">= 0.90");
    row("D2H 1 GiB fence into fresh user memory", fmt("%.1f GB/s", GIB / t_fence_cold / 1e9), "", fmt("%.2f", GIB / t_fence_cold / g_pinned_d2h), "");
    row("first create + first device read, 1 GiB", fmt("%.1f ms", t_first * 1e3), fmt("%.1f ms DMA", GIB / g_pinned_h2d * 1e3), "",
        "< 100 ms");
    row("create 1 GiB (the runtime's copy of the data)", fmt("%.1f ms", t_create * 1e3),
        fmt("%.1f ms", t_raw_create * 1e3) + " (16 threads into fresh huge pages)", "", "");
}

// What slows a read that comes a while after its buffer's create (`late-read` mode): each
// variant three times, as GB/s of the whole submit-to-wait, beside raw pinned copies made
// right away and after the same pause (an idle GPU or PCIe link may clock down).
static void spin_for(double seconds) {
    double end = now() + seconds;
    while (now() < end) {
    }
}
static void late_read() {
    const size_t n = GIB / sizeof(float);
    float* init = (float*)malloc(GIB);
    for (size_t i = 0; i < n; ++i) init[i] = (float)(i % 1000);
    float flag = 0;
    celerity_buffer* flag_buf = buffer(1, 1, 1, &flag, "flag");
    auto read = [&](celerity_buffer* b) {
        double t0 = now();
        submit("touch", 1, n, 1, {{b, CELERITY_ACCESS_READ, celerity_one_to_one()}, {flag_buf, CELERITY_ACCESS_READ_WRITE, celerity_all()}},
               k_touch);
        OK(celerity_wait());
        return GIB / (now() - t0) / 1e9;
    };
    celerity_buffer* warm = buffer(1, n, 1, init, "warm-up");
    read(warm);
    OK(celerity_buffer_release(warm));
    OK(celerity_wait());

    // raw: one registered 1 GiB host range to one device allocation
    void* dev = nullptr;
    CU(cudaMalloc(&dev, GIB));
    char* host = huge_page_malloc(GIB);
    memcpy(host, init, GIB);
    CU(cudaHostRegister(host, GIB, cudaHostRegisterDefault));
    auto raw = [&](double pause, bool spin) {
        if (spin) spin_for(pause); else usleep((useconds_t)(pause * 1e6));
        double t0 = now();
        CU(cudaMemcpy(dev, host, GIB, cudaMemcpyHostToDevice));
        return GIB / (now() - t0) / 1e9;
    };

    struct Variant {
        const char* name;
        double pause;
        bool spin, drain_previous;
    };
    const Variant variants[] = {
        {"read right after create, previous buffer's release waited for", 0, false, true},
        {"read 100 ms after create (sleep), previous buffer released just before the create", 0.1, false, false},
        {"read 100 ms after create (sleep), previous buffer's release waited for", 0.1, false, true},
        {"read 100 ms after create (spin), previous buffer's release waited for", 0.1, true, true},
        {"read 10 ms after create (sleep), previous buffer's release waited for", 0.01, false, true},
    };
    celerity_buffer* previous = nullptr;
    for (int round = 0; round < 3; ++round) {
        printf("raw pinned H2D: right away %.1f, after 100 ms sleep %.1f, after 100 ms spin %.1f, after 10 ms sleep %.1f GB/s\n",
               raw(0, false), raw(0.1, false), raw(0.1, true), raw(0.01, false));
        for (const Variant& v : variants) {
            if (previous != nullptr) {
                OK(celerity_buffer_release(previous));
                if (v.drain_previous) OK(celerity_wait());
            }
            celerity_buffer* b = buffer(1, n, 1, init, "user-1GiB");
            if (v.spin) spin_for(v.pause); else if (v.pause > 0) usleep((useconds_t)(v.pause * 1e6));
            printf("runtime: %-85s %.1f GB/s\n", v.name, read(b));
            previous = b;
        }
    }
    OK(celerity_buffer_release(previous));
    OK(celerity_buffer_release(flag_buf));
    OK(celerity_wait());
    CU(cudaHostUnregister(host));
    free(host);
    CU(cudaFree(dev));
    free(init);
}

static void raw_launches(int count, double* independent, double* chained) {
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 100; ++i) empty_kernel<<<1, 1, 0, s>>>();
    CU(cudaStreamSynchronize(s));
    double t0 = now();
    for (int i = 0; i < count; ++i) empty_kernel<<<1, 1, 0, s>>>();
    CU(cudaStreamSynchronize(s));
    *independent = (now() - t0) / count;
    *chained = *independent;  // on one stream every launch is ordered after the previous one
    CU(cudaStreamDestroy(s));
}

static void task_floor() {
    const int count = 10000;
    double raw_ind, raw_chain;
    raw_launches(count, &raw_ind, &raw_chain);
    for (int i = 0; i < 200; ++i) submit("empty", 1, 1, 1, {}, k_empty);
    OK(celerity_wait());
    double t0 = now();
    for (int i = 0; i < count; ++i) submit("empty", 1, 1, 1, {}, k_empty);
    OK(celerity_wait());
    double ind = (now() - t0) / count;

    float zero = 0;
    celerity_buffer* b = buffer(1, 1, 1, &zero, "chain");
    for (int i = 0; i < 200; ++i) submit("chain", 1, 1, 1, {{b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one()}}, k_empty);
    OK(celerity_wait());
    t0 = now();
    for (int i = 0; i < count; ++i) submit("chain", 1, 1, 1, {{b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one()}}, k_empty);
    OK(celerity_wait());
    double chain = (now() - t0) / count;
    OK(celerity_buffer_release(b));
    row("per task, 10,000 independent empty kernels", fmt("%.2f us", ind * 1e6), fmt("%.2f us/launch", raw_ind * 1e6), fmt("%.2f", ind / raw_ind),
        "<= 5 us");
    row("per task, 10,000 chained empty kernels", fmt("%.2f us", chain * 1e6), fmt("%.2f us/launch", raw_chain * 1e6),
        fmt("%.2f", chain / raw_chain), "<= 5 us");
}

// Raw CUDA only: what an event per kernel costs, and whether CUDA graphs launch empty kernels
// faster than a stream does (issue 16's "beyond the raw launch rate"). Every figure is µs per
// kernel over `count` kernels, the stream drained at the end.
static void graph_options() {
    const int count = 10000;
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* slots;
    CU(cudaMalloc(&slots, 2 * sizeof(float)));
    auto per_kernel = [&](const char* what, const std::function<void()>& run) {
        run();  // warm-up: instantiation caches, lazy module loading
        CU(cudaStreamSynchronize(s));
        double best = 1e9;
        for (int rep = 0; rep < 3; ++rep) {
            double t0 = now();
            run();
            CU(cudaStreamSynchronize(s));
            best = std::min(best, (now() - t0) / count);
        }
        printf("raw: graphs: %s: %.2f us per kernel (best of 3)\n", what, best * 1e6);
        return best;
    };
    double stream = per_kernel("stream launches", [&] {
        for (int i = 0; i < count; ++i) empty_kernel<<<1, 1, 0, s>>>();
    });
    std::vector<cudaEvent_t> events(64);
    for (auto& e : events) CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    double with_event = per_kernel("stream launches, an event recorded after each", [&] {
        for (int i = 0; i < count; ++i) {
            empty_kernel<<<1, 1, 0, s>>>();
            CU(cudaEventRecord(events[i % events.size()], s));
        }
    });
    // Another thread querying the newest event all the time, as an executor polling completions.
    double queried = per_kernel("stream launches, an event after each, queried by another thread", [&] {
        std::atomic<int> newest{-1};
        std::atomic<bool> done{false};
        std::thread poller([&] {
            while (!done.load(std::memory_order_relaxed)) {
                int i = newest.load(std::memory_order_acquire);
                if (i >= 0) (void)cudaEventQuery(events[i % events.size()]);
            }
        });
        for (int i = 0; i < count; ++i) {
            empty_kernel<<<1, 1, 0, s>>>();
            CU(cudaEventRecord(events[i % events.size()], s));
            newest.store(i, std::memory_order_release);
        }
        done = true;
        poller.join();
    });
    row("raw: an event recorded per kernel / and queried by a second thread", fmt("%.2f us", with_event * 1e6) + " / " + fmt("%.2f us", queried * 1e6),
        fmt("%.2f us/launch", stream * 1e6), fmt("%.2f", with_event / stream) + " / " + fmt("%.2f", queried / stream), "");

    // A pattern captured once and replayed: the best case of replaying an iteration's kernels.
    for (int k : {1, 4, 16, 64}) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < k; ++i) empty_kernel<<<1, 1, 0, s>>>();
        CU(cudaStreamEndCapture(s, &graph));
        CU(cudaGraphInstantiate(&exec, graph, 0));
        char what[96];
        snprintf(what, sizeof what, "replay of one captured graph of %d kernels", k);
        double replay = per_kernel(what, [&] {
            for (int i = 0; i < count / k; ++i) CU(cudaGraphLaunch(exec, s));
        });
        row(fmt("raw: %.0f kernels per graph, captured once and replayed", k), fmt("%.2f us", replay * 1e6),
            fmt("%.2f us/launch", stream * 1e6), fmt("%.2f", replay / stream), "");
        CU(cudaGraphExecDestroy(exec));
        CU(cudaGraphDestroy(graph));
    }
    // Every batch captured anew (the launchers run again, their arguments may change: here the
    // slot pointer alternates) and applied to one instantiated graph by cudaGraphExecUpdate:
    // what a runtime that cannot know a launcher's arguments in advance would pay.
    for (int k : {1, 2, 4, 16, 64}) {
        cudaGraphExec_t exec = nullptr;
        auto capture = [&](int batch) {
            cudaGraph_t graph;
            CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < k; ++i) spin_kernel<<<1, 1, 0, s>>>(slots + (batch & 1), 0);
            CU(cudaStreamEndCapture(s, &graph));
            return graph;
        };
        char what[96];
        snprintf(what, sizeof what, "batches of %d kernels captured anew and applied by cudaGraphExecUpdate", k);
        double updated = per_kernel(what, [&] {
            for (int b = 0; b < count / k; ++b) {
                cudaGraph_t graph = capture(b);
                if (exec == nullptr) {
                    CU(cudaGraphInstantiate(&exec, graph, 0));
                } else {
                    cudaGraphExecUpdateResultInfo info;
                    CU(cudaGraphExecUpdate(exec, graph, &info));
                }
                CU(cudaGraphLaunch(exec, s));
                CU(cudaGraphDestroy(graph));
            }
        });
        row(fmt("raw: %.0f kernels per graph, captured anew each batch (cudaGraphExecUpdate)", k), fmt("%.2f us", updated * 1e6),
            fmt("%.2f us/launch", stream * 1e6), fmt("%.2f", updated / stream), "");
        CU(cudaGraphExecDestroy(exec));
    }
    double args_stream = per_kernel("stream launches of the same kernel with arguments", [&] {
        for (int i = 0; i < count; ++i) spin_kernel<<<1, 1, 0, s>>>(slots + (i & 1), 0);
    });
    printf("raw: graphs: (the kernel with arguments launched on the stream: %.2f us)\n", args_stream * 1e6);
    for (auto& e : events) CU(cudaEventDestroy(e));
    CU(cudaFree(slots));
    CU(cudaStreamDestroy(s));
}

// Two independent 20 ms kernels: overlapped when they run on different streams.
static void overlap() {
    submit("spin", 1, 1, 1, {}, k_spin, (void*)(size_t)1000);
    OK(celerity_wait());
    double t0 = now();
    submit("long-a", 1, 1, 1, {}, k_spin, (void*)(size_t)20000000);
    submit("long-b", 1, 1, 1, {}, k_spin, (void*)(size_t)20000000);
    OK(celerity_wait());
    double t = now() - t0;
    row("two independent 20 ms kernels", fmt("%.1f ms", t * 1e3), "20 ms overlapped, 40 ms serial", "", "overlap (~20 ms)");
}

static double interpolate_metg(const std::vector<std::pair<double, double>>& eff) {
    for (size_t i = 0; i < eff.size(); ++i) {
        if (eff[i].second >= 0.5) {
            if (i == 0) return eff[0].first;
            auto [d0, e0] = eff[i - 1];
            auto [d1, e1] = eff[i];
            return d0 + (0.5 - e0) * (d1 - d0) / (e1 - e0);
        }
    }
    return NAN;
}

static void metg_sweep() {
    const int count = 2000;
    std::vector<unsigned> durations = {1000, 2000, 3000, 4000, 6000, 8000, 12000, 16000, 32000};
    std::vector<std::pair<double, double>> rt, raw;
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* slot = nullptr;
    CU(cudaMalloc(&slot, sizeof(float)));
    float zero = 0;
    celerity_buffer* b = buffer(1, 1, 1, &zero, "metg");
    for (unsigned ns : durations) {
        double t0 = now();
        for (int i = 0; i < count; ++i) spin_kernel<<<1, 1, 0, s>>>(slot, ns);
        CU(cudaStreamSynchronize(s));
        double t_raw = now() - t0;
        for (int i = 0; i < 50; ++i) submit("metg", 1, 1, 1, {{b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one()}}, k_spin, (void*)(size_t)ns);
        OK(celerity_wait());
        t0 = now();
        for (int i = 0; i < count; ++i)
            submit("metg", 1, 1, 1, {{b, CELERITY_ACCESS_READ_WRITE, celerity_one_to_one()}}, k_spin, (void*)(size_t)ns);
        OK(celerity_wait());
        double t_rt = now() - t0;
        double ideal = count * ns * 1e-9;
        rt.push_back({ns * 1e-3, ideal / t_rt});
        raw.push_back({ns * 1e-3, ideal / t_raw});
        printf("raw: metg kernel %.0f us: runtime efficiency %.3f, raw %.3f\n", ns * 1e-3, ideal / t_rt, ideal / t_raw);
    }
    OK(celerity_buffer_release(b));
    CU(cudaFree(slot));
    CU(cudaStreamDestroy(s));
    row("METG(50 %), width-1 chain", fmt("%.1f us", interpolate_metg(rt)), fmt("%.1f us", interpolate_metg(raw)), "", "<= 4 us");
}

static void stencil() {
    const size_t n = 16384, steps = 100;
    const size_t count = n * n;
    float* init = (float*)malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i) init[i] = (float)((i * 2654435761u) % 1000) * 0.001f;

    // raw
    float *a = nullptr, *bb = nullptr;
    CU(cudaMalloc(&a, count * 4));
    CU(cudaMalloc(&bb, count * 4));
    CU(cudaMemcpy(a, init, count * 4, cudaMemcpyHostToDevice));
    dim3 block(32, 8), grid((unsigned)(n / 32), (unsigned)(n / 8));
    stencil_kernel<<<grid, block>>>(a, 0, bb, 0, 0, n, n);  // warm-up step (counted in the result)
    std::swap(a, bb);
    CU(cudaDeviceSynchronize());
    double t0 = now();
    for (size_t s = 0; s < steps; ++s) {
        stencil_kernel<<<grid, block>>>(a, 0, bb, 0, 0, n, n);
        std::swap(a, bb);
    }
    CU(cudaDeviceSynchronize());
    double t_raw = (now() - t0) / steps;
    float* raw_result = (float*)malloc(count * 4);
    CU(cudaMemcpy(raw_result, a, count * 4, cudaMemcpyDeviceToHost));
    CU(cudaFree(a));
    CU(cudaFree(bb));

    // runtime
    celerity_buffer* x = buffer(2, n, n, init, "stencil-a");
    celerity_buffer* y = buffer(2, n, n, nullptr, "stencil-b");
    auto step = [&](celerity_buffer* in, celerity_buffer* out) {
        submit("stencil", 2, n, n, {{in, CELERITY_ACCESS_READ, celerity_neighborhood(1, 1, 0)}, {out, CELERITY_ACCESS_DISCARD_WRITE, celerity_one_to_one()}},
               k_stencil);
    };
    step(x, y);
    std::swap(x, y);
    OK(celerity_wait());
    t0 = now();
    for (size_t s = 0; s < steps; ++s) {
        step(x, y);
        std::swap(x, y);
    }
    OK(celerity_wait());
    double t_rt = (now() - t0) / steps;
    float* result = (float*)malloc(count * 4);
    fence(x, result, count * 4);
    bool same = memcmp(result, raw_result, count * 4) == 0;
    if (!same) {
        printf("FAIL: stencil result differs from the raw loop\n");
        ++failures;
    }
    OK(celerity_buffer_release(x));
    OK(celerity_buffer_release(y));
    OK(celerity_wait());
    free(init);
    free(result);
    free(raw_result);
    row("stencil 16384^2 x 100, time per step", fmt("%.3f ms", t_rt * 1e3), fmt("%.3f ms", t_raw * 1e3),
        fmt("%.3f x raw throughput", t_raw / t_rt) + (same ? ", bit-identical" : ", DIFFERS"), ">= 0.99");
}

static void launch_error() {
    submit("bad-launch", 1, 1, 1, {}, k_fail);
    celerity_status s = celerity_wait();
    printf("raw: a failing launch: %s: %s\n", celerity_status_string(s), s == CELERITY_OK ? "" : celerity_last_error_message());
    row("a failing launch is reported as", s == CELERITY_OK ? "OK (!)" : celerity_last_error_message(), "", "", "names task, kernel, CUDA error");
}

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "all";
    bool runtime = mode == "all" || mode == "floor" || mode == "transfers" || mode == "late-read";
    int dev = 0;
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    CU(cudaFree(nullptr));  // create the primary context
    printf("device: %s\n", prop.name);
    printf("| figure | runtime | raw CUDA | ratio | target |\n|---|---|---|---|---|\n");
    if (mode == "register") {
        register_options();
        return 0;
    }
    if (mode == "staging") {
        staging_options();
        return 0;
    }
    if (mode == "graphs") {
        graph_options();
        return 0;
    }
    if (mode != "floor" && mode != "late-read") transfer_options();
    if (runtime) {
        celerity_config* cfg = nullptr;
        OK(celerity_config_create(&cfg));
        OK(celerity_config_set(cfg, "devices", "cuda"));
        // The raw baselines check nothing; the cost of device-side boundary records is measured
        // by run.sh with CELERITY_ACCESSOR_BOUNDARY_CHECK=on (the rows then say so).
        const char* check = getenv("CELERITY_ACCESSOR_BOUNDARY_CHECK");
        if (check == nullptr) OK(celerity_config_set(cfg, "accessor_boundary_check", "off"));
        if (check != nullptr && strcmp(check, "off") != 0) g_row_suffix = std::string(" (accessor_boundary_check=") + check + ")";
        const char* graphs = getenv("CELERITY_CUDA_GRAPHS");
        if (graphs != nullptr && strcmp(graphs, "auto") != 0) g_row_suffix += std::string(" (cuda_graphs=") + graphs + ")";
        OK(celerity_runtime_init(nullptr, nullptr, cfg));
        celerity_config_destroy(cfg);
        if (mode == "all" || mode == "transfers") runtime_transfers();
        if (mode == "late-read") late_read();
        if (mode != "transfers" && mode != "late-read") task_floor();
        if (mode == "all") {
            overlap();
            metg_sweep();
            stencil();
            launch_error();  // last: the failure is reported again at shutdown
        }
        celerity_runtime_shutdown();
    }
    printf("failures: %d\n", failures);
    return failures == 0 ? 0 : 1;
}

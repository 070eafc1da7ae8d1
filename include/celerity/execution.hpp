// celerity/execution.hpp: how kernels and host tasks run. Host devices run a kernel item-wise
// over the chunk in nested loops; nd_range work groups run item-wise too, switching to one
// fiber per work item only once an item reaches group_barrier. Under nvcc a device lambda is
// launched as a CUDA kernel on the chunk's stream. Part of celerity.hpp.
#ifndef CELERITY_EXECUTION_HPP
#define CELERITY_EXECUTION_HPP

#include <exception>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <tuple>
#include <ucontext.h>
#include <vector>

#include "accessor.hpp"

#if defined(__has_include)
#if __has_include(<mpi.h>) && !defined(CELERITY_NO_MPI_HEADER)
// Only MPI's C API (the deprecated C++ bindings do not compile warning-free).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#define CELERITY_HAS_MPI_HEADER 1
#endif
#endif

#ifndef CELERITY_HOST_FIBER_STACK_SIZE
/// Stack bytes per work item of an nd_range kernel that uses group_barrier on a host device.
#define CELERITY_HOST_FIBER_STACK_SIZE (256 * 1024)
#endif

#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(CELERITY_FIBERS_UCONTEXT)
#define CELERITY_FIBERS_X86_64 1
// Saves the callee-saved registers and the FP control words on the current stack, stores the
// stack pointer to *save and continues on `target` (a stack saved the same way, or a new one
// prepared by host_group_runner::start_fiber). A COMDAT section keeps one copy per program
// however many translation units include this header. swapcontext would also save the signal
// mask with a system call per switch; fibers here never change it.
__asm__(".pushsection .text.celerity_fiber_switch,\"axG\",@progbits,celerity_fiber_switch,comdat\n"
        ".weak celerity_fiber_switch\n"
        ".hidden celerity_fiber_switch\n"
        ".type celerity_fiber_switch,@function\n"
        "celerity_fiber_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size celerity_fiber_switch, .-celerity_fiber_switch\n"
        ".popsection\n");
extern "C" void celerity_fiber_switch(void** save, void* target);
#endif

namespace celerity {
namespace detail {

/// Runs the work items of one host work group. Items run one after another on the calling
/// thread's stack until one of them reaches a barrier; from then on every item of the group
/// gets a fiber (its own stack), and the group advances barrier by barrier. SYCL requires every
/// item of a group to reach the same barriers, so a group whose first item finishes without
/// one has none.
class host_group_runner {
  public:
    using item_fn = void (*)(void* closure, size_t local_linear_id);

    static host_group_runner& current() {
        static thread_local host_group_runner runner;
        return runner;
    }

    void run_group(size_t group_size, item_fn fn, void* closure) {
        m_fn = fn;
        m_closure = closure;
        m_error = nullptr;
        ensure_fibers(1);
        start_fiber(0, 0);
        resume(0);
        if(m_fibers[0]->finished) {
            m_mode = mode::direct;
            for(size_t i = 1; i < group_size; ++i) fn(closure, i);
            m_mode = mode::none;
        } else {
            ensure_fibers(group_size);
            for(size_t i = 1; i < group_size; ++i) {
                start_fiber(i, i);
                resume(i);
            }
            for(;;) {
                size_t finished = 0;
                for(size_t i = 0; i < group_size; ++i) finished += m_fibers[i]->finished ? 1 : 0;
                if(finished == group_size) break;
                if(finished != 0 && !m_error) {
                    m_error = std::make_exception_ptr(error(CELERITY_ERROR_TASK_FAILED, "group_barrier was not reached by every work item of a group"));
                }
                if(m_error) {
                    // Fibers still waiting are abandoned (their stacks are reused); nothing
                    // owned by the runtime lives on them.
                    break;
                }
                for(size_t i = 0; i < group_size; ++i) {
                    if(!m_fibers[i]->finished) resume(i);
                }
            }
        }
        m_mode = mode::none;
        if(m_error) std::rethrow_exception(m_error);
    }

    /// group_barrier on a host device.
    void barrier() {
        if(m_mode == mode::direct) throw error(CELERITY_ERROR_TASK_FAILED, "group_barrier was not reached by every work item of a group");
        if(m_mode != mode::fiber) throw error(CELERITY_ERROR_TASK_FAILED, "group_barrier called outside an nd_range kernel");
        switch_to_main(*m_fibers[m_current]);
    }

  private:
    enum class mode { none, fiber, direct };
    struct fiber {
#if defined(CELERITY_FIBERS_X86_64)
        void* sp = nullptr; // the suspended fiber's stack pointer
#else
        ucontext_t context;
#endif
        std::unique_ptr<char[]> stack;
        size_t local_id = 0;
        bool finished = true;
    };
    std::vector<std::unique_ptr<fiber>> m_fibers; // stable addresses: suspended contexts must not move
#if defined(CELERITY_FIBERS_X86_64)
    void* m_main_sp = nullptr;
#else
    ucontext_t m_main;
#endif
    size_t m_current = 0;
    mode m_mode = mode::none;
    item_fn m_fn = nullptr;
    void* m_closure = nullptr;
    std::exception_ptr m_error;

    void ensure_fibers(size_t n) {
        while(m_fibers.size() < n) m_fibers.push_back(std::make_unique<fiber>());
    }
    void start_fiber(size_t index, size_t local_id) {
        fiber& f = *m_fibers[index];
        if(!f.stack) f.stack.reset(new char[CELERITY_HOST_FIBER_STACK_SIZE]);
        f.local_id = local_id;
        f.finished = false;
#if defined(CELERITY_FIBERS_X86_64)
        // The frame celerity_fiber_switch pops: FP control words, six registers, then `entry`
        // as the return address, with the stack aligned as after a call.
        auto top = reinterpret_cast<uintptr_t>(f.stack.get() + CELERITY_HOST_FIBER_STACK_SIZE) & ~uintptr_t{15};
        auto* frame = reinterpret_cast<uint64_t*>(top) - 9; // entry starts with rsp = top - 8
        uint32_t control[2];
        __asm__ volatile("stmxcsr %0\n fnstcw %1" : "=m"(control[0]), "=m"(control[1]));
        std::memcpy(&frame[0], control, sizeof control);
        for(int r = 1; r <= 6; ++r) frame[r] = 0;
        frame[7] = reinterpret_cast<uint64_t>(&host_group_runner::entry);
        frame[8] = 0; // entry never returns
        f.sp = frame;
#else
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.get();
        f.context.uc_stack.ss_size = CELERITY_HOST_FIBER_STACK_SIZE;
        f.context.uc_link = &m_main;
        makecontext(&f.context, &host_group_runner::entry, 0);
#endif
    }
    void resume(size_t index) {
        m_current = index;
        m_mode = mode::fiber;
#if defined(CELERITY_FIBERS_X86_64)
        celerity_fiber_switch(&m_main_sp, m_fibers[index]->sp);
#else
        swapcontext(&m_main, &m_fibers[index]->context);
#endif
    }
    void switch_to_main(fiber& f) {
#if defined(CELERITY_FIBERS_X86_64)
        celerity_fiber_switch(&f.sp, m_main_sp);
#else
        swapcontext(&f.context, &m_main);
#endif
    }
    static void entry() {
        host_group_runner& self = current();
        fiber& f = *self.m_fibers[self.m_current];
        try {
            self.m_fn(self.m_closure, f.local_id);
        } catch(...) {
            if(!self.m_error) self.m_error = std::current_exception();
        }
        f.finished = true;
        // Back to the runner for good (ucontext: returning switches to uc_link).
#if defined(CELERITY_FIBERS_X86_64)
        self.switch_to_main(f);
        __builtin_unreachable();
#endif
    }
};

/// Local memory for the work groups this thread runs.
inline unsigned char* host_local_memory(size_t bytes) {
    static thread_local std::vector<unsigned char> memory;
    if(memory.size() < bytes + 64) memory.resize(bytes + 64);
    auto address = reinterpret_cast<uintptr_t>(memory.data());
    return memory.data() + ((64 - address % 64) % 64);
}

template <int Dims, typename Kernel, typename... Reducers>
void host_range_loops(const Kernel& kernel, const celerity_chunk& c, const range<Dims>& global, const id<Dims>& offset, Reducers&... reducers) {
    // A local copy: the compiler then knows that no store of the kernel aliases the accessors'
    // geometry, keeps it in registers and hoists the row arithmetic out of the inner loop.
    const Kernel k = kernel;
    if constexpr(Dims == 0) {
        k(item<0>(id<0>(), global, offset), reducers...);
        return;
    } else {
        // The first item of each innermost row runs on its own: in the loop over the rest the
        // compiler knows the index lies above the row's start, so a stencil's `j > 0` or
        // `j == 0` boundary test leaves the hot loop (wave_sim: 28 to 19 instructions an item).
        const size_t first = c.offset[Dims - 1], end = first + c.range[Dims - 1];
        if(first >= end) return;
        if constexpr(Dims == 1) {
            k(item<1>(id<1>(first), global, offset), reducers...);
            for(size_t i0 = first + 1; i0 < end; ++i0) k(item<1>(id<1>(i0), global, offset), reducers...);
        } else if constexpr(Dims == 2) {
            const size_t end0 = c.offset[0] + c.range[0];
            for(size_t i0 = c.offset[0]; i0 < end0; ++i0) {
                k(item<2>(id<2>(i0, first), global, offset), reducers...);
                for(size_t i1 = first + 1; i1 < end; ++i1) k(item<2>(id<2>(i0, i1), global, offset), reducers...);
            }
        } else {
            const size_t end0 = c.offset[0] + c.range[0], end1 = c.offset[1] + c.range[1];
            for(size_t i0 = c.offset[0]; i0 < end0; ++i0) {
                for(size_t i1 = c.offset[1]; i1 < end1; ++i1) {
                    k(item<3>(id<3>(i0, i1, first), global, offset), reducers...);
                    for(size_t i2 = first + 1; i2 < end; ++i2) k(item<3>(id<3>(i0, i1, i2), global, offset), reducers...);
                }
            }
        }
    }
}

template <int Dims>
CELERITY_HD id<Dims> delinearize(size_t linear, const range<Dims>& r) {
    id<Dims> i;
    for(int d = Dims - 1; d >= 0; --d) {
        i[d] = linear % r[d];
        linear /= r[d];
    }
    return i;
}

template <int Dims, typename Kernel, typename... Reducers>
struct host_group_closure {
    const Kernel* kernel;
    id<Dims> group_id;
    range<Dims> global;
    range<Dims> local;
    id<Dims> offset;
    std::tuple<Reducers*...> reducers;
    static void run_item(void* self_ptr, size_t local_linear) {
        auto& self = *static_cast<host_group_closure*>(self_ptr);
        const id<Dims> local_id = delinearize(local_linear, self.local);
        const id<Dims> global_id = self.offset + self.group_id * id<Dims>(self.local) + local_id;
        const nd_item<Dims> it(global_id, local_id, self.group_id, self.global, self.local, self.offset);
        std::apply([&](auto*... r) { (*self.kernel)(it, *r...); }, self.reducers);
    }
};

template <int Dims, typename Kernel, typename... Reducers>
void host_nd_range_groups(const Kernel& k, const celerity_chunk& c, const range<Dims>& global, const range<Dims>& local, const id<Dims>& offset,
    Reducers&... reducers) {
    range<Dims> groups;
    id<Dims> first_group;
    for(int d = 0; d < Dims; ++d) {
        groups[d] = c.range[d] / local[d];
        first_group[d] = (c.offset[d] - offset[d]) / local[d];
    }
    host_group_closure<Dims, Kernel, Reducers...> closure{&k, {}, global, local, offset, std::tuple<Reducers*...>(&reducers...)};
    auto& runner = host_group_runner::current();
    for(size_t g = 0; g < groups.size(); ++g) {
        closure.group_id = first_group + delinearize(g, groups);
        runner.run_group(local.size(), &host_group_closure<Dims, Kernel, Reducers...>::run_item, &closure);
    }
}

// ---- CUDA ------------------------------------------------------------------------------------
template <typename Kernel>
constexpr bool is_device_lambda() {
#if defined(__CUDACC__) && defined(__CUDACC_EXTENDED_LAMBDA__)
    return __nv_is_extended_device_lambda_closure_type(Kernel) || __nv_is_extended_host_device_lambda_closure_type(Kernel);
#else
    return false;
#endif
}
template <typename Kernel>
constexpr bool is_host_callable() {
#if defined(__CUDACC__) && defined(__CUDACC_EXTENDED_LAMBDA__)
    return !__nv_is_extended_device_lambda_closure_type(Kernel);
#else
    return true;
#endif
}

#if defined(__CUDACC__)
template <int Dims>
struct cuda_geometry {
    size_t chunk_offset[3];
    size_t chunk_range[3];
    range<Dims> global;
    range<Dims> local;
    id<Dims> offset;
    size_t count;
};

template <int Dims, typename Kernel, typename... Reducers>
__global__ void cuda_range_kernel(Kernel k, cuda_geometry<Dims> g, Reducers... reducers) {
    const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if(t >= g.count) return;
    id<Dims> i;
    size_t rest = t;
    for(int d = Dims - 1; d >= 0; --d) {
        i[d] = g.chunk_offset[d] + rest % g.chunk_range[d];
        rest /= g.chunk_range[d];
    }
    k(item<Dims>(i, g.global, g.offset), reducers...);
}

template <int Dims, typename Kernel, typename... Reducers>
__global__ void cuda_nd_range_kernel(Kernel k, cuda_geometry<Dims> g, Reducers... reducers) {
    const unsigned block[3] = {blockIdx.x, blockIdx.y, blockIdx.z};
    const unsigned thread[3] = {threadIdx.x, threadIdx.y, threadIdx.z};
    id<Dims> local_id, group_id, global_id;
    for(int d = 0; d < Dims; ++d) {
        // CUDA's x is the fastest dimension, Celerity's the last.
        local_id[d] = thread[Dims - 1 - d];
        group_id[d] = (g.chunk_offset[d] - g.offset[d]) / g.local[d] + block[Dims - 1 - d];
        global_id[d] = g.offset[d] + group_id[d] * g.local[d] + local_id[d];
    }
    k(nd_item<Dims>(global_id, local_id, group_id, g.global, g.local, g.offset), reducers...);
}

inline void check_cuda(cudaError_t e, const char* what) {
    if(e != cudaSuccess) throw error(CELERITY_ERROR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}

template <bool ND, int Dims, typename Kernel, typename... Reducers>
void cuda_launch(const Kernel& k, const celerity_kernel_context& ctx, const range<Dims>& global, const range<Dims>& local, const id<Dims>& offset,
    size_t local_bytes, Reducers... reducers) {
    cuda_geometry<Dims> g{};
    for(int d = 0; d < 3; ++d) g.chunk_offset[d] = ctx.chunk.offset[d], g.chunk_range[d] = ctx.chunk.range[d];
    g.global = global;
    g.local = local;
    g.offset = offset;
    g.count = 1;
    for(int d = 0; d < Dims; ++d) g.count *= ctx.chunk.range[d];
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    if constexpr(ND) {
        unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
        for(int d = 0; d < Dims; ++d) {
            block[Dims - 1 - d] = static_cast<unsigned>(local[d]);
            grid[Dims - 1 - d] = static_cast<unsigned>(ctx.chunk.range[d] / local[d]);
        }
        cuda_nd_range_kernel<Dims><<<dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), local_bytes, stream>>>(k, g, reducers...);
    } else {
        (void)local_bytes;
        const unsigned threads = 256;
        const size_t blocks = (g.count + threads - 1) / threads;
        cuda_range_kernel<Dims><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(k, g, reducers...);
    }
    check_cuda(cudaGetLastError(), "kernel launch");
}
#endif

/// The state of one `parallel_for`, owned by the runtime until its last chunk ran here.
template <bool ND, int Dims, typename Kernel, typename... Descriptors>
struct kernel_closure {
    Kernel kernel;
    std::tuple<Descriptors...> reductions;
    range<Dims> local;
    size_t local_bytes;

    void run(const celerity_kernel_context& ctx) const {
        const range<Dims> global = range_from_c<Dims>(ctx.chunk.global_range);
        const id<Dims> offset = id_from_c<Dims>(ctx.global_offset);
        if(ctx.backend == CELERITY_BACKEND_CUDA) {
#if defined(__CUDACC__)
            if constexpr(is_device_lambda<Kernel>()) {
                const bool word_sized = ((sizeof(std::declval<Descriptors>().identity) == 4 || sizeof(std::declval<Descriptors>().identity) == 8) && ...);
                if(!word_sized) throw error(CELERITY_ERROR_UNSUPPORTED, "reductions on CUDA devices need 4- or 8-byte elements");
                const hydration_scope scope(&ctx, nullptr);
                const Kernel hydrated = kernel;
                std::apply(
                    [&](const auto&... d) {
                        cuda_launch<ND>(hydrated, ctx, global, local, offset, local_bytes,
                            reducer(d.identity, d.op, static_cast<std::decay_t<decltype(d.identity)>*>(ctx.reductions[d.index]))...);
                    },
                    reductions);
                return;
            }
#endif
            throw error(CELERITY_ERROR_UNSUPPORTED, "this kernel cannot run on a CUDA device: build it with nvcc --extended-lambda and mark the lambda "
                                                    "CELERITY_DEVICE_LAMBDA (__host__ __device__)");
        }
        if constexpr(is_host_callable<Kernel>()) {
            const hydration_scope scope(&ctx, ND ? host_local_memory(local_bytes) : nullptr);
            const Kernel hydrated = kernel;
            std::apply(
                [&](const auto&... d) {
                    auto reducers = std::make_tuple(reducer(d.identity, d.op, static_cast<std::decay_t<decltype(d.identity)>*>(nullptr))...);
                    std::apply(
                        [&](auto&... r) {
                            if constexpr(ND) {
                                host_nd_range_groups(hydrated, ctx.chunk, global, local, offset, r...);
                            } else {
                                host_range_loops(hydrated, ctx.chunk, global, offset, r...);
                            }
                        },
                        reducers);
                    write_back(ctx, reducers, std::index_sequence_for<Descriptors...>());
                },
                reductions);
        } else {
            throw error(CELERITY_ERROR_UNSUPPORTED, "this kernel is a __device__-only lambda and cannot run on a host device");
        }
    }

    template <typename Tuple, size_t... I>
    void write_back(const celerity_kernel_context& ctx, const Tuple& reducers, std::index_sequence<I...>) const {
        (combine_into(ctx.reductions[std::get<I>(reductions).index], std::get<I>(reducers), std::get<I>(reductions).op), ...);
    }
    template <typename R, typename Op>
    static void combine_into(void* target, const R& r, const Op& op) {
        using T = std::decay_t<decltype(r.value())>;
        T current;
        std::memcpy(&current, target, sizeof(T));
        current = op(current, r.value());
        std::memcpy(target, &current, sizeof(T));
    }
};

/// Calls `closure->run(ctx)`; an exception fails the chunk with its message instead of
/// crossing into the runtime.
template <typename Closure>
int invoke_closure(const celerity_kernel_context* ctx, void* user_data) noexcept {
    try {
        static_cast<const Closure*>(user_data)->run(*ctx);
        return 0;
    } catch(const std::exception& e) {
        celerity_kernel_fail(ctx, e.what());
    } catch(...) {
        celerity_kernel_fail(ctx, "an exception of unknown type");
    }
    return 1;
}
template <typename Closure>
void delete_closure(void* user_data) noexcept {
    delete static_cast<Closure*>(user_data);
}

enum class host_task_shape { no_args, partition, collective };

} // namespace detail

namespace experimental {
/// The partition of a collective host task: one per node, with the group's communicator.
class collective_partition : public partition<1> {
  public:
    collective_partition(const range<1>& global, const subrange<1>& sr, const void* comm) : partition<1>(global, sr), m_comm(comm) {}
    /// Pointer to the collective group's `MPI_Comm` (NULL in a build without MPI).
    const void* get_collective_mpi_comm_ptr() const { return m_comm; }
#if defined(CELERITY_HAS_MPI_HEADER)
    /// The collective group's communicator. In one process started without an MPI launcher the
    /// runtime runs without MPI; this then initialises MPI (finalised at exit) and returns
    /// MPI_COMM_SELF, so that MPI libraries (parallel HDF5) work as under C++ Celerity, which
    /// always initialises MPI.
    MPI_Comm get_collective_mpi_comm() const {
        if(m_comm != nullptr) return *static_cast<const MPI_Comm*>(m_comm);
        ensure_mpi_initialized();
        return MPI_COMM_SELF;
    }
#endif
  private:
    const void* m_comm;
#if defined(CELERITY_HAS_MPI_HEADER)
    static void ensure_mpi_initialized() {
        static std::once_flag once;
        std::call_once(once, [] {
            int initialized = 0;
            MPI_Initialized(&initialized);
            if(initialized) return;
            int provided = 0;
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
            std::atexit([] {
                int finalized = 0;
                MPI_Finalized(&finalized);
                if(!finalized) MPI_Finalize();
            });
        });
    }
#endif
};
} // namespace experimental

namespace detail {
template <int Dims, typename F>
struct host_task_closure {
    F f;
    void run(const celerity_kernel_context& ctx) const {
        const hydration_scope scope(&ctx, nullptr);
        const F hydrated = f;
        const range<Dims> global = range_from_c<Dims>(ctx.chunk.global_range);
        const subrange<Dims> sr(id_from_c<Dims>(ctx.chunk.offset), range_from_c<Dims>(ctx.chunk.range));
        if constexpr(std::is_invocable_v<const F&, experimental::collective_partition>) {
            hydrated(experimental::collective_partition(range<1>(ctx.num_nodes), subrange<1>(id<1>(ctx.node), range<1>(1)), ctx.mpi_comm));
        } else if constexpr(std::is_invocable_v<const F&, partition<Dims>>) {
            hydrated(partition<Dims>(global, sr));
        } else {
            static_assert(std::is_invocable_v<const F&>, "a host task takes no argument, a celerity::partition<Dims> or a collective_partition");
            hydrated();
        }
    }
};
} // namespace detail

// ---- handler templates -------------------------------------------------------------------------
namespace detail {
template <bool ND, int Dims, typename Tuple, size_t... I>
void submit_kernel(handler& cgh, const range<Dims>& global, const range<Dims>& local, const id<Dims>& offset, size_t local_bytes, Tuple&& args,
    std::index_sequence<I...>) {
    constexpr size_t n = std::tuple_size_v<std::decay_t<Tuple>>;
    using kernel_type = std::decay_t<std::tuple_element_t<n - 1, std::decay_t<Tuple>>>;
    using closure = kernel_closure<ND, Dims, kernel_type, std::decay_t<std::tuple_element_t<I, std::decay_t<Tuple>>>...>;
    auto* c = new closure{std::get<n - 1>(args), std::make_tuple(std::get<I>(args)...), local, local_bytes};
    size_t r[3], o[3];
    to_c_range(global, r);
    to_c_offset(offset, o);
    cgh.submit_with([&](celerity_cg* cg) {
        // A device lambda's chunk is one kernel launch (kernel_closure::run), so CUDA graphs may capture it.
        if constexpr(is_device_lambda<kernel_type>()) {
            if(const auto status = celerity_cg_hint_launch_only(cg); status != CELERITY_OK) return status; // only for a NULL cg
        }
        return celerity_submit_parallel_for(cg, static_cast<uint32_t>(Dims), r, o, &invoke_closure<closure>, c, &delete_closure<closure>);
    });
}
} // namespace detail

template <typename KernelName, int Dims, typename... Rest>
void handler::parallel_for(range<Dims> global_range, Rest&&... rest) {
    parallel_for<KernelName>(global_range, id<Dims>(), std::forward<Rest>(rest)...);
}

template <typename KernelName, int Dims, typename... Rest>
void handler::parallel_for(range<Dims> global_range, id<Dims> offset, Rest&&... rest) {
    static_assert(sizeof...(Rest) >= 1, "parallel_for needs a kernel");
    check_mappers(Dims);
    detail::submit_kernel<false>(*this, global_range, detail::ones<Dims>(), offset, 0, std::forward_as_tuple(std::forward<Rest>(rest)...),
        std::make_index_sequence<sizeof...(Rest) - 1>());
}

template <typename KernelName, int Dims, typename... Rest>
void handler::parallel_for(nd_range<Dims> execution_range, Rest&&... rest) {
    static_assert(sizeof...(Rest) >= 1, "parallel_for needs a kernel");
    check_mappers(Dims);
    if constexpr(Dims > 0) experimental::constrain_split(*this, execution_range.get_local_range());
    detail::submit_kernel<true>(*this, execution_range.get_global_range(), execution_range.get_local_range(), execution_range.get_offset(), m_local_bytes,
        std::forward_as_tuple(std::forward<Rest>(rest)...), std::make_index_sequence<sizeof...(Rest) - 1>());
}

namespace detail {
template <int Dims, typename F>
void submit_host_task(handler& cgh, celerity_host_task_kind kind, const range<Dims>& global, celerity_collective_group* group, F&& f) {
    using closure = host_task_closure<Dims, std::decay_t<F>>;
    auto* c = new closure{std::forward<F>(f)};
    size_t r[3];
    to_c_range(global, r);
    cgh.submit_with([&](celerity_cg* cg) {
        return celerity_submit_host_task(cg, kind, static_cast<uint32_t>(Dims), r, group, &invoke_closure<closure>, c, &delete_closure<closure>);
    });
}
} // namespace detail

template <typename F>
void handler::host_task(on_master_node_tag, F&& f) {
    check_mappers(0);
    detail::submit_host_task<0>(*this, CELERITY_HOST_TASK_ON_MASTER_NODE, range<0>(), nullptr, std::forward<F>(f));
}
template <typename F>
void handler::host_task(once_tag, F&& f) {
    check_mappers(0);
    detail::submit_host_task<0>(*this, CELERITY_HOST_TASK_ONCE, range<0>(), nullptr, std::forward<F>(f));
}
template <typename F>
void handler::host_task(const experimental::collective_tag& tag, F&& f) {
    check_mappers(1);
    detail::submit_host_task<1>(*this, CELERITY_HOST_TASK_COLLECTIVE, range<1>(1), tag.group, std::forward<F>(f));
}
template <int Dims, typename F>
void handler::host_task(range<Dims> global_range, F&& f) {
    check_mappers(Dims);
    detail::submit_host_task<Dims>(*this, CELERITY_HOST_TASK_DISTRIBUTED, global_range, nullptr, std::forward<F>(f));
}

/// Waits until every work item of the group reached this point (host: fibers; CUDA:
/// __syncthreads).
template <int Dims>
CELERITY_HD void group_barrier(const group<Dims>&) {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#else
    detail::host_group_runner::current().barrier();
#endif
}

} // namespace celerity

#endif // CELERITY_EXECUTION_HPP

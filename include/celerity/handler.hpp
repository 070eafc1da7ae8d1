// celerity/handler.hpp: the command-group handler (what accessors, side effects, reductions
// and hints register with) and the hydration state kernels see. Part of celerity.hpp; the
// parallel_for and host_task templates are defined in execution.hpp.
#ifndef CELERITY_HANDLER_HPP
#define CELERITY_HANDLER_HPP

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime.hpp"

namespace celerity {

/// Which memory an accessor refers to.
enum class access_mode { read, write, read_write, discard_write, discard_read_write, atomic };
enum class target { device, host_task };

/// Access tags: `celerity::accessor acc{buf, cgh, mapper, celerity::read_only}`.
template <access_mode Mode, target Target>
struct mode_tag_t {
    explicit constexpr mode_tag_t() = default;
};
inline constexpr mode_tag_t<access_mode::read, target::device> read_only{};
inline constexpr mode_tag_t<access_mode::write, target::device> write_only{};
inline constexpr mode_tag_t<access_mode::read_write, target::device> read_write{};
inline constexpr mode_tag_t<access_mode::read, target::host_task> read_only_host_task{};
inline constexpr mode_tag_t<access_mode::write, target::host_task> write_only_host_task{};
inline constexpr mode_tag_t<access_mode::read_write, target::host_task> read_write_host_task{};

/// The previous contents of the accessed region are not needed.
struct no_init_t {
    explicit constexpr no_init_t() = default;
};
inline constexpr no_init_t no_init{};

namespace property {
using no_init = no_init_t;
namespace reduction {
    /// The reduction does not include the buffer's previous value.
    struct initialize_to_identity {};
} // namespace reduction
} // namespace property

/// Host-task placement tags.
struct on_master_node_tag {};
inline constexpr on_master_node_tag on_master_node{};
struct once_tag {};
inline constexpr once_tag once{};

namespace experimental {
struct collective_tag {
    celerity_collective_group* group = nullptr;
    std::shared_ptr<void> keep; // the group stays alive while the tag does
};
/// `host_task(experimental::collective, f)` or `host_task(experimental::collective(group), f)`.
struct collective_tag_factory : collective_tag {
    collective_tag operator()(const collective_group& g) const { return collective_tag{g.get_handle(), nullptr}; }
};
inline const collective_tag_factory collective{};
} // namespace experimental

namespace detail {

constexpr celerity_access_mode to_c_mode(access_mode m) {
    switch(m) {
    case access_mode::read: return CELERITY_ACCESS_READ;
    case access_mode::write: return CELERITY_ACCESS_WRITE;
    case access_mode::discard_write: return CELERITY_ACCESS_DISCARD_WRITE;
    case access_mode::discard_read_write: return CELERITY_ACCESS_DISCARD_READ_WRITE;
    default: return CELERITY_ACCESS_READ_WRITE;
    }
}
constexpr access_mode with_no_init(access_mode m) {
    return m == access_mode::write ? access_mode::discard_write : m == access_mode::read_write ? access_mode::discard_read_write : m;
}

/// What the accessor copy constructors read while a kernel closure is being hydrated: the
/// chunk's context and its work-group local memory (host).
struct hydration_state {
    const celerity_kernel_context* ctx = nullptr;
    unsigned char* local_memory = nullptr;
};
inline hydration_state& hydration() {
    static thread_local hydration_state state;
    return state;
}
/// Sets the hydration state for its lifetime.
class hydration_scope {
  public:
    hydration_scope(const celerity_kernel_context* ctx, unsigned char* local_memory) { hydration() = {ctx, local_memory}; }
    ~hydration_scope() { hydration() = {}; }
    hydration_scope(const hydration_scope&) = delete;
    hydration_scope& operator=(const hydration_scope&) = delete;
};

struct unnamed_kernel;

} // namespace detail

/// The command-group handler passed to `queue::submit`'s function.
class handler {
  public:
    handler(const handler&) = delete;
    handler& operator=(const handler&) = delete;
    ~handler() { celerity_cg_destroy(m_cg); }

    template <typename KernelName = detail::unnamed_kernel, int Dims, typename... Rest>
    void parallel_for(range<Dims> global_range, Rest&&... rest);
    template <typename KernelName = detail::unnamed_kernel, int Dims, typename... Rest>
    void parallel_for(range<Dims> global_range, id<Dims> offset, Rest&&... rest);
    template <typename KernelName = detail::unnamed_kernel, int Dims, typename... Rest>
    void parallel_for(nd_range<Dims> execution_range, Rest&&... rest);

    template <typename F>
    void host_task(on_master_node_tag, F&& f);
    template <typename F>
    void host_task(once_tag, F&& f);
    template <typename F>
    void host_task(const experimental::collective_tag& tag, F&& f);
    template <int Dims, typename F>
    void host_task(range<Dims> global_range, F&& f);

    // ---- registration (used by accessors, side effects, reductions, hints) ----------------
    /// The C command group being described (owned until submission).
    celerity_cg* get_c_handle() const { return m_cg; }
    uint32_t add_access(celerity_buffer* buf, access_mode mode, const celerity_range_mapper& mapper) {
        detail::check(celerity_cg_access(m_cg, buf, detail::to_c_mode(mode), &mapper));
        return m_num_accessors++;
    }
    uint32_t add_side_effect(celerity_host_object* obj) {
        detail::check(celerity_cg_side_effect(m_cg, obj));
        return m_num_side_effects++;
    }
    uint32_t add_reduction(celerity_buffer* buf, const celerity_reduction_op& op, bool initialize_to_identity) {
        detail::check(celerity_cg_reduction(m_cg, buf, &op, initialize_to_identity));
        return m_num_reductions++;
    }
    /// Reserves `bytes` of work-group local memory aligned to `align`; returns the offset.
    size_t add_local_memory(size_t bytes, size_t align) {
        m_local_bytes = (m_local_bytes + align - 1) / align * align;
        const size_t offset = m_local_bytes;
        m_local_bytes += bytes;
        return offset;
    }
    /// Registers a check that a custom range mapper supports the kernel's dimensionality.
    void add_mapper_check(std::function<bool(int)> supports_kernel_dims) { m_mapper_checks.push_back(std::move(supports_kernel_dims)); }
    void keep_alive(std::shared_ptr<void> object) { m_rt->keep_alive(std::move(object)); }
    const celerity_runtime_info& info() const { return m_rt->info(); }

  private:
    friend class queue;
    friend class distr_queue;
    explicit handler(std::shared_ptr<detail::runtime_guard> rt) : m_rt(std::move(rt)) { detail::check(celerity_cg_create(&m_cg)); }

    std::shared_ptr<detail::runtime_guard> m_rt;
    celerity_cg* m_cg = nullptr;
    uint32_t m_num_accessors = 0;
    uint32_t m_num_side_effects = 0;
    uint32_t m_num_reductions = 0;
    size_t m_local_bytes = 0;
    std::vector<std::function<bool(int)>> m_mapper_checks;
    bool m_submitted = false;

    void check_mappers(int kernel_dims) const {
        for(const auto& supports : m_mapper_checks) {
            if(!supports(kernel_dims)) {
                throw error(CELERITY_ERROR_INVALID_ARGUMENT, "a custom range mapper of this command group cannot be called with celerity::chunk<"
                                                                 + std::to_string(kernel_dims) + "> (the kernel's dimensionality)");
            }
        }
    }
  public:
    /// Hands the command group to `submit_fn(cg)` (which consumes it) and marks it submitted.
    template <typename SubmitFn>
    void submit_with(SubmitFn&& submit_fn) {
        if(m_submitted) throw error(CELERITY_ERROR_INVALID_STATE, "a command group may contain only one parallel_for or host_task");
        m_submitted = true;
        celerity_cg* cg = m_cg;
        m_cg = nullptr;
        detail::check(submit_fn(cg));
    }
};

namespace debug {
/// Names the task in messages, graphs and traces.
inline void set_task_name(handler& cgh, const std::string& name) { detail::check(celerity_cg_set_name(cgh.get_c_handle(), name.c_str())); }
} // namespace debug

namespace experimental {
namespace hints {
    /// Split the task along dimension 0 (the default).
    struct split_1d {};
    /// Split the task in two dimensions.
    struct split_2d {};
    /// Split each device chunk `factor` times more.
    struct oversubscribe {
        explicit oversubscribe(size_t f) : factor(f) {}
        size_t factor;
    };
} // namespace hints
inline void hint(handler&, hints::split_1d) {}
inline void hint(handler& cgh, hints::split_2d) { detail::check(celerity_cg_hint_split_2d(cgh.get_c_handle())); }
inline void hint(handler& cgh, hints::oversubscribe h) {
    if(h.factor > UINT32_MAX) throw error(CELERITY_ERROR_INVALID_ARGUMENT, "oversubscribe factor " + std::to_string(h.factor) + " exceeds 2^32-1");
    detail::check(celerity_cg_hint_oversubscribe(cgh.get_c_handle(), static_cast<uint32_t>(h.factor)));
}
/// Chunk boundaries become multiples of `granularity`.
template <int Dims>
void constrain_split(handler& cgh, const range<Dims>& granularity) {
    size_t g[3];
    detail::to_c_range(granularity, g);
    detail::check(celerity_cg_constrain_split(cgh.get_c_handle(), g));
}
} // namespace experimental

} // namespace celerity

#endif // CELERITY_HANDLER_HPP

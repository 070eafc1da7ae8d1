// celerity/queue.hpp: the queue (submission, waits, fences) and the deprecated distr_queue.
// Part of celerity.hpp.
#ifndef CELERITY_QUEUE_HPP
#define CELERITY_QUEUE_HPP

#include <future>
#include <memory>
#include <optional>
#include <utility>

#include "execution.hpp"

namespace celerity {

/// The contents of a buffer region as a fence saw them.
template <typename T, int Dims>
class buffer_snapshot {
  public:
    buffer_snapshot() = default;
    buffer_snapshot(const subrange<Dims>& sr, std::unique_ptr<T[]> data) : m_subrange(sr), m_data(std::move(data)) {}
    range<Dims> get_range() const { return m_subrange.range; }
    id<Dims> get_offset() const { return m_subrange.offset; }
    subrange<Dims> get_subrange() const { return m_subrange; }
    size_t size() const { return m_subrange.range.size(); }
    const T* get_data() const { return m_data.get(); }
    /// Element `i` in buffer coordinates.
    const T& operator[](const id<Dims>& i) const {
        size_t l = 0;
        for(int d = 0; d < Dims; ++d) l = l * m_subrange.range[d] + (i[d] - m_subrange.offset[d]);
        return m_data[l];
    }
    template <int D = Dims, std::enable_if_t<D == 0, int> = 0>
    const T& operator*() const {
        return m_data[0];
    }

  private:
    subrange<Dims> m_subrange;
    std::unique_ptr<T[]> m_data;
};

namespace experimental {
struct barrier_tag {};
/// `queue.wait(experimental::barrier)`: wait, then synchronise with every node.
inline constexpr barrier_tag barrier{};

enum class lookahead { none, automatic, infinite };
/// Sets the scheduler's lookahead (also flushes).
inline void set_lookahead(lookahead mode) {
    detail::check(celerity_set_lookahead(mode == lookahead::none ? CELERITY_LOOKAHEAD_NONE
                                         : mode == lookahead::infinite ? CELERITY_LOOKAHEAD_INFINITE
                                                                       : CELERITY_LOOKAHEAD_AUTO));
}
/// Hands every queued command to the executor now.
inline void flush() { detail::check(celerity_flush()); }
} // namespace experimental

namespace detail {
/// A C future that is released with its last owner.
struct c_future {
    celerity_future* raw = nullptr;
    ~c_future() { celerity_future_release(raw); }
    void wait() const { check(celerity_future_wait(raw)); }
};
} // namespace detail

/// Submits command groups and synchronises with them. Every node must submit the same
/// sequence (SPMD).
class queue {
  public:
    queue() : m_rt(detail::acquire_runtime()) {}

    /// Runs `cgf(handler&)` to describe a command group and submits it.
    template <typename CGF>
    void submit(CGF&& cgf) {
        handler cgh(m_rt);
        cgf(cgh);
        if(!cgh.m_submitted) throw error(CELERITY_ERROR_INVALID_ARGUMENT, "the command group contains neither a parallel_for nor a host_task");
    }
    /// Blocks until every task submitted so far has finished on this node; rethrows failures.
    void wait() { detail::check(celerity_wait()); }
    /// `wait`, then blocks until every node reached its barrier.
    void wait(experimental::barrier_tag) { detail::check(celerity_barrier()); }

    /// The whole buffer as it is after every task submitted before.
    template <typename T, int Dims>
    std::future<buffer_snapshot<T, Dims>> fence(const buffer<T, Dims>& buf) {
        return fence(buf, subrange<Dims>(id<Dims>(), buf.get_range()));
    }
    /// The region `sr` of the buffer as it is after every task submitted before.
    template <typename T, int Dims>
    std::future<buffer_snapshot<T, Dims>> fence(const buffer<T, Dims>& buf, const subrange<Dims>& sr) {
        auto data = std::make_shared<std::unique_ptr<T[]>>(new T[sr.range.size()]);
        auto future = std::make_shared<detail::c_future>();
        const celerity_subrange region = detail::to_c_subrange(sr);
        detail::check(celerity_fence_buffer(detail::raw_buffer(buf), &region, data->get(), sr.range.size() * sizeof(T), &future->raw));
        return std::async(std::launch::deferred, [future, data, sr] {
            future->wait();
            return buffer_snapshot<T, Dims>(sr, std::move(*data));
        });
    }
    /// A copy of the host object's value after every side effect submitted before.
    template <typename T>
    std::future<std::remove_reference_t<T>> fence(const experimental::host_object<T>& obj) {
        using value_type = std::remove_reference_t<T>;
        auto value = std::make_shared<std::optional<value_type>>();
        submit([&](handler& cgh) {
            experimental::side_effect<T> eff(obj, cgh);
            cgh.host_task(experimental::collective, [eff, value](experimental::collective_partition) { value->emplace(*eff); });
        });
        auto future = std::make_shared<detail::c_future>();
        detail::check(celerity_fence_host_object(obj.get_handle(), &future->raw));
        return std::async(std::launch::deferred, [future, value] {
            future->wait();
            return std::move(**value);
        });
    }
    /// Completes once every side effect on `obj` submitted before has run.
    std::future<void> fence(const experimental::host_object<void>& obj) {
        auto future = std::make_shared<detail::c_future>();
        detail::check(celerity_fence_host_object(obj.get_handle(), &future->raw));
        return std::async(std::launch::deferred, [future] { future->wait(); });
    }

  private:
    std::shared_ptr<detail::runtime_guard> m_rt;
};

/// Celerity's older queue interface.
class [[deprecated("use celerity::queue")]] distr_queue {
  public:
    distr_queue() = default;
    template <typename CGF>
    void submit(CGF&& cgf) {
        m_queue.submit(std::forward<CGF>(cgf));
    }
    /// Waits for every task and synchronises with every node.
    void slow_full_sync() { m_queue.wait(experimental::barrier); }
    template <typename... Args>
    auto fence(Args&&... args) {
        return m_queue.fence(std::forward<Args>(args)...);
    }

  private:
    queue m_queue;
};

} // namespace celerity

#endif // CELERITY_QUEUE_HPP

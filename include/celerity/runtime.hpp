// celerity/runtime.hpp: runtime lifetime, buffers, host objects, collective groups, logging and
// debug names. Part of celerity.hpp.
#ifndef CELERITY_RUNTIME_HPP
#define CELERITY_RUNTIME_HPP

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core.hpp"
#include "format.hpp"

namespace celerity {
namespace detail {

/// Keeps the runtime alive: the first queue, buffer or host object starts it, the last one to
/// be destroyed shuts it down (as in Celerity). Objects the runtime must keep until shutdown
/// (custom range mappers, reduction operators) are parked here.
class runtime_guard {
  public:
    runtime_guard() {
        check(celerity_runtime_init(nullptr, nullptr, nullptr));
        check(celerity_runtime_get_info(&m_info));
    }
    runtime_guard(const runtime_guard&) = delete;
    runtime_guard& operator=(const runtime_guard&) = delete;
    ~runtime_guard() {
        const celerity_status status = celerity_runtime_shutdown();
        m_keep_alive.clear();
        if(status != CELERITY_OK) {
            // A destructor cannot throw: report like Celerity does and fail the process.
            std::fprintf(stderr, "celerity: %s: %s\n", celerity_status_string(status), celerity_last_error_message());
            std::fflush(stderr);
            std::_Exit(EXIT_FAILURE);
        }
    }
    /// Keeps `object` alive until the runtime has shut down.
    void keep_alive(std::shared_ptr<void> object) { m_keep_alive.push_back(std::move(object)); }
    /// Read once at start, so that any thread may ask.
    const celerity_runtime_info& info() const { return m_info; }

  private:
    std::vector<std::shared_ptr<void>> m_keep_alive;
    celerity_runtime_info m_info{};
};

inline std::weak_ptr<runtime_guard>& runtime_slot() {
    static std::weak_ptr<runtime_guard> slot;
    return slot;
}

/// The running runtime, started on first use.
inline std::shared_ptr<runtime_guard> acquire_runtime() {
    auto& slot = runtime_slot();
    auto rt = slot.lock();
    if(!rt) {
        rt = std::make_shared<runtime_guard>();
        slot = rt;
    }
    return rt;
}

/// The runtime if it is running (no start).
inline std::shared_ptr<runtime_guard> current_runtime() { return runtime_slot().lock(); }

/// A C buffer handle released when the last C++ `buffer` copy goes away.
struct buffer_handle {
    std::shared_ptr<runtime_guard> rt; // destroyed last
    celerity_buffer* raw = nullptr;
    ~buffer_handle() { celerity_buffer_release(raw); }
};

struct host_object_handle {
    std::shared_ptr<runtime_guard> rt;
    celerity_host_object* raw = nullptr;
    void* instance = nullptr;
    ~host_object_handle() { celerity_host_object_release(raw); }
};

struct collective_group_handle {
    std::shared_ptr<runtime_guard> rt;
    celerity_collective_group* raw = nullptr;
    ~collective_group_handle() { celerity_collective_group_release(raw); }
};

template <typename T, int Dims>
struct buffer_access;

} // namespace detail

/// A distributed buffer of `Dims` (0 to 3) dimensions. Copies share the same buffer.
template <typename T, int Dims = 1>
class buffer {
    static_assert(Dims >= 0 && Dims <= 3, "celerity::buffer supports 0 to 3 dimensions");

  public:
    using value_type = T;
    static constexpr int dimensions = Dims;

    /// An uninitialised buffer of extent `r` (0-D: one element).
    explicit buffer(const range<Dims>& r) : buffer(nullptr, r) {}
    /// A buffer of extent `r` whose contents are copied from `host_ptr` (NULL: uninitialised).
    buffer(const T* host_ptr, const range<Dims>& r) : m_range(r) {
        auto handle = std::make_shared<detail::buffer_handle>();
        handle->rt = detail::acquire_runtime();
        size_t c_range[3];
        detail::to_c_range(r, c_range);
        detail::check(celerity_buffer_create(static_cast<uint32_t>(Dims), c_range, sizeof(T), alignof(T), host_ptr, &handle->raw));
        m_handle = std::move(handle);
    }
    /// A 0-D buffer (uninitialised).
    template <int D = Dims, std::enable_if_t<D == 0, int> = 0>
    buffer() : buffer(nullptr, range<0>()) {}
    /// A 0-D buffer holding `value`.
    template <int D = Dims, std::enable_if_t<D == 0, int> = 0>
    explicit buffer(const T& value) : buffer(&value, range<0>()) {}

    range<Dims> get_range() const { return m_range; }
    size_t size() const { return m_range.size(); }

  private:
    friend struct detail::buffer_access<T, Dims>;
    std::shared_ptr<detail::buffer_handle> m_handle;
    range<Dims> m_range;
};

namespace detail {
template <typename T, int Dims>
struct buffer_access {
    static celerity_buffer* raw(const buffer<T, Dims>& b) { return b.m_handle->raw; }
};
template <typename T, int Dims>
celerity_buffer* raw_buffer(const buffer<T, Dims>& b) {
    return buffer_access<T, Dims>::raw(b);
}
} // namespace detail

namespace experimental {

/// The shared handle of every `host_object` flavour.
class host_object_base {
  public:
    /// The C handle (for mixing with the C API).
    celerity_host_object* get_handle() const { return m_handle->raw; }

  protected:
    host_object_base(void* instance, void (*destroy)(void*)) {
        auto handle = std::make_shared<detail::host_object_handle>();
        handle->rt = detail::acquire_runtime();
        handle->instance = instance;
        const celerity_status status = celerity_host_object_create(instance, destroy, &handle->raw);
        if(status != CELERITY_OK) {
            if(destroy != nullptr) destroy(instance);
            detail::check(status);
        }
        m_handle = std::move(handle);
    }
    void* instance() const { return m_handle->instance; }

  private:
    std::shared_ptr<detail::host_object_handle> m_handle;
};

/// An object that host tasks access through `side_effect`, serialised per object: by value
/// (the runtime owns the instance), by reference (`host_object<T&>`, the program owns it) or
/// without instance (`host_object<void>`, for ordering only). Copies share the object.
template <typename T>
class host_object : public host_object_base {
  public:
    using instance_type = T;
    host_object() : host_object(std::in_place) {}
    explicit host_object(const T& value) : host_object(std::in_place, value) {}
    explicit host_object(T&& value) : host_object(std::in_place, std::move(value)) {}
    template <typename... Args>
    explicit host_object(std::in_place_t, Args&&... args)
        : host_object_base(new T(std::forward<Args>(args)...), [](void* p) { delete static_cast<T*>(p); }) {}
    T* get_instance_pointer() const { return static_cast<T*>(instance()); }
};

template <typename T>
class host_object<T&> : public host_object_base {
  public:
    using instance_type = T;
    explicit host_object(T& ref) : host_object_base(static_cast<void*>(&ref), nullptr) {}
    T* get_instance_pointer() const { return static_cast<T*>(instance()); }
};

template <>
class host_object<void> : public host_object_base {
  public:
    using instance_type = void;
    host_object() : host_object_base(nullptr, nullptr) {}
};

/// A group of collective host tasks: serialised among themselves, with their own communicator.
class collective_group {
  public:
    collective_group() : m_handle(std::make_shared<detail::collective_group_handle>()) {
        m_handle->rt = detail::acquire_runtime();
        detail::check(celerity_collective_group_create(&m_handle->raw));
    }
    celerity_collective_group* get_handle() const { return m_handle->raw; }

  private:
    std::shared_ptr<detail::collective_group_handle> m_handle;
};

} // namespace experimental

namespace debug {
/// Names the buffer in messages, graphs and traces.
template <typename T, int Dims>
void set_buffer_name(const buffer<T, Dims>& buf, const std::string& name) {
    detail::check(celerity_buffer_set_name(detail::raw_buffer(buf), name.c_str()));
}
} // namespace debug

// ---- logging ---------------------------------------------------------------------------------
namespace detail {

enum class log_level { trace, debug, info, warn, err, critical, off };

inline log_level configured_log_level() {
    static const log_level level = [] {
        const char* env = std::getenv("CELERITY_LOG_LEVEL");
        if(env == nullptr) return log_level::info;
        std::string v(env);
        for(auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const char* names[] = {"trace", "debug", "info", "warn", "err", "critical", "off"};
        for(int i = 0; i < 7; ++i) {
            if(v == names[i]) return static_cast<log_level>(i);
        }
        if(v == "warning") return log_level::warn;
        if(v == "error") return log_level::err;
        return log_level::info;
    }();
    return level;
}

template <typename... Args>
void log(log_level level, const char* fmt, const Args&... args) {
    if(level < configured_log_level()) return;
    static const char* names[] = {"trace", "debug", "info", "warning", "error", "critical", "off"};
    std::string node;
    if(auto rt = current_runtime()) node = "[" + std::to_string(rt->info().node) + "] ";
    const std::string line = "[celerity] " + node + "[" + names[static_cast<int>(level)] + "] " + format(fmt, args...) + "\n";
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    std::fputs(line.c_str(), stderr);
}

} // namespace detail
} // namespace celerity

/// Logging in Celerity's style: `CELERITY_INFO("copied {} bytes to {}", n, name)`; the level
/// comes from CELERITY_LOG_LEVEL (default info).
#define CELERITY_LOG(level, ...) ::celerity::detail::log(level, __VA_ARGS__)
#define CELERITY_TRACE(...) CELERITY_LOG(::celerity::detail::log_level::trace, __VA_ARGS__)
#define CELERITY_DEBUG(...) CELERITY_LOG(::celerity::detail::log_level::debug, __VA_ARGS__)
#define CELERITY_INFO(...) CELERITY_LOG(::celerity::detail::log_level::info, __VA_ARGS__)
#define CELERITY_WARN(...) CELERITY_LOG(::celerity::detail::log_level::warn, __VA_ARGS__)
#define CELERITY_ERROR(...) CELERITY_LOG(::celerity::detail::log_level::err, __VA_ARGS__)
#define CELERITY_CRITICAL(...) CELERITY_LOG(::celerity::detail::log_level::critical, __VA_ARGS__)

#endif // CELERITY_RUNTIME_HPP

// celerity/core.hpp: macros, the error type and the geometry vocabulary (range, id, subrange,
// chunk, item, nd_range, group, nd_item, partition) of the C++ frontend. Part of celerity.hpp.
#ifndef CELERITY_CORE_HPP
#define CELERITY_CORE_HPP

#include "../celerity.h"

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__CUDACC__)
#define CELERITY_HD __host__ __device__
#define CELERITY_DEVICE_LAMBDA __host__ __device__
#else
#define CELERITY_HD
/// Marks a kernel lambda as compilable for the GPU under nvcc (`__host__ __device__`); empty
/// for other compilers, so one source builds for both.
#define CELERITY_DEVICE_LAMBDA
#endif

/// True when the C++ frontend has no real SYCL implementation underneath (always, here).
#define CELERITY_SYCL_IS_SIMSYCL 0

namespace celerity {

/// Thrown when a C call of the runtime fails: carries the status and the runtime's message.
class error : public std::runtime_error {
  public:
    error(celerity_status status, const std::string& message) : std::runtime_error(message), m_status(status) {}
    /// The `celerity_status` of the failing call.
    celerity_status status() const noexcept { return m_status; }

  private:
    celerity_status m_status;
};

namespace detail {

/// Throws `celerity::error` for a failing status, with the thread's last error message.
inline void check(celerity_status status) {
    if(status != CELERITY_OK) {
        throw error(status, std::string(celerity_status_string(status)) + ": " + celerity_last_error_message());
    }
}

/// The storage of an N-wide coordinate (N may be 0).
template <int Dims>
struct coordinate_storage {
    size_t values[Dims == 0 ? 1 : Dims] = {};
};

/// Shared element-wise behaviour of `range` and `id`.
template <template <int> class Self, int Dims>
class coordinate {
  public:
    static constexpr int dimensions = Dims;

    CELERITY_HD constexpr size_t& operator[](int d) { return m_storage.values[d]; }
    CELERITY_HD constexpr const size_t& operator[](int d) const { return m_storage.values[d]; }
    CELERITY_HD constexpr size_t get(int d) const { return m_storage.values[d]; }

    CELERITY_HD friend constexpr bool operator==(const Self<Dims>& a, const Self<Dims>& b) {
        for(int d = 0; d < Dims; ++d) {
            if(a[d] != b[d]) return false;
        }
        return true;
    }
    CELERITY_HD friend constexpr bool operator!=(const Self<Dims>& a, const Self<Dims>& b) { return !(a == b); }

#define CELERITY_COORDINATE_OP(op, assign_op)                                                                          \
    CELERITY_HD friend constexpr Self<Dims> operator op(const Self<Dims>& a, const Self<Dims>& b) {                    \
        Self<Dims> r = a;                                                                                              \
        for(int d = 0; d < Dims; ++d) r[d] = a[d] op b[d];                                                             \
        return r;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr Self<Dims> operator op(const Self<Dims>& a, size_t s) {                               \
        Self<Dims> r = a;                                                                                              \
        for(int d = 0; d < Dims; ++d) r[d] = a[d] op s;                                                                \
        return r;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr Self<Dims> operator op(size_t s, const Self<Dims>& a) {                               \
        Self<Dims> r = a;                                                                                              \
        for(int d = 0; d < Dims; ++d) r[d] = s op a[d];                                                                \
        return r;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr Self<Dims>& operator assign_op(Self<Dims>& a, const Self<Dims>& b) {                  \
        for(int d = 0; d < Dims; ++d) a[d] assign_op b[d];                                                             \
        return a;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr Self<Dims>& operator assign_op(Self<Dims>& a, size_t s) {                             \
        for(int d = 0; d < Dims; ++d) a[d] assign_op s;                                                                \
        return a;                                                                                                      \
    }
    CELERITY_COORDINATE_OP(+, +=)
    CELERITY_COORDINATE_OP(-, -=)
    CELERITY_COORDINATE_OP(*, *=)
    CELERITY_COORDINATE_OP(/, /=)
    CELERITY_COORDINATE_OP(%, %=)
#undef CELERITY_COORDINATE_OP

    friend std::ostream& operator<<(std::ostream& os, const Self<Dims>& c) {
        os << '[';
        for(int d = 0; d < Dims; ++d) os << (d > 0 ? "," : "") << c[d];
        return os << ']';
    }

  protected:
    coordinate_storage<Dims> m_storage;
};

} // namespace detail

/// An extent of 0 to 3 dimensions (dimension 0 is the slowest).
template <int Dims = 1>
class range : public detail::coordinate<range, Dims> {
  public:
    constexpr range() = default;
    template <int D = Dims, std::enable_if_t<D == 1, int> = 0>
    CELERITY_HD constexpr range(size_t r0) { (*this)[0] = r0; }
    template <int D = Dims, std::enable_if_t<D == 2, int> = 0>
    CELERITY_HD constexpr range(size_t r0, size_t r1) { (*this)[0] = r0, (*this)[1] = r1; }
    template <int D = Dims, std::enable_if_t<D == 3, int> = 0>
    CELERITY_HD constexpr range(size_t r0, size_t r1, size_t r2) { (*this)[0] = r0, (*this)[1] = r1, (*this)[2] = r2; }

    /// Number of elements (1 for a 0-D range).
    CELERITY_HD constexpr size_t size() const {
        size_t n = 1;
        for(int d = 0; d < Dims; ++d) n *= (*this)[d];
        return n;
    }
};
range() -> range<0>;
range(size_t) -> range<1>;
range(size_t, size_t) -> range<2>;
range(size_t, size_t, size_t) -> range<3>;

/// A position of 0 to 3 dimensions.
template <int Dims = 1>
class id : public detail::coordinate<id, Dims> {
  public:
    constexpr id() = default;
    template <int D = Dims, std::enable_if_t<D == 1, int> = 0>
    CELERITY_HD constexpr id(size_t i0) { (*this)[0] = i0; }
    template <int D = Dims, std::enable_if_t<D == 2, int> = 0>
    CELERITY_HD constexpr id(size_t i0, size_t i1) { (*this)[0] = i0, (*this)[1] = i1; }
    template <int D = Dims, std::enable_if_t<D == 3, int> = 0>
    CELERITY_HD constexpr id(size_t i0, size_t i1, size_t i2) { (*this)[0] = i0, (*this)[1] = i1, (*this)[2] = i2; }
    CELERITY_HD constexpr explicit id(const range<Dims>& r) {
        for(int d = 0; d < Dims; ++d) (*this)[d] = r[d];
    }
    /// A 1-D id converts to its only index, as in SYCL.
    template <int D = Dims, std::enable_if_t<D == 1, int> = 0>
    CELERITY_HD constexpr operator size_t() const { return (*this)[0]; }
};
id() -> id<0>;
id(size_t) -> id<1>;
id(size_t, size_t) -> id<2>;
id(size_t, size_t, size_t) -> id<3>;

/// An offset and a range.
template <int Dims>
struct subrange {
    id<Dims> offset;
    celerity::range<Dims> range;

    constexpr subrange() = default;
    CELERITY_HD constexpr subrange(const id<Dims>& o, const celerity::range<Dims>& r) : offset(o), range(r) {}
    friend bool operator==(const subrange& a, const subrange& b) { return a.offset == b.offset && a.range == b.range; }
    friend bool operator!=(const subrange& a, const subrange& b) { return !(a == b); }
    friend std::ostream& operator<<(std::ostream& os, const subrange& s) { return os << s.offset << " + " << s.range; }
};
template <int Dims>
subrange(id<Dims>, range<Dims>) -> subrange<Dims>;

/// A chunk of an iteration space, as a range mapper sees it.
template <int Dims>
struct chunk {
    id<Dims> offset;
    celerity::range<Dims> range;
    celerity::range<Dims> global_size;

    friend bool operator==(const chunk& a, const chunk& b) {
        return a.offset == b.offset && a.range == b.range && a.global_size == b.global_size;
    }
    friend std::ostream& operator<<(std::ostream& os, const chunk& c) { return os << c.offset << " + " << c.range << " of " << c.global_size; }
};

/// One work item of a `parallel_for` over a `range`.
template <int Dims>
class item {
  public:
    static constexpr int dimensions = Dims;
    CELERITY_HD constexpr item(const id<Dims>& i, const range<Dims>& r, const id<Dims>& offset) : m_id(i), m_range(r), m_offset(offset) {}

    CELERITY_HD constexpr id<Dims> get_id() const { return m_id; }
    CELERITY_HD constexpr size_t get_id(int d) const { return m_id[d]; }
    CELERITY_HD constexpr size_t operator[](int d) const { return m_id[d]; }
    CELERITY_HD constexpr range<Dims> get_range() const { return m_range; }
    CELERITY_HD constexpr size_t get_range(int d) const { return m_range[d]; }
    CELERITY_HD constexpr id<Dims> get_offset() const { return m_offset; }
    /// Row-major linear index of this item in the iteration space (offset removed).
    CELERITY_HD constexpr size_t get_linear_id() const {
        size_t linear = 0;
        for(int d = 0; d < Dims; ++d) linear = linear * m_range[d] + (m_id[d] - m_offset[d]);
        return linear;
    }
    CELERITY_HD constexpr operator id<Dims>() const { return m_id; }
    /// A 1-D item converts to its only index, as in SYCL.
    template <int D = Dims, std::enable_if_t<D == 1, int> = 0>
    CELERITY_HD constexpr operator size_t() const { return m_id[0]; }

  private:
    id<Dims> m_id;
    range<Dims> m_range;
    id<Dims> m_offset;
};

/// A global iteration space divided into work groups of `local_range`.
template <int Dims>
class nd_range {
  public:
    nd_range(const range<Dims>& global, const range<Dims>& local, const id<Dims>& offset = {})
        : m_global(global), m_local(local), m_offset(offset) {
        for(int d = 0; d < Dims; ++d) {
            if(local[d] == 0 || global[d] % local[d] != 0) {
                throw error(CELERITY_ERROR_INVALID_ARGUMENT, "nd_range: global range dimension " + std::to_string(d) + " (" + std::to_string(global[d])
                                                                 + ") is not a multiple of the local range (" + std::to_string(local[d]) + ")");
            }
        }
    }
    range<Dims> get_global_range() const { return m_global; }
    range<Dims> get_local_range() const { return m_local; }
    range<Dims> get_group_range() const { return m_global / m_local; }
    id<Dims> get_offset() const { return m_offset; }

  private:
    range<Dims> m_global;
    range<Dims> m_local;
    id<Dims> m_offset;
};
template <int Dims>
nd_range(range<Dims>, range<Dims>) -> nd_range<Dims>;
template <int Dims>
nd_range(range<Dims>, range<Dims>, id<Dims>) -> nd_range<Dims>;

/// A work group of an `nd_range` kernel (pass it to `group_barrier`).
template <int Dims>
class group {
  public:
    static constexpr int dimensions = Dims;
    CELERITY_HD constexpr group(const id<Dims>& group_id, const range<Dims>& group_range, const range<Dims>& local_range, const id<Dims>& local_id)
        : m_group_id(group_id), m_group_range(group_range), m_local_range(local_range), m_local_id(local_id) {}
    CELERITY_HD constexpr id<Dims> get_group_id() const { return m_group_id; }
    CELERITY_HD constexpr size_t get_group_id(int d) const { return m_group_id[d]; }
    CELERITY_HD constexpr size_t operator[](int d) const { return m_group_id[d]; }
    CELERITY_HD constexpr id<Dims> get_local_id() const { return m_local_id; }
    CELERITY_HD constexpr range<Dims> get_local_range() const { return m_local_range; }
    CELERITY_HD constexpr range<Dims> get_group_range() const { return m_group_range; }
    CELERITY_HD constexpr size_t get_group_linear_id() const { return linear(m_group_id, m_group_range); }
    CELERITY_HD constexpr size_t get_local_linear_id() const { return linear(m_local_id, m_local_range); }
    CELERITY_HD constexpr size_t get_local_linear_range() const { return m_local_range.size(); }

  private:
    id<Dims> m_group_id;
    range<Dims> m_group_range;
    range<Dims> m_local_range;
    id<Dims> m_local_id;
    CELERITY_HD static constexpr size_t linear(const id<Dims>& i, const range<Dims>& r) {
        size_t l = 0;
        for(int d = 0; d < Dims; ++d) l = l * r[d] + i[d];
        return l;
    }
};

/// One work item of an `nd_range` kernel.
template <int Dims>
class nd_item {
  public:
    static constexpr int dimensions = Dims;
    CELERITY_HD constexpr nd_item(const id<Dims>& global_id, const id<Dims>& local_id, const id<Dims>& group_id, const range<Dims>& global_range,
        const range<Dims>& local_range, const id<Dims>& offset)
        : m_global_id(global_id), m_local_id(local_id), m_group_id(group_id), m_global_range(global_range), m_local_range(local_range), m_offset(offset) {}

    CELERITY_HD constexpr id<Dims> get_global_id() const { return m_global_id; }
    CELERITY_HD constexpr size_t get_global_id(int d) const { return m_global_id[d]; }
    CELERITY_HD constexpr size_t get_global_linear_id() const { return item<Dims>(m_global_id, m_global_range, m_offset).get_linear_id(); }
    CELERITY_HD constexpr id<Dims> get_local_id() const { return m_local_id; }
    CELERITY_HD constexpr size_t get_local_id(int d) const { return m_local_id[d]; }
    CELERITY_HD constexpr size_t get_local_linear_id() const { return get_group().get_local_linear_id(); }
    CELERITY_HD constexpr group<Dims> get_group() const { return group<Dims>(m_group_id, get_group_range(), m_local_range, m_local_id); }
    CELERITY_HD constexpr size_t get_group(int d) const { return m_group_id[d]; }
    CELERITY_HD constexpr size_t get_group_linear_id() const { return get_group().get_group_linear_id(); }
    CELERITY_HD constexpr range<Dims> get_global_range() const { return m_global_range; }
    CELERITY_HD constexpr size_t get_global_range(int d) const { return m_global_range[d]; }
    CELERITY_HD constexpr range<Dims> get_local_range() const { return m_local_range; }
    CELERITY_HD constexpr size_t get_local_range(int d) const { return m_local_range[d]; }
    CELERITY_HD constexpr range<Dims> get_group_range() const { return m_global_range / m_local_range; }
    CELERITY_HD constexpr size_t get_group_range(int d) const { return m_global_range[d] / m_local_range[d]; }
    CELERITY_HD constexpr id<Dims> get_offset() const { return m_offset; }
    nd_range<Dims> get_nd_range() const { return nd_range<Dims>(m_global_range, m_local_range, m_offset); }

  private:
    id<Dims> m_global_id;
    id<Dims> m_local_id;
    id<Dims> m_group_id;
    range<Dims> m_global_range;
    range<Dims> m_local_range;
    id<Dims> m_offset;
};

/// The part of a distributed host task's iteration space that one call handles.
template <int Dims>
class partition {
  public:
    partition(const range<Dims>& global_size, const subrange<Dims>& sr) : m_global_size(global_size), m_subrange(sr) {}
    const range<Dims>& get_global_size() const { return m_global_size; }
    const subrange<Dims>& get_subrange() const { return m_subrange; }

  private:
    range<Dims> m_global_size;
    subrange<Dims> m_subrange;
};

namespace detail {

/// Pads a D-wide extent to the C ABI's 3-wide form (unused entries 1).
template <int Dims>
void to_c_range(const range<Dims>& r, size_t out[3]) {
    for(int d = 0; d < 3; ++d) out[d] = d < Dims ? r[d] : 1;
}
template <int Dims>
void to_c_offset(const id<Dims>& i, size_t out[3]) {
    for(int d = 0; d < 3; ++d) out[d] = d < Dims ? i[d] : 0;
}
template <int Dims>
CELERITY_HD range<Dims> range_from_c(const size_t in[3]) {
    range<Dims> r;
    for(int d = 0; d < Dims; ++d) r[d] = in[d];
    return r;
}
template <int Dims>
CELERITY_HD id<Dims> id_from_c(const size_t in[3]) {
    id<Dims> r;
    for(int d = 0; d < Dims; ++d) r[d] = in[d];
    return r;
}
/// A range of ones (the neutral granularity).
template <int Dims>
constexpr range<Dims> ones() {
    range<Dims> r;
    for(int d = 0; d < Dims; ++d) r[d] = 1;
    return r;
}
template <int Dims>
celerity_subrange to_c_subrange(const subrange<Dims>& sr) {
    celerity_subrange out;
    to_c_offset(sr.offset, out.offset);
    to_c_range(sr.range, out.range);
    return out;
}
template <int Dims>
chunk<Dims> chunk_from_c(const celerity_chunk& c) {
    return chunk<Dims>{id_from_c<Dims>(c.offset), range_from_c<Dims>(c.range), range_from_c<Dims>(c.global_range)};
}

} // namespace detail
} // namespace celerity

#endif // CELERITY_CORE_HPP

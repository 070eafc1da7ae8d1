// celerity/accessor.hpp: range mappers, buffer accessors, local accessors, side effects and
// reductions. Part of celerity.hpp.
#ifndef CELERITY_ACCESSOR_HPP
#define CELERITY_ACCESSOR_HPP

#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "handler.hpp"

namespace celerity {

/// The shape of an `access::neighborhood`.
enum class neighborhood_shape { along_axes, bounding_box };

namespace access {
/// Each chunk accesses the same subrange of the buffer (kernel and buffer dims must agree).
struct one_to_one {};
/// Each chunk accesses the whole buffer.
struct all {};
/// Each chunk accesses `sr`.
template <int BufferDims>
struct fixed {
    fixed(const subrange<BufferDims>& s) : sr(s) {}
    subrange<BufferDims> sr;
};
template <int Dims>
fixed(subrange<Dims>) -> fixed<Dims>;
/// The chunk extended to the whole buffer along `dim`.
template <int Dims>
struct slice {
    explicit slice(size_t d) : dim(d) {}
    size_t dim;
};
/// The chunk grown by `extent` on both sides (a box, or a cross with `along_axes`), clamped.
template <int Dims>
struct neighborhood {
    explicit neighborhood(const range<Dims>& e, neighborhood_shape s = neighborhood_shape::bounding_box) : extent(e), shape(s) {}
    range<Dims> extent;
    neighborhood_shape shape;
};
neighborhood(range<1>) -> neighborhood<1>;
neighborhood(range<2>) -> neighborhood<2>;
neighborhood(range<3>) -> neighborhood<3>;
neighborhood(range<1>, neighborhood_shape) -> neighborhood<1>;
neighborhood(range<2>, neighborhood_shape) -> neighborhood<2>;
neighborhood(range<3>, neighborhood_shape) -> neighborhood<3>;
} // namespace access

namespace experimental::access {
/// Splits the buffer along dimension 0 in proportion to the chunk's position in the iteration
/// space (a collective host task's node gets its share), rounded to `granularity`.
template <int BufferDims>
struct even_split {
    even_split() = default;
    explicit even_split(const range<BufferDims>& g) : granularity(g) {}
    range<BufferDims> granularity = detail::ones<BufferDims>();
};
} // namespace experimental::access

namespace detail {

/// A custom range mapper stored for the C ABI's callback.
template <int BufferDims, typename Functor>
struct custom_mapper {
    Functor functor;

    template <int KernelDims>
    static constexpr bool supports() {
        return std::is_invocable_r_v<subrange<BufferDims>, const Functor&, chunk<KernelDims>, range<BufferDims>>
               || std::is_invocable_r_v<subrange<BufferDims>, const Functor&, chunk<KernelDims>>;
    }
    static bool supports_dims(int kernel_dims) {
        switch(kernel_dims) {
        case 0: return supports<0>();
        case 1: return supports<1>();
        case 2: return supports<2>();
        default: return supports<3>();
        }
    }
    template <int KernelDims>
    void apply(const celerity_chunk& c, const size_t* buffer_range, celerity_subrange* out) const {
        if constexpr(supports<KernelDims>()) {
            const auto ck = chunk_from_c<KernelDims>(c);
            subrange<BufferDims> sr;
            if constexpr(std::is_invocable_r_v<subrange<BufferDims>, const Functor&, chunk<KernelDims>, range<BufferDims>>) {
                sr = functor(ck, range_from_c<BufferDims>(buffer_range));
            } else {
                sr = functor(ck);
            }
            *out = to_c_subrange(sr);
        }
    }
    // The callback may not throw into the runtime: a throwing mapper maps to the whole buffer.
    static void call(void* user_data, const celerity_chunk* c, uint32_t, const size_t* buffer_range, celerity_subrange* out) noexcept {
        const auto& self = *static_cast<const custom_mapper*>(user_data);
        *out = celerity_subrange{{0, 0, 0}, {buffer_range[0], buffer_range[1], buffer_range[2]}};
        try {
            switch(c->dims) {
            case 0: self.template apply<0>(*c, buffer_range, out); break;
            case 1: self.template apply<1>(*c, buffer_range, out); break;
            case 2: self.template apply<2>(*c, buffer_range, out); break;
            default: self.template apply<3>(*c, buffer_range, out); break;
            }
        } catch(...) {}
    }
};

/// `experimental::access::even_split` as a callable mapper.
template <int BufferDims>
struct even_split_functor {
    range<BufferDims> granularity;
    template <int KernelDims>
    subrange<BufferDims> operator()(const chunk<KernelDims>& c, const range<BufferDims>& buffer_range) const {
        subrange<BufferDims> sr{id<BufferDims>(), buffer_range};
        if constexpr(BufferDims > 0 && KernelDims > 0) {
            const size_t total = buffer_range[0];
            const size_t g = granularity[0] == 0 ? 1 : granularity[0];
            const size_t global = c.global_size[0] == 0 ? 1 : c.global_size[0];
            size_t begin = c.offset[0] * total / global / g * g;
            size_t end = c.offset[0] + c.range[0] >= global ? total : (c.offset[0] + c.range[0]) * total / global / g * g;
            sr.offset[0] = begin;
            sr.range[0] = end - begin;
        }
        return sr;
    }
};

template <int BufferDims, typename RangeMapper>
celerity_range_mapper make_c_mapper(handler& cgh, const RangeMapper& rm) {
    celerity_range_mapper m{};
    if constexpr(std::is_same_v<RangeMapper, celerity::access::one_to_one>) {
        m.kind = CELERITY_RANGE_MAPPER_ONE_TO_ONE;
    } else if constexpr(std::is_same_v<RangeMapper, celerity::access::all>) {
        m.kind = CELERITY_RANGE_MAPPER_ALL;
    } else if constexpr(std::is_same_v<RangeMapper, celerity::access::fixed<BufferDims>>) {
        m.kind = CELERITY_RANGE_MAPPER_FIXED;
        m.fixed = to_c_subrange(rm.sr);
    } else if constexpr(std::is_same_v<RangeMapper, celerity::access::slice<BufferDims>>) {
        m.kind = CELERITY_RANGE_MAPPER_SLICE;
        m.slice_dim = static_cast<uint32_t>(rm.dim);
    } else if constexpr(std::is_same_v<RangeMapper, celerity::access::neighborhood<BufferDims>>) {
        m.kind = rm.shape == neighborhood_shape::along_axes ? CELERITY_RANGE_MAPPER_NEIGHBORHOOD_ALONG_AXES : CELERITY_RANGE_MAPPER_NEIGHBORHOOD;
        for(int d = 0; d < 3; ++d) m.neighborhood[d] = d < BufferDims ? rm.extent[d] : 0;
    } else if constexpr(std::is_same_v<RangeMapper, celerity::experimental::access::even_split<BufferDims>>) {
        return make_c_mapper<BufferDims>(cgh, even_split_functor<BufferDims>{rm.granularity});
    } else {
        using stored = custom_mapper<BufferDims, std::decay_t<RangeMapper>>;
        static_assert(stored::template supports<0>() || stored::template supports<1>() || stored::template supports<2>() || stored::template supports<3>(),
            "a range mapper must be a celerity::access mapper of the buffer's dimensionality or a callable chunk<KernelDims> -> subrange<BufferDims>");
        auto holder = std::make_shared<stored>(stored{rm});
        m.kind = CELERITY_RANGE_MAPPER_CUSTOM;
        m.custom = &stored::call;
        m.custom_user_data = holder.get();
        cgh.keep_alive(holder);
        cgh.add_mapper_check(&stored::supports_dims);
    }
    return m;
}

/// One row of a row-major allocation: `row[j]` is element j of the row (buffer coordinates).
template <typename Ref, typename Ptr>
struct row_subscript {
    Ptr row; // where element 0 of the row would be (may lie outside the allocation)
    CELERITY_HD Ref operator[](size_t j) const { return row[j]; }
};
/// One plane of a 3-D row-major allocation: `plane[i][j]`.
template <typename Ref, typename Ptr>
struct plane_subscript {
    Ptr plane;
    size_t stride;
    CELERITY_HD row_subscript<Ref, Ptr> operator[](size_t i) const { return {plane + i * stride}; }
};

/// The address where buffer element 0 would lie in an allocation starting at `base` that
/// holds the box `alloc`, so that element (i, j, k) is `origin[(i * r1 + j) * r2 + k]`. Computed
/// in integers: the address may lie outside the allocation and is never dereferenced there.
template <typename T>
CELERITY_HD T* allocation_origin(T* base, const celerity_subrange& alloc) {
    const size_t before = (alloc.offset[0] * alloc.range[1] + alloc.offset[1]) * alloc.range[2] + alloc.offset[2];
    return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(base) - before * sizeof(T));
}

/// `acc[i][j]` / `acc[i][j][k]` of a boundary-checked accessor: each element access goes through
/// `Acc::at` (see CELERITY_ACCESSOR_BOUNDARY_CHECK in celerity.h).
template <typename Acc>
struct checked_row {
    const Acc* acc;
    size_t i0, i1;
    CELERITY_HD auto& operator[](size_t j) const { return acc->at(i0, Acc::dimensions == 2 ? j : i1, Acc::dimensions == 3 ? j : 0); }
};
template <typename Acc>
struct checked_plane {
    const Acc* acc;
    size_t i0;
    CELERITY_HD checked_row<Acc> operator[](size_t i1) const { return {acc, i0, i1}; }
};

#if defined(__CUDACC__)
__device__ inline unsigned char* cuda_local_memory() {
    extern __shared__ unsigned char celerity_cuda_local_memory[];
    return celerity_cuda_local_memory;
}
#endif

} // namespace detail

/// The window of a buffer that a host-task accessor's allocation holds (for I/O libraries).
template <typename T, int Dims>
class buffer_allocation_window {
  public:
    buffer_allocation_window(T* allocation, const range<Dims>& buffer_range, const subrange<Dims>& alloc, const subrange<Dims>& window)
        : m_allocation(allocation), m_buffer_range(buffer_range), m_alloc(alloc), m_window(window) {}
    T* get_allocation() const { return m_allocation; }
    range<Dims> get_buffer_range() const { return m_buffer_range; }
    range<Dims> get_allocation_range() const { return m_alloc.range; }
    id<Dims> get_allocation_offset_in_buffer() const { return m_alloc.offset; }
    range<Dims> get_window_range() const { return m_window.range; }
    id<Dims> get_window_offset_in_buffer() const { return m_window.offset; }
    id<Dims> get_window_offset_in_allocation() const { return m_window.offset - m_alloc.offset; }

  private:
    T* m_allocation;
    range<Dims> m_buffer_range;
    subrange<Dims> m_alloc;
    subrange<Dims> m_window;
};

/// A buffer accessor: declared in a command group, indexed in the kernel (`acc[item]`,
/// `acc[i][j]`, `*acc` for 0-D). Only the kernel's hydrated copy points at memory.
template <typename T, int Dims = 1, access_mode Mode = access_mode::read_write, target Target = target::device>
class accessor {
  public:
    using value_type = T;
    using reference = std::conditional_t<Mode == access_mode::read, const T&, T&>;
    using pointer = std::conditional_t<Mode == access_mode::read, const T*, T*>;
    static constexpr int dimensions = Dims;

    template <typename RangeMapper, access_mode TagMode, target TagTarget>
    accessor(const buffer<T, Dims>& buf, handler& cgh, const RangeMapper& rm, mode_tag_t<TagMode, TagTarget>) : accessor(buf, cgh, rm) {}
    template <typename RangeMapper, access_mode TagMode, target TagTarget>
    accessor(const buffer<T, Dims>& buf, handler& cgh, const RangeMapper& rm, mode_tag_t<TagMode, TagTarget>, no_init_t) : accessor(buf, cgh, rm) {}
    /// 0-D buffers need no range mapper.
    template <access_mode TagMode, target TagTarget, int D = Dims, std::enable_if_t<D == 0, int> = 0>
    accessor(const buffer<T, Dims>& buf, handler& cgh, mode_tag_t<TagMode, TagTarget>) : accessor(buf, cgh, celerity::access::all{}) {}
    template <access_mode TagMode, target TagTarget, int D = Dims, std::enable_if_t<D == 0, int> = 0>
    accessor(const buffer<T, Dims>& buf, handler& cgh, mode_tag_t<TagMode, TagTarget>, no_init_t) : accessor(buf, cgh, celerity::access::all{}) {}

    CELERITY_HD accessor(const accessor& other)
        : m_base(other.m_base), m_origin(other.m_origin), m_alloc(other.m_alloc), m_accessed(other.m_accessed), m_buffer_range(other.m_buffer_range),
          m_index(other.m_index), m_record(other.m_record) {
#if !defined(__CUDA_ARCH__)
        hydrate();
#endif
    }
    accessor& operator=(const accessor& other) = default;

#if CELERITY_ACCESSOR_BOUNDARY_CHECK
    // Every element access is checked against the declared box (when the runtime handed out a
    // record): see docs/diagnostics.md.
    CELERITY_HD reference operator[](const id<Dims>& i) const { return at(coordinate(i, 0), coordinate(i, 1), coordinate(i, 2)); }
    template <int D = Dims, std::enable_if_t<(D > 0), int> = 0>
    CELERITY_HD reference operator[](const item<Dims>& it) const {
        return (*this)[it.get_id()];
    }
    template <int D = Dims, std::enable_if_t<(D == 1), int> = 0>
    CELERITY_HD reference operator[](size_t i) const {
        return at(i, 0, 0);
    }
    template <int D = Dims, std::enable_if_t<(D == 2), int> = 0>
    CELERITY_HD detail::checked_row<accessor> operator[](size_t i0) const {
        return {this, i0, 0};
    }
    template <int D = Dims, std::enable_if_t<(D == 3), int> = 0>
    CELERITY_HD detail::checked_plane<accessor> operator[](size_t i0) const {
        return {this, i0};
    }
#else
    CELERITY_HD reference operator[](const id<Dims>& i) const { return m_origin[linear(i)]; }
    template <int D = Dims, std::enable_if_t<(D > 0), int> = 0>
    CELERITY_HD reference operator[](const item<Dims>& it) const {
        return m_origin[linear(it.get_id())];
    }
    template <int D = Dims, std::enable_if_t<(D == 1), int> = 0>
    CELERITY_HD reference operator[](size_t i) const {
        return m_origin[i];
    }
    template <int D = Dims, std::enable_if_t<(D == 2), int> = 0>
    CELERITY_HD detail::row_subscript<reference, pointer> operator[](size_t i0) const {
        return {m_origin + i0 * m_alloc.range[1]};
    }
    template <int D = Dims, std::enable_if_t<(D == 3), int> = 0>
    CELERITY_HD detail::plane_subscript<reference, pointer> operator[](size_t i0) const {
        return {m_origin + i0 * m_alloc.range[1] * m_alloc.range[2], m_alloc.range[2]};
    }
#endif
    /// Element (i0, i1, i2) in buffer coordinates (unused dimensions 0). With boundary checking,
    /// an index outside the declared box is recorded and yields a scratch element instead.
    CELERITY_HD reference at(size_t i0, size_t i1, size_t i2) const {
#if CELERITY_ACCESSOR_BOUNDARY_CHECK
        if(m_record != nullptr
            && (i0 - m_accessed.offset[0] >= m_accessed.range[0] || i1 - m_accessed.offset[1] >= m_accessed.range[1]
                || i2 - m_accessed.offset[2] >= m_accessed.range[2])) {
            const size_t lo[3] = {i0, i1, i2};
            const size_t hi[3] = {i0 + 1, i1 + 1, i2 + 1};
            celerity_accessor_record_box(m_record, lo, hi);
            if(sizeof(T) <= m_record->fallback_size) return *static_cast<pointer>(m_record->fallback);
            // Larger elements: the nearest element of the allocation.
            size_t c[3] = {i0, i1, i2};
            for(int d = 0; d < 3; ++d) {
                const size_t first = m_alloc.offset[d], last = first + m_alloc.range[d] - 1;
                c[d] = c[d] < first ? first : c[d] > last ? last : c[d];
            }
            return m_origin[(c[0] * m_alloc.range[1] + c[1]) * m_alloc.range[2] + c[2]];
        }
#endif
        return m_origin[(i0 * m_alloc.range[1] + i1) * m_alloc.range[2] + i2];
    }
    template <int D = Dims, std::enable_if_t<(D == 0), int> = 0>
    CELERITY_HD reference operator*() const {
        return *m_base;
    }
    template <int D = Dims, std::enable_if_t<(D == 0), int> = 0>
    CELERITY_HD pointer operator->() const {
        return m_base;
    }
    /// The first element of the backing allocation: buffer element 0 when the accessor covers
    /// the whole buffer (e.g. `access::all`).
    CELERITY_HD pointer get_pointer() const { return m_base; }

    /// The window of this host task's chunk in the backing allocation (host tasks).
    template <int PartitionDims>
    buffer_allocation_window<T, Dims> get_allocation_window(const partition<PartitionDims>&) const {
        return buffer_allocation_window<T, Dims>(const_cast<T*>(m_base), m_buffer_range,
            subrange<Dims>(detail::id_from_c<Dims>(m_alloc.offset), detail::range_from_c<Dims>(m_alloc.range)),
            subrange<Dims>(detail::id_from_c<Dims>(m_accessed.offset), detail::range_from_c<Dims>(m_accessed.range)));
    }

  private:
    pointer m_base = nullptr;
    pointer m_origin = nullptr; // see detail::allocation_origin
    celerity_subrange m_alloc{};
    celerity_subrange m_accessed{};
    range<Dims> m_buffer_range;
    uint32_t m_index = 0;
    celerity_accessor_record* m_record = nullptr; // boundary checking; nullptr when off

    template <typename RangeMapper>
    accessor(const buffer<T, Dims>& buf, handler& cgh, const RangeMapper& rm) : m_buffer_range(buf.get_range()) {
        m_index = cgh.add_access(detail::raw_buffer(buf), Mode, detail::make_c_mapper<Dims>(cgh, rm));
    }
    void hydrate() {
        const auto* ctx = detail::hydration().ctx;
        if(ctx == nullptr || m_index >= ctx->num_accessors) return;
        const celerity_accessor& a = ctx->accessors[m_index];
        m_base = static_cast<pointer>(a.base);
        m_origin = detail::allocation_origin(m_base, a.allocation);
        m_alloc = a.allocation;
        m_accessed = a.accessed;
        m_record = a.record;
    }
    static CELERITY_HD size_t coordinate(const id<Dims>& i, int d) {
        if constexpr(Dims == 0) {
            return 0;
        } else {
            return d < Dims ? i[d] : 0;
        }
    }
    CELERITY_HD size_t linear(const id<Dims>& i) const {
        if constexpr(Dims == 0) {
            return 0;
        } else if constexpr(Dims == 1) {
            return i[0];
        } else if constexpr(Dims == 2) {
            return i[0] * m_alloc.range[1] + i[1];
        } else {
            return (i[0] * m_alloc.range[1] + i[1]) * m_alloc.range[2] + i[2];
        }
    }
};

template <typename T, int Dims, typename RangeMapper, access_mode Mode, target Target>
accessor(const buffer<T, Dims>&, handler&, const RangeMapper&, mode_tag_t<Mode, Target>) -> accessor<T, Dims, Mode, Target>;
template <typename T, int Dims, typename RangeMapper, access_mode Mode, target Target>
accessor(const buffer<T, Dims>&, handler&, const RangeMapper&, mode_tag_t<Mode, Target>, no_init_t)
    -> accessor<T, Dims, detail::with_no_init(Mode), Target>;
template <typename T, access_mode Mode, target Target>
accessor(const buffer<T, 0>&, handler&, mode_tag_t<Mode, Target>) -> accessor<T, 0, Mode, Target>;
template <typename T, access_mode Mode, target Target>
accessor(const buffer<T, 0>&, handler&, mode_tag_t<Mode, Target>, no_init_t) -> accessor<T, 0, detail::with_no_init(Mode), Target>;

/// Work-group local memory of an `nd_range` kernel (CUDA: shared memory).
template <typename T, int Dims = 1>
class local_accessor {
  public:
    local_accessor(const range<Dims>& r, handler& cgh) : m_range(r), m_offset(cgh.add_local_memory(r.size() * sizeof(T), alignof(T))) {}
    CELERITY_HD local_accessor(const local_accessor& other) : m_ptr(other.m_ptr), m_range(other.m_range), m_offset(other.m_offset) {
#if !defined(__CUDA_ARCH__)
        if(auto* memory = detail::hydration().local_memory) m_ptr = reinterpret_cast<T*>(memory + m_offset);
#endif
    }
    local_accessor& operator=(const local_accessor&) = default;

    CELERITY_HD T& operator[](const id<Dims>& i) const {
        size_t l = 0;
        for(int d = 0; d < Dims; ++d) l = l * m_range[d] + i[d];
        return data()[l];
    }
    template <int D = Dims, std::enable_if_t<(D == 1), int> = 0>
    CELERITY_HD T& operator[](size_t i) const {
        return data()[i];
    }
    template <int D = Dims, std::enable_if_t<(D == 2), int> = 0>
    CELERITY_HD detail::row_subscript<T&, T*> operator[](size_t i0) const {
        return {data() + i0 * m_range[1]};
    }
    template <int D = Dims, std::enable_if_t<(D == 3), int> = 0>
    CELERITY_HD detail::plane_subscript<T&, T*> operator[](size_t i0) const {
        return {data() + i0 * m_range[1] * m_range[2], m_range[2]};
    }
    CELERITY_HD range<Dims> get_range() const { return m_range; }
    CELERITY_HD T* get_pointer() const { return data(); }

  private:
    T* m_ptr = nullptr;
    range<Dims> m_range;
    size_t m_offset;
    CELERITY_HD T* data() const {
#if defined(__CUDA_ARCH__)
        return reinterpret_cast<T*>(detail::cuda_local_memory() + m_offset);
#else
        return m_ptr;
#endif
    }
};

namespace experimental {

/// A host task's access to a host object's instance (`*eff`, `eff->`, `eff.get()`).
template <typename T>
class side_effect {
  public:
    using instance_type = typename host_object<T>::instance_type;
    side_effect(const host_object<T>& obj, handler& cgh) : m_index(cgh.add_side_effect(obj.get_handle())) {}
    side_effect(const side_effect& other) : m_instance(other.m_instance), m_index(other.m_index) {
        const auto* ctx = detail::hydration().ctx;
        if(ctx != nullptr && m_index < ctx->num_host_objects) m_instance = static_cast<instance_type*>(ctx->host_objects[m_index]);
    }
    side_effect& operator=(const side_effect&) = default;
    instance_type& get() const { return *m_instance; }
    instance_type& operator*() const { return *m_instance; }
    instance_type* operator->() const { return m_instance; }

  private:
    instance_type* m_instance = nullptr;
    uint32_t m_index;
};
template <>
class side_effect<void> {
  public:
    side_effect(const host_object<void>& obj, handler& cgh) { cgh.add_side_effect(obj.get_handle()); }
};
template <typename T>
side_effect(const host_object<T>&, handler&) -> side_effect<T>;

} // namespace experimental

// ---- reductions ------------------------------------------------------------------------------
namespace detail {

template <typename T>
constexpr bool c_scalar_type(celerity_scalar_type& out) {
    if constexpr(std::is_same_v<T, float>) {
        out = CELERITY_TYPE_F32;
    } else if constexpr(std::is_same_v<T, double>) {
        out = CELERITY_TYPE_F64;
    } else if constexpr(std::is_integral_v<T> && !std::is_same_v<T, bool> && (sizeof(T) == 4 || sizeof(T) == 8)) {
        out = sizeof(T) == 4 ? (std::is_signed_v<T> ? CELERITY_TYPE_I32 : CELERITY_TYPE_U32) : (std::is_signed_v<T> ? CELERITY_TYPE_I64 : CELERITY_TYPE_U64);
    } else {
        return false;
    }
    return true;
}

template <typename T, typename Op>
void custom_combine(void* user_data, void* accumulator, const void* value) {
    const Op& op = *static_cast<const Op*>(user_data);
    T acc, v;
    std::memcpy(&acc, accumulator, sizeof(T));
    std::memcpy(&v, value, sizeof(T));
    acc = op(acc, v);
    std::memcpy(accumulator, &acc, sizeof(T));
}

template <typename T, typename Op>
struct reduction_storage {
    T identity;
    Op op;
};

/// A reduction declared in a command group: its slot in the kernel context, identity and op.
template <typename T, typename Op>
struct reduction_descriptor {
    uint32_t index;
    T identity;
    Op op;
};

#if defined(__CUDACC__)
template <typename T, typename Op>
__device__ void cuda_atomic_combine(T* target, const T& value, const Op& op) {
    // Other sizes are refused on the host before launching (see kernel_closure::run).
    if constexpr(sizeof(T) == 4 || sizeof(T) == 8) {
        using word = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
        word* address = reinterpret_cast<word*>(target);
        word old = *address;
        word assumed;
        do {
            assumed = old;
            T current;
            memcpy(&current, &assumed, sizeof(T));
            const T next = op(current, value);
            word next_word;
            memcpy(&next_word, &next, sizeof(T));
            old = atomicCAS(address, assumed, next_word);
        } while(assumed != old);
    }
}
#endif

} // namespace detail

/// What a kernel receives for each reduction: `red.combine(v)` (or `red += v` etc.).
template <typename T, typename Op>
class reducer {
  public:
    CELERITY_HD reducer(const T& identity, const Op& op, T* target) : m_value(identity), m_identity(identity), m_op(op), m_target(target) {}
    CELERITY_HD void combine(const T& v) {
#if defined(__CUDA_ARCH__)
        detail::cuda_atomic_combine(m_target, v, m_op);
#else
        m_value = m_op(m_value, v);
#endif
    }
    CELERITY_HD T identity() const { return m_identity; }
    CELERITY_HD reducer& operator+=(const T& v) { return combine(v), *this; }
    CELERITY_HD reducer& operator*=(const T& v) { return combine(v), *this; }
    CELERITY_HD reducer& operator|=(const T& v) { return combine(v), *this; }
    CELERITY_HD reducer& operator&=(const T& v) { return combine(v), *this; }
    CELERITY_HD reducer& operator^=(const T& v) { return combine(v), *this; }
    CELERITY_HD reducer& operator++() { return combine(T{1}), *this; }
    /// The chunk's accumulated value (host).
    const T& value() const { return m_value; }

  private:
    T m_value;
    T m_identity;
    Op m_op;
    T* m_target;
};

namespace detail {
template <typename Op>
struct builtin_kind {
    static constexpr bool known = false;
    static constexpr celerity_reduction_kind kind = CELERITY_REDUCE_CUSTOM;
};
#if defined(CELERITY_SYCL_COMPAT)
#define CELERITY_BUILTIN_REDUCTION(op, c_kind)                                                                         \
    template <typename U>                                                                                              \
    struct builtin_kind<sycl::op<U>> {                                                                                 \
        static constexpr bool known = true;                                                                            \
        static constexpr celerity_reduction_kind kind = c_kind;                                                        \
    };
CELERITY_BUILTIN_REDUCTION(plus, CELERITY_REDUCE_SUM)
CELERITY_BUILTIN_REDUCTION(multiplies, CELERITY_REDUCE_PRODUCT)
CELERITY_BUILTIN_REDUCTION(minimum, CELERITY_REDUCE_MIN)
CELERITY_BUILTIN_REDUCTION(maximum, CELERITY_REDUCE_MAX)
#undef CELERITY_BUILTIN_REDUCTION
#endif

template <typename... Props>
constexpr bool has_initialize_to_identity() {
    return (std::is_same_v<std::decay_t<Props>, property::reduction::initialize_to_identity> || ...);
}

template <typename T, int Dims, typename Op>
reduction_descriptor<T, Op> make_reduction(const buffer<T, Dims>& buf, handler& cgh, const T& identity, const Op& op, bool init) {
    celerity_reduction_op c_op{};
    celerity_scalar_type type{};
    if constexpr(builtin_kind<Op>::known) {
        if(c_scalar_type<T>(type)) {
            c_op.kind = builtin_kind<Op>::kind;
            c_op.type = type;
            return {cgh.add_reduction(raw_buffer(buf), c_op, init), identity, op};
        }
    }
    static_assert(std::is_trivially_copyable_v<T>, "reduction elements must be trivially copyable");
    auto storage = std::make_shared<reduction_storage<T, Op>>(reduction_storage<T, Op>{identity, op});
    c_op.kind = CELERITY_REDUCE_CUSTOM;
    c_op.elem_size = sizeof(T);
    c_op.identity = &storage->identity;
    c_op.combine = &custom_combine<T, Op>;
    c_op.user_data = &storage->op;
    cgh.keep_alive(storage);
    return {cgh.add_reduction(raw_buffer(buf), c_op, init), identity, op};
}
} // namespace detail

/// A reduction into `buf` (0-D or one element) with an operator whose identity is known
/// (sycl::plus, multiplies, minimum, maximum, ... for arithmetic types).
template <typename T, int Dims, typename Op, typename... Props,
    std::enable_if_t<!std::is_convertible_v<Op, T> && (std::is_same_v<std::decay_t<Props>, property::reduction::initialize_to_identity> && ...), int> = 0>
auto reduction(const buffer<T, Dims>& buf, handler& cgh, const Op& op, Props&&...) {
#if defined(CELERITY_SYCL_COMPAT)
    static_assert(sycl::has_known_identity_v<Op, T>, "this operator has no known identity: pass one, reduction(buf, cgh, identity, op)");
    return detail::make_reduction(buf, cgh, sycl::known_identity_v<Op, T>, op, detail::has_initialize_to_identity<Props...>());
#else
    return detail::make_reduction(buf, cgh, sycl::known_identity_v<Op, T>, op, detail::has_initialize_to_identity<Props...>());
#endif
}
/// A reduction into `buf` with an explicit identity (user-defined operators).
template <typename T, int Dims, typename Op, typename... Props>
auto reduction(const buffer<T, Dims>& buf, handler& cgh, const T& identity, const Op& op, Props&&...) {
    return detail::make_reduction(buf, cgh, identity, op, detail::has_initialize_to_identity<Props...>());
}

} // namespace celerity

#endif // CELERITY_ACCESSOR_HPP

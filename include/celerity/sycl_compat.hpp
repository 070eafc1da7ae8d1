// celerity/sycl_compat.hpp: the sycl:: names that Celerity programs use (vector types, math
// functions, reduction operators), for builds without a SYCL implementation. Part of
// celerity.hpp; skipped entirely when a SYCL header was included first.
#ifndef CELERITY_SYCL_COMPAT_HPP
#define CELERITY_SYCL_COMPAT_HPP

#if !defined(SYCL_LANGUAGE_VERSION) && !defined(CL_SYCL_LANGUAGE_VERSION) && !defined(CELERITY_NO_SYCL_COMPAT)
#define CELERITY_SYCL_COMPAT 1

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core.hpp"

namespace sycl {

/// A small vector of N (2, 3, 4 or more) elements with SYCL's accessors and arithmetic.
template <typename T, int N>
class vec {
  public:
    using element_type = T;
    static constexpr int size_v = N;

    CELERITY_HD constexpr vec() : m_v{} {}
    CELERITY_HD constexpr explicit vec(const T& s) : m_v{} {
        for(int i = 0; i < N; ++i) m_v[i] = s;
    }
    template <typename... Args, std::enable_if_t<sizeof...(Args) == N && (N > 1) && (std::is_convertible_v<Args, T> && ...), int> = 0>
    CELERITY_HD constexpr vec(const Args&... args) : m_v{static_cast<T>(args)...} {}

    CELERITY_HD static constexpr int size() { return N; }
    CELERITY_HD constexpr T& operator[](int i) { return m_v[i]; }
    CELERITY_HD constexpr const T& operator[](int i) const { return m_v[i]; }

    CELERITY_HD constexpr T& x() { return m_v[0]; }
    CELERITY_HD constexpr const T& x() const { return m_v[0]; }
    CELERITY_HD constexpr T& y() { return m_v[1]; }
    CELERITY_HD constexpr const T& y() const { return m_v[1]; }
    CELERITY_HD constexpr T& z() { return m_v[2]; }
    CELERITY_HD constexpr const T& z() const { return m_v[2]; }
    CELERITY_HD constexpr T& w() { return m_v[3]; }
    CELERITY_HD constexpr const T& w() const { return m_v[3]; }
    CELERITY_HD constexpr T& r() { return m_v[0]; }
    CELERITY_HD constexpr const T& r() const { return m_v[0]; }
    CELERITY_HD constexpr T& g() { return m_v[1]; }
    CELERITY_HD constexpr const T& g() const { return m_v[1]; }
    CELERITY_HD constexpr T& b() { return m_v[2]; }
    CELERITY_HD constexpr const T& b() const { return m_v[2]; }
    CELERITY_HD constexpr T& a() { return m_v[3]; }
    CELERITY_HD constexpr const T& a() const { return m_v[3]; }

    /// Element-wise conversion (truncating like a static_cast, as SYCL's default rounding).
    template <typename U>
    CELERITY_HD constexpr vec<U, N> convert() const {
        vec<U, N> r;
        for(int i = 0; i < N; ++i) r[i] = static_cast<U>(m_v[i]);
        return r;
    }

#define CELERITY_VEC_OP(op, assign_op)                                                                                 \
    CELERITY_HD friend constexpr vec operator op(const vec& l, const vec& r) {                                         \
        vec o;                                                                                                         \
        for(int i = 0; i < N; ++i) o[i] = l[i] op r[i];                                                                \
        return o;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr vec operator op(const vec& l, const T& s) {                                           \
        vec o;                                                                                                         \
        for(int i = 0; i < N; ++i) o[i] = l[i] op s;                                                                   \
        return o;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr vec operator op(const T& s, const vec& r) {                                           \
        vec o;                                                                                                         \
        for(int i = 0; i < N; ++i) o[i] = s op r[i];                                                                   \
        return o;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr vec& operator assign_op(vec& l, const vec& r) {                                       \
        for(int i = 0; i < N; ++i) l[i] assign_op r[i];                                                                \
        return l;                                                                                                      \
    }                                                                                                                  \
    CELERITY_HD friend constexpr vec& operator assign_op(vec& l, const T& s) {                                         \
        for(int i = 0; i < N; ++i) l[i] assign_op s;                                                                   \
        return l;                                                                                                      \
    }
    CELERITY_VEC_OP(+, +=)
    CELERITY_VEC_OP(-, -=)
    CELERITY_VEC_OP(*, *=)
    CELERITY_VEC_OP(/, /=)
#undef CELERITY_VEC_OP

    CELERITY_HD friend constexpr vec operator-(const vec& v) {
        vec o;
        for(int i = 0; i < N; ++i) o[i] = -v[i];
        return o;
    }
    CELERITY_HD friend constexpr bool operator==(const vec& l, const vec& r) {
        for(int i = 0; i < N; ++i) {
            if(!(l[i] == r[i])) return false;
        }
        return true;
    }
    CELERITY_HD friend constexpr bool operator!=(const vec& l, const vec& r) { return !(l == r); }

  private:
    T m_v[N];
};

#define CELERITY_VEC_ALIASES(prefix, T)                                                                                \
    using prefix##2 = vec<T, 2>;                                                                                       \
    using prefix##3 = vec<T, 3>;                                                                                       \
    using prefix##4 = vec<T, 4>;                                                                                       \
    using prefix##8 = vec<T, 8>;                                                                                       \
    using prefix##16 = vec<T, 16>;
CELERITY_VEC_ALIASES(float, float)
CELERITY_VEC_ALIASES(double, double)
CELERITY_VEC_ALIASES(char, char)
CELERITY_VEC_ALIASES(uchar, unsigned char)
CELERITY_VEC_ALIASES(short, short)
CELERITY_VEC_ALIASES(ushort, unsigned short)
CELERITY_VEC_ALIASES(int, int)
CELERITY_VEC_ALIASES(uint, unsigned int)
CELERITY_VEC_ALIASES(long, long)
CELERITY_VEC_ALIASES(ulong, unsigned long)
#undef CELERITY_VEC_ALIASES

// ---- math ---------------------------------------------------------------------------------
// One overload per float and double (the C functions, which CUDA also provides on the device),
// element-wise over vec.
#define CELERITY_MATH_1(name, cname)                                                                                   \
    CELERITY_HD inline float name(float x) { return ::cname##f(x); }                                                   \
    CELERITY_HD inline double name(double x) { return ::cname(x); }                                                    \
    template <typename T, int N>                                                                                       \
    CELERITY_HD vec<T, N> name(const vec<T, N>& v) {                                                                   \
        vec<T, N> o;                                                                                                   \
        for(int i = 0; i < N; ++i) o[i] = name(v[i]);                                                                  \
        return o;                                                                                                      \
    }
#define CELERITY_MATH_2(name, cname)                                                                                   \
    CELERITY_HD inline float name(float x, float y) { return ::cname##f(x, y); }                                       \
    CELERITY_HD inline double name(double x, double y) { return ::cname(x, y); }                                       \
    template <typename T, int N>                                                                                       \
    CELERITY_HD vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) {                                               \
        vec<T, N> o;                                                                                                   \
        for(int i = 0; i < N; ++i) o[i] = name(a[i], b[i]);                                                            \
        return o;                                                                                                      \
    }
CELERITY_MATH_1(exp, exp)
CELERITY_MATH_1(exp2, exp2)
CELERITY_MATH_1(log, log)
CELERITY_MATH_1(log2, log2)
CELERITY_MATH_1(log10, log10)
CELERITY_MATH_1(sqrt, sqrt)
CELERITY_MATH_1(cbrt, cbrt)
CELERITY_MATH_1(sin, sin)
CELERITY_MATH_1(cos, cos)
CELERITY_MATH_1(tan, tan)
CELERITY_MATH_1(asin, asin)
CELERITY_MATH_1(acos, acos)
CELERITY_MATH_1(atan, atan)
CELERITY_MATH_1(sinh, sinh)
CELERITY_MATH_1(cosh, cosh)
CELERITY_MATH_1(tanh, tanh)
CELERITY_MATH_1(fabs, fabs)
CELERITY_MATH_1(floor, floor)
CELERITY_MATH_1(ceil, ceil)
CELERITY_MATH_1(round, round)
CELERITY_MATH_1(trunc, trunc)
CELERITY_MATH_2(pow, pow)
CELERITY_MATH_2(fmin, fmin)
CELERITY_MATH_2(fmax, fmax)
CELERITY_MATH_2(fmod, fmod)
CELERITY_MATH_2(atan2, atan2)
CELERITY_MATH_2(hypot, hypot)
#undef CELERITY_MATH_1
#undef CELERITY_MATH_2
CELERITY_HD inline float rsqrt(float x) { return 1.f / ::sqrtf(x); }
CELERITY_HD inline double rsqrt(double x) { return 1.0 / ::sqrt(x); }
CELERITY_HD inline float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
CELERITY_HD inline double fma(double a, double b, double c) { return ::fma(a, b, c); }
template <typename T>
CELERITY_HD constexpr T min(T a, T b) { return b < a ? b : a; }
template <typename T>
CELERITY_HD constexpr T max(T a, T b) { return a < b ? b : a; }
template <typename T>
CELERITY_HD constexpr T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <typename T, int N>
CELERITY_HD constexpr T dot(const vec<T, N>& a, const vec<T, N>& b) {
    T s{};
    for(int i = 0; i < N; ++i) s += a[i] * b[i];
    return s;
}
template <typename T, int N>
CELERITY_HD T length(const vec<T, N>& v) { return sqrt(dot(v, v)); }

// ---- function objects (reduction operators) ---------------------------------------------------
template <typename T = void>
struct plus {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a + b; }
};
template <>
struct plus<void> {
    template <typename T>
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a + b; }
};
template <typename T = void>
struct multiplies {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a * b; }
};
template <>
struct multiplies<void> {
    template <typename T>
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a * b; }
};
template <typename T = void>
struct minimum {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <>
struct minimum<void> {
    template <typename T>
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <typename T = void>
struct maximum {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <>
struct maximum<void> {
    template <typename T>
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <typename T = void>
struct bit_or {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a | b; }
};
template <typename T = void>
struct bit_and {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a & b; }
};
template <typename T = void>
struct logical_or {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a || b; }
};
template <typename T = void>
struct logical_and {
    CELERITY_HD constexpr T operator()(const T& a, const T& b) const { return a && b; }
};

/// The identity of a reduction operator for T, where SYCL defines one.
template <typename Op, typename T, typename = void>
struct known_identity {};
template <template <typename> class Op, typename U, typename T>
struct known_identity<Op<U>, T, std::enable_if_t<std::is_same_v<Op<U>, plus<U>> && std::is_arithmetic_v<T>>> {
    static constexpr T value = T{};
};
template <template <typename> class Op, typename U, typename T>
struct known_identity<Op<U>, T, std::enable_if_t<std::is_same_v<Op<U>, multiplies<U>> && std::is_arithmetic_v<T>>> {
    static constexpr T value = T{1};
};
template <template <typename> class Op, typename U, typename T>
struct known_identity<Op<U>, T, std::enable_if_t<std::is_same_v<Op<U>, minimum<U>> && std::is_arithmetic_v<T>>> {
    static constexpr T value = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
};
template <template <typename> class Op, typename U, typename T>
struct known_identity<Op<U>, T, std::enable_if_t<std::is_same_v<Op<U>, maximum<U>> && std::is_arithmetic_v<T>>> {
    static constexpr T value = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
};
template <template <typename> class Op, typename U, typename T>
struct known_identity<Op<U>, T, std::enable_if_t<(std::is_same_v<Op<U>, bit_or<U>> || std::is_same_v<Op<U>, logical_or<U>>) && std::is_integral_v<T>>> {
    static constexpr T value = T{};
};
template <template <typename> class Op, typename U, typename T>
struct known_identity<Op<U>, T, std::enable_if_t<std::is_same_v<Op<U>, logical_and<U>> && std::is_integral_v<T>>> {
    static constexpr T value = T{1};
};
template <typename Op, typename T, typename = void>
struct has_known_identity : std::false_type {};
template <typename Op, typename T>
struct has_known_identity<Op, T, std::void_t<decltype(known_identity<Op, T>::value)>> : std::true_type {};
template <typename Op, typename T>
inline constexpr bool has_known_identity_v = has_known_identity<Op, T>::value;
template <typename Op, typename T>
inline constexpr T known_identity_v = known_identity<Op, T>::value;

using celerity::id;
using celerity::item;
using celerity::nd_item;
using celerity::nd_range;
using celerity::range;

} // namespace sycl

#endif // no SYCL header
#endif // CELERITY_SYCL_COMPAT_HPP

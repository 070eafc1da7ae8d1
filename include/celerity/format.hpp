// celerity/format.hpp: the `{}` formatting of Celerity's logging macros and, where the {fmt}
// library is not installed, the part of `fmt::` that C++ Celerity programs call (C++ Celerity
// makes fmt available through <celerity.h>). Part of celerity.hpp.
#ifndef CELERITY_FORMAT_HPP
#define CELERITY_FORMAT_HPP

#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>

namespace celerity::detail {

/// One argument of a format call, type-erased: the value and how to write it.
struct format_arg {
    const void* value;
    void (*write)(std::ostream&, const void*);
};
template <typename T>
void write_format_arg(std::ostream& out, const void* value) {
    out << *static_cast<const T*>(value);
}

/// Writes `fmt` with each `{}` or `{N}` replaced by the next or the N-th argument (fmt's syntax:
/// `{{` and `}}` escape; a format spec after `:` is accepted and ignored; bools print as
/// true/false). A placeholder without its argument is written as it stands.
inline void vformat_to(std::ostream& out, const char* fmt, const format_arg* args, size_t count) {
    out << std::boolalpha;
    size_t next = 0;
    for(const char* p = fmt; *p != '\0'; ++p) {
        if((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            out << *p++;
            continue;
        }
        const char* close = p[0] == '{' ? std::strchr(p, '}') : nullptr;
        if(close == nullptr) {
            out << *p;
            continue;
        }
        size_t index = next++;
        if(p[1] >= '0' && p[1] <= '9') {
            index = 0;
            for(const char* d = p + 1; *d >= '0' && *d <= '9'; ++d) index = index * 10 + static_cast<size_t>(*d - '0');
        }
        if(index < count) {
            args[index].write(out, args[index].value);
        } else {
            out.write(p, close - p + 1);
        }
        p = close;
    }
}

template <typename... Args>
std::string format(const char* fmt, const Args&... args) {
    std::ostringstream out;
    const format_arg erased[sizeof...(Args) + 1] = {{&args, &write_format_arg<Args>}..., {nullptr, nullptr}};
    vformat_to(out, fmt, erased, sizeof...(Args));
    return out.str();
}

} // namespace celerity::detail

#if defined(__has_include) && !defined(FMT_VERSION) && !defined(CELERITY_NO_FMT_COMPAT)
#if !__has_include(<fmt/format.h>)
#define CELERITY_FMT_COMPAT 1
/// `fmt::format` and `fmt::print` for programs written against C++ Celerity, which gets them
/// from its bundled {fmt}; only `{}`/`{N}` placeholders, specs ignored (docs/porting.md).
namespace fmt {
template <typename... Args>
std::string format(const char* f, const Args&... args) {
    return celerity::detail::format(f, args...);
}
template <typename... Args>
void print(std::FILE* stream, const char* f, const Args&... args) {
    std::fputs(celerity::detail::format(f, args...).c_str(), stream);
}
template <typename... Args>
void print(const char* f, const Args&... args) {
    std::fputs(celerity::detail::format(f, args...).c_str(), stdout);
}
} // namespace fmt
#endif
#endif

#endif // CELERITY_FORMAT_HPP

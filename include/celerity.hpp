// celerity.hpp: the C++ frontend of libcelerity, C++ Celerity 0.7's public API (queue, buffer,
// accessor, range mappers, parallel_for, host tasks, host objects, reductions), header-only
// over the C ABI in celerity.h. C++17; `#include <celerity.h>` from C++ includes it too (define
// CELERITY_C_API_ONLY to get only the C API). docs/cxx-guide.md describes it; docs/porting.md
// lists every difference from C++ Celerity.
#ifndef CELERITY_HPP
#define CELERITY_HPP

#if __cplusplus < 201703L
#error "celerity.hpp needs C++17 or later"
#endif

// Standard headers that C++ Celerity programs get through <celerity.h>.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "celerity/core.hpp"
#include "celerity/sycl_compat.hpp"
#include "celerity/runtime.hpp"
#include "celerity/handler.hpp"
#include "celerity/accessor.hpp"
#include "celerity/execution.hpp"
#include "celerity/queue.hpp"

#endif // CELERITY_HPP

// Internal invariant checks that cost nothing in release builds.
//
// DUET_CHECKS is 1 in builds without NDEBUG (Debug, and the sanitizer builds, which are Debug)
// and where CMake's DUET_CHECKS=ON defines DUET_FORCE_CHECKS; 0 otherwise. DUET_CHECK(cond,
// detail) evaluates nothing when DUET_CHECKS is 0; when it is 1 and cond is false, it prints
// "duet: invariant broken at FILE:LINE: COND: DETAIL" to stderr and aborts, so a broken
// invariant stops a test at the point of damage rather than as a later crash.
#pragma once

#include <string>

#if !defined(NDEBUG) || defined(DUET_FORCE_CHECKS)
#define DUET_CHECKS 1
#else
#define DUET_CHECKS 0
#endif

namespace duet {

/// Reports a broken invariant and aborts. Never returns.
[[noreturn]] void check_failed(const char* file, int line, const char* condition, const std::string& detail);

}  // namespace duet

/// Aborts with `detail` (a std::string expression, evaluated only on failure) when `cond` is
/// false, in builds with DUET_CHECKS; compiles to nothing otherwise.
#define DUET_CHECK(cond, detail)                                                  \
  do {                                                                            \
    if constexpr (DUET_CHECKS) {                                                  \
      if (!(cond)) ::duet::check_failed(__FILE__, __LINE__, #cond, (detail));     \
    }                                                                             \
  } while (0)

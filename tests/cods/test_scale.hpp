// How much of its work each CODS suite runs: DUET_TEST_SCALE (default 1, at least 0.01), which
// sanitizer builds set below 1 to stay within their time.
#pragma once

#include <algorithm>
#include <cstdlib>

namespace duet::cods::test_util {

/// DUET_TEST_SCALE as a number (1 when unset or empty; values below 0.01 read as 0.01).
inline double scale() {
  if (const char* s = std::getenv("DUET_TEST_SCALE"); s && *s) return std::max(0.01, std::atof(s));
  return 1.0;
}

}  // namespace duet::cods::test_util

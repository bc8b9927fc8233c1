#include "common/check.hpp"

#include <cstdio>
#include <cstdlib>

namespace duet {

void check_failed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "duet: invariant broken at %s:%d: %s: %s\n", file, line, condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace duet

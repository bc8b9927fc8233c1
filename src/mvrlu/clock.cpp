#include "mvrlu/clock.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace duet::mvrlu::detail {

std::uint64_t Clock::tsc_now() {
#if defined(__x86_64__)
  // The fence orders every earlier load and store before the read (the commit protocol's
  // argument needs it: docs/mvrlu.md, "Fences").
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return clock::ordered_tsc();
#else
  return 0;
#endif
}

std::uint64_t Clock::tsc_unfenced() { return clock::ordered_tsc(); }

void Clock::init(Kind kind, std::uint64_t boundary, std::vector<std::int64_t> skew) {
  kind_ = kind;
  boundary_ = kind == Kind::kCounter ? 0 : boundary;
  skew_ = std::move(skew);
}

void Clock::wait_past(unsigned slot, std::uint64_t ts) {
  if (kind_ == Kind::kCounter) return;
  const std::uint64_t target = ts + boundary_;
  // The wait orders nothing: only the clock's value matters, so no fence per poll.
  while ((kind_ == Kind::kTsc ? tsc_unfenced() : now(slot)) < target) {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
}

}  // namespace duet::mvrlu::detail

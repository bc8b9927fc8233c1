// StripedCounter: a signed counter that many threads add to without sharing a cache line.
#pragma once

#include <atomic>
#include <cstdint>

namespace duet::mem {

/// A counter spread over cache lines by thread: add() touches the caller's line only; sum()
/// reads them all (64 loads). Both are sequentially consistent, so a sum can be paired with a
/// flag Dekker-style (the kv model switch does). A thread keeps its stripe for its lifetime.
class StripedCounter {
 public:
  void add(std::int64_t d);
  std::int64_t sum() const;

 private:
  static constexpr unsigned kStripes = 64;
  struct alignas(64) Stripe {
    std::atomic<std::int64_t> v{0};
  };
  Stripe stripes_[kStripes];
};

}  // namespace duet::mem

// MemoryBudget: the host bytes a Store may use for values, keys and caches, shared by all its
// keyspaces (StoreConfig::memory_budget_bytes). Users charge before they allocate and release
// what they free; a charge that would pass the limit is refused, so an over-budget write fails
// cleanly instead of the process running out of memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "duet/status.hpp"

namespace duet::mem {

/// A byte count charged against a fixed limit. Thread-safe; charge() is a CAS loop on one word
/// (contended only by concurrent allocations), release() and used() one atomic each.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t limit) : limit_(limit) {}
  /// Charges n bytes; ResourceExhausted (charging nothing) when that would pass the limit.
  Status charge(std::uint64_t n) {
    std::uint64_t cur = used_.load(std::memory_order_relaxed);
    for (;;) {
      if (cur + n > limit_ || cur + n < cur)
        return Status::ResourceExhausted("memory budget of " + std::to_string(limit_) + " bytes exhausted (" +
                                         std::to_string(cur) + " in use, " + std::to_string(n) + " requested)");
      if (used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return Status::Ok();
    }
  }
  void release(std::uint64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  std::uint64_t limit() const { return limit_; }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
};

}  // namespace duet::mem

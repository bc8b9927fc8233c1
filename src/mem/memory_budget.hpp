// MemoryBudget: the host bytes a Store may use for values, keys and caches, shared by all its
// keyspaces (StoreConfig::memory_budget_bytes). Users charge before they allocate and release
// what they free; a charge that would pass the limit is refused, so an over-budget write fails
// cleanly instead of the process running out of memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "duet/status.hpp"

namespace duet::mem {

/// A byte count charged against a fixed limit. Thread-safe.
///
/// The first kStripes threads that use any budget each own one credit word per budget (its own
/// cache line): they charge from it and release into it with plain loads and stores, and move
/// bytes between it and the shared count a chunk at a time. So a thread storing and freeing
/// values pays no atomic read-modify-write, whose fence would wait for the thread's
/// outstanding cache misses. Later threads use the shared count directly.
///
/// The limit is never passed. A charge may be refused while other threads hold unused credit:
/// at most 2 chunks each, a chunk being limit / (64 * kStripes) capped at 64 KiB, so together
/// at most 1/32 of the limit (nothing for limits under 2 KiB, which are exact). Credit of a
/// thread that exits stays parked. Cost: a few plain memory operations per call; one atomic
/// on the shared count per chunk.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t limit)
      : limit_(limit), chunk_(std::min<std::uint64_t>(kMaxChunk, limit / (64 * kStripes))) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  /// Charges n bytes; ResourceExhausted (charging nothing) when that would pass the limit.
  Status charge(std::uint64_t n) {
    const int t = thread_slot();
    if (t >= 0) {
      std::atomic<std::uint64_t>& credit = stripes_[t].credit;
      const std::uint64_t c = credit.load(std::memory_order_relaxed);
      if (c >= n) {
        credit.store(c - n, std::memory_order_relaxed);
        return Status::Ok();
      }
    }
    return charge_shared(t, n);
  }
  /// Returns n bytes charged earlier (by any thread).
  void release(std::uint64_t n) {
    const int t = thread_slot();
    if (t < 0) {
      reserved_.fetch_sub(n, std::memory_order_relaxed);
      return;
    }
    std::atomic<std::uint64_t>& credit = stripes_[t].credit;
    const std::uint64_t c = credit.load(std::memory_order_relaxed) + n;
    if (c <= 2 * chunk_) {
      credit.store(c, std::memory_order_relaxed);
      return;
    }
    credit.store(chunk_, std::memory_order_relaxed);
    reserved_.fetch_sub(c - chunk_, std::memory_order_relaxed);
  }
  /// Bytes charged and not released. Exact when no charge or release runs concurrently;
  /// otherwise it may miss the calls in progress.
  std::uint64_t used() const {
    std::uint64_t credit = 0;
    for (const Stripe& s : stripes_) credit += s.credit.load(std::memory_order_relaxed);
    const std::uint64_t reserved = reserved_.load(std::memory_order_relaxed);
    return reserved > credit ? reserved - credit : 0;
  }
  std::uint64_t limit() const { return limit_; }

 private:
  static constexpr int kStripes = 32;
  static constexpr std::uint64_t kMaxChunk = 64 * 1024;
  struct alignas(128) Stripe {
    /// Reserved in reserved_ and charged to no one yet; written only by the owning thread.
    std::atomic<std::uint64_t> credit{0};
  };

  /// This thread's stripe, the same for every budget; -1 past the first kStripes threads.
  static int thread_slot() {
    static std::atomic<int> next{0};
    thread_local const int mine = next.fetch_add(1, std::memory_order_relaxed);
    return mine < kStripes ? mine : -1;
  }

  /// Moves n bytes, plus a chunk of credit for the calling thread's stripe when that fits,
  /// from the unreserved part of the limit to the caller.
  Status charge_shared(int t, std::uint64_t n) {
    std::uint64_t cur = reserved_.load(std::memory_order_relaxed);
    for (;;) {
      if (cur + n > limit_ || cur + n < cur)
        return Status::ResourceExhausted("memory budget of " + std::to_string(limit_) + " bytes exhausted (" +
                                         std::to_string(used()) + " in use, " + std::to_string(n) + " requested)");
      const std::uint64_t extra = t >= 0 ? std::min(chunk_, limit_ - cur - n) : 0;
      if (reserved_.compare_exchange_weak(cur, cur + n + extra, std::memory_order_relaxed)) {
        if (extra) {
          std::atomic<std::uint64_t>& credit = stripes_[t].credit;
          credit.store(credit.load(std::memory_order_relaxed) + extra, std::memory_order_relaxed);
        }
        return Status::Ok();
      }
    }
  }

  const std::uint64_t limit_;
  const std::uint64_t chunk_;  ///< credit moved at once: limit / (64 * kStripes), at most 64 KiB
  alignas(128) std::atomic<std::uint64_t> reserved_{0};  ///< charged plus every stripe's credit
  Stripe stripes_[kStripes];
};

}  // namespace duet::mem

// MemoryBudget: threads charge through per-thread credit, yet the charged bytes never pass the
// limit, parked credit stays within its bound, and used() is exact when quiet.
#include "mem/memory_budget.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace duet::mem {
namespace {

TEST(MemoryBudget, RefusesPastTheLimitAndChargesNothing) {
  MemoryBudget b(1000);
  EXPECT_TRUE(b.charge(600).ok());
  EXPECT_EQ(b.used(), 600u);
  const Status refused = b.charge(401);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("600 in use"), std::string::npos) << refused.to_string();
  EXPECT_EQ(b.used(), 600u);
  EXPECT_TRUE(b.charge(400).ok());  // exactly up to the limit
  EXPECT_EQ(b.used(), 1000u);
  EXPECT_FALSE(b.charge(1).ok());
  b.release(1000);
  EXPECT_EQ(b.used(), 0u);
  EXPECT_FALSE(b.charge(~std::uint64_t{0}).ok());  // no wrap-around
}

// Credit other threads keep after their releases costs a charge at most 1/32 of the limit.
TEST(MemoryBudget, CreditHeldByOtherThreadsIsBounded) {
  const std::uint64_t limit = 8u << 20;
  MemoryBudget b(limit);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) ASSERT_TRUE(b.charge(4096).ok());
      for (int i = 0; i < 1000; ++i) b.release(4096);
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(b.used(), 0u);
  EXPECT_TRUE(b.charge(limit - limit / 32).ok()) << "parked credit is over its documented bound";
  EXPECT_EQ(b.used(), limit - limit / 32);
  b.release(limit - limit / 32);
  EXPECT_EQ(b.used(), 0u);
}

// Small limits have no per-thread credit: exact from any thread.
TEST(MemoryBudget, SmallLimitsAreExactAcrossThreads) {
  MemoryBudget b(1000);
  std::thread([&] {
    ASSERT_TRUE(b.charge(999).ok());
    b.release(999);
  }).join();
  EXPECT_TRUE(b.charge(1000).ok());
  EXPECT_FALSE(b.charge(1).ok());
}

// Threads charge and release random sizes; each keeps its own total. The budget must refuse only
// when the bytes really do not fit (checked against the sum of every thread's holdings, which
// only grows while the refusing thread looks), never exceed the limit, and end at zero.
TEST(MemoryBudget, ConcurrentChargesStayWithinTheLimit) {
  const std::uint64_t limit = 1u << 20;
  MemoryBudget b(limit);
  constexpr int kThreads = 6;
  std::atomic<std::uint64_t> held_total{0};
  std::atomic<int> over{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::uint64_t rng = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1);
      std::vector<std::uint64_t> mine;
      for (int i = 0; i < 20000; ++i) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        if (mine.size() < 64 && (rng & 3) != 0) {
          const std::uint64_t n = 16 + rng % 8192;
          if (b.charge(n).ok()) {
            mine.push_back(n);
            if (held_total.fetch_add(n) + n > limit) over.fetch_add(1);
          }
        } else if (!mine.empty()) {
          held_total.fetch_sub(mine.back());
          b.release(mine.back());
          mine.pop_back();
        }
      }
      for (std::uint64_t n : mine) {
        held_total.fetch_sub(n);
        b.release(n);
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(over.load(), 0) << "charged bytes passed the limit";
  EXPECT_EQ(b.used(), 0u);
  EXPECT_TRUE(b.charge(limit - limit / 32).ok());
}

}  // namespace
}  // namespace duet::mem

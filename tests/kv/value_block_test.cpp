// Value encoding and the blocks behind out-of-line values: every size round-trips, the memory
// budget returns to zero once every block is freed, and blocks freed on other threads (into
// those threads' caches of small blocks, emptied when they exit) are safe to reuse. Also run
// under ASan and UBSan by scripts/test, which is where a block reused while still owned, or one
// never freed, would show.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kv/encoding.hpp"
#include "mem/memory_budget.hpp"

namespace duet::kv {
namespace {

using mem::MemoryBudget;

std::string pattern(std::size_t size, unsigned seed) {
  std::string v(size, '\0');
  for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<char>((i * 131 + seed * 17 + 1) & 0xFF);
  return v;
}

void free_handle(std::uint64_t h) {
  if (is_block(h)) free_value_block(reinterpret_cast<void*>(h));
}

TEST(ValueBlocks, EverySizeRoundTripsAndTheBudgetReturnsToZero) {
  MemoryBudget budget(1ull << 30);
  for (unsigned round = 0; round < 4; ++round) {  // later rounds reuse cached blocks
    std::vector<std::uint64_t> handles;
    for (std::size_t size = 0; size <= 300; ++size) {
      const std::string v = pattern(size, round);
      std::uint64_t h = 0;
      ASSERT_TRUE(make_value(v, &budget, &h).ok()) << size;
      std::string out;
      append_value(h, &out);
      ASSERT_EQ(out, v) << "size " << size << " round " << round;
      handles.push_back(h);
    }
    EXPECT_GT(budget.used(), 0u);
    // Free in an order that mixes size classes, then check the survivors are untouched.
    for (std::size_t i = 0; i < handles.size(); i += 2) free_handle(handles[i]);
    for (std::size_t i = 1; i < handles.size(); i += 2) {
      std::string out;
      append_value(handles[i], &out);
      ASSERT_EQ(out, pattern(i, round)) << "size " << i << " changed after others were freed";
    }
    for (std::size_t i = 1; i < handles.size(); i += 2) free_handle(handles[i]);
    EXPECT_EQ(budget.used(), 0u) << "round " << round;
  }
}

TEST(ValueBlocks, BlocksFreedOnOtherThreadsAreReusedSafely) {
  MemoryBudget budget(1ull << 30);
  constexpr int kBlocks = 20000;  // more than one thread's cache holds
  std::vector<std::uint64_t> handles(kBlocks);
  for (int i = 0; i < kBlocks; ++i)
    ASSERT_TRUE(make_value(pattern(8 + i % 150, 1), &budget, &handles[i]).ok());
  std::vector<std::thread> freers;
  for (int t = 0; t < 4; ++t)
    freers.emplace_back([&, t] {
      for (int i = t; i < kBlocks; i += 4) free_handle(handles[i]);
      // Reuse some of this thread's cache before it exits.
      for (int i = 0; i < 1000; ++i) {
        std::uint64_t h = 0;
        const std::string v = pattern(8 + i % 150, 2);
        ASSERT_TRUE(make_value(v, &budget, &h).ok());
        std::string out;
        append_value(h, &out);
        ASSERT_EQ(out, v);
        free_handle(h);
      }
    });
  for (std::thread& t : freers) t.join();
  EXPECT_EQ(budget.used(), 0u);
  for (int i = 0; i < 1000; ++i) {  // this thread's cache is empty; the allocator serves these
    std::uint64_t h = 0;
    ASSERT_TRUE(make_value(pattern(8 + i % 150, 3), &budget, &h).ok());
    free_handle(h);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ValueBlocks, OverBudgetIsRefusedAndChargesNothing) {
  MemoryBudget budget(100);
  std::uint64_t h = 0;
  const Status s = make_value(std::string(200, 'x'), &budget, &h);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(budget.used(), 0u);
  ASSERT_TRUE(make_value(std::string(40, 'y'), &budget, &h).ok());
  free_handle(h);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace duet::kv

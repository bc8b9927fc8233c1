// The invariant checks of builds with DUET_CHECKS (Debug and sanitizer builds): each broken
// invariant that once let the kv keyspace read freed value blocks must abort at once, with a
// message that names what broke. In release builds the checks compile to nothing, so these
// tests skip there (scripts/test runs them in build-asan, a Debug build).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/check.hpp"
#include "kv/encoding.hpp"
#include "kv/hot_cache.hpp"
#include "mem/epoch.hpp"
#include "mem/memory_budget.hpp"
#include "sched/epoch_gate.hpp"

namespace duet::kv {
namespace {

using mem::MemoryBudget;
using sched::EpochGate;

#define SKIP_WITHOUT_CHECKS() \
  if (!DUET_CHECKS) GTEST_SKIP() << "invariant checks are compiled out of this build (NDEBUG without DUET_CHECKS)"

class InvariantChecks : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  MemoryBudget budget_{1u << 20};
  std::uint64_t block(std::size_t size = 100) {
    std::uint64_t h = 0;
    EXPECT_TRUE(make_value(std::string(size, 'v'), &budget_, &h).ok());
    EXPECT_TRUE(is_block(h));
    return h;
  }
};

TEST_F(InvariantChecks, ReadingAFreedBlockAborts) {
  SKIP_WITHOUT_CHECKS();
  for (std::size_t size : {9u, 100u, 128u, 129u, 5000u}) {  // both sides of the block cache's limit
    const std::uint64_t h = block(size);
    EXPECT_EQ(value_block_state(h), kBlockLive);
    free_value_block(reinterpret_cast<void*>(h));
    std::string out;
    // Under AddressSanitizer its own report comes first; otherwise the poison is seen.
    EXPECT_DEATH(append_value(h, &out), "read of value block 0x[0-9a-f]+.*freed|heap-use-after-free") << size;
  }
}

TEST_F(InvariantChecks, FreedBlocksArePoisonedAndNotCached) {
  SKIP_WITHOUT_CHECKS();
  EXPECT_FALSE(value_block_cache_enabled()) << "a cache of freed blocks would hide double frees";
#if !defined(__SANITIZE_ADDRESS__)
  const std::uint64_t h = block(64);
  free_value_block(reinterpret_cast<void*>(h));
  const auto* b = reinterpret_cast<const ValueBlock*>(h);  // still quarantined, so readable here
  EXPECT_EQ(value_block_state(h), kBlockFreed);
  EXPECT_EQ(b->size, kBlockFreed);
  EXPECT_EQ(static_cast<unsigned char>(b->data()[0]), 0xDB);
#endif
}

TEST_F(InvariantChecks, RetiringABlockTwiceAborts) {
  SKIP_WITHOUT_CHECKS();
  mem::EpochManager epochs;
  auto p = epochs.join();
  const std::uint64_t h = block();
  retire_value_block(p.get(), h, "the first retirement");
  EXPECT_EQ(value_block_state(h), kBlockRetired);
  EXPECT_DEATH(retire_value_block(p.get(), h, "a second retirement"),
               "retire by a second retirement of value block 0x[0-9a-f]+ \\(retired by the first retirement\\).*retired twice");
}

TEST_F(InvariantChecks, FreeingABlockTwiceAborts) {
  SKIP_WITHOUT_CHECKS();
  const std::uint64_t h = block();
  free_value_block(reinterpret_cast<void*>(h));
  EXPECT_DEATH(free_value_block(reinterpret_cast<void*>(h)), "free of value block 0x[0-9a-f]+.*freed|double-free|use-after-free");
}

TEST_F(InvariantChecks, FindingABlockRetiredBeforeTheReaderPinnedAborts) {
  SKIP_WITHOUT_CHECKS();
  mem::EpochManager epochs;
  auto writer = epochs.join();
  auto reader = epochs.join();
  const std::uint64_t h = block();
  {
    auto early = reader->pin();  // pinned before the retirement: finding it is legitimate
    retire_value_block(writer.get(), h, "a cold write");
    check_found_value(h, reader.get(), "an early reader");
  }
  writer->collect();  // the epoch moves on (nothing is pinned); the block is not freed yet
  ASSERT_EQ(value_block_state(h), kBlockRetired);
  auto late = reader->pin();
  EXPECT_DEATH(check_found_value(h, reader.get(), "a late reader"),
               "a late reader found value block 0x[0-9a-f]+ \\(retired by a cold write\\).*after its retirement");
}

TEST_F(InvariantChecks, EvictingADirtyHotCacheEntryAborts) {
  SKIP_WITHOUT_CHECKS();
  mem::EpochManager epochs;
  auto p = epochs.join();
  HotCache cache(64);
  std::atomic<std::uint64_t> epoch{7};
  const std::uint64_t loaded = block(), written = block();  // the cache owns neither: freed below
  ASSERT_TRUE(cache.populate(42, true, loaded, epoch, 7, p.get()));
  std::uint64_t prev = 0;
  bool owned = false;
  ASSERT_EQ(cache.update(42, false, written, &prev, &owned), HotCache::Found::kValue);  // dirty now
  EXPECT_EQ(prev, loaded);
  EXPECT_FALSE(owned);
  EXPECT_DEATH(cache.evict_if([](std::uint64_t) { return true; }), "evicting key 42 whose update is not replayed");
  // Once replayed (marked clean) it may go.
  cache.mark_replayed({42});
  EXPECT_EQ(cache.evict_if([](std::uint64_t) { return true; }), 1u);
  free_value_block(reinterpret_cast<void*>(loaded));
  free_value_block(reinterpret_cast<void*>(written));
}

TEST_F(InvariantChecks, NestedPinsAbort) {
  SKIP_WITHOUT_CHECKS();
  mem::EpochManager epochs;
  auto p = epochs.join();
  auto outer = p->pin();
  EXPECT_DEATH(p->pin(), "already pinned");
}

TEST_F(InvariantChecks, ReleasingMoreGateHoldsThanTakenAborts) {
  SKIP_WITHOUT_CHECKS();
  EpochGate gate;
  const EpochGate::Ticket t = gate.enter();
  gate.leave(t);
  EXPECT_DEATH(gate.leave(t), "released more holds than it took");
}

}  // namespace
}  // namespace duet::kv

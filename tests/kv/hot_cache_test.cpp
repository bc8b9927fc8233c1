// The Hot Cache's grow, on a thread of its own: its first pass copies the table while writers
// go on, its second copies again, with writers held off, only the buckets written meanwhile.
// Writers that run between the passes must neither wait for the grow nor lose their writes. Handles here are plain
// numbers: the cache stores them and never dereferences them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "kv/hot_cache.hpp"
#include "kv/kv_test_util.hpp"
#include "mem/epoch.hpp"

namespace duet::kv {
namespace {

using Found = HotCache::Found;

std::uint64_t handle_of(std::uint64_t key, std::uint64_t version) { return (key << 8) | version; }

/// What get() returns for key: the state and, for a value, its handle.
std::pair<Found, std::uint64_t> read(const HotCache& cache, std::uint64_t key) {
  std::uint64_t h = 0;
  const Found f = cache.get(key, &h);
  return {f, f == Found::kValue ? h : 0};
}

TEST(HotCacheGrow, WritersBetweenThePassesNeitherWaitNorLoseTheirWrites) {
  mem::EpochManager epochs;
  auto part = epochs.join();
  HotCache cache(256);  // 64 buckets: the 257th entry grows it
  const std::atomic<std::uint64_t> epoch{1};
  constexpr std::uint64_t kFull = 256;
  for (std::uint64_t k = 0; k < kFull; ++k) ASSERT_TRUE(cache.populate(k, true, handle_of(k, 0), epoch, 1, part.get()));
  ASSERT_EQ(cache.grows(), 0u);
  bool paused = false;
  cache.set_grow_pause_for_tests([&] {
    paused = true;
    // Another thread writes while the grow is between its passes: updates, deletes and new
    // keys. Were writers held off for the whole grow, it would never finish.
    std::promise<void> done;
    std::thread writer([&] {
      auto p = epochs.join();
      std::uint64_t prev = 0;
      bool owned = false;
      for (std::uint64_t k = 0; k < 100; ++k) cache.update(k, false, handle_of(k, 1), &prev, &owned);
      for (std::uint64_t k = 100; k < 110; ++k) cache.update(k, true, 0, &prev, &owned);
      for (std::uint64_t k = 1000; k < 1100; ++k) cache.populate(k, true, handle_of(k, 0), epoch, 1, p.get());
      done.set_value();
    });
    if (done.get_future().wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "a writer waited for the grow's first pass";
      std::abort();  // the writer is stuck on this thread's grow: nothing can end it
    }
    writer.join();
  });
  ASSERT_TRUE(cache.populate(kFull, true, handle_of(kFull, 0), epoch, 1, part.get()));  // starts a grow
  cache.wait_for_grow();
  EXPECT_TRUE(paused);
  EXPECT_EQ(cache.grows(), 1u);
  EXPECT_GT(cache.grow_recopied_buckets(), 0u);
  EXPECT_LE(cache.grow_recopied_buckets(), 64u);
  for (std::uint64_t k = 0; k < 100; ++k) EXPECT_EQ(read(cache, k), std::make_pair(Found::kValue, handle_of(k, 1))) << k;
  for (std::uint64_t k = 100; k < 110; ++k) EXPECT_EQ(read(cache, k).first, Found::kTombstone) << k;
  for (std::uint64_t k = 110; k <= kFull; ++k) EXPECT_EQ(read(cache, k), std::make_pair(Found::kValue, handle_of(k, 0))) << k;
  for (std::uint64_t k = 1000; k < 1100; ++k) EXPECT_EQ(read(cache, k), std::make_pair(Found::kValue, handle_of(k, 0))) << k;
  EXPECT_EQ(read(cache, 5000).first, Found::kMiss);
  EXPECT_EQ(cache.size(), kFull + 1 + 100);
}

// Writers insert and overwrite their own keys through several grows while readers read keys
// whose value never changes; every read sees its value, and the end state is each key's last
// write. (Run under ThreadSanitizer by the test command.)
TEST(HotCacheGrow, ConcurrentWritersAndReadersAcrossGrows) {
  mem::EpochManager epochs;
  HotCache cache(256);
  const std::atomic<std::uint64_t> epoch{1};
  constexpr std::uint64_t kStable = 200;  // read by the readers, never written again
  {
    auto p = epochs.join();
    for (std::uint64_t k = 0; k < kStable; ++k) ASSERT_TRUE(cache.populate(k, true, handle_of(k, 0), epoch, 1, p.get()));
  }
  constexpr unsigned kWriters = 2, kReaders = 2;
  const std::uint64_t per_writer = std::max<std::uint64_t>(2000, static_cast<std::uint64_t>(20000 * kvtest::test_scale()));
  std::atomic<bool> writing{true};
  std::atomic<std::uint64_t> bad_reads{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      auto p = epochs.join();
      std::uint64_t prev = 0;
      bool owned = false;
      const std::uint64_t base = 1'000'000 * (w + 1);
      for (std::uint64_t i = 0; i < per_writer; ++i) {
        auto pin = p->pin();
        ASSERT_TRUE(cache.populate(base + i, true, handle_of(base + i, 0), epoch, 1, p.get()));
        if (i >= 10) ASSERT_EQ(cache.update(base + i - 10, false, handle_of(base + i - 10, 1), &prev, &owned), Found::kValue);
      }
    });
  for (unsigned r = 0; r < kReaders; ++r)
    threads.emplace_back([&, r] {
      auto p = epochs.join();
      for (std::uint64_t i = r; writing.load(std::memory_order_relaxed); ++i) {
        auto pin = p->pin();
        const std::uint64_t k = i % kStable;
        if (read(cache, k) != std::make_pair(Found::kValue, handle_of(k, 0))) bad_reads.fetch_add(1);
      }
    });
  for (unsigned w = 0; w < kWriters; ++w) threads[w].join();
  writing.store(false);
  for (unsigned r = 0; r < kReaders; ++r) threads[kWriters + r].join();
  cache.wait_for_grow();
  EXPECT_EQ(bad_reads.load(), 0u);
  EXPECT_GE(cache.grows(), 1u);
  for (unsigned w = 0; w < kWriters; ++w) {
    const std::uint64_t base = 1'000'000 * (w + 1);
    for (std::uint64_t i = 0; i < per_writer; ++i) {
      const std::uint64_t version = i + 10 < per_writer ? 1 : 0;
      ASSERT_EQ(read(cache, base + i), std::make_pair(Found::kValue, handle_of(base + i, version))) << base + i;
    }
  }
  EXPECT_EQ(cache.size(), kStable + kWriters * per_writer);
}

}  // namespace
}  // namespace duet::kv

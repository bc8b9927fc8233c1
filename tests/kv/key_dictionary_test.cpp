// The key dictionary: ids are stable, lookups of absent keys fail, and lock-free lookups never
// miss a key whose insert has returned, while other threads grow the shards' tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "kv/key_dictionary.hpp"
#include "mem/memory_budget.hpp"

namespace duet::kv {
namespace {

std::string long_key(int i) {
  // Every key shares a 24-byte prefix, so slots match on hash and length and differ past the
  // inline head: the comparison of whole keys is exercised too.
  return "a-shared-prefix-of-bytes:" + std::to_string(i);
}

TEST(KeyDictionary, IdsAreStableAndAbsentKeysAreNotFound) {
  mem::MemoryBudget budget(std::uint64_t{1} << 30);
  KeyDictionary d(&budget);
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 20000; ++i) {  // grows every shard's table several times
    std::uint64_t id = 0;
    ASSERT_TRUE(d.find_or_add(i % 2 ? long_key(i) : "k" + std::to_string(i), &id).ok());
    ids.push_back(id);
  }
  for (int i = 0; i < 20000; ++i) {
    const std::string k = i % 2 ? long_key(i) : "k" + std::to_string(i);
    std::uint64_t id = 0;
    ASSERT_TRUE(d.find(k, &id)) << k;
    EXPECT_EQ(id, ids[i]);
    ASSERT_TRUE(d.find_or_add(k, &id).ok());
    EXPECT_EQ(id, ids[i]);
    ASSERT_NE(d.key_of(id), nullptr);
    EXPECT_EQ(*d.key_of(id), k);
  }
  std::uint64_t id = 0;
  EXPECT_FALSE(d.find(long_key(20001), &id));
  EXPECT_FALSE(d.find("k20000", &id));
}

TEST(KeyDictionary, LookupsWithoutLocksSeeEveryKeyAddedBeforeThemWhileTablesGrow) {
  const char* s = std::getenv("DUET_TEST_SCALE");
  const double scale = s && *s ? std::max(0.05, std::atof(s)) : 1.0;
  const int n = static_cast<int>(40000 * scale);
  mem::MemoryBudget budget(std::uint64_t{1} << 30);
  KeyDictionary d(&budget);
  std::vector<std::atomic<std::uint64_t>> ids(n);
  std::atomic<int> added[2] = {0, 0};  // writer w has added keys w, w + 2, ... below 2 * added[w]
  std::atomic<bool> failed{false};
  std::vector<std::thread> th;
  for (int w = 0; w < 2; ++w)
    th.emplace_back([&, w] {
      for (int i = w; i < n; i += 2) {
        std::uint64_t id = 0;
        if (!d.find_or_add(long_key(i), &id).ok()) failed = true;
        ids[i].store(id, std::memory_order_relaxed);
        added[w].store(i / 2 + 1, std::memory_order_release);
      }
    });
  for (int r = 0; r < 2; ++r)
    th.emplace_back([&, r] {
      std::uint64_t checks = 0;
      while (added[0].load() < (n + 1) / 2 || added[1].load() < n / 2) {
        const int w = static_cast<int>(checks++ % 2);
        const int upto = added[w].load(std::memory_order_acquire);
        if (upto == 0) continue;
        const int i = w + 2 * static_cast<int>((checks * 2654435761u + r) % upto);
        std::uint64_t id = 0;
        if (!d.find(long_key(i), &id) || id != ids[i].load(std::memory_order_relaxed)) failed = true;
      }
    });
  for (auto& t : th) t.join();
  EXPECT_FALSE(failed.load());
}

// Writers adding distinct keys at once must each get their own id, and every key must stay
// findable. A lookup that stopped at an empty slot and then looked at that slot again could
// meet another writer's key just published there and return its id: find_or_add then answered
// with that id and never inserted its own key (1 run in about 100 lost a key this way).
TEST(KeyDictionary, ConcurrentWritersNeverShareAnIdOrLoseAKey) {
  const char* s = std::getenv("DUET_TEST_SCALE");
  const double scale = s && *s ? std::max(0.05, std::atof(s)) : 1.0;
  const int rounds = std::max(2, static_cast<int>(40 * scale));
  constexpr int kWriters = 4, kKeys = 20000;
  for (int round = 0; round < rounds; ++round) {
    mem::MemoryBudget budget(std::uint64_t{1} << 30);
    KeyDictionary d(&budget);
    std::vector<std::uint64_t> ids(kKeys);
    std::vector<std::thread> th;
    for (int w = 0; w < kWriters; ++w)
      th.emplace_back([&, w] {
        for (int i = w; i < kKeys; i += kWriters) ASSERT_TRUE(d.find_or_add(long_key(i), &ids[i]).ok());
      });
    for (auto& t : th) t.join();
    std::vector<std::uint64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "two keys got one id, round " << round;
    for (int i = 0; i < kKeys; ++i) {
      std::uint64_t id = 0;
      ASSERT_TRUE(d.find(long_key(i), &id)) << "key " << i << " lost, round " << round;
      ASSERT_EQ(id, ids[i]) << "key " << i << ", round " << round;
    }
  }
}

}  // namespace
}  // namespace duet::kv

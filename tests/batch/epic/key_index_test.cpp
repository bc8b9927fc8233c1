// KeyIndex (src/batch/epic/key_index.hpp), Epic's host key index, against std::unordered_map.
#include "batch/epic/key_index.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace duet::batch::epic {
namespace {

// Every find over the keys ever used, and for_each, agree with the model.
void expect_same(const KeyIndex& ix, const std::unordered_map<std::uint64_t, std::uint32_t>& model,
                 const std::vector<std::uint64_t>& keys) {
  ASSERT_EQ(ix.size(), model.size());
  for (std::uint64_t k : keys) {
    auto it = model.find(k);
    ASSERT_EQ(ix.find(k), it == model.end() ? KeyIndex::kAbsent : it->second) << "key " << k;
  }
  std::size_t seen = 0;
  ix.for_each([&](std::uint64_t k, std::uint32_t id) {
    ++seen;
    auto it = model.find(k);
    ASSERT_TRUE(it != model.end() && it->second == id) << "key " << k;
  });
  EXPECT_EQ(seen, model.size());
}

// Random inserts and erases over a small key set (long runs, erases inside and across the
// wrap-around), with growth from empty, keys 0 and 2^64-1, and ids up to 2^32 - 2.
TEST(EpicKeyIndex, EqualsAMapUnderChurn) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint64_t> keys = {0, ~0ull, 1, ~0ull - 1};
    for (int i = 0; i < 300; ++i) keys.push_back(rng() % (seed == 1 ? 400 : ~0ull));
    KeyIndex ix;
    std::unordered_map<std::uint64_t, std::uint32_t> model;
    for (int step = 0; step < 20000; ++step) {
      const std::uint64_t k = keys[rng() % keys.size()];
      if (rng() % 3 != 0) {
        const std::uint32_t id = rng() % 4 == 0 ? 0xFFFFFFFEu : static_cast<std::uint32_t>(rng() % 1000);
        EXPECT_EQ(ix.insert(k, id), model.emplace(k, id).second) << "key " << k;
      } else {
        EXPECT_EQ(ix.erase(k), model.erase(k) == 1) << "key " << k;
      }
      if (step % 997 == 0) expect_same(ix, model, keys);
    }
    expect_same(ix, model, keys);
  }
}

// Keys whose home is the array's last slot form one run that wraps to slot 0, with keys of
// homes 0 and 1 behind it; erasing any one keeps every other findable (the backward shift
// moves a key only to a slot at or after its home, across the wrap too).
TEST(EpicKeyIndex, EraseKeepsARunThatWrapsFindable) {
  KeyIndex sized;
  sized.reserve(8);
  const std::size_t slots = sized.capacity();
  ASSERT_EQ(slots, 16u);
  std::vector<std::uint64_t> keys;
  auto add_with_home = [&](std::size_t home, int n) {
    for (std::uint64_t k = 0; n > 0; ++k)
      if ((KeyIndex::mix(k) & (slots - 1)) == home && std::find(keys.begin(), keys.end(), k) == keys.end())
        keys.push_back(k), --n;
  };
  add_with_home(slots - 1, 4);  // slots 15, 0, 1, 2
  add_with_home(0, 2);          // 3, 4
  add_with_home(1, 1);          // 5
  add_with_home(slots - 2, 1);  // 14
  for (std::size_t gone = 0; gone < keys.size(); ++gone) {
    KeyIndex ix;
    ix.reserve(8);
    for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(ix.insert(keys[i], static_cast<std::uint32_t>(i)));
    ASSERT_EQ(ix.capacity(), slots) << "no growth: the run must stay in 16 slots";
    ASSERT_TRUE(ix.erase(keys[gone]));
    EXPECT_FALSE(ix.erase(keys[gone]));
    for (std::size_t i = 0; i < keys.size(); ++i)
      EXPECT_EQ(ix.find(keys[i]), i == gone ? KeyIndex::kAbsent : static_cast<std::uint32_t>(i)) << gone << " " << i;
    // And the freed slot is usable again.
    EXPECT_TRUE(ix.insert(keys[gone], 77));
    EXPECT_EQ(ix.find(keys[gone]), 77u);
  }
}

TEST(EpicKeyIndex, MoveClearAndReserveKeepTheContract) {
  KeyIndex a;
  EXPECT_EQ(a.find(5), KeyIndex::kAbsent);
  EXPECT_FALSE(a.erase(5));
  for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_TRUE(a.insert(i * 7919ull, i));
  a.reserve(100000);  // rehash keeps the keys
  for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(a.find(i * 7919ull), i);
  KeyIndex copy(a);
  ASSERT_TRUE(copy.erase(0));
  EXPECT_EQ(a.find(0), 0u) << "a copy owns its array";
  EXPECT_EQ(copy.size(), 999u);
  KeyIndex b(std::move(a));
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.find(7919), 1u);
  a = std::move(b);
  EXPECT_EQ(a.find(7919 * 999ull), 999u);
  a.clear();
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.find(7919), KeyIndex::kAbsent);
  EXPECT_TRUE(a.insert(7919, 3));
  EXPECT_EQ(a.find(7919), 3u);
}

}  // namespace
}  // namespace duet::batch::epic

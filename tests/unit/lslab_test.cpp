// L-Slab on the CPU twin: every operation against a reference model, pool growth and reuse,
// and each kind of bad input.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "unit/lslab_helpers.hpp"

using namespace duet::lslab;
using namespace duet::lslab::testing;

class LSlabWidths : public ::testing::TestWithParam<unsigned> {};

TEST_P(LSlabWidths, MatchesReferenceModelOnRandomBatches) {
  Config c;
  c.expected_keys = 2000;
  c.load_factor = 0.9;  // long chains, so overflow slabs and unlinking are exercised
  auto m = cpu_map(c, GetParam());
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(GetParam());
  std::uint64_t next_value = 1;
  for (int round = 0; round < 300; ++round) {
    // Distinct keys within a batch: the outcome is then independent of the order inside it.
    OwnedBatch b;
    std::unordered_map<std::uint64_t, bool> used;
    const int n = 1 + static_cast<int>(rng() % 200);
    while (static_cast<int>(b.size()) < n) {
      const std::uint64_t key = rng() % 5000 * 0x9E3779B97F4A7C15ull;  // spread, never reserved
      if (key == kReservedKey || used[key]) continue;
      used[key] = true;
      const unsigned r = rng() % 10;
      const Op op = r < 4 ? Op::kPut : r < 7 ? Op::kGet : Op::kDelete;
      b.add(op, key, next_value++);
    }
    ASSERT_TRUE(b.run(*m).ok());
    for (std::size_t i = 0; i < b.size(); ++i) {
      auto it = model.find(b.keys[i]);
      const bool present = it != model.end();
      ASSERT_EQ(b.status[i], present ? OpStatus::kFound : OpStatus::kNotFound) << "round " << round << " i " << i;
      ASSERT_EQ(b.out[i], present ? it->second : 0) << "round " << round;
      if (b.ops[i] == Op::kPut) model[b.keys[i]] = b.values[i];
      if (b.ops[i] == Op::kDelete) model.erase(b.keys[i]);
    }
  }
  // Everything the model holds is readable, and nothing else.
  for (const auto& [k, v] : model) {
    auto [st, val] = one(*m, Op::kGet, k);
    ASSERT_EQ(st, OpStatus::kFound);
    ASSERT_EQ(val, v);
  }
}

INSTANTIATE_TEST_SUITE_P(SlabWidth, LSlabWidths, ::testing::Values(8u, 16u, 32u),
                         [](const auto& info) { return "w" + std::to_string(info.param); });

TEST(LSlab, PutReturnsPreviousValueAndDeleteReturnsRemovedValue) {
  auto m = cpu_map();
  EXPECT_EQ(one(*m, Op::kPut, 7, 70), std::make_pair(OpStatus::kNotFound, std::uint64_t(0)));
  EXPECT_EQ(one(*m, Op::kPut, 7, 71), std::make_pair(OpStatus::kFound, std::uint64_t(70)));
  EXPECT_EQ(one(*m, Op::kGet, 7), std::make_pair(OpStatus::kFound, std::uint64_t(71)));
  EXPECT_EQ(one(*m, Op::kDelete, 7), std::make_pair(OpStatus::kFound, std::uint64_t(71)));
  EXPECT_EQ(one(*m, Op::kDelete, 7), std::make_pair(OpStatus::kNotFound, std::uint64_t(0)));
  EXPECT_EQ(one(*m, Op::kGet, 7), std::make_pair(OpStatus::kNotFound, std::uint64_t(0)));
  // Key 0 and value 0 are ordinary.
  EXPECT_EQ(one(*m, Op::kPut, 0, 0).first, OpStatus::kNotFound);
  EXPECT_EQ(one(*m, Op::kGet, 0), std::make_pair(OpStatus::kFound, std::uint64_t(0)));
}

TEST(LSlab, SharedReadPolicyGivesTheSameAnswers) {
  Config c;
  c.read_policy = ReadPolicy::kShared;
  auto m = cpu_map(c);
  for (std::uint64_t k = 0; k < 1000; ++k) one(*m, Op::kPut, k, k * 2);
  for (std::uint64_t k = 0; k < 1000; ++k) ASSERT_EQ(one(*m, Op::kGet, k).second, k * 2);
}

TEST(LSlab, ReservedKeyIsRejectedAndChangesNothing) {
  auto m = cpu_map();
  one(*m, Op::kPut, 1, 10);
  for (Op op : {Op::kGet, Op::kPut, Op::kDelete}) EXPECT_EQ(one(*m, op, kReservedKey, 5).first, OpStatus::kInvalid);
  EXPECT_EQ(one(*m, Op::kGet, 1), std::make_pair(OpStatus::kFound, std::uint64_t(10)));
  EXPECT_EQ(one(*m, Op::kGet, kReservedKey - 1).first, OpStatus::kNotFound);  // its neighbour is a normal key
}

TEST(LSlab, UnknownOpCodeIsInvalid) {
  auto m = cpu_map();
  EXPECT_EQ(one(*m, static_cast<Op>(9), 1, 1).first, OpStatus::kInvalid);
  EXPECT_EQ(one(*m, Op::kGet, 1).first, OpStatus::kNotFound);
}

TEST(LSlab, ZeroSizeBatchIsANoOpAndNullArraysAreRejected) {
  auto m = cpu_map();
  Batch empty;
  BatchResult none;
  EXPECT_TRUE(m->execute(empty, none).ok());
  std::uint64_t key = 1;
  Op op = Op::kGet;
  Batch b{&op, &key, nullptr, 1};
  duet::Status s = m->execute(b, none);
  EXPECT_EQ(s.code(), duet::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("null"), std::string::npos);
  // A PUT without values is invalid per request, not an error of the whole batch.
  op = Op::kPut;
  OpStatus st;
  std::uint64_t out;
  BatchResult r{&st, &out};
  EXPECT_TRUE(m->execute(b, r).ok());
  EXPECT_EQ(st, OpStatus::kInvalid);
}

TEST(LSlab, BadConfigurationsAreRejected) {
  std::unique_ptr<Map> m;
  Config c;
  c.load_factor = 0;
  EXPECT_EQ(make_cpu_map(c, &m).code(), duet::StatusCode::kInvalidArgument);
  c = Config{};
  c.expected_keys = 0;
  EXPECT_EQ(make_cpu_map(c, &m).code(), duet::StatusCode::kInvalidArgument);
  c = Config{};
  EXPECT_EQ(make_cpu_map(c, &m, 12).code(), duet::StatusCode::kInvalidArgument);
  EXPECT_EQ(m, nullptr);
  // 2^40 expected keys: the bucket heads alone are terabytes. They used to be mapped and
  // written, and the kernel killed the process; now they are refused before any is mapped.
  c = Config{};
  c.expected_keys = std::uint64_t(1) << 40;
  const duet::Status s = make_cpu_map(c, &m);
  EXPECT_EQ(s.code(), duet::StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("more than half of physical memory"), std::string::npos) << s.message();
  EXPECT_EQ(m, nullptr);
}

TEST(LSlab, GrowsPastItsInitialPool) {
  Config c;
  c.expected_keys = 64;      // 16 buckets of 6 keys at 0.7 load
  c.initial_pool_slabs = 1;  // one chunk of 256 slabs
  auto m = cpu_map(c);
  const std::uint64_t n = 20000;  // needs ~3000 overflow slabs
  OwnedBatch b;
  for (std::uint64_t k = 0; k < n; ++k) b.add(Op::kPut, k, k + 1);
  ASSERT_TRUE(b.run(*m).ok());
  for (auto s : b.status) ASSERT_EQ(s, OpStatus::kNotFound);
  const auto st = m->stats();
  EXPECT_GT(st.pool_grows, 0u);
  EXPECT_GT(st.pool_capacity, 256u);
  for (std::uint64_t k = 0; k < n; ++k) ASSERT_EQ(one(*m, Op::kGet, k).second, k + 1);
}

TEST(LSlab, DeletedSlabsAreReused) {
  Config c;
  c.expected_keys = 64;
  auto m = cpu_map(c);
  const std::uint64_t n = 5000;
  std::uint64_t handed_out_after_first_fill = 0;
  for (int cycle = 0; cycle < 5; ++cycle) {
    OwnedBatch put, del;
    for (std::uint64_t k = 0; k < n; ++k) {
      put.add(Op::kPut, k + cycle * n, k);
      del.add(Op::kDelete, k + cycle * n);
    }
    ASSERT_TRUE(put.run(*m).ok());
    if (cycle == 0) handed_out_after_first_fill = m->stats().pool_handed_out;
    ASSERT_TRUE(del.run(*m).ok());
    for (auto s : del.status) ASSERT_EQ(s, OpStatus::kFound);
    const auto st = m->stats();
    // Every overflow slab was emptied and returned, and refills drew from the free lists.
    EXPECT_EQ(st.pool_free, st.pool_handed_out) << "cycle " << cycle;
    EXPECT_LE(st.pool_handed_out, handed_out_after_first_fill + 64) << "cycle " << cycle;
  }
  EXPECT_GT(handed_out_after_first_fill, 100u);
  for (std::uint64_t k = 0; k < 5 * n; k += 97) EXPECT_EQ(one(*m, Op::kGet, k).first, OpStatus::kNotFound);
}

TEST(LSlab, FullPoolReportsResourceExhaustedAndKeepsData) {
  Config c;
  c.expected_keys = 64;
  c.initial_pool_slabs = 256;
  c.max_pool_slabs = 256;
  auto m = cpu_map(c);
  OwnedBatch b;
  for (std::uint64_t k = 0; k < 10000; ++k) b.add(Op::kPut, k, k);
  const duet::Status s = b.run(*m);
  EXPECT_EQ(s.code(), duet::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("256"), std::string::npos) << s.message();
  std::uint64_t applied = 0, refused = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto [st, v] = one(*m, Op::kGet, b.keys[i]);
    if (b.status[i] == OpStatus::kNotFound) {
      ++applied;
      ASSERT_EQ(st, OpStatus::kFound);
      ASSERT_EQ(v, b.keys[i]);
    } else {
      ASSERT_EQ(b.status[i], OpStatus::kRetry);
      ASSERT_EQ(st, OpStatus::kNotFound) << "a refused PUT must change nothing";
      ++refused;
    }
  }
  EXPECT_GT(applied, 1000u);
  EXPECT_GT(refused, 0u);
  // Deleting frees room: refused keys can then be inserted. (Delete the keys that were
  // applied, whichever they were: which PUTs won the race for the pool depends on how the
  // batch's pieces were scheduled, so a fixed key range may hold none of them.)
  OwnedBatch del;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b.status[i] == OpStatus::kNotFound) del.add(Op::kDelete, b.keys[i]);
  ASSERT_TRUE(del.run(*m).ok());
  EXPECT_GT(m->stats().pool_free, 0u) << "emptied overflow slabs return to the free lists";
  std::uint64_t reinserted = 0;
  for (std::size_t i = 0; i < b.size() && reinserted < 1000; ++i) {
    if (b.status[i] != OpStatus::kRetry) continue;
    ASSERT_EQ(one(*m, Op::kPut, b.keys[i], 7).first, OpStatus::kNotFound) << "refused key " << b.keys[i];
    ++reinserted;
  }
  EXPECT_EQ(reinserted, std::min<std::uint64_t>(refused, 1000));
}

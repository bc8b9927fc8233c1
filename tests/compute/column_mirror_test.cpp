// ColumnMirror (src/compute/column_mirror.hpp): its aggregates and contains() at a transaction's
// start equal what that transaction reads from the keyspace itself (a scan of the range), after
// inserts, updates, deletes and re-inserts, under writers racing the load and the queries, and
// at starts older than the newest commits (each query's transaction is held open while later
// commits land). Bad input: unknown columns, starts before the load, group values out of range,
// a second observer, values that are not rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "compute/column_mirror.hpp"
#include "mirror_rows.hpp"
#include "reference.hpp"

namespace duet::compute {
namespace {

using testing::scaled;

using namespace mirror_rows;

TEST(ColumnMirror, VersionsMatchTheKeyspaceAtEveryHeldStart) {
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  for (std::uint32_t i = 0; i < 20; ++i) commit(*space, {{key(i), row(i % 4, i, 100 - i)}});
  commit(*space, {{"q-outside", row(0, 0, 0)}, {"r-not-a-row-key", row(0, 0, 0)}});
  std::shared_ptr<ColumnMirror> m;
  ASSERT_TRUE(ColumnMirror::attach(space, config(), &m, 7).ok());  // loaded in pages of 7
  EXPECT_EQ(m->stats().keys, 20u);
  // Each step commits, then holds a transaction begun after it; every held one is checked at
  // the end, when later commits have updated, deleted and re-inserted what it read.
  std::vector<std::unique_ptr<Txn>> held;
  auto hold = [&] {
    held.push_back(std::make_unique<Txn>());
    ASSERT_TRUE(space->begin(held.back().get()).ok());
  };
  hold();
  commit(*space, {{key(3), row(1, 50, 7)}, {key(4), std::nullopt}});  // update, delete
  hold();
  commit(*space, {{key(4), row(2, 60, -5)}, {key(99), row(7, 1, 1)}});  // re-insert, insert
  hold();
  commit(*space, {{key(99), std::nullopt}, {key(98), std::nullopt}});  // delete, delete of an absent key
  hold();
  commit(*space, {{key(5), row(3, 5, 5)}, {key(5 + 1), row(3, 6, 6)}});
  hold();
  for (std::size_t h = 0; h < held.size(); ++h)
    for (std::int64_t lo : {-1, 4, 55}) {
      Table t;
      ASSERT_TRUE(m->aggregate(held[h]->start_ts(), query(lo), &t).ok());
      EXPECT_EQ(from_table(t), reference(held[h].get(), lo)) << "held " << h << " lo " << lo;
      Table t2;  // the split over threads changes nothing
      ASSERT_TRUE(m->aggregate(held[h]->start_ts(), query(lo), &t2, Device::kCpu, 3).ok());
      EXPECT_EQ(from_table(t2), from_table(t));
      for (std::uint32_t k : {3u, 4u, 99u, 98u}) {
        bool in = false, ref = false;
        std::string v;
        ASSERT_TRUE(m->contains(key(k), held[h]->start_ts(), &in).ok());
        ASSERT_TRUE(held[h]->get(key(k), &v, &ref).ok());
        EXPECT_EQ(in, ref) << "held " << h << " key " << k;
      }
    }
  EXPECT_EQ(m->stats().keys, 20u);  // key 4 deleted and re-inserted, 99 inserted and deleted
}

TEST(ColumnMirror, WritersRacingTheLoadAndTheQueries) {
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  constexpr std::uint32_t kKeys = 300;
  for (std::uint32_t i = 0; i < kKeys; i += 2) commit(*space, {{key(i), row(i % 8, i, i)}});
  RandomWriters writers(*space, 3, kKeys, 4);
  while (writers.commits.load() < 50) std::this_thread::yield();
  std::shared_ptr<ColumnMirror> m;
  ASSERT_TRUE(ColumnMirror::attach(space, config(), &m, 16).ok());
  const std::size_t rounds = scaled(300);
  std::mt19937_64 rng(1);
  for (std::size_t i = 0; i < rounds && !::testing::Test::HasFailure(); ++i) {
    Txn t;
    ASSERT_TRUE(space->begin(&t).ok());
    const std::int64_t lo = static_cast<std::int64_t>(rng() % 1200) - 150;
    Table out;
    ASSERT_TRUE(m->aggregate(t.start_ts(), query(lo), &out, Device::kCpu, 1 + i % 2).ok());
    EXPECT_EQ(from_table(out), reference(&t, lo)) << "round " << i;
    const std::uint32_t k = static_cast<std::uint32_t>(rng() % kKeys);
    bool in = false, ref = false;
    std::string v;
    ASSERT_TRUE(m->contains(key(k), t.start_ts(), &in).ok());
    ASSERT_TRUE(t.get(key(k), &v, &ref).ok());
    EXPECT_EQ(in, ref) << "round " << i << " key " << k;
  }
  writers.stop();
  EXPECT_GT(writers.commits.load(), 50u);
  EXPECT_EQ(m->stats().bad_rows, 0u);
}

// A reader at an old start asks for a key while a writer rewrites it over and over: the newest
// row may still be being written (its begin not yet stored), and the reader must step past it to
// the version its start sees. (The first GPU-machine run caught contains() reading such a row's
// link to its previous version before the writer had stored it: a freshness failure.)
TEST(ColumnMirror, ContainsSeesTheOldVersionWhileTheKeyIsRewritten) {
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  std::shared_ptr<ColumnMirror> m;
  ASSERT_TRUE(ColumnMirror::attach(space, config(), &m).ok());
  // Each read walks back over every version written since its start, so each trial's writer
  // stops after `writes`; a trial catches the race about half the time, eight nearly always.
  const std::int64_t writes = static_cast<std::int64_t>(scaled(3000));
  std::size_t missed = 0, asked = 0;
  for (std::uint32_t trial = 0; trial < 8; ++trial) {
    commit(*space, {{key(trial), row(1, 1, 1)}});
    Txn old;
    ASSERT_TRUE(space->begin(&old).ok());
    std::atomic<bool> done{false};
    std::thread writer([&] {
      for (std::int64_t i = 0; i < writes; ++i) commit(*space, {{key(trial), row(1, i, i)}});
      done = true;
    });
    for (std::size_t n = 0; !done.load() || n < 100; ++n, ++asked) {
      bool in = false;
      ASSERT_TRUE(m->contains(key(trial), old.start_ts(), &in).ok());
      missed += !in;
    }
    writer.join();
  }
  EXPECT_EQ(missed, 0u) << "of " << asked;
  EXPECT_EQ(m->stats().rows, 8 * (static_cast<std::uint64_t>(writes) + 1));
}

TEST(ColumnMirror, BadInput) {
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  Txn before;
  ASSERT_TRUE(space->begin(&before).ok());
  commit(*space, {{key(1), row(1, 1, 1)}});
  std::shared_ptr<ColumnMirror> m, m2;
  ColumnMirror::Config c = config();
  c.columns = {"nope"};
  EXPECT_EQ(ColumnMirror::attach(space, c, &m).code(), StatusCode::kInvalidArgument);
  c = config();
  c.hi = c.lo;
  EXPECT_EQ(ColumnMirror::attach(space, c, &m).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ColumnMirror::attach(space, config(), &m).ok());
  EXPECT_EQ(ColumnMirror::attach(space, config(), &m2).code(), StatusCode::kInvalidArgument);  // one observer
  Table t;
  EXPECT_EQ(m->aggregate(before.start_ts(), query(0), &t).code(), StatusCode::kInvalidArgument);
  Txn now;
  ASSERT_TRUE(space->begin(&now).ok());
  ColumnMirror::Query q = query(0);
  q.group = "zz";
  EXPECT_EQ(m->aggregate(now.start_ts(), q, &t).code(), StatusCode::kInvalidArgument);
  q = query(0);
  q.aggs[1].column = "zz";
  EXPECT_EQ(m->aggregate(now.start_ts(), q, &t).code(), StatusCode::kInvalidArgument);
  bool in = false;
  EXPECT_EQ(m->contains("x", now.start_ts(), &in).code(), StatusCode::kInvalidArgument);
  now.abort();
  // A group value out of range, and a value that is not a row (it ends the key, and is counted).
  commit(*space, {{key(2), row(300, 1, 1)}});
  ASSERT_TRUE(space->begin(&now).ok());
  EXPECT_EQ(m->aggregate(now.start_ts(), query(0), &t).code(), StatusCode::kInvalidArgument);
  now.abort();
  commit(*space, {{key(2), row(2, 1, 1)}, {key(1), std::string("short")}});
  ASSERT_TRUE(space->begin(&now).ok());
  EXPECT_EQ(m->stats().bad_rows, 1u);
  ASSERT_TRUE(m->contains(key(1), now.start_ts(), &in).ok());
  EXPECT_FALSE(in);
  // With no group: one row, zero when nothing matches.
  ColumnMirror::Query all{{{"a", Cmp::kGt, 1000, 0, 0, 0, {}, {}}}, "", {{Agg::kCount, "", "n"}, {Agg::kSum, "a", "s"}}};
  ASSERT_TRUE(m->aggregate(now.start_ts(), all, &t).ok());
  ASSERT_EQ(t.rows(), 1u);
  EXPECT_EQ(t.get("n")->i64()[0], 0);
  EXPECT_EQ(t.get("s")->i64()[0], 0);
}

}  // namespace
}  // namespace duet::compute

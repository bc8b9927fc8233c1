// ColumnMirror (src/compute/column_mirror.hpp): its aggregates and contains() at a transaction's
// start equal what that transaction reads from the keyspace itself (a scan of the range), after
// inserts, updates, deletes and re-inserts, under writers racing the load and the queries, and
// at starts older than the newest commits (each query's transaction is held open while later
// commits land). Bad input: unknown columns, starts before the load, group values out of range,
// a second observer, values that are not rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

// Collection keeps every version an open transaction can see: held transactions read the same
// aggregates and keys after collect() as before; the rows nobody can see are gone; a start
// older than every open transaction is refused once its versions are collected.
TEST(ColumnMirror, CollectionKeepsWhatOpenTransactionsSee) {
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  for (std::uint32_t i = 0; i < 50; ++i) commit(*space, {{key(i), row(i % 8, i, i)}});
  ColumnMirror::Config c = config();
  c.collect_interval_ms = 0;  // collect() only
  std::shared_ptr<ColumnMirror> m;
  ASSERT_TRUE(ColumnMirror::attach(space, c, &m).ok());
  Txn gone;
  ASSERT_TRUE(space->begin(&gone).ok());
  const std::uint64_t gone_start = gone.start_ts();
  for (std::int64_t round = 0; round < 20; ++round)
    for (std::uint32_t i = 0; i < 50; i += 3) commit(*space, {{key(i), row(i % 8, round * 10 + i, i)}});
  gone.abort();
  std::vector<std::unique_ptr<Txn>> held;
  for (int h = 0; h < 3; ++h) {
    held.push_back(std::make_unique<Txn>());
    ASSERT_TRUE(space->begin(held.back().get()).ok());
    commit(*space, {{key(3), row(1, 500 + h, 7)}, {key(4 + static_cast<std::uint32_t>(h)), std::nullopt}});
    commit(*space, {{key(60 + static_cast<std::uint32_t>(h)), row(2, 1, 1)}});
  }
  auto check = [&](const char* when) {
    for (std::size_t h = 0; h < held.size(); ++h) {
      Table t;
      ASSERT_TRUE(m->aggregate(held[h]->start_ts(), query(-1), &t).ok());
      EXPECT_EQ(from_table(t), reference(held[h].get(), -1)) << when << ", held " << h;
      for (std::uint32_t k : {3u, 4u, 5u, 6u, 60u, 61u, 62u, 63u}) {
        bool in = false, ref = false;
        std::string v;
        ASSERT_TRUE(m->contains(key(k), held[h]->start_ts(), &in).ok());
        ASSERT_TRUE(held[h]->get(key(k), &v, &ref).ok());
        EXPECT_EQ(in, ref) << when << ", held " << h << " key " << k;
      }
    }
  };
  check("before");
  const MirrorStats before = m->stats();
  ASSERT_TRUE(m->collect().ok());
  const MirrorStats after = m->stats();
  check("after");
  EXPECT_EQ(after.collections, 1u);
  EXPECT_GT(after.versions_collected, 300u);
  EXPECT_EQ(after.rows + after.versions_collected, before.rows);
  EXPECT_EQ(after.keys, before.keys);
  EXPECT_GE(after.min_start, held[0]->start_ts() > 0 ? gone_start : 0);
  Table t;
  EXPECT_EQ(m->aggregate(gone_start, query(0), &t).code(), StatusCode::kResourceExhausted);
  bool in = false;
  EXPECT_EQ(m->contains(key(1), gone_start, &in).code(), StatusCode::kResourceExhausted);
  // Updates after the collection land in the new generation; with nothing open, a second one
  // keeps exactly one version per live key.
  commit(*space, {{key(3), row(1, 900, 7)}, {key(70), row(1, 1, 1)}});
  check("after a later commit");
  held.clear();
  ASSERT_TRUE(m->collect().ok());
  const MirrorStats last = m->stats();
  EXPECT_EQ(last.rows, last.keys);
  Txn now;
  ASSERT_TRUE(space->begin(&now).ok());
  ASSERT_TRUE(m->aggregate(now.start_ts(), query(-1000), &t).ok());
  EXPECT_EQ(from_table(t), reference(&now, -1000));
}

// The background collector runs while writers commit and readers check every aggregate and key
// against their own transaction's reads, some readers held open across several collections. A
// collection that lost an end set during its copy, or a row appended during it, shows here as
// a reader seeing two versions of a key or none. On one copying thread and on three (each
// collection's first pass then copies the loaded rows in three pieces).
class ColumnMirrorCollect : public ::testing::TestWithParam<unsigned> {};

TEST_P(ColumnMirrorCollect, BackgroundCollectionUnderWritersAndReaders) {
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  constexpr std::uint32_t kKeys = 5000;
  for (std::uint32_t i = 0; i < kKeys; i += 500) {
    std::vector<std::pair<std::string, std::optional<std::string>>> w;
    for (std::uint32_t j = i; j < i + 500; ++j) w.emplace_back(key(j), row(j % 8, j, j));
    commit(*space, w);
  }
  ColumnMirror::Config c = config();
  c.collect_interval_ms = 1;
  c.collect_min_versions = 64;
  c.collect_threads = GetParam();
  std::shared_ptr<ColumnMirror> m;
  ASSERT_TRUE(ColumnMirror::attach(space, c, &m).ok());
  RandomWriters writers(*space, 2, kKeys, 4, 20);  // paced: a held reader walks every version since its start
  // At least scaled(200) rounds, 10 collections and one version collected (a sanitizer build's
  // rounds are slow and few). A held reader pins the floor for 20 rounds, so with few rounds
  // every version the writers ended may lie above it: the first held reader began before most
  // of their commits, and a collection drops nothing until it is replaced (round 20 on).
  const std::size_t min_rounds = scaled(200);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::mt19937_64 rng(3);
  std::unique_ptr<Txn> held;
  std::size_t held_checks = 0, rounds = 0;
  auto more = [&] {
    const MirrorStats st = m->stats();
    return st.collections < 10 || st.versions_collected == 0;
  };
  for (std::size_t i = 0; (i < min_rounds || more()) && !::testing::Test::HasFailure() &&
                          std::chrono::steady_clock::now() < deadline;
       ++i, ++rounds) {
    if (i % 20 == 0) {  // a reader held across the next 20 rounds
      held = std::make_unique<Txn>();
      ASSERT_TRUE(space->begin(held.get()).ok());
    }
    Txn fresh;
    ASSERT_TRUE(space->begin(&fresh).ok());
    for (Txn* t : {&fresh, held.get()}) {
      const std::int64_t lo = static_cast<std::int64_t>(rng() % 1200) - 150;
      Table out;
      ASSERT_TRUE(m->aggregate(t->start_ts(), query(lo), &out, Device::kCpu, 1 + i % 2).ok()) << "round " << i;
      EXPECT_EQ(from_table(out), reference(t, lo)) << "round " << i << (t == held.get() ? " (held)" : "");
      const std::uint32_t k = static_cast<std::uint32_t>(rng() % kKeys);
      bool in = false, ref = false;
      std::string v;
      ASSERT_TRUE(m->contains(key(k), t->start_ts(), &in).ok());
      ASSERT_TRUE(t->get(key(k), &v, &ref).ok());
      EXPECT_EQ(in, ref) << "round " << i << " key " << k;
      held_checks += t == held.get();
    }
    // The background collector waits for the generation to double; between its runs this
    // thread collects too (the same code, also beside the writers), so that a sanitizer build's
    // few rounds still see ten collections.
    if (i % 2 == 1) {
      ASSERT_TRUE(m->collect().ok());
    }
  }
  writers.stop();
  held.reset();
  const MirrorStats s = m->stats();
  EXPECT_GE(s.collections, 10u) << "writers committed " << writers.commits.load();
  EXPECT_GT(s.versions_collected, 0u) << "writers committed " << writers.commits.load() << " in " << rounds << " rounds";
  EXPECT_EQ(held_checks, rounds);
  ASSERT_TRUE(m->collect().ok());
  EXPECT_EQ(m->stats().rows, m->stats().keys);
}

INSTANTIATE_TEST_SUITE_P(CopyThreads, ColumnMirrorCollect, ::testing::Values(1u, 3u));

// Mirrors with a busy background collector are dropped with their keyspace in every order while
// writers run; the last reference may end on the collector's own thread (which must not join
// itself). Passes when nothing hangs, crashes or leaks (the sanitizer builds run it).
TEST(ColumnMirror, DroppedWhileItsCollectorRuns) {
  for (int round = 0; round < 10; ++round) {
    std::shared_ptr<TxnSpace> space;
    ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
    ColumnMirror::Config c = config();
    c.collect_interval_ms = 1;
    c.collect_min_versions = 1;
    std::shared_ptr<ColumnMirror> m;
    ASSERT_TRUE(ColumnMirror::attach(space, c, &m).ok());
    {
      RandomWriters writers(*space, 2, 50, 3);
      while (m->stats().collections < 2) std::this_thread::yield();
    }
    if (round % 2) m.reset();
    space.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 3));
  }
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
  ASSERT_TRUE(ColumnMirror::attach(space, config(), &m2).ok());  // a second mirror of the keyspace
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
  EXPECT_EQ(m2->stats().bad_rows, 1u);  // the second mirror saw the same commits
  ASSERT_TRUE(m->contains(key(1), now.start_ts(), &in).ok());
  EXPECT_FALSE(in);
  ASSERT_TRUE(m2->contains(key(1), now.start_ts(), &in).ok());
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

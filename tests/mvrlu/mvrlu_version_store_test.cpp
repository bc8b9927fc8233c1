// The version store for transactions: records of 8-byte handles read at a snapshot's
// timestamp, first-updater-wins commit locks, one store publishing a write set, tombstones,
// and registered snapshots that hold collection off (transactions are not sections).
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "mvrlu/mvrlu_test_util.hpp"

namespace duet::mvrlu {
namespace {

using testing::make_domain;
using testing::make_thread;
using testing::manual_config;
using testing::manual_round;

/// One transaction writing `handle` (or a tombstone) to each record, started at start_ts.
CommitLock commit_values(Thread& t, std::vector<Record*> recs, std::uint64_t start_ts, std::uint64_t handle,
                         bool tombstone, std::uint64_t commit_ts = 0) {
  EXPECT_TRUE(t.read_lock().ok());
  for (Record*& r : recs) {
    const CommitLock l = t.lock_for_commit(r, start_ts);
    if (l != CommitLock::kLocked) {
      t.abort();
      return l;
    }
    r->handle = handle;
    r->tombstone = tombstone ? 1 : 0;
  }
  Status s = t.commit_at(commit_ts);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return CommitLock::kLocked;
}

TEST(MvrluVersionStore, ReadAtSeesTheVersionOfEachTimestamp) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  auto u = make_thread(*d);
  Record* a = nullptr;
  Record* b = nullptr;
  ASSERT_TRUE(t->alloc(&a, Record{0, 1}).ok());  // absent until the inserting commit
  ASSERT_TRUE(t->alloc(&b, Record{0, 1}).ok());
  std::uint64_t s0 = 0;
  unsigned id0 = 0;
  ASSERT_TRUE(d->register_snapshot(&s0, &id0).ok());
  ASSERT_EQ(commit_values(*t, {a, b}, s0, 10, false), CommitLock::kLocked);
  const std::uint64_t c1 = t->last_commit_ts();
  EXPECT_GT(c1, s0);
  std::uint64_t s1 = 0;
  unsigned id1 = 0;
  ASSERT_TRUE(d->register_snapshot(&s1, &id1).ok());
  EXPECT_GE(s1, c1);
  Record out[2];
  ASSERT_TRUE(u->read_at(a, s0, &out[0]).ok());
  EXPECT_NE(out[0].tombstone, 0u);
  const Record* both[2] = {a, b};
  ASSERT_TRUE(u->read_at(both, 2, s1, out).ok());
  EXPECT_EQ(out[0].handle, 10u);
  EXPECT_EQ(out[1].handle, 10u);
  EXPECT_EQ(out[0].tombstone, 0u);

  // First updater wins: a transaction that started at s0 cannot overwrite the commit at c1.
  EXPECT_EQ(commit_values(*u, {b}, s0, 11, false), CommitLock::kConflict);
  // A held lock is busy, not a wait.
  ASSERT_TRUE(t->read_lock().ok());
  Record* ra = a;
  ASSERT_EQ(t->lock_for_commit(ra, s1), CommitLock::kLocked);
  EXPECT_EQ(commit_values(*u, {a}, s1, 12, false), CommitLock::kBusy);
  // An explicit commit ts must be above the versions locked over.
  ra->tombstone = 1;  // delete
  EXPECT_EQ(t->commit_at(c1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(t->commit_at(c1 + 1).ok());
  EXPECT_EQ(t->last_commit_ts(), c1 + 1);
  ASSERT_TRUE(u->read_at(a, c1, &out[0]).ok());
  EXPECT_EQ(out[0].tombstone, 0u);
  ASSERT_TRUE(u->read_at(a, c1 + 1, &out[0]).ok());
  EXPECT_NE(out[0].tombstone, 0u);  // the tombstone version
  // Move the counter clock past the explicit ts, so collection can write it back.
  for (int i = 0; i < 2; ++i) ASSERT_EQ(commit_values(*t, {b}, d->now_ts(), 20, false), CommitLock::kLocked);

  // Bad input.
  EXPECT_EQ(u->read_at(static_cast<const Record*>(nullptr), s1, &out[0]).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(u->read_lock().ok());
  Record* null_rec = nullptr;
  EXPECT_EQ(u->lock_for_commit(null_rec, s1), CommitLock::kError);
  EXPECT_EQ(u->last_error().code(), StatusCode::kInvalidArgument);
  u->abort();
  d->release_snapshot(id0);
  d->release_snapshot(id1);
  t.reset();
  u.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(a);
  d->destroy_quiescent(b);
}

// A registered snapshot keeps the versions it sees through rounds that would otherwise
// collect them; the control releases it first and reads something else (reclaimed copies are
// poisoned), so the check can fail.
std::uint64_t value_at_snapshot_after_rounds(bool keep_registered) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  Record* r = nullptr;
  EXPECT_TRUE(t->alloc(&r, Record{0, 0}).ok());
  EXPECT_EQ(commit_values(*t, {r}, d->now_ts(), 1, false), CommitLock::kLocked);
  std::uint64_t s = 0;
  unsigned id = 0;
  EXPECT_TRUE(d->register_snapshot(&s, &id).ok());
  for (std::uint64_t v = 2; v <= 5; ++v) EXPECT_EQ(commit_values(*t, {r}, d->now_ts(), v, false), CommitLock::kLocked);
  if (!keep_registered) d->release_snapshot(id);
  for (int i = 0; i < 3; ++i) manual_round(*d);
  Record out{};
  EXPECT_TRUE(t->read_at(r, s, &out).ok());
  if (keep_registered) {
    EXPECT_GT(d->stats().log_bytes_used, 0u);
    d->release_snapshot(id);
  }
  t.reset();
  EXPECT_TRUE(d->drain().ok());
  d->destroy_quiescent(r);
  return out.handle;
}

TEST(MvrluVersionStore, RegisteredSnapshotsHoldCollectionOff) { EXPECT_EQ(value_at_snapshot_after_rounds(true), 1u); }

TEST(MvrluVersionStore, UnregisteredOldTimestampsAreNotProtected) {
  EXPECT_NE(value_at_snapshot_after_rounds(false), 1u);
}

// Transactions move amounts between 16 records (snapshot reads, commit locks in key order,
// retried on conflict or busy) while readers sum every record at their snapshot; GC runs
// with the detector throughout.
TEST(MvrluVersionStore, ConcurrentTransactionsKeepSnapshotSums) {
  Config c;
  c.max_threads = 8;
  c.log_bytes = 64 * 1024;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  constexpr int kRecs = 16;
  constexpr std::uint64_t kInit = 1000;
  std::vector<Record*> recs(kRecs);
  for (auto& r : recs) ASSERT_TRUE(setup->alloc(&r, Record{kInit, 0}).ok());
  const auto per = testing::scaled(5000, 200);
  std::atomic<int> writers_done{0};
  std::atomic<std::uint64_t> bad{0}, reads{0}, retries{0};
  std::vector<std::thread> ts;
  for (int w = 0; w < 2; ++w)
    ts.emplace_back([&, w] {
      auto t = make_thread(*d);
      std::mt19937_64 rng(w + 5);
      for (std::uint64_t k = 0; k < per; ++k) {
        int i = static_cast<int>(rng() % kRecs), j = static_cast<int>(rng() % (kRecs - 1));
        if (j >= i) ++j;
        if (i > j) std::swap(i, j);  // lock in key order
        const std::uint64_t amount = rng() % 10;
        for (;;) {
          std::uint64_t start = 0;
          unsigned id = 0;
          ASSERT_TRUE(d->register_snapshot(&start, &id).ok());
          Record vi{}, vj{};
          ASSERT_TRUE(t->read_at(recs[i], start, &vi).ok());
          ASSERT_TRUE(t->read_at(recs[j], start, &vj).ok());
          ASSERT_TRUE(t->read_lock().ok());
          Record* ri = recs[i];
          Record* rj = recs[j];
          CommitLock li = t->lock_for_commit(ri, start);
          CommitLock lj = li == CommitLock::kLocked ? t->lock_for_commit(rj, start) : li;
          if (li == CommitLock::kLocked && lj == CommitLock::kLocked) {
            ri->handle = vi.handle - amount;
            rj->handle = vj.handle + amount;
            ASSERT_TRUE(t->commit_at(0).ok());
            d->release_snapshot(id);
            break;
          }
          ASSERT_NE(lj, CommitLock::kError) << t->last_error().to_string();
          t->abort();
          d->release_snapshot(id);
          retries.fetch_add(1);
          std::this_thread::yield();
        }
      }
      writers_done.fetch_add(1);
    });
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&] {
      auto t = make_thread(*d);
      std::vector<Record> out(kRecs);
      while (writers_done.load() < 2) {
        std::uint64_t s = 0;
        unsigned id = 0;
        ASSERT_TRUE(d->register_snapshot(&s, &id).ok());
        ASSERT_TRUE(t->read_at(recs.data(), kRecs, s, out.data()).ok());
        d->release_snapshot(id);
        std::uint64_t sum = 0;
        for (auto& x : out) sum += x.handle;
        if (sum != kRecs * kInit) bad.fetch_add(1);
        reads.fetch_add(1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  Record out{};
  std::uint64_t sum = 0;
  for (auto* r : recs) {
    ASSERT_TRUE(setup->read_at(r, d->now_ts(), &out).ok());
    sum += out.handle;
  }
  EXPECT_EQ(sum, kRecs * kInit);
  setup.reset();
  ASSERT_TRUE(d->drain().ok());
  for (auto* r : recs) d->destroy_quiescent(r);
}

}  // namespace
}  // namespace duet::mvrlu

// Garbage collection: write-back after one grace period, reclamation by the GC rule, frees
// after two grace periods, the watermarks, the detector's takeover of a stalled log, the
// memory bound under updates, and the negative controls for the GC rules.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "mvrlu/ds/list.hpp"
#include "mvrlu/mvrlu_test_util.hpp"

namespace duet::mvrlu {
namespace {

using testing::make_domain;
using testing::make_thread;
using testing::manual_config;
using testing::manual_round;

struct Cell {
  std::int64_t v;
};

Status set_cell(Thread& t, Cell* x, std::int64_t v) {
  return t.run([&] {
    Cell* c = x;
    Status s = t.try_lock(c);
    if (s.ok()) c->v = v;
    return s;
  });
}

std::int64_t poison_value() {
  std::int64_t v;
  std::memset(&v, 0xDB, sizeof v);
  return v;
}

TEST(MvrluGc, WriteBackAfterOneGracePeriodReclaimAfterTwo) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(t->alloc(&x, Cell{0}).ok());
  ASSERT_TRUE(set_cell(*t, x, 1).ok());
  EXPECT_GT(d->stats().log_bytes_used, 0u);
  EXPECT_EQ(x->v, 0);  // the master still holds the old value
  manual_round(*d);
  EXPECT_EQ(d->stats().writebacks, 1u);
  EXPECT_EQ(x->v, 1);                        // written back
  EXPECT_GT(d->stats().log_bytes_used, 0u);  // the copy waits one more grace period
  ASSERT_TRUE(t->read_lock().ok());
  EXPECT_EQ(t->deref(x), x);  // unlinked: readers use the master
  ASSERT_TRUE(t->read_unlock().ok());
  manual_round(*d);
  EXPECT_EQ(d->stats().log_bytes_used, 0u);
  EXPECT_EQ(d->stats().reclaimed_copies, 1u);
  t.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluGc, ObsoleteCopiesGoOneGracePeriodAfterTheirSuccessor) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(t->alloc(&x, Cell{0}).ok());
  for (int v = 1; v <= 5; ++v) ASSERT_TRUE(set_cell(*t, x, v).ok());
  manual_round(*d);  // four obsolete copies reclaimed, the newest written back
  EXPECT_EQ(d->stats().reclaimed_copies, 4u);
  EXPECT_EQ(x->v, 5);
  manual_round(*d);
  EXPECT_EQ(d->stats().reclaimed_copies, 5u);
  EXPECT_EQ(d->stats().log_bytes_used, 0u);
  t.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluGc, FreedObjectsGoAfterTwoGracePeriods) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  auto u = make_thread(*d);
  Cell* y = nullptr;
  ASSERT_TRUE(t->alloc(&y, Cell{4}).ok());
  const std::uint64_t with_y = d->stats().master_bytes;
  ASSERT_TRUE(t->run([&] {
                 Cell* c = y;
                 Status s = t->try_lock(c);
                 return s.ok() ? t->free(c) : s;
               }).ok());
  EXPECT_EQ(d->stats().master_bytes, with_y);
  ASSERT_TRUE(u->read_lock().ok());
  Cell* c = y;
  EXPECT_TRUE(is_conflict(u->try_lock(c)));  // a freed object stays locked
  u->abort();
  manual_round(*d);
  EXPECT_EQ(d->stats().master_bytes, with_y);  // one grace period is not enough
  manual_round(*d);
  EXPECT_LT(d->stats().master_bytes, with_y);
  EXPECT_EQ(d->stats().log_bytes_used, 0u);
  t.reset();
  u.reset();
  ASSERT_TRUE(d->drain().ok());
}

// The newest copy is written back only once a grace period has passed since it was committed:
// a section that started before the commit keeps reading the old value from the master. The
// negative control writes back at once, and the reader's view no longer matches the replay of
// the commits up to its local-ts.
std::int64_t reader_view_after_round(bool early_writeback) {
  Config c = manual_config();
  c.faults.writeback_before_grace_period = early_writeback;
  auto d = make_domain(c);
  auto w = make_thread(*d);
  auto r = make_thread(*d);
  Cell* x = nullptr;
  EXPECT_TRUE(w->alloc(&x, Cell{0}).ok());
  EXPECT_TRUE(d->begin_grace_period().ok());
  EXPECT_TRUE(r->read_lock().ok());  // not in the snapshot: the grace period will not wait
  EXPECT_TRUE(set_cell(*w, x, 1).ok());
  EXPECT_GT(w->last_commit_ts(), r->local_ts());  // the replay says: r sees 0
  EXPECT_TRUE(d->finish_grace_period());
  d->collect_lagging();
  const std::int64_t seen = r->deref(x)->v;
  EXPECT_TRUE(r->read_unlock().ok());
  w.reset();
  r.reset();
  EXPECT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
  return seen;
}

TEST(MvrluGc, WriteBackWaitsForAGracePeriod) { EXPECT_EQ(reader_view_after_round(false), 0); }

TEST(MvrluNegative, WriteBackBeforeAGracePeriodIsCaught) { EXPECT_EQ(reader_view_after_round(true), 1); }

// Digest D.1.2's counterexample. c1 (X = 1) is superseded by c2 (X = 2) after a reader R
// started; c1's write-back was blocked (X was locked) so it was never written back. The
// text's rule ("own commit-ts below the second-to-last grace-period ts") reclaims c1 in the
// round after, though R (local-ts in [ts(c1), ts(c2))) still needs it. The delay that makes
// this happen is injected by the test: c1's owner processes the rounds late. Reclaimed copies
// are poisoned, so R reads poison instead of 1.
std::int64_t reader_view_of_obsolete_copy(bool text_rule) {
  Config c = manual_config();
  c.faults.text_reclaim_rule = text_rule;
  auto d = make_domain(c);
  auto w1 = make_thread(*d);
  auto w2 = make_thread(*d);
  auto r = make_thread(*d);
  auto other = make_thread(*d);
  Cell* x = nullptr;
  Cell* z = nullptr;
  EXPECT_TRUE(w1->alloc(&x, Cell{0}).ok());
  EXPECT_TRUE(w1->alloc(&z, Cell{0}).ok());
  EXPECT_TRUE(set_cell(*w1, x, 1).ok());     // c1
  EXPECT_TRUE(set_cell(*other, z, 1).ok());  // moves the clock past ts(c1)
  // Round 1: X is locked by w2 while w1's log is processed, so c1 is not written back.
  EXPECT_TRUE(d->begin_grace_period().ok());
  EXPECT_TRUE(w2->read_lock().ok());
  Cell* cx = x;
  EXPECT_TRUE(w2->try_lock(cx).ok());
  EXPECT_TRUE(d->finish_grace_period());
  d->collect_lagging();
  EXPECT_EQ(d->stats().writebacks, 1u);  // z's copy only
  // Round 2 begins while w2 is open; R starts; w2 commits c2; the grace period ends.
  EXPECT_TRUE(d->begin_grace_period().ok());
  EXPECT_TRUE(r->read_lock().ok());
  cx->v = 2;
  EXPECT_TRUE(w2->read_unlock().ok());  // c2
  EXPECT_GT(w2->last_commit_ts(), r->local_ts());
  EXPECT_TRUE(d->finish_grace_period());
  d->collect_lagging();  // w1's log, late
  const std::int64_t seen = r->deref(x)->v;
  EXPECT_TRUE(r->read_unlock().ok());
  w1.reset();
  w2.reset();
  r.reset();
  other.reset();
  EXPECT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
  d->destroy_quiescent(z);
  return seen;
}

TEST(MvrluGc, ObsoleteCopyLivesUntilItsSuccessorIsAGracePeriodOld) {
  EXPECT_EQ(reader_view_of_obsolete_copy(false), 1);
}

TEST(MvrluNegative, TextReclaimRuleUnderDelayIsCaught) {
  EXPECT_EQ(reader_view_of_obsolete_copy(true), poison_value());
}

// Dereference watermark: a thread whose reads mostly land on copies asks for a round although
// its log is nearly empty; the round writes the copies back.
TEST(MvrluGc, DereferenceWatermarkTriggersCollection) {
  Config c;
  c.max_threads = 4;
  c.deref_window = 256;
  c.low_watermark = 0.9;  // the capacity watermark stays quiet
  c.high_watermark = 0.95;
  auto d = make_domain(c);
  auto t = make_thread(*d);
  std::vector<Cell*> cells(8);
  for (auto& x : cells) ASSERT_TRUE(t->alloc(&x, Cell{0}).ok());
  for (auto* x : cells) ASSERT_TRUE(set_cell(*t, x, 1).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (d->stats().writebacks < cells.size() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(t->run([&] {
                   for (auto* x : cells) (void)t->deref(x);
                   return Status::Ok();
                 }).ok());
  }
  EXPECT_EQ(d->stats().writebacks, cells.size());
  EXPECT_LT(static_cast<double>(d->stats().log_bytes_used), 0.9 * static_cast<double>(c.log_bytes));
  t.reset();
  ASSERT_TRUE(d->drain().ok());
  for (auto* x : cells) d->destroy_quiescent(x);
}

// Capacity watermark and a stalled owner: one thread fills its log past the low watermark and
// then stops making sections; the detector collects its log for it.
TEST(MvrluGc, DetectorCollectsAStalledThreadsLog) {
  Config c;
  c.max_threads = 4;
  c.log_bytes = 64 * 1024;
  auto d = make_domain(c);
  auto t = make_thread(*d);
  auto other = make_thread(*d);
  std::vector<Cell*> cells(200);
  for (auto& x : cells) ASSERT_TRUE(t->alloc(&x, Cell{0}).ok());
  for (int round = 0; round < 2; ++round)
    for (auto* x : cells) ASSERT_TRUE(set_cell(*t, x, round + 1).ok());
  // t makes no more calls. Another thread asks for collection now and then.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (d->stats().log_bytes_used > 0 && std::chrono::steady_clock::now() < deadline) {
    d->request_gc();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Stats st = d->stats();
  EXPECT_EQ(st.log_bytes_used, 0u);
  EXPECT_GT(st.takeovers, 0u);
  for (auto* x : cells) EXPECT_EQ(x->v, 2);
  t.reset();
  other.reset();
  ASSERT_TRUE(d->drain().ok());
  for (auto* x : cells) d->destroy_quiescent(x);
}

// A long run of small logs: capacity-triggered collection keeps every writer going.
TEST(MvrluGc, SmallLogsNeverStallWriters) {
  Config c;
  c.max_threads = 4;
  c.log_bytes = 16 * 1024;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  std::vector<Cell*> cells(64);
  for (auto& x : cells) ASSERT_TRUE(setup->alloc(&x, Cell{0}).ok());
  const auto per = testing::scaled(20000, 1000);
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&, i] {
      auto t = make_thread(*d);
      std::mt19937_64 rng(i);
      for (std::uint64_t k = 0; k < per; ++k) {
        Cell* x = cells[rng() % cells.size()];
        Status s = t->run([&] {
          Cell* cx = x;
          Status r = t->try_lock(cx);
          if (r.ok()) ++cx->v;
          return r;
        });
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
    });
  for (auto& t : ts) t.join();
  std::int64_t sum = 0;
  ASSERT_TRUE(setup->run([&] {
                 sum = 0;
                 for (auto* x : cells) sum += setup->deref(x)->v;
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(sum, static_cast<std::int64_t>(2 * per));
  EXPECT_GT(d->stats().rounds, 0u);
  setup.reset();
  ASSERT_TRUE(d->drain().ok());
  for (auto* x : cells) d->destroy_quiescent(x);
}

// The memory bound: under 80% updates (half inserts, half removes) on a hash table,
// tracked bytes (masters not yet deallocated + log bytes in use) stay within
// 1.1 x live + threads x log + 1 MiB at every 10 ms sample. The issue asks for 20 s; CI runs
// 5 s at DUET_TEST_SCALE=1 (scaled with it), which spans thousands of GC rounds.
TEST(MvrluGc, MemoryStaysBoundedUnderUpdates) {
  Config c;
  c.max_threads = 8;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  std::unique_ptr<ds::HashTable> h;
  ASSERT_TRUE(ds::HashTable::create(*d, *setup, 1000, &h).ok());
  constexpr std::uint64_t kRange = 2000;
  std::atomic<std::int64_t> present{0};
  for (std::uint64_t k = 0; k < kRange; k += 2) {
    bool ins = false;
    ASSERT_TRUE(h->insert(*setup, k, &ins).ok());
    present += ins;
  }
  const int threads = 4;
  const double seconds = 5.0 * testing::test_scale();
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&, i] {
      auto t = make_thread(*d);
      std::mt19937_64 rng(7 + i);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t key = rng() % kRange;
        const unsigned op = rng() % 10;
        bool b = false;
        if (op < 4) {
          ASSERT_TRUE(h->insert(*t, key, &b).ok());
          if (b) present.fetch_add(1);
        } else if (op < 8) {
          ASSERT_TRUE(h->remove(*t, key, &b).ok());
          if (b) present.fetch_sub(1);
        } else {
          ASSERT_TRUE(h->contains(*t, key, &b).ok());
        }
      }
    });
  const double node = sizeof(detail::MasterHdr) + sizeof(ds::ListNode);
  const double log_total = static_cast<double>(threads + 1) * static_cast<double>(c.log_bytes);
  double worst = 0;
  int samples = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const Stats st = d->stats();
    const double live = (static_cast<double>(present.load()) + 1000.0) * node;
    const double tracked = static_cast<double>(st.master_bytes + st.log_bytes_used);
    const double bound = 1.1 * live + log_total + 1024.0 * 1024.0;
    worst = std::max(worst, tracked / bound);
    ++samples;
    EXPECT_LE(tracked, bound) << "sample " << samples << ": master " << st.master_bytes << " log "
                              << st.log_bytes_used << " live " << live;
  }
  stop.store(true);
  for (auto& t : ts) t.join();
  EXPECT_GT(samples, 0);
  EXPECT_GT(d->stats().rounds, 0u);
  RecordProperty("worst_tracked_over_bound", std::to_string(worst));
  h.reset();
  setup.reset();
}

}  // namespace
}  // namespace duet::mvrlu

// MV-RLU's API: sections, versions, locks, aborts and every bad input of the issue.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "checkers/linearizability.hpp"
#include "mvrlu/mvrlu_test_util.hpp"

namespace duet::mvrlu {
namespace {

using testing::make_domain;
using testing::make_thread;
using testing::manual_config;

struct Cell {
  std::int64_t v;
};

TEST(MvrluApi, CreateRejectsBadConfig) {
  std::unique_ptr<Domain> d;
  Config c;
  c.log_bytes = 1000;
  EXPECT_EQ(Domain::create(c, &d).code(), StatusCode::kInvalidArgument);
  c = Config{};
  c.low_watermark = 0.9;
  c.high_watermark = 0.5;
  EXPECT_EQ(Domain::create(c, &d).code(), StatusCode::kInvalidArgument);
  c = Config{};
  c.max_threads = 0;
  EXPECT_EQ(Domain::create(c, &d).code(), StatusCode::kInvalidArgument);
  c = Config{};
  c.test_skew = {0, 5};  // a test clock without a boundary
  EXPECT_EQ(Domain::create(c, &d).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Domain::create(Config{}, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(MvrluApi, SectionsSeeTheirSnapshot) {
  auto d = make_domain(manual_config());
  auto w = make_thread(*d);
  auto r = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(w->alloc(&x, Cell{7}).ok());

  ASSERT_TRUE(r->read_lock().ok());  // r's snapshot predates the write
  ASSERT_TRUE(w->read_lock().ok());
  Cell* cx = x;
  ASSERT_TRUE(w->try_lock(cx).ok());
  EXPECT_NE(cx, x);                      // a copy in w's log
  EXPECT_EQ(w->deref(cx), cx);           // a copy is returned as is
  EXPECT_EQ(w->deref(x), cx);            // w reads its own pending copy
  EXPECT_TRUE(w->cmp_ptr(cx, x));
  EXPECT_EQ(w->master_of(cx), x);
  cx->v = 8;
  EXPECT_EQ(r->deref(x)->v, 7);          // pending copies are invisible
  ASSERT_TRUE(w->read_unlock().ok());
  EXPECT_GT(w->last_commit_ts(), r->local_ts());
  EXPECT_EQ(r->deref(x)->v, 7);          // committed after r began: still invisible
  ASSERT_TRUE(r->read_unlock().ok());

  ASSERT_TRUE(r->read_lock().ok());
  EXPECT_EQ(r->deref(x)->v, 8);
  EXPECT_NE(r->deref(x), x);             // the chained copy, not the master
  ASSERT_TRUE(r->read_unlock().ok());
  w.reset();
  r.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluApi, BadInputGetsAClearStatus) {
  Config c = manual_config();
  c.max_threads = 2;
  auto d = make_domain(c);
  auto t = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(t->alloc(&x, Cell{1}).ok());

  // Outside a section.
  EXPECT_EQ(t->read_unlock().code(), StatusCode::kInvalidArgument);
  Cell* p = x;
  EXPECT_EQ(t->try_lock(p).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->free(x).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->deref(x), nullptr);
  EXPECT_EQ(t->last_error().code(), StatusCode::kInvalidArgument);
  t->abort();  // no effect

  // Inside: nested read_lock, free of an unlocked object, null, a too large object.
  ASSERT_TRUE(t->read_lock().ok());
  EXPECT_EQ(t->read_lock().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->free(x).code(), StatusCode::kInvalidArgument);
  Cell* null_cell = nullptr;
  EXPECT_EQ(t->try_lock(null_cell).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->collect().code(), StatusCode::kInvalidArgument);
  struct Big {
    char bytes[20000];
  };
  Big* big = nullptr;
  Status s = t->alloc(&big);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("quarter"), std::string::npos);
  ASSERT_TRUE(t->read_unlock().ok());

  // Slots run out; an unregistered handle refuses every call.
  auto t2 = make_thread(*d);
  std::unique_ptr<Thread> t3;
  EXPECT_EQ(d->register_thread(&t3).code(), StatusCode::kResourceExhausted);
  t2->unregister();
  EXPECT_FALSE(t2->registered());
  EXPECT_EQ(t2->read_lock().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t2->read_lock().message().find("not registered"), std::string::npos);
  Cell* y = nullptr;
  EXPECT_EQ(t2->alloc(&y).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t2->deref(x), nullptr);
  // The departed slot is reusable once its (empty) log is collected.
  d->collect_lagging();
  EXPECT_TRUE(d->register_thread(&t3).ok());
  t.reset();
  t2.reset();
  t3.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluApi, WriteLatestVersionOnlyAndRetry) {
  auto d = make_domain(manual_config());
  auto a = make_thread(*d);
  auto b = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(a->alloc(&x, Cell{0}).ok());
  ASSERT_TRUE(a->read_lock().ok());  // a's snapshot is older than b's commit
  ASSERT_TRUE(b->run([&] {
                Cell* c = x;
                Status s = b->try_lock(c);
                if (s.ok()) c->v = 1;
                return s;
              }).ok());
  Cell* c = x;
  Status s = a->try_lock(c);
  EXPECT_TRUE(is_conflict(s)) << s.to_string();
  a->abort();
  // Held lock: conflict, not a wait.
  ASSERT_TRUE(b->read_lock().ok());
  Cell* cb = x;
  ASSERT_TRUE(b->try_lock(cb).ok());
  ASSERT_TRUE(a->read_lock().ok());
  c = x;
  EXPECT_TRUE(is_conflict(a->try_lock(c)));
  a->abort();
  // The retry helper: the first attempt meets b's lock, b then commits, the retry succeeds.
  int attempts = 0;
  ASSERT_TRUE(a->run([&] {
                 ++attempts;
                 Cell* ca = x;
                 Status r = a->try_lock(ca);
                 if (is_conflict(r) && b->in_section()) {
                   cb->v = 2;
                   EXPECT_TRUE(b->read_unlock().ok());
                 }
                 if (r.ok()) ca->v += 10;
                 return r;
               }).ok());
  EXPECT_EQ(attempts, 2);
  ASSERT_TRUE(a->read_lock().ok());
  EXPECT_EQ(a->deref(x)->v, 12);
  ASSERT_TRUE(a->read_unlock().ok());
  Stats st = d->stats();
  EXPECT_GE(st.conflicts, 3u);
  EXPECT_GE(st.aborts, 3u);
  a.reset();
  b.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluApi, RelockReturnsTheSameCopyAndConstUpgrades) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  auto r = make_thread(*d);
  Cell* x = nullptr;
  Cell* y = nullptr;
  ASSERT_TRUE(t->alloc(&x, Cell{1}).ok());
  ASSERT_TRUE(t->alloc(&y, Cell{2}).ok());
  ASSERT_TRUE(t->read_lock().ok());
  Cell* c1 = x;
  ASSERT_TRUE(t->try_lock_const(c1).ok());
  Cell* c2 = x;
  ASSERT_TRUE(t->try_lock(c2).ok());  // upgrade
  EXPECT_EQ(c1, c2);
  c2->v = 5;
  Cell* cy = y;
  ASSERT_TRUE(t->try_lock_const(cy).ok());
  ASSERT_TRUE(t->read_unlock().ok());
  ASSERT_TRUE(r->read_lock().ok());
  EXPECT_EQ(r->deref(x)->v, 5);
  EXPECT_EQ(r->deref(y), y);  // const lock made no version
  Cell* ry = y;
  EXPECT_TRUE(r->try_lock(ry).ok());  // and was released
  ASSERT_TRUE(r->read_unlock().ok());
  t.reset();
  r.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
  d->destroy_quiescent(y);
}

TEST(MvrluApi, AbortUnlocksRewindsAndFreesAllocations) {
  auto d = make_domain(manual_config());
  auto t = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(t->alloc(&x, Cell{3}).ok());
  const std::uint64_t base = d->stats().master_bytes;
  ASSERT_TRUE(t->read_lock().ok());
  Cell* c = x;
  ASSERT_TRUE(t->try_lock(c).ok());
  c->v = 99;
  Cell* fresh = nullptr;
  ASSERT_TRUE(t->alloc(&fresh, Cell{4}).ok());
  EXPECT_GT(d->stats().master_bytes, base);
  EXPECT_GT(d->stats().log_bytes_used, 0u);
  t->abort();
  EXPECT_EQ(d->stats().master_bytes, base);
  EXPECT_EQ(d->stats().log_bytes_used, 0u);
  ASSERT_TRUE(t->read_lock().ok());
  EXPECT_EQ(t->deref(x)->v, 3);
  c = x;
  EXPECT_TRUE(t->try_lock(c).ok());  // unlocked by the abort
  ASSERT_TRUE(t->read_unlock().ok());
  t.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluApi, ThreadExitingMidSectionAborts) {
  auto d = make_domain(manual_config());
  auto a = make_thread(*d);
  auto b = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(b->alloc(&x, Cell{1}).ok());
  ASSERT_TRUE(a->read_lock().ok());
  Cell* c = x;
  ASSERT_TRUE(a->try_lock(c).ok());
  c->v = 50;
  a.reset();  // exits mid-section
  ASSERT_TRUE(b->read_lock().ok());
  EXPECT_EQ(b->deref(x)->v, 1);
  c = x;
  EXPECT_TRUE(b->try_lock(c).ok());
  ASSERT_TRUE(b->read_unlock().ok());
  // A grace period does not wait for the departed thread.
  ASSERT_TRUE(d->begin_grace_period().ok());
  EXPECT_TRUE(d->finish_grace_period());
  b.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

TEST(MvrluApi, BadTscLetsTheCounterTakeOver) {
  Config c;
  c.clock = ClockMode::kOrdo;
  c.faults.tsc_unusable = true;
  c.max_threads = 2;
  auto d = make_domain(c);
  EXPECT_EQ(d->clock_mode(), ClockMode::kCounter);
  EXPECT_EQ(d->ordo_boundary(), 0u);
  Config o;
  o.clock = ClockMode::kOrdo;
  o.ordo_boundary = 100;
  o.max_threads = 2;
  auto e = make_domain(o);
  // Where the TSC is invariant the configured boundary is used as given.
  if (e->clock_mode() == ClockMode::kOrdo) EXPECT_EQ(e->ordo_boundary(), 100u);
}

// kAuto takes the counter on a machine below ordo_min_cpus, and ORDO (where the TSC allows it)
// from there up.
TEST(MvrluApi, AutoClockTakesTheCounterOnSmallMachines) {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  Config c;
  c.max_threads = 2;
  c.ordo_boundary = 100;
  c.ordo_min_cpus = 100000;  // more CPUs than any affinity mask holds
  EXPECT_EQ(make_domain(c)->clock_mode(), ClockMode::kCounter);
  c.ordo_min_cpus = 0;
  auto d = make_domain(c);
  Config o = c;
  o.clock = ClockMode::kOrdo;
  // kAuto at 0 chooses exactly what kOrdo gets on this machine.
  EXPECT_EQ(d->clock_mode(), make_domain(o)->clock_mode()) << cpus << " CPUs";
}

// A section that never ends: the writer's log fills, collection cannot pass the open section,
// and the writer gets ResourceExhausted after wait_limit_ms instead of hanging.
TEST(MvrluApi, NeverEndingSectionBoundsWritersWaits) {
  Config c;
  c.clock = ClockMode::kCounter;
  c.log_bytes = 16 * 1024;
  c.max_threads = 4;
  c.wait_limit_ms = 100;
  auto d = make_domain(c);
  auto stuck = make_thread(*d);
  auto w = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(w->alloc(&x, Cell{0}).ok());
  ASSERT_TRUE(stuck->read_lock().ok());
  const auto t0 = std::chrono::steady_clock::now();
  Status last;
  for (int i = 0; i < 10000 && last.ok(); ++i) {
    last = w->run([&] {
      Cell* cx = x;
      Status s = w->try_lock(cx);
      if (s.ok()) ++cx->v;
      return s;
    });
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted) << last.to_string();
  EXPECT_LT(secs, 5.0);
  // drain refuses (rather than waits) while the section is open, even with the detector
  // stuck behind it.
  EXPECT_EQ(d->drain().code(), StatusCode::kInvalidArgument);
  stuck->abort();
  // Once the section ends, collection catches up and writes go through again.
  Status again = w->run([&] {
    Cell* cx = x;
    Status s = w->try_lock(cx);
    if (s.ok()) ++cx->v;
    return s;
  });
  EXPECT_TRUE(again.ok()) << again.to_string();
  stuck.reset();
  w.reset();
  ASSERT_TRUE(testing::drain_patiently(*d).ok());  // wait_limit_ms is 100 here
  d->destroy_quiescent(x);
}

// Forced conflicts under concurrency: every increment aborts and retries until it commits, and
// none is lost (each writes the value its snapshot read, plus one: the write-latest rule is
// what keeps that exact).
TEST(MvrluApi, ConcurrentIncrementsAllCommit) {
  Config c;
  c.max_threads = 8;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(setup->alloc(&x, Cell{0}).ok());
  const int threads = 4;
  const auto per = static_cast<int>(testing::scaled(3000, 100));
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&] {
      auto t = make_thread(*d);
      for (int k = 0; k < per; ++k) {
        Status s = t->run([&] {
          const std::int64_t v = t->deref(x)->v;  // write from the snapshot's value
          Cell* cx = x;
          Status r = t->try_lock(cx);
          if (r.ok()) cx->v = v + 1;
          return r;
        });
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
    });
  for (auto& t : ts) t.join();
  ASSERT_TRUE(setup->read_lock().ok());
  EXPECT_EQ(setup->deref(x)->v, std::int64_t{threads} * per);
  ASSERT_TRUE(setup->read_unlock().ok());
  Stats st = d->stats();
  EXPECT_EQ(st.commits, static_cast<std::uint64_t>(threads * per));
  setup.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

// Negative control for the write-latest-version-only rule: without it a section that read an
// old snapshot and then locks the object overwrites a newer commit it never saw. Each
// increment reads the value in the snapshot and writes value + 1 into its copy, so with the
// rule broken, increments are lost; the final count shows it.
TEST(MvrluNegative, LockingAnOldVersionLosesUpdates) {
  Config c;
  c.max_threads = 8;
  c.faults.skip_write_latest_check = true;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  Cell* x = nullptr;
  ASSERT_TRUE(setup->alloc(&x, Cell{0}).ok());
  std::int64_t expected = 0;
  std::int64_t seen = 0;
  for (int attempt = 0; attempt < 50 && seen == expected; ++attempt) {
    std::vector<std::thread> ts;
    std::atomic<std::int64_t> done{0};
    for (int i = 0; i < 4; ++i)
      ts.emplace_back([&] {
        auto t = make_thread(*d);
        for (int k = 0; k < 2000; ++k) {
          ASSERT_TRUE(t->run([&] {
                         const std::int64_t v = t->deref(x)->v;  // the snapshot's value
                         std::this_thread::yield();
                         Cell* cx = x;
                         Status r = t->try_lock(cx);
                         if (r.ok()) cx->v = v + 1;
                         return r;
                       }).ok());
          done.fetch_add(1);
        }
      });
    for (auto& t : ts) t.join();
    expected += done.load();
    ASSERT_TRUE(setup->read_lock().ok());
    seen = setup->deref(x)->v;
    ASSERT_TRUE(setup->read_unlock().ok());
  }
  EXPECT_LT(seen, expected);
  setup.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
}

// The commit waits out the ORDO boundary. On a test clock where the reader's clock runs
// `skew` ticks behind the writer's, a read that starts after the write returned must see it;
// with the wait switched off (negative control) it does not, and the register checker
// refutes the history.
checkers::CheckResult skewed_write_then_read(bool skip_wait) {
  const std::int64_t skew = 400;
  Config c = manual_config();
  c.test_skew = {0, -skew};
  c.ordo_boundary = skew;
  c.faults.skip_commit_wait = skip_wait;
  auto d = make_domain(c);
  auto w = make_thread(*d);  // slot 0
  auto r = make_thread(*d);  // slot 1, behind
  Cell* x = nullptr;
  EXPECT_TRUE(w->alloc(&x, Cell{0}).ok());
  std::vector<checkers::RegisterOp> h;
  checkers::RegisterOp put;
  put.kind = checkers::RegisterOpKind::kPut;
  put.arg = 1;
  put.found = true;
  put.out = 0;
  put.invoke = testing::tick();
  EXPECT_TRUE(w->run([&] {
                 Cell* cx = x;
                 Status s = w->try_lock(cx);
                 if (s.ok()) cx->v = 1;
                 return s;
               }).ok());
  put.response = testing::tick();
  h.push_back(put);
  checkers::RegisterOp get;
  get.kind = checkers::RegisterOpKind::kGet;
  get.invoke = testing::tick();
  EXPECT_TRUE(r->read_lock().ok());
  get.found = true;
  get.out = static_cast<std::uint64_t>(r->deref(x)->v);
  EXPECT_TRUE(r->read_unlock().ok());
  get.response = testing::tick();
  h.push_back(get);
  w.reset();
  r.reset();
  EXPECT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
  return checkers::check_register(h, std::uint64_t{0});
}

TEST(MvrluApi, CommitWaitKeepsRealTimeOrderUnderSkew) {
  EXPECT_TRUE(skewed_write_then_read(false).linearizable);
}

TEST(MvrluNegative, NoCommitWaitUnderSkewIsCaught) {
  auto r = skewed_write_then_read(true);
  EXPECT_TRUE(r.refuted()) << r.explanation;
}

}  // namespace
}  // namespace duet::mvrlu

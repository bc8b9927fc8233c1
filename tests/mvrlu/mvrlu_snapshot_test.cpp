// Snapshot isolation: transfers between objects keep every snapshot's sum, and each reader
// sees exactly the commits with commit-ts <= its local-ts (a replay of the recorded commit
// history); write skew occurs without try_lock_const and never with it; early stamping (a
// negative control) is caught by the same checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "mvrlu/mvrlu_test_util.hpp"

namespace duet::mvrlu {
namespace {

using testing::make_domain;
using testing::make_thread;

struct Account {
  std::int64_t balance;
};

constexpr int kAccounts = 64;
constexpr std::int64_t kInitial = 1000;

struct Transfer {
  std::uint64_t ts;
  int from, to;
  std::int64_t amount;
};

struct Read {
  std::uint64_t local_ts;
  std::vector<std::int64_t> seen;
};

struct Outcome {
  std::uint64_t transfers = 0;
  std::uint64_t reads = 0;
  std::uint64_t bad_sums = 0;
  std::uint64_t bad_snapshots = 0;  ///< reads that differ from the replay at their local-ts
  std::string first_problem;
};

/// Runs 2 writers and 2 readers over 64 accounts, then checks every recorded read against
/// the replay of the commits with ts <= its local-ts. Stops early once `stop_on_problem` and
/// a reader's sum is wrong (negative controls), else after `transfers_per_writer` each.
Outcome run_transfers(Config cfg, std::uint64_t transfers_per_writer, double max_seconds, bool stop_on_problem) {
  Outcome out;
  auto d = make_domain(cfg);
  auto setup = make_thread(*d);
  std::vector<Account*> acc(kAccounts);
  for (auto& a : acc) EXPECT_TRUE(setup->alloc(&a, Account{kInitial}).ok());

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad_sums{0};
  std::vector<std::vector<Transfer>> commits(2);
  std::vector<std::vector<Read>> reads(2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  std::vector<std::thread> ts;
  for (int w = 0; w < 2; ++w)
    ts.emplace_back([&, w] {
      auto t = make_thread(*d);
      std::mt19937_64 rng(100 + w);
      for (std::uint64_t i = 0; i < transfers_per_writer && !stop.load(); ++i) {
        const int a = static_cast<int>(rng() % kAccounts);
        int b = static_cast<int>(rng() % (kAccounts - 1));
        if (b >= a) ++b;
        const std::int64_t amount = static_cast<std::int64_t>(rng() % 50) + 1;
        Status s = t->run([&] {
          Account* pa = acc[a];
          Account* pb = acc[b];
          Status r = t->try_lock(pa);
          if (!r.ok()) return r;
          r = t->try_lock(pb);
          if (!r.ok()) return r;
          pa->balance -= amount;
          pb->balance += amount;
          return Status::Ok();
        });
        EXPECT_TRUE(s.ok()) << s.to_string();
        commits[w].push_back({t->last_commit_ts(), a, b, amount});
        if (std::chrono::steady_clock::now() > deadline) break;
      }
    });
  std::atomic<int> writers_done{0};
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      auto t = make_thread(*d);
      while (!stop.load() && writers_done.load() < 2) {
        Read rd;
        rd.seen.resize(kAccounts);
        std::int64_t sum = 0;
        Status s = t->run([&] {
          sum = 0;
          for (int i = 0; i < kAccounts; ++i) {
            rd.seen[i] = t->deref(acc[i])->balance;
            sum += rd.seen[i];
          }
          rd.local_ts = t->local_ts();
          return Status::Ok();
        });
        EXPECT_TRUE(s.ok()) << s.to_string();
        if (sum != kAccounts * kInitial) {
          bad_sums.fetch_add(1);
          if (stop_on_problem) stop.store(true);
        }
        if (reads[r].size() < 20000) reads[r].push_back(std::move(rd));
        if (std::chrono::steady_clock::now() > deadline) break;
      }
    });
  ts[0].join();
  ts[1].join();
  writers_done.store(2);
  ts[2].join();
  ts[3].join();

  // Replay: commits in ts order; each read must equal the state after those with ts <= its
  // local-ts. (Commits that share a ts touch disjoint accounts: conflicting ones are ordered.)
  std::vector<Transfer> all;
  for (auto& c : commits) all.insert(all.end(), c.begin(), c.end());
  std::sort(all.begin(), all.end(), [](const Transfer& x, const Transfer& y) { return x.ts < y.ts; });
  std::vector<Read*> rs;
  for (auto& v : reads)
    for (auto& rd : v) rs.push_back(&rd);
  std::sort(rs.begin(), rs.end(), [](const Read* x, const Read* y) { return x->local_ts < y->local_ts; });
  std::vector<std::int64_t> state(kAccounts, kInitial);
  std::size_t next = 0;
  for (Read* rd : rs) {
    while (next < all.size() && all[next].ts <= rd->local_ts) {
      state[all[next].from] -= all[next].amount;
      state[all[next].to] += all[next].amount;
      ++next;
    }
    if (rd->seen != state) {
      if (out.bad_snapshots++ == 0) {
        std::ostringstream o;
        o << "read at local-ts " << rd->local_ts << " differs from the replay of " << next << " commits";
        out.first_problem = o.str();
      }
    }
  }
  out.transfers = all.size();
  out.reads = rs.size();
  out.bad_sums = bad_sums.load();
  setup.reset();
  EXPECT_TRUE(d->drain().ok());
  for (auto* a : acc) d->destroy_quiescent(a);
  return out;
}

class MvrluSnapshot : public ::testing::TestWithParam<ClockMode> {};

TEST_P(MvrluSnapshot, ReadersSeeExactlyTheCommitsUpToTheirLocalTs) {
  Config c;
  c.clock = GetParam();
  c.max_threads = 8;
  Outcome o = run_transfers(c, testing::scaled(15000, 500), 20.0, false);
  EXPECT_GT(o.transfers, 0u);
  EXPECT_GT(o.reads, 0u);
  EXPECT_EQ(o.bad_sums, 0u);
  EXPECT_EQ(o.bad_snapshots, 0u) << o.first_problem;
}

// The same with every section entry a locked increment (no membarrier), the fallback of a
// kernel without membarrier(2).
TEST(MvrluSnapshotFences, SymmetricFencesSeeExactlyTheCommitsUpToTheirLocalTs) {
  Config c;
  c.clock = ClockMode::kOrdo;
  c.asymmetric_fences = false;
  c.max_threads = 8;
  Outcome o = run_transfers(c, testing::scaled(15000, 500), 20.0, false);
  EXPECT_GT(o.transfers, 0u);
  EXPECT_EQ(o.bad_sums, 0u);
  EXPECT_EQ(o.bad_snapshots, 0u) << o.first_problem;
}

INSTANTIATE_TEST_SUITE_P(Clock, MvrluSnapshot, ::testing::Values(ClockMode::kOrdo, ClockMode::kCounter),
                         [](const auto& info) { return info.param == ClockMode::kOrdo ? "Ordo" : "Counter"; });

// Negative control: stamping each copy as it is chained makes half a transfer visible. The
// writers sleep between the two copies so readers land in the window; the checks must catch
// it within the time limit.
TEST(MvrluNegative, EarlyStampingIsCaught) {
  Config c;
  c.max_threads = 8;
  c.faults.early_stamping = true;
  c.faults.commit_step_delay_us = 200;
  Outcome o = run_transfers(c, 1'000'000, 10.0, true);
  EXPECT_GT(o.bad_sums + o.bad_snapshots, 0u) << o.transfers << " transfers, " << o.reads << " reads";
}

// The same delay without the fault: the write set still appears at once.
TEST(MvrluSnapshotControl, SlowCommitsStayAtomic) {
  Config c;
  c.max_threads = 8;
  c.faults.commit_step_delay_us = 200;
  Outcome o = run_transfers(c, 1'000'000, 1.0 * testing::test_scale(), true);
  EXPECT_GT(o.reads, 0u);
  EXPECT_EQ(o.bad_sums, 0u);
  EXPECT_EQ(o.bad_snapshots, 0u) << o.first_problem;
}

// Write skew: two sections each read x and y and, seeing both on call (x + y == 2), take their
// own one off call. Under snapshot isolation both can commit, leaving x + y == 0; locking the
// other object with try_lock_const makes them conflict.
struct OnCall {
  std::int64_t v;
};

int skew_outcome(bool lock_reads) {
  auto d = make_domain(testing::manual_config());
  auto a = make_thread(*d);
  auto b = make_thread(*d);
  OnCall* x = nullptr;
  OnCall* y = nullptr;
  EXPECT_TRUE(a->alloc(&x, OnCall{1}).ok());
  EXPECT_TRUE(a->alloc(&y, OnCall{1}).ok());
  // Both sections start before either commits (interleaved on this OS thread).
  auto step = [&](Thread& t, OnCall* mine, OnCall* other) -> Status {
    const std::int64_t sum = t.deref(mine)->v + t.deref(other)->v;
    if (lock_reads) {
      OnCall* o = other;
      Status s = t.try_lock_const(o);
      if (!s.ok()) return s;
    }
    if (sum == 2) {
      Status s = t.try_lock(mine);
      if (!s.ok()) return s;
      mine->v = 0;
    }
    return Status::Ok();
  };
  EXPECT_TRUE(a->read_lock().ok());
  EXPECT_TRUE(b->read_lock().ok());
  Status sa = step(*a, x, y);
  Status sb = step(*b, y, x);
  if (sa.ok()) EXPECT_TRUE(a->read_unlock().ok());
  else a->abort();
  if (sb.ok()) {
    EXPECT_TRUE(b->read_unlock().ok());
  } else {
    // b retries after a: it now sees a's commit and keeps y on call.
    b->abort();
    EXPECT_TRUE(b->run([&] { return step(*b, y, x); }).ok());
  }
  EXPECT_TRUE(a->read_lock().ok());
  const int on_call = static_cast<int>(a->deref(x)->v + a->deref(y)->v);
  a->abort();
  a.reset();
  b.reset();
  EXPECT_TRUE(d->drain().ok());
  d->destroy_quiescent(x);
  d->destroy_quiescent(y);
  return on_call;
}

TEST(MvrluWriteSkew, OccursWithoutTryLockConst) { EXPECT_EQ(skew_outcome(false), 0); }

TEST(MvrluWriteSkew, NeverWithTryLockConst) { EXPECT_EQ(skew_outcome(true), 1); }

// The same under concurrency: two threads repeatedly reset x = y = 1 in one section and race to
// take one off call; with try_lock_const no snapshot ever shows both off call.
TEST(MvrluWriteSkew, ConcurrentNeverWithTryLockConst) {
  Config c;
  c.max_threads = 4;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  OnCall* obj[2] = {nullptr, nullptr};
  ASSERT_TRUE(setup->alloc(&obj[0], OnCall{1}).ok());
  ASSERT_TRUE(setup->alloc(&obj[1], OnCall{1}).ok());
  const auto rounds = testing::scaled(4000, 200);
  std::atomic<std::uint64_t> violations{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&, i] {
      auto t = make_thread(*d);
      for (std::uint64_t k = 0; k < rounds; ++k) {
        ASSERT_TRUE(t->run([&] {
                       OnCall* mine = obj[i];
                       OnCall* other = obj[1 - i];
                       const std::int64_t sum = t->deref(mine)->v + t->deref(other)->v;
                       if (sum == 0) violations.fetch_add(1);
                       Status s = t->try_lock_const(other);
                       if (!s.ok()) return s;
                       s = t->try_lock(mine);
                       if (!s.ok()) return s;
                       mine->v = sum == 2 ? 0 : 1;  // off call when both are on, else back on
                       return Status::Ok();
                     }).ok());
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(violations.load(), 0u);
  setup.reset();
  ASSERT_TRUE(d->drain().ok());
  d->destroy_quiescent(obj[0]);
  d->destroy_quiescent(obj[1]);
}

}  // namespace
}  // namespace duet::mvrlu

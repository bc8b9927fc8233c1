// Random schedules of sections, commits, aborts, grace periods and collection, interleaved on
// one OS thread (several handles, GcMode::kManual): a small randomized model check of the
// protocol and the GC rule (digest D.1.2 asks for one). Every dereference is compared with the
// replay of the commits whose ts <= the section's local-ts (or the section's own write);
// reclaimed copies are poisoned, so a copy reclaimed too early reads as a mismatch. The GC
// negative controls must produce mismatches under the same schedules.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "mvrlu/mvrlu_test_util.hpp"

namespace duet::mvrlu {
namespace {

using testing::make_domain;
using testing::make_thread;

struct Cell {
  std::int64_t v;
};

struct Commit {
  std::uint64_t ts;
  std::map<int, std::int64_t> writes;
};

struct Result {
  std::uint64_t derefs = 0, commits = 0, rounds = 0, mismatches = 0;
  std::string first;
};

Result run_schedule(std::uint64_t seed, const Faults& faults, int steps) {
  constexpr int kHandles = 3, kCells = 4;
  Config c = testing::manual_config();
  c.log_bytes = 256 * 1024;
  c.wait_limit_ms = 10;
  c.faults = faults;
  auto d = make_domain(c);
  std::vector<std::unique_ptr<Thread>> th;
  for (int i = 0; i < kHandles; ++i) th.push_back(make_thread(*d));
  std::vector<Cell*> cells(kCells);
  for (auto& x : cells) EXPECT_TRUE(th[0]->alloc(&x, Cell{0}).ok());
  std::vector<Commit> history;
  std::vector<std::map<int, std::int64_t>> pending(kHandles);
  std::vector<std::map<int, Cell*>> copies(kHandles);
  std::mt19937_64 rng(seed);
  std::int64_t next_value = 1;
  bool gp_open = false;
  Result res;
  auto expected = [&](int h, int cell) {
    if (auto it = pending[h].find(cell); it != pending[h].end()) return it->second;
    std::int64_t v = 0;
    std::uint64_t best = 0;
    for (const Commit& cm : history)
      if (cm.ts <= th[h]->local_ts() && cm.ts >= best)
        if (auto w = cm.writes.find(cell); w != cm.writes.end()) {
          v = w->second;
          best = cm.ts;
        }
    return v;
  };
  auto end_section = [&](int h, bool commit) {
    if (commit) {
      EXPECT_TRUE(th[h]->read_unlock().ok());
      if (!pending[h].empty()) {
        history.push_back({th[h]->last_commit_ts(), pending[h]});
        ++res.commits;
      }
    } else {
      th[h]->abort();
    }
    pending[h].clear();
    copies[h].clear();
  };
  for (int step = 0; step < steps; ++step) {
    const int h = static_cast<int>(rng() % kHandles);
    Thread& t = *th[h];
    const unsigned action = rng() % 100;
    if (action < 10) {  // the detector's moves
      if (!gp_open) {
        gp_open = d->begin_grace_period().ok();
      } else if (d->finish_grace_period()) {
        gp_open = false;
        ++res.rounds;
      }
    } else if (action < 15) {
      if (rng() % 2 == 0) d->collect_lagging();
      else if (!t.in_section()) EXPECT_TRUE(t.collect().ok());
    } else if (!t.in_section()) {
      if (t.read_lock().code() == StatusCode::kResourceExhausted) continue;
    } else if (action < 55) {  // read
      const int cell = static_cast<int>(rng() % kCells);
      const std::int64_t got = t.deref(cells[cell])->v;
      const std::int64_t want = expected(h, cell);
      ++res.derefs;
      if (got != want && res.mismatches++ == 0) {
        std::ostringstream o;
        o << "seed " << seed << " step " << step << ": handle " << h << " at local-ts " << t.local_ts() << " read cell "
          << cell << " = " << got << ", the replay says " << want;
        res.first = o.str();
      }
    } else if (action < 80) {  // write
      const int cell = static_cast<int>(rng() % kCells);
      Cell* p = cells[cell];
      Status s = t.try_lock(p);
      if (s.ok()) {
        p->v = next_value;
        pending[h][cell] = next_value++;
      } else {
        end_section(h, false);
      }
    } else if (action < 95) {
      end_section(h, true);
    } else {
      end_section(h, false);
    }
  }
  for (int h = 0; h < kHandles; ++h)
    if (th[h]->in_section()) end_section(h, false);
  if (gp_open) {
    EXPECT_TRUE(d->finish_grace_period());
  }
  th.clear();
  const Status drained = testing::drain_patiently(*d);  // wait_limit_ms is 10 here
  EXPECT_TRUE(drained.ok()) << drained.to_string();
  for (auto* x : cells) d->destroy_quiescent(x);
  return res;
}

Result run_many(const Faults& f, std::uint64_t schedules) {
  Result all;
  for (std::uint64_t s = 0; s < schedules; ++s) {
    Result r = run_schedule(s, f, 400);
    all.derefs += r.derefs;
    all.commits += r.commits;
    all.rounds += r.rounds;
    if (r.mismatches != 0 && all.mismatches == 0) all.first = r.first;
    all.mismatches += r.mismatches;
  }
  return all;
}

TEST(MvrluSchedules, EveryReadMatchesTheReplay) {
  Result r = run_many(Faults{}, testing::scaled(3000, 100));
  RecordProperty("reads", std::to_string(r.derefs));
  RecordProperty("commits", std::to_string(r.commits));
  RecordProperty("rounds", std::to_string(r.rounds));
  EXPECT_GT(r.derefs, 1000u);
  EXPECT_GT(r.commits, 100u);
  EXPECT_GT(r.rounds, 100u);
  EXPECT_EQ(r.mismatches, 0u) << r.first;
}

TEST(MvrluNegative, SchedulesCatchTheTextReclaimRule) {
  Faults f;
  f.text_reclaim_rule = true;
  Result r = run_many(f, 300);
  RecordProperty("mismatches", std::to_string(r.mismatches));
  EXPECT_GT(r.mismatches, 0u) << r.derefs << " reads";
}

TEST(MvrluNegative, SchedulesCatchWriteBackBeforeAGracePeriod) {
  Faults f;
  f.writeback_before_grace_period = true;
  Result r = run_many(f, 300);
  RecordProperty("mismatches", std::to_string(r.mismatches));
  EXPECT_GT(r.mismatches, 0u) << r.derefs << " reads";
}

}  // namespace
}  // namespace duet::mvrlu

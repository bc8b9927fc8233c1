// LIT under concurrency, checked through recorded histories rather than timing.
//
// * Linearizable ranges: writer threads insert, remove and upsert on their own partitions of
//   the keys (one writer per key) while reader threads run GETs and range queries of every
//   length, some paged; tiny split and resize thresholds make the index change throughout, and
//   in some runs a structure thread also calls Map::split and Map::resize. Each operation is
//   stamped from one shared counter at invocation and response, and the range checker
//   (checkers/range_checker.hpp) then decides every read against the writers' timelines.
// * Lost updates: threads race on a few shared keys; every value written must be replaced or
//   removed at most once, and exactly the unreplaced one per key must remain.
// * Reclamation: a churn on a small key set must free (not only retire) nodes and versions;
//   meant to run under AddressSanitizer as well (scripts/test does).
// After each run Map::check() must pass and the map must hold what the history says.
//
// Sizes scale with DUET_TEST_SCALE (default 1; 1/4 under AddressSanitizer). Each test prints
// its seed on failure; DUET_LIT_SEED overrides the seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "checkers/range_checker.hpp"
#include "index/lit/lit.hpp"

using duet::Status;
using duet::checkers::check_range_history;
using duet::checkers::MapOp;
using duet::checkers::MapOpKind;
using duet::checkers::RangeCheckOptions;
using duet::checkers::RangeCheckResult;
using duet::lit::Config;
using duet::lit::Map;
using duet::lit::RangePage;
using duet::lit::Result;
using duet::lit::Session;
using duet::lit::Stats;
using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr double kSanitizerScale = 0.25;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr double kSanitizerScale = 0.25;
#else
constexpr double kSanitizerScale = 1.0;
#endif
#else
constexpr double kSanitizerScale = 1.0;
#endif

/// DUET_TEST_SCALE (default 1) times the sanitizer factor.
double scale() {
  double s = 1.0;
  if (const char* env = std::getenv("DUET_TEST_SCALE"); env && *env) {
    const double v = std::strtod(env, nullptr);
    if (v > 0) s = v;
  }
  return s * kSanitizerScale;
}

std::uint64_t scaled(std::uint64_t n) { return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(n * scale())); }

/// DUET_LIT_SEED, or `fallback`.
std::uint64_t seed_or(std::uint64_t fallback) {
  if (const char* env = std::getenv("DUET_LIT_SEED"); env && *env) return std::strtoull(env, nullptr, 10);
  return fallback;
}

/// The trace line that names a test's seed and how to rerun with it.
std::string rerun_note(std::uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with DUET_LIT_SEED=" + std::to_string(seed) + ")";
}

/// A map configuration that splits and resizes early: `buckets` root buckets, a split threshold
/// of 4 and 3 resize levels, keys predicted in [0, predicted_max].
Config eager_config(std::size_t buckets, std::uint64_t predicted_max, unsigned max_sessions) {
  Config c;
  c.buckets = buckets;
  c.split_threshold = 4;
  c.resize_levels = 3;
  c.predicted_max = predicted_max;
  c.max_sessions = max_sessions;
  return c;
}

/// All threads wait at the start line until every one has arrived, so they really overlap.
class StartLine {
 public:
  explicit StartLine(int n) : n_(n) {}
  void arrive_and_wait() {
    arrived_.fetch_add(1, std::memory_order_acq_rel);
    while (arrived_.load(std::memory_order_acquire) < n_) std::this_thread::yield();
  }

 private:
  const int n_;
  std::atomic<int> arrived_{0};
};

/// The shared clock of a history: each stamp is distinct and later stamps are later events.
struct Clock {
  std::atomic<std::uint64_t> now{1};
  std::uint64_t stamp() { return now.fetch_add(1, std::memory_order_seq_cst); }
};

std::unique_ptr<Map> make_map(const Config& c) {
  std::unique_ptr<Map> m;
  const Status s = Map::create(c, &m);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return m;
}

std::unique_ptr<Session> open(Map& m) {
  std::unique_ptr<Session> s;
  const Status st = m.open_session(&s);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return s;
}

/// Every entry of the map, read by one range over the whole universe, paging as needed.
Pairs contents(Map& m) {
  auto s = open(m);
  Pairs all;
  RangePage page;
  std::uint64_t start = m.config().universe_min;
  while (true) {
    const Status st = s->range(start, m.config().universe_max, &all, &page);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok() || !page.more) break;
    start = page.resume_key;
  }
  return all;
}

std::string stats_str(const Stats& s) {
  return "splits " + std::to_string(s.splits) + ", resizes " + std::to_string(s.resizes) + ", root buckets " +
         std::to_string(s.root_buckets) + ", max depth " + std::to_string(s.max_depth) + ", markers removed " +
         std::to_string(s.markers_removed) + ", retired " + std::to_string(s.retired) + ", freed " +
         std::to_string(s.freed) + ", camera " + std::to_string(s.camera);
}

/// Map::check() passes and counts `expected` entries.
::testing::AssertionResult checks(const Map& m, std::uint64_t expected) {
  std::uint64_t entries = 0;
  const Status s = m.check(&entries);
  if (!s.ok()) return ::testing::AssertionFailure() << "Map::check: " << s.to_string();
  if (entries != expected)
    return ::testing::AssertionFailure() << "Map::check counts " << entries << " entries, expected " << expected;
  return ::testing::AssertionSuccess();
}

// ---- Linearizable range queries ---------------------------------------------------------------

struct RangeCase {
  const char* name;
  int writers = 2, readers = 2;
  bool structure_thread = false;  ///< a thread calls Map::split and Map::resize throughout
  bool auto_structure = true;
  std::uint64_t keys = 1024;
  std::uint64_t writer_ops = 60000;  ///< per writer (scaled)
  std::uint64_t reader_cap = 60000;  ///< most reads per reader (scaled); readers stop when writers do
  std::uint64_t predicted_max = 1 << 16;
  /// Keys crowd at the low end (gaps growing quadratically): the uniform lookup functions then
  /// fill the first buckets of each split, which split again, so levels nest and resizes follow.
  bool skewed = false;
  bool expect_splits = true, expect_resizes = true;
  std::uint64_t seed = 1;
};

void PrintTo(const RangeCase& c, std::ostream* os) { *os << c.name; }

/// Key i of a run: spread out, with gaps between keys so range bounds can fall in between.
std::uint64_t key_of_case(std::uint64_t i, bool skewed) { return skewed ? 100 + 2 * i + i * i * i / 4 : 100 + 61 * i; }

struct RangeRun {
  std::vector<MapOp> history;
  std::map<std::uint64_t, std::uint64_t> initial;
  std::map<std::uint64_t, std::uint64_t> final_model;  ///< the writers' views at the end
  std::vector<std::string> problems;                   ///< calls that failed outright
  std::uint64_t splits_called = 0, resizes_called = 0;  ///< successful explicit calls
  std::uint64_t reads = 0, pages = 0;
};

RangeRun run_ranges(Map& map, const RangeCase& rc) {
  RangeRun run;
  const auto key_of = [&rc](std::uint64_t i) { return key_of_case(i, rc.skewed); };
  const std::uint64_t nkeys = rc.keys;
  const std::uint64_t writer_ops = scaled(rc.writer_ops), reader_cap = scaled(rc.reader_cap);
  // Prefill every other key.
  {
    auto s = open(map);
    for (std::uint64_t i = 0; i < nkeys; i += 2) {
      const std::uint64_t v = 1'000'000 + i;
      EXPECT_EQ(s->insert(key_of(i), v), Result::kOk);
      run.initial[key_of(i)] = v;
    }
  }
  Clock clock;
  const int threads = rc.writers + rc.readers + (rc.structure_thread ? 1 : 0);
  StartLine start(threads);
  std::atomic<int> writers_left{rc.writers};
  std::vector<std::vector<MapOp>> logs(threads);
  std::vector<std::map<std::uint64_t, std::uint64_t>> views(rc.writers);
  std::vector<std::vector<std::string>> problems(threads);
  std::atomic<std::uint64_t> splits{0}, resizes{0};
  std::vector<std::thread> pool;

  for (int w = 0; w < rc.writers; ++w)
    pool.emplace_back([&, w] {
      auto s = open(map);
      std::mt19937_64 rng(rc.seed * 1000 + w);
      auto& log = logs[w];
      auto& view = views[w];
      for (std::uint64_t i = w; i < nkeys; i += rc.writers)
        if (run.initial.count(key_of(i))) view[key_of(i)] = run.initial.at(key_of(i));
      log.reserve(writer_ops);
      start.arrive_and_wait();
      for (std::uint64_t n = 0; n < writer_ops; ++n) {
        MapOp op;
        op.thread = static_cast<std::uint32_t>(w);
        // Own keys: i % writers == w.
        const std::uint64_t i = w + rc.writers * (rng() % ((nkeys - w + rc.writers - 1) / rc.writers));
        op.key = key_of(i);
        op.value = (std::uint64_t(w) + 1) << 40 | (n + 1);
        const int r = static_cast<int>(rng() % 100);
        Result res;
        if (r < 32) {
          op.kind = MapOpKind::kInsert;
          op.invoke = clock.stamp();
          res = s->insert(op.key, op.value);
          op.response = clock.stamp();
          op.ok = res == Result::kOk;
          if (res != Result::kOk && res != Result::kExists) problems[w].push_back(std::string("insert: ") + to_string(res));
        } else if (r < 62) {
          op.kind = MapOpKind::kRemove;
          op.invoke = clock.stamp();
          res = s->remove(op.key, &op.out);
          op.response = clock.stamp();
          op.ok = res == Result::kOk;
          if (res != Result::kOk && res != Result::kNotFound) problems[w].push_back(std::string("remove: ") + to_string(res));
        } else if (r < 92) {
          op.kind = MapOpKind::kUpsert;
          bool existed = false;
          op.invoke = clock.stamp();
          res = s->upsert(op.key, op.value, &op.out, &existed);
          op.response = clock.stamp();
          op.ok = existed;
          if (res != Result::kOk) problems[w].push_back(std::string("upsert: ") + to_string(res));
        } else {
          op.kind = MapOpKind::kGet;
          op.invoke = clock.stamp();
          res = s->get(op.key, &op.out);
          op.response = clock.stamp();
          op.ok = res == Result::kOk;
        }
        if (op.kind != MapOpKind::kGet) {
          const bool changed = op.ok || op.kind == MapOpKind::kUpsert;
          if (changed && op.kind == MapOpKind::kRemove) view.erase(op.key);
          else if (changed) view[op.key] = op.value;
        }
        log.push_back(op);
      }
      writers_left.fetch_sub(1, std::memory_order_acq_rel);
    });

  for (int r = 0; r < rc.readers; ++r)
    pool.emplace_back([&, r] {
      const int t = rc.writers + r;
      auto s = open(map);
      std::mt19937_64 rng(rc.seed * 1000 + t);
      auto& log = logs[t];
      const std::uint64_t max_key = key_of(nkeys - 1) + 2;
      start.arrive_and_wait();
      for (std::uint64_t n = 0; n < reader_cap && writers_left.load(std::memory_order_acquire) > 0; ++n) {
        const int kind = static_cast<int>(rng() % 100);
        if (kind < 20) {
          MapOp op;
          op.kind = MapOpKind::kGet;
          op.thread = static_cast<std::uint32_t>(t);
          op.key = key_of(rng() % nkeys);
          op.invoke = clock.stamp();
          op.ok = s->get(op.key, &op.out) == Result::kOk;
          op.response = clock.stamp();
          log.push_back(op);
          continue;
        }
        // Span in keys: short, medium (many buckets), whole map; bounds between keys too.
        std::uint64_t span = kind < 55 ? rng() % 8 : kind < 85 ? 16 + rng() % 256 : nkeys;
        const std::uint64_t first = rng() % nkeys;
        std::uint64_t lo = key_of(first) - rng() % 2;
        std::uint64_t hi = key_of(std::min(first + span, nkeys - 1)) + rng() % 2;
        if (kind >= 85) lo = 0, hi = kind % 2 ? max_key : ~std::uint64_t{0};
        // Some queries page through small limits; each page is its own snapshot and record.
        const std::size_t limit = rng() % 8 == 0 ? 1 + rng() % 16 : 0;
        std::uint64_t from = lo;
        for (int pages = 0; pages < 6; ++pages) {
          MapOp op;
          op.kind = MapOpKind::kRange;
          op.thread = static_cast<std::uint32_t>(t);
          op.key = from;
          op.end = hi;
          RangePage page;
          op.invoke = clock.stamp();
          const Status st = s->range(from, hi, &op.result, &page, limit);
          op.response = clock.stamp();
          if (!st.ok()) {
            problems[t].push_back("range(" + std::to_string(from) + ", " + std::to_string(hi) + "): " + st.to_string());
            break;
          }
          if (page.count != op.result.size())
            problems[t].push_back("range: page.count " + std::to_string(page.count) + " but " +
                                  std::to_string(op.result.size()) + " entries appended");
          op.more = page.more;
          op.snapshot = page.snapshot;
          log.push_back(std::move(op));
          if (!page.more) break;
          if (page.resume_key <= log.back().result.back().first) {
            problems[t].push_back("range: resume_key " + std::to_string(page.resume_key) + " not after the last key returned");
            break;
          }
          from = page.resume_key;
        }
      }
    });

  if (rc.structure_thread)
    pool.emplace_back([&] {
      std::mt19937_64 rng(rc.seed * 1000 + 999);
      start.arrive_and_wait();
      const std::uint64_t max_key = key_of(nkeys - 1);
      // Runs while the writers do. Its calls fail while an automatic split or resize holds the
      // structure lock, and on a loaded machine this thread may get few turns, so none of them
      // need succeed before the writers finish: it then keeps trying (bounded) until one has,
      // so that every run changes the index explicitly at least once.
      std::uint64_t after = 0;
      while (writers_left.load(std::memory_order_acquire) > 0 ||
             (splits.load() + resizes.load() == 0 && ++after <= 100000)) {
        if (rng() % 3 != 0) {
          if (map.split(key_of(rng() % nkeys), static_cast<std::uint32_t>(rng() % 2 ? 0 : 2 + rng() % 15)))
            splits.fetch_add(1, std::memory_order_relaxed);
        } else {
          // Sometimes a fitting index, sometimes a bad one that must split again.
          const std::size_t buckets = 1 + rng() % 256;
          const std::uint64_t lo = rng() % 2 ? 0 : rng() % max_key;
          const std::uint64_t hi = lo + 1 + rng() % (max_key + 1);
          if (map.resize(buckets, lo, hi)) resizes.fetch_add(1, std::memory_order_relaxed);
        }
        std::this_thread::yield();  // leave the cores to the workload; not a synchronisation
      }
    });

  for (auto& th : pool) th.join();
  for (auto& log : logs)
    for (auto& op : log) {
      if (op.kind == MapOpKind::kRange || op.kind == MapOpKind::kGet) {
        ++run.reads;
        run.pages += op.kind == MapOpKind::kRange;
      }
      run.history.push_back(std::move(op));
    }
  for (auto& v : views) run.final_model.insert(v.begin(), v.end());
  for (auto& p : problems) run.problems.insert(run.problems.end(), p.begin(), p.end());
  run.splits_called = splits.load();
  run.resizes_called = resizes.load();
  return run;
}

class LitRanges : public ::testing::TestWithParam<RangeCase> {};

TEST_P(LitRanges, HistoriesAreLinearizable) {
  RangeCase rc = GetParam();
  rc.seed = seed_or(rc.seed);
  SCOPED_TRACE(rerun_note(rc.seed));
  Config c = eager_config(4, rc.predicted_max, 16);
  c.predicted_min = 0;
  c.auto_structure = rc.auto_structure;
  auto map = make_map(c);
  ASSERT_TRUE(map);
  const RangeRun run = run_ranges(*map, rc);
  ASSERT_TRUE(run.problems.empty()) << run.problems.size() << " failed calls, first: " << run.problems.front();
  const Stats st = map->stats();
  std::printf("[ lit ] %s: %zu ops, %llu reads (%llu range pages); explicit splits %llu, resizes %llu; %s\n", rc.name,
              run.history.size(), static_cast<unsigned long long>(run.reads),
              static_cast<unsigned long long>(run.pages), static_cast<unsigned long long>(run.splits_called),
              static_cast<unsigned long long>(run.resizes_called), stats_str(st).c_str());

  RangeCheckOptions o;
  o.initial = run.initial;
  o.snapshot_order = true;  // pages report the camera timestamp they read at
  const RangeCheckResult r = check_range_history(run.history, o);
  EXPECT_TRUE(r.ok) << "values are (writer + 1) * 2^40 + the writer's op count; prefilled values 1000000 + i\n"
                    << r.explanation;
  EXPECT_GT(r.key_observations, r.reads_checked) << "range queries covered hardly any keys";

  // The map at rest: structurally sound and equal to the writers' views.
  EXPECT_TRUE(checks(*map, run.final_model.size()));
  const Pairs all = contents(*map);
  EXPECT_TRUE(all == Pairs(run.final_model.begin(), run.final_model.end()))
      << "final contents (" << all.size() << " entries) differ from the writers' views ("
      << run.final_model.size() << " entries)";
  if (rc.expect_splits) {
    EXPECT_GT(st.splits, 0u) << stats_str(st);
  }
  if (rc.expect_resizes) {
    EXPECT_GT(st.resizes, 0u) << stats_str(st);
  }
  if (rc.structure_thread) {
    EXPECT_GT(run.splits_called + run.resizes_called, 0u) << "the structure thread changed nothing";
    EXPECT_GE(st.splits, run.splits_called);
    EXPECT_GE(st.resizes, run.resizes_called);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Lit, LitRanges,
    ::testing::Values(
        // Automatic splits from tiny thresholds; keys spread evenly inside the predicted range.
        RangeCase{.name = "AutoStructure", .expect_resizes = false, .seed = 11},
        // Skewed keys: splits nest until inserts cross resize_levels levels and resize.
        RangeCase{.name = "SkewedKeys", .skewed = true, .seed = 12},
        // Every key beyond the predicted range: all land in the last bucket at first.
        RangeCase{.name = "KeysBeyondPrediction", .predicted_max = 64, .expect_resizes = false, .seed = 13},
        // Explicit split() and resize() from another thread on top of the automatic ones.
        RangeCase{.name = "ExplicitSplitResize", .structure_thread = true, .skewed = true, .seed = 14},
        // Only the explicit calls change the index.
        RangeCase{.name = "ExplicitOnly", .structure_thread = true, .auto_structure = false, .expect_splits = false,
                  .expect_resizes = false, .seed = 15},
        // More writers than cores, few keys: short timelines, much overlap.
        RangeCase{.name = "ManyWritersFewKeys", .writers = 4, .readers = 2, .keys = 64, .writer_ops = 30000,
                  .skewed = true, .expect_resizes = false, .seed = 16}),
    [](const ::testing::TestParamInfo<RangeCase>& i) { return std::string(i.param.name); });

// ---- Lost updates ----------------------------------------------------------------------------

/// One update on a shared key and what it reported.
struct Outcome {
  MapOpKind kind;  ///< kInsert, kRemove or kUpsert
  std::uint64_t key, value, previous;
  bool ok;  ///< INSERT: inserted; REMOVE: removed; UPSERT: existed
};

/// Checks updates on shared keys (values unique, keys initially absent) against the final
/// contents: per key, creations (successful inserts, upserts of an absent key) minus successful
/// removes equals final presence; every value written is replaced or removed (reported as the
/// previous value) at most once; the one never replaced is the final value; no previous value
/// is one nobody wrote to the key. Returns the first violation ("" when none) and, in
/// *replaced, how many values were replaced or removed.
std::string lost_update_violation(const std::vector<std::vector<Outcome>>& logs,
                                  const std::map<std::uint64_t, std::uint64_t>& final_map, std::uint64_t* replaced) {
  std::map<std::uint64_t, std::map<std::uint64_t, int>> consumed;  // key -> value -> times
  std::map<std::uint64_t, std::vector<std::uint64_t>> written;
  std::map<std::uint64_t, std::int64_t> creations, removals;
  for (const auto& log : logs)
    for (const auto& o : log) {
      if (o.kind == MapOpKind::kInsert && o.ok) written[o.key].push_back(o.value), ++creations[o.key];
      if (o.kind == MapOpKind::kUpsert) {
        written[o.key].push_back(o.value);
        if (!o.ok) ++creations[o.key];
      }
      if ((o.kind == MapOpKind::kRemove || o.kind == MapOpKind::kUpsert) && o.ok) ++consumed[o.key][o.previous];
      if (o.kind == MapOpKind::kRemove && o.ok) ++removals[o.key];
    }
  *replaced = 0;
  std::map<std::uint64_t, bool> keys;
  for (const auto& [k, v] : written) keys[k] = true;
  for (const auto& [k, v] : final_map) keys[k] = true;
  for (const auto& [k, unused] : keys) {
    const bool present = final_map.count(k) != 0;
    const std::string where = "key " + std::to_string(k) + ": ";
    if (creations[k] - removals[k] != (present ? 1 : 0))
      return where + std::to_string(creations[k]) + " creations, " + std::to_string(removals[k]) +
             " removals, finally " + (present ? "present" : "absent");
    std::uint64_t unconsumed = 0, consumed_total = 0;
    for (const auto& [v, times] : consumed[k]) consumed_total += times;
    for (const std::uint64_t v : written[k]) {
      auto it = consumed[k].find(v);
      const int times = it == consumed[k].end() ? 0 : it->second;
      if (times > 1) return where + "value " + std::to_string(v) + " was replaced or removed " + std::to_string(times) + " times (lost update)";
      if (times == 0) {
        ++unconsumed;
        if (!present || final_map.at(k) != v)
          return where + "value " + std::to_string(v) + " was never replaced or removed, yet is not the final value (lost update)";
      }
      *replaced += times;
    }
    if (unconsumed != (present ? 1u : 0u))
      return where + std::to_string(unconsumed) + " values never replaced, finally " + (present ? "present" : "absent");
    if (consumed_total + unconsumed != written[k].size())
      return where + "some operation reported a previous value nobody wrote to this key";
  }
  return {};
}

TEST(LitLostUpdates, CheckerRejectsLostUpdates) {
  using K = MapOpKind;
  // Insert 1, upsert 2 (replaces 1), remove (takes 2), insert 3: final {5: 3}.
  const std::vector<Outcome> good = {{K::kInsert, 5, 1, 0, true}, {K::kUpsert, 5, 2, 1, true},
                                     {K::kRemove, 5, 0, 2, true}, {K::kInsert, 5, 3, 0, true}};
  std::uint64_t replaced = 0;
  EXPECT_EQ(lost_update_violation({good}, {{5, 3}}, &replaced), "");
  EXPECT_EQ(replaced, 2u);
  EXPECT_NE(lost_update_violation({good}, {}, &replaced), "");        // the final value vanished
  EXPECT_NE(lost_update_violation({good}, {{5, 2}}, &replaced), "");  // an old value came back
  // Two upserts both replaced value 1: one of them was lost.
  EXPECT_NE(lost_update_violation({{{K::kInsert, 5, 1, 0, true}, {K::kUpsert, 5, 2, 1, true}},
                                   {{K::kUpsert, 5, 3, 1, true}}},
                                  {{5, 3}}, &replaced)
                .find("replaced or removed 2 times"),
            std::string::npos);
  // Two inserts both succeeded with no remove between.
  EXPECT_NE(lost_update_violation({{{K::kInsert, 5, 1, 0, true}}, {{K::kInsert, 5, 2, 0, true}}}, {{5, 2}}, &replaced), "");
  // A remove reported a value nobody wrote.
  EXPECT_NE(lost_update_violation({{{K::kInsert, 5, 1, 0, true}, {K::kRemove, 5, 0, 9, true}}}, {}, &replaced), "");
}

TEST(LitLostUpdates, EveryValueIsReplacedAtMostOnce) {
  const std::uint64_t seed = seed_or(21);
  SCOPED_TRACE(rerun_note(seed));
  const Config c = eager_config(2, 1024, 8);
  auto map = make_map(c);
  ASSERT_TRUE(map);
  const int threads = 3;
  const std::uint64_t keys = 12, ops = scaled(200000);
  std::vector<std::vector<Outcome>> logs(threads);
  std::vector<std::vector<Pairs>> scans(threads);
  StartLine start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      auto s = open(*map);
      std::mt19937_64 rng(seed * 100 + t);
      start.arrive_and_wait();
      for (std::uint64_t n = 0; n < ops; ++n) {
        Outcome o{};
        o.key = 7 + 13 * (rng() % keys);
        o.value = (std::uint64_t(t) + 1) << 40 | (n + 1);
        const int r = static_cast<int>(rng() % 100);
        if (r < 30) {
          o.kind = MapOpKind::kInsert;
          o.ok = s->insert(o.key, o.value) == Result::kOk;
        } else if (r < 60) {
          o.kind = MapOpKind::kRemove;
          o.ok = s->remove(o.key, &o.previous) == Result::kOk;
        } else if (r < 95) {
          o.kind = MapOpKind::kUpsert;
          ASSERT_EQ(s->upsert(o.key, o.value, &o.previous, &o.ok), Result::kOk);
        } else {
          Pairs out;
          RangePage page;
          ASSERT_TRUE(s->range(0, 1000, &out, &page).ok());
          scans[t].push_back(std::move(out));
          continue;
        }
        logs[t].push_back(o);
      }
    });
  for (auto& th : pool) th.join();

  std::unordered_map<std::uint64_t, std::uint64_t> key_of_value;
  for (const auto& log : logs)
    for (const auto& o : log)
      if ((o.kind == MapOpKind::kInsert && o.ok) || o.kind == MapOpKind::kUpsert) key_of_value[o.value] = o.key;
  const Pairs final_pairs = contents(*map);
  const std::map<std::uint64_t, std::uint64_t> final_map(final_pairs.begin(), final_pairs.end());
  EXPECT_TRUE(checks(*map, final_map.size()));
  std::uint64_t replaced = 0;
  EXPECT_EQ(lost_update_violation(logs, final_map, &replaced), "")
      << "values are (thread + 1) * 2^40 + the thread's op count";
  EXPECT_GT(replaced, ops / 4) << "the threads hardly raced";
  // Concurrent scans saw only written values, at their keys, in order.
  for (const auto& per_thread : scans)
    for (const auto& scan : per_thread)
      for (std::size_t i = 0; i < scan.size(); ++i) {
        auto it = key_of_value.find(scan[i].second);
        ASSERT_TRUE(it != key_of_value.end() && it->second == scan[i].first)
            << "a scan saw key " << scan[i].first << " = " << scan[i].second << ", which no operation wrote there";
        if (i > 0) {
          ASSERT_LT(scan[i - 1].first, scan[i].first) << "a scan returned keys out of order";
        }
      }
}

// ---- Reclamation --------------------------------------------------------------------------------

TEST(LitReclamation, ChurnFreesMemory) {
  const std::uint64_t seed = seed_or(31);
  SCOPED_TRACE(rerun_note(seed));
  const Config c = eager_config(2, 256, 8);
  auto map = make_map(c);
  ASSERT_TRUE(map);
  const int threads = 3;
  const std::uint64_t keys_per_thread = 24, ops = scaled(400000);
  // Each thread owns its keys (k % threads == t), so its model is exact.
  std::vector<std::map<std::uint64_t, std::uint64_t>> models(threads);
  auto phase = [&](int round) {
    StartLine start(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        auto s = open(*map);
        auto& model = models[t];
        std::mt19937_64 rng(seed * 100 + round * 10 + t);
        Pairs out;
        start.arrive_and_wait();
        for (std::uint64_t n = 0; n < ops; ++n) {
          const std::uint64_t k = t + threads * (rng() % keys_per_thread);
          const std::uint64_t v = (std::uint64_t(round) << 48) | (std::uint64_t(t) << 40) | n;
          const int r = static_cast<int>(rng() % 100);
          if (r < 30) {
            const bool absent = model.count(k) == 0;
            ASSERT_EQ(s->insert(k, v), absent ? Result::kOk : Result::kExists) << "key " << k << " op " << n;
            if (absent) model[k] = v;
          } else if (r < 60) {
            std::uint64_t prev = 0;
            auto it = model.find(k);
            ASSERT_EQ(s->remove(k, &prev), it != model.end() ? Result::kOk : Result::kNotFound) << "key " << k;
            if (it != model.end()) {
              ASSERT_EQ(prev, it->second) << "key " << k;
              model.erase(it);
            }
          } else if (r < 90) {
            std::uint64_t prev = 0;
            bool existed = false;
            ASSERT_EQ(s->upsert(k, v, &prev, &existed), Result::kOk);
            ASSERT_EQ(existed, model.count(k) != 0) << "key " << k;
            if (existed) {
              ASSERT_EQ(prev, model[k]) << "key " << k;
            }
            model[k] = v;
          } else {
            // A range over part of the key set: its own keys in it must be as in its model
            // (only this thread writes them).
            out.clear();
            RangePage page;
            const std::uint64_t lo = rng() % (threads * keys_per_thread), hi = lo + rng() % 24;
            ASSERT_TRUE(s->range(lo, hi, &out, &page).ok());
            std::map<std::uint64_t, std::uint64_t> mine;
            for (const auto& [key, value] : out)
              if (key % threads == static_cast<std::uint64_t>(t)) mine[key] = value;
            const std::map<std::uint64_t, std::uint64_t> expected(model.lower_bound(lo), model.upper_bound(hi));
            ASSERT_TRUE(mine == expected) << "range(" << lo << ", " << hi << ") disagrees with the owner's view";
          }
        }
      });
    for (auto& th : pool) th.join();
  };
  auto model_size = [&] {
    std::uint64_t n = 0;
    for (auto& m : models) n += m.size();
    return n;
  };

  phase(1);
  if (HasFatalFailure()) return;
  const Stats s1 = map->stats();
  EXPECT_TRUE(checks(*map, model_size()));
  phase(2);
  if (HasFatalFailure()) return;
  const Stats s2 = map->stats();
  EXPECT_TRUE(checks(*map, model_size()));
  std::printf("[ lit ] churn %llu ops/thread/phase: after phase 1 %s\n[ lit ] after phase 2 %s\n",
              static_cast<unsigned long long>(ops), stats_str(s1).c_str(), stats_str(s2).c_str());
  EXPECT_GT(s1.retired, 0u) << stats_str(s1);
  EXPECT_GT(s1.freed, 0u) << "nothing freed after phase 1: " << stats_str(s1);
  EXPECT_GT(s2.freed, s1.freed) << "nothing freed during phase 2: " << stats_str(s2);
  // Reclamation keeps up: most of what was retired is freed (not merely parked).
  EXPECT_GE(s2.freed, s2.retired / 2) << stats_str(s2);
  std::map<std::uint64_t, std::uint64_t> all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  const Pairs got = contents(*map);
  EXPECT_TRUE(got == Pairs(all.begin(), all.end())) << "final contents differ from the owners' views";
}

}  // namespace

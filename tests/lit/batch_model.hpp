// Test helpers for the batched LIT (index/lit/batch.hpp): batches as plain vectors, a reference
// model of a whole batch on std::map, the lock-free LIT (lit.hpp) driven through the same
// batches, and exact comparison of outcomes. Shared by the CPU twin's tests (duet_lit_tests)
// and the GPU ones (duet_gpu_tests).
//
// Every outcome of a batch is fixed by the contract's order (batch.hpp): range queries read the
// state at the batch's start, updates take effect in batch order (per key, which is all that
// matters for outcomes), and GETs read the state after all of the batch's updates. So one
// serial run in that order (ranges, updates, GETs) gives the outcome a map must report, also
// for several requests on one key in one batch. The one exception is kRetry: which requests
// find an exhausted pool depends on timing, so comparisons stay clear of it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "index/lit/batch.hpp"
#include "index/lit/lit.hpp"

namespace duet::lit::testing {

using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

/// One point request.
struct Req {
  BatchOp op;
  std::uint64_t key, value;
};

/// One range query [start, end].
struct Span {
  std::uint64_t start, end;
};

/// A batch: point requests, range queries and the per-query limit (0: the map's maximum).
/// with_values false sends a null values array (INSERT and UPSERT are then kInvalid).
struct Batch {
  std::vector<Req> points;
  std::vector<Span> ranges;
  std::uint64_t limit = 0;
  bool with_values = true;
  bool with_ranges = true;  ///< pass a range batch (maybe empty) and take range results
};

/// What a map reported for a batch.
struct Outcome {
  Status s;
  std::vector<BatchStatus> status;
  std::vector<std::uint64_t> out;
  RangeResults ranges;
};

/// Runs one batch through execute() (host arrays).
inline Outcome run(BatchMap& m, const Batch& b) {
  std::vector<BatchOp> ops;
  std::vector<std::uint64_t> keys, values, starts, ends;
  for (const Req& r : b.points) ops.push_back(r.op), keys.push_back(r.key), values.push_back(r.value);
  for (const Span& q : b.ranges) starts.push_back(q.start), ends.push_back(q.end);
  std::vector<BatchStatus> status(b.points.size(), BatchStatus::kRetry);
  std::vector<std::uint64_t> out(b.points.size(), ~std::uint64_t{0});
  RangeResults ranges;
  const PointBatch pb{ops.data(), keys.data(), b.with_values ? values.data() : nullptr, b.points.size()};
  const RangeBatch rb{starts.data(), ends.data(), b.ranges.size(), b.limit};
  Status s = m.execute(pb, {status.data(), out.data()}, b.with_ranges ? &rb : nullptr, b.with_ranges ? &ranges : nullptr);
  return Outcome{std::move(s), std::move(status), std::move(out), std::move(ranges)};
}

/// Query q's entries in r.
inline Pairs entries(const RangeResults& r, std::size_t q) {
  Pairs v;
  for (std::uint64_t i = r.offsets[q]; i < r.offsets[q + 1]; ++i) v.emplace_back(r.keys[i], r.values[i]);
  return v;
}

/// The batched LIT's semantics on a std::map: run(b) returns the outcome a map with this
/// content, universe and range cap must report for b, and applies b's updates.
class Model {
 public:
  /// An empty map over [universe_min, universe_max] whose ranges return at most
  /// max_range_results entries.
  Model(std::uint64_t universe_min, std::uint64_t universe_max, std::uint64_t max_range_results)
      : umin_(universe_min), umax_(universe_max), cap_(max_range_results) {}

  /// The outcome of b, in the contract's order; applies b's updates.
  Outcome run(const Batch& b) {
    Outcome o;  // o.s: Ok
    const std::size_t n = b.points.size();
    o.status.assign(n, BatchStatus::kInvalid);
    o.out.assign(n, 0);
    if (b.with_ranges) range_outcomes(b, &o.ranges);
    for (std::size_t i = 0; i < n; ++i)
      if (b.points[i].op != BatchOp::kGet) apply(b, i, &o);
    for (std::size_t i = 0; i < n; ++i)
      if (b.points[i].op == BatchOp::kGet) apply(b, i, &o);
    return o;
  }

  /// Applies one update whatever the batch around it (for replaying requests that succeeded).
  void apply_one(const Req& r) {
    Batch b;
    b.points = {r};
    Outcome o;
    o.status.assign(1, BatchStatus::kInvalid);
    o.out.assign(1, 0);
    apply(b, 0, &o);
  }

  /// Every entry, and the entries in [a, b], in key order.
  const std::map<std::uint64_t, std::uint64_t>& contents() const { return m_; }
  Pairs range(std::uint64_t a, std::uint64_t b) const {
    Pairs v;
    for (auto it = m_.lower_bound(a); it != m_.end() && it->first <= b; ++it) v.push_back(*it);
    return v;
  }

 private:
  bool in_universe(std::uint64_t k) const { return k >= umin_ && k <= umax_; }

  void range_outcomes(const Batch& b, RangeResults* r) const {
    const std::size_t nr = b.ranges.size();
    const std::uint64_t limit = b.limit == 0 || b.limit > cap_ ? cap_ : b.limit;
    r->offsets.assign(1, 0);
    r->status.assign(nr, BatchStatus::kOk);
    r->more.assign(nr, 0);
    r->resume.assign(nr, 0);
    r->keys.clear();
    r->values.clear();
    for (std::size_t q = 0; q < nr; ++q) {
      const Span s = b.ranges[q];
      if (s.start > s.end || !in_universe(s.start) || !in_universe(s.end)) {
        r->status[q] = BatchStatus::kInvalid;
      } else {
        std::uint64_t taken = 0;
        for (auto it = m_.lower_bound(s.start); it != m_.end() && it->first <= s.end; ++it) {
          if (taken == limit) {
            r->more[q] = 1;
            r->resume[q] = it->first;
            break;
          }
          r->keys.push_back(it->first);
          r->values.push_back(it->second);
          ++taken;
        }
      }
      r->offsets.push_back(r->keys.size());
    }
  }

  void apply(const Batch& b, std::size_t i, Outcome* o) {
    const Req& r = b.points[i];
    const bool needs_value = r.op == BatchOp::kInsert || r.op == BatchOp::kUpsert;
    if (std::uint8_t(r.op) > 3 || !in_universe(r.key) || (needs_value && !b.with_values)) return;  // kInvalid, 0
    auto it = m_.find(r.key);
    const bool has = it != m_.end();
    BatchStatus st = BatchStatus::kOk;
    std::uint64_t out = 0;
    switch (r.op) {
      case BatchOp::kGet:
        if (has) out = it->second;
        else st = BatchStatus::kNotFound;
        break;
      case BatchOp::kInsert:
        if (has) st = BatchStatus::kExists, out = it->second;
        else m_[r.key] = r.value;
        break;
      case BatchOp::kRemove:
        if (has) out = it->second, m_.erase(it);
        else st = BatchStatus::kNotFound;
        break;
      case BatchOp::kUpsert:
        if (has) st = BatchStatus::kUpdated, out = it->second, it->second = r.value;
        else m_[r.key] = r.value;
        break;
    }
    o->status[i] = st;
    o->out[i] = out;
  }

  std::uint64_t umin_, umax_, cap_;
  std::map<std::uint64_t, std::uint64_t> m_;
};

/// The lock-free LIT (lit.hpp) run through batches in the contract's order, with its outcomes
/// in the batched LIT's terms. Its configuration takes the batched one's universe, prediction
/// and range cap.
class LockFreeBatches {
 public:
  explicit LockFreeBatches(const BatchConfig& bc, std::size_t buckets = 1000) : status_(open(bc, buckets)) {}
  ~LockFreeBatches() { s_.reset(); }
  /// Whether the map and its session were created.
  const Status& status() const { return status_; }

  /// The lock-free LIT's outcome of b: its ranges first, then its updates in batch order, then
  /// its GETs, each through the session.
  Outcome run(const Batch& b) {
    Outcome o;  // o.s: Ok
    const std::size_t n = b.points.size(), nr = b.ranges.size();
    o.status.assign(n, BatchStatus::kInvalid);
    o.out.assign(n, 0);
    if (b.with_ranges) {
      RangeResults& r = o.ranges;
      r.offsets.assign(1, 0);
      r.status.assign(nr, BatchStatus::kOk);
      r.more.assign(nr, 0);
      r.resume.assign(nr, 0);
      for (std::size_t q = 0; q < nr; ++q) {
        Pairs got;
        RangePage page;
        const Status st = s_->range(b.ranges[q].start, b.ranges[q].end, &got, &page, b.limit);
        if (!st.ok()) {
          r.status[q] = BatchStatus::kInvalid;
        } else {
          for (auto [k, v] : got) r.keys.push_back(k), r.values.push_back(v);
          r.more[q] = page.more ? 1 : 0;
          r.resume[q] = page.more ? page.resume_key : 0;
        }
        r.offsets.push_back(r.keys.size());
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (b.points[i].op != BatchOp::kGet) apply(b, i, &o);
    for (std::size_t i = 0; i < n; ++i)
      if (b.points[i].op == BatchOp::kGet) apply(b, i, &o);
    return o;
  }

 private:
  /// Creates the map and the session.
  Status open(const BatchConfig& bc, std::size_t buckets) {
    Config c;
    c.universe_min = bc.universe_min;
    c.universe_max = bc.universe_max;
    c.predicted_min = bc.predicted_min;
    c.predicted_max = bc.predicted_max;
    c.max_range_results = bc.max_range_results;
    c.buckets = buckets;
    if (Status s = Map::create(c, &map_); !s.ok()) return s;
    return map_->open_session(&s_);
  }

  void apply(const Batch& b, std::size_t i, Outcome* o) {
    const Req& r = b.points[i];
    const bool needs_value = r.op == BatchOp::kInsert || r.op == BatchOp::kUpsert;
    if (std::uint8_t(r.op) > 3 || (needs_value && !b.with_values)) return;  // kInvalid
    std::uint64_t v = 0;
    bool existed = false;
    Result res = Result::kOk;
    switch (r.op) {
      case BatchOp::kGet: res = s_->get(r.key, &v); break;
      case BatchOp::kInsert:
        res = s_->insert(r.key, r.value);
        if (res == Result::kExists) s_->get(r.key, &v);  // INSERT of a present key reports its value
        break;
      case BatchOp::kRemove: res = s_->remove(r.key, &v); break;
      case BatchOp::kUpsert: res = s_->upsert(r.key, r.value, &v, &existed); break;
    }
    BatchStatus st = BatchStatus::kInvalid;
    switch (res) {
      case Result::kOk: st = r.op == BatchOp::kUpsert && existed ? BatchStatus::kUpdated : BatchStatus::kOk; break;
      case Result::kNotFound: st = BatchStatus::kNotFound; break;
      case Result::kExists: st = BatchStatus::kExists; break;
      case Result::kOutOfUniverse: st = BatchStatus::kInvalid; break;
    }
    if (st == BatchStatus::kInvalid || st == BatchStatus::kNotFound) v = 0;
    if (r.op == BatchOp::kInsert && st == BatchStatus::kOk) v = 0;
    if (r.op == BatchOp::kUpsert && st == BatchStatus::kOk) v = 0;
    o->status[i] = st;
    o->out[i] = v;
  }

  std::unique_ptr<Map> map_;
  std::unique_ptr<Session> s_;
  Status status_;  // after the map and session, which open() sets
};

/// Exact comparison of two outcomes of one batch: the call's status code, every request's
/// status and out, and every range's status, entries, more flag and resume key (and the
/// snapshot number when check_snapshot). The message names the first difference.
inline ::testing::AssertionResult same_outcome(const Outcome& got, const Outcome& want, bool check_snapshot = false) {
  if (got.s.code() != want.s.code())
    return ::testing::AssertionFailure() << "call status " << got.s.to_string() << ", want " << want.s.to_string();
  if (got.status.size() != want.status.size()) return ::testing::AssertionFailure() << "request count differs";
  for (std::size_t i = 0; i < got.status.size(); ++i) {
    if (got.status[i] != want.status[i] || got.out[i] != want.out[i])
      return ::testing::AssertionFailure() << "request " << i << ": " << to_string(got.status[i]) << " " << got.out[i]
                                           << ", want " << to_string(want.status[i]) << " " << want.out[i];
  }
  const RangeResults &a = got.ranges, &b = want.ranges;
  if (a.status.size() != b.status.size()) return ::testing::AssertionFailure() << "range count differs";
  if (a.offsets.size() != b.offsets.size()) return ::testing::AssertionFailure() << "range offsets count differs";
  for (std::size_t q = 0; q < a.status.size(); ++q) {
    if (a.status[q] != b.status[q])
      return ::testing::AssertionFailure() << "range " << q << ": " << to_string(a.status[q]) << ", want "
                                           << to_string(b.status[q]);
    if (entries(a, q) != entries(b, q))
      return ::testing::AssertionFailure() << "range " << q << ": " << entries(a, q).size() << " entries, want "
                                           << entries(b, q).size() << " (or the same number, different)";
    if (a.more[q] != b.more[q] || a.resume[q] != b.resume[q])
      return ::testing::AssertionFailure() << "range " << q << ": more " << int(a.more[q]) << " resume " << a.resume[q]
                                           << ", want more " << int(b.more[q]) << " resume " << b.resume[q];
  }
  if (check_snapshot && a.snapshot != b.snapshot)
    return ::testing::AssertionFailure() << "snapshot " << a.snapshot << ", want " << b.snapshot;
  return ::testing::AssertionSuccess();
}

/// Shapes of random batches.
struct Mix {
  std::size_t points = 1000;        ///< point requests per batch
  std::size_t ranges = 100;         ///< range queries per batch
  std::uint64_t key_lo = 0, key_hi = 10000;  ///< keys drawn from [key_lo, key_hi)
  unsigned get = 40, insert = 25, remove = 20, upsert = 15;  ///< weights of the ops
  unsigned duplicates = 10;         ///< percent of requests that reuse a key of the batch
  unsigned bad = 1;                 ///< percent of requests with a bad op or a key outside
  std::uint64_t outside = 0;        ///< a key outside the universe, used for bad requests
  std::uint64_t max_len = 300;      ///< range lengths drawn from [0, max_len]
};

/// A mix over keys [0, keys) with `outside` = keys (a key outside the universe for bad
/// requests), and the given sizes, share of repeated keys, range lengths and bad percent.
inline Mix mix_for(std::uint64_t keys, std::size_t points, std::size_t ranges, unsigned duplicates,
                   std::uint64_t max_len, unsigned bad = 1) {
  Mix m;
  m.key_hi = keys;
  m.outside = keys;
  m.points = points;
  m.ranges = ranges;
  m.duplicates = duplicates;
  m.max_len = max_len;
  m.bad = bad;
  return m;
}

/// A random batch: ops by weight, some keys repeated within the batch, some bad requests, and
/// ranges with some inverted or outside the universe (when m.outside is set).
inline Batch random_batch(std::mt19937_64& rng, const Mix& m, std::uint64_t limit = 0) {
  Batch b;
  b.limit = limit;
  const unsigned total = m.get + m.insert + m.remove + m.upsert;
  const std::uint64_t span = m.key_hi - m.key_lo;
  for (std::size_t i = 0; i < m.points; ++i) {
    const unsigned w = unsigned(rng() % total);
    BatchOp op = w < m.get ? BatchOp::kGet
                 : w < m.get + m.insert ? BatchOp::kInsert
                 : w < m.get + m.insert + m.remove ? BatchOp::kRemove
                                                   : BatchOp::kUpsert;
    std::uint64_t key = m.key_lo + rng() % span;
    if (!b.points.empty() && rng() % 100 < m.duplicates) key = b.points[rng() % b.points.size()].key;
    if (rng() % 100 < m.bad) {
      if (rng() % 2) op = BatchOp(4 + rng() % 200);
      else if (m.outside) key = m.outside;
    }
    b.points.push_back({op, key, rng() >> 8});
  }
  for (std::size_t q = 0; q < m.ranges; ++q) {
    const std::uint64_t a = m.key_lo + rng() % span;
    std::uint64_t e = a + rng() % (m.max_len + 1);
    if (e >= m.key_hi) e = m.key_hi - 1;
    Span s{a, e};
    if (rng() % 100 < m.bad) {
      if (rng() % 2) s = {e + 1, a};  // inverted (unless e + 1 == a... never: e >= a)
      else if (m.outside) s = {a, m.outside};
    }
    b.ranges.push_back(s);
  }
  return b;
}

/// A BatchConfig over the universe [0, key_range) with the prediction equal to the universe.
inline BatchConfig config_for(std::uint64_t key_range, std::uint64_t width = 10, std::uint64_t capacity = 0,
                              unsigned threads = 0) {
  BatchConfig c;
  c.universe_min = 0;
  c.universe_max = key_range - 1;
  c.predicted_min = 0;
  c.predicted_max = key_range - 1;
  c.bucket_width = width;
  c.node_capacity = capacity;
  c.threads = threads;
  return c;
}

/// The whole content of a map, by paging one range over [lo, hi] (4096 entries a page).
inline Pairs dump(BatchMap& m, std::uint64_t lo, std::uint64_t hi) {
  Pairs all;
  std::uint64_t start = lo;
  for (;;) {
    Batch b;
    b.ranges = {{start, hi}};
    b.limit = 4096;
    const Outcome o = run(m, b);
    EXPECT_TRUE(o.s.ok()) << o.s.to_string();
    if (!o.s.ok()) break;
    const Pairs part = entries(o.ranges, 0);
    all.insert(all.end(), part.begin(), part.end());
    if (!o.ranges.more[0]) break;
    start = o.ranges.resume[0];
  }
  return all;
}

}  // namespace duet::lit::testing

// SNAPSHOT's range paths (docs/txn.md, "SNAPSHOT"): the serial walk, the walk split across the
// snapshot pool, and paging past a limit, each checked against point reads of the same
// transaction (same start) while writers commit; its runs of points likewise; and LIT's
// range_many against range().
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "duet/txn.hpp"
#include "index/lit/lit.hpp"

using namespace duet;

namespace {

double scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  const double v = s ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

std::shared_ptr<TxnSpace> open_space(const TxnConfig& c) {
  std::shared_ptr<TxnSpace> s;
  Status st = TxnSpace::open("r", c, &s);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return s;
}

/// The key universe: a third with a prefix of their own (one key per bucket), the rest in
/// runs that share an 8-byte prefix (collision runs of several keys).
std::vector<std::string> universe(int n) {
  std::vector<std::string> keys;
  char k[40];
  for (int i = 0; i < n; ++i) {
    if (i % 3 == 0) std::snprintf(k, sizeof k, "k%06d", i);
    else std::snprintf(k, sizeof k, "shared%02d/%06d", i % 17, i);
    keys.emplace_back(k);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

bool in_range(const TxnRange& r, const std::string& k) {
  if (!r.start_unbounded && (k < r.start || (k == r.start && !r.start_inclusive))) return false;
  if (!r.end_unbounded && (k > r.end || (k == r.end && !r.end_inclusive))) return false;
  return true;
}

/// The present pairs of `r` by point reads of t (the reference: the point map, not the walk).
Pairs by_points(Txn& t, const std::vector<std::string>& keys, const TxnRange& r) {
  Pairs out;
  for (const auto& k : keys) {
    if (!in_range(r, k)) continue;
    std::string v;
    bool found = false;
    EXPECT_TRUE(t.get(k, &v, &found).ok());
    if (found) out.emplace_back(k, v);
  }
  return out;
}

Pairs of_snapshot(const TxnSnapshot& s, std::size_t arg) {
  Pairs out;
  for (std::uint64_t i = s.arg_offsets[arg]; i < s.arg_offsets[arg + 1]; ++i) {
    EXPECT_EQ(s.present[i], 1);
    out.emplace_back(std::string(s.key(i)), std::string(s.value(i)));
  }
  return out;
}

/// The same range read in pages of `limit` through SNAPSHOT's more/resume.
Pairs paged(Txn& t, TxnRange r, std::size_t limit) {
  Pairs out;
  for (int guard = 0; guard < 1000000; ++guard) {
    TxnSnapshot s;
    std::vector<SnapshotArg> args = {SnapshotArg::of(r, limit)};
    EXPECT_TRUE(t.snapshot(args, &s).ok());
    Pairs p = of_snapshot(s, 0);
    EXPECT_LE(p.size(), limit);
    out.insert(out.end(), p.begin(), p.end());
    if (!s.more[0]) break;
    EXPECT_EQ(p.size(), limit);
    r.start = s.resume[0];
    r.start_inclusive = false;
    r.start_unbounded = false;
  }
  return out;
}

std::vector<TxnRange> ranges_of(const std::vector<std::string>& keys) {
  std::vector<TxnRange> rs = {TxnRange::all()};
  const std::size_t n = keys.size();
  // Bounds at present keys, inside collision runs, between keys, inclusive and exclusive.
  for (auto [a, b] : {std::pair<std::size_t, std::size_t>{n / 10, n - n / 7}, {1, n / 2}, {n / 3, n / 3 + 5}}) {
    for (int incl = 0; incl < 4; ++incl) {
      TxnRange r = TxnRange::closed(keys[a], keys[b]);
      r.start_inclusive = incl & 1;
      r.end_inclusive = incl & 2;
      rs.push_back(r);
    }
  }
  TxnRange mid = TxnRange::closed("shared03", "shared09/5");  // bounds that are no key
  rs.push_back(mid);
  TxnRange open_start = TxnRange::closed("", keys[n / 2]);
  open_start.start_unbounded = true;
  rs.push_back(open_start);
  TxnRange open_end = TxnRange::closed(keys[n / 4], "");
  open_end.end_unbounded = true;
  open_end.start_inclusive = false;
  rs.push_back(open_end);
  return rs;
}

}  // namespace

// A range split across the pool's threads, the serial walk (scan) and pages past a limit all
// equal point reads at the same start, while writers put, overwrite and delete keys (new keys
// among them) throughout.
TEST(TxnSnapshotRange, SplitSerialAndPagedEqualPointReadsUnderWriters) {
  TxnConfig c;
  c.snapshot_threads = 4;
  c.parallel_range_keys = 64;  // every range past 64 keys goes to the pool
  auto s = open_space(c);
  const int n = std::max(800, static_cast<int>(6000 * scale()));
  const auto keys = universe(n);
  {
    Txn w;
    ASSERT_TRUE(s->begin(&w).ok());
    for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_TRUE(w.put(keys[i], "v0-" + keys[i]).ok());
    CommitResult r;
    ASSERT_TRUE(w.commit(&r).ok());
    ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
  }
  std::atomic<bool> stop{false};
  // Writers commit up to `allowed` transactions, raised by each round: the rounds see
  // different states and the open reader keeps version chains short (no collection can run
  // below it, so unbounded writers would make each read walk long chains).
  std::atomic<std::uint64_t> commits{0}, allowed{0};
  std::vector<std::thread> writers;
  for (int wi = 0; wi < 2; ++wi)
    writers.emplace_back([&, wi] {
      std::mt19937_64 rng(17 + wi);
      Txn w;
      while (!stop.load(std::memory_order_relaxed)) {
        if (commits.load() >= allowed.load()) {
          std::this_thread::yield();
          continue;
        }
        if (!s->begin(&w).ok()) continue;
        for (int j = 0; j < 4; ++j) {
          const std::string& k = keys[rng() % keys.size()];
          if (rng() % 4 == 0) (void)w.del(k);
          else (void)w.put(k, "w" + std::to_string(rng() % 1000));
        }
        CommitResult r;
        if (w.commit(&r).ok() && r.outcome == TxnOutcome::kCommitted) commits.fetch_add(1);
      }
    });
  const auto rs = ranges_of(keys);
  const int rounds = std::max(2, static_cast<int>(4 * scale()));
  for (int round = 0; round < rounds; ++round) {
    allowed.fetch_add(400);
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    std::vector<SnapshotArg> args;
    for (const auto& r : rs) args.push_back(SnapshotArg::of(r));
    TxnSnapshot snap;
    ASSERT_TRUE(t.snapshot(args, &snap).ok());
    ASSERT_EQ(snap.arg_offsets.size(), rs.size() + 1);
    for (std::size_t i = 0; i < rs.size(); ++i) {
      SCOPED_TRACE("range " + std::to_string(i) + " round " + std::to_string(round));
      const Pairs want = by_points(t, keys, rs[i]);
      ASSERT_EQ(of_snapshot(snap, i), want);
      ASSERT_EQ(snap.more[i], 0);
      Pairs scanned;
      ASSERT_TRUE(t.scan(rs[i], 0, &scanned).ok());
      ASSERT_EQ(scanned, want);
      if (i < 3) {
        ASSERT_EQ(paged(t, rs[i], 97), want);
      }
      if (want.size() < 100) {
        ASSERT_EQ(paged(t, rs[i], 1), want);
      }
    }
    t.abort();
  }
  stop = true;
  for (auto& w : writers) w.join();
  EXPECT_GT(commits.load(), 0u);
}

// Own writes in a range take the merged path; the result equals point reads (which see them).
TEST(TxnSnapshotRange, OwnWritesMergedMatchPointReads) {
  TxnConfig c;
  c.snapshot_threads = 4;
  c.parallel_range_keys = 64;
  auto s = open_space(c);
  const auto keys = universe(600);
  Txn w;
  ASSERT_TRUE(s->begin(&w).ok());
  for (const auto& k : keys) ASSERT_TRUE(w.put(k, "base").ok());
  CommitResult r;
  ASSERT_TRUE(w.commit(&r).ok());
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  ASSERT_TRUE(t.del(keys[10]).ok());
  ASSERT_TRUE(t.put(keys[11], "mine").ok());
  ASSERT_TRUE(t.put("shared05/zzz-new", "new").ok());
  auto all = keys;
  all.push_back("shared05/zzz-new");
  std::sort(all.begin(), all.end());
  for (const auto& range : ranges_of(keys)) {
    TxnSnapshot snap;
    std::vector<SnapshotArg> args = {SnapshotArg::of(range)};
    ASSERT_TRUE(t.snapshot(args, &snap).ok());
    const Pairs want = by_points(t, all, range);
    ASSERT_EQ(of_snapshot(snap, 0), want);
    ASSERT_EQ(paged(t, range, 33), want);
  }
}

// Points are read in runs (their lookups overlapped): a run of points in any order, present,
// never written, deleted, overwritten after the reader began, written or deleted by the reader
// itself, repeated, and cut by ranges, fills one slot per point that equals the point read
// (present flag, value), with every argument's offsets in place; while writers commit.
TEST(TxnSnapshotPoints, RunsOfPointsMatchPointReads) {
  TxnConfig c;
  auto s = open_space(c);
  const auto keys = universe(900);
  {
    Txn w;
    ASSERT_TRUE(s->begin(&w).ok());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (i % 5 != 4) {  // every fifth key never written
        ASSERT_TRUE(w.put(keys[i], "base" + std::to_string(i)).ok());
      }
    }
    for (std::size_t i = 0; i < keys.size(); i += 11) ASSERT_TRUE(w.del(keys[i]).ok());
    CommitResult r;
    ASSERT_TRUE(w.commit(&r).ok());
  }
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {  // overwrites and deletes after t began: t must not see them
    std::mt19937_64 rng(5);
    while (!stop.load()) {
      Txn w;
      if (!s->begin(&w).ok()) continue;
      const auto& k = keys[rng() % keys.size()];
      const Status st = rng() % 3 ? w.put(k, "later") : w.del(k);
      CommitResult r;
      if (st.ok()) (void)w.commit(&r);
      else w.abort();
    }
  });
  ASSERT_TRUE(t.del(keys[7]).ok());
  ASSERT_TRUE(t.put(keys[8], "mine").ok());
  ASSERT_TRUE(t.put(keys[9] + "-new", "new").ok());
  std::mt19937_64 rng(9);
  for (int round = 0; round < static_cast<int>(20 * scale()) + 2; ++round) {
    std::vector<SnapshotArg> args;
    for (int a = 0; a < 150; ++a) {
      const std::uint64_t x = rng() % 100;
      if (x < 3) {
        const std::size_t i = rng() % (keys.size() - 30);
        args.push_back(SnapshotArg::of(TxnRange::closed(keys[i], keys[i + rng() % 30])));
      } else if (x < 6) {
        args.push_back(SnapshotArg::point(keys[7 + rng() % 3]));  // own writes
      } else if (x < 8) {
        args.push_back(SnapshotArg::point(keys[9] + "-new"));
      } else if (x < 10) {
        args.push_back(SnapshotArg::point("no-such-key-" + std::to_string(rng() % 5)));
      } else {
        args.push_back(SnapshotArg::point(keys[rng() % keys.size()]));
      }
    }
    TxnSnapshot snap;
    ASSERT_TRUE(t.snapshot(args, &snap).ok());
    ASSERT_EQ(snap.arg_offsets.size(), args.size() + 1);
    ASSERT_EQ(snap.more.size(), args.size());
    ASSERT_EQ(snap.resume.size(), args.size());
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (args[a].is_range) {
        std::vector<std::string> all = keys;
        all.push_back(keys[9] + "-new");
        std::sort(all.begin(), all.end());
        ASSERT_EQ(of_snapshot(snap, a), by_points(t, all, args[a].range)) << "argument " << a;
        continue;
      }
      ASSERT_EQ(snap.arg_offsets[a + 1], snap.arg_offsets[a] + 1) << "argument " << a;
      const std::uint64_t i = snap.arg_offsets[a];
      std::string v;
      bool found = false;
      ASSERT_TRUE(t.get(args[a].key, &v, &found).ok());
      ASSERT_EQ(snap.key(i), args[a].key) << "argument " << a;
      ASSERT_EQ(snap.present[i], found ? 1 : 0) << "argument " << a << " key " << args[a].key;
      ASSERT_EQ(snap.value(i), found ? v : std::string()) << "argument " << a << " key " << args[a].key;
      ASSERT_EQ(snap.more[a], 0);
    }
  }
  stop = true;
  writer.join();
}

// range_many equals range() per piece, at one snapshot, with and without a limit; bad input
// is InvalidArgument with nothing appended.
TEST(LitRangeMany, EqualsRangePerPiece) {
  lit::Config cfg;
  cfg.predicted_min = 0;
  cfg.predicted_max = 1u << 20;
  cfg.universe_max = 1u << 21;
  std::unique_ptr<lit::Map> map;
  ASSERT_TRUE(lit::Map::create(cfg, &map).ok());
  std::unique_ptr<lit::Session> s;
  ASSERT_TRUE(map->open_session(&s).ok());
  std::mt19937_64 rng(5);
  for (int i = 0; i < 6000; ++i) {
    const std::uint64_t k = rng() % (1u << 20);
    (void)s->insert(k, k * 3);
  }
  for (std::uint64_t k = 500000; k < 501000; ++k) (void)s->remove(k);  // a gap
  using P = std::pair<std::uint64_t, std::uint64_t>;
  std::vector<P> pieces = {{0, 1000}, {1001, 1001}, {2000, 400000}, {499000, 502000}, {900000, 1u << 20}, {7, 7}};
  for (std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{50}}) {
    std::vector<std::vector<P>> outs(pieces.size());
    std::vector<lit::RangePage> pages(pieces.size());
    ASSERT_TRUE(s->range_many(pieces.data(), pieces.size(), outs.data(), pages.data(), limit).ok());
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      std::vector<P> want;
      lit::RangePage pg;
      ASSERT_TRUE(s->range(pieces[i].first, pieces[i].second, &want, &pg, limit).ok());
      EXPECT_EQ(outs[i], want) << "piece " << i << " limit " << limit;
      EXPECT_EQ(pages[i].more, pg.more);
      if (pg.more) {
        EXPECT_EQ(pages[i].resume_key, pg.resume_key);
      }
      EXPECT_EQ(pages[i].count, pg.count);
    }
  }
  std::vector<std::vector<P>> outs(65);
  std::vector<lit::RangePage> pages(65);
  std::vector<P> many(65, P{0, 10});
  EXPECT_EQ(s->range_many(many.data(), 65, outs.data(), pages.data()).code(), StatusCode::kInvalidArgument);
  P bad[2] = {{0, 10}, {20, 5}};
  EXPECT_EQ(s->range_many(bad, 2, outs.data(), pages.data()).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(outs[0].empty());
  P outside[1] = {{0, std::uint64_t{1} << 63}};
  EXPECT_EQ(s->range_many(outside, 1, outs.data(), pages.data()).code(), StatusCode::kInvalidArgument);
}

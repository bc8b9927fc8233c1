// Concurrent histories of the txn keyspace, checked for snapshot isolation with real-time
// order by si_checker.hpp; negative controls (planted bugs) that the checker must catch.
//
// Workload: logical keys hold lists of unique 8-byte elements. A logical key L lives in two
// store keys: "k<L>" (present while L is "alive") and "t<L>" (the list as of L's last delete).
// A logical read reads k<L>, and t<L> when k<L> is absent; an append writes k<L> = list +
// element; a delete writes t<L> = list + element and deletes k<L>. So deletes, tombstones and
// re-created keys are exercised while every logical key stays an append-only list the checker
// can order. Transactions mix reads, appends, deletes, scans over k-keys and SNAPSHOTs; keys
// are drawn from a Zipf distribution; some transactions abort on purpose; some readers stay
// open across many other transactions; a collector thread forces collection throughout.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

#include "duet/txn.hpp"
#include "txn/si_checker.hpp"

namespace duet {
namespace {

using sicheck::List;
using sicheck::Op;
using sicheck::TxnRec;

double scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  const double v = s ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

std::string kname(char p, std::uint64_t l) {
  char b[24];
  std::snprintf(b, sizeof b, "%c%07llu", p, static_cast<unsigned long long>(l));
  return b;
}

List decode(std::string_view v) {
  List l(v.size() / 8);
  if (!l.empty()) std::memcpy(l.data(), v.data(), l.size() * 8);
  return l;
}

std::string encode(const List& l) { return std::string(reinterpret_cast<const char*>(l.data()), l.size() * 8); }

struct Zipf {
  std::vector<double> cdf;
  Zipf(std::size_t n, double theta) : cdf(n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) cdf[i] = (sum += 1.0 / std::pow(double(i + 1), theta));
    for (double& c : cdf) c /= sum;
  }
  std::size_t operator()(std::mt19937_64& r) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(r);
    return std::min<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin(), cdf.size() - 1);
  }
};

struct Workload {
  int threads = 4;
  int txns_per_thread = 2000;
  std::size_t keys = 64;
  double theta = 0.99;
  int max_ops = 4;
  bool scans = true;
  bool long_readers = true;
  bool collector = true;
};

struct Recorder {
  std::atomic<std::uint64_t> clock{1};
  /// Transactions started; every kGeneration of them move the workload to fresh logical keys
  /// (as Elle rotates keys), so lists stay short and checking stays linear in the history.
  std::atomic<std::uint64_t> started{0};
  static constexpr std::uint64_t kGeneration = 1000;
  std::uint64_t generation() { return started.fetch_add(1, std::memory_order_relaxed) / kGeneration; }
  std::uint64_t stamp() { return clock.fetch_add(1, std::memory_order_seq_cst); }
};

/// A logical read at the transaction's snapshot: k<L>, else t<L>.
Status logical_read(Txn& t, std::uint64_t l, List* out) {
  std::string v;
  bool f = false;
  Status s = t.get(kname('k', l), &v, &f);
  if (!s.ok()) return s;
  if (!f) {
    s = t.get(kname('t', l), &v, &f);
    if (!s.ok()) return s;
  }
  *out = f ? decode(v) : List{};
  return Status::Ok();
}

/// One thread's transactions.
void run_thread(TxnSpace& space, const Workload& w, int tid, Recorder& rec, std::vector<TxnRec>* out) {
  std::mt19937_64 rng(1000 + tid);
  Zipf zipf(w.keys, w.theta);
  std::uint64_t next_elem = (std::uint64_t(tid) + 1) << 40;
  std::uint64_t next_id = std::uint64_t(tid) << 40;
  Txn t, reader;
  TxnRec reader_rec;
  std::uint64_t reader_base = 0;
  int reader_left = 0;
  for (int n = 0; n < w.txns_per_thread; ++n) {
    // A long reader: opened now and then, read between other transactions, committed later.
    if (w.long_readers && reader_left == 0 && rng() % 200 == 0) {
      reader_rec = TxnRec{next_id++, rec.stamp(), 0, false, {}};
      reader_base = rec.generation() * w.keys;
      ASSERT_TRUE(space.begin(&reader).ok());
      reader_left = 50;
    }
    if (reader_left > 0) {
      List l;
      const std::uint64_t key = reader_base + zipf(rng);
      Status s = logical_read(reader, key, &l);
      bool alive = s.ok();
      if (alive) reader_rec.ops.push_back(Op{Op::kRead, key, l, 0});
      if (!alive || --reader_left == 0) {
        if (alive) {
          CommitResult r;
          ASSERT_TRUE(reader.commit(&r).ok());
          reader_rec.committed = r.outcome == TxnOutcome::kCommitted;
          ASSERT_TRUE(reader_rec.committed || r.outcome == TxnOutcome::kSnapshotTooOld) << "read-only aborted";
        }
        reader_rec.complete = rec.stamp();
        out->push_back(std::move(reader_rec));
        reader_left = 0;
      }
    }
    TxnRec r{next_id++, rec.stamp(), 0, false, {}};
    const std::uint64_t base = rec.generation() * w.keys;
    ASSERT_TRUE(space.begin(&t).ok());
    const int ops = 1 + static_cast<int>(rng() % w.max_ops);
    bool alive = true;
    for (int o = 0; o < ops && alive; ++o) {
      const unsigned kind = rng() % 10;
      const std::uint64_t key = base + zipf(rng);
      if (kind < 3) {  // read
        List l;
        alive = logical_read(t, key, &l).ok();
        if (alive) r.ops.push_back(Op{Op::kRead, key, l, 0});
      } else if (kind < 7 || !w.scans) {  // append (or delete, one in four)
        List l;
        alive = logical_read(t, key, &l).ok();
        if (!alive) break;
        r.ops.push_back(Op{Op::kRead, key, l, 0});
        const std::uint64_t e = next_elem++;
        l.push_back(e);
        if (rng() % 4 == 0) {
          ASSERT_TRUE(t.put(kname('t', key), encode(l)).ok());
          ASSERT_TRUE(t.del(kname('k', key)).ok());
        } else {
          ASSERT_TRUE(t.put(kname('k', key), encode(l)).ok());
        }
        r.ops.push_back(Op{Op::kAppend, key, l, e});
      } else if (kind < 9) {  // scan a few k-keys; absent ones are read through t
        const std::uint64_t hi = std::min<std::uint64_t>(key + 1 + rng() % 6, base + w.keys - 1);
        std::vector<std::pair<std::string, std::string>> got;
        alive = t.scan(TxnRange::closed(kname('k', key), kname('k', hi)), 0, &got).ok();
        std::size_t gi = 0;
        for (std::uint64_t l = key; l <= hi && alive; ++l) {
          List lst;
          if (gi < got.size() && got[gi].first == kname('k', l)) {
            lst = decode(got[gi++].second);
          } else {
            std::string v;
            bool f;
            alive = t.get(kname('t', l), &v, &f).ok();
            if (f) lst = decode(v);
          }
          if (alive) r.ops.push_back(Op{Op::kRead, l, lst, 0});
        }
      } else {  // SNAPSHOT: the pair of one key as points, and a range of k-keys
        const std::uint64_t hi = std::min<std::uint64_t>(key + 3, base + w.keys - 1);
        std::vector<SnapshotArg> args = {SnapshotArg::point(kname('k', key)), SnapshotArg::point(kname('t', key)),
                                         SnapshotArg::of(TxnRange::closed(kname('k', key), kname('k', hi)))};
        TxnSnapshot s;
        alive = t.snapshot(args, &s).ok();
        if (!alive) break;
        List first = s.present[0] ? decode(s.value(0)) : s.present[1] ? decode(s.value(1)) : List{};
        r.ops.push_back(Op{Op::kRead, key, first, 0});
        // The range part reads the same key again: recorded, so the checker compares the two.
        if (s.arg_offsets[3] > s.arg_offsets[2] && s.key(s.arg_offsets[2]) == kname('k', key))
          r.ops.push_back(Op{Op::kRead, key, decode(s.value(s.arg_offsets[2])), 0});
      }
    }
    if (!alive) {  // snapshot too old
      r.committed = false;
    } else if (rng() % 20 == 0) {
      t.abort();
      r.committed = false;
    } else {
      CommitResult cr;
      ASSERT_TRUE(t.commit(&cr).ok());
      r.committed = cr.outcome == TxnOutcome::kCommitted;
    }
    r.complete = rec.stamp();
    out->push_back(std::move(r));
  }
  if (reader.active()) reader.abort();
  if (reader_left > 0) {
    reader_rec.committed = false;
    reader_rec.complete = rec.stamp();
    out->push_back(std::move(reader_rec));
  }
}

struct RunResult {
  sicheck::Result check;
  std::size_t txns = 0, committed = 0;
  TxnStats stats;
};

RunResult run_and_check(const TxnConfig& cfg, const Workload& w) {
  std::shared_ptr<TxnSpace> space;
  EXPECT_TRUE(TxnSpace::open("h", cfg, &space).ok());
  Recorder rec;
  std::vector<std::vector<TxnRec>> logs(w.threads);
  std::atomic<bool> done{false};
  std::thread gc;
  if (w.collector)
    gc = std::thread([&] {
      while (!done.load()) {
        space->collect();
        std::this_thread::yield();
      }
    });
  std::vector<std::thread> ths;
  for (int i = 0; i < w.threads; ++i) ths.emplace_back([&, i] { run_thread(*space, w, i, rec, &logs[i]); });
  for (auto& t : ths) t.join();
  done = true;
  if (gc.joinable()) gc.join();
  RunResult rr;
  std::vector<TxnRec> h;
  for (auto& l : logs)
    for (auto& t : l) h.push_back(std::move(t));
  std::map<std::uint64_t, List> final;
  Txn t;
  EXPECT_TRUE(space->begin(&t).ok());
  const std::uint64_t generations = rec.started.load() / Recorder::kGeneration + 1;
  for (std::uint64_t k = 0; k < w.keys * generations; ++k) {
    List l;
    EXPECT_TRUE(logical_read(t, k, &l).ok());
    if (!l.empty()) final[k] = l;
  }
  t.abort();
  rr.txns = h.size();
  for (auto& x : h) rr.committed += x.committed;
  rr.check = sicheck::check(h, final);
  rr.stats = space->stats();
  return rr;
}

/// The Zipf mix on `cfg` (collection watermark 64), `txns` transactions per thread at scale 1:
/// SI with real-time order, a third committed at least, some conflicts.
RunResult zipf_mix_checked(TxnConfig cfg, int txns) {
  cfg.gc_watermark = 64;
  Workload w;
  w.txns_per_thread = std::max(200, static_cast<int>(txns * scale()));
  RunResult r = run_and_check(cfg, w);
  EXPECT_TRUE(r.check.ok) << r.check.anomaly << ": " << r.check.detail;
  EXPECT_GT(r.committed, r.txns / 3);
  EXPECT_GT(r.stats.conflicts, 0u) << "Zipf keys should conflict sometimes";
  return r;
}

TEST(TxnHistory, ZipfMixIsSnapshotIsolated) {
  const RunResult r = zipf_mix_checked(TxnConfig{}, 25000);
  EXPECT_GT(r.stats.reclaimed, 0u) << "collection ran";
  std::printf("txns %zu committed %zu conflicts %llu reclaimed %llu versions %llu\n", r.txns, r.committed,
              (unsigned long long)r.stats.conflicts, (unsigned long long)r.stats.reclaimed,
              (unsigned long long)r.stats.versions);
}

/// Whether this machine can run the TSC clock; when it cannot, open() must say so clearly.
bool tsc_clock_here() {
  TxnConfig cfg;
  cfg.clock = TxnClock::kTsc;
  std::shared_ptr<TxnSpace> s;
  const Status st = TxnSpace::open("probe", cfg, &s);
  if (st.ok()) return true;
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("use the counter clock"), std::string::npos) << st.message();
  return false;
}

TEST(TxnHistory, ZipfMixIsSnapshotIsolatedOnTheTscClock) {
  // The same mix with timestamps from the TSC: real-time order now rests on the commit wait
  // and the boundary, not on one counter.
  if (!tsc_clock_here()) return;  // the refusal was checked
  TxnConfig cfg;
  cfg.clock = TxnClock::kTsc;
  zipf_mix_checked(cfg, 10000);
}

TEST(TxnHistory, VersionBudgetKeepsSnapshotIsolation) {
  // A small version budget makes the collector abort long readers as snapshot too old; what
  // commits must still be SI, and memory stays bounded.
  TxnConfig cfg;
  cfg.gc_watermark = 8;
  cfg.max_obsolete_versions = 32;
  Workload w;
  w.keys = 16;
  w.txns_per_thread = std::max(100, static_cast<int>(5000 * scale()));
  const RunResult r = run_and_check(cfg, w);
  EXPECT_TRUE(r.check.ok) << r.check.anomaly << ": " << r.check.detail;
}

// ---- Negative controls: each planted bug must be caught.

/// Runs small contended workloads with the fault until the checker rejects one (a bounded
/// number of attempts; deterministic interleavings below do not depend on timing).
/// The controls' run: `cfg` with the fault `f`, yields between commit steps and no collector
/// (a planted read bug may read a version collection frees; committers free nothing under such
/// a fault, see TxnApi.CommittersFreeNothingUnderAPlantedReadFault), and a small contended
/// workload: 4 uniform keys, 4 threads of 500 transactions, no long readers.
std::pair<TxnConfig, Workload> control_run(TxnFaults f, TxnConfig cfg) {
  cfg.faults = f;
  cfg.faults.step_yields = 2;
  cfg.background_gc = false;
  Workload w;
  w.keys = 4;
  w.theta = 0;
  w.threads = 4;
  w.txns_per_thread = 500;
  w.long_readers = false;
  w.collector = false;
  return {cfg, w};
}

sicheck::Result caught(TxnFaults f, TxnConfig base = {}) {
  const auto [cfg, w] = control_run(f, base);
  for (int attempt = 0; attempt < 20; ++attempt) {
    RunResult r = run_and_check(cfg, w);
    if (!r.check.ok) return r.check;
  }
  return {};
}

/// Expects a control's history to be rejected, and prints what the checker said.
void expect_caught(const sicheck::Result& r) {
  EXPECT_FALSE(r.ok);
  std::printf("caught: %s: %s\n", r.anomaly.c_str(), r.detail.substr(0, 200).c_str());
}

TEST(TxnHistoryControls, SkippedValidationIsCaught) {
  TxnFaults f;
  f.skip_validation = true;
  expect_caught(caught(f));
}

TEST(TxnHistoryControls, TscSkewBeyondTheBoundaryIsCaught) {
  // Odd threads' TSCs run 10^6 cycles behind, far past the measured boundary (a few hundred
  // cycles): a transaction that begins on a slow core after a fast core's commit returned
  // reads at a start below its timestamp.
  if (!tsc_clock_here()) return;
  TxnConfig cfg;
  cfg.clock = TxnClock::kTsc;
  TxnFaults f;
  f.tsc_skew_cycles = 1000000;
  expect_caught(caught(f, cfg));
}

TEST(TxnHistoryControls, TscSkewWithinTheBoundaryPasses) {
  // The same skewed cores with a boundary twice the skew: the commit wait and the start's
  // margin cover it, so the same workload stays SI in every attempt.
  if (!tsc_clock_here()) return;
  TxnConfig base;
  base.clock = TxnClock::kTsc;
  base.tsc_boundary_cycles = 40000;
  TxnFaults f;
  f.tsc_skew_cycles = 20000;
  const auto [cfg, w] = control_run(f, base);
  // Ten attempts: with the commit wait after the install instead of before it (a reader could
  // then see a version before every clock had passed it, and a transaction beginning after that
  // reader returned could start below it), 9 of 10 runs of this test failed.
  for (int attempt = 0; attempt < 10; ++attempt) {
    const RunResult r = run_and_check(cfg, w);
    ASSERT_TRUE(r.check.ok) << r.check.anomaly << ": " << r.check.detail;
  }
}

TEST(TxnHistoryControls, DroppedVersionIsCaught) {
  TxnFaults f;
  f.drop_version = true;
  expect_caught(caught(f));
}

TEST(TxnHistoryControls, ReadLatestIsCaught) {
  TxnFaults f;
  f.read_latest = true;
  expect_caught(caught(f));
}

/// Deterministic interleaving for the two timing bugs: T1 writes x and y; at a planted point
/// inside T1's commit a reader begins (its start is >= T1's timestamp) and reads x, and after
/// T1's commit returns, it reads y. A correct commit makes the reader see both writes (it
/// waits for the install of x); the planted bugs let it see y's write but not x's.
sicheck::Result interleaved(TxnFaults f, std::string_view step, std::string_view at_key) {
  std::shared_ptr<TxnSpace> space;
  Recorder rec;
  std::vector<TxnRec> h;
  Txn reader;
  TxnRec rr;
  bool fired = false;
  f.hook = [&](std::string_view s, std::string_view key) {
    if (fired || s != step || (!at_key.empty() && key != at_key)) return;
    fired = true;
    rr = TxnRec{100, rec.stamp(), 0, false, {}};
    ASSERT_TRUE(space->begin(&reader).ok());
    List l;
    // The read of x runs on this thread: with a correct protocol it would wait forever for
    // T1's install (which this thread performs), so the controls use it only with the bugs,
    // and the positive run reads x from another thread (below).
    ASSERT_TRUE(logical_read(reader, 0, &l).ok());
    rr.ops.push_back(Op{Op::kRead, 0, l, 0});
  };
  TxnConfig cfg;
  cfg.faults = f;
  cfg.background_gc = false;
  EXPECT_TRUE(TxnSpace::open("i", cfg, &space).ok());
  TxnRec t1{1, rec.stamp(), 0, false, {}};
  Txn t;
  EXPECT_TRUE(space->begin(&t).ok());
  EXPECT_TRUE(t.put(kname('k', 0), encode({1})).ok());
  EXPECT_TRUE(t.put(kname('k', 1), encode({2})).ok());
  t1.ops = {Op{Op::kRead, 0, {}, 0}, Op{Op::kAppend, 0, {1}, 1}, Op{Op::kRead, 1, {}, 0}, Op{Op::kAppend, 1, {2}, 2}};
  CommitResult cr;
  EXPECT_TRUE(t.commit(&cr).ok());
  t1.committed = cr.outcome == TxnOutcome::kCommitted;
  t1.complete = rec.stamp();
  EXPECT_TRUE(fired);
  List l;
  EXPECT_TRUE(logical_read(reader, 1, &l).ok());
  rr.ops.push_back(Op{Op::kRead, 1, l, 0});
  EXPECT_TRUE(reader.commit(&cr).ok());
  rr.committed = true;
  rr.complete = rec.stamp();
  h = {t1, rr};
  return sicheck::check(h, {{0, {1}}, {1, {2}}});
}

TEST(TxnHistoryControls, TimestampBeforeLocksIsCaught) {
  TxnFaults f;
  f.ts_before_locks = true;
  // At "ts" the timestamp is taken but no key is locked: the reader passes x unlocked.
  const auto r = interleaved(f, "ts", "");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G-single") << r.detail;
}

TEST(TxnHistoryControls, InstallAfterUnlockIsCaught) {
  TxnFaults f;
  f.install_after_unlock = true;
  // At "unlocked" for x, x is unlocked and not installed.
  const auto r = interleaved(f, "unlocked", "k0000000");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G-single") << r.detail;
}

TEST(TxnHistoryControls, CorrectCommitPassesTheSameInterleaving) {
  // The positive run of the interleaving above: the reader begins at "ts" on another thread
  // and must wait for x's install, so its history is SI.
  std::shared_ptr<TxnSpace> space;
  Recorder rec;
  TxnRec rr{100, 0, 0, true, {}};
  std::thread th;
  std::atomic<bool> started{false};
  Txn reader;
  TxnConfig cfg;
  cfg.background_gc = false;
  cfg.faults.hook = [&](std::string_view s, std::string_view) {
    if (s != "ts") return;
    rr.invoke = rec.stamp();
    th = std::thread([&] {
      ASSERT_TRUE(space->begin(&reader).ok());
      started = true;
      List l;
      ASSERT_TRUE(logical_read(reader, 0, &l).ok());
      rr.ops.push_back(Op{Op::kRead, 0, l, 0});
    });
    while (!started.load()) std::this_thread::yield();
  };
  ASSERT_TRUE(TxnSpace::open("i", cfg, &space).ok());
  TxnRec t1{1, rec.stamp(), 0, true, {}};
  Txn t;
  ASSERT_TRUE(space->begin(&t).ok());
  ASSERT_TRUE(t.put(kname('k', 0), encode({1})).ok());
  ASSERT_TRUE(t.put(kname('k', 1), encode({2})).ok());
  t1.ops = {Op{Op::kRead, 0, {}, 0}, Op{Op::kAppend, 0, {1}, 1}, Op{Op::kRead, 1, {}, 0}, Op{Op::kAppend, 1, {2}, 2}};
  CommitResult cr;
  ASSERT_TRUE(t.commit(&cr).ok());
  t1.complete = rec.stamp();
  th.join();
  List l;
  ASSERT_TRUE(logical_read(reader, 1, &l).ok());
  rr.ops.push_back(Op{Op::kRead, 1, l, 0});
  ASSERT_TRUE(reader.commit(&cr).ok());
  rr.complete = rec.stamp();
  const auto r = sicheck::check({t1, rr}, {{0, {1}}, {1, {2}}});
  EXPECT_TRUE(r.ok) << r.anomaly << ": " << r.detail;
  EXPECT_EQ(rr.ops[0].list, List{1});
}

}  // namespace
}  // namespace duet

// Epic on the CPU: the digest's 8-txn planning example, Alg. 1 cases, the serial-equivalence
// checker over many random contended epochs (inserts, deletes with id reuse, injected aborts,
// reruns, rule breaking) and YCSB, negative controls the checker must catch, and bad input.
// Epic-CPU's device-planner path (index and plan apart from the tables, frees reported back) runs
// here with HostPlanner, the CPU twin of the GPU planner, against the checker and the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <set>

#include "batch/epic/engine.hpp"
#include "batch/epic/serial.hpp"
#include "batch/epic/tpcc_gen.hpp"
#include "batch/epic/workloads.hpp"
#include "checkers/epic_serial_checker.hpp"
#include "batch/epic/planner_compare.hpp"
#include "batch/epic/mix_gen.hpp"

namespace duet::batch::epic {
namespace {

using test::compare_state;
using test::load_mix;
using test::mix_tables;
using test::MixGen;
using test::replay_epoch;
using test::test_scale;

// ------------------------------------------------------------------ planning units
TEST(EpicPlan, DigestEightTxnExample) {
  // Record X (id 0) gets two temp writes and a curr write first; then record R (id 1) sees
  // T1:R T2:W T3:R T4:W T5:R T6:R T7:W T8:R.
  Batch b;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.add(0, {}, {{0, 0}}, {}));
  const char* ops = "RWRWRRWR";
  for (int i = 0; i < 8; ++i) {
    if (ops[i] == 'R') {
      ASSERT_TRUE(b.add(0, {{0, 1}}, {}, {}));
    } else {
      ASSERT_TRUE(b.add(0, {}, {{0, 1}}, {}));
    }
  }
  std::vector<std::uint32_t> global(b.keys.size());
  for (std::size_t i = 0; i < global.size(); ++i) global[i] = static_cast<std::uint32_t>(b.keys[i].key);
  Plan p;
  plan_cpu(b, global, &p);
  EXPECT_EQ(p.loc[0], 0u);
  EXPECT_EQ(p.loc[1], 1u);
  EXPECT_EQ(p.loc[2], kCurr);
  const std::vector<std::uint32_t> want = {kPrev, 2, 2, 3, 3, 3, kCurr, kCurr};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(p.loc[3 + i], want[i]) << "T" << i + 1;
  EXPECT_EQ(p.temp_count, 4u);
  // Copy-from locations: T2 copies PREV, T4 copies T2's slot, T7 copies T4's slot.
  EXPECT_EQ(p.copy[4], kPrev);
  EXPECT_EQ(p.copy[6], 2u);
  EXPECT_EQ(p.copy[9], 3u);
}

TEST(EpicPlan, ReadModifyWriteReadsThePreviousVersion) {
  Batch b;
  ASSERT_TRUE(b.add(0, {{0, 5}}, {{0, 5}}, {}));
  ASSERT_TRUE(b.add(0, {{0, 5}}, {{0, 5}}, {}));
  std::vector<std::uint32_t> global = {5, 5, 5, 5};
  Plan p;
  plan_cpu(b, global, &p);
  EXPECT_EQ(p.loc, (std::vector<std::uint32_t>{kPrev, 0, 0, kCurr}));
  EXPECT_EQ(p.copy[1], kPrev);
  EXPECT_EQ(p.copy[3], 0u);
}

TEST(EpicPlan, OpPacking) {
  const std::uint64_t op = pack_op(0xABCDEF01u, 0xFFFFFu, true, 0x7FFu);
  EXPECT_EQ(op_record(op), 0xABCDEF01u);
  EXPECT_EQ(op_txn(op), 0xFFFFFu);
  EXPECT_TRUE(op_is_write(op));
  EXPECT_EQ(op_index(op), 0x7FFu);
}

TEST(EpicExec, AlgorithmOneCases) {
  auto both = [](std::uint32_t e0, std::uint32_t e1) {
    return (static_cast<std::uint64_t>(e1 << 1) << 32) | (e0 << 1);
  };
  EXPECT_EQ(curr_slot(both(5, 3), 5), 0);  // slot 0 written this epoch
  EXPECT_EQ(curr_slot(both(3, 5), 5), 1);
  EXPECT_EQ(curr_slot(both(4, 3), 5), 1);  // slot 0 newer: it is prev
  EXPECT_EQ(curr_slot(both(3, 4), 5), 0);
  EXPECT_EQ(curr_slot(both(1, 0), 2), 1);  // after bulk load
  EXPECT_EQ(curr_slot(both(0, 0), 2), 0);  // never written: both invalid
  EXPECT_EQ(slot_word(with_slot_word(both(1, 2), 1, 77), 1), 77u);
  EXPECT_EQ(slot_word(with_slot_word(both(1, 2), 1, 77), 0), 2u);
}

// ------------------------------------------------------------------ the random Mix workload
// The multi-threaded CPU plan equals the sequential one bit for bit: contended Mix batches (hot
// records span the threads' ranges; some reads name missing keys, whose record bits are all
// ones) and a YCSB batch over 10^6 records. Multi-threaded index lookups give the same ids.
TEST(EpicPlan, ParallelEqualsSequential) {
  MixGen g(41);
  for (std::size_t n : {14000, 30000}) {
    Batch b;
    for (std::size_t t = 0; t < n; ++t) g.txn(&b, t);
    std::vector<std::uint32_t> gl(b.keys.size());
    for (std::size_t i = 0; i < gl.size(); ++i)
      gl[i] = i % 97 == 0 ? kInvalid : b.keys[i].table * 1000 + static_cast<std::uint32_t>(b.keys[i].key);
    for (std::size_t t = 0; t < n; ++t)  // missing keys only for reads
      for (std::uint32_t i = b.op_begin[t] + b.nreads[t]; i < b.op_begin[t + 1]; ++i)
        if (gl[i] == kInvalid) gl[i] = b.keys[i].table * 1000 + static_cast<std::uint32_t>(b.keys[i].key);
    ASSERT_GE(b.keys.size(), 65536u) << "the batch must take the parallel path";
    Plan seq, par;
    plan_cpu(b, gl, &seq);
    for (int threads : {2, 3, 4}) {
      plan_cpu(b, gl, &par, {}, threads);
      ASSERT_TRUE(par == seq) << "n " << n << " threads " << threads;
    }
    // Indexing with its lookups on 3 threads gives the same ids.
    Database one(mix_tables()), three(mix_tables());
    Indexed x1, x3;
    std::string err;
    ASSERT_TRUE(one.index(b, &x1, &err, 1)) << err;
    ASSERT_TRUE(three.index(b, &x3, &err, 3)) << err;
    ASSERT_TRUE(x1.rid == x3.rid && x1.global == x3.global && x1.table == x3.table);
  }
  YcsbConfig c = YcsbConfig::workload('F', 0.99, false);
  YcsbGenerator yg(c);
  Batch b;
  yg.generate(20000, &b);
  std::vector<std::uint32_t> gl(b.keys.size());
  for (std::size_t i = 0; i < gl.size(); ++i) gl[i] = static_cast<std::uint32_t>(b.keys[i].key);
  Plan seq, par;
  plan_cpu(b, gl, &seq);
  plan_cpu(b, gl, &par, {}, 2);
  ASSERT_TRUE(par == seq);
}

// Runs `epochs` random epochs of 1..max_size txns through an engine and the checker. Returns the
// first difference, or "".
std::string run_mix(std::uint64_t seed, int epochs, int max_size, int threads, const Faults& f, std::size_t* txns = nullptr,
                    std::shared_ptr<DevicePlanner> dev = nullptr,
                    const std::function<void(Engine<MixProcs>&)>& setup = {}, std::vector<int>* exec_threads = nullptr,
                    std::uint64_t* host_planned = nullptr, bool count_small = false) {
  Engine<MixProcs> e(mix_tables(), threads);
  if (setup) setup(e);
  e.faults() = f;
  if (dev) e.set_device_planner(dev);
  // A planted bug can leave a reader waiting on a version nobody writes; on one thread any wait
  // that outlives a short watchdog is such a wait.
  if (threads == 1) e.set_watchdog_ms(50);
  SerialStore s(mix_tables());
  if (!load_mix(e.db(), s)) return "the bulk load refused a record";
  MixGen g(seed);
  Batch pending;
  std::uint64_t tag = 0;
  for (int ep = 0; ep < epochs; ++ep) {
    Batch b;
    const int n = 1 + static_cast<int>(g.rng() % max_size);
    for (int i = 0; i < n; ++i)
      if (!g.txn(&b, tag++)) return "the batch refused a drawn txn";
    EpochOutput out;
    std::string err;
    if (!e.run_epoch(b, &out, &err)) return "run_epoch: " + err;
    if (txns) *txns += out.tag.size();
    if (exec_threads) exec_threads->push_back(out.stats.exec_threads);
    std::string d = replay_epoch<MixProcs>(s, pending, b, out);
    if (d.empty() && !e.sync(&err)) d = "sync: " + err;
    if (d.empty()) d = compare_state(e.db(), s);
    if (!d.empty()) return "epoch " + std::to_string(ep) + ": " + d;
  }
  if (host_planned) *host_planned = count_small ? e.small_epochs_on_host() : e.host_planned_epochs();
  return "";
}

TEST(EpicOracle, RandomContendedEpochsEqualSerial) {
  std::size_t txns = 0;
  const int epochs = std::max(4, static_cast<int>(60 * test_scale()));
  for (std::uint64_t seed : {1, 2, 3})
    for (int threads : {1, 4}) {
      const std::string d = run_mix(seed, epochs, 2000, threads, {}, &txns);
      ASSERT_EQ(d, "") << "seed " << seed << " threads " << threads;
    }
  RecordProperty("txns", std::to_string(txns));
  if (test_scale() >= 1) {
    EXPECT_GE(txns, 100000u);
  }
}

// The wait fallback (Engine::set_wait_fallback): with a threshold every epoch exceeds, each
// multi-threaded epoch is followed by two on the calling thread alone, then all threads again;
// results equal serial throughout. With the fallback off, every epoch uses every thread.
TEST(EpicOracle, WaitFallbackRunsOnOneThreadAndBack) {
  std::vector<int> used;
  // Forced by a threshold every epoch exceeds, with the costs per txn set: where one thread costs
  // less, the fallback runs its two epochs each time; where it costs more, the fallback ends
  // after its first epoch and the next two all-thread epochs start none.
  struct Case {
    double one_thread_cost;
    std::vector<int> threads;
  };
  for (const Case& c : {Case{1.0, {3, 1, 1, 3, 1, 1, 3, 1, 1}}, Case{4.0, {3, 1, 3, 3, 3, 1, 3, 3, 3}}}) {
    auto setup = [&c](Engine<MixProcs>& e) {
      e.set_wait_fallback(-1, 2);
      e.set_fallback_cost_for_tests([&c](int threads, double) { return threads == 1 ? c.one_thread_cost : 2.0; });
    };
    used.clear();
    ASSERT_EQ(run_mix(4, 9, 500, 3, {}, nullptr, nullptr, setup, &used), "");
    EXPECT_EQ(used, c.threads) << "one thread's cost " << c.one_thread_cost;
  }
  used.clear();
  ASSERT_EQ(run_mix(4, 4, 500, 3, {}, nullptr, nullptr, [](Engine<MixProcs>& e) { e.set_wait_fallback(-1, 0); }, &used), "");
  EXPECT_EQ(used, (std::vector<int>{3, 3, 3, 3}));
}

TEST(EpicOracle, TinyEpochs) {
  for (int threads : {1, 3}) ASSERT_EQ(run_mix(9, std::max(10, static_cast<int>(300 * test_scale())), 3, threads, {}), "");
}

// ------------------------------------------------------------------ negative controls
TEST(EpicOracle, InclusiveScanIsCaught) {
  Faults f;
  f.inclusive_scan = true;
  EXPECT_NE(run_mix(4, 5, 500, 1, f), "");
}
TEST(EpicOracle, WriteSortedBeforeItsReadIsCaught) {
  Faults f;
  f.write_before_read = true;
  EXPECT_NE(run_mix(5, 5, 500, 1, f), "");
}
TEST(EpicOracle, UnfilledAbortSlotsAreCaught) {
  Faults f;
  f.skip_abort_fill = true;
  EXPECT_NE(run_mix(6, 5, 500, 1, f), "");
}

// Writers that publish the eid before the data (the planted fault pauses 20 µs between them):
// a reader waiting on that version on another thread copies the old data.
TEST(EpicOracle, EidBeforeDataIsCaught) {
  Faults f;
  f.eid_before_data = true;
  EXPECT_NE(run_mix(7, 8, 500, 4, f), "");
}

TEST(EpicOracle, CheckerCatchesACorruptRecordAndOutcome) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  MixGen g(8);
  Batch b;
  for (int i = 0; i < 200; ++i) g.txn(&b, i);
  EpochOutput out;
  std::string err;
  ASSERT_TRUE(e.run_epoch(b, &out, &err)) << err;
  EpochOutput tampered = out;
  tampered.results.out[5 * kMaxOut + 1] ^= 1;
  SerialStore s2 = s;
  Batch pending, pending2;
  EXPECT_NE(replay_epoch<MixProcs>(s2, pending2, b, tampered), "");
  ASSERT_EQ(replay_epoch<MixProcs>(s, pending, b, out), "");
  ASSERT_EQ(compare_state(e.db(), s), "");
  TableStore& t = e.db().table(1);
  for (auto& w : t.data) w ^= 0x10;  // every version of every record
  EXPECT_NE(compare_state(e.db(), s), "");
}

// ------------------------------------------------------------------ YCSB
// With `affinity_epochs`, the count of epochs executed from per-thread queues; the wait fallback is
// then off, so that every epoch runs on every thread (on a slow sanitizer build an epoch's waits
// could otherwise move the next ones to one thread, where nothing is dealt).
std::string run_ycsb(char w, double theta, bool split, int epochs, int size, int threads, double abort_rate = 0,
                     ExecOrder order = ExecOrder::kAuto, int* affinity_epochs = nullptr,
                     std::shared_ptr<DevicePlanner> dev = nullptr) {
  YcsbConfig c = YcsbConfig::workload(w, theta, split);
  c.abort_rate = abort_rate;
  c.records = 2000;
  c.seed = 11;
  const std::vector<TableSpec> specs{ycsb_table(c)};
  Engine<YcsbProcs> e(specs, threads);
  e.set_exec_order(order);
  if (affinity_epochs) e.set_wait_fallback(0.25, 0);
  if (dev) e.set_device_planner(dev);
  SerialStore s(specs);
  const std::uint32_t words = specs[0].record_words;
  std::vector<std::uint32_t> d(words);
  for (std::uint64_t k = 0; k < specs[0].capacity; ++k) {
    for (std::uint32_t i = 0; i < words; ++i) d[i] = ycsb_initial(k, i);
    e.db().load(0, k, d.data());
    s.put(0, k, d.data());
  }
  YcsbGenerator g(c);
  Batch pending;
  std::size_t aborted = 0;
  for (int ep = 0; ep < epochs; ++ep) {
    Batch b;
    g.generate(size, &b, ep * size);
    EpochOutput out;
    std::string err;
    if (!e.run_epoch(b, &out, &err)) return err;
    if (affinity_epochs) *affinity_epochs += out.stats.exec_affinity;
    for (auto o : out.results.outcome) aborted += o == kAborted;
    std::string diff = replay_epoch<YcsbProcs>(s, pending, b, out);
    if (diff.empty()) diff = compare_state(e.db(), s);
    if (!diff.empty()) return "epoch " + std::to_string(ep) + ": " + diff;
  }
  if ((abort_rate > 0) != (aborted > 0)) return "aborted " + std::to_string(aborted) + " txns";
  return "";
}

TEST(EpicOracle, YcsbEqualsSerial) {
  const int epochs = std::max(1, static_cast<int>(3 * test_scale()));
  for (char w : {'A', 'B', 'C', 'F'})
    for (double theta : {0.0, 0.99})
      for (bool split : {false, true})
        ASSERT_EQ(run_ycsb(w, theta, split, epochs, 1000, 3), "") << w << " " << theta << " " << split;
  // The abort benchmark's work: ten read-updates per txn, θ 0.8, a quarter of the txns aborting
  // after their reads (their slots filled from the previous versions).
  for (bool split : {false, true}) ASSERT_EQ(run_ycsb('U', 0.8, split, epochs, 1000, 3, 0.25), "") << split;
}

// ------------------------------------------------------------------ piece splitting
TEST(EpicPieces, BatchKeepsATxnsPiecesTogether) {
  Batch b;
  EXPECT_FALSE(b.add_piece(0, {{0, 1}}, {}, {}));  // no txn to add a piece to
  ASSERT_TRUE(b.add(0, {{0, 1}}, {}, {}, 7, 1, 3));
  ASSERT_TRUE(b.add_piece(0, {}, {{0, 2}}, {0xFFFFFFFFu, 0, 1, 5}));
  ASSERT_TRUE(b.add_piece(0, {{0, 3}}, {}, {}));
  ASSERT_TRUE(b.add(0, {{0, 4}}, {}, {}, 8));
  EXPECT_EQ(b.size(), 4u);
  EXPECT_EQ(b.txn_count(), 2u);
  EXPECT_EQ(b.tag[2], 7u);  // a piece carries its txn's tag, attempt and partition
  EXPECT_EQ(b.attempt[2], 1u);
  EXPECT_EQ(b.part[2], 3u);
  EXPECT_FALSE(b.add_piece(0, {}, {{0, 5}, {0, 5}}, {}));  // the same write key twice, as add()
  EXPECT_EQ(b.size(), 4u);
  // Outcomes: the first piece's that is not kCommitted; outputs: sums over the pieces.
  std::vector<std::uint32_t> outcome{kCommitted, kAborted, kIllegal, kCommitted};
  std::vector<std::uint32_t> out(4 * kMaxOut);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint32_t>(i);
  out[0] = 0xFFFFFFFFu;  // sums wrap
  std::vector<std::uint32_t> fo, fv;
  fold_pieces(b, outcome, out, &fo, &fv);
  ASSERT_EQ(fo, (std::vector<std::uint32_t>{kAborted, kCommitted}));
  EXPECT_EQ(fv[0], 0xFFFFFFFFu + 4u + 8u);
  EXPECT_EQ(fv[1], 1u + 5u + 9u);
  EXPECT_EQ(fv[kMaxOut], 12u);
  b.pop_back();
  b.pop_back();
  EXPECT_EQ(b.txn_count(), 1u);
  Batch copy;
  for (std::size_t t = 0; t < b.size(); ++t) copy.add_from(b, t, b.attempt[t]);
  EXPECT_EQ(copy.piece, b.piece);
}

// append_first equals add_from txn by txn, onto an empty batch and onto one that holds txns,
// with and without pieces and partitions.
TEST(EpicBatch, AppendFirstEqualsAddFromOneByOne) {
  Batch src;
  ASSERT_TRUE(src.add(1, std::vector<Key>{{0, 5}}, std::vector<Key>{{0, 6}}, std::vector<std::uint32_t>{7}, 11));
  ASSERT_TRUE(src.add_piece(2, std::vector<Key>{{1, 8}, {1, 9}}, std::vector<Key>{}, std::vector<std::uint32_t>{}));
  ASSERT_TRUE(src.add_piece(3, std::vector<Key>{}, std::vector<Key>{{0, 10}}, std::vector<std::uint32_t>{1, 2, 3}));
  ASSERT_TRUE(src.add(4, std::vector<Key>{{0, 12}}, std::vector<Key>{}, std::vector<std::uint32_t>{4}, 12, 0, 3));
  Batch plain;  // no pieces, no partitions: the optional arrays stay short
  ASSERT_TRUE(plain.add(5, std::vector<Key>{{0, 1}}, std::vector<Key>{{0, 1}}, std::vector<std::uint32_t>{9}, 13));
  for (const Batch* o : {&src, &plain})
    for (bool nonempty : {false, true})
      for (std::size_t n = 0; n <= o->size(); ++n) {
        Batch want, got;
        if (nonempty) {
          for (Batch* x : {&want, &got}) {
            ASSERT_TRUE(x->add(6, std::vector<Key>{{2, 3}}, std::vector<Key>{{2, 4}}, std::vector<std::uint32_t>{5, 6}, 99));
          }
        }
        for (std::size_t t = 0; t < n; ++t) want.add_from(*o, t, 2);
        got.append_first(*o, n, 2);
        SCOPED_TRACE("n " + std::to_string(n) + (nonempty ? " onto a txn" : ""));
        EXPECT_EQ(got.proc, want.proc);
        EXPECT_EQ(got.op_begin, want.op_begin);
        EXPECT_EQ(got.nreads, want.nreads);
        ASSERT_EQ(got.keys.size(), want.keys.size());
        for (std::size_t k = 0; k < got.keys.size(); ++k)
          EXPECT_TRUE(got.keys[k].table == want.keys[k].table && got.keys[k].key == want.keys[k].key) << k;
        EXPECT_EQ(got.arg_begin, want.arg_begin);
        EXPECT_EQ(got.args, want.args);
        EXPECT_EQ(got.attempt, want.attempt);
        EXPECT_EQ(got.tag, want.tag);
        EXPECT_EQ(got.part, want.part);
        EXPECT_EQ(got.piece, want.piece);
      }
}

// YCSB with each op a piece of its txn (the ops that only read first), on the engine, against
// the same txns run whole and serially: every record, and each txn's folded outcome and output.
// With `reads_last` the pieces that write run first (writes_first), the negative control.
std::string run_ycsb_pieces(char w, double theta, bool split, int epochs, int size, int threads, ExecOrder order,
                            bool reads_last = false) {
  YcsbConfig c = YcsbConfig::workload(w, theta, split);
  c.records = 2000;
  c.seed = 13;
  YcsbConfig cp = c;
  cp.pieces = true;
  const std::vector<TableSpec> specs{ycsb_table(c)};
  Engine<YcsbProcs> e(specs, threads);
  e.set_exec_order(order);
  SerialStore s(specs);
  std::vector<std::uint32_t> d(specs[0].record_words);
  for (std::uint64_t k = 0; k < specs[0].capacity; ++k) {
    for (std::uint32_t i = 0; i < d.size(); ++i) d[i] = ycsb_initial(k, i);
    e.db().load(0, k, d.data());
    s.put(0, k, d.data());
  }
  YcsbGenerator gw(c), gp(cp);
  for (int ep = 0; ep < epochs; ++ep) {
    Batch whole, pieces;
    gw.generate(size, &whole, ep * size);
    gp.generate(size, &pieces, ep * size);
    if (reads_last) pieces = test::writes_first(pieces);
    if (c.read < 1 && pieces.size() <= whole.size()) return "no txn was split";
    EpochOutput out;
    std::string err;
    if (!e.run_epoch(pieces, &out, &err)) return err;
    if (out.stats.txns != whole.size() || out.stats.entries != pieces.size()) return "epoch stats count the pieces as txns";
    std::string diff = test::replay_pieces<YcsbProcs>(s, whole, pieces, out);
    if (diff.empty()) diff = compare_state(e.db(), s);
    if (!diff.empty()) return "epoch " + std::to_string(ep) + ": " + diff;
  }
  return "";
}

TEST(EpicPieces, YcsbPiecesEqualTheWholeTxnsRunSerially) {
  const int epochs = std::max(1, static_cast<int>(3 * test_scale()));
  for (char w : {'A', 'B', 'F'})
    for (double theta : {0.0, 0.99})
      for (bool split : {false, true})
        ASSERT_EQ(run_ycsb_pieces(w, theta, split, epochs, 1000, 3, ExecOrder::kAuto), "") << w << " " << theta << " " << split;
  // Queues dealt by first key put a txn's pieces on different threads.
  ASSERT_EQ(run_ycsb_pieces('F', 0.99, true, epochs, 1000, 3, ExecOrder::kPartitioned), "");
  // Aborting txns are never split (a piece may not abort): they run whole.
  YcsbConfig c = YcsbConfig::workload('U', 0.8, false);
  c.abort_rate = 0.5, c.pieces = true, c.records = 100;
  Batch b;
  YcsbGenerator(c).generate(50, &b);
  EXPECT_EQ(b.size(), 50u);
}

// A read of a record its own txn writes must see the record as it was before the txn: with the
// pieces that write moved first, it sees the txn's own write, and the check catches it.
TEST(EpicPieces, PiecesThatWriteBeforeTheReadsAreCaught) {
  EXPECT_NE(run_ycsb_pieces('A', 0.99, false, 1, 1000, 2, ExecOrder::kAuto, true), "");
  EXPECT_NE(run_ycsb_pieces('A', 0.99, true, 1, 1000, 2, ExecOrder::kAuto, true), "");
}

// ------------------------------------------------------------------ TPC-C
// NP and the full mix against the checker (1 and 4 warehouses), in either layout. Reconnaissance
// must predict every data-dependent key (no txn reruns); every procedure commits at least once;
// NewOrders roll back; deliveries free new-order ids, which later orders reuse. `affinity_epochs`
// as in run_ycsb.
std::string run_tpcc(std::uint32_t warehouses, TpccMix mix, int epochs, int max_size, int threads,
                     std::shared_ptr<DevicePlanner> dev = nullptr, TpccLayout layout = TpccLayout::kRecords,
                     ExecOrder order = ExecOrder::kAuto, int* affinity_epochs = nullptr) {
  const auto specs = tpcc_tables(warehouses, 40000, 40000, layout);
  Engine<TpccProcs> e(specs, threads);
  e.set_exec_order(order);
  if (affinity_epochs) e.set_wait_fallback(0.25, 0);  // as in run_ycsb
  if (dev) e.set_device_planner(dev);
  SerialStore s(specs);
  test::load_tpcc(warehouses, layout, s, e.db());
  TpccGenerator g(warehouses, 77 + warehouses, mix, layout);
  if (!g.error().empty()) return g.error();
  std::mt19937_64 rng(5);
  Batch pending;
  std::uint64_t tag = 0;
  std::size_t aborted = 0, delivered = 0, low_stock = 0;
  std::vector<std::size_t> committed(5);
  for (int ep = 0; ep < epochs; ++ep) {
    Batch b;
    const std::size_t n = 1 + rng() % max_size;
    g.generate(n, &b, tag);
    if (b.size() != n) return "generated " + std::to_string(b.size()) + " txns, asked " + std::to_string(n);
    tag += n;
    EpochOutput out;
    std::string err;
    if (!e.run_epoch(b, &out, &err)) return err;
    if (affinity_epochs) *affinity_epochs += out.stats.exec_affinity;
    for (std::size_t t = 0; t < b.size(); ++t) {
      const std::uint32_t o = out.results.outcome[t], p = TpccProcs::base(b.proc[t]);
      if (o == kRerun || o == kIllegal) return "txn " + std::to_string(t) + " (proc " + std::to_string(b.proc[t]) + "): outcome " + std::to_string(o);
      if ((b.proc[t] != p) != (layout == TpccLayout::kSplit)) return "txn " + std::to_string(t) + ": proc " + std::to_string(b.proc[t]) + " of the other layout";
      aborted += o == kAborted;
      if (o == kCommitted) ++committed[p];
      if (o == kCommitted && p == TpccProcs::kDeliveryProc) delivered += out.results.out[t * kMaxOut + 1] != 0;
      if (o == kCommitted && p == TpccProcs::kStockLevelProc) low_stock += out.results.out[t * kMaxOut + 1];
    }
    std::string d = replay_epoch<TpccProcs>(s, pending, b, out);
    if (d.empty() && (ep % 5 == 4 || ep + 1 == epochs)) {
      if (!e.sync(&err)) return "sync: " + err;
      d = compare_state(e.db(), s);
    }
    if (!d.empty()) return "epoch " + std::to_string(ep) + ": " + d;
  }
  if (aborted == 0 && tag > 2000) return "no NewOrder rolled back";
  const std::size_t procs = mix == TpccMix::kFull ? 5 : 2;
  for (std::size_t p = 0; p < procs && tag > 2000; ++p)
    if (committed[p] == 0) return "procedure " + std::to_string(p) + " never committed";
  if (mix == TpccMix::kFull && tag > 2000 && (delivered == 0 || low_stock == 0)) return "nothing delivered or no low stock";
  return "";
}

// Scaled-down (sanitizer) runs use 2 warehouses instead of 4: loading the tables dominates there.
std::uint32_t many_warehouses() { return test_scale() >= 0.5 ? 4 : 2; }

// TPC-C with each Payment in three pieces (TpccGenerator::set_split_payments), on the engine,
// against the same txns run whole and serially (replay_pieces), epoch by epoch: NP and the full
// mix, both layouts.
std::string run_tpcc_pieces(std::uint32_t warehouses, TpccMix mix, TpccLayout layout, int epochs, int max_size,
                            int threads) {
  const auto specs = tpcc_tables(warehouses, 40000, 40000, layout);
  Engine<TpccProcs> e(specs, threads);
  SerialStore s(specs);
  test::load_tpcc(warehouses, layout, s, e.db());
  TpccGenerator gw(warehouses, 91, mix, layout), gp(warehouses, 91, mix, layout);
  gp.set_split_payments(true);
  std::mt19937_64 rng(3);
  std::uint64_t tag = 0;
  std::size_t split = 0;
  for (int ep = 0; ep < epochs; ++ep) {
    Batch whole, pieces;
    const std::size_t n = 1 + rng() % max_size;
    gw.generate(n, &whole, tag);
    gp.generate(n, &pieces, tag);
    tag += n;
    split += pieces.size() - whole.size();
    EpochOutput out;
    std::string err;
    if (!e.run_epoch(pieces, &out, &err)) return err;
    std::string d = test::replay_pieces<TpccProcs>(s, whole, pieces, out);
    if (d.empty()) d = compare_state(e.db(), s);
    if (!d.empty()) return "epoch " + std::to_string(ep) + ": " + d;
  }
  if (split == 0) return "no Payment was split";
  return "";
}

TEST(EpicPieces, TpccPaymentPiecesEqualTheWholeTxnsRunSerially) {
  const int epochs = std::max(2, static_cast<int>(6 * test_scale()));
  for (TpccLayout layout : {TpccLayout::kSplit, TpccLayout::kRecords}) {
    ASSERT_EQ(run_tpcc_pieces(1, TpccMix::kNp, layout, epochs, 2000, 3), "");
    ASSERT_EQ(run_tpcc_pieces(2, TpccMix::kFull, layout, epochs, 2000, 3), "");
  }
}

TEST(EpicOracle, TpccNpEqualsSerial) {
  const int epochs = std::max(2, static_cast<int>(20 * test_scale()));
  ASSERT_EQ(run_tpcc(1, TpccMix::kNp, epochs, 2000, 4), "");
  ASSERT_EQ(run_tpcc(many_warehouses(), TpccMix::kNp, epochs, 2000, 3), "");
}

// ------------------------------------------------------------------ per-thread queues (ExecOrder)
// deal() on a hand-built epoch: every txn in exactly one queue, each queue in serial order, a
// txn's partition hint choosing its queue and, without one, its first key's record.
TEST(EpicExecOrder, DealKeepsEachQueueInSerialOrder) {
  const std::uint32_t n = 1500;
  std::vector<std::uint32_t> op_begin(n + 1), rid(n), loc(n, kPrev), part(n);
  std::vector<std::uint16_t> nreads(n, 1);
  for (std::uint32_t t = 0; t < n; ++t) {
    op_begin[t + 1] = t + 1;
    rid[t] = t % 7 == 0 ? kInvalid : 1000 + t * 13;
    part[t] = t % 3 == 0 ? kAnyPart : t / 100;
  }
  EpochView v;
  v.n = n, v.op_begin = op_begin.data(), v.nreads = nreads.data(), v.rid = rid.data(), v.loc = loc.data();
  v.part = part.data();
  for (int threads : {2, 3, 5}) {
    ExecQueues q;
    ASSERT_TRUE(deal(v, 0, threads, ExecOrder::kPartitioned, &q)) << threads;
    ASSERT_EQ(q.begin.size(), static_cast<std::size_t>(threads) + 1);
    ASSERT_EQ(q.begin.back(), n);
    std::vector<int> seen(n, 0);
    for (int j = 0; j < threads; ++j)
      for (std::uint32_t i = q.begin[j]; i < q.begin[j + 1]; ++i) {
        const std::uint32_t t = q.txn[i];
        if (i > q.begin[j]) {
          EXPECT_LT(q.txn[i - 1], t) << "queue " << j << " out of serial order";
        }
        const std::uint32_t key = part[t] != kAnyPart ? part[t] : rid[t] != kInvalid ? rid[t] : t;
        EXPECT_EQ(key % threads, static_cast<std::uint32_t>(j)) << "txn " << t;
        ++seen[t];
      }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(n));
    // kAuto finds no temp reads to judge by here, so it keeps serial order; so does kSerial.
    EXPECT_FALSE(deal(v, 0, threads, ExecOrder::kAuto, &q));
    EXPECT_FALSE(q.used());
    EXPECT_FALSE(deal(v, 0, threads, ExecOrder::kSerial, &q));
  }
  // Too few txns per thread: serial order even when asked.
  v.n = 300;
  ExecQueues q;
  EXPECT_FALSE(deal(v, 0, 2, ExecOrder::kPartitioned, &q));
}

// kAuto deals TPC-C with 2 warehouses on 2 threads (partition hint: the home warehouse; few temp
// reads cross warehouses) and keeps YCSB (random first keys: about half of them cross) and one
// warehouse (one queue would hold everything) in serial order; results equal serial throughout.
TEST(EpicExecOrder, AutoDealsPartitionedWorkOnly) {
  const int epochs = std::max(2, static_cast<int>(6 * test_scale()));
  int dealt = 0;
  ASSERT_EQ(run_tpcc(2, TpccMix::kNp, epochs, 2000, 2, nullptr, TpccLayout::kSplit, ExecOrder::kAuto, &dealt), "");
  EXPECT_GT(dealt, 0);
  dealt = 0;
  ASSERT_EQ(run_tpcc(1, TpccMix::kNp, epochs, 2000, 2, nullptr, TpccLayout::kSplit, ExecOrder::kAuto, &dealt), "");
  EXPECT_EQ(dealt, 0);
  dealt = 0;
  ASSERT_EQ(run_ycsb('A', 0.99, false, epochs, 2000, 2, 0, ExecOrder::kAuto, &dealt), "");
  EXPECT_EQ(dealt, 0);
}

// Queues forced on work whose dependencies cross them everywhere (YCSB θ 0.99; the random Mix
// with inserts, deletes, aborts and reruns; TPC-C's full mix on more threads than warehouses):
// every epoch finishes (a txn waits only for one that is held or next in a running queue) and
// equals serial.
TEST(EpicExecOrder, ForcedQueuesEqualSerial) {
  const int epochs = std::max(2, static_cast<int>(6 * test_scale()));
  int dealt = 0;
  ASSERT_EQ(run_ycsb('F', 0.99, true, epochs, 2000, 3, 0, ExecOrder::kPartitioned, &dealt), "");
  EXPECT_EQ(dealt, epochs);
  ASSERT_EQ(run_ycsb('U', 0.8, false, epochs, 2000, 4, 0.25, ExecOrder::kPartitioned), "");
  for (std::uint64_t seed : {21, 22}) {
    ASSERT_EQ(run_mix(seed, std::max(4, static_cast<int>(20 * test_scale())), 2000, 4, {}, nullptr, nullptr,
                      [](Engine<MixProcs>& e) { e.set_exec_order(ExecOrder::kPartitioned); }),
              "");
  }
  ASSERT_EQ(run_tpcc(2, TpccMix::kFull, epochs, 2000, 3, nullptr, TpccLayout::kSplit, ExecOrder::kPartitioned), "");
}

// Planted: each queue run last txn first. On TPC-C NP w 2 dealt by home warehouse, a queue's
// chains through its warehouse then wait on txns its own thread has not run: the watchdog fails
// the epoch ("stuck wait") instead of hanging.
TEST(EpicExecOrder, ReversedQueuesAreCaughtByTheWatchdog) {
  const auto specs = tpcc_tables(2, 40000, 40000, TpccLayout::kSplit);
  Engine<TpccProcs> e(specs, 2);
  e.set_exec_order(ExecOrder::kPartitioned);
  e.set_watchdog_ms(50);
  e.faults().reversed_queues = true;
  SerialStore s(specs);
  test::load_tpcc(2, TpccLayout::kSplit, s, e.db());
  TpccGenerator g(2, 79, TpccMix::kNp, TpccLayout::kSplit);
  ASSERT_EQ(g.error(), "");
  Batch b;
  g.generate(2000, &b, 0);
  EpochOutput out;
  std::string err;
  EXPECT_FALSE(e.run_epoch(b, &out, &err));
  EXPECT_NE(err.find("stuck wait"), std::string::npos) << err;
}

// ------------------------------------------------------------------ Epic-CPU's device-planner path
// The engine with a DevicePlanner (HostPlanner: the CPU twin of the GPU's) indexes and plans apart
// from its tables, executes from the planner's arrays, and hands the ids its deleted-bit scan
// frees back to the planner; the results and, after sync(), the tables and index equal serial.
TEST(EpicDevicePlanner, EngineEqualsSerial) {
  const int epochs = std::max(4, static_cast<int>(15 * test_scale()));
  for (int threads : {1, 4})
    ASSERT_EQ(run_mix(11, epochs, 2000, threads, {}, nullptr, std::make_shared<HostPlanner>(threads)), "")
        << "threads " << threads;
  // YCSB A, B, C and F, plain and split, at θ 0.99 and (A) 0, on the planner's path too.
  for (char w : {'A', 'B', 'C', 'F'})
    for (bool split : {false, true})
      ASSERT_EQ(run_ycsb(w, 0.99, split, 3, 1000, 3, 0, ExecOrder::kAuto, nullptr, std::make_shared<HostPlanner>(2)), "")
          << w << " split " << split;
  ASSERT_EQ(run_ycsb('A', 0.0, false, 3, 1000, 3, 0, ExecOrder::kAuto, nullptr, std::make_shared<HostPlanner>(2)), "");
  // TPC-C's load dominates under the sanitizers, whose scaled runs check the Mix and YCSB parts only.
  if (test_scale() >= 0.5) {
    ASSERT_EQ(run_tpcc(1, TpccMix::kFull, 6, 2000, 3, std::make_shared<HostPlanner>(2)), "");
    ASSERT_EQ(run_tpcc(4, TpccMix::kNp, 4, 2000, 3, std::make_shared<HostPlanner>(3)), "");
  }
}

// Epochs over the planner's cap (standing in for an epoch too big for device memory) are indexed
// and planned on the host over the synced index; the planner takes the index back at the next
// epoch that fits. Epochs of 1-2000 txns against a cap of 4000 ops alternate between the two.
// Small epochs (under set_min_device_epoch_ops) move the same way, from the other side.
TEST(EpicDevicePlanner, EpochsThePlannerCannotTakeRunOnTheHost) {
  const int epochs = 16;  // not scaled: the drawn sizes must fall on both sides of 4000 ops
  for (bool small : {false, true})
    for (int threads : {1, 3}) {
      SCOPED_TRACE(small ? "small epochs on the host" : "epochs over the cap on the host");
      auto planner = std::make_shared<HostPlanner>(threads);
      if (!small) planner->set_max_epoch_ops(4000);
      std::uint64_t on_host = 0;
      auto setup = [small](Engine<MixProcs>& e) {
        if (small) e.set_min_device_epoch_ops(4000);
      };
      ASSERT_EQ(run_mix(12, epochs, 2000, threads, {}, nullptr, planner, setup, nullptr, &on_host, small), "")
          << "threads " << threads;
      EXPECT_GT(on_host, 0u);
      EXPECT_LT(on_host, static_cast<std::uint64_t>(epochs)) << "every epoch went to the host";
    }
}

// Moving the index costs a copy each way, so small epochs stay with the planner when the indexed
// tables are large.
TEST(EpicDevicePlanner, SmallEpochsStayWithThePlannerWhenTheIndexIsLarge) {
  Engine<MixProcs> e(mix_tables(), 1);
  e.set_device_planner(std::make_shared<HostPlanner>(1));
  e.set_min_device_epoch_ops(1u << 30, 399);  // the indexed table holds 400 records
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  MixGen g(3);
  std::uint64_t tag = 0;
  for (int ep = 0; ep < 3; ++ep) {
    Batch b;
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(g.txn(&b, tag++));
    EpochOutput out;
    std::string err;
    ASSERT_TRUE(e.run_epoch(b, &out, &err)) << err;
    EXPECT_FALSE(out.stats.small_on_host);
  }
  EXPECT_EQ(e.small_epochs_on_host(), 0u);
}

// The plan comparison the GPU test runs (tests/batch/epic/planner_compare.hpp), here with the CPU
// twin as the planner: equal plans and, after frees between epochs, equal indexes. A planner that
// plants a bug (an inclusive scan) is caught.
class PlantedPlanner final : public DevicePlanner {
 public:
  bool attach(const Database& db, std::string* err) override { return inner_.attach(db, err); }
  bool index_and_plan(const Database& db, const Batch& b, DevicePlan* out, std::string* err) override {
    if (!inner_.index_and_plan(db, b, out, err)) return false;
    // Re-plan the same ids with the planted fault: rebuild the global ids from the planner's ids.
    const std::size_t m = b.keys.size();
    std::vector<std::uint32_t> global(m);
    for (std::size_t i = 0; i < m; ++i)
      global[i] = out->rid[i] == kInvalid ? kInvalid : db.table(out->table[i]).base + out->rid[i];
    Faults f;
    f.inclusive_scan = true;
    plan_cpu(b, global, &plan_, f);
    out->loc = plan_.loc.data(), out->copy = plan_.copy.data(), out->temp_count = plan_.temp_count;
    return true;
  }
  bool release(const Database& db, const std::vector<std::vector<std::uint32_t>>& f, std::string* err) override {
    return inner_.release(db, f, err);
  }
  bool sync(Database& db, std::string* err) override { return inner_.sync(db, err); }
  bool lookup(std::uint32_t t, std::uint64_t k, std::uint32_t* rid, std::string* err) override {
    return inner_.lookup(t, k, rid, err);
  }

 private:
  HostPlanner inner_;
  Plan plan_;
};

std::vector<Batch> mix_epochs(std::uint64_t seed, int epochs, int max_size) {
  MixGen g(seed);
  std::vector<Batch> out(epochs);
  std::uint64_t tag = 0;
  for (auto& b : out) {
    const int n = 1 + static_cast<int>(g.rng() % max_size);
    for (int i = 0; i < n; ++i) g.txn(&b, tag++);
  }
  return out;
}

bool load_mix_keys(Database& db) {
  SerialStore s(mix_tables());
  return load_mix(db, s);
}

TEST(EpicDevicePlanner, HostPlannerEqualsTheReference) {
  const auto epochs = mix_epochs(12, std::max(4, static_cast<int>(12 * test_scale())), 3000);
  for (int threads : {1, 3}) {
    HostPlanner h(threads);
    ASSERT_EQ(test::compare_planners(h, mix_tables(), load_mix_keys, epochs), "") << "threads " << threads;
  }
  // A table that fills up: both refuse the same epoch with the same message, nothing inserted.
  // 150 of the indexed table's 400 ids are in use after the load; 40 more, then 240 more.
  std::vector<Batch> full(2);
  for (std::uint64_t k = 1000; k < 1280; k += 40) {
    std::vector<Key> ws;
    for (std::uint64_t j = k; j < k + 40; ++j) ws.push_back({2, j});
    ASSERT_TRUE(full[k == 1000 ? 0 : 1].add(MixProcs::kRmw, {}, ws, {1, 0}));
  }
  HostPlanner h;
  ASSERT_EQ(test::compare_planners(h, mix_tables(), load_mix_keys, full), "");
  PlantedPlanner planted;
  EXPECT_NE(test::compare_planners(planted, mix_tables(), load_mix_keys, epochs), "");
}

TEST(EpicOracle, TpccFullMixEqualsSerial) {
  const int epochs = std::max(2, static_cast<int>(20 * test_scale()));
  ASSERT_EQ(run_tpcc(1, TpccMix::kFull, epochs, 2000, 4), "");
  ASSERT_EQ(run_tpcc(many_warehouses(), TpccMix::kFull, epochs, 2000, 3), "");
}

// The split layout (warehouse, district and customer one item per field) against the checker:
// NP at one warehouse, the full mix at several.
TEST(EpicOracle, TpccSplitEqualsSerial) {
  const int epochs = std::max(2, static_cast<int>(12 * test_scale()));
  ASSERT_EQ(run_tpcc(1, TpccMix::kNp, epochs, 2000, 4, nullptr, TpccLayout::kSplit), "");
  ASSERT_EQ(run_tpcc(many_warehouses(), TpccMix::kFull, epochs, 2000, 3, nullptr, TpccLayout::kSplit), "");
}

// What the split layout is for: a NewOrder reads no item that a Payment writes (in the record
// layout it reads the warehouse and district rows every Payment writes). And it is the same
// database: the same txns give the same outcomes and outputs in both layouts, and every split
// row's fields hold its row's words in the record layout.
TEST(EpicOracle, TpccSplitDecouplesNewOrderFromPayment) {
  std::vector<EpochOutput> outs(2);
  std::vector<Batch> batches(2);
  std::vector<std::unique_ptr<Engine<TpccProcs>>> engines;
  std::string err;
  for (TpccLayout layout : {TpccLayout::kRecords, TpccLayout::kSplit}) {
    const int i = layout == TpccLayout::kSplit;
    engines.push_back(std::make_unique<Engine<TpccProcs>>(tpcc_tables(1, 20000, 20000, layout), 2));
    Engine<TpccProcs>& e = *engines.back();
    tpcc_load(1, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) { e.db().load(t, k, d); }, layout);
    TpccGenerator g(1, 13, TpccMix::kFull, layout);
    for (int ep = 0; ep < 2; ++ep) {  // two epochs: the second reads what the first wrote
      Batch b;
      g.generate(3000, &b, ep * 3000);
      EpochOutput out;
      ASSERT_TRUE(e.run_epoch(b, &out, &err)) << err;
      for (std::size_t t = 0; t < b.size(); ++t) batches[i].add_from(b, t, 0);
      outs[i].results.outcome.insert(outs[i].results.outcome.end(), out.results.outcome.begin(), out.results.outcome.end());
      outs[i].results.out.insert(outs[i].results.out.end(), out.results.out.begin(), out.results.out.end());
    }
    ASSERT_TRUE(e.sync(&err)) << err;
  }
  std::set<std::pair<std::uint32_t, std::uint64_t>> paid[2], ordered[2];
  for (int i = 0; i < 2; ++i) {
    const Batch& b = batches[i];
    for (std::size_t t = 0; t < b.size(); ++t) {
      const std::uint32_t p = TpccProcs::base(b.proc[t]);
      for (std::uint32_t k = b.op_begin[t]; k < b.op_begin[t + 1]; ++k) {
        const bool read = k < b.op_begin[t] + b.nreads[t];
        if (p == TpccProcs::kPaymentProc && !read && b.keys[k].table != kHistory) paid[i].insert({b.keys[k].table, b.keys[k].key});
        if (p == TpccProcs::kNewOrderProc && read) ordered[i].insert({b.keys[k].table, b.keys[k].key});
      }
    }
  }
  auto shared = [&](int i) {
    std::size_t n = 0;
    for (const auto& k : ordered[i]) n += paid[i].count(k);
    return n;
  };
  EXPECT_GE(shared(0), 11u);  // the warehouse and its ten districts, at least
  EXPECT_EQ(shared(1), 0u);
  ASSERT_EQ(batches[0].size(), batches[1].size());
  for (std::size_t t = 0; t < batches[0].size(); ++t) {
    ASSERT_EQ(TpccProcs::base(batches[0].proc[t]), TpccProcs::base(batches[1].proc[t])) << t;
    ASSERT_EQ(outs[0].results.outcome[t], outs[1].results.outcome[t]) << t;
    for (std::uint32_t w = 0; w < kMaxOut; ++w)
      ASSERT_EQ(outs[0].results.out[t * kMaxOut + w], outs[1].results.out[t * kMaxOut + w]) << "txn " << t << " word " << w;
  }
  const Database &rows = engines[0]->db(), &fields = engines[1]->db();
  const std::uint32_t count[3] = {1, 10, 10 * kCustomersPerDistrict}, width[3] = {kWarehouseFields, kDistrictFields, kCustomerFields};
  for (std::uint32_t table : {kWarehouse, kDistrict, kCustomer})
    for (std::uint64_t r = 0; r < count[table]; ++r) {
      const std::uint32_t* row = rows.get(table, r);
      ASSERT_NE(row, nullptr) << table << " " << r;
      for (std::uint32_t f = 0; f < width[table]; ++f) {
        const std::uint32_t* field = fields.get(table, r * width[table] + f);
        ASSERT_NE(field, nullptr) << table << " " << r << " " << f;
        ASSERT_EQ(*field, row[f]) << "table " << table << " row " << r << " field " << f;
      }
    }
  for (std::size_t k = 0; k < batches[0].keys.size(); ++k) {  // every other item a txn named
    const Key key = batches[0].keys[k];
    if (key.table == kWarehouse || key.table == kDistrict || key.table == kCustomer) continue;
    const std::uint32_t *a = rows.get(key.table, key.key), *b = fields.get(key.table, key.key);
    ASSERT_EQ(a == nullptr, b == nullptr) << key.table << " " << key.key;
    if (a) {
      ASSERT_TRUE(std::equal(a, a + rows.table(key.table).spec.record_words, b)) << key.table << " " << key.key;
    }
  }
}

// Negative control for reconnaissance: a wrong prediction (an OrderStatus's line count, a
// Delivery's customer, a StockLevel's next order id) makes that txn rerun, on the engine and in
// the serial replay alike, and changes nothing else.
TEST(EpicOracle, TpccWrongPredictionsRerun) {
  const auto specs = tpcc_tables(1, 20000, 20000);
  Engine<TpccProcs> e(specs, 2);
  SerialStore s(specs);
  tpcc_load(1, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
    e.db().load(t, k, d);
    s.put(t, k, d);
  });
  TpccGenerator g(1, 5, TpccMix::kFull);
  ASSERT_EQ(g.error(), "");
  Batch pending;
  std::string err;
  for (int ep = 0; ep < 3; ++ep) {
    Batch b;
    g.generate(3000, &b, ep * 3000);
    std::vector<std::size_t> planted;
    if (ep == 2)
      for (std::size_t t = 0; t < b.size(); ++t) {
        const std::uint32_t p = b.proc[t], a = b.arg_begin[t];
        // Another customer than the order's (its line count must match its declared line keys).
        if (p == TpccProcs::kOrderStatusProc && b.args[a + 1] == 1) b.args[a] += 1, planted.push_back(t);
        if (p == TpccProcs::kDeliveryProc && b.nreads[t] > 0) b.args[a] += 1, planted.push_back(t);
        if (p == TpccProcs::kStockLevelProc) b.args[a + 1] += 1, planted.push_back(t);
      }
    EpochOutput out;
    ASSERT_TRUE(e.run_epoch(b, &out, &err)) << err;
    ASSERT_EQ(replay_epoch<TpccProcs>(s, pending, b, out), "");
    std::size_t reruns = 0;
    for (auto o : out.results.outcome) reruns += o == kRerun;
    ASSERT_EQ(reruns, planted.size());
    for (auto t : planted) EXPECT_EQ(out.results.outcome[t], kRerun) << "txn " << t << " proc " << b.proc[t];
    if (ep == 2) {
      EXPECT_GE(planted.size(), 30u);
    }
  }
  ASSERT_EQ(compare_state(e.db(), s), "");
}

// ------------------------------------------------------------------ bad input
TEST(EpicInput, BadInputIsRejectedAndNothingApplied) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  std::string err;
  EpochOutput out;
  Batch unknown_proc;
  ASSERT_TRUE(unknown_proc.add(99, {}, {{0, 1}}, {}));
  EXPECT_FALSE(e.run_epoch(unknown_proc, &out, &err));
  EXPECT_NE(err.find("unknown procedure"), std::string::npos);
  Batch unknown_table;
  ASSERT_TRUE(unknown_table.add(0, {}, {{9, 1}}, {}));
  EXPECT_FALSE(e.run_epoch(unknown_table, &out, &err));
  EXPECT_NE(err.find("unknown table"), std::string::npos);
  Batch out_of_range;
  ASSERT_TRUE(out_of_range.add(0, {{0, 64}}, {}, {}));
  EXPECT_FALSE(e.run_epoch(out_of_range, &out, &err));
  EXPECT_NE(err.find("out of range"), std::string::npos);
  Batch b;
  EXPECT_FALSE(b.add(0, {}, {{0, 1}, {0, 1}}, {}));  // a write declared twice
  EXPECT_FALSE(b.add(0, std::vector<Key>(kMaxOps + 1), {}, {}));
  EXPECT_FALSE(b.add(0, {}, std::vector<Key>(kMaxWrites + 1), {}));
  EXPECT_EQ(b.size(), 0u);
  // An indexed table with too few free ids: nothing inserted.
  Batch full;
  std::vector<Key> ws;
  for (std::uint64_t k = 1000; k < 1060; ++k) ws.push_back({2, k});
  for (int i = 0; i < 5; ++i) {
    std::vector<Key> w10(ws.begin() + i * 12, ws.begin() + i * 12 + 12);
    for (auto& k : w10) k.key += 100000;
    ASSERT_TRUE(full.add(0, {}, w10, {}));
  }
  for (std::uint64_t i = 0; i < 250; ++i) ASSERT_TRUE(full.add(0, {}, {{2, 5000 + i}}, {}));
  const std::size_t before = e.db().table(2).index.size();
  EXPECT_FALSE(e.run_epoch(full, &out, &err));
  EXPECT_NE(err.find("full"), std::string::npos);
  EXPECT_EQ(e.db().table(2).index.size(), before);
  EXPECT_EQ(compare_state(e.db(), s), "");
  // Illegal procedures: a write, then an abort.
  Batch ill;
  ASSERT_TRUE(ill.add(MixProcs::kRmw, {}, {{0, 3}}, {1, 3}));
  ASSERT_TRUE(e.run_epoch(ill, &out, &err)) << err;
  EXPECT_EQ(out.results.outcome[0], static_cast<std::uint32_t>(kIllegal));
  // A read past the declared reads, then an abort: still kIllegal (the abort does not hide the
  // broken rule), and nothing is written; the serial executor agrees.
  Batch bad_index;
  ASSERT_TRUE(bad_index.add(MixProcs::kRmw, {{0, 1}}, {{0, 4}}, {1, 5}));
  const std::uint32_t* before4 = e.db().get(0, 4);
  const std::vector<std::uint32_t> was = before4 ? std::vector<std::uint32_t>(before4, before4 + 1) : std::vector<std::uint32_t>{};
  ASSERT_TRUE(e.run_epoch(bad_index, &out, &err)) << err;
  EXPECT_EQ(out.results.outcome[0], static_cast<std::uint32_t>(kIllegal));
  const std::uint32_t* after4 = e.db().get(0, 4);
  EXPECT_EQ(after4 ? std::vector<std::uint32_t>(after4, after4 + 1) : std::vector<std::uint32_t>{}, was);
  std::vector<std::uint32_t> serial_outcome, serial_out;
  run_serial<MixProcs>(s, bad_index, &serial_outcome, &serial_out);
  EXPECT_EQ(serial_outcome[0], static_cast<std::uint32_t>(kIllegal));
}

// A record deleted in one epoch gives its id back: on a full indexed table of 4 records the
// next insert succeeds and takes the freed id, and the deleted key is gone from the index.
TEST(EpicInput, AFreedIdIsHandedOutAgain) {
  Engine<MixProcs> e({{"idx", 1, 4, true}}, 2);
  EpochOutput out;
  std::string err;
  Batch fill;
  for (std::uint64_t k : {10, 11, 12, 13}) ASSERT_TRUE(fill.add(MixProcs::kRmw, {}, {{0, k}}, {1, 0}));
  ASSERT_TRUE(e.run_epoch(fill, &out, &err)) << err;
  const std::uint32_t id11 = e.db().lookup(0, 11);
  ASSERT_NE(id11, kInvalid);
  Batch more;
  ASSERT_TRUE(more.add(MixProcs::kRmw, {}, {{0, 99}}, {1, 0}));
  EXPECT_FALSE(e.run_epoch(more, &out, &err)) << "the table is full";
  Batch del;
  ASSERT_TRUE(del.add(MixProcs::kDelete, {}, {{0, 11}}, {1, 0}));
  ASSERT_TRUE(e.run_epoch(del, &out, &err)) << err;
  EXPECT_EQ(e.db().lookup(0, 11), kInvalid);
  ASSERT_TRUE(e.run_epoch(more, &out, &err)) << err;
  EXPECT_EQ(out.results.outcome[0], static_cast<std::uint32_t>(kCommitted));
  EXPECT_EQ(e.db().lookup(0, 99), id11) << "the insert took the freed id";
  EXPECT_NE(e.db().get(0, 99), nullptr);
  EXPECT_EQ(e.db().get(0, 11), nullptr);
}

TEST(EpicInput, DatabaseRejectsBadTables) {
  Database zero({{"z", 0, 10, false}});
  EXPECT_NE(zero.error(), "");
  Database huge({{"a", 1, 0xF0000000u, false}, {"b", 1, 0x20000000u, false}});
  EXPECT_NE(huge.error(), "");
}

}  // namespace
}  // namespace duet::batch::epic

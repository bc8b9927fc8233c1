// The public Epic API (duet::EpicDatabase, include/duet/batch.hpp): opening checks its
// configuration; bulk load before the first submission only; txns drawn by the Mix generator,
// submitted through spans, equal serial execution in submission order, record by record; reads
// see the last completed epoch; each procedure set is the one chosen.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "batch/epic/gpu.hpp"
#include "batch/epic/mix_gen.hpp"
#include "batch/epic/tpcc.hpp"
#include "duet/batch.hpp"

namespace duet {
namespace {

using batch::epic::MixProcs;
using batch::epic::SerialStore;
using batch::epic::test::MixGen;
using batch::epic::test::MixTxn;


/// A configuration of procedure set `p` over `tables`, `threads` executing threads and epochs of
/// `epoch_size` txns; the rest default.
EpicConfig config_of(EpicProcedures p, std::vector<EpicTable> tables, unsigned threads, std::size_t epoch_size) {
  EpicConfig c;
  c.procedures = p;
  c.tables = std::move(tables);
  c.threads = threads;
  c.epoch_size = epoch_size;
  return c;
}

TEST(EpicDatabase, OpenRefusesBadConfigurations) {
  std::unique_ptr<EpicDatabase> db;
  EpicConfig c;
  EXPECT_EQ(EpicDatabase::open(c, &db).code(), StatusCode::kInvalidArgument) << "no tables";
  c.tables = {{"t", 0, 10, false}};
  EXPECT_EQ(EpicDatabase::open(c, &db).code(), StatusCode::kInvalidArgument) << "no words";
  c.tables = {{"t", 1, 0, false}};
  EXPECT_EQ(EpicDatabase::open(c, &db).code(), StatusCode::kInvalidArgument) << "no records";
  c.tables = {{"a", 1, 0x80000000u, false}, {"b", 1, 0x80000000u, false}};
  EXPECT_EQ(EpicDatabase::open(c, &db).code(), StatusCode::kInvalidArgument) << "2^32 records";
  c.tables = {{"t", 1, 10, false}};
  c.threads = 65;
  EXPECT_EQ(EpicDatabase::open(c, &db).code(), StatusCode::kInvalidArgument) << "threads";
  EXPECT_EQ(db, nullptr);
  EXPECT_EQ(EpicDatabase::open(c, nullptr).code(), StatusCode::kInvalidArgument);
}

constexpr int kMixTxns = 1500;
constexpr std::size_t kMixEpochTxns = 40;

// The op counts (declared keys) of the epochs mix_equals_serial's txns form: every epoch closes
// at kMixEpochTxns txns (its wait is too long to close one earlier), the last at flush().
std::vector<std::uint64_t> mix_epoch_ops() {
  MixGen g(5);
  std::vector<std::uint64_t> ops;
  for (int i = 0; i < kMixTxns; ++i) {
    if (i % kMixEpochTxns == 0) ops.push_back(0);
    const MixTxn x = g.draw();
    ops.back() += x.reads.size() + x.writes.size();
  }
  return ops;
}

// Submits 1500 Mix txns (epochs of 40) to a database opened with `placement` and compares every
// result and every record with serial execution in submission order; *stats gets its stats.
void mix_equals_serial(EpicPlacement placement, std::uint64_t max_device_epoch_ops, EpicStats* stats,
                       std::uint64_t min_device_epoch_ops = 0) {
  EpicConfig c;
  c.procedures = EpicProcedures::kMix;
  c.tables = batch::epic::test::mix_tables();  // the engine's TableSpec is EpicTable
  c.threads = 2;
  c.epoch_size = kMixEpochTxns;
  c.epoch_max_wait_us = 60'000'000;  // epochs close at their size only: mix_epoch_ops() knows them
  c.placement = placement;
  c.max_device_epoch_ops = max_device_epoch_ops;
  c.min_device_epoch_ops = min_device_epoch_ops;
  c.place_by_contention = false;  // the epochs' sides are the tests' to count (exec_side_test.cpp tests the choice)
  std::unique_ptr<EpicDatabase> db;
  ASSERT_TRUE(EpicDatabase::open(c, &db).ok());
  // Bulk load: the same records into the database and the serial store.
  SerialStore s(batch::epic::test::mix_tables());
  batch::epic::Database shadow(batch::epic::test::mix_tables());
  ASSERT_TRUE(batch::epic::test::load_mix(shadow, s));
  for (std::uint32_t t = 0; t < 3; ++t)
    for (std::uint64_t k = 0; k < 300; ++k)
      if (const std::uint32_t* r = s.get(t, k)) {
        ASSERT_TRUE(db->load(t, k, std::span<const std::uint32_t>(r, c.tables[t].record_words)).ok());
      }
  const std::uint32_t rec[3] = {1, 2, 3};
  EXPECT_EQ(db->load(9, 0, rec).code(), StatusCode::kInvalidArgument) << "unknown table";
  EXPECT_EQ(db->load(2, 0, std::span<const std::uint32_t>(rec, 2)).code(), StatusCode::kInvalidArgument) << "length";
  EXPECT_EQ(db->load(0, 64, std::span<const std::uint32_t>(rec, 1)).code(), StatusCode::kInvalidArgument) << "range";

  MixGen g(5);
  batch::epic::Batch serial_order;
  // Even txns get a future, odd ones a callback (run on the epoch thread; flush() orders it
  // before the reads below).
  std::vector<std::future<EpicTxnResult>> fs;
  const int n = kMixTxns;
  std::vector<EpicTxnResult> called(n);
  std::vector<int> calls(n, 0);
  for (int i = 0; i < n; ++i) {
    MixTxn x = g.draw();
    x.args[1] = x.args[1] == 2 ? 0 : x.args[1];  // no reruns: the serial order is submission order
    ASSERT_TRUE(serial_order.add(x.proc, x.reads, x.writes, x.args, i));
    const std::vector<EpicKey>& r = x.reads;  // batch::epic::Key is EpicKey
    const std::vector<EpicKey>& w = x.writes;
    if (i % 2 == 0) {
      fs.push_back(db->submit(x.proc, r, w, x.args));
    } else {
      fs.emplace_back();
      db->submit(x.proc, r, w, x.args, [&called, &calls, i](EpicTxnResult&& res) {
        called[i] = std::move(res);
        ++calls[i];
      });
    }
  }
  EXPECT_EQ(db->load(0, 1, std::span<const std::uint32_t>(rec, 1)).code(), StatusCode::kInvalidArgument)
      << "load after a submission";
  db->flush();
  std::vector<std::uint32_t> outcome, out;
  batch::epic::run_serial<MixProcs>(s, serial_order, &outcome, &out);
  for (int i = 0; i < n; ++i) {
    if (i % 2) {
      ASSERT_EQ(calls[i], 1) << "txn " << i;
    }
    const EpicTxnResult r = i % 2 ? called[i] : fs[i].get();
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(static_cast<std::uint32_t>(r.outcome), outcome[i]) << "txn " << i;
    for (int k = 0; k < 4; ++k) ASSERT_EQ(r.out[k], out[i * 4 + k]) << "txn " << i << " word " << k;
    EXPECT_EQ(r.attempts, 1u);
  }
  for (std::uint32_t t = 0; t < 3; ++t)
    for (std::uint64_t k = 0; k < 300; ++k) {
      std::vector<std::uint32_t> got;
      const Status st = db->read(t, k, &got);
      const std::uint32_t* want = s.get(t, k);
      if (t < 2 && k >= c.tables[t].capacity) {
        EXPECT_EQ(st.code(), want ? StatusCode::kOk : StatusCode::kNotFound);
        continue;
      }
      if (!want) {
        ASSERT_EQ(st.code(), StatusCode::kNotFound) << "table " << t << " key " << k;
        continue;
      }
      ASSERT_TRUE(st.ok()) << "table " << t << " key " << k << ": " << st.message();
      ASSERT_EQ(got, std::vector<std::uint32_t>(want, want + c.tables[t].record_words)) << "table " << t << " key " << k;
    }
  std::vector<std::uint32_t> got;
  EXPECT_EQ(db->read(7, 0, &got).code(), StatusCode::kInvalidArgument);
  const EpicStats st = db->stats();
  EXPECT_EQ(st.txns, static_cast<std::uint64_t>(n));
  EXPECT_GE(st.epochs, static_cast<std::uint64_t>(n / 40));
  *stats = st;
}

// Every placement gives serial execution's results: kCpu; kAuto, which takes the GPU planner
// where a GPU is usable (the GPU machine runs this suite too) and the CPU twin elsewhere; and
// kGpuTwin, the device-planner path (the index lives with the planner; reads of indexed keys ask
// it), every epoch on the planner.
TEST(EpicDatabase, MixTxnsEqualSerialExecutionInSubmissionOrderInEveryPlacement) {
  std::string why;
  const EpicPlacement auto_gets = batch::epic::gpu_available(&why) ? EpicPlacement::kGpu : EpicPlacement::kCpu;
  for (auto [asked, got] : {std::pair{EpicPlacement::kCpu, EpicPlacement::kCpu}, std::pair{EpicPlacement::kAuto, auto_gets},
                            std::pair{EpicPlacement::kGpuTwin, EpicPlacement::kGpuTwin}}) {
    SCOPED_TRACE(epic_placement_name(asked));
    EpicStats st;
    mix_equals_serial(asked, 0, &st);
    EXPECT_EQ(st.placement, got);
    EXPECT_EQ(st.host_planned_epochs, 0u);
    EXPECT_EQ(st.small_epochs_on_host, 0u);
    EXPECT_EQ(st.device_epochs, 0u);
  }
}

// The placements that execute on a device: the twin everywhere, the GPU where one is usable.
std::vector<EpicPlacement> device_exec_placements() {
  std::string why;
  std::vector<EpicPlacement> ps = {EpicPlacement::kGpuExecTwin};
  if (batch::epic::gpu_available(&why)) ps.push_back(EpicPlacement::kGpuExec);
  return ps;
}

// A Mix database over `tables` on 2 threads, epochs of 1000 txns, placement p, with every epoch
// that fits on the device (no small-epoch rule, no cost model: the tests count the sides); null
// (and a failure) when it does not open.
std::unique_ptr<EpicDatabase> open_device_exec(std::vector<EpicTable> tables, EpicPlacement p) {
  EpicConfig c = config_of(EpicProcedures::kMix, std::move(tables), 2, 1000);
  c.placement = p;
  c.min_device_epoch_ops = 0;
  c.place_by_contention = false;
  std::unique_ptr<EpicDatabase> db;
  const Status s = EpicDatabase::open(c, &db);
  EXPECT_TRUE(s.ok()) << s.message();
  return db;
}

// Execution on the device (kGpuExecTwin: a second CPU engine holds the "device" tables; kGpuExec
// on a machine with a GPU): every epoch runs there, the tables go up once after bulk load and
// never come back (the reads after the last epoch read the device's records); the results and
// every record are serial execution's.
TEST(EpicDatabase, MixTxnsEqualSerialExecutionWithEveryEpochExecutedOnTheDevice) {
  for (EpicPlacement p : device_exec_placements()) {
    SCOPED_TRACE(epic_placement_name(p));
    EpicStats st;
    mix_equals_serial(p, 0, &st);
    EXPECT_EQ(st.placement, p);
    EXPECT_EQ(st.device_epochs, st.epochs);
    EXPECT_EQ(st.host_planned_epochs, 0u);
    EXPECT_EQ(st.table_uploads, 1u);
    EXPECT_EQ(st.table_downloads, 0u) << "reads take one record from the device, not the tables";
  }
}

// Epochs the planner cannot take (here: over its op cap, as an epoch too big for device memory
// would be) are indexed and planned on the host over the synced index, and the planner takes the
// index back at the next epoch that fits; the results stay serial execution's. On a GPU the
// real runner does the same.
TEST(EpicDatabase, EpochsTooBigForTheDevicePlannerRunOnTheHost) {
  std::string why;
  std::vector<EpicPlacement> ps = {EpicPlacement::kGpuTwin, EpicPlacement::kGpuExecTwin};
  if (batch::epic::gpu_available(&why)) ps.insert(ps.end(), {EpicPlacement::kGpu, EpicPlacement::kGpuExec});
  // The cap is the median epoch's op count, so the epochs alternate between the two sides; the
  // counts are known in advance (the epochs close at their size, not on a timer).
  std::vector<std::uint64_t> ops = mix_epoch_ops();
  std::sort(ops.begin(), ops.end());
  const std::uint64_t median = ops[ops.size() / 2];
  const auto over = static_cast<std::uint64_t>(std::count_if(ops.begin(), ops.end(), [&](auto o) { return o > median; }));
  ASSERT_GT(over, 0u) << "the generated epochs all have the same op count";
  for (EpicPlacement p : ps) {
    SCOPED_TRACE(epic_placement_name(p));
    EpicStats st;
    mix_equals_serial(p, median, &st);
    EXPECT_EQ(st.epochs, ops.size());
    EXPECT_EQ(st.host_planned_epochs, over) << "the epochs over the cap, and only they, plan on the host";
    EXPECT_EQ(st.small_epochs_on_host, 0u);
    const bool exec = p == EpicPlacement::kGpuExecTwin || p == EpicPlacement::kGpuExec;
    if (exec) {
      // Each move copies the tables: up before a device epoch after host ones, back before a
      // host epoch after device ones (and once for the final reads, unless a host epoch ended).
      EXPECT_EQ(st.device_epochs, ops.size() - over);
      EXPECT_GE(st.table_uploads, 2u) << "the epochs alternate, so the tables went up more than once";
      EXPECT_LE(st.table_uploads, st.table_downloads + 1);
      EXPECT_GE(st.table_uploads + 1, st.table_downloads);
    }
    // Small epochs (here: at most the median) go to the host the same way.
    mix_equals_serial(p, 0, &st, median + 1);
    EXPECT_EQ(st.small_epochs_on_host, ops.size() - over);
    EXPECT_EQ(st.host_planned_epochs, 0u);
    if (exec) {
      EXPECT_EQ(st.device_epochs, over);
    }
  }
  EpicConfig c;
  c.tables = {{"t", 1, 10, false}};
  c.placement = EpicPlacement::kGpu;
  std::unique_ptr<EpicDatabase> db;
  if (!batch::epic::gpu_available(&why)) {
    for (EpicPlacement p : {EpicPlacement::kGpu, EpicPlacement::kGpuExec}) {
      c.placement = p;
      const Status s = EpicDatabase::open(c, &db);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << epic_placement_name(p) << " without a GPU";
      EXPECT_NE(s.message().find("no usable GPU"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(epic_placement_name(p)), std::string::npos) << s.message();
    }
  }
}

// With the tables on the device, a read after an epoch takes the record from the device (no
// copy of the tables) and sees every write committed so far; the tables never move. Each of 12
// epochs adds to one record; reads after each flush equal the running sum, and a key never
// written stays absent.
TEST(EpicDatabase, ReadsBetweenDeviceEpochsSeeEveryCommittedWrite) {
  for (EpicPlacement p : device_exec_placements()) {
    SCOPED_TRACE(epic_placement_name(p));
    std::unique_ptr<EpicDatabase> db = open_device_exec({{"t", 1, 16, false}}, p);
    ASSERT_NE(db, nullptr);
    const std::uint32_t seven = 7;
    ASSERT_TRUE(db->load(0, 3, std::span<const std::uint32_t>(&seven, 1)).ok());
    SerialStore s({{"t", 1, 16, false}});
    s.put(0, 3, &seven);
    const EpicKey key{0, 3};
    for (std::uint32_t e = 0; e < 12; ++e) {
      const std::vector<std::uint32_t> args = {e + 1, 0};  // Mix read-modify-write
      const std::vector<EpicKey> k = {key};
      std::future<EpicTxnResult> f = db->submit(0, k, k, args);
      db->flush();
      ASSERT_TRUE(f.get().status.ok());
      batch::epic::Batch one;
      ASSERT_TRUE(one.add(0, k, k, args, e));
      std::vector<std::uint32_t> outcome, out;
      batch::epic::run_serial<MixProcs>(s, one, &outcome, &out);
      for (int r = 0; r < 2; ++r) {
        std::vector<std::uint32_t> got;
        ASSERT_TRUE(db->read(0, 3, &got).ok());
        ASSERT_EQ(got, std::vector<std::uint32_t>{*s.get(0, 3)}) << "epoch " << e;
      }
      std::vector<std::uint32_t> none;
      EXPECT_EQ(db->read(0, 5, &none).code(), StatusCode::kNotFound);
    }
    const EpicStats st = db->stats();
    EXPECT_EQ(st.device_epochs, 12u);
    EXPECT_EQ(st.table_uploads, 1u);
    EXPECT_EQ(st.table_downloads, 0u) << "reads take one record from the device, not the tables";
  }
}

// An epoch on the device whose inserts do not fit an indexed table fails alone: its txns get
// ResourceExhausted naming the full table, nothing of it is applied, and the database goes on
// (the executor's state was untouched: on the GPU the full table is found before any insert).
// The next epochs insert what fits and read it back; then records are deleted, their ids reused.
TEST(EpicDatabase, AnIndexedTableFullOnTheDeviceFailsThatEpochAlone) {
  for (EpicPlacement p : device_exec_placements()) {
    SCOPED_TRACE(epic_placement_name(p));
    std::unique_ptr<EpicDatabase> db = open_device_exec({{"idx", 1, 4, true}}, p);
    ASSERT_NE(db, nullptr);
    auto insert = [&](std::uint64_t key) {
      const std::vector<EpicKey> w = {EpicKey{0, key}};
      return db->submit(MixProcs::kRmw, {}, w, std::vector<std::uint32_t>{static_cast<std::uint32_t>(key), 0});
    };
    std::vector<std::future<EpicTxnResult>> fs;
    for (std::uint64_t k = 100; k < 106; ++k) fs.push_back(insert(k));  // six new keys, four ids
    db->flush();
    for (auto& f : fs) {
      const EpicTxnResult r = f.get();
      ASSERT_EQ(r.status.code(), StatusCode::kResourceExhausted) << r.status.message();
      EXPECT_NE(r.status.message().find("idx is full"), std::string::npos) << r.status.message();
    }
    std::vector<std::uint32_t> rec;
    EXPECT_EQ(db->read(0, 100, &rec).code(), StatusCode::kNotFound) << "nothing of the failed epoch applied";
    fs.clear();
    for (std::uint64_t k = 200; k < 204; ++k) fs.push_back(insert(k));
    db->flush();
    for (auto& f : fs) ASSERT_TRUE(f.get().status.ok());
    for (std::uint64_t k = 200; k < 204; ++k) {
      ASSERT_TRUE(db->read(0, k, &rec).ok()) << k;
      EXPECT_EQ(rec.size(), 1u);
    }
    // Delete two (kDelete removes its even writes), then two new keys take their ids.
    const std::vector<EpicKey> del = {EpicKey{0, 200}, EpicKey{0, 201}, EpicKey{0, 202}};
    std::future<EpicTxnResult> d = db->submit(MixProcs::kDelete, {}, del, std::vector<std::uint32_t>{1, 0});
    db->flush();
    ASSERT_TRUE(d.get().status.ok());
    EXPECT_EQ(db->read(0, 200, &rec).code(), StatusCode::kNotFound);
    EXPECT_TRUE(db->read(0, 201, &rec).ok());
    EXPECT_EQ(db->read(0, 202, &rec).code(), StatusCode::kNotFound);
    fs.clear();
    for (std::uint64_t k = 300; k < 302; ++k) fs.push_back(insert(k));
    db->flush();
    for (auto& f : fs) ASSERT_TRUE(f.get().status.ok()) << "freed ids are reused";
    for (std::uint64_t k : {201, 203, 300, 301}) EXPECT_TRUE(db->read(0, k, &rec).ok()) << k;
    EXPECT_EQ(db->stats().failed_epochs, 1u);
  }
}

// The waiting-free read: with no epoch running it answers on the calling thread before it
// returns; while an epoch runs (held here by a txn's callback, which runs inside the epoch) it
// returns at once and answers on the epoch thread once that epoch has ended, with its writes.
TEST(EpicDatabase, AReadDuringAnEpochIsAnsweredWhenTheEpochEnds) {
  const EpicConfig c = config_of(EpicProcedures::kMix, {{"t", 1, 16, false}}, 1, 1000);
  std::unique_ptr<EpicDatabase> db;
  ASSERT_TRUE(EpicDatabase::open(c, &db).ok());
  const std::uint32_t one = 7;
  ASSERT_TRUE(db->load(0, 3, std::span<const std::uint32_t>(&one, 1)).ok());
  bool answered = false;
  db->read(0, 3, [&](Status st, std::vector<std::uint32_t>&& rec) {
    answered = st.ok() && rec == std::vector<std::uint32_t>{7};
  });
  EXPECT_TRUE(answered) << "no epoch ran: the read answers before it returns";

  std::promise<void> entered, release;
  std::shared_future<void> go = release.get_future().share();
  const EpicKey key{0, 3};
  const std::uint32_t args[2] = {5, 0};  // Mix read-modify-write: the record becomes a function of 7 and 5
  db->submit(0, std::span<const EpicKey>(&key, 1), std::span<const EpicKey>(&key, 1), args,
             [&entered, go](EpicTxnResult&&) {
               entered.set_value();
               go.wait();  // holds the epoch open
             });
  db->flush([] {});
  entered.get_future().wait();
  std::promise<std::vector<std::uint32_t>> got;
  std::atomic<bool> called{false};
  db->read(0, 3, [&](Status st, std::vector<std::uint32_t>&& rec) {
    called = true;
    EXPECT_TRUE(st.ok()) << st.message();
    got.set_value(std::move(rec));
  });
  EXPECT_FALSE(called.load()) << "the read waited for the running epoch on the calling thread";
  release.set_value();
  const std::vector<std::uint32_t> after = got.get_future().get();
  std::vector<std::uint32_t> now;
  ASSERT_TRUE(db->read(0, 3, &now).ok());
  EXPECT_EQ(after, now);
  EXPECT_NE(after, std::vector<std::uint32_t>{7}) << "the read did not see the epoch's write";
}

TEST(EpicDatabase, SettingsParseAndPrintBack) {
  std::vector<EpicTable> t;
  ASSERT_TRUE(parse_epic_tables("small:1:64,idx:3:400:indexed", &t).ok());
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].name, "idx");
  EXPECT_EQ(t[1].record_words, 3u);
  EXPECT_EQ(t[1].capacity, 400u);
  EXPECT_TRUE(t[1].indexed);
  EXPECT_FALSE(t[0].indexed);
  EXPECT_EQ(format_epic_tables(t), "small:1:64,idx:3:400:indexed");
  ASSERT_TRUE(parse_epic_tables("", &t).ok());
  EXPECT_TRUE(t.empty());
  for (const char* bad : {"a", "a:1", "a:0:5", "a:1:0", ":1:5", "a:x:5", "a:1:5:sorted", "a:1:5,a:2:5", "a:1:5,"})
    EXPECT_EQ(parse_epic_tables(bad, &t).code(), StatusCode::kInvalidArgument) << bad;
  EpicProcedures p;
  ASSERT_TRUE(parse_epic_procedures("TPCC", &p).ok());
  EXPECT_EQ(p, EpicProcedures::kTpcc);
  EXPECT_STREQ(epic_procedures_name(p), "tpcc");
  EXPECT_EQ(parse_epic_procedures("nope", &p).code(), StatusCode::kInvalidArgument);
  EpicExecOrder eo;
  for (EpicExecOrder want : {EpicExecOrder::kAuto, EpicExecOrder::kSerial, EpicExecOrder::kPartitioned}) {
    ASSERT_TRUE(parse_epic_exec_order(epic_exec_order_name(want), &eo).ok());
    EXPECT_EQ(eo, want);
  }
  ASSERT_TRUE(parse_epic_exec_order("Partitioned", &eo).ok());
  EXPECT_EQ(eo, EpicExecOrder::kPartitioned);
  EXPECT_EQ(parse_epic_exec_order("random", &eo).code(), StatusCode::kInvalidArgument);
  EpicPlacement pl;
  for (EpicPlacement want : {EpicPlacement::kAuto, EpicPlacement::kCpu, EpicPlacement::kGpu, EpicPlacement::kGpuTwin,
                             EpicPlacement::kGpuExec, EpicPlacement::kGpuExecTwin}) {
    ASSERT_TRUE(parse_epic_placement(epic_placement_name(want), &pl).ok());
    EXPECT_EQ(pl, want);
  }
  ASSERT_TRUE(parse_epic_placement("GPU", &pl).ok());
  EXPECT_EQ(pl, EpicPlacement::kGpu);
  const Status bad = parse_epic_placement("tpu", &pl);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("auto, cpu, gpu, gpu-twin, gpu-exec, gpu-exec-twin"), std::string::npos)
      << bad.message();
}

// The execution order setting: 2,048 Mix txns in epochs of 1,024 on 2 threads equal serial
// execution in every order; `partitioned` runs the first epoch from per-thread queues, `serial`
// none, and `auto` none either (the Mix's random first keys cross queues about half the time).
// Only the first epoch is certain to run on both threads: on a slow sanitizer build its waits
// can start the wait fallback, and the second then runs on one thread, where nothing is dealt.
TEST(EpicDatabase, ExecOrderSettingDealsOrNotAndResultsEqualSerial) {
  for (auto [order, queued] : {std::pair{EpicExecOrder::kPartitioned, true}, std::pair{EpicExecOrder::kSerial, false},
                               std::pair{EpicExecOrder::kAuto, false}}) {
    SCOPED_TRACE(epic_exec_order_name(order));
    EpicConfig c;
    c.procedures = EpicProcedures::kMix;
    c.tables = batch::epic::test::mix_tables();
    c.threads = 2;
    c.placement = EpicPlacement::kCpu;
    c.exec_order = order;
    c.epoch_size = 1024;
    c.epoch_max_wait_us = 60'000'000;  // epochs close at their size only
    std::unique_ptr<EpicDatabase> db;
    ASSERT_TRUE(EpicDatabase::open(c, &db).ok());
    SerialStore s(batch::epic::test::mix_tables());
    MixGen g(11);
    batch::epic::Batch serial_order;
    std::vector<std::future<EpicTxnResult>> fs;
    for (int i = 0; i < 2048; ++i) {
      MixTxn x = g.draw();
      x.args[1] = x.args[1] == 2 ? 0 : x.args[1];  // no reruns: the serial order is submission order
      ASSERT_TRUE(serial_order.add(x.proc, x.reads, x.writes, x.args, i));
      fs.push_back(db->submit(x.proc, x.reads, x.writes, x.args));
    }
    db->flush();
    std::vector<std::uint32_t> outcome, out;
    batch::epic::run_serial<MixProcs>(s, serial_order, &outcome, &out);
    for (int i = 0; i < 2048; ++i) {
      const EpicTxnResult r = fs[i].get();
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      ASSERT_EQ(static_cast<std::uint32_t>(r.outcome), outcome[i]) << "txn " << i;
      for (int k = 0; k < 4; ++k) ASSERT_EQ(r.out[k], out[i * 4 + k]) << "txn " << i << " word " << k;
    }
    for (std::uint32_t t = 0; t < 3; ++t)
      for (std::uint64_t k = 0; k < c.tables[t].capacity && k < 300; ++k) {
        std::vector<std::uint32_t> got;
        const std::uint32_t* want = s.get(t, k);
        const Status st = db->read(t, k, &got);
        ASSERT_EQ(st.ok(), want != nullptr) << "table " << t << " key " << k;
        if (want) {
          ASSERT_EQ(got, std::vector<std::uint32_t>(want, want + c.tables[t].record_words)) << "table " << t << " key " << k;
        }
      }
    const EpicStats st = db->stats();
    EXPECT_EQ(st.epochs, 2u);
    if (queued) {
      EXPECT_GE(st.queued_epochs, 1u);
    } else {
      EXPECT_EQ(st.queued_epochs, 0u);
    }
  }
}

TEST(EpicDatabase, EachProcedureSetKnowsItsOwnProcedures) {
  struct Case {
    EpicProcedures set;
    std::uint32_t known, unknown;
  };
  for (const Case& k : {Case{EpicProcedures::kMix, 0, 3}, Case{EpicProcedures::kYcsb, 0, 1}, Case{EpicProcedures::kTpcc, 6, 7}}) {
    const EpicConfig c = config_of(k.set, {{"t", 4, 16, false}}, 1, EpicConfig{}.epoch_size);
    std::unique_ptr<EpicDatabase> db;
    ASSERT_TRUE(EpicDatabase::open(c, &db).ok());
    const EpicKey key{0, 1};
    auto bad = db->submit(k.unknown, {}, std::span<const EpicKey>(&key, 1), {});
    EXPECT_EQ(bad.get().status.code(), StatusCode::kInvalidArgument) << "set " << static_cast<int>(k.set);
    // A refused callback runs before submit returns, on this thread.
    StatusCode code = StatusCode::kOk;
    db->submit(k.unknown, {}, std::span<const EpicKey>(&key, 1), {}, [&code](EpicTxnResult&& r) { code = r.status.code(); });
    EXPECT_EQ(code, StatusCode::kInvalidArgument);
    EXPECT_EQ(db->stats().refused, 2u);
  }
}

// A call whose key or arg counts do not fit its procedure is refused at submission with a
// reason naming the procedure and both shapes, and nothing of it applies; a call that fits runs.
TEST(EpicDatabase, CallsOfTheWrongShapeAreRefusedNamingTheShape) {
  using batch::epic::TpccProcs;
  const EpicConfig c = config_of(EpicProcedures::kTpcc, {{"t", 4, 16, false}}, 1, EpicConfig{}.epoch_size);
  std::unique_ptr<EpicDatabase> db;
  ASSERT_TRUE(EpicDatabase::open(c, &db).ok());
  const std::uint32_t rec[4] = {100, 200, 300, 400};
  for (std::uint64_t k = 0; k < 16; ++k) ASSERT_TRUE(db->load(0, k, rec).ok());
  const std::vector<EpicKey> k0 = {}, k1 = {{0, 1}}, k3 = {{0, 1}, {0, 2}, {0, 3}}, k4 = {{0, 4}, {0, 5}, {0, 6}, {0, 7}};
  const std::vector<std::uint32_t> amount = {5}, none = {};
  struct Bad {
    std::uint32_t proc;
    const std::vector<EpicKey>& reads;
    const std::vector<EpicKey>& writes;
    const std::vector<std::uint32_t>& args;
    const char* says;
  };
  for (const Bad& b : {Bad{TpccProcs::kPaymentProc, k3, k1, amount, "Payment takes 3 reads, 4 writes and 1 arg here; the call has 3 reads, 1 write and 1 arg"},
                       Bad{TpccProcs::kPaymentProc, k3, k4, none, "Payment takes 3 reads, 4 writes and 1 arg"},
                       Bad{TpccProcs::kNewOrderProc, k0, k4, amount, "NewOrder takes"},
                       Bad{TpccProcs::kAddPiece, k1, k1, amount, "add piece takes 1 read, 1 write and 2 args"}}) {
    const EpicTxnResult r = db->submit(b.proc, b.reads, b.writes, b.args).get();
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << b.says;
    EXPECT_NE(r.status.message().find(b.says), std::string::npos) << r.status.message();
  }
  db->flush();
  for (std::uint64_t k = 0; k < 16; ++k) {
    std::vector<std::uint32_t> got;
    ASSERT_TRUE(db->read(0, k, &got).ok());
    ASSERT_EQ(got, std::vector<std::uint32_t>(rec, rec + 4)) << "record " << k << ": nothing applied";
  }
  const std::vector<std::uint32_t> add = {5, 2};
  const EpicTxnResult ok = db->submit(TpccProcs::kAddPiece, k1, k1, add).get();
  ASSERT_TRUE(ok.status.ok()) << ok.status.message();
  EXPECT_EQ(ok.outcome, EpicOutcome::kCommitted);
  // YCSB: four args per write and an optional abort flag; a write's source among the reads.
  const EpicConfig y = config_of(EpicProcedures::kYcsb, {{"t", 4, 16, false}}, 1, EpicConfig{}.epoch_size);
  ASSERT_TRUE(EpicDatabase::open(y, &db).ok());
  const std::vector<std::uint32_t> three = {0, 0, 1}, bad_source = {1, 0, 1, 9}, fine = {0, 0, 1, 9, 0};
  EXPECT_NE(db->submit(0, k1, k1, three).get().status.message().find("4 args per write"), std::string::npos);
  EXPECT_NE(db->submit(0, k1, k1, bad_source).get().status.message().find("source read 1"), std::string::npos);
  EXPECT_TRUE(db->submit(0, k1, k1, fine).get().status.ok());
}

// Procedures index fixed words of the records they read and fill a copy-update word by word from
// its source, so a call that names a record narrower than that would read past it (found by
// fuzzing the server: a 1-word YCSB source for a 4-word write read the next records' words). Such
// calls are refused naming both tables, nothing applies, and the same calls on wide enough
// records run.
TEST(EpicDatabase, CallsOnRecordsNarrowerThanTheProcedureReadsAreRefused) {
  using batch::epic::TpccProcs;
  struct Case {
    EpicProcedures procs;
    std::uint32_t proc;
    std::vector<EpicKey> reads, writes;
    std::vector<std::uint32_t> args;
    const char* says;
  };
  // Table 0 ("n") has 1-word records, table 1 ("w") 4-word ones, record k of it {k, k+1, k+2, k+3}:
  // NewOrder's district (w:1) then has next order id 1, OrderStatus's order (w:1) customer 1 and
  // 2 lines, as their args declare.
  const std::vector<Case> narrow = {
      {EpicProcedures::kYcsb, 0, {{0, 3}}, {{1, 0}}, {0, 0, 0, 5}, "fills its write 0 (table w, 4-word records) from its read 0 (table n, 1-word"},
      {EpicProcedures::kTpcc, TpccProcs::kAddPiece, {{0, 3}}, {{1, 0}}, {7, 0}, "add piece fills its write 0 (table w"},
      {EpicProcedures::kTpcc, TpccProcs::kPaymentProc, {{1, 0}, {0, 1}, {1, 2}}, {{1, 0}, {1, 1}, {1, 2}, {1, 3}}, {5},
       "Payment fills its write 1 (table w, 4-word records) from its read 1 (table n"},
      {EpicProcedures::kTpcc, TpccProcs::kNewOrderProc, {{0, 0}, {1, 1}, {1, 2}}, {{1, 1}, {1, 5}, {1, 6}}, {0, 1, 0, 1},
       "NewOrder reads word 1 of its read 0, but table n has 1-word records"},
      {EpicProcedures::kTpcc, TpccProcs::kOrderStatusProc, {{1, 0}, {0, 1}, {1, 3}, {1, 4}}, {}, {1, 1, 2},
       "OrderStatus reads word 1 of its read 1, but table n"},
  };
  for (const Case& c : narrow) {
    SCOPED_TRACE(c.says);
    std::unique_ptr<EpicDatabase> db;
    ASSERT_TRUE(EpicDatabase::open(config_of(c.procs, {{"n", 1, 16, false}, {"w", 4, 16, false}}, 1, 64), &db).ok());
    for (std::uint32_t k = 0; k < 16; ++k) {
      const std::uint32_t one[1] = {100 + k}, four[4] = {k, k + 1, k + 2, k + 3};
      ASSERT_TRUE(db->load(0, k, one).ok());
      ASSERT_TRUE(db->load(1, k, four).ok());
    }
    const EpicTxnResult r = db->submit(c.proc, c.reads, c.writes, c.args).get();
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status.message().find(c.says), std::string::npos) << r.status.message();
    db->flush();
    for (std::uint32_t k = 0; k < 16; ++k) {
      std::vector<std::uint32_t> got;
      ASSERT_TRUE(db->read(1, k, &got).ok());
      EXPECT_EQ(got, (std::vector<std::uint32_t>{k, k + 1, k + 2, k + 3})) << "w:" << k << ": nothing applied";
    }
    // The same call with every key in the 4-word table runs.
    std::vector<EpicKey> reads = c.reads, writes = c.writes;
    for (EpicKey& k : reads) k.table = 1;
    for (EpicKey& k : writes) k.table = 1;
    const EpicTxnResult ok = db->submit(c.proc, reads, writes, c.args).get();
    EXPECT_TRUE(ok.status.ok()) << ok.status.message();
  }
}

// Txns in pieces through the public API, from four threads at once: each txn adds amounts to
// 1-3 words of a direct table, one kAddPiece (TPC-C's set) per word. Additions commute, so every
// word must end at its load value plus every amount added to it, whatever the order; each txn
// commits once, its pieces at consecutive positions of one epoch.
void pieces_from_concurrent_submitters_apply_once(EpicPlacement placement) {
  EpicConfig c = config_of(EpicProcedures::kTpcc, {{"acct", 4, 32, false}}, 2, 64);
  c.placement = placement;
  c.min_device_epoch_ops = 0;  // with a device planner, every epoch on it
  std::unique_ptr<EpicDatabase> db;
  ASSERT_TRUE(EpicDatabase::open(c, &db).ok());
  std::vector<std::uint64_t> want(32 * 4);
  for (std::uint64_t k = 0; k < 32; ++k) {
    const std::uint32_t rec[4] = {1000, 2000, 3000, 4000};
    ASSERT_TRUE(db->load(0, k, rec).ok());
    for (int w = 0; w < 4; ++w) want[k * 4 + w] = rec[w];
  }
  constexpr int kThreads = 4, kTxns = 150;
  constexpr std::uint32_t kAddPiece = batch::epic::TpccProcs::kAddPiece;
  std::vector<std::vector<EpicTxnResult>> got(kThreads);
  std::vector<std::vector<std::size_t>> sizes(kThreads);
  std::vector<std::thread> ts;
  std::mutex m;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<std::future<EpicTxnResult>> fs;
      for (int i = 0; i < kTxns; ++i) {
        const std::size_t n = 1 + rng() % 3;
        std::vector<EpicKey> keys(n);
        std::vector<std::array<std::uint32_t, 2>> args(n);
        std::vector<EpicPiece> pieces(n);
        for (std::size_t p = 0; p < n; ++p) {
          keys[p] = {0, p * 10 + rng() % 10};  // distinct records within a txn, all below 32
          args[p] = {static_cast<std::uint32_t>(rng() % 100), static_cast<std::uint32_t>(rng() % 4)};
          pieces[p] = {kAddPiece, std::span<const EpicKey>(&keys[p], 1), std::span<const EpicKey>(&keys[p], 1), args[p]};
          std::lock_guard<std::mutex> lk(m);
          want[keys[p].key * 4 + args[p][1]] += args[p][0];
        }
        fs.push_back(db->submit_pieces(pieces));
        sizes[t].push_back(n);
      }
      for (auto& f : fs) got[t].push_back(f.get());
    });
  for (auto& th : ts) th.join();
  db->flush();
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> taken;  // (epoch, position) -> pieces
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kTxns; ++i) {
      const EpicTxnResult& r = got[t][i];
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      ASSERT_EQ(r.outcome, EpicOutcome::kCommitted);
      EXPECT_EQ(r.attempts, 1u);
      for (std::size_t p = 0; p < sizes[t][i]; ++p)
        ASSERT_TRUE(taken.emplace(std::pair(r.epoch, r.position + static_cast<std::uint32_t>(p)), 1).second)
            << "two pieces share epoch " << r.epoch << " position " << r.position + p;
    }
  for (std::uint64_t k = 0; k < 32; ++k) {
    std::vector<std::uint32_t> rec;
    ASSERT_TRUE(db->read(0, k, &rec).ok());
    for (int w = 0; w < 4; ++w) ASSERT_EQ(rec[w], static_cast<std::uint32_t>(want[k * 4 + w])) << "record " << k << " word " << w;
  }
  // A bad piece refuses its txn whole through the public API too, naming the piece.
  const EpicKey ok_key{0, 1}, bad_key{0, 32};
  const std::uint32_t add[2] = {5, 0};
  const EpicPiece bad[2] = {{kAddPiece, std::span<const EpicKey>(&ok_key, 1), std::span<const EpicKey>(&ok_key, 1), add},
                            {kAddPiece, std::span<const EpicKey>(&bad_key, 1), std::span<const EpicKey>(&bad_key, 1), add}};
  const EpicTxnResult r = db->submit_pieces(bad).get();
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("piece 1"), std::string::npos) << r.status.message();
  std::vector<std::uint32_t> rec;
  ASSERT_TRUE(db->read(0, 1, &rec).ok());
  EXPECT_EQ(rec[0], static_cast<std::uint32_t>(want[4])) << "nothing of the refused txn applied";
}

// In every placement: the CPU twin, the device-planner path with its CPU twin (every epoch on
// it), auto (the GPU planner on a machine with a GPU) and the device-executor path with its twin.
TEST(EpicDatabase, TxnsInPiecesFromConcurrentSubmittersAllApplyOnce) {
  for (EpicPlacement p : {EpicPlacement::kCpu, EpicPlacement::kGpuTwin, EpicPlacement::kAuto, EpicPlacement::kGpuExecTwin}) {
    SCOPED_TRACE(epic_placement_name(p));
    pieces_from_concurrent_submitters_apply_once(p);
  }
}

}  // namespace
}  // namespace duet

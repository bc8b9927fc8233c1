// Epic on the GPU: the device plan equals the CPU twin's bit for bit (random contended Mix epochs
// of 1 to 10^5 txns, YCSB A/B/C/F at 100K, plain and split), GPU execution and Epic-CPU (GPU plan,
// CPU threads) against the serial checker (Mix, YCSB A/B/C/F and TPC-C NP at 100K-txn epochs),
// and a planted plan difference the equality check sees; GPU indexing on L-Slab against the host
// indexer (ids, lookups, INVALIDs, ring state; churn with id reuse, a full table, TPC-C NP).
// Epic-CPU with device indexing and planning: the runner as a DevicePlanner equals the CPU twin
// (tests/batch/epic/planner_compare.hpp, which CI runs with HostPlanner) and, driving an Engine,
// the serial checker; packed and per-array transfers alternate.
// Without a GPU every test reports itself skipped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "batch/epic/engine.hpp"
#include "checkers/epic_serial_checker.hpp"
#include "batch/epic/planner_compare.hpp"
#include "batch/epic/mix_gen.hpp"
#include "batch/epic/gpu.hpp"
#include "batch/epic/tpcc_gen.hpp"
#include "batch/epic/workloads.hpp"

namespace duet::batch::epic {
namespace {

using test::compare_state;
using test::replay_epoch;
using test::load_mix;
using test::mix_tables;
using test::MixGen;

#define REQUIRE_GPU()                         \
  std::string why_;                           \
  if (!gpu_available(&why_)) {                \
    GTEST_SKIP() << "no GPU: " << why_;       \
  }

std::vector<std::uint32_t> globals(const Batch& b, std::uint32_t span) {
  std::vector<std::uint32_t> g(b.keys.size());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = b.keys[i].table * span + static_cast<std::uint32_t>(b.keys[i].key);
  return g;
}

/// "" when both databases' indexes agree exactly: key -> id entries, free rings in FIFO order and
/// back-links; otherwise the first difference.
std::string index_diff(const Database& a, const Database& b) {
  for (std::uint32_t t = 0; t < a.num_tables(); ++t) {
    const TableStore& x = a.table(t);
    const TableStore& y = b.table(t);
    if (!x.spec.indexed) continue;
    if (x.index != y.index) return "table " + x.spec.name + ": index entries differ";
    if (x.free_ring != y.free_ring) return "table " + x.spec.name + ": free rings differ";
    if (x.backlink != y.backlink) return "table " + x.spec.name + ": back-links differ";
  }
  return "";
}

std::string indexed_diff(const Indexed& a, const Indexed& b) {
  if (a.table != b.table) return "tables differ";
  for (std::size_t i = 0; i < a.rid.size() && i < b.rid.size(); ++i)
    if (a.rid[i] != b.rid[i] || a.global[i] != b.global[i])
      return "op " + std::to_string(i) + ": rid " + std::to_string(a.rid[i]) + " vs " + std::to_string(b.rid[i]);
  return a.rid.size() == b.rid.size() && a.global.size() == b.global.size() ? "" : "sizes differ";
}

// Indexing alone: the device indexer and Database::index over the same epochs give the same ids,
// lookups and INVALIDs, and leave the same ring. New keys repeat within and across txns. A table
// that would overflow fails with nothing inserted; a write of the reserved key 2^64-1 is refused.
TEST(EpicGpuIndex, EqualsTheHostIndexer) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  const std::vector<TableSpec> specs{{"direct", 1, 100, false}, {"a", 2, 5000, true}, {"b", 1, 70000, true}};
  Database host(specs), dev(specs);
  const std::uint32_t w[2] = {7, 8};
  for (std::uint64_t k = 0; k < 2000; k += 3) {
    ASSERT_TRUE(host.load(1, k * 11, w) && dev.load(1, k * 11, w));
    ASSERT_TRUE(host.load(2, k << 40, w) && dev.load(2, k << 40, w));
  }
  ASSERT_TRUE(g->upload(dev, &err)) << err;
  std::mt19937_64 rng(5);
  for (std::size_t n : {1, 7, 300, 5000, 20000}) {
    Batch b;
    for (std::size_t t = 0; t < n; ++t) {
      std::vector<Key> reads, writes;
      for (int i = 0; i < 3; ++i) reads.push_back({static_cast<std::uint32_t>(rng() % 3), rng() % 100});
      for (int i = 0; i < 3; ++i) {
        const std::uint32_t tb = 1 + static_cast<std::uint32_t>(i % 2);
        // Narrow ranges repeat keys within the batch; table b's keys use high bits.
        const std::uint64_t k = tb == 1 ? (rng() % 4000) * 11 : (rng() % 60000) << 40;
        bool dup = false;
        for (auto& x : writes) dup |= x.table == tb && x.key == k;
        if (!dup) writes.push_back({tb, k});
        reads.push_back({tb, tb == 1 ? (rng() % 5000) * 11 : (rng() % 70000) << 40});
      }
      ASSERT_TRUE(b.add(MixProcs::kRmw, reads, writes, {}, t));
    }
    Indexed hi, gi;
    const bool ok_h = host.index(b, &hi, &err);
    std::string gerr;
    const bool ok_g = g->index(dev, b, &gi, &gerr);
    ASSERT_EQ(ok_h, ok_g) << "n " << n << ": " << err << " / " << gerr;
    if (!ok_h) {
      EXPECT_EQ(err, gerr);
      continue;
    }
    ASSERT_EQ(indexed_diff(hi, gi), "") << "n " << n;
    std::size_t invalid = 0;
    for (auto r : gi.rid) invalid += r == kInvalid;
    if (n >= 300) {
      EXPECT_GT(invalid, 0u) << "missing reads must occur";
    }
  }
  // One fresh key more than table a's ring holds: full on both, nothing inserted.
  {
    Batch b;
    const std::size_t room = host.table(1).free_ring.size();
    for (std::uint64_t k = 0; k <= room; ++k) ASSERT_TRUE(b.add(MixProcs::kRmw, {}, {{1, 1000000 + k}}, {}, k));
    Indexed hi, gi;
    std::string gerr;
    EXPECT_FALSE(host.index(b, &hi, &err));
    EXPECT_FALSE(g->index(dev, b, &gi, &gerr));
    EXPECT_EQ(err, gerr);
  }
  {
    Batch b;
    ASSERT_TRUE(b.add(MixProcs::kRmw, {}, {{2, ~std::uint64_t(0)}}, {}, 0));
    Indexed gi;
    std::string gerr;
    EXPECT_FALSE(g->index(dev, b, &gi, &gerr));
    EXPECT_NE(gerr.find("2^64-1"), std::string::npos) << gerr;
  }
  ASSERT_TRUE(g->download(dev, &err)) << err;
  EXPECT_EQ(index_diff(host, dev), "");
}

// Insert/delete churn with id reuse through whole GPU epochs: a runner indexing on the device and
// one indexing on the host run the same Mix epochs (15% deletes, inserts of freed keys); outcomes,
// outputs, index entries, rings and back-links agree after every epoch.
TEST(EpicGpuIndex, ChurnEqualsHostIndexing) {
  REQUIRE_GPU();
  std::string err;
  auto gd = make_gpu_runner(ProcSet::kMix, &err);
  auto gh = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(gd && gh) << err;
  gh->set_index_on(IndexOn::kHost);
  Database dd(mix_tables()), dh(mix_tables());
  SerialStore unused(mix_tables());
  ASSERT_TRUE(load_mix(dd, unused));
  ASSERT_TRUE(load_mix(dh, unused));
  ASSERT_TRUE(gd->upload(dd, &err)) << err;
  ASSERT_TRUE(gh->upload(dh, &err)) << err;
  EXPECT_EQ(gd->index_on(), IndexOn::kGpu);
  EXPECT_EQ(gh->index_on(), IndexOn::kHost);
  MixGen rng(29);
  std::uint64_t tag = 0;
  std::size_t grew = 0, shrank = 0, ring = dh.table(2).free_ring.size();
  for (int ep = 0; ep < 40; ++ep) {
    Batch b;
    const int n = 1 + static_cast<int>(rng.rng() % 1500);
    for (int i = 0; i < n; ++i) rng.txn(&b, tag++);
    EpochOutput od, oh;
    ASSERT_TRUE(gd->run_epoch(dd, b, &od, &err)) << err;
    ASSERT_TRUE(gh->run_epoch(dh, b, &oh, &err)) << err;
    ASSERT_TRUE(od.results.outcome == oh.results.outcome) << "epoch " << ep;
    ASSERT_TRUE(od.results.out == oh.results.out) << "epoch " << ep;
    ASSERT_TRUE(gd->download(dd, &err)) << err;
    ASSERT_TRUE(gh->download(dh, &err)) << err;
    ASSERT_EQ(index_diff(dh, dd), "") << "epoch " << ep;
    for (std::uint32_t t = 0; t < 3; ++t) {
      ASSERT_TRUE(dd.table(t).slots == dh.table(t).slots) << "epoch " << ep << " table " << t;
      ASSERT_TRUE(dd.table(t).data == dh.table(t).data) << "epoch " << ep << " table " << t;
    }
    const std::size_t now = dh.table(2).free_ring.size();
    grew += now > ring;
    shrank += now < ring;
    ring = now;
  }
  EXPECT_GT(grew, 0u);
  EXPECT_GT(shrank, 0u);
}

TEST(EpicGpuPlan, EqualsTheCpuTwin) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  MixGen rng(3);
  for (std::size_t n : {1, 2, 3, 100, 1000, 4097, 20000, 100000}) {
    Batch b;
    for (std::size_t t = 0; t < n; ++t) rng.txn(&b, t);
    const auto gl = globals(b, 1000);
    Plan cpu, gpu;
    plan_cpu(b, gl, &cpu);
    ASSERT_TRUE(g->plan(b, gl, &gpu, &err)) << err;
    ASSERT_TRUE(gpu == cpu) << "n " << n;
    Plan planted;
    Faults f;
    f.inclusive_scan = true;
    plan_cpu(b, gl, &planted, f);
    if (n >= 100) {
      EXPECT_FALSE(gpu == planted) << "the planted plan must differ, n " << n;
    }
  }
  for (char w : {'A', 'B', 'C', 'F'})
    for (double theta : {0.0, 0.99})
      for (bool split : {false, true}) {
        YcsbConfig c = YcsbConfig::workload(w, theta, split);
        c.records = 1000000;
        YcsbGenerator gen(c);
        Batch b;
        gen.generate(100000, &b);
        const auto gl = globals(b, 0);
        Plan cpu, gpu;
        plan_cpu(b, gl, &cpu);
        ASSERT_TRUE(g->plan(b, gl, &gpu, &err)) << err;
        ASSERT_TRUE(gpu == cpu) << w << " " << theta << " " << split;
      }
}

// Negative control: writers that publish the eid before the data (the planted fault sleeps 20 µs
// between them) let a waiting reader copy the old data; the checker must see it within a few
// contended epochs.
TEST(EpicGpuExec, EidBeforeDataIsCaught) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  Faults f;
  f.eid_before_data = true;
  g->set_faults(f);
  Database db(mix_tables());
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(db, s));
  ASSERT_TRUE(g->upload(db, &err)) << err;
  MixGen rng(23);
  Batch pending_gpu, pending_serial;
  std::uint64_t tag = 0;
  std::string diff;
  for (int ep = 0; ep < 10 && diff.empty(); ++ep) {
    Batch b;
    for (int i = 0; i < 2000; ++i) rng.txn(&b, tag++);
    Batch run = pending_gpu;
    for (std::size_t t = 0; t < b.size(); ++t) run.add_from(b, t, 0);
    EpochOutput out;
    ASSERT_TRUE(g->run_epoch(db, run, &out, &err)) << err;
    pending_gpu = Batch{};
    for (std::size_t t = 0; t < run.size(); ++t)
      if (out.results.outcome[t] == kRerun) pending_gpu.add_from(run, t, run.attempt[t] + 1);
    diff = replay_epoch<MixProcs>(s, pending_serial, b, out);
    if (diff.empty()) {
      ASSERT_TRUE(g->download(db, &err)) << err;
      diff = compare_state(db, s);
    }
  }
  EXPECT_NE(diff, "") << "the eid published before the data went unnoticed";
}

// Negative control: txns handed to warps by block index. CUDA may start blocks in any order; in
// the reversed order every resident block waits for txns of blocks not yet started, and the
// watchdog must report the stuck wait. The same chain with the global counter runs.
TEST(EpicGpuExec, BlockIndexSchedulingIsCaughtByTheWatchdog) {
  REQUIRE_GPU();
  Batch chain;  // each txn reads and writes the same record: txn t waits for txn t - 1
  for (std::uint64_t t = 0; t < 200000; ++t) ASSERT_TRUE(chain.add(MixProcs::kRmw, {{0, 5}}, {{0, 5}}, {1, 0}, t));
  for (BlockOrder order : {BlockOrder::kReversedBlockIndex, BlockOrder::kCounter}) {
    std::string err;
    auto g = make_gpu_runner(ProcSet::kMix, &err);
    ASSERT_TRUE(g) << err;
    g->set_watchdog_cycles(2'000'000'000ull);  // about a second
    Database db(mix_tables());
    SerialStore s(mix_tables());
    ASSERT_TRUE(load_mix(db, s));
    ASSERT_TRUE(g->upload(db, &err)) << err;
    EpochOutput out;
    const bool ok = g->run_epoch(db, chain, &out, &err, nullptr, 4, order);
    if (order == BlockOrder::kCounter) {
      ASSERT_TRUE(ok) << err;
      Batch none;
      ASSERT_EQ(replay_epoch<MixProcs>(s, none, chain, out), "");
    } else {
      EXPECT_FALSE(ok);
      EXPECT_NE(err.find("stuck wait"), std::string::npos) << err;
    }
  }
}

TEST(EpicGpuExec, MixEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  Database db(mix_tables());
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(db, s));
  ASSERT_TRUE(g->upload(db, &err)) << err;
  MixGen rng(17);
  Batch pending_gpu, pending_serial;
  std::uint64_t tag = 0;
  for (int ep = 0; ep < 60; ++ep) {
    Batch b;
    const int n = 1 + static_cast<int>(rng.rng() % 2000);
    for (int i = 0; i < n; ++i) rng.txn(&b, tag++);
    Batch run = pending_gpu;
    for (std::size_t t = 0; t < b.size(); ++t) run.add_from(b, t, 0);
    EpochOutput out;
    g->set_packed_transfers(ep % 3 != 0);
    ASSERT_TRUE(g->run_epoch(db, run, &out, &err, nullptr, 1 + ep % 8)) << err;
    pending_gpu = Batch{};
    for (std::size_t t = 0; t < run.size(); ++t)
      if (out.results.outcome[t] == kRerun) pending_gpu.add_from(run, t, run.attempt[t] + 1);
    ASSERT_EQ(replay_epoch<MixProcs>(s, pending_serial, b, out), "") << "epoch " << ep;
    ASSERT_TRUE(g->download(db, &err)) << err;
    ASSERT_EQ(compare_state(db, s), "") << "epoch " << ep;
  }
}

// Epic-CPU both ways: indexing and planning on the device (DevicePlanner, the default Epic-CPU),
// and host indexing with device planning (gpu_planner).
TEST(EpicGpuExec, EpicCpuMixEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  for (bool device_index : {true, false}) {
    SCOPED_TRACE(device_index ? "device indexing" : "host indexing");
    std::shared_ptr<GpuRunner> g(make_gpu_runner(ProcSet::kMix, &err).release());
    ASSERT_TRUE(g) << err;
    Engine<MixProcs> e(mix_tables(), 8, device_index ? Planner{} : gpu_planner(g));
    if (device_index) e.set_device_planner(g);
    SerialStore s(mix_tables());
    ASSERT_TRUE(load_mix(e.db(), s));
    MixGen rng(23);
    Batch pending;
    std::uint64_t tag = 0;
    for (int ep = 0; ep < 40; ++ep) {
      Batch b;
      const int n = 1 + static_cast<int>(rng.rng() % 2000);
      for (int i = 0; i < n; ++i) rng.txn(&b, tag++);
      EpochOutput out;
      g->set_packed_transfers(ep % 3 != 0);
      ASSERT_TRUE(e.run_epoch(b, &out, &err)) << err;
      ASSERT_EQ(replay_epoch<MixProcs>(s, pending, b, out), "") << "epoch " << ep;
      ASSERT_TRUE(e.sync(&err)) << err;
      ASSERT_EQ(compare_state(e.db(), s), "") << "epoch " << ep;
    }
  }
}

// An epoch that finds the device's memory taken (all but 16 MiB held by another allocation) is
// indexed and planned on the host over the synced index, nothing of it touching the device; once
// the memory is back the device takes the index again. Every epoch equals serial execution.
TEST(EpicGpuExec, AnEpochTooBigForDeviceMemoryIsPlannedOnTheHost) {
  REQUIRE_GPU();
  std::string err;
  std::shared_ptr<GpuRunner> g(make_gpu_runner(ProcSet::kMix, &err).release());
  ASSERT_TRUE(g) << err;
  Engine<MixProcs> e(mix_tables(), 8);
  e.set_device_planner(g);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  MixGen rng(29);
  Batch pending;
  std::uint64_t tag = 0;
  void* hog = nullptr;
  for (int ep = 0; ep < 14; ++ep) {
    const bool starved = ep >= 4 && ep < 9;
    if (starved && !hog) {
      std::size_t free_bytes = 0, total = 0;
      ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
      ASSERT_GT(free_bytes, std::size_t{16} << 20);
      ASSERT_EQ(cudaMalloc(&hog, free_bytes - (std::size_t{16} << 20)), cudaSuccess);
    } else if (!starved && hog) {
      ASSERT_EQ(cudaFree(hog), cudaSuccess);
      hog = nullptr;
    }
    Batch b;
    const int n = 1000 + static_cast<int>(rng.rng() % 1000);
    for (int i = 0; i < n; ++i) rng.txn(&b, tag++);
    EpochOutput out;
    ASSERT_TRUE(e.run_epoch(b, &out, &err)) << "epoch " << ep << ": " << err;
    EXPECT_EQ(out.stats.planned_on_host, starved) << "epoch " << ep;
    ASSERT_EQ(replay_epoch<MixProcs>(s, pending, b, out), "") << "epoch " << ep;
    if (ep % 3 == 2) {  // reads through the device's index, and the index compared after a sync
      ASSERT_TRUE(e.sync(&err)) << err;
      ASSERT_EQ(compare_state(e.db(), s), "") << "epoch " << ep;
    }
  }
  EXPECT_EQ(e.host_planned_epochs(), 5u);
  ASSERT_TRUE(e.sync(&err)) << err;
  ASSERT_EQ(compare_state(e.db(), s), "");
}

// The device planner (GPU indexing on L-Slab, GPU planning, the plan copied back) against the CPU
// twin on the same epochs, ids freed between epochs: Mix epochs of 1 to 20000 txns (packed and
// per-array transfers), a table that fills up, YCSB at 100K txns (A θ 0 plain, A θ 0.99 split, F θ
// 0.99 plain), TPC-C NP at w 1 and the full mix at w 4, 100K txns.
TEST(EpicGpuPlan, DevicePlannerEqualsTheCpuTwin) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  auto load_keys = [](Database& db) {
    SerialStore s(mix_tables());
    return load_mix(db, s);
  };
  MixGen rng(31);
  std::vector<Batch> epochs;
  std::uint64_t tag = 0;
  for (std::size_t n : {1, 2, 3, 100, 1000, 4097, 20000, 7, 15000}) {
    epochs.emplace_back();
    for (std::size_t t = 0; t < n; ++t) rng.txn(&epochs.back(), tag++);
  }
  for (bool packed : {true, false}) {
    g->set_packed_transfers(packed);
    ASSERT_EQ(test::compare_planners(*g, mix_tables(), load_keys, epochs), "") << (packed ? "packed" : "per-array");
  }
  g->set_packed_transfers(true);
  std::vector<Batch> full(2);
  for (std::uint64_t k = 1000; k < 1280; k += 40) {
    std::vector<Key> ws;
    for (std::uint64_t j = k; j < k + 40; ++j) ws.push_back({2, j});
    ASSERT_TRUE(full[k == 1000 ? 0 : 1].add(MixProcs::kRmw, {}, ws, {1, 0}));
  }
  ASSERT_EQ(test::compare_planners(*g, mix_tables(), load_keys, full), "");
  struct Y {
    char w;
    double theta;
    bool split;
  };
  for (const Y& y : {Y{'A', 0.0, false}, Y{'A', 0.99, true}, Y{'F', 0.99, false}}) {
    const char w = y.w;
    const double theta = y.theta;
    const bool split = y.split;
    YcsbConfig c = YcsbConfig::workload(w, theta, split);
    c.records = 1000000;
    YcsbGenerator gen(c);
    std::vector<Batch> ep(2);
    gen.generate(100000, &ep[0], 0);
    gen.generate(100000, &ep[1], 100000);
    ASSERT_EQ(test::compare_planners(*g, {ycsb_table(c)}, [](Database&) { return true; }, ep), "") << w << theta << split;
  }
  auto gt = make_gpu_runner(ProcSet::kTpcc, &err);
  ASSERT_TRUE(gt) << err;
  for (TpccMix mix : {TpccMix::kNp, TpccMix::kFull}) {
    const std::uint32_t wh = mix == TpccMix::kNp ? 1u : 4u;
    const auto specs = tpcc_tables(wh, 250000, 250000);
    TpccGenerator gen(wh, 7 + wh, mix);
    ASSERT_EQ(gen.error(), "");
    std::vector<Batch> ep(2);
    gen.generate(100000, &ep[0], 0);
    gen.generate(100000, &ep[1], 100000);
    auto load = [wh](Database& db) {
      bool ok = true;
      tpcc_load(wh, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) { ok &= db.load(t, k, d); });
      return ok;
    };
    ASSERT_EQ(test::compare_planners(*gt, specs, load, ep), "") << "w " << wh;
  }
}

// One runner serves every database in turn, as in the benchmark: each new database starts again at
// eid 2, so scratch words left by the previous one must not pass for this epoch's writes.
TEST(EpicGpuExec, YcsbAt100KEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kYcsb, &err);
  ASSERT_TRUE(g) << err;
  for (char w : {'A', 'B', 'C', 'F'})
    for (double theta : {0.0, 0.99})
      for (bool split : {false, true}) {
        YcsbConfig c = YcsbConfig::workload(w, theta, split);
        c.records = 100000;
        const std::vector<TableSpec> specs{ycsb_table(c)};
        Database db(specs);
        SerialStore s(specs);
        std::vector<std::uint32_t> d(specs[0].record_words);
        for (std::uint64_t k = 0; k < specs[0].capacity; ++k) {
          for (std::uint32_t i = 0; i < d.size(); ++i) d[i] = ycsb_initial(k, i);
          db.load(0, k, d.data());
          s.put(0, k, d.data());
        }
        ASSERT_TRUE(g->upload(db, &err)) << err;
        YcsbGenerator gen(c);
        Batch pending;
        for (int ep = 0; ep < 2; ++ep) {
          Batch b;
          gen.generate(100000, &b, ep * 100000);
          EpochOutput out;
          ASSERT_TRUE(g->run_epoch(db, b, &out, &err)) << err;
          ASSERT_EQ(replay_epoch<YcsbProcs>(s, pending, b, out), "") << w << theta << split;
        }
        ASSERT_TRUE(g->download(db, &err)) << err;
        ASSERT_EQ(compare_state(db, s), "") << w << " " << theta << " " << split;
      }
}

// Piece splitting on the GPU at the benchmark's size: YCSB's 100K txns as up to 10^6 pieces, each
// op a piece (one warp each), against the whole txns run serially; also on Epic-CPU.
TEST(EpicGpuExec, YcsbPiecesAt100KEqualTheWholeTxns) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kYcsb, &err);
  ASSERT_TRUE(g) << err;
  for (char w : {'A', 'F'})
    for (double theta : {0.0, 0.99})
      for (bool split : {false, true}) {
        YcsbConfig c = YcsbConfig::workload(w, theta, split);
        c.records = 100000;
        YcsbConfig cp = c;
        cp.pieces = true;
        const std::vector<TableSpec> specs{ycsb_table(c)};
        Database db(specs);
        Engine<YcsbProcs> cpu(specs, 8);
        auto planner = make_gpu_runner(ProcSet::kYcsb, &err);
        ASSERT_TRUE(planner) << err;
        cpu.set_device_planner(std::move(planner));
        SerialStore s(specs);
        std::vector<std::uint32_t> d(specs[0].record_words);
        for (std::uint64_t k = 0; k < specs[0].capacity; ++k) {
          for (std::uint32_t i = 0; i < d.size(); ++i) d[i] = ycsb_initial(k, i);
          db.load(0, k, d.data());
          cpu.db().load(0, k, d.data());
          s.put(0, k, d.data());
        }
        ASSERT_TRUE(g->upload(db, &err)) << err;
        YcsbGenerator gw(c), gp(cp);
        Batch whole, pieces;
        gw.generate(100000, &whole);
        gp.generate(100000, &pieces);
        ASSERT_GT(pieces.size(), whole.size());
        EpochOutput out, cout;
        ASSERT_TRUE(g->run_epoch(db, pieces, &out, &err)) << err;
        EXPECT_EQ(out.stats.txns, whole.size());
        ASSERT_TRUE(cpu.run_epoch(pieces, &cout, &err)) << err;
        SerialStore s2 = s;
        ASSERT_EQ(test::replay_pieces<YcsbProcs>(s, whole, pieces, out), "") << w << theta << split;
        ASSERT_EQ(test::replay_pieces<YcsbProcs>(s2, whole, pieces, cout), "") << "Epic-CPU " << w << theta << split;
        ASSERT_TRUE(g->download(db, &err)) << err;
        ASSERT_EQ(compare_state(db, s), "") << w << " " << theta << " " << split;
        ASSERT_EQ(compare_state(cpu.db(), s), "") << "Epic-CPU " << w << " " << theta << " " << split;
      }
}

// TPC-C (NP and the full mix) at 1 and 4 warehouses, in both layouts (rows, and rows split by
// field), 100K-txn epochs, on the GPU (GPU indexing) and on Epic-CPU (GPU plan, CPU threads). On
// NP a GPU runner indexing on the host runs the same epochs: outcomes, outputs, index entries,
// rings and back-links equal the GPU-indexed run's.
TEST(EpicGpuExec, TpccAt100KEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  std::shared_ptr<GpuRunner> g(make_gpu_runner(ProcSet::kTpcc, &err).release());
  ASSERT_TRUE(g) << err;
  auto gh = make_gpu_runner(ProcSet::kTpcc, &err);
  ASSERT_TRUE(gh) << err;
  gh->set_index_on(IndexOn::kHost);
  for (TpccLayout layout : {TpccLayout::kRecords, TpccLayout::kSplit})
  for (TpccMix mix : {TpccMix::kNp, TpccMix::kFull})
  for (std::uint32_t w : {1u, 4u}) {
    SCOPED_TRACE(std::string(mix == TpccMix::kFull ? "full mix" : "NP") + (layout == TpccLayout::kSplit ? ", split" : ""));
    const auto specs = tpcc_tables(w, 120000, 120000, layout);
    Database db(specs), dbh(specs);
    const bool twin_index = mix == TpccMix::kNp;
    // Epic-CPU indexes on its own runner: a runner holds one index at a time.
    std::shared_ptr<GpuRunner> gc(make_gpu_runner(ProcSet::kTpcc, &err).release());
    ASSERT_TRUE(gc) << err;
    Engine<TpccProcs> cpu(specs, 8);
    cpu.set_device_planner(gc);
    SerialStore s(specs);
    tpcc_load(
        w,
        [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
          db.load(t, k, d);
          if (twin_index) dbh.load(t, k, d);
          cpu.db().load(t, k, d);
          s.put(t, k, d);
        },
        layout);
    SerialStore s2 = s;
    ASSERT_TRUE(g->upload(db, &err)) << err;
    if (twin_index) {
      ASSERT_TRUE(gh->upload(dbh, &err)) << err;
    }
    TpccGenerator gen(w, 91 + w, mix, layout);
    ASSERT_EQ(gen.error(), "");
    Batch pending, pending2;
    for (int ep = 0; ep < 2; ++ep) {
      Batch b;
      gen.generate(100000, &b, ep * 100000);
      EpochOutput out, out2;
      ASSERT_TRUE(g->run_epoch(db, b, &out, &err)) << err;
      ASSERT_EQ(replay_epoch<TpccProcs>(s, pending, b, out), "") << "w " << w << " epoch " << ep;
      if (twin_index) {
        EpochOutput oh;
        ASSERT_TRUE(gh->run_epoch(dbh, b, &oh, &err)) << err;
        ASSERT_TRUE(oh.results.outcome == out.results.outcome && oh.results.out == out.results.out) << "w " << w;
      }
      ASSERT_TRUE(cpu.run_epoch(b, &out2, &err)) << err;
      ASSERT_EQ(replay_epoch<TpccProcs>(s2, pending2, b, out2), "") << "epic-cpu w " << w << " epoch " << ep;
      std::size_t committed = 0;
      for (auto o : out.results.outcome) committed += o == kCommitted;
      EXPECT_GT(committed, b.size() * 9 / 10);
    }
    ASSERT_TRUE(g->download(db, &err)) << err;
    ASSERT_EQ(compare_state(db, s), "") << "w " << w;
    if (twin_index) {
      ASSERT_TRUE(gh->download(dbh, &err)) << err;
      ASSERT_EQ(index_diff(dbh, db), "") << "w " << w;
    }
    ASSERT_TRUE(cpu.sync(&err)) << err;
    ASSERT_EQ(compare_state(cpu.db(), s2), "") << "epic-cpu w " << w;
  }
}

// TPC-C with each Payment in three pieces, 100K-txn epochs, on the GPU and on Epic-CPU, against
// the same txns run whole and serially: NP at 1 and 4 warehouses and the full mix at 1, split layout.
TEST(EpicGpuExec, TpccPaymentPiecesAt100KEqualTheWholeTxns) {
  REQUIRE_GPU();
  std::string err;
  std::shared_ptr<GpuRunner> g(make_gpu_runner(ProcSet::kTpcc, &err).release());
  ASSERT_TRUE(g) << err;
  struct Case {
    TpccMix mix;
    std::uint32_t w;
  };
  for (const Case& k : {Case{TpccMix::kNp, 1}, Case{TpccMix::kNp, 4}, Case{TpccMix::kFull, 1}}) {
    SCOPED_TRACE(std::string(k.mix == TpccMix::kFull ? "full mix" : "NP") + " w " + std::to_string(k.w));
    const auto specs = tpcc_tables(k.w, 120000, 120000, TpccLayout::kSplit);
    Database db(specs);
    std::shared_ptr<GpuRunner> gc(make_gpu_runner(ProcSet::kTpcc, &err).release());
    ASSERT_TRUE(gc) << err;
    Engine<TpccProcs> cpu(specs, 8);
    cpu.set_device_planner(gc);
    SerialStore s(specs);
    test::load_tpcc(k.w, TpccLayout::kSplit, s, db, cpu.db());
    SerialStore s2 = s;
    ASSERT_TRUE(g->upload(db, &err)) << err;
    TpccGenerator gw(k.w, 91 + k.w, k.mix, TpccLayout::kSplit), gp(k.w, 91 + k.w, k.mix, TpccLayout::kSplit);
    gp.set_split_payments(true);
    for (int ep = 0; ep < 2; ++ep) {
      Batch whole, pieces;
      gw.generate(100000, &whole, ep * 100000);
      gp.generate(100000, &pieces, ep * 100000);
      ASSERT_GT(pieces.size(), whole.size());
      EpochOutput out, out2;
      ASSERT_TRUE(g->run_epoch(db, pieces, &out, &err)) << err;
      ASSERT_EQ(test::replay_pieces<TpccProcs>(s, whole, pieces, out), "") << "epoch " << ep;
      ASSERT_TRUE(cpu.run_epoch(pieces, &out2, &err)) << err;
      ASSERT_EQ(test::replay_pieces<TpccProcs>(s2, whole, pieces, out2), "") << "epic-cpu epoch " << ep;
    }
    ASSERT_TRUE(g->download(db, &err)) << err;
    ASSERT_EQ(compare_state(db, s), "");
    ASSERT_TRUE(cpu.sync(&err)) << err;
    ASSERT_EQ(compare_state(cpu.db(), s2), "") << "epic-cpu";
  }
}

}  // namespace
}  // namespace duet::batch::epic

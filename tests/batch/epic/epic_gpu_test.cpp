// Epic on the GPU: the device plan equals the CPU twin's bit for bit (random contended Mix epochs
// of 1 to 10^5 txns, YCSB A/B/C/F at 100K, plain and split), GPU execution and Epic-CPU (GPU plan,
// CPU threads) against the serial checker (Mix, YCSB A/B/C/F and TPC-C NP at 100K-txn epochs),
// and a planted plan difference the equality check sees. Without a GPU every test reports itself
// skipped.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "batch/epic/checker.hpp"
#include "batch/epic/gpu.hpp"
#include "batch/epic/tpcc_gen.hpp"
#include "batch/epic/workloads.hpp"

namespace duet::batch::epic {
namespace {

using test::compare_state;
using test::replay_epoch;

#define REQUIRE_GPU()                         \
  std::string why_;                           \
  if (!gpu_available(&why_)) {                \
    GTEST_SKIP() << "no GPU: " << why_;       \
  }

std::vector<TableSpec> mix_tables() {
  return {{"small", 1, 64, false}, {"wide", 4, 200, false}, {"indexed", 3, 400, true}};
}

void mix_txn(std::mt19937_64& rng, Batch* b, std::uint64_t tag) {
  std::vector<Key> reads, writes;
  const bool hot = rng() % 3 == 0;
  auto key = [&](std::uint32_t t) -> std::uint64_t {
    const std::uint64_t range = t == 0 ? 64 : t == 1 ? 200 : 300;
    return hot ? rng() % 4 : rng() % range;
  };
  const int nr = static_cast<int>(rng() % 7), nw = static_cast<int>(rng() % 6);
  for (int i = 0; i < nr; ++i) {
    const auto t = static_cast<std::uint32_t>(rng() % 3);
    reads.push_back({t, key(t)});
  }
  for (int i = 0; i < nw; ++i) {
    const auto t = static_cast<std::uint32_t>(rng() % 3);
    Key k{t, key(t)};
    bool dup = false;
    for (auto& w : writes) dup |= w.table == k.table && w.key == k.key;
    if (!dup) writes.push_back(k);
  }
  const std::uint32_t r = static_cast<std::uint32_t>(rng() % 100);
  const std::uint32_t proc = r < 70 ? MixProcs::kRmw : r < 85 ? MixProcs::kDelete : MixProcs::kPartial;
  const std::uint32_t a = static_cast<std::uint32_t>(rng() % 100);
  const std::uint32_t mode = a < 10 ? 1 : a < 15 ? 2 : a < 17 ? 3 : 0;
  b->add(proc, reads, writes, {static_cast<std::uint32_t>(rng()), mode}, tag);
}

void load_mix(Database& db, SerialStore& s) {
  for (std::uint32_t t = 0; t < 3; ++t) {
    const std::uint32_t w = db.table(t).spec.record_words;
    const std::uint64_t n = t == 2 ? 300 : db.table(t).spec.capacity;
    for (std::uint64_t k = 0; k < n; k += t == 2 ? 2 : 1) {
      std::vector<std::uint32_t> d(w);
      for (std::uint32_t i = 0; i < w; ++i) d[i] = static_cast<std::uint32_t>(k * 100 + i + t);
      db.load(t, k, d.data());
      s.put(t, k, d.data());
    }
  }
}

std::vector<std::uint32_t> globals(const Batch& b, std::uint32_t span) {
  std::vector<std::uint32_t> g(b.keys.size());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = b.keys[i].table * span + static_cast<std::uint32_t>(b.keys[i].key);
  return g;
}

TEST(EpicGpuPlan, EqualsTheCpuTwin) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  std::mt19937_64 rng(3);
  for (std::size_t n : {1, 2, 3, 100, 1000, 4097, 20000, 100000}) {
    Batch b;
    for (std::size_t t = 0; t < n; ++t) mix_txn(rng, &b, t);
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

TEST(EpicGpuExec, MixEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  auto g = make_gpu_runner(ProcSet::kMix, &err);
  ASSERT_TRUE(g) << err;
  Database db(mix_tables());
  SerialStore s(mix_tables());
  load_mix(db, s);
  ASSERT_TRUE(g->upload(db, &err)) << err;
  std::mt19937_64 rng(17);
  Batch pending_gpu, pending_serial;
  std::uint64_t tag = 0;
  for (int ep = 0; ep < 60; ++ep) {
    Batch b;
    const int n = 1 + static_cast<int>(rng() % 2000);
    for (int i = 0; i < n; ++i) mix_txn(rng, &b, tag++);
    Batch run = pending_gpu;
    for (std::size_t t = 0; t < b.size(); ++t) run.add_from(b, t, 0);
    EpochOutput out;
    ASSERT_TRUE(g->run_epoch(db, run, &out, &err, nullptr, 1 + ep % 8)) << err;
    pending_gpu = Batch{};
    for (std::size_t t = 0; t < run.size(); ++t)
      if (out.results.outcome[t] == kRerun) pending_gpu.add_from(run, t, run.attempt[t] + 1);
    ASSERT_EQ(replay_epoch<MixProcs>(s, pending_serial, b, out), "") << "epoch " << ep;
    ASSERT_TRUE(g->download(db, &err)) << err;
    ASSERT_EQ(compare_state(db, s), "") << "epoch " << ep;
  }
}

TEST(EpicGpuExec, EpicCpuMixEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  std::shared_ptr<GpuRunner> g(make_gpu_runner(ProcSet::kMix, &err).release());
  ASSERT_TRUE(g) << err;
  Engine<MixProcs> e(mix_tables(), 8, gpu_planner(g));
  SerialStore s(mix_tables());
  load_mix(e.db(), s);
  std::mt19937_64 rng(23);
  Batch pending;
  std::uint64_t tag = 0;
  for (int ep = 0; ep < 40; ++ep) {
    Batch b;
    const int n = 1 + static_cast<int>(rng() % 2000);
    for (int i = 0; i < n; ++i) mix_txn(rng, &b, tag++);
    EpochOutput out;
    ASSERT_TRUE(e.run_epoch(b, &out, &err)) << err;
    ASSERT_EQ(replay_epoch<MixProcs>(s, pending, b, out), "") << "epoch " << ep;
    ASSERT_EQ(compare_state(e.db(), s), "") << "epoch " << ep;
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

// TPC-C (NP and the full mix) at 1 and 4 warehouses, 100K-txn epochs, on the GPU and on Epic-CPU
// (GPU plan, CPU threads).
TEST(EpicGpuExec, TpccAt100KEqualsSerial) {
  REQUIRE_GPU();
  std::string err;
  std::shared_ptr<GpuRunner> g(make_gpu_runner(ProcSet::kTpcc, &err).release());
  ASSERT_TRUE(g) << err;
  for (TpccMix mix : {TpccMix::kNp, TpccMix::kFull})
  for (std::uint32_t w : {1u, 4u}) {
    SCOPED_TRACE(mix == TpccMix::kFull ? "full mix" : "NP");
    const auto specs = tpcc_tables(w, 120000, 120000);
    Database db(specs);
    Engine<TpccProcs> cpu(specs, 8, gpu_planner(g));
    SerialStore s(specs);
    tpcc_load(w, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
      db.load(t, k, d);
      cpu.db().load(t, k, d);
      s.put(t, k, d);
    });
    SerialStore s2 = s;
    ASSERT_TRUE(g->upload(db, &err)) << err;
    TpccGenerator gen(w, 91 + w, mix);
    ASSERT_EQ(gen.error(), "");
    Batch pending, pending2;
    for (int ep = 0; ep < 2; ++ep) {
      Batch b;
      gen.generate(100000, &b, ep * 100000);
      EpochOutput out, out2;
      ASSERT_TRUE(g->run_epoch(db, b, &out, &err)) << err;
      ASSERT_EQ(replay_epoch<TpccProcs>(s, pending, b, out), "") << "w " << w << " epoch " << ep;
      ASSERT_TRUE(cpu.run_epoch(b, &out2, &err)) << err;
      ASSERT_EQ(replay_epoch<TpccProcs>(s2, pending2, b, out2), "") << "epic-cpu w " << w << " epoch " << ep;
      std::size_t committed = 0;
      for (auto o : out.results.outcome) committed += o == kCommitted;
      EXPECT_GT(committed, b.size() * 9 / 10);
    }
    ASSERT_TRUE(g->download(db, &err)) << err;
    ASSERT_EQ(compare_state(db, s), "") << "w " << w;
    ASSERT_EQ(compare_state(cpu.db(), s2), "") << "epic-cpu w " << w;
  }
}

}  // namespace
}  // namespace duet::batch::epic

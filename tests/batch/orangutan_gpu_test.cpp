// The GPU conflict DAG against its CPU twin: identical root arrays for the same blocks (uniform
// and Zipf up to 0.99, blocks of 1 to 10^5, both result forms), and the engine with the GPU DAG
// against serial execution (orangutan and the pipelined dag mode). Without a GPU every test
// reports itself skipped.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "batch/orangutan/engine.hpp"
#include "batch/orangutan/gpu_dag.hpp"
#include "batch/orangutan/workload.hpp"
#include "batch/reference.hpp"
#include "gpu/device.hpp"

namespace duet::batch::orangutan {
namespace {

#define REQUIRE_GPU()                                                      \
  if (!gpu::device().present) GTEST_SKIP() << "no GPU: " << gpu::device().reason

TEST(GpuDag, RootsEqualTheCpuTwin) {
  REQUIRE_GPU();
  std::unique_ptr<GpuDag> g;
  ASSERT_TRUE(make_gpu_dag(100000, &g).ok());
  Team team(8);
  for (double theta : {0.0, 0.6, 0.9, 0.99}) {
    WorkloadConfig w;
    w.accounts = 1000000;
    w.theta = theta;
    w.allow_self = true;
    w.seed = 21;
    TransferGenerator gen(w);
    std::vector<std::uint32_t> first(w.accounts, UINT32_MAX);
    for (std::size_t n : {1, 2, 100, 1000, 2048, 2049, 8192, 10000, 100000}) {
      const auto block = gen.block(n);
      std::vector<std::uint32_t> parent(n), cpu(n), pairs(n);
      build_dag_cpu_accounts(team, block.data(), n, first.data(), parent.data(), cpu.data());
      if (n <= 10000) {
        build_dag_cpu_pairs(team, block.data(), n, parent.data(), pairs.data());
        ASSERT_EQ(pairs, cpu) << "theta " << theta << " n " << n;
      }
      for (DagForm form : {DagForm::kRoots, DagForm::kMatrix}) {
        if (form == DagForm::kMatrix && n > kMaxMatrixTxs) continue;
        ASSERT_TRUE(g->launch(block.data(), n, form).ok());
        const std::uint32_t* root = nullptr;
        Status s = g->wait(&root);
        ASSERT_TRUE(s.ok()) << s.to_string();
        ASSERT_EQ(std::vector<std::uint32_t>(root, root + n), cpu)
            << "theta " << theta << " n " << n << " form " << static_cast<int>(form);
      }
    }
  }
}

TEST(GpuDag, PlantedLargerRootDiffersFromTheTwin) {
  REQUIRE_GPU();
  std::unique_ptr<GpuDag> g;
  ASSERT_TRUE(make_gpu_dag(4096, &g).ok());
  Team team(4);
  WorkloadConfig w;
  w.theta = 0.9;
  TransferGenerator gen(w);
  const auto block = gen.block(4096);
  std::vector<std::uint32_t> parent(4096), cpu(4096), first(w.accounts, UINT32_MAX);
  build_dag_cpu_accounts(team, block.data(), 4096, first.data(), parent.data(), cpu.data());
  DagFaults f;
  f.larger_root = true;
  ASSERT_TRUE(g->launch(block.data(), 4096, DagForm::kRoots, f).ok());
  const std::uint32_t* root = nullptr;
  ASSERT_TRUE(g->wait(&root).ok());
  EXPECT_NE(std::vector<std::uint32_t>(root, root + 4096), cpu);
}

/// The engine with its DAG on the GPU, against the serial reference.
void check_engine(Mode mode, ProfileKind p, double theta, std::size_t size, std::size_t blocks) {
  const std::uint32_t n_acc = 10000;
  std::vector<Account> acc(n_acc);
  std::vector<test::RefAccount> ref(n_acc);
  for (std::uint32_t i = 0; i < n_acc; ++i) {
    acc[i].bal = 100;
    acc[i].gas_cost = 1;
    ref[i].bal = 100;
    ref[i].gas = 1;
  }
  EngineConfig c;
  c.mode = mode;
  c.threads = 8;
  c.dag = DagDevice::kGpu;
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::create(c, acc.data(), n_acc, &e).ok());
  WorkloadConfig w;
  w.accounts = n_acc;
  w.theta = theta;
  w.seed = 33;
  TransferGenerator gen(w);
  std::vector<std::vector<Tx>> txs;
  std::vector<std::vector<Outcome>> out;
  for (std::size_t b = 0; b < blocks; ++b) {
    txs.push_back(gen.block(size));
    out.emplace_back(size);
  }
  std::vector<BlockView> views;
  for (std::size_t b = 0; b < blocks; ++b) views.push_back({txs[b], out[b]});
  std::vector<BlockStats> st;
  Status s = e->run_blocks(p, views, &st);
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::uint64_t on_gpu = 0;
  for (const auto& x : st) on_gpu += x.dag_on_gpu;
  if (mode == Mode::kDag) {
    EXPECT_EQ(on_gpu, blocks);
  }
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t i = 0; i < size; ++i) {
      const test::RefTransfer t{txs[b][i].sender, txs[b][i].receiver, txs[b][i].amt};
      const auto r = p == ProfileKind::kSmallCoin ? test::ref_smallcoin(ref, t) : test::ref_smallcoin_plus(ref, t);
      ASSERT_EQ(static_cast<int>(r), static_cast<int>(out[b][i])) << "block " << b << " tx " << i;
    }
  for (std::uint32_t i = 0; i < n_acc; ++i) {
    ASSERT_EQ(acc[i].bal.load(), ref[i].bal) << "account " << i;
    ASSERT_EQ(acc[i].seq_num.load(), ref[i].seq) << "account " << i;
    ASSERT_EQ(acc[i].rec_events.load(), ref[i].rec) << "account " << i;
  }
  EXPECT_EQ(e->totals().gpu_failures, 0u);
}

TEST(GpuEngine, OranguTanAndDagEqualSerialExecution) {
  REQUIRE_GPU();
  for (Mode m : {Mode::kOranguTan, Mode::kDag})
    for (ProfileKind p : {ProfileKind::kSmallCoin, ProfileKind::kSmallCoinPlus})
      for (double theta : {0.0, 0.9, 0.99}) {
        check_engine(m, p, theta, 1000, 20);
        check_engine(m, p, theta, 10000, 3);
      }
}

}  // namespace
}  // namespace duet::batch::orangutan

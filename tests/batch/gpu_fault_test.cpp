// GPU failure injection: the engine's GPU DAG slots are replaced (EngineConfig::gpu_dag_factory)
// by slots that build the DAG on the CPU, with code of their own, and fail on command: a launch
// that fails, a wait that reports a failed kernel, a device lost mid-block (every later call
// fails), a malformed root array. In each case every block must still commit with the result of
// serial execution in block order (the checker of reference.hpp), the failure is counted once,
// and the DAG moves to the CPU for good. A control slot that returns well-formed but wrong
// clusters (every transaction alone) must be caught by the checker, which shows that the
// injected slots really feed the fallback. CPU only; DUET_TEST_SCALE scales it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/orangutan/engine.hpp"
#include "batch/orangutan/workload.hpp"
#include "batch/reference.hpp"

namespace duet::batch::orangutan {
namespace {

/// What the injected device does; shared by all slots of one engine. Counts are 1-based.
struct FaultPlan {
  std::mutex m;
  int launches = 0, waits = 0;
  int fail_launch_at = 0;   ///< this launch fails (a failed kernel launch or copy)
  int fail_wait_at = 0;     ///< this wait fails (a kernel fault reported at synchronisation)
  int lost_at_wait = 0;     ///< from this wait on, every call fails (the device is lost)
  int corrupt_wait_at = 0;  ///< this wait returns a malformed root array
  bool singletons = false;  ///< control: every wait returns root[i] = i (well formed, wrong)
  bool lost = false;
};

/// A GPU DAG slot that builds roots on the host with its own union-find and fails per plan.
class InjectedSlot : public GpuDag {
 public:
  InjectedSlot(std::shared_ptr<FaultPlan> plan, std::size_t cap) : plan_(std::move(plan)), cap_(cap) {}

  Status launch(const Tx* txs, std::size_t n, DagForm, DagFaults) override {
    std::lock_guard<std::mutex> lk(plan_->m);
    const int k = ++plan_->launches;
    if (plan_->lost) return Status::Unavailable("injected: the device was lost");
    if (k == plan_->fail_launch_at) return Status::Internal("injected: kernel launch failed");
    staged_.assign(txs, txs + n);
    return Status::Ok();
  }

  Status wait(const std::uint32_t** root) override {
    std::lock_guard<std::mutex> lk(plan_->m);
    const int k = ++plan_->waits;
    if (k == plan_->lost_at_wait) plan_->lost = true;
    if (plan_->lost) return Status::Unavailable("injected: the device was lost");
    if (k == plan_->fail_wait_at) return Status::Internal("injected: an illegal address in kernel 1");
    build();
    if (k == plan_->corrupt_wait_at && !roots_.empty()) roots_[0] = static_cast<std::uint32_t>(roots_.size());
    *root = roots_.data();
    return Status::Ok();
  }

  bool idle() override { return true; }
  std::size_t capacity() const override { return cap_; }

 private:
  /// Roots: transactions sharing an account are one cluster, rooted at its earliest member.
  void build() {
    const std::size_t n = staged_.size();
    roots_.resize(n);
    if (plan_->singletons) {
      for (std::size_t i = 0; i < n; ++i) roots_[i] = static_cast<std::uint32_t>(i);
      return;
    }
    std::vector<std::uint32_t> up(n);
    for (std::size_t i = 0; i < n; ++i) up[i] = static_cast<std::uint32_t>(i);
    auto find = [&](std::uint32_t x) {
      while (up[x] != x) x = up[x];
      return x;
    };
    std::unordered_map<std::uint32_t, std::uint32_t> last;  // account -> a transaction on it
    for (std::size_t i = 0; i < n; ++i)
      for (std::uint32_t a : {staged_[i].sender, staged_[i].receiver}) {
        auto [it, fresh] = last.try_emplace(a, static_cast<std::uint32_t>(i));
        if (fresh) continue;
        const std::uint32_t x = find(static_cast<std::uint32_t>(i)), y = find(it->second);
        if (x != y) up[std::max(x, y)] = std::min(x, y);
      }
    for (std::size_t i = 0; i < n; ++i) roots_[i] = find(static_cast<std::uint32_t>(i));
  }

  std::shared_ptr<FaultPlan> plan_;
  std::size_t cap_;
  std::vector<Tx> staged_;
  std::vector<std::uint32_t> roots_;
};

double scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  return s && *s ? std::max(0.01, std::atof(s)) : 1.0;
}

/// An engine on injected slots, its accounts and the serial reference's.
struct Rig {
  std::vector<Account> acc;
  std::vector<test::RefAccount> ref;
  std::shared_ptr<FaultPlan> plan = std::make_shared<FaultPlan>();
  std::unique_ptr<Engine> engine;
  ProfileKind profile = ProfileKind::kSmallCoinPlus;

  explicit Rig(std::uint32_t n = 10000) : acc(n), ref(n) {
    std::mt19937_64 rng(17);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::int64_t b = rng() % 8 == 0 ? 0 : 100;
      acc[i].bal = b;
      acc[i].gas_cost = 1;
      ref[i].bal = b;
      ref[i].gas = 1;
    }
  }

  /// Builds the engine (after the plan is set).
  void open(Mode mode) {
    EngineConfig c;
    c.mode = mode;
    c.threads = 8;
    c.dag = DagDevice::kAuto;
    std::shared_ptr<FaultPlan> p = plan;
    c.gpu_dag_factory = [p](std::size_t cap, std::unique_ptr<GpuDag>* out) {
      *out = std::make_unique<InjectedSlot>(p, cap);
      return Status::Ok();
    };
    Status s = Engine::create(c, acc.data(), acc.size(), &engine);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(engine->dag_description().rfind("gpu", 0), 0u) << engine->dag_description();
  }

  /// Replays the block on the reference; the first difference, or empty.
  std::string check(const std::vector<Tx>& block, const std::vector<Outcome>& out) {
    for (std::size_t i = 0; i < block.size(); ++i) {
      const test::RefTransfer t{block[i].sender, block[i].receiver, block[i].amt};
      const auto r = test::ref_smallcoin_plus(ref, t);
      if (static_cast<int>(r) != static_cast<int>(out[i])) return "transaction " + std::to_string(i) + ": outcome differs";
    }
    for (std::size_t i = 0; i < acc.size(); ++i) {
      const AccountValue v = load(acc[i]);
      if (v.bal != ref[i].bal || v.seq_num != ref[i].seq || v.sent_events != ref[i].sent || v.rec_events != ref[i].rec)
        return "account " + std::to_string(i) + " differs";
    }
    return {};
  }

  /// Runs `blocks` contended blocks one by one; the first difference, or empty. Counts the
  /// blocks whose DAG came from the (injected) GPU.
  std::string run(std::size_t blocks, std::size_t size, int* on_gpu = nullptr) {
    WorkloadConfig w;
    w.accounts = static_cast<std::uint32_t>(acc.size());
    w.theta = 0.9;
    w.seed = 23;
    TransferGenerator gen(w);
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto block = gen.block(size);
      std::vector<Outcome> out(block.size());
      BlockStats st;
      Status s = engine->execute(profile, block, out, &st);
      if (!s.ok()) return "block " + std::to_string(b) + ": " + s.to_string();
      if (on_gpu) *on_gpu += st.dag_on_gpu;
      std::string d = check(block, out);
      if (!d.empty()) return "block " + std::to_string(b) + ": " + d;
    }
    return {};
  }
};

std::size_t blocks() { return std::max<std::size_t>(6, static_cast<std::size_t>(12 * scale())); }

class GpuFault : public testing::TestWithParam<Mode> {};

std::string mode_param_name(const testing::TestParamInfo<Mode>& i) { return mode_name(i.param); }

/// The plan's failure happens, is counted once, and the DAG moves to the CPU for good; every
/// block still equals serial execution.
void expect_recovers(Rig& r, int min_gpu_blocks) {
  int on_gpu = 0;
  EXPECT_EQ(r.run(blocks(), 1000, &on_gpu), "") << mode_name(r.engine->config().mode);
  EXPECT_GE(on_gpu, min_gpu_blocks) << "the injected slots were not used";
  EXPECT_EQ(r.engine->totals().gpu_failures, 1u);
  EXPECT_NE(r.engine->dag_description().find("gpu failed"), std::string::npos) << r.engine->dag_description();
  // Nothing reaches the device after the failure.
  int launches;
  {
    std::lock_guard<std::mutex> lk(r.plan->m);
    launches = r.plan->launches;
  }
  EXPECT_EQ(r.run(3, 1000), "");
  std::lock_guard<std::mutex> lk(r.plan->m);
  EXPECT_EQ(r.plan->launches, launches);
}

TEST_P(GpuFault, FailedLaunch) {
  Rig r;
  r.plan->fail_launch_at = 3;
  r.open(GetParam());
  expect_recovers(r, 1);
}

TEST_P(GpuFault, FailedKernelAtWait) {
  Rig r;
  r.plan->fail_wait_at = 2;
  r.open(GetParam());
  expect_recovers(r, 1);
}

TEST_P(GpuFault, DeviceLostMidBlock) {
  Rig r;
  r.plan->lost_at_wait = 3;
  r.open(GetParam());
  expect_recovers(r, 2);
}

TEST_P(GpuFault, MalformedRootArray) {
  Rig r;
  r.plan->corrupt_wait_at = 2;
  r.open(GetParam());
  expect_recovers(r, 1);
}

INSTANTIATE_TEST_SUITE_P(Modes, GpuFault, testing::Values(Mode::kOranguTan, Mode::kCommutative, Mode::kDag),
                         mode_param_name);

/// Dag mode's pipeline (run_blocks launches block b+1's DAG during block b): the device is lost
/// while a launched DAG is in flight for a later block.
TEST(GpuFaultPipeline, DeviceLostWithTheNextBlocksDagInFlight) {
  Rig r;
  r.plan->lost_at_wait = 4;
  r.open(Mode::kDag);
  WorkloadConfig w;
  w.accounts = 10000;
  w.theta = 0.9;
  w.seed = 31;
  TransferGenerator gen(w);
  const std::size_t nb = blocks();
  std::vector<std::vector<Tx>> txs;
  std::vector<std::vector<Outcome>> outs;
  std::vector<BlockView> views;
  for (std::size_t b = 0; b < nb; ++b) {
    txs.push_back(gen.block(1000));
    outs.emplace_back(1000);
  }
  for (std::size_t b = 0; b < nb; ++b) views.push_back({txs[b], outs[b]});
  std::vector<BlockStats> st;
  ASSERT_TRUE(r.engine->run_blocks(r.profile, views, &st).ok());
  // Replay block by block against the reference; only the final accounts can be compared.
  for (std::size_t b = 0; b < nb; ++b)
    for (std::size_t i = 0; i < txs[b].size(); ++i) {
      const test::RefTransfer t{txs[b][i].sender, txs[b][i].receiver, txs[b][i].amt};
      ASSERT_EQ(static_cast<int>(test::ref_smallcoin_plus(r.ref, t)), static_cast<int>(outs[b][i]))
          << "block " << b << " transaction " << i;
    }
  EXPECT_EQ(r.check({}, {}), "");
  EXPECT_EQ(r.engine->totals().gpu_failures, 1u);
  EXPECT_EQ(std::count_if(st.begin(), st.end(), [](const BlockStats& s) { return s.dag_on_gpu; }), 3);
}

/// Control: slots that return every transaction as its own cluster (well formed, wrong) make the
/// fallback re-run too little, and the checker catches it.
TEST(GpuFaultControl, WrongButWellFormedClustersAreCaught) {
  Rig r;
  r.plan->singletons = true;
  r.open(Mode::kCommutative);
  EXPECT_NE(r.run(blocks(), 1000), "");
}

}  // namespace
}  // namespace duet::batch::orangutan

// OranguTAN against serial execution in block order: every mode, both profiles, uniform and
// Zipfian blocks of 1 to 10^4 transfers over 10^4 accounts, 8 threads; each block's outcomes and
// the whole account table are compared with the reference (reference.hpp). Negative controls
// plant the four bugs of the design and require the checker to catch each. Sizes scale with
// DUET_TEST_SCALE (default 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "batch/orangutan/engine.hpp"
#include "batch/orangutan/workload.hpp"
#include "batch/reference.hpp"

namespace duet::batch::orangutan {
namespace {

using test::RefAccount;
using test::RefOutcome;

double scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  return s && *s ? std::max(0.01, std::atof(s)) : 1.0;
}

/// An engine, its account table and the reference's, built from the same initial balances.
struct Bench {
  std::vector<Account> acc;
  std::vector<RefAccount> ref;
  std::unique_ptr<Engine> engine;
  ProfileKind profile;

  Bench(const EngineConfig& c, ProfileKind p, std::uint32_t n, std::int64_t balance, std::int64_t gas,
        std::uint64_t seed = 7)
      : acc(n), ref(n), profile(p) {
    std::mt19937_64 rng(seed);
    for (std::uint32_t i = 0; i < n; ++i) {
      // Mostly `balance`, some empty, some rich: every outcome occurs.
      const std::int64_t b = rng() % 8 == 0 ? 0 : rng() % 8 == 1 ? balance * 10 : balance;
      acc[i].bal = b;
      acc[i].gas_cost = gas;
      ref[i].bal = b;
      ref[i].gas = gas;
    }
    Status s = Engine::create(c, acc.data(), acc.size(), &engine);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }

  /// Runs one block on both; returns the first difference, or empty.
  std::string run(const std::vector<Tx>& block, BlockStats* st = nullptr) {
    std::vector<Outcome> out(block.size());
    Status s = engine->execute(profile, block, out, st);
    if (!s.ok()) return "engine error: " + s.to_string();
    for (std::size_t i = 0; i < block.size(); ++i) {
      const test::RefTransfer t{block[i].sender, block[i].receiver, block[i].amt};
      const RefOutcome r = profile == ProfileKind::kSmallCoin ? test::ref_smallcoin(ref, t) : test::ref_smallcoin_plus(ref, t);
      if (static_cast<int>(r) != static_cast<int>(out[i]))
        return "transaction " + std::to_string(i) + ": outcome " + outcome_name(out[i]) + ", serially " +
               std::to_string(static_cast<int>(r));
    }
    return compare_accounts();
  }

  std::string compare_accounts() const {
    for (std::size_t i = 0; i < acc.size(); ++i) {
      const AccountValue v = load(acc[i]);
      const RefAccount& r = ref[i];
      if (v.bal != r.bal || v.seq_num != r.seq || v.sent_events != r.sent || v.rec_events != r.rec ||
          acc[i].reserved.load() != 0)
        return "account " + std::to_string(i) + ": bal " + std::to_string(v.bal) + " (serially " + std::to_string(r.bal) +
               "), seq " + std::to_string(v.seq_num) + "/" + std::to_string(r.seq) + ", sent " +
               std::to_string(v.sent_events) + "/" + std::to_string(r.sent) + ", rec " + std::to_string(v.rec_events) +
               "/" + std::to_string(r.rec);
    }
    return {};
  }
};

EngineConfig config(Mode m, DagDevice d = DagDevice::kCpuAccounts, unsigned threads = 8) {
  EngineConfig c;
  c.mode = m;
  c.threads = threads;
  c.dag = d;
  return c;
}

struct Case {
  Mode mode;
  DagDevice dag;
  bool adaptive = false;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string s = std::string(mode_name(info.param.mode)) + "_" + dag_device_name(info.param.dag) +
                  (info.param.adaptive ? "_adaptive" : "");
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

class Oracle : public testing::TestWithParam<Case> {};

/// Runs `blocks` blocks of `size` over one table; fails on the first difference.
std::uint64_t check_workload(const Case& c, ProfileKind p, double theta, std::size_t size, std::size_t blocks,
                             bool self, std::uint64_t seed) {
  EngineConfig ec = config(c.mode, c.dag);
  ec.adaptive = c.adaptive;
  Bench b(ec, p, 10000, 100, 1, seed);
  WorkloadConfig w;
  w.accounts = 10000;
  w.theta = theta;
  w.allow_self = self;
  w.seed = seed;
  TransferGenerator gen(w);
  std::uint64_t failures = 0;
  for (std::size_t k = 0; k < blocks; ++k) {
    BlockStats st;
    const std::string diff = b.run(gen.block(size), &st);
    EXPECT_EQ(diff, "") << mode_name(c.mode) << " " << profile_name(p) << " theta " << theta << " block " << k
                        << " of " << size;
    if (!diff.empty()) break;
    failures += st.part1_failures;
  }
  return failures;
}

TEST_P(Oracle, UniformAndZipfBothProfiles) {
  const double sc = scale();
  std::uint64_t txs = 0, failures = 0;
  const ProfileKind profiles[] = {ProfileKind::kSmallCoin, ProfileKind::kSmallCoinPlus};
  const double thetas[] = {0, 0.6, 0.8, 0.99};
  std::uint64_t seed = 1;
  for (ProfileKind p : profiles)
    for (double theta : thetas) {
      const std::size_t blocks = std::max<std::size_t>(1, static_cast<std::size_t>(6 * sc));
      failures += check_workload(GetParam(), p, theta, 1000, blocks, theta > 0.7, seed++);
      txs += blocks * 1000;
    }
  // Contended workloads must reach the fallback, or the test proves nothing about it.
  if (GetParam().mode != Mode::kSequential && GetParam().mode != Mode::kDag) {
    EXPECT_GT(failures, 0u);
  }
  RecordProperty("transactions", static_cast<int>(txs));
}

TEST_P(Oracle, BlockSizesOneToTenThousand) {
  const double sc = scale();
  std::uint64_t seed = 100;
  for (std::size_t size : {1, 2, 7, 64, 999, 10000}) {
    if (size == 10000 && sc < 0.5) continue;
    check_workload(GetParam(), ProfileKind::kSmallCoinPlus, 0.9, size, size >= 1000 ? 2 : 20, true, seed++);
    check_workload(GetParam(), ProfileKind::kSmallCoin, 0, size, size >= 1000 ? 2 : 20, true, seed++);
  }
}

/// Table 4.1: A=D=X=10, B=C=Y=0; T4 aborts in the fast path, the fallback re-runs T4 (abort) and
/// T5 (commit).
TEST_P(Oracle, Table41Example) {
  enum { A, B, C, D, X, Y };
  std::vector<Account> acc(6);
  for (int i : {A, D, X}) acc[i].bal = 10;
  std::unique_ptr<Engine> e;
  EngineConfig ec = config(GetParam().mode, GetParam().dag);
  ec.adaptive = GetParam().adaptive;
  ASSERT_TRUE(Engine::create(ec, acc.data(), acc.size(), &e).ok());
  const std::vector<Tx> block = {{A, B, 5}, {X, Y, 2}, {A, B, 5}, {C, D, 5}, {D, C, 5}};
  std::vector<Outcome> out(block.size());
  BlockStats st;
  ASSERT_TRUE(e->execute(ProfileKind::kSmallCoin, block, out, &st).ok());
  const Outcome C_ = Outcome::kCommitted;
  EXPECT_EQ(out, (std::vector<Outcome>{C_, C_, C_, Outcome::kAborted, C_}));
  const std::int64_t want[] = {0, 10, 5, 5, 8, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(acc[i].bal.load(), want[i]) << "account " << i;
  if (GetParam().mode == Mode::kOranguTan || GetParam().mode == Mode::kCommutative) {
    EXPECT_EQ(st.part1_failures, 1u);
    EXPECT_EQ(st.clusters_rerun, 1u);  // {T4, T5}
    EXPECT_EQ(st.rerun_txs, 2u);
  }
}

/// Sender = receiver everywhere, with balances that cannot cover the amounts.
TEST_P(Oracle, SelfTransfers) {
  for (ProfileKind p : {ProfileKind::kSmallCoin, ProfileKind::kSmallCoinPlus}) {
    EngineConfig ec = config(GetParam().mode, GetParam().dag);
    ec.adaptive = GetParam().adaptive;
    Bench b(ec, p, 50, 10, 2);
    std::mt19937_64 rng(3);
    for (int k = 0; k < 20; ++k) {
      std::vector<Tx> block(200);
      for (Tx& t : block) {
        t.sender = t.receiver = static_cast<std::uint32_t>(rng() % 50);
        t.amt = 1 + static_cast<std::int64_t>(rng() % 30);
      }
      ASSERT_EQ(b.run(block), "") << profile_name(p) << " block " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, Oracle,
                         testing::Values(Case{Mode::kOranguTan, DagDevice::kCpuAccounts},
                                         Case{Mode::kOranguTan, DagDevice::kCpuPairs},
                                         Case{Mode::kCommutative, DagDevice::kCpuAccounts},
                                         Case{Mode::kCommutative, DagDevice::kCpuAccounts, true},
                                         Case{Mode::kDag, DagDevice::kCpuAccounts},
                                         Case{Mode::kDag, DagDevice::kCpuPairs},
                                         Case{Mode::kSequential, DagDevice::kCpuAccounts},
                                         Case{Mode::kSpeedex, DagDevice::kCpuAccounts}),
                         case_name);

// ---- Negative controls: each planted bug must make the checker report a difference. ----

/// Runs contended SmallCoin+ blocks with `faults` until the checker reports a difference.
bool caught(Mode mode, DagDevice dag, EngineFaults faults) {
  EngineConfig c = config(mode, dag);
  c.faults = faults;
  Bench b(c, ProfileKind::kSmallCoinPlus, 10000, 100, 1, 11);
  WorkloadConfig w;
  w.theta = 0.9;
  w.seed = 5;
  TransferGenerator gen(w);
  for (int k = 0; k < 20; ++k)
    if (!b.run(gen.block(1000)).empty()) return true;
  return false;
}

TEST(OracleNegative, CompensatingOnlyTheFailedTransactionIsCaught) {
  EngineFaults f;
  f.compensate_only_failed = true;
  EXPECT_TRUE(caught(Mode::kOranguTan, DagDevice::kCpuAccounts, f));
}

TEST(OracleNegative, LargerIndexAsRootIsCaught) {
  EngineFaults f;
  f.dag.larger_root = true;
  EXPECT_TRUE(caught(Mode::kOranguTan, DagDevice::kCpuAccounts, f));
  EXPECT_TRUE(caught(Mode::kOranguTan, DagDevice::kCpuPairs, f));
  EXPECT_TRUE(caught(Mode::kDag, DagDevice::kCpuAccounts, f));
}

TEST(OracleNegative, NoBarrierIsCaught) {
  EngineFaults f;
  f.no_barrier = true;
  EXPECT_TRUE(caught(Mode::kOranguTan, DagDevice::kCpuAccounts, f));
}

TEST(OracleNegative, ConflictTestIgnoringTheReceiverIsCaught) {
  EngineFaults f;
  f.dag.ignore_receiver = true;
  EXPECT_TRUE(caught(Mode::kOranguTan, DagDevice::kCpuAccounts, f));
  EXPECT_TRUE(caught(Mode::kDag, DagDevice::kCpuPairs, f));
}

TEST(OracleNegative, CorrectEngineIsNotFlagged) {
  EXPECT_FALSE(caught(Mode::kOranguTan, DagDevice::kCpuAccounts, {}));
}

// ---- The DAG builders agree (the CPU twin of the GPU kernels and the per-account builder). ----

TEST(Dag, PairsAndAccountsBuildersGiveTheSameRoots) {
  Team team(8);
  for (double theta : {0.0, 0.6, 0.99}) {
    WorkloadConfig w;
    w.theta = theta;
    w.seed = 9;
    TransferGenerator gen(w);
    for (std::size_t n : {1, 5, 257, 3000}) {
      const auto block = gen.block(n);
      std::vector<std::uint32_t> parent(n), r1(n), r2(n), first(w.accounts, UINT32_MAX);
      build_dag_cpu_pairs(team, block.data(), n, parent.data(), r1.data());
      build_dag_cpu_accounts(team, block.data(), n, first.data(), parent.data(), r2.data());
      ASSERT_EQ(r1, r2) << "theta " << theta << " n " << n;
      for (std::size_t i = 0; i < n; ++i) ASSERT_LE(r1[i], i);
      ASSERT_TRUE(std::all_of(first.begin(), first.end(), [](std::uint32_t x) { return x == UINT32_MAX; }));
    }
  }
}

// ---- Bad input: an error naming the transaction, and the block changes nothing. ----

TEST(BadInput, EachIsRefusedNamingTheTransactionAndChangesNothing) {
  for (Mode m : {Mode::kOranguTan, Mode::kCommutative, Mode::kDag, Mode::kSequential, Mode::kSpeedex}) {
    EngineConfig c = config(m);
    c.max_block = 100;
    Bench b(c, ProfileKind::kSmallCoin, 100, 50, 1);
    std::vector<Tx> good(50);
    for (std::uint32_t i = 0; i < 50; ++i) good[i] = {i, (i + 1) % 100, 5};
    auto expect_refused = [&](std::vector<Tx> block, const std::string& what) {
      std::vector<Outcome> out(block.size());
      Status s = b.engine->execute(ProfileKind::kSmallCoin, block, out);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << mode_name(m) << " " << what;
      EXPECT_NE(s.message().find(what), std::string::npos) << mode_name(m) << ": " << s.message();
      EXPECT_EQ(b.compare_accounts(), "") << mode_name(m) << " " << what;
    };
    auto bad = good;
    bad[17].receiver = 100;
    expect_refused(bad, "transaction 17: unknown receiver");
    bad = good;
    bad[3].sender = 1000;
    expect_refused(bad, "transaction 3: unknown sender");
    bad = good;
    bad[40].amt = 0;
    expect_refused(bad, "transaction 40: amount 0");
    bad = good;
    bad[41].amt = -5;
    expect_refused(bad, "transaction 41: amount -5");
    bad = good;
    bad[42].amt = kMaxAmount + 1;
    expect_refused(bad, "transaction 42: amount");
    expect_refused(std::vector<Tx>(101, Tx{0, 1, 1}), "exceeds the limit of 100");
    // Overflow: a receiver near the balance limit.
    b.acc[60].bal = kMaxBalance - 10;
    b.ref[60].bal = kMaxBalance - 10;
    b.engine->accounts_changed();
    bad = good;
    bad[9].receiver = 60;
    expect_refused(bad, "transaction 9: overflow");
    // And the good block still runs afterwards.
    EXPECT_EQ(b.run(good), "") << mode_name(m);
  }
}

}  // namespace
}  // namespace duet::batch::orangutan

namespace duet::batch::orangutan {
namespace {

/// A one-member team (the keyspace's team on a 2-core machine) and two members, small tables,
/// profiles alternating between blocks, blocks of many sizes with self-transfers.
TEST(OracleSmallTeams, OneAndTwoMembersEveryMode) {
  for (unsigned threads : {1u, 2u})
    for (Mode m : {Mode::kOranguTan, Mode::kCommutative, Mode::kDag, Mode::kSpeedex})
      for (ProfileKind p : {ProfileKind::kSmallCoin, ProfileKind::kSmallCoinPlus}) {
        Bench b(config(m, DagDevice::kCpuAccounts, threads), p, 64, 20, 1, 5);
        std::mt19937_64 rng(threads * 10 + static_cast<unsigned>(m));
        const int blocks = std::max(4, static_cast<int>(40 * scale()));
        for (int k = 0; k < blocks; ++k) {
          b.profile = (k + static_cast<int>(p)) % 3 == 0 ? ProfileKind::kSmallCoin : ProfileKind::kSmallCoinPlus;
          std::vector<Tx> block(1 + rng() % 300);
          for (auto& t : block) {
            t.sender = static_cast<std::uint32_t>(rng() % 64);
            t.receiver = static_cast<std::uint32_t>(rng() % 64);
            t.amt = 1 + static_cast<std::int64_t>(rng() % 9);
          }
          ASSERT_EQ(b.run(block), "") << threads << " threads, " << mode_name(m) << " " << profile_name(b.profile)
                                      << " block " << k;
        }
      }
}

}  // namespace
}  // namespace duet::batch::orangutan

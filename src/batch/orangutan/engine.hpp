// OranguTAN's engine: runs blocks of resolved transfers against an account table with the result
// of serial execution in block order, in one of several modes (item 6 of the design):
//   kOranguTan   the fast path (Alg. 12: every Part I in parallel, a barrier, every Part II),
//                with the DAG started on the GPU at the block's start; when a Part I failed,
//                the fallback (Alg. 14) compensates and re-runs each cluster that holds one.
//                Without a GPU the DAG is built on the CPU only when a Part I failed.
//   kCommutative the fast path; the DAG is built (on the configured device) only when a Part I
//                failed.
//   kDag         no fast path: the DAG is built first and every cluster runs serially in block
//                order (clusters in parallel); run_blocks() builds block b+1's DAG on the GPU
//                while block b executes.
//   kSequential  every transaction in block order on one thread.
//   kSpeedex     the SPEEDEX-style baseline: reserve units on the sender's semaphore (phase 1),
//                a barrier, then withdraw and deposit (3 RMWs per transfer); a block in which a
//                reservation fails runs serially after its reservations are released.
//
// Fallback choice: the whole cluster is compensated (reverse block order) and re-run (block
// order), as Alg. 14's pseudocode does, not only the failed transaction's dependents as the
// prose says: a cluster's accounts are then back at their pre-block values, so the re-run is
// serial execution from the block's start state.
//
// Thread safety: one block at a time per Engine (callers serialise); accounts are not touched
// by anyone else while a block runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "batch/orangutan/dag.hpp"
#include "batch/orangutan/gpu_dag.hpp"
#include "batch/orangutan/profiles.hpp"
#include "batch/orangutan/team.hpp"
#include "duet/status.hpp"

namespace duet::batch::orangutan {

enum class Mode : std::uint8_t { kOranguTan = 0, kCommutative = 1, kDag = 2, kSequential = 3, kSpeedex = 4 };
const char* mode_name(Mode m);
/// "orangutan", "commutative", "dag", "sequential", "speedex"; InvalidArgument otherwise.
Status parse_mode(std::string_view text, Mode* out);

/// Where the DAG is built. kAuto: the GPU when one can be used, else kCpuAccounts.
enum class DagDevice : std::uint8_t { kAuto = 0, kGpu = 1, kCpuPairs = 2, kCpuAccounts = 3 };
const char* dag_device_name(DagDevice d);
/// "auto", "gpu", "cpu-pairs", "cpu" (= cpu-accounts); InvalidArgument otherwise.
Status parse_dag_device(std::string_view text, DagDevice* out);

/// Planted bugs for the tests' negative controls (all off in normal use).
struct EngineFaults {
  bool compensate_only_failed = false;  ///< fallback compensates and re-runs only failed Part Is
  bool no_barrier = false;              ///< Part II of a transaction may run before others' Part I
  DagFaults dag;                        ///< larger root, conflict test without the receiver
};

/// Limits on input (bad input gets an error naming the transaction; the block changes nothing).
constexpr std::int64_t kMaxAmount = std::int64_t{1} << 40;   ///< largest transfer amount, and gas
constexpr std::int64_t kMaxBalance = std::int64_t{1} << 62;  ///< largest balance an account may reach

/// Makes one GPU DAG slot for blocks of up to max_txs transactions (make_gpu_dag's contract).
using GpuDagFactory = std::function<Status(std::size_t max_txs, std::unique_ptr<GpuDag>* out)>;

struct EngineConfig {
  Mode mode = Mode::kOranguTan;
  unsigned threads = 0;  ///< team size (0: one per hardware thread)
  DagDevice dag = DagDevice::kAuto;
  DagForm dag_form = DagForm::kRoots;
  std::size_t max_block = std::size_t{1} << 20;  ///< larger blocks are refused
  /// Validation without reading balances, and without its barrier, whenever the bound on the
  /// total balance allows (the same outcome). false: always the exact check with its barrier
  /// (the earlier engine, kept for A/B benchmarks).
  bool quick_validation = true;
  TeamSync team_sync = TeamSync::kAuto;  ///< how the team synchronises (team.hpp)
  /// orangutan and commutative: run each block either on the team (the fast path) or serially
  /// on the caller, whichever measured cheaper lately (path_chooser.hpp). Both give the serial
  /// result. Off in the benchmark's named modes; on in the keyspace.
  bool adaptive = false;
  EngineFaults faults;
  /// Fault-injection hook: makes the GPU slots in place of make_gpu_dag (empty: the real GPU).
  /// The tests hand in slots that fail to launch, fail to wait, lose the device or return a
  /// malformed root array, and check that every block still commits with the serial result.
  GpuDagFactory gpu_dag_factory;
};

/// What happened to one block.
struct BlockStats {
  std::uint32_t txs = 0;
  std::uint32_t part1_failures = 0;  ///< fast-path (or reservation) failures
  std::uint32_t rerun_txs = 0;       ///< transactions compensated and re-run (or run serially)
  std::uint32_t clusters_rerun = 0;
  std::uint32_t aborted = 0;   ///< final outcome kAborted
  std::uint32_t gas_only = 0;  ///< final outcome kGasOnly
  bool used_dag = false;       ///< the block waited for (or built) its DAG
  bool serial = false;         ///< run serially on the caller (EngineConfig::adaptive)
  bool dag_on_gpu = false;
  std::uint64_t dag_wait_ns = 0;  ///< time spent waiting for / building the DAG
  std::uint64_t total_ns = 0;
};

/// Running totals over an engine's blocks (for INFO).
struct EngineTotals {
  std::uint64_t blocks = 0, txs = 0, part1_failures = 0, rerun_txs = 0, fallback_blocks = 0, aborted = 0,
                gas_only = 0, gpu_failures = 0, serial_blocks = 0;
};

/// One block of resolved transfers for run_blocks().
struct BlockView {
  std::span<const Tx> txs;
  std::span<Outcome> out;  ///< txs.size() entries
};

class Engine {
 public:
  /// An engine over accounts[0, n_accounts) (owned by the caller, which keeps it alive).
  /// With dag kGpu and no usable GPU: kUnavailable. kAuto takes the GPU when make_gpu_dag
  /// succeeds, else the CPU (said by dag_description()).
  static Status create(const EngineConfig& config, Account* accounts, std::size_t n_accounts,
                       std::unique_ptr<Engine>* out);
  ~Engine();

  /// Validates and runs one block of `profile` transactions; out gets one outcome per
  /// transaction. Bad input (an account id >= n_accounts, an amount <= 0 or > kMaxAmount, a
  /// deposit that could take a balance past kMaxBalance, a block over max_block) returns
  /// kInvalidArgument naming the first bad transaction, and changes nothing.
  Status execute(ProfileKind profile, std::span<const Tx> txs, std::span<Outcome> out, BlockStats* stats = nullptr);
  /// Runs blocks back to back, in order (kDag pipelines the DAG of the next block on the GPU).
  /// Stops at the first error (earlier blocks stay committed); stats gets one entry per block run.
  Status run_blocks(ProfileKind profile, std::span<const BlockView> blocks, std::vector<BlockStats>* stats = nullptr);

  /// Validation alone (as execute() does it first): Ok or the error naming the first bad one.
  Status validate(std::span<const Tx> txs);

  /// Grows the account table view (after the owner appended accounts; no block in flight).
  /// The new accounts' balances join the engine's bound on the total balance, which lets
  /// validation skip reading receivers' balances while no deposit can overflow.
  void set_accounts(Account* accounts, std::size_t n_accounts);
  /// Call after changing balances other than through blocks (tests, benchmark resets; no block
  /// in flight): recomputes the bound on the total balance. O(accounts).
  void accounts_changed();

  const EngineConfig& config() const { return config_; }
  /// "gpu: NVIDIA H100 ..." / "cpu-accounts" / "cpu-accounts (gpu failed: ...)".
  std::string dag_description() const;
  EngineTotals totals() const;
  Team& team() { return *team_; }

  struct Impl;  ///< internal (engine.cpp)

 private:
  Engine(const EngineConfig& config, Account* accounts, std::size_t n_accounts);
  void launcher_loop();
  std::unique_ptr<Impl> impl_;
  EngineConfig config_;
  std::unique_ptr<Team> team_;
  EngineTotals totals_;
};

}  // namespace duet::batch::orangutan

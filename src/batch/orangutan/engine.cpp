#include "batch/orangutan/engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "batch/orangutan/path_chooser.hpp"
#include "common/log.hpp"
#include "gpu/device.hpp"

namespace duet::batch::orangutan {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kCommitted: return "committed";
    case Outcome::kGasOnly: return "gas-only";
    case Outcome::kAborted: return "aborted";
  }
  return "unknown";
}

const char* profile_name(ProfileKind p) { return p == ProfileKind::kSmallCoinPlus ? "smallcoin+" : "smallcoin"; }

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kOranguTan: return "orangutan";
    case Mode::kCommutative: return "commutative";
    case Mode::kDag: return "dag";
    case Mode::kSequential: return "sequential";
    case Mode::kSpeedex: return "speedex";
  }
  return "unknown";
}

Status parse_mode(std::string_view t, Mode* out) {
  for (Mode m : {Mode::kOranguTan, Mode::kCommutative, Mode::kDag, Mode::kSequential, Mode::kSpeedex})
    if (t == mode_name(m)) {
      *out = m;
      return Status::Ok();
    }
  return Status::InvalidArgument("mode must be orangutan, commutative, dag, sequential or speedex, got '" + std::string(t) + "'");
}

const char* dag_device_name(DagDevice d) {
  switch (d) {
    case DagDevice::kAuto: return "auto";
    case DagDevice::kGpu: return "gpu";
    case DagDevice::kCpuPairs: return "cpu-pairs";
    case DagDevice::kCpuAccounts: return "cpu";
  }
  return "unknown";
}

Status parse_dag_device(std::string_view t, DagDevice* out) {
  if (t == "auto") *out = DagDevice::kAuto;
  else if (t == "gpu") *out = DagDevice::kGpu;
  else if (t == "cpu-pairs") *out = DagDevice::kCpuPairs;
  else if (t == "cpu" || t == "cpu-accounts") *out = DagDevice::kCpuAccounts;
  else return Status::InvalidArgument("dag device must be auto, gpu, cpu or cpu-pairs, got '" + std::string(t) + "'");
  return Status::Ok();
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kNone = SIZE_MAX;
constexpr unsigned kGpuSlots = 2;

std::uint64_t ns_since(Clock::time_point t0) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

template <class P>
std::int64_t withdrawal(const Account* a, const Tx& t) {
  return P::kKind == ProfileKind::kSmallCoinPlus ? a[t.sender].gas_cost + t.amt : t.amt;
}

void atomic_min(std::atomic<std::size_t>& a, std::size_t v) {
  std::size_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

struct Engine::Impl {
  Account* acc = nullptr;
  std::size_t n_acc = 0;
  // An upper bound on the sum of the positive balances, over accounts[0, summed). Transfers
  // never raise the sum (SmallCoin keeps it, SmallCoin+ burns gas), so it bounds every balance
  // before every block; while it is at most the overflow limit, no deposit can overflow and
  // validation reads no balance (quick validation, below).
  std::int64_t supply = 0;
  std::size_t summed = 0;
  // Per-block scratch, grown to the largest block seen.
  std::vector<std::uint8_t> aborted, redo;
  std::vector<std::uint32_t> parent, root_cpu, next, tail, roots;
  std::vector<std::uint32_t> first;  ///< per account, UINT32_MAX between blocks
  // GPU slots: each holds one block's DAG in flight.
  std::vector<std::unique_ptr<GpuDag>> slots;
  std::vector<std::uint64_t> slot_tag;  ///< the block (serial) each slot's last launch is for
  std::uint64_t serial = 0;               ///< the block being executed
  unsigned next_slot = 0;
  std::atomic<bool> gpu{false};
  std::string gpu_note;                    ///< under gpu_m
  std::atomic<std::uint64_t> gpu_failures{0};
  std::mutex gpu_m;                        ///< slots, slot_tag, next_slot, gpu_note
  // The launcher thread (orangutan mode with a GPU): stages and launches a block's DAG while
  // the team runs the fast path, so the launch's cost is off the block's critical path.
  std::thread launcher;
  std::atomic<std::uint64_t> req{0}, done{0};  ///< serial requested / serial handled
  const Tx* req_txs = nullptr;
  std::size_t req_n = 0;
  std::atomic<bool> stop{false};
  // Shared between team members within one block.
  std::atomic<std::size_t> bad{kNone};
  std::atomic<std::uint32_t> failures{0};
  std::atomic<std::size_t> cursor{0};
  std::atomic<std::uint32_t> rerun_aborted{0}, rerun_gas{0}, rerun{0};
  PathChooser chooser;  ///< EngineConfig::adaptive

  /// The slot whose launch is for block `tag`, or -1.
  int slot_for(std::uint64_t tag) const {
    for (std::size_t k = 0; k < slots.size(); ++k)
      if (slot_tag[k] == tag) return static_cast<int>(k);
    return -1;
  }

  void grow(std::size_t n) {
    if (aborted.size() >= n) return;
    aborted.resize(n);
    redo.resize(n);
    parent.resize(n);
    root_cpu.resize(n);
    next.resize(n);
    tail.resize(n);
    roots.reserve(n);
  }
};

Engine::Engine(const EngineConfig& config, Account* accounts, std::size_t n_accounts)
    : impl_(std::make_unique<Impl>()), config_(config), team_(std::make_unique<Team>(config.threads, config.team_sync)) {
  set_accounts(accounts, n_accounts);
}

Engine::~Engine() {
  if (impl_->launcher.joinable()) {
    impl_->stop.store(true);
    impl_->req.fetch_add(1, std::memory_order_release);
    impl_->req.notify_one();
    impl_->launcher.join();
  }
}

EngineTotals Engine::totals() const {
  EngineTotals t = totals_;
  t.gpu_failures = impl_->gpu_failures.load();
  return t;
}

Status Engine::create(const EngineConfig& config, Account* accounts, std::size_t n_accounts,
                      std::unique_ptr<Engine>* out) {
  if (config.max_block == 0 || config.max_block > (std::size_t{1} << 20))
    return Status::InvalidArgument("max_block must be between 1 and 2^20");
  if (config.threads > 1024) return Status::InvalidArgument("threads must be at most 1024");
  std::unique_ptr<Engine> e(new Engine(config, accounts, n_accounts));
  Impl& im = *e->impl_;
  const bool want_gpu = config.dag == DagDevice::kGpu || config.dag == DagDevice::kAuto;
  if (want_gpu && config.mode != Mode::kSequential && config.mode != Mode::kSpeedex) {
    Status s;
    for (unsigned i = 0; i < kGpuSlots && s.ok(); ++i) {
      std::unique_ptr<GpuDag> slot;
      const std::size_t cap = std::min<std::size_t>(config.max_block, std::size_t{1} << 17);
      s = config.gpu_dag_factory ? config.gpu_dag_factory(cap, &slot) : make_gpu_dag(cap, &slot);
      if (s.ok() && !slot) s = Status::Internal("the GPU DAG factory returned no slot");
      if (s.ok()) im.slots.push_back(std::move(slot));
    }
    im.slot_tag.assign(im.slots.size(), 0);
    if (!s.ok()) {
      im.slots.clear();
      if (config.dag == DagDevice::kGpu) return s;
      im.gpu_note = s.message();
    } else {
      im.gpu = true;
      if (config.mode == Mode::kOranguTan) {
        Engine* self = e.get();
        im.launcher = std::thread([self] { self->launcher_loop(); });
      }
    }
  }
  *out = std::move(e);
  return Status::Ok();
}

void Engine::set_accounts(Account* accounts, std::size_t n_accounts) {
  Impl& im = *impl_;
  if (accounts != im.acc || n_accounts < im.summed) {
    im.supply = 0;
    im.summed = 0;
  }
  im.acc = accounts;
  im.n_acc = n_accounts;
  im.first.resize(n_accounts, UINT32_MAX);
  for (; im.summed < n_accounts; ++im.summed) {
    const std::int64_t b = std::max<std::int64_t>(0, accounts[im.summed].bal.load(std::memory_order_relaxed));
    im.supply = b > kMaxBalance || im.supply > kMaxBalance - b ? kMaxBalance + 1 : im.supply + b;  // saturates
  }
}

void Engine::accounts_changed() {
  impl_->summed = 0;
  impl_->supply = 0;
  set_accounts(impl_->acc, impl_->n_acc);
}

std::string Engine::dag_description() const {
  if (impl_->gpu) return config_.gpu_dag_factory ? std::string("gpu: injected slots") : "gpu: " + gpu::device().name;
  std::lock_guard<std::mutex> lk(impl_->gpu_m);
  const char* cpu = config_.dag == DagDevice::kCpuPairs ? "cpu-pairs" : "cpu";
  return impl_->gpu_note.empty() ? std::string(cpu) : std::string(cpu) + " (" + impl_->gpu_note + ")";
}

namespace {

/// The largest balance a receiver may hold before a block of n transfers.
std::int64_t overflow_cap(std::size_t n) { return kMaxBalance - static_cast<std::int64_t>(n) * kMaxAmount; }

/// The first bad transaction in [b, e), or kNone. Without check_balances only ids and amounts
/// are checked (the caller knows that no receiver can be over the cap).
/// How many transfers ahead the fast path prefetches the accounts it will update.
constexpr std::size_t kPrefetchAhead = 16;

std::size_t first_bad(const Tx* txs, std::size_t b, std::size_t e, std::size_t n, const Account* acc, std::size_t n_acc,
                      bool check_balances = true) {
  const std::int64_t cap = overflow_cap(n);
  for (std::size_t i = b; i < e; ++i) {
    const Tx& t = txs[i];
    if (t.sender >= n_acc || t.receiver >= n_acc || t.amt <= 0 || t.amt > kMaxAmount) return i;
    if (check_balances && acc[t.receiver].bal.load(std::memory_order_relaxed) > cap) return i;
  }
  return kNone;
}

Status bad_input(const Tx* txs, std::size_t i, std::size_t n, const Account* acc, std::size_t n_acc) {
  const Tx& t = txs[i];
  const std::string at = "transaction " + std::to_string(i) + ": ";
  if (t.sender >= n_acc) return Status::InvalidArgument(at + "unknown sender account id " + std::to_string(t.sender));
  if (t.receiver >= n_acc) return Status::InvalidArgument(at + "unknown receiver account id " + std::to_string(t.receiver));
  if (t.amt <= 0) return Status::InvalidArgument(at + "amount " + std::to_string(t.amt) + " is not positive");
  if (t.amt > kMaxAmount)
    return Status::InvalidArgument(at + "amount " + std::to_string(t.amt) + " exceeds the limit of 2^40");
  return Status::InvalidArgument(at + "overflow: the receiver holds " + std::to_string(acc[t.receiver].bal.load()) +
                                 ", and a block of " + std::to_string(n) +
                                 " transfers could take it past the balance limit of 2^62");
}

}  // namespace

Status Engine::validate(std::span<const Tx> txs) {
  if (txs.size() > config_.max_block)
    return Status::InvalidArgument("block of " + std::to_string(txs.size()) + " transactions exceeds the limit of " +
                                   std::to_string(config_.max_block));
  const bool balances = impl_->supply > overflow_cap(txs.size());
  const std::size_t i = first_bad(txs.data(), 0, txs.size(), txs.size(), impl_->acc, impl_->n_acc, balances);
  return i == kNone ? Status::Ok() : bad_input(txs.data(), i, txs.size(), impl_->acc, impl_->n_acc);
}

namespace {

/// A root array from the GPU is used only when it is well formed: every root is at or before
/// its transaction and is its own root. O(n), on the host. (A well-formed but wrong array cannot
/// be told from a right one without building the DAG again; a failed kernel, copy or lost device
/// is reported by the runtime instead.)
Status check_roots(const std::uint32_t* root, std::size_t n) {
  if (!root) return Status::Internal("the GPU DAG returned no root array");
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = root[i];
    if (r > i || root[r] != r)
      return Status::Internal("the GPU DAG returned a malformed root array (transaction " + std::to_string(i) +
                              ", root " + std::to_string(r) + ")");
  }
  return Status::Ok();
}

/// (gpu_m held.)
void gpu_failure(Engine::Impl& im, EngineTotals&, const Status& s) {
  log(LogLevel::kWarn, "batch: the GPU conflict DAG failed (" + s.message() + "); the DAG is built on the CPU from now on");
  im.gpu = false;
  im.gpu_note = "gpu failed: " + s.message();
  im.gpu_failures.fetch_add(1);
}

/// Launches block `tag`'s DAG on the first idle slot, unless one already builds it or none is
/// idle (the fast path never waits for the GPU to start a DAG it may not need). gpu_m held.
void launch_on_free_slot(Engine::Impl& im, const EngineConfig& cfg, const Tx* txs, std::size_t n, std::uint64_t tag,
                         EngineTotals& totals) {
  if (!im.gpu || im.slot_for(tag) >= 0 || n > im.slots[0]->capacity()) return;
  for (unsigned k = 0; k < im.slots.size(); ++k) {
    const unsigned s = (im.next_slot + k) % im.slots.size();
    if (!im.slots[s]->idle()) continue;
    Status st = im.slots[s]->launch(txs, n, cfg.dag_form, cfg.faults.dag);
    if (!st.ok()) {
      gpu_failure(im, totals, st);
      return;
    }
    im.slot_tag[s] = tag;
    im.next_slot = s + 1;
    return;
  }
}

/// Everything one block needs; the mode functions below run it.
template <class P>
struct BlockRun {
  Engine::Impl& im;
  Team& team;
  const EngineConfig& cfg;
  const Tx* txs;
  std::size_t n;
  Outcome* out;
  BlockStats& st;
  EngineTotals& totals;
  bool serial = false;  ///< run this block serially on the caller (adaptive)

  Status bad_status() const { return bad_input(txs, im.bad.load(), n, im.acc, im.n_acc); }

  /// Quick validation: the supply bound shows that no receiver can be over the overflow cap,
  /// so only ids and amounts need checking, and no balance is read. The outcome is the exact
  /// check's.
  bool quick() const { return cfg.quick_validation && im.supply <= overflow_cap(n); }

  /// Starts this block's DAG on a free GPU slot (none free, or no GPU: it is built when
  /// needed): through the launcher thread when there is one, else here.
  void try_launch() {
    if (!im.gpu) return;
    if (im.launcher.joinable()) {
      im.req_txs = txs;
      im.req_n = n;
      im.req.store(im.serial, std::memory_order_release);
      im.req.notify_one();
      return;
    }
    std::lock_guard<std::mutex> lk(im.gpu_m);
    launch_on_free_slot(im, cfg, txs, n, im.serial, totals);
  }

  /// Waits until the launcher has handled this block's request (it reads the block).
  void wait_launcher() {
    if (!im.launcher.joinable() || im.req.load(std::memory_order_relaxed) != im.serial) return;
    while (im.done.load(std::memory_order_acquire) < im.serial) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }

  void gpu_failed(const Status& s) { gpu_failure(im, totals, s); }

  /// The block's root array: from the GPU slot (launching now if it was not), else the CPU.
  const std::uint32_t* dag() {
    const auto t0 = Clock::now();
    st.used_dag = true;
    const std::uint32_t* root = nullptr;
    wait_launcher();
    std::unique_lock<std::mutex> lk(im.gpu_m);
    int slot = im.gpu ? im.slot_for(im.serial) : -1;
    if (im.gpu && slot < 0 && n <= im.slots[0]->capacity()) {
      // No slot was free at the start: take the next one (waiting for it) now.
      const unsigned s = im.next_slot % im.slots.size();
      Status s2 = im.slots[s]->launch(txs, n, cfg.dag_form, cfg.faults.dag);
      if (s2.ok()) {
        im.slot_tag[s] = im.serial;
        im.next_slot = s + 1;
        slot = static_cast<int>(s);
      } else {
        gpu_failed(s2);
      }
    }
    if (im.gpu && slot >= 0) {
      Status s = im.slots[slot]->wait(&root);
      im.slot_tag[slot] = 0;
      if (s.ok()) s = check_roots(root, n);
      if (s.ok()) {
        st.dag_on_gpu = true;
      } else {
        gpu_failed(s);
        root = nullptr;
      }
    }
    lk.unlock();
    if (!root) {
      if (cfg.dag == DagDevice::kCpuPairs)
        build_dag_cpu_pairs(team, txs, n, im.parent.data(), im.root_cpu.data(), cfg.faults.dag);
      else
        build_dag_cpu_accounts(team, txs, n, im.first.data(), im.parent.data(), im.root_cpu.data(), cfg.faults.dag);
      root = im.root_cpu.data();
    }
    st.dag_wait_ns += ns_since(t0);
    return root;
  }

  /// Team-wide validation of the member's slice; true when the whole block is good (after a barrier).
  bool validate_member(unsigned m) {
    auto [b, e] = team.slice(n, m);
    const std::size_t i = first_bad(txs, b, e, n, im.acc, im.n_acc);
    if (i != kNone) atomic_min(im.bad, i);
    team.barrier(m);
    return im.bad.load(std::memory_order_relaxed) == kNone;
  }

  void reset_shared() {
    im.bad.store(kNone, std::memory_order_relaxed);
    im.failures.store(0, std::memory_order_relaxed);
    im.cursor.store(0, std::memory_order_relaxed);
    im.rerun_aborted.store(0, std::memory_order_relaxed);
    im.rerun_gas.store(0, std::memory_order_relaxed);
    im.rerun.store(0, std::memory_order_relaxed);
  }

  Status sequential() {
    const std::size_t i = first_bad(txs, 0, n, n, im.acc, im.n_acc, !quick());
    if (i != kNone) return bad_input(txs, i, n, im.acc, im.n_acc);
    for (std::size_t k = 0; k < n; ++k) count(out[k] = P::run(im.acc, txs[k]));
    return Status::Ok();
  }

  void count(Outcome o) {
    st.aborted += o == Outcome::kAborted;
    st.gas_only += o == Outcome::kGasOnly;
  }

  /// The fast path (Alg. 12); then the fallback when a Part I failed.
  Status fast_path(bool eager_dag) {
    if (eager_dag) try_launch();
    reset_shared();
    Account* acc = im.acc;
    std::uint8_t* ab = im.aborted.data();
    if (cfg.faults.no_barrier) {
      // Planted bug: each transaction's Part II right after its own Part I, walked in reverse
      // block order, so a later deposit can cover an earlier withdrawal.
      const std::size_t i = first_bad(txs, 0, n, n, acc, im.n_acc);
      if (i != kNone) return bad_input(txs, i, n, acc, im.n_acc);
      std::uint32_t f = 0;
      for (std::size_t k = n; k-- > 0;) {
        const bool ok = P::part1(acc, txs[k]);
        ab[k] = !ok;
        f += !ok;
        P::part2(acc, txs[k], !ok);
        out[k] = ok ? Outcome::kCommitted : Outcome::kAborted;
      }
      im.failures.store(f);
    } else {
      // With quick validation each member checks its own slice and runs its Part Is unless the
      // slice is bad; after the barrier every member sees whether any slice was bad and, if one
      // was, undoes its own Part Is. That saves the validation barrier. Otherwise the exact
      // validation reads the receivers' balances and a barrier follows it.
      const bool fused = quick();
      team.run([&](unsigned m) {
        auto [b, e] = team.slice(n, m);
        bool applied = true;
        if (fused) {
          const std::size_t i = first_bad(txs, b, e, n, acc, im.n_acc, false);
          if (i != kNone) {
            atomic_min(im.bad, i);
            applied = false;
          }
        } else if (!validate_member(m)) {
          return;
        }
        std::uint32_t f = 0;
        // Locked read-modify-writes do not overlap their cache misses the way plain stores
        // do, so each member prefetches the accounts it will touch a few transfers ahead.
        if (applied)
          for (std::size_t k = b; k < e; ++k) {
            if (k + kPrefetchAhead < e) __builtin_prefetch(&acc[txs[k + kPrefetchAhead].sender], 1);
            const bool ok = P::part1(acc, txs[k]);
            ab[k] = !ok;
            f += !ok;
          }
        if (f) im.failures.fetch_add(f, std::memory_order_relaxed);
        team.barrier(m);
        if (im.bad.load(std::memory_order_relaxed) != kNone) {  // fused validation found bad input
          if (applied)
            for (std::size_t k = b; k < e; ++k) P::compensate(acc, txs[k], true);
          return;
        }
        for (std::size_t k = b; k < e; ++k) {
          if (k + kPrefetchAhead < e) __builtin_prefetch(&acc[txs[k + kPrefetchAhead].receiver], 1);
          P::part2(acc, txs[k], ab[k]);
          out[k] = ab[k] ? Outcome::kAborted : Outcome::kCommitted;
        }
      });
      if (im.bad.load() != kNone) return bad_status();
    }
    st.part1_failures = im.failures.load();
    if (st.part1_failures == 0) return Status::Ok();  // any DAG in flight is simply not waited for
    fallback(dag());
    return Status::Ok();
  }

  /// Alg. 14: each cluster holding a failed Part I is compensated in reverse block order and
  /// re-run in block order, clusters in parallel.
  void fallback(const std::uint32_t* root) {
    Account* acc = im.acc;
    const std::uint8_t* ab = im.aborted.data();
    auto& roots = im.roots;
    roots.clear();
    if (cfg.faults.compensate_only_failed) {
      // Planted bug: only the failed transactions are compensated and re-run.
      for (std::size_t k = n; k-- > 0;)
        if (ab[k]) P::compensate(acc, txs[k], true);
      for (std::size_t k = 0; k < n; ++k)
        if (ab[k]) {
          out[k] = P::run(acc, txs[k]);
          count(out[k]);
          ++st.rerun_txs;
        }
      return;
    }
    cluster_lists(root, n, im.next.data(), im.tail.data());
    std::uint8_t* redo = im.redo.data();
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint32_t r = root[k];
      if (ab[k] && r <= k && !redo[r]) {
        redo[r] = 1;
        roots.push_back(r);
      }
    }
    std::sort(roots.begin(), roots.end());
    team.run([&](unsigned) {
      std::vector<std::uint32_t> members;
      std::uint32_t aborted = 0, gas = 0, txs_run = 0;
      for (;;) {
        const std::size_t c = im.cursor.fetch_add(1, std::memory_order_relaxed);
        if (c >= roots.size()) break;
        members.clear();
        for (std::uint32_t j = roots[c]; j != UINT32_MAX; j = im.next[j]) members.push_back(j);
        for (std::size_t q = members.size(); q-- > 0;) P::compensate(acc, txs[members[q]], ab[members[q]]);
        for (std::uint32_t j : members) {
          const Outcome o = P::run(acc, txs[j]);
          out[j] = o;
          aborted += o == Outcome::kAborted;
          gas += o == Outcome::kGasOnly;
        }
        txs_run += static_cast<std::uint32_t>(members.size());
      }
      im.rerun_aborted.fetch_add(aborted, std::memory_order_relaxed);
      im.rerun_gas.fetch_add(gas, std::memory_order_relaxed);
      im.rerun.fetch_add(txs_run, std::memory_order_relaxed);
    });
    for (std::uint32_t r : roots) redo[r] = 0;
    st.rerun_txs = im.rerun.load();
    st.clusters_rerun = static_cast<std::uint32_t>(roots.size());
    st.aborted += im.rerun_aborted.load();
    st.gas_only += im.rerun_gas.load();
  }

  /// Dag mode: the DAG first (already in flight on the GPU when `launched`), then every
  /// cluster serially in block order, clusters in parallel, without a fast path.
  Status dag_mode() {
    try_launch();
    reset_shared();
    if (quick()) {
      const std::size_t i = first_bad(txs, 0, n, n, im.acc, im.n_acc, false);
      if (i != kNone) return bad_input(txs, i, n, im.acc, im.n_acc);
    } else {
      team.run([&](unsigned m) { validate_member(m); });
      if (im.bad.load() != kNone) return bad_status();
    }
    const std::uint32_t* root = dag();
    cluster_lists(root, n, im.next.data(), im.tail.data());
    auto& roots = im.roots;
    roots.clear();
    for (std::size_t k = 0; k < n; ++k)
      if (root[k] == k) roots.push_back(static_cast<std::uint32_t>(k));
    Account* acc = im.acc;
    team.run([&](unsigned) {
      std::uint32_t aborted = 0, gas = 0;
      for (;;) {
        const std::size_t c = im.cursor.fetch_add(64, std::memory_order_relaxed);
        if (c >= roots.size()) break;
        const std::size_t e = std::min(roots.size(), c + 64);
        for (std::size_t q = c; q < e; ++q)
          for (std::uint32_t j = roots[q]; j != UINT32_MAX; j = im.next[j]) {
            const Outcome o = P::run(acc, txs[j]);
            out[j] = o;
            aborted += o == Outcome::kAborted;
            gas += o == Outcome::kGasOnly;
          }
      }
      im.rerun_aborted.fetch_add(aborted, std::memory_order_relaxed);
      im.rerun_gas.fetch_add(gas, std::memory_order_relaxed);
    });
    st.aborted = im.rerun_aborted.load();
    st.gas_only = im.rerun_gas.load();
    st.clusters_rerun = static_cast<std::uint32_t>(roots.size());
    return Status::Ok();
  }

  /// SPEEDEX-style: reserve on the sender's semaphore, a barrier, then withdraw and deposit.
  Status speedex() {
    reset_shared();
    Account* acc = im.acc;
    const bool fused = quick();  // as in fast_path(): no validation barrier
    team.run([&](unsigned m) {
      auto [b, e] = team.slice(n, m);
      bool mine = true;
      if (fused) {
        const std::size_t i = first_bad(txs, b, e, n, acc, im.n_acc, false);
        if (i != kNone) {
          atomic_min(im.bad, i);
          mine = false;
        }
      } else if (!validate_member(m)) {
        return;
      }
      std::uint32_t f = 0;
      for (std::size_t k = b; k < e && mine; ++k) {
        const Tx& t = txs[k];
        const std::int64_t w = withdrawal<P>(acc, t);
        const std::int64_t before = acc[t.sender].reserved.fetch_add(w, std::memory_order_relaxed);
        f += before + w > acc[t.sender].bal.load(std::memory_order_relaxed);
      }
      if (f) im.failures.fetch_add(f, std::memory_order_relaxed);
      team.barrier(m);
      const bool failed = im.failures.load(std::memory_order_relaxed) != 0 || im.bad.load(std::memory_order_relaxed) != kNone;
      if (!failed) {
        for (std::size_t k = b; k < e; ++k) {
          const Tx& t = txs[k];
          acc[t.sender].bal.fetch_sub(withdrawal<P>(acc, t), std::memory_order_relaxed);
          if constexpr (P::kKind == ProfileKind::kSmallCoinPlus) {
            acc[t.sender].seq_num.fetch_add(1, std::memory_order_relaxed);
            acc[t.sender].sent_events.fetch_add(1, std::memory_order_relaxed);
            acc[t.receiver].rec_events.fetch_add(1, std::memory_order_relaxed);
          }
          acc[t.receiver].bal.fetch_add(t.amt, std::memory_order_relaxed);
          out[k] = Outcome::kCommitted;
        }
      }
      team.barrier(m);  // every reservation is read before any is cleared
      for (std::size_t k = b; k < e && mine; ++k) acc[txs[k].sender].reserved.store(0, std::memory_order_relaxed);
    });
    if (im.bad.load() != kNone) return bad_status();
    st.part1_failures = im.failures.load();
    if (st.part1_failures == 0) return Status::Ok();
    // A reservation failed: SPEEDEX would reject the block; the baseline runs it serially.
    st.rerun_txs = static_cast<std::uint32_t>(n);
    for (std::size_t k = 0; k < n; ++k) count(out[k] = P::run(acc, txs[k]));
    return Status::Ok();
  }

  Status go() {
    if (serial) return sequential();
    switch (cfg.mode) {
      case Mode::kSequential: return sequential();
      case Mode::kOranguTan: return fast_path(true);
      case Mode::kCommutative: return fast_path(false);
      case Mode::kDag: return dag_mode();
      case Mode::kSpeedex: return speedex();
    }
    return Status::Internal("unknown mode");
  }
};

}  // namespace

Status Engine::execute(ProfileKind profile, std::span<const Tx> txs, std::span<Outcome> out, BlockStats* stats) {
  if (txs.size() > config_.max_block)
    return Status::InvalidArgument("block of " + std::to_string(txs.size()) + " transactions exceeds the limit of " +
                                   std::to_string(config_.max_block));
  if (out.size() != txs.size()) return Status::InvalidArgument("outcome span size differs from the block's");
  BlockStats local;
  BlockStats& st = stats ? *stats : local;
  st = BlockStats{};
  st.txs = static_cast<std::uint32_t>(txs.size());
  if (txs.empty()) return Status::Ok();
  const auto t0 = Clock::now();
  impl_->grow(txs.size());
  ++impl_->serial;
  const bool adaptive = config_.adaptive && team_->size() > 1 &&
                        (config_.mode == Mode::kCommutative || config_.mode == Mode::kOranguTan) &&
                        !config_.faults.no_barrier && !config_.faults.compensate_only_failed;
  st.serial = adaptive && impl_->chooser.serial(txs.size());
  Status s;
  if (profile == ProfileKind::kSmallCoinPlus)
    s = BlockRun<SmallCoinPlus>{*impl_, *team_, config_, txs.data(), txs.size(), out.data(), st, totals_, st.serial}.go();
  else
    s = BlockRun<SmallCoin>{*impl_, *team_, config_, txs.data(), txs.size(), out.data(), st, totals_, st.serial}.go();
  // A DAG launched for this block and not needed is left to finish on its stream; its slot
  // is idle again by the time it is chosen (or is waited for then). The launcher must be done
  // reading the block before the caller may change it.
  if (impl_->launcher.joinable() && impl_->req.load(std::memory_order_relaxed) == impl_->serial)
    while (impl_->done.load(std::memory_order_acquire) < impl_->serial) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  {
    std::lock_guard<std::mutex> lk(impl_->gpu_m);
    for (auto& tag : impl_->slot_tag)
      if (tag == impl_->serial) tag = 0;
  }
  if (!s.ok()) return s;
  st.total_ns = ns_since(t0);
  if (adaptive) impl_->chooser.record(st.serial, txs.size(), st.total_ns);
  totals_.serial_blocks += st.serial;
  ++totals_.blocks;
  totals_.txs += st.txs;
  totals_.part1_failures += st.part1_failures;
  totals_.rerun_txs += st.rerun_txs;
  totals_.fallback_blocks += st.part1_failures > 0;
  totals_.aborted += st.aborted;
  totals_.gas_only += st.gas_only;
  return Status::Ok();
}

Status Engine::run_blocks(ProfileKind profile, std::span<const BlockView> blocks, std::vector<BlockStats>* stats) {
  if (stats) stats->clear();
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    // Dag mode keeps the next block's DAG in flight on the GPU while this one executes.
    if (config_.mode == Mode::kDag && impl_->gpu) {
      std::lock_guard<std::mutex> lk(impl_->gpu_m);
      launch_on_free_slot(*impl_, config_, blocks[b].txs.data(), blocks[b].txs.size(), impl_->serial + 1, totals_);
      if (b + 1 < blocks.size())
        launch_on_free_slot(*impl_, config_, blocks[b + 1].txs.data(), blocks[b + 1].txs.size(), impl_->serial + 2,
                            totals_);
    }
    BlockStats st;
    Status s = execute(profile, blocks[b].txs, blocks[b].out, &st);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lk(impl_->gpu_m);
      for (auto& tag : impl_->slot_tag) tag = 0;  // a DAG launched ahead belongs to no later block
      return Status(s.code(), "block " + std::to_string(b) + ": " + s.message());
    }
    if (stats) stats->push_back(st);
  }
  return Status::Ok();
}

void Engine::launcher_loop() {
  Impl& im = *impl_;
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t r = im.req.load(std::memory_order_acquire);
    for (unsigned i = 0; r == seen && i < (1u << 12); ++i) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      r = im.req.load(std::memory_order_acquire);
    }
    while (r == seen) {
      im.req.wait(seen, std::memory_order_acquire);
      r = im.req.load(std::memory_order_acquire);
    }
    if (im.stop.load()) return;
    seen = r;
    {
      std::lock_guard<std::mutex> lk(im.gpu_m);
      launch_on_free_slot(im, config_, im.req_txs, im.req_n, r, totals_);
    }
    im.done.store(r, std::memory_order_release);
  }
}

}  // namespace duet::batch::orangutan

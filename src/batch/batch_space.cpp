#include "batch/batch_space.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_set>

#include "batch/orangutan/engine.hpp"
#include "duet/store.hpp"

namespace duet {

Status parse_transfer_profile(std::string_view t, TransferProfile* out) {
  if (t == "smallcoin" || t == "SMALLCOIN") *out = TransferProfile::kSmallCoin;
  else if (t == "smallcoin+" || t == "smallcoinplus" || t == "SMALLCOIN+" || t == "SMALLCOINPLUS")
    *out = TransferProfile::kSmallCoinPlus;
  else return Status::InvalidArgument("profile must be smallcoin or smallcoin+, got '" + std::string(t) + "'");
  return Status::Ok();
}

const char* transfer_outcome_name(TransferOutcome o) {
  return o == TransferOutcome::kCommitted ? "committed" : o == TransferOutcome::kGasOnly ? "gas-only" : "aborted";
}

namespace batch {

namespace {
inline std::uint64_t mix(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  return k ^ (k >> 33);
}
}  // namespace

AccountIndex::AccountIndex() : keys_(1024), ids_(1024, UINT32_MAX), mask_(1023) {}

std::uint32_t AccountIndex::find(std::uint64_t key) const {
  for (std::size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    const std::uint32_t id = ids_[i];
    if (id == UINT32_MAX) return UINT32_MAX;
    if (keys_[i] == key) return id;
  }
}

void AccountIndex::insert(std::uint64_t key, std::uint32_t id) {
  if ((size_ + 1) * 2 > keys_.size()) grow();
  std::size_t i = mix(key) & mask_;
  while (ids_[i] != UINT32_MAX) i = (i + 1) & mask_;
  keys_[i] = key;
  ids_[i] = id;
  ++size_;
}

void AccountIndex::grow() {
  std::vector<std::uint64_t> k(keys_.size() * 2);
  std::vector<std::uint32_t> v(keys_.size() * 2, UINT32_MAX);
  k.swap(keys_);
  v.swap(ids_);
  mask_ = keys_.size() - 1;
  size_ = 0;
  for (std::size_t i = 0; i < k.size(); ++i)
    if (v[i] != UINT32_MAX) insert(k[i], v[i]);
}

namespace {

using orangutan::Account;
using Clock = std::chrono::steady_clock;

class BatchSpaceImpl final : public BatchSpace {
 public:
  BatchSpaceImpl(std::string name, const BatchConfig& c) : name_(std::move(name)), config_(c) {}

  ~BatchSpaceImpl() override {
    {
      std::lock_guard<std::mutex> lk(q_m_);
      stop_ = true;
    }
    q_cv_.notify_all();
    if (executor_.joinable()) executor_.join();
    if (accounts_) munmap(accounts_, config_.max_accounts * sizeof(Account));
  }

  Status init(bool gpu_allowed) {
    if (!config_.epic.tables.empty()) {
      EpicConfig ec = config_.epic;
      if (!gpu_allowed) {  // the store runs on the CPU: so does Epic's planning
        if (ec.placement == EpicPlacement::kGpu)
          return Status::Unavailable("epic placement gpu was requested but the store runs on the CPU");
        if (ec.placement == EpicPlacement::kAuto) ec.placement = EpicPlacement::kCpu;
      }
      Status e = EpicDatabase::open(ec, &epic_);
      if (!e.ok()) return Status(e.code(), "epic: " + e.message());
    }
    orangutan::EngineConfig ec;
    Status s = orangutan::parse_mode(config_.mode, &ec.mode);
    if (!s.ok()) return s;
    s = orangutan::parse_dag_device(config_.dag_device, &ec.dag);
    if (!s.ok()) return s;
    if (!gpu_allowed) {
      if (ec.dag == orangutan::DagDevice::kGpu)
        return Status::Unavailable("dag_device gpu was requested but the store runs on the CPU");
      if (ec.dag == orangutan::DagDevice::kAuto) ec.dag = orangutan::DagDevice::kCpuAccounts;
    }
    // One core is left to the executor, the clients and the GPU runtime: a team that fills every
    // core stalls whenever any member is preempted (measured: docs/batch.md).
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    ec.threads = config_.threads ? config_.threads : std::clamp(hw - 1, 1u, 15u);
    // Each block on the team or serially, whichever measured cheaper lately: a team whose
    // members are descheduled (a shared machine, a VM) stalls for milliseconds per barrier.
    ec.adaptive = true;
    if (config_.max_block == 0 || config_.max_block > (1u << 20))
      return Status::InvalidArgument("max_block must be between 1 and 2^20");
    ec.max_block = config_.max_block;
    if (config_.max_accounts == 0 || config_.max_accounts > (1ull << 31))
      return Status::InvalidArgument("max_accounts must be between 1 and 2^31");
    if (config_.single_block_size == 0 || config_.single_block_size > config_.max_block)
      return Status::InvalidArgument("single_block_size must be between 1 and max_block");
    void* mem = mmap(nullptr, config_.max_accounts * sizeof(Account), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return Status::ResourceExhausted("cannot reserve the account table");
    accounts_ = static_cast<Account*>(mem);  // zero pages: every field 0
    s = orangutan::Engine::create(ec, accounts_, 0, &engine_);
    if (!s.ok()) return s;
    engine_desc_ = std::string(orangutan::mode_name(ec.mode)) + ", " + std::to_string(ec.threads) + " threads, dag " +
                   engine_->dag_description();
    executor_ = std::thread([this] { executor_loop(); });
    return Status::Ok();
  }

  const std::string& name() const override { return name_; }
  std::uint64_t size() const override {
    std::shared_lock<std::shared_mutex> lk(state_m_);
    return index_.size();
  }

  Status create_accounts(std::span<const AccountInit> accounts) override {
    std::vector<AccountInit> copy(accounts.begin(), accounts.end());
    auto done = std::make_shared<std::promise<Status>>();
    auto fut = done->get_future();
    enqueue([this, copy = std::move(copy), done] { done->set_value(do_create(copy)); });
    return fut.get();
  }

  std::future<BlockResult> submit_block(TransferProfile profile, std::vector<Transfer> transfers) override {
    auto done = std::make_shared<std::promise<BlockResult>>();
    auto fut = done->get_future();
    const auto t0 = Clock::now();
    enqueue([this, profile, transfers = std::move(transfers), done, t0] {
      done->set_value(run_block(profile, transfers, t0));
    });
    return fut;
  }

  std::future<TransferResult> submit_transfer(TransferProfile profile, const Transfer& t) override {
    std::promise<TransferResult> p;
    auto fut = p.get_future();
    {
      std::lock_guard<std::mutex> lk(q_m_);
      auto& pend = singles_[static_cast<int>(profile)];
      if (pend.txs.empty()) pend.deadline = Clock::now() + std::chrono::microseconds(config_.single_block_micros);
      pend.txs.push_back(t);
      pend.waiters.push_back(std::move(p));
      if (pend.txs.size() >= config_.single_block_size) close_singles_locked(profile);
    }
    q_cv_.notify_one();
    return fut;
  }

  Status balance(std::uint64_t key, std::int64_t* out) override {
    AccountState st;
    Status s = account(key, &st);
    if (s.ok()) *out = st.balance;
    return s;
  }

  Status account(std::uint64_t key, AccountState* out) override {
    std::shared_lock<std::shared_mutex> lk(state_m_);
    const std::uint32_t id = index_.find(key);
    if (id == UINT32_MAX) return Status::NotFound("no account " + std::to_string(key));
    const orangutan::AccountValue v = orangutan::load(accounts_[id]);
    *out = {v.bal, v.seq_num, v.sent_events, v.rec_events, v.gas_cost};
    return Status::Ok();
  }

  EpicDatabase* epic() override { return epic_.get(); }

  BatchStats stats() const override {
    std::lock_guard<std::mutex> lk(stats_m_);
    BatchStats s = stats_;
    if (epic_) s.epic_open = true, s.epic = epic_->stats();
    std::vector<double> l(latencies_.begin(), latencies_.end());
    if (!l.empty()) {
      std::sort(l.begin(), l.end());
      s.latency_p50_us = l[l.size() / 2];
      s.latency_p99_us = l[std::min(l.size() - 1, l.size() * 99 / 100)];
    }
    s.engine = engine_desc_;
    return s;
  }

 private:
  struct Singles {
    std::vector<Transfer> txs;
    std::vector<std::promise<TransferResult>> waiters;
    Clock::time_point deadline;
  };

  void enqueue(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lk(q_m_);
      jobs_.push_back(std::move(job));
    }
    q_cv_.notify_one();
  }

  /// Turns the pending single transfers of `profile` into a block job (q_m_ held).
  void close_singles_locked(TransferProfile profile) {
    auto& pend = singles_[static_cast<int>(profile)];
    if (pend.txs.empty()) return;
    auto txs = std::make_shared<std::vector<Transfer>>(std::move(pend.txs));
    auto waiters = std::make_shared<std::vector<std::promise<TransferResult>>>(std::move(pend.waiters));
    pend.txs.clear();
    pend.waiters.clear();
    const auto t0 = Clock::now();
    jobs_.push_back([this, profile, txs, waiters, t0] {
      const BlockResult r = run_block(profile, *txs, t0);
      for (std::size_t i = 0; i < waiters->size(); ++i)
        (*waiters)[i].set_value(TransferResult{r.status, r.status.ok() ? r.outcomes[i] : TransferOutcome::kAborted, r.block});
    });
  }

  void executor_loop() {
    std::unique_lock<std::mutex> lk(q_m_);
    for (;;) {
      // Close single-transfer blocks whose time is up.
      Clock::time_point next = Clock::time_point::max();
      const auto now = Clock::now();
      for (int p = 0; p < 2; ++p) {
        auto& pend = singles_[p];
        if (pend.txs.empty()) continue;
        if (pend.deadline <= now) close_singles_locked(static_cast<TransferProfile>(p));
        else next = std::min(next, pend.deadline);
      }
      if (!jobs_.empty()) {
        auto job = std::move(jobs_.front());
        jobs_.pop_front();
        lk.unlock();
        job();
        lk.lock();
        continue;
      }
      if (stop_) {
        for (int p = 0; p < 2; ++p) close_singles_locked(static_cast<TransferProfile>(p));
        if (jobs_.empty()) return;
        continue;
      }
      if (next == Clock::time_point::max()) q_cv_.wait(lk);
      else q_cv_.wait_until(lk, next);
    }
  }

  Status do_create(const std::vector<AccountInit>& in) {
    std::unique_lock<std::shared_mutex> lk(state_m_);
    if (index_.size() + in.size() > config_.max_accounts)
      return Status::ResourceExhausted("the keyspace holds at most " + std::to_string(config_.max_accounts) + " accounts");
    std::unordered_set<std::uint64_t> seen;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const AccountInit& a = in[i];
      const std::string at = "account " + std::to_string(i) + " (key " + std::to_string(a.key) + "): ";
      if (index_.find(a.key) != UINT32_MAX || !seen.insert(a.key).second)
        return Status::InvalidArgument(at + "the key exists already");
      if (a.balance < 0 || a.balance > orangutan::kMaxBalance)
        return Status::InvalidArgument(at + "balance must be between 0 and 2^62");
      if (a.gas_cost < 0 || a.gas_cost > orangutan::kMaxAmount)
        return Status::InvalidArgument(at + "gas cost must be between 0 and 2^40");
    }
    for (const AccountInit& a : in) {
      const auto id = static_cast<std::uint32_t>(index_.size());
      Account& r = accounts_[id];
      r.bal.store(a.balance, std::memory_order_relaxed);
      r.gas_cost = a.gas_cost;
      index_.insert(a.key, id);
    }
    engine_->set_accounts(accounts_, index_.size());
    return Status::Ok();
  }

  BlockResult run_block(TransferProfile profile, const std::vector<Transfer>& in, Clock::time_point t0) {
    BlockResult r;
    std::unique_lock<std::shared_mutex> lk(state_m_);
    r.block = ++block_seq_;
    if (in.size() > config_.max_block) {
      r.status = Status::InvalidArgument("block of " + std::to_string(in.size()) + " transfers exceeds the limit of " +
                                         std::to_string(config_.max_block));
      return refused(std::move(r));
    }
    // Keys -> record ids, once per block (timed), in parallel on the engine's team.
    const auto tr = Clock::now();
    txs_.resize(in.size());
    std::atomic<std::size_t> bad{SIZE_MAX};
    auto& team = engine_->team();
    auto resolve = [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        const std::uint32_t s = index_.find(in[i].sender), q = index_.find(in[i].receiver);
        if (s == UINT32_MAX || q == UINT32_MAX) {
          std::size_t cur = bad.load();
          while (i < cur && !bad.compare_exchange_weak(cur, i)) {
          }
          return;
        }
        txs_[i] = {s, q, in[i].amount};
      }
    };
    if (in.size() < 2048) {
      resolve(0, in.size());  // a wake-up of the team costs more than this
    } else {
      team.run([&](unsigned m) {
        auto [b, e] = team.slice(in.size(), m);
        resolve(b, e);
      });
    }
    const double resolve_us = std::chrono::duration<double, std::micro>(Clock::now() - tr).count();
    if (const std::size_t i = bad.load(); i != SIZE_MAX) {
      const bool s_unknown = index_.find(in[i].sender) == UINT32_MAX;
      r.status = Status::InvalidArgument("transaction " + std::to_string(i) + ": unknown " +
                                         (s_unknown ? "sender" : "receiver") + " account " +
                                         std::to_string(s_unknown ? in[i].sender : in[i].receiver));
      return refused(std::move(r));
    }
    out_.resize(in.size());
    orangutan::BlockStats st;
    const auto pk = profile == TransferProfile::kSmallCoinPlus ? orangutan::ProfileKind::kSmallCoinPlus
                                                               : orangutan::ProfileKind::kSmallCoin;
    r.status = engine_->execute(pk, txs_, out_, &st);
    if (!r.status.ok()) return refused(std::move(r));
    r.outcomes.resize(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) r.outcomes[i] = static_cast<TransferOutcome>(out_[i]);
    lk.unlock();
    const double lat = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    std::lock_guard<std::mutex> sl(stats_m_);
    ++stats_.blocks;
    stats_.transfers += in.size();
    stats_.fast_path_failures += st.part1_failures;
    stats_.rerun_transfers += st.rerun_txs;
    stats_.fallback_blocks += st.part1_failures > 0;
    stats_.aborted += st.aborted;
    stats_.gas_only += st.gas_only;
    stats_.serial_blocks += st.serial;
    stats_.resolve_us_total += resolve_us;
    if (const std::uint64_t g = engine_->totals().gpu_failures; g != stats_.gpu_failures) {
      stats_.gpu_failures = g;  // the DAG moved to the CPU: say so in the description
      engine_desc_ = engine_desc_.substr(0, engine_desc_.find(", dag ")) + ", dag " + engine_->dag_description();
    }
    latencies_.push_back(lat);
    if (latencies_.size() > 1024) latencies_.pop_front();
    return r;
  }

  BlockResult refused(BlockResult r) {
    std::lock_guard<std::mutex> sl(stats_m_);
    ++stats_.refused_blocks;
    return r;
  }

  const std::string name_;
  const BatchConfig config_;
  Account* accounts_ = nullptr;
  std::unique_ptr<orangutan::Engine> engine_;
  std::string engine_desc_;
  mutable std::shared_mutex state_m_;  ///< exclusive while a block or creation runs
  AccountIndex index_;
  std::uint64_t block_seq_ = 0;
  std::vector<orangutan::Tx> txs_;
  std::vector<orangutan::Outcome> out_;
  // The ordered queue.
  std::mutex q_m_;
  std::condition_variable q_cv_;
  std::deque<std::function<void()>> jobs_;
  Singles singles_[2];
  bool stop_ = false;
  std::thread executor_;
  std::unique_ptr<EpicDatabase> epic_;  ///< null without Epic tables
  // Statistics.
  mutable std::mutex stats_m_;
  BatchStats stats_;
  std::deque<double> latencies_;
};

}  // namespace

Status open_batch_space(std::string name, const BatchConfig& config, bool gpu_allowed,
                        std::shared_ptr<BatchSpace>* out) {
  auto s = std::make_shared<BatchSpaceImpl>(std::move(name), config);
  Status st = s->init(gpu_allowed);
  if (!st.ok()) return st;
  *out = std::move(s);
  return Status::Ok();
}

Status make_batch_keyspace(std::string_view name, bool gpu_allowed, const EpicConfig& epic,
                           std::shared_ptr<Keyspace>* out) {
  std::shared_ptr<BatchSpace> b;
  BatchConfig config;
  config.epic = epic;
  Status s = open_batch_space(std::string(name), config, gpu_allowed, &b);
  if (s.ok()) *out = std::move(b);
  return s;
}

}  // namespace batch

// Store's typed accessors for `batch` keyspaces (declared in duet/store.hpp).
Status Store::create_batch(std::string_view name, std::shared_ptr<BatchSpace>* out) {
  std::shared_ptr<Keyspace> k;
  Status s = create(name, KeyspaceKind::kBatch, &k);
  if (!s.ok()) return s;
  *out = std::dynamic_pointer_cast<BatchSpace>(std::move(k));
  return *out ? Status::Ok() : Status::Internal("create of a batch keyspace made another kind");
}

Status Store::batch(std::string_view name, std::shared_ptr<BatchSpace>* out) {
  std::shared_ptr<Keyspace> k;
  Status s = find(name, &k);
  if (!s.ok()) return s;
  if (k->kind() != KeyspaceKind::kBatch)
    return Status::InvalidArgument("keyspace '" + std::string(name) + "' is of kind " + keyspace_kind_name(k->kind()) +
                                   ", not batch");
  *out = std::static_pointer_cast<BatchSpace>(std::move(k));
  return Status::Ok();
}

}  // namespace duet

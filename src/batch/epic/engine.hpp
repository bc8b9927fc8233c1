// Epic's epoch loop on the host: index, plan, execute on CPU threads, free deleted records.
// Indexing and planning run on the host (the CPU twin), or planning alone through a Planner, or
// both through a DevicePlanner (Epic-CPU: the GPU indexes on L-Slab and plans; the plans come back
// to the host). Reruns (txns whose declared keys were wrong) run first in the next epoch, before
// the new txns, in their old relative order.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "batch/epic/device_executor.hpp"
#include "batch/epic/device_planner.hpp"
#include "batch/epic/epoch_output.hpp"
#include "batch/epic/exec_cpu.hpp"
#include "batch/epic/exec_side.hpp"

namespace duet::batch::epic {

/// A planner: fills the plan for a batch and its global ids; false and *err on failure.
using Planner = std::function<bool(const Batch&, const std::vector<std::uint32_t>&, Plan*, std::string*)>;

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Builds the host EpochView over a database, a batch, its per-op tables and ids and its plan
/// (per-op locations and copy-from locations, temp_count scratch versions).
inline EpochView make_view(Database& db, std::vector<TableView>& tv, const Batch& b, const std::uint8_t* op_table,
                           const std::uint32_t* rid, const std::uint32_t* loc, const std::uint32_t* copy,
                           std::uint32_t temp_count, Scratch& s, Results& r, const Faults& f) {
  tv.resize(db.num_tables());
  for (std::size_t i = 0; i < tv.size(); ++i) {
    TableStore& t = db.table(static_cast<std::uint32_t>(i));
    tv[i] = TableView{t.slots.data(), t.data.data(), t.deleted.data(), t.spec.record_words, t.spec.indexed ? 1u : 0u};
  }
  s.slot_words = db.max_words();
  s.reserve(temp_count);
  EpochView v;
  v.tables = tv.data();
  v.proc = b.proc.data();
  v.op_begin = b.op_begin.data();
  v.nreads = b.nreads.data();
  v.arg_begin = b.arg_begin.data();
  v.args = b.args.data();
  v.attempt = b.attempt.data();
  v.part = b.part.size() == b.size() ? b.part.data() : nullptr;
  v.op_table = op_table;
  v.rid = rid;
  v.loc = loc;
  v.copy = copy;
  v.scratch_word = s.word.data();
  v.scratch_data = s.data.data();
  v.slot_words = s.slot_words;
  v.eid = db.eid();
  v.n = static_cast<std::uint32_t>(b.size());
  r.resize(b.size());
  v.outcome = r.outcome.data();
  v.out = r.out.data();
  v.skip_abort_fill = f.skip_abort_fill;
  v.eid_before_data = f.eid_before_data;
  return v;
}

/// The host engine for procedure set `Procs`, executing on CPU threads.
template <class Procs>
class Engine {
 public:
  /// `threads` CPU threads execute; `planner` plans (default: the CPU twin).
  Engine(std::vector<TableSpec> tables, int threads, Planner planner = {})
      : db_(std::move(tables)), threads_(threads), planner_(std::move(planner)) {}

  /// The host database. With a DevicePlanner its index (entries, ring, back-links) is the
  /// planner's from the first epoch on: call sync() before reading keys through it (get, lookup).
  /// Bulk load only before the first epoch.
  Database& db() { return db_; }
  /// Epic-CPU: indexing and planning of every epoch go to `d` (the GPU runner, or HostPlanner).
  /// Set before the first epoch. An epoch `d` cannot take (DevicePlanner::fits: too big for the
  /// device's free memory) is indexed and planned on the host instead: the index is synced back
  /// first and handed to `d` again at the next epoch that fits (a copy of the index each way).
  void set_device_planner(std::shared_ptr<DevicePlanner> d) { device_ = std::move(d); }
  /// Epic on the device: each epoch that `x` can take (DeviceExecutor::fits) and that is not a
  /// small one (set_min_device_epoch_ops) is indexed, planned and executed there, over the
  /// executor's copy of the tables; the others run on the host, indexed and planned by the
  /// DevicePlanner when one is set (Epic-CPU: the GPU runner can be both) and else by the CPU
  /// twin. The tables move (a copy of all of them) when an epoch runs on the other side from the
  /// last, and the host copy is refreshed (a download) before get() after device epochs. Set
  /// before the first epoch.
  /// By default the side is also chosen by a cost model (set_place_by_contention).
  void set_device_executor(std::shared_ptr<DeviceExecutor> x) {
    executor_ = std::move(x);
    double bytes = 0;  // what a move copies: every record's two slots and slot word
    for (std::uint32_t t = 0; t < db_.num_tables(); ++t)
      bytes += static_cast<double>(db_.table(t).spec.capacity) * (8.0 + 8.0 * db_.table(t).spec.record_words);
    side_.set_move_ms(bytes / kMoveBytesPerMs);
  }
  /// With a DeviceExecutor: whether an epoch the device could run still runs on the CPU threads
  /// when ExecSide's model, set by the epochs each side ran, says they finish it sooner (a long
  /// chain of writes to one record), the tables' moves weighed as in ski rental (exec_side.hpp).
  /// Default on.
  void set_place_by_contention(bool on) { by_contention_ = on; }
  /// Epochs the device could have run that ran on the CPU threads by the cost model.
  std::uint64_t cost_model_on_host() const { return cost_model_on_host_.load(std::memory_order_relaxed); }
  /// With a DeviceExecutor: where the time went and what the cost model now holds. Safe to call
  /// from any thread (each field is read on its own: a snapshot taken during an epoch may mix
  /// that epoch's figures with the last one's).
  struct SideTimes {
    double host_exec_ms = 0, device_exec_ms = 0;  ///< epochs each side ran, moves of the tables apart
    double move_ms = 0;                           ///< every copy of the tables, both ways
    double model_link_ns = 0, model_device_txn_ns = 0, model_host_txn_ns = 0;  ///< ExecSide's figures
  };
  SideTimes side_times() const {
    SideTimes t;
    t.host_exec_ms = static_cast<double>(host_exec_us_.load(std::memory_order_relaxed)) / 1e3;
    t.device_exec_ms = static_cast<double>(device_exec_us_.load(std::memory_order_relaxed)) / 1e3;
    t.move_ms = static_cast<double>(move_us_.load(std::memory_order_relaxed)) / 1e3;
    t.model_link_ns = model_link_ns_.load(std::memory_order_relaxed);
    t.model_device_txn_ns = model_device_txn_ns_.load(std::memory_order_relaxed);
    t.model_host_txn_ns = model_host_txn_ns_.load(std::memory_order_relaxed);
    return t;
  }
  /// Copies the device planner's index into the host database (no-op without one or when current);
  /// with a DeviceExecutor, its tables and index when the host copy is behind.
  bool sync(std::string* err) {
    if (!refresh_tables(err)) return false;
    if (!device_ || !stale_) return true;
    if (!device_->sync(db_, err)) return false;
    stale_ = false;
    return true;
  }
  bool has_device_executor() const { return executor_ != nullptr; }
  /// The CPU threads an epoch runs on (the caller's thread_pool with threads() - 1 workers).
  int threads() const { return threads_; }
  /// With a DeviceExecutor: epochs it ran, and the copies of the tables made to it and back.
  std::uint64_t device_epochs() const { return device_epochs_.load(std::memory_order_relaxed); }
  std::uint64_t uploads() const { return uploads_.load(std::memory_order_relaxed); }
  std::uint64_t downloads() const { return downloads_.load(std::memory_order_relaxed); }
  Faults& faults() { return faults_; }
  /// A wait longer than this fails the epoch with "stuck wait" (0: wait forever). After a stuck
  /// epoch the tables hold partial writes: the database must be reloaded.
  void set_watchdog_ms(std::uint64_t ms) { watchdog_ns_ = ms * 1000000ull; }
  /// The wait fallback. When the threads executing an epoch spend more than `share` of their time
  /// in long waits for versions (waits that outlast 256 polls: on a machine shared with other
  /// jobs, the thread holding the txn others wait for is often descheduled for a whole time
  /// slice), the next `epochs` epochs execute on the calling thread alone, where no read ever
  /// waits; then all threads are tried again. Indexing and planning keep every thread. Default:
  /// share 0.25, 8 epochs; 0 epochs turns it off.
  /// The fallback is kept only while it pays: an epoch on one thread that costs more per txn than
  /// the all-thread epoch that started the fallback ends it at once, and the next `epochs`
  /// all-thread epochs start no other. (On the H200 machine's 16 threads one thread ran a
  /// contended epoch about 11x slower than all of them, long waits included, and eight such
  /// epochs followed each trigger.)
  void set_wait_fallback(double share, int epochs) { fallback_share_ = share, fallback_epochs_ = epochs; }
  /// How execution hands txns to the threads (deal in exec_cpu.hpp). Default kAuto: per-thread
  /// queues, by each txn's partition hint or else its first declared key, where they come out
  /// even and keep most chains of versions on one thread (TPC-C, whose generator gives each txn
  /// its home warehouse, when the threads divide the warehouses evenly); else one counter in
  /// serial order. Results are the same either way; only where the waits fall changes.
  void set_exec_order(ExecOrder o) { exec_order_ = o; }
  /// Epochs executed from per-thread queues so far (any thread may ask).
  std::uint64_t queued_epochs() const { return queued_epochs_.load(std::memory_order_relaxed); }
  /// For tests of the fallback: each epoch's cost per txn (ns) becomes cost(threads, measured).
  void set_fallback_cost_for_tests(std::function<double(int threads, double ns_per_txn)> cost) {
    fallback_cost_ = std::move(cost);
  }
  std::size_t pending_reruns() const { return reruns_.size(); }
  /// A txn that asked to rerun `n` times is not run again (its outcome stays kRerun in its last
  /// epoch's output); 0, the default, reruns without a bound.
  void set_max_attempts(std::uint32_t n) { max_attempts_ = n; }
  /// Drops the txns waiting to run again: after a failed epoch, a front end fails them rather
  /// than retrying an epoch that keeps failing.
  void clear_reruns() { reruns_ = Batch{}; }
  /// True once an epoch failed after its execution began (a stuck wait, a failed device
  /// release): the tables may hold partial writes and must be loaded again.
  bool damaged() const { return damaged_; }
  /// Epochs a DevicePlanner could not take, which were indexed and planned on the host.
  std::uint64_t host_planned_epochs() const { return host_planned_.load(std::memory_order_relaxed); }
  /// Epochs a DevicePlanner would have taken that were planned on the host as small ones.
  std::uint64_t small_epochs_on_host() const { return small_on_host_.load(std::memory_order_relaxed); }
  /// With a DevicePlanner: epochs of fewer than `ops` declared keys are indexed and planned on the
  /// host, where a small epoch costs less than the device's fixed per-epoch cost (kernel launches,
  /// L-Slab batches and copies; on the H200 machine about 0.3 ms with YCSB's direct table, where
  /// the two break even near 5,000 ops, and 1.5 ms with TPC-C's indexed tables).
  /// Moving between the two moves the index (a copy each way), so this applies only while the
  /// indexed tables hold at most `max_indexed_records` records in all (their capacity); above
  /// that every epoch that fits goes to the planner. 0 ops (the default): every epoch that fits.
  /// With a DeviceExecutor the tables move too, so the rule applies while all the tables hold at
  /// most `max_indexed_records` records in all.
  void set_min_device_epoch_ops(std::size_t ops, std::uint64_t max_indexed_records = 65536) {
    min_device_ops_ = ops;
    std::uint64_t indexed = 0, all = 0;
    for (std::uint32_t t = 0; t < db_.num_tables(); ++t) {
      all += db_.table(t).spec.capacity;
      if (db_.table(t).spec.indexed) indexed += db_.table(t).spec.capacity;
    }
    small_moves_ = indexed <= max_indexed_records;
    small_table_moves_ = all <= max_indexed_records;
  }

  /// The committed record of `key` after the last epoch (*rec = nullptr when absent). With a
  /// DevicePlanner holding the index, an indexed table's key is looked up there (one key, no
  /// sync). False with *err for an unknown table or a failed lookup. Not during an epoch.
  bool get(std::uint32_t table, std::uint64_t key, const std::uint32_t** rec, std::string* err) {
    if (table >= db_.num_tables()) return *err = "unknown table " + std::to_string(table), false;
    if (!refresh_tables(err)) return false;  // (a planner's index answers below, one key at a time)
    std::uint32_t r = kInvalid;
    if (device_ && stale_ && db_.table(table).spec.indexed) {
      if (!device_->lookup(table, key, &r, err)) return false;
    } else {
      r = db_.lookup(table, key);
    }
    *rec = db_.get_at(table, r);
    return true;
  }

  /// The committed record of `key` after the last epoch, copied into *rec (*found false when
  /// absent). With a DeviceExecutor whose copy is ahead of the host's, it is read there (a
  /// lookup and one record: no copy of the tables); else as get(). False with *err for an
  /// unknown table or a failed read. Not during an epoch.
  bool read(std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* rec, bool* found, std::string* err) {
    *found = false;
    if (table >= db_.num_tables()) return *err = "unknown table " + std::to_string(table), false;
    if (executor_ && !host_current_) return executor_->read(db_, table, key, rec, found, err);
    const std::uint32_t* r = nullptr;
    if (!get(table, key, &r, err)) return false;
    *found = r != nullptr;
    if (r) rec->assign(r, r + db_.table(table).spec.record_words);
    return true;
  }

  /// "" if every txn of `b` names known tables, in-range direct keys and a known procedure.
  std::string check(const Batch& b) const {
    for (std::size_t t = 0; t < b.size(); ++t)
      if (std::string e = check_txn(b, t); !e.empty()) return "txn " + std::to_string(t) + ": " + e;
    return "";
  }
  /// Entry t of `b` alone: a known procedure on known tables with direct keys in range, called
  /// with the keys and args it takes and on records as wide as it reads (Procs::shape_error).
  /// "" or the reason.
  std::string check_txn(const Batch& b, std::size_t t) const {
    if (!Procs::known(b.proc[t])) return "unknown procedure " + std::to_string(b.proc[t]);
    if (std::string e = db_.check_keys(b, t); !e.empty()) return e;
    const std::uint32_t ops = b.op_begin[t + 1] - b.op_begin[t];
    const CallShape shape{b.nreads[t], ops - b.nreads[t],
                          std::span<const std::uint32_t>(b.args.data() + b.arg_begin[t], b.arg_begin[t + 1] - b.arg_begin[t]),
                          std::span<const Key>(b.keys.data() + b.op_begin[t], ops), db_.specs()};
    return Procs::shape_error(b.proc[t], shape);
  }

  /// Runs one epoch: pending reruns, then `b`. On bad input or a failure nothing is applied and
  /// *err says why.
  bool run_epoch(const Batch& b, EpochOutput* out, std::string* err) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string e = check(b); !e.empty()) return *err = e, false;
    if (db_.eid() >= kMaxEid) return *err = "epoch ids exhausted", false;
    Batch all;
    const Batch* run = &b;
    if (reruns_.size()) {
      all = reruns_;
      for (std::size_t t = 0; t < b.size(); ++t) all.add_from(b, t, b.attempt[t]);
      run = &all;
    }
    if (run->size() > kMaxTxns) return *err = "epoch larger than 2^20 txns", false;
    ExecSide::Epoch shape{run->size(), 0};
    if (executor_) {
      std::string why;
      const bool small = small_table_moves_ && run->keys.size() < min_device_ops_;
      bool model_says_host = false;
      if (!small && by_contention_) {
        shape.chain = longest_write_chain(*run, kChainStride);
        model_says_host = !side_.device(shape, home_ == Home::kDevice);
      }
      if (!small && !model_says_host && executor_->fits(*run, &why)) {
        if (!run_on_executor(*run, out, err)) return false;
        return finish(*run, out, t0, out->stats.temp_count, &shape);
      }
      // The host takes this epoch: its copy of the tables must be current, and the device's
      // will not be after it.
      const std::uint64_t before = downloads();
      const auto m0 = std::chrono::steady_clock::now();
      if (!sync(err)) return false;
      out->stats.moved_tables = downloads() != before;
      moved_ms_ = ms_since(m0);
      if (out->stats.moved_tables) count_move(moved_ms_);
      home_ = Home::kHost;
      if (model_says_host) {
        out->stats.cost_model_on_host = true;
        cost_model_on_host_.fetch_add(1, std::memory_order_relaxed);
      } else if (!device_) {  // (a DevicePlanner counts what it does not take below)
        (small ? out->stats.small_on_host : out->stats.planned_on_host) = true;
        (small ? small_on_host_ : host_planned_).fetch_add(1, std::memory_order_relaxed);
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    const std::uint8_t* op_table;
    const std::uint32_t *rid, *loc, *copy;
    std::uint32_t temp_count;
    bool on_device = false;
    if (device_) {
      std::string why;
      const bool small = small_moves_ && run->keys.size() < min_device_ops_;
      on_device = !small && device_->fits(*run, &why);
      if (!on_device) {
        // The host takes this epoch over its own index, synced from the planner's; the planner
        // gets it back at the next epoch it takes.
        if (!sync(err)) return false;
        attached_ = false;
        if (small) {
          out->stats.small_on_host = true;
          small_on_host_.fetch_add(1, std::memory_order_relaxed);
        } else {
          out->stats.planned_on_host = true;
          host_planned_.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    if (on_device) {
      if (!attached_) {
        if (!device_->attach(db_, err)) return false;
        attached_ = true;
      }
      stale_ = true;  // from here the planner's index is the one (a failed epoch may have inserted)
      DevicePlan dp;
      if (!device_->index_and_plan(db_, *run, &dp, err)) return false;
      out->stats.index_ms = dp.index_ms;
      out->stats.plan_ms = dp.plan_ms;
      out->stats.transfer_ms = dp.h2d_ms + dp.d2h_ms;
      op_table = dp.table, rid = dp.rid, loc = dp.loc, copy = dp.copy, temp_count = dp.temp_count;
    } else {
      Indexed& ix = ix_;  // reused: fresh vectors each epoch would page-fault their memory in again
      if (!db_.index(*run, &ix, err, threads_)) return false;
      out->stats.index_ms = ms_since(t1);
      t1 = std::chrono::steady_clock::now();
      Plan& plan = plan_;
      if (planner_) {
        if (!planner_(*run, ix.global, &plan, err)) return false;
      } else {
        plan_cpu(*run, ix.global, &plan, faults_, threads_);
      }
      out->stats.plan_ms = ms_since(t1);
      op_table = ix.table.data(), rid = ix.rid.data(), loc = plan.loc.data(), copy = plan.copy.data();
      temp_count = plan.temp_count;
    }
    t1 = std::chrono::steady_clock::now();
    EpochView v = make_view(db_, tv_, *run, op_table, rid, loc, copy, temp_count, scratch_, out->results, faults_);
    std::uint32_t stuck = 0;
    std::uint64_t waited = 0;
    const auto t_exec = std::chrono::steady_clock::now();
    v.watchdog_ns = watchdog_ns_;
    v.stuck = &stuck;
    v.waited = &waited;
    const int exec_threads = single_left_ > 0 ? 1 : threads_;
    deal(v, temp_count, exec_threads, exec_order_, &queues_);
    if (faults_.reversed_queues && queues_.used())
      for (std::size_t j = 0; j + 1 < queues_.begin.size(); ++j)
        std::reverse(queues_.txn.begin() + queues_.begin[j], queues_.txn.begin() + queues_.begin[j + 1]);
    execute_cpu<Procs>(v, exec_threads, &queues_);
    const double exec_ns = ms_since(t_exec) * 1e6;
    double cost = run->size() ? exec_ns / static_cast<double>(run->size()) : 0.0;
    if (fallback_cost_) cost = fallback_cost_(exec_threads, cost);
    if (single_left_ > 0) {
      --single_left_;
      if (cost > trigger_cost_) single_left_ = 0, hold_off_ = fallback_epochs_;  // one thread costs more
    } else if (exec_threads > 1 && fallback_epochs_ > 0) {
      if (hold_off_ > 0) {
        --hold_off_;
      } else if (static_cast<double>(waited) > fallback_share_ * exec_ns * exec_threads) {
        single_left_ = fallback_epochs_;
        trigger_cost_ = cost;
      }
    }
    out->stats.exec_threads = exec_threads;
    out->stats.waited_ns = waited;
    out->stats.exec_affinity = queues_.used();
    if (queues_.used()) queued_epochs_.fetch_add(1, std::memory_order_relaxed);
    out->stats.cross_share = queues_.cross_share;
    if (stuck) {
      *err = "stuck wait: txn " + std::to_string(stuck - 1) + " waited past the watchdog (a planning bug)";
      damaged_ = true;
      return false;
    }
    out->stats.exec_ms = ms_since(t1);
    t1 = std::chrono::steady_clock::now();
    if (on_device) {
      db_.end_epoch_collect(&freed_);
      if (!device_->release(db_, freed_, err)) return damaged_ = true, false;
    } else {
      db_.end_epoch();
    }
    out->stats.gc_ms = ms_since(t1);
    return finish(*run, out, t0, temp_count, executor_ ? &shape : nullptr);
  }

 private:
  enum class Home { kHost, kDevice };  ///< where the tables' current copy is (DeviceExecutor)

  /// With a DeviceExecutor whose copy is ahead of the host's (device epochs ran since the last
  /// download): downloads its tables and index. A no-op otherwise.
  bool refresh_tables(std::string* err) {
    if (!executor_ || host_current_) return true;
    if (!executor_->download(db_, err)) return false;
    host_current_ = true;
    downloads_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  /// Runs `run` on the executor, uploading the tables first when the host's copy is the current
  /// one. A failure that left the executor's state as it was fails the epoch alone; any other
  /// leaves the engine damaged.
  bool run_on_executor(const Batch& run, EpochOutput* out, std::string* err) {
    if (home_ == Home::kHost) {
      const auto m0 = std::chrono::steady_clock::now();
      // A DevicePlanner that planned the host's epochs holds the index: it comes back first. The
      // upload then replaces the planner's index (one runner holds one), so it attaches again
      // at the next host epoch.
      if (!sync(err) || !executor_->upload(db_, err)) return false;
      attached_ = false;
      stale_ = false;
      count_move(ms_since(m0));
      uploads_.fetch_add(1, std::memory_order_relaxed);
      out->stats.moved_tables = true;
      home_ = Home::kDevice;
    }
    bool untouched = false;
    const bool moved = out->stats.moved_tables;
    device_t0_ = std::chrono::steady_clock::now();  // the epoch's cost to the model, the move apart
    if (!executor_->run_epoch(db_, run, out, err, &untouched)) {
      if (!untouched) damaged_ = true;
      return false;
    }
    host_current_ = false;
    out->stats.on_device = true;
    out->stats.moved_tables = moved;
    device_epochs_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  /// The end every epoch shares: the txns that asked to rerun are kept for the next epoch, and
  /// the counts and total time are set. With `shape` (a DeviceExecutor), the side that ran the
  /// epoch is calibrated by its time, a move of the tables apart.
  bool finish(const Batch& b, EpochOutput* out, std::chrono::steady_clock::time_point t0, std::uint32_t temp_count,
              const ExecSide::Epoch* shape = nullptr) {
    if (shape) {
      const bool dev = out->stats.on_device;
      const double ms = dev ? ms_since(device_t0_) : ms_since(t0) - (out->stats.moved_tables ? moved_ms_ : 0);
      side_.ran(dev, *shape, ms);
      add_ms(dev ? device_exec_us_ : host_exec_us_, ms);
      model_link_ns_.store(side_.link_ns(), std::memory_order_relaxed);
      model_device_txn_ns_.store(side_.device_txn_ns(), std::memory_order_relaxed);
      model_host_txn_ns_.store(side_.host_txn_ns(), std::memory_order_relaxed);
    }
    out->tag = b.tag;
    out->attempt = b.attempt;
    Batch next;
    for (std::size_t t = 0; t < b.size(); ++t)
      if (out->results.outcome[t] == kRerun && (max_attempts_ == 0 || b.attempt[t] + 1 < max_attempts_)) {
        next.add_from(b, t, b.attempt[t] + 1);
        next.piece.back() = 0;  // a rerun runs as a txn of its own (pieces never rerun: Batch::add_piece)
      }
    reruns_ = std::move(next);
    out->stats.txns = b.txn_count();
    out->stats.entries = b.size();
    out->stats.temp_count = temp_count;
    out->stats.total_ms = ms_since(t0);
    return true;
  }

  Database db_;
  int threads_;
  Planner planner_;
  std::shared_ptr<DevicePlanner> device_;
  std::shared_ptr<DeviceExecutor> executor_;
  /// Bytes a move copies per ms (an estimate for the model: 10 GB/s, pageable copies over PCIe).
  static constexpr double kMoveBytesPerMs = 1e7;
  /// Every 64th txn's writes estimate an epoch's longest chain (about 0.2 ms for 100K TPC-C txns).
  static constexpr std::uint32_t kChainStride = 64;
  static void add_ms(std::atomic<std::uint64_t>& us, double ms) {
    if (ms > 0) us.fetch_add(static_cast<std::uint64_t>(ms * 1e3), std::memory_order_relaxed);
  }
  /// A move of the tables (either way) took `ms`: the model's next move costs that, and
  /// SideTimes counts it.
  void count_move(double ms) {
    side_.moved(ms);
    add_ms(move_us_, ms);
  }
  ExecSide side_;
  std::atomic<std::uint64_t> host_exec_us_{0}, device_exec_us_{0}, move_us_{0};  ///< SideTimes
  std::atomic<double> model_link_ns_{ExecSide().link_ns()}, model_device_txn_ns_{ExecSide().device_txn_ns()},
      model_host_txn_ns_{ExecSide().host_txn_ns()};
  bool by_contention_ = true;
  std::atomic<std::uint64_t> cost_model_on_host_{0};
  std::chrono::steady_clock::time_point device_t0_{};
  double moved_ms_ = 0;  ///< the last host epoch's download of the tables
  Home home_ = Home::kHost;
  bool host_current_ = true;  ///< with a DeviceExecutor: the host copy equals the current tables
  std::atomic<std::uint64_t> device_epochs_{0}, uploads_{0}, downloads_{0};
  bool attached_ = false, stale_ = false, damaged_ = false;
  std::atomic<std::uint64_t> host_planned_{0}, small_on_host_{0};
  std::size_t min_device_ops_ = 0;
  bool small_moves_ = false, small_table_moves_ = false;
  std::uint32_t max_attempts_ = 0;
  std::vector<std::vector<std::uint32_t>> freed_;
  Faults faults_;
  std::uint64_t watchdog_ns_ = 10000000000ull;
  double fallback_share_ = 0.25;
  int fallback_epochs_ = 8, single_left_ = 0;
  int hold_off_ = 0;          ///< all-thread epochs left that start no fallback (one thread cost more)
  double trigger_cost_ = 0;   ///< cost per txn (ns) of the all-thread epoch that started the fallback
  std::function<double(int, double)> fallback_cost_;
  ExecOrder exec_order_ = ExecOrder::kAuto;
  ExecQueues queues_;
  std::atomic<std::uint64_t> queued_epochs_{0};
  Scratch scratch_;
  std::vector<TableView> tv_;
  Batch reruns_;
  Indexed ix_;
  Plan plan_;
};

}  // namespace duet::batch::epic

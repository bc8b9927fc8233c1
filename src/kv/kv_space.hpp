// KvSpaceImpl: one `kv` keyspace, KVCG's workflow (seed section 2.4) over the Hot Cache, the
// Canonical Store and the Router, with the model switch protocol of sections 2.6.1-2.7.
//
// Per batch: validate, encode keys (key dictionary) and values (value blocks), enter the
// epoch gate, route each request with the live model, answer hot requests from the Hot
// Cache on the calling thread, send cold requests and Hot Cache misses (loads) to the
// Canonical Store as one request group, populate the cache from the loads, leave the gate.
// A hot update whose key is not resident loads it first and is retried in the next round;
// hot updates and loads wait (outside the gate) while a switch blocks them.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/check.hpp"
#include "duet/store.hpp"
#include "kv/canonical_store.hpp"
#include "kv/encoding.hpp"
#include "kv/hot_cache.hpp"
#include "kv/key_dictionary.hpp"
#include "kv/mode_chooser.hpp"
#include "kv/router.hpp"
#include "mem/epoch.hpp"
#include "mem/participant_pool.hpp"
#include "mem/striped_counter.hpp"
#include "sched/epoch_gate.hpp"

namespace duet::kv {

#if DUET_CHECKS
/// Builds with DUET_CHECKS, for tests: every batch round calls `hook` (null: none) right after
/// it entered the epoch gate, before it routes, so a test can make rounds slow there and widen
/// the window between a switch's advance and a straggler's routing.
void set_round_entry_hook(void (*hook)());
/// Builds with DUET_CHECKS, for tests: every batch round calls `hook` (null: none) once it
/// knows whether its model routes anything hot, so a test can make one routing slow and see
/// adaptive routing move away from it.
void set_route_hook(void (*hook)(bool any_hot));
#endif

/// What the keyspaces of a Store share: held by the Store and by every keyspace, so it lives
/// until the last of them goes (a keyspace handle may outlive its Store). The epoch manager is
/// destroyed before the budget: the blocks it frees then are released to the budget.
struct StoreResources {
  explicit StoreResources(std::uint64_t budget_bytes) : budget(budget_bytes) {}
  mem::MemoryBudget budget;
  mem::EpochManager epochs;
};

class KvSpaceImpl final : public KvSpace, public std::enable_shared_from_this<KvSpaceImpl>, private KvRouterControl {
 public:
  /// `map` is the keyspace's L-Slab map; `shared` the Store's budget and epoch manager, which
  /// the keyspace keeps alive for its whole life.
  static Status open(std::string name, const StoreConfig& cfg, std::unique_ptr<lslab::Map> map,
                     std::shared_ptr<StoreResources> shared, std::unique_ptr<KvSpaceImpl>* out);
  ~KvSpaceImpl() override;

  Status get(std::string_view key, std::string* value, bool* found) override;
  Status put(std::string_view key, std::string_view value, std::string* previous, bool* had_previous) override;
  Status del(std::string_view key, std::string* previous, bool* had_previous) override;
  Status execute(std::span<KvRequest> batch, std::span<KvTrace> trace = {}) override;
  std::unique_ptr<KvInFlight> submit(std::span<KvRequest> batch, std::span<KvTrace> trace = {}) override;
  Status finish(std::unique_ptr<KvInFlight> batch) override;
  bool ready(const KvInFlight& batch) const override;
  KvStats stats() const override;
  std::uint64_t size() const override;
  Status scan(std::uint64_t cursor, std::size_t count, std::vector<std::string>* keys, std::uint64_t* next) override;
  Status checkpoint() override;
  const std::string& name() const override { return name_; }
  KvRouterControl& router() override { return *this; }

 private:
  class InFlight;
  KvSpaceImpl(std::string name, const StoreConfig& cfg, std::shared_ptr<StoreResources> shared);
  // KvRouterControl.
  Status switch_model() override;
  Status set_threshold(double threshold) override;
  /// submit() without taking a share of the keyspace (execute() holds the caller's handle).
  std::unique_ptr<InFlight> start(std::span<KvRequest> batch, std::span<KvTrace> trace);
  /// Sets f up for a batch: every request pending and not yet admitted (a trace of the wrong
  /// size fails them all instead).
  void prepare(InFlight& f, std::span<KvRequest> batch, std::span<KvTrace> trace);
  /// Validates and encodes request i of f (its first round); false when it needs no store
  /// (failed, or absent without asking) or its value block must wait for the budget (then it
  /// is on f.unadmitted, for admit_waiting).
  bool admit(InFlight& f, std::uint32_t i);
  /// Allocates the value block of a request admit() left waiting, advancing the epochs up to
  /// three times while the budget is exhausted. Called outside the gate and unpinned.
  bool admit_waiting(InFlight& f, std::uint32_t i);
  /// Enters the gate and, request by request, admits (first round), routes and answers hot
  /// requests from the Hot Cache (hot answers are stamped in groups of kStampGroup, one clock
  /// read each); then submits the cold group and the loads.
  void start_round(InFlight& f);
  /// Waits for the round's groups, applies their outcomes, leaves the gate; retries go to f.next.
  void complete_round(InFlight& f);
  /// Completes f (every round), releases what it holds; returns its first error.
  Status finish_batch(InFlight& f);
  Status single(KvRequest::Op op, std::string_view key, std::string_view value, std::string* out, bool* found);
  /// The switch protocol; caller holds switch_mutex_. Installs `next`.
  Status switch_locked(std::unique_ptr<RouterModel> next);
  /// Writes the Hot Cache's update log into the Canonical Store; hot updates must be blocked
  /// and drained (caller holds switch_mutex_). On error, what was not applied stays dirty.
  /// *replayed, when given, gets the keys the store applied; they count in replayed_blocked.
  Status replay_log(std::size_t* replayed = nullptr);
  /// Replays the update log while hot updates still run (HotCache::take_log), in passes while
  /// it holds at least kBlockedReplayKeys keys; *replayed gets the keys the store applied
  /// (they count in replayed_early).
  /// Caller holds switch_mutex_. Errors only for a failed device (the cache keeps its keys).
  Status replay_early(std::size_t* replayed);
  static constexpr std::size_t kBlockedReplayKeys = 4096;
  static constexpr int kEarlyReplayPasses = 4;
  /// Blocks hot updates and loads and waits for the running updates; unblock() ends it.
  void block();
  void unblock();
  /// The model a switch would install: the mode's constant, or a histogram of the samples
  /// since the last training (plus the live model's counts when fewer than train_requests
  /// arrived). Caller holds switch_mutex_.
  std::unique_ptr<RouterModel> train_candidate();
  void auto_switch_loop();
  /// One step of adaptive routing (auto thread; caller holds switch_mutex_).
  void adapt_step();
  /// The learned model to install when adaptive routing returns to it: a fresh one when enough
  /// samples arrived, else the one parked when a constant routing (all-cold, all-hot) came in.
  std::unique_ptr<RouterModel> learned_candidate();

  // First, so that it is destroyed last: everything below uses the budget or the epochs.
  const std::shared_ptr<StoreResources> shared_;
  const std::string name_;
  const StoreConfig cfg_;
  mem::MemoryBudget* budget_;
  mem::EpochManager* epochs_;
  mem::ParticipantPool participants_;
  KeyDictionary dict_;
  HotCache hot_;
  std::unique_ptr<CanonicalStore> store_;
  bool inline_store_ = false;  ///< the store runs groups in submit() (no orchestrators): always ready
  ShadowCounts shadow_;
  std::atomic<double> threshold_;
  sched::EpochGate gate_;
  std::array<std::unique_ptr<RouterModel>, 2> model_slots_;
  std::array<std::atomic<const RouterModel*>, 2> models_{};
  std::atomic<bool> blocked_{false};
  mem::StripedCounter hot_writers_;  ///< hot updates running (a switch waits for zero)
  mem::StripedCounter keys_;         ///< live keys, from writes' outcomes (size())
  mutable std::mutex switch_mutex_;  ///< serializes switches; stats() takes it to read the live model
  std::chrono::steady_clock::time_point last_switch_;
  // Adaptive routing: batch latencies (recorded only when adaptive_), the chooser (used under
  // switch_mutex_), the learned model parked while a constant routing is installed, and what
  // stats() reports.
  const bool adaptive_;
  mem::StripedCounter latency_requests_, latency_ns_;
  ModeChooser chooser_;
  std::unique_ptr<RouterModel> parked_;
  std::atomic<std::uint8_t> choice_{0};
  std::atomic<std::uint64_t> choice_changes_{0}, probes_{0};
  std::atomic<double> learned_ns_{0}, all_cold_ns_{0}, all_hot_ns_{0};
  // Statistics.
  std::atomic<std::uint64_t> hot_requests_{0}, hot_misses_{0}, cold_requests_{0}, switches_{0}, last_switch_us_{0};
  /// The longest switch, and the longest time a switch held hot updates and loads, in µs.
  std::atomic<std::uint64_t> longest_switch_us_{0}, longest_block_us_{0};
  std::atomic<std::uint64_t> logged_grows_{0};  ///< the Hot Cache grows already logged
  /// Keys replayed into the store before and under the block (switches and checkpoints).
  std::atomic<std::uint64_t> early_replayed_{0}, blocked_replayed_{0};
  // The automatic switch thread.
  std::mutex auto_m_;
  std::condition_variable auto_cv_;
  bool auto_stop_ = false;
  std::thread auto_thread_;
};

}  // namespace duet::kv

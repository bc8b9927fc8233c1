// KVCG's Canonical Store: every key's authoritative value (except hot keys written since the
// last model switch), kept in L-Slab on the GPU, or in L-Slab's CPU twin without one.
//
// Requests arrive as request groups (the seed's GRBs: the cold part of one client batch, or
// Hot Cache misses). Orchestrator threads, each owning an L-Slab lane (its own stream and
// pinned staging), take groups off a shared queue until their aggregated batch (ARB) holds
// max_aggregate requests or a dequeue budget of empty polls runs out, run the batch, and
// hand each group its outcomes. With zero orchestrators, the submitting thread runs its
// group itself (the default on the CPU twin, where a hand-off only adds latency).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "duet/status.hpp"
#include "index/lslab/map.hpp"
#include "sched/epoch_gate.hpp"

namespace duet::kv {

/// A group of requests for the Canonical Store, with room for their outcomes.
struct RequestGroup {
  std::vector<lslab::Op> ops;
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> values;
  std::vector<lslab::OpStatus> status;
  std::vector<std::uint64_t> out;
  Status error;                      ///< the batch's failure, when it failed as a whole
  std::atomic<std::uint32_t> done{0};
  /// When set, the store releases this epoch hold once the group has run (before done).
  sched::EpochGate* gate = nullptr;
  sched::EpochGate::Ticket gate_ticket;
  /// The submitting thread's completion waker (set_completion_waker), called once the group's
  /// outcomes are written (done 1) and before done turns 2; set by submit().
  void (*waker)(void*) = nullptr;
  void* waker_arg = nullptr;

  void clear() {
    ops.clear();
    keys.clear();
    values.clear();
  }
  void add(lslab::Op op, std::uint64_t key, std::uint64_t value) {
    ops.push_back(op);
    keys.push_back(key);
    values.push_back(value);
  }
  std::size_t size() const { return ops.size(); }
};

class CanonicalStore {
 public:
  /// Opens the store on `map` with `orchestrators` threads (0: run groups inline).
  static Status open(std::unique_ptr<lslab::Map> map, unsigned orchestrators, std::size_t max_aggregate,
                     std::unique_ptr<CanonicalStore>* out);
  ~CanonicalStore();

  /// Runs a group and returns when its outcomes are in g.status / g.out (or g.error is set).
  void run(RequestGroup& g) {
    submit(g);
    wait(g);
  }
  /// Starts a group (with no orchestrators: runs it now). g must stay alive and unchanged
  /// until wait(g) returns.
  void submit(RequestGroup& g);
  /// Waits for a submitted group's outcomes.
  void wait(RequestGroup& g);

  const char* backend() const { return map_->backend(); }
  /// Every stored index key and value handle (for a quiescent store; see Map::export_entries).
  Status export_entries(std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* values) {
    return map_->export_entries(keys, values);
  }
  /// Cursor iteration over the stored entries (see Map::export_range).
  Status export_range(std::uint64_t from, std::uint64_t max_slabs, std::vector<std::uint64_t>* keys,
                      std::vector<std::uint64_t>* values, std::uint64_t* next) {
    return map_->export_range(from, max_slabs, keys, values, next);
  }
  std::uint64_t batches() const { return batches_.load(std::memory_order_relaxed); }
  /// Nanoseconds spent running batches on the map (with a GPU: copies in, kernel, copies out,
  /// as the host waits for them; summed over orchestrators).
  std::uint64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }
  std::uint64_t batched_requests() const { return batched_.load(std::memory_order_relaxed); }

 private:
  CanonicalStore(std::unique_ptr<lslab::Map> map, std::size_t max_aggregate)
      : map_(std::move(map)), max_aggregate_(max_aggregate) {}
  void orchestrate(lslab::Lane* lane);
  Status run_inline(RequestGroup& g);

  std::unique_ptr<lslab::Map> map_;
  std::size_t max_aggregate_;
  std::vector<std::unique_ptr<lslab::Lane>> lanes_;
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<RequestGroup*> queue_;
  bool stop_ = false;
  std::atomic<std::uint64_t> batches_{0}, batched_{0}, busy_ns_{0};
  static std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point t0) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  }
  // Inline mode: lanes handed to submitting threads.
  std::mutex lane_m_;
  std::vector<std::unique_ptr<lslab::Lane>> idle_lanes_;
};

}  // namespace duet::kv

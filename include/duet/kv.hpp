// The `kv` keyspace: KVCG's key-value store (hot keys in a CPU cache, every key in the
// Canonical Store on L-Slab, a learned router between them). Obtain one from Store::create_kv or
// Store::kv (duet/store.hpp). docs/kv.md documents the API, configuration, errors and design.
//
// Thread safety: every member of KvSpace may be called from any number of threads at once.
// Every operation is linearizable; a batch is element-wise linearizable (each request takes
// effect at one point between the batch's call and return, requests of one batch in some order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "duet/keyspace.hpp"
#include "duet/status.hpp"

namespace duet {

// ---- Configuration (StoreConfig's kv fields, duet/store.hpp) --------------------------------

/// Sizes no request may exceed. Over-limit requests get kTooLarge and change nothing.
struct KvLimits {
  std::size_t max_key_bytes = 64 * 1024;            ///< 64 KiB
  std::size_t max_value_bytes = 512 * 1024 * 1024;  ///< 512 MiB
};

/// How the Router sends requests to the Hot Cache or the Canonical Store.
enum class RouterMode : std::uint8_t {
  kLearned = 0,  ///< KVCG: a model trained from sampled requests decides per key
  kAllCold = 1,  ///< every request to the Canonical Store (the seed's KVG)
  kAllHot = 2,   ///< every request to the Hot Cache (the seed's KVC); misses still load from the store
};

/// Parses "learned", "all-cold"/"kvg" or "all-hot"/"kvc"; InvalidArgument otherwise.
Status parse_router_mode(std::string_view text, RouterMode* out);
const char* router_mode_name(RouterMode m);

/// Router settings (KVCG sections 2.6-2.7). Defaults follow the seed.
struct RouterConfig {
  RouterMode mode = RouterMode::kLearned;
  /// Histogram bins over the hashed key space. The seed's 10,000 bins put 10^5 keys of a
  /// 10^9-key range in each bin, so a bin's share mixes hot and cold keys; 2^20 bins (4 MiB of
  /// counters, a 128 KiB bitmap) keep about a thousand keys of such a range per bin.
  std::uint32_t bins = 1u << 20;
  /// A bin is hot when its share of sampled requests exceeds this (>= 1: nothing is hot).
  double threshold = 1.3e-5;
  /// One request in this many is sampled into the shadow model (1: all).
  std::uint32_t sample_every = 16;
  /// Sampled requests after which the shadow model is ready to be installed.
  std::uint64_t train_requests = 5'000'000 / 16;
  /// Install a ready shadow model automatically (from a background thread).
  bool auto_switch = true;
  /// Minimum time between automatic switches, in milliseconds.
  std::uint32_t min_switch_interval_ms = 1000;
  /// Adaptive routing (learned mode with auto_switch): every this many milliseconds the
  /// keyspace measures its mean latency per request under the routing in force and under one
  /// other (all-cold and all-hot in turn), one window each, and keeps the other while it is at
  /// least 5% faster. A GPU store can answer cold requests faster than the cache answers hot
  /// ones; a small or uniform working set can be served faster from the Hot Cache alone. The
  /// choice is KvStats::router_choice. A probe also follows each learned model change. 0
  /// turns adaptation off.
  std::uint32_t adapt_interval_ms = 10000;
  /// Length of each mode's measuring window in a probe, in milliseconds (>= 1).
  std::uint32_t adapt_window_ms = 100;
};

/// One request of a batch. The views must stay valid until execute() returns (for submit():
/// until finish() returns).
struct KvRequest {
  enum class Op : std::uint8_t { kGet = 0, kPut = 1, kDelete = 2 };
  Op op = Op::kGet;
  std::string_view key;
  std::string_view value;  ///< kPut only
  /// PUT/DELETE: copy the previous value into `result`. Callers that only need `found` set it
  /// false, which saves reading the old value (a cache miss per write on large keyspaces).
  bool want_previous = true;
  // Outcome, written by execute():
  Status status;       ///< ok, or why this request did nothing
  bool found = false;  ///< GET: the key exists; PUT/DELETE: it held a previous value
  std::string result;  ///< GET: the value; PUT/DELETE: the previous value (when found)
};

// ---- Instrumentation ------------------------------------------------------------------------

/// Which component answered a request.
enum class KvPath : std::uint8_t {
  kNone = 0,  ///< nothing did: the request failed before routing
  kHot = 1,   ///< the Hot Cache (including misses it loaded from the Canonical Store)
  kCold = 2,  ///< the Canonical Store
};

/// How one request of a batch was answered, for latency tables and metrics. Optional: a batch
/// run with a trace (one entry per request) fills it; without one nothing is recorded and no
/// clock is read for it.
struct KvTrace {
  KvPath path = KvPath::kNone;  ///< which component answered (also for failed requests routed)
  std::uint64_t done_ns = 0;    ///< steady_clock nanoseconds when the answer was ready
};

/// Counters of one keyspace; cheap to read, approximately consistent.
struct KvStats {
  std::uint64_t hot_requests = 0;       ///< answered by the Hot Cache
  std::uint64_t hot_misses = 0;         ///< routed hot, key not resident: loaded from the store
  std::uint64_t cold_requests = 0;      ///< answered by the Canonical Store
  std::uint64_t batches = 0;            ///< aggregated batches sent to the Canonical Store
  std::uint64_t batched_requests = 0;   ///< requests in those batches (incl. loads and replays)
  std::uint64_t store_busy_ns = 0;      ///< time the store spent running batches (GPU time on a GPU)
  std::uint64_t model_switches = 0;     ///< models installed
  std::uint64_t hot_bins = 0;           ///< bins the live model classifies hot
  std::uint64_t hot_entries = 0;        ///< entries resident in the Hot Cache
  std::uint64_t hot_grows = 0;          ///< times the Hot Cache's table grew
  /// Buckets the Hot Cache's grows copied a second time with writers held off (written during
  /// the first copy, which runs beside them).
  std::uint64_t hot_grow_recopied = 0;
  std::uint64_t hot_grow_longest_blocked_us = 0;  ///< the longest time a grow held Hot Cache writers off
  std::uint64_t last_switch_us = 0;     ///< duration of the last switch (early replay to eviction)
  std::uint64_t longest_switch_us = 0;  ///< the longest switch since the keyspace opened
  /// The longest time one switch or checkpoint held hot updates and loads (blocking, replaying
  /// the hot log, draining): requests that need the Hot Cache's writers wait that long.
  std::uint64_t longest_switch_block_us = 0;
  /// Hot Cache keys the Canonical Store applied from replays of switches and checkpoints:
  /// early, while hot updates still ran, and under the block (what the block's length depends
  /// on).
  std::uint64_t replayed_early = 0;
  std::uint64_t replayed_blocked = 0;
  std::uint64_t memory_bytes = 0;       ///< host bytes charged to the budget
  std::string store_backend;            ///< "gpu" or "cpu"
  std::string router_model;             ///< e.g. "histogram(bins=10000, threshold=1.3e-05)"
  /// The routing the keyspace chose: "learned", "all-cold" or "all-hot" under adaptive
  /// routing (see RouterConfig::adapt_interval_ms), else the configured mode's name.
  std::string router_choice;
  std::uint64_t router_choice_changes = 0;  ///< adaptive probes that changed the choice
  std::uint64_t router_probes = 0;          ///< adaptive probes completed
  /// Mean latency per request last measured under each routing by a probe, in µs (0: none yet).
  double learned_us_per_request = 0;
  double all_cold_us_per_request = 0;
  double all_hot_us_per_request = 0;
};

// ---- Tuning ---------------------------------------------------------------------------------

/// The router of a live `kv` keyspace, for tuning and administration (KvSpace::router()); using
/// the keyspace needs none of it. Valid as long as a handle to its keyspace is held. Every member
/// may be called from any number of threads at once.
class KvRouterControl {
 public:
  /// Installs the shadow model now (whatever it has learned) through the switch protocol: hot
  /// updates wait, the hot log is replayed into the store, the model is installed and keys no
  /// longer hot are evicted. Returns when the switch is complete; on an error (the replay
  /// failed) the live model stays and nothing is lost.
  virtual Status switch_model() = 0;
  /// Changes the threshold (RouterConfig::threshold); takes effect at the next switch.
  /// kInvalidArgument, changing nothing, for a negative or NaN threshold.
  virtual Status set_threshold(double threshold) = 0;

 protected:
  ~KvRouterControl() = default;  // not owned through this interface
};

// ---- The keyspace ---------------------------------------------------------------------------

/// A batch started by KvSpace::submit and not yet finished (opaque). It keeps its keyspace
/// alive until it is finished.
class KvInFlight {
 public:
  virtual ~KvInFlight() = default;
};

/// Registers, for the calling thread, fn(arg), which the engine calls from one of its own
/// threads each time a batch this thread submitted (KvSpace::submit) may have become ready. An
/// event loop can then sleep (in epoll, say) with batches in flight instead of blocking in
/// finish(). Each call comes after the batch is ready() and before its finish() can return.
/// fn must be cheap, must not block, and must stay callable until every batch the thread
/// submitted is finished. A null fn unregisters. Batches that run inside submit() (no
/// orchestrator threads) are ready when it returns and call nothing.
void set_completion_waker(void (*fn)(void*), void* arg);

/// A `kv` keyspace. Handles are shared: see duet/keyspace.hpp.
class KvSpace : public Keyspace {
 public:
  KeyspaceKind kind() const final { return KeyspaceKind::kKv; }
  /// Reads key. *found says whether it exists; *value gets its bytes when it does.
  virtual Status get(std::string_view key, std::string* value, bool* found) = 0;
  /// Sets key to value. When previous is non-null it receives the replaced value, and
  /// *had_previous whether there was one.
  virtual Status put(std::string_view key, std::string_view value, std::string* previous = nullptr,
                     bool* had_previous = nullptr) = 0;
  /// Removes key. previous/had_previous as for put.
  virtual Status del(std::string_view key, std::string* previous = nullptr, bool* had_previous = nullptr) = 0;
  /// Runs every request of the batch; each gets its own status. Returns the first failed
  /// request's status (the others still ran), or ok. Element-wise linearizable.
  /// `trace` is empty (nothing recorded) or has one entry per request, filled as the requests
  /// are answered; another size fails every request with kInvalidArgument and runs none.
  virtual Status execute(std::span<KvRequest> batch, std::span<KvTrace> trace = {}) = 0;
  /// Starts a batch and returns without waiting for the Canonical Store: hot requests may
  /// already be answered; the rest are answered by finish(). A thread may keep many batches in
  /// flight this way (pipelining). The batch, its views and the trace must stay valid, and the
  /// requests untouched, until finish() returns. Every submitted batch must be finished (a
  /// model switch waits for batches in flight); destroying the handle unfinished finishes it.
  /// execute(b, t) is finish(submit(b, t)). The default runs execute() at once.
  [[nodiscard]] virtual std::unique_ptr<KvInFlight> submit(std::span<KvRequest> batch,
                                                           std::span<KvTrace> trace = {});
  /// Completes a batch from submit() on this keyspace; returns as execute() does.
  /// kInvalidArgument for a null handle or one from another keyspace.
  virtual Status finish(std::unique_ptr<KvInFlight> batch);
  /// Whether finish(batch) would find the Canonical Store's answers already there: a cheap,
  /// non-blocking test, for a caller that keeps batches in flight and does other work until
  /// one is ready. finish() may still run a short retry round (hot updates whose key had to be
  /// loaded). Call from the thread that holds the handle. The default (whose submit() ran the
  /// batch at once) is always true.
  virtual bool ready(const KvInFlight& batch) const {
    (void)batch;
    return true;
  }
  // size() and scan() are Keyspace's. A `kv` keyspace counts keys from the outcomes of writes;
  // scan's cursor 0 first writes the Hot Cache's pending updates to the Canonical Store
  // (checkpoint()), and each call costs up to max(16384, 64 * count) slab reads (fewer once
  // count keys are found).
  /// Writes the Hot Cache's pending updates into the Canonical Store (the switch protocol's
  /// replay, without a model change); hot updates wait meanwhile. The default does nothing.
  virtual Status checkpoint() { return Status::Ok(); }
  virtual KvStats stats() const = 0;
  /// The router's tuning and administration (see KvRouterControl).
  virtual KvRouterControl& router() = 0;
};

}  // namespace duet

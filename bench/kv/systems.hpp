// The key-value systems `duet bench kv` drives, behind one batch interface shaped like
// duet::KvSpace::execute: Duet's kv keyspace in its three router modes, and CPU hash maps of
// byte strings (oneTBB, libcuckoo) that run a batch element by element on the calling thread.
// Peers are compiled in only when their library was found.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "duet/status.hpp"
#include "duet/store.hpp"

namespace duet::bench::kv {

/// steady_clock now in nanoseconds (the clock of KvTrace::done_ns).
inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

/// A system under test. Thread-safe: every client thread calls execute() concurrently.
class KvSystem {
 public:
  virtual ~KvSystem() = default;
  /// Runs every request and fills its outcome (status, found, result) and, when `trace` is not
  /// empty, its trace entry (path, done_ns) with KvSpace::execute's contract; returns the first
  /// failed request's status, or ok.
  virtual duet::Status execute(std::span<duet::KvRequest> batch, std::span<duet::KvTrace> trace = {}) = 0;
  /// Starts a batch without waiting (KvSpace::submit); peers run it at once.
  virtual std::unique_ptr<duet::KvInFlight> submit(std::span<duet::KvRequest> batch, std::span<duet::KvTrace> trace);
  /// Completes a batch from submit().
  virtual duet::Status finish(std::unique_ptr<duet::KvInFlight> batch);
  /// True for peers: requests run one after another, so a request's latency is the time since
  /// the previous one finished; false for Duet, whose requests all start with the batch.
  virtual bool per_element_latency() const = 0;
  /// Duet's keyspace (for stats, switch_model and set_threshold), valid as long as this system;
  /// null for peers.
  virtual duet::KvSpace* space() { return nullptr; }
  /// Where it runs, e.g. "gpu: NVIDIA H200" or "cpu".
  virtual std::string device_description() const { return "cpu"; }
};

/// The systems this benchmark knows, in run order.
struct SystemInfo {
  std::string name;            ///< "kvcg", "kvcg-auto", "kvc", "kvg", "tbb", "libcuckoo"
  bool duet;                   ///< a Duet kv keyspace (router mode decides the variant)
  bool available;              ///< compiled into this binary
  std::string missing_reason;  ///< why not, when unavailable
};
/// Every system this benchmark knows, available or not, in run order.
const std::vector<SystemInfo>& kv_systems();
/// The entry of kv_systems() named `name`, or null.
const SystemInfo* find_kv_system(const std::string& name);

/// True for the systems with a learned router: kvcg (models installed by the benchmark only)
/// and kvcg-auto (the keyspace's defaults: automatic switches and adaptive routing, which may
/// route everything cold when that is faster).
inline bool is_learned_system(const std::string& name) { return name == "kvcg" || name == "kvcg-auto"; }

/// How to build one system.
struct SystemSpec {
  std::uint64_t expected_keys = 0;   ///< keys it will hold (sizes tables up front)
  duet::DeviceChoice device = duet::DeviceChoice::kAuto;
  double threshold = duet::RouterConfig{}.threshold;  ///< kvcg
  std::uint64_t train_requests = 0;  ///< kvcg: requests the shadow model learns from (0: default)
  bool auto_switch = false;          ///< kvcg: install ready shadow models in the background
  unsigned orchestrators = 0;        ///< Duet: StoreConfig::orchestrators
  std::size_t max_aggregate = 0;     ///< Duet: StoreConfig::max_aggregate
  std::uint32_t switch_interval_ms = 1000;
};

/// Builds system `name` (must be available). Duet systems open a Store with one keyspace;
/// opening errors (no GPU for kGpu, bad configuration) come back as the Status.
duet::Status make_kv_system(const std::string& name, const SystemSpec& spec, std::unique_ptr<KvSystem>* out);

/// The oneTBB peer, sized for spec.expected_keys (peer_tbb.cpp, built only with oneTBB).
std::unique_ptr<KvSystem> make_tbb_kv_system(const SystemSpec& spec);
/// The libcuckoo peer, sized for spec.expected_keys (peer_libcuckoo.cpp, built only with libcuckoo).
std::unique_ptr<KvSystem> make_libcuckoo_kv_system(const SystemSpec& spec);

/// Runs a batch on a peer: one(request) performs the request and fills found/result; this
/// stamps status and, when traced, done_ns (path kNone) after each request.
template <class One>
duet::Status run_peer_batch(std::span<duet::KvRequest> batch, std::span<duet::KvTrace> trace, One&& one) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    duet::KvRequest& r = batch[i];
    r.found = false;
    one(r);
    r.status = duet::Status::Ok();
    if (!trace.empty()) trace[i] = duet::KvTrace{duet::KvPath::kNone, now_ns()};
  }
  return duet::Status::Ok();
}

}  // namespace duet::bench::kv

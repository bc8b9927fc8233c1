// The closed-loop client driver of `duet bench kv`: prefill, and phases in which client
// threads each build a batch of generated requests, hand it to KvSystem::execute, wait for
// it, record every request's latency and outcome, and go again.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "duet/status.hpp"
#include "latency.hpp"
#include "systems.hpp"
#include "ycsb.hpp"

namespace duet::bench::kv {

/// Which keys exist in one system, shared by its phases. Key numbers below `acked` have been
/// inserted (prefill and completed inserts); inserts take numbers from `next_insert`.
struct KeyState {
  std::atomic<std::uint64_t> next_insert{0};
  std::atomic<std::uint64_t> acked{0};
};

/// Inserts keys 0..count-1 with value_bytes-byte values on `threads` threads in batches of
/// `batch`, with a progress display called `label`; sets *state to count inserted keys.
/// Returns the first failed request's status.
duet::Status prefill(KvSystem& system, KeyState* state, std::uint64_t count, std::size_t value_bytes,
                     unsigned threads, std::size_t batch, const std::string& label);

/// One phase of requests.
struct PhaseSpec {
  std::string label;              ///< progress label, e.g. "kvcg theta=0.9 run 1/3"
  Workload workload;
  Distribution distribution = Distribution::kZipfian;
  double theta = 0.99;
  std::uint64_t key_range = 1;
  std::size_t batch = 512;
  unsigned pipeline = 1;          ///< batches each client keeps in flight (submit/finish)
  std::size_t trace = 0;          ///< Zipfian ranks drawn up front per client (0: on demand)
  std::size_t value_bytes = 8;
  unsigned threads = 1;
  std::uint64_t seed = 0;
  std::uint64_t ops = 0;          ///< requests to run in all; 0: run for `seconds`
  /// Ops-bound phases (ops > 0, no timeline) replay a request stream each client generates
  /// before the start: its operation kinds and keys depend only on (seed, client, spec), so
  /// every system executes the same requests in the same order, and generation stays out of
  /// the measurement. A client's stream holds at most this many requests and is cycled when it
  /// runs more (64 MiB per client at the default).
  std::size_t stream_cap = std::size_t{1} << 23;
  double seconds = 0;
  bool record = true;             ///< keep latency histograms (off for warm-up)
  bool show_progress = true;
  // Model-change timeline: windows of latency and samples of the keyspace's statistics. The
  // popularity shift happens `pre_shift_s` after the start; the phase then runs `seconds` more.
  bool timeline = false;
  double window_ms = 50;
  double pre_shift_s = 0;
  std::uint64_t shift = 0;          ///< after the shift: rank r < shift_span -> (r + shift) % shift_span
  std::uint64_t initial_shift = 0;  ///< from the start (every phase; 0 with span 0: no shift)
  std::uint64_t shift_span = 0;
};

/// Path index of a request's latency: answered by the Hot Cache, the Canonical Store, or a peer.
enum PathIndex : unsigned { kHotPath = 0, kColdPath = 1, kPeerPath = 2, kPaths = 3 };
/// Operation class: GET, or PUT (update, insert and the write half of read-modify-write).
enum OpClass : unsigned { kReadOps = 0, kWriteOps = 1, kOpClasses = 2 };

/// Statistics of the keyspace sampled during a timeline.
struct StatSample {
  double t_s = 0;                    ///< seconds since the popularity shift (negative before)
  std::uint64_t model_switches = 0;
  std::uint64_t hot_bins = 0;
  std::uint64_t hot_entries = 0;
  std::uint64_t last_switch_us = 0;
  std::uint64_t hot_requests = 0, cold_requests = 0;
};

/// Latency of one timeline window by path: hot, cold, and every request.
struct Window {
  LatencyHistogram hot, cold, all;
};

/// What a phase measured.
struct PhaseResult {
  std::uint64_t requests = 0;
  std::uint64_t gets = 0, gets_found = 0;
  std::uint64_t errors = 0;         ///< requests whose status was not ok
  std::string first_error;
  std::uint64_t wrong_values = 0;   ///< GET results / previous values not written for their key
  double wall_s = 0;
  double ops_per_s = 0;             ///< inside the store: sum over threads of requests / time inside submit+finish
  double ops_per_s_wall = 0;        ///< requests / wall time from the start to the last answer (the headline)
  bool replayed = false;            ///< the phase replayed pre-generated request streams
  LatencyHistogram hist[kOpClasses][kPaths];
  // Timeline only.
  double window_s = 0;
  double first_window_t_s = 0;      ///< start of window 0 relative to the shift
  std::vector<Window> windows;
  std::vector<StatSample> samples;

  /// Every request of the given paths (bit i: PathIndex i) and operation classes merged.
  LatencyHistogram merged(unsigned path_mask, unsigned class_mask) const;
};

/// Runs one phase of `spec` against `system`. Errors of individual requests are counted in
/// the result, not returned.
PhaseResult run_phase(KvSystem& system, KeyState* state, const PhaseSpec& spec);

}  // namespace duet::bench::kv

// The load driver of duet_bench_net: persistent connections spread over client threads, each
// thread an epoll loop over non-blocking sockets. A connection runs closed-loop batches: it
// writes `pipeline` requests at once, reads their replies, and only then sends the next batch.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/kv/latency.hpp"
#include "bench/kv/ycsb.hpp"
#include "options.hpp"

namespace duet::bench::net {

/// Counters and latencies of one phase, summed over the client threads.
struct PhaseStats {
  std::uint64_t requests = 0, gets = 0, sets = 0;
  std::uint64_t get_hits = 0, get_misses = 0;
  std::uint64_t errors = 0;        ///< error replies (-...)
  std::uint64_t wrong_type = 0;    ///< a reply of a type the command cannot return
  std::uint64_t wrong_values = 0;  ///< a GET value other than the one written for the key
  std::string first_problem;       ///< the first error / wrong reply, described
  double seconds = 0;              ///< phase start to its last reply
  kv::LatencyHistogram all, get, set;  ///< per-request latency (measured phases only)

  void merge(const PhaseStats& o);
  double ops_per_s() const { return seconds > 0 ? static_cast<double>(requests) / seconds : 0.0; }
};

class Driver {
 public:
  explicit Driver(const Options& options);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  /// Opens every connection (blocking connect, then non-blocking). False and *error on failure.
  bool connect(std::string* error);

  /// SETs every key 0..keyspace-1 once (batches of `pipeline` per connection; untimed).
  PhaseStats load();
  /// Runs the command mix for `seconds`, or for `requests` requests when non-zero. Latencies
  /// are recorded when `measure` is set. `verify`: GET values must be the loaded ones.
  PhaseStats run_mix(double seconds, std::uint64_t requests, bool measure, bool verify);

 private:
  struct Conn;
  struct Worker;
  struct Phase;
  void run_worker(Worker& w, Phase& phase, PhaseStats* stats);
  PhaseStats run_phase(Phase& phase);
  /// Reports a stall of `w`'s thread: its waiting connections' state and the server's INFO, then exits 1.
  [[noreturn]] void report_stall(const Worker& w, std::size_t active);

  Options o_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<kv::ZipfianGenerator> zipf_;
  sockaddr_storage server_addr_{};  ///< the address the connections reached (for the stall's INFO)
  socklen_t server_addr_len_ = 0;
};

/// Monotonic time in nanoseconds.
std::uint64_t now_ns();

}  // namespace duet::bench::net

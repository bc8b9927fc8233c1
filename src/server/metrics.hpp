// Server metrics: per-thread counters and histograms (written by their thread only, relaxed
// atomics, so reading never stops a thread), rendered as Prometheus text, and the optional
// HTTP endpoint that serves them (`--metrics-port`).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>


namespace duet::server {

/// Adds n to a counter only one thread writes (a plain load and store, no locked instruction);
/// readers on other threads see a recent value.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

/// A histogram with fixed upper bounds, written by one thread; observe() is two bumps.
class Histogram {
 public:
  explicit Histogram(const std::vector<double>* bounds) : bounds_(bounds), counts_(bounds->size() + 1) {}
  void observe(double v);
  /// Adds this histogram's counts into cumulative buckets (size bounds+1) and the sum.
  void add_to(std::vector<std::uint64_t>* buckets, double* sum) const;

 private:
  const std::vector<double>* bounds_;
  std::vector<std::atomic<std::uint64_t>> counts_;
  std::atomic<std::uint64_t> sum_micro_{0};  // sum in millionths
};

/// What one I/O thread counts. Per-command entries are indexed by CommandDef::id.
struct ThreadMetrics {
  ThreadMetrics();
  std::vector<std::atomic<std::uint64_t>> calls;
  std::vector<std::atomic<std::uint64_t>> errors;
  std::vector<std::unique_ptr<Histogram>> latency;  ///< per command, seconds
  Histogram hot_latency, cold_latency;              ///< per engine path, seconds
  Histogram batch_size;                             ///< commands per engine batch
  std::atomic<std::uint64_t> batches{0}, batched{0}, connections{0}, net_in{0}, net_out{0};
  /// Connections this thread serves now.
  std::atomic<std::uint64_t> open_connections{0};
  /// Engine batches started while another batch of the same thread was in flight.
  std::atomic<std::uint64_t> overlapped{0};
  /// Blind writes of another thread's key run here, without the hand-off to the owner.
  std::atomic<std::uint64_t> direct_writes{0};
  /// The longest loop pass (from epoll_wait's return to the pass's end), and the passes that
  /// took a second or more: a thread that long in one pass answers none of its clients.
  std::atomic<std::uint64_t> longest_pass_ns{0}, slow_passes{0};
};

struct ServerStats;

/// Renders every thread's metrics and the server-wide statistics (memory, keys, GPU time,
/// clients; from the aggregator, as INFO) as Prometheus text format 0.0.4.
std::string render_prometheus(const std::vector<ThreadMetrics*>& threads, const ServerStats& s);

/// Serves GET /metrics on its own thread until stop(). `render` is called per scrape.
class MetricsEndpoint {
 public:
  ~MetricsEndpoint() { stop(); }
  /// Listens on bind:port. InvalidArgument-style message in *error when it cannot.
  bool start(const std::string& bind, int port, std::function<std::string()> render, std::string* error);
  void stop();

 private:
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::function<std::string()> render_;
};

}  // namespace duet::server

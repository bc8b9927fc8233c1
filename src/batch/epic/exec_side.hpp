// Where an epoch executes when a device can run it (EpicPlacement::kGpuExec): on the device, or
// on the CPU threads, by its contention. On the GPU a chain of versions through one record runs
// link by link (each txn waits for the one before, about 4.4 us a link on the H100 and H200
// machines: docs/epic.md), while CPU threads pass a version along in a cache line; without such
// chains the GPU runs an epoch several times faster. So the longest chain of writes to one record
// is estimated per epoch and each side's cost is modelled from the epochs it ran.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

/// The longest chain of writes to one record in `b`, estimated from every `stride`-th txn: the
/// record's count among the sampled txns' writes, times `stride` (exact with stride 1; a stride
/// of 0 counts as 1). A record that every txn, or every txn of one kind, writes is found whatever
/// the stride. Cost: one hash-map update per write of a sampled txn.
inline std::uint64_t longest_write_chain(const Batch& b, std::uint32_t stride) {
  if (stride == 0) stride = 1;
  struct KeyHash {
    std::size_t operator()(const std::pair<std::uint32_t, std::uint64_t>& k) const {
      return std::hash<std::uint64_t>()(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
    }
  };
  std::unordered_map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t, KeyHash> count;
  count.reserve(b.size() / stride * 4 + 16);
  std::uint32_t most = 0;
  for (std::size_t t = 0; t < b.size(); t += stride)
    for (std::uint32_t o = b.op_begin[t] + b.nreads[t]; o < b.op_begin[t + 1]; ++o)
      most = std::max(most, ++count[{b.keys[o].table, b.keys[o].key}]);
  return std::uint64_t(most) * stride;
}

/// The median of the last kWindow values pushed (the lower of the two middle ones when the
/// window holds an even count), or a default before the first. One outlier among three or more
/// values leaves it within the range of the others; a shift that lasts moves it once most of the
/// window has seen it.
/// Cost: a sort of at most kWindow values per value().
class RecentMedian {
 public:
  static constexpr std::size_t kWindow = 5;
  explicit RecentMedian(double initial) : initial_(initial) {}
  void push(double v) {
    last_[next_ % kWindow] = v;
    ++next_;
  }
  double value() const {
    const std::size_t n = std::min<std::size_t>(next_, kWindow);
    if (n == 0) return initial_;
    std::array<double, kWindow> v = last_;
    for (std::size_t i = 1; i < n; ++i)  // insertion sort: at most five values
      for (std::size_t j = i; j > 0 && v[j] < v[j - 1]; --j) std::swap(v[j], v[j - 1]);
    return v[(n - 1) / 2];
  }

 private:
  double initial_;
  std::array<double, kWindow> last_{};
  std::size_t next_ = 0;
};

/// Chooses the side that executes each epoch (true: the device) from a cost model of each side,
/// set by the epochs each side ran. Device: the longer of the chain (links at link_ns) and the
/// epoch's txns at device_txn_ns. Host: txns at host_txn_ns. Defaults before any measurement:
/// 4,400 ns a link, 50 ns a txn on the device (uncontended YCSB at 100K-txn epochs, H100), 400 ns
/// a txn on the host (Epic-CPU on TPC-C NP at one warehouse, 16 threads). Each epoch adds what
/// it measured to its side's term (on the device the chain's or the txns', see ran()), and a
/// term's figure is the median of its last five measurements (RecentMedian): through the server
/// a hot chain's calls waited 39 ms at the median and 646 ms at p99 on the CPU threads, and a
/// model that took each epoch as it came moved the tables back and forth. A side's first epoch,
/// its warm-up, sets nothing. Moving the tables costs move_ms (an estimate, then the last move
/// measured), so the tables move as in ski rental: the epochs where the other side looked
/// cheaper add what it would have saved, and the tables move once that credit reaches a move's
/// cost (it resets when the side holding them looks cheaper). A side never chosen keeps its
/// figure. Not thread-safe (the engine's epoch thread owns it).
class ExecSide {
 public:
  struct Epoch {
    std::uint64_t txns = 0;   ///< entries the epoch runs (txns and pieces)
    std::uint64_t chain = 0;  ///< longest_write_chain
  };
  /// How far the chain's term must exceed the txns' for an epoch to measure the link cost.
  static constexpr double kChainDominates = 4;
  /// `move_ms`: the estimated cost of moving every table between the two sides once.
  explicit ExecSide(double move_ms = 0) : move_ms_(move_ms) {}
  void set_move_ms(double ms) { move_ms_ = ms; }
  double move_ms() const { return move_ms_; }

  double device_ms(const Epoch& e) const {
    return std::max(static_cast<double>(e.chain) * link_ns(), static_cast<double>(e.txns) * device_txn_ns()) / 1e6;
  }
  double host_ms(const Epoch& e) const { return static_cast<double>(e.txns) * host_txn_ns() / 1e6; }
  /// The model's figures (ns): a link of a chain and a txn on the device, a txn on the host.
  double link_ns() const { return link_ns_.value(); }
  double device_txn_ns() const { return device_txn_ns_.value(); }
  double host_txn_ns() const { return host_txn_ns_.value(); }
  /// Whether `e` runs on the device, the tables being there now or not (see the class comment).
  bool device(const Epoch& e, bool tables_on_device) {
    const double here = tables_on_device ? device_ms(e) : host_ms(e);
    const double there = tables_on_device ? host_ms(e) : device_ms(e);
    if (there >= here) {
      credit_ms_ = 0;
      return tables_on_device;
    }
    credit_ms_ += here - there;
    if (credit_ms_ < move_ms_) return tables_on_device;
    credit_ms_ = 0;
    return !tables_on_device;
  }
  /// Adds what the side that ran `e` in `ms` (a move excluded) measured to its term's window. On
  /// the device the chain's term is measured only when the model put it at kChainDominates times
  /// the txns' term or more, else the txns' term: where the two are close, an epoch's time says
  /// little about its links (through the server, small uniform epochs whose sampled chain came
  /// out near the txns' term set the link cost to 8-11 us, their fixed costs). A side's first epoch is a warm-up and
  /// sets nothing: it pays one-time costs (the GPU runner's first index, its buffers, CUDA's
  /// start). Through the server on the H100, a model that took every epoch's time kept a hot
  /// workload on the GPU after its one CPU epoch, at a third of the CPU's rate.
  void ran(bool on_device, const Epoch& e, double ms) {
    if (e.txns == 0 || ms <= 0) return;
    if (!warmed_[on_device]) {
      warmed_[on_device] = true;
      return;
    }
    const double ns = ms * 1e6;
    if (!on_device) {
      host_txn_ns_.push(ns / static_cast<double>(e.txns));
    } else if (e.chain > 0 && static_cast<double>(e.chain) * link_ns() >= kChainDominates * static_cast<double>(e.txns) * device_txn_ns()) {
      link_ns_.push(ns / static_cast<double>(e.chain));
    } else {
      device_txn_ns_.push(ns / static_cast<double>(e.txns));
    }
  }
  /// A move of the tables took `ms`: the next ones are expected to take as long.
  void moved(double ms) {
    if (ms > 0) move_ms_ = ms;
  }

 private:
  double move_ms_;
  double credit_ms_ = 0;
  bool warmed_[2] = {false, false};  ///< each side (host, device) ran its warm-up epoch
  RecentMedian link_ns_{4400}, device_txn_ns_{50}, host_txn_ns_{400};
};

}  // namespace duet::batch::epic

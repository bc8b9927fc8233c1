// Peer: oneTBB's tbb::concurrent_map (a concurrent skip list). Its erase is unsafe_erase, not
// safe alongside other operations, so REMOVE here is a logical deletion: the mapped value is an
// atomic word and 0 (never a stored value: see value_for) is the tombstone.
#include <oneapi/tbb/concurrent_map.h>

#include <atomic>

#include "systems.hpp"

namespace duet::bench::lit {
namespace {

using Table = tbb::concurrent_map<std::uint64_t, std::atomic<std::uint64_t>>;
constexpr std::uint64_t kTombstone = 0;

/// A thread's access to the shared table (oneTBB needs no per-thread state).
class TbbWorker final : public StreamWorker<TbbWorker> {
 public:
  explicit TbbWorker(Table* t) : t_(t) {}

  /// Present when the node exists and its value is not the tombstone.
  bool get(std::uint64_t k, std::uint64_t* v) {
    const auto it = t_->find(k);
    if (it == t_->end()) return false;
    *v = it->second.load(std::memory_order_acquire);
    return *v != kTombstone;
  }
  /// Revives a tombstoned node by CAS, else adds a node (emplace fails when another thread
  /// added the key first; then that node is revived or the key is present).
  bool insert(std::uint64_t k, std::uint64_t v) {
    auto it = t_->find(k);
    if (it == t_->end()) {
      auto [pos, added] = t_->emplace(k, v);
      if (added) return true;
      it = pos;
    }
    std::uint64_t expected = kTombstone;
    return it->second.compare_exchange_strong(expected, v, std::memory_order_acq_rel);
  }
  /// Sets a live value to the tombstone; false when absent or already a tombstone.
  bool remove(std::uint64_t k) {
    const auto it = t_->find(k);
    if (it == t_->end()) return false;
    return it->second.exchange(kTombstone, std::memory_order_acq_rel) != kTombstone;
  }
  /// lower_bound(start), then forward while key <= end, skipping tombstones.
  bool range(std::uint64_t start, std::uint64_t end, Pairs* out) {
    for (auto it = t_->lower_bound(start); it != t_->end() && it->first <= end; ++it) {
      const std::uint64_t v = it->second.load(std::memory_order_acquire);
      if (v != kTombstone) out->emplace_back(it->first, v);
    }
    return true;
  }


 private:
  Table* t_;
};

class TbbSystem final : public System {
 public:
  duet::Status attach(std::unique_ptr<Worker>* out) override {
    *out = std::make_unique<TbbWorker>(&table_);
    return duet::Status::Ok();
  }
  /// Nodes in the skip list, tombstones included (size() is not exact under concurrency; it
  /// is read when no worker runs).
  Json stats() const override {
    Json j = Json::object();
    j.set("nodes_including_tombstones", static_cast<std::uint64_t>(table_.size()));
    return j;
  }

 private:
  Table table_;
};

}  // namespace

std::unique_ptr<System> make_tbb_system(const SystemSpec&) { return std::make_unique<TbbSystem>(); }

}  // namespace duet::bench::lit

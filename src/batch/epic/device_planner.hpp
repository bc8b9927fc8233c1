// Epic-CPU's initialization apart from the host tables (issue 16, item 7): a planner that owns the
// key index (ids, free ring, back-links), indexes each epoch's keys insert-first, plans the epoch
// (Alg. 2-4) and hands the host per op its table, record id, location and copy-from location.
// The host executes over its tables and reports the ids its deleted-bit scan freed. The GPU runner
// implements it on the device (L-Slab, CUB/Thrust; gpu.hpp); HostPlanner is its CPU twin, run in
// CI, whose output equals the GPU's bit for bit.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "batch/epic/database.hpp"

namespace duet::batch::epic {

/// One epoch's plan as a planner hands it to the host executor. The arrays (one entry per op, in
/// the batch's op order) live in the planner's memory (pinned host memory for the GPU) and stay
/// valid until the planner's next call. The times are host wall clock per phase, in ms.
struct DevicePlan {
  const std::uint8_t* table = nullptr;
  const std::uint32_t* rid = nullptr;
  const std::uint32_t* loc = nullptr;
  const std::uint32_t* copy = nullptr;
  std::uint32_t temp_count = 0;
  double h2d_ms = 0, index_ms = 0, plan_ms = 0, d2h_ms = 0;
};

/// Indexing and planning for an Engine that executes on the host (Epic-CPU). The planner's index
/// is the database's index from attach() on; the host copy is stale until sync(). Every call
/// returns false with *err on failure; after a failed index_and_plan the planner's index may hold
/// inserts of that epoch (a GPU failure: reload the database).
class DevicePlanner {
 public:
  virtual ~DevicePlanner() = default;
  /// Takes over the database's index: entries, free ring (in ring order) and back-links.
  virtual bool attach(const Database& db, std::string* err) = 0;
  /// Insert-first indexing of b's keys (as Database::index) and Alg. 2-4 over the resulting global
  /// ids (as plan_cpu); fills *out. Nothing is inserted when an indexed table lacks room.
  virtual bool index_and_plan(const Database& db, const Batch& b, DevicePlan* out, std::string* err) = 0;
  /// Frees ids after the host's deleted-bit scan (Database::end_epoch_collect): per table, in the
  /// given (id) order, the key goes out of the index through the back-link and the id to the
  /// ring's tail.
  virtual bool release(const Database& db, const std::vector<std::vector<std::uint32_t>>& freed,
                       std::string* err) = 0;
  /// Copies the planner's index (entries, ring, back-links) into the database's.
  virtual bool sync(Database& db, std::string* err) = 0;
  /// The record id `key` of indexed table `table` maps to in the planner's index (kInvalid when
  /// absent). One key: for point reads between epochs, without a sync().
  virtual bool lookup(std::uint32_t table, std::uint64_t key, std::uint32_t* rid, std::string* err) = 0;
  /// Whether an epoch of `b` fits the planner's memory. True means every buffer that
  /// index_and_plan needs for it is held, so it cannot run out of memory midway (apart from the
  /// index's own growth on inserts). False (with *why) changes nothing: the Engine then indexes
  /// and plans that epoch on the host. Epochs of more ops than set_max_epoch_ops allows never fit.
  virtual bool fits(const Batch& b, std::string* why) { return within_max_ops(b, why); }
  /// Caps the ops of an epoch the planner takes (0, the default: no cap beyond its memory). For
  /// tests of the host fallback and for leaving device memory to others.
  void set_max_epoch_ops(std::size_t n) { max_epoch_ops_ = n; }

 protected:
  bool within_max_ops(const Batch& b, std::string* why) const {
    if (max_epoch_ops_ == 0 || b.keys.size() <= max_epoch_ops_) return true;
    *why = "an epoch of " + std::to_string(b.keys.size()) + " ops is over the planner's cap of " +
           std::to_string(max_epoch_ops_);
    return false;
  }

 private:
  std::size_t max_epoch_ops_ = 0;
};

/// The CPU twin of the GPU's DevicePlanner: Database::index over an index-only shadow of the
/// database, then plan_cpu, on `threads` threads. Runs in CI; equal to the GPU's output.
class HostPlanner final : public DevicePlanner {
 public:
  explicit HostPlanner(int threads = 1) : threads_(threads < 1 ? 1 : threads) {}

  bool attach(const Database& db, std::string* err) override {
    std::vector<TableSpec> specs;
    for (std::uint32_t t = 0; t < db.num_tables(); ++t) specs.push_back(db.table(t).spec);
    shadow_ = std::make_unique<Database>(specs, true);
    if (!shadow_->error().empty()) return *err = shadow_->error(), false;
    copy_index(db, *shadow_);
    return true;
  }
  bool index_and_plan(const Database& db, const Batch& b, DevicePlan* out, std::string* err) override {
    if (!shadow_ || shadow_->num_tables() != db.num_tables()) return *err = "planner not attached", false;
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    if (!shadow_->index(b, &ix_, err, threads_)) return false;
    const auto t1 = clock::now();
    plan_cpu(b, ix_.global, &plan_, Faults{}, threads_);
    *out = DevicePlan{ix_.table.data(), ix_.rid.data(), plan_.loc.data(), plan_.copy.data(), plan_.temp_count};
    out->index_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    out->plan_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
    return true;
  }
  bool release(const Database&, const std::vector<std::vector<std::uint32_t>>& freed, std::string* err) override {
    if (!shadow_) return *err = "planner not attached", false;
    shadow_->release(freed);
    return true;
  }
  bool sync(Database& db, std::string* err) override {
    if (!shadow_ || shadow_->num_tables() != db.num_tables()) return *err = "planner not attached", false;
    copy_index(*shadow_, db);
    return true;
  }
  bool lookup(std::uint32_t table, std::uint64_t key, std::uint32_t* rid, std::string* err) override {
    if (!shadow_ || table >= shadow_->num_tables()) return *err = "planner not attached", false;
    *rid = shadow_->lookup(table, key);
    return true;
  }

 private:
  static void copy_index(const Database& from, Database& to) {
    for (std::uint32_t t = 0; t < from.num_tables(); ++t) {
      const TableStore& a = from.table(t);
      TableStore& b = to.table(t);
      if (!a.spec.indexed) continue;
      b.index = a.index;
      b.free_ring = a.free_ring;
      b.backlink = a.backlink;
    }
  }

  int threads_;
  std::unique_ptr<Database> shadow_;
  Indexed ix_;
  Plan plan_;
};

}  // namespace duet::batch::epic

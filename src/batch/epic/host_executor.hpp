// The CPU twin of Epic on the GPU as a DeviceExecutor (placement gpu-exec-twin): a second Engine
// over its own copy of the database stands in for the device's tables, so the moves between the
// two copies, and reads after device epochs, are tested in CI without a GPU.
#pragma once

#include <memory>
#include <string>

#include "batch/epic/device_executor.hpp"
#include "batch/epic/engine.hpp"

namespace duet::batch::epic {

/// A DeviceExecutor whose "device" is an Engine<Procs> on `threads` CPU threads holding its own
/// copy of the tables and index. Epochs of more than `max_epoch_ops` ops (0: no cap) do not fit,
/// like epochs too big for a GPU's memory.
template <class Procs>
class HostExecutor final : public DeviceExecutor {
 public:
  explicit HostExecutor(int threads, std::size_t max_epoch_ops = 0)
      : threads_(threads < 1 ? 1 : threads), max_epoch_ops_(max_epoch_ops) {}

  bool upload(const Database& db, std::string* err) override {
    std::vector<TableSpec> specs(db.specs().begin(), db.specs().end());
    twin_ = std::make_unique<Engine<Procs>>(std::move(specs), threads_);
    if (!twin_->db().error().empty()) return *err = twin_->db().error(), twin_.reset(), false;
    if (!twin_->db().copy_contents_from(db)) return *err = "the executor's tables differ", twin_.reset(), false;
    twin_->set_max_attempts(1);  // reruns are the calling engine's to keep
    return true;
  }
  bool download(Database& db, std::string* err) override {
    if (!twin_) return *err = "tables not uploaded", false;
    // Contents only: submitters read the specs (key checks) while an epoch's download runs.
    if (!db.copy_contents_from(twin_->db())) return *err = "the executor's tables differ", false;
    return true;
  }
  bool run_epoch(Database& db, const Batch& b, EpochOutput* out, std::string* err, bool* untouched) override {
    *untouched = false;
    if (!twin_) return *err = "tables not uploaded", *untouched = true, false;
    if (twin_->db().eid() != db.eid()) return *err = "the executor's tables are not the database's", false;
    if (!twin_->run_epoch(b, out, err)) return *untouched = !twin_->damaged(), false;
    db.end_epoch_with({});  // the eid advances with the executor's
    return true;
  }
  bool read(const Database&, std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* rec, bool* found,
            std::string* err) override {
    if (!twin_) return *err = "tables not uploaded", false;
    return twin_->read(table, key, rec, found, err);
  }
  bool fits(const Batch& b, std::string* why) override {
    if (max_epoch_ops_ == 0 || b.keys.size() <= max_epoch_ops_) return true;
    *why = "an epoch of " + std::to_string(b.keys.size()) + " ops is over the executor's cap of " +
           std::to_string(max_epoch_ops_);
    return false;
  }

 private:
  int threads_;
  std::size_t max_epoch_ops_;
  std::unique_ptr<Engine<Procs>> twin_;
};

}  // namespace duet::batch::epic

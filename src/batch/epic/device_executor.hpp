// Epic on the device (issue 16, items 2-5 and 7): whole epochs indexed, planned and executed
// where the tables live, apart from the host database. An Engine with a DeviceExecutor sends each
// epoch that fits to it and keeps track of which copy of the tables is current: the device's
// after a device epoch, the host's after a download. The GPU runner implements it through
// GpuExecutor (gpu.hpp); HostExecutor (host_executor.hpp) is its CPU twin, run in CI.
#pragma once

#include <string>
#include <vector>

#include "batch/epic/database.hpp"
#include "batch/epic/epoch_output.hpp"

namespace duet::batch::epic {

/// Whole epochs over its own copy of a database's tables and index.
class DeviceExecutor {
 public:
  virtual ~DeviceExecutor() = default;
  /// Copies the database's tables and index to the executor (replacing what it held). Costs a
  /// copy of every table.
  virtual bool upload(const Database& db, std::string* err) = 0;
  /// Copies the executor's tables and index back into the database, which then equals it. Costs
  /// a copy of every table.
  virtual bool download(Database& db, std::string* err) = 0;
  /// One epoch of `b` (already checked, reruns included) over the uploaded state: indexes, plans,
  /// executes and frees deleted records; db's eid advances as the epoch ends. Fills out->results
  /// and out->stats (reruns are reported, not kept). False with *err on failure; *untouched then
  /// says whether the executor's state is as before the call (an indexed table out of ids) or
  /// may hold part of the epoch (it must be uploaded again).
  virtual bool run_epoch(Database& db, const Batch& b, EpochOutput* out, std::string* err, bool* untouched) = 0;
  /// The committed record of `key` in `table` in the executor's copy (*found false when
  /// absent), without copying the tables back: a lookup in its index and one record's two
  /// versions. `db` is the database the tables came from (its specs; its index when the
  /// executor indexes on the host). False with *err on failure. Not during an epoch.
  virtual bool read(const Database& db, std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* rec,
                    bool* found, std::string* err) = 0;
  /// Whether an epoch of `b` fits the executor's memory; false (with *why) changes nothing.
  virtual bool fits(const Batch& b, std::string* why) = 0;
};

}  // namespace duet::batch::epic

// Epic-CPU's planners against the CPU twin: a DevicePlanner (the GPU runner, or HostPlanner in CI)
// and a reference (Database::index on an index-only database, then plan_cpu) index and plan the
// same epochs; every op's table, record id, location and copy-from location, and the scratchpad
// size, must be equal. Between epochs both free the same ids (about a fifth of the ids the epoch's
// ops of indexed tables found, in id order), as a deleted-bit scan would, so ids are reused
// through the rings. At the end the planner's index (entries, ring, back-links) must equal the
// reference's.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "batch/epic/device_planner.hpp"

namespace duet::batch::epic::test {

/// `load(db)` bulk-loads the keys (the database is index-only) and returns false if a load failed.
/// Returns the first difference, or "".
template <class Load>
std::string compare_planners(DevicePlanner& dev, const std::vector<TableSpec>& specs, Load load,
                             const std::vector<Batch>& epochs, std::uint64_t seed = 1) {
  Database ref(specs, true);
  if (!load(ref)) return "bulk load failed";
  std::string err;
  if (!dev.attach(ref, &err)) return "attach: " + err;
  std::mt19937_64 rng(seed);
  Indexed ix;
  Plan plan;
  for (std::size_t e = 0; e < epochs.size(); ++e) {
    const Batch& b = epochs[e];
    const std::string at = "epoch " + std::to_string(e) + ": ";
    std::string ref_err, dev_err;
    const bool ref_ok = ref.index(b, &ix, &ref_err);
    DevicePlan dp;
    const bool dev_ok = dev.index_and_plan(ref, b, &dp, &dev_err);
    if (ref_ok != dev_ok || ref_err != dev_err) return at + "reference says '" + ref_err + "', planner '" + dev_err + "'";
    if (!ref_ok) continue;
    plan_cpu(b, ix.global, &plan);
    if (dp.temp_count != plan.temp_count)
      return at + "temp_count " + std::to_string(dp.temp_count) + " != " + std::to_string(plan.temp_count);
    for (std::size_t i = 0; i < b.keys.size(); ++i)
      if (dp.table[i] != ix.table[i] || dp.rid[i] != ix.rid[i] || dp.loc[i] != plan.loc[i] || dp.copy[i] != plan.copy[i])
        return at + "op " + std::to_string(i) + ": (table, rid, loc, copy) (" + std::to_string(dp.table[i]) + ", " +
               std::to_string(dp.rid[i]) + ", " + std::to_string(dp.loc[i]) + ", " + std::to_string(dp.copy[i]) +
               ") != (" + std::to_string(ix.table[i]) + ", " + std::to_string(ix.rid[i]) + ", " +
               std::to_string(plan.loc[i]) + ", " + std::to_string(plan.copy[i]) + ")";
    std::vector<std::vector<std::uint32_t>> freed(specs.size());
    for (std::size_t i = 0; i < b.keys.size(); ++i)
      if (specs[ix.table[i]].indexed && ix.rid[i] != kInvalid && rng() % 5 == 0) freed[ix.table[i]].push_back(ix.rid[i]);
    for (auto& f : freed) {
      std::sort(f.begin(), f.end());
      f.erase(std::unique(f.begin(), f.end()), f.end());
    }
    ref.release(freed);
    if (!dev.release(ref, freed, &err)) return at + "release: " + err;
  }
  Database got(specs, true);
  if (!dev.sync(got, &err)) return "sync: " + err;
  for (std::uint32_t t = 0; t < got.num_tables(); ++t) {
    const TableStore& x = got.table(t);
    const TableStore& y = ref.table(t);
    if (!x.spec.indexed) continue;
    if (x.index != y.index) return "table " + x.spec.name + ": index entries differ";
    if (x.free_ring != y.free_ring) return "table " + x.spec.name + ": free rings differ";
    if (x.backlink != y.backlink) return "table " + x.spec.name + ": back-links differ";
  }
  return "";
}

}  // namespace duet::batch::epic::test

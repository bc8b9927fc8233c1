// Peer: oneTBB's tbb::concurrent_hash_map<uint64_t, uint64_t> (per-element reader-writer locks).
#include <oneapi/tbb/concurrent_hash_map.h>

#include "systems.hpp"

namespace duet::bench::lslab {
namespace {

using duet::lslab::Op;
using duet::lslab::OpStatus;

class TbbSystem final : public CpuSystem {
 public:
  using Table = tbb::concurrent_hash_map<std::uint64_t, std::uint64_t>;

  /// A table with buckets preallocated for spec.resident entries.
  TbbSystem(const SystemSpec& spec, duet::sched::ThreadPool* pool, std::size_t grain)
      : table_(spec.resident), pool_(pool), grain_(grain) {}

  /// GET: find with a const_accessor (shared lock); PUT: insert with an accessor (exclusive
  /// lock) then assign; DELETE: erase by key.
  duet::Status execute(const duet::lslab::Batch& b, duet::lslab::BatchResult& r) override {
    run_sliced(pool_, b.n, grain_, [&](std::size_t i) {
      const std::uint64_t key = b.keys[i];
      bool found = false;
      std::uint64_t out = 0;
      switch (b.ops[i]) {
        case Op::kGet: {
          Table::const_accessor a;
          found = table_.find(a, key);
          if (found) out = a->second;
          break;
        }
        case Op::kPut: {
          Table::accessor a;
          found = !table_.insert(a, key);
          a->second = b.values[i];
          break;
        }
        case Op::kDelete:
          found = table_.erase(key);
          break;
      }
      r.status[i] = found ? OpStatus::kFound : OpStatus::kNotFound;
      r.values[i] = out;
    });
    return duet::Status::Ok();
  }

 private:
  Table table_;
  duet::sched::ThreadPool* pool_;
  std::size_t grain_;
};

}  // namespace

std::unique_ptr<CpuSystem> make_tbb_system(const SystemSpec& spec, duet::sched::ThreadPool* pool,
                                           std::size_t grain) {
  return std::make_unique<TbbSystem>(spec, pool, grain);
}

}  // namespace duet::bench::lslab

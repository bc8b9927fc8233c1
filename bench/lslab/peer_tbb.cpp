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
    return run_peer_batch(pool_, grain_, b, r, [&](Op op, std::uint64_t key, std::uint64_t value, std::uint64_t& out) {
      switch (op) {
        case Op::kGet: {
          Table::const_accessor a;
          if (!table_.find(a, key)) return false;
          out = a->second;
          return true;
        }
        case Op::kPut: {
          Table::accessor a;
          const bool found = !table_.insert(a, key);
          a->second = value;
          return found;
        }
        case Op::kDelete: return table_.erase(key);
      }
      return false;
    });
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

// Peer: libcuckoo's libcuckoo::cuckoohash_map<uint64_t, uint64_t> (bucketized cuckoo hashing
// with fine-grained striped locks).
#include <libcuckoo/cuckoohash_map.hh>

#include "systems.hpp"

namespace duet::bench::lslab {
namespace {

using duet::lslab::Op;
using duet::lslab::OpStatus;

class LibcuckooSystem final : public CpuSystem {
 public:
  using Table = libcuckoo::cuckoohash_map<std::uint64_t, std::uint64_t>;

  /// A table with capacity reserved up front for spec.resident entries (no resize while timed).
  LibcuckooSystem(const SystemSpec& spec, duet::sched::ThreadPool* pool, std::size_t grain)
      : pool_(pool), grain_(grain) {
    table_.reserve(spec.resident);
  }

  /// GET: find; PUT: insert_or_assign; DELETE: erase.
  duet::Status execute(const duet::lslab::Batch& b, duet::lslab::BatchResult& r) override {
    return run_peer_batch(pool_, grain_, b, r, [&](Op op, std::uint64_t key, std::uint64_t value, std::uint64_t& out) {
      switch (op) {
        case Op::kGet: return table_.find(key, out);
        case Op::kPut: return !table_.insert_or_assign(key, value);
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

std::unique_ptr<CpuSystem> make_libcuckoo_system(const SystemSpec& spec, duet::sched::ThreadPool* pool,
                                                 std::size_t grain) {
  return std::make_unique<LibcuckooSystem>(spec, pool, grain);
}

}  // namespace duet::bench::lslab

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
    run_sliced(pool_, b.n, grain_, [&](std::size_t i) {
      const std::uint64_t key = b.keys[i];
      bool found = false;
      std::uint64_t out = 0;
      switch (b.ops[i]) {
        case Op::kGet: found = table_.find(key, out); break;
        case Op::kPut: found = !table_.insert_or_assign(key, b.values[i]); break;
        case Op::kDelete: found = table_.erase(key); break;
      }
      r.status[i] = found ? OpStatus::kFound : OpStatus::kNotFound;
      r.values[i] = found ? out : 0;
    });
    return duet::Status::Ok();
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

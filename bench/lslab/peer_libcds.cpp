// Peer: libcds's MichaelHashMap over MichaelKVList buckets (lock-free ordered lists, Michael
// 2002), with hazard-pointer reclamation (cds::gc::HP).
#include <atomic>

#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>
#include <cds/gc/hp.h>
#include <cds/init.h>

#include "systems.hpp"

namespace duet::bench::lslab {
namespace {

using duet::lslab::Op;
using duet::lslab::OpStatus;

class LibcdsSystem final : public CpuSystem {
 public:
  using List = cds::container::MichaelKVList<cds::gc::HP, std::uint64_t, std::uint64_t>;
  using Table = cds::container::MichaelHashMap<cds::gc::HP, List>;

  /// Initializes libcds and its hazard-pointer GC, attaches every pool thread (the caller
  /// included) and builds a table of about spec.resident buckets (load factor 1).
  LibcdsSystem(const SystemSpec& spec, duet::sched::ThreadPool* pool, std::size_t grain)
      : pool_(pool), grain_(grain) {
    cds::Initialize();
    gc_ = std::make_unique<cds::gc::HP>();
    on_each_thread([] { cds::threading::Manager::attachThread(); });
    table_ = std::make_unique<Table>(spec.resident, 1);
  }

  /// Frees the table while the threads are still attached, then detaches them and shuts
  /// down the GC and libcds.
  ~LibcdsSystem() override {
    table_.reset();
    on_each_thread([] { cds::threading::Manager::detachThread(); });
    gc_.reset();
    cds::Terminate();
  }

  /// GET: find with a functor that reads the value; PUT: update (insert or change the value
  /// in place); DELETE: erase. Values are read and written through std::atomic_ref because
  /// libcds does not serialise access to an item's value.
  duet::Status execute(const duet::lslab::Batch& b, duet::lslab::BatchResult& r) override {
    return run_peer_batch(pool_, grain_, b, r, [&](Op op, std::uint64_t key, std::uint64_t value, std::uint64_t& out) {
      switch (op) {
        case Op::kGet:
          return table_->find(key, [&](Table::value_type& item) {
            out = std::atomic_ref<std::uint64_t>(item.second).load(std::memory_order_relaxed);
          });
        case Op::kPut:
          return !table_
                      ->update(key,
                               [value](bool, Table::value_type& item) {
                                 std::atomic_ref<std::uint64_t>(item.second).store(value, std::memory_order_relaxed);
                               })
                      .second;
        case Op::kDelete: return table_->erase(key);
      }
      return false;
    });
  }

 private:
  /// Runs f once on every thread of the pool (piece i of a loop of threads() runs on thread i).
  template <class F>
  void on_each_thread(F f) {
    pool_->parallel_for(pool_->threads(), 0, [&](std::size_t, std::size_t, unsigned) { f(); });
  }

  duet::sched::ThreadPool* pool_;
  std::size_t grain_;
  std::unique_ptr<cds::gc::HP> gc_;
  std::unique_ptr<Table> table_;
};

}  // namespace

std::unique_ptr<CpuSystem> make_libcds_system(const SystemSpec& spec, duet::sched::ThreadPool* pool,
                                              std::size_t grain) {
  return std::make_unique<LibcdsSystem>(spec, pool, grain);
}

}  // namespace duet::bench::lslab

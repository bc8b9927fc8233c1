// The CPU maps under test: Duet's CPU twin of L-Slab and the peer libraries, behind one
// batch interface shaped like duet::lslab::Map::execute.
//
// Every system runs a batch on the same number of threads, each thread taking a contiguous
// slice of the batch (the peers through a persistent duet::sched::ThreadPool, the same pool
// type the CPU twin uses inside, and by default with the twin's rule that batches of at most
// 2048 requests run on the calling thread alone). Peers are compiled in only when their
// library was found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "duet/status.hpp"
#include "index/lslab/types.hpp"
#include "sched/thread_pool.hpp"

namespace duet::bench::lslab {

/// A map under test. execute() has Map::execute's contract for GET, PUT and DELETE of keys
/// other than the reserved key: status[i] is kFound when the key was present, else kNotFound;
/// values[i] is the value for a GET that found its key. (Unlike the L-Slab maps, the peers do
/// not return the previous value for PUT and DELETE: their chosen calls do not provide it.)
class CpuSystem {
 public:
  virtual ~CpuSystem() = default;
  virtual duet::Status execute(const duet::lslab::Batch& batch, duet::lslab::BatchResult& result) = 0;
};

/// How to build a system for one run.
struct SystemSpec {
  std::uint64_t resident = 0;  ///< keys the map will hold (peers reserve room for this many)
  double load_factor = 0.7;    ///< L-Slab only: Config::load_factor
  unsigned threads = 1;        ///< worker threads, the caller included
};

/// Static facts about a CPU system.
struct SystemInfo {
  std::string name;           ///< "duet-cpu", "tbb", "libcuckoo", "libcds"
  bool uses_load_factor;      ///< whether SystemSpec::load_factor changes it (L-Slab only)
  bool available;             ///< compiled into this binary
  std::string missing_reason; ///< why not, when unavailable
};

/// Every CPU system this benchmark knows, in run order, available or not.
const std::vector<SystemInfo>& cpu_systems();
/// The entry of cpu_systems() named `name`, or null.
const SystemInfo* find_cpu_system(const std::string& name);

/// Builds system `name` (must be available). Peers run their batches on `pool`, splitting a
/// batch only when it has more than `peer_grain` requests (0: always split); pool must
/// outlive the system and have spec.threads threads. Returns the map's error if it refuses.
duet::Status make_cpu_system(const std::string& name, const SystemSpec& spec, duet::sched::ThreadPool* pool,
                             std::size_t peer_grain, std::unique_ptr<CpuSystem>* out);

// Factories of the peers, each defined in its own file and compiled only with its library.
std::unique_ptr<CpuSystem> make_tbb_system(const SystemSpec& spec, duet::sched::ThreadPool* pool,
                                           std::size_t grain);
std::unique_ptr<CpuSystem> make_libcuckoo_system(const SystemSpec& spec, duet::sched::ThreadPool* pool,
                                                 std::size_t grain);
std::unique_ptr<CpuSystem> make_libcds_system(const SystemSpec& spec, duet::sched::ThreadPool* pool,
                                              std::size_t grain);

/// Runs per_request(i) for every request of a batch of n on `pool`, each thread taking a
/// contiguous slice (inline on the caller when n <= grain). For the peers.
template <class F>
void run_sliced(duet::sched::ThreadPool* pool, std::size_t n, std::size_t grain, F&& per_request) {
  pool->parallel_for(n, grain, [&](std::size_t begin, std::size_t end, unsigned) {
    for (std::size_t i = begin; i < end; ++i) per_request(i);
  });
}

/// Runs a batch on a peer map: one(op, key, value, out) performs one request and returns
/// whether the key was present, setting `out` to the value a GET read. Records every request's
/// status and value (0 when absent) in r.
template <class One>
duet::Status run_peer_batch(duet::sched::ThreadPool* pool, std::size_t grain, const duet::lslab::Batch& b,
                            duet::lslab::BatchResult& r, One&& one) {
  run_sliced(pool, b.n, grain, [&](std::size_t i) {
    std::uint64_t out = 0;
    const duet::lslab::Op op = b.ops[i];
    const bool found = one(op, b.keys[i], op == duet::lslab::Op::kPut ? b.values[i] : 0, out);
    r.status[i] = found ? duet::lslab::OpStatus::kFound : duet::lslab::OpStatus::kNotFound;
    r.values[i] = found ? out : 0;
  });
  return duet::Status::Ok();
}

}  // namespace duet::bench::lslab

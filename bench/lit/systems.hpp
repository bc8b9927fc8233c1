// The ordered maps under test behind one interface: Duet's LIT and the peers (libcds's
// lock-free skip list map, oneTBB's concurrent_map), each compiled in only when its library
// was found.
//
// A System is one map; each benchmark thread attaches a Worker to it (LIT: a session; libcds:
// the thread's hazard-pointer record) and runs its operation stream through run_stream(),
// which every system instantiates with its own point operations, so the timed loop is the
// same code for all of them and has no virtual call per operation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../common/json.hpp"
#include "duet/status.hpp"
#include "workload.hpp"

namespace duet::bench::lit {

/// Pairs a range query collected, in key order.
using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

/// What one thread did in one run.
struct Tally {
  std::uint64_t ops = 0;           ///< completed operations (every kind; an INSERT of a present key counts)
  std::uint64_t gets = 0, get_hits = 0;
  std::uint64_t inserts = 0, inserts_done = 0;  ///< INSERTs, and those that added their key
  std::uint64_t removes = 0, removes_done = 0;  ///< REMOVEs, and those that removed their key
  std::uint64_t ranges = 0, range_pairs = 0;    ///< RANGEs, and pairs they returned
  std::uint64_t ranges_checked = 0;             ///< RANGEs whose output was checked
  std::uint64_t wrong = 0;  ///< a GET value, or a checked range's pair, that was not value_for(key), or out of order/range
  std::uint64_t errors = 0; ///< calls the map refused

  /// Adds another thread's counts.
  void add(const Tally& o);
};

/// Parameters of the timed loop shared by all systems.
struct LoopParams {
  std::uint64_t range_length = 50;  ///< RANGE covers [key, key + range_length - 1]
  unsigned check_every = 16;        ///< check the output of every n-th RANGE (1: all)
};

/// One thread's handle on a system. Not thread-safe; created and destroyed on its thread.
class Worker {
 public:
  virtual ~Worker() = default;
  /// Inserts prefill.key(i) -> value_for(key) for i in [begin, end); returns how many were new.
  virtual std::uint64_t prefill(const Prefill& prefill, std::uint64_t begin, std::uint64_t end) = 0;
  /// Runs the operations of `src` until `stop` is seen (checked every 32 operations).
  virtual Tally run(const OpSource& src, const LoopParams& p, const std::atomic<bool>& stop) = 0;
};

/// One map under test.
class System {
 public:
  virtual ~System() = default;
  /// A worker for the calling thread (it must be destroyed on that thread, before the system).
  virtual duet::Status attach(std::unique_ptr<Worker>* out) = 0;
  /// Facts about the map's structure, read when no worker runs (e.g. LIT's splits); may be null.
  virtual Json stats() const { return Json(); }
};

/// Static facts about a system.
struct SystemInfo {
  std::string name;            ///< "lit", "libcds", "tbb"
  bool available;              ///< compiled into this binary
  std::string missing_reason;  ///< why not, when unavailable
  std::string description;     ///< the data structure and its reclamation
  bool linearizable_range;     ///< whether its RANGE is linearizable
  std::string range_semantics; ///< what its RANGE guarantees
};

/// Every system the benchmark knows, in run order, available or not.
const std::vector<SystemInfo>& all_systems();
/// The entry of all_systems() named `name`, or null.
const SystemInfo* find_system(const std::string& name);

/// How to build a system for one key range.
struct SystemSpec {
  std::uint64_t key_range = 0;  ///< keys are 1..key_range
  unsigned threads = 1;         ///< threads that will attach at once (at most)
  std::size_t lit_buckets = 10000;  ///< LIT: root buckets at creation
};

/// Builds system `name` (must be available). Returns the map's error if it refuses.
duet::Status make_system(const std::string& name, const SystemSpec& spec, std::unique_ptr<System>* out);
/// The LIT configuration make_system uses for `spec`, for the result file.
Json lit_config_json(const SystemSpec& spec);

// Factories of the peers, each defined in its own file and compiled only with its library.
std::unique_ptr<System> make_libcds_system(const SystemSpec& spec);
std::unique_ptr<System> make_tbb_system(const SystemSpec& spec);

/// Checks a range query's output for [start, end]: keys strictly increasing within the
/// bounds, each with value_for(key). Returns the number of bad pairs (0 when all is well).
inline std::uint64_t check_range(const Pairs& out, std::uint64_t start, std::uint64_t end) {
  std::uint64_t bad = 0, prev = 0;
  bool first = true;
  for (const auto& [k, v] : out) {
    if (k < start || k > end || (!first && k <= prev) || v != value_for(k)) ++bad;
    prev = k;
    first = false;
  }
  return bad;
}

/// The timed loop, shared by every system. M provides
///   bool get(key, uint64_t* value), bool insert(key, value), bool remove(key),
///   bool range(start, end, Pairs* out)   (appends; false when the map refused the call)
/// and each returns whether the key was found / added / removed.
template <class M>
Tally run_stream(M& m, const OpSource& src, const LoopParams& p, const std::atomic<bool>& stop) {
  Tally t;
  Pairs out;
  out.reserve(p.range_length + 8);
  OpGen gen(src);
  std::uint64_t range_counter = 0;
  for (;;) {
    if ((t.ops & 31) == 0 && stop.load(std::memory_order_relaxed)) break;
    OpKind kind = OpKind::kGet;
    std::uint64_t key = 0;
    gen.next(&kind, &key);
    switch (kind) {
      case OpKind::kGet: {
        std::uint64_t v = 0;
        ++t.gets;
        if (m.get(key, &v)) {
          ++t.get_hits;
          t.wrong += v != value_for(key);
        }
        break;
      }
      case OpKind::kInsert:
        ++t.inserts;
        t.inserts_done += m.insert(key, value_for(key));
        break;
      case OpKind::kRemove:
        ++t.removes;
        t.removes_done += m.remove(key);
        break;
      case OpKind::kRange: {
        const std::uint64_t end = key + p.range_length - 1;
        out.clear();
        ++t.ranges;
        if (!m.range(key, end, &out)) {
          ++t.errors;
          break;
        }
        t.range_pairs += out.size();
        if (++range_counter % p.check_every == 0) {
          ++t.ranges_checked;
          t.wrong += check_range(out, key, end);
        }
        break;
      }
    }
    ++t.ops;
  }
  return t;
}

/// A Worker whose prefill and timed loop go through M's own get / insert / remove / range (see
/// run_stream): M derives from StreamWorker<M> and provides those four calls.
template <class M>
class StreamWorker : public Worker {
 public:
  std::uint64_t prefill(const Prefill& p, std::uint64_t begin, std::uint64_t end) override {
    std::uint64_t added = 0;
    for (std::uint64_t i = begin; i < end; ++i) {
      const std::uint64_t k = p.key(i);
      added += static_cast<M&>(*this).insert(k, value_for(k));
    }
    return added;
  }
  Tally run(const OpSource& src, const LoopParams& lp, const std::atomic<bool>& stop) override {
    return run_stream(static_cast<M&>(*this), src, lp, stop);
  }
};

}  // namespace duet::bench::lit

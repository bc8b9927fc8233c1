// The sets duet_bench_mvrlu measures: MV-RLU (and its baselines, made by switching the library,
// Config), and the peers (liburcu, a readers-writer lock, libcds), behind one interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "duet/status.hpp"

namespace duet::bench::mvrlu {

enum class Structure : std::uint8_t { kList, kHash, kBst };
/// "list", "hash", "bst".
const char* structure_name(Structure s);

/// What a system builds: the structure, its bucket count (hash) and how many workers attach.
struct SetSpec {
  Structure structure = Structure::kList;
  std::size_t buckets = 1;
  unsigned threads = 1;
  /// MV-RLU's ORDO boundary in TSC ticks (Config::ordo_boundary); negative: measured.
  std::int64_t ordo_boundary = -1;
};

/// One thread's handle on a set. Made by System::attach on the thread that uses it, and
/// destroyed there. Each call is one linearizable operation; false from the call means the
/// operation failed (an error, counted), *result the set's answer.
class Worker {
 public:
  virtual ~Worker() = default;
  virtual bool contains(std::uint64_t key, bool* result) = 0;
  virtual bool insert(std::uint64_t key, bool* result) = 0;
  virtual bool remove(std::uint64_t key, bool* result) = 0;
};

/// A set instance. Destroyed after every worker is gone, on the thread that made it.
class System {
 public:
  virtual ~System() = default;
  /// A worker for the calling thread.
  virtual Status attach(std::unique_ptr<Worker>* out) = 0;
  /// Counters since the last call (MV-RLU: commits, aborts, collection; others: none), as a
  /// JSON object; `aborts` and `sections` feed the abort ratio when present.
  virtual Json take_stats() { return Json::object(); }
};

/// A named kind of system. `make` returns null (and sets *error) when it cannot build `spec`.
struct SystemInfo {
  std::string name;
  std::string description;
  bool list = true, hash = true, bst = true;  ///< structures it supports
  std::function<std::unique_ptr<System>(const SetSpec& spec, Status* error)> make;
  bool supports(Structure s) const {
    return s == Structure::kList ? list : s == Structure::kHash ? hash : bst;
  }
};

/// Every system built into this binary, MV-RLU's variants first.
std::vector<SystemInfo> all_systems();
/// Peers this binary was built without (their libraries were missing), with the reason.
std::vector<std::string> unavailable_peers();

// Registration (each defined in its own source file).
void add_mvrlu_systems(std::vector<SystemInfo>* out);
void add_rwlock_system(std::vector<SystemInfo>* out);
#if DUET_BENCH_HAVE_URCU
void add_urcu_system(std::vector<SystemInfo>* out);
#endif
#if DUET_BENCH_HAVE_LIBCDS
void add_libcds_system(std::vector<SystemInfo>* out);
#endif

/// MurmurHash3's 64-bit finaliser: the bucket hash every hash table here uses (as MV-RLU's).
inline std::uint64_t mix64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}
/// Bucket of `key` among n (multiply-high of the hash).
inline std::size_t bucket_of(std::uint64_t key, std::size_t n) {
  return static_cast<std::size_t>((static_cast<unsigned __int128>(mix64(key)) * n) >> 64);
}

}  // namespace duet::bench::mvrlu

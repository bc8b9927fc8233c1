// The CPU sets duet_bench_cods measures, behind one interface: the CODS lazy list, hash set and
// B-link tree (src/index/cods, every K and both regimes) and the peers (libcds, oneTBB, LIT),
// each optional peer present only when its library was found at configure time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace duet::bench::cods {

enum class Structure : std::uint8_t { kList, kHash, kTree };
/// "list", "hash", "tree".
const char* structure_name(Structure s);

/// What a system builds: the structure, its buckets (hash), the key range (LIT's predicted
/// range) and the number of threads that attach.
struct Shape {
  Structure structure = Structure::kList;
  std::uint64_t buckets = 1;
  std::uint64_t range = 1;
  unsigned threads = 1;
};

/// One thread's handle on a set: made on that thread and destroyed there. Each call is one
/// linearizable operation and returns the set's answer (present / inserted / removed).
class Worker {
 public:
  virtual ~Worker() = default;
  virtual bool contains(std::uint64_t key) = 0;
  virtual bool insert(std::uint64_t key) = 0;
  virtual bool remove(std::uint64_t key) = 0;
};

/// A set instance; destroyed after its workers, on the thread that made it.
class System {
 public:
  virtual ~System() = default;
  virtual std::unique_ptr<Worker> attach() = 0;
};

/// A named kind of system. `k` is keys per node (0 for peers); `regime` "fully-atomic",
/// "elementwise" or "" (peers). make() returns null and sets *why when it cannot build a shape
/// (oneTBB's concurrent_set has no concurrent erase, so it builds read-only runs only).
struct SystemInfo {
  std::string name;
  std::string description;
  Structure structure = Structure::kList;
  unsigned k = 0;
  std::string regime;
  bool removes = true;  ///< supports concurrent remove
  std::function<std::unique_ptr<System>(const Shape&, std::string* why)> make;
};

// Registration: each in its own source file.
void add_cods_list_systems(std::vector<SystemInfo>* out);
void add_cods_hash_systems(std::vector<SystemInfo>* out);
void add_cods_tree_systems(std::vector<SystemInfo>* out);
void add_lit_system(std::vector<SystemInfo>* out);
#if DUET_BENCH_HAVE_LIBCDS
void add_libcds_systems(std::vector<SystemInfo>* out);
#endif
#if DUET_BENCH_HAVE_TBB
void add_tbb_systems(std::vector<SystemInfo>* out);
#endif

/// Every system built into this binary.
std::vector<SystemInfo> all_systems();
/// Peers this binary lacks (their library was missing at configure time), one line per library.
std::vector<std::string> unavailable_peers();
/// Whether `system` names a peer this binary lacks.
bool is_unavailable_peer(const std::string& system);

/// CODS system names: "cods-list-fa-k8", "cods-hash-ew-k2", "cods-tree-fa-k16".
std::string cods_name(Structure s, bool fully_atomic, unsigned k);

/// MurmurHash3's 64-bit finaliser, the hash the peers' hash sets use (the CODS hash set uses
/// the same finaliser).
inline std::uint64_t mix64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

}  // namespace duet::bench::cods

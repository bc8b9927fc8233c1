// The ordered maps duet_bench_hydralist compares, behind one interface per key type: Hydralist
// (and its factor-analysis variants) and the peers (oneTBB's concurrent_map, libcds's
// SkipListMap, LIT's CPU map; libcuckoo's hash map for A-D, unordered), each peer compiled in
// only when its library was found.
//
// Work is pre-generated once (keys and operation arrays) and shared by every system, thread
// count and repetition. An operation is one 64-bit word: kind (2 bits), scan length (8 bits)
// and key number (40 bits); key number i stands for keys.key(i), with value i + 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../common/json.hpp"

namespace duet::bench::hydralist {

enum Kind : std::uint64_t { kRead = 0, kUpdate = 1, kInsert = 2, kScan = 3 };

inline std::uint64_t encode_op(Kind k, std::uint64_t key, unsigned scan_len = 0) {
  return (std::uint64_t{k} << 62) | (std::uint64_t{scan_len & 0xff} << 40) | (key & ((std::uint64_t{1} << 40) - 1));
}
inline Kind op_kind(std::uint64_t op) { return static_cast<Kind>(op >> 62); }
inline std::uint64_t op_key(std::uint64_t op) { return op & ((std::uint64_t{1} << 40) - 1); }
inline unsigned op_scan(std::uint64_t op) { return static_cast<unsigned>((op >> 40) & 0xff); }

/// Integer keys: distinct random u64s.
struct IntKeys {
  using Key = std::uint64_t;
  std::vector<std::uint64_t> v;
  Key key(std::uint64_t i) const { return v[i]; }
  std::size_t size() const { return v.size(); }
};

/// String keys in one buffer ("domain@user" e-mails).
struct StrKeys {
  using Key = std::string_view;
  std::string buf;
  std::vector<std::uint64_t> off;  // size() + 1 offsets
  Key key(std::uint64_t i) const { return {buf.data() + off[i], off[i + 1] - off[i]}; }
  std::size_t size() const { return off.empty() ? 0 : off.size() - 1; }
};

/// What one thread did.
struct Tally {
  std::uint64_t ops = 0, found = 0, scanned = 0, wrong = 0;
  void add(const Tally& o) {
    ops += o.ops, found += o.found, scanned += o.scanned, wrong += o.wrong;
  }
};

/// One thread's handle on a map (created and destroyed on its thread).
template <class Keys>
class Worker {
 public:
  virtual ~Worker() = default;
  /// Inserts key numbers [begin, end) with value i + 1; returns how many were new.
  virtual std::uint64_t load(const Keys& keys, std::uint64_t begin, std::uint64_t end) = 0;
  /// Runs ops[0, n).
  virtual Tally run(const Keys& keys, const std::uint64_t* ops, std::size_t n) = 0;
};

template <class Keys>
class System {
 public:
  virtual ~System() = default;
  virtual std::unique_ptr<Worker<Keys>> attach() = 0;
  /// Structure facts after a run (may be null).
  virtual Json stats() const { return Json(); }
};

/// The timed loop every system instantiates with its own calls: M provides
///   bool get(Key, uint64_t*), bool update(Key, uint64_t), bool insert(Key, uint64_t),
///   size_t scan(Key, unsigned count)   (pairs returned)
template <class M, class Keys>
Tally run_loop(M& m, const Keys& keys, const std::uint64_t* ops, std::size_t n) {
  Tally t;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t op = ops[i];
    const std::uint64_t kn = op_key(op);
    switch (op_kind(op)) {
      case kRead: {
        std::uint64_t v = 0;
        if (m.get(keys.key(kn), &v)) {
          ++t.found;
          t.wrong += v != kn + 1 && v != kn + 2;
        }
        break;
      }
      case kUpdate: t.found += m.update(keys.key(kn), kn + 2); break;
      case kInsert: t.found += m.insert(keys.key(kn), kn + 1); break;
      case kScan: t.scanned += m.scan(keys.key(kn), op_scan(op)); break;
    }
  }
  t.ops = n;
  return t;
}

/// A worker running M's calls through run_loop (M derives from LoopWorker<M, Keys>).
template <class M, class Keys>
class LoopWorker : public Worker<Keys> {
 public:
  std::uint64_t load(const Keys& keys, std::uint64_t begin, std::uint64_t end) override {
    std::uint64_t added = 0;
    for (std::uint64_t i = begin; i < end; ++i) added += static_cast<M&>(*this).insert(keys.key(i), i + 1);
    return added;
  }
  Tally run(const Keys& keys, const std::uint64_t* ops, std::size_t n) override {
    return run_loop(static_cast<M&>(*this), keys, ops, n);
  }
};

struct SystemInfo {
  std::string name;
  bool available;
  std::string description;
  bool ordered = true;  ///< false: a hash map (no SCAN; scan workloads are skipped for it)
};

/// Every system for a key type ("int" or "str"), available or not, in run order.
std::vector<SystemInfo> all_systems(bool strings);

// Factories (each in its own file; peers only when compiled in).
std::unique_ptr<System<IntKeys>> make_hydralist_int(const std::string& variant, unsigned threads);
std::unique_ptr<System<StrKeys>> make_hydralist_str(const std::string& variant, unsigned threads);
std::unique_ptr<System<IntKeys>> make_tbb_int();
std::unique_ptr<System<StrKeys>> make_tbb_str();
std::unique_ptr<System<IntKeys>> make_libcds_int(unsigned threads);
std::unique_ptr<System<StrKeys>> make_libcds_str(unsigned threads);
std::unique_ptr<System<IntKeys>> make_lit_int(unsigned threads);
std::unique_ptr<System<IntKeys>> make_libcuckoo_int();
std::unique_ptr<System<StrKeys>> make_libcuckoo_str();

}  // namespace duet::bench::hydralist

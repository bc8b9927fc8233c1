// The key dictionary: gives every key that cannot be inlined into an index key (see
// encoding.hpp) a 64-bit id, the same id every time. Ids are never reused; an entry lives
// until the keyspace is destroyed, so a deleted long key keeps costing its bytes plus about
// 48 bytes (the documented price of long keys; docs/kv.md).
//
// Cost: a lookup hashes the key and takes one of 256 shards' reader locks; an insert takes
// the shard's writer lock. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "duet/status.hpp"
#include "kv/encoding.hpp"

namespace duet::kv {

class KeyDictionary {
 public:
  explicit KeyDictionary(MemoryBudget* budget) : budget_(budget) {}
  /// The id of key, or false when it has none (the key was never written).
  bool find(std::string_view key, std::uint64_t* id) const;
  /// The id of key, assigning one when it has none. ResourceExhausted when the budget refuses.
  Status find_or_add(std::string_view key, std::uint64_t* id);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    mutable std::shared_mutex m;
    std::unordered_map<std::string, std::uint64_t, Hash, std::equal_to<>> ids;
  };
  static constexpr std::size_t kShards = 256;
  Shard& shard(std::string_view key) const {
    return shards_[(std::hash<std::string_view>{}(key) >> 17) % kShards];
  }
  MemoryBudget* budget_;
  mutable std::array<Shard, kShards> shards_;
  std::atomic<std::uint64_t> next_{0};
};

/// The index key of any key: inline when possible, otherwise through the dictionary.
/// With add == false a key without an id yields false (it cannot exist in the store).
Status index_key(KeyDictionary& dict, std::string_view key, bool add, std::uint64_t* ikey, bool* exists);

}  // namespace duet::kv

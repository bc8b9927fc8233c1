// The key dictionary: gives every key that cannot be inlined into an index key (see
// encoding.hpp) a 64-bit id, the same id every time. Ids are never reused; an entry lives
// until the keyspace is destroyed, so a deleted long key keeps costing its bytes plus
// 64 bytes (the documented price of long keys; docs/kv.md).
//
// Cost: a lookup hashes the key and probes one of 256 shards' open-addressing tables without
// a lock or a write to shared memory; an insert takes the shard's mutex. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "duet/status.hpp"
#include "kv/encoding.hpp"

namespace duet::kv {

class KeyDictionary {
 public:
  explicit KeyDictionary(mem::MemoryBudget* budget) : budget_(budget) {}
  /// The id of key, or false when it has none (the key was never written).
  bool find(std::string_view key, std::uint64_t* id) const;
  /// The id of key, assigning one when it has none. ResourceExhausted when the budget refuses.
  Status find_or_add(std::string_view key, std::uint64_t* id);
  /// The key an id was given to (for SCAN), or null for an id never handed out. Lock-free:
  /// one array read; keys are immutable and live as long as the dictionary.
  const std::string* key_of(std::uint64_t id) const;
  /// A hint that key will be looked up soon: starts loading its shard's lock and its home slot
  /// into the cache, so that a batch can overlap its keys' cache misses. Lock-free; never
  /// faults, even while the shard grows (it may then prefetch a stale address, which is
  /// harmless). Costs one hash of the key.
  void prefetch(std::string_view key) const {
    const std::uint64_t h = hash_of(key);
    const View v = view(shard_index(h));
    if (v.slots) __builtin_prefetch(&v.slots[static_cast<std::size_t>(h) & v.mask]);
  }

 private:
  /// One slot of a shard's open-addressing table: one 64-byte cache line holding the key's full
  /// hash (compared before the bytes), its id, its length, and its first kInline bytes, so a
  /// lookup of a key of up to kInline bytes touches this one line. A slot is written once: its
  /// fields first, then `key` with release, which publishes it to readers.
  static constexpr std::size_t kInline = 36;
  struct alignas(64) Slot {
    std::uint64_t hash = 0;
    std::uint64_t id = 0;
    std::uint32_t len = 0;
    char head[kInline] = {};
    std::atomic<const std::string*> key{nullptr};  ///< the whole key; null: empty slot
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line");
  /// A shard's table: a power-of-two array of slots, at most half full. A full table is
  /// replaced by one twice its size; readers may still be probing the old one, so old tables
  /// stay allocated until the dictionary dies (together they are smaller than the current one).
  struct Table {
    std::size_t mask = 0;
    std::unique_ptr<Slot[]> slots;
  };
  /// What a lookup needs of a shard's current table, read from one published word (the slots'
  /// address with log2 of their count in its low bits), so a lookup's first load is the slot.
  struct View {
    const Slot* slots = nullptr;
    std::size_t mask = 0;
  };
  View view(std::size_t shard) const {
    const std::uintptr_t w = heads_[shard].load(std::memory_order_acquire);
    return {reinterpret_cast<const Slot*>(w & ~std::uintptr_t{63}), (std::size_t{1} << (w & 63)) - 1};
  }
  struct Shard {
    std::mutex m;  ///< writers only
    std::size_t used = 0;
    std::vector<std::unique_ptr<std::string>> keys;  ///< owns the key bytes (stable addresses)
    std::vector<std::unique_ptr<Table>> tables;     ///< the current one last
  };
  static constexpr std::size_t kShards = 256;
  static std::uint64_t hash_of(std::string_view key) { return std::hash<std::string_view>{}(key); }
  static std::size_t shard_index(std::uint64_t h) { return static_cast<std::size_t>((h >> 56) % kShards); }
  /// The slot holding key (*found true), or the empty slot where it would go (*found false);
  /// null for no table. Lock-free: a slot seen empty may be filled concurrently, by another
  /// key, which orders this lookup before that insert; so callers must trust *found and never
  /// read the returned slot's key again to decide.
  static const Slot* probe(View t, std::uint64_t h, std::string_view key, bool* found);
  /// Records id -> key (called under the key's shard lock, before the id is handed out).
  void publish(std::uint64_t index, const std::string* key);

  mem::MemoryBudget* budget_;
  std::array<Shard, kShards> shards_;
  /// Each shard's current table as a View word (0: none yet), published with release; dense,
  /// so the lookups' first load stays in cache.
  std::array<std::atomic<std::uintptr_t>, kShards> heads_{};
  std::atomic<std::uint64_t> next_{0};
  // The reverse map: chunks of 2^16 key pointers, allocated on first use.
  static constexpr unsigned kChunkShift = 16;
  static constexpr std::size_t kMaxChunks = 1u << 16;  // 2^32 long keys
  std::unique_ptr<std::atomic<std::atomic<const std::string*>*>[]> chunks_{
      new std::atomic<std::atomic<const std::string*>*>[kMaxChunks]()};
  std::mutex chunk_m_;

 public:
  ~KeyDictionary();
};

/// The key an index key stands for: the inline bytes, or the dictionary's key. False for a
/// dictionary id the dictionary does not know (never produced by the store).
bool decode_index_key(const KeyDictionary& dict, std::uint64_t ikey, std::string* out);

/// The index key of any key: inline when possible, otherwise through the dictionary.
/// With add == false a key without an id yields false (it cannot exist in the store).
Status index_key(KeyDictionary& dict, std::string_view key, bool add, std::uint64_t* ikey, bool* exists);

}  // namespace duet::kv

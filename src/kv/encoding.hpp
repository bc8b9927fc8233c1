// How byte strings become the 8-byte words the Canonical Store (L-Slab) and the Hot Cache hold.
//
// Index keys. Every key maps to one 64-bit index key, injectively:
//   - 8-byte keys whose first byte is below 0xF0: the key itself, read big-endian (no cost);
//   - keys of 0 to 7 bytes: 0xF0 + length in the top byte, the bytes below it (no cost);
//   - every other key (longer, or 8 bytes starting with 0xF0-0xFF): an id from the key
//     dictionary, 0xF8 in the top byte (one CPU hash lookup; see key_dictionary.hpp).
// Top bytes 0xFF are never produced, so L-Slab's reserved key (all ones) is never used.
//
// Value handles. The store holds one 64-bit handle per key:
//   - 8-byte values whose first byte is 0x01-0xEF: the value itself, big-endian;
//   - values of 0 to 7 bytes: 0xF0 + length in the top byte, the bytes below it;
//   - every other value: a pointer to an immutable ValueBlock (top byte 0x00), freed through
//     epoch-based reclamation once no reader can hold it; its bytes are charged to the store's
//     memory budget (mem/memory_budget.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "duet/status.hpp"
#include "mem/epoch.hpp"
#include "mem/memory_budget.hpp"

namespace duet::kv {

/// Top byte of index keys that are key-dictionary ids.
inline constexpr std::uint64_t kDictionaryTag = 0xF8ull << 56;

/// Reads 8 bytes big-endian.
inline std::uint64_t load_be64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

/// Packs a string of at most 7 bytes under the tag 0xF0 + length.
inline std::uint64_t pack_short(std::string_view s) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < s.size(); ++i) v |= std::uint64_t(static_cast<unsigned char>(s[i])) << (8 * (6 - i));
  return ((0xF0ull + s.size()) << 56) | v;
}

/// Unpacks pack_short's word, appending the bytes to out.
inline void unpack_short(std::uint64_t w, std::string* out) {
  const std::size_t len = static_cast<std::size_t>((w >> 56) - 0xF0);
  for (std::size_t i = 0; i < len; ++i) out->push_back(static_cast<char>((w >> (8 * (6 - i))) & 0xFF));
}

/// The index key of `key` when it needs no dictionary; false when it does.
inline bool inline_key(std::string_view key, std::uint64_t* ikey) {
  if (key.size() < 8) {
    *ikey = pack_short(key);
    return true;
  }
  if (key.size() == 8 && static_cast<unsigned char>(key[0]) < 0xF0) {
    *ikey = load_be64(key.data());
    return true;
  }
  return false;
}

/// An immutable value stored out of line: a header and the bytes. Allocated by make_value.
/// Builds with DUET_CHECKS (common/check.hpp) add a state word that tracks the block's life
/// (live, retired, freed), so that a block retired twice, freed twice or read after its free
/// aborts with a message naming it; release builds carry only the budget and the size.
struct ValueBlock {
  mem::MemoryBudget* budget;
  std::uint64_t size;
#if DUET_CHECKS
  std::uint64_t state;        ///< kBlockLive, kBlockRetired or kBlockFreed (value_block_state)
  const char* retired_by;     ///< the retire_value_block caller's `site`, for messages
  std::uint64_t retired_epoch;  ///< the reclamation epoch it was retired at
#endif
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
};

/// Encodes value as a handle, allocating a ValueBlock when it does not fit inline.
/// ResourceExhausted when the budget or the allocator refuses.
Status make_value(std::string_view value, mem::MemoryBudget* budget, std::uint64_t* handle);

/// True when the handle owns a ValueBlock (which must be retired, not leaked, when replaced).
inline bool is_block(std::uint64_t handle) { return (handle >> 56) == 0; }

/// A hint that the value behind handle will be read soon (append_value): starts loading the
/// first cache line of its block, which holds the size and a short value's bytes. Changes
/// nothing; harmless for any handle (a prefetch never faults).
inline void prefetch_value_block(std::uint64_t handle) {
  if (handle != 0 && is_block(handle)) __builtin_prefetch(reinterpret_cast<const void*>(handle));
}

/// Appends the value a handle stands for to out (the block must still be alive: callers hold
/// an epoch pin from before they read the handle). With DUET_CHECKS, reading a freed block
/// aborts with a message naming it.
void append_value(std::uint64_t handle, std::string* out);

/// Frees a ValueBlock handle (for EpochManager::retire, and for blocks never published). With
/// DUET_CHECKS the block is poisoned first (its size and bytes overwritten) and a second free
/// aborts; freed blocks then wait in a per-thread quarantine before the allocator gets them,
/// so that a late read meets the poison rather than reused memory.
void free_value_block(void* block);

/// Retires a block handle through `part`: it is freed once no pinned reader can hold it. The
/// caller must have unlinked it (no new reader can find it). `site` names the caller (a string
/// literal); with DUET_CHECKS it is kept in the block, and retiring a block twice, or one
/// already freed, or reading one after its free, aborts with a message naming the block and
/// the site that retired it. Non-block handles are ignored. Returns the block's value size (0
/// for non-blocks), for callers that count bytes.
std::uint64_t retire_value_block(mem::EpochManager::Participant* part, std::uint64_t handle, const char* site);

/// Builds with DUET_CHECKS: aborts when `handle`, just found in a structure (the Hot Cache or
/// the Canonical Store) by a reader pinned through `reader`, is a block that was retired before
/// that reader pinned, or freed. A reader pinned after a retirement cannot find the block in a
/// structure that unlinked it first, so finding it means some structure still points at
/// retired memory: the bug is caught where it is, not later when the memory is reused.
/// `where` names the reading path. Compiles to nothing in release builds.
inline void check_found_value(std::uint64_t handle, const mem::EpochManager::Participant* reader, const char* where);

/// Whether freed small blocks are kept in per-thread caches for reuse. Off in builds with
/// DUET_CHECKS or AddressSanitizer (a cached block would hide a double free from both), and
/// when the environment sets DUET_VALUE_BLOCK_CACHE=0 (read once, at the first free).
bool value_block_cache_enabled();

/// The life state of a block in builds with DUET_CHECKS (0 in release builds): for tests.
inline constexpr std::uint64_t kBlockLive = 0x4c49564556414c55ull;     // "LIVEVALU"
inline constexpr std::uint64_t kBlockRetired = 0x5245544952454456ull;  // "RETIREDV"
inline constexpr std::uint64_t kBlockFreed = 0xdbdbdbdbdbdbdbdbull;    // the poison byte
std::uint64_t value_block_state(std::uint64_t handle);

#if DUET_CHECKS
namespace detail {
/// check_found_value's failure report (builds with DUET_CHECKS only).
[[noreturn]] void found_retired_value(std::uint64_t handle, std::uint64_t pin_epoch, const char* where);
}  // namespace detail
#endif

inline void check_found_value(std::uint64_t handle, const mem::EpochManager::Participant* reader, const char* where) {
#if DUET_CHECKS
  if (!is_block(handle)) return;
  const std::uint64_t pin_epoch = reader->pinned_epoch();
  auto* b = reinterpret_cast<ValueBlock*>(handle);
  const std::uint64_t st = std::atomic_ref<std::uint64_t>(b->state).load();
  if (st == kBlockLive) return;
  if (st == kBlockRetired && std::atomic_ref<std::uint64_t>(b->retired_epoch).load() >= pin_epoch) return;
  detail::found_retired_value(handle, pin_epoch, where);
#else
  (void)handle, (void)reader, (void)where;
#endif
}

}  // namespace duet::kv

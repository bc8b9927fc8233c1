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
//     epoch-based reclamation once no reader can hold it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "duet/status.hpp"

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

/// Counts host bytes charged against a store's memory budget. Thread-safe.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t limit) : limit_(limit) {}
  /// Charges n bytes; ResourceExhausted (charging nothing) when that would pass the limit.
  Status charge(std::uint64_t n) {
    std::uint64_t cur = used_.load(std::memory_order_relaxed);
    for (;;) {
      if (cur + n > limit_ || cur + n < cur)
        return Status::ResourceExhausted("memory budget of " + std::to_string(limit_) + " bytes exhausted (" +
                                         std::to_string(cur) + " in use, " + std::to_string(n) + " requested)");
      if (used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return Status::Ok();
    }
  }
  void release(std::uint64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  std::uint64_t limit() const { return limit_; }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
};

/// An immutable value stored out of line: a header and the bytes. Allocated by make_value.
struct ValueBlock {
  MemoryBudget* budget;
  std::uint64_t size;
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
};

/// Encodes value as a handle, allocating a ValueBlock when it does not fit inline.
/// ResourceExhausted when the budget or the allocator refuses.
Status make_value(std::string_view value, MemoryBudget* budget, std::uint64_t* handle);

/// True when the handle owns a ValueBlock (which must be retired, not leaked, when replaced).
inline bool is_block(std::uint64_t handle) { return (handle >> 56) == 0; }

/// Appends the value a handle stands for to out (the block must still be alive: callers hold
/// an epoch pin from before they read the handle).
void append_value(std::uint64_t handle, std::string* out);

/// Frees a ValueBlock handle (for EpochManager::retire, and for blocks never published).
void free_value_block(void* block);

}  // namespace duet::kv

#include "kv/encoding.hpp"

#include <cstdlib>
#include <new>
#include <vector>

namespace duet::kv {
namespace {

/// A per-thread cache of freed small value blocks, by size class (16-byte steps of the value
/// size up to kMaxCachedValue), so that a write that replaces a value reuses the block another
/// write freed instead of going through malloc and free. Holds at most kCacheBytes per thread
/// (not charged to the memory budget: they are free memory); emptied when the thread exits.
class BlockCache {
 public:
  static constexpr std::size_t kMaxCachedValue = 128;
  static constexpr std::size_t kClasses = kMaxCachedValue / 16;
  static constexpr std::size_t kCacheBytes = 256 * 1024;

  /// Bytes to allocate for a value of `size` bytes: rounded up to its class when cacheable.
  static std::size_t block_bytes(std::size_t size) {
    return sizeof(ValueBlock) + (size <= kMaxCachedValue ? (size + 15) / 16 * 16 : size);
  }
  void* take(std::size_t size) {
    if (!alive_ || size > kMaxCachedValue || size == 0) return nullptr;
    std::vector<void*>& list = lists_[(size - 1) / 16];
    if (list.empty()) return nullptr;
    void* p = list.back();
    list.pop_back();
    bytes_ -= block_bytes(size);
    return p;
  }
  /// Keeps the block of a value of `size` bytes; false when it should be freed instead.
  bool keep(void* p, std::size_t size) {
    if (!alive_ || size > kMaxCachedValue || size == 0 || bytes_ + block_bytes(size) > kCacheBytes) return false;
    lists_[(size - 1) / 16].push_back(p);
    bytes_ += block_bytes(size);
    return true;
  }
  ~BlockCache() {
    alive_ = false;  // a free after this (static destructors on this thread) goes to free()
    for (auto& list : lists_)
      for (void* p : list) std::free(p);
  }

 private:
  bool alive_ = true;
  std::size_t bytes_ = 0;
  std::vector<void*> lists_[kClasses];
};

thread_local BlockCache t_blocks;

}  // namespace

Status make_value(std::string_view value, MemoryBudget* budget, std::uint64_t* handle) {
  if (value.size() < 8) {
    *handle = pack_short(value);
    return Status::Ok();
  }
  if (value.size() == 8) {
    const unsigned first = static_cast<unsigned char>(value[0]);
    if (first >= 0x01 && first <= 0xEF) {
      *handle = load_be64(value.data());
      return Status::Ok();
    }
  }
  const std::uint64_t bytes = sizeof(ValueBlock) + value.size();
  Status s = budget->charge(bytes);
  if (!s.ok()) return s;
  void* mem = t_blocks.take(value.size());
  if (!mem) mem = std::malloc(BlockCache::block_bytes(value.size()));
  auto* b = static_cast<ValueBlock*>(mem);
  if (!b) {
    budget->release(bytes);
    return Status::ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes for a value");
  }
  b->budget = budget;
  b->size = value.size();
  std::memcpy(b->data(), value.data(), value.size());
  *handle = reinterpret_cast<std::uint64_t>(b);
  return Status::Ok();
}

void append_value(std::uint64_t handle, std::string* out) {
  const unsigned top = static_cast<unsigned>(handle >> 56);
  if (top == 0) {
    const auto* b = reinterpret_cast<const ValueBlock*>(handle);
    out->append(b->data(), b->size);
  } else if (top >= 0xF0) {
    unpack_short(handle, out);
  } else {
    const std::uint64_t be = __builtin_bswap64(handle);
    out->append(reinterpret_cast<const char*>(&be), 8);
  }
}

void free_value_block(void* block) {
  auto* b = static_cast<ValueBlock*>(block);
  b->budget->release(sizeof(ValueBlock) + b->size);
  if (!t_blocks.keep(b, b->size)) std::free(b);
}

}  // namespace duet::kv

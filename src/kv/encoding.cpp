#include "kv/encoding.hpp"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define DUET_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DUET_ASAN 1
#endif
#endif
#ifndef DUET_ASAN
#define DUET_ASAN 0
#endif

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

#if DUET_CHECKS
/// Builds with DUET_CHECKS: freed blocks wait here, poisoned, before the allocator gets them
/// back, so a read after the free meets the poison (and aborts) instead of memory the
/// allocator reused. Under AddressSanitizer its own quarantine does this, so blocks go
/// straight back. Per thread, bounded; emptied when the thread exits.
class Quarantine {
 public:
  static constexpr std::size_t kBlocks = 16384;
  void hold(void* p) {
    if (DUET_ASAN || !alive_) {
      std::free(p);
      return;
    }
    held_.push_back(p);
    if (held_.size() > kBlocks) {
      std::free(held_.front());
      held_.pop_front();
    }
  }
  ~Quarantine() {
    alive_ = false;
    for (void* p : held_) std::free(p);
  }

 private:
  bool alive_ = true;
  std::deque<void*> held_;
};

thread_local Quarantine t_quarantine;

std::string block_name(const ValueBlock* b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "value block %p", static_cast<const void*>(b));
  return std::string(buf) + (b->retired_by ? std::string(" (retired by ") + b->retired_by + ")" : "");
}

std::string state_name(std::uint64_t st) {
  if (st == kBlockLive) return "live";
  if (st == kBlockRetired) return "retired";
  if (st == kBlockFreed) return "freed (poisoned)";
  char buf[40];
  std::snprintf(buf, sizeof buf, "unknown state %#llx", static_cast<unsigned long long>(st));
  return buf;
}
#endif

}  // namespace

#if DUET_CHECKS
namespace detail {
void found_retired_value(std::uint64_t handle, std::uint64_t pin_epoch, const char* where) {
  auto* b = reinterpret_cast<ValueBlock*>(handle);
  const std::uint64_t st = std::atomic_ref<std::uint64_t>(b->state).load();
  check_failed(__FILE__, __LINE__, "check_found_value",
               std::string(where) + " found " + block_name(b) + ", which is " + state_name(st) +
                   (st == kBlockRetired ? " since epoch " + std::to_string(b->retired_epoch) : std::string()) +
                   ", while pinned at epoch " + std::to_string(pin_epoch) +
                   ": a structure still holds a value block after its retirement");
}
}  // namespace detail
#endif

bool value_block_cache_enabled() {
  static const bool enabled = [] {
    if (DUET_CHECKS || DUET_ASAN) return false;
    const char* env = std::getenv("DUET_VALUE_BLOCK_CACHE");
    return !(env && (std::string_view(env) == "0" || std::string_view(env) == "off"));
  }();
  return enabled;
}

std::uint64_t value_block_state(std::uint64_t handle) {
#if DUET_CHECKS
  if (is_block(handle)) return std::atomic_ref<std::uint64_t>(reinterpret_cast<ValueBlock*>(handle)->state).load();
#endif
  (void)handle;
  return 0;
}

Status make_value(std::string_view value, mem::MemoryBudget* budget, std::uint64_t* handle) {
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
  void* mem = value_block_cache_enabled() ? t_blocks.take(value.size()) : nullptr;
  if (!mem) mem = std::malloc(BlockCache::block_bytes(value.size()));
  auto* b = static_cast<ValueBlock*>(mem);
  if (!b) {
    budget->release(bytes);
    return Status::ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes for a value");
  }
  b->budget = budget;
  b->size = value.size();
#if DUET_CHECKS
  b->state = kBlockLive;
  b->retired_by = nullptr;
  b->retired_epoch = ~std::uint64_t{0};  // until retire_value_block stores the real one
#endif
  std::memcpy(b->data(), value.data(), value.size());
  *handle = reinterpret_cast<std::uint64_t>(b);
  return Status::Ok();
}

void append_value(std::uint64_t handle, std::string* out) {
  const unsigned top = static_cast<unsigned>(handle >> 56);
  if (top == 0) {
    const auto* b = reinterpret_cast<const ValueBlock*>(handle);
#if DUET_CHECKS
    const std::uint64_t st = std::atomic_ref<std::uint64_t>(const_cast<ValueBlock*>(b)->state).load();
    DUET_CHECK(st == kBlockLive || st == kBlockRetired,
               "read of " + block_name(b) + ", which is " + state_name(st) + " (size word " +
                   std::to_string(b->size) + ")");
#endif
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
#if DUET_CHECKS
  const std::uint64_t st = std::atomic_ref<std::uint64_t>(b->state).exchange(kBlockFreed);
  DUET_CHECK(st == kBlockLive || st == kBlockRetired, "free of " + block_name(b) + ", which is " + state_name(st));
  if (st == kBlockLive) b->retired_by = "a direct free, without retirement";
  b->budget->release(sizeof(ValueBlock) + b->size);
  std::memset(b->data(), 0xDB, b->size);
  b->size = kBlockFreed;
  t_quarantine.hold(b);
#else
  b->budget->release(sizeof(ValueBlock) + b->size);
  if (!value_block_cache_enabled() || !t_blocks.keep(b, b->size)) std::free(b);
#endif
}

std::uint64_t retire_value_block(mem::EpochManager::Participant* part, std::uint64_t handle, const char* site) {
  if (!is_block(handle)) return 0;
  auto* b = reinterpret_cast<ValueBlock*>(handle);
#if DUET_CHECKS
  std::uint64_t st = kBlockLive;
  const bool was_live = std::atomic_ref<std::uint64_t>(b->state).compare_exchange_strong(st, kBlockRetired);
  DUET_CHECK(was_live, "retire by " + std::string(site) + " of " + block_name(b) + ", which is already " +
                           state_name(st) + (st == kBlockRetired ? " (retired twice)" : ""));
  b->retired_by = site;
#else
  (void)site;
#endif
  const std::uint64_t size = b->size;
#if DUET_CHECKS
  // The epoch is written before the block is handed over: from then on it may be freed at any
  // moment (even before retire() returns, when other threads advanced the epoch meanwhile).
  part->retire(b, free_value_block, [](void* block, std::uint64_t epoch) {
    std::atomic_ref<std::uint64_t>(static_cast<ValueBlock*>(block)->retired_epoch).store(epoch);
  });
#else
  part->retire(b, free_value_block);
#endif
  return size;
}

}  // namespace duet::kv

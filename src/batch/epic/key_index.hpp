// Epic's host key index: 64-bit keys of an indexed table to record ids, in one flat array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace duet::batch::epic {

/// Maps 64-bit keys (every value allowed) to record ids below 2^32 - 1, with open addressing and
/// linear probing over a power-of-two array of {key, id + 1} slots (id + 1 = 0: empty), sized
/// by reserve() to at least twice the keys it must hold, so a probe reads one or two cache lines
/// on average. Erase shifts the following run back, so there are no tombstones and the cost
/// does not drift with churn. Not thread-safe for writers; concurrent find()s are safe.
/// The array comes from calloc: a large one is mapped zeroed, its pages committed as keys land.
class KeyIndex {
 public:
  /// The id find() returns for an absent key.
  static constexpr std::uint32_t kAbsent = 0xFFFFFFFFu;

  KeyIndex() = default;
  /// A copy of the whole array (its capacity too). Throws std::bad_alloc.
  KeyIndex(const KeyIndex& o) : capacity_(o.capacity_), size_(o.size_) {
    if (!capacity_) return;
    slots_ = static_cast<Slot*>(std::malloc(capacity_ * sizeof(Slot)));
    if (!slots_) throw std::bad_alloc();
    std::memcpy(static_cast<void*>(slots_), o.slots_, capacity_ * sizeof(Slot));
  }
  KeyIndex& operator=(const KeyIndex& o) {
    KeyIndex tmp(o);
    swap(tmp);
    return *this;
  }
  KeyIndex(KeyIndex&& o) noexcept { swap(o); }
  KeyIndex& operator=(KeyIndex&& o) noexcept {
    KeyIndex tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~KeyIndex() { std::free(slots_); }

  /// Makes room for `keys` keys without growing again (keeps the keys). Throws std::bad_alloc
  /// when the memory cannot be allocated.
  void reserve(std::size_t keys) {
    std::size_t want = 16;
    while (want < 2 * keys) want *= 2;
    if (want > capacity_) rehash(want);
  }

  /// The id of `key`, or kAbsent. Cost: one hash and a probe of the key's run.
  std::uint32_t find(std::uint64_t key) const {
    if (size_ == 0) return kAbsent;
    for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
      const Slot& s = slots_[i];
      if (s.id_plus_1 == 0) return kAbsent;
      if (s.key == key) return s.id_plus_1 - 1;
    }
  }
  bool contains(std::uint64_t key) const { return find(key) != kAbsent; }
  /// Starts loading `key`'s first slot into the cache (a hint; no effect on the contents), so
  /// that a batch of keys can be probed without waiting for each miss in turn.
  void prefetch(std::uint64_t key) const {
    if (capacity_) __builtin_prefetch(&slots_[home(key)]);
  }

  /// Maps `key` to `id` (below kAbsent) if `key` is absent and returns true; returns false and
  /// changes nothing if it is present. Grows (doubling) past half full.
  bool insert(std::uint64_t key, std::uint32_t id) {
    if (2 * (size_ + 1) > capacity_) rehash(capacity_ ? 2 * capacity_ : 16);
    for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
      Slot& s = slots_[i];
      if (s.id_plus_1 == 0) {
        s = {key, id + 1};
        ++size_;
        return true;
      }
      if (s.key == key) return false;
    }
  }

  /// Removes `key`; returns false if it was absent. Moves back the keys after it in its run
  /// whose home lies at or before the freed slot.
  bool erase(std::uint64_t key) {
    if (size_ == 0) return false;
    const std::size_t mask = capacity_ - 1;
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask) {
      if (slots_[i].id_plus_1 == 0) return false;
      if (slots_[i].key == key) break;
    }
    for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      if (slots_[j].id_plus_1 == 0) break;
      // slots_[j] may move to the hole at i unless its home lies cyclically in (i, j].
      const std::size_t h = home(slots_[j].key);
      if (((j - h) & mask) >= ((j - i) & mask)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
    return true;
  }

  std::size_t size() const { return size_; }
  /// Slots in the array (a power of two, or 0 before the first insert or reserve).
  std::size_t capacity() const { return capacity_; }
  /// The hash whose low bits pick a key's first slot: a 64-bit mixer (fmix64), so that packed
  /// composite keys spread. Public so tests can build colliding keys.
  static std::uint64_t mix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
  }
  /// Removes every key; keeps the memory.
  void clear() {
    for (std::size_t i = 0; i < capacity_ && size_; ++i)
      if (slots_[i].id_plus_1) slots_[i] = {}, --size_;
  }
  /// True when both map the same keys to the same ids (whatever their capacities).
  /// Cost: a find in `b` per key of `a`.
  friend bool operator==(const KeyIndex& a, const KeyIndex& b) {
    if (a.size_ != b.size_) return false;
    bool same = true;
    a.for_each([&](std::uint64_t k, std::uint32_t id) { same = same && b.find(k) == id; });
    return same;
  }
  /// Calls f(key, id) for every key, in no particular order. Cost: the whole array.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i].id_plus_1) f(slots_[i].key, slots_[i].id_plus_1 - 1);
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t id_plus_1 = 0;
  };
  std::size_t home(std::uint64_t k) const {
    return static_cast<std::size_t>((mix(k >> kRunBits) << kRunBits) | (k & ((1u << kRunBits) - 1))) & (capacity_ - 1);
  }
  void rehash(std::size_t capacity) {
    auto* fresh = static_cast<Slot*>(std::calloc(capacity, sizeof(Slot)));
    if (!fresh) throw std::bad_alloc();
    KeyIndex old;
    old.slots_ = std::exchange(slots_, fresh);
    old.capacity_ = std::exchange(capacity_, capacity);
    old.size_ = std::exchange(size_, 0);
    old.for_each([this](std::uint64_t k, std::uint32_t id) { insert(k, id); });
  }
  void swap(KeyIndex& o) noexcept {
    std::swap(slots_, o.slots_);
    std::swap(capacity_, o.capacity_);
    std::swap(size_, o.size_);
  }

  static constexpr unsigned kRunBits = 4;  // keys equal but for their low 4 bits sit side by side
  Slot* slots_ = nullptr;
  std::size_t capacity_ = 0;  // slots, a power of two (or 0)
  std::size_t size_ = 0;
};

}  // namespace duet::batch::epic

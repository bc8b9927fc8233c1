#include "kv/key_dictionary.hpp"

#include <algorithm>
#include <mutex>

namespace duet::kv {

const KeyDictionary::Slot* KeyDictionary::probe(View t, std::uint64_t h, std::string_view key, bool* found) {
  *found = false;
  if (!t.slots) return nullptr;
  for (std::size_t i = static_cast<std::size_t>(h) & t.mask;; i = (i + 1) & t.mask) {
    const Slot& slot = t.slots[i];
    const std::string* k = slot.key.load(std::memory_order_acquire);
    if (!k) return &slot;
    if (slot.hash != h || slot.len != key.size()) continue;
    if (key.size() <= kInline ? std::memcmp(slot.head, key.data(), key.size()) == 0 : *k == key) {
      *found = true;
      return &slot;
    }
  }
}

bool KeyDictionary::find(std::string_view key, std::uint64_t* id) const {
  const std::uint64_t h = hash_of(key);
  // Whether the probe matched, not a second look at the slot's key: an empty slot where the
  // probe stopped may meanwhile be filled by another key, whose id this must not return.
  bool found = false;
  const Slot* slot = probe(view(shard_index(h)), h, key, &found);
  if (!found) return false;
  *id = slot->id;
  return true;
}

Status KeyDictionary::find_or_add(std::string_view key, std::uint64_t* id) {
  if (find(key, id)) return Status::Ok();
  const std::uint64_t h = hash_of(key);
  const std::size_t si = shard_index(h);
  Shard& s = shards_[si];
  std::lock_guard<std::mutex> lk(s.m);
  const Table* cur = s.tables.empty() ? nullptr : s.tables.back().get();
  bool found = false;
  if (const Slot* slot = probe(view(si), h, key, &found); found) {
    *id = slot->id;
    return Status::Ok();
  }
  Status st = budget_->charge(key.size() + sizeof(Slot));
  if (!st.ok()) return st;
  if (!cur || 2 * (s.used + 1) > cur->mask + 1) {  // keep the table at most half full
    auto bigger = std::make_unique<Table>();
    const std::size_t size = cur ? 2 * (cur->mask + 1) : 64;
    bigger->mask = size - 1;
    bigger->slots.reset(new Slot[size]);
    if (cur)
      for (std::size_t j = 0; j <= cur->mask; ++j) {
        const Slot& old = cur->slots[j];
        const std::string* k = old.key.load(std::memory_order_relaxed);
        if (!k) continue;
        std::size_t i = static_cast<std::size_t>(old.hash) & bigger->mask;
        while (bigger->slots[i].key.load(std::memory_order_relaxed)) i = (i + 1) & bigger->mask;
        Slot& to = bigger->slots[i];
        to.hash = old.hash;
        to.id = old.id;
        to.len = old.len;
        std::memcpy(to.head, old.head, kInline);
        to.key.store(k, std::memory_order_relaxed);
      }
    s.tables.push_back(std::move(bigger));
    cur = s.tables.back().get();
    const std::uintptr_t head = reinterpret_cast<std::uintptr_t>(cur->slots.get()) |
                                static_cast<std::uintptr_t>(__builtin_ctzll(size));
    heads_[si].store(head, std::memory_order_release);  // publishes the copied slots too
  }
  const std::uint64_t fresh = kDictionaryTag | next_.fetch_add(1, std::memory_order_relaxed);
  s.keys.push_back(std::make_unique<std::string>(key));
  Slot* slot = const_cast<Slot*>(probe(view(si), h, key, &found));  // empty: we hold the shard's lock
  slot->hash = h;
  slot->id = fresh;
  slot->len = static_cast<std::uint32_t>(key.size());
  std::memcpy(slot->head, key.data(), std::min(key.size(), kInline));
  ++s.used;
  publish(fresh & ~kDictionaryTag, s.keys.back().get());
  slot->key.store(s.keys.back().get(), std::memory_order_release);  // the slot is complete
  *id = fresh;
  return Status::Ok();
}

KeyDictionary::~KeyDictionary() {
  std::uint64_t charged = 0;
  for (const Shard& s : shards_)
    for (const auto& k : s.keys) charged += k->size() + sizeof(Slot);
  budget_->release(charged);
  for (std::size_t c = 0; c < kMaxChunks; ++c) delete[] chunks_[c].load(std::memory_order_relaxed);
}

void KeyDictionary::publish(std::uint64_t index, const std::string* key) {
  const std::size_t c = static_cast<std::size_t>(index >> kChunkShift);
  if (c >= kMaxChunks) return;  // beyond 2^32 long keys: SCAN cannot name them (documented)
  std::atomic<const std::string*>* chunk = chunks_[c].load(std::memory_order_acquire);
  if (!chunk) {
    std::lock_guard<std::mutex> lk(chunk_m_);
    chunk = chunks_[c].load(std::memory_order_acquire);
    if (!chunk) {
      chunk = new std::atomic<const std::string*>[std::size_t(1) << kChunkShift]();
      chunks_[c].store(chunk, std::memory_order_release);
    }
  }
  chunk[index & ((std::uint64_t(1) << kChunkShift) - 1)].store(key, std::memory_order_release);
}

const std::string* KeyDictionary::key_of(std::uint64_t id) const {
  const std::uint64_t index = id & ~kDictionaryTag;
  const std::size_t c = static_cast<std::size_t>(index >> kChunkShift);
  if ((id & (0xFFull << 56)) != kDictionaryTag || c >= kMaxChunks) return nullptr;
  const std::atomic<const std::string*>* chunk = chunks_[c].load(std::memory_order_acquire);
  return chunk ? chunk[index & ((std::uint64_t(1) << kChunkShift) - 1)].load(std::memory_order_acquire) : nullptr;
}

bool decode_index_key(const KeyDictionary& dict, std::uint64_t ikey, std::string* out) {
  const std::uint64_t top = ikey >> 56;
  if (top >= 0xF0 && top <= 0xF7) {
    unpack_short(ikey, out);
    return true;
  }
  if (top == 0xF8) {
    const std::string* k = dict.key_of(ikey);
    if (!k) return false;
    out->append(*k);
    return true;
  }
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((ikey >> (8 * (7 - i))) & 0xFF);
  out->append(b, 8);
  return true;
}

Status index_key(KeyDictionary& dict, std::string_view key, bool add, std::uint64_t* ikey, bool* exists) {
  *exists = true;
  if (inline_key(key, ikey)) return Status::Ok();
  if (add) return dict.find_or_add(key, ikey);
  *exists = dict.find(key, ikey);
  return Status::Ok();
}

}  // namespace duet::kv

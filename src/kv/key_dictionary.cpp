#include "kv/key_dictionary.hpp"

#include <mutex>

namespace duet::kv {

bool KeyDictionary::find(std::string_view key, std::uint64_t* id) const {
  Shard& s = shard(key);
  std::shared_lock<std::shared_mutex> lk(s.m);
  auto it = s.ids.find(key);
  if (it == s.ids.end()) return false;
  *id = it->second;
  return true;
}

Status KeyDictionary::find_or_add(std::string_view key, std::uint64_t* id) {
  if (find(key, id)) return Status::Ok();
  Shard& s = shard(key);
  std::unique_lock<std::shared_mutex> lk(s.m);
  auto it = s.ids.find(key);
  if (it != s.ids.end()) {
    *id = it->second;
    return Status::Ok();
  }
  Status st = budget_->charge(key.size() + 48);
  if (!st.ok()) return st;
  const std::uint64_t fresh = kDictionaryTag | next_.fetch_add(1, std::memory_order_relaxed);
  auto placed = s.ids.emplace(std::string(key), fresh).first;
  publish(fresh & ~kDictionaryTag, &placed->first);
  *id = fresh;
  return Status::Ok();
}

KeyDictionary::~KeyDictionary() {
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

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
  s.ids.emplace(std::string(key), fresh);
  *id = fresh;
  return Status::Ok();
}

Status index_key(KeyDictionary& dict, std::string_view key, bool add, std::uint64_t* ikey, bool* exists) {
  *exists = true;
  if (inline_key(key, ikey)) return Status::Ok();
  if (add) return dict.find_or_add(key, ikey);
  *exists = dict.find(key, ikey);
  return Status::Ok();
}

}  // namespace duet::kv

// Peer (A-D only, not an ordered index, so not a target peer): libcuckoo's
// libcuckoo::cuckoohash_map (bucketized cuckoo hashing with striped locks), in its default
// configuration: no capacity reserved, so the timed load pays for its resizes as the ordered
// maps pay for their growth. String keys are std::string, looked up by string_view through a
// transparent hash and equality. It has no order, hence no SCAN: E is never run on it
// (main.cpp skips scan workloads for unordered systems).
#include <libcuckoo/cuckoohash_map.hh>

#include <functional>
#include <string>
#include <string_view>

#include "systems.hpp"

namespace duet::bench::hydralist {
namespace {

/// Hashes std::string and std::string_view alike (and u64s with std::hash).
struct AnyHash {
  std::size_t operator()(std::uint64_t k) const { return std::hash<std::uint64_t>{}(k); }
  std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  std::size_t operator()(const std::string& k) const { return std::hash<std::string_view>{}(k); }
};

template <class Keys, class StoredKey>
class CuckooSystem final : public System<Keys> {
  using Table = libcuckoo::cuckoohash_map<StoredKey, std::uint64_t, AnyHash, std::equal_to<>>;

  class W final : public LoopWorker<W, Keys> {
   public:
    using Key = typename Keys::Key;
    explicit W(Table* t) : t_(t) {}
    bool get(Key k, std::uint64_t* v) { return t_->find(k, *v); }
    bool update(Key k, std::uint64_t v) { return t_->update(k, v); }
    bool insert(Key k, std::uint64_t v) { return t_->insert(StoredKey(k), v); }
    /// Unordered: never called (scan workloads are skipped for this system).
    std::size_t scan(Key, unsigned) { return 0; }

   private:
    Table* t_;
  };

 public:
  std::unique_ptr<Worker<Keys>> attach() override { return std::make_unique<W>(&t_); }
  Json stats() const override {
    Json j = Json::object();
    j.set("size", static_cast<std::uint64_t>(t_.size()));
    j.set("bucket_count", static_cast<std::uint64_t>(t_.bucket_count()));
    j.set("load_factor", t_.load_factor());
    return j;
  }

 private:
  Table t_;
};

}  // namespace

std::unique_ptr<System<IntKeys>> make_libcuckoo_int() {
  return std::make_unique<CuckooSystem<IntKeys, std::uint64_t>>();
}
std::unique_ptr<System<StrKeys>> make_libcuckoo_str() {
  return std::make_unique<CuckooSystem<StrKeys, std::string>>();
}

}  // namespace duet::bench::hydralist

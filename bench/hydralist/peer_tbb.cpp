// Peer: oneTBB's tbb::concurrent_map (a concurrent skip list), values as atomic words so that
// UPDATE is a store into the found node. YCSB has no deletes, so none is needed.
#include <oneapi/tbb/concurrent_map.h>

#include <atomic>
#include <string>

#include "systems.hpp"

namespace duet::bench::hydralist {
namespace {

template <class Keys, class StoredKey>
class TbbSystem final : public System<Keys> {
  using Table = tbb::concurrent_map<StoredKey, std::atomic<std::uint64_t>, std::less<>>;  // transparent: string_view lookups

  class W final : public LoopWorker<W, Keys> {
   public:
    using Key = typename Keys::Key;
    explicit W(Table* t) : t_(t) {}
    bool get(Key k, std::uint64_t* v) {
      const auto it = t_->find(k);
      if (it == t_->end()) return false;
      *v = it->second.load(std::memory_order_acquire);
      return true;
    }
    bool update(Key k, std::uint64_t v) {
      const auto it = t_->find(k);
      if (it == t_->end()) return false;
      it->second.store(v, std::memory_order_release);
      return true;
    }
    bool insert(Key k, std::uint64_t v) { return t_->emplace(StoredKey(k), v).second; }
    std::size_t scan(Key k, unsigned n) {
      std::size_t got = 0;
      std::uint64_t sink = 0;
      for (auto it = t_->lower_bound(k); it != t_->end() && got < n; ++it, ++got)
        sink += it->second.load(std::memory_order_acquire);
      sink_ += sink;
      return got;
    }
    std::uint64_t sink_ = 0;

   private:
    Table* t_;
  };

 public:
  std::unique_ptr<Worker<Keys>> attach() override { return std::make_unique<W>(&t_); }

 private:
  Table t_;
};

}  // namespace

std::unique_ptr<System<IntKeys>> make_tbb_int() { return std::make_unique<TbbSystem<IntKeys, std::uint64_t>>(); }
std::unique_ptr<System<StrKeys>> make_tbb_str() { return std::make_unique<TbbSystem<StrKeys, std::string>>(); }

}  // namespace duet::bench::hydralist

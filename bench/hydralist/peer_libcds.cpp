// Peer: libcds's lock-free skip list map (cds::container::SkipListMap) with hazard pointers.
// Values are atomic words (UPDATE stores into the found node). libcds has no lower_bound, so
// SCAN uses the skip list's own search (find_position, reachable from a derived class) for the
// first node >= start and walks level 0 with hazard pointers, searching again from the last key
// when it stands on a deleted node (as bench/lit's peer does).
#include <atomic>
#include <string>
#include <string_view>

#include <cds/container/skip_list_map_hp.h>
#include <cds/gc/hp.h>
#include <cds/init.h>

#include "systems.hpp"

namespace duet::bench::hydralist {
namespace {

/// Orders std::string and std::string_view (and u64s) alike.
struct AnyLess {
  bool operator()(std::uint64_t a, std::uint64_t b) const { return a < b; }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const { return std::string_view(a) < std::string_view(b); }
};

/// An atomic word libcds can construct and move (its node builds the pair from a temporary).
struct Word {
  std::atomic<std::uint64_t> v;
  Word(std::uint64_t x = 0) : v(x) {}
  Word(const Word& o) : v(o.v.load(std::memory_order_relaxed)) {}
};

template <class Keys, class StoredKey>
class CdsSystem final : public System<Keys> {
  struct Traits : cds::container::skip_list::traits {
    typedef AnyLess less;
  };
  using BaseMap = cds::container::SkipListMap<cds::gc::HP, StoredKey, Word, Traits>;
  static constexpr std::size_t kHazardPointers = BaseMap::c_nHazardPtrCount + 8;

  class ScanMap : public BaseMap {
    using Maker = cds::container::details::make_skip_list_map<cds::gc::HP, StoredKey, Word, Traits>;
    using Set = typename Maker::type;
    using INode = typename Set::node_type;
    using VNode = typename Maker::node_type;
    using NodeTraits = typename Set::node_traits;
    using MarkedPtr = typename INode::marked_ptr;

   public:
    /// Up to n pairs with key >= start, in key order.
    std::size_t scan(const StoredKey& start, unsigned n) {
      typename Set::position pos;
      typename cds::gc::HP::Guard cur_guard, next_guard;
      auto to_value = [](MarkedPtr p) { return NodeTraits::to_value_ptr(p.ptr()); };
      StoredKey from = start;
      std::size_t got = 0;
      bool skip_equal = false;
    search:
      Set::find_position(from, pos, typename Set::key_comparator(), false);
      INode* cur = pos.pSucc[0];
      if (!cur) return got;
      cur_guard.assign(NodeTraits::to_value_ptr(cur));
      while (cur && got < n) {
        const VNode* v = NodeTraits::to_value_ptr(cur);
        const MarkedPtr next = next_guard.protect(cur->next(0), to_value);
        if (next.bits()) {
          from = v->m_Value.first;
          skip_equal = true;
          goto search;
        }
        if (!(skip_equal && !(from < v->m_Value.first))) {
          sink_ += v->m_Value.second.v.load(std::memory_order_relaxed);
          ++got;
        }
        skip_equal = false;
        cur = next.ptr();
        cur_guard.copy(next_guard);
      }
      return got;
    }
    std::uint64_t sink_ = 0;
  };

  class W final : public LoopWorker<W, Keys> {
   public:
    using Key = typename Keys::Key;
    explicit W(ScanMap* m) : m_(m) { cds::threading::Manager::attachThread(); }
    ~W() override { cds::threading::Manager::detachThread(); }
    bool get(Key k, std::uint64_t* v) {
      return m_->find_with(k, AnyLess(), [v](typename BaseMap::value_type& item) {
        *v = item.second.v.load(std::memory_order_acquire);
      });
    }
    bool update(Key k, std::uint64_t v) {
      return m_->find_with(k, AnyLess(), [v](typename BaseMap::value_type& item) {
        item.second.v.store(v, std::memory_order_release);
      });
    }
    bool insert(Key k, std::uint64_t v) { return m_->emplace(StoredKey(k), v); }
    std::size_t scan(Key k, unsigned n) { return m_->scan(StoredKey(k), n); }

   private:
    ScanMap* m_;
  };

 public:
  explicit CdsSystem(unsigned threads) {
    cds::Initialize();
    gc_ = std::make_unique<cds::gc::HP>(kHazardPointers, threads + 8);
    cds::threading::Manager::attachThread();
    map_ = std::make_unique<ScanMap>();
  }
  ~CdsSystem() override {
    map_.reset();
    cds::threading::Manager::detachThread();
    gc_.reset();
    cds::Terminate();
  }
  std::unique_ptr<Worker<Keys>> attach() override { return std::make_unique<W>(map_.get()); }

 private:
  std::unique_ptr<cds::gc::HP> gc_;
  std::unique_ptr<ScanMap> map_;
};

}  // namespace

std::unique_ptr<System<IntKeys>> make_libcds_int(unsigned threads) {
  return std::make_unique<CdsSystem<IntKeys, std::uint64_t>>(threads);
}
std::unique_ptr<System<StrKeys>> make_libcds_str(unsigned threads) {
  return std::make_unique<CdsSystem<StrKeys, std::string>>(threads);
}

}  // namespace duet::bench::hydralist

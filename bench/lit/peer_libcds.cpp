// Peer: libcds's lock-free skip list map (cds::container::SkipListMap) with hazard-pointer
// reclamation (cds::gc::HP). libcds offers no range query or lower_bound, so RANGE reuses the
// skip list's own search (find_position, reachable from a derived class) to find the first node
// >= start and walks level 0 from there with hazard pointers. The walk is not linearizable.
#include <atomic>

#include <cds/container/skip_list_map_hp.h>
#include <cds/gc/hp.h>
#include <cds/init.h>

#include "systems.hpp"

namespace duet::bench::lit {
namespace {

using Traits = cds::container::skip_list::traits;
using BaseMap = cds::container::SkipListMap<cds::gc::HP, std::uint64_t, std::uint64_t, Traits>;

/// Hazard pointers per thread: the skip list needs c_nHazardPtrCount (2 per level and 3
/// more); the range walk holds its search position's guards and two of its own.
constexpr std::size_t kHazardPointers = BaseMap::c_nHazardPtrCount + 8;

/// The skip list map plus a range walk over its level-0 list.
class ScanMap : public BaseMap {
  using Maker = cds::container::details::make_skip_list_map<cds::gc::HP, std::uint64_t, std::uint64_t, Traits>;
  using Set = typename Maker::type;            // the intrusive skip list underneath
  using INode = typename Set::node_type;       // its tower node
  using VNode = typename Maker::node_type;     // the node holding the pair
  using NodeTraits = typename Set::node_traits;
  using MarkedPtr = typename INode::marked_ptr;

 public:
  /// Appends the pairs with start <= key <= end in key order. A node is taken when its level-0
  /// link is not marked (not deleted) as the walk passes it. When the node the walk stands on
  /// is deleted, its successor can no longer be trusted, so the walk searches again from that
  /// node's key (all keys collected so far are smaller).
  void scan(std::uint64_t start, std::uint64_t end, Pairs* out) {
    typename Set::position pos;
    typename cds::gc::HP::Guard cur_guard, next_guard;
    auto to_value = [](MarkedPtr p) { return NodeTraits::to_value_ptr(p.ptr()); };
    std::uint64_t from = start;
  search:
    // pos.pSucc[0] is the first node >= from, guarded by pos.guards slot 1 (level 0's current).
    Set::find_position(from, pos, typename Set::key_comparator(), false);
    INode* cur = pos.pSucc[0];
    if (!cur) return;
    cur_guard.assign(NodeTraits::to_value_ptr(cur));
    while (cur) {
      const VNode* v = NodeTraits::to_value_ptr(cur);
      const std::uint64_t k = v->m_Value.first;
      if (k > end) return;
      const MarkedPtr next = next_guard.protect(cur->next(0), to_value);
      if (next.bits()) {  // cur is deleted: its next link is frozen and may lead to freed nodes
        from = k;
        goto search;
      }
      out->emplace_back(k, v->m_Value.second);
      cur = next.ptr();
      cur_guard.copy(next_guard);
    }
  }
};

/// A thread attached to libcds's thread manager (hazard-pointer record) for its lifetime.
class CdsWorker final : public StreamWorker<CdsWorker> {
 public:
  explicit CdsWorker(ScanMap* m) : m_(m) { cds::threading::Manager::attachThread(); }
  ~CdsWorker() override { cds::threading::Manager::detachThread(); }

  /// find with a functor copying the value (values never change after insertion).
  bool get(std::uint64_t k, std::uint64_t* v) {
    return m_->find(k, [v](BaseMap::value_type& item) { *v = item.second; });
  }
  /// emplace, not insert: SkipListMap::insert(key, value) links a node holding a default value
  /// and assigns the value afterwards, so a concurrent GET or RANGE could read 0; emplace builds
  /// the node with its value before linking it.
  bool insert(std::uint64_t k, std::uint64_t v) { return m_->emplace(k, v); }
  bool remove(std::uint64_t k) { return m_->erase(k); }
  bool range(std::uint64_t start, std::uint64_t end, Pairs* out) {
    m_->scan(start, end, out);
    return true;
  }


 private:
  ScanMap* m_;
};

class CdsSystem final : public System {
 public:
  /// Initializes libcds and its hazard-pointer GC for spec.threads workers (plus this thread,
  /// which stays attached so that the map can be destroyed), then builds the map.
  explicit CdsSystem(const SystemSpec& spec) {
    cds::Initialize();
    gc_ = std::make_unique<cds::gc::HP>(kHazardPointers, spec.threads + 8);
    cds::threading::Manager::attachThread();
    map_ = std::make_unique<ScanMap>();
  }
  /// Frees the map on the attached creating thread, then shuts libcds down.
  ~CdsSystem() override {
    map_.reset();
    cds::threading::Manager::detachThread();
    gc_.reset();
    cds::Terminate();
  }
  duet::Status attach(std::unique_ptr<Worker>* out) override {
    *out = std::make_unique<CdsWorker>(map_.get());
    return duet::Status::Ok();
  }
  Json stats() const override {
    Json j = Json::object();
    j.set("hazard_pointers_per_thread", static_cast<std::uint64_t>(kHazardPointers));
    return j;
  }

 private:
  std::unique_ptr<cds::gc::HP> gc_;
  std::unique_ptr<ScanMap> map_;
};

}  // namespace

std::unique_ptr<System> make_libcds_system(const SystemSpec& spec) { return std::make_unique<CdsSystem>(spec); }

}  // namespace duet::bench::lit

// Peer: a readers-writer lock (std::shared_mutex) around the plain structures (plain.hpp): one
// lock for the list and the BST, one per bucket for the hash table (as liburcu's writers).
#include <mutex>
#include <shared_mutex>

#include "plain.hpp"

namespace duet::bench::mvrlu {
namespace {

struct RwPolicy {
  using Lock = std::shared_mutex;
  struct ReadGuard {
    explicit ReadGuard(Lock& l) : g(l) {}
    std::shared_lock<Lock> g;
  };
  struct WriteGuard {
    explicit WriteGuard(Lock& l) : g(l) {}
    std::unique_lock<Lock> g;
  };
  static void sync() {}  // readers are excluded while the writer holds the lock
  template <class N>
  static void retire(N* const* nodes, int n) {
    for (int i = 0; i < n; ++i) delete nodes[i];
  }
};
struct NoAttach {};

}  // namespace

void add_rwlock_system(std::vector<SystemInfo>* out) {
  SystemInfo i;
  i.name = "rwlock";
  i.description = "std::shared_mutex around a plain list / hash table (a lock per bucket) / BST";
  i.make = [](const SetSpec& spec, Status*) -> std::unique_ptr<System> {
    return std::make_unique<PlainSystem<RwPolicy, NoAttach>>(spec);
  };
  out->push_back(std::move(i));
}

}  // namespace duet::bench::mvrlu

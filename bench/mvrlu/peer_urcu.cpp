// Peer: liburcu (userspace RCU, the memb flavour: membarrier-based read side) over the plain
// structures (plain.hpp). Writers are serialised by a spinlock, per bucket in the hash table
// and one for the list and the BST, as the thesis's RCU baseline does; a remover waits for a
// grace period (synchronize_rcu) and then frees the node.
#include <urcu/urcu-memb.h>

#include <atomic>

#include "plain.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace duet::bench::mvrlu {
namespace {

/// Test-and-test-and-set spinlock, one cache line.
struct alignas(64) SpinLock {
  std::atomic<bool> held{false};
  void lock() {
    for (;;) {
      if (!held.exchange(true, std::memory_order_acquire)) return;
      while (held.load(std::memory_order_relaxed)) {
#if defined(__x86_64__)
        _mm_pause();
#endif
      }
    }
  }
  void unlock() { held.store(false, std::memory_order_release); }
};

struct UrcuPolicy {
  using Lock = SpinLock;
  struct ReadGuard {
    explicit ReadGuard(Lock&) { urcu_memb_read_lock(); }
    ~ReadGuard() { urcu_memb_read_unlock(); }
  };
  struct WriteGuard {
    explicit WriteGuard(Lock& l) : l_(l) { l_.lock(); }
    ~WriteGuard() { l_.unlock(); }
    Lock& l_;
  };
  static void sync() { urcu_memb_synchronize_rcu(); }
  template <class N>
  static void retire(N* const* nodes, int n) {
    urcu_memb_synchronize_rcu();
    for (int i = 0; i < n; ++i) delete nodes[i];
  }
};

/// Registers the worker's thread with liburcu for the worker's lifetime.
struct UrcuAttach {
  UrcuAttach() { urcu_memb_register_thread(); }
  ~UrcuAttach() { urcu_memb_unregister_thread(); }
};

}  // namespace

void add_urcu_system(std::vector<SystemInfo>* out) {
  SystemInfo i;
  i.name = "urcu";
  i.description = "liburcu (memb), writers spinlocked (per bucket in the hash table), synchronize_rcu before free";
  i.make = [](const SetSpec& spec, Status*) -> std::unique_ptr<System> {
    return std::make_unique<PlainSystem<UrcuPolicy, UrcuAttach>>(spec);
  };
  out->push_back(std::move(i));
}

}  // namespace duet::bench::mvrlu

// The CPU memory environment of the CODS structures: nodes from the heap, reclamation through
// mem::EpochManager, and the test-only hooks (a yield between search and lock, planted bugs,
// a counter of node reads).
//
// The structures are templated on an environment with this interface (all calls collective):
//   template <class Node> Node* alloc(const Group&)     a zeroed node, or null (pool empty)
//   template <class Node> void discard(const Group&, Node*)  free a node never published
//   template <class Node> void retire(const Group&, Node*)   free once no reader can hold it
//   void node_read()              one coalesced node get (statistics, the search bound)
//   void after_search()           called between a search and the locks it leads to
//   bool planted(Bug)             test-only planted bugs (false outside tests)
//   bool stuck()                  test-only: under a planted bug an operation may loop for ever
//                                 (a broken list can keep a marked node reachable); true makes
//                                 it give up with kRetry before changing anything
// The GPU environment (gpu_batch.cu) takes nodes from a pool and reuses retired ones only
// after the batch that retired them has ended.
// An environment over remote memory (remote_env.hpp) also declares kRemote and the word and
// round-trip calls of common.hpp's "Remote memory" helpers; the others need not define them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "cods/group.hpp"
#include "index/cods/common.hpp"
#include "mem/epoch.hpp"

namespace duet::cods::ds {

/// Test-only switches, shared by the threads of a test. Null in production sessions.
struct Hooks {
  bool yield_after_search = false;  ///< std::this_thread::yield() between search and lock
  Bug bug = Bug::kNone;
};

/// Per-session counters (plain: one session is one thread).
struct Counters {
  std::uint64_t node_reads = 0;  ///< coalesced node gets (head, internal and leaf nodes)
};

/// Where a structure under a planted bug keeps its nodes: a broken structure may retire a node
/// twice or keep one reachable after retiring it, so under a planted bug nothing is freed
/// before the structure is destroyed, and then every node once (tests stay memory-safe).
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() {
    for (auto& [p, del] : nodes_) del(p);
  }
  template <class Node>
  void add(Node* n) {
    std::lock_guard<std::mutex> lk(m_);
    nodes_.emplace_back(n, [](void* p) { delete static_cast<Node*>(p); });
  }

 private:
  std::mutex m_;
  std::vector<std::pair<void*, void (*)(void*)>> nodes_;
};

/// One CPU thread's environment: its epoch participant plus optional hooks and counters.
/// Not thread-safe; one per thread. Nodes are value-initialized (zero words, lock free).
class CpuEnv {
 public:
  /// arena: non-null only under a planted bug (see Arena).
  CpuEnv(mem::EpochManager& m, const Hooks* hooks = nullptr, Arena* arena = nullptr)
      : part_(m.join()), hooks_(hooks), arena_(arena) {}

  template <class Node>
  Node* alloc(const CpuThread&) {
    Node* n = new (std::nothrow) Node();
    if (n && arena_) arena_->add(n);
    return n;
  }
  template <class Node>
  void discard(const CpuThread&, Node* n) {
    if (!arena_) delete n;
  }
  template <class Node>
  void retire(const CpuThread&, Node* n) {
    if (!arena_) part_->retire(n);
  }
  void node_read() {
    ++counters_.node_reads;
    ++reads_since_pin_;
  }
  /// Under a planted bug: this operation has read 100,000 nodes (it is not going to finish).
  bool stuck() const { return arena_ && reads_since_pin_ > kStuckReads; }
  void after_search() {
    if (hooks_ && hooks_->yield_after_search) std::this_thread::yield();
  }
  bool planted(Bug b) const { return hooks_ && hooks_->bug == b; }

  /// Pins the epoch for the duration of one operation.
  mem::EpochManager::Guard pin() {
    reads_since_pin_ = 0;
    return part_->pin();
  }
  Counters& counters() { return counters_; }

 private:
  std::unique_ptr<mem::EpochManager::Participant> part_;
  const Hooks* hooks_;
  static constexpr std::uint64_t kStuckReads = 100'000;
  Arena* arena_;
  Counters counters_;
  std::uint64_t reads_since_pin_ = 0;
};

}  // namespace duet::cods::ds

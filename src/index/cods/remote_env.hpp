// The simulated remote-memory environment of the CODS structures (docs/cods.md, "Remote
// memory"): the same LazyList, HashSet and BLinkTree templates as on the CPU (group
// cods::CpuThread), with every node in a cods::RemoteMemory region.
//
// It has CpuEnv's interface (cpu_env.hpp) plus what common.hpp's remote helpers call when an
// environment declares kRemote:
//   to_node<Node>(w) / to_word(n)   node words with the memory node id in the stolen bits
//   remote_read(t) / remote_write(t) / remote_cas()   one round trip each (t: how many)
// A node get is a copy-pointer read (the fragment is the local copy), a set writes it back.
// Locks are CASes on the node's lock (or version) word. Round trips are counted per session
// and each costs the memory's configured delay.
//
// Reclamation: a retired node is not reused (RemoteContext::retire), so readers never see a
// node recycled under them, and a planted bug cannot make a test touch freed memory; nodes
// are freed with the region when the structure goes.
#pragma once

#include <cstdint>
#include <new>
#include <thread>

#include "cods/group.hpp"
#include "cods/remote.hpp"
#include "index/cods/common.hpp"
#include "index/cods/cpu_env.hpp"

namespace duet::cods::ds {

/// One thread's session on a remote structure: its memory-key context plus the test hooks.
/// Not thread-safe; one per thread.
class RemoteEnv {
 public:
  static constexpr bool kRemote = true;

  explicit RemoteEnv(RemoteMemory& m, const Hooks* hooks = nullptr) : ctx_(m), hooks_(hooks) {}

  /// A zeroed node on the next memory node, or null when the regions are full.
  template <class Node>
  Node* alloc(const CpuThread&) {
    void* p = ctx_.alloc(sizeof(Node));
    return p ? new (p) Node() : nullptr;
  }
  template <class Node>
  void discard(const CpuThread&, Node* n) {
    ctx_.free_unpublished(n, sizeof(Node));
  }
  template <class Node>
  void retire(const CpuThread&, Node* n) {
    ctx_.retire(n);
  }

  template <class Node>
  Node* to_node(std::uint64_t w) const {
    return static_cast<Node*>(ctx_.to_address(w));
  }
  std::uint64_t to_word(const void* n) const { return ctx_.to_word(n); }
  void remote_read(unsigned trips) { ctx_.read(trips); }
  void remote_write(unsigned trips) { ctx_.write(trips); }
  void remote_cas() { ctx_.cas(); }

  void node_read() {
    ++ctx_.counters().node_reads;
    ++reads_since_begin_;
  }
  /// Under a planted bug: this operation has read 100,000 nodes (it is not going to finish).
  bool stuck() const { return hooks_ && hooks_->bug != Bug::kNone && reads_since_begin_ > 100'000; }
  void after_search() {
    if (hooks_ && hooks_->yield_after_search) std::this_thread::yield();
  }
  bool planted(Bug b) const { return hooks_ && hooks_->bug == b; }

  /// Called by the front ends at the start of each operation.
  void begin() { reads_since_begin_ = 0; }
  RemoteCounters& counters() { return ctx_.counters(); }
  RemoteContext& context() { return ctx_; }

 private:
  RemoteContext ctx_;
  const Hooks* hooks_;
  std::uint64_t reads_since_begin_ = 0;
};

}  // namespace duet::cods::ds

// EpochGate: tells a writer that swaps a shared object (the kv router's model) when every piece
// of work that started under the old one has finished, without a lock on the workers' path.
// Used by the kv keyspace (kv/kv_space.cpp) around each batch round and by its Canonical Store
// (kv/canonical_store.hpp), which releases a request group's hold once it has run the group.
//
// Not to be confused with epoch-based reclamation (mem/epoch.hpp), which decides when retired
// memory may be freed: the two epochs are independent, and a kv batch round holds both (it pins
// its reclamation epoch before it enters the gate; docs/kv.md says why).
#pragma once

#include <atomic>
#include <cstdint>

namespace duet::sched {

/// Counts work in flight per model epoch, striped over cache lines so entering and leaving
/// cost one uncontended atomic add each. A batch holds its epoch while it routes, and each
/// request group it sends to the Canonical Store holds it until the store has run the group
/// (the store's thread releases it). A switch installs epoch e+1 and then waits until epoch
/// e's count is zero: nothing routed by the old model is still being routed or executed.
/// No hold depends on a client calling finish(), so pipelined clients cannot stall a switch.
///
/// Every hold is counted on the stripe of the batch that entered, whichever thread releases
/// it, so no stripe's count is ever negative and a batch's holds sit on one stripe from its
/// enter() to its last release. drain() reads the stripes one after another, not at one
/// instant; with this rule a stripe read as zero had no batch of epoch e left (none can enter
/// e after the switch), so the sum is zero only when epoch e is empty. Had a group's release
/// been counted on the releasing thread's stripe, drain() could pair a batch's enter with its
/// group's release on a stripe read later and return while that batch was still routing with
/// the old model. Builds with DUET_CHECKS abort when a stripe's count would go negative.
class EpochGate {
 public:
  /// What a batch holds: its epoch and the stripe its holds are counted on.
  struct Ticket {
    std::uint64_t epoch = 0;
    unsigned stripe = 0;
  };
  /// Registers the caller in the current epoch and returns its ticket.
  Ticket enter();
  /// Adds one more hold on t's epoch, which the caller already holds through t.
  void hold(const Ticket& t) { stripes_[t.stripe].count[t.epoch & 1].fetch_add(1, std::memory_order_relaxed); }
  /// Releases one hold of t (from any thread).
  void leave(const Ticket& t);
  /// The current epoch (what populate checks).
  const std::atomic<std::uint64_t>& epoch() const { return epoch_; }
  /// Starts epoch e+1 (caller: the switch, serialized); returns the old epoch e.
  std::uint64_t advance() { return epoch_.fetch_add(1, std::memory_order_seq_cst); }
  /// Waits until no request of epoch e is in flight.
  void drain(std::uint64_t e) const { drain(e, [](unsigned) {}); }
  /// drain() that calls after_stripe(i) after reading stripe i: lets a test run other work at
  /// any point of the scan.
  template <class AfterStripe>
  void drain(std::uint64_t e, AfterStripe after_stripe) const;

 private:
  static constexpr unsigned kStripes = 64;
  struct alignas(64) Stripe {
    std::atomic<std::int64_t> count[2] = {0, 0};
  };
  static unsigned stripe();
  static void wait_a_little(unsigned spins);
  std::atomic<std::uint64_t> epoch_{0};
  Stripe stripes_[kStripes];
};

template <class AfterStripe>
void EpochGate::drain(std::uint64_t e, AfterStripe after_stripe) const {
  for (unsigned spins = 0;; ++spins) {
    std::int64_t sum = 0;
    for (unsigned i = 0; i < kStripes; ++i) {
      sum += stripes_[i].count[e & 1].load(std::memory_order_acquire);
      after_stripe(i);
    }
    if (sum == 0) return;
    wait_a_little(spins);
  }
}

}  // namespace duet::sched

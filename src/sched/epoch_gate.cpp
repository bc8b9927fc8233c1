#include "sched/epoch_gate.hpp"

#include <string>
#include <thread>

#include "cods/atomic.hpp"
#include "common/check.hpp"

namespace duet::sched {

unsigned EpochGate::stripe() {
  static std::atomic<unsigned> next{0};
  thread_local unsigned mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return mine;
}

EpochGate::Ticket EpochGate::enter() {
  const unsigned mine = stripe();
  Stripe& s = stripes_[mine];
  for (;;) {
    const std::uint64_t e = epoch_.load(std::memory_order_seq_cst);
    s.count[e & 1].fetch_add(1, std::memory_order_seq_cst);
    if (epoch_.load(std::memory_order_seq_cst) == e) return Ticket{e, mine};
    s.count[e & 1].fetch_sub(1, std::memory_order_release);
  }
}

void EpochGate::leave(const Ticket& t) {
  [[maybe_unused]] const std::int64_t before =
      stripes_[t.stripe].count[t.epoch & 1].fetch_sub(1, std::memory_order_release);
  DUET_CHECK(before > 0, "epoch gate: stripe " + std::to_string(t.stripe) + " of epoch " + std::to_string(t.epoch) +
                             " released more holds than it took");
}

void EpochGate::wait_a_little(unsigned spins) {
  if (spins < 64) cods::spin_pause();
  else std::this_thread::yield();
}

}  // namespace duet::sched

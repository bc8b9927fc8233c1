#include "mem/striped_counter.hpp"

namespace duet::mem {

void StripedCounter::add(std::int64_t d) {
  static std::atomic<unsigned> next{0};
  thread_local const unsigned mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
  stripes_[mine].v.fetch_add(d, std::memory_order_seq_cst);
}

std::int64_t StripedCounter::sum() const {
  std::int64_t t = 0;
  for (const Stripe& s : stripes_) t += s.v.load(std::memory_order_seq_cst);
  return t;
}

}  // namespace duet::mem

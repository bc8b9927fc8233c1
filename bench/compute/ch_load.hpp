// What the CH benchmark's modes share (ch_bench.cpp, ch_q3_sweep.cpp, ch_export.cpp): the clock
// and one freshly loaded database.
#pragma once

#include <chrono>
#include <memory>

#include "compute/ch.hpp"

namespace duet::bench {

/// Seconds on the steady clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Opens a txn keyspace with `config`, makes the CH workload of `scale` on it and loads it on
/// `load_threads` threads; *load_s is the load's wall time. Errors pass through (the load's
/// prefixed "load: "), with nothing usable in *space and *ch.
inline Status load_ch(const compute::ch::Scale& scale, const TxnConfig& config, unsigned load_threads,
                      std::shared_ptr<TxnSpace>* space, std::unique_ptr<compute::ch::Ch>* ch, double* load_s) {
  if (Status s = TxnSpace::open("ch", config, space); !s.ok()) return s;
  if (Status s = compute::ch::Ch::make(*space, scale, ch); !s.ok()) return s;
  const double l0 = now_s();
  if (Status s = (*ch)->load(load_threads); !s.ok()) return Status(s.code(), "load: " + s.message());
  *load_s = now_s() - l0;
  return Status::Ok();
}

}  // namespace duet::bench

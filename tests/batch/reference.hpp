// The serial reference for OranguTAN's checker: every block replayed one transaction at a time in
// block order, written from the profiles' definitions (Alg. 5 and Alg. 8) and sharing no code
// with the engine.
#pragma once

#include <cstdint>
#include <vector>

namespace duet::batch::test {

struct RefAccount {
  std::int64_t bal = 0, seq = 0, sent = 0, rec = 0, gas = 0;
};

enum class RefOutcome : std::uint8_t { kCommitted = 0, kGasOnly = 1, kAborted = 2 };

struct RefTransfer {
  std::uint32_t from, to;
  std::int64_t amount;
};

/// SmallCoin: if from.bal >= amount, move it; else abort.
inline RefOutcome ref_smallcoin(std::vector<RefAccount>& a, const RefTransfer& t) {
  if (a[t.from].bal < t.amount) return RefOutcome::kAborted;
  a[t.from].bal -= t.amount;
  a[t.to].bal += t.amount;
  return RefOutcome::kCommitted;
}

/// SmallCoin+: pay the sender's gas (else abort), then send if the rest covers the amount.
inline RefOutcome ref_smallcoin_plus(std::vector<RefAccount>& a, const RefTransfer& t) {
  RefAccount& from = a[t.from];
  if (from.bal < from.gas) return RefOutcome::kAborted;
  from.bal -= from.gas;
  from.seq += 1;
  if (from.bal < t.amount) return RefOutcome::kGasOnly;
  from.bal -= t.amount;
  from.sent += 1;
  a[t.to].bal += t.amount;
  a[t.to].rec += 1;
  return RefOutcome::kCommitted;
}

}  // namespace duet::batch::test

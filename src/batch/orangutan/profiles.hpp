// OranguTAN's account records, transfers and transaction profiles (dissertation §4.3-4.4).
//
// A profile is the one interface the engine runs a send-receive-money transaction through:
//   part1(accounts, tx) -> bool          withdrawal (Alg. 6 / 9): true when it succeeded; the
//                                        subtraction is applied even when it fails
//   part2(accounts, tx, aborted)         deposit (Alg. 7 / 10), after every Part I of the block
//   compensate(accounts, tx, aborted)    undoes part1 (and part2 unless aborted) (Alg. 11)
//   run(accounts, tx) -> Outcome         serial execution with buffered writes (Alg. 5 / 8):
//                                        reads, computes into locals, writes only on commit
//   access(tx) -> {sender, receiver}     the static read/write set
// Every member is safe to call concurrently on distinct or shared accounts (relaxed atomics);
// ordering between phases comes from the engine's barriers.
#pragma once

#include <atomic>
#include <cstdint>

namespace duet::batch::orangutan {

/// One account. `bal` is signed: a failed Part I still subtracts. SmallCoin reads only `bal`;
/// SmallCoin+ also counts sequence numbers and events, and charges the sender's gas_cost.
struct alignas(64) Account {
  std::atomic<std::int64_t> bal{0};
  std::atomic<std::int64_t> seq_num{0};
  std::atomic<std::int64_t> sent_events{0};
  std::atomic<std::int64_t> rec_events{0};
  std::int64_t gas_cost = 0;  ///< fixed at creation (>= 0)
  /// The SPEEDEX-style baseline's semaphore: units reserved on the sender in its first phase
  /// (0 between blocks). No other mode touches it.
  std::atomic<std::int64_t> reserved{0};
};

/// A plain copy of an account's fields (snapshots, buffered writes, the reference model).
struct AccountValue {
  std::int64_t bal = 0, seq_num = 0, sent_events = 0, rec_events = 0, gas_cost = 0;
  bool operator==(const AccountValue&) const = default;
};

inline AccountValue load(const Account& a) {
  return {a.bal.load(std::memory_order_relaxed), a.seq_num.load(std::memory_order_relaxed),
          a.sent_events.load(std::memory_order_relaxed), a.rec_events.load(std::memory_order_relaxed), a.gas_cost};
}
inline void store(Account& a, const AccountValue& v) {
  a.bal.store(v.bal, std::memory_order_relaxed);
  a.seq_num.store(v.seq_num, std::memory_order_relaxed);
  a.sent_events.store(v.sent_events, std::memory_order_relaxed);
  a.rec_events.store(v.rec_events, std::memory_order_relaxed);
}

/// A transfer whose accounts are resolved to record ids (indices into the account table).
struct Tx {
  std::uint32_t sender = 0;
  std::uint32_t receiver = 0;
  std::int64_t amt = 0;  ///< > 0
};

/// A transaction's final state. SmallCoin has kCommitted and kAborted; SmallCoin+ has all three
/// (kCommitted is its Committed-Send).
enum class Outcome : std::uint8_t {
  kCommitted = 0,  ///< SmallCoin: committed; SmallCoin+: Committed-Send
  kGasOnly = 1,    ///< SmallCoin+ only: Committed-Only-Gas-Cost
  kAborted = 2,    ///< insufficient funds
};
const char* outcome_name(Outcome o);

enum class ProfileKind : std::uint8_t { kSmallCoin = 0, kSmallCoinPlus = 1 };
const char* profile_name(ProfileKind p);

namespace detail {
constexpr auto kR = std::memory_order_relaxed;
}

/// SmallCoin (Alg. 5-7): commits iff sender.bal >= amt.
struct SmallCoin {
  static constexpr ProfileKind kKind = ProfileKind::kSmallCoin;
  static bool part1(Account* a, const Tx& t) { return a[t.sender].bal.fetch_sub(t.amt, detail::kR) - t.amt >= 0; }
  static void part2(Account* a, const Tx& t, bool aborted) {
    if (!aborted) a[t.receiver].bal.fetch_add(t.amt, detail::kR);
  }
  static void compensate(Account* a, const Tx& t, bool aborted) {
    a[t.sender].bal.fetch_add(t.amt, detail::kR);
    if (!aborted) a[t.receiver].bal.fetch_sub(t.amt, detail::kR);
  }
  static Outcome run(Account* a, const Tx& t) {
    const std::int64_t sb = a[t.sender].bal.load(detail::kR);
    if (sb < t.amt) return Outcome::kAborted;  // nothing written
    // Buffered: both new balances are computed first (the receiver's through the sender's
    // buffer when they are the same account), then written.
    const std::int64_t new_s = sb - t.amt;
    const std::int64_t new_r = (t.receiver == t.sender ? new_s : a[t.receiver].bal.load(detail::kR)) + t.amt;
    a[t.sender].bal.store(new_s, detail::kR);
    a[t.receiver].bal.store(new_r, detail::kR);
    return Outcome::kCommitted;
  }
};

/// SmallCoin+ (Alg. 8-11): gas from the sender; Abort, Committed-Only-Gas-Cost or Committed-Send.
/// Part I is one fetch-sub of gas+amount plus sent_events, so the fast path decides only
/// Committed-Send; anything else goes to the fallback, whose run() finds the true outcome.
struct SmallCoinPlus {
  static constexpr ProfileKind kKind = ProfileKind::kSmallCoinPlus;
  static bool part1(Account* a, const Tx& t) {
    Account& s = a[t.sender];
    const std::int64_t tot = s.gas_cost + t.amt;
    s.sent_events.fetch_add(1, detail::kR);
    return s.bal.fetch_sub(tot, detail::kR) - tot >= 0;
  }
  static void part2(Account* a, const Tx& t, bool aborted) {
    if (aborted) return;
    a[t.sender].seq_num.fetch_add(1, detail::kR);
    a[t.receiver].bal.fetch_add(t.amt, detail::kR);
    a[t.receiver].rec_events.fetch_add(1, detail::kR);
  }
  static void compensate(Account* a, const Tx& t, bool aborted) {
    Account& s = a[t.sender];
    s.bal.fetch_add(s.gas_cost + t.amt, detail::kR);
    s.sent_events.fetch_sub(1, detail::kR);
    if (aborted) return;
    s.seq_num.fetch_sub(1, detail::kR);
    a[t.receiver].bal.fetch_sub(t.amt, detail::kR);
    a[t.receiver].rec_events.fetch_sub(1, detail::kR);
  }
  static Outcome run(Account* a, const Tx& t) {
    AccountValue s = load(a[t.sender]);
    const std::int64_t gas = s.gas_cost;
    if (s.bal < gas) return Outcome::kAborted;  // nothing written
    s.bal -= gas;
    s.seq_num += 1;
    if (s.bal < t.amt) {
      store(a[t.sender], s);
      return Outcome::kGasOnly;
    }
    s.bal -= t.amt;
    s.sent_events += 1;
    if (t.receiver == t.sender) {
      s.bal += t.amt;
      s.rec_events += 1;
      store(a[t.sender], s);
    } else {
      AccountValue r = load(a[t.receiver]);
      r.bal += t.amt;
      r.rec_events += 1;
      store(a[t.sender], s);
      store(a[t.receiver], r);
    }
    return Outcome::kCommitted;
  }
};

}  // namespace duet::batch::orangutan

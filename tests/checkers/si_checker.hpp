// A checker for snapshot-isolation histories of a key-value store with range reads, for stores
// that expose each transaction's start and commit timestamps (the txn keyspace does).
//
// Recording. Each transaction attempt records its start timestamp, its events in program order
// (point reads with what they returned, range reads with their bounds, limit and the pairs
// returned, writes and deletes), and, when it committed, its commit timestamp. The initial
// state is a map read at a timestamp below every recorded start.
//
// What is checked, exactly (no search is needed once timestamps are known):
//  * every read of every attempt, committed or not, returned the state at its start timestamp
//    (the newest committed version with commit timestamp <= start), overlaid by the attempt's
//    own earlier writes and deletes: a point read its value or absence, a range read exactly the
//    first `limit` (0: all) present keys of [lo, hi) in key order with their values;
//  * first committer wins: no two committed attempts that wrote one key overlap in time (the
//    later committer began before the earlier one committed);
//  * the commit timestamps of committed attempts that wrote are unique and each is above its
//    attempt's start (a read-only attempt's may equal its start).
// Cost: O(events x log(keys) + range results + versions) plus a pass per range over the keys in
// it. Each violation is described; checking stops after `max_errors`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace duet::checkers {

/// One event of an attempt, in program order.
struct SiEvent {
  enum class Kind : std::uint8_t { kGet, kRange, kPut, kDel };
  Kind kind = Kind::kGet;
  std::string key;    ///< kGet, kPut, kDel; kRange: lo
  std::string hi;     ///< kRange: exclusive upper bound
  std::size_t limit = 0;  ///< kRange: at most this many pairs (0: all)
  bool found = false;     ///< kGet: the key was present
  std::string value;      ///< kGet: the value read; kPut: the value written
  std::vector<std::pair<std::string, std::string>> pairs;  ///< kRange: the pairs returned
};

/// One attempt of a transaction.
struct SiAttempt {
  std::uint64_t start = 0;
  bool committed = false;
  std::uint64_t commit = 0;  ///< committed: its timestamp
  std::vector<SiEvent> events;
};

/// The verdict: ok, or the violations found (each naming the attempt, by index, and the key).
struct SiResult {
  bool ok = true;
  std::vector<std::string> errors;
};

/// Checks `attempts` against SI starting from `initial` (the state below every start).
inline SiResult check_snapshot_isolation(const std::map<std::string, std::string>& initial,
                                         const std::vector<SiAttempt>& attempts, std::size_t max_errors = 10) {
  SiResult res;
  auto fail = [&](std::size_t a, const std::string& what) {
    res.ok = false;
    if (res.errors.size() < max_errors) res.errors.push_back("attempt " + std::to_string(a) + ": " + what);
  };
  // Versions per key, by commit timestamp (0: the initial state); nullopt is a deletion.
  using Versions = std::map<std::uint64_t, std::optional<std::string>>;
  std::map<std::string, Versions> versions;
  for (const auto& [k, v] : initial) versions[k][0] = v;
  std::set<std::uint64_t> commits;
  // Per key, its committed writers: (commit, start, attempt).
  std::map<std::string, std::vector<std::tuple<std::uint64_t, std::uint64_t, std::size_t>>> writers;
  for (std::size_t a = 0; a < attempts.size(); ++a) {
    const SiAttempt& t = attempts[a];
    if (!t.committed) continue;
    std::map<std::string, std::optional<std::string>> last;  // its final write per key
    for (const SiEvent& e : t.events) {
      if (e.kind == SiEvent::Kind::kPut) last[e.key] = e.value;
      if (e.kind == SiEvent::Kind::kDel) last[e.key] = std::nullopt;
    }
    if (last.empty()) continue;  // read-only: its "commit" is its start
    if (t.commit <= t.start) fail(a, "commit timestamp " + std::to_string(t.commit) + " not above its start");
    if (!commits.insert(t.commit).second) fail(a, "commit timestamp " + std::to_string(t.commit) + " given twice");
    for (auto& [k, v] : last) {
      versions[k][t.commit] = v;
      writers[k].emplace_back(t.commit, t.start, a);
    }
  }
  for (auto& [k, w] : writers) {
    std::sort(w.begin(), w.end());
    for (std::size_t i = 1; i < w.size(); ++i)
      if (std::get<1>(w[i]) < std::get<0>(w[i - 1]))
        fail(std::get<2>(w[i]), "wrote '" + k + "' and committed, but began at " + std::to_string(std::get<1>(w[i])) +
                                    " before attempt " + std::to_string(std::get<2>(w[i - 1])) +
                                    ", which also wrote it, committed at " + std::to_string(std::get<0>(w[i - 1])) +
                                    " (first committer wins)");
  }
  // The state of key k at timestamp ts.
  auto at = [&](const Versions& v, std::uint64_t ts) -> std::optional<std::string> {
    auto it = v.upper_bound(ts);
    if (it == v.begin()) return std::nullopt;
    return std::prev(it)->second;
  };
  auto show = [](const std::optional<std::string>& v) { return v ? "a value of " + std::to_string(v->size()) + " bytes" : std::string("absent"); };
  for (std::size_t a = 0; a < attempts.size() && res.errors.size() < max_errors; ++a) {
    const SiAttempt& t = attempts[a];
    std::map<std::string, std::optional<std::string>> own;
    auto state = [&](const std::string& k) -> std::optional<std::string> {
      if (auto o = own.find(k); o != own.end()) return o->second;
      auto v = versions.find(k);
      return v == versions.end() ? std::nullopt : at(v->second, t.start);
    };
    for (const SiEvent& e : t.events) {
      switch (e.kind) {
        case SiEvent::Kind::kPut: own[e.key] = e.value; break;
        case SiEvent::Kind::kDel: own[e.key] = std::nullopt; break;
        case SiEvent::Kind::kGet: {
          const std::optional<std::string> want = state(e.key);
          const std::optional<std::string> got = e.found ? std::optional<std::string>(e.value) : std::nullopt;
          if (want != got)
            fail(a, "read '" + e.key + "' as " + show(got) + " but its state at start " + std::to_string(t.start) +
                        " is " + show(want) + (want && got ? " with other bytes" : ""));
          break;
        }
        case SiEvent::Kind::kRange: {
          std::vector<std::pair<std::string, std::string>> want;
          std::set<std::string> keys;  // every key that could lie in the range
          for (auto it = versions.lower_bound(e.key); it != versions.end() && it->first < e.hi; ++it) keys.insert(it->first);
          for (auto it = own.lower_bound(e.key); it != own.end() && it->first < e.hi; ++it) keys.insert(it->first);
          for (const std::string& k : keys) {
            if (e.limit && want.size() >= e.limit) break;
            if (auto v = state(k)) want.emplace_back(k, *v);
          }
          if (want != e.pairs)
            fail(a, "range ['" + e.key + "', '" + e.hi + "') limit " + std::to_string(e.limit) + " returned " +
                        std::to_string(e.pairs.size()) + " pairs, but its state at start " + std::to_string(t.start) +
                        " has " + std::to_string(want.size()) + (want.size() == e.pairs.size() ? " (other keys or values)" : ""));
          break;
        }
      }
    }
  }
  return res;
}

}  // namespace duet::checkers

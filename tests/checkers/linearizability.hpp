// A linearizability checker for per-key register histories (map semantics).
//
// Each key of a map behaves as a register that is absent or holds a value. A history is the
// list of operations on one key, each with its invocation and response times (any clock that
// orders events: a shared counter works best) and its observed outcome. The checker decides
// whether some total order of the operations (a) respects real time, i.e. an operation that
// responded before another was invoked comes first, and (b) explains every outcome when the
// operations are replayed on a sequential register. This is the Wing-Gong search with the
// state cache of Lowe: exponential in the worst case, fast on histories whose PUTs write
// distinct values. Operations of one batch share the batch's interval, so the same checker
// decides "some serial order consistent with the batch".
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace duet::checkers {

enum class RegisterOpKind : std::uint8_t { kGet, kPut, kDelete };

struct RegisterOp {
  std::uint64_t invoke = 0;
  std::uint64_t response = 0;
  RegisterOpKind kind = RegisterOpKind::kGet;
  std::uint64_t arg = 0;    ///< value written by kPut
  bool found = false;       ///< outcome: the key was present (GET hit, or PUT/DELETE replaced a value)
  std::uint64_t out = 0;    ///< outcome: value read (GET) or previous value (PUT, DELETE) when found
};

/// A checker's verdict. A failed check is either a proof (no order of the operations explains
/// the outcomes) or undecided (the search ran out of its step budget first); negative controls
/// must require the proof, since a checker that gave up would pass them too.
struct CheckResult {
  bool linearizable = true;
  bool undecided = false;   ///< not linearizable only because the search budget ran out
  std::string explanation;  ///< for a failure: the history, for a reader to see why
  /// True when the search proved that no linearization exists.
  bool refuted() const { return !linearizable && !undecided; }
};

namespace detail {

struct State {
  bool present;
  std::uint64_t value;
};

/// Applies op to state; returns false when the op's recorded outcome contradicts the state.
inline bool step(const RegisterOp& op, State& s) {
  const bool found = s.present;
  if (op.found != found) return false;
  if (found && op.out != s.value) return false;
  switch (op.kind) {
    case RegisterOpKind::kGet: break;
    case RegisterOpKind::kPut: s = {true, op.arg}; break;
    case RegisterOpKind::kDelete: s = {false, 0}; break;
  }
  return true;
}

inline std::string describe(const std::vector<RegisterOp>& ops) {
  std::ostringstream o;
  for (const auto& op : ops) {
    o << "  [" << op.invoke << "," << op.response << "] "
      << (op.kind == RegisterOpKind::kGet ? "get" : op.kind == RegisterOpKind::kPut ? "put" : "del");
    if (op.kind == RegisterOpKind::kPut) o << "(" << op.arg << ")";
    o << " -> " << (op.found ? "found " + std::to_string(op.out) : std::string("absent")) << "\n";
  }
  return o.str();
}

}  // namespace detail

/// Decides whether `ops` on one key, starting from `initial` (absent when nullopt), is
/// linearizable. Gives up after `budget` search steps: then reports not linearizable with
/// `undecided` set, and says so in the explanation.
inline CheckResult check_register(std::vector<RegisterOp> ops, std::optional<std::uint64_t> initial = std::nullopt,
                                  std::uint64_t budget = 50'000'000) {
  std::sort(ops.begin(), ops.end(), [](const RegisterOp& a, const RegisterOp& b) { return a.invoke < b.invoke; });
  const std::size_t n = ops.size();
  const std::size_t words = (n + 63) / 64;
  std::vector<std::uint64_t> done(words, 0);
  // Cache of (done set, state) pairs already explored without success.
  struct Key {
    std::vector<std::uint64_t> done;
    bool present;
    std::uint64_t value;
    bool operator==(const Key& o) const { return present == o.present && value == o.value && done == o.done; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = k.value * 0x9e3779b97f4a7c15ull + k.present;
      for (auto w : k.done) h = (h ^ w) * 0x100000001b3ull;
      return h;
    }
  };
  std::unordered_set<Key, KeyHash> seen;
  std::uint64_t steps = 0;
  bool exhausted = false;

  // Iterative DFS: frames hold the state before choosing and the next candidate to try.
  struct Frame {
    detail::State state;
    std::size_t next;
    std::size_t chosen;
  };
  std::vector<Frame> stack;
  stack.push_back({{initial.has_value(), initial.value_or(0)}, 0, n});
  std::size_t completed = 0;
  auto is_done = [&](std::size_t i) { return (done[i / 64] >> (i % 64)) & 1; };
  auto read_only = [](const RegisterOp& op) {
    return op.kind == RegisterOpKind::kGet || (op.kind == RegisterOpKind::kDelete && !op.found);
  };
  while (!stack.empty()) {
    if (completed == n) return {};
    if (++steps > budget) {
      exhausted = true;
      break;
    }
    Frame& f = stack.back();
    // Candidates: undone ops invoked before the earliest response among undone ops.
    std::uint64_t min_resp = ~std::uint64_t(0);
    for (std::size_t i = 0; i < n; ++i)
      if (!is_done(i)) min_resp = std::min(min_resp, ops[i].response);
    // Linearizes op i next (from state s); on backtrack the frame resumes at `resume`.
    auto descend = [&](std::size_t i, const detail::State& s, std::size_t resume) {
      done[i / 64] |= 1ull << (i % 64);
      f.next = resume;
      f.chosen = i;
      stack.push_back({s, 0, n});  // f is not used after this
      ++completed;
    };
    bool advanced = false;
    // A read-only candidate (a GET, or a DELETE that found nothing) consistent with the current
    // state can be linearized now without loss: it leaves the state as it is and only removes a
    // constraint. Take it with no alternatives (resume at n), which keeps the search
    // near-linear on histories with many overlapping reads.
    for (std::size_t i = 0; f.next == 0 && i < n && ops[i].invoke <= min_resp; ++i) {
      detail::State s = f.state;
      if (is_done(i) || !read_only(ops[i]) || !detail::step(ops[i], s)) continue;
      descend(i, s, n);
      advanced = true;
      break;
    }
    for (std::size_t i = advanced ? n : f.next; !advanced && i < n && ops[i].invoke <= min_resp; ++i) {
      detail::State s = f.state;
      if (is_done(i) || !detail::step(ops[i], s)) continue;
      done[i / 64] |= 1ull << (i % 64);
      const bool fresh = seen.insert(Key{done, s.present, s.value}).second;
      done[i / 64] &= ~(1ull << (i % 64));
      if (!fresh) continue;
      descend(i, s, i + 1);
      advanced = true;
    }
    if (advanced) continue;
    stack.pop_back();
    if (stack.empty()) break;
    Frame& parent = stack.back();
    done[parent.chosen / 64] &= ~(1ull << (parent.chosen % 64));
    --completed;
  }
  if (completed == n && n > 0) return {};
  if (n == 0) return {};
  CheckResult r;
  r.linearizable = false;
  r.undecided = exhausted;
  r.explanation = std::string(exhausted ? "search budget exhausted; undecided history:\n"
                                        : "no linearization exists for:\n") +
                  detail::describe(ops);
  return r;
}

/// Checks every key of a history; returns the first failure, naming its key.
template <class Key>
CheckResult check_per_key(const std::unordered_map<Key, std::vector<RegisterOp>>& history) {
  for (const auto& [key, ops] : history) {
    CheckResult r = check_register(ops);
    if (!r.linearizable) {
      std::ostringstream o;
      o << "key " << key << ": " << r.explanation;
      r.explanation = o.str();
      return r;
    }
  }
  return {};
}

}  // namespace duet::checkers

// Linearizability of set histories (insert / remove / contains on keys), by reduction to the
// per-key register checker of linearizability.hpp: each key of a set is a register that is
// absent or holds the value 1. insert(k) is a PUT of 1 that "found" the key when it was
// already present (returned false); remove(k) is a DELETE that found it when it returned true;
// contains(k) is a GET. A set history is linearizable iff every key's register history is,
// since operations on different keys commute.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "checkers/linearizability.hpp"

namespace duet::checkers {

enum class SetOpKind : std::uint8_t { kInsert, kRemove, kContains };

/// One completed set operation: its interval and its boolean result (insert: inserted;
/// remove: removed; contains: found).
inline RegisterOp set_op(SetOpKind kind, std::uint64_t invoke, std::uint64_t response, bool result) {
  RegisterOp op;
  op.invoke = invoke;
  op.response = response;
  op.out = 1;
  op.arg = 1;
  switch (kind) {
    case SetOpKind::kInsert:
      op.kind = RegisterOpKind::kPut;
      op.found = !result;
      break;
    case SetOpKind::kRemove:
      op.kind = RegisterOpKind::kDelete;
      op.found = result;
      break;
    case SetOpKind::kContains:
      op.kind = RegisterOpKind::kGet;
      op.found = result;
      break;
  }
  return op;
}

/// Checks a set history given per key (keys absent at the start unless in `initial`).
inline CheckResult check_set(const std::unordered_map<std::uint64_t, std::vector<RegisterOp>>& history,
                             const std::vector<std::uint64_t>& initial = {}) {
  std::unordered_map<std::uint64_t, bool> present;
  for (auto k : initial) present[k] = true;
  for (const auto& [key, ops] : history) {
    const auto it = present.find(key);
    CheckResult r = check_register(ops, it != present.end() ? std::optional<std::uint64_t>(1) : std::nullopt);
    if (!r.linearizable) {
      r.explanation = "key " + std::to_string(key) + ": " + r.explanation;
      return r;
    }
  }
  return {};
}

}  // namespace duet::checkers

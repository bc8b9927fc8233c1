// A checker for histories of an ordered map with range queries (point updates, GETs, RANGEs).
//
// Recording. Every operation carries an invocation and a response stamp drawn from one global,
// monotonically increasing counter (an atomic fetch_add before the call and after it), and its
// observed outcome. A range query (one page of one) records its bounds and the pairs returned.
//
// Workload restriction that makes exact checking cheap: the updates of each key are sequential
// in real time (one writer thread per key: the keys are partitioned among writers). Then the
// states of a key form a known sequence s_0 (the initial state), s_1, ..., s_m, where s_j is
// the state after the j-th state-changing update u_j, and the state an operation reads at
// instant t can be s_j iff inv(u_j) < t < resp(u_{j+1}) (no lower bound for s_0, no upper one
// for s_m). Stamps are distinct integers and instants are real numbers strictly inside an
// operation's interval, so every feasible set is a union of open intervals.
//
// What is checked:
//  * updates: outcomes against the writer's own view (it is the only writer of the key, so it
//    knows the state before each of its updates exactly): INSERT succeeds iff absent, REMOVE
//    succeeds iff present and returns the value, UPSERT reports existed / previous correctly;
//  * GET: some state feasible during the GET equals what it returned;
//  * RANGE: the result is sorted, unique and within the bounds, and there is one instant t
//    inside the query's interval at which every key of [start, end] (keys absent from the
//    result count as observed absent) is in the observed state. Each key's feasible set is
//    computed and intersected across keys and with the query's interval;
//  * optionally (snapshot_order), pages that report a snapshot timestamp see, key by key,
//    states in snapshot order, and pages with equal snapshots see the same states.
// Limitation: apart from the snapshot-order option, each read is checked on its own, so two
// reads that each fit some instant but whose instants contradict each other's order are not
// detected (a full linearizability check of all reads together is NP-hard in general).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace duet::checkers {

enum class MapOpKind : std::uint8_t { kInsert, kRemove, kUpsert, kGet, kRange };

/// One recorded operation. Fields not used by an op's kind are ignored.
struct MapOp {
  MapOpKind kind = MapOpKind::kGet;
  std::uint32_t thread = 0;    ///< for explanations only
  std::uint64_t invoke = 0;    ///< stamp taken before the call
  std::uint64_t response = 0;  ///< stamp taken after it returned (> invoke)
  std::uint64_t key = 0;       ///< point ops: the key; RANGE: start (inclusive)
  std::uint64_t end = 0;       ///< RANGE: end (inclusive)
  std::uint64_t value = 0;     ///< INSERT/UPSERT: value written
  /// Outcome. INSERT: inserted; REMOVE: removed; UPSERT: the key existed; GET: found.
  bool ok = false;
  std::uint64_t out = 0;  ///< GET: value read; REMOVE / UPSERT: previous value (when ok)
  /// RANGE: the page stopped at its limit (more entries follow); it then covers only
  /// [start, last returned key].
  bool more = false;
  std::uint64_t snapshot = 0;  ///< RANGE: the snapshot timestamp the page reports (see options)
  std::vector<std::pair<std::uint64_t, std::uint64_t>> result;  ///< RANGE: pairs returned
};

struct RangeCheckOptions {
  /// Contents of the map before the first recorded operation.
  std::map<std::uint64_t, std::uint64_t> initial;
  /// Also require the per-key snapshot order described at the top of the file.
  bool snapshot_order = false;
};

struct RangeCheckResult {
  bool ok = true;
  std::string explanation;  ///< for a violation: the operation, the key, what was seen and possible
  std::uint64_t reads_checked = 0;      ///< GETs and RANGE pages
  std::uint64_t key_observations = 0;   ///< (read, key) pairs checked
};

namespace range_detail {

inline constexpr std::uint64_t kInf = std::numeric_limits<std::uint64_t>::max();

struct State {
  bool present = false;
  std::uint64_t value = 0;
  bool operator==(const State& o) const { return present == o.present && (!present || value == o.value); }
};

/// A key's timeline: states[0] is the initial state; states[j] (j >= 1) is installed by the
/// update with interval (inv[j], resp[j]). inv[0] = 0, resp[0] = 0 by convention.
struct Timeline {
  std::vector<State> states;
  std::vector<std::uint64_t> inv, resp;
  std::vector<std::size_t> op_index;  ///< the history index of update j (j >= 1)
  /// Window of state j: (lo, hi), open.
  std::uint64_t lo(std::size_t j) const { return j == 0 ? 0 : inv[j]; }
  std::uint64_t hi(std::size_t j) const { return j + 1 < states.size() ? resp[j + 1] : kInf; }
};

using Intervals = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  ///< disjoint, sorted, open

inline std::string state_str(const State& s) {
  return s.present ? "present=" + std::to_string(s.value) : std::string("absent");
}

inline std::string bound_str(std::uint64_t x) { return x == kInf ? std::string("inf") : std::to_string(x); }

inline std::string intervals_str(const Intervals& iv) {
  if (iv.empty()) return "{} (never)";
  std::ostringstream o;
  o << "{";
  for (std::size_t i = 0; i < iv.size(); ++i) {
    if (i) o << ", ";
    if (i == 8) {
      o << "... " << iv.size() - 8 << " more";
      break;
    }
    o << "(" << iv[i].first << "," << bound_str(iv[i].second) << ")";
  }
  o << "}";
  return o.str();
}

inline std::string op_str(const MapOp& op, std::size_t index) {
  std::ostringstream o;
  o << "op #" << index << " thread " << op.thread << " [" << op.invoke << "," << op.response << "] ";
  switch (op.kind) {
    case MapOpKind::kInsert:
      o << "insert(" << op.key << ", " << op.value << ") -> " << (op.ok ? "ok" : "exists");
      break;
    case MapOpKind::kRemove:
      o << "remove(" << op.key << ") -> " << (op.ok ? "ok, previous " + std::to_string(op.out) : "not found");
      break;
    case MapOpKind::kUpsert:
      o << "upsert(" << op.key << ", " << op.value << ") -> "
        << (op.ok ? "existed, previous " + std::to_string(op.out) : "was absent");
      break;
    case MapOpKind::kGet:
      o << "get(" << op.key << ") -> " << (op.ok ? "found " + std::to_string(op.out) : "not found");
      break;
    case MapOpKind::kRange: {
      o << "range(" << op.key << ", " << op.end << ") -> " << op.result.size() << " pairs";
      if (op.more) o << " (page cut at its limit)";
      if (op.snapshot) o << ", snapshot " << op.snapshot;
      const std::size_t show = std::min<std::size_t>(op.result.size(), 12);
      if (show) o << ":";
      for (std::size_t i = 0; i < show; ++i) o << " " << op.result[i].first << "=" << op.result[i].second;
      if (show < op.result.size()) o << " ...";
      break;
    }
  }
  return o.str();
}

/// The updates of a timeline around [a, b]: those not finished before a and not begun after b,
/// plus one on either side.
inline std::string nearby_updates(const Timeline& tl, std::uint64_t a, std::uint64_t b) {
  std::ostringstream o;
  o << "    initial state: " << state_str(tl.states[0]) << "\n";
  std::size_t first = 1;
  while (first < tl.states.size() && tl.resp[first] < a) ++first;
  if (first > 1) --first;
  std::size_t shown = 0;
  for (std::size_t j = first; j < tl.states.size(); ++j) {
    if (++shown > 16) {
      o << "    ...\n";
      break;
    }
    o << "    update " << j << " [" << tl.inv[j] << "," << tl.resp[j] << "] -> " << state_str(tl.states[j])
      << "; this state possible during (" << tl.lo(j) << "," << bound_str(tl.hi(j)) << ")\n";
    if (tl.inv[j] > b) break;
  }
  if (tl.states.size() == 1) o << "    (no updates)\n";
  return o.str();
}

/// Feasible instants, within (a, b), at which the key's state equals `seen`; also the indices
/// of the matching states (for the snapshot-order check).
inline Intervals feasible(const Timeline& tl, const State& seen, std::uint64_t a, std::uint64_t b,
                          std::vector<std::size_t>* matching = nullptr) {
  Intervals out;
  // First state whose window ends after a: hi(j) = resp[j+1] increases with j.
  std::size_t lo_j = 0, hi_j = tl.states.size() - 1;
  while (lo_j < hi_j) {
    const std::size_t mid = (lo_j + hi_j) / 2;
    if (tl.hi(mid) > a) hi_j = mid;
    else lo_j = mid + 1;
  }
  for (std::size_t j = lo_j; j < tl.states.size() && tl.lo(j) < b; ++j) {
    const std::uint64_t x = std::max(tl.lo(j), a), y = std::min(tl.hi(j), b);
    if (x >= y || !(tl.states[j] == seen)) continue;
    if (matching) matching->push_back(j);
    if (!out.empty() && x < out.back().second) out.back().second = std::max(out.back().second, y);
    else out.emplace_back(x, y);
  }
  return out;
}

inline Intervals intersect(const Intervals& p, const Intervals& q) {
  Intervals out;
  std::size_t i = 0, j = 0;
  while (i < p.size() && j < q.size()) {
    const std::uint64_t x = std::max(p[i].first, q[j].first), y = std::min(p[i].second, q[j].second);
    if (x < y) out.emplace_back(x, y);
    if (p[i].second < q[j].second) ++i;
    else ++j;
  }
  return out;
}

/// The observations of one read: for each key it covers, the state it saw.
struct Observation {
  std::uint64_t key;
  State seen;
};

}  // namespace range_detail

/// Checks a history (operations in any order) under the single-writer-per-key restriction
/// described above; returns the first violation found, explained. A key whose updates overlap
/// in time is reported as a malformed history, not checked.
inline RangeCheckResult check_range_history(const std::vector<MapOp>& ops, const RangeCheckOptions& opts = {}) {
  using namespace range_detail;
  RangeCheckResult res;
  auto fail = [&](std::string why) {
    res.ok = false;
    res.explanation = std::move(why);
    return res;
  };

  // ---- Timelines from the updates, checking each against the writer's view ----
  std::map<std::uint64_t, std::vector<std::size_t>> updates_of;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const MapOp& op = ops[i];
    if (op.response <= op.invoke) return fail("malformed history: response stamp not after invocation in " + op_str(op, i));
    if (op.kind == MapOpKind::kInsert || op.kind == MapOpKind::kRemove || op.kind == MapOpKind::kUpsert)
      updates_of[op.key].push_back(i);
  }
  std::map<std::uint64_t, Timeline> timelines;
  for (const auto& [key, value] : opts.initial) timelines[key].states.push_back({true, value});
  for (auto& [key, list] : updates_of) {
    std::sort(list.begin(), list.end(), [&](std::size_t x, std::size_t y) { return ops[x].invoke < ops[y].invoke; });
    Timeline& tl = timelines[key];
    if (tl.states.empty()) tl.states.push_back({false, 0});
    tl.inv.assign(1, 0);
    tl.resp.assign(1, 0);
    tl.op_index.assign(1, 0);
    for (std::size_t n = 0; n < list.size(); ++n) {
      const MapOp& op = ops[list[n]];
      if (n > 0 && ops[list[n - 1]].response > op.invoke)
        return fail("malformed history: updates of key " + std::to_string(key) +
                    " overlap in time (the checker needs one writer per key):\n  " +
                    op_str(ops[list[n - 1]], list[n - 1]) + "\n  " + op_str(op, list[n]));
      const State cur = tl.states.back();
      std::optional<State> next;
      bool valid = true;
      switch (op.kind) {
        case MapOpKind::kInsert:
          valid = op.ok == !cur.present;
          if (op.ok) next = State{true, op.value};
          break;
        case MapOpKind::kRemove:
          valid = op.ok == cur.present && (!op.ok || op.out == cur.value);
          if (op.ok) next = State{false, 0};
          break;
        case MapOpKind::kUpsert:
          valid = op.ok == cur.present && (!op.ok || op.out == cur.value);
          next = State{true, op.value};
          break;
        default: break;
      }
      if (!valid)
        return fail("update outcome contradicts its writer's own view of key " + std::to_string(key) + ":\n  " +
                    op_str(op, list[n]) + "\n  the key was " + state_str(cur) +
                    " before it (every earlier update of the key had responded before it began)");
      if (next) {
        tl.states.push_back(*next);
        tl.inv.push_back(op.invoke);
        tl.resp.push_back(op.response);
        tl.op_index.push_back(list[n]);
      }
    }
  }
  for (auto& [key, tl] : timelines)
    if (tl.inv.empty()) {  // initial entry, never updated
      tl.inv.assign(1, 0);
      tl.resp.assign(1, 0);
      tl.op_index.assign(1, 0);
    }
  const Timeline absent_forever{{State{false, 0}}, {0}, {0}, {0}};
  auto timeline_of = [&](std::uint64_t key) -> const Timeline& {
    auto it = timelines.find(key);
    return it == timelines.end() ? absent_forever : it->second;
  };

  // Why a value seen at a key can never have been there: for the explanation.
  auto provenance = [&](std::uint64_t key, std::uint64_t value) {
    for (const auto& s : timeline_of(key).states)
      if (s.present && s.value == value) return std::string();
    std::ostringstream o;
    o << "  value " << value << " was never the value of key " << key;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const MapOp& op = ops[i];
      if ((op.kind == MapOpKind::kInsert || op.kind == MapOpKind::kUpsert) && op.value == value) {
        if (op.key != key) o << "; it was written to key " << op.key << " by " << op_str(op, i);
        else o << "; it was offered by the failed " << op_str(op, i);
        return o.str() + "\n";
      }
    }
    for (const auto& [k, v] : opts.initial)
      if (v == value) return o.str() + "; it was key " + std::to_string(k) + "'s initial value\n";
    return o.str() + "; no operation wrote it\n";
  };

  // ---- Reads ----
  // Collects a read's observations; an error string for a malformed range result.
  auto observations = [&](std::size_t i, std::vector<Observation>* obs) -> std::string {
    const MapOp& op = ops[i];
    obs->clear();
    if (op.kind == MapOpKind::kGet) {
      obs->push_back({op.key, {op.ok, op.ok ? op.out : 0}});
      return {};
    }
    std::uint64_t end = op.end;
    if (op.more) {
      if (op.result.empty()) return "a page cut at its limit returned nothing";
      end = op.result.back().first;
    }
    for (std::size_t r = 0; r < op.result.size(); ++r) {
      const std::uint64_t k = op.result[r].first;
      if (k < op.key || k > op.end) return "key " + std::to_string(k) + " is outside the range";
      if (r > 0 && k <= op.result[r - 1].first)
        return "keys not strictly increasing at position " + std::to_string(r) + " (" +
               std::to_string(op.result[r - 1].first) + " then " + std::to_string(k) + ")";
    }
    // Merge the result with the known keys of [start, end]: every known key not returned was
    // observed absent.
    auto it = timelines.lower_bound(op.key);
    std::size_t r = 0;
    while (true) {
      const bool have_known = it != timelines.end() && it->first <= end;
      const bool have_result = r < op.result.size();
      if (!have_known && !have_result) break;
      if (have_result && (!have_known || op.result[r].first <= it->first)) {
        const bool same = have_known && op.result[r].first == it->first;
        obs->push_back({op.result[r].first, {true, op.result[r].second}});
        ++r;
        if (same) ++it;
      } else {
        obs->push_back({it->first, {false, 0}});
        ++it;
      }
    }
    return {};
  };

  std::vector<Observation> obs;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const MapOp& op = ops[i];
    if (op.kind != MapOpKind::kGet && op.kind != MapOpKind::kRange) continue;
    ++res.reads_checked;
    if (std::string bad = observations(i, &obs); !bad.empty())
      return fail("malformed range result: " + bad + " in\n  " + op_str(op, i));
    Intervals times{{op.invoke, op.response}};
    for (std::size_t o = 0; o < obs.size(); ++o) {
      ++res.key_observations;
      const Timeline& tl = timeline_of(obs[o].key);
      const Intervals mine = feasible(tl, obs[o].seen, op.invoke, op.response);
      Intervals next = intersect(times, mine);
      if (!next.empty()) {
        times = std::move(next);
        continue;
      }
      std::ostringstream e;
      e << (op.kind == MapOpKind::kGet ? "GET" : "RANGE") << " result fits no single instant of its interval:\n  "
        << op_str(op, i) << "\n  key " << obs[o].key << ": seen " << state_str(obs[o].seen);
      e << "\n";
      if (obs[o].seen.present) e << provenance(obs[o].key, obs[o].seen.value);
      e << "  this key's state could be the one seen during " << intervals_str(mine) << "\n"
        << "  updates of key " << obs[o].key << " around the query:\n"
        << nearby_updates(tl, op.invoke, op.response);
      if (!mine.empty()) {
        // Find an earlier key that alone excludes this one.
        for (std::size_t p = 0; p < o; ++p) {
          const Timeline& tp = timeline_of(obs[p].key);
          const Intervals theirs = feasible(tp, obs[p].seen, op.invoke, op.response);
          if (!intersect(theirs, mine).empty()) continue;
          e << "  but key " << obs[p].key << " was seen " << state_str(obs[p].seen)
            << ", possible only during " << intervals_str(theirs) << "; updates of key " << obs[p].key << ":\n"
            << nearby_updates(tp, op.invoke, op.response);
          break;
        }
        e << "  instants consistent with the keys before it: " << intervals_str(times) << "\n";
      }
      return fail(e.str());
    }
  }

  // ---- Snapshot order: pages in snapshot order see each key's states in order ----
  if (opts.snapshot_order) {
    std::vector<std::size_t> pages;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == MapOpKind::kRange) pages.push_back(i);
    std::stable_sort(pages.begin(), pages.end(),
                     [&](std::size_t x, std::size_t y) { return ops[x].snapshot < ops[y].snapshot; });
    // Per key: the least state index still possible, and the page that forced it.
    struct Floor {
      std::size_t state = 0;                   ///< least state index still possible
      std::size_t page = static_cast<std::size_t>(-1);  ///< the page that set it (none yet)
    };
    std::unordered_map<std::uint64_t, Floor> floor;
    std::vector<std::vector<Observation>> group_obs;
    std::vector<std::size_t> matching;
    for (std::size_t g = 0; g < pages.size();) {
      std::size_t h = g;
      while (h < pages.size() && ops[pages[h]].snapshot == ops[pages[g]].snapshot) ++h;
      // Equal snapshots must agree: per key, the least state index >= floor matching them all.
      std::map<std::uint64_t, std::vector<std::pair<std::size_t, State>>> by_key;  // key -> (page, seen)
      for (std::size_t x = g; x < h; ++x) {
        (void)observations(pages[x], &obs);
        for (const auto& ob : obs) by_key[ob.key].push_back({pages[x], ob.seen});
      }
      for (const auto& [key, seen_list] : by_key) {
        const Timeline& tl = timeline_of(key);
        Floor& fl = floor[key];
        std::size_t cur = fl.state;
        bool changed = true, impossible = false;
        while (changed && !impossible) {
          changed = false;
          for (const auto& [page, seen] : seen_list) {
            matching.clear();
            (void)feasible(tl, seen, ops[page].invoke, ops[page].response, &matching);
            auto m = std::lower_bound(matching.begin(), matching.end(), cur);
            if (m == matching.end()) {
              std::ostringstream e;
              e << "snapshot order violated at key " << key << ":\n  " << op_str(ops[page], page) << "\n  saw "
                << state_str(seen) << " (state index among " << [&] {
                     std::string s;
                     for (auto j : matching) s += " " + std::to_string(j);
                     return s.empty() ? std::string(" none") : s;
                   }()
                << "), but ";
              if (fl.page < ops.size())
                e << op_str(ops[fl.page], fl.page) << "\n  with an earlier snapshot had already seen state "
                  << fl.state << " (" << state_str(tl.states[fl.state]) << ")";
              else
                e << "pages with the same snapshot " << ops[page].snapshot << " saw another state";
              if (seen_list.size() > 1) {
                e << "\n  pages with snapshot " << ops[page].snapshot << " on this key:";
                for (const auto& [p2, s2] : seen_list) e << "\n    " << op_str(ops[p2], p2) << " saw " << state_str(s2);
              }
              e << "\n  updates of key " << key << ":\n" << nearby_updates(tl, ops[page].invoke, ops[page].response);
              return fail(e.str());
            }
            if (*m != cur) {
              cur = *m;
              changed = true;
            }
          }
        }
        fl = {cur, seen_list.front().first};
      }
      g = h;
    }
  }
  return res;
}

}  // namespace duet::checkers

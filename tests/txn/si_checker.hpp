// Snapshot-isolation checker for list-append histories (Elle-style), with real-time order.
//
// A history is a set of transactions over keys whose values are lists of unique elements.
// Each transaction records its operations: a read of a key (the list it saw) and an append of
// an element to a key (with the whole list it wrote: the list it read plus the element). Every
// element is appended once in the whole history, so the checker recovers each key's version
// order from the lists themselves (the final list of each key, read after the run, orders
// every committed append) without trusting the store's timestamps.
//
// Checks, in order (the first failure is reported):
//   - final lists hold unique elements, and every element in any list has a writer;
//   - G1a (aborted read): a committed read or the final state contains an aborted append;
//   - lost update: a committed append missing from its key's final list (a version dropped or
//     overwritten by a writer that did not see it);
//   - incompatible order: a committed read or write that is not a prefix of the final list;
//   - G1b (intermediate read): a read ending at an element its writer appended over;
//   - internal consistency: inside a transaction, a read that differs from what its earlier
//     read and own appends imply (non-repeatable or fractured read, lost own write);
//   - cycles (Cerone and Gotsman's characterisation of SI, strengthened with real-time order):
//     with D = ww ∪ wr ∪ rt and A = rw (anti-dependencies), the history is SI iff every cycle
//     of D ∪ A has two adjacent A edges. The checker searches a graph whose nodes are
//     (transaction, last edge was A) for a cycle, so write skew (two adjacent rw edges) is
//     allowed while G0, G1c, G-single (fractured reads, lost updates through reads) and
//     real-time violations are reported with the cycle's edges. Real-time edges go through a
//     chain of commit events, so their number is linear in the history.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace duet::sicheck {

using Elem = std::uint64_t;
using List = std::vector<Elem>;

struct Op {
  enum Kind : std::uint8_t { kRead, kAppend } kind;
  std::uint64_t key;
  List list;       ///< kRead: the list read; kAppend: the list written (read + elem)
  Elem elem = 0;   ///< kAppend: the element appended
};

struct TxnRec {
  std::uint64_t id = 0;
  std::uint64_t invoke = 0, complete = 0;  ///< stamps from one shared counter (begin; commit returned)
  bool committed = false;
  std::vector<Op> ops;
};

struct Result {
  bool ok = true;
  std::string anomaly;  ///< "G0", "G1a", "G1b", "G1c", "G-single", "real-time", "lost update",
                        ///< "incompatible order", "internal", "malformed"
  std::string detail;
};

namespace detail {

inline std::string show(const List& l) {
  std::string s = "[";
  for (std::size_t i = 0; i < l.size(); ++i) s += (i ? "," : "") + std::to_string(l[i]);
  return s + "]";
}

inline bool is_prefix(const List& p, const List& full) {
  return p.size() <= full.size() && std::equal(p.begin(), p.end(), full.begin());
}

}  // namespace detail

/// Checks `h` against the final list of every key (keys missing from `final` are empty).
inline Result check(const std::vector<TxnRec>& h, const std::map<std::uint64_t, List>& final) {
  using detail::show;
  auto fail = [](std::string a, std::string d) { return Result{false, std::move(a), std::move(d)}; };
  auto final_of = [&](std::uint64_t k) -> const List& {
    static const List empty;
    auto it = final.find(k);
    return it == final.end() ? empty : it->second;
  };
  // Writers of elements.
  struct W {
    std::size_t txn;
    std::uint64_t key;
  };
  std::unordered_map<Elem, W> writer;
  for (std::size_t i = 0; i < h.size(); ++i)
    for (const Op& o : h[i].ops)
      if (o.kind == Op::kAppend) {
        if (!writer.emplace(o.elem, W{i, o.key}).second)
          return fail("malformed", "element " + std::to_string(o.elem) + " appended twice");
      }
  // Positions in the final lists.
  std::unordered_map<Elem, std::size_t> pos;
  for (const auto& [k, l] : final)
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (!pos.emplace(l[i], i).second) return fail("malformed", "key " + std::to_string(k) + ": duplicate element in " + show(l));
      auto w = writer.find(l[i]);
      if (w == writer.end()) return fail("malformed", "key " + std::to_string(k) + ": element " + std::to_string(l[i]) + " has no writer");
      if (!h[w->second.txn].committed)
        return fail("G1a", "key " + std::to_string(k) + ": final list contains element " + std::to_string(l[i]) +
                               " of aborted txn " + std::to_string(h[w->second.txn].id));
    }
  // Per committed txn: last append per key (the version it installs).
  std::vector<std::map<std::uint64_t, Elem>> last_append(h.size());
  for (std::size_t i = 0; i < h.size(); ++i)
    for (const Op& o : h[i].ops)
      if (o.kind == Op::kAppend) last_append[i][o.key] = o.elem;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (!h[i].committed) continue;
    for (const Op& o : h[i].ops) {
      const List& f = final_of(o.key);
      if (o.kind == Op::kRead) {
        for (Elem e : o.list) {
          auto w = writer.find(e);
          if (w == writer.end()) return fail("malformed", "read of element " + std::to_string(e) + " with no writer");
          if (!h[w->second.txn].committed)
            return fail("G1a", "txn " + std::to_string(h[i].id) + " read element " + std::to_string(e) + " of aborted txn " +
                                   std::to_string(h[w->second.txn].id));
        }
      } else if (!pos.count(o.elem)) {
        return fail("lost update", "txn " + std::to_string(h[i].id) + " committed element " + std::to_string(o.elem) +
                                       " to key " + std::to_string(o.key) + ", missing from the final list " + show(f));
      }
      if (!detail::is_prefix(o.list, f))
        return fail("incompatible order", "txn " + std::to_string(h[i].id) + (o.kind == Op::kRead ? " read " : " wrote ") +
                                              show(o.list) + " of key " + std::to_string(o.key) +
                                              ", not a prefix of the final " + show(f));
      if (o.kind == Op::kRead && !o.list.empty()) {
        const Elem e = o.list.back();
        const std::size_t wt = writer.at(e).txn;
        if (wt != i && last_append[wt].at(o.key) != e)
          return fail("G1b", "txn " + std::to_string(h[i].id) + " read " + show(o.list) + " of key " + std::to_string(o.key) +
                                 ", ending at an intermediate append of txn " + std::to_string(h[wt].id));
      }
    }
  }
  // Internal consistency.
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (!h[i].committed) continue;
    std::map<std::uint64_t, List> expect;
    std::map<std::uint64_t, bool> wrote;
    for (const Op& o : h[i].ops) {
      auto it = expect.find(o.key);
      if (o.kind == Op::kRead) {
        if (it != expect.end() && it->second != o.list)
          return fail("internal", std::string(wrote[o.key] ? "own write lost" : "non-repeatable read") + ": txn " +
                                      std::to_string(h[i].id) + " read " + show(o.list) + " of key " + std::to_string(o.key) +
                                      " after seeing " + show(it->second));
        expect[o.key] = o.list;
      } else {
        if (it != expect.end()) {
          List want = it->second;
          want.push_back(o.elem);
          if (want != o.list)
            return fail("internal", "txn " + std::to_string(h[i].id) + " wrote " + show(o.list) + " of key " +
                                        std::to_string(o.key) + " after seeing " + show(it->second));
        }
        expect[o.key] = o.list;
        wrote[o.key] = true;
      }
    }
  }
  // Dependency graph over committed transactions (index = txn), plus commit-event nodes.
  std::vector<std::size_t> ids;  // committed txns
  std::vector<int> node_of(h.size(), -1);
  for (std::size_t i = 0; i < h.size(); ++i)
    if (h[i].committed) {
      node_of[i] = static_cast<int>(ids.size());
      ids.push_back(i);
    }
  const std::size_t n = ids.size();
  // Event chain: committed txns sorted by completion.
  std::vector<std::size_t> by_complete(n);
  for (std::size_t j = 0; j < n; ++j) by_complete[j] = j;
  std::sort(by_complete.begin(), by_complete.end(),
            [&](std::size_t a, std::size_t b) { return h[ids[a]].complete < h[ids[b]].complete; });
  const std::size_t total = n + n;  // txn nodes, then one event node per completion
  enum Label : char { kWW = 'w', kWR = 'r', kRW = 'a', kRT = 't' };
  struct Edge {
    std::uint32_t to;
    char label;
  };
  std::vector<std::vector<Edge>> adj(total);
  auto add = [&](std::size_t a, std::size_t b, char l) {
    if (a != b) adj[a].push_back({static_cast<std::uint32_t>(b), l});
  };
  // External reads (the first read of a key in a txn, before any own append to it), by key.
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::size_t, std::size_t>>> ext_reads;
  for (std::size_t i : ids) {
    std::map<std::uint64_t, bool> done;
    for (const Op& o : h[i].ops) {
      if (done.count(o.key)) continue;
      done[o.key] = true;
      if (o.kind == Op::kRead) ext_reads[o.key].push_back({i, o.list.size()});
    }
  }
  // Versions per key: the final list's positions where a writer's last append to it sits.
  for (const auto& [k, l] : final) {
    std::vector<std::size_t> vers;      // writer txn of version 1..m
    std::vector<std::size_t> ver_at(l.size() + 1, 0);  // list length -> version index (0 = initial)
    for (std::size_t p = 0; p < l.size(); ++p) {
      const std::size_t wt = writer.at(l[p]).txn;
      if (last_append[wt].at(k) == l[p]) vers.push_back(wt);
      ver_at[p + 1] = vers.size();
    }
    for (std::size_t v = 1; v < vers.size(); ++v) add(node_of[vers[v - 1]], node_of[vers[v]], kWW);
    // External reads of k (the first read of k in a txn before its own append).
    auto rd = ext_reads.find(k);
    if (rd == ext_reads.end()) continue;
    for (auto [i, len] : rd->second) {
      const std::size_t v = ver_at[len];
      if (v > 0) add(node_of[vers[v - 1]], node_of[i], kWR);
      if (v < vers.size()) add(node_of[i], node_of[vers[v]], kRW);
    }
  }
  // Reads of keys never written: every reader saw the initial (empty) version; no edges.
  // Real time: T -> event(complete T); event chain; event(last completion < invoke T') -> T'.
  std::vector<std::uint64_t> completes(n);
  for (std::size_t j = 0; j < n; ++j) {
    completes[j] = h[ids[by_complete[j]]].complete;
    add(by_complete[j], n + j, kRT);
    if (j + 1 < n) add(n + j, n + j + 1, kRT);
  }
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t inv = h[ids[j]].invoke;
    auto it = std::lower_bound(completes.begin(), completes.end(), inv);
    if (it != completes.begin()) add(n + static_cast<std::size_t>(it - completes.begin()) - 1, j, kRT);
  }
  // Product graph: state 0 (arrived by a D edge, or start) and 1 (arrived by an A edge).
  // D edges: (a,*) -> (b,0); A edges: (a,0) -> (b,1).
  const std::size_t pn = 2 * total;
  auto succ = [&](std::size_t u, std::vector<std::pair<std::size_t, char>>* out) {
    out->clear();
    const std::size_t a = u / 2, st = u % 2;
    for (const Edge& e : adj[a]) {
      if (e.label == kRW) {
        if (st == 0) out->push_back({2 * e.to + 1, e.label});
      } else {
        out->push_back({2 * e.to, e.label});
      }
    }
  };
  // Tarjan's SCC, iterative.
  std::vector<int> index(pn, -1), low(pn, 0), comp(pn, -1);
  std::vector<char> on(pn, 0);
  std::vector<std::size_t> stack;
  int counter = 0, comps = 0;
  struct Frame {
    std::size_t u;
    std::vector<std::pair<std::size_t, char>> s;
    std::size_t i;
  };
  std::vector<Frame> call;
  std::optional<std::size_t> cyc_node;
  for (std::size_t root = 0; root < pn && !cyc_node; ++root) {
    if (index[root] != -1) continue;
    call.push_back({root, {}, 0});
    succ(root, &call.back().s);
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on[root] = 1;
    while (!call.empty()) {
      Frame& f = call.back();
      if (f.i < f.s.size()) {
        const std::size_t v = f.s[f.i++].first;
        if (index[v] == -1) {
          index[v] = low[v] = counter++;
          stack.push_back(v);
          on[v] = 1;
          call.push_back({v, {}, 0});
          succ(v, &call.back().s);
        } else if (on[v]) {
          low[f.u] = std::min(low[f.u], index[v]);
        }
        continue;
      }
      const std::size_t u = f.u;
      if (low[u] == index[u]) {
        std::size_t size = 0, w;
        do {
          w = stack.back();
          stack.pop_back();
          on[w] = 0;
          comp[w] = comps;
          ++size;
        } while (w != u);
        if (size > 1) cyc_node = u;
        ++comps;
      }
      call.pop_back();
      if (!call.empty()) low[call.back().u] = std::min(low[call.back().u], low[u]);
    }
  }
  if (!cyc_node) return {};
  // Extract one cycle inside the component by BFS from the node back to itself.
  const int c = comp[*cyc_node];
  std::vector<std::pair<std::size_t, char>> prev(pn, {SIZE_MAX, 0});
  std::vector<std::size_t> q{*cyc_node};
  std::vector<std::pair<std::size_t, char>> s;
  std::optional<std::pair<std::size_t, char>> back;
  for (std::size_t qi = 0; qi < q.size() && !back; ++qi) {
    succ(q[qi], &s);
    for (auto [v, l] : s) {
      if (comp[v] != c) continue;
      if (v == *cyc_node) {
        back = {q[qi], l};
        break;
      }
      if (prev[v].first == SIZE_MAX) {
        prev[v] = {q[qi], l};
        q.push_back(v);
      }
    }
  }
  std::vector<char> labels;
  std::string path;
  std::size_t cur = back->first;
  labels.push_back(back->second);
  std::vector<std::size_t> nodes{cur};
  while (cur != *cyc_node) {
    labels.push_back(prev[cur].second);
    cur = prev[cur].first;
    nodes.push_back(cur);
  }
  std::reverse(nodes.begin(), nodes.end());
  std::reverse(labels.begin(), labels.end());
  int rw = 0, rt = 0, wr = 0;
  for (char l : labels) {
    rw += l == kRW;
    rt += l == kRT;
    wr += l == kWR;
  }
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    const std::size_t a = nodes[j] / 2;
    if (a < n) path += "T" + std::to_string(h[ids[a]].id);
    else path += "ev";
    const char l = labels[j];
    path += std::string(" -") + (l == kWW ? "ww" : l == kWR ? "wr" : l == kRW ? "rw" : "rt") + "-> ";
  }
  path += nodes[0] / 2 < n ? "T" + std::to_string(h[ids[nodes[0] / 2]].id) : std::string("ev");
  std::string anomaly = rt ? "real-time" : rw ? "G-single" : wr ? "G1c" : "G0";
  return fail(anomaly, "cycle without adjacent anti-dependencies: " + path);
}

}  // namespace duet::sicheck

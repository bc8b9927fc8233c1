// The CPU operators: every loop over rows is split across the engine's worker pool (contiguous
// pieces, one per worker, so per-piece outputs concatenate in row order). Results follow the
// orders compute.hpp defines, exactly as the GPU's do.
#if DUET_COMPUTE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include "compute/internal.hpp"
#include "compute/kernels_common.hpp"
#include "sched/thread_pool.hpp"

namespace duet::compute::detail::cpu {

namespace {

constexpr std::uint32_t kEmpty = 0xffffffffu;

unsigned pieces(const Cpu& c) { return c.pool ? c.pool->threads() : 1; }

template <class F>
void par(const Cpu& c, std::size_t n, std::size_t grain, F&& body) {
  if (!c.pool) {
    if (n) body(std::size_t{0}, n, 0u);
    return;
  }
  c.pool->parallel_for(n, grain, [&](std::size_t b, std::size_t e, unsigned w) { body(b, e, w); });
}

// Whether row r meets predicate p.
bool eval(const BoundPred& p, std::size_t r) {
  const Column& c = *p.col;
  switch (c.type()) {
    case Type::kInt64:
    case Type::kMoney: return pred_i64(c.i64()[r], p.cmp, p.i, p.i_hi);
    case Type::kFloat64: return pred_f64(c.f64()[r], p.cmp, p.f, p.f_hi);
    case Type::kFloat32: return pred_f64(static_cast<double>(c.f32()[r]), p.cmp, p.f, p.f_hi);
    case Type::kBytes: return pred_bytes(c.data() + r * c.width(), p.cmp, p.s.data(), p.s_hi.data(), c.width());
  }
  return false;
}

// Appends to *out the rows in [b, e) meeting every predicate, ascending, one predicate at a time.
void filter_range(std::span<const BoundPred> preds, std::size_t b, std::size_t e, Selection* out) {
  out->clear();
  if (preds.empty()) {
    for (std::size_t r = b; r < e; ++r) out->push_back(static_cast<std::uint32_t>(r));
    return;
  }
  const BoundPred& p0 = preds[0];
  if (is_integer(p0.col->type())) {  // the common case, as a tight loop
    const std::int64_t* v = p0.col->i64().data();
    for (std::size_t r = b; r < e; ++r)
      if (pred_i64(v[r], p0.cmp, p0.i, p0.i_hi)) out->push_back(static_cast<std::uint32_t>(r));
  } else {
    for (std::size_t r = b; r < e; ++r)
      if (eval(p0, r)) out->push_back(static_cast<std::uint32_t>(r));
  }
  for (std::size_t j = 1; j < preds.size(); ++j) {
    std::size_t k = 0;
    for (std::uint32_t r : *out)
      if (eval(preds[j], r)) (*out)[k++] = r;
    out->resize(k);
  }
}

// Concatenates per-piece vectors in piece order.
template <class T>
void concat(const Cpu& c, std::vector<std::vector<T>>& parts, std::vector<T>* out) {
  std::vector<std::size_t> at(parts.size() + 1, 0);
  for (std::size_t i = 0; i < parts.size(); ++i) at[i + 1] = at[i] + parts[i].size();
  out->resize(at.back());
  par(c, parts.size(), 0, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t i = b; i < e; ++i)
      if (!parts[i].empty()) std::memcpy(out->data() + at[i], parts[i].data(), parts[i].size() * sizeof(T));
  });
}

// ----- hash aggregation

struct AggTable {
  unsigned nk = 0, na = 0;
  std::vector<std::int64_t> keys, vals;  // [group * nk + j], [group * na + j]
  std::vector<std::uint64_t> hashes;     // per group
  std::vector<std::uint32_t> slots;      // group index or kEmpty
  std::uint64_t mask = 0;
  const BoundAgg* aggs = nullptr;

  void init(unsigned k, unsigned a, const BoundAgg* ag, std::size_t expect) {
    nk = k;
    na = a;
    aggs = ag;
    const std::uint64_t cap = table_capacity(std::max<std::size_t>(expect, 8));
    slots.assign(cap, kEmpty);
    mask = cap - 1;
  }
  std::size_t groups() const { return hashes.size(); }
  void grow() {
    const std::uint64_t cap = (mask + 1) * 2;
    slots.assign(cap, kEmpty);
    mask = cap - 1;
    for (std::uint32_t g = 0; g < groups(); ++g) {
      std::uint64_t s = hashes[g] & mask;
      while (slots[s] != kEmpty) s = (s + 1) & mask;
      slots[s] = g;
    }
  }
  std::uint32_t find_or_add(const std::int64_t* key, std::uint64_t h) {
    std::uint64_t s = h & mask;
    for (;;) {
      const std::uint32_t g = slots[s];
      if (g == kEmpty) break;
      if (hashes[g] == h && std::equal(key, key + nk, keys.data() + std::size_t{g} * nk)) return g;
      s = (s + 1) & mask;
    }
    const std::uint32_t g = static_cast<std::uint32_t>(groups());
    slots[s] = g;
    hashes.push_back(h);
    keys.insert(keys.end(), key, key + nk);
    for (unsigned j = 0; j < na; ++j) {
      switch (aggs[j].op) {
        case Agg::kMin: vals.push_back(std::numeric_limits<std::int64_t>::max()); break;
        case Agg::kMax: vals.push_back(std::numeric_limits<std::int64_t>::min()); break;
        default: vals.push_back(0);
      }
    }
    if (2 * groups() > mask + 1) grow();
    return g;
  }
  void update(std::uint32_t g, unsigned j, std::int64_t v) {
    std::int64_t& a = vals[std::size_t{g} * na + j];
    switch (aggs[j].op) {
      case Agg::kCount: a += 1; break;
      case Agg::kSum: a = apply_expr(Expr::kAdd, a, v); break;
      case Agg::kMin: a = std::min(a, v); break;
      case Agg::kMax: a = std::max(a, v); break;
    }
  }
  void merge(std::uint32_t g, const std::int64_t* other) {
    for (unsigned j = 0; j < na; ++j) {
      std::int64_t& a = vals[std::size_t{g} * na + j];
      switch (aggs[j].op) {
        case Agg::kCount:
        case Agg::kSum: a = apply_expr(Expr::kAdd, a, other[j]); break;
        case Agg::kMin: a = std::min(a, other[j]); break;
        case Agg::kMax: a = std::max(a, other[j]); break;
      }
    }
  }
};

std::uint64_t key_hash(std::span<const Column* const> keys, std::size_t r, std::int64_t* kbuf) {
  std::uint64_t h = 0x51ed270b27a3c5a1ULL;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    kbuf[j] = keys[j]->i64()[r];
    h = hash_step(h, kbuf[j]);
  }
  return h;
}

// ----- join build: a hash table of distinct keys per partition, rows grouped per key (CSR)

struct JoinPart {
  std::vector<std::int64_t> tkey;    // per slot
  std::vector<std::uint32_t> tgrp;   // slot -> group or kEmpty
  std::vector<std::uint32_t> start;  // group -> first position in rows (groups + 1)
  std::vector<std::uint32_t> rows;
  std::uint64_t mask = 0;
  // The group of key k (kEmpty when absent).
  std::uint32_t find(std::int64_t k, std::uint64_t h) const {
    std::uint64_t s = h & mask;
    for (;;) {
      const std::uint32_t g = tgrp[s];
      if (g == kEmpty || tkey[s] == k) return g;
      s = (s + 1) & mask;
    }
  }
};

unsigned partition_of(std::uint64_t h, unsigned parts) { return static_cast<unsigned>((h >> 40) % parts); }

}  // namespace

void filter(const Cpu& c, std::size_t rows, std::span<const BoundPred> preds, Selection* out) {
  std::vector<Selection> parts(pieces(c));
  par(c, rows, c.grain, [&](std::size_t b, std::size_t e, unsigned w) { filter_range(preds, b, e, &parts[w]); });
  concat(c, parts, out);
}

void gather(const Cpu& c, const Column& in, const Selection& sel, Column* out) {
  const std::size_t w = in.width();
  const char* src = in.data();
  char* dst = out->data();
  par(c, sel.size(), c.grain, [&](std::size_t b, std::size_t e, unsigned) {
    if (w == 8) {
      const auto* s8 = reinterpret_cast<const std::uint64_t*>(src);
      auto* d8 = reinterpret_cast<std::uint64_t*>(dst);
      for (std::size_t i = b; i < e; ++i) d8[i] = s8[sel[i]];
    } else {
      for (std::size_t i = b; i < e; ++i) std::memcpy(dst + i * w, src + std::size_t{sel[i]} * w, w);
    }
  });
}

void derive(const Cpu& c, Expr::Op op, const Column& a, const Column* b, std::int64_t k, Column* out) {
  const std::int64_t* x = a.i64().data();
  const std::int64_t* y = b ? b->i64().data() : nullptr;
  std::int64_t* z = out->i64().data();
  par(c, a.rows(), c.grain, [&](std::size_t lo, std::size_t hi, unsigned) {
    for (std::size_t i = lo; i < hi; ++i) z[i] = apply_expr(op, x[i], y ? y[i] : k);
  });
}

void aggregate(const Cpu& c, std::size_t rows, const Selection* sel, std::span<const Column* const> keys,
               std::span<const BoundAgg> aggs, AggOut* out) {
  const unsigned nk = static_cast<unsigned>(keys.size()), na = static_cast<unsigned>(aggs.size());
  const std::size_t n = sel ? sel->size() : rows;
  const unsigned P = pieces(c);
  // Phase 1: each worker aggregates its piece of the rows into its own table.
  std::vector<AggTable> local(P);
  par(c, n, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    AggTable& t = local[w];
    t.init(nk, na, aggs.data(), 1024);
    std::int64_t kbuf[4];
    for (std::size_t i = b; i < e; ++i) {
      const std::size_t r = sel ? (*sel)[i] : i;
      const std::uint32_t g = t.find_or_add(kbuf, key_hash(keys, r, kbuf));
      for (unsigned j = 0; j < na; ++j) t.update(g, j, aggs[j].col ? aggs[j].col->i64()[r] : 0);
    }
  });
  if (n == 0 && nk == 0) {  // one group over no rows: the identities
    local[0].init(nk, na, aggs.data(), 8);
    local[0].find_or_add(nullptr, 0x51ed270b27a3c5a1ULL);
  }
  // Phase 2: partition p of every local table merges into table p.
  std::vector<AggTable> merged(P);
  par(c, P, 0, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t p = b; p < e; ++p) {
      AggTable& m = merged[p];
      m.init(nk, na, aggs.data(), 1024);
      for (const AggTable& t : local) {
        for (std::uint32_t g = 0; g < t.groups(); ++g) {
          if (partition_of(t.hashes[g], P) != p) continue;
          const std::uint32_t mg = m.find_or_add(t.keys.data() + std::size_t{g} * nk, t.hashes[g]);
          m.merge(mg, t.vals.data() + std::size_t{g} * na);
        }
      }
    }
  });
  // Phase 3: every group, ordered by its key (signed, column by column); the first key's order
  // value rides beside the reference so most comparisons touch contiguous memory.
  struct Ref {
    std::uint64_t k0;
    std::uint32_t part, g;
  };
  std::vector<Ref> all;
  for (unsigned p = 0; p < P; ++p)
    for (std::uint32_t g = 0; g < merged[p].groups(); ++g)
      all.push_back({nk ? order_i64(merged[p].keys[std::size_t{g} * nk], false) : 0, p, g});
  std::sort(all.begin(), all.end(), [&](const Ref& x, const Ref& y) {
    if (x.k0 != y.k0) return x.k0 < y.k0;
    const std::int64_t* a = merged[x.part].keys.data() + std::size_t{x.g} * nk;
    const std::int64_t* b = merged[y.part].keys.data() + std::size_t{y.g} * nk;
    return std::lexicographical_compare(a, a + nk, b, b + nk);
  });
  out->keys.assign(nk, std::vector<std::int64_t>(all.size()));
  out->vals.assign(na, std::vector<std::int64_t>(all.size()));
  par(c, all.size(), c.grain, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t i = b; i < e; ++i) {
      const AggTable& m = merged[all[i].part];
      for (unsigned j = 0; j < nk; ++j) out->keys[j][i] = m.keys[std::size_t{all[i].g} * nk + j];
      for (unsigned j = 0; j < na; ++j) out->vals[j][i] = m.vals[std::size_t{all[i].g} * na + j];
    }
  });
}

void hash_join(const Cpu& c, const Column& l, const Column& r, JoinPairs* out) {
  const unsigned P = pieces(c);
  const std::int64_t* rk = r.i64().data();
  const std::int64_t* lk = l.i64().data();
  const std::size_t nr = r.rows(), nl = l.rows();
  // Build: the right rows are scattered by partition (a stable radix pass, so each partition's
  // rows stay ascending), then worker p builds partition p's table.
  const unsigned W = pieces(c);
  std::vector<std::uint32_t> hist(std::size_t{W} * P, 0), prow(nr);
  std::vector<std::uint32_t> pstart(P + 1, 0);
  par(c, nr, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    for (std::size_t i = b; i < e; ++i) ++hist[std::size_t{w} * P + partition_of(hash64(static_cast<std::uint64_t>(rk[i])), P)];
  });
  {
    std::uint32_t run = 0;
    for (unsigned p = 0; p < P; ++p) {
      pstart[p] = run;
      for (unsigned w = 0; w < W; ++w) {
        const std::uint32_t h = hist[std::size_t{w} * P + p];
        hist[std::size_t{w} * P + p] = run;
        run += h;
      }
    }
    pstart[P] = run;
  }
  par(c, nr, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    for (std::size_t i = b; i < e; ++i)
      prow[hist[std::size_t{w} * P + partition_of(hash64(static_cast<std::uint64_t>(rk[i])), P)]++] =
          static_cast<std::uint32_t>(i);
  });
  std::vector<JoinPart> parts(P);
  par(c, P, 0, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t p = b; p < e; ++p) {
      JoinPart& jp = parts[p];
      std::vector<std::uint32_t> group_of, count;
      const std::span<const std::uint32_t> mine(prow.data() + pstart[p], pstart[p + 1] - pstart[p]);
      const std::uint64_t cap = table_capacity(mine.size());
      jp.tkey.assign(cap, 0);
      jp.tgrp.assign(cap, kEmpty);
      jp.mask = cap - 1;
      group_of.resize(mine.size());
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const std::int64_t k = rk[mine[i]];
        std::uint64_t s = hash64(static_cast<std::uint64_t>(k)) & jp.mask;
        while (jp.tgrp[s] != kEmpty && jp.tkey[s] != k) s = (s + 1) & jp.mask;
        if (jp.tgrp[s] == kEmpty) {
          jp.tgrp[s] = static_cast<std::uint32_t>(count.size());
          jp.tkey[s] = k;
          count.push_back(0);
        }
        group_of[i] = jp.tgrp[s];
        ++count[jp.tgrp[s]];
      }
      jp.start.assign(count.size() + 1, 0);
      for (std::size_t g = 0; g < count.size(); ++g) jp.start[g + 1] = jp.start[g] + count[g];
      jp.rows.resize(mine.size());
      std::vector<std::uint32_t> fill(jp.start.begin(), jp.start.end() - 1);
      for (std::size_t i = 0; i < mine.size(); ++i) jp.rows[fill[group_of[i]]++] = mine[i];  // ascending rows
    }
  });
  // Probe: count each piece's matches, lay out, write in left-row order.
  std::vector<std::size_t> counts(W + 1, 0);
  std::vector<std::uint64_t> hit(nl);  // partition << 32 | group, or ~0
  par(c, nl, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    std::size_t m = 0;
    for (std::size_t i = b; i < e; ++i) {
      const std::uint64_t h = hash64(static_cast<std::uint64_t>(lk[i]));
      const unsigned p = partition_of(h, P);
      const std::uint32_t g = parts[p].find(lk[i], h);
      if (g == kEmpty) {
        hit[i] = ~0ULL;
      } else {
        hit[i] = (std::uint64_t{p} << 32) | g;
        m += parts[p].start[g + 1] - parts[p].start[g];
      }
    }
    counts[w + 1] = m;
  });
  // Pieces are contiguous and numbered in row order, so a prefix over them is the layout.
  for (unsigned w = 0; w < W; ++w) counts[w + 1] += counts[w];
  out->left.resize(counts[W]);
  out->right.resize(counts[W]);
  par(c, nl, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    std::size_t at = counts[w];
    for (std::size_t i = b; i < e; ++i) {
      if (hit[i] == ~0ULL) continue;
      const JoinPart& jp = parts[hit[i] >> 32];
      const std::uint32_t g = static_cast<std::uint32_t>(hit[i]);
      for (std::uint32_t j = jp.start[g]; j < jp.start[g + 1]; ++j, ++at) {
        out->left[at] = static_cast<std::uint32_t>(i);
        out->right[at] = jp.rows[j];
      }
    }
  });
}

bool sorted(const Cpu& c, const Column& k) {
  const std::int64_t* v = k.i64().data();
  std::vector<char> ok(pieces(c), 1);
  par(c, k.rows() > 0 ? k.rows() - 1 : 0, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    for (std::size_t i = b; i < e; ++i)
      if (v[i] > v[i + 1]) {
        ok[w] = 0;
        return;
      }
  });
  return std::all_of(ok.begin(), ok.end(), [](char x) { return x != 0; });
}

void index_join(const Cpu& c, const Column& l, const Column& r, JoinPairs* out) {
  const std::int64_t* lk = l.i64().data();
  const std::int64_t* rb = r.i64().data();
  const std::int64_t* re = rb + r.rows();
  const std::size_t nl = l.rows();
  const unsigned W = pieces(c);
  std::vector<std::uint32_t> lo(nl), hi(nl);
  std::vector<std::size_t> counts(W + 1, 0);
  par(c, nl, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    std::size_t m = 0;
    for (std::size_t i = b; i < e; ++i) {
      const auto range = std::equal_range(rb, re, lk[i]);
      lo[i] = static_cast<std::uint32_t>(range.first - rb);
      hi[i] = static_cast<std::uint32_t>(range.second - rb);
      m += hi[i] - lo[i];
    }
    counts[w + 1] = m;
  });
  for (unsigned w = 0; w < W; ++w) counts[w + 1] += counts[w];
  out->left.resize(counts[W]);
  out->right.resize(counts[W]);
  par(c, nl, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    std::size_t at = counts[w];
    for (std::size_t i = b; i < e; ++i)
      for (std::uint32_t j = lo[i]; j < hi[i]; ++j, ++at) {
        out->left[at] = static_cast<std::uint32_t>(i);
        out->right[at] = j;
      }
  });
}

void sort(const Cpu& c, std::size_t rows, std::span<const BoundSortKey> keys, std::size_t limit, Selection* out) {
  // Order-preserving unsigned keys, one array per sort key (the GPU sorts the same arrays).
  // Arrays left uninitialised (not zero-filled on this thread): the workers' first writes place
  // and fill them in parallel.
  std::vector<std::unique_ptr<std::uint64_t[]>> tk(keys.size());
  for (auto& t : tk) t.reset(new std::uint64_t[rows]);
  par(c, rows, c.grain, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t j = 0; j < keys.size(); ++j) {
      const Column& col = *keys[j].col;
      const bool d = keys[j].desc;
      std::uint64_t* t = tk[j].get();
      switch (col.type()) {
        case Type::kFloat64:
          for (std::size_t i = b; i < e; ++i) t[i] = order_f64(col.f64()[i], d);
          break;
        case Type::kFloat32:
          for (std::size_t i = b; i < e; ++i) t[i] = order_f32(col.f32()[i], d);
          break;
        default:
          for (std::size_t i = b; i < e; ++i) t[i] = order_i64(col.i64()[i], d);
      }
    }
  });
  // A total order: the keys, then the row number. Items carry the first key beside the row, so
  // the common single-key sort compares contiguous memory only.
  struct Item {
    std::uint64_t k;
    std::uint32_t r;
  };
  auto less = [&](const Item& a, const Item& b) {
    if (a.k != b.k) return a.k < b.k;
    for (std::size_t j = 1; j < tk.size(); ++j)
      if (tk[j][a.r] != tk[j][b.r]) return tk[j][a.r] < tk[j][b.r];
    return a.r < b.r;
  };
  const std::size_t want = limit == 0 ? rows : std::min(limit, rows);
  // Runs live in one buffer and merge into a second, swapping each round (no allocation per
  // round): run r occupies [at, at + span) and holds its first len items.
  struct Run {
    std::size_t at, span, len;
  };
  std::unique_ptr<Item[]> buf_mem(new Item[rows]), alt_mem(new Item[rows]);
  Item* buf = buf_mem.get();
  Item* alt = alt_mem.get();
  const unsigned W = pieces(c);
  std::vector<Run> runs(W, Run{0, 0, 0});
  par(c, rows, c.grain, [&](std::size_t b, std::size_t e, unsigned w) {
    for (std::size_t i = b; i < e; ++i) buf[i] = Item{tk[0][i], static_cast<std::uint32_t>(i)};
    Item* first = buf + b;
    Item* last = buf + e;
    std::size_t len = e - b;
    if (want < len) {
      std::partial_sort(first, first + want, last, less);
      len = want;
    } else {
      std::sort(first, last, less);
    }
    runs[w] = Run{b, e - b, len};
  });
  runs.erase(std::remove_if(runs.begin(), runs.end(), [](const Run& r) { return r.span == 0; }), runs.end());
  // Pairwise merges, in parallel within a round, until one run is left.
  while (runs.size() > 1) {
    std::vector<Run> next((runs.size() + 1) / 2);
    par(c, next.size(), 0, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i) {
        const Run& x = runs[2 * i];
        if (2 * i + 1 >= runs.size()) {
          std::copy(buf + x.at, buf + x.at + x.len, alt + x.at);
          next[i] = x;
          continue;
        }
        const Run& y = runs[2 * i + 1];
        const std::size_t len = std::min(x.len + y.len, want);
        const Item* xs = buf + x.at;
        const Item* ys = buf + y.at;
        Item* m = alt + x.at;
        std::size_t a = 0, bb = 0;
        for (std::size_t k = 0; k < len; ++k) {
          if (bb >= y.len || (a < x.len && less(xs[a], ys[bb]))) m[k] = xs[a++]; else m[k] = ys[bb++];
        }
        next[i] = Run{x.at, x.span + y.span, len};
      }
    });
    runs = std::move(next);
    std::swap(buf, alt);
  }
  const std::size_t n = runs.empty() ? 0 : runs[0].len;
  out->resize(n);
  if (n) {
    const Item* r = buf + runs[0].at;
    par(c, n, c.grain, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i) (*out)[i] = r[i].r;
    });
  }
}

Status infer(const Cpu& c, const Mlp& m, std::span<const float> x, std::size_t rows, std::vector<float>* y) {
  std::vector<float> a(x.begin(), x.end()), b;
  for (const Dense& d : m.layers) {
    b.resize(rows * d.out);
    // OpenBLAS for products it blocks well; thin (in < 64) or small ones (one transaction's
    // rows) as plain loops split over the workers, which skip OpenBLAS's thread start-up.
    // (Without OpenBLAS every product takes the plain loops.)
#if DUET_COMPUTE_OPENBLAS
    const bool plain = d.in < 64 || rows * d.in * d.out < (1u << 18);
#else
    const bool plain = true;
#endif
    if (plain) {
      par(c, rows, std::max<std::size_t>(1, (1u << 16) / (std::size_t{d.in} * d.out + 1)), [&](std::size_t lo, std::size_t hi, unsigned) {
        for (std::size_t i = lo; i < hi; ++i) {
          const float* xr = a.data() + i * d.in;
          for (std::uint32_t j = 0; j < d.out; ++j) {
            const float* wr = d.w.data() + std::size_t{j} * d.in;
            float acc = 0.0f;
            for (std::uint32_t k = 0; k < d.in; ++k) acc += xr[k] * wr[k];
            b[i * d.out + j] = acc;
          }
        }
      });
    } else {
#if DUET_COMPUTE_OPENBLAS
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(d.out),
                  static_cast<int>(d.in), 1.0f, a.data(), static_cast<int>(d.in), d.w.data(), static_cast<int>(d.in),
                  0.0f, b.data(), static_cast<int>(d.out));
#endif
    }
    par(c, rows, c.grain, [&](std::size_t lo, std::size_t hi, unsigned) {
      for (std::size_t i = lo; i < hi; ++i) {
        float* row = b.data() + i * d.out;
        for (std::uint32_t j = 0; j < d.out; ++j) {
          const float v = row[j] + d.b[j];
          row[j] = d.act == Dense::kRelu ? (v > 0.0f ? v : 0.0f) : d.act == Dense::kSigmoid ? 1.0f / (1.0f + std::exp(-v)) : v;
        }
      }
    });
    a.swap(b);
  }
  *y = std::move(a);
  return Status::Ok();
}

}  // namespace duet::compute::detail::cpu

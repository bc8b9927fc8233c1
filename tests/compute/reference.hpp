// Inputs and naive references for the compute suites: tables of four shapes (empty, uniform,
// skewed, duplicate-heavy) and each operator written the obvious way (maps, nested loops,
// std::stable_sort), independent of the engine's code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compute/compute.hpp"

namespace duet::compute::testing {

inline double test_scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  const double v = s ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}
inline std::size_t scaled(std::size_t n) { return std::max<std::size_t>(1, static_cast<std::size_t>(n * test_scale())); }

enum class Shape { kEmpty, kUniform, kSkewed, kDuplicates };
inline const char* shape_name(Shape s) {
  switch (s) {
    case Shape::kEmpty: return "empty";
    case Shape::kUniform: return "uniform";
    case Shape::kSkewed: return "skewed";
    case Shape::kDuplicates: return "duplicates";
  }
  return "?";
}

/// Keys of a shape: uniform over a wide range (extremes included), skewed (a cube law: most
/// rows on a few small keys, a long tail), or duplicate-heavy (four values, two of them the
/// int64 extremes).
inline std::vector<std::int64_t> gen_keys(Shape s, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::int64_t> v(s == Shape::kEmpty ? 0 : n);
  std::uniform_real_distribution<double> u(0, 1);
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (s) {
      case Shape::kUniform:
        v[i] = static_cast<std::int64_t>(rng() % 2000001) - 1000000;
        if (rng() % 997 == 0) v[i] = (rng() & 1) ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
        break;
      case Shape::kSkewed: {
        const double x = u(rng);
        v[i] = static_cast<std::int64_t>(x * x * x * x * 5000);
        break;
      }
      case Shape::kDuplicates: {
        static const std::int64_t vals[4] = {7, -7, std::numeric_limits<std::int64_t>::max(),
                                             std::numeric_limits<std::int64_t>::min()};
        v[i] = vals[rng() % 4];
        break;
      }
      case Shape::kEmpty: break;
    }
  }
  return v;
}

/// A table: k1 (keys of the shape), k2 (0..3), price (money, cents, some huge), qty (1..50),
/// f (float64 with -0 and repeats), g (float32), tag (bytes of width 5).
inline Table gen_table(Shape s, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<std::int64_t> k1 = gen_keys(s, n, rng);
  const std::size_t rows = k1.size();
  std::vector<std::int64_t> k2(rows), price(rows), qty(rows);
  std::vector<double> f(rows);
  std::vector<float> g(rows);
  std::vector<std::string> tag(rows);
  static const char* tags[] = {"AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "", "AIRX"};
  for (std::size_t i = 0; i < rows; ++i) {
    k2[i] = static_cast<std::int64_t>(rng() % 4);
    price[i] = (rng() % 50 == 0) ? static_cast<std::int64_t>(rng()) : static_cast<std::int64_t>(rng() % 100000);
    qty[i] = static_cast<std::int64_t>(rng() % 50 + 1);
    f[i] = (rng() % 10 == 0) ? -0.0 : (static_cast<double>(rng() % 20001) - 10000.0) / 100.0;
    g[i] = static_cast<float>(static_cast<double>(rng() % 1001) / 10.0);
    tag[i] = tags[rng() % 7];
  }
  Table t;
  (void)t.add("k1", Column::of_int64(k1));
  (void)t.add("k2", Column::of_int64(k2));
  (void)t.add("price", Column::of_int64(price, Type::kMoney));
  (void)t.add("qty", Column::of_int64(qty));
  (void)t.add("f", Column::of_float64(f));
  (void)t.add("g", Column::of_float32(g));
  (void)t.add("tag", Column::of_bytes(tag, 5));
  return t;
}

// ----- references

inline bool ref_cmp_i(std::int64_t v, Cmp c, std::int64_t a, std::int64_t b) {
  if (c == Cmp::kLt) return v < a;
  if (c == Cmp::kLe) return v <= a;
  if (c == Cmp::kEq) return v == a;
  if (c == Cmp::kNe) return v != a;
  if (c == Cmp::kGe) return v >= a;
  if (c == Cmp::kGt) return v > a;
  return v >= a && v <= b;
}
inline bool ref_cmp_f(double v, Cmp c, double a, double b) {
  if (c == Cmp::kLt) return v < a;
  if (c == Cmp::kLe) return v <= a;
  if (c == Cmp::kEq) return v == a;
  if (c == Cmp::kNe) return !(v == a);
  if (c == Cmp::kGe) return v >= a;
  if (c == Cmp::kGt) return v > a;
  return v >= a && v <= b;
}
inline bool ref_cmp_s(const std::string& v, Cmp c, const std::string& a, const std::string& b) {
  if (c == Cmp::kLt) return v < a;
  if (c == Cmp::kLe) return v <= a;
  if (c == Cmp::kEq) return v == a;
  if (c == Cmp::kNe) return v != a;
  if (c == Cmp::kGe) return v >= a;
  if (c == Cmp::kGt) return v > a;
  return v >= a && v <= b;
}

inline Selection ref_filter(const Table& t, const std::vector<Predicate>& preds) {
  Selection out;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    bool ok = true;
    for (const Predicate& p : preds) {
      const Column& c = *t.get(p.column);
      if (is_integer(c.type())) ok = ok && ref_cmp_i(c.i64()[r], p.cmp, p.i, p.i_hi);
      else if (c.type() == Type::kFloat64) ok = ok && ref_cmp_f(c.f64()[r], p.cmp, p.f, p.f_hi);
      else if (c.type() == Type::kFloat32) ok = ok && ref_cmp_f(c.f32()[r], p.cmp, p.f, p.f_hi);
      else {
        std::string a = p.s, b = p.s_hi;
        a.resize(c.width(), '\0');
        b.resize(c.width(), '\0');
        ok = ok && ref_cmp_s(std::string(c.bytes_at(r)), p.cmp, a, b);
      }
    }
    if (ok) out.push_back(static_cast<std::uint32_t>(r));
  }
  return out;
}

/// Group key -> aggregate values, in key order (std::map's order on vectors is lexicographic).
inline std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> ref_aggregate(const Table& t, const Selection* sel,
                                                                                    const std::vector<std::string>& keys,
                                                                                    const std::vector<Agg>& aggs) {
  std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> m;
  const std::size_t n = sel ? sel->size() : t.rows();
  auto fresh = [&] {
    std::vector<std::int64_t> v;
    for (const Agg& a : aggs)
      v.push_back(a.op == Agg::kMin ? std::numeric_limits<std::int64_t>::max()
                  : a.op == Agg::kMax ? std::numeric_limits<std::int64_t>::min()
                                      : 0);
    return v;
  };
  if (keys.empty()) m[{}] = fresh();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t r = sel ? (*sel)[i] : i;
    std::vector<std::int64_t> k;
    for (const std::string& c : keys) k.push_back(t.get(c)->i64()[r]);
    auto it = m.find(k);
    if (it == m.end()) it = m.emplace(k, fresh()).first;
    for (std::size_t j = 0; j < aggs.size(); ++j) {
      std::int64_t& a = it->second[j];
      const std::int64_t v = aggs[j].op == Agg::kCount ? 0 : t.get(aggs[j].column)->i64()[r];
      switch (aggs[j].op) {
        case Agg::kCount: ++a; break;
        case Agg::kSum: a = static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(v)); break;
        case Agg::kMin: a = std::min(a, v); break;
        case Agg::kMax: a = std::max(a, v); break;
      }
    }
  }
  return m;
}

inline JoinPairs ref_join(const Column& l, const Column& r) {
  std::map<std::int64_t, std::vector<std::uint32_t>> idx;
  for (std::size_t i = 0; i < r.rows(); ++i) idx[r.i64()[i]].push_back(static_cast<std::uint32_t>(i));
  JoinPairs p;
  for (std::size_t i = 0; i < l.rows(); ++i) {
    auto it = idx.find(l.i64()[i]);
    if (it == idx.end()) continue;
    for (std::uint32_t j : it->second) {
      p.left.push_back(static_cast<std::uint32_t>(i));
      p.right.push_back(j);
    }
  }
  return p;
}

/// Stable sort by the keys (floats by <, so inputs without NaN); the first `limit` rows.
inline Selection ref_sort(const Table& t, const std::vector<SortKey>& keys, std::size_t limit) {
  Selection s(t.rows());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint32_t>(i);
  auto val = [&](const Column& c, std::uint32_t r) -> long double {
    if (c.type() == Type::kFloat64) return c.f64()[r];
    if (c.type() == Type::kFloat32) return c.f32()[r];
    return static_cast<long double>(c.i64()[r]);
  };
  std::stable_sort(s.begin(), s.end(), [&](std::uint32_t a, std::uint32_t b) {
    for (const SortKey& k : keys) {
      const Column& c = *t.get(k.column);
      if (is_integer(c.type())) {
        const std::int64_t x = c.i64()[a], y = c.i64()[b];
        if (x != y) return k.descending ? x > y : x < y;
        continue;
      }
      long double x = val(c, a), y = val(c, b);
      // -0 sorts before +0 (the documented total order).
      if (x == y && std::signbit(x) != std::signbit(y)) return k.descending ? !std::signbit(x) : std::signbit(x);
      if (x != y) return k.descending ? x > y : x < y;
    }
    return false;
  });
  if (limit && limit < s.size()) s.resize(limit);
  return s;
}

/// A random MLP with weights in [-1/sqrt(in), 1/sqrt(in)].
inline Mlp gen_mlp(std::vector<std::uint32_t> widths, std::uint64_t seed, Dense::Act last = Dense::kSigmoid) {
  std::mt19937_64 rng(seed);
  Mlp m;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    Dense d;
    d.in = widths[i];
    d.out = widths[i + 1];
    d.act = i + 2 == widths.size() ? last : Dense::kRelu;
    const float sc = 1.0f / std::sqrt(static_cast<float>(d.in));
    std::uniform_real_distribution<float> u(-sc, sc);
    for (std::size_t j = 0; j < std::size_t{d.in} * d.out; ++j) d.w.push_back(u(rng));
    for (std::size_t j = 0; j < d.out; ++j) d.b.push_back(u(rng));
    m.layers.push_back(std::move(d));
  }
  return m;
}

inline std::vector<float> ref_mlp(const Mlp& m, const std::vector<float>& x, std::size_t rows) {
  std::vector<double> a(x.begin(), x.end());
  for (const Dense& d : m.layers) {
    std::vector<double> b(rows * d.out);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::uint32_t j = 0; j < d.out; ++j) {
        double v = d.b[j];
        for (std::uint32_t k = 0; k < d.in; ++k) v += a[i * d.in + k] * static_cast<double>(d.w[std::size_t{j} * d.in + k]);
        b[i * d.out + j] = d.act == Dense::kRelu ? std::max(v, 0.0) : d.act == Dense::kSigmoid ? 1.0 / (1.0 + std::exp(-v)) : v;
      }
    a.swap(b);
  }
  return std::vector<float>(a.begin(), a.end());
}

inline bool columns_equal(const Column& a, const Column& b) {
  return a.type() == b.type() && a.width() == b.width() && a.rows() == b.rows() &&
         (a.rows() == 0 || std::memcmp(a.data(), b.data(), a.rows() * a.width()) == 0);
}
inline bool tables_equal(const Table& a, const Table& b) {
  if (a.width() != b.width() || a.rows() != b.rows()) return false;
  for (std::size_t i = 0; i < a.width(); ++i)
    if (a.name(i) != b.name(i) || !columns_equal(a.column(i), b.column(i))) return false;
  return true;
}

/// The predicate sets every filter test runs.
inline std::vector<std::vector<Predicate>> predicate_sets() {
  std::vector<std::vector<Predicate>> v;
  auto P = [](std::string c, Cmp cmp) {
    Predicate p;
    p.column = std::move(c);
    p.cmp = cmp;
    return p;
  };
  v.push_back({});
  { auto p = P("k1", Cmp::kBetween); p.i = -1000; p.i_hi = 500000; v.push_back({p}); }
  { auto p = P("k1", Cmp::kEq); p.i = 7; v.push_back({p}); }
  { auto p = P("k1", Cmp::kNe); p.i = 0; auto q = P("k2", Cmp::kLt); q.i = 2; v.push_back({p, q}); }
  { auto p = P("price", Cmp::kGe); p.i = 50000; auto q = P("f", Cmp::kLt); q.f = 0.0; v.push_back({p, q}); }
  { auto p = P("f", Cmp::kNe); p.f = -0.0; v.push_back({p}); }
  { auto p = P("g", Cmp::kBetween); p.f = 10; p.f_hi = 60.5; v.push_back({p}); }
  { auto p = P("tag", Cmp::kEq); p.s = "AIR"; v.push_back({p}); }
  { auto p = P("tag", Cmp::kBetween); p.s = "AIR"; p.s_hi = "RAIL"; auto q = P("qty", Cmp::kGt); q.i = 25; v.push_back({p, q}); }
  { auto p = P("k1", Cmp::kLe); p.i = std::numeric_limits<std::int64_t>::min(); v.push_back({p}); }
  return v;
}

}  // namespace duet::compute::testing

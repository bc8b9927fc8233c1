// TPC-C NP (NewOrder and Payment, 50/50) for Epic: tables, procedures and a generator whose
// reconnaissance step assigns each NewOrder its order id from a per-district counter (the
// identification phase), so every key, inserts included, is known before the epoch runs.
// Customers are chosen by id. 1% of NewOrders name an unused item and abort before writing
// (reconnaissance does not advance the counter for them). 1% of order lines come from a remote
// warehouse and 15% of payments pay a remote customer, when there is more than one warehouse.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

enum TpccTable : std::uint32_t { kWarehouse, kDistrict, kCustomer, kItem, kStock, kOrder, kNewOrder, kOrderLine, kHistory };

inline constexpr std::uint32_t kItems = 100000, kCustomersPerDistrict = 3000, kFirstOrderId = 3001;

/// Tables for `w` warehouses with room for `orders` new orders and `payments` history rows.
inline std::vector<TableSpec> tpcc_tables(std::uint32_t w, std::uint32_t orders, std::uint32_t payments) {
  return {{"warehouse", 2, w, false},                  // ytd, tax
          {"district", 3, w * 10, false},              // next_o_id, ytd, tax
          {"customer", 4, w * 10 * kCustomersPerDistrict, false},  // balance, ytd_payment, payment_cnt, discount
          {"item", 2, kItems, false},                  // price, data
          {"stock", 4, w * kItems, false},             // quantity, ytd, order_cnt, remote_cnt
          {"order", 3, orders, true},                  // c_id, ol_cnt, all_local
          {"new_order", 1, orders, true},
          {"order_line", 4, orders * 15, true},        // i_id, supply_w, quantity, amount
          {"history", 3, payments, true}};             // customer, amount, district
}
inline std::uint64_t district_key(std::uint32_t w, std::uint32_t d) { return w * 10ull + d; }
inline std::uint64_t customer_key(std::uint32_t w, std::uint32_t d, std::uint32_t c) {
  return district_key(w, d) * kCustomersPerDistrict + c;
}
inline std::uint64_t order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o) { return (district_key(w, d) << 32) | o; }
inline std::uint64_t order_line_key(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t l) {
  return (order_key(w, d, o) << 4) | l;
}

struct TpccProcs {
  enum : std::uint32_t { kNewOrderProc = 0, kPaymentProc = 1 };
  static bool known(std::uint32_t p) { return p < 2; }

  // NewOrder. Reads: warehouse, district, customer, items[n], stocks[n]. Writes: district,
  // stocks[n], order, new_order, order_lines[n]. Args: n, o_id, remote flag, then per line
  // quantity and supply warehouse.
  template <class Ctx>
  DUET_HD static void new_order(Ctx& c) {
    const std::uint32_t n = c.arg(0), o_id = c.arg(1);
    const std::uint32_t* wh = c.read(0);
    const std::uint32_t* di = c.read(1);
    const std::uint32_t* cu = c.read(2);
    std::uint32_t total = 0, price[15];
    if (n > 15) return c.abort(3);
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t* it = c.read(3 + l);
      if (!it) return c.abort(1);  // unused item: the 1% rollback
      price[l] = it[0];
      total += it[0] * c.arg(3 + 2 * l);
    }
    if (!wh || !di || !cu) return c.abort(2);
    if (di[0] != o_id) return c.rerun();  // reconnaissance predicted another order id
    const std::uint32_t* st[15] = {};
    for (std::uint32_t l = 0; l < n; ++l) st[l] = c.read(3 + n + l);
    const std::uint32_t amount = total * (100 - cu[3]) / 100 * (100 + wh[1] + di[2]) / 100;
    c.write(0, [di](std::uint32_t w) { return w == 0 ? di[0] + 1 : di[w]; });
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t* s = st[l];
      const std::uint32_t q = c.arg(3 + 2 * l), remote = c.arg(4 + 2 * l) != c.arg(2);
      c.write(1 + l, [s, q, remote](std::uint32_t w) {
        if (w == 0) return s[0] >= q + 10 ? s[0] - q : s[0] - q + 91;
        if (w == 1) return s[1] + q;
        if (w == 2) return s[2] + 1;
        return s[3] + remote;
      });
    }
    const std::uint32_t cid = c.arg(2);
    c.write(1 + n, [cid, n](std::uint32_t w) { return w == 0 ? cid : w == 1 ? n : 1u; });
    c.write(2 + n, [](std::uint32_t) { return 1u; });
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t q = c.arg(3 + 2 * l), sw = c.arg(4 + 2 * l);
      const std::uint32_t p = price[l];
      c.write(3 + n + l, [l, sw, q, p](std::uint32_t w) { return w == 0 ? l : w == 1 ? sw : w == 2 ? q : q * p; });
    }
    c.out(1, amount);
    c.out(2, o_id);
  }
  // Payment. Reads and writes warehouse, district, customer; inserts a history row. Arg: amount.
  template <class Ctx>
  DUET_HD static void payment(Ctx& c) {
    const std::uint32_t amt = c.arg(0);
    const std::uint32_t* wh = c.read(0);
    const std::uint32_t* di = c.read(1);
    const std::uint32_t* cu = c.read(2);
    if (!wh || !di || !cu) return c.abort(2);
    c.write(0, [wh, amt](std::uint32_t w) { return w == 0 ? wh[0] + amt : wh[w]; });
    c.write(1, [di, amt](std::uint32_t w) { return w == 1 ? di[1] + amt : di[w]; });
    c.write(2, [cu, amt](std::uint32_t w) {
      return w == 0 ? cu[0] - amt : w == 1 ? cu[1] + amt : w == 2 ? cu[2] + 1 : cu[3];
    });
    const std::uint32_t bal = cu[0] - amt;
    c.write(3, [bal, amt](std::uint32_t w) { return w == 0 ? bal : w == 1 ? amt : 0u; });
    c.out(1, bal);
  }
  template <class Ctx>
  DUET_HD static bool dispatch(std::uint32_t p, Ctx& c) {
    if (p == kNewOrderProc) return new_order(c), true;
    if (p == kPaymentProc) return payment(c), true;
    return false;
  }
};

/// Loads the static tables (warehouse, district, customer, item, stock).
template <class Load>
void tpcc_load(std::uint32_t warehouses, Load load) {
  std::vector<std::uint32_t> r(4);
  for (std::uint32_t w = 0; w < warehouses; ++w) {
    r = {0, 5 + w % 10};
    load(kWarehouse, w, r.data());
    for (std::uint32_t d = 0; d < 10; ++d) {
      r = {kFirstOrderId, 0, 3 + d};
      load(kDistrict, district_key(w, d), r.data());
      for (std::uint32_t cc = 0; cc < kCustomersPerDistrict; ++cc) {
        r = {100000, 0, 0, cc % 50};
        load(kCustomer, customer_key(w, d, cc), r.data());
      }
    }
    for (std::uint32_t i = 0; i < kItems; ++i) {
      r = {1 + i % 100, 4, 0, 0};
      load(kStock, static_cast<std::uint64_t>(w) * kItems + i, r.data());
    }
  }
  for (std::uint32_t i = 0; i < kItems - 1; ++i) {  // item kItems-1 stays unused: the rollback item
    r = {1 + (i * 7) % 100, i};
    load(kItem, i, r.data());
  }
}

/// NP generator with the reconnaissance counters.
class TpccGenerator {
 public:
  TpccGenerator(std::uint32_t warehouses, std::uint64_t seed)
      : w_(warehouses), rng_(seed), next_o_(warehouses * 10, kFirstOrderId) {}
  void generate(std::size_t n, Batch* b, std::uint64_t first_tag = 0) {
    std::vector<Key> r, wr;
    std::vector<std::uint32_t> a;
    for (std::size_t t = 0; t < n; ++t) {
      r.clear(), wr.clear(), a.clear();
      const std::uint32_t w = pick(w_), d = pick(10), cid = pick(kCustomersPerDistrict);
      if (rng_() % 2 == 0) {
        const std::uint32_t lines = 5 + pick(11);
        const bool rollback = pick(100) == 0;
        std::vector<std::uint32_t> items;
        while (items.size() < lines) {
          const std::uint32_t i = pick(kItems - 1);
          if (std::find(items.begin(), items.end(), i) == items.end()) items.push_back(i);
        }
        if (rollback) items.back() = kItems - 1;
        std::uint32_t& ctr = next_o_[district_key(w, d)];
        const std::uint32_t o = ctr;
        if (!rollback) ++ctr;  // reconnaissance: only orders that will commit take an id
        a = {lines, o, w};
        r = {{kWarehouse, w}, {kDistrict, district_key(w, d)}, {kCustomer, customer_key(w, d, cid)}};
        for (auto i : items) r.push_back({kItem, i});
        std::vector<std::uint32_t> supply;
        for (std::size_t l = 0; l < items.size(); ++l) {
          const std::uint32_t sw = (w_ > 1 && pick(100) == 0) ? (w + 1 + pick(w_ - 1)) % w_ : w;
          supply.push_back(sw);
          a.push_back(1 + pick(10));
          a.push_back(sw);
        }
        for (std::size_t l = 0; l < items.size(); ++l) r.push_back({kStock, static_cast<std::uint64_t>(supply[l]) * kItems + items[l]});
        wr.push_back({kDistrict, district_key(w, d)});
        for (std::size_t l = 0; l < items.size(); ++l) wr.push_back({kStock, static_cast<std::uint64_t>(supply[l]) * kItems + items[l]});
        wr.push_back({kOrder, order_key(w, d, o)});
        wr.push_back({kNewOrder, order_key(w, d, o)});
        for (std::uint32_t l = 0; l < lines; ++l) wr.push_back({kOrderLine, order_line_key(w, d, o, l)});
        b->add(TpccProcs::kNewOrderProc, r, wr, a, first_tag + t);
      } else {
        const std::uint32_t cw = (w_ > 1 && pick(100) < 15) ? (w + 1 + pick(w_ - 1)) % w_ : w;
        const std::uint32_t cd = cw == w ? d : pick(10);
        r = {{kWarehouse, w}, {kDistrict, district_key(w, d)}, {kCustomer, customer_key(cw, cd, cid)}};
        wr = r;
        wr.push_back({kHistory, history_++});
        b->add(TpccProcs::kPaymentProc, r, wr, {1 + pick(5000)}, first_tag + t);
      }
    }
  }

 private:
  std::uint32_t pick(std::uint32_t n) { return static_cast<std::uint32_t>(rng_() % n); }
  std::uint32_t w_;
  std::mt19937_64 rng_;
  std::vector<std::uint32_t> next_o_;
  std::uint64_t history_ = 0;
};

}  // namespace duet::batch::epic

// TPC-C for Epic: tables, the five procedures and the bulk load. The generators, whose
// reconnaissance finds every data-dependent key before an epoch runs, are in tpcc_gen.hpp.
// Procedures validate what reconnaissance predicted (the district's next order id, the order's
// customer, a new-order entry still present) and rerun when it was wrong. Delivery runs as one
// txn per district (TPC-C's deferred delivery), so each stays under kMaxWrites.
// Host and device code: the GPU executor compiles these procedures (ProcSet::kTpcc).
#pragma once

#include <cstdint>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

enum TpccTable : std::uint32_t { kWarehouse, kDistrict, kCustomer, kItem, kStock, kOrder, kNewOrder, kOrderLine, kHistory };

inline constexpr std::uint32_t kItems = 100000, kCustomersPerDistrict = 3000, kFirstOrderId = 3001;

/// Tables for `w` warehouses with room for `orders` new orders and `payments` history rows.
inline std::vector<TableSpec> tpcc_tables(std::uint32_t w, std::uint32_t orders, std::uint32_t payments) {
  return {{"warehouse", 2, w, false},                  // ytd, tax
          {"district", 3, w * 10, false},              // next_o_id, ytd, tax
          {"customer", 5, w * 10 * kCustomersPerDistrict, false},  // balance, ytd_payment, payment_cnt, discount, delivery_cnt
          {"item", 2, kItems, false},                  // price, i_id
          {"stock", 4, w * kItems, false},             // quantity, ytd, order_cnt, remote_cnt
          {"order", 4, orders, true},                  // c_id, ol_cnt, all_local, carrier_id
          {"new_order", 1, orders, true},
          {"order_line", 5, orders * 15, true},        // i_id, supply_w, quantity, amount, delivery_d
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
  enum : std::uint32_t { kNewOrderProc = 0, kPaymentProc = 1, kOrderStatusProc = 2, kDeliveryProc = 3, kStockLevelProc = 4 };
  static bool known(std::uint32_t p) { return p < 5; }

  // NewOrder. Reads: warehouse, district, customer, items[n], stocks[n]. Writes: district,
  // stocks[n], order, new_order, order_lines[n]. Args: n, o_id, home warehouse, then per line
  // quantity and supply warehouse, then the customer id. Outputs: 1 amount, 2 order id.
  template <class Ctx>
  DUET_HD static void new_order(Ctx& c) {
    const std::uint32_t n = c.arg(0), o_id = c.arg(1);
    const std::uint32_t* wh = c.read(0);
    const std::uint32_t* di = c.read(1);
    const std::uint32_t* cu = c.read(2);
    std::uint32_t total = 0, price[15], item_id[15];
    if (n > 15) return c.abort(3);
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t* it = c.read(3 + l);
      if (!it) return c.abort(1);  // unused item: the 1% rollback
      price[l] = it[0];
      item_id[l] = it[1];
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
    const std::uint32_t cid = c.arg(3 + 2 * n);
    c.write(1 + n, [cid, n](std::uint32_t w) { return w == 0 ? cid : w == 1 ? n : w == 2 ? 1u : 0u; });
    c.write(2 + n, [](std::uint32_t) { return 1u; });
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t q = c.arg(3 + 2 * l), sw = c.arg(4 + 2 * l);
      const std::uint32_t p = price[l], iid = item_id[l];
      c.write(3 + n + l, [iid, sw, q, p](std::uint32_t w) { return w == 0 ? iid : w == 1 ? sw : w == 2 ? q : w == 3 ? q * p : 0u; });
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
      return w == 0 ? cu[0] - amt : w == 1 ? cu[1] + amt : w == 2 ? cu[2] + 1 : cu[w];
    });
    const std::uint32_t bal = cu[0] - amt;
    c.write(3, [bal, amt](std::uint32_t w) { return w == 0 ? bal : w == 1 ? amt : 0u; });
    c.out(1, bal);
  }
  // OrderStatus (read-only). Reads: customer, then (when reconnaissance found an order) the
  // customer's last order and its n order lines. Args: customer id, has_order, n. Outputs: 1
  // balance, 2 the order's line count, 3 the sum of its line amounts. Reruns when the order is
  // absent or not the customer's.
  template <class Ctx>
  DUET_HD static void order_status(Ctx& c) {
    const std::uint32_t cid = c.arg(0), has = c.arg(1), n = c.arg(2);
    const std::uint32_t* cu = c.read(0);
    if (!cu) return c.abort(2);
    std::uint32_t sum = 0;
    if (has) {
      const std::uint32_t* o = c.read(1);
      if (!o || o[0] != cid || o[1] != n) return c.rerun();
      for (std::uint32_t l = 0; l < n; ++l) {
        const std::uint32_t* ol = c.read(2 + l);
        if (!ol) return c.rerun();
        sum += ol[3];
      }
    }
    c.out(1, cu[0]);
    c.out(2, has ? n : 0u);
    c.out(3, sum);
  }
  // Delivery of one district's oldest undelivered order. Reads: new_order, order, order_lines[n],
  // customer. Writes: new_order (deleted), order (carrier set), order_lines[n] (delivery date
  // set), customer (balance plus the amounts, delivery count plus one). Args: customer id, n,
  // carrier, date. Outputs: 1 the amount delivered. Without keys (no undelivered order) it does
  // nothing. Reruns when the entry is gone or the order
  // is not the declared customer's.
  template <class Ctx>
  DUET_HD static void delivery(Ctx& c) {
    const std::uint32_t cid = c.arg(0), n = c.arg(1), carrier = c.arg(2), date = c.arg(3);
    if (c.nreads() == 0) return c.out(1, 0);  // no undelivered order in the district
    const std::uint32_t* no = c.read(0);
    const std::uint32_t* o = c.read(1);
    if (!no || !o || o[0] != cid || o[1] != n || n > 15) return c.rerun();
    std::uint32_t sum = 0;
    const std::uint32_t* lines[15] = {};
    for (std::uint32_t l = 0; l < n; ++l) {
      lines[l] = c.read(2 + l);
      if (!lines[l]) return c.rerun();
      sum += lines[l][3];
    }
    const std::uint32_t* cu = c.read(2 + n);
    if (!cu) return c.abort(2);
    c.remove(0);
    c.write(1, [o, carrier](std::uint32_t w) { return w == 3 ? carrier : o[w]; });
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t* ol = lines[l];
      c.write(2 + l, [ol, date](std::uint32_t w) { return w == 4 ? date : ol[w]; });
    }
    c.write(2 + n, [cu, sum](std::uint32_t w) { return w == 0 ? cu[0] + sum : w == 4 ? cu[4] + 1 : cu[w]; });
    c.out(1, sum);
  }
  // StockLevel (read-only). Reads: district, the order lines of the district's last 20 orders,
  // the stock of each distinct item among them. Args: threshold, the predicted next order id,
  // the number of order lines k. Output: 1 the number of items whose stock quantity is below the
  // threshold. Reruns when the district's next order id is not the predicted one.
  template <class Ctx>
  DUET_HD static void stock_level(Ctx& c) {
    const std::uint32_t threshold = c.arg(0), next = c.arg(1), k = c.arg(2);
    const std::uint32_t* di = c.read(0);
    if (!di) return c.abort(2);
    if (di[0] != next) return c.rerun();
    for (std::uint32_t l = 0; l < k; ++l)
      if (!c.read(1 + l)) return c.rerun();
    std::uint32_t low = 0;
    for (std::uint32_t i = 1 + k; i < c.nreads(); ++i) {
      const std::uint32_t* st = c.read(i);
      low += st && st[0] < threshold;
    }
    c.out(1, low);
  }
  template <class Ctx>
  DUET_HD static bool dispatch(std::uint32_t p, Ctx& c) {
    if (p == kNewOrderProc) return new_order(c), true;
    if (p == kPaymentProc) return payment(c), true;
    if (p == kOrderStatusProc) return order_status(c), true;
    if (p == kDeliveryProc) return delivery(c), true;
    if (p == kStockLevelProc) return stock_level(c), true;
    return false;
  }
};

/// Loads the static tables (warehouse, district, customer, item, stock).
template <class Load>
void tpcc_load(std::uint32_t warehouses, Load load) {
  std::vector<std::uint32_t> r(5);
  for (std::uint32_t w = 0; w < warehouses; ++w) {
    r = {0, 5 + w % 10};
    load(kWarehouse, w, r.data());
    for (std::uint32_t d = 0; d < 10; ++d) {
      r = {kFirstOrderId, 0, 3 + d};
      load(kDistrict, district_key(w, d), r.data());
      for (std::uint32_t cc = 0; cc < kCustomersPerDistrict; ++cc) {
        r = {100000, 0, 0, cc % 50, 0};
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

}  // namespace duet::batch::epic

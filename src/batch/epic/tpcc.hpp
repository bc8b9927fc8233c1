// TPC-C for Epic: tables, the five procedures and the bulk load. The generators, whose
// reconnaissance finds every data-dependent key before an epoch runs, are in tpcc_gen.hpp.
// Procedures validate what reconnaissance predicted (the district's next order id, the order's
// customer, a new-order entry still present) and rerun when it was wrong. Delivery runs as one
// txn per district (TPC-C's deferred delivery), so each stays under kMaxWrites.
// Host and device code: the GPU executor compiles these procedures (ProcSet::kTpcc).
//
// Two layouts (Epic's field splitting, per table). kRecords: each warehouse, district and
// customer row is one item, so an update copies the whole row and every txn that touches a row
// waits for the row's previous writer. kSplit: each field of those three tables is an item of its
// own (key = row key * fields + field), so NewOrder, which reads the taxes, the discount and the
// district's next order id, no longer waits for the Payments that update the year-to-date sums
// and balances of the same rows. At one warehouse that cuts the one chain of versions through the
// warehouse row into a chain of Payments and, per district, a chain of NewOrders. A procedure id
// with kSplit set runs against the split layout; the other tables are the same in both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

enum TpccTable : std::uint32_t { kWarehouse, kDistrict, kCustomer, kItem, kStock, kOrder, kNewOrder, kOrderLine, kHistory };

inline constexpr std::uint32_t kItems = 100000, kCustomersPerDistrict = 3000, kFirstOrderId = 3001;

/// Whether warehouse, district and customer rows are one item each or one item per field.
enum class TpccLayout { kRecords, kSplit };

/// The fields of the three tables that kSplit splits, in their row order.
enum WarehouseField : std::uint32_t { kWYtd, kWTax };
enum DistrictField : std::uint32_t { kDNextOrderId, kDYtd, kDTax };
enum CustomerField : std::uint32_t { kCBalance, kCYtdPayment, kCPaymentCnt, kCDiscount, kCDeliveryCnt };
inline constexpr std::uint32_t kWarehouseFields = 2, kDistrictFields = 3, kCustomerFields = 5;

/// Tables for `w` warehouses with room for `orders` new orders and `payments` history rows, in
/// `layout` (kSplit: warehouse, district and customer hold one-word items, `fields` per row).
inline std::vector<TableSpec> tpcc_tables(std::uint32_t w, std::uint32_t orders, std::uint32_t payments,
                                          TpccLayout layout = TpccLayout::kRecords) {
  const bool split = layout == TpccLayout::kSplit;
  const std::uint32_t customers = w * 10 * kCustomersPerDistrict;
  return {{"warehouse", split ? 1 : kWarehouseFields, split ? w * kWarehouseFields : w, false},
          {"district", split ? 1 : kDistrictFields, split ? w * 10 * kDistrictFields : w * 10, false},
          {"customer", split ? 1 : kCustomerFields, split ? customers * kCustomerFields : customers, false},
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
/// The key of a row's field in the split layout (rows of `fields` fields), or of the row itself.
inline std::uint64_t field_key(std::uint64_t row, std::uint32_t fields, std::uint32_t f, TpccLayout layout) {
  return layout == TpccLayout::kSplit ? row * fields + f : row;
}
inline std::uint64_t order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o) { return (district_key(w, d) << 32) | o; }
inline std::uint64_t order_line_key(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t l) {
  return (order_key(w, d, o) << 4) | l;
}

struct TpccProcs {
  enum : std::uint32_t { kNewOrderProc = 0, kPaymentProc = 1, kOrderStatusProc = 2, kDeliveryProc = 3, kStockLevelProc = 4 };
  /// Payment's pieces (TpccGenerator::set_split_payments): kAddPiece for the warehouse's and the
  /// district's ytd, then kPaymentCustomerPiece.
  enum : std::uint32_t { kAddPiece = 5, kPaymentCustomerPiece = 6 };
  /// Set in a procedure id: the procedure runs against the split layout (TpccLayout::kSplit).
  static constexpr std::uint32_t kSplit = 8;
  /// The procedure of an id, without the layout bit.
  DUET_HD static std::uint32_t base(std::uint32_t p) { return p & ~kSplit; }
  static bool known(std::uint32_t p) { return base(p) < 7; }
  /// The keys and args each procedure reads by position (see each below), from its args' line
  /// and order counts, and the record widths it relies on (width_error): "" when the call has
  /// exactly those, else why not. The data-dependent part (are they the right keys?) stays the
  /// procedure's: it reruns or aborts.
  static std::string shape_error(std::uint32_t p, const CallShape& c) {
    std::string e = count_error(p, c);
    return e.empty() ? width_error(p, c) : e;
  }
  /// The words each procedure indexes in its reads and the writes it copies from a read, as
  /// written below, for a call whose counts fit (count_error).
  static std::string width_error(std::uint32_t p, const CallShape& c) {
    const bool split = (p & kSplit) != 0;
    // Payment's customer: split, three one-word items (word 0 only); else its row, copied with
    // its balance, ytd and count changed.
    const auto customer = [split](WidthCheck& w, std::uint32_t r0, std::uint32_t w0) {
      if (!split) w.copies(w0, r0);
    };
    switch (base(p)) {
      case kNewOrderProc: {
        const std::uint32_t n = c.arg(0), first_item = split ? 4 : 3;
        WidthCheck w("NewOrder", c);
        if (!split) w.read_at_least(0, kWTax + 1).read_at_least(1, kDTax + 1).read_at_least(2, kCDiscount + 1);
        w.copies(0, 1);
        for (std::uint32_t l = 0; l < n; ++l) w.read_at_least(first_item + l, 2).read_at_least(first_item + n + l, 4);
        return w.error();
      }
      case kPaymentProc: {
        WidthCheck w("Payment", c);
        w.copies(0, 0).copies(1, 1);
        customer(w, 2, 2);
        return w.error();
      }
      case kOrderStatusProc: {
        WidthCheck w("OrderStatus", c);
        if (c.arg(1)) {
          w.read_at_least(1, 2);
          for (std::uint32_t l = 0; l < c.arg(2); ++l) w.read_at_least(2 + l, 4);
        }
        return w.error();
      }
      case kDeliveryProc: {
        if (c.reads == 0) return "";
        const std::uint32_t n = c.arg(1);
        WidthCheck w("Delivery", c);
        w.read_at_least(1, 2).copies(1, 1);
        for (std::uint32_t l = 0; l < n; ++l) w.read_at_least(2 + l, 4).copies(2 + l, 2 + l);
        if (!split) w.copies(2 + n, 2 + n);
        return w.error();
      }
      case kAddPiece: return WidthCheck("Payment's add piece", c).copies(0, 0).error();
      case kPaymentCustomerPiece: {
        WidthCheck w("Payment's customer piece", c);
        customer(w, 0, 0);
        return w.error();
      }
    }
    return "";  // StockLevel reads word 0 alone
  }
  /// The counts of keys and args each procedure takes.
  static std::string count_error(std::uint32_t p, const CallShape& c) {
    const bool split = (p & kSplit) != 0;
    const std::uint32_t cust = split ? 3 : 1;  // the customer's reads: balance, ytd, count, or the row
    switch (base(p)) {
      case kNewOrderProc: {
        const std::uint32_t n = c.arg(0);
        if (n > 15) return "NewOrder takes 0 to 15 lines, not " + std::to_string(n);
        return shape_mismatch("NewOrder", (split ? 4 : 3) + 2 * n, 3 + 2 * n, 4 + 2 * n, c);
      }
      case kPaymentProc: return shape_mismatch("Payment", 2 + cust, 2 + cust + 1, 1, c);
      case kOrderStatusProc: {
        const std::uint32_t has = c.arg(1), n = c.arg(2);
        if (n > 15) return "OrderStatus takes 0 to 15 lines, not " + std::to_string(n);
        return shape_mismatch("OrderStatus", 1 + (has ? 1 + n : 0), 0, 3, c);
      }
      case kDeliveryProc: {
        const std::uint32_t n = c.arg(1), rest = split ? 2 : 1;
        if (n > 15) return "Delivery takes 0 to 15 lines, not " + std::to_string(n);
        if (c.reads == 0 && c.writes == 0) return shape_mismatch("Delivery", 0, 0, 4, c);  // no order to deliver
        return shape_mismatch("Delivery", 2 + n + rest, 2 + n + rest, 4, c);
      }
      case kStockLevelProc: {
        const std::uint32_t k = c.arg(2);
        if (c.args.size() != 3 || c.writes != 0 || c.reads < 1ull + k)
          return "StockLevel takes 3 args (threshold, next order id, order lines k), no writes and at least 1 + k "
                 "reads; the call has " + std::to_string(c.args.size()) + " args, " + std::to_string(c.writes) +
                 " writes and " + std::to_string(c.reads) + " reads for k = " + std::to_string(k);
        return "";
      }
      case kAddPiece: return shape_mismatch("Payment's add piece", 1, 1, 2, c);
      case kPaymentCustomerPiece: return shape_mismatch("Payment's customer piece", cust, cust + 1, 1, c);
    }
    return "unknown procedure " + std::to_string(p);
  }

  // NewOrder. Reads: warehouse, district, customer, items[n], stocks[n] (split: the warehouse's
  // tax, the district's next order id and tax, the customer's discount, items, stocks). Writes:
  // district (split: its next order id), stocks[n], order, new_order, order_lines[n]. Args: n,
  // o_id, home warehouse, then per line quantity and supply warehouse, then the customer id.
  // Outputs: 1 amount, 2 order id.
  template <class Ctx>
  DUET_HD static void new_order(Ctx& c, bool split) {
    const std::uint32_t n = c.arg(0), o_id = c.arg(1), first_item = split ? 4 : 3;
    const std::uint32_t* wh = c.read(0);
    const std::uint32_t* di = c.read(1);
    const std::uint32_t* dt = split ? c.read(2) : di;
    const std::uint32_t* cu = c.read(split ? 3 : 2);
    std::uint32_t total = 0, price[15], item_id[15];
    if (n > 15) return c.abort(3);
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t* it = c.read(first_item + l);
      if (!it) return c.abort(1);  // unused item: the 1% rollback
      price[l] = it[0];
      item_id[l] = it[1];
      total += it[0] * c.arg(3 + 2 * l);
    }
    if (!wh || !di || !dt || !cu) return c.abort(2);
    if (di[0] != o_id) return c.rerun();  // reconnaissance predicted another order id
    const std::uint32_t* st[15] = {};
    for (std::uint32_t l = 0; l < n; ++l) st[l] = c.read(first_item + n + l);
    const std::uint32_t w_tax = split ? wh[0] : wh[kWTax], d_tax = split ? dt[0] : di[kDTax];
    const std::uint32_t discount = split ? cu[0] : cu[kCDiscount];
    const std::uint32_t amount = total * (100 - discount) / 100 * (100 + w_tax + d_tax) / 100;
    // Split, the district item is its next order id alone (one word).
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
  // Payment's customer part, shared by payment() and its last piece. Reads from read index r0:
  // split, the customer's balance, ytd_payment and payment_cnt; else its row. False when one is
  // missing.
  template <class Ctx>
  DUET_HD static bool customer_reads(Ctx& c, std::uint32_t r0, bool split, const std::uint32_t* (&p)[3]) {
    p[0] = c.read(r0);
    p[1] = split ? c.read(r0 + 1) : p[0];
    p[2] = split ? c.read(r0 + 2) : p[0];
    return p[0] && p[1] && p[2];
  }
  // Writes them back from write index w0 (the balance less `amt`, ytd_payment plus `amt`, one
  // more payment) and then the history row; output 1 is the new balance.
  template <class Ctx>
  DUET_HD static void customer_writes(Ctx& c, std::uint32_t w0, bool split, const std::uint32_t* const (&p)[3],
                                      std::uint32_t amt) {
    const std::uint32_t* balance = p[0];
    const std::uint32_t* paid = p[1];
    const std::uint32_t* count = p[2];
    const std::uint32_t bal = balance[0] - amt;
    if (split) {
      c.write(w0, [bal](std::uint32_t) { return bal; });
      c.write(w0 + 1, [paid, amt](std::uint32_t) { return paid[0] + amt; });
      c.write(w0 + 2, [count](std::uint32_t) { return count[0] + 1; });
    } else {
      const std::uint32_t* row = p[0];  // balance, ytd_payment, payment_cnt, ... in one row
      c.write(w0, [row, amt](std::uint32_t w) {
        return w == 0 ? row[0] - amt : w == 1 ? row[1] + amt : w == 2 ? row[2] + 1 : row[w];
      });
    }
    c.write(w0 + (split ? 3 : 1), [bal, amt](std::uint32_t w) { return w == 0 ? bal : w == 1 ? amt : 0u; });
    c.out(1, bal);
  }
  // Payment. Reads and writes warehouse, district, customer (split: the warehouse's and the
  // district's ytd, the customer's balance, ytd_payment and payment_cnt); inserts a history row.
  // Arg: amount. Output: 1 the customer's new balance.
  template <class Ctx>
  DUET_HD static void payment(Ctx& c, bool split) {
    const std::uint32_t amt = c.arg(0);
    const std::uint32_t* wh = c.read(0);
    const std::uint32_t* di = c.read(1);
    const std::uint32_t* cu[3];
    if (!customer_reads(c, 2, split, cu) || !wh || !di) return c.abort(2);
    // The ytd sums first: the chains of Payments through them go on before this txn loads its
    // customer's fields. Split, each is an item of one word; else the warehouse's ytd is word
    // kWYtd of its row and the district's word kDYtd.
    const std::uint32_t wf = split ? 0u : std::uint32_t{kWYtd}, df = split ? 0u : std::uint32_t{kDYtd};
    c.write(0, [wh, amt, wf](std::uint32_t w) { return w == wf ? wh[w] + amt : wh[w]; });
    c.write(1, [di, amt, df](std::uint32_t w) { return w == df ? di[w] + amt : di[w]; });
    customer_writes(c, 2, split, cu, amt);
  }
  // Payment in pieces (piece splitting, Batch::add_piece): the warehouse's ytd, the district's ytd,
  // then the customer and the history row, each a txn of its own at consecutive positions, so the
  // chain of Payments through a warehouse's ytd waits for nothing but itself. The pieces share no
  // item, none aborts (the rows are bulk-loaded), and only the last has an output: together they
  // equal payment().
  // kAddPiece: reads one item and writes it back with arg 0 added to its word arg 1.
  template <class Ctx>
  DUET_HD static void add_piece(Ctx& c) {
    const std::uint32_t amt = c.arg(0), f = c.arg(1);
    const std::uint32_t* r = c.read(0);
    if (!r) return c.abort(2);
    c.write(0, [r, amt, f](std::uint32_t w) { return w == f ? r[w] + amt : r[w]; });
  }
  // kPaymentCustomerPiece: the customer and the history row, as payment() writes them. Arg:
  // amount. Output: 1 the customer's new balance.
  template <class Ctx>
  DUET_HD static void payment_customer(Ctx& c, bool split) {
    const std::uint32_t* cu[3];
    if (!customer_reads(c, 0, split, cu)) return c.abort(2);
    customer_writes(c, 0, split, cu, c.arg(0));
  }
  // OrderStatus (read-only). Reads: customer (split: its balance), then (when reconnaissance
  // found an order) the customer's last order and its n order lines. Args: customer id,
  // has_order, n. Outputs: 1 balance, 2 the order's line count, 3 the sum of its line amounts.
  // Reruns when the order is absent or not the customer's.
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
  // customer (split: its balance and delivery_cnt). Writes: new_order (deleted), order (carrier
  // set), order_lines[n] (delivery date set), customer (balance plus the amounts, delivery count
  // plus one). Args: customer id, n, carrier, date. Outputs: 1 the amount delivered. Without
  // keys (no undelivered order) it does nothing. Reruns when the entry is gone or the order is
  // not the declared customer's.
  template <class Ctx>
  DUET_HD static void delivery(Ctx& c, bool split) {
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
    const std::uint32_t* delivered = split ? c.read(3 + n) : cu;
    if (!cu || !delivered) return c.abort(2);
    c.remove(0);
    c.write(1, [o, carrier](std::uint32_t w) { return w == 3 ? carrier : o[w]; });
    for (std::uint32_t l = 0; l < n; ++l) {
      const std::uint32_t* ol = lines[l];
      c.write(2 + l, [ol, date](std::uint32_t w) { return w == 4 ? date : ol[w]; });
    }
    if (split) {
      c.write(2 + n, [cu, sum](std::uint32_t) { return cu[0] + sum; });
      c.write(3 + n, [delivered](std::uint32_t) { return delivered[0] + 1; });
    } else {
      c.write(2 + n, [cu, sum](std::uint32_t w) {
        return w == kCBalance ? cu[w] + sum : w == kCDeliveryCnt ? cu[w] + 1 : cu[w];
      });
    }
    c.out(1, sum);
  }
  // StockLevel (read-only). Reads: district (split: its next order id), the order lines of the
  // district's last 20 orders, the stock of each distinct item among them. Args: threshold, the
  // predicted next order id, the number of order lines k. Output: 1 the number of items whose stock quantity is below the
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
    const bool split = (p & kSplit) != 0;
    p = base(p);
    if (p == kNewOrderProc) return new_order(c, split), true;
    if (p == kPaymentProc) return payment(c, split), true;
    if (p == kOrderStatusProc) return order_status(c), true;
    if (p == kDeliveryProc) return delivery(c, split), true;
    if (p == kStockLevelProc) return stock_level(c), true;
    if (p == kAddPiece) return add_piece(c), true;
    if (p == kPaymentCustomerPiece) return payment_customer(c, split), true;
    return false;
  }
};

/// Loads the static tables (warehouse, district, customer, item, stock) in `layout`:
/// load(table, key, words) once per row, or once per field of a split row.
template <class Load>
void tpcc_load(std::uint32_t warehouses, Load load, TpccLayout layout = TpccLayout::kRecords) {
  std::vector<std::uint32_t> r(5);
  const auto row = [&](std::uint32_t table, std::uint64_t key) {
    if (layout == TpccLayout::kRecords) {
      load(table, key, r.data());
      return;
    }
    for (std::uint32_t f = 0; f < r.size(); ++f) load(table, key * r.size() + f, r.data() + f);
  };
  for (std::uint32_t w = 0; w < warehouses; ++w) {
    r = {0, 5 + w % 10};
    row(kWarehouse, w);
    for (std::uint32_t d = 0; d < 10; ++d) {
      r = {kFirstOrderId, 0, 3 + d};
      row(kDistrict, district_key(w, d));
      for (std::uint32_t cc = 0; cc < kCustomersPerDistrict; ++cc) {
        r = {100000, 0, 0, cc % 50, 0};
        row(kCustomer, customer_key(w, d, cc));
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

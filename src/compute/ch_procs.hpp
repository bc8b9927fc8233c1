// CH-benCHmark's transactions written once over a storage adapter, so the txn keyspace (ch.cpp)
// and the RocksDB peer (bench/compute/ch_rocks.cpp) run the same logic on the same work.
//
// An adapter `A` offers, each returning false when the storage refused the call and the whole
// transaction must be re-run (a lock timeout, a detected conflict):
//   bool get(std::string_view key, std::string* value, bool* found, bool for_update);
//   bool put(std::string_view key, std::string_view value);
//   bool del(std::string_view key);
//   bool range(std::string_view lo, std::string_view hi, std::size_t limit,
//              std::vector<std::pair<std::string, std::string>>* out);   // [lo, hi) in key order
// and may offer, for reads it can overlap (the txn keyspace's Txn::get_many):
//   bool get_many(const std::string_view* keys, std::size_t n, std::string* values, bool* found,
//                 bool for_update);
// `for_update` asks a locking store to lock the key (the txn keyspace validates its write set at
// commit instead and ignores it). A body returns kRetry when the adapter refused, kMissing when a
// row that the load guarantees is absent (a corrupt database), kRollback when the transaction's
// own logic rolls it back (a NewOrder line naming kUnusedItem: the caller aborts, nothing applied),
// kDone otherwise; the caller commits.
#pragma once

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compute/ch.hpp"

namespace duet::compute::ch {

enum class Body : std::uint8_t { kDone, kRetry, kMissing, kRollback };

namespace procs {

// The customer a by-name operation means (TPC-C 2.5.2.2): of district (w, d)'s customers with
// last name last_name(name), ordered by first name, the one at position ceil(n / 2). kMissing
// when there is none (the load gives every name a district's operations draw at least one).
template <class A>
Body customer_by_name(A& a, std::uint32_t w, std::uint32_t d, std::uint32_t name, std::uint32_t* c) {
  std::string lo, hi;
  prefix_range(customer_name_prefix(w, d, last_name(name)), &lo, &hi);
  std::vector<std::pair<std::string, std::string>> kv;
  if (!a.range(lo, hi, 0, &kv)) return Body::kRetry;
  if (kv.empty()) return Body::kMissing;
  *c = static_cast<std::uint32_t>(get(kv[(kv.size() - 1) / 2].second, codec(kCustomerName), cnf::c_id));
  return Body::kDone;
}

// n reads through a.get_many when the adapter has one, else one get each.
template <class A>
bool get_many(A& a, const std::string_view* keys, std::size_t n, std::string* values, bool* found, bool for_update) {
  if constexpr (requires { a.get_many(keys, n, values, found, for_update); }) {
    return a.get_many(keys, n, values, found, for_update);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (!a.get(keys[i], &values[i], &found[i], for_update)) return false;
    return true;
  }
}

template <class A>
Body new_order(A& a, const Op& op, OpResult* r) {
  const RowCodec &wc = codec(kWarehouse), &dc = codec(kDistrict), &cc = codec(kCustomer), &ic = codec(kItem),
                 &sc = codec(kStock), &oc = codec(kOrder), &nc = codec(kNewOrder), &lc = codec(kOrderLine);
  std::string wrow, drow, crow;
  bool found = false;
  if (!a.get(warehouse_key(op.w), &wrow, &found, false)) return Body::kRetry;
  if (!found) return Body::kMissing;
  const std::string dk = district_key(op.w, op.d);
  if (!a.get(dk, &drow, &found, true)) return Body::kRetry;
  if (!found) return Body::kMissing;
  const std::int64_t o_id = get(drow, dc, df::next_o_id);
  set(drow, dc, df::next_o_id, o_id + 1);
  if (!a.put(dk, drow)) return Body::kRetry;
  if (!a.get(customer_key(op.w, op.d, op.c), &crow, &found, false)) return Body::kRetry;
  if (!found) return Body::kMissing;
  bool all_local = true;
  for (unsigned l = 0; l < op.ol_cnt; ++l) all_local &= op.lines[l].supply_w == op.w;
  std::string orow = blank(kOrder);
  set(orow, oc, of::id, o_id);
  set(orow, oc, of::d_id, op.d);
  set(orow, oc, of::w_id, op.w);
  set(orow, oc, of::c_id, op.c);
  set(orow, oc, of::entry_d, op.date);
  set(orow, oc, of::ol_cnt, op.ol_cnt);
  set(orow, oc, of::all_local, all_local ? 1 : 0);
  const auto o = static_cast<std::uint32_t>(o_id);
  if (!a.put(order_key(op.w, op.d, o), orow)) return Body::kRetry;
  std::string nrow = blank(kNewOrder);
  set(nrow, nc, nof::o_id, o_id);
  set(nrow, nc, nof::d_id, op.d);
  set(nrow, nc, nof::w_id, op.w);
  if (!a.put(new_order_key(op.w, op.d, o), nrow)) return Body::kRetry;
  // Every line's item, then every line's stock, read in one batch each: the reads do not
  // depend on one another, so an adapter that overlaps them pays their misses once.
  std::array<std::string, kMaxLines> ikeys, skeys, irows, srows;
  std::array<std::string_view, kMaxLines> views;
  bool ifound[kMaxLines], sfound[kMaxLines];
  const unsigned n = op.ol_cnt;
  for (unsigned l = 0; l < n; ++l) views[l] = ikeys[l] = item_key(op.lines[l].item);
  if (!get_many(a, views.data(), n, irows.data(), ifound, false)) return Body::kRetry;
  for (unsigned l = 0; l < n; ++l)
    if (!ifound[l]) return op.lines[l].item == kUnusedItem ? Body::kRollback : Body::kMissing;
  for (unsigned l = 0; l < n; ++l) views[l] = skeys[l] = stock_key(op.lines[l].supply_w, op.lines[l].item);
  if (!get_many(a, views.data(), n, srows.data(), sfound, true)) return Body::kRetry;
  std::int64_t total = 0;
  for (unsigned l = 0; l < n; ++l) {
    const Op::Line& ln = op.lines[l];
    const std::string& irow = irows[l];
    const std::string& sk = skeys[l];
    std::string& srow = srows[l];
    if (!sfound[l]) return Body::kMissing;
    // A stock named by an earlier line too: this line updates what that line wrote.
    for (unsigned m = l; m-- > 0;)
      if (skeys[m] == sk) {
        srow = srows[m];
        break;
      }
    const std::int64_t q = get(srow, sc, sf::quantity);
    set(srow, sc, sf::quantity, q >= ln.quantity + 10 ? q - ln.quantity : q - ln.quantity + 91);
    set(srow, sc, sf::ytd, get(srow, sc, sf::ytd) + ln.quantity);
    set(srow, sc, sf::order_cnt, get(srow, sc, sf::order_cnt) + 1);
    set(srow, sc, sf::remote_cnt, get(srow, sc, sf::remote_cnt) + (ln.supply_w != op.w));
    if (!a.put(sk, srow)) return Body::kRetry;
    const std::int64_t amount = ln.quantity * get(irow, ic, itf::price);
    total += amount;
    std::string lrow = blank(kOrderLine);
    set(lrow, lc, olf::o_id, o_id);
    set(lrow, lc, olf::d_id, op.d);
    set(lrow, lc, olf::w_id, op.w);
    set(lrow, lc, olf::number, l + 1);
    set(lrow, lc, olf::i_id, ln.item);
    set(lrow, lc, olf::supply_w_id, ln.supply_w);
    set(lrow, lc, olf::quantity, ln.quantity);
    set(lrow, lc, olf::amount, amount);
    std::memcpy(lrow.data() + lc.offset(olf::dist_info), srow.data() + sc.offset(sf::dist), 24);
    if (!a.put(order_line_key(op.w, op.d, o, l + 1), lrow)) return Body::kRetry;
  }
  // TPC-C's total: sum * (1 - discount) * (1 + w_tax + d_tax), in basis points, rounded down.
  const std::int64_t disc = get(crow, cc, cf::discount), tax = get(wrow, wc, wf::tax) + get(drow, dc, df::tax);
  r->value = total * (10000 - disc) / 10000 * (10000 + tax) / 10000;
  r->o_id = o;
  return Body::kDone;
}

template <class A>
Body payment(A& a, const Op& op, OpResult*) {
  const RowCodec &wc = codec(kWarehouse), &dc = codec(kDistrict), &cc = codec(kCustomer), &hc = codec(kHistory);
  std::string row;
  bool found = false;
  const std::string wk = warehouse_key(op.w);
  if (!a.get(wk, &row, &found, true)) return Body::kRetry;
  if (!found) return Body::kMissing;
  set(row, wc, wf::ytd, get(row, wc, wf::ytd) + op.amount);
  if (!a.put(wk, row)) return Body::kRetry;
  const std::string dk = district_key(op.w, op.d);
  if (!a.get(dk, &row, &found, true)) return Body::kRetry;
  if (!found) return Body::kMissing;
  set(row, dc, df::ytd, get(row, dc, df::ytd) + op.amount);
  if (!a.put(dk, row)) return Body::kRetry;
  std::uint32_t c = op.c;
  if (op.by_name)
    if (const Body b = customer_by_name(a, op.c_w, op.c_d, op.c_last, &c); b != Body::kDone) return b;
  const std::string ck = customer_key(op.c_w, op.c_d, c);
  if (!a.get(ck, &row, &found, true)) return Body::kRetry;
  if (!found) return Body::kMissing;
  set(row, cc, cf::balance, get(row, cc, cf::balance) - op.amount);
  set(row, cc, cf::ytd_payment, get(row, cc, cf::ytd_payment) + op.amount);
  set(row, cc, cf::payment_cnt, get(row, cc, cf::payment_cnt) + 1);
  if (!a.put(ck, row)) return Body::kRetry;
  std::string h = blank(kHistory);
  set(h, hc, hf::c_id, c);
  set(h, hc, hf::c_d_id, op.c_d);
  set(h, hc, hf::c_w_id, op.c_w);
  set(h, hc, hf::d_id, op.d);
  set(h, hc, hf::w_id, op.w);
  set(h, hc, hf::date, op.date);
  set(h, hc, hf::amount, op.amount);
  if (!a.put(history_key(op.w, op.d, op.h_id), h)) return Body::kRetry;
  return Body::kDone;
}

// CH's Q3 by its READ plan (docs/compute.md, "Q3: READ vs SNAPSHOT"): index nested-loop joins
// driven from NEW-ORDER, an order and its customer read per new order, the order's lines only
// for a customer the filter selects. NEW-ORDER is read whole, or with `starts`
// (DeliveryHints::query_starts at the adapter's snapshot) district by district from them. Appends
// the rows to *rows in Q3's result order and adds the rows read to *rows_read.
template <class A>
Body q3_read(A& a, const StateFilter& f, std::vector<Q3Row>* rows, std::size_t* rows_read,
             std::span<const std::uint32_t> starts = {}) {
  const RowCodec &cc = codec(kCustomer), &oc = codec(kOrder), &nc = codec(kNewOrder), &lc = codec(kOrderLine);
  std::string lo, hi, row;
  std::vector<std::pair<std::string, std::string>> news, lines;
  std::vector<SnapshotArg> ranges;
  new_order_ranges(starts, &ranges);
  for (const SnapshotArg& r : ranges)
    if (!a.range(r.range.start, r.range.end, 0, &news)) return Body::kRetry;
  *rows_read += news.size();
  for (const auto& [k, v] : news) {
    const auto w = static_cast<std::uint32_t>(get(v, nc, nof::w_id)), d = static_cast<std::uint32_t>(get(v, nc, nof::d_id)),
               o = static_cast<std::uint32_t>(get(v, nc, nof::o_id));
    bool found = false;
    if (!a.get(order_key(w, d, o), &row, &found, false)) return Body::kRetry;
    ++*rows_read;
    if (!found || get(row, oc, of::entry_d) <= kDate2007) continue;
    const std::int64_t entry_d = get(row, oc, of::entry_d);
    if (!a.get(customer_key(w, d, static_cast<std::uint32_t>(get(row, oc, of::c_id))), &row, &found, false))
      return Body::kRetry;
    ++*rows_read;
    if (!found || !f.match(std::string_view(row).substr(cc.offset(cf::state), 2))) continue;
    order_lines_range(w, d, o, &lo, &hi);
    lines.clear();
    if (!a.range(lo, hi, 0, &lines)) return Body::kRetry;
    *rows_read += lines.size();
    if (lines.empty()) continue;
    std::int64_t revenue = 0;
    for (const auto& l : lines) revenue += get(l.second, lc, olf::amount);
    rows->push_back({o, w, d, revenue, entry_d});
  }
  sort_q3(rows);
  return Body::kDone;
}

template <class A>
Body delivery(A& a, const Op& op, OpResult* r, DeliveryHints* hints) {
  const RowCodec &cc = codec(kCustomer), &oc = codec(kOrder), &lc = codec(kOrderLine);
  // In phases over the ten districts, so that the reads of one phase, which do not depend on
  // one another, go to the adapter as one batch (get_many); each district's steps keep their
  // order, and the districts touch disjoint rows.
  std::vector<std::pair<std::string, std::string>> kv;
  std::string lo, hi;
  std::array<std::uint32_t, kDistricts> ds{}, os{};  // districts with an undelivered order, and it
  std::array<std::string, kDistricts> keys, rows;
  std::array<std::string_view, kDistricts> views;
  bool found[kDistricts];
  unsigned n = 0;
  // 1. Each district's oldest undelivered order. With hints, first the NEW-ORDER keys at the
  // hints, by one batched point read: a hint is at or below the district's oldest undelivered
  // order, so a key present there is the answer, and no range read is needed (a range read
  // per district walked the ordered index). A district whose key is absent reads the range
  // from its hint.
  std::array<std::uint32_t, kDistricts> at{};  // the hints; 0: none, or its key is absent
  if (hints) {
    for (std::uint32_t d = 1; d <= kDistricts; ++d) {
      at[d - 1] = hints->start(op.w, d);
      views[d - 1] = keys[d - 1] = new_order_key(op.w, d, at[d - 1]);
    }
    if (!get_many(a, views.data(), kDistricts, rows.data(), found, false)) return Body::kRetry;
    for (std::uint32_t d = 1; d <= kDistricts; ++d)
      if (!found[d - 1]) at[d - 1] = 0;
  }
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    std::uint32_t o = at[d - 1];
    std::string key;
    if (o != 0) {
      key = keys[d - 1];
    } else {
      new_orders_range(op.w, d, hints ? hints->start(op.w, d) : 0, &lo, &hi);
      kv.clear();
      if (!a.range(lo, hi, 1, &kv)) return Body::kRetry;
      if (kv.empty()) continue;  // none: skipped, as TPC-C allows
      o = static_cast<std::uint32_t>(get(kv[0].second, codec(kNewOrder), nof::o_id));
      key = std::move(kv[0].first);
    }
    if (hints) hints->observe(op.w, d, o);
    ds[n] = d;
    os[n] = o;
    keys[n] = std::move(key);
    ++n;
  }
  // 2. Their NEW-ORDER rows, read for update (a locking store locks them), then deleted.
  for (unsigned i = 0; i < n; ++i) views[i] = keys[i];
  if (!get_many(a, views.data(), n, rows.data(), found, true)) return Body::kRetry;
  for (unsigned i = 0; i < n; ++i) {
    if (!found[i]) return Body::kRetry;  // delivered meanwhile
    if (!a.del(keys[i])) return Body::kRetry;
  }
  // 3. The orders: the carrier set, the customer and the line count read.
  for (unsigned i = 0; i < n; ++i) views[i] = keys[i] = order_key(op.w, ds[i], os[i]);
  if (!get_many(a, views.data(), n, rows.data(), found, true)) return Body::kRetry;
  std::array<std::uint32_t, kDistricts> cs{}, lines{};
  for (unsigned i = 0; i < n; ++i) {
    if (!found[i]) return Body::kMissing;
    cs[i] = static_cast<std::uint32_t>(get(rows[i], oc, of::c_id));
    const std::int64_t cnt = get(rows[i], oc, of::ol_cnt);
    if (cnt < 1 || cnt > static_cast<std::int64_t>(kMaxLines)) return Body::kMissing;
    lines[i] = static_cast<std::uint32_t>(cnt);
    set(rows[i], oc, of::carrier_id, op.carrier);
    if (!a.put(keys[i], rows[i])) return Body::kRetry;
  }
  // 4. Each order's lines 1 .. O_OL_CNT, every order's at once by one batched point read (a range
  // read per order walked the ordered index): the delivery date set, the amounts summed.
  std::array<std::string, kDistricts * kMaxLines> lkeys, lrows;
  std::array<std::string_view, kDistricts * kMaxLines> lviews;
  bool lfound[kDistricts * kMaxLines];
  unsigned nl = 0;
  for (unsigned i = 0; i < n; ++i)
    for (std::uint32_t l = 1; l <= lines[i]; ++l, ++nl) lviews[nl] = lkeys[nl] = order_line_key(op.w, ds[i], os[i], l);
  if (!get_many(a, lviews.data(), nl, lrows.data(), lfound, true)) return Body::kRetry;
  std::array<std::int64_t, kDistricts> sums{};
  for (unsigned i = 0, k = 0; i < n; ++i) {
    for (std::uint32_t l = 1; l <= lines[i]; ++l, ++k) {
      if (!lfound[k]) return Body::kMissing;
      sums[i] += get(lrows[k], lc, olf::amount);
      set(lrows[k], lc, olf::delivery_d, op.date);
      if (!a.put(lkeys[k], lrows[k])) return Body::kRetry;
    }
  }
  // 5. The customers: balance and delivery count.
  for (unsigned i = 0; i < n; ++i) views[i] = keys[i] = customer_key(op.w, ds[i], cs[i]);
  if (!get_many(a, views.data(), n, rows.data(), found, true)) return Body::kRetry;
  for (unsigned i = 0; i < n; ++i) {
    if (!found[i]) return Body::kMissing;
    set(rows[i], cc, cf::balance, get(rows[i], cc, cf::balance) + sums[i]);
    set(rows[i], cc, cf::delivery_cnt, get(rows[i], cc, cf::delivery_cnt) + 1);
    if (!a.put(keys[i], rows[i])) return Body::kRetry;
    r->delivered[ds[i] - 1] = os[i];
  }
  r->value = n;
  return Body::kDone;
}

// Order-Status: the customer (by id, or by last name), then its newest order among the district's
// last 20 (a documented simplification: there is no index of orders by customer) and that order's
// lines.
template <class A>
Body order_status(A& a, const Op& op, OpResult* r) {
  const RowCodec &dc = codec(kDistrict), &oc = codec(kOrder);
  std::string row;
  bool found = false;
  std::uint32_t c = op.c;
  if (op.by_name)
    if (const Body b = customer_by_name(a, op.w, op.d, op.c_last, &c); b != Body::kDone) return b;
  if (!a.get(customer_key(op.w, op.d, c), &row, &found, false)) return Body::kRetry;
  if (!found) return Body::kMissing;
  if (!a.get(district_key(op.w, op.d), &row, &found, false)) return Body::kRetry;
  if (!found) return Body::kMissing;
  const std::int64_t next = get(row, dc, df::next_o_id);
  const auto first = static_cast<std::uint32_t>(std::max<std::int64_t>(1, next - 20));
  std::vector<std::pair<std::string, std::string>> kv, lines;
  if (!a.range(order_key(op.w, op.d, first), order_key(op.w, op.d, static_cast<std::uint32_t>(next)), 0, &kv))
    return Body::kRetry;
  std::int64_t newest = 0;
  for (auto& [k, v] : kv)
    if (get(v, oc, of::c_id) == c) newest = get(v, oc, of::id);
  r->value = 0;
  if (newest > 0) {
    std::string lo, hi;
    order_lines_range(op.w, op.d, static_cast<std::uint32_t>(newest), &lo, &hi);
    if (!a.range(lo, hi, 0, &lines)) return Body::kRetry;
    r->value = static_cast<std::int64_t>(lines.size());
  }
  return Body::kDone;
}

// Stock-Level: distinct items of the district's last 20 orders whose stock is below the threshold.
template <class A>
Body stock_level(A& a, const Op& op, OpResult* r) {
  const RowCodec &dc = codec(kDistrict), &lc = codec(kOrderLine), &sc = codec(kStock);
  std::string row;
  bool found = false;
  if (!a.get(district_key(op.w, op.d), &row, &found, false)) return Body::kRetry;
  if (!found) return Body::kMissing;
  const std::int64_t next = get(row, dc, df::next_o_id);
  const auto first = static_cast<std::uint32_t>(std::max<std::int64_t>(1, next - 20));
  std::vector<std::pair<std::string, std::string>> kv;
  if (!a.range(order_line_key(op.w, op.d, first, 0), order_line_key(op.w, op.d, static_cast<std::uint32_t>(next), 0),
               0, &kv))
    return Body::kRetry;
  std::set<std::int64_t> items;
  for (auto& [k, v] : kv) items.insert(get(v, lc, olf::i_id));
  std::int64_t low = 0;
  for (std::int64_t i : items) {
    if (!a.get(stock_key(op.w, static_cast<std::uint32_t>(i)), &row, &found, false)) return Body::kRetry;
    if (found && get(row, sc, sf::quantity) < op.amount) ++low;
  }
  r->value = low;
  return Body::kDone;
}

/// Runs op's body on adapter `a` (hints: Delivery's starting points, may be null).
template <class A>
Body run(A& a, const Op& op, OpResult* r, DeliveryHints* hints) {
  r->delivered = {};
  switch (op.kind) {
    case Kind::kNewOrder: return new_order(a, op, r);
    case Kind::kPayment: return payment(a, op, r);
    case Kind::kDelivery: return delivery(a, op, r, hints);
    case Kind::kOrderStatus: return order_status(a, op, r);
    case Kind::kStockLevel: return stock_level(a, op, r);
  }
  return Body::kMissing;
}

/// TPC-C consistency conditions 1-4 of warehouses 1 .. `warehouses` at the adapter's snapshot
/// (Ch::check_consistency): kDone with *violation empty when they hold, else naming the first
/// violation; kRetry when the adapter refused a read.
template <class A>
Body check_consistency(A& a, std::uint32_t warehouses, std::string* violation) {
  const RowCodec &wc = codec(kWarehouse), &dc = codec(kDistrict), &oc = codec(kOrder), &nc = codec(kNewOrder);
  std::vector<std::pair<std::string, std::string>> kv;
  std::string lo, hi;
  auto scan = [&](std::string_view prefix) {
    prefix_range(prefix, &lo, &hi);
    kv.clear();
    return a.range(lo, hi, 0, &kv);
  };
  violation->clear();
  auto fail = [&](std::uint32_t w, std::uint32_t d, const std::string& what) {
    *violation = "ch consistency: warehouse " + std::to_string(w) +
                 (d ? " district " + std::to_string(d) : std::string()) + ": " + what;
    return Body::kDone;
  };
  for (std::uint32_t w = 1; w <= warehouses; ++w) {
    std::string row;
    bool found = false;
    if (!a.get(warehouse_key(w), &row, &found, false)) return Body::kRetry;
    if (!found) return fail(w, 0, "no warehouse row");
    const std::int64_t w_ytd = get(row, wc, wf::ytd);
    std::int64_t d_ytd = 0;
    for (std::uint32_t d = 1; d <= kDistricts; ++d) {
      if (!a.get(district_key(w, d), &row, &found, false)) return Body::kRetry;
      if (!found) return fail(w, d, "no district row");
      d_ytd += get(row, dc, df::ytd);
      const std::int64_t next = get(row, dc, df::next_o_id);
      // Condition 2 (orders) and 4.
      std::string p = order_key(w, d, 0);
      p.resize(4);
      if (!scan(p)) return Body::kRetry;
      std::int64_t max_o = 0, ol_cnt = 0;
      for (auto& [k, v] : kv) {
        max_o = std::max(max_o, get(v, oc, of::id));
        ol_cnt += get(v, oc, of::ol_cnt);
      }
      if (next - 1 != max_o)
        return fail(w, d, "D_NEXT_O_ID - 1 = " + std::to_string(next - 1) + " but max(O_ID) = " + std::to_string(max_o));
      p = order_line_key(w, d, 0, 0);
      p.resize(4);
      if (!scan(p)) return Body::kRetry;
      if (static_cast<std::int64_t>(kv.size()) != ol_cnt)
        return fail(w, d, "sum(O_OL_CNT) = " + std::to_string(ol_cnt) + " but ORDER-LINE has " +
                              std::to_string(kv.size()) + " rows");
      // Conditions 2 (new orders) and 3.
      p = new_order_key(w, d, 0);
      p.resize(4);
      if (!scan(p)) return Body::kRetry;
      if (!kv.empty()) {
        const std::int64_t min_no = get(kv.front().second, nc, nof::o_id), max_no = get(kv.back().second, nc, nof::o_id);
        if (max_no != max_o)
          return fail(w, d, "max(NO_O_ID) = " + std::to_string(max_no) + " but max(O_ID) = " + std::to_string(max_o));
        if (max_no - min_no + 1 != static_cast<std::int64_t>(kv.size()))
          return fail(w, d, "max(NO_O_ID) - min(NO_O_ID) + 1 = " + std::to_string(max_no - min_no + 1) +
                                " but NEW-ORDER has " + std::to_string(kv.size()) + " rows");
      }
    }
    if (w_ytd != d_ytd)
      return fail(w, 0, "W_YTD = " + std::to_string(w_ytd) + " but sum(D_YTD) = " + std::to_string(d_ytd));
  }
  return Body::kDone;
}

}  // namespace procs
}  // namespace duet::compute::ch

// TPC-C generators for Epic (host only): NP (NewOrder and Payment, 50/50) and the full mix
// (NewOrder 45, Payment 43, OrderStatus 4, Delivery 4, StockLevel 4). Customers are chosen by id.
// 1% of NewOrders name an unused item and roll back; 1% of order lines come from a remote
// warehouse and 15% of payments pay a remote customer, when there is more than one warehouse.
// The txns address the tables of one layout (TpccLayout, tpcc.hpp): rows, or split rows' fields.
//
// Reconnaissance. Every key a txn declares, the data-dependent ones included, is found before its
// epoch runs, from the generator's model of the committed state after every txn generated
// before it (epochs run in submission order, so the model is the state each txn will see):
//   - a NewOrder's order id: the district's next order id (a counter per district; a rollback
//     does not take an id);
//   - OrderStatus: the customer's last order, from a (customer, order) index on LIT (key
//     customer << 32 | order id; the last entry of the customer's range), and its line count;
//   - Delivery: the district's oldest undelivered order (a per-district head), its customer and
//     line count; one txn per district with such an order;
//   - StockLevel: the district's next order id, the lines of its last 20 orders and their
//     distinct items.
// The procedures check each prediction and rerun on a wrong one (tpcc.hpp).
#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "batch/epic/tpcc.hpp"
#include "index/lit/lit.hpp"

namespace duet::batch::epic {

enum class TpccMix { kNp, kFull };

/// Generates TPC-C txns into batches, in serial order, with reconnaissance (see above).
class TpccGenerator {
 public:
  TpccGenerator(std::uint32_t warehouses, std::uint64_t seed, TpccMix mix = TpccMix::kNp,
                TpccLayout layout = TpccLayout::kRecords)
      : w_(warehouses), mix_(mix), layout_(layout), rng_(seed), next_o_(warehouses * 10, kFirstOrderId),
        deliver_next_(warehouses * 10, kFirstOrderId), orders_(warehouses * 10) {
    if (mix_ != TpccMix::kFull) return;
    lit::Config c;
    c.predicted_min = 0;
    c.predicted_max = (static_cast<std::uint64_t>(warehouses) * 10 * kCustomersPerDistrict) << 32;
    c.buckets = 65536;
    c.resize_load = 0;  // a fixed root level: the keys spread evenly over the predicted range
    Status st = lit::Map::create(c, &index_);
    if (st.ok()) st = index_->open_session(&session_);
    if (!st.ok()) error_ = "the (customer, order) index: " + st.to_string();
  }
  ~TpccGenerator() { session_.reset(); }

  /// Piece splitting: each Payment as three pieces (TpccProcs::kAddPiece for the warehouse's and
  /// the district's ytd, then kPaymentCustomerPiece), the same txns and draws as without.
  void set_split_payments(bool on) { split_payments_ = on; }

  /// "" or why the generator cannot run (generate then adds nothing).
  const std::string& error() const { return error_; }

  /// Appends `n` txns to `b`, tagged first_tag, first_tag + 1, ...
  void generate(std::size_t n, Batch* b, std::uint64_t first_tag = 0) {
    if (!error_.empty()) return;
    for (std::size_t t = 0; t < n; ++t) {
      const std::uint64_t tag = first_tag + t;
      if (!pieces_.empty()) {  // the rest of a Delivery: one txn per district
        const Piece p = pieces_.front();
        pieces_.pop_front();
        delivery_piece(p, b, tag);
        continue;
      }
      const std::uint32_t w = pick(w_), d = pick(10), cid = pick(kCustomersPerDistrict);
      if (mix_ == TpccMix::kNp) {
        if (rng_() % 2 == 0) new_order(w, d, cid, b, tag);
        else payment(w, d, cid, b, tag);
        continue;
      }
      const std::uint32_t r = pick(100);
      if (r < 45) new_order(w, d, cid, b, tag);
      else if (r < 88) payment(w, d, cid, b, tag);
      else if (r < 92) order_status(w, d, cid, b, tag);
      else if (r < 96) {
        const std::uint32_t carrier = 1 + pick(10), date = ++date_;
        for (std::uint32_t dd = 1; dd < 10; ++dd) pieces_.push_back({w, dd, carrier, date});
        delivery_piece({w, 0, carrier, date}, b, tag);
      } else stock_level(w, d, b, tag);
    }
  }

 private:
  struct Order {
    std::uint32_t cid;
    std::vector<std::uint32_t> items;
  };
  struct Piece {
    std::uint32_t w, d, carrier, date;
  };

  void new_order(std::uint32_t w, std::uint32_t d, std::uint32_t cid, Batch* b, std::uint64_t tag) {
    std::vector<Key> r, wr;
    const std::uint32_t lines = 5 + pick(11);
    const bool rollback = pick(100) == 0;
    std::vector<std::uint32_t> items;
    while (items.size() < lines) {
      const std::uint32_t i = pick(kItems - 1);
      if (std::find(items.begin(), items.end(), i) == items.end()) items.push_back(i);
    }
    if (rollback) items.back() = kItems - 1;
    const std::uint64_t dk = district_key(w, d);
    std::uint32_t& ctr = next_o_[dk];
    const std::uint32_t o = ctr;
    std::vector<std::uint32_t> a = {lines, o, w};
    const std::uint64_t ck = customer_key(w, d, cid);
    if (split()) r = {warehouse(w, kWTax), district(dk, kDNextOrderId), district(dk, kDTax), customer(ck, kCDiscount)};
    else r = {{kWarehouse, w}, {kDistrict, dk}, {kCustomer, ck}};
    for (auto i : items) r.push_back({kItem, i});
    std::vector<std::uint32_t> supply;
    for (std::size_t l = 0; l < items.size(); ++l) {
      const std::uint32_t sw = (w_ > 1 && pick(100) == 0) ? (w + 1 + pick(w_ - 1)) % w_ : w;
      supply.push_back(sw);
      a.push_back(1 + pick(10));
      a.push_back(sw);
    }
    a.push_back(cid);
    for (std::size_t l = 0; l < items.size(); ++l) r.push_back({kStock, static_cast<std::uint64_t>(supply[l]) * kItems + items[l]});
    wr.push_back(district(dk, kDNextOrderId));
    for (std::size_t l = 0; l < items.size(); ++l) wr.push_back({kStock, static_cast<std::uint64_t>(supply[l]) * kItems + items[l]});
    wr.push_back({kOrder, order_key(w, d, o)});
    wr.push_back({kNewOrder, order_key(w, d, o)});
    for (std::uint32_t l = 0; l < lines; ++l) wr.push_back({kOrderLine, order_line_key(w, d, o, l)});
    b->add(proc(TpccProcs::kNewOrderProc), r, wr, a, tag, 0, w);
    if (rollback) return;  // reconnaissance: only orders that will commit take an id
    ++ctr;
    if (mix_ != TpccMix::kFull) return;
    orders_[dk].push_back({cid, std::move(items)});
    if (session_->upsert((customer_key(w, d, cid) << 32) | o, lines) != lit::Result::kOk)
      error_ = "the (customer, order) index refused an order";
  }

  void payment(std::uint32_t w, std::uint32_t d, std::uint32_t cid, Batch* b, std::uint64_t tag) {
    const std::uint32_t cw = (w_ > 1 && pick(100) < 15) ? (w + 1 + pick(w_ - 1)) % w_ : w;
    const std::uint32_t cd = cw == w ? d : pick(10);
    const std::uint64_t dk = district_key(w, d), ck = customer_key(cw, cd, cid);
    std::vector<Key> r;
    if (split())
      r = {warehouse(w, kWYtd), district(dk, kDYtd), customer(ck, kCBalance), customer(ck, kCYtdPayment),
           customer(ck, kCPaymentCnt)};
    else r = {{kWarehouse, w}, {kDistrict, dk}, {kCustomer, ck}};
    std::vector<Key> wr = r;
    wr.push_back({kHistory, history_++});
    const std::uint32_t amount = 1 + pick(5000);
    if (!split_payments_) {
      b->add(proc(TpccProcs::kPaymentProc), r, wr, {amount}, tag, 0, w);
      return;
    }
    // The pieces: r's first two keys are the warehouse's and the district's (their ytd when split).
    b->add(proc(TpccProcs::kAddPiece), {r[0]}, {r[0]}, {amount, split() ? 0u : std::uint32_t{kWYtd}}, tag, 0, w);
    b->add_piece(proc(TpccProcs::kAddPiece), {r[1]}, {r[1]}, {amount, split() ? 0u : std::uint32_t{kDYtd}});
    b->add_piece(proc(TpccProcs::kPaymentCustomerPiece), std::vector<Key>(r.begin() + 2, r.end()),
                 std::vector<Key>(wr.begin() + 2, wr.end()), {amount});
  }

  void order_status(std::uint32_t w, std::uint32_t d, std::uint32_t cid, Batch* b, std::uint64_t tag) {
    const std::uint64_t ck = customer_key(w, d, cid);
    std::vector<Key> r = {customer(ck, kCBalance)};
    std::uint32_t has = 0, n = 0;
    found_.clear();
    lit::RangePage page;
    if (session_->range(ck << 32, (ck << 32) | 0xFFFFFFFFull, &found_, &page).ok() && !found_.empty()) {
      const std::uint32_t o = static_cast<std::uint32_t>(found_.back().first);
      has = 1;
      n = static_cast<std::uint32_t>(found_.back().second);
      r.push_back({kOrder, order_key(w, d, o)});
      for (std::uint32_t l = 0; l < n; ++l) r.push_back({kOrderLine, order_line_key(w, d, o, l)});
    }
    b->add(proc(TpccProcs::kOrderStatusProc), r, {}, {cid, has, n}, tag, 0, w);
  }

  void delivery_piece(const Piece& p, Batch* b, std::uint64_t tag) {
    const std::uint64_t dk = district_key(p.w, p.d);
    std::uint32_t& head = deliver_next_[dk];
    if (head == next_o_[dk]) {  // nothing to deliver in this district: an empty txn keeps the count
      b->add(proc(TpccProcs::kDeliveryProc), {}, {}, {0, 0, p.carrier, p.date}, tag, 0, p.w);
      return;
    }
    const std::uint32_t o = head++;
    const Order& ord = orders_[dk][o - kFirstOrderId];
    const std::uint32_t n = static_cast<std::uint32_t>(ord.items.size());
    std::vector<Key> r = {{kNewOrder, order_key(p.w, p.d, o)}, {kOrder, order_key(p.w, p.d, o)}};
    for (std::uint32_t l = 0; l < n; ++l) r.push_back({kOrderLine, order_line_key(p.w, p.d, o, l)});
    const std::uint64_t ck = customer_key(p.w, p.d, ord.cid);
    r.push_back(customer(ck, kCBalance));
    if (split()) r.push_back(customer(ck, kCDeliveryCnt));
    b->add(proc(TpccProcs::kDeliveryProc), r, r, {ord.cid, n, p.carrier, p.date}, tag, 0, p.w);
  }

  void stock_level(std::uint32_t w, std::uint32_t d, Batch* b, std::uint64_t tag) {
    const std::uint64_t dk = district_key(w, d);
    const std::uint32_t next = next_o_[dk], first = next >= kFirstOrderId + 20 ? next - 20 : kFirstOrderId;
    std::vector<Key> r = {district(dk, kDNextOrderId)};
    std::vector<std::uint32_t> items;
    for (std::uint32_t o = first; o < next; ++o) {
      const Order& ord = orders_[dk][o - kFirstOrderId];
      for (std::uint32_t l = 0; l < ord.items.size(); ++l) {
        r.push_back({kOrderLine, order_line_key(w, d, o, l)});
        if (std::find(items.begin(), items.end(), ord.items[l]) == items.end()) items.push_back(ord.items[l]);
      }
    }
    const std::uint32_t k = static_cast<std::uint32_t>(r.size() - 1);
    for (auto i : items) r.push_back({kStock, static_cast<std::uint64_t>(w) * kItems + i});
    b->add(proc(TpccProcs::kStockLevelProc), r, {}, {10 + pick(11), next, k}, tag, 0, w);
  }

  bool split() const { return layout_ == TpccLayout::kSplit; }
  std::uint32_t proc(std::uint32_t p) const { return split() ? p | TpccProcs::kSplit : p; }
  // The item of a row's field: the row itself in the record layout.
  Key warehouse(std::uint64_t w, std::uint32_t f) const { return {kWarehouse, field_key(w, kWarehouseFields, f, layout_)}; }
  Key district(std::uint64_t dk, std::uint32_t f) const { return {kDistrict, field_key(dk, kDistrictFields, f, layout_)}; }
  Key customer(std::uint64_t ck, std::uint32_t f) const { return {kCustomer, field_key(ck, kCustomerFields, f, layout_)}; }

  std::uint32_t pick(std::uint32_t n) { return static_cast<std::uint32_t>(rng_() % n); }
  std::uint32_t w_;
  TpccMix mix_;
  TpccLayout layout_;
  bool split_payments_ = false;
  std::mt19937_64 rng_;
  std::vector<std::uint32_t> next_o_, deliver_next_;
  std::vector<std::vector<Order>> orders_;  ///< per district, by order id - kFirstOrderId (full mix)
  std::deque<Piece> pieces_;
  std::uint64_t history_ = 0;
  std::uint32_t date_ = 0;
  std::unique_ptr<lit::Map> index_;
  std::unique_ptr<lit::Session> session_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> found_;
  std::string error_;
};

}  // namespace duet::batch::epic

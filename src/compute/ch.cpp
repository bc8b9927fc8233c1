// CH-benCHmark on a txn keyspace: schema, loader, work generator, transactions and the queries
// Q1, Q6 and Q3 through the compute operators (ch.hpp; docs/compute.md, "CH-benCHmark").
#include "compute/ch.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <random>
#include <thread>
#include <tuple>

#include "compute/ch_procs.hpp"

namespace duet::compute::ch {

namespace {

std::uint64_t mix64(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A small portable generator (the standard distributions' algorithms are the library's choice).
struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(mix64(seed)) {}
  std::uint64_t next() { return g(); }
  /// Uniform in [lo, hi].
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  /// TPC-C's NURand(A, x, y) with the run constant C.
  std::int64_t nurand(std::int64_t A, std::int64_t x, std::int64_t y, std::int64_t C) {
    return (((uniform(0, A) | uniform(x, y)) + C) % (y - x + 1)) + x;
  }
  std::string alnum(std::size_t n) {
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string s(n, ' ');
    for (char& c : s) c = kChars[g() % 62];
    return s;
  }
};

// NURand's A scaled to a table smaller than TPC-C's (A = 8191 for 100,000 items, 1023 for 3,000
// customers): the largest 2^k - 1 not above n / 12 (at least 1).
std::int64_t nurand_a(std::uint32_t n, std::int64_t full_a, std::uint32_t full_n) {
  if (n >= full_n) return full_a;
  std::int64_t a = 1;
  while ((a * 2 + 1) * 12 <= static_cast<std::int64_t>(n)) a = a * 2 + 1;
  return a;
}

void put_be(std::string& k, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) k.push_back(static_cast<char>(v >> (8 * i)));
}
std::string key_of(Tag t) { return std::string(1, static_cast<char>(t)); }

RowCodec make_codec(std::vector<Field> f) {
  RowCodec c;
  const Status s = RowCodec::make(std::move(f), &c);
  if (!s.ok()) std::abort();  // the schemas below are constants
  return c;
}

constexpr Type I = Type::kInt64, M = Type::kMoney, B = Type::kBytes;

}  // namespace

Status Scale::check() const {
  if (warehouses == 0 || warehouses > 65535) return Status::InvalidArgument("ch: warehouses must be 1 .. 65535");
  if (items < 10 || items > 1000000) return Status::InvalidArgument("ch: items must be 10 .. 10^6");
  if (customers < 10 || customers > 1000000) return Status::InvalidArgument("ch: customers must be 10 .. 10^6");
  if (orders < 10 || orders > customers) return Status::InvalidArgument("ch: orders must be 10 .. customers");
  if (new_orders > orders) return Status::InvalidArgument("ch: new_orders must be at most orders");
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Keys and rows

std::string warehouse_key(std::uint32_t w) {
  std::string k = key_of(kWarehouse);
  put_be(k, w, 2);
  return k;
}
std::string district_key(std::uint32_t w, std::uint32_t d) {
  std::string k = key_of(kDistrict);
  put_be(k, w, 2);
  put_be(k, d, 1);
  return k;
}
std::string customer_key(std::uint32_t w, std::uint32_t d, std::uint32_t c) {
  std::string k = key_of(kCustomer);
  put_be(k, w, 2);
  put_be(k, d, 1);
  put_be(k, c, 4);
  return k;
}
std::string history_key(std::uint32_t w, std::uint32_t d, std::uint64_t h) {
  std::string k = key_of(kHistory);
  put_be(k, w, 2);
  put_be(k, d, 1);
  put_be(k, h, 8);
  return k;
}
std::string new_order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o) {
  std::string k = key_of(kNewOrder);
  put_be(k, w, 2);
  put_be(k, d, 1);
  put_be(k, o, 4);
  return k;
}
std::string order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o) {
  std::string k = key_of(kOrder);
  put_be(k, w, 2);
  put_be(k, d, 1);
  put_be(k, o, 4);
  return k;
}
std::string order_line_key(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t l) {
  std::string k = key_of(kOrderLine);
  put_be(k, w, 2);
  put_be(k, d, 1);
  put_be(k, o, 4);
  put_be(k, l, 1);
  return k;
}
std::string item_key(std::uint32_t i) {
  std::string k = key_of(kItem);
  put_be(k, i, 4);
  return k;
}
std::string stock_key(std::uint32_t w, std::uint32_t i) {
  std::string k = key_of(kStock);
  put_be(k, w, 2);
  put_be(k, i, 4);
  return k;
}

std::string last_name(std::uint32_t n) {
  static constexpr const char* kSyllables[] = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"};
  n %= 1000;
  return std::string(kSyllables[n / 100]) + kSyllables[n / 10 % 10] + kSyllables[n % 10];
}

namespace {
void put_padded(std::string& k, std::string_view s, std::size_t width) {
  s = s.substr(0, std::min(s.size(), width));
  k.append(s);
  k.append(width - s.size(), '\0');
}
}  // namespace

std::string customer_name_prefix(std::uint32_t w, std::uint32_t d, std::string_view last) {
  std::string k = key_of(kCustomerName);
  put_be(k, w, 2);
  put_be(k, d, 1);
  put_padded(k, last, 16);
  return k;
}

std::string customer_name_key(std::uint32_t w, std::uint32_t d, std::string_view last, std::string_view first,
                              std::uint32_t c) {
  std::string k = customer_name_prefix(w, d, last);
  put_padded(k, first, 16);
  put_be(k, c, 4);
  return k;
}

void table_range(Tag t, std::string* lo, std::string* hi) {
  *lo = key_of(t);
  *hi = key_of(static_cast<Tag>(t + 1));
}

void prefix_range(std::string_view prefix, std::string* lo, std::string* hi) {
  lo->assign(prefix);
  hi->assign(prefix);
  // The smallest key above every key with this prefix: increment the last byte that is not 0xff.
  while (!hi->empty() && static_cast<unsigned char>(hi->back()) == 0xff) hi->pop_back();
  if (!hi->empty()) hi->back() = static_cast<char>(static_cast<unsigned char>(hi->back()) + 1);
}

const RowCodec& codec(Tag t) {
  static const std::array<RowCodec, 11> codecs = [] {
    std::array<RowCodec, 11> a;
    a[kWarehouse] = make_codec({{"w_id", I}, {"w_tax", I}, {"w_ytd", M}, {"w_name", B, 10}});
    a[kDistrict] = make_codec({{"d_id", I}, {"d_w_id", I}, {"d_tax", I}, {"d_ytd", M}, {"d_next_o_id", I}});
    a[kCustomer] = make_codec({{"c_id", I}, {"c_d_id", I}, {"c_w_id", I}, {"c_discount", I}, {"c_credit", B, 2},
                               {"c_last", B, 16}, {"c_state", B, 2}, {"c_balance", M}, {"c_ytd_payment", M},
                               {"c_payment_cnt", I}, {"c_delivery_cnt", I}, {"c_first", B, 16}});
    a[kHistory] = make_codec({{"h_c_id", I}, {"h_c_d_id", I}, {"h_c_w_id", I}, {"h_d_id", I}, {"h_w_id", I},
                              {"h_date", I}, {"h_amount", M}});
    a[kNewOrder] = make_codec({{"no_o_id", I}, {"no_d_id", I}, {"no_w_id", I}});
    a[kOrder] = make_codec({{"o_id", I}, {"o_d_id", I}, {"o_w_id", I}, {"o_c_id", I}, {"o_entry_d", I},
                            {"o_carrier_id", I}, {"o_ol_cnt", I}, {"o_all_local", I}});
    a[kOrderLine] = make_codec({{"ol_o_id", I}, {"ol_d_id", I}, {"ol_w_id", I}, {"ol_number", I}, {"ol_i_id", I},
                                {"ol_supply_w_id", I}, {"ol_delivery_d", I}, {"ol_quantity", I}, {"ol_amount", M},
                                {"ol_dist_info", B, 24}});
    a[kItem] = make_codec({{"i_id", I}, {"i_im_id", I}, {"i_price", M}, {"i_name", B, 24}, {"i_data", B, 32}});
    a[kStock] = make_codec({{"s_i_id", I}, {"s_w_id", I}, {"s_quantity", I}, {"s_ytd", I}, {"s_order_cnt", I},
                            {"s_remote_cnt", I}, {"s_dist", B, 24}, {"s_data", B, 32}});
    a[kCustomerName] = make_codec({{"cn_c_id", I}});
    a[0] = a[kNewOrder];  // unused tag
    return a;
  }();
  return codecs[t <= kCustomerName ? t : 0];
}

void set_bytes(std::string& row, const RowCodec& c, std::size_t f, std::string_view s) {
  const std::uint32_t w = c.fields()[f].width;
  char* p = row.data() + c.offset(f);
  const std::size_t n = std::min<std::size_t>(w, s.size());
  std::memcpy(p, s.data(), n);
  std::memset(p + n, 0, w - n);
}

Status generate(const Scale& s, unsigned part, unsigned parts,
                const std::function<Status(std::string_view, std::string_view)>& sink) {
  if (Status st = s.check(); !st.ok()) return st;
  if (parts == 0 || part >= parts) return Status::InvalidArgument("ch generate: part must be below parts");
#define CH_SINK(k, v)                               \
  do {                                              \
    if (Status st_ = sink((k), (v)); !st_.ok()) return st_; \
  } while (0)
  if (part == 0) {
    const RowCodec& ic = codec(kItem);
    Rng r(s.seed ^ 0x17e4);
    for (std::uint32_t i = 1; i <= s.items; ++i) {
      std::string row = blank(kItem);
      set(row, ic, itf::id, i);
      set(row, ic, itf::im_id, r.uniform(1, 10000));
      set(row, ic, itf::price, r.uniform(100, 10000));
      set_bytes(row, ic, itf::name, r.alnum(static_cast<std::size_t>(r.uniform(14, 24))));
      set_bytes(row, ic, itf::data, r.alnum(static_cast<std::size_t>(r.uniform(26, 32))));
      CH_SINK(item_key(i), row);
    }
  }
  const RowCodec &wc = codec(kWarehouse), &dc = codec(kDistrict), &cc = codec(kCustomer), &hc = codec(kHistory),
                 &nc = codec(kNewOrder), &oc = codec(kOrder), &lc = codec(kOrderLine), &sc = codec(kStock);
  const std::uint32_t first_new = s.orders - s.new_orders + 1;  // orders >= first_new are undelivered
  for (std::uint32_t w = 1 + part; w <= s.warehouses; w += parts) {
    Rng r(s.seed ^ mix64(0x3a7e0000ull + w));
    std::string row = blank(kWarehouse);
    set(row, wc, wf::id, w);
    set(row, wc, wf::tax, r.uniform(0, 2000));
    set(row, wc, wf::ytd, 30000000);  // 300,000.00
    set_bytes(row, wc, wf::name, r.alnum(8));
    CH_SINK(warehouse_key(w), row);
    for (std::uint32_t i = 1; i <= s.items; ++i) {
      row = blank(kStock);
      set(row, sc, sf::i_id, i);
      set(row, sc, sf::w_id, w);
      set(row, sc, sf::quantity, r.uniform(10, 100));
      set_bytes(row, sc, sf::dist, r.alnum(24));
      set_bytes(row, sc, sf::data, r.alnum(static_cast<std::size_t>(r.uniform(26, 32))));
      CH_SINK(stock_key(w, i), row);
    }
    for (std::uint32_t d = 1; d <= kDistricts; ++d) {
      row = blank(kDistrict);
      set(row, dc, df::id, d);
      set(row, dc, df::w_id, w);
      set(row, dc, df::tax, r.uniform(0, 2000));
      set(row, dc, df::ytd, 3000000);  // 30,000.00
      set(row, dc, df::next_o_id, s.orders + 1);
      CH_SINK(district_key(w, d), row);
      for (std::uint32_t c = 1; c <= s.customers; ++c) {
        row = blank(kCustomer);
        set(row, cc, cf::id, c);
        set(row, cc, cf::d_id, d);
        set(row, cc, cf::w_id, w);
        set(row, cc, cf::discount, r.uniform(0, 5000));
        set_bytes(row, cc, cf::credit, r.uniform(1, 10) == 1 ? "BC" : "GC");
        // TPC-C 4.3.3.1: the first 1,000 customers take each last name once, the rest NURand(255, 0, 999).
        const std::string last = last_name(c <= 1000 ? c - 1 : static_cast<std::uint32_t>(r.nurand(255, 0, 999, 0)));
        const std::string first = r.alnum(static_cast<std::size_t>(r.uniform(8, 16)));
        set_bytes(row, cc, cf::last, last);
        set_bytes(row, cc, cf::first, first);
        std::string state = {static_cast<char>('A' + r.uniform(0, 25)), static_cast<char>('A' + r.uniform(0, 25))};
        set_bytes(row, cc, cf::state, state);
        set(row, cc, cf::balance, -1000);
        set(row, cc, cf::ytd_payment, 1000);
        set(row, cc, cf::payment_cnt, 1);
        CH_SINK(customer_key(w, d, c), row);
        row = blank(kCustomerName);
        set(row, codec(kCustomerName), cnf::c_id, c);
        CH_SINK(customer_name_key(w, d, last, first, c), row);
        row = blank(kHistory);
        set(row, hc, hf::c_id, c);
        set(row, hc, hf::c_d_id, d);
        set(row, hc, hf::c_w_id, w);
        set(row, hc, hf::d_id, d);
        set(row, hc, hf::w_id, w);
        set(row, hc, hf::date, kLoadDate);
        set(row, hc, hf::amount, 1000);
        CH_SINK(history_key(w, d, c), row);
      }
      // Orders: customers in a random permutation (the first `orders` of it).
      std::vector<std::uint32_t> perm(s.customers);
      for (std::uint32_t c = 0; c < s.customers; ++c) perm[c] = c + 1;
      for (std::uint32_t i = s.customers; i > 1; --i) std::swap(perm[i - 1], perm[r.next() % i]);
      for (std::uint32_t o = 1; o <= s.orders; ++o) {
        const bool delivered = o < first_new;
        const std::int64_t entry = kLoadDate + o;
        const auto ol_cnt = static_cast<std::uint32_t>(r.uniform(5, kMaxLines));
        row = blank(kOrder);
        set(row, oc, of::id, o);
        set(row, oc, of::d_id, d);
        set(row, oc, of::w_id, w);
        set(row, oc, of::c_id, perm[o - 1]);
        set(row, oc, of::entry_d, entry);
        set(row, oc, of::carrier_id, delivered ? r.uniform(1, 10) : 0);
        set(row, oc, of::ol_cnt, ol_cnt);
        set(row, oc, of::all_local, 1);
        CH_SINK(order_key(w, d, o), row);
        for (std::uint32_t l = 1; l <= ol_cnt; ++l) {
          row = blank(kOrderLine);
          set(row, lc, olf::o_id, o);
          set(row, lc, olf::d_id, d);
          set(row, lc, olf::w_id, w);
          set(row, lc, olf::number, l);
          set(row, lc, olf::i_id, r.uniform(1, s.items));
          set(row, lc, olf::supply_w_id, w);
          set(row, lc, olf::delivery_d, delivered ? entry : 0);
          set(row, lc, olf::quantity, 5);
          set(row, lc, olf::amount, delivered ? 0 : r.uniform(1, 999999));
          set_bytes(row, lc, olf::dist_info, r.alnum(24));
          CH_SINK(order_line_key(w, d, o, l), row);
        }
        if (!delivered) {
          row = blank(kNewOrder);
          set(row, nc, nof::o_id, o);
          set(row, nc, nof::d_id, d);
          set(row, nc, nof::w_id, w);
          CH_SINK(new_order_key(w, d, o), row);
        }
      }
    }
  }
#undef CH_SINK
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Work

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNewOrder: return "new_order";
    case Kind::kPayment: return "payment";
    case Kind::kDelivery: return "delivery";
    case Kind::kOrderStatus: return "order_status";
    case Kind::kStockLevel: return "stock_level";
  }
  return "?";
}

std::vector<Op> make_work(const Scale& s, const Mix& mix, std::size_t n, std::uint64_t stream) {
  Rng r(s.seed ^ mix64(0xc0ffee00ull + stream));
  const std::int64_t C = static_cast<std::int64_t>(mix64(s.seed) % 256);  // TPC-C's run constant
  const std::int64_t a_item = nurand_a(s.items, 8191, 100000), a_cust = nurand_a(s.customers, 1023, 3000);
  // By-name selection draws a last name that some customer of every district has: TPC-C's
  // NURand(255, 0, 999), over the first `customers` names when a district has fewer than 1,000.
  const std::uint32_t names = std::min<std::uint32_t>(1000, s.customers);
  const std::int64_t a_name = nurand_a(names, 255, 1000);
  auto by_name = [&](Op& op) {
    op.by_name = r.uniform(1, 100) <= 60;
    if (op.by_name) op.c_last = static_cast<std::uint16_t>(r.nurand(a_name, 0, names - 1, C));
  };
  unsigned total = 0;
  for (unsigned p : mix.percent) total += p;
  if (total == 0) total = 1;
  std::vector<Op> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    Op& op = out[i];
    const auto pick = static_cast<unsigned>(r.uniform(0, total - 1));
    unsigned acc = 0, k = 0;
    for (; k + 1 < kKinds; ++k) {
      acc += mix.percent[k];
      if (pick < acc) break;
    }
    op.kind = static_cast<Kind>(k);
    op.w = static_cast<std::uint16_t>(r.uniform(1, s.warehouses));
    op.d = static_cast<std::uint8_t>(r.uniform(1, kDistricts));
    op.c = static_cast<std::uint32_t>(r.nurand(a_cust, 1, s.customers, C));
    op.c_w = op.w;
    op.c_d = op.d;
    op.date = kWorkDate + static_cast<std::int64_t>(i);
    switch (op.kind) {
      case Kind::kNewOrder: {
        op.ol_cnt = static_cast<std::uint8_t>(r.uniform(5, kMaxLines));
        for (unsigned l = 0; l < op.ol_cnt; ++l) {
          Op::Line& ln = op.lines[l];
          ln.item = static_cast<std::uint32_t>(r.nurand(a_item, 1, s.items, C));
          ln.supply_w = op.w;
          if (s.warehouses > 1 && r.uniform(1, 100) == 1) {  // 1% remote
            ln.supply_w = static_cast<std::uint16_t>(r.uniform(1, s.warehouses - 1));
            if (ln.supply_w >= op.w) ++ln.supply_w;
          }
          ln.quantity = static_cast<std::uint8_t>(r.uniform(1, 10));
        }
        if (r.uniform(1, 100) == 1) op.lines[op.ol_cnt - 1].item = kUnusedItem;  // TPC-C's 1% rollback
        break;
      }
      case Kind::kPayment:
        if (s.warehouses > 1 && r.uniform(1, 100) <= 15) {  // 15% remote customer
          op.c_w = static_cast<std::uint16_t>(r.uniform(1, s.warehouses - 1));
          if (op.c_w >= op.w) ++op.c_w;
          op.c_d = static_cast<std::uint8_t>(r.uniform(1, kDistricts));
        }
        by_name(op);
        op.amount = r.uniform(100, 500000);
        op.h_id = (std::uint64_t{1} << 48) | (stream << 32) | i;  // loaded history uses ids <= 10^6
        break;
      case Kind::kDelivery: op.carrier = static_cast<std::uint8_t>(r.uniform(1, 10)); break;
      case Kind::kOrderStatus: by_name(op); break;
      case Kind::kStockLevel: op.amount = r.uniform(10, 20); break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Transactions

void backoff(unsigned conflicts, std::uint64_t* rng) {
  if (conflicts <= 3) {
    std::this_thread::yield();
    return;
  }
  *rng = mix64(*rng);
  const unsigned shift = std::min(conflicts - 3, 9u);
  const double us = std::min(2.0 * (1u << shift), 1000.0) * (0.5 + 0.5 * static_cast<double>(*rng >> 11) * 0x1.0p-53);
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(us * 1000)));
}

DeliveryHints::DeliveryHints(std::uint32_t warehouses)
    : h_(new std::atomic<std::uint32_t>[std::size_t{warehouses} * kDistricts]), n_(warehouses * kDistricts) {
  for (std::uint32_t i = 0; i < n_; ++i) h_[i].store(0, std::memory_order_relaxed);
}

std::uint32_t DeliveryHints::start(std::uint32_t w, std::uint32_t d) const {
  const std::size_t i = std::size_t{w - 1} * kDistricts + (d - 1);
  return i < n_ ? h_[i].load(std::memory_order_acquire) : 0;
}

void DeliveryHints::advance(std::uint32_t w, const OpResult& r) {
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    const std::uint32_t o = r.delivered[d - 1];
    const std::size_t i = std::size_t{w - 1} * kDistricts + (d - 1);
    if (o == 0 || i >= n_) continue;
    std::uint32_t cur = h_[i].load(std::memory_order_relaxed);
    while (cur < o + 1 && !h_[i].compare_exchange_weak(cur, o + 1, std::memory_order_release)) {
    }
  }
}

AckBoard::AckBoard(unsigned slots) : slots_(new Slot[slots ? slots : 1]), n_(slots ? slots : 1) {}

void AckBoard::publish(unsigned slot, const Ack& a) {
  Slot& s = slots_[slot % n_];
  std::lock_guard<std::mutex> g(s.mu);
  s.a = a;
}

std::vector<Ack> AckBoard::read() const {
  std::vector<Ack> out;
  out.reserve(n_);
  for (unsigned i = 0; i < n_; ++i) {
    std::lock_guard<std::mutex> g(slots_[i].mu);
    if (slots_[i].a.commit_ts) out.push_back(slots_[i].a);
  }
  return out;
}

namespace {

// The txn keyspace as a procs adapter.
struct TxnAdapter {
  Txn* t;
  std::vector<std::pair<std::string, std::string>> tmp;
  bool get(std::string_view k, std::string* v, bool* found, bool) { return t->get(k, v, found).ok(); }
  bool put(std::string_view k, std::string_view v) { return t->put(k, v).ok(); }
  bool del(std::string_view k) { return t->del(k).ok(); }
  bool range(std::string_view lo, std::string_view hi, std::size_t limit,
             std::vector<std::pair<std::string, std::string>>* out) {
    TxnRange rg{std::string(lo), std::string(hi), true, false, false, false};
    return t->scan(rg, limit, out).ok();
  }
};

}  // namespace

Status Ch::make(std::shared_ptr<TxnSpace> space, const Scale& s, std::unique_ptr<Ch>* out, unsigned max_attempts) {
  if (!space) return Status::InvalidArgument("ch: no keyspace");
  if (Status st = s.check(); !st.ok()) return st;
  if (max_attempts == 0) return Status::InvalidArgument("ch: max_attempts must be positive");
  std::unique_ptr<Ch> c(new Ch());
  c->space_ = std::move(space);
  c->s_ = s;
  c->max_attempts_ = max_attempts;
  c->hints_ = std::make_unique<DeliveryHints>(s.warehouses);
  *out = std::move(c);
  return Status::Ok();
}

Status Ch::load(unsigned threads) {
  if (threads == 0) threads = 1;
  std::vector<Status> st(threads);
  std::vector<std::thread> th;
  for (unsigned p = 0; p < threads; ++p) {
    th.emplace_back([&, p] {
      Txn t;
      std::size_t n = 0;
      auto flush = [&]() -> Status {
        CommitResult cr;
        if (Status s = t.commit(&cr); !s.ok()) return s;
        if (cr.outcome != TxnOutcome::kCommitted)
          return Status::Internal(std::string("ch load: commit ended ") + txn_outcome_name(cr.outcome));
        n = 0;
        return Status::Ok();
      };
      st[p] = generate(s_, p, threads, [&](std::string_view k, std::string_view v) -> Status {
        if (!t.active())
          if (Status s = space_->begin(&t); !s.ok()) return s;
        if (Status s = t.put(k, v); !s.ok()) return s;
        return ++n >= 512 ? flush() : Status::Ok();
      });
      if (st[p].ok() && t.active()) st[p] = flush();
    });
  }
  for (auto& x : th) x.join();
  for (const Status& s : st)
    if (!s.ok()) return s;
  return Status::Ok();
}

Status Ch::run(const Op& op, OpResult* r, std::uint64_t* rng) {
  *r = OpResult{};
  Txn t;
  TxnAdapter a{&t, {}};
  for (unsigned attempt = 1; attempt <= max_attempts_; ++attempt) {
    r->attempts = attempt;
    if (Status s = space_->begin(&t); !s.ok()) return s;
    const Body b = procs::run(a, op, r, hints_.get());
    if (b == Body::kMissing) {
      t.abort();
      return Status::Internal(std::string("ch: ") + kind_name(op.kind) + " found a row missing (corrupt load)");
    }
    if (b == Body::kRollback) {
      t.abort();
      r->rolled_back = true;
      return Status::Ok();
    }
    if (b == Body::kDone) {
      CommitResult cr;
      if (Status s = t.commit(&cr); !s.ok()) return s;
      if (cr.outcome == TxnOutcome::kCommitted) {
        r->committed = true;
        r->commit_ts = cr.commit_ts;
        if (op.kind == Kind::kDelivery) hints_->advance(op.w, *r);
        return Status::Ok();
      }
    } else {
      t.abort();
    }
    backoff(attempt, rng);
  }
  return Status::Unavailable(std::string("ch: ") + kind_name(op.kind) + " conflicted " + std::to_string(max_attempts_) +
                             " times");
}

// ---------------------------------------------------------------------------------------------
// Queries

namespace {

// Adds column `name` = ((w * 16 + d) << 32) + x: one integer per (warehouse, district, id).
Status add_composite(Context* ctx, Table* t, const std::string& w, const std::string& d, const std::string& x,
                     const std::string& name) {
  Column c1, c2, c3, c4;
  if (Status s = ctx->derive(*t, Expr{Expr::kMul, w, "", 16}, &c1); !s.ok()) return s;
  if (Status s = t->add(name + "#1", std::move(c1)); !s.ok()) return s;
  if (Status s = ctx->derive(*t, Expr{Expr::kAdd, name + "#1", d, 0}, &c2); !s.ok()) return s;
  if (Status s = t->add(name + "#2", std::move(c2)); !s.ok()) return s;
  if (Status s = ctx->derive(*t, Expr{Expr::kMul, name + "#2", "", std::int64_t{1} << 32}, &c3); !s.ok()) return s;
  if (Status s = t->add(name + "#3", std::move(c3)); !s.ok()) return s;
  if (Status s = ctx->derive(*t, Expr{Expr::kAdd, name + "#3", x, 0}, &c4); !s.ok()) return s;
  return t->add(name, std::move(c4));
}

// Moves the columns of `from` into `to` (names must not clash).
Status append_columns(Table* to, Table* from) {
  for (std::size_t i = 0; i < from->width(); ++i)
    if (Status s = to->add(from->name(i), std::move(from->column(i))); !s.ok()) return s;
  return Status::Ok();
}

const Column& col(const Table& t, std::string_view name) { return *t.get(name); }

}  // namespace

Status read_table(Txn* t, Tag tag, Table* out, std::size_t* rows_read, TxnSnapshot* buffer,
                  std::span<const std::string> fields) {
  std::string lo, hi;
  table_range(tag, &lo, &hi);
  const SnapshotArg arg = SnapshotArg::of(TxnRange{lo, hi, true, false, false, false});
  TxnSnapshot own;
  TxnSnapshot& snap = buffer ? *buffer : own;
  if (Status s = t->snapshot(std::span<const SnapshotArg>(&arg, 1), &snap); !s.ok()) return s;
  if (rows_read) *rows_read += snap.size();
  if (fields.empty()) return codec(tag).decode(RowCodec::slots_of(snap), out);
  return codec(tag).decode_fields(RowCodec::slots_of(snap), fields, out);
}

Status Ch::q1(Txn* t, Context* ctx, QueryResult* out, QueryScratch* scratch) {
  Table L, A;
  const std::string cols[] = {"ol_number", "ol_delivery_d", "ol_quantity", "ol_amount"};
  if (Status s = read_table(t, kOrderLine, &L, &out->rows_read, scratch ? &scratch->a : nullptr, cols); !s.ok())
    return s;
  Selection sel;
  const Predicate p[] = {{"ol_delivery_d", Cmp::kGt, kDate2007, 0, 0, 0, {}, {}}};
  if (Status s = ctx->filter(L, p, &sel); !s.ok()) return s;
  const std::string keys[] = {"ol_number"};
  const Agg aggs[] = {{Agg::kSum, "ol_quantity", "sum_qty"}, {Agg::kSum, "ol_amount", "sum_amount"},
                      {Agg::kCount, "", "count"}};
  if (Status s = ctx->aggregate(L, &sel, keys, aggs, &A); !s.ok()) return s;
  out->q1.resize(A.rows());
  for (std::size_t i = 0; i < A.rows(); ++i)
    out->q1[i] = {col(A, "ol_number").i64()[i], col(A, "sum_qty").i64()[i], col(A, "sum_amount").i64()[i],
                  col(A, "count").i64()[i]};
  return Status::Ok();
}

Status Ch::q6(Txn* t, Context* ctx, QueryResult* out, QueryScratch* scratch) {
  Table L, A;
  const std::string cols[] = {"ol_delivery_d", "ol_quantity", "ol_amount"};
  if (Status s = read_table(t, kOrderLine, &L, &out->rows_read, scratch ? &scratch->a : nullptr, cols); !s.ok())
    return s;
  Selection sel;
  const Predicate p[] = {{"ol_delivery_d", Cmp::kBetween, kDate1999, kDate2020 - 1, 0, 0, {}, {}},
                         {"ol_quantity", Cmp::kBetween, 1, 100000, 0, 0, {}, {}}};
  if (Status s = ctx->filter(L, p, &sel); !s.ok()) return s;
  const Agg aggs[] = {{Agg::kSum, "ol_amount", "revenue"}};
  if (Status s = ctx->aggregate(L, &sel, {}, aggs, &A); !s.ok()) return s;
  out->q6 = A.rows() ? col(A, "revenue").i64()[0] : 0;
  return Status::Ok();
}

Status StateFilter::of_selectivity(double s, StateFilter* out) {
  if (!(s >= 0 && s <= 1)) return Status::InvalidArgument("ch: Q3 selectivity must be in [0, 1]");
  const long n = std::lround(s * 676);
  if (n == 0) {
    *out = StateFilter{std::string(2, '\xff'), std::string(2, '\0')};  // lo > hi: nothing matches
    return Status::Ok();
  }
  *out = StateFilter{"AA", {static_cast<char>('A' + (n - 1) / 26), static_cast<char>('A' + (n - 1) % 26)}};
  return Status::Ok();
}

const char* q3_plan_name(Q3Plan p) {
  switch (p) {
    case Q3Plan::kSnapshotTables: return "snapshot-tables";
    case Q3Plan::kRead: return "read";
    case Q3Plan::kSnapshotKeys: return "snapshot-keys";
  }
  return "?";
}

namespace {

// Q3's result order: revenue descending, entry date ascending, then (w, d, o) ascending.
void sort_q3(std::vector<Q3Row>* rows) {
  std::sort(rows->begin(), rows->end(), [](const Q3Row& a, const Q3Row& b) {
    if (a.revenue != b.revenue) return a.revenue > b.revenue;
    return std::tie(a.entry_d, a.w_id, a.d_id, a.o_id) < std::tie(b.entry_d, b.w_id, b.d_id, b.o_id);
  });
}

// The key range of one order's lines.
TxnRange order_lines_of(std::int64_t w, std::int64_t d, std::int64_t o) {
  std::string p = order_line_key(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(d),
                                 static_cast<std::uint32_t>(o), 0);
  p.resize(8);  // tag, warehouse, district, order
  TxnRange r{{}, {}, true, false, false, false};
  prefix_range(p, &r.start, &r.end);
  return r;
}

}  // namespace

Status Ch::q3(Txn* t, Context* ctx, QueryResult* out, const StateFilter& f, Q3Plan plan, QueryScratch* scratch) {
  QueryScratch own;
  if (scratch == nullptr) scratch = &own;
  switch (plan) {
    case Q3Plan::kRead: return q3_read(t, out, f);
    case Q3Plan::kSnapshotKeys: return q3_keys(t, out, f, scratch);
    case Q3Plan::kSnapshotTables: break;
  }
  if (!ctx) return Status::InvalidArgument("ch: Q3's snapshot-tables plan needs a compute context");
  return q3_tables(t, ctx, out, f, scratch);
}

Status Ch::q3_read(Txn* t, QueryResult* out, const StateFilter& f) {
  const RowCodec &cc = codec(kCustomer), &oc = codec(kOrder), &nc = codec(kNewOrder), &lc = codec(kOrderLine);
  std::string lo, hi;
  table_range(kNewOrder, &lo, &hi);
  std::vector<std::pair<std::string, std::string>> news, lines;
  if (Status s = t->scan(TxnRange{lo, hi, true, false, false, false}, 0, &news); !s.ok()) return s;
  out->rows_read += news.size();
  out->q3.clear();
  std::string row;
  for (const auto& [k, v] : news) {
    const std::int64_t w = get(v, nc, nof::w_id), d = get(v, nc, nof::d_id), o = get(v, nc, nof::o_id);
    bool found = false;
    if (Status s = t->get(order_key(w, d, o), &row, &found); !s.ok()) return s;
    ++out->rows_read;
    if (!found || get(row, oc, of::entry_d) <= kDate2007) continue;
    const std::int64_t entry_d = get(row, oc, of::entry_d), c = get(row, oc, of::c_id);
    if (Status s = t->get(customer_key(w, d, c), &row, &found); !s.ok()) return s;
    ++out->rows_read;
    if (!found || !f.match(std::string_view(row).substr(cc.offset(cf::state), 2))) continue;
    lines.clear();
    if (Status s = t->scan(order_lines_of(w, d, o), 0, &lines); !s.ok()) return s;
    out->rows_read += lines.size();
    if (lines.empty()) continue;
    std::int64_t revenue = 0;
    for (const auto& l : lines) revenue += get(l.second, lc, olf::amount);
    out->q3.push_back({o, w, d, revenue, entry_d});
  }
  sort_q3(&out->q3);
  return Status::Ok();
}

Status Ch::q3_keys(Txn* t, QueryResult* out, const StateFilter& f, QueryScratch* scratch) {
  const RowCodec &cc = codec(kCustomer), &oc = codec(kOrder), &nc = codec(kNewOrder), &lc = codec(kOrderLine);
  std::string lo, hi;
  table_range(kNewOrder, &lo, &hi);
  // Buffer a holds the new orders, then the customers, then the order lines (each step's keys
  // are in args before its SNAPSHOT clears a); b holds the orders, which the last step reads.
  std::vector<SnapshotArg>& args = scratch->args;
  args.clear();
  args.push_back(SnapshotArg::of(TxnRange{lo, hi, true, false, false, false}));
  TxnSnapshot &news = scratch->a, &orders = scratch->b, &customers = scratch->a, &lines = scratch->a;
  if (Status s = t->snapshot(args, &news); !s.ok()) return s;
  out->rows_read += news.size();
  args.clear();
  args.reserve(news.size());
  for (std::size_t i = 0; i < news.size(); ++i) {
    const std::string_view v = news.value(i);
    args.push_back(SnapshotArg::point(order_key(get(v, nc, nof::w_id), get(v, nc, nof::d_id), get(v, nc, nof::o_id))));
  }
  if (Status s = t->snapshot(args, &orders); !s.ok()) return s;
  out->rows_read += orders.size();
  std::vector<std::size_t> dated;  // slots of `orders` past Q3's date, in the order of `args` below
  args.clear();
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::string_view v = orders.value(i);
    if (!orders.present[i] || get(v, oc, of::entry_d) <= kDate2007) continue;
    dated.push_back(i);
    args.push_back(SnapshotArg::point(customer_key(get(v, oc, of::w_id), get(v, oc, of::d_id), get(v, oc, of::c_id))));
  }
  if (Status s = t->snapshot(args, &customers); !s.ok()) return s;
  out->rows_read += customers.size();
  std::vector<std::size_t> selected;  // slots of `orders` whose customer matches
  args.clear();
  for (std::size_t j = 0; j < dated.size(); ++j) {
    if (!customers.present[j] || !f.match(customers.value(j).substr(cc.offset(cf::state), 2))) continue;
    const std::string_view v = orders.value(dated[j]);
    selected.push_back(dated[j]);
    args.push_back(SnapshotArg::of(order_lines_of(get(v, oc, of::w_id), get(v, oc, of::d_id), get(v, oc, of::id))));
  }
  if (Status s = t->snapshot(args, &lines); !s.ok()) return s;
  out->rows_read += lines.size();
  out->q3.clear();
  for (std::size_t j = 0; j < selected.size(); ++j) {
    if (lines.arg_offsets[j] == lines.arg_offsets[j + 1]) continue;
    std::int64_t revenue = 0;
    for (std::uint64_t i = lines.arg_offsets[j]; i < lines.arg_offsets[j + 1]; ++i)
      revenue += get(lines.value(i), lc, olf::amount);
    const std::string_view v = orders.value(selected[j]);
    out->q3.push_back({get(v, oc, of::id), get(v, oc, of::w_id), get(v, oc, of::d_id), revenue, get(v, oc, of::entry_d)});
  }
  sort_q3(&out->q3);
  return Status::Ok();
}

Status Ch::q3_tables(Txn* t, Context* ctx, QueryResult* out, const StateFilter& f, QueryScratch* scratch) {
  Table C, N, O, L;  // each table decoded (the columns Q3 reads) from one SNAPSHOT in buffer a
  const std::string c_read[] = {"c_id", "c_d_id", "c_w_id", "c_state"};
  const std::string o_read[] = {"o_id", "o_d_id", "o_w_id", "o_c_id", "o_entry_d"};
  const std::string l_read[] = {"ol_w_id", "ol_d_id", "ol_o_id", "ol_amount"};
  if (Status s = read_table(t, kCustomer, &C, &out->rows_read, &scratch->a, c_read); !s.ok()) return s;
  if (Status s = read_table(t, kNewOrder, &N, &out->rows_read, &scratch->a); !s.ok()) return s;
  if (Status s = read_table(t, kOrder, &O, &out->rows_read, &scratch->a, o_read); !s.ok()) return s;
  if (Status s = read_table(t, kOrderLine, &L, &out->rows_read, &scratch->a, l_read); !s.ok()) return s;
  // c_state in [f.lo, f.hi] (CH: LIKE 'A%')
  Selection sel;
  Predicate ps{"c_state", Cmp::kBetween, 0, 0, 0, 0, f.lo, f.hi};
  if (Status s = ctx->filter(C, std::span<const Predicate>(&ps, 1), &sel); !s.ok()) return s;
  Table Cs;
  const std::string ccols[] = {"c_id", "c_d_id", "c_w_id"};
  if (Status s = ctx->project(C, sel, ccols, &Cs); !s.ok()) return s;
  if (Status s = add_composite(ctx, &Cs, "c_w_id", "c_d_id", "c_id", "ck"); !s.ok()) return s;
  // o_entry_d > 2007-01-02
  const Predicate po{"o_entry_d", Cmp::kGt, kDate2007, 0, 0, 0, {}, {}};
  if (Status s = ctx->filter(O, std::span<const Predicate>(&po, 1), &sel); !s.ok()) return s;
  Table Os;
  const std::string ocols[] = {"o_id", "o_d_id", "o_w_id", "o_c_id", "o_entry_d"};
  if (Status s = ctx->project(O, sel, ocols, &Os); !s.ok()) return s;
  if (Status s = add_composite(ctx, &Os, "o_w_id", "o_d_id", "o_c_id", "ock"); !s.ok()) return s;
  if (Status s = add_composite(ctx, &Os, "o_w_id", "o_d_id", "o_id", "ook"); !s.ok()) return s;
  // orders ⋈ customer, then ⋈ new_order
  JoinPairs jp;
  if (Status s = ctx->hash_join(Os, "ock", Cs, "ck", &jp); !s.ok()) return s;
  Table O2;
  const std::string o2cols[] = {"o_id", "o_d_id", "o_w_id", "o_entry_d", "ook"};
  if (Status s = ctx->project(Os, jp.left, o2cols, &O2); !s.ok()) return s;
  if (Status s = add_composite(ctx, &N, "no_w_id", "no_d_id", "no_o_id", "nk"); !s.ok()) return s;
  if (Status s = ctx->hash_join(O2, "ook", N, "nk", &jp); !s.ok()) return s;
  Table O3;
  const std::string o3cols[] = {"o_entry_d", "ook"};
  if (Status s = ctx->project(O2, jp.left, o3cols, &O3); !s.ok()) return s;
  // order_line ⋈ those orders
  if (Status s = add_composite(ctx, &L, "ol_w_id", "ol_d_id", "ol_o_id", "lk"); !s.ok()) return s;
  if (Status s = ctx->hash_join(L, "lk", O3, "ook", &jp); !s.ok()) return s;
  Table J, Jr;
  const std::string lcols[] = {"ol_w_id", "ol_d_id", "ol_o_id", "ol_amount"}, rcols[] = {"o_entry_d"};
  if (Status s = ctx->project(L, jp.left, lcols, &J); !s.ok()) return s;
  if (Status s = ctx->project(O3, jp.right, rcols, &Jr); !s.ok()) return s;
  if (Status s = append_columns(&J, &Jr); !s.ok()) return s;
  // group by (w, d, o, entry_d), order by revenue desc, entry_d
  Table A;
  const std::string keys[] = {"ol_w_id", "ol_d_id", "ol_o_id", "o_entry_d"};
  const Agg aggs[] = {{Agg::kSum, "ol_amount", "revenue"}};
  if (Status s = ctx->aggregate(J, nullptr, keys, aggs, &A); !s.ok()) return s;
  const SortKey sk[] = {{"revenue", true}, {"o_entry_d", false}};
  if (Status s = ctx->sort(A, sk, 0, &sel); !s.ok()) return s;
  out->q3.resize(sel.size());
  for (std::size_t i = 0; i < sel.size(); ++i) {
    const std::uint32_t r = sel[i];
    out->q3[i] = {col(A, "ol_o_id").i64()[r], col(A, "ol_w_id").i64()[r], col(A, "ol_d_id").i64()[r],
                  col(A, "revenue").i64()[r], col(A, "o_entry_d").i64()[r]};
  }
  return Status::Ok();
}

Status Ch::reference(Txn* t, QueryResult* out, const StateFilter& f) {
  std::vector<std::pair<std::string, std::string>> kv;
  if (Status s = t->scan(TxnRange::all(), 0, &kv); !s.ok()) return s;
  out->rows_read = kv.size();
  const RowCodec &cc = codec(kCustomer), &oc = codec(kOrder), &nc = codec(kNewOrder), &lc = codec(kOrderLine);
  std::map<std::int64_t, Q1Row> q1;
  std::int64_t q6 = 0;
  using WDX = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  std::map<WDX, bool> a_customers;           // (w, d, c) whose c_state matches f
  std::map<WDX, std::int64_t> new_orders;    // (w, d, o)
  std::map<WDX, std::int64_t> orders_entry;  // (w, d, o) -> entry date, for qualifying orders
  std::vector<std::string_view> lines;
  for (auto& [k, v] : kv) {
    const auto tag = static_cast<Tag>(static_cast<unsigned char>(k[0]));
    if (tag == kCustomer && f.match(std::string_view(v).substr(cc.offset(cf::state), 2)))
      a_customers[{get(v, cc, cf::w_id), get(v, cc, cf::d_id), get(v, cc, cf::id)}] = true;
    if (tag == kNewOrder) new_orders[{get(v, nc, nof::w_id), get(v, nc, nof::d_id), get(v, nc, nof::o_id)}] = 1;
    if (tag == kOrderLine) {
      lines.push_back(v);
      const std::int64_t dd = get(v, lc, olf::delivery_d), q = get(v, lc, olf::quantity), amt = get(v, lc, olf::amount);
      if (dd > kDate2007) {
        Q1Row& r = q1[get(v, lc, olf::number)];
        r.number = get(v, lc, olf::number);
        r.sum_qty += q;
        r.sum_amount += amt;
        r.count += 1;
      }
      if (dd >= kDate1999 && dd < kDate2020 && q >= 1 && q <= 100000) q6 += amt;
    }
  }
  for (auto& [k, v] : kv) {
    if (static_cast<unsigned char>(k[0]) != kOrder) continue;
    const std::int64_t w = get(v, oc, of::w_id), d = get(v, oc, of::d_id), o = get(v, oc, of::id);
    if (get(v, oc, of::entry_d) > kDate2007 && a_customers.count({w, d, get(v, oc, of::c_id)}) &&
        new_orders.count({w, d, o}))
      orders_entry[{w, d, o}] = get(v, oc, of::entry_d);
  }
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::int64_t> groups;
  for (std::string_view v : lines) {
    const WDX key{get(v, lc, olf::w_id), get(v, lc, olf::d_id), get(v, lc, olf::o_id)};
    auto it = orders_entry.find(key);
    if (it == orders_entry.end()) continue;
    groups[{std::get<0>(key), std::get<1>(key), std::get<2>(key), it->second}] += get(v, lc, olf::amount);
  }
  out->q1.clear();
  for (auto& [n, r] : q1) out->q1.push_back(r);
  out->q6 = q6;
  out->q3.clear();
  for (auto& [g, rev] : groups) out->q3.push_back({std::get<2>(g), std::get<0>(g), std::get<1>(g), rev, std::get<3>(g)});
  std::stable_sort(out->q3.begin(), out->q3.end(), [](const Q3Row& a, const Q3Row& b) {
    if (a.revenue != b.revenue) return a.revenue > b.revenue;
    return a.entry_d < b.entry_d;
  });  // stable: ties keep the (w, d, o) order of the map
  return Status::Ok();
}

Status Ch::check_consistency(Txn* t) {
  const RowCodec &wc = codec(kWarehouse), &dc = codec(kDistrict), &oc = codec(kOrder), &nc = codec(kNewOrder);
  std::vector<std::pair<std::string, std::string>> kv;
  std::string lo, hi;
  auto scan = [&](std::string_view prefix) -> Status {
    prefix_range(prefix, &lo, &hi);
    kv.clear();
    return t->scan(TxnRange{lo, hi, true, false, false, false}, 0, &kv);
  };
  auto fail = [](std::uint32_t w, std::uint32_t d, const std::string& what) {
    return Status::Internal("ch consistency: warehouse " + std::to_string(w) +
                            (d ? " district " + std::to_string(d) : std::string()) + ": " + what);
  };
  for (std::uint32_t w = 1; w <= s_.warehouses; ++w) {
    std::string row;
    bool found = false;
    if (Status s = t->get(warehouse_key(w), &row, &found); !s.ok()) return s;
    if (!found) return fail(w, 0, "no warehouse row");
    const std::int64_t w_ytd = get(row, wc, wf::ytd);
    std::int64_t d_ytd = 0;
    for (std::uint32_t d = 1; d <= kDistricts; ++d) {
      if (Status s = t->get(district_key(w, d), &row, &found); !s.ok()) return s;
      if (!found) return fail(w, d, "no district row");
      d_ytd += get(row, dc, df::ytd);
      const std::int64_t next = get(row, dc, df::next_o_id);
      // Condition 2 (orders) and 4.
      std::string p = order_key(w, d, 0);
      p.resize(4);
      if (Status s = scan(p); !s.ok()) return s;
      std::int64_t max_o = 0, ol_cnt = 0;
      for (auto& [k, v] : kv) {
        max_o = std::max(max_o, get(v, oc, of::id));
        ol_cnt += get(v, oc, of::ol_cnt);
      }
      if (next - 1 != max_o)
        return fail(w, d, "D_NEXT_O_ID - 1 = " + std::to_string(next - 1) + " but max(O_ID) = " + std::to_string(max_o));
      p = order_line_key(w, d, 0, 0);
      p.resize(4);
      if (Status s = scan(p); !s.ok()) return s;
      if (static_cast<std::int64_t>(kv.size()) != ol_cnt)
        return fail(w, d, "sum(O_OL_CNT) = " + std::to_string(ol_cnt) + " but ORDER-LINE has " +
                              std::to_string(kv.size()) + " rows");
      // Conditions 2 (new orders) and 3.
      p = new_order_key(w, d, 0);
      p.resize(4);
      if (Status s = scan(p); !s.ok()) return s;
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
  return Status::Ok();
}

Status Ch::check_fresh(Txn* t, const std::vector<Ack>& acks) {
  for (const Ack& a : acks) {
    if (t->start_ts() < a.commit_ts)
      return Status::Internal("ch freshness: the query began at " + std::to_string(t->start_ts()) +
                              ", before the acknowledged commit at " + std::to_string(a.commit_ts));
    std::string v;
    bool found = false;
    if (Status s = t->get(order_key(a.w, a.d, a.o), &v, &found); !s.ok()) return s;
    if (!found)
      return Status::Internal("ch freshness: order (" + std::to_string(a.w) + ", " + std::to_string(a.d) + ", " +
                              std::to_string(a.o) + ") acknowledged at " + std::to_string(a.commit_ts) +
                              " is not in the query's snapshot");
  }
  return Status::Ok();
}

}  // namespace duet::compute::ch

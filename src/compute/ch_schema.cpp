// CH-benCHmark's schema, loader rows and work (ch.hpp): keys, row codecs, the seeded generators,
// operations as procedure arguments, and the small shared pieces (backoff, DeliveryHints,
// AckBoard). It needs no transaction engine, so the CH procedure library (bench/compute/ch_proc.cpp)
// compiles it too; ch.cpp runs the transactions and queries on a txn keyspace.
#include "compute/ch.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <random>
#include <thread>
#include <tuple>

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
namespace {
// Tag, warehouse and district: the prefix of every per-district table's key.
std::string district_prefix(Tag t, std::uint32_t w, std::uint32_t d) {
  std::string k = key_of(t);
  put_be(k, w, 2);
  put_be(k, d, 1);
  return k;
}
// district_prefix(t, w, d), then id as `bytes` big-endian bytes.
std::string district_row_key(Tag t, std::uint32_t w, std::uint32_t d, std::uint64_t id, int bytes) {
  std::string k = district_prefix(t, w, d);
  put_be(k, id, bytes);
  return k;
}
}  // namespace
std::string district_key(std::uint32_t w, std::uint32_t d) { return district_prefix(kDistrict, w, d); }
std::string customer_key(std::uint32_t w, std::uint32_t d, std::uint32_t c) { return district_row_key(kCustomer, w, d, c, 4); }
std::string history_key(std::uint32_t w, std::uint32_t d, std::uint64_t h) { return district_row_key(kHistory, w, d, h, 8); }
std::string new_order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o) {
  return district_row_key(kNewOrder, w, d, o, 4);
}
std::string order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o) { return district_row_key(kOrder, w, d, o, 4); }
std::string order_line_key(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t l) {
  std::string k = district_row_key(kOrderLine, w, d, o, 4);
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

void new_orders_range(std::uint32_t w, std::uint32_t d, std::uint32_t from, std::string* lo, std::string* hi) {
  std::string prefix = new_order_key(w, d, 0);
  prefix.resize(4);  // tag, warehouse, district
  prefix_range(prefix, lo, hi);
  *lo = new_order_key(w, d, from);
}

void order_lines_range(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::string* lo, std::string* hi) {
  std::string prefix = order_line_key(w, d, o, 0);
  prefix.pop_back();  // tag, warehouse, district, order: without the line number
  prefix_range(prefix, lo, hi);
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

const char* kind_name(Kind k) { return procedure_name(k) + 3; }  // without "ch."

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

const char* procedure_name(Kind k) {
  static constexpr const char* kNames[kKinds] = {"ch.new_order", "ch.payment", "ch.delivery", "ch.order_status",
                                                 "ch.stock_level"};
  const auto i = static_cast<std::size_t>(k);
  return i < kKinds ? kNames[i] : "ch.?";
}

bool parse_decimal(std::string_view a, std::int64_t lo, std::int64_t hi, std::int64_t* out) {
  std::int64_t v = 0;
  const char* end = a.data() + a.size();
  const auto r = std::from_chars(a.data(), end, v);
  if (a.empty() || r.ec != std::errc() || r.ptr != end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

namespace {

std::string customer_arg(const Op& op) {
  return op.by_name ? "name:" + std::to_string(op.c_last) : std::to_string(op.c);
}

}  // namespace

std::vector<std::string> op_args(const Op& op) {
  auto n = [](auto v) { return std::to_string(v); };
  switch (op.kind) {
    case Kind::kNewOrder: {
      std::vector<std::string> a{n(op.w), n(op.d), n(op.c), n(op.date)};
      for (unsigned l = 0; l < op.ol_cnt; ++l) {
        a.push_back(n(op.lines[l].item));
        a.push_back(n(op.lines[l].supply_w));
        a.push_back(n(op.lines[l].quantity));
      }
      return a;
    }
    case Kind::kPayment:
      return {n(op.w), n(op.d), n(op.c_w), n(op.c_d), customer_arg(op), n(op.amount), n(op.h_id), n(op.date)};
    case Kind::kDelivery: return {n(op.w), n(op.carrier), n(op.date)};
    case Kind::kOrderStatus: return {n(op.w), n(op.d), customer_arg(op)};
    case Kind::kStockLevel: return {n(op.w), n(op.d), n(op.amount)};
  }
  return {};
}

Status parse_op(Kind k, std::span<const std::string_view> args, Op* op) {
  *op = Op{};
  op->kind = k;
  const std::string proc = procedure_name(k);
  Status bad;
  // Text a (argument i) as an integer in [lo, hi]; names the argument in the error.
  auto parse = [&](std::string_view a, std::size_t i, const char* what, std::int64_t lo, std::int64_t hi,
                   std::int64_t* out) {
    if (!bad.ok()) return false;
    if (parse_decimal(a, lo, hi, out)) return true;
    bad = Status::InvalidArgument(proc + ": argument " + std::to_string(i + 1) + " (" + what +
                                  ") must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "], not '" + std::string(args[i]) + "'");
    return false;
  };
  auto num = [&](std::size_t i, const char* what, std::int64_t lo, std::int64_t hi, std::int64_t* out) {
    return parse(args[i], i, what, lo, hi, out);
  };
  constexpr std::int64_t kMax = INT64_MAX, kU32 = UINT32_MAX;
  std::int64_t v = 0;
  auto customer = [&](std::size_t i) {
    if (args[i].substr(0, 5) == "name:") {
      if (!parse(args[i].substr(5), i, "customer: an id or name:N, N in [0, 999]", 0, 999, &v)) return;
      op->by_name = true;
      op->c_last = static_cast<std::uint16_t>(v);
    } else if (num(i, "customer: an id or name:N", 1, kU32, &v)) {
      op->c = static_cast<std::uint32_t>(v);
    }
  };
  auto count = [&](std::size_t want) {
    if (args.size() == want) return true;
    bad = Status::InvalidArgument(proc + " takes " + std::to_string(want) + " arguments, not " + std::to_string(args.size()));
    return false;
  };
  switch (k) {
    case Kind::kNewOrder: {
      if (args.size() < 7 || (args.size() - 4) % 3 != 0 || (args.size() - 4) / 3 > kMaxLines)
        return Status::InvalidArgument(proc + " takes w d c date and 1 to 15 lines of item supply_w quantity, not " +
                                       std::to_string(args.size()) + " arguments");
      if (num(0, "w", 1, 65535, &v)) op->w = static_cast<std::uint16_t>(v);
      if (num(1, "d", 1, kDistricts, &v)) op->d = static_cast<std::uint8_t>(v);
      if (num(2, "c", 1, kU32, &v)) op->c = static_cast<std::uint32_t>(v);
      num(3, "date", 0, kMax, &op->date);
      op->c_w = op->w;
      op->c_d = op->d;
      op->ol_cnt = static_cast<std::uint8_t>((args.size() - 4) / 3);
      for (unsigned l = 0; l < op->ol_cnt; ++l) {
        Op::Line& ln = op->lines[l];
        if (num(4 + 3 * l, "item", 0, kU32, &v)) ln.item = static_cast<std::uint32_t>(v);
        if (num(5 + 3 * l, "supply_w", 1, 65535, &v)) ln.supply_w = static_cast<std::uint16_t>(v);
        if (num(6 + 3 * l, "quantity", 1, 255, &v)) ln.quantity = static_cast<std::uint8_t>(v);
      }
      break;
    }
    case Kind::kPayment:
      if (!count(8)) break;
      if (num(0, "w", 1, 65535, &v)) op->w = static_cast<std::uint16_t>(v);
      if (num(1, "d", 1, kDistricts, &v)) op->d = static_cast<std::uint8_t>(v);
      if (num(2, "c_w", 1, 65535, &v)) op->c_w = static_cast<std::uint16_t>(v);
      if (num(3, "c_d", 1, kDistricts, &v)) op->c_d = static_cast<std::uint8_t>(v);
      customer(4);
      num(5, "amount", 0, kMax, &op->amount);
      if (num(6, "h_id", 0, kMax, &v)) op->h_id = static_cast<std::uint64_t>(v);
      num(7, "date", 0, kMax, &op->date);
      break;
    case Kind::kDelivery:
      if (!count(3)) break;
      if (num(0, "w", 1, 65535, &v)) op->w = static_cast<std::uint16_t>(v);
      if (num(1, "carrier", 1, 10, &v)) op->carrier = static_cast<std::uint8_t>(v);
      num(2, "date", 0, kMax, &op->date);
      break;
    case Kind::kOrderStatus:
      if (!count(3)) break;
      if (num(0, "w", 1, 65535, &v)) op->w = static_cast<std::uint16_t>(v);
      if (num(1, "d", 1, kDistricts, &v)) op->d = static_cast<std::uint8_t>(v);
      customer(2);
      break;
    case Kind::kStockLevel:
      if (!count(3)) break;
      if (num(0, "w", 1, 65535, &v)) op->w = static_cast<std::uint16_t>(v);
      if (num(1, "d", 1, kDistricts, &v)) op->d = static_cast<std::uint8_t>(v);
      num(2, "threshold", 0, kMax, &op->amount);
      break;
  }
  if (op->kind != Kind::kPayment) op->c_w = op->w, op->c_d = op->d;
  return bad;
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

void new_order_ranges(std::span<const std::uint32_t> starts, std::vector<SnapshotArg>* out) {
  std::string lo, hi;
  if (starts.empty()) {
    table_range(kNewOrder, &lo, &hi);
    out->push_back(SnapshotArg::of(TxnRange{lo, hi, true, false, false, false}));
    return;
  }
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto w = static_cast<std::uint32_t>(i / kDistricts + 1), d = static_cast<std::uint32_t>(i % kDistricts + 1);
    new_orders_range(w, d, starts[i], &lo, &hi);
    out->push_back(SnapshotArg::of(TxnRange{lo, hi, true, false, false, false}));
  }
}

DeliveryHints::DeliveryHints(std::uint32_t warehouses, bool for_queries)
    : h_(new std::atomic<std::uint32_t>[std::size_t{warehouses} * kDistricts]),
      n_(warehouses * kDistricts),
      kept_(for_queries ? new Kept[std::size_t{warehouses} * kDistricts] : nullptr) {
  for (std::uint32_t i = 0; i < n_; ++i) h_[i].store(0, std::memory_order_relaxed);
}

std::size_t DeliveryHints::index(std::uint32_t w, std::uint32_t d) const {
  if (w == 0 || d == 0 || d > kDistricts) return n_;
  return std::min<std::size_t>(std::size_t{w - 1} * kDistricts + (d - 1), n_);
}

std::uint32_t DeliveryHints::start(std::uint32_t w, std::uint32_t d) const {
  const std::size_t i = index(w, d);
  return i < n_ ? h_[i].load(std::memory_order_acquire) : 0;
}

void DeliveryHints::observe(std::uint32_t w, std::uint32_t d, std::uint32_t o) {
  const std::size_t i = index(w, d);
  if (i >= n_) return;
  std::uint32_t cur = h_[i].load(std::memory_order_relaxed);
  while (cur < o && !h_[i].compare_exchange_weak(cur, o, std::memory_order_release)) {
  }
}

void DeliveryHints::advance(std::uint32_t w, const OpResult& r) {
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    const std::uint32_t o = r.delivered[d - 1];
    if (o == 0) continue;
    observe(w, d, o + 1);
    const std::size_t i = index(w, d);
    if (!kept_ || i >= n_ || r.commit_ts == 0) continue;
    // Deliveries of one district may report out of commit order: the oldest kept one gives way.
    std::lock_guard<std::mutex> g(stripes_[i % kStripes]);
    Kept& k = kept_[i];
    std::size_t oldest = 0;
    for (std::size_t j = 1; j < kKept; ++j)
      if (k.ts[j] < k.ts[oldest]) oldest = j;
    if (k.ts[oldest] < r.commit_ts) k.ts[oldest] = r.commit_ts, k.next[oldest] = o + 1;
  }
}

std::uint32_t DeliveryHints::query_start(std::uint32_t w, std::uint32_t d, std::uint64_t start_ts) const {
  const std::size_t i = index(w, d);
  return i < n_ ? query_start_at(i, start_ts) : 0;
}

std::uint32_t DeliveryHints::query_start_at(std::size_t i, std::uint64_t start_ts) const {
  if (!kept_) return 0;
  std::lock_guard<std::mutex> g(stripes_[i % kStripes]);
  std::uint32_t best = 0;
  for (std::size_t j = 0; j < kKept; ++j)
    if (kept_[i].ts[j] != 0 && kept_[i].ts[j] <= start_ts) best = std::max(best, kept_[i].next[j]);
  return best;
}

std::vector<std::uint32_t> DeliveryHints::query_starts(std::uint64_t start_ts) const {
  std::vector<std::uint32_t> out(n_);
  for (std::uint32_t i = 0; i < n_; ++i) out[i] = query_start_at(i, start_ts);
  return out;
}

void DeliveryHints::reset() {
  for (std::uint32_t i = 0; i < n_; ++i) {
    h_[i].store(0, std::memory_order_release);
    if (kept_) {
      std::lock_guard<std::mutex> g(stripes_[i % kStripes]);
      kept_[i] = Kept{};
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

void sort_q3(std::vector<Q3Row>* rows) {
  std::sort(rows->begin(), rows->end(), [](const Q3Row& a, const Q3Row& b) {
    if (a.revenue != b.revenue) return a.revenue > b.revenue;
    return std::tie(a.entry_d, a.w_id, a.d_id, a.o_id) < std::tie(b.entry_d, b.w_id, b.d_id, b.o_id);
  });
}

}  // namespace duet::compute::ch

// CH-benCHmark's transactions and queries as native procedures (docs/compute.md, "CH through the
// server"): libduet_ch_proc.so, loaded by `duet server` with PROCEDURE LOAD, so that a client runs
// one TPC-C operation or one CH query in one round trip, inside one snapshot-isolation transaction
// that the server re-runs on a write conflict. The transaction bodies are the embedded benchmark's
// (src/compute/ch_procs.hpp) over the C ABI (include/duet/procedure.h); the library compiles the
// schema (ch_schema.cpp, row_codec.cpp) into itself and links nothing else of Duet's.
//
//   ch.load k v [k v ...]          puts the pairs (a client streams the generated database in
//                                  batches); answers the count. Resets Delivery's hints.
//   ch.populate small|full W [seed]
//                                  generates and puts the whole initial database of W warehouses
//                                  (ch::Scale::small or ::full) in this one transaction, up to
//                                  4,000,000 rows; answers the count. Resets Delivery's hints.
//   ch.new_order w d c date item supply_w quantity ...
//                                  answers [o_id, total]; a line naming item 0 (unused) rolls the
//                                  order back: "ROLLBACK ...", nothing applied
//   ch.payment w d c_w c_d customer amount h_id date
//                                  answers OK (customer: an id, or name:N by last name)
//   ch.delivery w carrier date     answers the 10 districts' delivered order ids (0: none)
//   ch.order_status w d customer   read-only; answers the newest order's line count
//   ch.stock_level w d threshold   read-only; answers the count of low-stock items
//   ch.mirror [auto|cpu|gpu] [threads]
//                                  attaches the column mirror of ORDER-LINE's four columns Q1 and
//                                  Q6 read (the host's mirror_attach; auto and gpu also keep it
//                                  in GPU memory where a GPU is present; threads: the CPU threads
//                                  a query scans on, default 1); answers OK. Once per server:
//                                  again with the same arguments answers OK, other ones an error
//   ch.q1 [w d o ...]              read-only; CH Q1 at the call's start: from the mirror when one
//                                  is attached and was made before the call began, else on the
//                                  call's snapshot through the host's operators
//                                  (decode_columns of the four it reads, filter, aggregate);
//                                  answers [start_ts, stale, [[ol_number, sum_qty, sum_amount,
//                                  count] ...], plan], plan "mirror" or "snapshot"
//   ch.q6 [w d o ...]              read-only; likewise; answers [start_ts, stale, revenue, plan]
//   ch.q3 [w d o ...]              read-only; CH Q3 (c_state LIKE 'A%') by its READ plan, index
//                                  joins from NEW-ORDER (ch_procs.hpp's q3_read); answers
//                                  [start_ts, stale, [[o_id, w_id, d_id, revenue, entry_d] ...]]
//                                  in Q3's result order
//   ch.check warehouses            read-only; TPC-C consistency conditions 1-4: OK or an error
//
// ch.load, ch.populate, ch.mirror, ch.q1, ch.q6, ch.q3 and ch.check are flagged DUET_PROC_LONG: the server runs them
// on its procedure threads, so a query does not hold up the other clients of its I/O thread.
//
// The queries' optional arguments are orders (w, d, o) acknowledged to clients before the query
// was sent; `stale` counts those missing from the query's snapshot (the freshness check: it must
// be 0). Bad arguments answer "ERR <procedure>: ..." and apply nothing.
//
// Delivery's hints (ch.hpp, DeliveryHints) are one table per server process: a library serves one
// CH database per server (ch.load starts a new one).
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <new>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compute/ch.hpp"
#include "compute/ch_procs.hpp"
#include "duet/procedure.h"

namespace {

using namespace duet::compute;
using namespace duet::compute::ch;

// Delivery's starting points: 65,535 warehouses of 10 districts (2.6 MB), raised only by
// DeliveryHints::observe, which holds whether or not the observing transaction commits.
DeliveryHints& hints() {
  static DeliveryHints* h = new DeliveryHints(65535);  // never destroyed: calls may run at exit
  return *h;
}

// The call's transaction as a ch_procs adapter. A refused call keeps its code in rc for the
// entry point to return (the transaction then aborts).
struct AbiAdapter {
  duet_txn* t;
  int rc = DUET_OK;
  bool fail(int code) {
    rc = code;
    return false;
  }
  bool get(std::string_view k, std::string* v, bool* found, bool) {
    duet_bytes b{};
    const int c = duet_get(t, k.data(), k.size(), &b);
    if (c != DUET_OK && c != DUET_NOT_FOUND) return fail(c);
    *found = c == DUET_OK;
    v->assign(b.data ? b.data : "", b.len);
    return true;
  }
  bool get_many(const std::string_view* k, std::size_t n, std::string* v, bool* found, bool) {
    // The largest batch: Delivery's lines, up to kMaxLines for each of the ten districts' orders.
    constexpr std::size_t kMax = kDistricts * kMaxLines;
    duet_bytes keys[kMax] = {}, vals[kMax] = {};
    int f[kMax] = {};
    if (n > kMax) return fail(DUET_ERR_INVALID);
    for (std::size_t i = 0; i < n; ++i) keys[i] = duet_bytes{k[i].data(), k[i].size()};
    if (const int c = duet_get_many(t, keys, n, vals, f); c != DUET_OK) return fail(c);
    for (std::size_t i = 0; i < n; ++i) {
      found[i] = f[i] != 0;
      v[i].assign(vals[i].data ? vals[i].data : "", vals[i].len);
    }
    return true;
  }
  bool put(std::string_view k, std::string_view v) {
    const int c = duet_put(t, k.data(), k.size(), v.data(), v.size());
    return c == DUET_OK || fail(c);
  }
  bool del(std::string_view k) {
    const int c = duet_del(t, k.data(), k.size());
    return c == DUET_OK || fail(c);
  }
  bool range(std::string_view lo, std::string_view hi, std::size_t limit,
             std::vector<std::pair<std::string, std::string>>* out) {
    const duet_range r{{lo.data(), lo.size()}, {hi.data(), hi.size()}, DUET_RANGE_END_EXCLUSIVE};
    duet_pairs p{};
    if (const int c = duet_scan(t, &r, limit, &p); c != DUET_OK) return fail(c);
    for (std::size_t i = 0; i < p.count; ++i)
      out->emplace_back(std::string(p.keys[i].data, p.keys[i].len), std::string(p.values[i].data, p.values[i].len));
    return true;
  }
};

std::vector<std::string_view> views(const duet_bytes* args, std::size_t n) {
  std::vector<std::string_view> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.emplace_back(args[i].data, args[i].len);
  return v;
}

int error(duet_reply* r, const std::string& text, int code) {
  duet_reply_error(r, ("ERR " + text).c_str());
  return code;
}

// Parses and runs one TPC-C operation of kind k; `answer` builds the reply from its result.
template <class Answer>
int run_op(Kind k, duet_txn* t, const duet_bytes* args, std::size_t nargs, duet_reply* r, Answer answer) {
  Op op;
  const std::vector<std::string_view> a = views(args, nargs);
  if (const duet::Status s = parse_op(k, a, &op); !s.ok()) return error(r, s.message(), DUET_ERR_INVALID);
  AbiAdapter ad{t};
  OpResult res;
  switch (procs::run(ad, op, &res, k == Kind::kDelivery ? &hints() : nullptr)) {
    case Body::kDone: return answer(r, op, res);
    case Body::kRetry: return ad.rc != DUET_OK ? ad.rc : DUET_ERR_FAILED;
    case Body::kRollback:
      duet_reply_error(r, (std::string("ROLLBACK ") + procedure_name(k) +
                           ": a line names an unused item; nothing was applied").c_str());
      return DUET_ERR_FAILED;
    case Body::kMissing:
      return error(r, std::string(procedure_name(k)) + ": a row the load creates is missing (load the database first)",
                   DUET_ERR_FAILED);
  }
  return DUET_ERR_FAILED;
}

int ch_new_order(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  return run_op(Kind::kNewOrder, t, args, nargs, r, [](duet_reply* rp, const Op&, const OpResult& res) {
    duet_reply_array(rp, 2);
    duet_reply_int(rp, res.o_id);
    duet_reply_int(rp, res.value);
    return DUET_OK;
  });
}

int ch_payment(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  return run_op(Kind::kPayment, t, args, nargs, r, [](duet_reply* rp, const Op&, const OpResult&) {
    duet_reply_simple(rp, "OK");
    return DUET_OK;
  });
}

int ch_delivery(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  return run_op(Kind::kDelivery, t, args, nargs, r, [](duet_reply* rp, const Op&, const OpResult& res) {
    duet_reply_array(rp, kDistricts);
    for (std::uint32_t o : res.delivered) duet_reply_int(rp, o);
    return DUET_OK;
  });
}

int ch_order_status(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs,
                    duet_reply* r) {
  return run_op(Kind::kOrderStatus, t, args, nargs, r, [](duet_reply* rp, const Op&, const OpResult& res) {
    duet_reply_int(rp, res.value);
    return DUET_OK;
  });
}

int ch_stock_level(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs,
                   duet_reply* r) {
  return run_op(Kind::kStockLevel, t, args, nargs, r, [](duet_reply* rp, const Op&, const OpResult& res) {
    duet_reply_int(rp, res.value);
    return DUET_OK;
  });
}

int ch_load(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  if (nargs % 2 != 0) return error(r, "ch.load takes key value pairs", DUET_ERR_INVALID);
  hints().reset();
  for (std::size_t i = 0; i < nargs; i += 2)
    if (const int c = duet_put(t, args[i].data, args[i].len, args[i + 1].data, args[i + 1].len); c != DUET_OK)
      return c;
  duet_reply_int(r, static_cast<std::int64_t>(nargs / 2));
  return DUET_OK;
}


// ch.populate small|full warehouses [seed]: generates the initial database in this one
// transaction (tests and trials; the benchmark streams larger ones through ch.load).
int ch_populate(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs,
                duet_reply* r) {
  const std::vector<std::string_view> a = views(args, nargs);
  std::int64_t w = 0, seed = 1;
  if ((nargs != 2 && nargs != 3) || (a[0] != "small" && a[0] != "full") || !parse_decimal(a[1], 1, 65535, &w) ||
      (nargs == 3 && !parse_decimal(a[2], 0, INT64_MAX, &seed)))
    return error(r, "ch.populate takes small|full, the warehouse count (1 .. 65535) and an optional seed",
                 DUET_ERR_INVALID);
  Scale sc = a[0] == "full" ? Scale::full(static_cast<std::uint32_t>(w)) : Scale::small(static_cast<std::uint32_t>(w));
  sc.seed = static_cast<std::uint64_t>(seed);
  // Rows: items, then per warehouse stock and per district customers (with their name index and
  // history), orders, about 10 lines each, and the new orders.
  const double rows = sc.items + static_cast<double>(sc.warehouses) *
                                     (sc.items + kDistricts * (3.0 * sc.customers + 11.0 * sc.orders + sc.new_orders));
  if (rows > 4e6)
    return error(r, "ch.populate: " + std::to_string(static_cast<long long>(rows)) +
                        " rows are too many for one transaction (at most 4,000,000); stream them with ch.load",
                 DUET_ERR_INVALID);
  hints().reset();
  std::int64_t n = 0;
  int rc = DUET_OK;
  const duet::Status s = generate(sc, 0, 1, [&](std::string_view k, std::string_view v) -> duet::Status {
    if ((rc = duet_put(t, k.data(), k.size(), v.data(), v.size())) != DUET_OK) return duet::Status::Internal("put");
    ++n;
    return duet::Status::Ok();
  });
  if (rc != DUET_OK) return rc;
  if (!s.ok()) return error(r, "ch.populate: " + s.message(), DUET_ERR_INVALID);
  duet_reply_int(r, n);
  return DUET_OK;
}

// The freshness check: how many of the acknowledged orders (w d o triples) the snapshot misses.
int stale_orders(duet_txn* t, const duet_bytes* args, std::size_t nargs, duet_reply* r, std::int64_t* stale) {
  if (nargs % 3 != 0) return error(r, "ch query: acknowledged orders are w d o triples", DUET_ERR_INVALID);
  *stale = 0;
  const std::vector<std::string_view> a = views(args, nargs);
  for (std::size_t i = 0; i < nargs; i += 3) {
    std::int64_t w = 0, d = 0, o = 0;
    if (!parse_decimal(a[i], 1, 65535, &w) || !parse_decimal(a[i + 1], 1, kDistricts, &d) ||
        !parse_decimal(a[i + 2], 1, UINT32_MAX, &o))
      return error(r, "ch query: acknowledged order " + std::to_string(i / 3 + 1) +
                          " is not w (1 .. 65535) d (1 .. 10) o (a positive order id)",
                   DUET_ERR_INVALID);
    const std::string k =
        order_key(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(o));
    duet_bytes v{};
    const int c = duet_get(t, k.data(), k.size(), &v);
    if (c == DUET_NOT_FOUND) ++*stale;
    else if (c != DUET_OK) return c;
  }
  return DUET_OK;
}

constexpr const char* kMirror = "ch.order_line";
const char* const kMirrorColumns[] = {"ol_number", "ol_delivery_d", "ol_quantity", "ol_amount"};

// ORDER-LINE's row fields in the ABI's form.
std::vector<duet_field> order_line_fields() {
  const std::vector<Field>& f = codec(kOrderLine).fields();
  std::vector<duet_field> fields(f.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    fields[i] = {f[i].name.c_str(), static_cast<duet_type>(f[i].type), f[i].width};
  return fields;
}

// ORDER-LINE at the call's snapshot, its columns `names` decoded into the host's columns.
int order_lines(duet_txn* t, const char* const* names, std::size_t nnames, duet_table** out) {
  if (!duet_abi_check(t->api)) return DUET_ERR_UNAVAILABLE;  // a host without decode_columns
  std::string lo, hi;
  table_range(kOrderLine, &lo, &hi);
  duet_snapshot_arg arg{};
  arg.is_range = 1;
  arg.range = {{lo.data(), lo.size()}, {hi.data(), hi.size()}, DUET_RANGE_END_EXCLUSIVE};
  duet_snapshot* s = nullptr;
  if (const int c = t->api->snapshot(t, &arg, 1, &s); c != DUET_OK) return c;
  const std::vector<duet_field> fields = order_line_fields();
  return t->api->decode_columns(t, s, fields.data(), fields.size(), names, nnames, 0, out);
}

int ch_mirror(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  const std::vector<std::string_view> a = views(args, nargs);
  std::int64_t threads = 1;
  if (nargs > 2 || (nargs >= 1 && a[0] != "auto" && a[0] != "cpu" && a[0] != "gpu") ||
      (nargs == 2 && !parse_decimal(a[1], 1, 1024, &threads)))
    return error(r, "ch.mirror takes auto|cpu|gpu and the query threads (1 .. 1024)", DUET_ERR_INVALID);
  if (!duet_abi_check(t->api)) return error(r, "ch.mirror: the host has no column mirrors", DUET_ERR_UNAVAILABLE);
  std::string lo, hi;
  table_range(kOrderLine, &lo, &hi);
  const std::vector<duet_field> fields = order_line_fields();
  duet_mirror_def d{};
  d.name = kMirror;
  d.range = {{lo.data(), lo.size()}, {hi.data(), hi.size()}, DUET_RANGE_END_EXCLUSIVE};
  d.fields = fields.data();
  d.nfields = fields.size();
  d.columns = kMirrorColumns;
  d.ncolumns = 4;
  d.key_len = 9;  // the table's tag, then (w, d, o, l) in eight bytes: the id
  d.id_from = 1;
  d.device_copy = nargs == 0 || a[0] != "cpu";
  d.query_threads = static_cast<std::uint32_t>(threads);
  if (const int c = t->api->mirror_attach(t, &d); c != DUET_OK)
    return error(r, "ch.mirror: the mirror cannot be attached (code " + std::to_string(c) +
                        "; another definition is attached already, or memory ran out)", c);
  duet_reply_simple(r, "OK");
  return DUET_OK;
}

// Filters the order lines' columns `names` by `preds`, aggregates them by `keys` (at most one: the
// mirror groups by one column); *out is the aggregate, *plan where it was read: from the mirror
// when it answers at this start, else from a SNAPSHOT of the table.
int filter_aggregate(duet_txn* t, const char* const* names, std::size_t nnames, const duet_predicate* preds,
                     std::size_t npreds, const char* const* keys, std::size_t nkeys, const duet_agg* aggs,
                     std::size_t naggs, duet_table** out, const char** plan) {
  if (!duet_abi_check(t->api)) return DUET_ERR_UNAVAILABLE;
  const int m = t->api->mirror_aggregate(t, kMirror, preds, npreds, nkeys ? keys[0] : nullptr, aggs, naggs, out);
  if (m != DUET_NOT_FOUND && m != DUET_ERR_UNAVAILABLE) {
    *plan = "mirror";
    return m;
  }
  *plan = "snapshot";
  duet_table* lines = nullptr;
  if (const int c = order_lines(t, names, nnames, &lines); c != DUET_OK) return c;
  const std::uint32_t* rows = nullptr;
  std::size_t n = 0;
  if (const int c = t->api->filter(t, lines, preds, npreds, &rows, &n); c != DUET_OK) return c;
  return t->api->aggregate(t, lines, rows, n, keys, nkeys, aggs, naggs, out);
}

const std::int64_t* column(duet_txn* t, const duet_table* table, const char* name) {
  duet_column_view v{};
  return t->api->column(table, name, &v) == DUET_OK ? static_cast<const std::int64_t*>(v.data) : nullptr;
}

int ch_q1(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  std::int64_t stale = 0;
  if (const int c = stale_orders(t, args, nargs, r, &stale); c != DUET_OK) return c;
  duet_predicate p{};
  p.column = "ol_delivery_d";
  p.cmp = DUET_GT;
  p.i = kDate2007;
  const char* keys[] = {"ol_number"};
  const duet_agg aggs[] = {{DUET_SUM, "ol_quantity", "sum_qty"}, {DUET_SUM, "ol_amount", "sum_amount"},
                           {DUET_COUNT, nullptr, "count"}};
  duet_table* a = nullptr;
  const char* plan = nullptr;
  if (const int c = filter_aggregate(t, kMirrorColumns, 4, &p, 1, keys, 1, aggs, 3, &a, &plan); c != DUET_OK) return c;
  const std::size_t n = t->api->table_rows(a);
  const std::int64_t* out[] = {column(t, a, "ol_number"), column(t, a, "sum_qty"), column(t, a, "sum_amount"),
                               column(t, a, "count")};
  for (const std::int64_t* c : out)
    if (!c) return error(r, "ch.q1: the aggregate lacks a column", DUET_ERR_FAILED);
  duet_reply_array(r, 4);
  duet_reply_int(r, static_cast<std::int64_t>(t->api->start_ts(t)));
  duet_reply_int(r, stale);
  duet_reply_array(r, n);
  for (std::size_t i = 0; i < n; ++i) {
    duet_reply_array(r, 4);
    for (const std::int64_t* c : out) duet_reply_int(r, c[i]);
  }
  duet_reply_simple(r, plan);
  return DUET_OK;
}

int ch_q6(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  std::int64_t stale = 0;
  if (const int c = stale_orders(t, args, nargs, r, &stale); c != DUET_OK) return c;
  duet_predicate p[2] = {};
  p[0].column = "ol_delivery_d";
  p[0].cmp = DUET_BETWEEN;
  p[0].i = kDate1999;
  p[0].i_hi = kDate2020 - 1;
  p[1].column = "ol_quantity";
  p[1].cmp = DUET_BETWEEN;
  p[1].i = 1;
  p[1].i_hi = 100000;
  const duet_agg agg{DUET_SUM, "ol_amount", "revenue"};
  duet_table* a = nullptr;
  const char* plan = nullptr;
  if (const int c = filter_aggregate(t, kMirrorColumns + 1, 3, p, 2, nullptr, 0, &agg, 1, &a, &plan); c != DUET_OK)
    return c;
  const std::int64_t* rev = column(t, a, "revenue");
  duet_reply_array(r, 4);
  duet_reply_int(r, static_cast<std::int64_t>(t->api->start_ts(t)));
  duet_reply_int(r, stale);
  duet_reply_int(r, rev && t->api->table_rows(a) ? rev[0] : 0);
  duet_reply_simple(r, plan);
  return DUET_OK;
}

int ch_q3(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  std::int64_t stale = 0;
  if (const int c = stale_orders(t, args, nargs, r, &stale); c != DUET_OK) return c;
  AbiAdapter a{t};
  std::vector<Q3Row> rows;
  std::size_t read = 0;
  if (procs::q3_read(a, StateFilter{}, &rows, &read) != Body::kDone)
    return a.rc != DUET_OK ? a.rc : error(r, "ch.q3: a read failed", DUET_ERR_FAILED);
  duet_reply_array(r, 3);
  duet_reply_int(r, static_cast<std::int64_t>(t->api->start_ts(t)));
  duet_reply_int(r, stale);
  duet_reply_array(r, rows.size());
  for (const Q3Row& q : rows) {
    duet_reply_array(r, 5);
    for (std::int64_t x : {q.o_id, q.w_id, q.d_id, q.revenue, q.entry_d}) duet_reply_int(r, x);
  }
  return DUET_OK;
}

int ch_check(duet_txn* t, const duet_bytes*, std::size_t, const duet_bytes* args, std::size_t nargs, duet_reply* r) {
  std::int64_t warehouses = 0;
  if (nargs != 1 || !parse_decimal(std::string_view(args[0].data, args[0].len), 1, 65535, &warehouses))
    return error(r, "ch.check takes the warehouse count (1 .. 65535)", DUET_ERR_INVALID);
  AbiAdapter ad{t};
  std::string violation;
  if (procs::check_consistency(ad, static_cast<std::uint32_t>(warehouses), &violation) != Body::kDone)
    return ad.rc != DUET_OK ? ad.rc : DUET_ERR_FAILED;
  if (!violation.empty()) return error(r, violation, DUET_ERR_FAILED);
  duet_reply_simple(r, "OK");
  return DUET_OK;
}

// Runs entry point `fn`, turning an allocation failure into DUET_ERR_NO_MEMORY: no exception
// may leave an entry point (procedure.h).
template <duet_procedure_fn fn>
int guarded(duet_txn* t, const duet_bytes* keys, std::size_t nkeys, const duet_bytes* args, std::size_t nargs,
            duet_reply* r) {
  try {
    return fn(t, keys, nkeys, args, nargs, r);
  } catch (const std::bad_alloc&) {
    return DUET_ERR_NO_MEMORY;
  } catch (...) {
    return DUET_ERR_FAILED;
  }
}

const duet_procedure_def kProcedures[] = {
    {"ch.load", guarded<ch_load>, DUET_PROC_LONG},
    {"ch.populate", guarded<ch_populate>, DUET_PROC_LONG},
    {"ch.new_order", guarded<ch_new_order>, 0},
    {"ch.payment", guarded<ch_payment>, 0},
    {"ch.delivery", guarded<ch_delivery>, 0},
    {"ch.order_status", guarded<ch_order_status>, DUET_PROC_READ_ONLY},
    {"ch.stock_level", guarded<ch_stock_level>, DUET_PROC_READ_ONLY},
    {"ch.mirror", guarded<ch_mirror>, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
    {"ch.q1", guarded<ch_q1>, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
    {"ch.q6", guarded<ch_q6>, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
    {"ch.q3", guarded<ch_q3>, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
    {"ch.check", guarded<ch_check>, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
};
const duet_library_def kLibrary = {DUET_PROCEDURE_ABI_VERSION, "ch", kProcedures,
                                   sizeof kProcedures / sizeof kProcedures[0]};

}  // namespace

extern "C" DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLibrary; }

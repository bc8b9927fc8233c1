// CH-benCHmark on a txn keyspace: the loader, transactions and the queries Q1, Q6 and Q3 through
// the compute operators (ch.hpp; docs/compute.md, "CH-benCHmark"). The schema, rows and work are in
// ch_schema.cpp.
#include "compute/ch.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>
#include <tuple>

#include "compute/ch_procs.hpp"

namespace duet::compute::ch {

namespace {

// The txn keyspace as a procs adapter.
struct TxnAdapter {
  Txn* t;
  Status failed;  ///< the last refused call's status (kept across calls; a refusal ends the body)
  bool ok(Status s) {
    const bool good = s.ok();
    if (!good) failed = std::move(s);
    return good;
  }
  bool get(std::string_view k, std::string* v, bool* found, bool) { return ok(t->get(k, v, found)); }
  bool get_many(const std::string_view* k, std::size_t n, std::string* v, bool* found, bool) {
    return ok(t->get_many(k, n, v, found));
  }
  bool put(std::string_view k, std::string_view v) { return ok(t->put(k, v)); }
  bool del(std::string_view k) { return ok(t->del(k)); }
  bool range(std::string_view lo, std::string_view hi, std::size_t limit,
             std::vector<std::pair<std::string, std::string>>* out) {
    TxnRange rg{std::string(lo), std::string(hi), true, false, false, false};
    return ok(t->scan(rg, limit, out));
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
  c->hints_ = std::make_unique<DeliveryHints>(s.warehouses, /*for_queries=*/true);
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
                  std::span<const std::string> fields, std::span<const SnapshotArg> ranges) {
  std::string lo, hi;
  table_range(tag, &lo, &hi);
  const SnapshotArg arg = SnapshotArg::of(TxnRange{lo, hi, true, false, false, false});
  if (ranges.empty()) ranges = std::span<const SnapshotArg>(&arg, 1);
  TxnSnapshot own;
  TxnSnapshot& snap = buffer ? *buffer : own;
  if (Status s = t->snapshot(ranges, &snap); !s.ok()) return s;
  if (rows_read) *rows_read += snap.size();
  if (fields.empty()) return codec(tag).decode(RowCodec::slots_of(snap), out);
  return codec(tag).decode_fields(RowCodec::slots_of(snap), fields, out);
}

Status Ch::attach_mirror(unsigned query_threads, Device device) {
  if (mirror_) return Status::InvalidArgument("ch: the mirror is already attached");
  ColumnMirror::Config c;
  c.device_copy = device != Device::kCpu;
  table_range(kOrderLine, &c.lo, &c.hi);
  c.codec = codec(kOrderLine);
  c.columns = {"ol_number", "ol_delivery_d", "ol_quantity", "ol_amount"};
  // (w, d, o, l): the key's eight bytes after its tag, big-endian.
  c.key_id = [](std::string_view k, std::uint64_t* id) {
    if (k.size() != 9) return false;
    std::uint64_t x = 0;
    for (std::size_t i = 1; i < 9; ++i) x = (x << 8) | static_cast<unsigned char>(k[i]);
    *id = x;
    return true;
  };
  mirror_threads_ = std::max(1u, query_threads);
  return ColumnMirror::attach(space_, std::move(c), &mirror_);
}

Status Ch::check_mirror_fresh(std::uint64_t start, const std::vector<Ack>& acks) {
  if (!mirror_) return Status::Ok();
  for (const Ack& a : acks) {
    bool yes = false;
    if (Status s = mirror_->contains(order_line_key(a.w, a.d, a.o, 1), start, &yes); !s.ok()) return s;
    if (!yes)
      return Status::Internal("ch freshness: the lines of order (" + std::to_string(a.w) + ", " + std::to_string(a.d) +
                              ", " + std::to_string(a.o) + ") acknowledged at " + std::to_string(a.commit_ts) +
                              " are not in the mirror at " + std::to_string(start));
  }
  return Status::Ok();
}

namespace {

void q1_rows(const Table& A, QueryResult* out) {
  out->q1.resize(A.rows());
  for (std::size_t i = 0; i < A.rows(); ++i)
    out->q1[i] = {col(A, "ol_number").i64()[i], col(A, "sum_qty").i64()[i], col(A, "sum_amount").i64()[i],
                  col(A, "count").i64()[i]};
}

const Agg kQ1Aggs[] = {{Agg::kSum, "ol_quantity", "sum_qty"}, {Agg::kSum, "ol_amount", "sum_amount"},
                       {Agg::kCount, "", "count"}};
const Predicate kQ1Where[] = {{"ol_delivery_d", Cmp::kGt, kDate2007, 0, 0, 0, {}, {}}};
const Predicate kQ6Where[] = {{"ol_delivery_d", Cmp::kBetween, kDate1999, kDate2020 - 1, 0, 0, {}, {}},
                              {"ol_quantity", Cmp::kBetween, 1, 100000, 0, 0, {}, {}}};
const Agg kQ6Aggs[] = {{Agg::kSum, "ol_amount", "revenue"}};

}  // namespace

Status Ch::mirror_query(Txn* t, const ColumnMirror::Query& q, Table* a, QueryResult* out) {
  std::size_t scanned = 0;
  if (Status s = mirror_->aggregate(t->start_ts(), q, a, Device::kAuto, mirror_threads_, &scanned); !s.ok()) return s;
  out->rows_read += scanned;
  return Status::Ok();
}

Status Ch::q1(Txn* t, Context* ctx, QueryResult* out, QueryScratch* scratch) {
  Table L, A;
  if (mirror_) {
    if (Status s = mirror_query(t, {{std::begin(kQ1Where), std::end(kQ1Where)}, "ol_number",
                                    {std::begin(kQ1Aggs), std::end(kQ1Aggs)}},
                                &A, out);
        !s.ok())
      return s;
    q1_rows(A, out);
    return Status::Ok();
  }
  const std::string cols[] = {"ol_number", "ol_delivery_d", "ol_quantity", "ol_amount"};
  if (Status s = read_table(t, kOrderLine, &L, &out->rows_read, scratch ? &scratch->a : nullptr, cols); !s.ok())
    return s;
  Selection sel;
  if (Status s = ctx->filter(L, kQ1Where, &sel); !s.ok()) return s;
  const std::string keys[] = {"ol_number"};
  if (Status s = ctx->aggregate(L, &sel, keys, kQ1Aggs, &A); !s.ok()) return s;
  q1_rows(A, out);
  return Status::Ok();
}

Status Ch::q6(Txn* t, Context* ctx, QueryResult* out, QueryScratch* scratch) {
  Table L, A;
  if (mirror_) {
    if (Status s = mirror_query(t, {{std::begin(kQ6Where), std::end(kQ6Where)}, "", {std::begin(kQ6Aggs), std::end(kQ6Aggs)}},
                                &A, out);
        !s.ok())
      return s;
    out->q6 = col(A, "revenue").i64()[0];
    return Status::Ok();
  }
  const std::string cols[] = {"ol_delivery_d", "ol_quantity", "ol_amount"};
  if (Status s = read_table(t, kOrderLine, &L, &out->rows_read, scratch ? &scratch->a : nullptr, cols); !s.ok())
    return s;
  Selection sel;
  if (Status s = ctx->filter(L, kQ6Where, &sel); !s.ok()) return s;
  if (Status s = ctx->aggregate(L, &sel, {}, kQ6Aggs, &A); !s.ok()) return s;
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

// The key range of one order's lines.
TxnRange order_lines_of(std::int64_t w, std::int64_t d, std::int64_t o) {
  TxnRange r{{}, {}, true, false, false, false};
  order_lines_range(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(o),
                    &r.start, &r.end);
  return r;
}

}  // namespace

Status Ch::q3(Txn* t, Context* ctx, QueryResult* out, const StateFilter& f, Q3Plan plan, QueryScratch* scratch) {
  QueryScratch own;
  if (scratch == nullptr) scratch = &own;
  if (plan == Q3Plan::kSnapshotTables && !ctx)
    return Status::InvalidArgument("ch: Q3's snapshot-tables plan needs a compute context");
  // Delivered orders' NEW-ORDER keys stay in the index as tombstones, which a scan from order 0
  // steps over one by one: each district is read from the order Deliveries committed before t's
  // snapshot had reached. A transaction that wrote NEW-ORDER keys itself reads them all.
  std::string lo, hi;
  table_range(kNewOrder, &lo, &hi);
  const auto w = t->writes().lower_bound(std::string_view(lo));
  const bool own_new_orders = w != t->writes().end() && w->first < hi;
  const std::vector<std::uint32_t> starts = own_new_orders ? std::vector<std::uint32_t>{}
                                                           : hints_->query_starts(t->start_ts());
  switch (plan) {
    case Q3Plan::kRead: return q3_read(t, out, f, starts);
    case Q3Plan::kSnapshotKeys: return q3_keys(t, out, f, scratch, starts);
    case Q3Plan::kSnapshotTables: break;
  }
  return q3_tables(t, ctx, out, f, scratch, starts);
}

Status Ch::q3_read(Txn* t, QueryResult* out, const StateFilter& f, std::span<const std::uint32_t> starts) {
  TxnAdapter a{t, {}};
  out->q3.clear();
  if (procs::q3_read(a, f, &out->q3, &out->rows_read, starts) == Body::kDone) return Status::Ok();
  return a.failed.ok() ? Status::Internal("ch q3: the READ plan failed") : a.failed;
}

Status Ch::q3_keys(Txn* t, QueryResult* out, const StateFilter& f, QueryScratch* scratch,
                   std::span<const std::uint32_t> starts) {
  const RowCodec &cc = codec(kCustomer), &oc = codec(kOrder), &nc = codec(kNewOrder), &lc = codec(kOrderLine);
  // Buffer a holds the new orders, then the customers, then the order lines (each step's keys
  // are in args before its SNAPSHOT clears a); b holds the orders, which the last step reads.
  std::vector<SnapshotArg>& args = scratch->args;
  args.clear();
  new_order_ranges(starts, &args);
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

Status Ch::q3_tables(Txn* t, Context* ctx, QueryResult* out, const StateFilter& f, QueryScratch* scratch,
                     std::span<const std::uint32_t> starts) {
  Table C, N, O, L;  // each table decoded (the columns Q3 reads) from one SNAPSHOT in buffer a
  const std::string c_read[] = {"c_id", "c_d_id", "c_w_id", "c_state"};
  const std::string o_read[] = {"o_id", "o_d_id", "o_w_id", "o_c_id", "o_entry_d"};
  const std::string l_read[] = {"ol_w_id", "ol_d_id", "ol_o_id", "ol_amount"};
  if (Status s = read_table(t, kCustomer, &C, &out->rows_read, &scratch->a, c_read); !s.ok()) return s;
  std::vector<SnapshotArg>& news = scratch->args;
  news.clear();
  new_order_ranges(starts, &news);
  if (Status s = read_table(t, kNewOrder, &N, &out->rows_read, &scratch->a, {}, news); !s.ok()) return s;
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
  TxnAdapter a{t, {}};
  std::string violation;
  if (procs::check_consistency(a, s_.warehouses, &violation) != Body::kDone)
    return Status::Internal("ch consistency: a read of the check failed");
  return violation.empty() ? Status::Ok() : Status::Internal(violation);
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

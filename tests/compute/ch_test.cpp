// CH-benCHmark on a txn keyspace (src/compute/ch.hpp): at one warehouse (Scale::small: 1,000
// items, 300 customers and orders per district, scaled by DUET_TEST_SCALE with the operations)
// the loaded database is checked, then worker
// threads run NewOrder / Payment / Delivery / Order-Status / Stock-Level beside a query thread;
// afterwards TPC-C's consistency conditions 1-4 hold; every Q1, Q6 and Q3 the query thread ran
// equals a naive reference computed from a full scan at the same snapshot; every query saw every
// NewOrder acknowledged before it began (the freshness check). Negative controls: a planted stale
// query (a transaction begun before the commit) and planted inconsistent rows must be caught. Q3's
// three plans agree with the reference at every selectivity of its customer predicate.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <thread>

#include "checkers/si_checker.hpp"
#include "compute/ch.hpp"
#include "compute/ch_procs.hpp"
#include "reference.hpp"
#include "txn/read_key.hpp"

namespace duet::compute::ch {
namespace {

using testing::scaled;

// The negative controls need only a database whose checks pass: 100 items, 30 customers and
// orders per district (9 undelivered).
Scale tiny() {
  Scale s = Scale::small(1);
  s.items = 100;
  s.customers = s.orders = 30;
  s.new_orders = 9;
  return s;
}

// Scale::small at DUET_TEST_SCALE=1; the sanitizer runs shrink the database with the work (to at
// least 100 items and 30 customers and orders per district).
Scale scaled_small() {
  Scale sc = Scale::small(1);
  sc.items = static_cast<std::uint32_t>(std::max<std::size_t>(100, scaled(sc.items)));
  sc.customers = sc.orders = static_cast<std::uint32_t>(std::max<std::size_t>(30, scaled(sc.customers)));
  sc.new_orders = sc.orders * 3 / 10;
  return sc;
}

// The first operation of kind k in a seed-mix work list for `sc`.
Op first_op(const Scale& sc, Kind k) {
  const std::vector<Op> work = make_work(sc, Mix::seed(), 400, 4);
  return *std::ranges::find_if(work, [k](const Op& o) { return o.kind == k; });
}

// Every district's oldest undelivered order in a freshly loaded `sc`.
std::uint32_t oldest_new_order(const Scale& sc) { return sc.orders - sc.new_orders + 1; }

struct Fixture {
  std::shared_ptr<TxnSpace> space;
  std::unique_ptr<Ch> ch;
  std::shared_ptr<Engine> engine;
  explicit Fixture(const Scale& s) {
    EXPECT_TRUE(TxnSpace::open("ch", TxnConfig{}, &space).ok());
    EXPECT_TRUE(Ch::make(space, s, &ch).ok());
    EXPECT_TRUE(ch->load(2).ok());
    EngineConfig ec;
    ec.device = Device::kCpu;
    ec.cpu_threads = 2;
    EXPECT_TRUE(Engine::open(ec, &engine).ok());
  }
  // Key k's value in a fresh transaction, "" when absent.
  std::string read(const std::string& k) { return duet::test::read_key(*space, k).value_or(""); }
  // Runs the three queries and the reference on one fresh transaction.
  void queries_equal_reference(const std::vector<Ack>& acks, std::size_t* checked) {
    std::unique_ptr<Context> ctx;
    ASSERT_TRUE(engine->context(Device::kCpu, &ctx).ok());
    Txn t;
    ASSERT_TRUE(space->begin(&t).ok());
    const Status fresh = Ch::check_fresh(&t, acks);
    ASSERT_TRUE(fresh.ok()) << fresh.to_string();
    const Status mfresh = ch->check_mirror_fresh(t.start_ts(), acks);
    ASSERT_TRUE(mfresh.ok()) << mfresh.to_string();
    QueryResult q, ref;
    ASSERT_TRUE(ch->q1(&t, ctx.get(), &q).ok());
    ASSERT_TRUE(ch->q6(&t, ctx.get(), &q).ok());
    const Status s3 = ch->q3(&t, ctx.get(), &q);
    ASSERT_TRUE(s3.ok()) << s3.to_string();
    ASSERT_TRUE(Ch::reference(&t, &ref).ok());
    EXPECT_EQ(q.q1, ref.q1);
    EXPECT_EQ(q.q6, ref.q6);
    EXPECT_EQ(q.q3, ref.q3);
    for (Q3Plan plan : {Q3Plan::kRead, Q3Plan::kSnapshotKeys}) {
      QueryResult p;
      ASSERT_TRUE(ch->q3(&t, nullptr, &p, StateFilter{}, plan).ok()) << q3_plan_name(plan);
      EXPECT_EQ(p.q3, ref.q3) << q3_plan_name(plan);
    }
    ASSERT_FALSE(ref.q1.empty());
    ASSERT_FALSE(ref.q3.empty());
    t.abort();
    ++*checked;
  }
};

TEST(Ch, BadInput) {
  Scale s = Scale::small(1);
  s.warehouses = 0;
  EXPECT_EQ(s.check().code(), StatusCode::kInvalidArgument);
  s = Scale::small(1);
  s.orders = s.customers + 1;
  EXPECT_EQ(s.check().code(), StatusCode::kInvalidArgument);
  s = Scale::small(1);
  s.new_orders = s.orders + 1;
  EXPECT_EQ(s.check().code(), StatusCode::kInvalidArgument);
  std::unique_ptr<Ch> ch;
  EXPECT_EQ(Ch::make(nullptr, Scale::small(1), &ch).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(generate(Scale::small(1), 2, 2, [](std::string_view, std::string_view) { return Status::Ok(); }).code(),
            StatusCode::kInvalidArgument);
}

// Every generated operation survives op_args then parse_op unchanged (the server runs what the
// embedded benchmark would); bad arguments are refused, naming the argument.
TEST(Ch, OperationsRoundTripAsProcedureArguments) {
  Scale s = Scale::small(3);
  std::size_t seen[kKinds] = {};
  for (std::uint64_t stream = 0; stream < 2; ++stream)
    for (const Op& op : make_work(s, Mix::tpcc(), 2000, stream)) {
      const std::vector<std::string> text = op_args(op);
      const std::vector<std::string_view> args(text.begin(), text.end());
      Op back;
      const Status st = parse_op(op.kind, args, &back);
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(op_args(back), text);
      EXPECT_EQ(back.kind, op.kind);
      EXPECT_EQ(back.w, op.w);
      EXPECT_EQ(back.by_name, op.by_name);
      if (op.kind == Kind::kNewOrder || op.kind == Kind::kPayment || op.kind == Kind::kDelivery) {
        EXPECT_EQ(back.date, op.date);
      }
      ++seen[static_cast<std::size_t>(op.kind)];
    }
  for (std::size_t k = 0; k < kKinds; ++k) EXPECT_GT(seen[k], 0u) << kind_name(static_cast<Kind>(k));
  auto parse = [](Kind k, std::vector<std::string_view> a) {
    Op op;
    return parse_op(k, a, &op);
  };
  EXPECT_TRUE(parse(Kind::kPayment, {"1", "2", "1", "2", "name:999", "5", "7", "1"}).ok());
  EXPECT_EQ(parse(Kind::kNewOrder, {"1", "2", "3", "4", "5", "1"}).code(), StatusCode::kInvalidArgument);
  const Status d = parse(Kind::kNewOrder, {"1", "11", "3", "4", "5", "1", "1"});
  EXPECT_NE(d.message().find("argument 2 (d)"), std::string::npos) << d.to_string();
  EXPECT_EQ(parse(Kind::kNewOrder, {"1", "2", "3", "4", "5", "1", "256"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(Kind::kPayment, {"1", "2", "1", "2", "name:1000", "5", "7", "1"}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(Kind::kPayment, {"1", "2", "1", "2", "12x", "5", "7", "1"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(Kind::kDelivery, {"1", "0", "5"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(Kind::kStockLevel, {"1", "2"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(Kind::kOrderStatus, {"65536", "2", "3"}).code(), StatusCode::kInvalidArgument);
}

// observe() only raises a hint, advance() goes past the delivered order, reset() clears them all,
// and out-of-range districts are ignored.
TEST(Ch, DeliveryHintsRiseAndReset) {
  DeliveryHints h(2);
  h.observe(2, 3, 40);
  h.observe(2, 3, 20);
  EXPECT_EQ(h.start(2, 3), 40u);
  OpResult r;
  r.delivered[2] = 40;
  h.advance(2, r);
  EXPECT_EQ(h.start(2, 3), 41u);
  EXPECT_EQ(h.start(1, 3), 0u);
  h.observe(3, 1, 9);   // no warehouse 3
  h.observe(1, 11, 9);  // no district 11
  EXPECT_EQ(h.start(3, 1), 0u);
  h.reset();
  EXPECT_EQ(h.start(2, 3), 0u);
}

// For queries the hints keep each district's last Deliveries by commit timestamp: a snapshot
// gets one past the order of the newest Delivery committed at or before its start, never a
// later one's, whatever order the commits are reported in.
TEST(Ch, DeliveryHintsGiveQueriesOnlyStartsTheirSnapshotHolds) {
  DeliveryHints plain(1);
  DeliveryHints h(2, /*for_queries=*/true);
  auto deliver = [&](std::uint64_t ts, std::uint32_t o) {
    OpResult r;
    r.commit_ts = ts;
    r.delivered[2] = o;  // district 3
    h.advance(2, r);
    plain.advance(1, r);
  };
  EXPECT_EQ(h.query_start(2, 3, 1000), 0u);
  deliver(100, 5);
  EXPECT_EQ(plain.query_start(1, 3, 1000), 0u);  // not kept without for_queries
  EXPECT_EQ(h.query_start(2, 3, 99), 0u);
  EXPECT_EQ(h.query_start(2, 3, 100), 6u);
  deliver(300, 9);
  deliver(200, 7);  // reported after a later commit
  EXPECT_EQ(h.query_start(2, 3, 150), 6u);
  EXPECT_EQ(h.query_start(2, 3, 250), 8u);
  EXPECT_EQ(h.query_start(2, 3, 300), 10u);
  EXPECT_EQ(h.query_start(2, 2, 300), 0u);  // another district
  EXPECT_EQ(h.query_start(1, 3, 300), 0u);  // another warehouse
  EXPECT_EQ(h.query_start(3, 3, 300), 0u);  // no warehouse 3
  EXPECT_EQ(h.query_start(2, 11, 300), 0u);
  deliver(400, 11);
  deliver(500, 13);  // the fifth: the oldest kept (100) gives way
  EXPECT_EQ(h.query_start(2, 3, 150), 0u);
  EXPECT_EQ(h.query_start(2, 3, 450), 12u);
  const std::vector<std::uint32_t> all = h.query_starts(450);
  ASSERT_EQ(all.size(), 2u * kDistricts);
  EXPECT_EQ(all[kDistricts + 2], 12u);
  EXPECT_EQ(std::count(all.begin(), all.end(), 0u), static_cast<long>(all.size()) - 1);
  h.reset();
  EXPECT_EQ(h.query_start(2, 3, 450), 0u);
}

// Q3 reads NEW-ORDER from where committed Deliveries left it, but only those committed before its
// snapshot: a query begun before a Delivery must still see the orders it delivered.
TEST(Ch, Q3SkipsOnlyTheOrdersDeliveredBeforeItsSnapshot) {
  const Scale sc = tiny();
  Fixture f(sc);
  const Op op = first_op(sc, Kind::kDelivery);
  const std::uint32_t oldest = oldest_new_order(sc);
  Txn before;
  ASSERT_TRUE(f.space->begin(&before).ok());
  std::uint64_t rng = 1;
  OpResult r;
  ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
  ASSERT_TRUE(r.committed);
  Txn after;
  ASSERT_TRUE(f.space->begin(&after).ok());
  const std::vector<std::uint32_t> early = f.ch->delivery_hints().query_starts(before.start_ts());
  const std::vector<std::uint32_t> late = f.ch->delivery_hints().query_starts(after.start_ts());
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    EXPECT_EQ(early[(op.w - 1) * kDistricts + d - 1], 0u);
    EXPECT_EQ(late[(op.w - 1) * kDistricts + d - 1], oldest + 1);
  }
  std::unique_ptr<Context> ctx;
  ASSERT_TRUE(f.engine->context(Device::kCpu, &ctx).ok());
  StateFilter all;
  ASSERT_TRUE(StateFilter::of_selectivity(1.0, &all).ok());
  for (Txn* t : {&before, &after}) {
    QueryResult ref;
    ASSERT_TRUE(Ch::reference(t, &ref, all).ok());
    const bool has_delivered = std::ranges::any_of(ref.q3, [&](const Q3Row& q) { return q.o_id == oldest; });
    EXPECT_EQ(has_delivered, t == &before);
    for (Q3Plan plan : {Q3Plan::kRead, Q3Plan::kSnapshotKeys, Q3Plan::kSnapshotTables}) {
      QueryResult q;
      ASSERT_TRUE(f.ch->q3(t, ctx.get(), &q, all, plan).ok()) << q3_plan_name(plan);
      EXPECT_EQ(q.q3, ref.q3) << q3_plan_name(plan) << (t == &before ? ", begun before the Delivery" : ", after");
    }
    t->abort();
  }
}

TEST(Ch, KeysPreserveOrder) {
  EXPECT_LT(order_key(1, 2, 255), order_key(1, 2, 256));
  EXPECT_LT(order_key(1, 10, 99999), order_key(2, 1, 1));
  EXPECT_LT(order_line_key(1, 1, 7, 15), order_line_key(1, 1, 8, 1));
  std::string lo, hi;
  table_range(kOrderLine, &lo, &hi);
  EXPECT_LE(lo, order_line_key(65535, 10, 0xffffffffu, 255));
  EXPECT_LT(order_line_key(65535, 10, 0xffffffffu, 255), hi);
  EXPECT_LE(hi, item_key(0));  // tables never interleave
  EXPECT_LT(item_key(1000000), stock_key(0, 0));
  EXPECT_LT(stock_key(65535, 1000000), customer_name_key(0, 0, "", "", 0));
  // CUSTOMER-NAME orders a district's customers of one last name by first name.
  EXPECT_LT(customer_name_key(1, 2, "BARBARBAR", "ZED", 1), customer_name_key(1, 2, "BARBARBARA", "", 0));
  EXPECT_LT(customer_name_key(1, 2, "ESE", "ANN", 9), customer_name_key(1, 2, "ESE", "BOB", 1));
  EXPECT_EQ(last_name(371), "PRICALLYOUGHT");  // TPC-C 4.3.2.3's example
  EXPECT_EQ(last_name(0), "BARBARBAR");
  EXPECT_EQ(last_name(999), "EINGEINGEING");
}

// TPC-C's by-name selection (2.5.2.2): a Payment by last name pays the customer at position
// ceil(n / 2) of the district's n customers with that name ordered by first name, and no other;
// about 60% of the generated Payments and Order-Statuses are by name. At TPC-C's 3,000 customers
// per district the names of customers past the first 1,000 repeat, so some name has several.
TEST(Ch, ByNameSelectsTheMiddleCustomerByFirstName) {
  Scale sc = tiny();
  sc.customers = 3000;
  Fixture f(sc);
  const RowCodec& cc = codec(kCustomer);
  Txn t;
  ASSERT_TRUE(f.space->begin(&t).ok());
  std::vector<std::pair<std::string, std::string>> kv;
  std::string lo, hi;
  prefix_range(customer_key(1, 3, 0).substr(0, 4), &lo, &hi);
  ASSERT_TRUE(t.scan(TxnRange{lo, hi, true, false, false, false}, 0, &kv).ok());
  t.abort();
  ASSERT_EQ(kv.size(), 3000u);
  std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> by_last;  // last -> (first, c)
  for (auto& [k, v] : kv) {
    auto field = [&](std::size_t fi, std::size_t width) {
      std::string s = v.substr(cc.offset(fi), width);
      return s.substr(0, s.find('\0'));
    };
    by_last[field(cf::last, 16)].emplace_back(field(cf::first, 16), get(v, cc, cf::id));
  }
  std::uint32_t name = 0;
  std::size_t most = 0;
  for (std::uint32_t n = 0; n < 1000; ++n) {
    const std::size_t k = by_last[last_name(n)].size();
    ASSERT_GE(k, 1u) << "no customer named " << last_name(n);
    if (k > most) most = k, name = n;
  }
  ASSERT_GE(most, 3u);
  auto people = by_last[last_name(name)];
  std::sort(people.begin(), people.end());
  const std::int64_t want = people[(people.size() + 1) / 2 - 1].second;  // position ceil(n / 2)
  auto payments = [&](std::int64_t c) {
    Txn r;
    EXPECT_TRUE(f.space->begin(&r).ok());
    std::string v;
    bool found = false;
    EXPECT_TRUE(r.get(customer_key(1, 3, static_cast<std::uint32_t>(c)), &v, &found).ok());
    r.abort();
    return found ? get(v, cc, cf::payment_cnt) : -1;
  };
  std::vector<std::int64_t> before;
  for (auto& p : people) before.push_back(payments(p.second));
  Op op;
  op.kind = Kind::kPayment;
  op.w = op.c_w = 1;
  op.d = op.c_d = 3;
  op.c = 1;  // not used by name
  op.by_name = true;
  op.c_last = static_cast<std::uint16_t>(name);
  op.amount = 1234;
  op.h_id = std::uint64_t{1} << 50;
  op.date = kWorkDate;
  std::uint64_t rng = 1;
  OpResult r;
  ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
  ASSERT_TRUE(r.committed);
  for (std::size_t i = 0; i < people.size(); ++i)
    EXPECT_EQ(payments(people[i].second), before[i] + (people[i].second == want ? 1 : 0))
        << "customer " << people[i].second << " (" << people[i].first << ")";
  op.kind = Kind::kOrderStatus;
  ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
  EXPECT_TRUE(r.committed);
  // About 60% of Payments and Order-Statuses are by name.
  std::size_t asked = 0, named = 0;
  for (const Op& o : make_work(sc, Mix::tpcc(), 4000, 2)) {
    if (o.kind != Kind::kPayment && o.kind != Kind::kOrderStatus) continue;
    ++asked;
    named += o.by_name;
  }
  EXPECT_GT(named * 100, asked * 55);
  EXPECT_LT(named * 100, asked * 65);
}

// The workload: worker threads over pre-generated TPC-C-mix operations and a query thread that,
// while they run, checks freshness and compares the queries with the reference at its snapshot;
// with the order-line mirror attached, Q1 and Q6 read the mirror (at the same start).
void concurrent_mix(bool mirror) {
  const Scale sc = scaled_small();
  Fixture f(sc);
  if (mirror) {
    const Status m = f.ch->attach_mirror(2);
    ASSERT_TRUE(m.ok()) << m.to_string();
  }
  std::size_t checked = 0;
  {  // The loaded database first.
    Txn t;
    ASSERT_TRUE(f.space->begin(&t).ok());
    const Status s = f.ch->check_consistency(&t);
    EXPECT_TRUE(s.ok()) << s.to_string();
    f.queries_equal_reference({}, &checked);
  }
  constexpr unsigned kWorkers = 3;
  const std::size_t ops = scaled(600);
  AckBoard board(kWorkers);
  std::atomic<unsigned> done{0};
  std::atomic<std::uint64_t> committed{0}, rolled_back{0}, attempts{0};
  std::vector<std::thread> th;
  std::vector<std::string> errors(kWorkers);
  for (unsigned w = 0; w < kWorkers; ++w) {
    th.emplace_back([&, w] {
      const std::vector<Op> work = make_work(sc, Mix::tpcc(), ops, w);
      std::uint64_t rng = w + 1;
      for (const Op& op : work) {
        OpResult r;
        const Status s = f.ch->run(op, &r, &rng);
        if (!s.ok()) {
          errors[w] = s.to_string();
          break;
        }
        committed += r.committed;
        rolled_back += r.rolled_back;
        attempts += r.attempts;
        if (op.kind == Kind::kNewOrder) board.publish(w, Ack{r.commit_ts, op.w, op.d, r.o_id});
      }
      ++done;
    });
  }
  // Query rounds run until the workers finish (at least two): each one checks freshness against
  // the acknowledgements published so far and compares the queries with the reference.
  while (done.load() < kWorkers || checked < 3) {
    f.queries_equal_reference(board.read(), &checked);
    if (::testing::Test::HasFailure()) break;
  }
  for (auto& t : th) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(committed.load() + rolled_back.load(), kWorkers * ops);
  EXPECT_GE(attempts.load(), committed.load());
  EXPECT_GE(checked, 3u);
  std::printf("%zu operations committed after %llu runs; %zu query rounds checked\n", kWorkers * ops,
              static_cast<unsigned long long>(attempts.load()), checked);
  Txn t;
  ASSERT_TRUE(f.space->begin(&t).ok());
  const Status s = f.ch->check_consistency(&t);
  EXPECT_TRUE(s.ok()) << s.to_string();
  t.abort();
  f.queries_equal_reference(board.read(), &checked);
  if (mirror) {
    EXPECT_GT(f.ch->mirror()->stats().rows, f.ch->mirror()->stats().keys);  // deliveries added versions
  }
}

TEST(Ch, ConcurrentMixKeepsConsistencyQueriesExactAndFresh) { concurrent_mix(false); }
TEST(Ch, ConcurrentMixWithTheMirrorKeepsQueriesExactAndFresh) { concurrent_mix(true); }

// The txn keyspace as a ch_procs adapter that records every read and write of the attempt as an
// SI checker event.
struct RecordingAdapter {
  Txn* t;
  std::vector<checkers::SiEvent>* ev;
  bool get(std::string_view k, std::string* v, bool* found, bool) {
    if (!t->get(k, v, found).ok()) return false;
    record_get(k, *v, *found);
    return true;
  }
  bool get_many(const std::string_view* k, std::size_t n, std::string* v, bool* found, bool) {
    if (!t->get_many(k, n, v, found).ok()) return false;
    for (std::size_t i = 0; i < n; ++i) record_get(k[i], v[i], found[i]);
    return true;
  }
  void record_get(std::string_view k, const std::string& v, bool found) {
    checkers::SiEvent e;
    e.key = std::string(k);
    e.found = found;
    if (found) e.value = v;
    ev->push_back(std::move(e));
  }
  bool put(std::string_view k, std::string_view v) {
    if (!t->put(k, v).ok()) return false;
    ev->push_back(checkers::SiEvent{checkers::SiEvent::Kind::kPut, std::string(k), {}, 0, false, std::string(v), {}});
    return true;
  }
  bool del(std::string_view k) {
    if (!t->del(k).ok()) return false;
    ev->push_back(checkers::SiEvent{checkers::SiEvent::Kind::kDel, std::string(k), {}, 0, false, {}, {}});
    return true;
  }
  bool range(std::string_view lo, std::string_view hi, std::size_t limit,
             std::vector<std::pair<std::string, std::string>>* out) {
    const std::size_t before = out->size();
    if (!t->scan(TxnRange{std::string(lo), std::string(hi), true, false, false, false}, limit, out).ok()) return false;
    checkers::SiEvent e{checkers::SiEvent::Kind::kRange, std::string(lo), std::string(hi), limit, false, {}, {}};
    e.pairs.assign(out->begin() + static_cast<std::ptrdiff_t>(before), out->end());
    ev->push_back(std::move(e));
    return true;
  }
};

// The SI checker over CH histories: worker threads run the TPC-C mix (re-running on conflict, as
// Ch::run does) through a recording adapter; every attempt's reads, committed or not, must match
// the state at its start and no two overlapping committed attempts may write one key. Negative
// controls on the recorded history itself: one committed read made stale, and one committed
// writer of a contended district moved to begin before its predecessor committed, are caught.
TEST(Ch, HistoriesAreSnapshotIsolated) {
  const Scale sc = scaled_small();
  Fixture f(sc);
  std::map<std::string, std::string> initial;
  {
    Txn t;
    ASSERT_TRUE(f.space->begin(&t).ok());
    std::vector<std::pair<std::string, std::string>> all;
    ASSERT_TRUE(t.scan(TxnRange::all(), 0, &all).ok());
    initial.insert(all.begin(), all.end());
    t.abort();
  }
  constexpr unsigned kWorkers = 3;
  const std::size_t ops = scaled(300);
  DeliveryHints hints(sc.warehouses);
  std::vector<std::vector<checkers::SiAttempt>> per(kWorkers);
  std::vector<std::string> errors(kWorkers);
  std::vector<std::thread> th;
  for (unsigned w = 0; w < kWorkers; ++w) {
    th.emplace_back([&, w] {
      std::uint64_t rng = w + 1;
      for (const Op& op : make_work(sc, Mix::tpcc(), ops, 10 + w)) {
        for (unsigned attempt = 1;; ++attempt) {
          Txn t;
          if (!f.space->begin(&t).ok()) return void(errors[w] = "begin");
          checkers::SiAttempt& a = per[w].emplace_back();
          a.start = t.start_ts();
          RecordingAdapter ad{&t, &a.events};
          OpResult r;
          const Body b = procs::run(ad, op, &r, &hints);
          if (b == Body::kMissing) return void(errors[w] = "missing row");
          if (b == Body::kDone) {
            CommitResult cr;
            if (!t.commit(&cr).ok()) return void(errors[w] = "commit");
            if (cr.outcome == TxnOutcome::kCommitted) {
              a.committed = true;
              a.commit = cr.commit_ts;
              break;
            }
          } else {
            t.abort();
            if (b == Body::kRollback) break;
          }
          if (attempt > 10000) return void(errors[w] = "no progress");
          backoff(attempt, &rng);
        }
      }
    });
  }
  for (auto& t : th) t.join();
  for (const std::string& e : errors) ASSERT_EQ(e, "");
  std::vector<checkers::SiAttempt> history;
  for (auto& p : per) history.insert(history.end(), p.begin(), p.end());
  std::size_t committed = 0, aborted = 0;
  for (const auto& a : history) (a.committed ? committed : aborted) += 1;
  const checkers::SiResult r = checkers::check_snapshot_isolation(initial, history);
  EXPECT_TRUE(r.ok) << r.errors.size() << " violations, the first: " << (r.errors.empty() ? "" : r.errors[0]);
  std::printf("%zu attempts checked: %zu committed, %zu conflicted or rolled back\n", history.size(), committed, aborted);

  // The district row most committed attempts wrote, and its writers by commit timestamp.
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::size_t>>> by_district;
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (!history[i].committed) continue;
    for (const auto& e : history[i].events)
      if (e.kind == checkers::SiEvent::Kind::kPut && e.key[0] == static_cast<char>(kDistrict)) {
        by_district[e.key].emplace_back(history[i].commit, i);
        break;
      }
  }
  auto most = std::max_element(by_district.begin(), by_district.end(),
                               [](const auto& x, const auto& y) { return x.second.size() < y.second.size(); });
  ASSERT_NE(most, by_district.end());
  const std::string district = most->first;
  auto writers = most->second;
  std::sort(writers.begin(), writers.end());
  ASSERT_GE(writers.size(), 2u);
  // Stale: the second writer's read of the district row now claims the loaded row, which the
  // first writer's commit had replaced before it began.
  auto stale = history;
  bool planted = false;
  for (auto& e : stale[writers[1].second].events)
    if (e.kind == checkers::SiEvent::Kind::kGet && e.key == district && !planted) {
      ASSERT_NE(e.value, initial.at(district));
      e.value = initial.at(district);
      planted = true;
    }
  ASSERT_TRUE(planted);
  EXPECT_FALSE(checkers::check_snapshot_isolation(initial, stale).ok);
  // Lost update: that writer begins before the first one commits.
  auto lost = history;
  lost[writers[1].second].start = writers[0].first - 1;
  const checkers::SiResult l = checkers::check_snapshot_isolation(initial, lost);
  ASSERT_FALSE(l.ok);
  bool fcw = false;
  for (const auto& e : l.errors) fcw |= e.find("first committer wins") != std::string::npos;
  EXPECT_TRUE(fcw) << l.errors[0];
}

// Q3's three plans (whole-table SNAPSHOTs with hash joins, index joins through READs, and the same
// index joins as batched SNAPSHOTs of keys) give the reference's rows at every selectivity, also
// when the query's own transaction has deleted a new order and changed an order line's amount and
// a customer's state (its own writes overlay the snapshot). The READ plan's reads fall with the
// selectivity: at 0 it reads no order line.
TEST(Ch, Q3PlansAgreeAtEverySelectivity) {
  const Scale sc = tiny();
  Fixture f(sc);
  {  // Some NewOrders and a Delivery, so that the new orders are not just the loaded ones.
    std::uint64_t rng = 1;
    for (const Op& op : make_work(sc, Mix::seed(), 40, 3)) {
      OpResult r;
      ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
    }
  }
  std::unique_ptr<Context> ctx;
  ASSERT_TRUE(f.engine->context(Device::kCpu, &ctx).ok());
  for (int own_writes = 0; own_writes < 2; ++own_writes) {
    Txn t;
    ASSERT_TRUE(f.space->begin(&t).ok());
    if (own_writes) {
      std::vector<std::pair<std::string, std::string>> news;
      std::string lo, hi;
      table_range(kNewOrder, &lo, &hi);
      ASSERT_TRUE(t.scan(TxnRange{lo, hi, true, false, false, false}, 3, &news).ok());
      ASSERT_EQ(news.size(), 3u);
      ASSERT_TRUE(t.del(news[0].first).ok());  // one new order gone
      const RowCodec &nc = codec(kNewOrder), &lc = codec(kOrderLine), &oc = codec(kOrder), &cc = codec(kCustomer);
      const std::string& v = news[1].second;
      const auto w = static_cast<std::uint32_t>(get(v, nc, nof::w_id)), d = static_cast<std::uint32_t>(get(v, nc, nof::d_id)),
                 o = static_cast<std::uint32_t>(get(v, nc, nof::o_id));
      std::string row;
      bool found = false;
      ASSERT_TRUE(t.get(order_line_key(w, d, o, 1), &row, &found).ok());
      ASSERT_TRUE(found);
      set(row, lc, olf::amount, 123456789);  // one line's amount changed
      ASSERT_TRUE(t.put(order_line_key(w, d, o, 1), row).ok());
      const std::string& v2 = news[2].second;
      ASSERT_TRUE(t.get(order_key(w, d, static_cast<std::uint32_t>(get(v2, nc, nof::o_id))), &row, &found).ok());
      ASSERT_TRUE(found);
      const auto c = static_cast<std::uint32_t>(get(row, oc, of::c_id));
      ASSERT_TRUE(t.get(customer_key(w, d, c), &row, &found).ok());
      ASSERT_TRUE(found);
      set_bytes(row, cc, cf::state, "AA");  // one customer moved into every non-empty selection
      ASSERT_TRUE(t.put(customer_key(w, d, c), row).ok());
    }
    std::size_t last_rows = 0;
    for (double s : {0.0, 0.017, 0.2, 0.5, 1.0}) {
      StateFilter filter;
      ASSERT_TRUE(StateFilter::of_selectivity(s, &filter).ok());
      QueryResult ref;
      ASSERT_TRUE(Ch::reference(&t, &ref, filter).ok());
      if (s == 0) {
        EXPECT_TRUE(ref.q3.empty());
      }
      if (s == 1.0) {
        EXPECT_GT(ref.q3.size(), 10u);
      }
      EXPECT_GE(ref.q3.size(), last_rows) << "a wider selection lost rows at " << s;
      last_rows = ref.q3.size();
      std::size_t read_rows = 0, table_rows = 0;
      for (Q3Plan plan : {Q3Plan::kSnapshotTables, Q3Plan::kRead, Q3Plan::kSnapshotKeys}) {
        QueryResult q;
        const Status st = f.ch->q3(&t, ctx.get(), &q, filter, plan);
        ASSERT_TRUE(st.ok()) << q3_plan_name(plan) << ": " << st.to_string();
        EXPECT_EQ(q.q3, ref.q3) << q3_plan_name(plan) << " at selectivity " << s << (own_writes ? " with own writes" : "");
        if (plan == Q3Plan::kRead) read_rows = q.rows_read;
        if (plan == Q3Plan::kSnapshotTables) table_rows = q.rows_read;
      }
      if (s == 0) {  // new orders, their orders and their customers; not one order line
        const std::size_t news = sc.warehouses * kDistricts * sc.new_orders;
        EXPECT_LE(read_rows, 3 * (news + 40)) << "the READ plan read order lines of unselected orders";
      }
      EXPECT_LT(read_rows, table_rows);
    }
    t.abort();
  }
  StateFilter filter;
  EXPECT_EQ(StateFilter::of_selectivity(-0.1, &filter).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StateFilter::of_selectivity(1.5, &filter).code(), StatusCode::kInvalidArgument);
  QueryResult q;
  Txn t;
  ASSERT_TRUE(f.space->begin(&t).ok());
  EXPECT_EQ(f.ch->q3(&t, nullptr, &q).code(), StatusCode::kInvalidArgument);  // snapshot-tables needs a context
}

// TPC-C's 1% rollback: a NewOrder whose last line names the unused item rolls back with nothing
// applied (no order id taken, no order, new-order or line row, no stock moved); the same order
// with a valid item commits the next id. The work generator plants about 1% of them.
TEST(Ch, NewOrderWithAnUnusedItemRollsBack) {
  const Scale sc = tiny();
  Fixture f(sc);
  std::vector<Op> work = make_work(sc, Mix::seed(), 3000, 4);
  std::size_t planted = 0, new_orders = 0;
  for (const Op& op : work) {
    if (op.kind != Kind::kNewOrder) continue;
    ++new_orders;
    planted += op.lines[op.ol_cnt - 1].item == kUnusedItem;
    for (unsigned l = 0; l + 1 < op.ol_cnt; ++l) EXPECT_NE(op.lines[l].item, kUnusedItem);
  }
  EXPECT_GT(planted, new_orders / 200);  // about 1%
  EXPECT_LT(planted, new_orders / 50);
  Op op = *std::find_if(work.begin(), work.end(), [](const Op& o) { return o.kind == Kind::kNewOrder; });
  const std::string district = f.read(district_key(op.w, op.d));
  const std::string stock = f.read(stock_key(op.lines[0].supply_w, op.lines[0].item));
  const std::int64_t next = get(district, codec(kDistrict), df::next_o_id);
  Op bad = op;
  bad.lines[bad.ol_cnt - 1].item = kUnusedItem;
  std::uint64_t rng = 1;
  OpResult r;
  ASSERT_TRUE(f.ch->run(bad, &r, &rng).ok());
  EXPECT_TRUE(r.rolled_back);
  EXPECT_FALSE(r.committed);
  EXPECT_EQ(f.read(district_key(op.w, op.d)), district);
  EXPECT_EQ(f.read(stock_key(op.lines[0].supply_w, op.lines[0].item)), stock);
  EXPECT_EQ(f.read(order_key(op.w, op.d, static_cast<std::uint32_t>(next))), "");
  EXPECT_EQ(f.read(new_order_key(op.w, op.d, static_cast<std::uint32_t>(next))), "");
  EXPECT_EQ(f.read(order_line_key(op.w, op.d, static_cast<std::uint32_t>(next), 1)), "");
  ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
  EXPECT_TRUE(r.committed);
  EXPECT_FALSE(r.rolled_back);
  EXPECT_EQ(r.o_id, next);
  Txn t;
  ASSERT_TRUE(f.space->begin(&t).ok());
  const Status s = f.ch->check_consistency(&t);
  EXPECT_TRUE(s.ok()) << s.to_string();
  // Any other missing item is a corrupt database, not a rollback.
  Op corrupt = op;
  corrupt.lines[0].item = sc.items + 7;
  EXPECT_EQ(f.ch->run(corrupt, &r, &rng).code(), StatusCode::kInternal);
}

// NewOrder reads all its lines' stocks before it updates any (one batched read): a stock named
// by two lines must still take both lines' quantities, as two reads in turn would.
TEST(Ch, NewOrderWithARepeatedItemUpdatesItsStockForEachLine) {
  const Scale sc = tiny();
  Fixture f(sc);
  const std::vector<Op> work = make_work(sc, Mix::seed(), 200, 4);
  Op op = *std::ranges::find_if(work, [](const Op& o) { return o.kind == Kind::kNewOrder; });
  op.ol_cnt = 3;
  op.lines[0] = Op::Line{5, op.w, 3};
  op.lines[1] = Op::Line{9, op.w, 2};
  op.lines[2] = Op::Line{5, op.w, 4};  // item 5 again
  auto stock = [&] {
    Txn t;
    EXPECT_TRUE(f.space->begin(&t).ok());
    std::string v;
    bool found = false;
    EXPECT_TRUE(t.get(stock_key(op.w, 5), &v, &found).ok());
    EXPECT_TRUE(found);
    return v;
  };
  const std::string before = stock();
  std::uint64_t rng = 1;
  OpResult r;
  ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
  ASSERT_TRUE(r.committed);
  const std::string after = stock();
  const RowCodec& sc5 = codec(kStock);
  EXPECT_EQ(get(after, sc5, sf::ytd), get(before, sc5, sf::ytd) + 7);
  EXPECT_EQ(get(after, sc5, sf::order_cnt), get(before, sc5, sf::order_cnt) + 2);
  std::int64_t q = get(before, sc5, sf::quantity);
  for (std::int64_t take : {3, 4}) q = q >= take + 10 ? q - take : q - take + 91;
  EXPECT_EQ(get(after, sc5, sf::quantity), q);
}

// Delivery takes each district's oldest new order: its NEW-ORDER row goes, the order gets the
// carrier, every one of its O_OL_CNT lines the delivery date, and the customer the lines' amounts
// and one more delivery; the next order is untouched.
TEST(Ch, DeliveryDatesEveryLineOfTheOldestOrdersAndCreditsTheirSum) {
  const Scale sc = tiny();
  Fixture f(sc);
  const Op op = first_op(sc, Kind::kDelivery);
  const std::uint32_t oldest = oldest_new_order(sc);
  const RowCodec &oc = codec(kOrder), &lc = codec(kOrderLine), &cc = codec(kCustomer);
  std::array<std::string, kDistricts> customers;
  std::array<std::int64_t, kDistricts> sums{};
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    const std::string order = f.read(order_key(op.w, d, oldest));
    ASSERT_FALSE(order.empty());
    ASSERT_FALSE(f.read(new_order_key(op.w, d, oldest)).empty());
    for (std::int64_t l = 1; l <= get(order, oc, of::ol_cnt); ++l) {
      const std::string line = f.read(order_line_key(op.w, d, oldest, static_cast<std::uint32_t>(l)));
      ASSERT_FALSE(line.empty());
      EXPECT_EQ(get(line, lc, olf::delivery_d), 0);
      sums[d - 1] += get(line, lc, olf::amount);
    }
    customers[d - 1] = f.read(customer_key(op.w, d, static_cast<std::uint32_t>(get(order, oc, of::c_id))));
  }
  std::uint64_t rng = 1;
  OpResult r;
  ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
  ASSERT_TRUE(r.committed);
  EXPECT_EQ(r.value, kDistricts);
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    EXPECT_EQ(r.delivered[d - 1], oldest) << "district " << d;
    EXPECT_EQ(f.read(new_order_key(op.w, d, oldest)), "");
    const std::string order = f.read(order_key(op.w, d, oldest));
    EXPECT_EQ(get(order, oc, of::carrier_id), op.carrier);
    const std::int64_t lines = get(order, oc, of::ol_cnt);
    for (std::int64_t l = 1; l <= lines; ++l)
      EXPECT_EQ(get(f.read(order_line_key(op.w, d, oldest, static_cast<std::uint32_t>(l))), lc, olf::delivery_d),
                op.date)
          << "district " << d << " line " << l << " of " << lines;
    EXPECT_EQ(f.read(order_line_key(op.w, d, oldest, static_cast<std::uint32_t>(lines + 1))), "");
    const std::string next_line = f.read(order_line_key(op.w, d, oldest + 1, 1));
    EXPECT_EQ(get(next_line, lc, olf::delivery_d), 0);
    const std::string c = f.read(customer_key(op.w, d, static_cast<std::uint32_t>(get(order, oc, of::c_id))));
    EXPECT_EQ(get(c, cc, cf::balance), get(customers[d - 1], cc, cf::balance) + sums[d - 1]);
    EXPECT_EQ(get(c, cc, cf::delivery_cnt), get(customers[d - 1], cc, cf::delivery_cnt) + 1);
  }
  Txn t;
  ASSERT_TRUE(f.space->begin(&t).ok());
  const Status s = f.ch->check_consistency(&t);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

// Negative control for the freshness check: a query whose transaction began before a NewOrder
// committed (it reads an older snapshot) must be caught; one begun after it must pass.
TEST(Ch, FreshnessCheckCatchesAStaleQuery) {
  const Scale sc = tiny();
  Fixture f(sc);
  ASSERT_TRUE(f.ch->attach_mirror().ok());
  Txn stale;
  ASSERT_TRUE(f.space->begin(&stale).ok());
  const std::vector<Op> work = make_work(sc, Mix::seed(), 50, 9);
  AckBoard board(1);
  std::uint64_t rng = 1;
  for (const Op& op : work) {
    if (op.kind != Kind::kNewOrder) continue;
    OpResult r;
    ASSERT_TRUE(f.ch->run(op, &r, &rng).ok());
    board.publish(0, Ack{r.commit_ts, op.w, op.d, r.o_id});
    break;
  }
  const std::vector<Ack> acks = board.read();
  ASSERT_EQ(acks.size(), 1u);
  const Status s = Ch::check_fresh(&stale, acks);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.to_string();
  // The order alone (with a start timestamp forged past the commit) is also caught: the check
  // looks at the snapshot's contents, not only at timestamps.
  Ack forged = acks[0];
  forged.commit_ts = 0;
  EXPECT_EQ(Ch::check_fresh(&stale, {forged}).code(), StatusCode::kInternal);
  // The mirror, read at the stale start, misses the order's lines too.
  EXPECT_EQ(f.ch->check_mirror_fresh(stale.start_ts(), acks).code(), StatusCode::kInternal);
  stale.abort();
  Txn fresh;
  ASSERT_TRUE(f.space->begin(&fresh).ok());
  EXPECT_TRUE(Ch::check_fresh(&fresh, acks).ok());
  EXPECT_TRUE(f.ch->check_mirror_fresh(fresh.start_ts(), acks).ok());
}

// Negative control for the consistency check: a district whose D_NEXT_O_ID skips an order, and a
// warehouse whose W_YTD drifts from its districts', are both reported.
TEST(Ch, ConsistencyCheckCatchesPlantedViolations) {
  Fixture f(tiny());
  const RowCodec &dc = codec(kDistrict), &wc = codec(kWarehouse);
  for (int which = 0; which < 2; ++which) {
    Txn t;
    ASSERT_TRUE(f.space->begin(&t).ok());
    std::string row;
    bool found = false;
    const std::string k = which == 0 ? district_key(1, 3) : warehouse_key(1);
    ASSERT_TRUE(t.get(k, &row, &found).ok());
    ASSERT_TRUE(found);
    if (which == 0) set(row, dc, df::next_o_id, get(row, dc, df::next_o_id) + 1);
    if (which == 1) set(row, wc, wf::ytd, get(row, wc, wf::ytd) + 1);
    ASSERT_TRUE(t.put(k, row).ok());
    CommitResult cr;
    ASSERT_TRUE(t.commit(&cr).ok());
    ASSERT_TRUE(f.space->begin(&t).ok());
    const Status s = f.ch->check_consistency(&t);
    EXPECT_EQ(s.code(), StatusCode::kInternal) << "planted violation " << which << " not caught";
    // Undo it.
    ASSERT_TRUE(t.get(k, &row, &found).ok());
    if (which == 0) set(row, dc, df::next_o_id, get(row, dc, df::next_o_id) - 1);
    if (which == 1) set(row, wc, wf::ytd, get(row, wc, wf::ytd) - 1);
    ASSERT_TRUE(t.put(k, row).ok());
    ASSERT_TRUE(t.commit(&cr).ok());
  }
  Txn t;
  ASSERT_TRUE(f.space->begin(&t).ok());
  EXPECT_TRUE(f.ch->check_consistency(&t).ok());
}

}  // namespace
}  // namespace duet::compute::ch

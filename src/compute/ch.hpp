// CH-benCHmark on a `txn` keyspace (dissertation 926-1005; docs/compute.md, "CH-benCHmark"):
// TPC-C's tables as fixed-width rows (RowCodec) in one keyspace, TPC-C's transactions as
// snapshot-isolation transactions that re-run on conflict, and CH-benCHmark's analytical queries
// Q1, Q3 and Q6 on one SNAPSHOT taken at each query's start through the compute operators.
//
//   Keys     order-preserving composites: one table tag byte, then the ids big-endian
//            (warehouse u16, district u8, customer/order/item u32, order line u8, history u64),
//            so each table, warehouse and district is one contiguous key range.
//   Rows     one RowCodec per table (warehouse_codec() ...); money is int64 cents, tax and
//            discount int64 basis points, dates int64 seconds since 1970 (0: null), so query
//            results are exact.
//   Scale    Scale::full() is TPC-C's cardinalities (100,000 items, 3,000 customers and 3,000
//            orders per district, the last 900 undelivered); Scale::small() scales items,
//            customers and orders down for tests. Everything is seeded.
//   Work     pre-generated operations (make_work), so every system runs the same ones.
//
// Simplifications (stated in docs/compute.md): Order-Status looks for the customer's newest order
// among the district's last 20 orders, Delivery runs all ten districts in one transaction and
// starts its search at a hint (DeliveryHints). As TPC-C: 1% of NewOrders name an unused item on
// their last line and roll back (2.4.1.4); 60% of Payments and Order-Statuses choose their
// customer by last name (2.5.1.2, 2.6.1.2) through the CUSTOMER-NAME index table.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compute/column_mirror.hpp"
#include "compute/compute.hpp"
#include "duet/status.hpp"
#include "duet/txn.hpp"

namespace duet::compute::ch {

/// Table tags: the first byte of every key.
enum Tag : std::uint8_t {
  kWarehouse = 1, kDistrict, kCustomer, kHistory, kNewOrder, kOrder, kOrderLine, kItem, kStock,
  kCustomerName  ///< index: (w, d, c_last, c_first, c_id) -> c_id, for by-name customer selection
};
inline constexpr std::uint32_t kDistricts = 10;  ///< per warehouse (TPC-C)
inline constexpr std::uint32_t kMaxLines = 15;   ///< order lines per order, 5 .. 15
/// The item id no load creates (items are 1 .. Scale::items): a NewOrder whose line names it
/// finds no item and rolls back, as TPC-C's 1% of NewOrders with an unused item number do.
inline constexpr std::uint32_t kUnusedItem = 0;

/// Dates (seconds since 1970, UTC).
inline constexpr std::int64_t kDate2007 = 1167696000;  ///< 2007-01-02: Q1's and Q3's bound
inline constexpr std::int64_t kDate1999 = 915148800;   ///< 1999-01-01: Q6's lower bound
inline constexpr std::int64_t kDate2020 = 1577836800;  ///< 2020-01-01: Q6's upper bound (exclusive)
inline constexpr std::int64_t kLoadDate = 1420070400;  ///< 2015-01-01: entry date of loaded orders
inline constexpr std::int64_t kWorkDate = 1451606400;  ///< 2016-01-01: dates of generated work start here

/// Cardinalities and the seed. InvalidArgument (naming the field) from check().
struct Scale {
  std::uint32_t warehouses = 1;             ///< 1 .. 65535
  std::uint32_t items = 100000;             ///< 10 .. 10^6
  std::uint32_t customers = 3000;           ///< per district, 10 .. 10^6
  std::uint32_t orders = 3000;              ///< loaded per district, 10 .. customers
  std::uint32_t new_orders = 900;           ///< the last this many loaded orders are undelivered (<= orders)
  std::uint64_t seed = 1;
  Status check() const;
  /// TPC-C's cardinalities at `w` warehouses.
  static Scale full(std::uint32_t w) { Scale s; s.warehouses = w; return s; }
  /// Scaled down for tests: 1,000 items, 300 customers and orders per district, 90 undelivered.
  static Scale small(std::uint32_t w) {
    Scale s;
    s.warehouses = w;
    s.items = 1000;
    s.customers = s.orders = 300;
    s.new_orders = 90;
    return s;
  }
};

// ---------------------------------------------------------------------------------------------
// Keys and rows

std::string warehouse_key(std::uint32_t w);
std::string district_key(std::uint32_t w, std::uint32_t d);
std::string customer_key(std::uint32_t w, std::uint32_t d, std::uint32_t c);
std::string history_key(std::uint32_t w, std::uint32_t d, std::uint64_t h);
std::string new_order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o);
std::string order_key(std::uint32_t w, std::uint32_t d, std::uint32_t o);
std::string order_line_key(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t l);
std::string item_key(std::uint32_t i);
std::string stock_key(std::uint32_t w, std::uint32_t i);
/// TPC-C's last name of number n (0 .. 999): three syllables of BAR OUGHT ABLE PRI PRES ESE
/// ANTI CALLY ATION EING by n's decimal digits (371: PRICALLYOUGHT).
std::string last_name(std::uint32_t n);
/// CUSTOMER-NAME's key: tag, w, d, c_last and c_first (16 bytes each, zero padded), c_id; so the
/// customers of one last name in one district are one key range, ordered by first name.
std::string customer_name_key(std::uint32_t w, std::uint32_t d, std::string_view last, std::string_view first,
                              std::uint32_t c);
/// The prefix of customer_name_key shared by every customer of one last name in one district.
std::string customer_name_prefix(std::uint32_t w, std::uint32_t d, std::string_view last);
/// [lo, hi): every key of a table.
void table_range(Tag t, std::string* lo, std::string* hi);
/// [lo, hi): the keys of one table whose key starts with `prefix` (the tag byte included).
void prefix_range(std::string_view prefix, std::string* lo, std::string* hi);
/// [lo, hi): the NEW-ORDER keys of district (w, d) from order `from` on.
void new_orders_range(std::uint32_t w, std::uint32_t d, std::uint32_t from, std::string* lo, std::string* hi);
/// [lo, hi): the ORDER-LINE keys of order o of district (w, d).
void order_lines_range(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::string* lo, std::string* hi);

/// Field indices of each table's codec (declaration order).
namespace wf { enum : std::size_t { id, tax, ytd, name }; }
namespace df { enum : std::size_t { id, w_id, tax, ytd, next_o_id }; }
namespace cf {
enum : std::size_t { id, d_id, w_id, discount, credit, last, state, balance, ytd_payment, payment_cnt, delivery_cnt, first };
}
namespace cnf { enum : std::size_t { c_id }; }
namespace hf { enum : std::size_t { c_id, c_d_id, c_w_id, d_id, w_id, date, amount }; }
namespace nof { enum : std::size_t { o_id, d_id, w_id }; }
namespace of { enum : std::size_t { id, d_id, w_id, c_id, entry_d, carrier_id, ol_cnt, all_local }; }
namespace olf {
enum : std::size_t { o_id, d_id, w_id, number, i_id, supply_w_id, delivery_d, quantity, amount, dist_info };
}
namespace itf { enum : std::size_t { id, im_id, price, name, data }; }
namespace sf { enum : std::size_t { i_id, w_id, quantity, ytd, order_cnt, remote_cnt, dist, data }; }

/// The row codec of each table (fields named as TPC-C's columns: w_id, w_tax, ...).
const RowCodec& codec(Tag t);
/// Table `tag` at *t's snapshot, by one SNAPSHOT of its key range (or of `ranges`, when not empty:
/// they must lie in the table's) (into *buffer when given, whose
/// capacity it reuses), decoded into *out: one column per field, or only the fields named in
/// `fields` when it is not empty. Adds the rows read to *rows_read when given. Errors of
/// Txn::snapshot and RowCodec::decode pass through.
Status read_table(Txn* t, Tag tag, Table* out, std::size_t* rows_read = nullptr, TxnSnapshot* buffer = nullptr,
                  std::span<const std::string> fields = {}, std::span<const SnapshotArg> ranges = {});
/// The NEW-ORDER table as one range per district, district (w, d)'s from order
/// starts[(w - 1) * kDistricts + (d - 1)] (DeliveryHints::query_starts); the whole table as one
/// range when `starts` is empty. Appended to *out.
void new_order_ranges(std::span<const std::uint32_t> starts, std::vector<SnapshotArg>* out);

/// Field access on an encoded row (the codec's little-endian layout; the row must be the
/// codec's row_bytes() long).
inline std::int64_t get(std::string_view row, const RowCodec& c, std::size_t f) {
  std::int64_t v;
  std::memcpy(&v, row.data() + c.offset(f), sizeof v);
  return v;
}
inline void set(std::string& row, const RowCodec& c, std::size_t f, std::int64_t v) {
  std::memcpy(row.data() + c.offset(f), &v, sizeof v);
}
/// Sets a kBytes field (cut to its width, zero padded).
void set_bytes(std::string& row, const RowCodec& c, std::size_t f, std::string_view s);
/// A zero row of table `t`.
inline std::string blank(Tag t) { return std::string(codec(t).row_bytes(), '\0'); }

/// Calls sink(key, value) for every row of the initial database that belongs to part `part` of
/// `parts` (warehouses split round-robin; items go to part 0). Deterministic from the seed.
/// Stops at, and returns, the first non-ok status of `sink`.
Status generate(const Scale& s, unsigned part, unsigned parts,
                const std::function<Status(std::string_view, std::string_view)>& sink);

// ---------------------------------------------------------------------------------------------
// Work

enum class Kind : std::uint8_t { kNewOrder, kPayment, kDelivery, kOrderStatus, kStockLevel };
const char* kind_name(Kind k);
inline constexpr std::size_t kKinds = 5;

/// One pre-generated operation. NewOrder: w, d, c, lines (1% remote supply warehouses when there
/// are several), date. Payment: w, d, the customer (c_w, c_d, c; 15% remote), amount, h_id (the
/// history row's unique id), date. Delivery: w, carrier, date. Order-Status: w, d, c.
/// Stock-Level: w, d, threshold (in amount). 1% of NewOrders name kUnusedItem on their last line;
/// 60% of Payments and Order-Statuses choose their customer by last name (by_name, c_last: the
/// name's number) instead of by id c.
struct Op {
  struct Line {
    std::uint32_t item = 0;
    std::uint16_t supply_w = 0;
    std::uint8_t quantity = 0;
  };
  Kind kind = Kind::kNewOrder;
  std::uint16_t w = 1, c_w = 1;
  std::uint8_t d = 1, c_d = 1, ol_cnt = 0, carrier = 0;
  std::uint32_t c = 1;
  bool by_name = false;
  std::uint16_t c_last = 0;  ///< by_name: last_name(c_last)
  std::int64_t amount = 0;
  std::int64_t date = 0;
  std::uint64_t h_id = 0;
  std::array<Line, kMaxLines> lines{};
};

/// The transaction mix, in percent of NewOrder, Payment, Delivery, Order-Status, Stock-Level.
struct Mix {
  std::array<unsigned, kKinds> percent{};
  /// The seed's: 90% NewOrder, 10% Delivery.
  static Mix seed() { return Mix{{90, 0, 10, 0, 0}}; }
  /// TPC-C's: 45/43/4/4/4.
  static Mix tpcc() { return Mix{{45, 43, 4, 4, 4}}; }
};

/// n operations of `mix` from stream `stream` (one per worker thread) of the scale's seed.
/// History ids and dates are unique across streams < 2^16.
std::vector<Op> make_work(const Scale& s, const Mix& mix, std::size_t n, std::uint64_t stream);

/// The procedure of the CH procedure library (bench/compute/ch_proc.cpp) that runs kind k:
/// "ch.new_order", "ch.payment", "ch.delivery", "ch.order_status", "ch.stock_level".
const char* procedure_name(Kind k);
/// Text a as a decimal integer in [lo, hi] (no sign other than '-', no spaces): true and *out,
/// else false with *out unchanged.
bool parse_decimal(std::string_view a, std::int64_t lo, std::int64_t hi, std::int64_t* out);
/// op as its procedure's FCALL arguments, decimal text (docs/compute.md, "CH through the server"):
///   ch.new_order     w d c date, then item supply_w quantity for each of its 1 .. 15 lines
///   ch.payment       w d c_w c_d customer amount h_id date
///   ch.delivery      w carrier date
///   ch.order_status  w d customer
///   ch.stock_level   w d threshold
/// where customer is an id, or name:N for the customers of last name last_name(N).
std::vector<std::string> op_args(const Op& op);
/// Parses kind k's procedure arguments (as op_args writes them) into *op. InvalidArgument naming
/// the first bad argument (count, not a number, out of range: w and supply_w 1 .. 65535, d and
/// c_d 1 .. 10, carrier 1 .. 10, quantity 1 .. 255, name 0 .. 999); *op is then unspecified.
Status parse_op(Kind k, std::span<const std::string_view> args, Op* op);

// ---------------------------------------------------------------------------------------------
// Transactions

/// What one operation came to.
struct OpResult {
  bool committed = false;
  bool rolled_back = false;     ///< NewOrder named kUnusedItem: rolled back by its own logic, nothing applied
  unsigned attempts = 0;        ///< runs (1 + conflicts)
  std::uint64_t commit_ts = 0;  ///< committed: its timestamp
  std::uint32_t o_id = 0;       ///< NewOrder: the order's id
  std::int64_t value = 0;       ///< NewOrder: total amount; Stock-Level: the count; Delivery: orders delivered
  std::array<std::uint32_t, kDistricts> delivered{};  ///< Delivery: the order delivered per district (0: none)
};

/// Where Delivery starts looking for each district's oldest undelivered order. A deleted key stays
/// in the txn keyspace's index as a tombstone (docs/txn.md), so a scan from order 0 would step over
/// every order delivered so far; after a Delivery commits, advance() raises each district's hint
/// past the order it deleted. Safe: every NEW-ORDER key below the hint was deleted by a committed
/// Delivery, so a transaction begun after that commit sees none of them; one begun before it skips
/// them as if it had begun after (its writes touch other orders, and the outcome is that of the
/// two Deliveries in commit order). Thread-safe.
///
/// For queries, which write nothing and so may not skip orders their snapshot still holds, it can
/// also keep (`for_queries`) the last few Deliveries' (commit timestamp, order) per district:
/// query_start() then gives a start that is safe at a given snapshot.
class DeliveryHints {
 public:
  explicit DeliveryHints(std::uint32_t warehouses, bool for_queries = false);
  std::uint32_t start(std::uint32_t w, std::uint32_t d) const;
  /// After a commit (at r.commit_ts): each district's hint past the order r delivered there; with
  /// for_queries, that order is also kept for query_start().
  void advance(std::uint32_t w, const OpResult& r);
  /// The lowest order a NEW-ORDER key of district (w, d) can have in a snapshot that starts at
  /// `start_ts`: one past the order deleted there by the newest kept Delivery that committed at or
  /// before start_ts, else 0 (also without for_queries, and for out-of-range (w, d)). Safe: that
  /// Delivery deleted the oldest order at or above a hint below which every key was gone from
  /// every snapshot after its commit, and no key below an existing order is ever made again.
  /// Costs one stripe lock.
  std::uint32_t query_start(std::uint32_t w, std::uint32_t d, std::uint64_t start_ts) const;
  /// query_start of every district, index (w - 1) * kDistricts + (d - 1).
  std::vector<std::uint32_t> query_starts(std::uint64_t start_ts) const;
  /// Without knowing whether the transaction will commit: o was the first NEW-ORDER key at or
  /// above the hint present in some transaction's snapshot, so raise the hint to o. Safe for
  /// every later transaction: a NewOrder takes its id from D_NEXT_O_ID, above o once o exists, so
  /// no key below o can appear again. Out-of-range (w, d) are ignored.
  void observe(std::uint32_t w, std::uint32_t d, std::uint32_t o);
  /// Every hint back to 0 (a new database is being loaded).
  void reset();

 private:
  /// The last kKept Deliveries of one district that deleted an order: (commit ts, that order + 1),
  /// ts 0 for an empty slot.
  static constexpr std::size_t kKept = 4, kStripes = 64;
  /// (w, d)'s slot, n_ when out of range.
  std::size_t index(std::uint32_t w, std::uint32_t d) const;
  /// query_start of slot i (< n_).
  std::uint32_t query_start_at(std::size_t i, std::uint64_t start_ts) const;
  struct Kept {
    std::array<std::uint64_t, kKept> ts{};
    std::array<std::uint32_t, kKept> next{};
  };
  std::unique_ptr<std::atomic<std::uint32_t>[]> h_;
  std::uint32_t n_;
  std::unique_ptr<Kept[]> kept_;  ///< for_queries only; under stripes_[district index % kStripes]
  mutable std::array<std::mutex, kStripes> stripes_;
};

/// Bounded retry with backoff: yields for the first conflicts, then sleeps up to 1 ms (jittered).
void backoff(unsigned conflicts, std::uint64_t* rng);

/// A NewOrder commit acknowledged to its caller, for the freshness check.
struct Ack {
  std::uint64_t commit_ts = 0;
  std::uint32_t w = 0, d = 0, o = 0;
};

/// The newest acknowledged NewOrder of each worker thread (one slot per thread). publish() is
/// called by a worker after its commit returned; read() by a query before it begins.
class AckBoard {
 public:
  explicit AckBoard(unsigned slots);
  void publish(unsigned slot, const Ack& a);
  std::vector<Ack> read() const;

 private:
  struct alignas(64) Slot {
    mutable std::mutex mu;
    Ack a;
  };
  std::unique_ptr<Slot[]> slots_;
  unsigned n_;
};

/// Results of the three queries. Money in cents; averages are sum / count (exact as fractions).
struct Q1Row {
  std::int64_t number = 0, sum_qty = 0, sum_amount = 0, count = 0;
  bool operator==(const Q1Row&) const = default;
};
struct Q3Row {
  std::int64_t o_id = 0, w_id = 0, d_id = 0, revenue = 0, entry_d = 0;
  bool operator==(const Q3Row&) const = default;
};
struct QueryResult {
  std::vector<Q1Row> q1;  ///< ordered by ol_number
  std::int64_t q6 = 0;    ///< revenue
  std::vector<Q3Row> q3;  ///< ordered by revenue desc, entry_d asc, then (w, d, o) ascending
  std::size_t rows_read = 0;
};

/// Sorts Q3's rows into its result order: revenue descending, entry date ascending, then
/// (w, d, o) ascending.
void sort_q3(std::vector<Q3Row>* rows);

/// Q3's customer predicate: c_state in [lo, hi] (two bytes each, inclusive). The default is CH's
/// c_state LIKE 'A%'. The loader draws each customer's state uniformly from the 676 strings 'AA' ..
/// 'ZZ', so of_selectivity(s) (the first round(s * 676) of them) selects a fraction s of the
/// customers: the knob of the READ-vs-SNAPSHOT sweep (Fig. 3.7).
struct StateFilter {
  std::string lo = std::string("A\0", 2), hi = std::string("A\xff", 2);
  /// InvalidArgument unless 0 <= s <= 1. At s = 0 nothing matches.
  static Status of_selectivity(double s, StateFilter* out);
  /// Whether a row's two state bytes match.
  bool match(std::string_view state) const { return lo <= state.substr(0, 2) && state.substr(0, 2) <= hi; }
};

/// How Q3 reads its four tables (docs/compute.md, "Q3: READ vs SNAPSHOT"). All three give the same
/// rows in the same order.
///   kSnapshotTables  one SNAPSHOT per table (customer, new-order, order, order-line), decoded into
///                    columns, then hash joins: reads every row whatever the selectivity (the seed's
///                    SNAPSHOT plan; the default)
///   kRead            index nested-loop joins through READs (Txn::get and Txn::scan): each new order,
///                    its order by key, that order's customer by key, and only a selected order's
///                    lines (the seed's READ plan: the selectivity cuts the order-line reads)
///   kSnapshotKeys    the same index joins, each step one SNAPSHOT of every key it needs (new orders;
///                    their orders as points; those customers as points; the selected orders' lines
///                    as ranges): READ's reads, batched
enum class Q3Plan : std::uint8_t { kSnapshotTables, kRead, kSnapshotKeys };
const char* q3_plan_name(Q3Plan p);  ///< "snapshot-tables", "read", "snapshot-keys"

/// Buffers a query thread keeps from one Q3 to the next (Ch::q3): SNAPSHOT's output reuses their
/// capacity (TxnSnapshot::clear keeps it), where fresh buffers per query cost their growth copies
/// and a page fault per 4 KiB. Holds about the largest query's SNAPSHOT bytes; one per thread.
struct QueryScratch {
  TxnSnapshot a, b;
  std::vector<SnapshotArg> args;
};

/// The CH workload over one txn keyspace. Thread-safe.
class Ch {
 public:
  static Status make(std::shared_ptr<TxnSpace> space, const Scale& s, std::unique_ptr<Ch>* out,
                     unsigned max_attempts = 100000);
  /// Loads the initial database on `threads` threads (transactions of at most 512 rows).
  Status load(unsigned threads = 1);
  /// Runs one operation to commit, re-running it on conflict (bounded, with backoff), or to its
  /// rollback (r->rolled_back, nothing applied; Ok). Unavailable after max_attempts conflicts
  /// (nothing applied); Internal for missing rows (a corrupt load).
  Status run(const Op& op, OpResult* r, std::uint64_t* rng);

  /// Keeps ORDER-LINE's number, delivery date, quantity and amount in a ColumnMirror from now on
  /// (docs/compute.md, "Column mirror"): Q1 and Q6 then scan it at their transaction's start
  /// instead of SNAPSHOTting the table. Call after load(), once per keyspace (InvalidArgument
  /// when the keyspace already has a commit observer). `device`: kCpu scans on `query_threads`
  /// threads (1: the query's own thread); kGpu or kAuto also keep the mirror in GPU memory and
  /// scan it there when a GPU is present (kGpu without one: the CPU, as kAuto).
  Status attach_mirror(unsigned query_threads = 1, Device device = Device::kCpu);
  const ColumnMirror* mirror() const { return mirror_.get(); }

  /// CH Q1 / Q6 / Q3 on *t's snapshot (t begun by the caller; it is read, not ended), through the
  /// compute operators of `ctx` (Q1 and Q6: through the mirror when attached), decoding only the
  /// columns each reads; `scratch` (optional) is the calling thread's buffers, kept from query
  /// to query.
  Status q1(Txn* t, Context* ctx, QueryResult* out, QueryScratch* scratch = nullptr);
  Status q6(Txn* t, Context* ctx, QueryResult* out, QueryScratch* scratch = nullptr);
  /// Q3 takes its customer predicate and its plan (the default: CH's Q3 on whole-table SNAPSHOTs;
  /// kRead and kSnapshotKeys use no operator of ctx, which may then be null), and optionally the
  /// calling thread's scratch (null: buffers of this call only).
  Status q3(Txn* t, Context* ctx, QueryResult* out, const StateFilter& f = {},
            Q3Plan plan = Q3Plan::kSnapshotTables, QueryScratch* scratch = nullptr);
  /// The same three results computed naively (one full scan, maps, std::sort) at *t's snapshot,
  /// Q3 with predicate f.
  static Status reference(Txn* t, QueryResult* out, const StateFilter& f = {});

  /// TPC-C consistency conditions 1-4 at *t's snapshot: W_YTD = sum D_YTD; D_NEXT_O_ID - 1 =
  /// max O_ID = max NO_O_ID; max NO_O_ID - min NO_O_ID + 1 = NEW-ORDER rows; sum O_OL_CNT =
  /// ORDER-LINE rows (per warehouse and district). Internal naming the first violation.
  Status check_consistency(Txn* t);

  /// The freshness check: *t (a query's transaction) must see every commit acknowledged before
  /// it began: t->start_ts() >= each ack's commit_ts and each acknowledged order present in its
  /// snapshot. Internal naming the first ack it misses.
  static Status check_fresh(Txn* t, const std::vector<Ack>& acks);
  /// The same check against the mirror (when attached; Ok otherwise): each acknowledged order's
  /// first line is a row visible at `start`.
  Status check_mirror_fresh(std::uint64_t start, const std::vector<Ack>& acks);

  const Scale& scale() const { return s_; }
  TxnSpace& space() { return *space_; }
  /// Delivery's hints, kept for queries too (Q3 reads NEW-ORDER from their query_starts).
  const DeliveryHints& delivery_hints() const { return *hints_; }

 private:
  Ch() = default;
  std::shared_ptr<TxnSpace> space_;
  /// q on the mirror at t's start (on its device and threads), counting the versions scanned.
  Status mirror_query(Txn* t, const ColumnMirror::Query& q, Table* a, QueryResult* out);
  // Q3's plans; `starts`: where each district's NEW-ORDER keys begin at t's snapshot (empty: 0).
  Status q3_tables(Txn* t, Context* ctx, QueryResult* out, const StateFilter& f, QueryScratch* scratch,
                   std::span<const std::uint32_t> starts);
  Status q3_read(Txn* t, QueryResult* out, const StateFilter& f, std::span<const std::uint32_t> starts);
  Status q3_keys(Txn* t, QueryResult* out, const StateFilter& f, QueryScratch* scratch,
                 std::span<const std::uint32_t> starts);
  Scale s_;
  unsigned max_attempts_ = 100000;
  std::unique_ptr<DeliveryHints> hints_;
  std::shared_ptr<ColumnMirror> mirror_;
  unsigned mirror_threads_ = 1;
};

}  // namespace duet::compute::ch

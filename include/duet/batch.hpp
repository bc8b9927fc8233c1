// The `batch` keyspace: deterministic batched transactions. It runs OranguTAN's transfer blocks
// (send-receive-money between accounts, SmallCoin and SmallCoin+ profiles; docs/batch.md) and,
// when configured with tables, an Epic database of stored procedures (EpicDatabase;
// docs/epic.md) beside them.
//
// Guarantees: every block's outcomes and the accounts after it equal serial execution of the
// block's transfers in block order; blocks take effect one at a time in submission order; reads
// (balance, account) see the state as of the last committed block. Epic's guarantees are with
// EpicDatabase below.
//
// Accounts are named by unsigned 64-bit keys. Every member may be called from any number of
// threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "duet/keyspace.hpp"
#include "duet/status.hpp"

namespace duet {

// ---------------------------------------------------------------------------------------------
// Epic (docs/epic.md): deterministic epochs of stored procedures over tables of fixed-size
// records. Each txn declares its read and write keys and its args up front; txns are gathered
// into epochs that close at `epoch_size` txns, after `epoch_max_wait`, or on flush(), and every
// epoch's results equal serial execution of its txns in (submitting thread, counter) order: with
// one submitting thread, submission order. Procedures are compiled in (one source for CPU
// threads and GPU warps); a set is chosen when the database opens.

/// The compiled-in procedure sets (src/batch/epic: workloads.hpp and tpcc.hpp say what each
/// procedure reads, writes and outputs).
enum class EpicProcedures : std::uint8_t {
  kMix = 0,   ///< read-modify-write, delete, partial write over any tables (tests, examples)
  kYcsb = 1,  ///< YCSB's ten-key read/update txn
  kTpcc = 2,  ///< TPC-C's five transactions (new-order, payment, order-status, delivery, stock-level)
};

/// One table: records of `record_words` 32-bit words. A direct table's keys are 0..capacity-1;
/// an indexed table maps any 64-bit key to one of `capacity` records (inserts and deletes free
/// and reuse them).
struct EpicTable {
  std::string name;
  std::uint32_t record_words = 1;
  std::uint32_t capacity = 0;
  bool indexed = false;
};

/// A declared key: a table (its position in EpicConfig::tables) and a key in it.
struct EpicKey {
  std::uint32_t table = 0;
  std::uint64_t key = 0;
};

/// One piece of a txn submitted in pieces (EpicDatabase::submit_pieces): a procedure call of
/// its own, with its declared keys and args.
struct EpicPiece {
  std::uint32_t proc = 0;
  std::span<const EpicKey> reads;
  std::span<const EpicKey> writes;
  std::span<const std::uint32_t> args;
};
/// The most pieces of one txn.
inline constexpr std::size_t kEpicMaxPieces = 64;

/// How a txn that ran ended.
enum class EpicOutcome : std::uint8_t {
  kCommitted = 0,
  kAborted = 1,  ///< its procedure aborted before its first write: nothing of it applied
  kIllegal = 3,  ///< its procedure broke the rules (an abort or a read after a write); the state
                 ///< equals serial execution's, whose executor enforces the same rules
};

/// The result of one txn. `status` is not ok when the txn did not run: refused at submission
/// (InvalidArgument: unknown procedure or table, keys or args the procedure does not take (their
/// counts), a direct key out of range, too many keys, a write key declared twice; Internal after a failure that left the database needing a new
/// load, i.e. a new EpicDatabase; nothing queued), its epoch failed (ResourceExhausted when an
/// indexed table ran out of records, Internal otherwise; nothing of that epoch applied), or its
/// procedure asked to rerun `max_attempts` times (InvalidArgument: its declared keys are wrong).
struct EpicTxnResult {
  Status status;
  EpicOutcome outcome = EpicOutcome::kAborted;
  std::uint32_t out[4] = {0, 0, 0, 0};  ///< the procedure's output words
  std::uint32_t epoch = 0;     ///< the epoch it ran in
  std::uint32_t position = 0;  ///< its place in that epoch's serial order
  std::uint32_t attempts = 0;  ///< 1, plus one per rerun (declared keys found wrong)
};

/// Where an Epic database indexes, plans and executes its epochs (docs/epic.md, "Placement").
enum class EpicPlacement : std::uint8_t {
  kAuto = 0,  ///< kGpu when a CUDA device is usable, else kCpu
  kCpu = 1,   ///< indexing and planning on the CPU threads (the CPU twin)
  kGpu = 2,   ///< Epic-CPU: the GPU indexes on L-Slab and plans, the CPU threads execute over
              ///< host tables; an epoch too big for the device's free memory is indexed and
              ///< planned on the CPU
  kGpuTwin = 3,  ///< kGpu's path with the GPU replaced by its CPU twin (tests the path without a GPU)
  kGpuExec = 4,  ///< Epic on the GPU: the GPU indexes, plans and executes each epoch over its own
                 ///< copy of the tables; an epoch too big for the device, or a small one (see
                 ///< min_device_epoch_ops), runs on the CPU threads after the tables come back.
                 ///< A read after GPU epochs takes the one record from the device
  kGpuExecTwin = 5,  ///< kGpuExec's path with the GPU replaced by a second CPU engine (tests it without a GPU)
};

/// How an Epic database's CPU threads take an epoch's txns (docs/epic.md, "CPU execution order").
enum class EpicExecOrder : std::uint8_t {
  kAuto = 0,         ///< per-thread queues where the epoch partitions evenly and few reads cross them, else kSerial
  kSerial = 1,       ///< every thread takes the next txn from one counter, in serial order
  kPartitioned = 2,  ///< one queue per thread, by each txn's partition hint, else its first declared key's record (epochs of 256+ txns per thread)
};

struct EpicConfig {
  EpicProcedures procedures = EpicProcedures::kMix;
  EpicPlacement placement = EpicPlacement::kAuto;
  EpicExecOrder exec_order = EpicExecOrder::kAuto;
  /// Epochs of more ops (declared keys) than this are planned (kGpuExec: and executed) on the
  /// CPU even with kGpu (0: as many as the device's free memory holds).
  std::uint64_t max_device_epoch_ops = 0;
  /// With kGpu: epochs of fewer ops are planned on the CPU, which is faster for them (the GPU's
  /// fixed cost per epoch is about 1.5 ms; docs/epic.md), while the indexed tables hold at most
  /// 65536 records in all (each move between the two copies the index). With kGpuExec the same,
  /// while all the tables hold at most 65536 records (each move copies the tables). 0: every
  /// epoch on the GPU.
  std::uint64_t min_device_epoch_ops = 16384;
  /// With kGpuExec: an epoch the GPU could run runs on the CPU threads when a cost model,
  /// calibrated by the epochs each side ran, says they finish it sooner: a long chain of writes
  /// to one record executes link by link on the GPU (docs/epic.md, "Execution on the GPU").
  bool place_by_contention = true;
  std::vector<EpicTable> tables;
  unsigned threads = 0;              ///< executing threads (0: one per hardware thread, at most 64)
  std::size_t epoch_size = 100000;   ///< an epoch closes at this many txns (1 .. 2^19) ...
  std::uint32_t epoch_max_wait_us = 1000;  ///< ... or when its first txn has waited this long
  std::uint32_t max_attempts = 8;  ///< tries of a txn whose procedure asks to rerun (1 .. 1000)
};

struct EpicStats {
  std::uint64_t epochs = 0, txns = 0, refused = 0, failed_epochs = 0;
  std::uint64_t closed_by_size = 0, closed_by_wait = 0, closed_by_flush = 0, rerun_epochs = 0;
  EpicPlacement placement = EpicPlacement::kCpu;  ///< the placement in use (never kAuto)
  std::uint64_t host_planned_epochs = 0;  ///< kGpu epochs planned on the CPU (too big for the device)
  std::uint64_t small_epochs_on_host = 0;  ///< kGpu epochs planned on the CPU (under min_device_epoch_ops)
  std::uint64_t queued_epochs = 0;  ///< epochs whose threads ran per-thread queues (EpicExecOrder)
  std::uint64_t device_epochs = 0;    ///< kGpuExec epochs executed on the GPU
  std::uint64_t table_uploads = 0;    ///< kGpuExec copies of the tables to the GPU
  std::uint64_t table_downloads = 0;  ///< kGpuExec copies of the tables back (before CPU epochs)
  std::uint64_t cost_model_epochs_on_host = 0;  ///< kGpuExec epochs the GPU could run, run on the CPU by the cost model (place_by_contention)
  /// The epoch thread's milliseconds over every epoch: moving queued txns into epochs, running
  /// them (indexing, planning, execution, moves), and handing out their results.
  double take_ms = 0, engine_ms = 0, resolve_ms = 0;
  /// kGpuExec: milliseconds of the epochs each side ran (the tables' moves apart) and of the moves.
  double host_exec_ms = 0, device_exec_ms = 0, table_move_ms = 0;
  /// kGpuExec: the cost model's current figures, in ns: a txn on the CPU threads, a txn on the
  /// GPU, a link of a chain of writes to one record on the GPU (each the median of its last five
  /// measurements, or the default before one).
  double model_host_ns_per_txn = 0, model_device_ns_per_txn = 0, model_device_ns_per_link = 0;
};

/// An Epic database: epochs indexed, planned and executed per EpicPlacement (by default indexed
/// and planned on the GPU, executed on CPU threads over host tables: Epic-CPU). Thread-safe:
/// every member may be called from any number of threads at once.
class EpicDatabase {
 public:
  virtual ~EpicDatabase() = default;  ///< runs what is queued, then stops
  /// InvalidArgument (nothing opened) for a configuration check() refuses or for placement kGpu
  /// without a usable CUDA device (the reason given); ResourceExhausted when the tables do not
  /// fit in memory.
  static Status open(const EpicConfig& config, std::unique_ptr<EpicDatabase>* out);
  /// InvalidArgument for no tables, a table of no records or words, more than 255 tables or
  /// 2^32 - 2 records in all, threads over 64, an epoch size outside 1 .. 2^19 or max_attempts
  /// outside 1 .. 1000; Ok otherwise. What open checks first (servers check at startup).
  static Status check(const EpicConfig& config);
  /// The host memory the tables of one database take, in bytes: per record its two slots of
  /// record_words words, its slot word and deleted byte, and in an indexed table its index entry,
  /// back-link and free-ring id (counted at 48 bytes). The device copy, when the GPU holds one, is
  /// not counted. Servers charge it to their memory budget for each batch database they open.
  static std::uint64_t host_bytes(const EpicConfig& config);

  /// Bulk load before the first submission: record `key` of `table` holds `record` (exactly
  /// record_words words). InvalidArgument for an unknown table, a wrong length, a direct key out
  /// of range or any call after the first txn was queued (refused ones do not count);
  /// ResourceExhausted when an indexed table is full.
  virtual Status load(std::uint32_t table, std::uint64_t key, std::span<const std::uint32_t> record) = 0;
  /// Queues one txn of procedure `proc`; the future is ready when its epoch has run (or at once
  /// when refused). Cost: a copy of keys and args into the calling thread's queue.
  virtual std::future<EpicTxnResult> submit(std::uint32_t proc, std::span<const EpicKey> reads,
                                            std::span<const EpicKey> writes, std::span<const std::uint32_t> args) = 0;
  /// As submit, but `done` gets the result: on the database's epoch thread once the txn's epoch
  /// has run, or on the calling thread before this returns when the txn is refused. `done` must
  /// not block (the rest of the epoch's results wait for it) nor call this database.
  virtual void submit(std::uint32_t proc, std::span<const EpicKey> reads, std::span<const EpicKey> writes,
                      std::span<const std::uint32_t> args, std::function<void(EpicTxnResult&&)> done) = 0;
  /// Queues one txn in pieces (piece splitting, docs/epic.md "Pieces"). Each piece runs as a txn
  /// of its own at consecutive serial positions of one epoch, planned and executed apart, so a
  /// piece's writes wait for no other piece's reads. The result equals the whole txn's when the
  /// pieces are independent, which the caller promises and the database does not check: a
  /// piece's writes use only its own reads and args, no piece reads what an earlier piece writes
  /// (pieces that only read go first), no piece aborts or asks to rerun, and each output word of
  /// the txn is the sum (mod 2^32) of that word over its pieces. The one result: the first
  /// piece's status that is not ok (nothing else set; the pieces that ran stay applied), else the
  /// outcome and output words of the first piece that did not commit (the others stay applied),
  /// else kCommitted with the summed output words; the first piece's epoch and position and the
  /// most attempts of any piece. Refused whole, nothing queued, for no pieces, more than
  /// kEpicMaxPieces, or any piece submit() would refuse (the message names the piece).
  virtual std::future<EpicTxnResult> submit_pieces(std::span<const EpicPiece> pieces) = 0;
  /// As submit_pieces, with `done` getting the result as submit's callback form does.
  virtual void submit_pieces(std::span<const EpicPiece> pieces, std::function<void(EpicTxnResult&&)> done) = 0;
  /// Closes the open epoch and returns once every txn submitted before the call has its result.
  virtual void flush() = 0;
  /// As flush(), without waiting: `done` runs on the epoch thread once they have (it must not
  /// block nor call this database).
  virtual void flush(std::function<void()> done) = 0;
  /// The record as of the last epoch that completed (it waits for a running epoch to end):
  /// NotFound when absent, InvalidArgument for an unknown table.
  virtual Status read(std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* record) = 0;
  /// As read, without waiting for a running epoch: `done` gets the status and the record on this
  /// thread before this returns when no epoch runs, else on the epoch thread once the running
  /// epoch has ended (it must not block nor call this database).
  virtual void read(std::uint32_t table, std::uint64_t key,
                    std::function<void(Status, std::vector<std::uint32_t>&&)> done) = 0;
  virtual EpicStats stats() const = 0;
  /// The tables it was opened with, in table-id order.
  virtual const std::vector<EpicTable>& tables() const = 0;
  /// The procedure set it was opened with.
  virtual EpicProcedures procedures() const = 0;
};

/// "auto", "cpu", "gpu", "gpu-twin", "gpu-exec", "gpu-exec-twin"; parse_epic_placement accepts them in any case
/// (InvalidArgument else).
const char* epic_placement_name(EpicPlacement p);
Status parse_epic_placement(std::string_view text, EpicPlacement* out);

/// "auto", "serial", "partitioned"; parse_epic_exec_order accepts them in any case
/// (InvalidArgument else).
const char* epic_exec_order_name(EpicExecOrder o);
Status parse_epic_exec_order(std::string_view text, EpicExecOrder* out);

/// "mix", "ycsb", "tpcc"; parse_epic_procedures accepts them in any case (InvalidArgument else).
const char* epic_procedures_name(EpicProcedures p);
Status parse_epic_procedures(std::string_view text, EpicProcedures* out);
/// Tables as `name:words:capacity[:indexed]`, comma-separated ("" is no table); InvalidArgument
/// naming the entry for a bad one (names are not all digits: BATCH.CALL reads those as table
/// numbers), or for more than 255 tables or 2^32 - 2 records in all. format_epic_tables writes
/// the same form.
Status parse_epic_tables(std::string_view text, std::vector<EpicTable>* out);
std::string format_epic_tables(const std::vector<EpicTable>& tables);

// ---------------------------------------------------------------------------------------------
// OranguTAN's transfer blocks (docs/batch.md).

/// The transaction profile of a block (OranguTAN §4.3).
enum class TransferProfile : std::uint8_t {
  kSmallCoin = 0,      ///< commits iff sender.balance >= amount
  kSmallCoinPlus = 1,  ///< charges the sender's gas first; three outcomes
};
/// "smallcoin" / "smallcoin+" (also "smallcoinplus"); InvalidArgument otherwise.
Status parse_transfer_profile(std::string_view text, TransferProfile* out);

/// A transfer's final state.
enum class TransferOutcome : std::uint8_t {
  kCommitted = 0,  ///< SmallCoin: committed; SmallCoin+: Committed-Send
  kGasOnly = 1,    ///< SmallCoin+: Committed-Only-Gas-Cost (gas paid, amount not sent)
  kAborted = 2,    ///< insufficient funds: nothing changed
};
/// "committed", "gas-only", "aborted".
const char* transfer_outcome_name(TransferOutcome o);

struct Transfer {
  std::uint64_t sender = 0;
  std::uint64_t receiver = 0;
  std::int64_t amount = 0;  ///< 1 .. 2^40
};

struct AccountInit {
  std::uint64_t key = 0;
  std::int64_t balance = 0;   ///< 0 .. 2^62
  std::int64_t gas_cost = 0;  ///< 0 .. 2^40, charged by SmallCoin+ transfers it sends
};

struct AccountState {
  std::int64_t balance = 0, seq_num = 0, sent_events = 0, rec_events = 0, gas_cost = 0;
};

/// The result of one block: Ok with one outcome per transfer, or the error that refused the
/// whole block (naming the transfer), in which case nothing changed.
struct BlockResult {
  Status status;
  std::vector<TransferOutcome> outcomes;
  std::uint64_t block = 0;  ///< the block's sequence number in this keyspace (1, 2, ...)
};

/// The result of one single transfer (submit_transfer).
struct TransferResult {
  Status status;
  TransferOutcome outcome = TransferOutcome::kAborted;
  std::uint64_t block = 0;
};

/// Running statistics of a keyspace (for INFO and BATCH.STATS).
struct BatchStats {
  std::uint64_t blocks = 0, transfers = 0, refused_blocks = 0;
  std::uint64_t fast_path_failures = 0;  ///< Part I failures (the fast path's "aborts")
  std::uint64_t rerun_transfers = 0;     ///< compensated and re-run in the fallback
  std::uint64_t fallback_blocks = 0;     ///< blocks that needed the fallback
  std::uint64_t aborted = 0, gas_only = 0;
  std::uint64_t gpu_failures = 0;  ///< GPU DAG failures (each moved the DAG to the CPU; no block was lost)
  std::uint64_t serial_blocks = 0;  ///< blocks run serially on one thread (cheaper than the team lately)
  double resolve_us_total = 0;  ///< key resolution time, summed over blocks
  double latency_p50_us = 0, latency_p99_us = 0;  ///< over the last 1024 blocks (queue to commit)
  std::string engine;  ///< e.g. "orangutan, 8 threads, dag gpu: NVIDIA H100 ..."
  bool epic_open = false;  ///< the keyspace has an Epic database (BatchConfig::epic has tables)
  EpicStats epic;          ///< its epochs
};

/// Settings of a `batch` keyspace.
struct BatchConfig {
  /// orangutan | commutative | dag | sequential | speedex. Default commutative: the fast path
  /// with the DAG built only when a Part I fails; on the H100 the eager GPU DAG of `orangutan`
  /// cost more per 1000-transfer block than it saved (docs/batch.md, "Decisions").
  std::string mode = "commutative";
  unsigned threads = 0;  ///< engine threads (0: one per hardware thread less one, 1 to 15)
  std::string dag_device = "auto";  ///< auto | gpu | cpu | cpu-pairs
  std::size_t max_block = 1u << 17;       ///< larger blocks are refused
  std::size_t single_block_size = 1000;   ///< single transfers are gathered into blocks of this many ...
  std::uint32_t single_block_micros = 500;  ///< ... or whatever arrived within this time
  std::uint64_t max_accounts = 1u << 24;  ///< account capacity (address space is reserved, not memory)
  /// Epic's database of this keyspace (BATCH.CALL): opened when `epic.tables` is not empty.
  EpicConfig epic;
};

class BatchSpace : public Keyspace {
 public:
  KeyspaceKind kind() const override { return KeyspaceKind::kBatch; }

  /// Creates accounts, all or none: InvalidArgument naming the first entry whose key exists
  /// (or repeats in the list), or whose balance or gas is out of range; ResourceExhausted past
  /// max_accounts. Ordered with blocks: it takes effect after the blocks submitted before it.
  virtual Status create_accounts(std::span<const AccountInit> accounts) = 0;
  /// Queues a block; the future is ready once it committed (or was refused).
  virtual std::future<BlockResult> submit_block(TransferProfile profile, std::vector<Transfer> transfers) = 0;
  /// Queues one transfer; it joins a block of single transfers of the same profile (by size or
  /// time, BatchConfig) and the future is ready once that block committed.
  virtual std::future<TransferResult> submit_transfer(TransferProfile profile, const Transfer& transfer) = 0;
  /// The account's balance / whole state as of the last committed block; NotFound for an
  /// unknown key.
  virtual Status balance(std::uint64_t key, std::int64_t* out) = 0;
  virtual Status account(std::uint64_t key, AccountState* out) = 0;
  virtual BatchStats stats() const = 0;
  /// The keyspace's Epic database, or null when it has none (no tables configured). It lives as
  /// long as the keyspace.
  virtual EpicDatabase* epic() = 0;
};

}  // namespace duet

// The `batch` keyspace: deterministic batched transactions. Today it runs OranguTAN's transfer
// blocks (send-receive-money between accounts, SmallCoin and SmallCoin+ profiles); Epic's epochs
// of stored procedures join it through the same submission queue. See docs/batch.md.
//
// Guarantees: every block's outcomes and the accounts after it equal serial execution of the
// block's transfers in block order; blocks (and, later, epochs) take effect one at a time in
// submission order; reads (balance, account) see the state as of the last committed block.
//
// Accounts are named by unsigned 64-bit keys. Every member may be called from any number of
// threads at once.
#pragma once

#include <cstdint>
#include <future>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "duet/keyspace.hpp"
#include "duet/status.hpp"

namespace duet {

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
};

}  // namespace duet

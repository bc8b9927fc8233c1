// Native procedures, the embedded side (docs/compute.md, "Procedures"): load procedure libraries
// (shared objects speaking the C ABI of duet/procedure.h), list them, unload them, and call a
// procedure inside a snapshot-isolation transaction of a txn keyspace.
//
//   ProcedureRegistry::open   once (the server keeps one per process)
//   load(path)                dlopen, check the ABI version and the registration, add the library
//   call(space, name, ...)    one transaction per attempt; a write conflict at commit re-runs the
//                             whole procedure on a new snapshot (max_attempts, with backoff)
//   unload(library)           new calls are refused at once ("being unloaded"); waits for the
//                             calls in flight, then removes the library and dlcloses it
//
// Thread safety: every member may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "duet/status.hpp"
#include "duet/txn.hpp"

namespace duet {

/// The registry's settings; open() checks them.
struct ProcedureConfig {
  /// Runs of a procedure per call before a write conflict is reported (1 .. 10^6).
  unsigned max_attempts = 64;
  /// Backoff after the k-th conflict (k from 1): the first `backoff_yields` conflicts yield the
  /// thread; then it sleeps min(backoff_min_us << (k - backoff_yields - 1), backoff_max_us)
  /// microseconds, times a random factor in [0.5, 1) so that conflicting callers spread out.
  unsigned backoff_yields = 3;
  std::uint32_t backoff_min_us = 2;
  std::uint32_t backoff_max_us = 1000;  ///< >= backoff_min_us, at most one second
  /// Where procedures' operators and inference run: "auto" (the GPU when one is present), "cpu"
  /// or "gpu" (calls that compute fail when there is none). A small model's inference is several
  /// times faster on the CPU than as its own GPU launch (docs/compute.md, "OLDA").
  std::string compute_device = "auto";
};

/// One reply value a procedure built (the C ABI's reply builder).
struct ProcReply {
  enum class Kind : std::uint8_t { kNil, kInt, kBulk, kSimple, kError, kArray };
  Kind kind = Kind::kNil;
  std::int64_t i = 0;
  std::string s;                  ///< bulk, simple, error (with its code, e.g. "ERR ...")
  std::vector<ProcReply> items;   ///< array
};

/// A loaded procedure as list() reports it.
struct ProcedureInfo {
  std::string name, library, path;
  bool read_only = false;
  bool runs_long = false;  ///< flagged DUET_PROC_LONG: a server runs it off its I/O threads
  std::uint64_t calls = 0;      ///< calls begun
  std::uint64_t retries = 0;    ///< re-runs after a write conflict
  std::uint64_t failures = 0;   ///< calls that ended in an error (procedure error, conflicts exhausted, ...)
};

/// How a call that ran ended (call() returned ok).
struct CallOutcome {
  enum class End : std::uint8_t {
    kCommitted,       ///< committed (read-only: finished); `reply` is the procedure's
    kFailed,          ///< the procedure returned an error code: aborted, nothing applied
    kConflict,        ///< every attempt lost a write conflict: aborted, nothing applied
    kSnapshotTooOld,  ///< the transaction was aborted to bound memory: nothing applied
  };
  End end = End::kCommitted;
  /// kCommitted: the procedure's reply (which may itself be an error value). Otherwise an
  /// error reply: the procedure's own error value when it built one at the top, else
  /// "ERR procedure '<name>' failed (code N)"; "ABORT ..." for conflicts and snapshot too old.
  ProcReply reply;
  unsigned attempts = 0;  ///< runs of the procedure (1 + re-runs)
};

/// The loaded procedure libraries. Create with open().
class ProcedureRegistry {
 public:
  static Status open(const ProcedureConfig& config, std::shared_ptr<ProcedureRegistry>* out);
  ~ProcedureRegistry();
  ProcedureRegistry(const ProcedureRegistry&) = delete;
  ProcedureRegistry& operator=(const ProcedureRegistry&) = delete;

  /// Loads the shared object at `path` (opened as given; the server checks the directory first).
  /// *library (may be null) gets the library's name. InvalidArgument, with nothing loaded, when
  /// dlopen fails, the registration symbol is missing, the ABI version differs, a name is bad
  /// or already loaded (library or procedure), or a definition is malformed.
  Status load(const std::string& path, std::string* library = nullptr);
  /// Every loaded procedure (libraries being unloaded excluded), by name.
  std::vector<ProcedureInfo> list() const;
  /// Unloads library `library`: from now on its procedures answer Unavailable ("being
  /// unloaded"); waits for its calls in flight to return, then removes and dlcloses it.
  /// NotFound when no such library is loaded (or another unload of it is under way).
  /// A procedure must not unload its own library (it would wait for itself).
  Status unload(std::string_view library);
  /// Calls procedure `name` with `keys` and `args` in transactions of `space`. With
  /// `read_only` (FCALL_RO) a procedure not flagged DUET_PROC_READ_ONLY is refused
  /// (InvalidArgument) and writes inside it are refused as well. Returns:
  ///  ok                 the procedure ran: *out says how it ended (committed, or aborted with
  ///                     nothing applied) and holds the reply to send
  ///  NotFound           no such procedure
  ///  Unavailable        its library is being unloaded
  ///  InvalidArgument    read-only refusal
  ///  ResourceExhausted  no transaction could begin (max_transactions) or memory ran out
  /// `space` is held for the call (a mirror a procedure attaches keeps a weak reference to it).
  Status call(const std::shared_ptr<TxnSpace>& space, std::string_view name, std::span<const std::string_view> keys,
              std::span<const std::string_view> args, bool read_only, CallOutcome* out);
  /// Whether procedure `name` is loaded and flagged DUET_PROC_LONG (a shared lock and a map
  /// lookup). False for an unknown name: call() then answers NotFound.
  bool runs_long(std::string_view name) const;
  /// Whether the library is loaded and not being unloaded.
  bool loaded(std::string_view library) const;
  /// Whether an unload of `library` is waiting for calls in flight.
  bool unloading(std::string_view library) const;
  const ProcedureConfig& config() const;

  struct Impl;

 private:
  ProcedureRegistry() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace duet

// MV-RLU internals shared by the library's sources (not part of the public API).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "duet/mvrlu.hpp"
#include "mvrlu/clock.hpp"

namespace duet::mvrlu::detail {

enum EntryKind : std::uint32_t { kEntryPad = 0x50414431u, kEntryWs = 0x57534831u, kEntryCopy = 0x43505931u };
enum CopyFlags : std::uint32_t { kFlagConst = 1u, kFlagFree = 2u };
inline constexpr std::uint32_t kMasterMagic = 0x4d565231u;

/// First bytes of every log entry.
struct EntryHdr {
  std::uint32_t kind;
  std::uint32_t bytes;
};

/// A write set's header in a log: its copies (and any pad entry where the log wraps) follow
/// up to `span` bytes from the header.
struct alignas(kLine) WsHdr {
  std::uint32_t kind;
  std::uint32_t bytes;  ///< this header's size (kLine)
  std::atomic<std::uint64_t> commit_ts;  ///< kInf until the commit's linearization point
  std::uint64_t span;   ///< bytes of the whole write set, set before it is published
};
static_assert(sizeof(WsHdr) == kLine);

enum RecState : std::uint32_t { kRecFree = 0, kRecActive = 1, kRecDeparted = 2 };

/// Per-slot state. Offsets into the log (head, tail) grow without bound; position = off % size.
struct alignas(kLine) ThreadRec {
  std::atomic<std::uint64_t> section_seq{0};  ///< odd inside a section
  std::atomic<std::uint32_t> state{kRecFree};
  char* log = nullptr;
  alignas(kLine) std::atomic<std::uint64_t> head{0};  ///< reclaim position (GC processor)
  std::atomic<std::uint64_t> committed_tail{0};       ///< end of committed write sets
  std::atomic<std::uint64_t> tail{0};                 ///< allocation position (owner)
  alignas(kLine) std::atomic<std::uint64_t> gc_done{0};  ///< last round processed
  std::atomic<std::uint32_t> gc_busy{0};                 ///< who processes the log now
  // Written by the owner only.
  alignas(kLine) std::atomic<std::uint64_t> commits{0}, aborts{0}, conflicts{0}, master_alloc{0};
  // Written by whoever holds gc_busy.
  alignas(kLine) std::atomic<std::uint64_t> writebacks{0}, reclaimed{0}, master_freed{0}, takeovers{0};
};

/// Ends a section (or a guarded walk) on the owner's slot: only the owner writes its counter,
/// so a release store does what an atomic increment would, without the locked instruction.
inline void leave_section(ThreadRec& t) {
  t.section_seq.store(t.section_seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

struct DomainImpl {
  Config cfg;
  Clock clock;
  ClockMode mode = ClockMode::kCounter;
  char* range = nullptr;
  std::size_t range_bytes = 0;
  std::size_t log_bytes = 0;
  /// Sections enter with a plain store, and grace-period detection pays for the fence with
  /// membarrier(2) (heavy_fence). Off when the kernel refuses membarrier, and under
  /// Config::rlu_sync, whose commits read the section counters on every commit.
  bool asymmetric_fence = false;
  std::uint64_t low_mark_bytes = 0;   ///< cfg.low_watermark of a log, in bytes
  std::uint64_t high_mark_bytes = 0;  ///< cfg.high_watermark of a log, in bytes
  std::unique_ptr<ThreadRec[]> recs;
  unsigned nrecs = 0;

  std::mutex reg_mu;    ///< registration, departure, round announcement
  std::mutex round_mu;  ///< one grace-period detection at a time (detector, drain)
  std::atomic<std::uint64_t> round{0};
  std::atomic<std::uint64_t> gts[4] = {};  ///< gp-ts of round r at [r % 4]
  std::atomic<bool> gc_request{false};

  std::mutex cv_mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread detector;

  // kManual detection state (under round_mu).
  bool gp_open = false;
  std::uint64_t gp_t = 0;
  std::vector<std::uint64_t> gp_snap;

  /// Version-store snapshots: 0 free, kSnapshotPending while registering, else the ts.
  static constexpr unsigned kSnapshotSlots = 256;
  static constexpr std::uint64_t kSnapshotPending = kInf;
  std::atomic<std::uint64_t> snapshots[kSnapshotSlots] = {};

  CopyHdr wb_sentinel{};  ///< p_pending while a GC processor writes a copy back

  ThreadRec& rec(unsigned i) { return recs[i]; }
  char* at(const ThreadRec& t, std::uint64_t off) const { return t.log + off % log_bytes; }

  /// A full fence on every thread of the process that is running now (membarrier), or a
  /// fence of the caller only when sections fence for themselves. Orders every section's
  /// entry store before the caller's later loads, or that section's later instructions after
  /// the caller's earlier ones.
  void heavy_fence();
  void request();
  bool barrier_clear();
  /// Processes the current round for `t` unless done or busy elsewhere; false when busy.
  bool try_process(ThreadRec& t, bool by_detector);
  void process_round(ThreadRec& t, std::uint64_t r);
  bool copy_done(CopyHdr* c, std::uint64_t r, std::uint64_t g, std::uint64_t gp);
  void try_writeback(ThreadRec& t, CopyHdr* c, std::uint64_t r);
  void finalize_ws(ThreadRec& t, WsHdr* ws, std::uint64_t off);
  void dealloc_master(ThreadRec& t, MasterHdr* m);
  /// Reads the clock, then the section counters and the snapshots; *g = the gp-ts the round
  /// will announce (clock - boundary, or the oldest registered snapshot if older).
  void gp_begin(std::uint64_t* g, std::vector<std::uint64_t>* snap);
  bool gp_complete(const std::vector<std::uint64_t>& snap);
  void announce(std::uint64_t g);
  void help_lagging(bool force, std::chrono::steady_clock::time_point announced);
  void detector_main();
  bool logs_empty();
};

}  // namespace duet::mvrlu::detail

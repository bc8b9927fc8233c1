// MV-RLU: sections, versions, the commit protocol and self-log garbage collection.
// docs/mvrlu.md explains the protocol, the fences and the GC rule this file implements.
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "common/log.hpp"
#include "mvrlu/internal.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define DUET_MVRLU_PAUSE() _mm_pause()
#else
#define DUET_MVRLU_PAUSE() ((void)0)
#endif

namespace duet::mvrlu {

using namespace detail;
using Clk = std::chrono::steady_clock;

namespace {

constexpr const char* kConflictPrefix = "mvrlu: conflict";

Status conflict(const char* what) { return Status::Unavailable(std::string(kConflictPrefix) + ": " + what); }

std::size_t round_line(std::size_t n) { return (n + kLine - 1) / kLine * kLine; }

}  // namespace

/// CPUs this process may run on (its affinity mask; the online count if that is unreadable).
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

bool is_log_full(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted && s.message() == "mvrlu: log full";
}

bool is_conflict(const Status& s) {
  return s.code() == StatusCode::kUnavailable && s.message().rfind(kConflictPrefix, 0) == 0;
}

// ---------------------------------------------------------------------------------------------
// Domain

Domain::Domain() : impl_(std::make_unique<DomainImpl>()) {}

Status Domain::create(const Config& cfg, std::unique_ptr<Domain>* out) {
  if (out == nullptr) return Status::InvalidArgument("mvrlu: null output");
  if (cfg.log_bytes < (16u << 10) || cfg.log_bytes % 4096 != 0 || cfg.log_bytes > (1u << 30))
    return Status::InvalidArgument("mvrlu: log_bytes must be a multiple of 4096 in [16 KiB, 1 GiB]");
  if (cfg.max_threads == 0 || cfg.max_threads > 4096)
    return Status::InvalidArgument("mvrlu: max_threads must be in [1, 4096]");
  if (!(cfg.low_watermark > 0 && cfg.low_watermark <= cfg.high_watermark && cfg.high_watermark < 1))
    return Status::InvalidArgument("mvrlu: watermarks must satisfy 0 < low <= high < 1");
  if (!(cfg.deref_watermark > 0 && cfg.deref_watermark <= 1) || cfg.deref_window == 0)
    return Status::InvalidArgument("mvrlu: deref_watermark must be in (0, 1] and deref_window > 0");
  if (!cfg.test_skew.empty() && cfg.ordo_boundary < 0)
    return Status::InvalidArgument("mvrlu: a test clock (test_skew) needs ordo_boundary >= 0");
  if (cfg.takeover_us == 0 || cfg.detector_period_us == 0 || cfg.max_retries == 0)
    return Status::InvalidArgument("mvrlu: takeover_us, detector_period_us and max_retries must be > 0");
  std::unique_ptr<Domain> d(new Domain());
  DomainImpl& m = *d->impl_;
  m.cfg = cfg;
  m.log_bytes = cfg.log_bytes;
  m.low_mark_bytes = static_cast<std::uint64_t>(cfg.low_watermark * static_cast<double>(cfg.log_bytes));
  m.high_mark_bytes = static_cast<std::uint64_t>(cfg.high_watermark * static_cast<double>(cfg.log_bytes));
  m.nrecs = cfg.max_threads;
  m.range_bytes = cfg.log_bytes * cfg.max_threads;
  void* p = mmap(nullptr, m.range_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return Status::ResourceExhausted("mvrlu: mmap of the log range refused");
  m.range = static_cast<char*>(p);
  m.recs = std::make_unique<ThreadRec[]>(m.nrecs);
  for (unsigned i = 0; i < m.nrecs; ++i) m.recs[i].log = m.range + std::size_t{i} * cfg.log_bytes;

  // The clock (docs/mvrlu.md, "Clock").
  if (!cfg.test_skew.empty()) {
    m.clock.init(Clock::Kind::kTest, static_cast<std::uint64_t>(cfg.ordo_boundary), cfg.test_skew);
    m.mode = ClockMode::kOrdo;
  } else if (cfg.clock == ClockMode::kCounter) {
    m.clock.init(Clock::Kind::kCounter, 0, {});
    m.mode = ClockMode::kCounter;
  } else if (cfg.clock == ClockMode::kAuto && usable_cpus() < cfg.ordo_min_cpus) {
    m.clock.init(Clock::Kind::kCounter, 0, {});
    m.mode = ClockMode::kCounter;
    log(LogLevel::kDebug, "mvrlu: clock counter (" + std::to_string(usable_cpus()) + " CPUs, ORDO from " +
                              std::to_string(cfg.ordo_min_cpus) + ")");
  } else {
    const bool invariant = tsc_invariant() && !cfg.faults.tsc_unusable;
    std::uint64_t b = 0;
    std::string why;
    bool usable = invariant;
    if (usable && cfg.ordo_boundary >= 0) {
      b = static_cast<std::uint64_t>(cfg.ordo_boundary);
      why = "ORDO boundary " + std::to_string(b) + " TSC ticks (configured)";
    } else if (usable) {
      b = measure_ordo_boundary(&why);
      // A boundary over ~1 ms of ticks means the clocks are not usefully synchronised.
      if (b > 4'000'000) usable = false;
    }
    if (usable) {
      m.clock.init(Clock::Kind::kTsc, b, {});
      m.mode = ClockMode::kOrdo;
      log(LogLevel::kDebug, "mvrlu: clock ORDO, " + why);
    } else {
      m.clock.init(Clock::Kind::kCounter, 0, {});
      m.mode = ClockMode::kCounter;
      log(cfg.clock == ClockMode::kOrdo ? LogLevel::kWarn : LogLevel::kInfo,
          std::string("mvrlu: the TSC is unusable (") + (invariant ? why : "not invariant") +
              "); the global counter takes over");
    }
  }
  // Asymmetric fences (docs/mvrlu.md, "Commit protocol and fences"): registration once per
  // process is cheap and idempotent; a kernel without membarrier keeps the symmetric fences.
  m.asymmetric_fence = cfg.asymmetric_fences && !cfg.rlu_sync &&
                       syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  if (cfg.gc == GcMode::kAuto) m.detector = std::thread([&m] { m.detector_main(); });
  *out = std::move(d);
  return Status::Ok();
}

Domain::~Domain() {
  DomainImpl& m = *impl_;
  {
    std::lock_guard<std::mutex> lk(m.cv_mu);
    m.stop = true;
  }
  m.cv.notify_all();
  if (m.detector.joinable()) m.detector.join();
  if (m.range != nullptr) munmap(m.range, m.range_bytes);
}

ClockMode Domain::clock_mode() const { return impl_->mode; }
std::uint64_t Domain::ordo_boundary() const { return impl_->clock.boundary(); }
const Config& Domain::config() const { return impl_->cfg; }
std::uint64_t Domain::round() const { return impl_->round.load(std::memory_order_acquire); }
void Domain::request_gc() { impl_->request(); }

Stats Domain::stats() const {
  Stats s;
  DomainImpl& m = *impl_;
  std::uint64_t alloc = 0, freed = 0;
  for (unsigned i = 0; i < m.nrecs; ++i) {
    ThreadRec& t = m.recs[i];
    s.commits += t.commits.load(std::memory_order_relaxed);
    s.aborts += t.aborts.load(std::memory_order_relaxed);
    s.conflicts += t.conflicts.load(std::memory_order_relaxed);
    s.writebacks += t.writebacks.load(std::memory_order_relaxed);
    s.reclaimed_copies += t.reclaimed.load(std::memory_order_relaxed);
    s.takeovers += t.takeovers.load(std::memory_order_relaxed);
    alloc += t.master_alloc.load(std::memory_order_relaxed);
    freed += t.master_freed.load(std::memory_order_relaxed);
    if (t.state.load(std::memory_order_acquire) != kRecFree) {
      const std::uint64_t h = t.head.load(std::memory_order_acquire);
      const std::uint64_t tl = t.tail.load(std::memory_order_acquire);
      s.log_bytes_used += tl > h ? tl - h : 0;
      s.log_bytes_total += m.log_bytes;
    }
  }
  s.master_bytes = alloc > freed ? alloc - freed : 0;
  s.rounds = m.round.load(std::memory_order_acquire);
  return s;
}

Status Domain::register_thread(std::unique_ptr<Thread>* out) {
  if (out == nullptr) return Status::InvalidArgument("mvrlu: null output");
  DomainImpl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.reg_mu);
  for (unsigned i = 0; i < m.nrecs; ++i) {
    ThreadRec& t = m.recs[i];
    if (t.state.load(std::memory_order_acquire) != kRecFree) continue;
    t.gc_done.store(m.round.load(std::memory_order_acquire), std::memory_order_release);
    t.state.store(kRecActive, std::memory_order_release);
    std::unique_ptr<Thread> th(new Thread(this));
    th->rec_ = &t;
    th->slot_ = i;
    th->log_lo_ = reinterpret_cast<std::uintptr_t>(m.range);
    th->log_span_ = m.range_bytes;
    th->own_lo_ = reinterpret_cast<std::uintptr_t>(t.log);
    th->own_span_ = m.log_bytes;
    th->rng_ = 0x9e3779b97f4a7c15ull * (i + 1) ^ reinterpret_cast<std::uintptr_t>(th.get());
    *out = std::move(th);
    return Status::Ok();
  }
  return Status::ResourceExhausted("mvrlu: all " + std::to_string(m.nrecs) + " thread slots are taken");
}

Status Domain::begin_grace_period() {
  DomainImpl& m = *impl_;
  if (m.cfg.gc != GcMode::kManual) return Status::InvalidArgument("mvrlu: begin_grace_period needs GcMode::kManual");
  std::lock_guard<std::mutex> lk(m.round_mu);
  if (m.gp_open) return Status::InvalidArgument("mvrlu: a grace-period detection is already open");
  if (!m.barrier_clear()) return Status::InvalidArgument("mvrlu: the last round is not processed by every log");
  m.gp_begin(&m.gp_t, &m.gp_snap);
  m.gp_open = true;
  return Status::Ok();
}

bool Domain::finish_grace_period() {
  DomainImpl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.round_mu);
  if (!m.gp_open || !m.gp_complete(m.gp_snap)) return false;
  m.gp_open = false;
  m.announce(m.gp_t);
  return true;
}

void Domain::collect_lagging() { impl_->help_lagging(true, Clk::now()); }

Status Domain::drain() {
  DomainImpl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.round_mu);
  if (m.gp_open) return Status::InvalidArgument("mvrlu: drain while a manual detection is open");
  // Usually three rounds: write back, unlink, reclaim. A round only writes back copies older
  // than its gp-ts, so on a logical test clock it may take more; the deadline bounds them.
  const auto deadline = Clk::now() + std::chrono::milliseconds(m.cfg.wait_limit_ms);
  for (;;) {
    m.heavy_fence();
    for (unsigned i = 0; i < m.nrecs; ++i)
      if (m.recs[i].state.load(std::memory_order_acquire) == kRecActive &&
          (m.recs[i].section_seq.load(std::memory_order_acquire) & 1) != 0)
        return Status::InvalidArgument("mvrlu: drain needs every section closed");
    // Finish the current round everywhere (the reclamation barrier).
    for (;;) {
      m.help_lagging(true, Clk::now());
      if (m.barrier_clear()) break;
      if (Clk::now() > deadline) return Status::ResourceExhausted("mvrlu: drain: a log stayed busy");
      std::this_thread::yield();
    }
    if (m.logs_empty()) return Status::Ok();
    std::uint64_t t = 0;
    std::vector<std::uint64_t> snap;
    m.gp_begin(&t, &snap);
    while (!m.gp_complete(snap)) {
      if (Clk::now() > deadline) return Status::ResourceExhausted("mvrlu: drain: a section did not end");
      std::this_thread::yield();
    }
    m.announce(t);
    if (Clk::now() > deadline) return Status::ResourceExhausted("mvrlu: drain: logs not empty in time");
  }
}

void Domain::destroy_quiescent(void* object) {
  if (object == nullptr) return;
  auto* mh = static_cast<MasterHdr*>(object) - 1;
  impl_->dealloc_master(impl_->recs[0], mh);
}

// ---------------------------------------------------------------------------------------------
// DomainImpl: grace periods and collection

void DomainImpl::heavy_fence() {
  if (asymmetric_fence && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void DomainImpl::request() {
  if (cfg.gc != GcMode::kAuto) return;
  if (gc_request.load(std::memory_order_relaxed)) return;
  if (!gc_request.exchange(true, std::memory_order_acq_rel)) cv.notify_one();
}

bool DomainImpl::barrier_clear() {
  const std::uint64_t r = round.load(std::memory_order_acquire);
  for (unsigned i = 0; i < nrecs; ++i) {
    const std::uint32_t s = recs[i].state.load(std::memory_order_acquire);
    if (s != kRecFree && recs[i].gc_done.load(std::memory_order_acquire) < r) return false;
  }
  return true;
}

bool DomainImpl::logs_empty() {
  for (unsigned i = 0; i < nrecs; ++i) {
    ThreadRec& t = recs[i];
    if (t.state.load(std::memory_order_acquire) == kRecFree) continue;
    if (t.head.load(std::memory_order_acquire) != t.committed_tail.load(std::memory_order_acquire)) return false;
  }
  return true;
}

void DomainImpl::gp_begin(std::uint64_t* g, std::vector<std::uint64_t>* snap) {
  // The clock read comes first and is fenced (Clock::now), so a section whose counter
  // increment is not in the snapshot reads its local-ts after t: its local-ts >= t - B. The
  // same holds for a version-store snapshot that registers after the slots are read.
  const std::uint64_t t = clock.now(Clock::kDetectorSlot);
  // Sections enter without a fence of their own (asymmetric_fence): after this, a section
  // whose entry the loads below miss executes its clock read after t.
  heavy_fence();
  snap->resize(nrecs);
  for (unsigned i = 0; i < nrecs; ++i) (*snap)[i] = recs[i].section_seq.load(std::memory_order_seq_cst);
  const std::uint64_t b = clock.boundary();
  std::uint64_t gts_now = t > b ? t - b : 0;
  for (unsigned i = 0; i < kSnapshotSlots; ++i) {
    std::uint64_t v = snapshots[i].load(std::memory_order_seq_cst);
    while (v == kSnapshotPending) {  // a registration between its intent and its timestamp
      DUET_MVRLU_PAUSE();
      v = snapshots[i].load(std::memory_order_seq_cst);
    }
    if (v != 0) gts_now = std::min(gts_now, v);
  }
  *g = gts_now;
}

bool DomainImpl::gp_complete(const std::vector<std::uint64_t>& snap) {
  for (unsigned i = 0; i < nrecs; ++i)
    if ((snap[i] & 1) != 0 && recs[i].section_seq.load(std::memory_order_acquire) == snap[i]) return false;
  return true;
}

void DomainImpl::announce(std::uint64_t g) {
  std::lock_guard<std::mutex> lk(reg_mu);
  const std::uint64_t r = round.load(std::memory_order_relaxed) + 1;
  gts[r % 4].store(std::max(g, gts[(r - 1) % 4].load(std::memory_order_relaxed)), std::memory_order_relaxed);
  round.store(r, std::memory_order_release);
}

bool DomainImpl::try_process(ThreadRec& t, bool by_detector) {
  const std::uint64_t r = round.load(std::memory_order_acquire);
  if (t.gc_done.load(std::memory_order_acquire) >= r) return true;
  std::uint32_t idle = 0;
  if (!t.gc_busy.compare_exchange_strong(idle, 1, std::memory_order_acquire)) return false;
  if (t.gc_done.load(std::memory_order_relaxed) < r) {
    process_round(t, r);
    t.gc_done.store(r, std::memory_order_release);
    if (by_detector) t.takeovers.fetch_add(1, std::memory_order_relaxed);
  }
  t.gc_busy.store(0, std::memory_order_release);
  // The next round may be waiting for this one (detector_main's wait). A wake-up lost to the
  // race with the detector's check costs at most its wait of takeover_us.
  if (!by_detector && gc_request.load(std::memory_order_acquire)) cv.notify_one();
  return true;
}

void DomainImpl::dealloc_master(ThreadRec& t, MasterHdr* m) {
  const std::uint64_t bytes = kMasterHdrBytes + m->size;
  m->magic = 0;
  ::operator delete(static_cast<void*>(m), std::align_val_t(kLine));
  t.master_freed.fetch_add(bytes, std::memory_order_relaxed);
}

// The GC rule (docs/mvrlu.md). Round r has gp-ts g: every section open at the time of the
// round started with local-ts >= g. A committed copy c is finished with when
//  - it was only const-locked (never chained), or
//  - a newer version n was chained on it and ts(n) <= g: no open or later section has
//    local-ts < ts(n), and only such a section follows n's p_older to c, or
//  - it was written back and unlinked from the head in an earlier round r' < r: the grace
//    period of round r began after round r' ended, so no section still holds it, or
//  - it frees its master and ts(c) <= gp-ts of round r-1 (two grace periods): then every
//    older copy of the master was finished with in round r-1 without touching the master.
// The newest copy is written back (under the object lock) once ts(c) <= g (Lemma 2).
bool DomainImpl::copy_done(CopyHdr* c, std::uint64_t r, std::uint64_t g, std::uint64_t gp) {
  if ((c->flags & kFlagConst) != 0) return true;
  const std::uint64_t ts = c->commit_ts.load(std::memory_order_acquire);
  if ((c->flags & kFlagFree) != 0) return r >= 2 && ts <= gp;
  if (c->unlinked_round != 0) return c->unlinked_round < r;
  if (cfg.faults.text_reclaim_rule) {
    // The text's rule: own commit-ts below the second-to-last gp-ts, counted from creation.
    if (r >= 2 && ts < gp && c->master->p_copy.load(std::memory_order_acquire) != c) return true;
  } else {
    const std::uint64_t nt = c->newer_ts.load(std::memory_order_acquire);
    if (nt != kInf && nt <= g) return true;
  }
  return false;
}

void DomainImpl::try_writeback(ThreadRec& t, CopyHdr* c, std::uint64_t r) {
  MasterHdr* m = c->master;
  if (m->p_copy.load(std::memory_order_acquire) != c) return;
  CopyHdr* expected = nullptr;
  // The object lock keeps writers (and so chain pushes) out while the master changes.
  if (!m->p_pending.compare_exchange_strong(expected, &wb_sentinel, std::memory_order_acq_rel)) return;
  if (m->p_copy.load(std::memory_order_relaxed) == c) {
    std::memcpy(m->data(), c->data(), m->size);
    m->p_copy.store(nullptr, std::memory_order_release);
    c->unlinked_round = static_cast<std::uint32_t>(r);
    t.writebacks.fetch_add(1, std::memory_order_relaxed);
  }
  m->p_pending.store(nullptr, std::memory_order_release);
}

void DomainImpl::finalize_ws(ThreadRec& t, WsHdr* ws, std::uint64_t off) {
  std::uint64_t n = 0;
  for (std::uint64_t o = off + ws->bytes; o < off + ws->span;) {
    auto* e = reinterpret_cast<EntryHdr*>(at(t, o));
    if (e->kind == kEntryCopy) {
      auto* c = reinterpret_cast<CopyHdr*>(e);
      if ((c->flags & kFlagFree) != 0) dealloc_master(t, c->master);
      if (cfg.poison_reclaimed) std::memset(c->data(), 0xDB, c->bytes - kLine);
      ++n;
    }
    o += e->bytes;
  }
  t.reclaimed.fetch_add(n, std::memory_order_relaxed);
}

void DomainImpl::process_round(ThreadRec& t, std::uint64_t r) {
  const std::uint64_t g = gts[r % 4].load(std::memory_order_relaxed);
  const std::uint64_t gp = r >= 2 ? gts[(r - 1) % 4].load(std::memory_order_relaxed) : 0;
  std::uint64_t off = t.head.load(std::memory_order_relaxed);
  const std::uint64_t end = t.committed_tail.load(std::memory_order_acquire);
  std::uint64_t new_head = off;
  bool prefix = true;
  while (off < end) {
    auto* e = reinterpret_cast<EntryHdr*>(at(t, off));
    if (e->kind == kEntryPad) {
      off += e->bytes;
      if (prefix) new_head = off;
      continue;
    }
    auto* ws = reinterpret_cast<WsHdr*>(e);
    const std::uint64_t ws_end = off + ws->span;
    bool all = true;
    for (std::uint64_t o = off + ws->bytes; o < ws_end;) {
      auto* x = reinterpret_cast<EntryHdr*>(at(t, o));
      if (x->kind == kEntryCopy) {
        auto* c = reinterpret_cast<CopyHdr*>(x);
        if (!copy_done(c, r, g, gp)) {
          all = false;
          const std::uint64_t ts = c->commit_ts.load(std::memory_order_acquire);
          if ((c->flags & (kFlagConst | kFlagFree)) == 0 && c->unlinked_round == 0 &&
              (ts <= g || cfg.faults.writeback_before_grace_period))
            try_writeback(t, c, r);
        }
      }
      o += x->bytes;
    }
    if (all && prefix) {
      finalize_ws(t, ws, off);
      new_head = ws_end;
    } else {
      prefix = false;
    }
    off = ws_end;
  }
  t.head.store(new_head, std::memory_order_release);
}

void DomainImpl::help_lagging(bool force, Clk::time_point announced) {
  const std::uint64_t r = round.load(std::memory_order_acquire);
  const bool late = Clk::now() - announced > std::chrono::microseconds(cfg.takeover_us);
  for (unsigned i = 0; i < nrecs; ++i) {
    ThreadRec& t = recs[i];
    const std::uint32_t s = t.state.load(std::memory_order_acquire);
    if (s == kRecFree) continue;
    if (t.gc_done.load(std::memory_order_acquire) < r) {
      // The owner processes its own log at its next section boundary; a departed thread's
      // log, or one whose owner has not come by within takeover_us, the detector does.
      if (force || late || s == kRecDeparted) (void)try_process(t, true);
    }
    if (s == kRecDeparted && t.gc_done.load(std::memory_order_acquire) >= r &&
        t.head.load(std::memory_order_acquire) == t.committed_tail.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lk(reg_mu);
      if (t.state.load(std::memory_order_relaxed) == kRecDeparted) t.state.store(kRecFree, std::memory_order_release);
    }
  }
}

void DomainImpl::detector_main() {
  auto announced = Clk::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(cv_mu);
      const auto wait = barrier_clear() ? std::chrono::microseconds(cfg.detector_period_us)
                                        : std::chrono::microseconds(std::min(cfg.takeover_us, cfg.detector_period_us));
      // A request only wakes the detector once the previous round is processed everywhere:
      // waking on the request alone would spin here until the owners come by. A lagging owner
      // is helped after the shorter wait; an owner finishing a round with a request pending
      // wakes it (try_process).
      cv.wait_for(lk, wait, [&] { return stop || (gc_request.load(std::memory_order_acquire) && barrier_clear()); });
      if (stop) return;
    }
    help_lagging(!cfg.self_log_gc, announced);
    // Departed threads' logs are collected by rounds nobody else asks for.
    for (unsigned i = 0; i < nrecs; ++i)
      if (recs[i].state.load(std::memory_order_acquire) == kRecDeparted) gc_request.store(true, std::memory_order_relaxed);
    if (!gc_request.load(std::memory_order_acquire) || !barrier_clear()) continue;
    std::unique_lock<std::mutex> rl(round_mu);
    gc_request.store(false, std::memory_order_release);
    std::uint64_t t = 0;
    std::vector<std::uint64_t> snap;
    gp_begin(&t, &snap);
    // A section that does not end holds the grace period up; give up after wait_limit_ms
    // (so drain and shutdown are not held behind it) and try again later.
    const auto give_up = Clk::now() + std::chrono::milliseconds(cfg.wait_limit_ms);
    int spins = 0;
    bool complete = true;
    while (!gp_complete(snap)) {
      if (++spins < 64) {
        std::this_thread::yield();
        continue;
      }
      if (Clk::now() > give_up) {
        complete = false;
        break;
      }
      std::unique_lock<std::mutex> lk(cv_mu);
      cv.wait_for(lk, std::chrono::microseconds(50), [&] { return stop; });
      if (stop) return;
    }
    if (!complete) {
      gc_request.store(true, std::memory_order_release);
      rl.unlock();
      std::unique_lock<std::mutex> lk(cv_mu);
      cv.wait_for(lk, std::chrono::microseconds(cfg.detector_period_us), [&] { return stop; });
      continue;
    }
    announce(t);
    announced = Clk::now();
    // Config::self_log_gc off: this thread is the only collector.
    if (!cfg.self_log_gc) help_lagging(true, announced);
  }
}

// ---------------------------------------------------------------------------------------------
// Thread

Thread::Thread(Domain* d) : dom_(d), d_(d->impl_.get()) {
  copies_.reserve(16);
  allocs_.reserve(4);
}

Thread::~Thread() { unregister(); }

void Thread::unregister() {
  if (rec_ == nullptr) return;
  if (in_section_) abort();
  std::lock_guard<std::mutex> lk(d_->reg_mu);
  rec_->state.store(kRecDeparted, std::memory_order_release);
  rec_ = nullptr;
  d_->request();
}

void Thread::note_outside() noexcept {
  last_error_ = Status::InvalidArgument(rec_ == nullptr ? "mvrlu: thread is not registered"
                                                        : "mvrlu: deref outside a section");
}

void* Thread::master_of(const void* p) const noexcept {
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  if (p == nullptr || u - log_lo_ >= log_span_) return const_cast<void*>(p);
  return (static_cast<const CopyHdr*>(p) - 1)->master->data();
}

std::uint64_t Thread::wait_stamp(CopyHdr* v) noexcept {
  // v is chained but its writer is between chaining and its write-set timestamp store: a few
  // instructions, unless it was preempted there. Its timestamp decides what this section sees.
  for (unsigned spins = 0;; ++spins) {
    std::uint64_t ts = v->commit_ts.load(std::memory_order_acquire);
    if (ts != kInf) return ts;
    ts = v->ws->commit_ts.load(std::memory_order_acquire);
    if (ts != kInf) return ts;
    if (spins < 256) DUET_MVRLU_PAUSE();
    else std::this_thread::yield();
  }
}

void Thread::boundary() {
  ThreadRec& t = *rec_;
  DomainImpl& d = *d_;
  if (d.cfg.self_log_gc && t.gc_done.load(std::memory_order_acquire) < d.round.load(std::memory_order_acquire))
    (void)d.try_process(t, false);
  const std::uint64_t used = t.tail.load(std::memory_order_relaxed) - t.head.load(std::memory_order_acquire);
  if (d.cfg.capacity_trigger && used >= d.low_mark_bytes)
    d.request();
  const std::uint64_t n = deref_copy_ + deref_master_;
  if (n >= d.cfg.deref_window) {
    if (d.cfg.deref_trigger && static_cast<double>(deref_copy_) >= d.cfg.deref_watermark * static_cast<double>(n))
      d.request();
    deref_copy_ = deref_master_ = 0;
  }
}

Status Thread::read_lock() {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (in_section_) return Status::InvalidArgument("mvrlu: read_lock inside a section");
  DomainImpl& d = *d_;
  ThreadRec& t = *rec_;
  boundary();
  const std::uint64_t high = d.high_mark_bytes;
  auto used = [&] { return t.tail.load(std::memory_order_relaxed) - t.head.load(std::memory_order_acquire); };
  if (used() > high) {
    const auto deadline = Clk::now() + std::chrono::milliseconds(d.cfg.wait_limit_ms);
    while (used() > high) {
      d.request();
      if (d.cfg.self_log_gc && t.gc_done.load(std::memory_order_acquire) < d.round.load(std::memory_order_acquire))
        (void)d.try_process(t, false);
      if (used() <= high) break;
      if (Clk::now() > deadline) {
        log(LogLevel::kWarn, "mvrlu: thread " + std::to_string(slot_) +
                                 ": log above the high watermark and not collected within " +
                                 std::to_string(d.cfg.wait_limit_ms) + " ms (a section that does not end?)");
        return Status::ResourceExhausted("mvrlu: log full and not collected in time");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  // The entry must be visible to grace-period detection before the clock read and the
  // section's loads. Asymmetric: a plain store, and the detector's membarrier orders it
  // (gp_begin). Symmetric: the increment is a locked instruction, a full fence. Either way
  // the clock read needs no fence of its own.
  if (d.asymmetric_fence) {
    t.section_seq.store(t.section_seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    t.section_seq.fetch_add(1, std::memory_order_seq_cst);
  }
  in_section_ = true;
  local_ts_ = d.clock.now_unfenced(slot_);
  ws_ = nullptr;
  section_tail_ = t.tail.load(std::memory_order_relaxed);
  max_head_ts_ = 0;
  copies_.clear();
  allocs_.clear();
  return Status::Ok();
}

Status Thread::lock_raw(void** pp, bool is_const) {
  Status err;
  switch (lock_impl(pp, is_const, local_ts_, true, &err)) {
    case 0: return Status::Ok();
    case 1: return conflict("locked");
    case 2: return conflict("newer version");
    default: return err;
  }
}

int Thread::lock_impl(void** pp, bool is_const, std::uint64_t limit_ts, bool ordo_check, Status* err) {
  if (rec_ == nullptr) return *err = Status::InvalidArgument("mvrlu: thread is not registered"), 3;
  if (!in_section_) return *err = Status::InvalidArgument("mvrlu: try_lock outside a section"), 3;
  if (*pp == nullptr) return *err = Status::InvalidArgument("mvrlu: try_lock of null"), 3;
  DomainImpl& d = *d_;
  ThreadRec& t = *rec_;
  auto* m = static_cast<MasterHdr*>(master_of(*pp)) - 1;
  CopyHdr* pend = m->p_pending.load(std::memory_order_acquire);
  if (pend != nullptr) {
    if (reinterpret_cast<std::uintptr_t>(pend) - own_lo_ < own_span_ && pend->ws == ws_ && ws_ != nullptr &&
        pend->master == m) {
      if (!is_const) pend->flags &= ~kFlagConst;
      *pp = pend->data();
      return 0;
    }
    t.conflicts.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  // Log space: the write set's header first (once per section), then the copy; a pad entry
  // fills the end of the log when an entry would cross it.
  const std::size_t copy_bytes = kLine + round_line(m->size);
  std::uint64_t tail = t.tail.load(std::memory_order_relaxed);
  const std::uint64_t head = t.head.load(std::memory_order_acquire);
  auto place = [&](std::size_t bytes, std::uint64_t* at_off) -> bool {
    const std::uint64_t pos = tail % d.log_bytes;
    const std::uint64_t pad = pos + bytes > d.log_bytes ? d.log_bytes - pos : 0;
    if (tail + pad + bytes - head > d.log_bytes) return false;
    if (pad != 0) {
      auto* e = reinterpret_cast<EntryHdr*>(d.at(t, tail));
      e->kind = kEntryPad;
      e->bytes = static_cast<std::uint32_t>(pad);
      tail += pad;
    }
    *at_off = tail;
    tail += bytes;
    return true;
  };
  std::uint64_t ws_off = 0, c_off = 0;
  const bool new_ws = ws_ == nullptr;
  if ((new_ws && !place(kLine, &ws_off)) || !place(copy_bytes, &c_off))
    return *err = Status::ResourceExhausted("mvrlu: log full"), 3;
  if (new_ws) {
    auto* ws = reinterpret_cast<WsHdr*>(d.at(t, ws_off));
    ws->kind = kEntryWs;
    ws->bytes = kLine;
    ws->commit_ts.store(kInf, std::memory_order_relaxed);
    ws->span = 0;
    ws_ = ws;
    ws_off_ = ws_off;
  }
  auto* c = reinterpret_cast<CopyHdr*>(d.at(t, c_off));
  c->kind = kEntryCopy;
  c->bytes = static_cast<std::uint32_t>(copy_bytes);
  c->commit_ts.store(kInf, std::memory_order_relaxed);
  c->p_older.store(nullptr, std::memory_order_relaxed);
  c->newer_ts.store(kInf, std::memory_order_relaxed);
  c->master = m;
  c->ws = ws_;
  c->older_ts = 0;
  c->flags = is_const ? std::uint32_t{kFlagConst} : 0u;
  c->unlinked_round = 0;
  // On failure nothing was published: t.tail is only advanced on success; a write-set
  // header made by this call is forgotten with it.
  auto give_back = [&] {
    if (new_ws) ws_ = nullptr;
  };
  CopyHdr* expected = nullptr;
  if (!m->p_pending.compare_exchange_strong(expected, c, std::memory_order_acq_rel)) {
    give_back();
    t.conflicts.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  // Locked: only lock holders change p_copy, so the head is stable until we unlock.
  CopyHdr* h = m->p_copy.load(std::memory_order_acquire);
  const void* src = m->data();
  if (h != nullptr) {
    const std::uint64_t hts = h->commit_ts.load(std::memory_order_acquire);
    const std::uint64_t b = d.clock.boundary();
    if ((hts > limit_ts || (ordo_check && limit_ts - hts < b)) && !d.cfg.faults.skip_write_latest_check) {
      m->p_pending.store(nullptr, std::memory_order_release);
      give_back();
      t.conflicts.fetch_add(1, std::memory_order_relaxed);
      return 2;
    }
    max_head_ts_ = std::max(max_head_ts_, hts);
    src = h->data();
  }
  std::memcpy(c->data(), src, m->size);
  t.tail.store(tail, std::memory_order_relaxed);
  copies_.push_back(c);
  *pp = c->data();
  return 0;
}

Status Thread::alloc_raw(std::size_t bytes, void** out) {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (bytes + kLine > d_->log_bytes / 4)
    return Status::InvalidArgument("mvrlu: object of " + std::to_string(bytes) + " bytes is over a quarter of a log (" +
                                   std::to_string(d_->log_bytes) + " bytes)");
  void* p = ::operator new(kMasterHdrBytes + bytes, std::align_val_t(kLine), std::nothrow);
  if (p == nullptr) return Status::ResourceExhausted("mvrlu: out of memory");
  auto* m = new (p) MasterHdr{};
  m->p_copy.store(nullptr, std::memory_order_relaxed);
  m->p_pending.store(nullptr, std::memory_order_relaxed);
  m->size = static_cast<std::uint32_t>(bytes);
  m->magic = kMasterMagic;
  std::memset(m->data(), 0, bytes);
  rec_->master_alloc.fetch_add(kMasterHdrBytes + bytes, std::memory_order_relaxed);
  if (in_section_) allocs_.push_back(m);
  *out = m->data();
  return Status::Ok();
}

Status Thread::free_raw(void* p) {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (!in_section_) return Status::InvalidArgument("mvrlu: free outside a section");
  if (p == nullptr) return Status::InvalidArgument("mvrlu: free of null");
  auto* m = static_cast<MasterHdr*>(master_of(p)) - 1;
  CopyHdr* pend = m->p_pending.load(std::memory_order_acquire);
  if (pend == nullptr || reinterpret_cast<std::uintptr_t>(pend) - own_lo_ >= own_span_ || pend->ws != ws_ ||
      pend->master != m)
    return Status::InvalidArgument("mvrlu: free of an object this section has not locked");
  pend->flags = kFlagFree;
  return Status::Ok();
}

Status Thread::read_unlock() {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (!in_section_) return Status::InvalidArgument("mvrlu: read_unlock outside a section");
  DomainImpl& d = *d_;
  ThreadRec& t = *rec_;
  if (!copies_.empty()) {
    const Faults& f = d.cfg.faults;
    // 1. Chain every new version at the head of its master's chain (we hold each lock).
    for (CopyHdr* c : copies_) {
      if ((c->flags & kFlagConst) != 0) continue;
      MasterHdr* m = c->master;
      CopyHdr* h = m->p_copy.load(std::memory_order_relaxed);
      c->p_older.store(h, std::memory_order_relaxed);
      c->older_ts = h != nullptr ? h->commit_ts.load(std::memory_order_relaxed) : 0;
      m->p_copy.store(c, std::memory_order_release);
      if (f.early_stamping) c->commit_ts.store(d.clock.commit_ts(slot_), std::memory_order_release);
      if (f.commit_step_delay_us != 0) std::this_thread::sleep_for(std::chrono::microseconds(f.commit_step_delay_us));
    }
    // 2. The write set's timestamp: the linearization point. Clock::commit_ts begins with a
    //    full fence (or is a seq_cst RMW), so a reader that missed one of the pushes above
    //    took its local-ts before this timestamp and will not see the set.
    std::uint64_t ts;
    if (commit_ts_override_ != 0) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      ts = commit_ts_override_;
    } else {
      ts = d.clock.commit_ts(slot_);
    }
    ws_->span = t.tail.load(std::memory_order_relaxed) - ws_off_;
    ws_->commit_ts.store(ts, std::memory_order_seq_cst);
    // 3. Stamp the copies (saves readers the write-set lookup) and tell the versions below
    //    when they became obsolete (the GC rule), then unlock (freed objects stay locked).
    for (CopyHdr* c : copies_) {
      if ((c->flags & kFlagConst) == 0) {
        if (!f.early_stamping) c->commit_ts.store(ts, std::memory_order_release);
        if (CopyHdr* h = c->p_older.load(std::memory_order_relaxed); h != nullptr)
          h->newer_ts.store(c->commit_ts.load(std::memory_order_relaxed), std::memory_order_release);
      }
      // Config::rlu_sync keeps every lock until the copies are written back.
      if ((c->flags & kFlagFree) == 0 && (!d.cfg.rlu_sync || (c->flags & kFlagConst) != 0))
        c->master->p_pending.store(nullptr, std::memory_order_release);
    }
    // (rlu_sync publishes the log's committed tail after the write-back, so that no collector
    // reads the copies' unlinked_round while it is written.)
    if (!d.cfg.rlu_sync) t.committed_tail.store(t.tail.load(std::memory_order_relaxed), std::memory_order_release);
    t.commits.fetch_add(1, std::memory_order_relaxed);
    last_commit_ts_ = ts;
    // 4. Wait out the boundary: a section that starts after we return sees this write set.
    if (!f.skip_commit_wait && commit_ts_override_ == 0) d.clock.wait_past(slot_, ts);
    if (d.cfg.rlu_sync) {
      ws_ = nullptr;
      commit_ts_override_ = 0;
      in_section_ = false;
      t.section_seq.fetch_add(1, std::memory_order_seq_cst);
      rlu_writeback();
      copies_.clear();
      allocs_.clear();
      boundary();
      return Status::Ok();
    }
  }
  // A section that wrote checks the watermarks now (its log grew); a read-only one leaves
  // them to the next read_lock, which checks them anyway.
  const bool wrote = !copies_.empty();
  copies_.clear();
  allocs_.clear();
  ws_ = nullptr;
  commit_ts_override_ = 0;
  in_section_ = false;
  leave_section(t);
  if (wrote) boundary();
  return Status::Ok();
}

// Config::rlu_sync (RLU's commit). The section has ended and every lock of the write set is
// still held. 1. A grace period: every other section open now ends; a section that starts
// later started after the commit wait, so its local-ts >= ts and it reads the new copies (or,
// after step 2, the masters holding the same bytes). 2. Under the held lock, each newest copy's
// bytes go to its master and the chain head is unlinked (release: bytes before the null); a
// reader that loaded the copy before that still reads it, and the collector reclaims it once
// a grace period has begun after the unlink: rounds announced after round() is read below
// may have begun their detection before the unlink, the ones after those may not, hence
// round + 1 (copy_done reclaims when unlinked_round < r). Freed objects stay locked for the
// collector's rule 4. 3. Unlock, then publish the log's committed tail.
void Thread::rlu_writeback() {
  DomainImpl& d = *d_;
  ThreadRec& t = *rec_;
  rlu_snap_.resize(d.nrecs);
  for (unsigned i = 0; i < d.nrecs; ++i) rlu_snap_[i] = d.recs[i].section_seq.load(std::memory_order_seq_cst);
  bool passed = true;
  const auto deadline = Clk::now() + std::chrono::milliseconds(d.cfg.wait_limit_ms);
  for (unsigned i = 0; i < d.nrecs && passed; ++i) {
    if ((rlu_snap_[i] & 1) == 0) continue;
    for (std::uint32_t spins = 0; d.recs[i].section_seq.load(std::memory_order_acquire) == rlu_snap_[i]; ++spins) {
      DUET_MVRLU_PAUSE();
      if ((spins & 1023) == 1023) {
        if (Clk::now() > deadline) {
          passed = false;
          break;
        }
        std::this_thread::yield();
      }
    }
  }
  if (!passed)
    log(LogLevel::kWarn, "mvrlu: thread " + std::to_string(slot_) + ": rlu_sync grace period not over within " +
                             std::to_string(d.cfg.wait_limit_ms) + " ms; copies left to the collector");
  // Beyond the committed tail no collector looks at these copies, so a placeholder round
  // marks the unlinked ones until the round is known.
  constexpr std::uint32_t kUnlinkedNow = ~std::uint32_t{0};
  for (CopyHdr* c : copies_) {
    if ((c->flags & (kFlagConst | kFlagFree)) != 0) continue;
    MasterHdr* m = c->master;
    if (passed && m->p_copy.load(std::memory_order_relaxed) == c) {
      std::memcpy(m->data(), c->data(), m->size);
      m->p_copy.store(nullptr, std::memory_order_seq_cst);
      c->unlinked_round = kUnlinkedNow;
      t.writebacks.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const std::uint64_t r = d.round.load(std::memory_order_seq_cst);
  for (CopyHdr* c : copies_) {
    if ((c->flags & (kFlagConst | kFlagFree)) != 0) continue;
    if (c->unlinked_round == kUnlinkedNow) c->unlinked_round = static_cast<std::uint32_t>(r + 1);
    c->master->p_pending.store(nullptr, std::memory_order_release);
  }
  t.committed_tail.store(t.tail.load(std::memory_order_relaxed), std::memory_order_release);
}

void Thread::abort() {
  if (rec_ == nullptr || !in_section_) return;
  ThreadRec& t = *rec_;
  for (CopyHdr* c : copies_) c->master->p_pending.store(nullptr, std::memory_order_release);
  t.tail.store(section_tail_, std::memory_order_relaxed);
  for (MasterHdr* m : allocs_) d_->dealloc_master(t, m);
  copies_.clear();
  allocs_.clear();
  ws_ = nullptr;
  in_section_ = false;
  t.aborts.fetch_add(1, std::memory_order_relaxed);
  leave_section(t);
  boundary();
}

Status Thread::collect() {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (in_section_) return Status::InvalidArgument("mvrlu: collect inside a section");
  (void)d_->try_process(*rec_, false);
  return Status::Ok();
}

Status Thread::backoff(std::uint32_t attempt) {
  if (attempt + 1 >= d_->cfg.max_retries)
    return Status::ResourceExhausted("mvrlu: section still conflicting after " + std::to_string(attempt + 1) + " attempts");
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const std::uint64_t cap = std::uint64_t{32} << std::min<std::uint32_t>(attempt, 10);
  const std::uint64_t n = rng_ % cap;
  for (std::uint64_t i = 0; i < n; ++i) DUET_MVRLU_PAUSE();
  if (attempt >= 3) std::this_thread::yield();
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Version store

Status Domain::register_snapshot(std::uint64_t* ts, unsigned* id) {
  if (ts == nullptr || id == nullptr) return Status::InvalidArgument("mvrlu: null output");
  DomainImpl& m = *impl_;
  for (unsigned i = 0; i < DomainImpl::kSnapshotSlots; ++i) {
    std::uint64_t expected = 0;
    // Intent first, then the clock (fenced): a detection that missed the intent read its
    // clock before ours, so its gp-ts <= our ts; one that saw it waits for the ts.
    if (!m.snapshots[i].compare_exchange_strong(expected, DomainImpl::kSnapshotPending, std::memory_order_seq_cst))
      continue;
    const std::uint64_t now = std::max<std::uint64_t>(m.clock.now(Clock::kDetectorSlot), 1);
    m.snapshots[i].store(now, std::memory_order_seq_cst);
    *ts = now;
    *id = i;
    return Status::Ok();
  }
  return Status::ResourceExhausted("mvrlu: all " + std::to_string(DomainImpl::kSnapshotSlots) +
                                   " snapshot slots are held");
}

void Domain::release_snapshot(unsigned id) {
  if (id >= DomainImpl::kSnapshotSlots) return;
  std::uint64_t v = impl_->snapshots[id].load(std::memory_order_acquire);
  if (v != 0 && v != DomainImpl::kSnapshotPending)
    impl_->snapshots[id].compare_exchange_strong(v, 0, std::memory_order_release);
}

std::uint64_t Domain::now_ts() { return impl_->clock.now(Clock::kDetectorSlot); }

const void* Thread::version_at(void* p, std::uint64_t ts) noexcept {
  auto* m = static_cast<MasterHdr*>(p) - 1;
  if (in_section_) {
    CopyHdr* pend = m->p_pending.load(std::memory_order_acquire);
    if (pend != nullptr && reinterpret_cast<std::uintptr_t>(pend) - own_lo_ < own_span_ && pend->ws == ws_ &&
        pend->master == m)
      return pend->data();
  }
  for (CopyHdr* v = m->p_copy.load(std::memory_order_acquire); v != nullptr;
       v = v->p_older.load(std::memory_order_acquire)) {
    std::uint64_t vts = v->commit_ts.load(std::memory_order_acquire);
    if (vts == kInf) vts = wait_stamp(v);
    if (vts <= ts) return v->data();
  }
  return p;
}

Status Thread::read_at(const Record* const* recs, std::size_t n, std::uint64_t ts, Record* out) {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (recs == nullptr || out == nullptr) return Status::InvalidArgument("mvrlu: read_at of null");
  for (std::size_t i = 0; i < n; ++i)
    if (recs[i] == nullptr) return Status::InvalidArgument("mvrlu: read_at of null");
  const bool guard = !in_section_;
  // Outside a section the walk is protected like a section: a grace period waits for it.
  if (guard) rec_->section_seq.fetch_add(1, std::memory_order_seq_cst);
  for (std::size_t i = 0; i < n; ++i) {
    void* p = master_of(recs[i]);
    std::memcpy(&out[i], version_at(p, ts), sizeof(Record));
  }
  if (guard) leave_section(*rec_);
  return Status::Ok();
}

Status Thread::read_at(const Record* rec, std::uint64_t ts, Record* out) { return read_at(&rec, 1, ts, out); }

CommitLock Thread::lock_for_commit(Record*& rec, std::uint64_t start_ts) {
  void* p = rec;
  Status err;
  switch (lock_impl(&p, false, start_ts, false, &err)) {
    case 0:
      rec = static_cast<Record*>(p);
      return CommitLock::kLocked;
    case 1: return CommitLock::kBusy;
    case 2: return CommitLock::kConflict;
    default:
      last_error_ = err;
      return CommitLock::kError;
  }
}

Status Thread::commit_at(std::uint64_t ts) {
  if (rec_ == nullptr) return Status::InvalidArgument("mvrlu: thread is not registered");
  if (!in_section_) return Status::InvalidArgument("mvrlu: commit_at outside a section");
  if (ts == 0) return read_unlock();
  if (ts == kInf || ts <= max_head_ts_)
    return Status::InvalidArgument("mvrlu: commit_at ts " + std::to_string(ts) + " is not above the versions locked (" +
                                   std::to_string(max_head_ts_) + ")");
  commit_ts_override_ = ts;
  return read_unlock();
}

}  // namespace duet::mvrlu

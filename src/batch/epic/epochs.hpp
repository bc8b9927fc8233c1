// Epic's submission front end: transactions are submitted one at a time from any number of
// threads, gathered into epochs, and each gets a future resolved when its epoch has run.
//
// An epoch closes when `epoch_size` txns are queued, when its oldest txn has waited
// `epoch_max_wait`, or on flush(). Each submitting thread has its own queue (no lock shared
// between submitters); an epoch takes the queues in the order their threads first submitted, each
// queue's txns in submission order: the serial order is (thread, counter). Results equal serial
// execution of the epochs' txns in that order (the engine's guarantee), so with one submitting
// thread, or with flush() between the phases of several, results are those of serial execution
// in submission order, deterministically. Txns whose declared keys were wrong run again in the
// next epoch (first, in their old order); their futures resolve when they finally run, or with
// an error after `max_attempts` tries.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "batch/epic/engine.hpp"
#include "batch/epic/pool.hpp"
#include "duet/batch.hpp"

namespace duet::batch::epic {

/// When an epoch closes (whichever comes first), and how often a txn may run again.
struct EpochsConfig {
  std::size_t epoch_size = 100000;  ///< txns queued (1 .. kMaxTxns / 2; clamped)
  std::chrono::microseconds epoch_max_wait{1000};  ///< the oldest queued txn's wait
  /// Tries of a txn whose procedure asks to rerun (its declared keys were wrong); past them it
  /// gets InvalidArgument (1 .. 1000; clamped).
  std::uint32_t max_attempts = 8;
};

/// The result of one submitted txn: the public type (include/duet/batch.hpp) says what each
/// field means.
using TxnResult = EpicTxnResult;
static_assert(kMaxOut == sizeof(TxnResult::out) / sizeof(TxnResult::out[0]));

/// One piece of a txn submitted in pieces (Epochs::submit_pieces): a procedure call of its own.
struct PieceSpec {
  std::uint32_t proc = 0;
  std::vector<Key> reads, writes;
  std::vector<std::uint32_t> args;
};
/// The most pieces of one txn (the public limit).
inline constexpr std::size_t kMaxPieces = ::duet::kEpicMaxPieces;

/// Counters of an Epochs front end.
struct EpochsStats {
  std::uint64_t epochs = 0, txns = 0, refused = 0, failed_epochs = 0;
  std::uint64_t closed_by_size = 0, closed_by_wait = 0, closed_by_flush = 0, rerun_epochs = 0;
  /// The epoch thread's time, in ms, over every epoch: taking the queued txns into the epoch
  /// (take), the engine's run_epoch, and handing each txn its result (resolve).
  double take_ms = 0, engine_ms = 0, resolve_ms = 0;
};

/// The front end over an Engine<Procs>, which it drives from its own epoch thread (the engine
/// must not be used otherwise while this object lives; with_engine_idle lends it out between
/// epochs). Thread-safe: submit, flush and stats may be called from any thread.
template <class Procs>
class Epochs {
 public:
  Epochs(Engine<Procs>& engine, EpochsConfig cfg) : engine_(engine), cfg_(cfg) {
    cfg_.epoch_size = std::clamp<std::size_t>(cfg_.epoch_size, 1, kMaxTxns / 2);
    cfg_.max_attempts = std::clamp<std::uint32_t>(cfg_.max_attempts, 1, 1000);
    engine_.set_max_attempts(cfg_.max_attempts);
    thread_ = std::thread([this] { epoch_loop(); });
  }
  /// Runs what is queued (flush), then stops the epoch thread.
  ~Epochs() {
    flush();
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Epochs(const Epochs&) = delete;
  Epochs& operator=(const Epochs&) = delete;

  /// Queues one txn: procedure `proc` with its declared read and write keys and its args. The
  /// future is ready at once, with a status that is not ok and nothing queued, for an unknown
  /// procedure, keys or args of counts the procedure does not take (Procs::shape_error), an
  /// unknown table, a direct key out of range, more than kMaxOps keys or
  /// kMaxWrites writes, a write key declared twice (InvalidArgument), or after the engine failed
  /// for good (Internal); otherwise when the txn's epoch has run. *accepted, when given, says
  /// whether it was queued. Cost: a copy of the keys and args into this thread's queue under its
  /// own lock, and the future's shared state.
  std::future<TxnResult> submit(std::uint32_t proc, std::span<const Key> reads, std::span<const Key> writes,
                                std::span<const std::uint32_t> args, bool* accepted = nullptr) {
    Waiter w;
    std::future<TxnResult> f = w.promise.emplace().get_future();
    const bool ok = enqueue(proc, reads, writes, args, std::move(w));
    if (accepted) *accepted = ok;
    return f;
  }
  std::future<TxnResult> submit(std::uint32_t proc, const std::vector<Key>& reads, const std::vector<Key>& writes,
                                const std::vector<std::uint32_t>& args, bool* accepted = nullptr) {
    return submit(proc, std::span<const Key>(reads), std::span<const Key>(writes), std::span<const std::uint32_t>(args),
                  accepted);
  }

  /// As submit, but `done` gets the result: on the epoch thread once the txn's epoch has run, or
  /// on the calling thread, before this returns, when the txn is refused. `done` must not block
  /// (the rest of the epoch's results wait for it) and must not call back into this front end.
  bool submit(std::uint32_t proc, std::span<const Key> reads, std::span<const Key> writes,
              std::span<const std::uint32_t> args, std::function<void(TxnResult&&)> done) {
    Waiter w;
    w.callback = std::move(done);
    return enqueue(proc, reads, writes, args, std::move(w));
  }
  bool submit(std::uint32_t proc, const std::vector<Key>& reads, const std::vector<Key>& writes,
              const std::vector<std::uint32_t>& args, std::function<void(TxnResult&&)> done) {
    return submit(proc, std::span<const Key>(reads), std::span<const Key>(writes), std::span<const std::uint32_t>(args),
                  std::move(done));
  }

  /// Queues one txn in pieces (Batch::add_piece says when that equals the whole txn; the front
  /// end does not check it): each piece is a txn of its own at consecutive serial positions,
  /// planned and executed apart, and all of them go into one epoch. `done` gets one result when
  /// every piece has run (reruns included): the first piece's status that is not ok, if any (with
  /// nothing else set; the pieces that ran stay applied), else the outcome and output words of the
  /// first piece that did not commit, else kCommitted with each output word the sum of the
  /// pieces' words (mod 2^32); the first piece's epoch and position and the most attempts of any
  /// piece. Refused whole, nothing queued, for no pieces or more than kMaxPieces, or when any
  /// piece would be refused by submit (the message names it).
  /// Views of the pieces (EpicPiece's spans), read before this returns: nothing is copied but
  /// into the queue.
  bool submit_piece_views(std::span<const EpicPiece> pieces, std::function<void(TxnResult&&)> done) {
    Waiter w;
    w.callback = std::move(done);
    return enqueue_pieces(pieces, std::move(w));
  }
  std::future<TxnResult> submit_piece_views(std::span<const EpicPiece> pieces, bool* accepted = nullptr) {
    Waiter w;
    std::future<TxnResult> f = w.promise.emplace().get_future();
    const bool ok = enqueue_pieces(pieces, std::move(w));
    if (accepted) *accepted = ok;
    return f;
  }
  bool submit_pieces(const std::vector<PieceSpec>& pieces, std::function<void(TxnResult&&)> done) {
    return submit_piece_views(views(pieces), std::move(done));
  }
  std::future<TxnResult> submit_pieces(const std::vector<PieceSpec>& pieces, bool* accepted = nullptr) {
    return submit_piece_views(views(pieces), accepted);
  }
  /// EpicPiece views of owned pieces (valid while `pieces` lives).
  static std::vector<EpicPiece> views(const std::vector<PieceSpec>& pieces) {
    std::vector<EpicPiece> v(pieces.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) v[i] = {pieces[i].proc, pieces[i].reads, pieces[i].writes, pieces[i].args};
    return v;
  }

  /// Closes the open epoch now and returns once every txn whose submit() returned before this
  /// call has its result (reruns included: it runs further epochs while any is pending).
  void flush() {
    std::mutex dm;
    std::condition_variable dcv;
    bool done = false;
    flush([&] {
      std::lock_guard<std::mutex> lk(dm);
      done = true;
      dcv.notify_all();
    });
    std::unique_lock<std::mutex> lk(dm);
    dcv.wait(lk, [&] { return done; });
  }

  /// As flush(), without waiting: `done` runs on the epoch thread once every txn submitted
  /// before this call has its result (on this thread if the front end has stopped). It must not
  /// block nor call back into this front end.
  void flush(std::function<void()> done) {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!stopped_) {
        flushes_.push_back(FlushWaiter{seq_.load(std::memory_order_acquire), std::move(done)});
        cv_.notify_all();
        return;
      }
    }
    done();
  }

  /// Calls f() while no epoch runs: the engine and its database are as of the last epoch that
  /// completed (reads, or a bulk load before the first epoch). Waits for a running epoch; blocks
  /// epochs while f runs.
  template <class F>
  void with_engine_idle(F f) {
    std::lock_guard<std::mutex> lk(run_m_);
    f();
  }

  /// As with_engine_idle, without waiting: f runs now on this thread when no epoch runs, else
  /// on the epoch thread as soon as the running epoch has ended (before the next one starts).
  /// It must not block nor call back into this front end.
  void when_idle(std::function<void()> f) {
    {
      std::unique_lock<std::mutex> run_lk(run_m_, std::try_to_lock);
      if (run_lk.owns_lock()) {
        f();
        return;
      }
    }
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!stopped_) {
        idle_tasks_.push_back(std::move(f));
        cv_.notify_all();
        return;
      }
    }
    with_engine_idle(f);
  }

  EpochsStats stats() const {
    std::lock_guard<std::mutex> lk(m_);
    EpochsStats s = stats_;
    s.refused = refused_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  struct PieceGroup;
  /// Who gets an entry's result: its promise, or its callback when it has one, or, for a piece,
  /// its txn's group, which resolves the txn's own waiter when its last piece has a result. The
  /// promise is made only where a future was asked for (each one is a heap allocation).
  struct Waiter {
    std::optional<std::promise<TxnResult>> promise;
    std::function<void(TxnResult&&)> callback;
    std::shared_ptr<PieceGroup> group;
    std::uint32_t piece = 0;  ///< this entry's index among its group's pieces
    /// A whole txn's future (no callback, no piece group): its resolve touches nothing shared.
    bool future_only() const { return promise.has_value() && !callback && !group; }
    // A callback that throws would end the epoch thread, and the process with it: the exception
    // is reported on stderr and dropped, and the epoch's other results are still delivered.
    void resolve(TxnResult&& r) {
      if (group) return PieceGroup::arrive(std::move(group), piece, std::move(r));
      if (!callback) {
        if (promise) promise->set_value(std::move(r));
        return;
      }
      try {
        callback(std::move(r));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "duet: an Epic result callback threw (dropped): %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "duet: an Epic result callback threw (dropped)\n");
      }
    }
  };

  /// The pieces of one txn: their results as they come (on the epoch thread, or all at once on
  /// the submitting thread when refused), folded into `whole` when the last arrives.
  struct PieceGroup {
    Waiter whole;
    std::vector<TxnResult> parts;
    std::size_t left = 0;
    static void arrive(std::shared_ptr<PieceGroup> g, std::uint32_t i, TxnResult&& r) {
      g->parts[i] = std::move(r);
      if (--g->left == 0) g->whole.resolve(fold(g->parts));
    }
    static TxnResult fold(const std::vector<TxnResult>& parts) {
      TxnResult r;
      std::uint32_t attempts = 0;
      for (const TxnResult& p : parts) attempts = std::max(attempts, p.attempts);
      for (const TxnResult& p : parts)
        if (!p.status.ok()) {
          r.status = p.status;
          r.attempts = attempts;
          return r;
        }
      r.outcome = EpicOutcome::kCommitted;
      for (const TxnResult& p : parts)  // committed: each word summed over the pieces
        for (std::uint32_t k = 0; k < kMaxOut; ++k) r.out[k] += p.out[k];
      for (const TxnResult& p : parts)
        if (p.outcome != EpicOutcome::kCommitted) {  // else the first piece that did not commit
          r.outcome = p.outcome;
          std::copy(std::begin(p.out), std::end(p.out), std::begin(r.out));
          break;
        }
      r.epoch = parts.front().epoch;
      r.position = parts.front().position;
      r.attempts = attempts;
      return r;
    }
  };

  struct Queue {
    std::mutex m;
    Batch txns;
    std::vector<Waiter> waiters;
    std::vector<std::uint64_t> seqs;  ///< submission numbers (for flush)
  };

  /// A flush waiting for every txn numbered below `below` to have its result.
  struct FlushWaiter {
    std::uint64_t below;
    std::function<void()> done;
  };

  /// Appends one entry to q (a later piece of the txn added last when `piece`), checked in place
  /// at the queue's end (one copy of keys and args): not ok, nothing appended, when refused.
  /// Caller holds q.m.
  Status append(Queue& q, std::uint32_t proc, std::span<const Key> reads, std::span<const Key> writes,
                std::span<const std::uint32_t> args, bool piece) {
    if (!(piece ? q.txns.add_piece(proc, reads, writes, args) : q.txns.add(proc, reads, writes, args)))
      return Status::InvalidArgument("more than " + std::to_string(kMaxOps) + " keys or " + std::to_string(kMaxWrites) +
                                     " writes, a write key declared twice, or this thread has 2^20 txns queued");
    // The procedure, its call's shape, tables and key ranges: one check, the engine's.
    if (std::string err = engine_.check_txn(q.txns, q.txns.size() - 1); !err.empty()) {
      q.txns.pop_back();
      return Status::InvalidArgument(std::move(err));
    }
    if (failed_.load(std::memory_order_acquire)) {
      q.txns.pop_back();
      // failure_ was written once, before failed_ was released; m_ is not taken here (the epoch
      // loop takes the queues' locks under it).
      return Status::Internal("the engine failed and must be reloaded: " + failure_);
    }
    return Status::Ok();
  }

  /// Gives the entry appended last its waiter and submission number. Numbered (and
  /// then counted in queued_) under the queue's lock: each queue's numbers rise from front to
  /// back, and take() never takes an entry queued_ does not count yet. Caller holds q.m.
  void number_entry(Queue& q, Waiter&& w) {
    q.waiters.push_back(std::move(w));
    q.seqs.push_back(seq_.fetch_add(1, std::memory_order_acq_rel));
  }

  /// After `n` entries were queued on top of `before`: wakes the epoch thread when the epoch
  /// opens (its wait clock starts) or fills.
  void wake(std::size_t before, std::size_t n) {
    if (before == 0 || (before < cfg_.epoch_size && before + n >= cfg_.epoch_size)) {
      std::lock_guard<std::mutex> lk(m_);
      if (before == 0 && !open_known_) open_since_ = std::chrono::steady_clock::now(), open_known_ = true;
      cv_.notify_all();
    }
  }

  bool refuse(Waiter&& w, Status why) {  // resolved outside every lock
    refused_.fetch_add(1, std::memory_order_relaxed);
    w.resolve(error_result(std::move(why)));
    return false;
  }

  bool enqueue(std::uint32_t proc, std::span<const Key> reads, std::span<const Key> writes,
               std::span<const std::uint32_t> args, Waiter&& w) {
    const EpicPiece whole{proc, reads, writes, args};
    return enqueue_entries(std::span<const EpicPiece>(&whole, 1), false, std::move(w));
  }

  bool enqueue_pieces(std::span<const EpicPiece> pieces, Waiter&& w) {
    if (pieces.empty() || pieces.size() > kMaxPieces)
      return refuse(std::move(w), Status::InvalidArgument("a txn in pieces has 1 to " + std::to_string(kMaxPieces) +
                                                          " pieces, not " + std::to_string(pieces.size())));
    return enqueue_entries(pieces, true, std::move(w));
  }

  /// Queues one txn: `entries` (its pieces when `in_pieces`, refusals then naming the piece) all
  /// or none, under this thread's queue lock. One entry gets `w` itself; several share a group
  /// that resolves `w` once all have results.
  bool enqueue_entries(std::span<const EpicPiece> entries, bool in_pieces, Waiter&& w) {
    std::size_t before = 0;
    Status refusal;
    {
      Queue& q = my_queue();
      std::lock_guard<std::mutex> lk(q.m);
      std::size_t added = 0;
      for (; added < entries.size(); ++added) {
        const EpicPiece& p = entries[added];
        refusal = append(q, p.proc, p.reads, p.writes, p.args, added > 0);
        if (!refusal.ok()) {
          if (in_pieces) refusal = Status(refusal.code(), "piece " + std::to_string(added) + ": " + refusal.message());
          break;
        }
      }
      if (!refusal.ok()) {
        for (; added > 0; --added) q.txns.pop_back();
      } else if (entries.size() == 1) {
        number_entry(q, std::move(w));
      } else {
        auto g = std::make_shared<PieceGroup>();
        g->whole = std::move(w);
        g->parts.resize(entries.size());
        g->left = entries.size();
        for (std::size_t i = 0; i < entries.size(); ++i) {
          Waiter piece;
          piece.group = g;
          piece.piece = static_cast<std::uint32_t>(i);
          number_entry(q, std::move(piece));
        }
      }
      if (refusal.ok()) before = queued_.fetch_add(entries.size(), std::memory_order_acq_rel);
    }
    if (!refusal.ok()) return refuse(std::move(w), std::move(refusal));
    wake(before, entries.size());
    return true;
  }

  /// This thread's queue, registered on its first submission (registration order is the
  /// thread order of the serial order). A thread keeps one entry per live front end it submitted
  /// to: entries of front ends since destroyed are dropped when it registers with a new one.
  using QueueList = std::vector<std::pair<std::uint64_t, std::weak_ptr<Queue>>>;  // (front end id, queue)
  static QueueList& my_queues() {
    thread_local QueueList mine;
    return mine;
  }
  Queue& my_queue() {
    QueueList& mine = my_queues();
    for (const auto& [id, q] : mine)
      if (id == id_)
        if (std::shared_ptr<Queue> live = q.lock()) return *live;  // queues_ holds it while this lives
    std::erase_if(mine, [](const auto& e) { return e.second.expired(); });
    std::lock_guard<std::mutex> lk(queues_m_);
    queues_.push_back(std::make_shared<Queue>());
    mine.emplace_back(id_, queues_.back());
    return *queues_.back();
  }

 public:
  /// Each queue's share of an epoch of `limit` entries when the queues hold `size`: all of it
  /// when everything fits, else equal shares, a queue holding less than its share taking what it
  /// holds and leaving the rest to the others (the remainder of the division to the first
  /// queues). So one busy submitter cannot keep the others' txns out of every epoch.
  static std::vector<std::size_t> fair_shares(const std::vector<std::size_t>& size, std::size_t limit) {
    std::size_t total = 0;
    for (std::size_t s : size) total += s;
    if (total <= limit) return size;
    std::vector<std::size_t> order(size.size()), share(size.size(), 0);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return size[a] < size[b]; });
    std::size_t left = limit, k = size.size(), i = 0;
    for (; i < order.size() && size[order[i]] * k <= left; ++i, --k) left -= share[order[i]] = size[order[i]];
    std::vector<std::size_t> rest(order.begin() + static_cast<std::ptrdiff_t>(i), order.end());
    std::sort(rest.begin(), rest.end());  // the remainder goes to the first queues
    for (std::size_t j = 0; j < rest.size(); ++j) share[rest[j]] = left / k + (j < left % k ? 1 : 0);
    return share;
  }

  /// Entries in this thread's list of queues (one per live front end it submitted to); for tests.
  static std::size_t queues_of_this_thread_for_tests() { return my_queues().size(); }

 private:
  /// Epochs with at least this many results resolve their futures on the engine's threads.
  static constexpr std::size_t kParallelResolveMin = 4096;

  /// Moves queued txns into batch_ and waiters_, queue by queue, each queue's share of the epoch
  /// (fair_shares of at most epoch_size entries, and no more than the engine's pending reruns
  /// leave room for) from its front. A txn's pieces stay together: a share that would cut a txn
  /// stops before it, and a queue whose first txn is longer than its share gives it whole when
  /// the epoch has room for it, or when the epoch would otherwise be empty.
  void take() {
    batch_.clear();
    waiters_.clear();
    seqs_.clear();
    const std::size_t room = kMaxTxns - std::min<std::size_t>(kMaxTxns, engine_.pending_reruns());
    const std::size_t limit = std::min(cfg_.epoch_size, room);
    std::vector<Queue*> qs;
    {
      std::lock_guard<std::mutex> lk(queues_m_);
      for (auto& q : queues_) qs.push_back(q.get());
    }
    std::vector<std::size_t> size(qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) {
      std::lock_guard<std::mutex> lk(qs[i]->m);
      size[i] = qs[i]->txns.size();
    }
    const std::vector<std::size_t> share = fair_shares(size, limit);
    // One queue filling the epoch alone swaps its arrays with batch_'s; with several, each is
    // copied in, so batch_ keeps one set of arrays of an epoch's size (swapping one queue's in
    // and then appending the others would grow a different set each epoch: fresh pages each time).
    const bool alone = std::count_if(share.begin(), share.end(), [](std::size_t x) { return x > 0; }) <= 1;
    for (std::size_t i = 0; i < qs.size(); ++i) {
      Queue* q = qs[i];
      std::lock_guard<std::mutex> lk(q->m);
      const std::size_t free = limit > batch_.size() ? limit - batch_.size() : 0;
      std::size_t n = std::min({q->txns.size(), share[i], free});
      const auto later_piece = [&](std::size_t t) { return t < q->txns.piece.size() && q->txns.piece[t] != 0; };
      while (n > 0 && n < q->txns.size() && later_piece(n)) --n;
      if (n == 0 && !q->txns.proc.empty()) {  // its first txn is longer than its share
        std::size_t whole = 1;
        while (whole < q->txns.size() && later_piece(whole)) ++whole;
        if (whole <= free || batch_.size() == 0) n = whole;
      }
      if (n == 0) continue;
      if (alone && n == q->txns.size() && batch_.size() == 0) {
        std::swap(batch_, q->txns);
        q->txns.clear();
      } else {
        batch_.append_first(q->txns, n, 0);
        if (n == q->txns.size()) {
          q->txns.clear();  // keeps its capacity: a queue refilled every epoch allocates once
        } else {
          Batch rest;
          for (std::size_t t = n; t < q->txns.size(); ++t) rest.add_from(q->txns, t, 0);
          q->txns = std::move(rest);
        }
      }
      for (std::size_t t = 0; t < n; ++t) waiters_.push_back(std::move(q->waiters[t]));
      q->waiters.erase(q->waiters.begin(), q->waiters.begin() + static_cast<std::ptrdiff_t>(n));
      seqs_.insert(seqs_.end(), q->seqs.begin(), q->seqs.begin() + static_cast<std::ptrdiff_t>(n));
      q->seqs.erase(q->seqs.begin(), q->seqs.begin() + static_cast<std::ptrdiff_t>(n));
    }
    // Tags: unique over the front end's life (reruns are found by them).
    for (std::size_t t = 0; t < batch_.size(); ++t) batch_.tag[t] = next_tag_++;
    queued_.fetch_sub(batch_.size(), std::memory_order_acq_rel);
  }

  /// Runs batch_ (and the engine's pending reruns) as one epoch and resolves what finished,
  /// outside m_ (callbacks may take other locks and make system calls). A failed epoch fails all
  /// its txns, pending reruns included (nothing of it was applied).
  void run() {
    std::vector<std::pair<Waiter, TxnResult>>& ready = ready_;
    ready.clear();
    if (failed_.load(std::memory_order_acquire)) {  // queued before the failure: refused now
      for (auto& w : waiters_) w.resolve(error_result(Status::Internal("the engine failed and must be reloaded: " + failure_)));
      return;
    }
    EpochOutput& out = out_;
    out.stats = EpochStats{};
    std::string err;
    const std::uint32_t eid = engine_.db().eid();
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = engine_.run_epoch(batch_, &out, &err);
    const auto t1 = std::chrono::steady_clock::now();
    if (!ok) {
      // An indexed table out of records is a full table; anything else is the engine's failure.
      const std::string msg = "epoch " + std::to_string(eid) + " failed, nothing of it applied: " + err;
      const Status why = err.find(" is full") != std::string::npos ? Status::ResourceExhausted(msg) : Status::Internal(msg);
      engine_.clear_reruns();
      {
        std::lock_guard<std::mutex> lk(m_);
        ++stats_.epochs;
        ++stats_.failed_epochs;
        if (engine_.damaged()) {
          failure_ = err;
          failed_.store(true, std::memory_order_release);
        }
      }
      for (auto& w : waiters_) w.resolve(error_result(why));
      for (auto& [tag, r] : reruns_) r.waiter.resolve(error_result(why));
      reruns_.clear();
      return;
    }
    const std::size_t reruns = out.tag.size() - batch_.size();
    ready.reserve(out.tag.size());
    for (std::size_t j = 0; j < out.tag.size(); ++j) {
      Waiter w;
      std::uint64_t seq;
      if (j < reruns) {
        auto it = reruns_.find(out.tag[j]);
        if (it == reruns_.end()) continue;  // cannot be: the engine reruns only txns given to it
        w = std::move(it->second.waiter);
        seq = it->second.seq;
        reruns_.erase(it);
      } else {
        w = std::move(waiters_[j - reruns]);
        seq = seqs_[j - reruns];
      }
      const std::uint32_t o = out.results.outcome[j];
      const std::uint32_t attempts = out.attempt[j] + 1;
      if (o == kRerun && attempts < cfg_.max_attempts) {  // the engine runs it again next epoch
        reruns_.emplace(out.tag[j], Rerun{std::move(w), seq});
        continue;
      }
      TxnResult r;
      if (o == kRerun) {  // the engine dropped it (Engine::set_max_attempts)
        r.status = Status::InvalidArgument("its procedure asked to rerun " + std::to_string(attempts) +
                                           " times: the declared keys are wrong");
      } else {
        r.outcome = static_cast<EpicOutcome>(o);
        for (std::uint32_t k = 0; k < kMaxOut; ++k) r.out[k] = out.results.out[j * kMaxOut + k];
        r.epoch = eid;
        r.position = static_cast<std::uint32_t>(j);
      }
      r.attempts = attempts;
      ready.emplace_back(std::move(w), std::move(r));
    }
    {  // counted before any result is handed out: a caller holding its result sees its epoch
      std::lock_guard<std::mutex> lk(m_);
      ++stats_.epochs;
      stats_.txns += out.tag.size();
      stats_.engine_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    }
    // Futures get their results on the engine's threads, a share each: a set_value may wake a
    // thread waiting on it (a system call), 100K of them an epoch. Callbacks and pieces get theirs
    // here, in the epoch's order, as documented.
    const int threads = std::max(1, engine_.threads());
    const std::size_t parts = threads > 1 && ready.size() >= kParallelResolveMin ? 4 * static_cast<std::size_t>(threads) : 1;
    thread_pool(threads - 1).run(parts, [&](std::size_t p) {
      for (std::size_t i = ready.size() * p / parts; i < ready.size() * (p + 1) / parts; ++i)
        if (ready[i].first.future_only()) ready[i].first.resolve(std::move(ready[i].second));
    });
    for (auto& [w, r] : ready)
      if (!w.future_only()) w.resolve(std::move(r));
    std::lock_guard<std::mutex> lk(m_);
    stats_.resolve_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  }

  static TxnResult error_result(Status why) {
    TxnResult r;
    r.status = std::move(why);
    return r;
  }

  /// The lowest submission number without a result (queued or waiting to rerun); UINT64_MAX
  /// when none. Caller holds m_ (reruns_ belongs to this thread; the queues lock themselves).
  std::uint64_t lowest_pending() {
    std::uint64_t low = UINT64_MAX;
    for (const auto& [tag, r] : reruns_) low = std::min(low, r.seq);
    std::lock_guard<std::mutex> lk(queues_m_);
    for (auto& q : queues_) {
      std::lock_guard<std::mutex> ql(q->m);
      if (!q->seqs.empty()) low = std::min(low, q->seqs.front());
    }
    return low;
  }

  void epoch_loop() {
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      if (!idle_tasks_.empty()) {  // when_idle's tasks, between epochs and outside m_
        std::vector<std::function<void()>> tasks = std::move(idle_tasks_);
        idle_tasks_.clear();
        lk.unlock();
        {
          std::lock_guard<std::mutex> run_lk(run_m_);
          for (auto& t : tasks) t();
        }
        lk.lock();
        continue;
      }
      if (!flushes_.empty()) {  // run the flushes whose txns all have results, outside m_
        const std::uint64_t low = lowest_pending();
        std::vector<std::function<void()>> done;
        std::size_t keep = 0;
        for (auto& f : flushes_) {
          if (f.below <= low) done.push_back(std::move(f.done));
          else flushes_[keep++] = std::move(f);
        }
        flushes_.resize(keep);
        if (!done.empty()) {
          lk.unlock();
          for (auto& d : done) d();
          lk.lock();
          continue;
        }
      }
      const bool flushing = !flushes_.empty();
      const std::size_t queued = queued_.load(std::memory_order_acquire);
      const bool reruns = !reruns_.empty();
      const auto now = std::chrono::steady_clock::now();
      const bool late = queued > 0 && open_known_ && now >= open_since_ + cfg_.epoch_max_wait;
      if (queued >= cfg_.epoch_size || late || (flushing && (queued > 0 || reruns)) || (reruns && queued == 0)) {
        if (queued >= cfg_.epoch_size) ++stats_.closed_by_size;
        else if (late) ++stats_.closed_by_wait;
        else if (flushing && queued > 0) ++stats_.closed_by_flush;
        else ++stats_.rerun_epochs;
        lk.unlock();
        {
          std::lock_guard<std::mutex> run_lk(run_m_);
          const auto t0 = std::chrono::steady_clock::now();
          take();
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          {
            std::lock_guard<std::mutex> stats_lk(m_);
            stats_.take_ms += ms;
          }
          run();
        }
        lk.lock();
        // The wait clock: off when nothing is queued (the next submission starts it); for txns
        // left queued (past epoch_size, or queued while the epoch ran) it starts now unless a
        // submission after the take already started it.
        if (queued_.load(std::memory_order_acquire) == 0) open_known_ = false;
        else if (!open_known_) open_since_ = std::chrono::steady_clock::now(), open_known_ = true;
        continue;
      }
      if (stop_) break;
      if (queued > 0 && open_known_) {
        cv_.wait_until(lk, open_since_ + cfg_.epoch_max_wait);
      } else {
        cv_.wait(lk);
      }
    }
    stopped_ = true;
    std::vector<FlushWaiter> left = std::move(flushes_);
    flushes_.clear();
    std::vector<std::function<void()>> tasks = std::move(idle_tasks_);
    idle_tasks_.clear();
    lk.unlock();
    for (auto& f : left) f.done();
    for (auto& t : tasks) with_engine_idle(t);
  }

  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> ids{1};
    return ids.fetch_add(1, std::memory_order_relaxed);
  }

  Engine<Procs>& engine_;
  EpochsConfig cfg_;
  const std::uint64_t id_ = next_id();  ///< tells this front end's thread-local queues apart

  std::mutex queues_m_;
  std::vector<std::shared_ptr<Queue>> queues_;  ///< in registration order
  std::atomic<std::size_t> queued_{0};
  std::atomic<std::uint64_t> seq_{0};  ///< submissions numbered so far
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<bool> failed_{false};

  // The epoch thread's own state.
  Batch batch_;
  // Reused by every epoch (fresh vectors would page-fault their memory in again each time).
  EpochOutput out_;
  std::vector<std::pair<Waiter, TxnResult>> ready_;
  std::vector<Waiter> waiters_;
  std::vector<std::uint64_t> seqs_;  ///< batch_'s submission numbers
  struct Rerun {
    Waiter waiter;
    std::uint64_t seq;
  };
  std::unordered_map<std::uint64_t, Rerun> reruns_;  ///< by tag
  std::uint64_t next_tag_ = 0;

  std::mutex run_m_;  ///< held by the epoch thread while it takes and runs an epoch
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point open_since_{};  ///< when the open epoch's first txn was queued
  bool open_known_ = false;
  std::vector<FlushWaiter> flushes_;
  std::vector<std::function<void()>> idle_tasks_;  ///< when_idle's, for the epoch thread
  bool stop_ = false, stopped_ = false;
  std::string failure_;
  EpochsStats stats_;
  std::thread thread_;
};

}  // namespace duet::batch::epic

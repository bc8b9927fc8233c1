// Epoch-based reclamation: free shared memory only once no reader can still hold it.
//
// Readers pin the manager (EpochManager::Participant::pin) around every access to shared,
// lock-free-readable memory; writers that unlink an object retire it instead of freeing it.
// A retired object is freed only after the global epoch has advanced twice past its
// retirement, which implies every participant that was pinned when it was retired has
// unpinned since. Costs: pin is a store to the participant's own word, a full fence and a
// load of the global epoch (repeated if the epoch moved meanwhile); unpin is one store; retire is an append, and every kAdvanceEvery retirements the participant
// scans all participants to try to advance the epoch and frees what became safe.
//
// Use: each thread joins once (a Participant is not thread-safe and stays on its thread); a
// participant must not be pinned when destroyed; the manager must outlive its participants.
// Objects a participant still holds when it leaves go to the manager, which frees them when
// safe or when it is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace duet::mem {

class EpochManager {
 public:
  /// A retired object and how to free it.
  struct Retired {
    void* object;
    void (*deleter)(void*);
    std::uint64_t epoch;
  };

  class Participant;

  /// RAII pin: while it lives, nothing retired from now on is freed.
  class Guard {
   public:
    explicit Guard(Participant* p) : p_(p) {}
    ~Guard() {
      if (p_) p_->unpin();
    }
    Guard(Guard&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    Guard& operator=(Guard&&) = delete;

   private:
    Participant* p_;
  };

  /// One thread's membership. Obtain with EpochManager::join().
  class Participant {
   public:
    ~Participant();
    Participant(const Participant&) = delete;
    Participant& operator=(const Participant&) = delete;

    /// Pins the current epoch until the guard is destroyed. Pins do not nest (builds with
    /// DUET_CHECKS abort on a nested pin).
    Guard pin();
    /// Hands `object` to the manager, to be freed by deleter(object) once no reader that
    /// might have seen it is still pinned. object must already be unreachable for new readers.
    /// Returns the epoch it was retired at: a reader pinned at a later epoch can no longer
    /// find it (a reader that does has found a structure still pointing at retired memory).
    std::uint64_t retire(void* object, void (*deleter)(void*)) { return retire(object, deleter, nullptr); }
    /// retire() that first calls note(object, epoch) with the epoch it is retired at, while the
    /// object is still the caller's: once handed over it may be freed before retire() returns
    /// (other threads may have advanced the epoch meanwhile), so the caller must not touch it.
    std::uint64_t retire(void* object, void (*deleter)(void*), void (*note)(void* object, std::uint64_t epoch));
    template <class T>
    void retire(T* object) {
      retire(static_cast<void*>(object), [](void* p) { delete static_cast<T*>(p); });
    }
    /// Frees what is safe now (also done automatically every kAdvanceEvery retirements).
    void collect();
    /// The epoch this participant is pinned at (only meaningful while a Guard of it lives).
    std::uint64_t pinned_epoch() const;
    /// Objects retired by this participant and not yet freed.
    std::size_t pending() const { return retired_.size(); }
    /// The manager this participant belongs to (another thread may join() it).
    EpochManager* manager() const { return manager_; }

   private:
    friend class EpochManager;
    Participant(EpochManager* m, std::size_t slot, void* s) : manager_(m), slot_(slot), slot_ptr_(s) {}
    void unpin();

    EpochManager* manager_;
    std::size_t slot_;
    void* slot_ptr_;  ///< this participant's Slot, stable while it lives
    std::deque<Retired> retired_;  ///< in retirement order, so epochs never decrease
    std::size_t since_collect_ = 0;
  };

  /// Retirements between automatic collection attempts.
  static constexpr std::size_t kAdvanceEvery = 64;

  EpochManager() = default;
  /// Frees everything still retired. No participant may be alive.
  ~EpochManager();
  EpochManager(const EpochManager&) = delete;
  EpochManager& operator=(const EpochManager&) = delete;

  /// Registers the calling thread. Thread-safe.
  std::unique_ptr<Participant> join();

  /// The global epoch (for tests and statistics).
  std::uint64_t epoch() const { return global_.load(std::memory_order_acquire); }
  /// Objects freed so far.
  std::uint64_t freed() const { return freed_.load(std::memory_order_relaxed); }

 private:
  static constexpr std::uint64_t kInactive = ~std::uint64_t(0);
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> local{kInactive};  ///< pinned epoch, or kInactive
    std::atomic<bool> used{false};
  };

  /// Advances the global epoch if every pinned participant has seen it; returns the epoch.
  std::uint64_t try_advance();
  /// Frees the entries of `list` (ordered by epoch) retired at least two epochs before
  /// `epoch`: a prefix of it, so the cost is what is freed plus one look, however long the
  /// list has grown behind a long-pinned reader.
  void free_safe(std::deque<Retired>& list, std::uint64_t epoch);
  void leave(Participant* p);

  std::atomic<std::uint64_t> global_{2};
  std::atomic<std::uint64_t> freed_{0};
  std::mutex m_;                      // guards slots_ growth and orphans_
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<std::size_t> slot_count_{0};
  std::deque<Retired> orphans_;       // from participants that left, kept ordered by epoch
};

}  // namespace duet::mem

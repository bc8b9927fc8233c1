// ParticipantPool: epoch-reclamation participants (mem/epoch.hpp) lent to whichever thread runs
// a batch, so that a batch can pin and retire without each client thread joining the manager.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "mem/epoch.hpp"

namespace duet::mem {

/// Epoch participants handed to whichever thread runs a batch (a participant is used by one
/// thread at a time). Acquire is a CAS on a slot near the caller's hash; with every slot busy
/// it spins (yielding once per sweep) until one is released. The manager must outlive the pool.
class ParticipantPool {
 public:
  explicit ParticipantPool(EpochManager* epochs);
  ~ParticipantPool();
  /// A free slot; *slot identifies it for release().
  EpochManager::Participant* acquire(std::size_t* slot);
  void release(std::size_t slot);
  /// Runs collect() on every participant no thread is using (frees what became safe).
  void collect_idle();

 private:
  static constexpr std::size_t kSlots = 1024;  // batches in flight at once, across threads
  struct alignas(64) Slot {
    std::atomic<bool> busy{false};
    std::unique_ptr<EpochManager::Participant> p;
  };
  EpochManager* epochs_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace duet::mem

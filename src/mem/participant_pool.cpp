#include "mem/participant_pool.hpp"

#include <functional>
#include <thread>

namespace duet::mem {

ParticipantPool::ParticipantPool(EpochManager* epochs) : epochs_(epochs), slots_(new Slot[kSlots]) {}

ParticipantPool::~ParticipantPool() = default;

EpochManager::Participant* ParticipantPool::acquire(std::size_t* slot) {
  const std::size_t start = std::hash<std::thread::id>{}(std::this_thread::get_id()) % kSlots;
  for (std::size_t i = start;; i = (i + 1) % kSlots) {
    Slot& s = slots_[i];
    bool expect = false;
    if (!s.busy.load(std::memory_order_relaxed) &&
        s.busy.compare_exchange_strong(expect, true, std::memory_order_acquire)) {
      if (!s.p) s.p = epochs_->join();
      *slot = i;
      return s.p.get();
    }
    if (i == (start + kSlots - 1) % kSlots) std::this_thread::yield();
  }
}

void ParticipantPool::release(std::size_t slot) { slots_[slot].busy.store(false, std::memory_order_release); }

void ParticipantPool::collect_idle() {
  for (std::size_t i = 0; i < kSlots; ++i) {
    Slot& s = slots_[i];
    bool expect = false;
    // Take the slot before looking at its participant: acquire() creates it under the same flag.
    if (s.busy.compare_exchange_strong(expect, true, std::memory_order_acquire)) {
      if (s.p) s.p->collect();
      s.busy.store(false, std::memory_order_release);
    }
  }
}

}  // namespace duet::mem

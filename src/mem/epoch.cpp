#include "mem/epoch.hpp"

#include "common/check.hpp"

#include <algorithm>
#include <iterator>

namespace duet::mem {

EpochManager::~EpochManager() {
  for (auto& r : orphans_) r.deleter(r.object);
}

std::unique_ptr<EpochManager::Participant> EpochManager::join() {
  std::lock_guard<std::mutex> lk(m_);
  std::size_t slot = slots_.size();
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i]->used.load(std::memory_order_relaxed)) {
      slot = i;
      break;
    }
  if (slot == slots_.size()) {
    slots_.push_back(std::make_unique<Slot>());
    slot_count_.store(slots_.size(), std::memory_order_release);
  }
  slots_[slot]->used.store(true, std::memory_order_relaxed);
  slots_[slot]->local.store(kInactive, std::memory_order_relaxed);
  return std::unique_ptr<Participant>(new Participant(this, slot, slots_[slot].get()));
}

EpochManager::Guard EpochManager::Participant::pin() {
  Slot& s = *static_cast<Slot*>(slot_ptr_);
  DUET_CHECK(s.local.load(std::memory_order_relaxed) == kInactive,
             "pin of a participant that is already pinned (pins do not nest)");
  // Announce, then re-read: the announced epoch must be one the advancer can see us at.
  std::uint64_t e = manager_->global_.load(std::memory_order_acquire);
  for (;;) {
    s.local.store(e, std::memory_order_relaxed);
    // The announcement is visible before any of the reader's later loads of shared data.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint64_t again = manager_->global_.load(std::memory_order_relaxed);
    if (again == e) break;
    e = again;
  }
  return Guard(this);
}

void EpochManager::Participant::unpin() {
  static_cast<Slot*>(slot_ptr_)->local.store(kInactive, std::memory_order_release);
}

std::uint64_t EpochManager::Participant::retire(void* object, void (*deleter)(void*),
                                                void (*note)(void* object, std::uint64_t epoch)) {
  // The caller's unlink is ordered before reading the epoch it is retired at; otherwise the
  // epoch could be read as r while the unlink is still invisible to readers pinned at r + 1.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const std::uint64_t epoch = manager_->global_.load(std::memory_order_relaxed);
  if (note) note(object, epoch);
  retired_.push_back({object, deleter, epoch});
  if (++since_collect_ >= kAdvanceEvery) collect();
  return epoch;
}

std::uint64_t EpochManager::Participant::pinned_epoch() const {
  return static_cast<const Slot*>(slot_ptr_)->local.load(std::memory_order_relaxed);
}

void EpochManager::Participant::collect() {
  since_collect_ = 0;
  const std::uint64_t e = manager_->try_advance();
  manager_->free_safe(retired_, e);
  std::unique_lock<std::mutex> lk(manager_->m_, std::try_to_lock);
  if (lk.owns_lock()) manager_->free_safe(manager_->orphans_, e);
}

EpochManager::Participant::~Participant() { manager_->leave(this); }

void EpochManager::leave(Participant* p) {
  const std::uint64_t e = try_advance();
  free_safe(p->retired_, e);
  std::lock_guard<std::mutex> lk(m_);
  std::deque<Retired> merged;
  std::merge(orphans_.begin(), orphans_.end(), p->retired_.begin(), p->retired_.end(), std::back_inserter(merged),
             [](const Retired& a, const Retired& b) { return a.epoch < b.epoch; });
  orphans_.swap(merged);
  p->retired_.clear();
  slots_[p->slot_]->local.store(kInactive, std::memory_order_release);
  slots_[p->slot_]->used.store(false, std::memory_order_release);
}

std::uint64_t EpochManager::try_advance() {
  const std::uint64_t e = global_.load(std::memory_order_seq_cst);
  const std::size_t n = slot_count_.load(std::memory_order_acquire);
  std::vector<Slot*> snapshot;
  {
    std::lock_guard<std::mutex> lk(m_);
    for (std::size_t i = 0; i < n; ++i) snapshot.push_back(slots_[i].get());
  }
  for (Slot* s : snapshot) {
    const std::uint64_t local = s->local.load(std::memory_order_seq_cst);
    if (local != kInactive && local != e) return e;  // someone still reads at an older epoch
  }
  std::uint64_t expected = e;
  global_.compare_exchange_strong(expected, e + 1, std::memory_order_seq_cst);
  return global_.load(std::memory_order_acquire);
}

void EpochManager::free_safe(std::deque<Retired>& list, std::uint64_t epoch) {
  // An object retired at epoch r may still be seen by a reader pinned at r or r - 1 (it read
  // the global epoch just before the object was unlinked); once the global epoch reached r + 2
  // every such reader has unpinned. Lists are in epoch order, so the safe entries are a prefix.
  // Retired objects have usually left the cache by now, and a deleter touches its object (a
  // value block's size and budget, the allocator's header): start loading a few ahead, so the
  // misses overlap instead of stalling each free.
  constexpr std::size_t kAhead = 4;
  std::size_t safe = 0;
  while (safe < list.size() && safe < kAhead && list[safe].epoch + 2 <= epoch) __builtin_prefetch(list[safe++].object);
  std::uint64_t n = 0;
  while (!list.empty() && list.front().epoch + 2 <= epoch) {
    if (kAhead < list.size() && list[kAhead].epoch + 2 <= epoch) __builtin_prefetch(list[kAhead].object);
    const Retired r = list.front();
    list.pop_front();
    r.deleter(r.object);
    ++n;
  }
  freed_.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace duet::mem

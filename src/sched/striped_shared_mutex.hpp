// StripedSharedMutex: a reader-writer lock for many frequent shared holders and a rare exclusive
// one (the Hot Cache's writers and its table growth).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "mem/striped_counter.hpp"

namespace duet::sched {

/// Shared holders count themselves in a StripedCounter (each touches only its own cache line);
/// the exclusive holder raises a flag and waits until the count drains. std::shared_mutex makes
/// every shared acquisition an atomic read-modify-write on one line that all holders share,
/// which profiles showed costing more than the work it protects once a dozen threads update.
/// Meets the SharedMutex requirements used by std::shared_lock and std::unique_lock.
/// Costs: lock_shared/unlock_shared one uncontended atomic add each (plus a flag load); lock()
/// 64 loads per poll of the count while waiting. The exclusive holder is favoured: new shared
/// holders wait while it holds or waits. Not recursive; a shared holder must not call lock().
class StripedSharedMutex {
 public:
  void lock_shared() {
    for (;;) {
      holders_.add(1);  // sequentially consistent, paired with lock()'s flag store (Dekker)
      if (!exclusive_.load(std::memory_order_seq_cst)) return;
      holders_.add(-1);
      while (exclusive_.load(std::memory_order_acquire)) exclusive_.wait(true, std::memory_order_acquire);
    }
  }
  void unlock_shared() { holders_.add(-1); }
  void lock() {
    m_.lock();  // one exclusive holder at a time
    exclusive_.store(true, std::memory_order_seq_cst);
    while (holders_.sum() != 0) std::this_thread::yield();
  }
  void unlock() {
    exclusive_.store(false, std::memory_order_seq_cst);
    exclusive_.notify_all();
    m_.unlock();
  }

 private:
  mem::StripedCounter holders_;
  std::atomic<bool> exclusive_{false};
  std::mutex m_;
};

}  // namespace duet::sched

// A small pool of persistent worker threads for the CPU phases of an epoch (indexing lookups,
// planning, execution). A job is a number of chunks; the caller and the workers claim chunks from
// one counter, and the caller returns once every claimed chunk is done. A worker that has not
// woken up by the time every chunk is claimed is not waited for, so on a machine shared with
// other work a descheduled worker delays an epoch by at most the chunk it holds, not by a thread
// start and a join per phase (the fork-join this replaces started a thread per phase and joined
// it, waiting for it to be scheduled at all).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

namespace duet::batch::epic {

/// Persistent workers running chunked jobs for one caller thread at a time. Idle workers sleep
/// (futex wait); they never spin.
class WorkPool {
 public:
  /// `workers` threads besides the caller (0: every job runs on the caller).
  explicit WorkPool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~WorkPool() {
    stop_.store(true, std::memory_order_seq_cst);
    gen_.fetch_add(1, std::memory_order_seq_cst);
    gen_.notify_all();
    for (auto& t : threads_) t.join();
  }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  int workers() const { return static_cast<int>(threads_.size()); }

  /// Runs f(i) for every i in [0, chunks), each exactly once, on the caller and the workers;
  /// returns when all are done. Not reentrant; one caller at a time.
  template <class F>
  void run(std::size_t chunks, F&& f) {
    if (threads_.empty() || chunks <= 1) {
      for (std::size_t i = 0; i < chunks; ++i) f(i);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    ctx_ = &f;
    call_ = [](void* c, std::size_t i) { (*static_cast<Fn*>(c))(i); };
    chunks_ = chunks;
    next_.store(0, std::memory_order_relaxed);
    open_.store(true, std::memory_order_seq_cst);
    gen_.fetch_add(1, std::memory_order_seq_cst);
    gen_.notify_all();
    claim();
    // Every chunk is claimed; close the job and wait for the workers still inside it.
    open_.store(false, std::memory_order_seq_cst);
    unsigned spins = 0;
    while (active_.load(std::memory_order_seq_cst) != 0)
      if (++spins % 64 == 0) std::this_thread::yield();
  }

 private:
  void claim() {
    for (;;) {
      const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= chunks_) return;
      call_(ctx_, i);
    }
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      gen_.wait(seen, std::memory_order_seq_cst);
      seen = gen_.load(std::memory_order_seq_cst);
      if (stop_.load(std::memory_order_seq_cst)) return;
      // Enter, then check that the job is still open: the caller closes it before waiting for
      // active_ to drain, so either it sees this worker or this worker sees it closed.
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (open_.load(std::memory_order_seq_cst) && gen_.load(std::memory_order_seq_cst) == seen) claim();
      active_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> gen_{0};
  std::atomic<bool> stop_{false}, open_{false};
  std::atomic<int> active_{0};
  std::atomic<std::size_t> next_{0};
  void* ctx_ = nullptr;
  void (*call_)(void*, std::size_t) = nullptr;
  std::size_t chunks_ = 0;
};

/// The calling thread's pool with `workers` workers (created on first use, replaced when the
/// count changes; its workers end with the thread).
inline WorkPool& thread_pool(int workers) {
  thread_local std::unique_ptr<WorkPool> pool;
  if (!pool || pool->workers() != workers) pool = std::make_unique<WorkPool>(workers);
  return *pool;
}

}  // namespace duet::batch::epic

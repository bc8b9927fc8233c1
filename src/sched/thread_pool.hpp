// A fixed pool of worker threads that runs data-parallel loops over index ranges.
//
// parallel_for splits [0, n) into contiguous pieces, one per worker (the calling thread is
// one of them), and returns when all are done. Loops smaller than `grain` run inline on the
// caller, so small batches pay no wake-up. Concurrent parallel_for calls from different
// threads are serialised. Exceptions must not escape the body.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace duet::sched {

class ThreadPool {
 public:
  /// threads == 0 means one per hardware thread. The caller counts as one of them.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  /// Calls body(begin, end, worker) over disjoint ranges covering [0, n).
  void parallel_for(std::size_t n, std::size_t grain,
                    const std::function<void(std::size_t, std::size_t, unsigned)>& body);

 private:
  void worker_loop(unsigned id);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one parallel_for at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t, std::size_t, unsigned)>* body_ = nullptr;
  std::size_t n_ = 0;
  unsigned pieces_ = 0;
  unsigned generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
};

}  // namespace duet::sched

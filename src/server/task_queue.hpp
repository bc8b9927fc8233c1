// Threads that run queued tasks off the I/O threads (Server::run_in_background,
// Server::run_procedure).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace duet::server {

/// A queue of tasks and the threads that run them, oldest first; with one thread, one after
/// another in queue order. Thread-safe. Tasks must not throw.
class TaskQueue {
 public:
  TaskQueue() = default;
  ~TaskQueue() { stop(); }
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;
  /// Starts `threads` threads (at least 1), each named `name` (at most 15 characters show).
  void start(unsigned threads, const char* name);
  /// Queues task. False, queueing nothing, before start() or once stop() began: the caller
  /// then runs it itself.
  bool post(std::function<void()> task);
  /// Refuses new tasks, lets the threads run every queued one, then joins them. Idempotent.
  void stop();
  /// Tasks queued and finished so far (finished is read first by callers that compare).
  std::uint64_t posted() const { return posted_.load(std::memory_order_acquire); }
  std::uint64_t done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> posted_{0}, done_{0};
};

}  // namespace duet::server

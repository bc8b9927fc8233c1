#include "server/task_queue.hpp"

#include <algorithm>

#include "sched/thread_name.hpp"

namespace duet::server {

void TaskQueue::start(unsigned threads, const char* name) {
  std::lock_guard<std::mutex> lk(m_);
  if (!threads_.empty() || stopping_) return;
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this, name] {
      sched::name_this_thread(name);
      std::unique_lock<std::mutex> lk(m_);
      for (;;) {
        cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing is left to run
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        lk.unlock();
        task();
        done_.fetch_add(1, std::memory_order_release);
        lk.lock();
      }
    });
}

bool TaskQueue::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lk(m_);
    if (stopping_ || threads_.empty()) return false;
    queue_.push_back(std::move(task));
    posted_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
  return true;
}

void TaskQueue::stop() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

}  // namespace duet::server

#include "sched/thread_pool.hpp"

namespace duet::sched {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

static void run_piece(const std::function<void(std::size_t, std::size_t, unsigned)>& body, std::size_t n,
                      unsigned pieces, unsigned piece) {
  const std::size_t begin = n * piece / pieces, end = n * (piece + 1) / pieces;
  if (begin < end) body(begin, end, piece);
}

void ThreadPool::parallel_for(std::size_t n, std::size_t grain,
                              const std::function<void(std::size_t, std::size_t, unsigned)>& body) {
  if (n == 0) return;
  if (workers_.empty() || n <= grain) {
    body(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> run(run_mutex_);
  {
    std::lock_guard<std::mutex> lk(m_);
    body_ = &body;
    n_ = n;
    pieces_ = threads();
    pending_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  run_piece(body, n, threads(), 0);
  std::unique_lock<std::mutex> lk(m_);
  done_.wait(lk, [this] { return pending_ == 0; });
  body_ = nullptr;
}

void ThreadPool::worker_loop(unsigned id) {
  unsigned seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t, unsigned)>* body;
    std::size_t n;
    unsigned pieces;
    {
      std::unique_lock<std::mutex> lk(m_);
      wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      body = body_;
      n = n_;
      pieces = pieces_;
    }
    run_piece(*body, n, pieces, id);
    std::lock_guard<std::mutex> lk(m_);
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace duet::sched

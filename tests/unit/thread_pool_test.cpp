#include "sched/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  duet::sched::ThreadPool pool(4);
  for (std::size_t n : {0ul, 1ul, 7ul, 1000ul, 100000ul}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, 16, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, SmallLoopsRunInlineOnTheCaller) {
  duet::sched::ThreadPool pool(4);
  unsigned worker = 99;
  pool.parallel_for(10, 100, [&](std::size_t, std::size_t, unsigned w) { worker = w; });
  EXPECT_EQ(worker, 0u);
}

// Epoch-based reclamation: objects are freed once no pinned reader can hold them, never before.
// The concurrent test poisons instead of freeing, so a reader that sees a reclaimed object
// reads the poison rather than freed memory, and the violation is counted, not undefined.
#include "mem/epoch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using duet::mem::EpochManager;

namespace {
std::atomic<int> g_deleted{0};
void count_delete(void* p) {
  ++g_deleted;
  delete static_cast<int*>(p);
}
}  // namespace

TEST(Epoch, RetiredObjectsAreFreedOnceNoOneIsPinned) {
  g_deleted = 0;
  EpochManager m;
  auto p = m.join();
  for (int i = 0; i < 10; ++i) p->retire(new int(i), count_delete);
  EXPECT_EQ(g_deleted.load(), 0);  // nothing is freed at retirement
  for (int i = 0; i < 3; ++i) p->collect();
  EXPECT_EQ(g_deleted.load(), 10);
  EXPECT_EQ(p->pending(), 0u);
  EXPECT_EQ(m.freed(), 10u);
}

TEST(Epoch, APinnedReaderDelaysFreeingUntilItUnpins) {
  g_deleted = 0;
  EpochManager m;
  auto reader = m.join();
  auto writer = m.join();
  {
    auto guard = reader->pin();
    writer->retire(new int(1), count_delete);
    for (int i = 0; i < 10; ++i) writer->collect();
    EXPECT_EQ(g_deleted.load(), 0) << "freed while a reader that may hold it was pinned";
  }
  for (int i = 0; i < 3; ++i) writer->collect();
  EXPECT_EQ(g_deleted.load(), 1);
}

TEST(Epoch, ObjectsLeftByADepartedParticipantAreFreedLater) {
  g_deleted = 0;
  {
    EpochManager m;
    auto reader = m.join();
    {
      auto guard = reader->pin();
      auto writer = m.join();
      writer->retire(new int(1), count_delete);
    }  // writer leaves with its object still unsafe to free
    EXPECT_EQ(g_deleted.load(), 0);
    for (int i = 0; i < 3; ++i) reader->collect();
    EXPECT_EQ(g_deleted.load(), 1);
  }
}

TEST(Epoch, ConcurrentReadersNeverSeeAReclaimedObject) {
  struct Node {
    std::atomic<std::uint64_t> value;
  };
  constexpr std::uint64_t kPoison = 0xDEADDEADDEADDEADull;
  static std::mutex graveyard_mutex;
  static std::vector<Node*> graveyard;  // poisoned nodes, really freed at the end
  graveyard.clear();
  auto poison = [](void* p) {
    auto* n = static_cast<Node*>(p);
    n->value.store(kPoison, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lk(graveyard_mutex);
    graveyard.push_back(n);
  };
  EpochManager m;
  std::atomic<Node*> shared{new Node{{1}}};
  std::atomic<std::uint64_t> violations{0}, reads{0};
  std::vector<std::thread> ts;
  for (int w = 0; w < 2; ++w)
    ts.emplace_back([&, w] {
      auto p = m.join();
      for (std::uint64_t i = 0; i < 100000; ++i) {
        Node* fresh = new Node{{(i << 1) | 1}};
        Node* old = shared.exchange(fresh, std::memory_order_acq_rel);
        p->retire(old, poison);
      }
      (void)w;
    });
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&] {
      auto p = m.join();
      for (int i = 0; i < 200000; ++i) {
        auto guard = p->pin();
        Node* n = shared.load(std::memory_order_acquire);
        // Hold the pin a while, re-reading, so a premature reclamation has time to land.
        for (int k = 0; k < 64; ++k)
          if (n->value.load(std::memory_order_relaxed) == kPoison) ++violations;
        ++reads;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(violations.load(), 0u);
  EXPECT_EQ(reads.load(), 400000u);
  EXPECT_GT(m.freed(), 0u) << "reclamation never happened";
  delete shared.load();
  // Drain: a new participant collects what the departed ones left.
  {
    auto p = m.join();
    for (int i = 0; i < 3; ++i) p->collect();
  }
  EXPECT_EQ(m.freed(), 200000u);
  for (Node* n : graveyard) delete n;
}

// A reader pinned for a long time (LIT pins during a resize) lets one writer's retired list
// grow. Each automatic collection must then cost what it frees plus one look, not a scan of
// the whole list: the old scan made a million retirements behind a pin take minutes. The
// bound is loose (the linear version takes a fraction of a second); what it catches is the
// quadratic one.
TEST(Epoch, CollectingBehindAPinnedReaderStaysLinear) {
  g_deleted = 0;
  EpochManager m;
  auto reader = m.join();
  auto writer = m.join();
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto pinned = reader->pin();
    for (int i = 0; i < 1000000; ++i) writer->retire(new int(i), count_delete);
    EXPECT_EQ(g_deleted.load(), 0);  // the pinned reader may still hold any of them
  }
  for (int i = 0; i < 3; ++i) writer->collect();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(g_deleted.load(), 1000000);
  EXPECT_LT(seconds, 5.0);
}

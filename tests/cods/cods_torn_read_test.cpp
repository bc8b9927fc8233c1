// Torn reads (issue 18): the fully atomic regime never tears; the elementwise regime does, and
// the negative control shows it. A hook (the `mid` argument of Fragment::set / atomic_set, a
// no-op outside tests) stalls a writer halfway through its element stores.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "cods/cods.hpp"

namespace duet::cods {
namespace {

constexpr unsigned kN = 8;
using Frag = Fragment<kN, CpuThread>;

/// A writer that stops mid-set until released: stalled() turns true while it waits.
struct Stall {
  std::atomic<bool> stalled{false}, go{false};
  auto hook() {
    return [this] {
      stalled.store(true);
      while (!go.load()) std::this_thread::yield();
    };
  }
  void wait_stalled() const {
    while (!stalled.load()) std::this_thread::yield();
  }
};

Frag filled(std::uint64_t v) {
  Frag f;
  f.fill(v);
  return f;
}

// Negative control: an elementwise get while a set is stalled halfway sees the new lower half
// and the old upper half, a state no set ever wrote.
TEST(CodsTornRead, ElementwiseGetSeesAStalledWritersTear) {
  const CpuThread g;
  CObject<kN> far;
  filled(1).set(g, far);
  Stall s;
  std::thread writer([&] { filled(2).set(g, far, s.hook()); });
  s.wait_stalled();
  Frag r;
  r.get(g, far);
  for (unsigned i = 0; i < kN; ++i) EXPECT_EQ(r.e[i], i < kN / 2 ? 2u : 1u) << "element " << i;
  s.go.store(true);
  writer.join();
  r.get(g, far);
  for (unsigned i = 0; i < kN; ++i) EXPECT_EQ(r.e[i], 2u);
}

// The same stall under atomic_set: a reader started while the writer is stalled does not return
// until the set completes, and then holds the whole new value.
TEST(CodsTornRead, FullyAtomicGetWaitsOutAStalledWriter) {
  const CpuThread g;
  AtomicCObject<kN> far{};
  atomic_set(g, far, filled(1));
  Stall s;
  std::thread writer([&] { atomic_set(g, far, filled(2), s.hook()); });
  s.wait_stalled();
  std::atomic<bool> returned{false};
  Frag r;
  std::thread reader([&] {
    atomic_get(g, far, r);
    returned.store(true);
  });
  // While the writer is stalled the reader must still be inside atomic_get (a reader returning
  // here would hold a torn copy). Checked over many scheduling turns, not a timed wait.
  for (int i = 0; i < 2000; ++i) {
    ASSERT_FALSE(returned.load()) << "atomic_get returned while a set was half done";
    std::this_thread::yield();
  }
  s.go.store(true);
  writer.join();
  reader.join();
  for (unsigned i = 0; i < kN; ++i) EXPECT_EQ(r.e[i], 2u) << "element " << i;
}

// Under contention: two writers set whole values k (every element k), readers check that every
// copy atomic_get returns has one value throughout.
TEST(CodsTornRead, FullyAtomicNeverTearsUnderContention) {
  const CpuThread g;
  AtomicCObject<kN> far{};
  atomic_set(g, far, filled(0));
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> torn{0}, reads{0};
  std::thread w1([&] {
    for (std::uint64_t k = 1; !stop.load(std::memory_order_relaxed); k += 2) atomic_set(g, far, filled(k));
  });
  std::thread w2([&] {
    for (std::uint64_t k = 2; !stop.load(std::memory_order_relaxed); k += 2) atomic_set(g, far, filled(k));
  });
  std::thread rd([&] {
    for (int i = 0; i < 20000; ++i) {
      Frag r;
      atomic_get(g, far, r);
      for (unsigned j = 1; j < kN; ++j)
        if (r.e[j] != r.e[0]) {
          torn.fetch_add(1);
          break;
        }
      reads.fetch_add(1);
    }
    stop.store(true);
  });
  rd.join();
  w1.join();
  w2.join();
  EXPECT_EQ(torn.load(), 0u) << "of " << reads.load() << " reads";
}

}  // namespace
}  // namespace duet::cods

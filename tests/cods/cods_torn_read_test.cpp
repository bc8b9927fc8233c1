// Torn reads (issue 18): the fully atomic regime never tears; the elementwise regime does, and
// the negative control shows it. A hook (the `mid` argument of Fragment::set / atomic_set, a
// no-op outside tests) stalls a writer halfway through its element stores.
//
// The structures do not read through atomic_get: the list's nodes carry their own sequence lock
// in the meta word (LazyList::read/write, FoldedMeta) and the tree validates against its node
// lock (BLinkTree::read). Those are checked the same way, through the `mid` argument of
// LazyList::write and BLinkTree::write. Steps are ordered by atomic handshakes, never by sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#include "cods/cods.hpp"
#include "index/cods/blink_tree.hpp"
#include "index/cods/lazy_list.hpp"

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
  /// The same, stalling only the first call (a reader's first attempt; its retries run on).
  auto hook_once() {
    return [this, first = true]() mutable {
      if (!first) return;
      first = false;
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

// ---- The list's and the tree's own reads.

/// An environment with what read, write and the node locks call (node reads are not counted).
struct BareEnv {
  void node_read() {}
};

constexpr ds::Regime kE = ds::Regime::kElementwise;
constexpr ds::Regime kF = ds::Regime::kFullyAtomic;

/// Started by a thread of its own: does one read, then says so. returned() must stay false
/// while a writer is stalled inside a write the read has to wait out.
struct Reader {
  std::atomic<bool> started{false}, done{false};
  std::thread t;
  template <class Read>
  explicit Reader(Read read)
      : t([this, read] {
          started.store(true);
          read();
          done.store(true);
        }) {}
  /// True if the read returned within many scheduling turns after it started (it started, so
  /// a read that does not wait returns within a few of them). Not a timed wait.
  bool returns_during_stall() {
    while (!started.load()) std::this_thread::yield();
    for (int i = 0; i < 20000; ++i) {
      if (done.load()) return true;
      std::this_thread::yield();
    }
    return done.load();
  }
};

/// A reader against one writer that counts its writes: reads start after the first write and go
/// on until there were 20,000 reads, 20,000 writes and 200 reads that saw a new value, so the
/// reads overlap the writes (a writer descheduled while the reader runs does not end the test),
/// or 2,000,000 reads (a loaded machine may run the two threads mostly in turns).
struct Contention {
  static constexpr std::uint64_t kRounds = 20000, kChanges = 200, kMaxReads = 2000000;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> writes{0};
  std::uint64_t reads = 0, torn = 0, changes = 0;
  /// read() returns (whether the copy was whole, the value it holds).
  template <class Read>
  void run(Read read) {
    while (writes.load() == 0) std::this_thread::yield();
    std::uint64_t last = 0;
    while ((reads < kRounds || changes < kChanges || writes.load(std::memory_order_relaxed) < kRounds) &&
           reads < kMaxReads) {
      const auto [whole, v] = read();
      ++reads;
      if (!whole) ++torn;
      if (v != last) ++changes;
      last = v;
    }
    stop.store(true);
  }
  void expect_never_torn() const {
    EXPECT_EQ(torn, 0u) << "of " << reads << " reads, " << changes << " of them a new value, against "
                        << writes.load() << " writes";
  }
};

/// A list node of 6 keys (8 words: keys 0..5, bitset 6, next 7; the stall falls after word 3).
template <ds::Regime R>
using List6 = ds::LazyList<6, CpuThread, R>;

/// The content of a list node: `count` keys first, first + 1, ..., and next.
template <class L>
typename L::Frag list_content(std::uint64_t first, unsigned count, std::uint64_t next) {
  typename L::Frag f;
  f.fill(0);
  for (unsigned i = 0; i < count; ++i) f.e[i] = first + i;
  f.e[L::Shape::kMeta] = ds::prefix_mask(count);
  f.e[L::Shape::kNext] = next;
  return f;
}

/// Expects r to be exactly the node content `want` (keys, bitset without lock or version, next).
template <class L>
void expect_list_content(const CpuThread& g, const typename L::Frag& r, const typename L::Frag& want) {
  EXPECT_EQ(L::keys_of(g, r), L::keys_of(g, want));
  for (unsigned i = 0; i < L::Shape::kKeys; ++i) EXPECT_EQ(r.e[i], want.e[i]) << "key slot " << i;
  EXPECT_EQ(r.e[L::Shape::kNext], want.e[L::Shape::kNext]);
}

/// A list node in regime R holding `before` (keys 10..12, next 0x1000) and a writer thread
/// stalled halfway through LazyList::write of `after` (keys 40..45, next 0x2000): words 0..3
/// new, the rest old. finish() lets the write complete.
template <ds::Regime R>
struct StalledListWrite {
  using L = List6<R>;
  const CpuThread g{};
  BareEnv env;
  typename L::Node node;
  const typename L::Frag before = list_content<L>(10, 3, 0x1000), after = list_content<L>(40, 6, 0x2000);
  Stall s;
  std::thread writer;
  StalledListWrite() {
    L::init_head(&node);
    L::write(g, env, &node, before);
    writer = std::thread([this] {
      BareEnv we;
      L::write(g, we, &node, after, s.hook());
    });
    s.wait_stalled();
  }
  void finish() {
    s.go.store(true);
    writer.join();
  }
};

// A fully atomic list read started while a writer is stalled halfway through LazyList::write
// (lower half of the node written, version odd) waits until the write completes, and then
// returns the whole new node.
TEST(CodsTornRead, ListFullyAtomicReadWaitsOutAStalledWrite) {
  using L = List6<kF>;
  static_assert(L::kW == 8 && L::Shape::kMeta == 6 && L::Shape::kNext == 7);
  StalledListWrite<kF> w;
  // The stall is mid-write: words 0..3 are new, keys 4..5 and next still old.
  EXPECT_EQ(w.node.obj.elem[0], 40u);
  EXPECT_EQ(w.node.obj.elem[3], 43u);
  EXPECT_EQ(w.node.obj.elem[4], 0u);
  EXPECT_EQ(w.node.obj.elem[7], 0x1000u);
  typename L::Frag r;
  Reader reader([&] {
    BareEnv re;
    L::read(w.g, re, &w.node, r);
  });
  EXPECT_FALSE(reader.returns_during_stall()) << "LazyList::read returned while a write was half done";
  w.finish();
  reader.t.join();
  expect_list_content<L>(w.g, r, w.after);
}

// Negative control: the elementwise list's read does not wait, and sees the stalled write's
// lower half with the old upper half (keys 40..43 with the old bitset of 3 keys and old next),
// a node no write produced. This is why the elementwise list never rewrites a published node.
TEST(CodsTornRead, ListElementwiseReadSeesAStalledWrite) {
  using L = List6<kE>;
  StalledListWrite<kE> w;
  typename L::Frag r;
  L::read(w.g, w.env, &w.node, r);
  for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(r.e[i], 40 + i) << "key slot " << i;
  EXPECT_EQ(r.e[4], 0u);
  EXPECT_EQ(L::keys_of(w.g, r), ds::prefix_mask(3));
  EXPECT_EQ(r.e[L::Shape::kNext], 0x1000u);
  w.finish();
  L::read(w.g, w.env, &w.node, r);
  expect_list_content<L>(w.g, r, w.after);
}

/// A list read in regime R stalled halfway through its element loads while a whole write of
/// `after` (keys 40..45, next 0x2000) replaces `before` (keys 10..12, next 0x1000): the copy
/// the read returns.
template <ds::Regime R>
typename List6<R>::Frag list_read_across_a_write() {
  using L = List6<R>;
  const CpuThread g;
  BareEnv env;
  typename L::Node node;
  L::init_head(&node);
  const auto before = list_content<L>(10, 3, 0x1000), after = list_content<L>(40, 6, 0x2000);
  L::write(g, env, &node, before);
  Stall s;
  typename L::Frag r;
  std::thread reader([&] {
    BareEnv re;
    L::read(g, re, &node, r, s.hook_once());
  });
  s.wait_stalled();
  L::write(g, env, &node, after);
  s.go.store(true);
  reader.join();
  return r;
}

// The other side: a fully atomic list read stalled halfway through its element loads (lower
// half old) while a whole write completes must not return the old lower half with the new
// upper half: the version moved, so it retries and returns the new node.
TEST(CodsTornRead, ListFullyAtomicReadRetriesAfterAWriteDuringIt) {
  using L = List6<kF>;
  expect_list_content<L>(CpuThread{}, list_read_across_a_write<kF>(), list_content<L>(40, 6, 0x2000));
}

// Negative control: the elementwise read, stalled the same way, returns the old lower half
// (keys 10..12, then 0) with the new upper half (keys 44, 45, the bitset of 6 and next 0x2000).
TEST(CodsTornRead, ListElementwiseReadTearsAcrossAWriteDuringIt) {
  using L = List6<kE>;
  const typename L::Frag r = list_read_across_a_write<kE>();
  for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(r.e[i], 10 + i) << "key slot " << i;
  EXPECT_EQ(r.e[3], 0u);
  EXPECT_EQ(r.e[4], 44u);
  EXPECT_EQ(r.e[5], 45u);
  EXPECT_EQ(L::keys_of(CpuThread{}, r), ds::prefix_mask(6));
  EXPECT_EQ(r.e[L::Shape::kNext], 0x2000u);
}

// Under contention: one writer (the lock holder) rewrites a fully atomic list node with whole
// contents v (every key v, v % 6 + 1 keys present, next 2v); every copy LazyList::read returns
// is one of them.
TEST(CodsTornRead, ListFullyAtomicNeverTearsUnderContention) {
  using L = List6<kF>;
  const CpuThread g;
  typename L::Node node;
  L::init_head(&node);
  auto content = [](std::uint64_t v) {
    typename L::Frag f;
    f.fill(v);
    f.e[L::Shape::kMeta] = ds::prefix_mask(static_cast<unsigned>(v % 6 + 1));
    f.e[L::Shape::kNext] = 2 * v;
    return f;
  };
  BareEnv env;
  L::write(g, env, &node, content(0));
  Contention c;
  std::thread writer([&] {
    BareEnv we;
    for (std::uint64_t v = 1; !c.stop.load(std::memory_order_relaxed); ++v) {
      L::write(g, we, &node, content(v));
      c.writes.fetch_add(1, std::memory_order_relaxed);
    }
  });
  c.run([&] {
    typename L::Frag r;
    L::read(g, env, &node, r);
    const std::uint64_t v = r.e[0];
    bool whole = L::keys_of(g, r) == ds::prefix_mask(static_cast<unsigned>(v % 6 + 1)) && r.e[L::Shape::kNext] == 2 * v;
    for (unsigned j = 1; j < L::Shape::kKeys; ++j) whole = whole && r.e[j] == v;
    return std::pair<bool, std::uint64_t>{whole, v};
  });
  writer.join();
  c.expect_never_torn();
}

/// The tree: 4 keys (keys c-object of 8 words: keys 0..3, meta 4, high 5, right 6; values of 8).
template <ds::Regime R>
using Tree4 = ds::BLinkTree<4, CpuThread, R>;

template <class T>
struct TreeContent {
  typename T::KFrag k;
  typename T::VFrag v;
};
/// A leaf of `count` keys first, first + 1, ... with values value0, value0 + 1, ..., high +inf.
template <class T>
TreeContent<T> tree_content(std::uint64_t first, unsigned count, std::uint64_t value0) {
  TreeContent<T> c;
  c.k.fill(0);
  c.v.fill(0);
  for (unsigned i = 0; i < count; ++i) {
    c.k.e[i] = first + i;
    c.v.e[i] = value0 + i;
  }
  c.k.e[T::Shape::kMeta] = ds::prefix_mask(count) | T::Shape::kInfinite;
  return c;
}

/// Writes `c` into the tree node under its lock (as the tree's updaters do), with an optional
/// stall hook passed to BLinkTree::write.
template <class T, class... Hook>
void tree_locked_write(BareEnv& env, typename T::Node& node, const TreeContent<T>& c, Hook&&... hook) {
  const CpuThread g;
  ds::lock(g, env, node.version());
  T::write(g, env, &node, c.k, c.v, std::forward<Hook>(hook)...);
  ds::unlock(g, env, node.version());
}

/// Expects the copy (rk, rv) to be exactly the node content `want`.
template <class T>
void expect_tree_content(const typename T::KFrag& rk, const typename T::VFrag& rv, const TreeContent<T>& want) {
  for (unsigned i = 0; i < T::Shape::kWords; ++i) EXPECT_EQ(rk.e[i], want.k.e[i]) << "keys word " << i;
  for (unsigned i = 0; i < T::Shape::kValueWords; ++i) EXPECT_EQ(rv.e[i], want.v.e[i]) << "values word " << i;
}

/// A tree node is written under its lock; a BLinkTree::read started while the writer is stalled
/// between the keys and the values (keys new, values old: a key would pair with a stale value)
/// waits until the write is done and the lock released, then returns the whole new node.
template <ds::Regime R>
void tree_read_waits_out_a_stalled_write() {
  using T = Tree4<R>;
  const CpuThread g;
  BareEnv env;
  typename T::Node node;
  T::init_leaf(&node);
  const auto before = tree_content<T>(1, 2, 101), after = tree_content<T>(1, 4, 201);
  tree_locked_write(env, node, before);
  Stall s;
  std::thread writer([&] {
    BareEnv we;
    tree_locked_write(we, node, after, s.hook());
  });
  s.wait_stalled();
  EXPECT_EQ(node.key_data().elem[3], 4u);  // the keys are new
  EXPECT_EQ(node.values.elem[0], 101u);    // the values still old
  typename T::KFrag rk;
  typename T::VFrag rv;
  Reader reader([&] {
    BareEnv re;
    T::read(g, re, &node, rk, rv);
  });
  EXPECT_FALSE(reader.returns_during_stall()) << "BLinkTree::read returned while a write was half done";
  s.go.store(true);
  writer.join();
  reader.t.join();
  expect_tree_content(rk, rv, after);
}
TEST(CodsTornRead, TreeFullyAtomicReadWaitsOutAStalledWrite) { tree_read_waits_out_a_stalled_write<kF>(); }
TEST(CodsTornRead, TreeElementwiseReadWaitsOutAStalledWrite) { tree_read_waits_out_a_stalled_write<kE>(); }

/// A BLinkTree::read stalled between the keys and the values while a whole locked write
/// completes must not pair the old keys with the new values: it retries, returning the new node.
template <ds::Regime R>
void tree_read_retries_after_a_write_during_it() {
  using T = Tree4<R>;
  const CpuThread g;
  BareEnv env;
  typename T::Node node;
  T::init_leaf(&node);
  const auto before = tree_content<T>(1, 2, 101), after = tree_content<T>(1, 4, 201);
  tree_locked_write(env, node, before);
  Stall s;
  typename T::KFrag rk;
  typename T::VFrag rv;
  std::thread reader([&] {
    BareEnv re;
    T::read(g, re, &node, rk, rv, s.hook_once());
  });
  s.wait_stalled();
  tree_locked_write(env, node, after);
  s.go.store(true);
  reader.join();
  expect_tree_content(rk, rv, after);
}
TEST(CodsTornRead, TreeFullyAtomicReadRetriesAfterAWriteDuringIt) { tree_read_retries_after_a_write_during_it<kF>(); }
TEST(CodsTornRead, TreeElementwiseReadRetriesAfterAWriteDuringIt) { tree_read_retries_after_a_write_during_it<kE>(); }

// Under contention, both regimes: a writer rewrites a tree node under its lock with keys all v
// and values all v + 1; every copy BLinkTree::read returns pairs them.
template <ds::Regime R>
void tree_never_tears_under_contention() {
  using T = Tree4<R>;
  const CpuThread g;
  typename T::Node node;
  T::init_leaf(&node);
  auto put_content = [&g, &node](BareEnv& e, std::uint64_t v) {
    typename T::KFrag k;
    typename T::VFrag x;
    k.fill(v);
    x.fill(v + 1);
    ds::lock(g, e, node.version());
    T::write(g, e, &node, k, x);
    ds::unlock(g, e, node.version());
  };
  BareEnv env;
  put_content(env, 0);
  Contention c;
  std::thread writer([&] {
    BareEnv we;
    for (std::uint64_t v = 1; !c.stop.load(std::memory_order_relaxed); ++v) {
      put_content(we, v);
      c.writes.fetch_add(1, std::memory_order_relaxed);
    }
  });
  c.run([&] {
    typename T::KFrag rk;
    typename T::VFrag rv;
    T::read(g, env, &node, rk, rv);
    bool whole = true;
    for (unsigned j = 0; j < T::Shape::kWords; ++j) whole = whole && rk.e[j] == rk.e[0];
    for (unsigned j = 0; j < T::Shape::kValueWords; ++j) whole = whole && rv.e[j] == rk.e[0] + 1;
    return std::pair<bool, std::uint64_t>{whole, rk.e[0]};
  });
  writer.join();
  c.expect_never_torn();
}
TEST(CodsTornRead, TreeFullyAtomicNeverTearsUnderContention) { tree_never_tears_under_contention<kF>(); }
TEST(CodsTornRead, TreeElementwiseNeverTearsUnderContention) { tree_never_tears_under_contention<kE>(); }

}  // namespace
}  // namespace duet::cods

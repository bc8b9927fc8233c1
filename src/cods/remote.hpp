// Simulated remote memory for the CODS structures (docs/cods.md, "Remote memory").
//
// There is no RDMA hardware here. This file models what a one-sided RDMA backend (the seed
// used Remus over verbs) gives a CODS structure, inside one process:
//  * memory nodes, each with one registered region (an anonymous mapping) and a memory key;
//  * remote words: a region address with the memory node's id in the stolen bits 48..62
//    (RemotePtr), so a word stored in remote memory names the machine that holds its target;
//  * a memory-key context per thread (RemoteContext): the keys of every region, the delay that
//    each round trip costs (a spin, 0 in tests), counters of the reads, writes and CASes made,
//    and a node allocator (chunks carved from the regions by one atomic add, nodes carved from a
//    thread's chunk, spread round-robin over the memory nodes; a node never published goes to
//    the thread's free list; a retired node is not reused: the seed leaked those too, since
//    reclaiming them needs an epoch agreed across machines).
// The accesses themselves are this process's loads, stores and CASes on the region; what is
// simulated is their cost. A real backend would issue one RDMA operation per counted round
// trip, and must keep each node either always remote or always local: one-sided operations
// are not atomic with a CPU's own atomics on the same word.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cods/atomic.hpp"
#include "duet/status.hpp"

namespace duet::cods {

/// The encoding of a remote word. Bits 0..47: the target's address in its memory node's region
/// (targets are at least 8-byte aligned, so bit 0 is free for the list's DELETED mark); bits
/// 48..62: the memory node id; bit 63: zero. Null is 0 (no region starts at address 0).
struct RemotePtr {
  static constexpr unsigned kIdShift = 48;
  static constexpr std::uint64_t kAddressMask = (std::uint64_t(1) << kIdShift) - 1;
  static constexpr unsigned kMaxNodes = 1u << 15;

  static constexpr std::uint64_t encode(unsigned node, std::uint64_t address) {
    return address == 0 ? 0 : (std::uint64_t(node) << kIdShift) | address;
  }
  static constexpr unsigned node_of(std::uint64_t w) { return static_cast<unsigned>(w >> kIdShift) & (kMaxNodes - 1); }
  static constexpr std::uint64_t address_of(std::uint64_t w) { return w & kAddressMask; }
};

/// How the simulated cluster is laid out.
struct RemoteConfig {
  unsigned memory_nodes = 1;                  ///< 1..64
  std::uint64_t region_bytes = 256ull << 20;  ///< per memory node (virtual; pages are touched on use)
  std::uint64_t delay_ns = 0;                 ///< cost of one round trip (a spin); 0 in tests
};

/// Round trips made by one context (plain counters: a context is one thread's).
struct RemoteCounters {
  std::uint64_t reads = 0;       ///< one-sided reads (a node get, a version re-check, a root word)
  std::uint64_t writes = 0;      ///< one-sided writes (a node set, a word store, a lock release)
  std::uint64_t cases = 0;       ///< one-sided CASes (lock and version attempts)
  std::uint64_t node_reads = 0;  ///< coalesced node gets (the search bound counts these)
  std::uint64_t retired = 0;     ///< nodes retired and left unreused (leaked until the region goes)
  std::uint64_t round_trips() const { return reads + writes + cases; }
};

/// The memory nodes of a simulated cluster and their registered regions. Thread-safe; must
/// outlive every context on it.
class RemoteMemory {
 public:
  /// InvalidArgument for 0 or more than 64 memory nodes, a region below 64 KiB or above 2^46
  /// bytes, or a delay above 1 s; ResourceExhausted when a region cannot be mapped.
  static Status make(const RemoteConfig& c, std::unique_ptr<RemoteMemory>* out) {
    if (!out) return Status::InvalidArgument("out is null");
    if (c.memory_nodes == 0 || c.memory_nodes > 64)
      return Status::InvalidArgument("memory node count " + std::to_string(c.memory_nodes) + " is outside [1, 64]");
    if (c.region_bytes < kChunk || c.region_bytes > (std::uint64_t(1) << 46))
      return Status::InvalidArgument("region size " + std::to_string(c.region_bytes) + " is outside [64 KiB, 2^46]");
    if (c.delay_ns > 1'000'000'000) return Status::InvalidArgument("delay " + std::to_string(c.delay_ns) + " ns is above 1 s");
    std::unique_ptr<RemoteMemory> m(new RemoteMemory(c));
    for (unsigned i = 0; i < c.memory_nodes; ++i) {
      void* p = mmap(nullptr, c.region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) return Status::ResourceExhausted("cannot map a region of " + std::to_string(c.region_bytes) + " bytes");
      const auto a = reinterpret_cast<std::uint64_t>(p);
      if (a + c.region_bytes > RemotePtr::kAddressMask) {
        munmap(p, c.region_bytes);
        return Status::ResourceExhausted("a region was mapped above 2^48 (no room for the stolen bits)");
      }
      // The key a NIC would check on every access: any per-region value (here a mix of the id
      // and the address) that a context must present.
      m->regions_[i].base = a;
      m->regions_[i].key = (a * 0x9e3779b97f4a7c15ull) ^ (std::uint64_t(i) << 32) ^ 0x5eed;
    }
    *out = std::move(m);
    return Status::Ok();
  }
  ~RemoteMemory() {
    for (unsigned i = 0; i < config_.memory_nodes; ++i)
      if (regions_[i].base) munmap(reinterpret_cast<void*>(regions_[i].base), config_.region_bytes);
  }
  RemoteMemory(const RemoteMemory&) = delete;
  RemoteMemory& operator=(const RemoteMemory&) = delete;

  const RemoteConfig& config() const { return config_; }
  /// Changes the delay of contexts made from now on (existing ones keep theirs). Not
  /// thread-safe: call while no context is being made (benchmarks prefill without delay).
  void set_delay_ns(std::uint64_t ns) { config_.delay_ns = ns; }
  unsigned memory_nodes() const { return config_.memory_nodes; }
  /// The memory key of node i's region.
  std::uint64_t key(unsigned i) const { return regions_[i].key; }
  std::uint64_t base(unsigned i) const { return regions_[i].base; }
  /// True when [address, address + bytes) lies in node i's region.
  bool contains(unsigned i, std::uint64_t address, std::uint64_t bytes) const {
    return i < config_.memory_nodes && address >= regions_[i].base &&
           address + bytes <= regions_[i].base + config_.region_bytes;
  }
  /// The memory node whose region holds address, or -1.
  int node_of_address(std::uint64_t address) const {
    for (unsigned i = 0; i < config_.memory_nodes; ++i)
      if (contains(i, address, 1)) return static_cast<int>(i);
    return -1;
  }
  /// Reserves `bytes` (rounded up to 128) of node i's region, zeroed and 128-byte aligned:
  /// its address, or 0 when the region is full. One CAS (a real backend: an RPC to the
  /// memory node's allocator, rare because contexts take whole chunks).
  std::uint64_t reserve(unsigned i, std::uint64_t bytes) {
    bytes = (bytes + 127) & ~std::uint64_t(127);
    std::uint64_t off = regions_[i].used.load(std::memory_order_relaxed);
    do {
      if (off + bytes > config_.region_bytes) return 0;  // full: nothing taken
    } while (!regions_[i].used.compare_exchange_weak(off, off + bytes, std::memory_order_relaxed));
    return regions_[i].base + off;
  }
  /// Bytes of node i's region handed out so far.
  std::uint64_t used(unsigned i) const { return regions_[i].used.load(std::memory_order_relaxed); }
  /// Chunk a context takes from a region at a time.
  static constexpr std::uint64_t kChunk = 64 * 1024;

 private:
  explicit RemoteMemory(const RemoteConfig& c) : config_(c), regions_(c.memory_nodes) {}
  struct Region {
    std::uint64_t base = 0;
    std::uint64_t key = 0;
    std::atomic<std::uint64_t> used{128};  // offset 0 is never handed out
  };
  RemoteConfig config_;
  std::vector<Region> regions_;
};

/// One thread's memory-key context on a RemoteMemory: the keys it presents, its round-trip
/// counters and delay, and its node allocator. Not thread-safe; one per thread.
class RemoteContext {
 public:
  explicit RemoteContext(RemoteMemory& m) : mem_(&m), delay_ns_(m.config().delay_ns), chunks_(m.memory_nodes()) {
    for (unsigned i = 0; i < m.memory_nodes(); ++i) keys_.push_back(m.key(i));
  }

  RemoteMemory& memory() const { return *mem_; }

  /// The word for a local address of a region (0 for null).
  std::uint64_t to_word(const void* p) const {
    const auto a = reinterpret_cast<std::uint64_t>(p);
    if (a == 0) return 0;
    const int n = mem_->node_of_address(a);
    if (n < 0) fail("an address outside every region was stored", a);
    return RemotePtr::encode(static_cast<unsigned>(n), a);
  }
  /// The local address a word points at (its DELETED mark dropped), checked against the
  /// region of the node it names and the key this context holds for it (a NIC would refuse
  /// the access): a failed check is a broken structure and aborts with a message.
  void* to_address(std::uint64_t w) const {
    const std::uint64_t a = RemotePtr::address_of(w) & ~std::uint64_t(1);
    if (a == 0) return nullptr;
#ifndef NDEBUG
    const unsigned n = RemotePtr::node_of(w);
    if (!mem_->contains(n, a, 8) || keys_[n] != mem_->key(n)) fail("a word names a region that does not hold it", w);
#endif
    return reinterpret_cast<void*>(a);
  }

  /// Round trips: counted, each costing the configured delay.
  void read(unsigned trips = 1) {
    counters_.reads += trips;
    wait(trips);
  }
  void write(unsigned trips = 1) {
    counters_.writes += trips;
    wait(trips);
  }
  void cas() {
    ++counters_.cases;
    wait(1);
  }

  /// A zeroed, 128-byte aligned block of `bytes` on the next memory node in round-robin order
  /// (or on `node`), or null when every region is full.
  void* alloc(std::uint64_t bytes, int node = -1) {
    bytes = (bytes + 127) & ~std::uint64_t(127);
    auto& fl = free_[bytes];
    if (node < 0 && !fl.empty()) {
      void* p = fl.back();
      fl.pop_back();
      std::memset(p, 0, bytes);
      return p;
    }
    const unsigned n = mem_->memory_nodes();
    for (unsigned tries = 0; tries < n; ++tries) {
      const unsigned i = node >= 0 ? static_cast<unsigned>(node) % n : next_node_++ % n;
      if (bytes > RemoteMemory::kChunk) {
        if (const std::uint64_t a = mem_->reserve(i, bytes)) return reinterpret_cast<void*>(a);
      } else {
        Chunk& c = chunks_[i];
        if (c.next + bytes > c.end) {
          const std::uint64_t a = mem_->reserve(i, RemoteMemory::kChunk);
          if (a) c = {a, a + RemoteMemory::kChunk};
          else if (const std::uint64_t b = mem_->reserve(i, bytes)) return reinterpret_cast<void*>(b);  // the last bytes
        }
        if (c.next + bytes <= c.end) {
          const std::uint64_t a = c.next;
          c.next += bytes;
          return reinterpret_cast<void*>(a);
        }
      }
      if (node >= 0) break;
    }
    return nullptr;
  }
  /// Takes back a block never published (no other thread can hold it).
  void free_unpublished(void* p, std::uint64_t bytes) {
    if (p) free_[(bytes + 127) & ~std::uint64_t(127)].push_back(p);
  }
  /// A block other threads may still read: left as it is (counted).
  void retire(void* p) {
    if (p) ++counters_.retired;
  }

  RemoteCounters& counters() { return counters_; }
  const RemoteCounters& counters() const { return counters_; }

 private:
  struct Chunk {
    std::uint64_t next = 0, end = 0;
  };
  void wait(unsigned trips) const {
    if (delay_ns_ == 0) return;
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(delay_ns_ * trips);
    while (std::chrono::steady_clock::now() < end) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }
  [[noreturn]] static void fail(const char* what, std::uint64_t w) {
    std::fprintf(stderr, "cods remote memory: %s (word %#llx)\n", what, static_cast<unsigned long long>(w));
    std::abort();
  }

  RemoteMemory* mem_;
  std::uint64_t delay_ns_;
  std::vector<std::uint64_t> keys_;
  std::vector<Chunk> chunks_;
  std::unordered_map<std::uint64_t, std::vector<void*>> free_;
  unsigned next_node_ = 0;
  RemoteCounters counters_;
};

}  // namespace duet::cods

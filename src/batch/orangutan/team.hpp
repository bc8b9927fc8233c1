// A team of threads that runs one body on every member at once, with a barrier inside it:
// OranguTAN's phases (Part I, barrier, Part II) need a barrier per block, so the team keeps
// its threads and wakes them per block instead of handing ranges to a pool twice.
//
// Waiting spins briefly (longer when every member has a core), yields the core a few times, and
// then sleeps on the atomic (futex), so an oversubscribed team (8 members on 2 cores) still
// makes progress.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace duet::batch::orangutan {

class Team {
 public:
  /// `threads` members (>= 1; 0 means one per hardware thread); the caller of run() is member 0.
  explicit Team(unsigned threads);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  unsigned size() const { return n_; }

  /// Runs body(member) on every member (0 .. size()-1) and returns when all have returned.
  /// One run at a time (callers serialise). The body must not throw.
  template <class F>
  void run(F&& body) {
    run_erased([](void* ctx, unsigned m) { (*static_cast<F*>(ctx))(m); }, &body);
  }

  /// Inside run(): returns once every member has called it (all writes before it are visible to
  /// every member after it).
  void barrier();

  /// [begin, end) of member m's contiguous share of n items.
  std::pair<std::size_t, std::size_t> slice(std::size_t n, unsigned m) const {
    return {n * m / n_, n * (m + 1) / n_};
  }

 private:
  void run_erased(void (*fn)(void*, unsigned), void* ctx);
  void worker(unsigned id);
  template <class T>
  void wait_while_equal(const std::atomic<T>& a, T value) const;

  const unsigned n_;
  unsigned spin_;
  std::vector<std::thread> threads_;
  void (*fn_)(void*, unsigned) = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<std::uint32_t> generation_{0};
  alignas(64) std::atomic<std::uint32_t> done_{0};
  alignas(64) std::atomic<std::uint32_t> arrived_{0};
  alignas(64) std::atomic<std::uint32_t> phase_{0};
  bool stop_ = false;
};

}  // namespace duet::batch::orangutan

// A team of threads that runs one body on every member at once, with a barrier inside it:
// OranguTAN's phases (Part I, barrier, Part II) need a barrier per block, so the team keeps
// its threads and wakes them per block instead of handing ranges to a pool twice.
//
// Waiting spins briefly (longer when every member has a core), yields the core a few times, and
// then sleeps on the atomic (futex), so an oversubscribed team (8 members on 2 cores) still
// makes progress.
//
// Synchronisation, two ways (TeamSync):
//   kSpread (a member per core): the barrier is a dissemination barrier (ceil(log2 n) rounds; in
//     round r member i signals member i + 2^r and waits for member i - 2^r, each flag on its
//     own cache line), and the end of run() is one flag per member that the caller reads. No
//     line is contended; a central counter makes every arrival a transfer of one line between
//     cores, in series.
//   kCentral (more members than cores): one arrival counter, and the last to arrive wakes all.
//     A member that sleeps is woken once per barrier, not once per round.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace duet::batch::orangutan {

/// How a team synchronises (see above). kAuto: kSpread when the members fit the hardware
/// threads, else kCentral.
enum class TeamSync : std::uint8_t { kAuto = 0, kSpread = 1, kCentral = 2 };

class Team {
 public:
  /// `threads` members (>= 1; 0 means one per hardware thread); the caller of run() is member 0.
  explicit Team(unsigned threads, TeamSync sync = TeamSync::kAuto);
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

  /// Inside run(), by member `member` (the body's argument): returns once every member has
  /// called it (all writes before it are visible to every member after it).
  void barrier(unsigned member);

  /// [begin, end) of member m's contiguous share of n items.
  std::pair<std::size_t, std::size_t> slice(std::size_t n, unsigned m) const {
    return {n * m / n_, n * (m + 1) / n_};
  }

 private:
  void run_erased(void (*fn)(void*, unsigned), void* ctx);
  void worker(unsigned id);
  template <class T>
  void wait_while_equal(const std::atomic<T>& a, T value) const;

  /// One word on its own cache line.
  struct alignas(64) Flag {
    std::atomic<std::uint32_t> v{0};
  };
  static constexpr unsigned kMaxRounds = 11;  // 2^11 > 1024 members

  const unsigned n_;
  bool spread_ = true;
  unsigned rounds_ = 0;  ///< ceil(log2 n_)
  unsigned spin_;
  std::vector<std::thread> threads_;
  void (*fn_)(void*, unsigned) = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<std::uint32_t> generation_{0};
  std::unique_ptr<Flag[]> done_;     ///< per member: the last generation it finished
  std::unique_ptr<Flag[]> signal_;   ///< [member * kMaxRounds + round]: the last barrier signalled to it
  std::unique_ptr<std::uint32_t[]> epoch_;  ///< per member: barriers it has passed (its own only)
  // kCentral
  alignas(64) std::atomic<std::uint32_t> finished_{0};
  alignas(64) std::atomic<std::uint32_t> arrived_{0};
  alignas(64) std::atomic<std::uint32_t> phase_{0};
  bool stop_ = false;
};

}  // namespace duet::batch::orangutan

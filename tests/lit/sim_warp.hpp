// A warp of 32 lanes emulated on one host thread, for running the code path a GPU compiles for
// cods::GpuTile<32> (every lane-indexed branch, shuffle and ballot) on a machine without a GPU.
//
// SimTile has GpuTile<32>'s interface (kSize, lane, is_leader, ballot, any, all, shfl, sync).
// SimWarp::run runs a body on 32 lanes, each a fiber (ucontext) with its own stack, switched
// round-robin: a lane that reaches a collective deposits its value and hands over to the next
// lane; the last lane completes the collective (all values are then visible to all lanes) and
// hands back to lane 0. So lanes run in lock step between collectives, as a converged warp,
// and a body that makes collectives divergently (a lane skipping one, or calling a different
// kind) is caught and reported instead of hanging, which on a GPU is undefined behaviour.
//
// Cost: about 32 fiber switches per collective (some microseconds). Test use only; not
// thread-safe (one warp per thread at a time). Fibers are invisible to AddressSanitizer, so
// callers skip it in sanitizer builds.
#pragma once

#include <ucontext.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

namespace duet::lit::testing {

class SimWarp;

/// One lane's handle on an emulated warp: the interface of cods::GpuTile<32>.
struct SimTile {
  static constexpr unsigned kSize = 32;
  SimWarp* warp;
  unsigned lane_index;

  static constexpr unsigned size() { return kSize; }
  unsigned lane() const { return lane_index; }
  bool is_leader(unsigned leader = 0) const { return lane_index == leader; }
  /// Bit i set when lane i's predicate holds.
  std::uint32_t ballot(bool pred) const;
  bool any(bool pred) const { return ballot(pred) != 0; }
  bool all(bool pred) const { return ballot(pred) == 0xFFFFFFFFu; }
  /// v as lane src (mod 32) holds it. T is at most 8 bytes and trivially copyable.
  template <class T>
  T shfl(T v, unsigned src) const;
  /// A barrier of the warp's lanes.
  void sync() const;
};

/// The emulated warp: 32 fibers and the exchange area of one collective at a time.
class SimWarp {
 public:
  static constexpr unsigned kLanes = 32;
  static constexpr std::size_t kStackBytes = std::size_t{256} << 10;

  SimWarp() : stacks_(kLanes, std::vector<char>(kStackBytes)) {}
  SimWarp(const SimWarp&) = delete;
  SimWarp& operator=(const SimWarp&) = delete;

  /// Runs body(tile) on all 32 lanes and returns when every lane has returned. Aborts with a
  /// message if the lanes' collectives diverge.
  void run(const std::function<void(const SimTile&)>& body) {
    body_ = &body;
    done_.fill(false);
    collectives_ = 0;
    current() = this;
    for (unsigned l = 0; l < kLanes; ++l) {
      getcontext(&lanes_[l]);
      lanes_[l].uc_stack.ss_sp = stacks_[l].data();
      lanes_[l].uc_stack.ss_size = kStackBytes;
      lanes_[l].uc_link = nullptr;
      makecontext(&lanes_[l], reinterpret_cast<void (*)()>(&SimWarp::trampoline), 1, int(l));
    }
    swapcontext(&main_, &lanes_[0]);
    current() = nullptr;
  }

  /// Collectives made by the last run (the work of one warp, in warp instructions).
  std::uint64_t collectives() const { return collectives_; }

  /// Lane `lane` takes part in a collective of kind `kind` with value v; returns every lane's
  /// value once all 32 have arrived.
  const std::array<std::uint64_t, kLanes>& exchange(unsigned lane, unsigned kind, std::uint64_t v) {
    in_[lane] = v;
    kind_[lane] = kind;
    if (lane + 1 < kLanes) {
      swapcontext(&lanes_[lane], &lanes_[lane + 1]);
    } else {
      for (unsigned l = 0; l < kLanes; ++l)
        if (done_[l] || kind_[l] != kind) fail("lanes diverged at a collective", l);
      out_ = in_;
      ++collectives_;
      swapcontext(&lanes_[lane], &lanes_[0]);
    }
    return out_;
  }

 private:
  static SimWarp*& current() {
    static thread_local SimWarp* w = nullptr;
    return w;
  }

  static void trampoline(int lane) {
    SimWarp* w = current();
    (*w->body_)(SimTile{w, unsigned(lane)});
    w->done_[lane] = true;
    if (unsigned(lane) + 1 < kLanes) {
      setcontext(&w->lanes_[lane + 1]);
    } else {
      for (unsigned l = 0; l < kLanes; ++l)
        if (!w->done_[l]) fail("a lane returned while others were in a collective", l);
      setcontext(&w->main_);
    }
  }

  [[noreturn]] static void fail(const char* what, unsigned lane) {
    std::fprintf(stderr, "SimWarp: %s (lane %u)\n", what, lane);
    std::abort();
  }

  const std::function<void(const SimTile&)>* body_ = nullptr;
  ucontext_t main_{};
  std::array<ucontext_t, kLanes> lanes_{};
  std::vector<std::vector<char>> stacks_;
  std::array<std::uint64_t, kLanes> in_{}, out_{};
  std::array<unsigned, kLanes> kind_{};
  std::array<bool, kLanes> done_{};
  std::uint64_t collectives_ = 0;
};

inline std::uint32_t SimTile::ballot(bool pred) const {
  const auto& all = warp->exchange(lane_index, 1, pred ? 1 : 0);
  std::uint32_t m = 0;
  for (unsigned l = 0; l < kSize; ++l) m |= std::uint32_t(all[l] & 1) << l;
  return m;
}

template <class T>
T SimTile::shfl(T v, unsigned src) const {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "a shuffle moves at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  const auto& all = warp->exchange(lane_index, 2, bits);
  T r;
  std::memcpy(&r, &all[src % kSize], sizeof(T));
  return r;
}

inline void SimTile::sync() const { warp->exchange(lane_index, 3, 0); }

}  // namespace duet::lit::testing

// Per-element atomics on 8-byte words, the same call on both processors.
//
// CODS assumes only 8-byte atomic loads, stores and CAS (dissertation section 5.2), because
// that is what every backend shares. On the CPU these are std::atomic_ref operations; in
// device code they are libcu++ cuda::atomic_ref operations at device scope, which compile to
// ld.acquire / st.release / atom.cas. Every function is wait-free and costs one memory
// operation (plus a fence where the order asks for one).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "cods/hd.hpp"

#if defined(__CUDACC__)
#include <cuda/atomic>
#endif

namespace duet::cods {

/// Memory orders offered by the element atomics; a subset both backends implement.
enum class Order { relaxed, acquire, release, acq_rel, seq_cst };

namespace detail {
inline constexpr std::memory_order to_std(Order o) {
  switch (o) {
    case Order::relaxed: return std::memory_order_relaxed;
    case Order::acquire: return std::memory_order_acquire;
    case Order::release: return std::memory_order_release;
    case Order::acq_rel: return std::memory_order_acq_rel;
    default: return std::memory_order_seq_cst;
  }
}
/// The order a failed CAS reads with: the success order without its release part.
DUET_HD inline constexpr Order failure_order(Order o) {
  return o == Order::acq_rel ? Order::acquire : o == Order::release ? Order::relaxed : o;
}
#if defined(__CUDACC__)
DUET_HD inline constexpr cuda::std::memory_order to_cuda(Order o) {
  switch (o) {
    case Order::relaxed: return cuda::std::memory_order_relaxed;
    case Order::acquire: return cuda::std::memory_order_acquire;
    case Order::release: return cuda::std::memory_order_release;
    case Order::acq_rel: return cuda::std::memory_order_acq_rel;
    default: return cuda::std::memory_order_seq_cst;
  }
}
#endif
}  // namespace detail

/// Atomically loads *p. p must be 8-byte aligned.
DUET_HD DUET_INLINE std::uint64_t atomic_load(const std::uint64_t* p, Order o = Order::seq_cst) {
#if DUET_DEVICE_PASS
  return cuda::atomic_ref<const std::uint64_t, cuda::thread_scope_device>(*p).load(detail::to_cuda(o));
#else
  return std::atomic_ref<const std::uint64_t>(*p).load(detail::to_std(o));
#endif
}

/// Atomically stores v into *p.
DUET_HD DUET_INLINE void atomic_store(std::uint64_t* p, std::uint64_t v, Order o = Order::seq_cst) {
#if DUET_DEVICE_PASS
  cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>(*p).store(v, detail::to_cuda(o));
#else
  std::atomic_ref<std::uint64_t>(*p).store(v, detail::to_std(o));
#endif
}

/// Compare-and-swap: if *p == expected, stores desired and returns true; otherwise writes the
/// value found into expected and returns false. Strong (never fails spuriously). A failed CAS
/// reads with the success order minus release, so a retry loop may use the value it got.
DUET_HD DUET_INLINE bool atomic_cas(std::uint64_t* p, std::uint64_t& expected, std::uint64_t desired,
                                    Order o = Order::seq_cst) {
#if DUET_DEVICE_PASS
  return cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>(*p).compare_exchange_strong(
      expected, desired, detail::to_cuda(o), detail::to_cuda(detail::failure_order(o)));
#else
  return std::atomic_ref<std::uint64_t>(*p).compare_exchange_strong(expected, desired, detail::to_std(o),
                                                                    detail::to_std(detail::failure_order(o)));
#endif
}

/// Atomically replaces *p with v and returns the previous value (one read-modify-write, done
/// where the memory lives: in L2 on the GPU).
DUET_HD DUET_INLINE std::uint64_t atomic_exchange(std::uint64_t* p, std::uint64_t v, Order o = Order::seq_cst) {
#if DUET_DEVICE_PASS
  return cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>(*p).exchange(v, detail::to_cuda(o));
#else
  return std::atomic_ref<std::uint64_t>(*p).exchange(v, detail::to_std(o));
#endif
}

/// Atomically adds v to *p and returns the previous value.
DUET_HD DUET_INLINE std::uint64_t atomic_add(std::uint64_t* p, std::uint64_t v, Order o = Order::seq_cst) {
#if DUET_DEVICE_PASS
  return cuda::atomic_ref<std::uint64_t, cuda::thread_scope_device>(*p).fetch_add(v, detail::to_cuda(o));
#else
  return std::atomic_ref<std::uint64_t>(*p).fetch_add(v, detail::to_std(o));
#endif
}

/// A full fence at device scope (GPU) or across all CPU threads.
DUET_HD DUET_INLINE void fence(Order o = Order::seq_cst) {
#if DUET_DEVICE_PASS
  cuda::atomic_thread_fence(detail::to_cuda(o), cuda::thread_scope_device);
#else
  std::atomic_thread_fence(detail::to_std(o));
#endif
}

/// A hint for a spinning thread: pause on x86, a short sleep on the GPU.
DUET_HD DUET_INLINE void spin_pause() {
#if DUET_DEVICE_PASS
  __nanosleep(32);
#else
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
  // Every 64th pause of a thread gives its core away: on a machine with more runnable threads
  // than cores, a spinner would otherwise burn the time slice the lock holder needs.
  thread_local unsigned pauses = 0;
  if ((++pauses & 63) == 0) std::this_thread::yield();
#endif
}

}  // namespace duet::cods

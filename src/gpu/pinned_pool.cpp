#include "gpu/device.hpp"

namespace duet::gpu {

static std::size_t size_class(std::size_t bytes) {
  std::size_t c = 4096;
  while (c < bytes) c <<= 1;
  return c;
}

PinnedPool::~PinnedPool() {
  for (auto& b : blocks_) free_host(b.p);
}

void* PinnedPool::acquire(std::size_t bytes) {
  const std::size_t want = size_class(bytes);
  std::lock_guard<std::mutex> lk(m_);
  for (auto& b : blocks_)
    if (!b.in_use && b.bytes == want) {
      b.in_use = true;
      return b.p;
    }
  void* p = alloc_host(want);
  if (!p) return nullptr;
  blocks_.push_back({p, want, true});
  held_ += want;
  return p;
}

void PinnedPool::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lk(m_);
  for (auto& b : blocks_)
    if (b.p == p) b.in_use = false;
}

std::size_t PinnedPool::bytes_held() const {
  std::lock_guard<std::mutex> lk(m_);
  return held_;
}

std::string describe() {
  const DeviceInfo& d = device();
  if (!d.present) return "cpu (" + d.reason + ")";
  return "gpu: " + d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
         std::to_string(d.sm_count) + " SMs, " + std::to_string(d.global_bytes >> 30) + " GiB)";
}

}  // namespace duet::gpu

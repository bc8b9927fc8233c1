// The device layer in every build: discovery answers consistently, and the pinned pool hands
// out aligned buffers and reuses released ones (pinned with a GPU, ordinary memory without).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "gpu/device.hpp"

using namespace duet::gpu;

TEST(GpuLayer, DiscoveryIsConsistent) {
  const DeviceInfo& d = device();
  EXPECT_EQ(&d, &device());  // discovered once
  if (d.present) {
    EXPECT_TRUE(d.cuda_build);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GT(d.global_bytes, 0u);
    EXPECT_NE(describe().find("gpu: "), std::string::npos);
  } else {
    EXPECT_FALSE(d.reason.empty());
    EXPECT_NE(describe().find("cpu"), std::string::npos);
    Stream s;
    EXPECT_EQ(s.create().code(), duet::StatusCode::kUnavailable);
    EXPECT_TRUE(s.synchronize().ok());
  }
}

TEST(GpuLayer, PinnedPoolReusesBuffersBySizeClass) {
  PinnedPool pool;
  void* a = pool.acquire(5000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 5000);
  void* b = pool.acquire(5000);
  EXPECT_NE(a, b);  // a is in use
  pool.release(a);
  EXPECT_EQ(pool.acquire(8000), a);  // same 8 KiB class, handed out again
  EXPECT_EQ(pool.bytes_held(), 2u * 8192);
  pool.release(nullptr);  // ignored
}

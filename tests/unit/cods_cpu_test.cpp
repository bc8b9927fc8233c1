// CODS on the CPU: the shared cases run by one thread, and the fully atomic regime under
// concurrent CPU writers and readers.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "unit/cods_cases.hpp"

using namespace duet::cods;

TEST(CodsCpu, FragmentOperations) {
  CObject<32> obj;
  for (unsigned i = 0; i < 32; ++i) obj.elem[i] = 3 * i + 1 + 9;
  EXPECT_EQ(cases::fragment_ops_case(CpuThread{}, obj, 9), 0);
}

TEST(CodsCpu, ElementAtomics) {
  CObject<8> obj{};
  EXPECT_EQ(cases::element_atomics_case(CpuThread{}, obj), 0);
}

TEST(CodsCpu, CObjectsAreAlignedForCoalescedAccess) {
  EXPECT_EQ(alignof(CObject<8>), 64u);
  EXPECT_EQ(alignof(CObject<16>), 128u);
  EXPECT_EQ(alignof(CObject<32>), 128u);
}

TEST(CodsCpu, FullyAtomicGetNeverSeesATornSet) {
  AtomicCObject<32> obj{};
  std::atomic<int> torn{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] { torn += cases::fully_atomic_case(CpuThread{}, obj, t < 2, t, 20000); });
  for (auto& t : ts) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(obj.version % 2, 0u);
  EXPECT_EQ(obj.version, 2u * 2 * 20000);  // every set completed exactly once
}

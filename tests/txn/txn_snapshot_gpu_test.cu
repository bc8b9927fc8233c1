// SNAPSHOT's packed buffer on the GPU: a snapshot of points and ranges over keys and values of
// varied sizes (with deletes and absent points) is packed into one page-locked buffer, copied
// to the device in one call, and a kernel that knows only the documented layout (txn.hpp,
// PackedSnapshot) hashes every slot's key and value; the hashes, lengths and presence flags
// must equal the host's. Skipped, visibly, without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "duet/txn.hpp"
#include "gpu/device.hpp"

namespace duet {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!gpu::device().present) GTEST_SKIP() << "no GPU: " << gpu::device().reason

__host__ __device__ std::uint64_t fnv(const char* p, std::uint64_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint64_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
  return h;
}

struct SlotDigest {
  std::uint64_t key_hash, value_hash, key_len, value_len, present;
};

/// Reads slot i of a packed snapshot from its header and section offsets alone.
__global__ void digest_slots(const char* buf, std::uint64_t value_bytes_at, SlotDigest* out) {
  const auto* u = reinterpret_cast<const std::uint64_t*>(buf);
  const std::uint64_t n = u[0], m = u[1];
  const std::uint64_t* key_off = u + 2;
  const std::uint64_t* val_off = key_off + (n + 1);
  const std::uint64_t present_at = 16 + 8 * (n + 1) * 2 + 8 * (m + 1);
  const std::uint64_t key_bytes_at = (present_at + n + 7) & ~std::uint64_t{7};
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const std::uint64_t kl = key_off[i + 1] - key_off[i], vl = val_off[i + 1] - val_off[i];
    out[i] = {fnv(buf + key_bytes_at + key_off[i], kl), fnv(buf + value_bytes_at + val_off[i], vl), kl, vl,
              static_cast<std::uint64_t>(buf[present_at + i])};
  }
}

TEST(TxnSnapshotGpu, PackedBufferIsOneCopyAndReadableOnTheDevice) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<TxnSpace> s;
  ASSERT_TRUE(TxnSpace::open("gpu", TxnConfig{}, &s).ok());
  std::mt19937_64 rng(17);
  const int n = 200000;
  for (int b = 0; b < n; b += 1000) {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    for (int i = b; i < b + 1000; ++i) {
      char k[40];
      std::snprintf(k, sizeof k, i % 5 ? "acct/%07d" : "acct/%07d/with-a-longer-suffix", i);
      ASSERT_TRUE(t.put(k, std::string(1 + rng() % 200, static_cast<char>('a' + i % 26))).ok());
    }
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
    ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
  }
  Txn d;  // some deletes, so ranges skip tombstones
  ASSERT_TRUE(s->begin(&d).ok());
  for (int i = 0; i < n; i += 97) {
    char k[40];
    std::snprintf(k, sizeof k, i % 5 ? "acct/%07d" : "acct/%07d/with-a-longer-suffix", i);
    ASSERT_TRUE(d.del(k).ok());
  }
  CommitResult r;
  ASSERT_TRUE(d.commit(&r).ok());
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  std::vector<SnapshotArg> args = {SnapshotArg::of(TxnRange::all()), SnapshotArg::point("acct/0000001"),
                                   SnapshotArg::point("absent"),
                                   SnapshotArg::of(TxnRange::closed("acct/0100000", "acct/0100500"), 100)};
  TxnSnapshot snap;
  ASSERT_TRUE(t.snapshot(args, &snap).ok());
  ASSERT_GT(snap.size(), static_cast<std::size_t>(n - n / 97 - 2));
  PackedSnapshot p;
  ASSERT_TRUE(PackedSnapshot::pack(snap, &p).ok());
  EXPECT_TRUE(p.pinned()) << "with a GPU the buffer is page-locked";
  char* dev = nullptr;
  SlotDigest* dout = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, p.bytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, sizeof(SlotDigest) * snap.size()), cudaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaMemcpy(dev, p.data(), p.bytes(), cudaMemcpyHostToDevice), cudaSuccess);  // the one copy
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ txn ] packed SNAPSHOT of %zu slots, %zu bytes, copied in one call at %.1f GB/s\n", snap.size(),
              p.bytes(), p.bytes() / sec / 1e9);
  digest_slots<<<256, 256>>>(dev, p.value_bytes_at(), dout);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<SlotDigest> got(snap.size());
  ASSERT_EQ(cudaMemcpy(got.data(), dout, sizeof(SlotDigest) * got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dev);
  cudaFree(dout);
  for (std::size_t i = 0; i < snap.size(); ++i) {
    const auto k = snap.key(i), v = snap.value(i);
    ASSERT_EQ(got[i].key_len, k.size()) << i;
    ASSERT_EQ(got[i].value_len, v.size()) << i;
    ASSERT_EQ(got[i].key_hash, fnv(k.data(), k.size())) << i;
    ASSERT_EQ(got[i].value_hash, fnv(v.data(), v.size())) << i;
    ASSERT_EQ(got[i].present, snap.present[i]) << i;
  }
}

}  // namespace
}  // namespace duet

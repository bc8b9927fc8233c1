// The CODS GPU drivers' bad input on every build (issue 18: bad input to the front ends is
// InvalidArgument): make_gpu_structure, its by-name front ends and make_gpu_versioned_tree refuse
// each bad configuration with InvalidArgument naming the problem, whether the build has CUDA
// (gpu_batch.cu, gpu_versioned.cu) or not (gpu_batch_none.cpp), because both run the plain C++
// checks of gpu_batch_config.cpp. A good configuration gives OK with a GPU and Unavailable
// without one (a build without CUDA, or a machine with no GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "index/cods/gpu_batch.hpp"
#include "index/cods/gpu_versioned.hpp"

using namespace duet;
using namespace duet::cods;
using namespace duet::cods::ds;

namespace {

/// A small pool, so a good configuration is cheap where a GPU builds it.
GpuConfig good_config() {
  GpuConfig c;
  c.pool_nodes = 1024;
  c.pool_max_nodes = 1 << 16;
  return c;
}

GpuVersionedConfig good_versioned_config() {
  GpuVersionedConfig c;
  c.pool_nodes = 1024;
  c.pool_max_nodes = 1 << 16;
  return c;
}

/// What a good configuration gives here: OK with a GPU, Unavailable without one.
StatusCode good_code() { return gpu::device().present ? StatusCode::kOk : StatusCode::kUnavailable; }

template <class Config>
struct BadCase {
  std::string what;                    ///< the test's name for it
  std::function<void(Config&)> spoil;  ///< turns a good configuration into this bad one
  std::string says;                    ///< the message must contain this
};

std::vector<BadCase<GpuConfig>> bad_configs() {
  constexpr std::uint64_t kAbove = (std::uint64_t(1) << 32) + 1;
  return {
      {"unknown kind", [](GpuConfig& c) { c.kind = static_cast<GpuKind>(9); }, "unknown structure kind"},
      {"unknown regime", [](GpuConfig& c) { c.regime = static_cast<Regime>(5); }, "unknown regime"},
      {"unknown mode", [](GpuConfig& c) { c.mode = static_cast<GpuMode>(7); }, "unknown mode"},
      {"unknown order", [](GpuConfig& c) { c.order = static_cast<GpuOrder>(7); }, "unknown order"},
      {"no buckets", [](GpuConfig& c) { c.buckets = 0; }, "bucket count 0 is outside [1, 2^32]"},
      {"buckets above 2^32", [](GpuConfig& c) { c.buckets = kAbove; }, "bucket count 4294967297"},
      {"empty pool", [](GpuConfig& c) { c.pool_nodes = 0; }, "pool_nodes 0 is outside [1, 2^32]"},
      {"pool above 2^32",
       [](GpuConfig& c) {
         c.pool_nodes = kAbove;
         c.pool_max_nodes = kAbove;
       },
       "pool_nodes 4294967297"},
      {"maximum below the first size", [](GpuConfig& c) { c.pool_max_nodes = c.pool_nodes - 1; },
       "pool_max_nodes 1023 is outside [pool_nodes 1024, 2^32]"},
      {"maximum above 2^32", [](GpuConfig& c) { c.pool_max_nodes = kAbove; }, "pool_max_nodes 4294967297"},
      {"K not built", [](GpuConfig& c) { c.keys_per_node = 5; }, "keys_per_node 5 with group 16 is not built"},
      {"K not built for its group", [](GpuConfig& c) { c.keys_per_node = 30; }, "supported: (6, 8)"},
      {"group not built", [](GpuConfig& c) { c.group = 4; }, "keys_per_node 14 with group 4 is not built"},
      {"one lane, K with no tile layout",
       [](GpuConfig& c) {
         c.keys_per_node = 8;
         c.group = 1;
       },
       "keys_per_node 8 with group 1"},
      {"one lane in mixed mode",
       [](GpuConfig& c) {
         c.group = 1;
         c.mode = GpuMode::kMixed;
       },
       "mixed mode runs GETs on tiles"},
      {"planted bug in mixed mode",
       [](GpuConfig& c) {
         c.mode = GpuMode::kMixed;
         c.planted = Bug::kNoRevalidation;
       },
       "planted bug is for group mode only"},
  };
}

std::vector<BadCase<GpuVersionedConfig>> bad_versioned_configs() {
  constexpr std::uint64_t kAbove = (std::uint64_t(1) << 32) + 1;
  return {
      {"unknown regime", [](GpuVersionedConfig& c) { c.regime = static_cast<Regime>(5); }, "unknown regime"},
      {"unknown mode", [](GpuVersionedConfig& c) { c.mode = static_cast<GpuMode>(7); }, "unknown mode"},
      {"pool of one node", [](GpuVersionedConfig& c) { c.pool_nodes = 1; }, "pool_nodes 1 is outside [2, 2^32]"},
      {"pool above 2^32",
       [](GpuVersionedConfig& c) {
         c.pool_nodes = kAbove;
         c.pool_max_nodes = kAbove;
       },
       "pool_nodes 4294967297"},
      {"maximum below the first size", [](GpuVersionedConfig& c) { c.pool_max_nodes = 1000; },
       "pool_max_nodes 1000 is outside [pool_nodes 1024, 2^32]"},
      {"K not built",
       [](GpuVersionedConfig& c) {
         c.keys_per_node = 6;
         c.group = 8;
       },
       "keys_per_node 6 with group 8 is not built; supported: (14, 16)"},
      {"K not built for its group", [](GpuVersionedConfig& c) { c.keys_per_node = 30; }, "with group 16 is not built"},
      {"one lane in mixed mode",
       [](GpuVersionedConfig& c) {
         c.group = 1;
         c.mode = GpuMode::kMixed;
       },
       "mixed mode runs GETs and RANGEs on tiles"},
  };
}

void expect_refused(const Status& s, const std::string& says, const std::string& where) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << where << ": " << s.to_string();
  EXPECT_NE(s.message().find(says), std::string::npos) << where << ": '" << s.message() << "' lacks '" << says << "'";
}

}  // namespace

TEST(CodsGpuConfig, BadConfigsAreInvalidArgumentNamingTheProblem) {
  ASSERT_TRUE(check_gpu_config(good_config()).ok()) << check_gpu_config(good_config()).to_string();
  for (const auto& bad : bad_configs()) {
    GpuConfig c = good_config();
    bad.spoil(c);
    std::unique_ptr<GpuStructure> out;
    expect_refused(check_gpu_config(c), bad.says, bad.what + ", check_gpu_config");
    expect_refused(make_gpu_structure(c, &out), bad.says, bad.what + ", make_gpu_structure");
    EXPECT_EQ(out, nullptr) << bad.what;
    if (c.kind != GpuKind::kHashSet) continue;  // the by-name front ends set the kind themselves
    expect_refused(make_gpu_hash_set(c, &out), bad.says, bad.what + ", make_gpu_hash_set");
    if (bad.says.find("bucket") != std::string::npos) continue;  // a list and a tree have no bucket count
    expect_refused(make_gpu_list(c, &out), bad.says, bad.what + ", make_gpu_list");
    expect_refused(make_gpu_blink_tree(c, &out), bad.says, bad.what + ", make_gpu_blink_tree");
    EXPECT_EQ(out, nullptr) << bad.what;
  }
}

TEST(CodsGpuConfig, BucketsAreAHashSetsOnly) {
  // A list has one bucket and a tree none: their bucket count is not read.
  GpuConfig c = good_config();
  c.buckets = 0;
  c.kind = GpuKind::kList;
  EXPECT_TRUE(check_gpu_config(c).ok()) << check_gpu_config(c).to_string();
  c.kind = GpuKind::kTree;
  EXPECT_TRUE(check_gpu_config(c).ok()) << check_gpu_config(c).to_string();
  std::unique_ptr<GpuStructure> out;
  EXPECT_EQ(make_gpu_list(c, &out).code(), good_code());
  EXPECT_EQ(make_gpu_hash_set(c, &out).code(), StatusCode::kInvalidArgument);
}

TEST(CodsGpuConfig, NullOutIsInvalidArgument) {
  EXPECT_EQ(make_gpu_structure(good_config(), nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_gpu_list(good_config(), nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_gpu_hash_set(good_config(), nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_gpu_blink_tree(good_config(), nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_gpu_versioned_tree(good_versioned_config(), nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(CodsGpuConfig, EveryBuiltConfigPassesAndAGoodOneIsBuiltOrUnavailable) {
  struct Pair {
    unsigned k, g;
  };
  for (const Pair p : {Pair{6, 8}, Pair{14, 8}, Pair{14, 16}, Pair{30, 32}, Pair{6, 1}, Pair{14, 1}, Pair{30, 1}})
    for (const GpuKind kind : {GpuKind::kList, GpuKind::kHashSet, GpuKind::kTree})
      for (const Regime r : {Regime::kElementwise, Regime::kFullyAtomic})
        for (const GpuMode m : {GpuMode::kGroup, GpuMode::kMixed}) {
          if (p.g == 1 && m == GpuMode::kMixed) continue;  // refused above
          GpuConfig c = good_config();
          c.keys_per_node = p.k;
          c.group = p.g;
          c.kind = kind;
          c.regime = r;
          c.mode = m;
          EXPECT_TRUE(check_gpu_config(c).ok()) << p.k << "," << p.g << ": " << check_gpu_config(c).to_string();
        }
  GpuConfig planted = good_config();
  planted.planted = Bug::kNoRevalidation;  // a planted bug in group mode is allowed
  EXPECT_TRUE(check_gpu_config(planted).ok()) << check_gpu_config(planted).to_string();
  // One of each kind built (a small pool): OK with a GPU, Unavailable naming it without one.
  std::unique_ptr<GpuStructure> out;
  for (const GpuKind kind : {GpuKind::kList, GpuKind::kHashSet, GpuKind::kTree}) {
    GpuConfig c = good_config();
    c.kind = kind;
    const Status s = make_gpu_structure(c, &out);
    EXPECT_EQ(s.code(), good_code()) << s.to_string();
    if (s.ok()) {
      ASSERT_NE(out, nullptr);
      EXPECT_GE(out->pool_capacity(), c.pool_nodes);
    } else {
      EXPECT_NE(s.message().find("no GPU"), std::string::npos) << s.to_string();
    }
    out.reset();
  }
}

TEST(CodsGpuConfig, VersionedTreeBadConfigsAreInvalidArgumentNamingTheProblem) {
  ASSERT_TRUE(check_gpu_versioned_config(good_versioned_config()).ok());
  for (const auto& bad : bad_versioned_configs()) {
    GpuVersionedConfig c = good_versioned_config();
    bad.spoil(c);
    std::unique_ptr<GpuVersionedTree> out;
    expect_refused(check_gpu_versioned_config(c), bad.says, bad.what + ", check_gpu_versioned_config");
    expect_refused(make_gpu_versioned_tree(c, &out), bad.says, bad.what + ", make_gpu_versioned_tree");
    EXPECT_EQ(out, nullptr) << bad.what;
  }
}

TEST(CodsGpuConfig, VersionedTreeBuiltConfigsPassAndAGoodOneIsBuiltOrUnavailable) {
  struct Pair {
    unsigned k, g;
  };
  for (const Pair p : {Pair{14, 16}, Pair{30, 32}, Pair{14, 1}, Pair{30, 1}})
    for (const Regime r : {Regime::kElementwise, Regime::kFullyAtomic})
      for (const GpuMode m : {GpuMode::kGroup, GpuMode::kMixed}) {
        if (p.g == 1 && m == GpuMode::kMixed) continue;
        GpuVersionedConfig c = good_versioned_config();
        c.keys_per_node = p.k;
        c.group = p.g;
        c.regime = r;
        c.mode = m;
        EXPECT_TRUE(check_gpu_versioned_config(c).ok()) << check_gpu_versioned_config(c).to_string();
      }
  std::unique_ptr<GpuVersionedTree> out;
  const Status s = make_gpu_versioned_tree(good_versioned_config(), &out);
  EXPECT_EQ(s.code(), good_code()) << s.to_string();
  if (s.ok())
    EXPECT_NE(out, nullptr);
  else
    EXPECT_NE(s.message().find("no GPU"), std::string::npos) << s.to_string();
}

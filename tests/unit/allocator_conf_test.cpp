// The process allocator runs with Duet's settings (src/mem/allocator_conf.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mem/allocator_conf.hpp"

// Builds without jemalloc (a sanitizer's malloc, or DUET_JEMALLOC=OFF) have nothing to check.
#if DUET_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

TEST(AllocatorConf, JemallocUsesTransparentHugePages) {
  // The program's malloc_conf reached jemalloc, unless MALLOC_CONF overrides it on purpose.
  if (const char* env = std::getenv("MALLOC_CONF"); env != nullptr && std::strstr(env, "thp") != nullptr) return;
  const char* thp = nullptr;
  std::size_t len = sizeof(thp);
  ASSERT_EQ(mallctl("opt.thp", &thp, &len, nullptr, 0), 0);
  EXPECT_STREQ(thp, "always");
  const char* meta = nullptr;
  len = sizeof(meta);
  ASSERT_EQ(mallctl("opt.metadata_thp", &meta, &len, nullptr, 0), 0);
  EXPECT_STREQ(meta, "always");
  EXPECT_NE(std::string(duet::mem::kJemallocConf).find("thp:always"), std::string::npos);
}
#endif

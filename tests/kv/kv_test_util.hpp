// Helpers shared by the `kv` keyspace suites: which processor the tests open the store on,
// how large the concurrent runs are, and byte strings printed readably in failure messages.
//
// DUET_TEST_DEVICE=auto|cpu|gpu (default auto) chooses StoreConfig::device for every store the
// suites open: auto runs the Canonical Store on the GPU when one is present, so a run on a GPU
// machine tests the GPU path and a run without one tests the CPU twin. DUET_TEST_SCALE (a
// positive number, default 1) multiplies the operation counts of the concurrent runs, and
// DUET_TEST_CLIENTS (a positive count) replaces their numbers of client threads (the stress
// step of scripts/test runs them with more clients than cores).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "duet/store.hpp"
#include "gpu/device.hpp"

namespace duet::kvtest {

/// The device the suites ask for (DUET_TEST_DEVICE). An unreadable value fails the calling test.
inline DeviceChoice test_device() {
  const char* env = std::getenv("DUET_TEST_DEVICE");
  if (env == nullptr || *env == '\0') return DeviceChoice::kAuto;
  DeviceChoice d = DeviceChoice::kAuto;
  const Status s = parse_device_choice(env, &d);
  EXPECT_TRUE(s.ok()) << "DUET_TEST_DEVICE=" << env << ": " << s.to_string();
  return d;
}

/// The backend a store opened with test_device() must report in KvStats::store_backend.
inline std::string expected_backend() {
  const DeviceChoice d = test_device();
  if (d == DeviceChoice::kCpu) return "cpu";
  if (d == DeviceChoice::kGpu) return "gpu";
  return gpu::device().present ? "gpu" : "cpu";
}

/// DUET_TEST_SCALE, or 1.
inline double test_scale() {
  const char* env = std::getenv("DUET_TEST_SCALE");
  if (env == nullptr || *env == '\0') return 1.0;
  const double v = std::strtod(env, nullptr);
  return v > 0 ? v : 1.0;
}

/// DUET_TEST_CLIENTS, or `fallback` (the case's own count) when unset.
inline int test_clients(int fallback) {
  const char* env = std::getenv("DUET_TEST_CLIENTS");
  if (env == nullptr || *env == '\0') return fallback;
  const long v = std::strtol(env, nullptr, 10);
  EXPECT_GT(v, 0) << "DUET_TEST_CLIENTS=" << env;
  return v > 0 ? static_cast<int>(std::min<long>(v, 256)) : fallback;
}

/// A configuration sized for tests: small up-front tables so many stores can be opened quickly.
inline StoreConfig test_config() {
  StoreConfig c;
  c.device = test_device();
  c.expected_keys = 1u << 14;
  c.hot_cache_entries = 1u << 12;
  return c;
}

/// Opens a store; a failure is reported through the returned assertion result.
inline ::testing::AssertionResult open_store(const StoreConfig& c, std::unique_ptr<Store>* out) {
  const Status s = Store::open(c, out);
  if (!s.ok()) return ::testing::AssertionFailure() << "Store::open: " << s.to_string();
  if (*out == nullptr) return ::testing::AssertionFailure() << "Store::open returned ok and no store";
  return ::testing::AssertionSuccess();
}

/// Bytes as text: printable ASCII as is, the rest as \xNN; long strings cut in the middle.
inline std::string printable(std::string_view s, std::size_t max_shown = 48) {
  static const char* hex = "0123456789abcdef";
  std::string o = "\"";
  auto put = [&](unsigned char c) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      o += static_cast<char>(c);
    } else {
      o += "\\x";
      o += hex[c >> 4];
      o += hex[c & 15];
    }
  };
  if (s.size() <= max_shown) {
    for (unsigned char c : s) put(c);
  } else {
    for (std::size_t i = 0; i < max_shown / 2; ++i) put(static_cast<unsigned char>(s[i]));
    o += "\"...\"";
    for (std::size_t i = s.size() - max_shown / 2; i < s.size(); ++i) put(static_cast<unsigned char>(s[i]));
  }
  o += "\" (" + std::to_string(s.size()) + " bytes)";
  return o;
}

/// Empty when a == b; otherwise where and how they differ, without printing megabytes.
inline std::string difference(std::string_view want, std::string_view got) {
  if (want == got) return {};
  std::size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  return "want " + printable(want) + ", got " + printable(got) + ", first difference at byte " + std::to_string(i);
}

inline const char* code_name(StatusCode c) { return status_code_name(c); }

/// The router of a test's stand-in keyspace, which has none: every call succeeds and does nothing.
class NoRouter final : public KvRouterControl {
 public:
  Status switch_model() override { return Status::Ok(); }
  Status set_threshold(double) override { return Status::Ok(); }
};

}  // namespace duet::kvtest

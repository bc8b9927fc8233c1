// The test suites' precompiled header: GoogleTest and the standard headers most suites include.
// Every C++ test target reuses the one precompiled copy (tests/CMakeLists.txt), so each build
// parses these once instead of once per test file. It must only include, never define: the
// suites see exactly what their own includes give them, plus these standard headers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

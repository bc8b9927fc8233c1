// A test helper the txn, procedure and CH suites share: one key's value as a fresh transaction
// sees it.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "duet/txn.hpp"

namespace duet::test {

/// Key k's value in a transaction of its own on `space` (aborted after the read), nullopt when
/// absent. A failed begin or get is a test failure and reads as absent.
inline std::optional<std::string> read_key(TxnSpace& space, std::string_view k) {
  Txn t;
  EXPECT_TRUE(space.begin(&t).ok());
  std::string v;
  bool found = false;
  EXPECT_TRUE(t.get(k, &v, &found).ok());
  t.abort();
  return found ? std::optional<std::string>(std::move(v)) : std::nullopt;
}

}  // namespace duet::test

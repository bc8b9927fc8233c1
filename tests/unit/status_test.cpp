#include "duet/status.hpp"

#include <gtest/gtest.h>

TEST(Status, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(duet::Status::Ok().ok());
  EXPECT_EQ(duet::Status::Ok().to_string(), "ok");
  const auto s = duet::Status::InvalidArgument("key is reserved");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), duet::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "invalid_argument: key is reserved");
  EXPECT_STREQ(duet::status_code_name(duet::StatusCode::kResourceExhausted), "resource_exhausted");
}

// parse_input (src/server/connection.hpp): the query buffer limit holds however a request
// arrives, and a barrier whose reply is deferred holds the client's later commands back.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/command.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"

namespace duet::server {
namespace {

/// Records the commands handed to it; a SCAN gets a reply that is not final (as a SCAN 0 handed
/// to the background thread), every other command a final one.
struct RecordingSink final : RequestSink {
  std::vector<std::string> names;
  void on_request(Conn& c, const CommandDef* def, Args args, std::uint64_t) override {
    names.emplace_back(args[0]);
    auto r = std::make_unique<PendingReply>();
    r->done.store(!(def && std::string(def->name) == "scan"));
    c.replies.push_back(std::move(r));
  }
};

void feed(Conn& c, const std::string& bytes) {
  c.in.reserve_more(bytes.size());
  std::memcpy(c.in.data.get() + c.in.len, bytes.data(), bytes.size());
  c.in.len += bytes.size();
}

std::string set_request(std::size_t value_bytes) {
  return "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(value_bytes) + "\r\n" + std::string(value_bytes, 'x') + "\r\n";
}

std::string error_of(const Conn& c) {
  return c.replies.empty() ? "" : c.replies.back()->bytes;
}

constexpr std::uint64_t kLimit = 1 << 20;

// The whole oversized request in the buffer at once (its bytes were all waiting in the socket
// when the server read): refused, not run. Before the fix it ran, as the limit was checked only
// while a request was incomplete.
TEST(ParseInput, AWholeRequestOverTheLimitIsRefused) {
  Conn c;
  RecordingSink sink;
  feed(c, set_request(3 * kLimit));
  parse_input(c, {kLimit, 1000}, sink);
  EXPECT_TRUE(sink.names.empty());
  EXPECT_TRUE(c.closing());
  EXPECT_NE(error_of(c).find("query buffer limit"), std::string::npos) << error_of(c);
}

// A request whose header already announces more than the limit is refused before it arrives.
TEST(ParseInput, AnAnnouncedBulkOverTheLimitIsRefusedEarly) {
  Conn c;
  RecordingSink sink;
  feed(c, set_request(3 * kLimit).substr(0, 64));
  parse_input(c, {kLimit, 1000}, sink);
  EXPECT_TRUE(sink.names.empty());
  EXPECT_TRUE(c.closing());
}

// Under the limit, whole or in pieces, requests run.
TEST(ParseInput, RequestsUnderTheLimitRun) {
  Conn c;
  RecordingSink sink;
  const std::string req = set_request(kLimit / 2);
  feed(c, req.substr(0, 1000));
  parse_input(c, {kLimit, 1000}, sink);
  EXPECT_TRUE(sink.names.empty());
  feed(c, req.substr(1000) + req);
  parse_input(c, {kLimit, 1000}, sink);
  EXPECT_EQ(sink.names.size(), 2u);
  EXPECT_FALSE(c.closing());
}

// A SCAN whose reply is deferred holds the pipeline's later commands until it has replied, so a
// later DEL cannot hide a key from it.
TEST(ParseInput, ADeferredBarrierHoldsLaterCommands) {
  Conn c;
  RecordingSink sink;
  feed(c, "*2\r\n$4\r\nSCAN\r\n$1\r\n0\r\n*2\r\n$3\r\nDEL\r\n$2\r\nb0\r\n");
  parse_input(c, {kLimit, 1000}, sink);
  ASSERT_EQ(sink.names.size(), 1u);
  EXPECT_EQ(sink.names[0], "SCAN");
  EXPECT_EQ(c.parse_state, ParseState::kBarrierWait);
  // The SCAN replied and its reply went out: the DEL runs.
  c.replies.clear();
  c.parse_state = ParseState::kReady;
  parse_input(c, {kLimit, 1000}, sink);
  ASSERT_EQ(sink.names.size(), 2u);
  EXPECT_EQ(sink.names[1], "DEL");
}

}  // namespace
}  // namespace duet::server

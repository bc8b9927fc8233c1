// duet_bench_net's reply parser (bench/net/resp_client.hpp) on a stream of every RESP2 reply
// type, cut at every byte: a strict prefix of a reply is incomplete (never an error), and a
// whole reply comes back with its type, value and exact length, whatever follows it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/net/resp_client.hpp"

namespace duet::bench::net {
namespace {

struct Expected {
  std::string wire;  ///< the reply's bytes
  char type;
  bool nil;
  std::int64_t integer;  ///< ':' value or array count
  std::string text;      ///< '+' / '-' line or '$' bytes
};

// A 16-byte bulk whose bytes look like replies and line ends: only its length may end it.
const std::string kBulk16("ab\r\ncd\r\n+OK\r\n:1\r", 16);

const std::vector<Expected>& replies() {
  static const std::vector<Expected> r = {
      {"+OK\r\n", '+', false, 0, "OK"},
      {"-ERR x\r\n", '-', false, 0, "ERR x"},
      {":12\r\n", ':', false, 12, ""},
      {"$-1\r\n", '$', true, 0, ""},
      {"$0\r\n\r\n", '$', false, 0, ""},
      {"$16\r\n" + kBulk16 + "\r\n", '$', false, 0, kBulk16},
      {"*2\r\n$1\r\na\r\n$-1\r\n", '*', false, 2, ""},
      {"*-1\r\n", '*', true, 0, ""},
  };
  return r;
}

std::string stream() {
  std::string s;
  for (const auto& e : replies()) s += e.wire;
  return s;
}

void expect_reply(const Expected& e, const Reply& r, std::size_t consumed, const std::string& where) {
  EXPECT_EQ(consumed, e.wire.size()) << where;
  EXPECT_EQ(r.type, e.type) << where;
  EXPECT_EQ(r.nil, e.nil) << where;
  if (e.type == ':' || e.type == '*') {
    EXPECT_EQ(r.integer, e.integer) << where;
  }
  if (e.type == '+' || e.type == '-' || e.type == '$') {
    EXPECT_EQ(std::string(r.text), e.text) << where;
  }
}

TEST(RespReplyParser, TheStreamHasEveryReplyType) {
  ASSERT_EQ(kBulk16.size(), 16u);
  ASSERT_EQ(replies().size(), 8u);
  const std::string s = stream();
  std::size_t off = 0;
  for (const auto& e : replies()) {
    Reply r;
    std::size_t used = 0;
    std::string err;
    ASSERT_EQ(parse_reply(s.data() + off, s.size() - off, &used, &r, &err), ParseResult::kReply) << e.wire << err;
    expect_reply(e, r, used, "whole stream at offset " + std::to_string(off));
    off += used;
  }
  EXPECT_EQ(off, s.size());
}

// Every strict prefix of every reply alone (the empty one included) is incomplete.
TEST(RespReplyParser, EveryStrictPrefixOfAReplyIsIncomplete) {
  for (const auto& e : replies()) {
    for (std::size_t k = 0; k < e.wire.size(); ++k) {
      // A copy of exactly k bytes, so that a read past the cut would be caught by ASan.
      const std::vector<char> prefix(e.wire.begin(), e.wire.begin() + static_cast<std::ptrdiff_t>(k));
      Reply r;
      std::size_t used = 12345;
      std::string err;
      const ParseResult pr = parse_reply(prefix.data(), prefix.size(), &used, &r, &err);
      EXPECT_EQ(pr, ParseResult::kIncomplete) << "prefix of " << k << " bytes of reply '" << e.wire << "': " << err;
      EXPECT_EQ(used, 12345u) << "an incomplete parse must not report a length";
    }
    Reply r;
    std::size_t used = 0;
    std::string err;
    ASSERT_EQ(parse_reply(e.wire.data(), e.wire.size(), &used, &r, &err), ParseResult::kReply) << err;
    expect_reply(e, r, used, "reply alone");
  }
}

// The stream cut at every byte, as a reader sees it: the replies wholly before the cut come back
// in order with their lengths (whatever part of the next reply follows), and what is left is
// incomplete; then the rest arrives and the remaining replies come back too.
TEST(RespReplyParser, TheStreamCutAtEveryByte) {
  const std::string s = stream();
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    const std::string where = "cut at byte " + std::to_string(cut);
    std::string buf(s.data(), cut);
    std::size_t beg = 0, next = 0;
    auto drain = [&] {
      for (;;) {
        Reply r;
        std::size_t used = 0;
        std::string err;
        const ParseResult pr = parse_reply(buf.data() + beg, buf.size() - beg, &used, &r, &err);
        ASSERT_NE(pr, ParseResult::kProtocolError) << where << ": " << err;
        if (pr == ParseResult::kIncomplete) return;
        ASSERT_LT(next, replies().size()) << where;
        expect_reply(replies()[next], r, used, where + ", reply " + std::to_string(next));
        beg += used;
        ++next;
      }
    };
    drain();
    // The replies wholly before the cut, and no more.
    std::size_t whole = 0, end = 0;
    while (whole < replies().size() && end + replies()[whole].wire.size() <= cut) end += replies()[whole++].wire.size();
    EXPECT_EQ(next, whole) << where;
    EXPECT_EQ(beg, end) << where;
    buf.append(s, cut, std::string::npos);
    drain();
    EXPECT_EQ(next, replies().size()) << where;
    EXPECT_EQ(beg, s.size()) << where;
  }
}

}  // namespace
}  // namespace duet::bench::net

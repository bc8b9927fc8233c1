// RESP (src/server/resp.hpp): the request parser (multibulk and inline requests, partial input,
// limits, malformed input), split_inline (the inline command tokenizer) and ReplyWriter (the
// exact bytes of every reply type in RESP2 and RESP3).
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <string_view>
#include <vector>

#include "server/resp.hpp"

using namespace std::string_literals;
using duet::server::ReplyWriter;
using duet::server::RequestParser;
using duet::server::RespLimits;
using duet::server::split_inline;
using Args = std::vector<std::string>;

namespace {

/// What a stream of bytes parsed into: its requests, and how it ended.
struct Outcome {
  std::vector<Args> requests;
  std::vector<std::size_t> consumed;  ///< bytes each request took
  enum class End { kClean, kIncomplete, kError } end = End::kClean;
  std::string error;
  bool operator==(const Outcome& o) const {
    return requests == o.requests && consumed == o.consumed && end == o.end && error == o.error;
  }
};

std::string show(std::string_view s) {
  std::string o;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') o += static_cast<char>(c);
    else if (c == '\r') o += "\\r";
    else if (c == '\n') o += "\\n";
    else {
      static const char* hex = "0123456789abcdef";
      o += "\\x";
      o += hex[c >> 4];
      o += hex[c & 15];
    }
  }
  return o;
}

void PrintTo(const Outcome& o, std::ostream* os) {
  *os << "{";
  for (std::size_t i = 0; i < o.requests.size(); ++i) {
    *os << "[";
    for (const auto& a : o.requests[i]) *os << "\"" << show(a) << "\" ";
    *os << "](" << o.consumed[i] << " bytes) ";
  }
  *os << (o.end == Outcome::End::kClean ? "end" : o.end == Outcome::End::kIncomplete ? "incomplete" : "error: ")
      << o.error << "}";
}

Args to_args(const std::vector<std::string_view>& v) { return Args(v.begin(), v.end()); }

/// Feeds `input` in pieces of `chunk` bytes (0: all at once) to one parser, as a connection
/// would: bytes are appended to a buffer, parse() runs on the bytes from the current request's
/// start, and consumed bytes are dropped.
Outcome feed(std::string_view input, std::size_t chunk, const RespLimits& limits = {}) {
  RequestParser p(limits);
  Outcome out;
  std::string buf;
  std::size_t at = 0;
  while (at < input.size()) {
    const std::size_t take = chunk == 0 ? input.size() - at : std::min(chunk, input.size() - at);
    buf.append(input.substr(at, take));
    at += take;
    for (;;) {
      std::size_t consumed = 0;
      const auto r = p.parse(buf.data(), buf.size(), &consumed);
      if (r == RequestParser::Result::kIncomplete) break;
      if (r == RequestParser::Result::kError) {
        out.end = Outcome::End::kError;
        out.error = p.error();
        return out;
      }
      EXPECT_GT(consumed, 0u);
      EXPECT_LE(consumed, buf.size());
      out.requests.push_back(to_args(p.args()));
      out.consumed.push_back(consumed);
      buf.erase(0, consumed);
      if (buf.empty()) break;
    }
  }
  out.end = buf.empty() ? Outcome::End::kClean : Outcome::End::kIncomplete;
  return out;
}

std::string multibulk(const Args& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

/// Parses one complete request with a fresh parser.
RequestParser::Result parse_one(std::string_view in, Args* args, std::size_t* consumed, std::string* error = nullptr,
                                const RespLimits& limits = {}) {
  RequestParser p(limits);
  *consumed = 0;
  const auto r = p.parse(in.data(), in.size(), consumed);
  *args = to_args(p.args());
  if (error) *error = p.error();
  return r;
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// ---- multibulk requests ----------------------------------------------------------------------

TEST(RespParser, MultibulkRequestGivesItsArgumentsAndLength) {
  const std::string in = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  Args a;
  std::size_t consumed = 0;
  EXPECT_EQ(parse_one(in, &a, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, in.size());
  EXPECT_EQ(a, (Args{"SET", "key", "value"}));
}

TEST(RespParser, BulkArgumentsAreBinarySafe) {
  const Args want = {"SET", "k\r\n", "\0\r\n*3\r\n$1\r\n"s, "", std::string(1000, '\xff')};
  Args a;
  std::size_t consumed = 0;
  const std::string in = multibulk(want);
  EXPECT_EQ(parse_one(in, &a, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, in.size());
  EXPECT_EQ(a, want);
}

TEST(RespParser, EmptyBulkArgument) {
  Args a;
  std::size_t consumed = 0;
  EXPECT_EQ(parse_one("*2\r\n$3\r\nGET\r\n$0\r\n\r\n", &a, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, 19u);
  EXPECT_EQ(a, (Args{"GET", ""}));
}

TEST(RespParser, PipelinedRequestsAreConsumedOneAtATime) {
  const std::string one = multibulk({"GET", "a"}), two = multibulk({"MGET", "b", "c"});
  const std::string in = one + two + "*1\r\n$4\r\nPI";
  RequestParser p;
  std::size_t consumed = 0;
  ASSERT_EQ(p.parse(in.data(), in.size(), &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, one.size());
  EXPECT_EQ(to_args(p.args()), (Args{"GET", "a"}));
  const std::size_t at = consumed;
  ASSERT_EQ(p.parse(in.data() + at, in.size() - at, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, two.size());
  EXPECT_EQ(to_args(p.args()), (Args{"MGET", "b", "c"}));
  const std::size_t at2 = at + consumed;
  consumed = 77;
  EXPECT_EQ(p.parse(in.data() + at2, in.size() - at2, &consumed), RequestParser::Result::kIncomplete);
}

TEST(RespParser, ZeroAndNegativeCountsCarryNoRequest) {
  for (const std::string head : {"*0\r\n", "*-1\r\n"}) {
    SCOPED_TRACE(show(head));
    const std::string in = head + multibulk({"PING"});
    RequestParser p;
    std::size_t consumed = 0;
    ASSERT_EQ(p.parse(in.data(), in.size(), &consumed), RequestParser::Result::kRequest);
    EXPECT_EQ(consumed, head.size());
    EXPECT_TRUE(p.args().empty());
    // The next request follows at once.
    ASSERT_EQ(p.parse(in.data() + consumed, in.size() - consumed, &consumed), RequestParser::Result::kRequest);
    EXPECT_EQ(to_args(p.args()), (Args{"PING"}));
  }
}

TEST(RespParser, EveryStrictPrefixIsIncomplete) {
  const std::string in = multibulk({"SET", "key", "a longer value\r\nwith CRLF"});
  for (std::size_t n = 1; n < in.size(); ++n) {
    Args a;
    std::size_t consumed = 0;
    EXPECT_EQ(parse_one(in.substr(0, n), &a, &consumed), RequestParser::Result::kIncomplete) << "prefix " << n;
    EXPECT_EQ(consumed, 0u) << "prefix " << n;
  }
  // One parser resumed on growing prefixes of the same buffer finishes exactly at the end.
  RequestParser p;
  for (std::size_t n = 1; n <= in.size(); ++n) {
    std::size_t consumed = 0;
    const auto r = p.parse(in.data(), n, &consumed);
    if (n < in.size()) {
      ASSERT_EQ(r, RequestParser::Result::kIncomplete) << "prefix " << n;
    } else {
      ASSERT_EQ(r, RequestParser::Result::kRequest);
      EXPECT_EQ(consumed, in.size());
      EXPECT_EQ(to_args(p.args()), (Args{"SET", "key", "a longer value\r\nwith CRLF"}));
    }
  }
}

TEST(RespParser, WantedIsTheLengthOfAPartlyArrivedBulkRequest) {
  const std::string in = multibulk({"SET", "k", std::string(5000, 'v')});
  RequestParser p;
  std::size_t consumed = 0;
  const std::size_t part = in.size() - 2000;
  ASSERT_EQ(p.parse(in.data(), part, &consumed), RequestParser::Result::kIncomplete);
  EXPECT_EQ(p.wanted(), in.size()) << "the whole request is needed";
  ASSERT_EQ(p.parse(in.data(), in.size(), &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, in.size());
}

TEST(RespParser, ResetForgetsAPartialRequest) {
  RequestParser p;
  const std::string first = multibulk({"SET", "k", "value"});
  std::size_t consumed = 0;
  ASSERT_EQ(p.parse(first.data(), first.size() - 4, &consumed), RequestParser::Result::kIncomplete);
  p.reset();
  const std::string other = multibulk({"GET", "other"});
  ASSERT_EQ(p.parse(other.data(), other.size(), &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, other.size());
  EXPECT_EQ(to_args(p.args()), (Args{"GET", "other"}));
}

// ---- inline requests -------------------------------------------------------------------------

TEST(RespParser, InlineRequestSplitsOnBlanks) {
  Args a;
  std::size_t consumed = 0;
  EXPECT_EQ(parse_one("PING\r\n", &a, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, 6u);
  EXPECT_EQ(a, (Args{"PING"}));
  EXPECT_EQ(parse_one("  set \t key   value \r\nGET key\r\n", &a, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, 22u);
  EXPECT_EQ(a, (Args{"set", "key", "value"}));
  EXPECT_EQ(parse_one("get key\n", &a, &consumed), RequestParser::Result::kRequest) << "LF alone ends a line";
  EXPECT_EQ(consumed, 8u);
  EXPECT_EQ(a, (Args{"get", "key"}));
}

TEST(RespParser, InlineRequestTakesQuotesAndHexEscapes) {
  Args a;
  std::size_t consumed = 0;
  const std::string in = "SET \"a key\" \"\\x41\\x62\\x00\\xfF\\n\\t\\\"\" 'it\\'s'\r\n";
  EXPECT_EQ(parse_one(in, &a, &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, in.size());
  EXPECT_EQ(a, (Args{"SET", "a key", "Ab\0\xff\n\t\""s, "it's"}));
}

TEST(RespParser, EmptyInlineLineIsARequestWithNoArguments) {
  for (const std::string line : {"\r\n", "\n", "   \t \r\n"}) {
    Args a = {"stale"};
    std::size_t consumed = 0;
    EXPECT_EQ(parse_one(line, &a, &consumed), RequestParser::Result::kRequest) << show(line);
    EXPECT_EQ(consumed, line.size()) << show(line);
    EXPECT_TRUE(a.empty()) << show(line);
  }
}

TEST(RespParser, InlineWithUnbalancedQuotesIsAProtocolError) {
  for (const std::string line : {"SET k \"open\r\n", "SET k 'open\r\n", "SET k \"a\"b\r\n"}) {
    Args a;
    std::size_t consumed = 0;
    std::string err;
    EXPECT_EQ(parse_one(line, &a, &consumed, &err), RequestParser::Result::kError) << show(line);
    EXPECT_EQ(err, "ERR Protocol error: unbalanced quotes in request") << show(line);
  }
}

TEST(RespParser, InlineWithoutNewlineIsIncomplete) {
  Args a;
  std::size_t consumed = 0;
  EXPECT_EQ(parse_one("PING", &a, &consumed), RequestParser::Result::kIncomplete);
  EXPECT_EQ(parse_one("PING\r", &a, &consumed), RequestParser::Result::kIncomplete);
}

// ---- partial input ---------------------------------------------------------------------------

TEST(RespParser, ByteByByteAndChunkedInputGiveTheSameRequestsAsWholeInput) {
  const std::string in = multibulk({"SET", "k", "v\r\nv"}) + "PING\r\n" + "*0\r\n" + "\r\n" +
                         "set \"quoted key\" '\\'x' \"\\x00\\x01\"\n" + "*-1\r\n" + multibulk({"GET", ""}) +
                         multibulk({std::string(300, 'b'), "\0"s}) + "  \r\n" + multibulk({"ECHO", "end"});
  const Outcome whole = feed(in, 0);
  ASSERT_EQ(whole.end, Outcome::End::kClean);
  ASSERT_EQ(whole.requests.size(), 10u);
  EXPECT_EQ(whole.requests[0], (Args{"SET", "k", "v\r\nv"}));
  EXPECT_EQ(whole.requests[1], (Args{"PING"}));
  EXPECT_EQ(whole.requests[2], Args{});
  EXPECT_EQ(whole.requests[3], Args{});
  EXPECT_EQ(whole.requests[4], (Args{"set", "quoted key", "'x", "\0\x01"s}));
  EXPECT_EQ(whole.requests[5], Args{});
  EXPECT_EQ(whole.requests[6], (Args{"GET", ""}));
  EXPECT_EQ(whole.requests[7], (Args{std::string(300, 'b'), "\0"s}));
  EXPECT_EQ(whole.requests[8], Args{});
  EXPECT_EQ(whole.requests[9], (Args{"ECHO", "end"}));
  for (std::size_t chunk : {1u, 2u, 3u, 5u, 7u, 13u, 64u}) EXPECT_EQ(feed(in, chunk), whole) << "chunk " << chunk;
}

TEST(RespParser, ByteByByteInputGivesTheSameErrorAsWholeInput) {
  for (const std::string bad : {"*2\r\n$3\r\nGET\r\nfoo\r\n", "*1\r\n$3\r\nfooXY", "*x\r\n", "*1\r\n$-5\r\n",
                                "GET \"unbalanced\r\n"}) {
    const std::string in = multibulk({"PING"}) + bad;
    const Outcome whole = feed(in, 0);
    ASSERT_EQ(whole.end, Outcome::End::kError) << show(bad);
    EXPECT_EQ(whole.requests.size(), 1u) << show(bad);
    EXPECT_EQ(feed(in, 1), whole) << show(bad);
  }
}

TEST(RespParser, LengthWithLeadingZerosGetsTheSameVerdictWholeAndInPieces) {
  // A bulk length written with 70,000 leading zeros: whatever the verdict, it must not depend on
  // how the bytes arrive.
  const std::string in = "*1\r\n$" + std::string(70000, '0') + "3\r\nfoo\r\n";
  const Outcome whole = feed(in, 0);
  const Outcome pieces = feed(in, 4096);
  EXPECT_EQ(pieces, whole);
  const std::string count = "*" + std::string(70000, '0') + "1\r\n$3\r\nfoo\r\n";
  EXPECT_EQ(feed(count, 4096), feed(count, 0));
}

// ---- malformed input and limits --------------------------------------------------------------

TEST(RespParser, MalformedMultibulkIsAProtocolError) {
  struct Case {
    std::string in;
    std::string error;
  };
  const Case cases[] = {
      {"*x\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1x\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*2\r\n$3\r\nGET\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"},
      {"*1\r\n$x\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$3\r\nfooXY", "ERR Protocol error: expected CRLF after bulk"},
  };
  for (const Case& c : cases) {
    Args a;
    std::size_t consumed = 0;
    std::string err;
    EXPECT_EQ(parse_one(c.in, &a, &consumed, &err), RequestParser::Result::kError) << show(c.in);
    EXPECT_EQ(err, c.error) << show(c.in);
  }
}

TEST(RespParser, BulkOverMaxBulkBytesIsRejectedFromItsHeader) {
  RespLimits l;
  l.max_bulk_bytes = 10;
  Args a;
  std::size_t consumed = 0;
  std::string err;
  EXPECT_EQ(parse_one(multibulk({"SET", "k", std::string(10, 'v')}), &a, &consumed, &err, l),
            RequestParser::Result::kRequest);
  EXPECT_EQ(a[2], std::string(10, 'v'));
  // The header of an 11-byte bulk is enough to refuse it: the body never has to arrive.
  EXPECT_EQ(parse_one("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$11\r\n", &a, &consumed, &err, l),
            RequestParser::Result::kError);
  EXPECT_TRUE(starts_with(err, "ERR Protocol error")) << err;
  EXPECT_EQ(err, "ERR Protocol error: invalid bulk length");
}

TEST(RespParser, CountOverMaxArgsIsRejected) {
  RespLimits l;
  l.max_args = 3;
  Args a;
  std::size_t consumed = 0;
  std::string err;
  EXPECT_EQ(parse_one(multibulk({"a", "b", "c"}), &a, &consumed, &err, l), RequestParser::Result::kRequest);
  EXPECT_EQ(parse_one("*4\r\n", &a, &consumed, &err, l), RequestParser::Result::kError);
  EXPECT_TRUE(starts_with(err, "ERR Protocol error")) << err;
  EXPECT_EQ(err, "ERR Protocol error: invalid multibulk length");
}

TEST(RespParser, InlineRequestWithMoreThanMaxArgsIsRejected) {
  RespLimits l;
  l.max_args = 3;
  Args a;
  std::size_t consumed = 0;
  std::string err;
  EXPECT_EQ(parse_one("a b c\r\n", &a, &consumed, &err, l), RequestParser::Result::kRequest);
  EXPECT_EQ(parse_one("a b c d\r\n", &a, &consumed, &err, l), RequestParser::Result::kError)
      << "4 inline arguments with max_args 3 gave " << a.size() << " arguments";
  EXPECT_TRUE(starts_with(err, "ERR Protocol error")) << err;
}

TEST(RespParser, InlineLineOverMaxInlineBytesIsRejected) {
  RespLimits l;
  l.max_inline_bytes = 16;
  Args a;
  std::size_t consumed = 0;
  std::string err;
  const std::string fits = "ECHO " + std::string(11, 'x');  // 16 bytes
  EXPECT_EQ(parse_one(fits + "\n", &a, &consumed, &err, l), RequestParser::Result::kRequest);
  EXPECT_EQ(a, (Args{"ECHO", std::string(11, 'x')}));
  // 17 bytes and a newline.
  EXPECT_EQ(parse_one(fits + "y\n", &a, &consumed, &err, l), RequestParser::Result::kError);
  EXPECT_EQ(err, "ERR Protocol error: too big inline request");
  // 17 bytes and no newline yet: refused without waiting for the rest of the line.
  EXPECT_EQ(parse_one(fits + "y", &a, &consumed, &err, l), RequestParser::Result::kError);
  EXPECT_EQ(err, "ERR Protocol error: too big inline request");
  // 16 bytes and no newline yet: may still fit.
  EXPECT_EQ(parse_one(fits, &a, &consumed, &err, l), RequestParser::Result::kIncomplete);
}

TEST(RespParser, ParserWorksAgainAfterAnError) {
  RequestParser p;
  std::size_t consumed = 0;
  const std::string bad = "*1\r\n$x\r\n";
  ASSERT_EQ(p.parse(bad.data(), bad.size(), &consumed), RequestParser::Result::kError);
  EXPECT_TRUE(starts_with(p.error(), "ERR Protocol error")) << p.error();
  const std::string good = multibulk({"PING"});
  ASSERT_EQ(p.parse(good.data(), good.size(), &consumed), RequestParser::Result::kRequest);
  EXPECT_EQ(consumed, good.size());
  EXPECT_EQ(to_args(p.args()), (Args{"PING"}));
}

// ---- split_inline ----------------------------------------------------------------------------

Args split(std::string_view line, bool* ok = nullptr) {
  Args out;
  const bool r = split_inline(line, &out);
  if (ok) *ok = r;
  else EXPECT_TRUE(r) << show(line);
  return out;
}

TEST(SplitInline, BlanksSeparateArguments) {
  EXPECT_EQ(split("a b  c"), (Args{"a", "b", "c"}));
  EXPECT_EQ(split(" \t a\tb \v\f "), (Args{"a", "b"}));
  EXPECT_EQ(split(""), Args{});
  EXPECT_EQ(split("   "), Args{});
}

TEST(SplitInline, DoubleQuotesTakeEscapes) {
  EXPECT_EQ(split("\"a b\" c"), (Args{"a b", "c"}));
  EXPECT_EQ(split("\"\""), (Args{""}));
  EXPECT_EQ(split("\"\\n\\r\\t\\b\\a\\\\\\\"\""), (Args{"\n\r\t\b\a\\\""}));
  EXPECT_EQ(split("\"\\x41\\x7a\\x00\\xFF\\xfe\""), (Args{"Az\0\xff\xfe"s}));
  EXPECT_EQ(split("\"\\x4\""), (Args{"x4"})) << "an incomplete hex escape keeps the letter";
  EXPECT_EQ(split("\"\\xZZ\""), (Args{"xZZ"}));
  EXPECT_EQ(split("\"\\q\""), (Args{"q"})) << "an unknown escape is the character itself";
  EXPECT_EQ(split("\"'\""), (Args{"'"}));
}

TEST(SplitInline, SingleQuotesTakeOnlyEscapedQuote) {
  EXPECT_EQ(split("'a b'"), (Args{"a b"}));
  EXPECT_EQ(split("'it\\'s'"), (Args{"it's"}));
  EXPECT_EQ(split("'a\\nb'"), (Args{"a\\nb"}));
  EXPECT_EQ(split("'\\x41'"), (Args{"\\x41"}));
  EXPECT_EQ(split("''"), (Args{""}));
  EXPECT_EQ(split("'\"'"), (Args{"\""}));
}

TEST(SplitInline, QuoteInsideAWordStartsQuoting) {
  EXPECT_EQ(split("ab\"c d\" e"), (Args{"abc d", "e"}));
  EXPECT_EQ(split("\"a\"\t'b'"), (Args{"a", "b"})) << "a closing quote followed by a tab";
}

TEST(SplitInline, UnbalancedQuotesAreRejected) {
  for (std::string_view bad : {"\"abc", "'abc", "\"abc\"def", "'abc'def", "a \"b", "\"a\\\"", "\"abc\\"}) {
    bool ok = true;
    split(bad, &ok);
    EXPECT_FALSE(ok) << show(bad);
  }
}

// ---- ReplyWriter -----------------------------------------------------------------------------

std::string w2(void (*f)(ReplyWriter&)) {
  std::string out;
  ReplyWriter w(&out, 2);
  f(w);
  return out;
}
std::string w3(void (*f)(ReplyWriter&)) {
  std::string out;
  ReplyWriter w(&out, 3);
  f(w);
  return out;
}

TEST(ReplyWriter, SimpleStringIsTheSameInBothProtocols) {
  auto f = [](ReplyWriter& w) { w.simple("OK"); };
  EXPECT_EQ(w2(f), "+OK\r\n");
  EXPECT_EQ(w3(f), "+OK\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.simple(""); }), "+\r\n");
}

TEST(ReplyWriter, ErrorReplacesLineBreaksWithBlanks) {
  auto f = [](ReplyWriter& w) { w.error("ERR bad\r\nthing\n"); };
  EXPECT_EQ(w2(f), "-ERR bad  thing \r\n");
  EXPECT_EQ(w3(f), "-ERR bad  thing \r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.error("WRONGTYPE x"); }), "-WRONGTYPE x\r\n");
}

TEST(ReplyWriter, IntegersIncludingTheExtremes) {
  EXPECT_EQ(w2([](ReplyWriter& w) { w.integer(0); }), ":0\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.integer(42); }), ":42\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.integer(-42); }), ":-42\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.integer(LLONG_MAX); }), ":9223372036854775807\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.integer(LLONG_MIN); }), ":-9223372036854775808\r\n");
}

TEST(ReplyWriter, BulkStringsAreBinarySafe) {
  EXPECT_EQ(w2([](ReplyWriter& w) { w.bulk("foo"); }), "$3\r\nfoo\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.bulk("foo"); }), "$3\r\nfoo\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.bulk(""); }), "$0\r\n\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.bulk(std::string_view("\0\r\n", 3)); }), "$3\r\n\0\r\n\r\n"s);
  std::string big(100000, 'z'), out;
  ReplyWriter(&out, 2).bulk(big);
  EXPECT_EQ(out, "$100000\r\n" + big + "\r\n");
}

TEST(ReplyWriter, NullsDifferBetweenProtocols) {
  EXPECT_EQ(w2([](ReplyWriter& w) { w.null(); }), "$-1\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.null(); }), "_\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.null_array(); }), "*-1\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.null_array(); }), "_\r\n");
}

TEST(ReplyWriter, AggregateHeaders) {
  EXPECT_EQ(w2([](ReplyWriter& w) { w.array(0); }), "*0\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.array(3); }), "*3\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.map(2); }), "*4\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.map(2); }), "%2\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.map(0); }), "*0\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.set(3); }), "*3\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.set(3); }), "~3\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.array(1234567); }), "*1234567\r\n");
}

TEST(ReplyWriter, BooleansAndVerbatimStrings) {
  EXPECT_EQ(w2([](ReplyWriter& w) { w.boolean(true); }), ":1\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.boolean(false); }), ":0\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.boolean(true); }), "#t\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.boolean(false); }), "#f\r\n");
  EXPECT_EQ(w2([](ReplyWriter& w) { w.verbatim("hi\r\nyou"); }), "$7\r\nhi\r\nyou\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.verbatim("hi\r\nyou"); }), "=11\r\ntxt:hi\r\nyou\r\n");
  EXPECT_EQ(w3([](ReplyWriter& w) { w.verbatim(""); }), "=4\r\ntxt:\r\n");
}

TEST(ReplyWriter, AppendsToTheBufferAndKnowsItsProtocol) {
  std::string out = "before|";
  ReplyWriter w(&out, 3);
  EXPECT_TRUE(w.resp3());
  EXPECT_EQ(w.buffer(), &out);
  w.map(1);
  w.bulk("k");
  w.integer(1);
  EXPECT_EQ(out, "before|%1\r\n$1\r\nk\r\n:1\r\n");
  std::string o2;
  EXPECT_FALSE(ReplyWriter(&o2, 2).resp3());
  EXPECT_TRUE(ReplyWriter(&o2, 4).resp3()) << "protocol 3 and above is RESP3";
}

TEST(ReplyWriter, AnArrayOfBulksParsesBackToTheSameArguments) {
  const Args args = {"SET", "", "\r\n", "\0\0"s, std::string(3000, 'q')};
  std::string out;
  ReplyWriter w(&out, 2);
  w.array(args.size());
  for (const auto& a : args) w.bulk(a);
  EXPECT_EQ(out, multibulk(args));
  const Outcome o = feed(out, 0);
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0], args);
}

}  // namespace

// libFuzzer target for the RESP request parser (src/server/resp.hpp): RequestParser,
// split_inline and ReplyWriter. Build and run with scripts/fuzz-resp; see tests/fuzz/README.md.
//
// Input layout:
//   byte 0       bits 0-2: k, how many chunk-size bytes follow (0: the payload arrives one byte
//                at a time); bit 3: call reset() after every kIncomplete (re-parse from the
//                request's start, which must not change any result); bit 4: hand parse() a
//                fresh exact-size copy of the buffer on every call; bits 5-7 unused.
//   bytes 1..k   chunk sizes, each (byte + 1), used in turn, cyclically.
//   the rest     the payload: the bytes a client sends.
//
// Every check that fails calls __builtin_trap(), after printing what failed to stderr.
//
// Checks:
//   * chunked: the payload is appended in chunks to a connection buffer (a std::string), like
//     partial reads; parse() runs on the bytes from the current request's start; consumed
//     bytes are dropped; parsing stops at kError. The buffer's spare capacity is ASan-poisoned,
//     so a read past the n bytes given is reported; with bit 4, each call gets a fresh copy,
//     so a pointer kept across calls is a use-after-free.
//   * per result: kRequest consumes 0 < c <= n bytes; a multibulk request ends in CRLF and its
//     args lie inside the consumed bytes; an inline request ends at the first '\n'; at most
//     max_args args, each at most max_bulk_bytes; wanted() on kIncomplete is a lower bound,
//     no more than the request's final length (it may lag behind n: it is only a hint);
//     kError's text starts "ERR Protocol error".
//   * differential: parsing the whole payload in one piece gives the same requests, the same
//     bytes consumed and the same final outcome (clean end / incomplete tail / same error).
//   * round trips: each request re-encoded with ReplyWriter as an array of bulk strings parses
//     back to the same args (in one piece and in two pieces); each request re-encoded as an
//     inline line with "\xHH" escapes splits back to the same args.
//   * ReplyWriter: every function, RESP2 and RESP3, on the parsed args (the first 16 of each
//     input); exact output checked.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/resp.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif

using duet::server::ReplyWriter;
using duet::server::RequestParser;
using duet::server::RespLimits;

namespace {

constexpr std::size_t kMaxBulk = 4096;
constexpr std::size_t kMaxArgs = 64;
constexpr std::size_t kMaxInline = 1024;

RespLimits fuzz_limits() {
  RespLimits l;
  l.max_bulk_bytes = kMaxBulk;
  l.max_args = kMaxArgs;
  l.max_inline_bytes = kMaxInline;
  return l;
}


[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "resp_parser_fuzz: invariant violated: %s%s%s\n", what, detail.empty() ? "" : ": ",
               detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) fail(#cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

using Args = std::vector<std::string>;

enum class End { kClean, kIncomplete, kError };

struct Outcome {
  std::vector<Args> requests;
  std::vector<std::size_t> lengths;  // bytes each request consumed
  End end = End::kClean;
  std::string error;
};

std::string show(std::string_view s, std::size_t max = 80) {
  std::string o;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 32 && c < 127 && c != '\\') {
      o.push_back(static_cast<char>(c));
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      o += b;
    }
  }
  if (s.size() > max) o += "...";
  return o;
}

/// Checks one kRequest against the bytes it came from; returns its args (copied).
Args check_request(RequestParser& p, const char* data, std::size_t n, std::size_t consumed, std::size_t wanted) {
  CHECK(consumed > 0 && consumed <= n, "consumed=" + std::to_string(consumed) + " n=" + std::to_string(n));
  CHECK(wanted <= consumed, "wanted=" + std::to_string(wanted) + " consumed=" + std::to_string(consumed));
  const auto& args = p.args();
  const bool multibulk = data[0] == '*';
  if (multibulk) {
    CHECK(consumed >= 4 && data[consumed - 2] == '\r' && data[consumed - 1] == '\n');
    CHECK(args.size() <= kMaxArgs, std::to_string(args.size()) + " args");
    for (const auto& a : args) {
      CHECK(a.data() >= data + 1 && a.data() + a.size() <= data + consumed - 2, "multibulk arg outside the request");
      CHECK(a.data()[a.size()] == '\r' && a.data()[a.size() + 1] == '\n', "bulk not followed by CRLF");
    }
  } else {
    // Inline: the request is the first line; the args live in the parser.
    const void* nl = std::memchr(data, '\n', n);
    CHECK(nl != nullptr, "inline request without a newline");
    CHECK(consumed == static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1, "inline consumed");
    CHECK(consumed - 1 <= kMaxInline, "inline line over max_inline_bytes");
    CHECK(args.size() <= kMaxArgs, "inline request with " + std::to_string(args.size()) + " args, max_args " +
                                         std::to_string(kMaxArgs) + ": " + show(std::string_view(data, consumed)));
    std::size_t total = 0;
    for (const auto& a : args) {
      const bool inside = a.data() >= data && a.data() + a.size() <= data + n;
      CHECK(a.empty() || !inside, "inline arg points into the input buffer");
      total += a.size();
    }
    CHECK(total <= consumed, "inline args longer than their line");
  }
  Args out;
  out.reserve(args.size());
  for (const auto& a : args) {
    CHECK(a.size() <= kMaxBulk, std::to_string(a.size()) + " bytes");
    out.emplace_back(a);
  }
  return out;
}

void check_error(const RequestParser& p) {
  static constexpr std::string_view kPrefix = "ERR Protocol error";
  CHECK(p.error().compare(0, kPrefix.size(), kPrefix) == 0, p.error());
}

/// The payload in one piece, parsed from consecutive request starts.
Outcome parse_whole(const char* data, std::size_t n) {
  Outcome o;
  RequestParser p(fuzz_limits());
  std::size_t off = 0;
  while (off < n) {
    std::size_t consumed = 0;
    const auto r = p.parse(data + off, n - off, &consumed);
    if (r == RequestParser::Result::kRequest) {
      o.requests.push_back(check_request(p, data + off, n - off, consumed, 0));
      o.lengths.push_back(consumed);
      off += consumed;
    } else if (r == RequestParser::Result::kIncomplete) {
      o.end = End::kIncomplete;
      return o;
    } else {
      check_error(p);
      o.end = End::kError;
      o.error = p.error();
      return o;
    }
  }
  return o;
}

/// A connection's input buffer: a std::string holding the bytes received from the current
/// request's start on, with room for the whole payload reserved up front so that it never
/// moves. Under ASan everything past size() (the terminating NUL and the spare capacity)
/// stays poisoned, so a read past the n bytes handed to parse() is reported. Each call
/// (un)poisons only the bytes that changed, so a payload fed byte by byte costs O(n) here.
class ConnBuffer {
 public:
  explicit ConnBuffer(std::size_t capacity) {
    s_.reserve(capacity);
    ASAN_POISON_MEMORY_REGION(s_.data(), s_.capacity() + 1);
  }
  ~ConnBuffer() { ASAN_UNPOISON_MEMORY_REGION(s_.data(), s_.capacity() + 1); }
  ConnBuffer(const ConnBuffer&) = delete;
  ConnBuffer& operator=(const ConnBuffer&) = delete;
  void append(const char* p, std::size_t n) {
    CHECK(s_.size() + n <= s_.capacity(), "ConnBuffer would move");
    ASAN_UNPOISON_MEMORY_REGION(s_.data() + s_.size(), n + 1);
    s_.append(p, n);
    ASAN_POISON_MEMORY_REGION(s_.data() + s_.size(), 1);
  }
  void drop(std::size_t n) {
    const std::size_t old = s_.size();
    s_.erase(0, n);
    ASAN_POISON_MEMORY_REGION(s_.data() + s_.size(), old + 1 - s_.size());
  }
  const char* data() const { return s_.data(); }
  std::size_t size() const { return s_.size(); }

 private:
  std::string s_;
};

/// The payload in chunks, like a connection's partial reads: each chunk is appended to the
/// connection buffer, parse() runs on the bytes from the request's start, and a request's
/// bytes are dropped once parsed. With fresh_copies, parse() gets an exact-size copy made for
/// that call alone (freed right after), so a pointer the parser kept from an earlier call is a
/// use-after-free.
Outcome parse_chunked(const uint8_t* sizes, std::size_t k, bool reset_on_incomplete, bool fresh_copies,
                      const char* data, std::size_t n) {
  Outcome o;
  RequestParser p(fuzz_limits());
  ConnBuffer conn(n);
  std::size_t fed = 0, chunk = 0, wanted = 0;
  while (fed < n) {
    const std::size_t len = std::min<std::size_t>(k == 0 ? 1 : std::size_t{sizes[chunk++ % k]} + 1, n - fed);
    conn.append(data + fed, len);
    fed += len;
    while (conn.size() > 0) {
      std::unique_ptr<char[]> copy;
      const char* buf = conn.data();
      if (fresh_copies) {
        copy.reset(new char[conn.size()]);
        std::memcpy(copy.get(), conn.data(), conn.size());
        buf = copy.get();
      }
      std::size_t consumed = 0;
      const auto r = p.parse(buf, conn.size(), &consumed);
      if (r == RequestParser::Result::kRequest) {
        o.requests.push_back(check_request(p, buf, conn.size(), consumed, wanted));
        o.lengths.push_back(consumed);
        conn.drop(consumed);
        wanted = 0;
        continue;
      }
      if (r == RequestParser::Result::kIncomplete) {
        wanted = std::max(wanted, p.wanted());
        if (reset_on_incomplete) p.reset();
        break;
      }
      check_error(p);
      o.end = End::kError;
      o.error = p.error();
      return o;
    }
  }
  o.end = conn.size() == 0 ? End::kClean : End::kIncomplete;
  return o;
}

const char* end_name(End e) { return e == End::kClean ? "clean" : e == End::kIncomplete ? "incomplete" : "error"; }

std::string describe(const Outcome& o) {
  std::string s = std::to_string(o.requests.size()) + " requests, " + end_name(o.end);
  if (o.end == End::kError) s += " (" + o.error + ")";
  return s;
}

void compare(const Outcome& whole, const Outcome& chunked) {
  const std::string both = "whole: " + describe(whole) + "; chunked: " + describe(chunked);
  CHECK(whole.requests.size() == chunked.requests.size(), both);
  for (std::size_t i = 0; i < whole.requests.size(); ++i) {
    CHECK(whole.requests[i] == chunked.requests[i], "request " + std::to_string(i) + " differs; " + both);
    CHECK(whole.lengths[i] == chunked.lengths[i], "request " + std::to_string(i) + " length differs; " + both);
  }
  CHECK(whole.end == chunked.end, both);
  CHECK(whole.error == chunked.error, both);
}

/// Parses bytes that hold exactly one request; returns its args.
Args parse_one(std::string_view bytes, std::size_t split) {
  RequestParser p(fuzz_limits());
  std::size_t consumed = 0;
  RequestParser::Result r = RequestParser::Result::kIncomplete;
  if (split > 0 && split < bytes.size()) {
    std::unique_ptr<char[]> part(new char[split]);
    std::memcpy(part.get(), bytes.data(), split);
    r = p.parse(part.get(), split, &consumed);
    CHECK(r == RequestParser::Result::kIncomplete, "round trip: a prefix parsed as " + std::to_string(int(r)));
  }
  std::unique_ptr<char[]> all(new char[bytes.size()]);
  std::memcpy(all.get(), bytes.data(), bytes.size());
  r = p.parse(all.get(), bytes.size(), &consumed);
  CHECK(r == RequestParser::Result::kRequest, "round trip: " + p.error() + " on " + show(bytes));
  CHECK(consumed == bytes.size(), "round trip consumed");
  Args out;
  for (const auto& a : p.args()) out.emplace_back(a);
  return out;
}

std::string hex_escape_inline(const Args& args) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string line;
  for (const auto& a : args) {
    if (!line.empty()) line.push_back(' ');
    line.push_back('"');
    for (unsigned char c : a) {
      line += "\\x";
      line.push_back(kHex[c >> 4]);
      line.push_back(kHex[c & 15]);
    }
    line.push_back('"');
  }
  return line;
}

void round_trips(const Args& args, std::size_t salt) {
  if (args.empty()) return;
  // As a RESP array of bulk strings (what clients send), written by ReplyWriter.
  if (args.size() <= kMaxArgs) {
    for (int proto : {2, 3}) {
      std::string enc;
      ReplyWriter w(&enc, proto);
      w.array(args.size());
      for (const auto& a : args) w.bulk(a);
      CHECK(parse_one(enc, 0) == args, "array round trip");
      CHECK(parse_one(enc, 1 + salt % enc.size()) == args, "array round trip in two pieces");
    }
  }
  // As an inline line with every byte "\xHH"-escaped; split_inline must undo it.
  std::vector<std::string> split;
  CHECK(duet::server::split_inline(hex_escape_inline(args), &split), "inline round trip: unbalanced");
  CHECK(split == args, "inline round trip");
}

std::string header(char type, unsigned long long n) { return std::string(1, type) + std::to_string(n) + "\r\n"; }

/// Every ReplyWriter function, both protocols, with the output checked byte for byte, on at
/// most *budget of the args (the writer is simple; most of the time belongs to the parser).
void exercise_writer(const Args& args, std::size_t* budget) {
  const std::size_t use = std::min(args.size(), *budget);
  *budget -= use;
  for (int proto : {2, 3}) {
    const bool r3 = proto == 3;
    std::string out, expect;
    ReplyWriter w(&out, proto);
    CHECK(w.resp3() == r3 && w.buffer() == &out);
    w.array(args.size());
    expect += header('*', args.size());
    for (std::size_t i = 0; i < use; ++i) {
      const std::string& a = args[i];
      unsigned long long raw = 0;
      std::memcpy(&raw, a.data(), std::min(a.size(), sizeof raw));
      const long long v = static_cast<long long>(raw);
      long long parsed = 0;
      const bool numeric = std::from_chars(a.data(), a.data() + a.size(), parsed).ec == std::errc();

      w.simple(a);
      expect += "+" + a + "\r\n";
      w.error(a);
      std::string clean = a;
      std::replace(clean.begin(), clean.end(), '\r', ' ');
      std::replace(clean.begin(), clean.end(), '\n', ' ');
      expect += "-" + clean + "\r\n";
      w.integer(v);
      expect += ":" + std::to_string(v) + "\r\n";
      if (numeric) {
        w.integer(parsed);
        expect += ":" + std::to_string(parsed) + "\r\n";
      }
      w.bulk(a);
      expect += header('$', a.size()) + a + "\r\n";
      w.verbatim(a);
      expect += r3 ? header('=', a.size() + 4) + "txt:" + a + "\r\n" : header('$', a.size()) + a + "\r\n";
      w.array(raw);
      expect += header('*', raw);
      w.map(raw);
      expect += r3 ? header('%', raw) : header('*', 2 * raw);
      w.set(raw);
      expect += header(r3 ? '~' : '*', raw);
      w.boolean(raw & 1);
      expect += r3 ? ((raw & 1) ? "#t\r\n" : "#f\r\n") : ((raw & 1) ? ":1\r\n" : ":0\r\n");
    }
    w.null();
    expect += r3 ? "_\r\n" : "$-1\r\n";
    w.null_array();
    expect += r3 ? "_\r\n" : "*-1\r\n";
    constexpr auto kMinLL = std::numeric_limits<long long>::min();
    constexpr auto kMaxLL = std::numeric_limits<long long>::max();
    constexpr auto kMaxSize = std::numeric_limits<std::size_t>::max();
    w.integer(kMinLL);
    w.integer(kMaxLL);
    expect += ":" + std::to_string(kMinLL) + "\r\n:" + std::to_string(kMaxLL) + "\r\n";
    w.array(kMaxSize);
    w.map(kMaxSize);
    w.set(kMaxSize);
    expect += header('*', kMaxSize) + (r3 ? header('%', kMaxSize) : header('*', 2 * kMaxSize)) +
              header(r3 ? '~' : '*', kMaxSize);
    w.error("");
    w.simple("");
    w.bulk("");
    w.verbatim("");
    expect += std::string("-\r\n+\r\n$0\r\n\r\n") + (r3 ? "=4\r\ntxt:\r\n" : "$0\r\n\r\n");
    CHECK(out == expect, "ReplyWriter RESP" + std::to_string(proto) + " output: " + show(out, 200) +
                             " expected: " + show(expect, 200));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::size_t k = data[0] & 7;
  const bool reset_on_incomplete = (data[0] & 8) != 0;
  const bool fresh_copies = (data[0] & 16) != 0;
  if (size < 1 + k) return 0;
  const uint8_t* sizes = data + 1;
  const char* payload = reinterpret_cast<const char*>(data + 1 + k);
  const std::size_t n = size - 1 - k;

  const Outcome whole = parse_whole(payload, n);
  const Outcome chunked = parse_chunked(sizes, k, reset_on_incomplete, fresh_copies, payload, n);
  compare(whole, chunked);

  std::size_t salt = size, writer_budget = 16;
  for (const auto& req : whole.requests) {
    round_trips(req, salt++);
    exercise_writer(req, &writer_budget);
  }
  // split_inline on the raw payload's first line, directly (no inline size limit on this path).
  const std::string_view first(payload, std::min<std::size_t>(n, std::string_view(payload, n).find('\n')));
  std::vector<std::string> split;
  if (duet::server::split_inline(first, &split)) {
    std::size_t total = 0;
    for (const auto& a : split) total += a.size();
    CHECK(total <= first.size(), "split_inline args longer than the line");
  }
  return 0;
}

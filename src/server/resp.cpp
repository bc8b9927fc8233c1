#include "server/resp.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace duet::server {

namespace {

// A length line ("*<n>\r\n", "$<n>\r\n") holds at most 20 digits and a sign: a line longer
// than this is rejected at once, so a header trickled in byte by byte costs O(1) per read.
constexpr std::size_t kMaxLengthLine = 32;

/// Finds the '\r' that ends a length line starting at p (n bytes available). Returns its
/// offset, npos when more bytes are needed, or kBadLine when the line is malformed (too long,
/// or a '\r' not followed by '\n').
constexpr std::size_t kBadLine = std::string_view::npos - 1;
std::size_t find_length_end(const char* p, std::size_t n) {
  const std::size_t scan = std::min(n, kMaxLengthLine);
  const void* r = std::memchr(p, '\r', scan);
  if (!r) return n >= kMaxLengthLine ? kBadLine : std::string_view::npos;
  const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(r) - p);
  if (at + 1 >= n) return std::string_view::npos;  // '\r' last: wait for the '\n'
  return p[at + 1] == '\n' ? at : kBadLine;
}

/// Parses a length the way Redis does: digits with an optional '-', no '+', no leading
/// zeros ("0" alone is fine), no blanks.
bool parse_ll(std::string_view s, long long* v) {
  if (s.empty()) return false;
  const std::size_t d = s[0] == '-' ? 1 : 0;
  if (d == s.size() || s[d] < '0' || s[d] > '9') return false;
  if (s[d] == '0' && (s.size() > d + 1 || d == 1)) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void RequestParser::reset() {
  expected_ = -1;
  pos_ = 0;
  spans_.clear();
  wanted_ = 0;
}

RequestParser::Result RequestParser::fail(std::string message) {
  error_ = std::move(message);
  reset();
  return Result::kError;
}

RequestParser::Result RequestParser::parse(const char* data, std::size_t n, std::size_t* consumed) {
  args_.clear();
  if (n == 0) return Result::kIncomplete;
  if (data[0] != '*') return parse_inline(data, n, consumed);
  if (expected_ < 0) {
    const std::size_t e = find_length_end(data + 1, n - 1);
    if (e == std::string_view::npos) return Result::kIncomplete;
    long long count = 0;
    if (e == kBadLine || !parse_ll(std::string_view(data + 1, e), &count) ||
        count > static_cast<long long>(limits_.max_args))
      return fail("ERR Protocol error: invalid multibulk length");
    if (count <= 0) {  // "*0" and "*-1" carry no request
      *consumed = e + 3;
      return Result::kRequest;
    }
    expected_ = count;
    pos_ = e + 3;
    spans_.clear();
    spans_.reserve(static_cast<std::size_t>(std::min<long long>(count, 1024)));
  }
  while (spans_.size() < static_cast<std::size_t>(expected_)) {
    if (pos_ >= n) return Result::kIncomplete;
    if (data[pos_] != '$') {
      const char got = data[pos_];
      return fail(std::string("ERR Protocol error: expected '$', got '") + (got >= 32 && got < 127 ? got : ' ') +
                  "'");
    }
    const std::size_t e = find_length_end(data + pos_ + 1, n - pos_ - 1);
    if (e == std::string_view::npos) return Result::kIncomplete;
    long long len = 0;
    if (e == kBadLine || !parse_ll(std::string_view(data + pos_ + 1, e), &len) || len < 0 ||
        static_cast<unsigned long long>(len) > limits_.max_bulk_bytes)
      return fail("ERR Protocol error: invalid bulk length");
    const std::size_t start = pos_ + 1 + e + 2;
    const std::size_t need = start + static_cast<std::size_t>(len) + 2;
    if (need > n) {
      wanted_ = need;
      return Result::kIncomplete;
    }
    if (data[need - 2] != '\r' || data[need - 1] != '\n') return fail("ERR Protocol error: expected CRLF after bulk");
    spans_.emplace_back(start, static_cast<std::size_t>(len));
    pos_ = need;
  }
  args_.reserve(spans_.size());
  for (const auto& [off, len] : spans_) args_.emplace_back(data + off, len);
  *consumed = pos_;
  reset();
  return Result::kRequest;
}

RequestParser::Result RequestParser::parse_inline(const char* data, std::size_t n, std::size_t* consumed) {
  const void* nl = std::memchr(data, '\n', n);
  if (!nl) {
    if (n > limits_.max_inline_bytes) return fail("ERR Protocol error: too big inline request");
    return Result::kIncomplete;
  }
  std::size_t len = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
  *consumed = len + 1;
  if (len > limits_.max_inline_bytes) return fail("ERR Protocol error: too big inline request");
  if (len > 0 && data[len - 1] == '\r') --len;
  inline_args_.clear();
  if (!split_inline(std::string_view(data, len), &inline_args_))
    return fail("ERR Protocol error: unbalanced quotes in request");
  if (inline_args_.size() > limits_.max_args) return fail("ERR Protocol error: invalid multibulk length");
  for (const auto& a : inline_args_) args_.emplace_back(a);
  return Result::kRequest;
}

bool split_inline(std::string_view line, std::vector<std::string>* out) {
  std::size_t i = 0;
  const std::size_t n = line.size();
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  for (;;) {
    while (i < n && blank(line[i])) ++i;
    if (i >= n) return true;
    std::string cur;
    bool in_dq = false, in_sq = false, done = false;
    while (!done) {
      if (in_dq) {
        if (i >= n) return false;
        if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' && hex_digit(line[i + 2]) >= 0 &&
            hex_digit(line[i + 3]) >= 0) {
          cur.push_back(static_cast<char>(hex_digit(line[i + 2]) * 16 + hex_digit(line[i + 3])));
          i += 3;
        } else if (line[i] == '\\' && i + 1 < n) {
          ++i;
          char c = line[i];
          switch (c) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'a': c = '\a'; break;
            default: break;
          }
          cur.push_back(c);
        } else if (line[i] == '"') {
          if (i + 1 < n && !blank(line[i + 1])) return false;  // closing quote must end the argument
          done = true;
        } else {
          cur.push_back(line[i]);
        }
      } else if (in_sq) {
        if (i >= n) return false;
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          ++i;
          cur.push_back('\'');
        } else if (line[i] == '\'') {
          if (i + 1 < n && !blank(line[i + 1])) return false;
          done = true;
        } else {
          cur.push_back(line[i]);
        }
      } else {
        if (i >= n) break;
        const char c = line[i];
        if (blank(c)) break;
        if (c == '"') in_dq = true;
        else if (c == '\'') in_sq = true;
        else cur.push_back(c);
      }
      if (i < n) ++i;
    }
    out->push_back(std::move(cur));
  }
}

void ReplyWriter::header(char type, std::size_t n) {
  char buf[24];
  buf[0] = type;
  auto r = std::to_chars(buf + 1, buf + sizeof buf - 2, n);
  *r.ptr++ = '\r';
  *r.ptr++ = '\n';
  out_->append(buf, static_cast<std::size_t>(r.ptr - buf));
}

void ReplyWriter::simple(std::string_view s) {
  out_->push_back('+');
  out_->append(s);
  out_->append("\r\n", 2);
}

void ReplyWriter::error(std::string_view message) {
  out_->push_back('-');
  const std::size_t at = out_->size();
  out_->append(message);
  for (std::size_t i = at; i < out_->size(); ++i)
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') (*out_)[i] = ' ';
  out_->append("\r\n", 2);
}

void ReplyWriter::integer(long long v) {
  char buf[32];
  buf[0] = ':';
  auto r = std::to_chars(buf + 1, buf + sizeof buf - 2, v);
  *r.ptr++ = '\r';
  *r.ptr++ = '\n';
  out_->append(buf, static_cast<std::size_t>(r.ptr - buf));
}

void ReplyWriter::bulk(std::string_view s) {
  header('$', s.size());
  out_->append(s);
  out_->append("\r\n", 2);
}

void ReplyWriter::null() { out_->append(resp3_ ? "_\r\n" : "$-1\r\n"); }
void ReplyWriter::null_array() { out_->append(resp3_ ? "_\r\n" : "*-1\r\n"); }
void ReplyWriter::array(std::size_t n) { header('*', n); }
void ReplyWriter::map(std::size_t pairs) { resp3_ ? header('%', pairs) : header('*', 2 * pairs); }
void ReplyWriter::set(std::size_t n) { header(resp3_ ? '~' : '*', n); }
void ReplyWriter::boolean(bool b) {
  if (resp3_) out_->append(b ? "#t\r\n" : "#f\r\n");
  else integer(b ? 1 : 0);
}
void ReplyWriter::verbatim(std::string_view s) {
  if (!resp3_) return bulk(s);
  header('=', s.size() + 4);
  out_->append("txt:");
  out_->append(s);
  out_->append("\r\n", 2);
}

}  // namespace duet::server

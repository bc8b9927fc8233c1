#include "resp_client.hpp"

#include <cstring>

namespace duet::bench::net {
namespace {

/// Deepest array nesting accepted in a reply (the benchmark's commands return flat replies).
constexpr int kMaxDepth = 32;

/// Parses the signed decimal between p and the "\r\n" that ends the line at or after p.
/// Returns the position after "\r\n", nullptr when the line is incomplete; sets *bad on a
/// malformed number.
const char* parse_line_integer(const char* p, const char* end, std::int64_t* value, bool* bad) {
  const char* cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(end - p)));
  if (!cr || cr + 1 >= end) return nullptr;
  if (cr[1] != '\n') {
    *bad = true;
    return nullptr;
  }
  bool neg = false;
  if (p < cr && *p == '-') neg = true, ++p;
  if (p == cr || cr - p > 19) {
    *bad = true;
    return nullptr;
  }
  std::int64_t v = 0;
  for (; p < cr; ++p) {
    if (*p < '0' || *p > '9') {
      *bad = true;
      return nullptr;
    }
    v = v * 10 + (*p - '0');
  }
  *value = neg ? -v : v;
  return cr + 2;
}

/// Parses one reply starting at p; returns the position after it, nullptr if incomplete or
/// malformed (*bad set, *error says why).
const char* parse_at(const char* p, const char* end, Reply* r, int depth, bool* bad, std::string* error) {
  if (p >= end) return nullptr;
  if (depth > kMaxDepth) {
    *bad = true;
    *error = "reply nested deeper than 32 arrays";
    return nullptr;
  }
  const char type = *p++;
  r->type = type;
  r->nil = false;
  r->integer = 0;
  r->text = {};
  switch (type) {
    case '+':
    case '-': {
      const char* cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(end - p)));
      if (!cr || cr + 1 >= end) return nullptr;
      if (cr[1] != '\n') {
        *bad = true;
        *error = "status line not ended by CRLF";
        return nullptr;
      }
      r->text = std::string_view(p, static_cast<std::size_t>(cr - p));
      return cr + 2;
    }
    case ':': {
      const char* q = parse_line_integer(p, end, &r->integer, bad);
      if (*bad) *error = "malformed integer reply";
      return q;
    }
    case '$': {
      std::int64_t len = 0;
      const char* q = parse_line_integer(p, end, &len, bad);
      if (!q) {
        if (*bad) *error = "malformed bulk length";
        return nullptr;
      }
      if (len == -1) {
        r->nil = true;
        return q;
      }
      if (len < 0) {
        *bad = true;
        *error = "negative bulk length";
        return nullptr;
      }
      if (end - q < len + 2) return nullptr;
      if (q[len] != '\r' || q[len + 1] != '\n') {
        *bad = true;
        *error = "bulk string not ended by CRLF";
        return nullptr;
      }
      r->text = std::string_view(q, static_cast<std::size_t>(len));
      return q + len + 2;
    }
    case '*': {
      std::int64_t count = 0;
      const char* q = parse_line_integer(p, end, &count, bad);
      if (!q) {
        if (*bad) *error = "malformed array length";
        return nullptr;
      }
      if (count == -1) {
        r->nil = true;
        return q;
      }
      if (count < 0) {
        *bad = true;
        *error = "negative array length";
        return nullptr;
      }
      Reply element;
      for (std::int64_t i = 0; i < count; ++i) {
        q = parse_at(q, end, &element, depth + 1, bad, error);
        if (!q) return nullptr;
      }
      r->type = '*';
      r->nil = false;
      r->integer = count;
      r->text = {};
      return q;
    }
    default:
      *bad = true;
      *error = std::string("unknown reply type byte 0x") + "0123456789abcdef"[(type >> 4) & 0xf] +
               "0123456789abcdef"[type & 0xf];
      return nullptr;
  }
}

void append_key(std::string& out, std::uint64_t k) {
  char key[kKeyBytes];
  format_key(k, key);
  out.append("$16\r\n", 5);
  out.append(key, kKeyBytes);
  out.append("\r\n", 2);
}

}  // namespace

void format_key(std::uint64_t k, char* out) {
  std::memcpy(out, "key:", 4);
  for (int i = 15; i >= 4; --i, k /= 10) out[i] = static_cast<char>('0' + k % 10);
}

void format_value(std::uint64_t k, char* out, std::size_t bytes) {
  char digits[12];
  for (int i = 11; i >= 0; --i, k /= 10) digits[i] = static_cast<char>('0' + k % 10);
  for (std::size_t i = 0; i < bytes; i += 12) std::memcpy(out + i, digits, bytes - i < 12 ? bytes - i : 12);
}

void append_get(std::string& out, std::uint64_t k) {
  out.append("*2\r\n$3\r\nGET\r\n", 13);
  append_key(out, k);
}

void append_set(std::string& out, std::uint64_t k, std::string_view value_header, std::string_view value) {
  out.append("*3\r\n$3\r\nSET\r\n", 13);
  append_key(out, k);
  out.append(value_header);
  out.append(value);
  out.append("\r\n", 2);
}

ParseResult parse_reply(const char* data, std::size_t n, std::size_t* consumed, Reply* reply,
                        std::string* error) {
  bool bad = false;
  const char* end = parse_at(data, data + n, reply, 0, &bad, error);
  if (bad) return ParseResult::kProtocolError;
  if (!end) return ParseResult::kIncomplete;
  *consumed = static_cast<std::size_t>(end - data);
  return ParseResult::kReply;
}

}  // namespace duet::bench::net

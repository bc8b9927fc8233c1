// The client side of RESP2 for duet_bench_net: request encoding (GET and SET of the benchmark's
// keys) and an incremental reply parser for the five RESP2 types (+ - : $ *).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace duet::bench::net {

/// Bytes of a key: "key:%012d" (16 bytes), as redis-benchmark's -r writes its keys.
inline constexpr std::size_t kKeyBytes = 16;

/// Writes "key:" and the 12-digit zero-padded decimal of k (k < 10^12) to out[0..16).
void format_key(std::uint64_t k, char* out);

/// Fills out[0..bytes) with the value the benchmark writes for key number k: the key's 12
/// digits, repeated, truncated to `bytes`. A GET of k must return exactly this.
void format_value(std::uint64_t k, char* out, std::size_t bytes);

/// Appends "GET key:<k>" as a RESP array to out.
void append_get(std::string& out, std::uint64_t k);

/// Appends "SET key:<k> <value>" to out; value_header is "$<bytes>\r\n", value the bytes.
void append_set(std::string& out, std::uint64_t k, std::string_view value_header, std::string_view value);

/// One parsed reply. Views point into the parser's input and live until it is compacted.
struct Reply {
  char type = 0;             ///< '+', '-', ':', '$' or '*'
  bool nil = false;          ///< "$-1" or "*-1"
  std::int64_t integer = 0;  ///< ':' value, or an array's element count
  std::string_view text;     ///< '+' and '-' line, '$' bulk bytes
};

/// Result of parse_reply().
enum class ParseResult { kReply, kIncomplete, kProtocolError };

/// Parses the reply at data[0..n). kReply: *consumed is its length and *reply describes it
/// (array elements are parsed, checked and skipped; the reply keeps the count). kIncomplete: more
/// bytes are needed. kProtocolError: the bytes are not RESP2 (*error says what).
ParseResult parse_reply(const char* data, std::size_t n, std::size_t* consumed, Reply* reply,
                        std::string* error);

}  // namespace duet::bench::net

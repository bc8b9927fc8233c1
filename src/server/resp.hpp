// RESP, the Redis serialization protocol: an incremental parser for client requests (arrays
// of bulk strings, and inline commands typed by hand) and writers for RESP2 and RESP3 replies.
//
// The parser never throws and never reads outside the bytes it is given. A request over a
// configured limit, or bytes that are not RESP, yield kError with Redis's error text; the
// caller replies with it and closes the connection (Redis does the same).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace duet::server {

/// Sizes a single request may not exceed.
struct RespLimits {
  std::size_t max_bulk_bytes = 512ull * 1024 * 1024;  ///< one argument (Redis: proto-max-bulk-len)
  std::size_t max_args = 1024 * 1024;                 ///< arguments of one request
  std::size_t max_inline_bytes = 64 * 1024;           ///< an inline command's line
};

/// Parses requests out of a connection's input buffer. Stateful: a request that arrived in
/// part is resumed where parsing stopped, so a large request costs O(its size) overall.
/// The buffer handed to parse() must hold the same bytes from the request's first byte on
/// (the caller may append, and may drop bytes only before a request's start).
class RequestParser {
 public:
  enum class Result { kRequest, kIncomplete, kError };

  explicit RequestParser(const RespLimits& limits = {}) : limits_(limits) {}

  /// Parses the request that starts at data[0]. kRequest: *consumed is its length and args()
  /// its arguments (views into data, or into the parser for inline requests; valid until the
  /// next call). kIncomplete: more bytes are needed (nothing consumed; call again with the
  /// same start). kError: error() holds the reply text; the connection should be closed.
  /// An empty inline line is skipped: kRequest with no arguments.
  Result parse(const char* data, std::size_t n, std::size_t* consumed);

  const std::vector<std::string_view>& args() const { return args_; }
  const std::string& error() const { return error_; }
  /// Bytes the request being parsed will need at least (to size the buffer); 0 if unknown.
  std::size_t wanted() const { return wanted_; }
  /// Forgets a partially parsed request (after the buffer was reset).
  void reset();

 private:
  Result parse_inline(const char* data, std::size_t n, std::size_t* consumed);
  Result fail(std::string message);

  RespLimits limits_;
  // Resumable state of a multibulk request: argument count, offsets parsed so far, position.
  long long expected_ = -1;
  std::size_t pos_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;
  std::vector<std::string_view> args_;
  std::vector<std::string> inline_args_;
  std::string error_;
  std::size_t wanted_ = 0;
};

/// Splits an inline command line into arguments the way redis-cli and Redis do: blanks
/// separate, "double quotes" take \n \r \t \b \a \\ \" and \xHH escapes, 'single quotes' take
/// \' only. False for unbalanced quotes (or a quote not followed by a blank).
bool split_inline(std::string_view line, std::vector<std::string>* out);

/// Appends replies to an output buffer in RESP2 or RESP3 (protocol 2 or 3). Every function
/// is a few appends; nothing here allocates beyond the buffer's growth.
class ReplyWriter {
 public:
  ReplyWriter(std::string* out, int protocol) : out_(out), resp3_(protocol >= 3) {}
  void simple(std::string_view s);           ///< +OK
  void error(std::string_view message);      ///< -ERR ...; CR/LF in message become blanks
  void integer(long long v);                 ///< :42
  void bulk(std::string_view s);             ///< $3\r\nfoo
  void null();                               ///< RESP2 $-1, RESP3 _
  void null_array();                         ///< RESP2 *-1, RESP3 _
  void array(std::size_t n);                 ///< *n; n elements follow
  void map(std::size_t pairs);               ///< RESP3 %n, RESP2 *2n; 2n elements follow
  void set(std::size_t n);                   ///< RESP3 ~n, RESP2 *n
  void boolean(bool b);                      ///< RESP3 #t/#f, RESP2 :1/:0
  void verbatim(std::string_view s);         ///< RESP3 =txt:, RESP2 bulk
  bool resp3() const { return resp3_; }
  std::string* buffer() { return out_; }

 private:
  void header(char type, std::size_t n);
  std::string* out_;
  bool resp3_;
};

}  // namespace duet::server

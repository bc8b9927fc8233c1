// Small reply builders the command families share.
#pragma once

#include <string>
#include <string_view>

#include "server/config.hpp"
#include "server/resp.hpp"

namespace duet::server {

inline constexpr std::string_view kOkReply = "+OK\r\n";

/// A bulk string when exists, else the null of the client's protocol.
inline void put_bulk_or_null(std::string* out, bool exists, std::string_view v, bool resp3) {
  ReplyWriter w(out, resp3 ? 3 : 2);
  if (exists) w.bulk(v);
  else w.null();
}

inline void put_int(std::string* out, long long v) { ReplyWriter(out, 2).integer(v); }

}  // namespace duet::server

// Status: the error type of every fallible Duet call.
//
// A Status is either ok() or carries a code and a human-readable message. Functions that can
// fail on bad input or exhausted resources return a Status (or a Result<T>) instead of
// throwing, so the server can turn each failure into an error reply and keep running.
#pragma once

#include <string>
#include <utility>

namespace duet {

/// What went wrong, coarse enough for a client to act on.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    ///< the input is malformed or uses a reserved value
  kResourceExhausted,  ///< a memory pool, the device, or a configured limit is full
  kUnavailable,        ///< the requested device or backend is not present
  kInternal,           ///< a broken invariant or a failed CUDA call; the message says which
  kNotFound,           ///< a named object (a keyspace) does not exist
  kTooLarge,           ///< a key or value is over its configured limit
};

/// Returns the stable lower-case name of a code, e.g. "invalid_argument".
const char* status_code_name(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status TooLarge(std::string m) { return {StatusCode::kTooLarge, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "ok" or "<code name>: <message>".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace duet

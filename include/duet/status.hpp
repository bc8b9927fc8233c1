// Status: the error type of every fallible Duet call.
//
// A Status is either ok() or carries a code and a human-readable message. Functions that can
// fail on bad input or exhausted resources return a Status, and their results through
// out-parameters, instead of throwing, so the server can turn each failure into an error reply
// and keep running. Status is [[nodiscard]]: a call whose Status is dropped draws a compiler
// warning (cast it to void, with a comment saying why, where ignoring it is right).
#pragma once

#include <string>
#include <utility>

namespace duet {

/// What went wrong, coarse enough for a client to act on.
enum class StatusCode {
  kOk = 0,
  /// The caller's mistake, and nothing changed: a malformed or out-of-range argument or
  /// setting (the message names it), a null output, a name already in use, an unknown kind or
  /// operation, a batch handle from elsewhere.
  kInvalidArgument,
  /// Memory ran out (host or device), or a pool or configured limit is full: the memory
  /// budget, the Canonical Store's slab limit, LIT's sessions. Retrying may succeed once
  /// something is freed (docs/kv.md says what a refused kv write leaves behind).
  kResourceExhausted,
  /// What the call needs is not present: a GPU (device kGpu without one), a capability of the
  /// GPU, iteration of a keyspace kind that has none.
  kUnavailable,
  /// A broken invariant or a failed CUDA call; the message says which. Outcomes of the
  /// requests involved are unknown.
  kInternal,
  kNotFound,  ///< a named object (a keyspace) does not exist
  kTooLarge,  ///< a key or value is over its configured limit; the request did nothing
};

/// Returns the stable lower-case name of a code, e.g. "invalid_argument".
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
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

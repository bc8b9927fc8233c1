// A client connection: what CLIENT LIST shows of it, the session its commands see, its input
// and output buffers and its replies in request order, its lifecycle as explicit states, and
// its I/O: reading, parsing requests, flushing replies in order, the lingering close. The event
// loop (io_thread.hpp) decides when these run and dispatches the parsed requests.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "server/command.hpp"
#include "server/key_batch.hpp"
#include "server/metrics.hpp"
#include "server/resp.hpp"

namespace duet::server {

/// Steady-clock nanoseconds.
std::uint64_t now_ns();

/// What CLIENT LIST shows of a connection; shared between its thread and the client table.
struct ClientInfo {
  std::uint64_t id = 0;
  int fd = -1;
  std::string addr, laddr;
  std::chrono::steady_clock::time_point created;
  std::atomic<std::uint64_t> last_ns{0};  ///< last input, steady-clock ns (written by the owner thread)
  std::mutex m;                           ///< guards name, lib_name, lib_ver
  std::string name, lib_name, lib_ver;
  std::atomic<unsigned> db{0};
  std::atomic<int> resp{2};
  std::atomic<const char*> last_cmd{"NULL"};

  /// One CLIENT LIST line (ends with "\n").
  std::string line();
};

/// State a command family keeps for one connection across its commands (a transaction between
/// BEGIN and COMMIT, a MULTI queue, WATCHed keys). Owned by the session; destroyed with it.
class SessionExtension {
 public:
  virtual ~SessionExtension() = default;
  /// Sees each request before dispatch runs it; returns true when it took the request and
  /// wrote its reply through ctx (MULTI queues it and answers +QUEUED). `def` is null for an
  /// unknown command; `error` is dispatch's verdict on the request (unknown command, wrong
  /// arity, a kind the database lacks), empty when it is good. Runs on the connection's thread.
  virtual bool intercept(CommandContext& ctx, const CommandDef* def, std::string_view error) {
    (void)ctx, (void)def, (void)error;
    return false;
  }
  /// Called about ten times a second on the connection's thread with the steady-clock time (ns):
  /// drops state idle past its family's limit (an interactive transaction's idle timeout).
  virtual void expire(Server& srv, std::uint64_t now_ns) { (void)srv, (void)now_ns; }
};

/// What a client's commands see and change: its database, its protocol, its identity, and a
/// slot for a transaction's state.
struct Session {
  unsigned db = 0;
  int proto = 2;
  std::shared_ptr<ClientInfo> info;
  /// Set by a command (QUIT) that wants the connection closed once its reply is out.
  bool close_requested = false;
  /// A family's per-connection state (null: none).
  std::unique_ptr<SessionExtension> extension;
};

/// A connection's input bytes: grows as needed, never zero-fills (recv writes straight in).
struct InputBuffer {
  std::unique_ptr<char[]> data;
  std::size_t cap = 0, len = 0;
  /// Makes room for `more` bytes after len.
  void reserve_more(std::size_t more);
  /// Drops the first n bytes.
  void consume_front(std::size_t n);
};

/// Where a connection is in its life. Each state includes the ones before it in what it
/// forbids: a closing connection reads no new commands, a lingering one has sent everything.
enum class ConnPhase : std::uint8_t {
  kOpen,       ///< reading and answering
  kClosing,    ///< reads no new commands (QUIT, a protocol error, EOF, a stop); closes once its replies are out
  kLingering,  ///< replies out and our side shut; drains input until EOF or a deadline, then closes
  kClosed,     ///< socket closed; the object lives until no command of it is in flight
  kReleased,   ///< queued for deletion at the end of the loop pass
};

/// Why the parser is not consuming input.
enum class ParseState : std::uint8_t {
  kReady,        ///< parse whatever arrives
  kBarrierWait,  ///< a barrier command waits for the earlier replies (parsed again when they are out)
  kPaused,       ///< a huge pipeline: parse again once half of the pending replies are sent
};

/// Buckets of a connection's keys in flight (Conn::remote, Conn::local).
constexpr std::size_t kConnBuckets = 32;
/// The bucket of a key by its key_hash (bits that neither the owner thread nor the pipeline's
/// stripes use alone).
inline std::size_t conn_bucket(std::uint64_t hash) { return static_cast<std::size_t>((hash >> 40) % kConnBuckets); }

/// One client connection; owned by its I/O thread.
struct Conn {
  int fd = -1;
  unsigned owner = 0;  ///< index of the thread that owns it
  Session session;
  InputBuffer in;
  std::size_t in_off = 0;  ///< start of the next request in `in`
  std::string out;
  std::size_t out_off = 0;
  std::deque<std::unique_ptr<PendingReply>> replies;
  RequestParser parser;
  std::uint32_t inflight = 0;           ///< key ops dispatched and not yet completed
  /// Per key bucket (conn_bucket): ops sent (or held to be sent) to other threads whose
  /// completion notes are not back yet, and reads and blind writes of other threads' keys
  /// running here and not yet completed. They decide where a read or a blind write may run and
  /// when a remote op may be posted (IoThread::route).
  std::array<std::uint32_t, kConnBuckets> remote{}, local{};
  ConnPhase phase = ConnPhase::kOpen;
  ParseState parse_state = ParseState::kReady;
  bool peer_closed = false;             ///< the client shut its sending side (EOF read)
  std::uint32_t events = 0;             ///< the epoll events registered now
  bool in_flush_list = false;           ///< queued for a flush at the end of the loop pass
  std::uint64_t linger_until_ns = 0;    ///< kLingering: when it is closed regardless

  bool closing() const { return phase >= ConnPhase::kClosing; }
  bool dead() const { return phase >= ConnPhase::kClosed; }
  bool output_pending() const { return out_off < out.size(); }
};

/// Recycles reply objects (one per thread; not thread-safe). Bounded: beyond 65,536 spare
/// objects, released ones are freed.
class ReplyPool {
 public:
  std::unique_ptr<PendingReply> take();
  void give_back(std::unique_ptr<PendingReply> r);

 private:
  std::vector<std::unique_ptr<PendingReply>> spare_;
};

/// Receives the requests parse_input finds (the I/O thread, which dispatches them).
class RequestSink {
 public:
  /// One request: def is its command (null: unknown), arrival_ns when its input was taken.
  virtual void on_request(Conn& c, const CommandDef* def, Args args, std::uint64_t arrival_ns) = 0;

 protected:
  ~RequestSink() = default;
};

/// Limits parse_input applies.
struct InputLimits {
  std::uint64_t query_buffer_limit;  ///< unanswered input of one client (client-query-buffer-limit)
  std::size_t max_pending_replies;   ///< replies queued before parsing pauses
};

/// Parses the complete requests in c's input and hands each to sink, in order, while c is open.
/// Stops, leaving the rest for later, before a barrier command while an earlier reply is not
/// done (ParseState::kBarrierWait) and after queuing limits.max_pending_replies replies
/// (kPaused). A protocol error, or unparsed input over the query buffer limit, queues the error
/// reply and moves c to kClosing. Then drops consumed input. Cost: the parse, one clock read.
void parse_input(Conn& c, const InputLimits& limits, RequestSink& sink);

/// What flush_replies leaves the caller to do.
enum class FlushResult : std::uint8_t {
  kKeepOpen,    ///< nothing more
  kSendFailed,  ///< the socket failed: close the connection
  kAllSent,     ///< a closing connection has sent everything: finish the close
  kParseAgain,  ///< a barrier or a pause is over: parse the input left behind
};

/// Moves the done replies at the front of c.replies into c.out, in order (counting each in
/// metrics: calls, errors, latency), recycles their objects, and sends what the socket takes.
FlushResult flush_replies(Conn& c, ThreadMetrics& metrics, ReplyPool& pool, std::size_t max_pending_replies);

/// Starts a lingering close: shuts our sending side so the client reads every reply, then keeps
/// draining its input until EOF or until_ns (closing with unread input would make the kernel
/// send a reset, which can destroy the last reply before the client reads it).
void start_linger(Conn& c, std::uint64_t until_ns);

/// Outcome of a socket read.
enum class ReadOutcome : std::uint8_t { kData, kEof, kAgain, kError };

/// Reads what the socket has into c.in (at least 64 KiB of room, more when the parser waits for
/// a large argument, at most 16 MiB at once); *bytes gets the count.
ReadOutcome read_input(Conn& c, std::size_t* bytes);
/// Reads and drops input (a closing connection waits for the client's EOF); kEof on EOF.
ReadOutcome discard_input(Conn& c);
/// Sends as much of c.out as the socket takes; *bytes gets the count. False on a fatal error.
bool send_output(Conn& c, std::uint64_t* bytes);
/// Drops consumed input; gives back a buffer a large request grew.
void compact_input(Conn& c);
/// "host:port" of the socket's peer (local = false) or of its own end.
std::string socket_name(int fd, bool local);

}  // namespace duet::server

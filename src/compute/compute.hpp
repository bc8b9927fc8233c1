// Compute inside transactions (SnapKV's compute subsystem; docs/compute.md): typed columns decoded
// from SNAPSHOT's buffers by a fixed-width row codec, relational operators and dense-network
// inference on the CPU (all cores) or the GPU (one pooled stream per transaction).
//
//   Engine        one per process or keyspace: the CPU worker pool, the GPU's stream pool, the
//                 loaded models. Thread-safe.
//   Context       one per transaction: the processor it runs on and, on the GPU, the stream it
//                 leased. Each operator call is one block: on the GPU it copies its inputs in,
//                 runs its kernels on the transaction's stream, copies the result out and
//                 synchronises once, so the CPU never works while the transaction's GPU does.
//   Batcher       merges concurrent callers' MLP inputs into one launch.
//
// Results are defined exactly and are bit-identical on both processors: filters return row
// numbers ascending; aggregates are integer (money is int64 cents) and come out ordered by the
// group key; joins list (left row, right row) pairs ordered by left row, then right row; sorts
// break ties by row number. MLP outputs agree within kMlpTolerance (FP32 summation order differs
// between cuBLAS and OpenBLAS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "duet/status.hpp"

namespace duet {
struct TxnSnapshot;
class PackedSnapshot;
}  // namespace duet

namespace duet::compute {

// ---------------------------------------------------------------------------------------------
// Columns

/// A column's element type. kMoney is a fixed-point amount held as int64 cents (exact, so sums
/// are bit-identical everywhere); kBytes is a fixed-width byte string (zero padded).
enum class Type : std::uint8_t { kInt64, kMoney, kFloat32, kFloat64, kBytes };
const char* type_name(Type t);
/// True for the types held as int64 (kInt64, kMoney).
inline bool is_integer(Type t) { return t == Type::kInt64 || t == Type::kMoney; }
/// Bytes one value of type t takes in a row and a column: 4 for kFloat32, `width` for kBytes, else 8.
inline std::uint32_t value_bytes(Type t, std::uint32_t width) {
  return t == Type::kFloat32 ? 4 : t == Type::kBytes ? width : 8;
}

/// Host memory for a column: 64-byte aligned; when asked for page-locked memory, a GPU is present
/// and the array is 1 MiB or more, a buffer from a process-wide pool of page-locked buffers (so
/// one asynchronous copy moves it; the pool keeps buffers for reuse). Move-only; contents
/// uninitialised after resize.
class HostArray {
 public:
  HostArray() = default;
  ~HostArray();
  HostArray(HostArray&& o) noexcept;
  HostArray& operator=(HostArray&& o) noexcept;
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;
  /// Makes room for `bytes` (keeping nothing). ResourceExhausted when memory is refused.
  Status resize(std::size_t bytes, bool pinned = false);
  char* data() { return p_; }
  const char* data() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release();
  char* p_ = nullptr;
  std::size_t bytes_ = 0, cap_ = 0;
  bool pinned_ = false;
};

/// One typed column of `rows` elements, each `width` bytes (8 for integers and kFloat64, 4 for
/// kFloat32, the declared width for kBytes).
class Column {
 public:
  Column() = default;
  /// An empty column of `type` (`width` only for kBytes: 1 .. 4096).
  Column(Type type, std::uint32_t width = 0);
  Type type() const { return type_; }
  std::uint32_t width() const { return width_; }
  std::size_t rows() const { return rows_; }
  /// Sets the row count (contents uninitialised). `pinned`: page-locked memory for a large column
  /// that will cross to the GPU (decoded SNAPSHOTs and the of_* helpers ask for it; operator
  /// outputs do not). ResourceExhausted when memory is refused.
  Status resize(std::size_t rows, bool pinned = false);
  char* data() { return buf_.data(); }
  const char* data() const { return buf_.data(); }
  /// Typed views; the type must match (int64 for kInt64/kMoney, float, double); an empty span
  /// otherwise.
  std::span<const std::int64_t> i64() const;
  std::span<std::int64_t> i64();
  std::span<const float> f32() const;
  std::span<float> f32();
  std::span<const double> f64() const;
  std::span<double> f64();
  /// Row r of a kBytes column (width() bytes).
  std::string_view bytes_at(std::size_t r) const { return {data() + r * width_, width_}; }
  /// A copy (columns are move-only otherwise, as their memory may be pinned).
  Status copy_to(Column* out) const;
  /// Convenience constructors for tests and callers building tables by hand.
  static Column of_int64(const std::vector<std::int64_t>& v, Type t = Type::kInt64);
  static Column of_float64(const std::vector<double>& v);
  static Column of_float32(const std::vector<float>& v);
  static Column of_bytes(const std::vector<std::string>& v, std::uint32_t width);

 private:
  Type type_ = Type::kInt64;
  std::uint32_t width_ = 8;
  std::size_t rows_ = 0;
  HostArray buf_;
};

/// Named columns of equal length.
class Table {
 public:
  /// Adds a column (InvalidArgument for a duplicate or empty name or a length that differs from
  /// the columns already present).
  Status add(std::string name, Column c);
  std::size_t rows() const { return rows_; }
  std::size_t width() const { return cols_.size(); }
  /// The column's index, or -1.
  int find(std::string_view name) const;
  const Column& column(std::size_t i) const { return cols_[i]; }
  Column& column(std::size_t i) { return cols_[i]; }
  const std::string& name(std::size_t i) const { return names_[i]; }
  /// The column named `name`, or null.
  const Column* get(std::string_view name) const;

 private:
  std::vector<std::string> names_;
  std::vector<Column> cols_;
  std::size_t rows_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Row codec

/// One field of a fixed-width row.
struct Field {
  std::string name;
  Type type = Type::kInt64;
  std::uint32_t width = 0;  ///< kBytes only: 1 .. 4096
};

/// A value for RowCodec::encode: int64 (kInt64, kMoney cents), double (kFloat64, kFloat32) or
/// bytes (kBytes, at most the width; shorter ones are zero padded).
using Value = std::variant<std::int64_t, double, std::string_view>;

/// The fixed-width row codec. A row is the fields in declaration order, packed with no padding
/// and no header: int64 / money / float64 as 8 little-endian bytes (IEEE 754 for floats),
/// float32 as 4, bytes as `width` bytes zero padded. row_bytes() is the sum of the widths; a
/// value of any other length is not a row of this schema.
class RowCodec {
 public:
  /// Checks the schema (at least one field, names non-empty and distinct, widths in range).
  static Status make(std::vector<Field> fields, RowCodec* out);
  std::size_t row_bytes() const { return row_bytes_; }
  const std::vector<Field>& fields() const { return fields_; }
  /// Byte offset of field i in a row.
  std::size_t offset(std::size_t i) const { return offsets_[i]; }
  /// Appends one encoded row to *row. InvalidArgument when the count or a value's kind does
  /// not match the schema or a byte string is longer than its width.
  Status encode(std::span<const Value> values, std::string* row) const;

  /// Where decode finds its rows: n slots with value_offsets (n+1), presence flags and value
  /// bytes (TxnSnapshot's and PackedSnapshot's columnar layout).
  struct Slots {
    std::size_t n = 0;
    const std::uint64_t* value_offsets = nullptr;
    const std::uint8_t* present = nullptr;
    const char* value_bytes = nullptr;
    const std::uint64_t* key_offsets = nullptr;  ///< optional (with_key)
    const char* key_bytes = nullptr;
  };
  static Slots slots_of(const TxnSnapshot& s);
  static Slots slots_of(const PackedSnapshot& p);

  /// Decodes every present slot into *out (cleared first): one column per field, named as the
  /// field, rows in slot order (absent points are skipped). With `with_key`, a first column
  /// "key" (kInt64) holds each key's bytes big-endian, zero padded on the right (keys of at most
  /// 8 bytes, so that integer order is key order for keys of one length). InvalidArgument,
  /// naming the slot, for a value that is not row_bytes() long or a key over 8 bytes.
  Status decode(const Slots& s, Table* out, bool with_key = false) const;
  /// decode() of the named fields only (in the order named): a query decodes the columns it
  /// reads, not every field of the row. InvalidArgument, with *out cleared, for a name that is
  /// not a field (or named twice) and for what decode() refuses.
  Status decode_fields(const Slots& s, std::span<const std::string> names, Table* out, bool with_key = false) const;

 private:
  Status decode_indices(const Slots& s, const std::vector<std::size_t>& fields, Table* out, bool with_key) const;
  std::vector<Field> fields_;
  std::vector<std::size_t> offsets_;
  std::size_t row_bytes_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Operator arguments

enum class Cmp : std::uint8_t { kLt, kLe, kEq, kNe, kGe, kGt, kBetween };

/// A predicate on one column. Integer columns compare with `i` (and `i_hi` for kBetween,
/// inclusive both ends); float columns with `f` / `f_hi`; bytes columns byte-wise (memcmp over
/// the width) with `s` zero padded to the width (kBetween: [s, s_hi]).
struct Predicate {
  std::string column;
  Cmp cmp = Cmp::kEq;
  std::int64_t i = 0, i_hi = 0;
  double f = 0, f_hi = 0;
  std::string s, s_hi;
};

/// Row numbers (ascending from filter; any order, repeats allowed, as a gather list).
using Selection = std::vector<std::uint32_t>;

/// An integer expression for derive(): `a op b`, where b is a column or, when b is empty, the
/// constant `k`. Arithmetic wraps modulo 2^64 (defined, and the same on both processors).
struct Expr {
  enum Op : std::uint8_t { kAdd, kSub, kMul } op = kMul;
  std::string a, b;
  std::int64_t k = 0;
};

/// An aggregate over an integer column (kCount takes no column). Sums wrap modulo 2^64.
struct Agg {
  enum Op : std::uint8_t { kCount, kSum, kMin, kMax } op = kCount;
  std::string column;  ///< input (not for kCount)
  std::string name;    ///< output column name
};

/// (left row, right row) pairs of an inner equi-join, ordered by left row then right row.
struct JoinPairs {
  std::vector<std::uint32_t> left, right;
  std::size_t size() const { return left.size(); }
};

/// A sort key: an integer or float column, ascending unless `descending`. Floats order as
/// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (their IEEE bit patterns, totally ordered).
struct SortKey {
  std::string column;
  bool descending = false;
};

/// A dense layer: y = act(x W^T + b), W row-major [out][in], b [out].
struct Dense {
  enum Act : std::uint8_t { kNone, kRelu, kSigmoid } act = kRelu;
  std::uint32_t in = 0, out = 0;
  std::vector<float> w, b;
};
/// A multi-layer perceptron: layers in order, each layer's `in` equal to the previous `out`.
struct Mlp {
  std::vector<Dense> layers;
  /// InvalidArgument naming the layer whose shapes or sizes disagree, or for no layers.
  Status check() const;
  std::uint32_t inputs() const { return layers.empty() ? 0 : layers.front().in; }
  std::uint32_t outputs() const { return layers.empty() ? 0 : layers.back().out; }
};
/// |gpu - cpu| <= kMlpTolerance * (1 + |cpu|) for each output of an MLP whose layers are at most
/// 1024 wide with weights and inputs of magnitude <= 1 (FP32 on both, no TF32).
inline constexpr float kMlpTolerance = 1e-4f;

// ---------------------------------------------------------------------------------------------
// Engine, contexts, batcher

/// Which processor runs a context's operators.
enum class Device : std::uint8_t { kAuto, kCpu, kGpu };
const char* device_name(Device d);
/// Parses "auto", "cpu" or "gpu" (any case) into *out; false, with *out untouched, otherwise.
bool parse_device(std::string_view text, Device* out);

struct EngineConfig {
  /// kAuto: the GPU when one is present, else the CPU. kGpu without a GPU: open() fails.
  Device device = Device::kAuto;
  /// CPU worker threads (0: one per hardware thread).
  unsigned cpu_threads = 0;
  /// Most CUDA streams (one per transaction that runs GPU work at once); contexts beyond it wait
  /// for a stream. 1 .. 1024.
  unsigned max_streams = 32;
  /// Rows below which a CPU operator runs on the calling thread alone.
  std::size_t cpu_grain = 1 << 14;
};

class Engine;
class Context;

/// A model loaded into an Engine (its weights are on the GPU once, read by every stream).
using ModelId = std::uint32_t;

/// The compute engine. Create with open(); share it between threads.
class Engine {
 public:
  static Status open(const EngineConfig& config, std::shared_ptr<Engine>* out);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// The processor contexts get by default (kCpu or kGpu, never kAuto).
  Device device() const { return device_; }
  /// Whether a GPU is usable (contexts may then ask for either processor).
  bool gpu_available() const;
  /// One line: "gpu: <name>, N streams" or "cpu: <reason>, T threads".
  std::string describe() const;
  unsigned cpu_threads() const;

  /// Starts a transaction's context on `d` (kAuto: the engine's device). InvalidArgument for
  /// kGpu without a GPU.
  Status context(Device d, std::unique_ptr<Context>* out);

  /// Checks and loads `m` (uploading its weights when a GPU is present). Models stay loaded for
  /// the engine's life.
  Status load_model(const Mlp& m, ModelId* id);
  const Mlp* model(ModelId id) const;

  /// Measures the GPU's limits for the benchmark: pinned host-to-device copy and device-to-device
  /// copy (bytes read plus written), best of a few 256 MiB copies, in bytes per second.
  /// Unavailable without a GPU.
  Status gpu_bandwidth(double* h2d_bytes_per_s, double* d2d_bytes_per_s);

  /// Streams created so far (at most max_streams) and how many are leased now.
  unsigned streams_created() const;
  unsigned streams_leased() const;

  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  Engine() = default;
  std::unique_ptr<Impl> impl_;
  Device device_ = Device::kCpu;
  EngineConfig config_;
};

/// One transaction's compute. Not thread-safe (a transaction belongs to one thread at a time).
/// Its engine must outlive it (a Batcher keeps its engine alive itself).
/// On the GPU it leases one stream (with its scratch memory) at its first operator and keeps
/// it until destroyed. Every operator validates its arguments first (InvalidArgument naming the
/// column or value, nothing computed), then runs as one block; a failed GPU call returns
/// Internal or ResourceExhausted and leaves the outputs unspecified.
class Context {
 public:
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Device device() const { return device_; }

  /// Rows of `t` meeting every predicate (AND), ascending.
  Status filter(const Table& t, std::span<const Predicate> preds, Selection* out);
  /// The named columns (all when `columns` is empty) at the rows of `sel`, in `sel`'s order
  /// (rows out of range: InvalidArgument).
  Status project(const Table& t, const Selection& sel, std::span<const std::string> columns, Table* out);
  /// A new int64 column `e` over t's integer columns (kMoney when either operand is money and
  /// the other is not, kInt64 otherwise).
  Status derive(const Table& t, const Expr& e, Column* out);
  /// Groups t's rows (all, or those in `sel` when non-null) by the integer columns `keys` (0 to
  /// 4; none: one group over every row, even when empty) and computes `aggs`. *out holds the
  /// key columns then one int64 column per aggregate (count as kInt64, others keep the input's
  /// type), one row per group, ordered by the keys ascending (signed).
  Status aggregate(const Table& t, const Selection* sel, std::span<const std::string> keys, std::span<const Agg> aggs,
                   Table* out);
  /// Inner equi-join of left.lkey = right.rkey (integer columns) through a hash table built on
  /// `right`.
  Status hash_join(const Table& left, std::string_view lkey, const Table& right, std::string_view rkey,
                   JoinPairs* out);
  /// The same join through an index: `right`'s key column must be sorted ascending (as a
  /// SNAPSHOT range in key order is), and each left row binary-searches it. InvalidArgument
  /// when it is not sorted.
  Status index_join(const Table& left, std::string_view lkey, const Table& right, std::string_view rkey,
                    JoinPairs* out);
  /// Row numbers of t in the order of `keys` (ties by row number), the first `limit` of them
  /// (0: all): sort and top-k.
  Status sort(const Table& t, std::span<const SortKey> keys, std::size_t limit, Selection* out);
  /// MLP inference: `x` row-major [rows][inputs], *y row-major [rows][outputs].
  Status infer(ModelId model, std::span<const float> x, std::size_t rows, std::vector<float>* y);

  struct Lane;

 private:
  friend class Engine;
  Context() = default;
  Status lane();
  Engine* engine_ = nullptr;
  Device device_ = Device::kCpu;
  Lane* lane_ = nullptr;
};

/// Merges concurrent callers' inference on one model into one launch: a caller queues its rows;
/// while fewer than `inflight` launches run, a waiting caller leads one, taking every queued
/// request (in arrival order, up to max_rows rows, at least one request) into one matrix, runs it
/// on its launch slot's own context (stream) and hands each caller its rows; callers that arrive
/// meanwhile form the next launch. Nothing waits on a timer. Thread-safe.
class Batcher {
 public:
  /// Batches for `model` on `device` (kAuto: the engine's). max_rows >= 1; inflight 1..64
  /// launches at once (each holds a context, so a stream on the GPU).
  static Status make(std::shared_ptr<Engine> engine, ModelId model, Device device, std::size_t max_rows,
                     std::unique_ptr<Batcher>* out, unsigned inflight = 2);
  ~Batcher();
  /// Same contract as Context::infer.
  Status infer(std::span<const float> x, std::size_t rows, std::vector<float>* y);
  /// Launches so far and the requests they carried.
  std::uint64_t launches() const;
  std::uint64_t requests() const;
  /// Requests waiting for a launch now.
  std::size_t queued() const;
  /// Test hook: called by a launch's leader, outside the batcher's lock, just before the
  /// launch, with the number of requests it carries. Set it before any call.
  void set_launch_hook(std::function<void(std::size_t)> hook);

  struct State;

 private:
  Batcher() = default;
  std::unique_ptr<State> s_;
};

}  // namespace duet::compute

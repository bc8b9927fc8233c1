// Columns, tables and the fixed-width row codec (compute.hpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "compute/compute.hpp"
#include "duet/txn.hpp"
#include "gpu/device.hpp"

namespace duet::compute {

namespace {
// Arrays asked for page-locked and at least this large come from one process-wide pool of
// page-locked buffers (when a GPU is present): page-locking is slow, so buffers are kept and
// reused by power-of-two size class.
constexpr std::size_t kPinnedFrom = 1 << 20;
gpu::PinnedPool& pinned_pool() {
  static gpu::PinnedPool* pool = new gpu::PinnedPool();  // never destroyed: columns may outlive main
  return *pool;
}
}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::kInt64: return "int64";
    case Type::kMoney: return "money";
    case Type::kFloat32: return "float32";
    case Type::kFloat64: return "float64";
    case Type::kBytes: return "bytes";
  }
  return "?";
}

// ----- HostArray

HostArray::~HostArray() { release(); }
HostArray::HostArray(HostArray&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), cap_(std::exchange(o.cap_, 0)),
      pinned_(std::exchange(o.pinned_, false)) {}
HostArray& HostArray::operator=(HostArray&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(bytes_, o.bytes_);
  std::swap(cap_, o.cap_);
  std::swap(pinned_, o.pinned_);
  return *this;
}
void HostArray::release() {
  if (!p_) return;
  if (pinned_) pinned_pool().release(p_); else std::free(p_);
  p_ = nullptr;
  cap_ = bytes_ = 0;
  pinned_ = false;
}
Status HostArray::resize(std::size_t bytes, bool pinned) {
  pinned = pinned && bytes >= kPinnedFrom && gpu::device().present;
  if (bytes <= cap_ && pinned == pinned_) {
    bytes_ = bytes;
    return Status::Ok();
  }
  release();
  const std::size_t want = (bytes + 63) / 64 * 64;
  char* p = static_cast<char*>(pinned ? pinned_pool().acquire(want) : std::aligned_alloc(64, want));
  if (!p) return Status::ResourceExhausted("compute: host allocation of " + std::to_string(want) + " bytes refused");
  p_ = p;
  cap_ = want;
  bytes_ = bytes;
  pinned_ = pinned;
  return Status::Ok();
}

// ----- Column

Column::Column(Type type, std::uint32_t width) : type_(type), width_(value_bytes(type, width)) {}

Status Column::resize(std::size_t rows, bool pinned) {
  if (width_ == 0) return Status::InvalidArgument("compute: a bytes column needs a width");
  Status s = buf_.resize(rows * width_, pinned);
  if (!s.ok()) return s;
  rows_ = rows;
  return Status::Ok();
}

std::span<const std::int64_t> Column::i64() const {
  if (!is_integer(type_)) return {};
  return {reinterpret_cast<const std::int64_t*>(data()), rows_};
}
std::span<std::int64_t> Column::i64() {
  if (!is_integer(type_)) return {};
  return {reinterpret_cast<std::int64_t*>(data()), rows_};
}
std::span<const float> Column::f32() const {
  if (type_ != Type::kFloat32) return {};
  return {reinterpret_cast<const float*>(data()), rows_};
}
std::span<float> Column::f32() {
  if (type_ != Type::kFloat32) return {};
  return {reinterpret_cast<float*>(data()), rows_};
}
std::span<const double> Column::f64() const {
  if (type_ != Type::kFloat64) return {};
  return {reinterpret_cast<const double*>(data()), rows_};
}
std::span<double> Column::f64() {
  if (type_ != Type::kFloat64) return {};
  return {reinterpret_cast<double*>(data()), rows_};
}

Status Column::copy_to(Column* out) const {
  *out = Column(type_, width_);
  Status s = out->resize(rows_);
  if (!s.ok()) return s;
  if (rows_) std::memcpy(out->data(), data(), rows_ * width_);
  return Status::Ok();
}

// The helpers below are for tests and hand-built tables; an allocation failure there aborts.
static void must(Status s) {
  if (!s.ok()) std::abort();
}
Column Column::of_int64(const std::vector<std::int64_t>& v, Type t) {
  Column c(is_integer(t) ? t : Type::kInt64);
  must(c.resize(v.size(), true));
  if (!v.empty()) std::memcpy(c.data(), v.data(), v.size() * 8);
  return c;
}
Column Column::of_float64(const std::vector<double>& v) {
  Column c(Type::kFloat64);
  must(c.resize(v.size(), true));
  if (!v.empty()) std::memcpy(c.data(), v.data(), v.size() * 8);
  return c;
}
Column Column::of_float32(const std::vector<float>& v) {
  Column c(Type::kFloat32);
  must(c.resize(v.size(), true));
  if (!v.empty()) std::memcpy(c.data(), v.data(), v.size() * 4);
  return c;
}
Column Column::of_bytes(const std::vector<std::string>& v, std::uint32_t width) {
  Column c(Type::kBytes, width == 0 ? 1 : width);
  must(c.resize(v.size(), true));
  if (!v.empty()) std::memset(c.data(), 0, v.size() * c.width());
  for (std::size_t i = 0; i < v.size(); ++i)
    std::memcpy(c.data() + i * c.width(), v[i].data(), std::min<std::size_t>(v[i].size(), c.width()));
  return c;
}

// ----- Table

Status Table::add(std::string name, Column c) {
  if (name.empty()) return Status::InvalidArgument("compute: a column needs a name");
  if (find(name) >= 0) return Status::InvalidArgument("compute: duplicate column '" + name + "'");
  if (!cols_.empty() && c.rows() != rows_)
    return Status::InvalidArgument("compute: column '" + name + "' has " + std::to_string(c.rows()) +
                                   " rows, the table " + std::to_string(rows_));
  rows_ = c.rows();
  names_.push_back(std::move(name));
  cols_.push_back(std::move(c));
  return Status::Ok();
}

int Table::find(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

const Column* Table::get(std::string_view name) const {
  const int i = find(name);
  return i < 0 ? nullptr : &cols_[static_cast<std::size_t>(i)];
}

// ----- RowCodec

RowCodec::Slots RowCodec::slots_of(const TxnSnapshot& s) {
  Slots v;
  v.n = s.size();
  v.value_offsets = s.value_offsets.data();
  v.present = s.present.data();
  v.value_bytes = s.value_bytes.data();
  v.key_offsets = s.key_offsets.data();
  v.key_bytes = s.key_bytes.data();
  return v;
}

RowCodec::Slots RowCodec::slots_of(const PackedSnapshot& p) {
  Slots v;
  if (!p.data()) return v;
  v.n = p.slots();
  v.key_offsets = reinterpret_cast<const std::uint64_t*>(p.data() + p.key_offsets_at());
  v.value_offsets = reinterpret_cast<const std::uint64_t*>(p.data() + p.value_offsets_at());
  v.present = reinterpret_cast<const std::uint8_t*>(p.data() + p.present_at());
  v.key_bytes = p.data() + p.key_bytes_at();
  v.value_bytes = p.data() + p.value_bytes_at();
  return v;
}

Status RowCodec::decode(const Slots& s, Table* out, bool with_key) const {
  std::vector<std::size_t> all(fields_.size());
  for (std::size_t f = 0; f < all.size(); ++f) all[f] = f;
  return decode_indices(s, all, out, with_key);
}

Status RowCodec::decode_fields(const Slots& s, std::span<const std::string> names, Table* out, bool with_key) const {
  std::vector<std::size_t> idx;
  for (const std::string& n : names) {
    std::size_t f = 0;
    while (f < fields_.size() && fields_[f].name != n) ++f;
    if (f == fields_.size() || std::find(idx.begin(), idx.end(), f) != idx.end()) {
      *out = Table();
      return Status::InvalidArgument("compute: decode: '" + n + "' is not a field of the schema, or is named twice");
    }
    idx.push_back(f);
  }
  return decode_indices(s, idx, out, with_key);
}

Status RowCodec::decode_indices(const Slots& s, const std::vector<std::size_t>& fields, Table* out, bool with_key) const {
  *out = Table();
  if (s.n > 0 && (!s.value_offsets || !s.present || (with_key && !s.key_offsets)))
    return Status::InvalidArgument("compute: decode: slots without offsets or presence flags");
  // Which slots hold rows, checked first so that nothing is half-decoded.
  std::vector<std::uint32_t> rows;
  rows.reserve(s.n);
  if (s.n > 0xffffffffULL) return Status::InvalidArgument("compute: decode: more than 2^32-1 slots");
  for (std::size_t i = 0; i < s.n; ++i) {
    if (!s.present[i]) continue;
    const std::uint64_t len = s.value_offsets[i + 1] - s.value_offsets[i];
    if (len != row_bytes_)
      return Status::InvalidArgument("compute: decode: slot " + std::to_string(i) + " holds " + std::to_string(len) +
                                     " bytes, a row is " + std::to_string(row_bytes_));
    if (with_key && s.key_offsets[i + 1] - s.key_offsets[i] > 8)
      return Status::InvalidArgument("compute: decode: slot " + std::to_string(i) + ": key longer than 8 bytes");
    rows.push_back(static_cast<std::uint32_t>(i));
  }
  const std::size_t n = rows.size();
  if (with_key) {
    Column k(Type::kInt64);
    Status st = k.resize(n, true);
    if (!st.ok()) return st;
    std::int64_t* kp = k.i64().data();
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t i = rows[r];
      const char* kb = s.key_bytes + s.key_offsets[i];
      const std::size_t kl = s.key_offsets[i + 1] - s.key_offsets[i];
      std::uint64_t v = 0;
      for (std::size_t b = 0; b < 8; ++b) v = (v << 8) | (b < kl ? static_cast<unsigned char>(kb[b]) : 0u);
      kp[r] = static_cast<std::int64_t>(v);
    }
    st = out->add("key", std::move(k));
    if (!st.ok()) return st;
  }
  for (const std::size_t f : fields) {
    Column c(fields_[f].type, fields_[f].width);
    Status st = c.resize(n, true);
    if (!st.ok()) return st;
    const std::size_t w = c.width(), off = offsets_[f];
    char* dst = c.data();
    for (std::size_t r = 0; r < n; ++r) std::memcpy(dst + r * w, s.value_bytes + s.value_offsets[rows[r]] + off, w);
    st = out->add(fields_[f].name, std::move(c));
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

// ----- Mlp

Status Mlp::check() const {
  if (layers.empty()) return Status::InvalidArgument("compute: an MLP needs at least one layer");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Dense& d = layers[i];
    const std::string at = "compute: layer " + std::to_string(i) + ": ";
    if (d.in == 0 || d.out == 0 || d.in > (1u << 16) || d.out > (1u << 16))
      return Status::InvalidArgument(at + "in and out must be 1..65536");
    if (d.w.size() != static_cast<std::size_t>(d.in) * d.out)
      return Status::InvalidArgument(at + "w holds " + std::to_string(d.w.size()) + " weights, in*out is " +
                                     std::to_string(static_cast<std::size_t>(d.in) * d.out));
    if (d.b.size() != d.out) return Status::InvalidArgument(at + "b must hold `out` biases");
    if (d.act > Dense::kSigmoid) return Status::InvalidArgument(at + "unknown activation");
    if (i > 0 && layers[i - 1].out != d.in)
      return Status::InvalidArgument(at + "in " + std::to_string(d.in) + " differs from the previous layer's out " +
                                     std::to_string(layers[i - 1].out));
  }
  return Status::Ok();
}

}  // namespace duet::compute

// The fixed-width row codec's schema and encoder (compute.hpp, RowCodec). Apart from columns.cpp
// (decoding into columns) so that a procedure library can build rows with no more of the engine
// than this file and Status (bench/compute/ch_proc.cpp).
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>

#include "compute/compute.hpp"

namespace duet::compute {

Status RowCodec::make(std::vector<Field> fields, RowCodec* out) {
  if (fields.empty()) return Status::InvalidArgument("compute: a row schema needs at least one field");
  std::unordered_set<std::string> names;
  RowCodec c;
  std::size_t off = 0;
  for (const Field& f : fields) {
    if (f.name.empty()) return Status::InvalidArgument("compute: a field needs a name");
    if (f.name == "key") return Status::InvalidArgument("compute: field name 'key' is reserved for the key column");
    if (!names.insert(f.name).second) return Status::InvalidArgument("compute: duplicate field '" + f.name + "'");
    if (f.type == Type::kBytes && (f.width < 1 || f.width > 4096))
      return Status::InvalidArgument("compute: field '" + f.name + "': bytes width must be 1..4096");
    if (f.type > Type::kBytes) return Status::InvalidArgument("compute: field '" + f.name + "': unknown type");
    c.offsets_.push_back(off);
    off += value_bytes(f.type, f.width);
  }
  c.fields_ = std::move(fields);
  c.row_bytes_ = off;
  *out = std::move(c);
  return Status::Ok();
}

Status RowCodec::encode(std::span<const Value> values, std::string* row) const {
  if (values.size() != fields_.size())
    return Status::InvalidArgument("compute: " + std::to_string(values.size()) + " values for " +
                                   std::to_string(fields_.size()) + " fields");
  std::string r(row_bytes_, '\0');
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    char* p = r.data() + offsets_[i];
    const Value& v = values[i];
    switch (f.type) {
      case Type::kInt64:
      case Type::kMoney: {
        if (!std::holds_alternative<std::int64_t>(v))
          return Status::InvalidArgument("compute: field '" + f.name + "' takes an integer");
        const std::int64_t x = std::get<std::int64_t>(v);
        std::memcpy(p, &x, 8);
        break;
      }
      case Type::kFloat32:
      case Type::kFloat64: {
        if (!std::holds_alternative<double>(v))
          return Status::InvalidArgument("compute: field '" + f.name + "' takes a float");
        const double x = std::get<double>(v);
        if (f.type == Type::kFloat64) {
          std::memcpy(p, &x, 8);
        } else {
          const float y = static_cast<float>(x);
          std::memcpy(p, &y, 4);
        }
        break;
      }
      case Type::kBytes: {
        if (!std::holds_alternative<std::string_view>(v))
          return Status::InvalidArgument("compute: field '" + f.name + "' takes bytes");
        const std::string_view x = std::get<std::string_view>(v);
        if (x.size() > f.width)
          return Status::InvalidArgument("compute: field '" + f.name + "': " + std::to_string(x.size()) +
                                         " bytes for width " + std::to_string(f.width));
        std::memcpy(p, x.data(), x.size());
        break;
      }
    }
  }
  row->append(r);
  return Status::Ok();
}

}  // namespace duet::compute

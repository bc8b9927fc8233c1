#include "json.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

namespace duet::bench {

Json& Json::set(const std::string& key, Json value) {
  if (std::holds_alternative<std::nullptr_t>(v_)) v_ = Object{};
  Object& o = std::get<Object>(v_);
  for (std::size_t k = 0; k < o.keys.size(); ++k) {
    if (o.keys[k] == key) {
      o.values[k] = std::move(value);
      return *this;
    }
  }
  o.keys.push_back(key);
  o.values.push_back(std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  if (std::holds_alternative<std::nullptr_t>(v_)) v_ = Array{};
  std::get<Array>(v_).push_back(std::move(value));
  return *this;
}

void write_json_string(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\r': os << "\\r"; break;
      case '\t': os << "\\t"; break;
      default:
        if (c < 0x20) {
          static const char* hex = "0123456789abcdef";
          os << "\\u00" << hex[c >> 4] << hex[c & 15];
        } else {
          os << c;
        }
    }
  }
  os << '"';
}

void Json::dump_at(std::ostream& os, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent <= 0) return;
    os << '\n' << std::string(static_cast<std::size_t>(indent * d), ' ');
  };
  if (std::holds_alternative<std::nullptr_t>(v_)) {
    os << "null";
  } else if (const bool* b = std::get_if<bool>(&v_)) {
    os << (*b ? "true" : "false");
  } else if (const std::int64_t* i = std::get_if<std::int64_t>(&v_)) {
    os << *i;
  } else if (const std::uint64_t* u = std::get_if<std::uint64_t>(&v_)) {
    os << *u;
  } else if (const double* d = std::get_if<double>(&v_)) {
    if (!std::isfinite(*d)) {
      os << "null";
    } else {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, *d);  // shortest round-trip form
      os.write(buf, r.ptr - buf);
    }
  } else if (const std::string* s = std::get_if<std::string>(&v_)) {
    write_json_string(os, *s);
  } else if (const Array* a = std::get_if<Array>(&v_)) {
    // Arrays of scalars stay on one line; arrays of containers get one element per line.
    bool nested = false;
    for (const Json& x : *a) nested |= std::holds_alternative<Array>(x.v_) || std::holds_alternative<Object>(x.v_);
    os << '[';
    for (std::size_t k = 0; k < a->size(); ++k) {
      if (k) os << (nested ? "," : ", ");
      if (nested) newline(depth + 1);
      (*a)[k].dump_at(os, indent, depth + 1);
    }
    if (nested && !a->empty()) newline(depth);
    os << ']';
  } else {
    const Object& o = std::get<Object>(v_);
    os << '{';
    for (std::size_t k = 0; k < o.keys.size(); ++k) {
      if (k) os << ',';
      newline(depth + 1);
      write_json_string(os, o.keys[k]);
      os << (indent > 0 ? ": " : ":");
      o.values[k].dump_at(os, indent, depth + 1);
    }
    if (!o.keys.empty()) newline(depth);
    os << '}';
  }
}

void Json::dump(std::ostream& os, int indent) const { dump_at(os, indent, 0); }

std::string Json::dump_string(int indent) const {
  std::ostringstream os;
  dump(os, indent);
  return os.str();
}

}  // namespace duet::bench

// A small JSON document type for benchmark results: build a tree, then write it as text.
//
// Objects keep their members in insertion order, so result files diff cleanly between runs.
// Only what result files need is here (no parser); non-finite numbers are written as null.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace duet::bench {

class Json {
 public:
  using Array = std::vector<Json>;
  /// Members in insertion order (two parallel vectors: a vector of an incomplete element type
  /// is fine in every compiler, a pair or struct holding one is not under nvcc).
  struct Object {
    std::vector<std::string> keys;
    std::vector<Json> values;
  };

  /// null
  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : v_(b) {}
  Json(int i) : v_(static_cast<std::int64_t>(i)) {}
  Json(unsigned i) : v_(static_cast<std::uint64_t>(i)) {}
  Json(long i) : v_(static_cast<std::int64_t>(i)) {}
  Json(unsigned long i) : v_(static_cast<std::uint64_t>(i)) {}
  Json(long long i) : v_(static_cast<std::int64_t>(i)) {}
  Json(unsigned long long i) : v_(static_cast<std::uint64_t>(i)) {}
  Json(double d) : v_(d) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(Array a) : v_(std::move(a)) {}
  Json(Object o) : v_(std::move(o)) {}

  /// An empty object / array, to be filled with set() / push().
  static Json object() { return Json(Object{}); }
  static Json array() { return Json(Array{}); }
  /// An array of the given values (each converted to Json).
  template <class T>
  static Json array_of(const std::vector<T>& xs) {
    Array a;
    for (const T& x : xs) a.emplace_back(x);
    return Json(std::move(a));
  }

  /// Sets member `key` of an object (replacing an existing one). Turns a null into an object.
  Json& set(const std::string& key, Json value);
  /// Appends to an array. Turns a null into an array.
  Json& push(Json value);

  /// Writes the value as JSON; indent > 0 pretty-prints with that many spaces per level.
  void dump(std::ostream& os, int indent = 2) const;
  std::string dump_string(int indent = 2) const;

 private:
  void dump_at(std::ostream& os, int indent, int depth) const;

  std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double, std::string, Array, Object> v_ =
      nullptr;
};

/// Writes s as a quoted JSON string with the needed escapes.
void write_json_string(std::ostream& os, const std::string& s);

}  // namespace duet::bench

#include "kv/encoding.hpp"

#include <cstdlib>
#include <new>

namespace duet::kv {

Status make_value(std::string_view value, MemoryBudget* budget, std::uint64_t* handle) {
  if (value.size() < 8) {
    *handle = pack_short(value);
    return Status::Ok();
  }
  if (value.size() == 8) {
    const unsigned first = static_cast<unsigned char>(value[0]);
    if (first >= 0x01 && first <= 0xEF) {
      *handle = load_be64(value.data());
      return Status::Ok();
    }
  }
  const std::uint64_t bytes = sizeof(ValueBlock) + value.size();
  Status s = budget->charge(bytes);
  if (!s.ok()) return s;
  auto* b = static_cast<ValueBlock*>(std::malloc(bytes));
  if (!b) {
    budget->release(bytes);
    return Status::ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes for a value");
  }
  b->budget = budget;
  b->size = value.size();
  std::memcpy(b->data(), value.data(), value.size());
  *handle = reinterpret_cast<std::uint64_t>(b);
  return Status::Ok();
}

void append_value(std::uint64_t handle, std::string* out) {
  const unsigned top = static_cast<unsigned>(handle >> 56);
  if (top == 0) {
    const auto* b = reinterpret_cast<const ValueBlock*>(handle);
    out->append(b->data(), b->size);
  } else if (top >= 0xF0) {
    unpack_short(handle, out);
  } else {
    const std::uint64_t be = __builtin_bswap64(handle);
    out->append(reinterpret_cast<const char*>(&be), 8);
  }
}

void free_value_block(void* block) {
  auto* b = static_cast<ValueBlock*>(block);
  b->budget->release(sizeof(ValueBlock) + b->size);
  std::free(b);
}

}  // namespace duet::kv

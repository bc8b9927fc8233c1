// The string family: GET, SET, SETNX, GETSET, MGET, MSET, INCR, DECR, INCRBY, DECRBY, APPEND,
// STRLEN.
// Each command is one registry entry; its KeyCommand hooks compute it on one key inside a
// batch (server/key_batch.hpp), in arrival order, with Redis's semantics.
#include <climits>
#include <string>

#include "server/command.hpp"
#include "server/commands/replies.hpp"
#include "server/key_batch.hpp"

namespace duet::server {

namespace {

constexpr ArgDoc kKeyDoc{"key", "key", nullptr, false, false};
constexpr ArgDoc kValueDoc{"value", "string", nullptr, false, false};
const char* const kGroup = "string";

// ---- GET, MGET ----
bool apply_get(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv&) {
  put_bulk_or_null(r, k.exists, k.value, op.resp3);
  return false;
}

// ---- SET key value [NX | XX] [GET] ----
std::string parse_set(Args args, KeyOp* op) {
  for (std::size_t i = 3; i < args.size(); ++i) {
    if (iequals(args[i], "nx") && !op->xx) op->nx = true;
    else if (iequals(args[i], "xx") && !op->nx) op->xx = true;
    else if (iequals(args[i], "get")) op->get = true;
    else if (iequals(args[i], "ex") || iequals(args[i], "px") || iequals(args[i], "exat") ||
             iequals(args[i], "pxat") || iequals(args[i], "keepttl"))
      return "ERR expiry options (EX, PX, EXAT, PXAT, KEEPTTL) are not supported: keys do not expire";
    else return "ERR syntax error";
  }
  op->value.assign(args[2]);
  return {};
}
bool apply_set(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv&) {
  const bool apply = op.nx ? !k.exists : op.xx ? k.exists : true;
  if (op.get) put_bulk_or_null(r, k.exists, k.value, op.resp3);
  else if (apply) *r = kOkReply;
  else ReplyWriter(r, op.resp3 ? 3 : 2).null();
  if (!apply) return false;
  k.exists = true;
  k.value = op.value;
  return true;
}
bool set_is_blind(const KeyOp& op) { return !op.nx && !op.xx; }
bool set_needs_previous(const KeyOp& op) { return op.get; }
void set_blind_reply(const KeyOp& op, bool found, const std::string& previous, std::string* r) {
  if (op.get) put_bulk_or_null(r, found, previous, op.resp3);
  else *r = kOkReply;
}

// ---- SETNX key value ----
bool apply_setnx(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv&) {
  put_int(r, k.exists ? 0 : 1);
  if (k.exists) return false;
  k.exists = true;
  k.value = op.value;
  return true;
}

// ---- GETSET key value ----
std::string parse_value(Args args, KeyOp* op) {
  op->value.assign(args[2]);
  return {};
}
bool apply_getset(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv&) {
  put_bulk_or_null(r, k.exists, k.value, op.resp3);
  k.exists = true;
  k.value = op.value;
  return true;
}
bool always(const KeyOp&) { return true; }
void getset_blind_reply(const KeyOp& op, bool found, const std::string& previous, std::string* r) {
  put_bulk_or_null(r, found, previous, op.resp3);
}

// ---- MSET key value [key value ...] ----
std::string parse_mset(Args args, KeyOp*) {
  if ((args.size() - 1) % 2 != 0) return "ERR wrong number of arguments for 'mset' command";
  return {};  // each key's value is the argument after it (step 2)
}
bool apply_mset(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv&) {
  *r = kOkReply;
  k.exists = true;
  k.value = op.value;
  return true;
}
void ok_blind_reply(const KeyOp&, bool, const std::string&, std::string* r) { *r = kOkReply; }

// ---- INCR, DECR, INCRBY, DECRBY ----
std::string parse_incr(Args, KeyOp* op) {
  op->delta = 1;
  return {};
}
std::string parse_decr(Args, KeyOp* op) {
  op->delta = -1;
  return {};
}
std::string parse_incrby(Args args, KeyOp* op) {
  long long d = 0;
  if (!parse_int64(args[2], &d)) return "ERR value is not an integer or out of range";
  op->delta = d;
  return {};
}
std::string parse_decrby(Args args, KeyOp* op) {
  long long d = 0;
  if (!parse_int64(args[2], &d)) return "ERR value is not an integer or out of range";
  if (d == LLONG_MIN) return "ERR decrement would overflow";
  op->delta = -d;
  return {};
}
bool apply_incr(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv&) {
  long long cur = 0;
  if (k.exists && !parse_int64(k.value, &cur)) {
    *r = "-ERR value is not an integer or out of range\r\n";
    return false;
  }
  long long next;
  if (__builtin_add_overflow(cur, op.delta, &next)) {
    *r = "-ERR increment or decrement would overflow\r\n";
    return false;
  }
  k.exists = true;
  k.value = std::to_string(next);
  put_int(r, next);
  return true;
}

// ---- APPEND key value ----
bool apply_append(KeyState& k, const KeyOp& op, std::string* r, const KeyEnv& env) {
  const std::size_t len = (k.exists ? k.value.size() : 0) + op.value.size();
  if (len > env.max_value_bytes) {
    *r = "-ERR string exceeds maximum allowed size (max-value-bytes " + std::to_string(env.max_value_bytes) + ")\r\n";
    return false;
  }
  if (!k.exists) k.value.clear();
  k.value += op.value;
  k.exists = true;
  put_int(r, static_cast<long long>(len));
  return true;
}

// ---- STRLEN key ----
bool apply_strlen(KeyState& k, const KeyOp&, std::string* r, const KeyEnv&) {
  put_int(r, k.exists ? static_cast<long long>(k.value.size()) : 0);
  return false;
}

}  // namespace

void register_string_commands(CommandTable& t) {
  t.add({.name = "get", .arity = 2, .flags = kReadOnly | kFast, .first_key = 1, .last_key = 1, .step = 1,
         .kinds = kStringKinds, .group = kGroup, .summary = "Returns the string value of a key.", .since = "1.0.0",
         .complexity = "O(1)", .args = {kKeyDoc}, .key = {.apply = apply_get}});
  t.add({.name = "set", .arity = -3, .flags = kWrite | kDenyOom | kOverwrite, .first_key = 1, .last_key = 1,
         .step = 1, .kinds = kStringKinds, .group = kGroup,
         .summary = "Sets the string value of a key; NX/XX make it conditional, GET returns the old value.",
         .since = "1.0.0", .complexity = "O(1)",
         .args = {kKeyDoc, kValueDoc, {"nx", "pure-token", "NX", true, false}, {"xx", "pure-token", "XX", true, false},
                  {"get", "pure-token", "GET", true, false}},
         .key = {.parse = parse_set, .apply = apply_set, .blind = set_is_blind, .needs_previous = set_needs_previous,
                 .blind_reply = set_blind_reply}});
  t.add({.name = "setnx", .arity = 3, .flags = kWrite | kDenyOom | kFast, .first_key = 1, .last_key = 1,
         .step = 1, .kinds = kStringKinds, .group = kGroup, .summary = "Sets the string value of a key only when the key doesn't exist.",
         .since = "1.0.0", .complexity = "O(1)", .args = {kKeyDoc, kValueDoc},
         .key = {.parse = parse_value, .apply = apply_setnx}});
  t.add({.name = "getset", .arity = 3, .flags = kWrite | kDenyOom | kFast | kOverwrite, .first_key = 1,
         .last_key = 1, .step = 1, .kinds = kStringKinds, .group = kGroup,
         .summary = "Returns the previous string value of a key after setting it to a new value.", .since = "1.0.0",
         .complexity = "O(1)", .args = {kKeyDoc, kValueDoc},
         .key = {.parse = parse_value, .apply = apply_getset, .blind = always, .needs_previous = always,
                 .blind_reply = getset_blind_reply}});
  t.add({.name = "mget", .arity = -2, .flags = kReadOnly | kFast | kMultiKey, .first_key = 1, .last_key = -1,
         .step = 1, .kinds = kStringKinds, .group = kGroup, .summary = "Atomically (per key) returns the values of keys.",
         .since = "1.0.0", .complexity = "O(N)", .args = {{"key", "key", nullptr, false, true}},
         .key = {.apply = apply_get, .multi = MultiReply::kArray, .multi_always = true}});
  t.add({.name = "mset", .arity = -3, .flags = kWrite | kDenyOom | kOverwrite | kMultiKey, .first_key = 1,
         .last_key = -1, .step = 2, .kinds = kStringKinds, .group = kGroup,
         .summary = "Sets the string values of one or more keys.", .since = "1.0.1", .complexity = "O(N)",
         .args = {{"key", "key", nullptr, false, true}, {"value", "string", nullptr, false, true}},
         .key = {.parse = parse_mset, .apply = apply_mset, .blind = always, .blind_reply = ok_blind_reply,
                 .multi = MultiReply::kAllOk}});
  t.add({.name = "incr", .arity = 2, .flags = kWrite | kDenyOom | kFast, .first_key = 1, .last_key = 1, .step = 1,
         .kinds = kStringKinds, .group = kGroup, .summary = "Increments the integer value of a key by one.", .since = "1.0.0",
         .complexity = "O(1)", .args = {kKeyDoc}, .key = {.parse = parse_incr, .apply = apply_incr}});
  t.add({.name = "decr", .arity = 2, .flags = kWrite | kDenyOom | kFast, .first_key = 1, .last_key = 1, .step = 1,
         .kinds = kStringKinds, .group = kGroup, .summary = "Decrements the integer value of a key by one.", .since = "1.0.0",
         .complexity = "O(1)", .args = {kKeyDoc}, .key = {.parse = parse_decr, .apply = apply_incr}});
  t.add({.name = "incrby", .arity = 3, .flags = kWrite | kDenyOom | kFast, .first_key = 1, .last_key = 1,
         .step = 1, .kinds = kStringKinds, .group = kGroup, .summary = "Increments the integer value of a key by a number.",
         .since = "1.0.0", .complexity = "O(1)", .args = {kKeyDoc, {"increment", "integer", nullptr, false, false}},
         .key = {.parse = parse_incrby, .apply = apply_incr}});
  t.add({.name = "decrby", .arity = 3, .flags = kWrite | kDenyOom | kFast, .first_key = 1, .last_key = 1,
         .step = 1, .kinds = kStringKinds, .group = kGroup, .summary = "Decrements the integer value of a key by a number.",
         .since = "1.0.0", .complexity = "O(1)", .args = {kKeyDoc, {"decrement", "integer", nullptr, false, false}},
         .key = {.parse = parse_decrby, .apply = apply_incr}});
  t.add({.name = "append", .arity = 3, .flags = kWrite | kDenyOom | kFast, .first_key = 1, .last_key = 1,
         .step = 1, .kinds = kStringKinds, .group = kGroup,
         .summary = "Appends a string to the value of a key; creates the key if needed.", .since = "2.0.0",
         .complexity = "O(1)", .args = {kKeyDoc, kValueDoc}, .key = {.parse = parse_value, .apply = apply_append}});
  t.add({.name = "strlen", .arity = 2, .flags = kReadOnly | kFast, .first_key = 1, .last_key = 1, .step = 1,
         .kinds = kStringKinds, .group = kGroup, .summary = "Returns the length of a string value.", .since = "2.2.0",
         .complexity = "O(1)", .args = {kKeyDoc}, .key = {.apply = apply_strlen}});
}

}  // namespace duet::server

// ProcedureRegistry and the procedure C ABI (include/duet/procedure.h, duet/procedure.hpp):
// loading good and bad libraries, every reply shape, aborts that apply nothing, read-only calls,
// re-runs on a write conflict (made deterministic by a hook inside the procedure), unloading
// that waits for a call in flight (a procedure held at a gate), concurrent callers incrementing
// one key (exact final value), and the compute operators through the ABI.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "duet/procedure.h"
#include "duet/procedure.hpp"
#include "duet/txn.hpp"
#include "txn/read_key.hpp"

namespace duet {
namespace {

std::string lib_path(const char* name) { return std::string(DUET_PROC_DIR) + "/lib" + name + ".so"; }

double scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  const double v = s ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

struct Fixture : ::testing::Test {
  std::shared_ptr<TxnSpace> space;
  std::shared_ptr<ProcedureRegistry> reg;
  void SetUp() override {
    TxnConfig tc;
    tc.background_gc = false;
    ASSERT_TRUE(TxnSpace::open("t", tc, &space).ok());
    ASSERT_TRUE(ProcedureRegistry::open(ProcedureConfig{}, &reg).ok());
  }
  void load_testlib() {
    std::string name;
    const Status s = reg->load(lib_path("duet_proc_test"), &name);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(name, "testlib");
  }
  CallOutcome call(std::string_view name, std::vector<std::string_view> keys, std::vector<std::string_view> args,
                   bool ro = false) {
    CallOutcome out;
    const Status s = reg->call(space, name, keys, args, ro, &out);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return out;
  }
  std::string get(const std::string& k) { return test::read_key(*space, k).value_or("<absent>"); }
  void put(const std::string& k, const std::string& v) {
    Txn t;
    ASSERT_TRUE(space->begin(&t).ok());
    ASSERT_TRUE(t.put(k, v).ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
    ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
  }
  /// A symbol of the loaded testlib (the same instance the registry opened).
  template <class F>
  F testlib_symbol(const char* name) {
    void* h = dlopen(lib_path("duet_proc_test").c_str(), RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(h, nullptr);
    void* s = h ? dlsym(h, name) : nullptr;
    EXPECT_NE(s, nullptr) << name;
    if (h) dlclose(h);  // drops only the reference RTLD_NOLOAD took
    return reinterpret_cast<F>(s);
  }
};

using ProcLoad = Fixture;
using ProcCall = Fixture;
using ProcConcurrency = Fixture;

TEST_F(ProcLoad, ListsTheLibrarysProcedures) {
  load_testlib();
  const auto procs = reg->list();
  ASSERT_EQ(procs.size(), 22u);
  bool saw_incr = false, saw_get = false, saw_long = false;
  for (const auto& p : procs) {
    EXPECT_EQ(p.library, "testlib");
    if (p.name == "incr") saw_incr = !p.read_only && !p.runs_long;
    if (p.name == "get_ro") saw_get = p.read_only && !p.runs_long;
    if (p.name == "block_long") saw_long = p.read_only && p.runs_long;
  }
  EXPECT_TRUE(saw_incr && saw_get && saw_long);
  EXPECT_TRUE(reg->runs_long("block_long"));
  EXPECT_FALSE(reg->runs_long("block"));
  EXPECT_FALSE(reg->runs_long("no_such_procedure"));
  EXPECT_TRUE(reg->loaded("testlib"));
}

TEST_F(ProcLoad, RefusesBadLibrariesAndLoadsNothing) {
  Status s = reg->load(lib_path("duet_proc_bad_abi"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("built for procedure ABI version 999"), std::string::npos) << s.message();
  s = reg->load(lib_path("duet_proc_no_symbol"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not export the symbol duet_procedure_register"), std::string::npos) << s.message();
  s = reg->load(lib_path("duet_proc_bad_def"));
  EXPECT_NE(s.message().find("bad procedure name 'has space'"), std::string::npos) << s.message();
  s = reg->load(std::string(DUET_PROC_DIR) + "/no-such-library.so");
  EXPECT_NE(s.message().find("cannot load procedure library"), std::string::npos) << s.message();
  s = reg->load("");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(reg->list().empty());
  EXPECT_FALSE(reg->loaded("badabi"));
  EXPECT_FALSE(reg->loaded("baddef"));
}

TEST_F(ProcLoad, RefusesDuplicateLibrariesAndProcedureNames) {
  load_testlib();
  Status s = reg->load(lib_path("duet_proc_test"));
  EXPECT_NE(s.message().find("already loaded"), std::string::npos) << s.message();
  s = reg->load(lib_path("duet_proc_dup"));
  EXPECT_NE(s.message().find("procedure 'incr' is already loaded from library 'testlib'"), std::string::npos)
      << s.message();
  EXPECT_FALSE(reg->loaded("duplib"));
  // Once testlib is gone the other library loads, and testlib's still works after a reload.
  ASSERT_TRUE(reg->unload("testlib").ok());
  ASSERT_TRUE(reg->load(lib_path("duet_proc_dup")).ok());
  EXPECT_EQ(reg->unload("testlib").code(), StatusCode::kNotFound);
  ASSERT_TRUE(reg->unload("duplib").ok());
  load_testlib();
  EXPECT_EQ(call("incr", {"k"}, {}).reply.i, 1);
}

TEST_F(ProcLoad, OpenChecksItsSettings) {
  std::shared_ptr<ProcedureRegistry> r;
  ProcedureConfig c;
  c.max_attempts = 0;
  EXPECT_EQ(ProcedureRegistry::open(c, &r).code(), StatusCode::kInvalidArgument);
  c = {};
  c.backoff_min_us = 10;
  c.backoff_max_us = 5;
  EXPECT_EQ(ProcedureRegistry::open(c, &r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ProcedureRegistry::open(ProcedureConfig{}, nullptr).code(), StatusCode::kInvalidArgument);
  c = {};
  c.compute_device = "tpu";
  const Status bad = ProcedureRegistry::open(c, &r);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("auto, cpu or gpu"), std::string::npos) << bad.to_string();
  // The server's setting and the registry share one parser: any case, nothing else.
  c.compute_device = "CPU";
  EXPECT_TRUE(ProcedureRegistry::open(c, &r).ok());
  for (std::string_view wrong : {"", "cpux", "cp", "gpu "}) {
    c.compute_device = std::string(wrong);
    EXPECT_EQ(ProcedureRegistry::open(c, &r).code(), StatusCode::kInvalidArgument) << wrong;
  }
}

TEST_F(ProcCall, CommitsAndReplies) {
  load_testlib();
  CallOutcome o = call("incr", {"n"}, {"5"});
  EXPECT_EQ(o.end, CallOutcome::End::kCommitted);
  EXPECT_EQ(o.reply.kind, ProcReply::Kind::kInt);
  EXPECT_EQ(o.reply.i, 5);
  EXPECT_EQ(o.attempts, 1u);
  EXPECT_EQ(call("incr", {"n"}, {"-2"}).reply.i, 3);
  EXPECT_EQ(get("n"), "3");
  o = call("get_ro", {"n"}, {}, true);
  EXPECT_EQ(o.reply.kind, ProcReply::Kind::kBulk);
  EXPECT_EQ(o.reply.s, "3");
  EXPECT_EQ(call("get_ro", {"absent"}, {}, true).reply.kind, ProcReply::Kind::kNil);
  // get_many answers each key as get does, in order (40 keys: more than one batch of lookups),
  // and refuses NULL keys (checked inside the procedure).
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    keys.push_back("m" + std::to_string(i));
    if (i % 3 != 0) call("incr", {keys.back()}, {std::to_string(i)});
  }
  keys.push_back("n");
  o = call("get_many", std::vector<std::string_view>(keys.begin(), keys.end()), {}, true);
  ASSERT_EQ(o.reply.kind, ProcReply::Kind::kArray) << o.reply.s;
  ASSERT_EQ(o.reply.items.size(), keys.size());
  for (int i = 0; i < 40; ++i) {
    if (i % 3 == 0) {
      EXPECT_EQ(o.reply.items[i].kind, ProcReply::Kind::kNil) << i;
    } else {
      EXPECT_EQ(o.reply.items[i].s, std::to_string(i)) << i;
    }
  }
  EXPECT_EQ(o.reply.items[40].s, "3");
}

TEST_F(ProcCall, ArgumentsAreBinarySafeAndEveryReplyShapeComesBack) {
  load_testlib();
  const std::string k1("a\0b", 3), a1("\r\n\0", 3);
  CallOutcome o = call("echo", {k1, ""}, {a1}, true);
  ASSERT_EQ(o.reply.kind, ProcReply::Kind::kArray);
  ASSERT_EQ(o.reply.items.size(), 2u);
  ASSERT_EQ(o.reply.items[0].items.size(), 2u);
  EXPECT_EQ(o.reply.items[0].items[0].s, k1);
  EXPECT_EQ(o.reply.items[0].items[1].s, "");
  ASSERT_EQ(o.reply.items[1].items.size(), 1u);
  EXPECT_EQ(o.reply.items[1].items[0].s, a1);
  o = call("types", {}, {}, true);
  ASSERT_EQ(o.end, CallOutcome::End::kCommitted);  // its extra value after completion was refused
  ASSERT_EQ(o.reply.items.size(), 5u);
  EXPECT_EQ(o.reply.items[0].i, 1);
  EXPECT_EQ(o.reply.items[1].s, "bulk");
  EXPECT_EQ(o.reply.items[2].kind, ProcReply::Kind::kSimple);
  EXPECT_EQ(o.reply.items[3].kind, ProcReply::Kind::kNil);
  ASSERT_EQ(o.reply.items[4].items.size(), 2u);
  EXPECT_EQ(o.reply.items[4].items[0].i, -2);
  EXPECT_EQ(o.reply.items[4].items[1].kind, ProcReply::Kind::kArray);
  EXPECT_TRUE(o.reply.items[4].items[1].items.empty());
  o = call("err_value", {}, {}, true);
  EXPECT_EQ(o.end, CallOutcome::End::kCommitted);
  EXPECT_EQ(o.reply.kind, ProcReply::Kind::kError);
  EXPECT_EQ(o.reply.s, "MYERR an error value");
}

TEST_F(ProcCall, AFailedProcedureAppliesNothing) {
  load_testlib();
  CallOutcome o = call("fail", {"f"}, {});
  EXPECT_EQ(o.end, CallOutcome::End::kFailed);
  EXPECT_EQ(o.reply.s, "MYERR custom failure");
  o = call("fail_code", {"f"}, {});
  EXPECT_EQ(o.end, CallOutcome::End::kFailed);
  EXPECT_EQ(o.reply.s, "ERR procedure 'fail_code' failed (code 7)");
  o = call("noreply", {}, {});
  EXPECT_EQ(o.end, CallOutcome::End::kFailed);
  EXPECT_NE(o.reply.s.find("returned without a reply"), std::string::npos);
  o = call("partial", {}, {});
  EXPECT_EQ(o.end, CallOutcome::End::kFailed);
  EXPECT_NE(o.reply.s.find("incomplete reply"), std::string::npos);
  o = call("incr", {"n"}, {"notanumber"});
  EXPECT_EQ(o.reply.s, "ERR delta is not an integer");
  EXPECT_EQ(get("f"), "<absent>");
  EXPECT_EQ(get("n"), "<absent>");
  for (const auto& p : reg->list()) {
    if (p.name == "fail") {
      EXPECT_EQ(p.failures, 1u);
    }
  }
}

TEST_F(ProcCall, ReadOnlyCallsRefuseWriters) {
  load_testlib();
  CallOutcome o;
  Status s = reg->call(space, "incr", std::vector<std::string_view>{"n"}, {}, true, &o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("FCALL_RO"), std::string::npos);
  // A procedure flagged read-only that writes anyway is refused at the write.
  o = call("liar", {"n"}, {}, true);
  EXPECT_EQ(o.reply.i, DUET_ERR_READ_ONLY);
  EXPECT_EQ(get("n"), "<absent>");
  s = reg->call(space, "nope", {}, {}, false, &o);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST_F(ProcCall, AConflictRerunsTheWholeProcedure) {
  load_testlib();
  put("c", "10");
  // The hook runs inside the procedure's first run, between its read and its write, and commits
  // a conflicting write: that run's commit loses, and the second run reads 100.
  static Fixture* self;
  self = this;
  auto set_hook = testlib_symbol<void (*)(void (*)())>("testlib_set_hook");
  set_hook(+[] { self->put("c", "100"); });
  CallOutcome o = call("incr_hooked", {"c"}, {});
  set_hook(nullptr);
  EXPECT_EQ(o.end, CallOutcome::End::kCommitted);
  EXPECT_EQ(o.attempts, 2u);
  EXPECT_EQ(o.reply.i, 101);
  EXPECT_EQ(get("c"), "101");
  for (const auto& p : reg->list()) {
    if (p.name == "incr_hooked") {
      EXPECT_EQ(p.retries, 1u);
    }
  }
  EXPECT_EQ(call("attempt", {}, {}, true).reply.i, 0);
}

TEST_F(ProcCall, ConflictsBeyondTheLimitAbortWithNothingApplied) {
  ProcedureConfig c;
  c.max_attempts = 1;
  ASSERT_TRUE(ProcedureRegistry::open(c, &reg).ok());
  load_testlib();
  put("c", "10");
  static Fixture* self;
  self = this;
  auto set_hook = testlib_symbol<void (*)(void (*)())>("testlib_set_hook");
  set_hook(+[] { self->put("c", "100"); });
  CallOutcome o = call("incr_hooked", {"c"}, {});
  set_hook(nullptr);
  EXPECT_EQ(o.end, CallOutcome::End::kConflict);
  EXPECT_NE(o.reply.s.find("ABORT procedure 'incr_hooked' lost a write conflict on key 'c'"), std::string::npos)
      << o.reply.s;
  EXPECT_EQ(get("c"), "100");
}

TEST_F(ProcCall, ComputeOperatorsThroughTheAbi) {
  load_testlib();
  // Values are 8-byte little-endian int64 rows; keys r0..r9 hold 0..9 (r5 deleted).
  std::int64_t total = 0, n = 0;
  for (int i = 0; i < 10; ++i) {
    std::string v(8, '\0');
    const std::int64_t x = i;
    std::memcpy(v.data(), &x, 8);
    put("r" + std::to_string(i), v);
    if (i >= 4 && i != 5) total += i, ++n;
  }
  {
    Txn t;
    ASSERT_TRUE(space->begin(&t).ok());
    ASSERT_TRUE(t.del("r5").ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
  }
  CallOutcome o = call("sum_ge", {}, {"r0", "r9", "4"}, true);
  ASSERT_EQ(o.end, CallOutcome::End::kCommitted) << o.reply.s;
  ASSERT_EQ(o.reply.items.size(), 2u);
  EXPECT_EQ(o.reply.items[0].i, n);
  EXPECT_EQ(o.reply.items[1].i, total);
  // decode_columns: the named columns only; an unknown or repeated name is refused.
  o = call("columns", {}, {"r0", "r9", "v"}, true);
  ASSERT_EQ(o.end, CallOutcome::End::kCommitted) << o.reply.s;
  EXPECT_EQ(o.reply.i, 9);
  for (auto names : {std::vector<std::string_view>{"r0", "r9", "w"}, std::vector<std::string_view>{"r0", "r9", "v", "v"}}) {
    o = call("columns", {}, names, true);
    EXPECT_EQ(o.end, CallOutcome::End::kFailed);
    EXPECT_NE(o.reply.s.find("(code -1)"), std::string::npos) << o.reply.s;
  }
  // 2-2-1 network: relu(x) then 0.5 x0 + 0.25 x1 + 0.125.
  EXPECT_EQ(call("mlp", {}, {"2", "4"}, true).reply.i, 2125);
  EXPECT_EQ(call("mlp", {}, {"-2", "4"}, true).reply.i, 1125);
  // A malformed row is an operator error: the procedure returns its code, nothing breaks.
  put("r3", "short");
  o = call("sum_ge", {}, {"r0", "r9", "4"}, true);
  EXPECT_EQ(o.end, CallOutcome::End::kFailed);
  EXPECT_NE(o.reply.s.find("(code -1)"), std::string::npos) << o.reply.s;
  // The call's pooled stream: none in a CPU build; with CUDA, one when a GPU is present.
  const std::int64_t gpu = call("gpu", {}, {}, true).reply.i;
#ifdef DUET_HAVE_CUDA
  EXPECT_TRUE(gpu == DUET_OK || gpu == DUET_ERR_UNAVAILABLE) << gpu;
#else
  EXPECT_EQ(gpu, DUET_ERR_UNAVAILABLE);
#endif
}

TEST_F(ProcCall, ColumnMirrorsThroughTheAbi) {
  load_testlib();
  auto row = [](std::int64_t x) {
    std::string v(8, '\0');
    std::memcpy(v.data(), &x, 8);
    return v;
  };
  for (int i = 0; i < 10; ++i) put("r" + std::to_string(i), row(i));
  auto sum = [&](std::string_view min) { return call("mirror_sum", {}, {"m1", min}, true).reply; };
  // Before any attach: no such mirror.
  EXPECT_EQ(sum("0").i, DUET_NOT_FOUND);
  // Bad definitions: the id past the key, an id over 8 bytes, a column that is not a field, a bad name.
  for (auto args : {std::vector<std::string_view>{"m1", "r0", "r:", "2", "2", "v"},
                    std::vector<std::string_view>{"m1", "r0", "r:", "10", "1", "v"},
                    std::vector<std::string_view>{"m1", "r0", "r:", "2", "1", "w"},
                    std::vector<std::string_view>{"m 1", "r0", "r:", "2", "1", "v"}}) {
    const CallOutcome o = call("mirror", {}, args, true);
    ASSERT_EQ(o.end, CallOutcome::End::kCommitted) << o.reply.s;
    EXPECT_EQ(o.reply.items[0].i, DUET_ERR_INVALID) << args[0] << " " << args[3] << " " << args[5];
  }
  // Attached. The attaching transaction began before the mirror was made: it reads the mirror
  // only when nothing committed in between (its start then equals the mirror's), else it is told
  // to read the table instead.
  CallOutcome o = call("mirror", {}, {"m1", "r0", "r:", "2", "1", "v"}, true);
  ASSERT_EQ(o.reply.items.size(), 2u);
  EXPECT_EQ(o.reply.items[0].i, DUET_OK);
  if (o.reply.items[1].items.empty()) EXPECT_EQ(o.reply.items[1].i, DUET_ERR_UNAVAILABLE);
  else EXPECT_EQ(o.reply.items[1].items[0].i, 10);
  // The same definition again: nothing to do, and this call's start is after the mirror's.
  o = call("mirror", {}, {"m1", "r0", "r:", "2", "1", "v"}, true);
  EXPECT_EQ(o.reply.items[0].i, DUET_OK);
  ASSERT_EQ(o.reply.items[1].items.size(), 2u);
  EXPECT_EQ(o.reply.items[1].items[0].i, 10);
  // The same name defined otherwise: refused; m1 stays.
  EXPECT_EQ(call("mirror", {}, {"m1", "r0", "r:", "2", "0", "v"}, true).reply.items[0].i, DUET_ERR_INVALID);
  // Other names: more mirrors of the keyspace (here of the same rows), up to eight; a ninth is refused.
  for (int i = 2; i <= 8; ++i) {
    const std::string name = "m" + std::to_string(i);
    EXPECT_EQ(call("mirror", {}, {name, "r0", "r:", "2", "1", "v"}, true).reply.items[0].i, DUET_OK) << name;
  }
  EXPECT_EQ(call("mirror", {}, {"m9", "r0", "r:", "2", "1", "v"}, true).reply.items[0].i, DUET_ERR_INVALID);
  // Commits after the attach reach it: r4 becomes 100, r5 is deleted, r2 no row of the codec.
  put("r4", row(100));
  {
    Txn t;
    ASSERT_TRUE(space->begin(&t).ok());
    ASSERT_TRUE(t.del("r5").ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
  }
  put("r2", "short");
  CallOutcome want = call("sum_ge", {}, {"r0", "r9", "3"}, true);  // the SNAPSHOT plan refuses r2's bad row
  EXPECT_EQ(want.end, CallOutcome::End::kFailed);
  put("r2", row(2));
  want = call("sum_ge", {}, {"r0", "r9", "3"}, true);
  ASSERT_EQ(want.end, CallOutcome::End::kCommitted) << want.reply.s;
  const ProcReply got = sum("3");
  ASSERT_EQ(got.items.size(), 2u);
  EXPECT_EQ(got.items[0].i, want.reply.items[0].i);  // 3, 4, 6, 7, 8, 9
  EXPECT_EQ(got.items[1].i, want.reply.items[1].i);  // 3 + 100 + 6 + 7 + 8 + 9
  EXPECT_EQ(got.items[1].i, 133);
  // Every mirror of the keyspace saw the same commits.
  for (int i = 2; i <= 8; ++i) {
    const ProcReply other = call("mirror_sum", {}, {"m" + std::to_string(i), "3"}, true).reply;
    ASSERT_EQ(other.items.size(), 2u) << i;
    EXPECT_EQ(other.items[1].i, 133) << i;
  }
  EXPECT_EQ(call("mirror_sum", {}, {"m9", "3"}, true).reply.i, DUET_NOT_FOUND);
  // Another keyspace has no mirror.
  std::shared_ptr<TxnSpace> other;
  TxnConfig tc;
  tc.background_gc = false;
  ASSERT_TRUE(TxnSpace::open("u", tc, &other).ok());
  CallOutcome ou;
  ASSERT_TRUE(reg->call(other, "mirror_sum", {}, std::vector<std::string_view>{"m1", "0"}, true, &ou).ok());
  EXPECT_EQ(ou.reply.i, DUET_NOT_FOUND);
}

TEST_F(ProcCall, TheComputeDeviceSettingPlacesInference) {
  load_testlib();
  const bool has_gpu = call("gpu", {}, {}, true).reply.i == DUET_OK;
  for (const char* device : {"cpu", "gpu", "auto"}) {
    ProcedureConfig c;
    c.compute_device = device;
    ASSERT_TRUE(ProcedureRegistry::open(c, &reg).ok()) << device;
    load_testlib();
    const CallOutcome o = call("mlp", {}, {"2", "4"}, true);
    if (std::string(device) == "gpu" && !has_gpu) {
      // Asked for a GPU that is not there: the call fails with the engine's code, nothing breaks.
      EXPECT_EQ(o.end, CallOutcome::End::kFailed) << device;
      EXPECT_NE(o.reply.s.find("(code -"), std::string::npos) << o.reply.s;
    } else {
      ASSERT_EQ(o.end, CallOutcome::End::kCommitted) << device << ": " << o.reply.s;
      EXPECT_EQ(o.reply.i, 2125) << device;
    }
  }
}

TEST_F(ProcConcurrency, UnloadWaitsForACallInFlight) {
  load_testlib();
  auto entered = testlib_symbol<int (*)()>("testlib_block_entered");
  auto open_gate = testlib_symbol<void (*)(int)>("testlib_block_open");
  open_gate(0);
  CallOutcome held;
  std::thread caller([&] { held = call("block", {}, {}, true); });
  while (!entered()) std::this_thread::yield();
  std::atomic<bool> unloaded{false};
  std::thread unloader([&] {
    EXPECT_TRUE(reg->unload("testlib").ok());
    unloaded = true;
  });
  while (!reg->unloading("testlib")) std::this_thread::yield();
  // New calls are refused while the unload waits; the held call is still running.
  CallOutcome o;
  Status s = reg->call(space, "incr", std::vector<std::string_view>{"k"}, {}, false, &o);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("being unloaded"), std::string::npos);
  EXPECT_FALSE(unloaded.load());
  EXPECT_TRUE(reg->list().empty());
  EXPECT_EQ(reg->unload("testlib").code(), StatusCode::kNotFound);  // a second unload does not wait
  open_gate(1);  // the gate opens only now, so the unload cannot have finished before
  caller.join();
  unloader.join();
  EXPECT_EQ(held.reply.s, "released");
  EXPECT_EQ(reg->call(space, "incr", std::vector<std::string_view>{"k"}, {}, false, &o).code(),
            StatusCode::kNotFound);
  EXPECT_FALSE(reg->loaded("testlib"));
}

TEST_F(ProcConcurrency, ConcurrentIncrementsAreExact) {
  load_testlib();
  const int threads = 4, per = std::max(50, static_cast<int>(500 * scale()));
  std::vector<std::thread> ts;
  std::atomic<int> failed{0};
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&] {
      for (int j = 0; j < per; ++j) {
        CallOutcome o;
        if (!reg->call(space, "incr", std::vector<std::string_view>{"ctr"}, std::vector<std::string_view>{"1", "200"},
                       false, &o)
                 .ok() ||
            o.end != CallOutcome::End::kCommitted)
          ++failed;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(get("ctr"), std::to_string(threads * per));
  std::uint64_t calls = 0;
  for (const auto& p : reg->list())
    if (p.name == "incr") calls = p.calls;
  EXPECT_EQ(calls, static_cast<std::uint64_t>(threads * per));
}

TEST_F(ProcConcurrency, LoadAndUnloadWhileOthersCall) {
  // Callers run while the library is unloaded and loaded again: every call either runs fully
  // or is refused (unknown or being unloaded); nothing crashes (run under ASan: no call runs
  // code of a closed library).
  load_testlib();
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&] {
      while (!stop) {
        CallOutcome o;
        const Status s = reg->call(space, "incr", std::vector<std::string_view>{"u"}, {}, false, &o);
        if (s.ok() && o.end == CallOutcome::End::kCommitted) ++ok;
        else if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kUnavailable) ++refused;
        else ++other;
      }
    });
  const int rounds = std::max(5, static_cast<int>(40 * scale()));
  for (int r = 0; r < rounds; ++r) {
    // Each round first lets a call complete on the loaded library, so unloads meet callers.
    for (const int before = ok.load(); ok.load() == before && other.load() == 0;) std::this_thread::yield();
    ASSERT_TRUE(reg->unload("testlib").ok());
    load_testlib();
  }
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GE(ok.load(), rounds);
  EXPECT_EQ(get("u"), std::to_string(ok.load()));
}

}  // namespace
}  // namespace duet

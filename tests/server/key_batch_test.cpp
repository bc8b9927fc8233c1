// KeyBatchRunner (src/server/key_batch.hpp) against real `kv` keyspaces on the CPU twin: the
// exact RESP reply of every command when several commands on one key share ONE batch (Redis
// semantics in arrival order), what a batch leaves in the engine for the next one, the engine
// requests it sends (one read and one write per key at most), and size() staying exact. Also
// PendingReply::finish_part's assembly of multi-key replies and parse_int64. KeyPipeline with
// several batches in flight, against a keyspace whose answers the test releases in any order:
// a key's commands stay in order, reads see earlier writes, read-modify-writes stay atomic
// across their read and write stages.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "duet/store.hpp"
#include "server/key_batch.hpp"

using namespace std::string_literals;
using duet::DeviceChoice;
using duet::KvRequest;
using duet::KvSpace;
using duet::RouterMode;
using duet::Status;
using duet::Store;
using duet::StoreConfig;
using duet::server::CommandDef;
using duet::server::find_command;
using duet::server::KeyBatchRunner;
using duet::server::KeyPipeline;
using duet::server::KeyOp;
using duet::server::parse_int64;
using duet::server::PendingReply;

namespace {

/// The key commands the tests build by hand (the registry's entries, by name).
enum class Cmd { kGet, kSet, kGetSet, kDel, kExists, kMget, kMset, kIncr, kDecr, kIncrBy, kDecrBy, kAppend, kStrlen, kType };
constexpr const char* kCmdNames[] = {"get",  "set",  "getset", "del",    "exists", "mget",   "mset",
                                     "incr", "decr", "incrby", "decrby", "append", "strlen", "type"};
const CommandDef* def_of(Cmd c) {
  const CommandDef* d = find_command(kCmdNames[static_cast<int>(c)]);
  EXPECT_NE(d, nullptr) << kCmdNames[static_cast<int>(c)];
  return d;
}
Cmd cmd_of(const KeyOp& op) {
  for (int i = 0; i < static_cast<int>(std::size(kCmdNames)); ++i)
    if (std::string_view(op.cmd->name) == kCmdNames[i]) return static_cast<Cmd>(i);
  ADD_FAILURE() << "not a key command of these tests: " << op.cmd->name;
  return Cmd::kType;
}

const std::string kOk = "+OK\r\n";
const std::string kNil = "$-1\r\n";
const std::string kNil3 = "_\r\n";
const std::string kNotInt = "-ERR value is not an integer or out of range\r\n";
const std::string kOverflow = "-ERR increment or decrement would overflow\r\n";

std::string bulk(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }
std::string integer(long long v) { return ":" + std::to_string(v) + "\r\n"; }

/// Hands a part to PendingReply::finish_part, whichever way it takes the string (by rvalue
/// reference, or by lvalue reference that it swaps with).
template <typename Reply>
bool finish(Reply& r, std::uint32_t i, std::string part) {
  if constexpr (std::is_invocable_v<decltype(&Reply::finish_part), Reply&, std::uint32_t, std::string&>)
    return r.finish_part(i, part);
  else
    return r.finish_part(i, std::move(part));
}

StoreConfig cpu_config(RouterMode mode = RouterMode::kLearned) {
  StoreConfig c;
  c.device = DeviceChoice::kCpu;
  c.expected_keys = 1u << 12;
  c.hot_cache_entries = 1u << 10;
  c.router.mode = mode;
  c.router.bins = 1024;
  c.router.threshold = 0.0;
  c.router.sample_every = 1;
  c.router.train_requests = 64;
  c.router.auto_switch = false;
  return c;
}

/// Commands of one batch, built by hand as the server would (one PendingReply each).
class Batch {
 public:
  KeyOp& add(Cmd cmd, std::string key, std::string value = {}, unsigned db = 0) {
    auto r = std::make_unique<PendingReply>();
    r->kind = PendingReply::Kind::kSingle;
    r->cmd = def_of(cmd);
    auto op = std::make_unique<KeyOp>();
    op->cmd = def_of(cmd);
    op->key = std::move(key);
    op->value = std::move(value);
    op->db = db;
    op->reply = r.get();
    if (cmd == Cmd::kIncr) op->delta = 1;
    if (cmd == Cmd::kDecr) op->delta = -1;
    replies_.push_back(std::move(r));
    ops_.push_back(std::move(op));
    ptrs_.push_back(ops_.back().get());
    return *ops_.back();
  }
  KeyOp& get(std::string k, unsigned db = 0) { return add(Cmd::kGet, std::move(k), {}, db); }
  KeyOp& set(std::string k, std::string v, unsigned db = 0) { return add(Cmd::kSet, std::move(k), std::move(v), db); }
  KeyOp& set_nx(std::string k, std::string v) {
    KeyOp& o = set(std::move(k), std::move(v));
    o.nx = true;
    return o;
  }
  KeyOp& set_xx(std::string k, std::string v) {
    KeyOp& o = set(std::move(k), std::move(v));
    o.xx = true;
    return o;
  }
  KeyOp& set_get(std::string k, std::string v) {
    KeyOp& o = set(std::move(k), std::move(v));
    o.get = true;
    return o;
  }
  KeyOp& incrby(std::string k, long long d, unsigned db = 0) {
    KeyOp& o = add(Cmd::kIncrBy, std::move(k), {}, db);
    o.delta = d;
    return o;
  }
  std::vector<KeyOp*>& ops() { return ptrs_; }
  PendingReply& reply(std::size_t i) { return *replies_[i]; }
  std::size_t size() const { return ptrs_.size(); }

 private:
  std::vector<std::unique_ptr<PendingReply>> replies_;
  std::vector<std::unique_ptr<KeyOp>> ops_;
  std::vector<KeyOp*> ptrs_;
};

class KeyBatch : public ::testing::Test {
 protected:
  void open(const StoreConfig& c, std::size_t max_value_bytes = 64) {
    runner_.reset();
    spaces_.clear();
    store_.reset();
    const Status s = Store::open(c, &store_);
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (const char* name : {"db0", "db1"}) {
      std::shared_ptr<KvSpace> kv;
      ASSERT_TRUE(store_->create_kv(name, &kv).ok());
      spaces_.push_back(kv);
    }
    runner_ = std::make_unique<KeyBatchRunner>(
        [this](unsigned db) -> std::shared_ptr<KvSpace> {
          if (db >= spaces_.size()) return nullptr;
          return spaces_[db];
        },
        max_value_bytes);
  }
  void SetUp() override { open(cpu_config()); }

  /// Runs the batch; returns every reply, after checking that finish_part hands a single
  /// reply through unchanged.
  std::vector<std::string> run(Batch& b, std::size_t* sent = nullptr) {
    const std::size_t n = runner_->run(b.ops());
    if (sent) *sent = n;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < b.size(); ++i) {
      out.push_back(runner_->reply(i));
      EXPECT_EQ(runner_->is_error(i), !out.back().empty() && out.back()[0] == '-');
      std::string copy = out.back();
      EXPECT_TRUE(finish(b.reply(i), 0, std::move(copy)));
      EXPECT_EQ(b.reply(i).bytes, out.back());
      EXPECT_EQ(b.reply(i).error, !out.back().empty() && out.back()[0] == '-');
    }
    return out;
  }

  /// The engine's value of key in database db (nullopt when absent).
  std::optional<std::string> stored(std::string_view key, unsigned db = 0) {
    std::string v;
    bool found = false;
    const Status s = spaces_[db]->get(key, &v, &found);
    EXPECT_TRUE(s.ok()) << s.to_string();
    if (!found) return std::nullopt;
    return v;
  }

  void preset(std::string_view key, std::string_view value, unsigned db = 0) {
    ASSERT_TRUE(spaces_[db]->put(key, value).ok());
  }

  std::unique_ptr<Store> store_;
  std::vector<std::shared_ptr<KvSpace>> spaces_;
  std::unique_ptr<KeyBatchRunner> runner_;
};

// ---- one key, several commands, one batch ------------------------------------------------------

TEST_F(KeyBatch, SetThenGetInOneBatchReadsTheNewValue) {
  Batch b;
  b.set("k", "v1");
  b.get("k");
  b.set("k", "v2");
  b.get("k");
  std::size_t sent = 0;
  EXPECT_EQ(run(b, &sent), (std::vector<std::string>{kOk, bulk("v1"), kOk, bulk("v2")}));
  EXPECT_EQ(sent, 1u) << "a key whose first command overwrites needs one engine write and no read";
  for (std::size_t i = 0; i < b.size(); ++i)
    EXPECT_NE(b.ops()[i]->path, duet::KvPath::kNone) << "op " << i << " does not say which engine path answered";
  EXPECT_EQ(stored("k"), "v2");
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, GetOfAMissingKeyIsNilInRespTwoAndThree) {
  Batch b;
  b.get("missing");
  b.get("missing").resp3 = true;
  std::size_t sent = 0;
  EXPECT_EQ(run(b, &sent), (std::vector<std::string>{kNil, kNil3}));
  EXPECT_EQ(sent, 1u) << "one read for the key, no write";
  EXPECT_EQ(spaces_[0]->size(), 0u);
}

TEST_F(KeyBatch, IncrThreeTimesThenGet) {
  Batch b;
  b.add(Cmd::kIncr, "n");
  b.add(Cmd::kIncr, "n");
  b.add(Cmd::kIncr, "n");
  b.get("n");
  std::size_t sent = 0;
  EXPECT_EQ(run(b, &sent), (std::vector<std::string>{integer(1), integer(2), integer(3), bulk("3")}));
  EXPECT_EQ(sent, 2u) << "one read and one write for the key";
  EXPECT_EQ(stored("n"), "3");
  // On a stored value, across the INCR family.
  Batch c;
  c.add(Cmd::kIncr, "n");
  c.add(Cmd::kDecr, "n");
  c.add(Cmd::kDecr, "n");
  c.incrby("n", 100);
  c.incrby("n", -250);  // DECRBY 250
  c.get("n");
  EXPECT_EQ(run(c), (std::vector<std::string>{integer(4), integer(3), integer(2), integer(102), integer(-148),
                                              bulk("-148")}));
  EXPECT_EQ(stored("n"), "-148");
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, SetNxOnExistingAndMissingKeys) {
  preset("old", "before");
  Batch b;
  b.set_nx("old", "after");
  b.get("old");
  b.set_nx("new", "first");
  b.set_nx("new", "second");
  b.get("new");
  b.set_nx("old", "x").resp3 = true;
  EXPECT_EQ(run(b), (std::vector<std::string>{kNil, bulk("before"), kOk, kNil, bulk("first"), kNil3}));
  EXPECT_EQ(stored("old"), "before");
  EXPECT_EQ(stored("new"), "first");
  EXPECT_EQ(spaces_[0]->size(), 2u);
}

TEST_F(KeyBatch, SetXxOnlyReplacesExistingKeys) {
  preset("old", "before");
  Batch b;
  b.set_xx("old", "after");
  b.get("old");
  b.set_xx("missing", "x");
  b.get("missing");
  b.add(Cmd::kExists, "missing");
  std::size_t sent = 0;
  EXPECT_EQ(run(b, &sent), (std::vector<std::string>{kOk, bulk("after"), kNil, kNil, integer(0)}));
  EXPECT_EQ(sent, 3u) << "two reads, one write (nothing to write for the missing key)";
  EXPECT_EQ(stored("old"), "after");
  EXPECT_EQ(stored("missing"), std::nullopt);
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, SetWithGetAnswersThePreviousValue) {
  preset("old", "before");
  Batch b;
  b.set_get("old", "v1");       // first command overwrites: answered from the engine's write
  b.set_get("old", "v2");
  b.set_get("missing", "m1");
  b.set_get("missing", "m2").resp3 = true;
  b.get("old");
  b.get("missing");
  EXPECT_EQ(run(b), (std::vector<std::string>{bulk("before"), bulk("v1"), kNil, bulk("m1"), bulk("v2"), bulk("m2")}));
  // SET ... NX GET: answers the old value and sets only when absent.
  Batch c;
  KeyOp& nxget = c.set_get("old", "ignored");
  nxget.nx = true;
  KeyOp& nxget2 = c.set_get("fresh", "set");
  nxget2.nx = true;
  c.get("old");
  c.get("fresh");
  EXPECT_EQ(run(c), (std::vector<std::string>{bulk("v2"), kNil, bulk("v2"), bulk("set")}));
  EXPECT_EQ(spaces_[0]->size(), 3u);
}

TEST_F(KeyBatch, GetSetReturnsTheValueItReplaces) {
  preset("g", "stored");
  Batch b;
  b.add(Cmd::kGetSet, "g", "a");
  b.add(Cmd::kGetSet, "g", "b");
  b.add(Cmd::kGetSet, "h", "first");
  b.add(Cmd::kGetSet, "h", "second");
  b.get("g");
  b.get("h");
  EXPECT_EQ(run(b),
            (std::vector<std::string>{bulk("stored"), bulk("a"), kNil, bulk("first"), bulk("b"), bulk("second")}));
  EXPECT_EQ(stored("g"), "b");
  EXPECT_EQ(stored("h"), "second");
  EXPECT_EQ(spaces_[0]->size(), 2u);
}

TEST_F(KeyBatch, AppendBuildsAValue) {
  Batch b;
  b.add(Cmd::kAppend, "s", "ab");
  b.add(Cmd::kAppend, "s", "cd");
  b.add(Cmd::kAppend, "s", "");
  b.add(Cmd::kStrlen, "s");
  b.get("s");
  EXPECT_EQ(run(b), (std::vector<std::string>{integer(2), integer(4), integer(4), integer(4), bulk("abcd")}));
  EXPECT_EQ(stored("s"), "abcd");
  Batch c;
  c.add(Cmd::kAppend, "s", "\0\r\n"s);
  c.get("s");
  EXPECT_EQ(run(c), (std::vector<std::string>{integer(7), bulk("abcd\0\r\n"s)}));
  EXPECT_EQ(stored("s"), "abcd\0\r\n"s);
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, DelThenExists) {
  preset("d", "x");
  preset("e", "y");
  Batch b;
  b.add(Cmd::kExists, "d");
  b.add(Cmd::kDel, "d");
  b.add(Cmd::kExists, "d");
  b.add(Cmd::kDel, "d");
  b.get("d");
  b.add(Cmd::kDel, "e");  // first command deletes: answered from the engine's write
  b.add(Cmd::kExists, "e");
  b.add(Cmd::kDel, "never");
  EXPECT_EQ(run(b), (std::vector<std::string>{integer(1), integer(1), integer(0), integer(0), kNil, integer(1),
                                              integer(0), integer(0)}));
  EXPECT_EQ(stored("d"), std::nullopt);
  EXPECT_EQ(stored("e"), std::nullopt);
  EXPECT_EQ(spaces_[0]->size(), 0u);
  // Deleted and written again in one batch: present afterwards.
  Batch c;
  c.add(Cmd::kDel, "d");
  c.set("d", "back");
  c.add(Cmd::kExists, "d");
  c.add(Cmd::kType, "d");
  c.add(Cmd::kType, "never");
  EXPECT_EQ(run(c), (std::vector<std::string>{integer(0), kOk, integer(1), "+string\r\n", "+none\r\n"}));
  EXPECT_EQ(stored("d"), "back");
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, IncrOnANonIntegerValueIsAnErrorAndChangesNothing) {
  const std::vector<std::string> bad = {"abc", "", " 1", "1 ", "01", "+1", "-0", "1.5", "9223372036854775808",
                                        "0x10"};
  for (std::size_t i = 0; i < bad.size(); ++i) preset("bad" + std::to_string(i), bad[i]);
  Batch b;
  for (std::size_t i = 0; i < bad.size(); ++i) {
    b.add(Cmd::kIncr, "bad" + std::to_string(i));
    b.get("bad" + std::to_string(i));
  }
  const auto r = run(b);
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(r[2 * i], kNotInt) << "INCR on \"" << bad[i] << "\"";
    EXPECT_EQ(r[2 * i + 1], bulk(bad[i])) << "value after INCR on \"" << bad[i] << "\"";
    EXPECT_EQ(stored("bad" + std::to_string(i)), bad[i]);
  }
  // Within one batch: a SET of a non-integer, then INCR.
  Batch c;
  c.set("word", "hello");
  c.add(Cmd::kIncr, "word");
  c.get("word");
  EXPECT_EQ(run(c), (std::vector<std::string>{kOk, kNotInt, bulk("hello")}));
  EXPECT_EQ(stored("word"), "hello");
  EXPECT_EQ(spaces_[0]->size(), bad.size() + 1);
}

TEST_F(KeyBatch, IncrByOverflowIsAnErrorAndChangesNothing) {
  preset("max", "9223372036854775807");
  preset("min", "-9223372036854775808");
  Batch b;
  b.add(Cmd::kIncr, "max");
  b.incrby("max", -1);
  b.add(Cmd::kDecr, "min");
  b.incrby("min", LLONG_MAX);
  b.incrby("new", LLONG_MAX);
  b.add(Cmd::kIncr, "new");
  b.get("max");
  b.get("min");
  b.get("new");
  EXPECT_EQ(run(b), (std::vector<std::string>{kOverflow, integer(LLONG_MAX - 1), kOverflow, integer(-1),
                                              integer(LLONG_MAX), kOverflow, bulk("9223372036854775806"), bulk("-1"),
                                              bulk("9223372036854775807")}));
  EXPECT_EQ(stored("max"), "9223372036854775806");
  EXPECT_EQ(stored("min"), "-1");
  EXPECT_EQ(stored("new"), "9223372036854775807");
}

TEST_F(KeyBatch, AppendOverMaxValueBytesIsRefusedAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(open(cpu_config(), 16));
  Batch b;
  b.add(Cmd::kAppend, "a", std::string(10, 'x'));
  b.add(Cmd::kAppend, "a", std::string(7, 'y'));   // 17 > 16
  b.add(Cmd::kAppend, "a", std::string(6, 'z'));   // 16: exactly the limit
  b.add(Cmd::kAppend, "a", "!");
  b.get("a");
  const auto r = run(b);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], integer(10));
  EXPECT_EQ(r[1].rfind("-ERR string exceeds maximum allowed size", 0), 0u) << r[1];
  EXPECT_EQ(r[2], integer(16));
  EXPECT_EQ(r[3].rfind("-ERR string exceeds maximum allowed size", 0), 0u) << r[3];
  EXPECT_EQ(r[4], bulk(std::string(10, 'x') + std::string(6, 'z')));
  EXPECT_EQ(stored("a"), std::string(10, 'x') + std::string(6, 'z'));
  // On a missing key, one APPEND over the limit leaves it missing.
  Batch c;
  c.add(Cmd::kAppend, "b", std::string(17, 'q'));
  c.add(Cmd::kExists, "b");
  const auto r2 = run(c);
  EXPECT_EQ(r2[0].rfind("-ERR string exceeds maximum allowed size", 0), 0u) << r2[0];
  EXPECT_EQ(r2[1], integer(0));
  EXPECT_EQ(stored("b"), std::nullopt);
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, SameKeyInDifferentDatabasesIsIndependent) {
  Batch b;
  b.set("k", "zero", 0);
  b.set("k", "one", 1);
  b.add(Cmd::kIncr, "n", {}, 0);
  b.add(Cmd::kIncr, "n", {}, 1);
  b.add(Cmd::kIncr, "n", {}, 0);
  b.add(Cmd::kDel, "k", {}, 1);
  b.get("k", 0);
  b.get("k", 1);
  b.get("n", 0);
  b.get("n", 1);
  EXPECT_EQ(run(b), (std::vector<std::string>{kOk, kOk, integer(1), integer(1), integer(2), integer(1),
                                              bulk("zero"), kNil, bulk("2"), bulk("1")}));
  EXPECT_EQ(stored("k", 0), "zero");
  EXPECT_EQ(stored("k", 1), std::nullopt);
  EXPECT_EQ(stored("n", 0), "2");
  EXPECT_EQ(stored("n", 1), "1");
  EXPECT_EQ(spaces_[0]->size(), 2u);
  EXPECT_EQ(spaces_[1]->size(), 1u);
}

TEST_F(KeyBatch, ADatabaseThatCannotBeOpenedFailsOnlyItsOwnCommands) {
  Batch b;
  b.set("k", "v", 0);
  b.set("k", "v", 7);  // the runner's space_of answers null for database 7
  b.get("k", 7);
  b.get("k", 0);
  const auto r = run(b);
  EXPECT_EQ(r[0], kOk);
  EXPECT_EQ(r[1].rfind("-ERR database 7 cannot be opened", 0), 0u) << r[1];
  EXPECT_EQ(r[2], r[1]);
  EXPECT_EQ(r[3], bulk("v"));
}

TEST_F(KeyBatch, ABatchsEffectsAreVisibleToTheNextBatch) {
  Batch b1;
  b1.set("a", "1");
  b1.add(Cmd::kIncr, "b");
  b1.add(Cmd::kAppend, "c", "x");
  b1.add(Cmd::kMset, "d", "m");
  run(b1);
  Batch b2;
  b2.get("a");
  b2.get("b");
  b2.get("c");
  b2.add(Cmd::kMget, "d");
  b2.add(Cmd::kIncr, "a");
  b2.add(Cmd::kAppend, "c", "y");
  EXPECT_EQ(run(b2), (std::vector<std::string>{bulk("1"), bulk("1"), bulk("x"), bulk("m"), integer(2), integer(2)}));
  Batch b3;
  b3.get("a");
  b3.get("c");
  b3.add(Cmd::kDel, "b");
  EXPECT_EQ(run(b3), (std::vector<std::string>{bulk("2"), bulk("xy"), integer(1)}));
  Batch b4;
  b4.add(Cmd::kExists, "b");
  EXPECT_EQ(run(b4), (std::vector<std::string>{integer(0)}));
  EXPECT_EQ(spaces_[0]->size(), 3u);
}

TEST_F(KeyBatch, EngineRefusalOfTheWriteFailsEveryCommandFromTheFirstChange) {
  StoreConfig c = cpu_config();
  c.limits.max_value_bytes = 32;
  open(c, 1000);  // the runner allows more than the engine
  preset("k", "orig");
  Batch b;
  b.get("k");
  b.add(Cmd::kAppend, "k", std::string(40, 'a'));  // the engine refuses the 44-byte value
  b.get("k");
  b.set("fresh", std::string(40, 'b'));
  b.get("fresh");
  const auto r = run(b);
  EXPECT_EQ(r[0], bulk("orig")) << "the read before the change stands";
  EXPECT_EQ(r[1].rfind("-ERR ", 0), 0u) << r[1];
  EXPECT_EQ(r[2], r[1]) << "a read after the refused change must not see it";
  EXPECT_EQ(r[3].rfind("-ERR ", 0), 0u) << r[3];
  EXPECT_EQ(r[4], r[3]);
  EXPECT_EQ(stored("k"), "orig");
  EXPECT_EQ(stored("fresh"), std::nullopt);
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, MemoryBudgetRefusalIsAnOomError) {
  StoreConfig c = cpu_config();
  c.memory_budget_bytes = 4096;
  ASSERT_NO_FATAL_FAILURE(open(c, 1u << 20));
  Batch b;
  b.set("big", std::string(10000, 'b'));
  b.set("small", "s");
  const auto r = run(b);
  EXPECT_EQ(r[0].rfind("-OOM ", 0), 0u) << r[0];
  EXPECT_EQ(r[1], kOk);
  EXPECT_EQ(stored("big"), std::nullopt);
  EXPECT_EQ(spaces_[0]->size(), 1u);
}

TEST_F(KeyBatch, EngineRequestsAreOneReadAndOneWritePerKeyAtMost) {
  Batch b;
  for (int i = 0; i < 5; ++i) b.add(Cmd::kIncr, "x");  // read + write
  for (int i = 0; i < 5; ++i) b.get("y");              // read
  for (int i = 0; i < 5; ++i) b.set("z", "v");         // write
  b.add(Cmd::kAppend, "x", "0");
  std::size_t sent = 0;
  run(b, &sent);
  EXPECT_EQ(sent, 4u);
}

// ---- a reference model over random batches ---------------------------------------------------

/// Redis semantics, one command at a time, in arrival order.
class Model {
 public:
  explicit Model(std::size_t max_value) : max_value_(max_value) {}
  std::string apply(const KeyOp& op) {
    auto& m = dbs_[op.db];
    auto it = m.find(op.key);
    const bool exists = it != m.end();
    auto null = [&] { return op.resp3 ? kNil3 : kNil; };
    auto cur = [&] { return exists ? bulk(it->second) : null(); };
    switch (cmd_of(op)) {
      case Cmd::kGet:
      case Cmd::kMget: return cur();
      case Cmd::kSet: {
        const bool apply = op.nx ? !exists : op.xx ? exists : true;
        std::string r = op.get ? cur() : apply ? kOk : null();
        if (apply) m[op.key] = op.value;
        return r;
      }
      case Cmd::kGetSet: {
        std::string r = cur();
        m[op.key] = op.value;
        return r;
      }
      case Cmd::kMset: m[op.key] = op.value; return kOk;
      case Cmd::kDel:
        if (exists) m.erase(it);
        return integer(exists ? 1 : 0);
      case Cmd::kExists: return integer(exists ? 1 : 0);
      case Cmd::kStrlen: return integer(exists ? static_cast<long long>(it->second.size()) : 0);
      case Cmd::kType: return exists ? "+string\r\n" : "+none\r\n";
      case Cmd::kIncrBy: {
        long long v = 0;
        if (exists && !parse_int64(it->second, &v)) return kNotInt;
        long long next;
        if (__builtin_add_overflow(v, op.delta, &next)) return kOverflow;
        m[op.key] = std::to_string(next);
        return integer(next);
      }
      case Cmd::kAppend: {
        const std::string v = (exists ? it->second : "") + op.value;
        if (v.size() > max_value_) return "(too long)";
        m[op.key] = v;
        return integer(static_cast<long long>(v.size()));
      }
      default: return "(unexpected)";
    }
  }
  std::size_t size(unsigned db) const {
    auto it = dbs_.find(db);
    return it == dbs_.end() ? 0 : it->second.size();
  }
  const std::map<std::string, std::string>& db(unsigned d) { return dbs_[d]; }

 private:
  std::size_t max_value_;
  std::map<unsigned, std::map<std::string, std::string>> dbs_;
};

class KeyBatchModel : public KeyBatch, public ::testing::WithParamInterface<RouterMode> {
 protected:
  /// Runs `batches` random batches of 1..max_ops commands over `keys` and compares every reply,
  /// the keyspaces' size() after each batch and the stored values at the end with the model.
  void check_random_batches(int batches, int max_ops, const std::vector<std::string>& keys, unsigned seed) {
    ASSERT_NO_FATAL_FAILURE(open(cpu_config(GetParam()), 40));
    Model model(40);
    std::mt19937 rng(seed);
    const std::vector<std::string> values = {"", "0", "1", "-7", "41", "9223372036854775806", "x", "hello",
                                             "a value of more than eight bytes"};
    for (int batch = 0; batch < batches && !HasFailure(); ++batch) {
      Batch b;
      const int n = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_ops));
      for (int i = 0; i < n; ++i) {
        const std::string& key = keys[rng() % keys.size()];
        const std::string& value = values[rng() % values.size()];
        const unsigned db = rng() % 4 == 0 ? 1 : 0;
        KeyOp* op = nullptr;
        switch (rng() % 12) {
          case 0: op = &b.get(key, db); break;
          case 1: op = &b.set(key, value, db); break;
          case 2: op = &b.set(key, value, db); op->nx = true; break;
          case 3: op = &b.set(key, value, db); op->xx = true; break;
          case 4: op = &b.set(key, value, db); op->get = true; op->nx = rng() % 2; break;
          case 5: op = &b.add(Cmd::kGetSet, key, value, db); break;
          case 6: op = &b.add(Cmd::kDel, key, {}, db); break;
          case 7: op = &b.add(Cmd::kExists, key, {}, db); break;
          case 8: op = &b.incrby(key, static_cast<long long>(rng() % 5) - 2, db); break;
          case 9: op = &b.add(Cmd::kAppend, key, value.substr(0, 12), db); break;
          case 10: op = &b.add(Cmd::kStrlen, key, {}, db); break;
          default: op = &b.add(Cmd::kMset, key, value, db); break;
        }
        op->resp3 = rng() % 3 == 0;
      }
      const auto got = run(b);
      int mismatches = 0;
      for (std::size_t i = 0; i < b.size() && mismatches < 5; ++i) {
        const std::string want = model.apply(*b.ops()[i]);
        if (want == "(too long)") {
          EXPECT_EQ(got[i].rfind("-ERR string exceeds maximum allowed size", 0), 0u)
              << "batch " << batch << " op " << i << ": " << got[i];
          continue;
        }
        if (got[i] != want) ++mismatches;
        EXPECT_EQ(got[i], want) << "batch " << batch << " op " << i << " (cmd " << b.ops()[i]->cmd->name
                                << ", key \"" << b.ops()[i]->key << "\", db " << b.ops()[i]->db << ")";
      }
      for (unsigned db : {0u, 1u}) EXPECT_EQ(spaces_[db]->size(), model.size(db)) << "after batch " << batch;
      if (batch % 50 == 49) ASSERT_TRUE(spaces_[0]->router().switch_model().ok());
    }
    for (unsigned db : {0u, 1u}) {
      for (const auto& k : keys) {
        const auto it = model.db(db).find(k);
        EXPECT_EQ(stored(k, db), it == model.db(db).end() ? std::nullopt : std::optional<std::string>(it->second))
            << "key \"" << k << "\" db " << db;
      }
    }
  }
};

TEST_P(KeyBatchModel, RandomBatchesOnFewKeysMatchRedisSemanticsInArrivalOrder) {
  check_random_batches(150, 24, {"a", "b", "eight888", "a much longer key than eight bytes", ""}, 20240611);
}

TEST_P(KeyBatchModel, LargeRandomBatchesOnManyKeysMatchRedisSemanticsInArrivalOrder) {
  std::vector<std::string> keys;
  for (int i = 0; i < 150; ++i) keys.push_back(i % 3 ? "key:" + std::to_string(i) : "long key number " + std::to_string(i));
  check_random_batches(40, 600, keys, 7);
}

INSTANTIATE_TEST_SUITE_P(Router, KeyBatchModel,
                         ::testing::Values(RouterMode::kLearned, RouterMode::kAllHot, RouterMode::kAllCold),
                         [](const auto& info) {
                           return std::string(info.param == RouterMode::kLearned  ? "learned"
                                              : info.param == RouterMode::kAllHot ? "all_hot"
                                                                                  : "all_cold");
                         });

// ---- KeyPipeline: several batches in flight --------------------------------------------------

/// A kv keyspace whose submitted batches wait for the test: submit() records a batch, ready()
/// stays false until the test releases it, and finish() runs it on the real keyspace only then,
/// so its effects happen as late as the engine's contract allows (a GPU that answers late). The
/// test can thus answer a later batch before an earlier one.
class GatedSpace final : public KvSpace {
 public:
  explicit GatedSpace(std::shared_ptr<KvSpace> inner) : inner_(std::move(inner)) {}
  struct Flight final : duet::KvInFlight {
    std::size_t id = 0;
  };
  struct Submitted {
    std::span<KvRequest> batch;
    std::span<duet::KvTrace> trace;
    bool released = false, finished = false;
  };
  std::unique_ptr<duet::KvInFlight> submit(std::span<KvRequest> b, std::span<duet::KvTrace> t) override {
    submitted.push_back(Submitted{b, t});
    auto f = std::make_unique<Flight>();
    f->id = submitted.size() - 1;
    return f;
  }
  bool ready(const duet::KvInFlight& h) const override {
    return open || submitted[static_cast<const Flight&>(h).id].released;
  }
  Status finish(std::unique_ptr<duet::KvInFlight> h) override {
    Submitted& s = submitted[static_cast<Flight&>(*h).id];
    EXPECT_FALSE(s.finished);
    s.finished = true;
    return inner_->execute(s.batch, s.trace);
  }
  Status execute(std::span<KvRequest> b, std::span<duet::KvTrace> t) override { return inner_->execute(b, t); }
  Status get(std::string_view k, std::string* v, bool* f) override { return inner_->get(k, v, f); }
  Status put(std::string_view k, std::string_view v, std::string* p, bool* h) override { return inner_->put(k, v, p, h); }
  Status del(std::string_view k, std::string* p, bool* h) override { return inner_->del(k, p, h); }
  duet::KvStats stats() const override { return inner_->stats(); }
  duet::KvRouterControl& router() override { return inner_->router(); }
  const std::string& name() const override { return inner_->name(); }
  std::uint64_t size() const override { return inner_->size(); }

  /// Batches submitted and not yet finished.
  std::vector<std::size_t> unfinished() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < submitted.size(); ++i)
      if (!submitted[i].finished) out.push_back(i);
    return out;
  }
  /// Releases every unfinished batch except those in `keep`.
  void release_all_but(const std::vector<std::size_t>& keep) {
    for (std::size_t i : unfinished())
      if (std::find(keep.begin(), keep.end(), i) == keep.end()) submitted[i].released = true;
  }

  std::vector<Submitted> submitted;
  bool open = false;  ///< every batch is ready at once

 private:
  std::shared_ptr<KvSpace> inner_;
};

/// Records what a KeyPipeline completes, in order.
struct RecordingSink final : duet::server::KeyOpSink {
  void op_done(KeyOp* op, std::string& reply) override {
    order.push_back(op);
    replies[op] = reply;
  }
  void batch_done(std::size_t, std::size_t) override { ++batches; }
  std::vector<KeyOp*> order;
  std::map<KeyOp*, std::string> replies;
  int batches = 0;
};

class Pipeline : public KeyBatch {
 protected:
  void SetUp() override {
    KeyBatch::SetUp();
    for (auto& s : spaces_) gated_.push_back(std::make_shared<GatedSpace>(s));
    pipeline_ = std::make_unique<KeyPipeline>([this](unsigned db) -> std::shared_ptr<KvSpace> { return gated_[db]; }, 64);
  }
  void TearDown() override {
    for (auto& g : gated_) g->open = true;
    if (pipeline_) pipeline_->finish_all(sink_);
    pipeline_.reset();
  }
  void pump() { pipeline_->pump(sink_, 64, 8); }
  std::string reply(KeyOp& op) {
    auto it = sink_.replies.find(&op);
    return it == sink_.replies.end() ? "(not done)" : it->second;
  }
  GatedSpace& gated(unsigned db = 0) { return *gated_[db]; }

  std::vector<std::shared_ptr<GatedSpace>> gated_;
  std::unique_ptr<KeyPipeline> pipeline_;
  RecordingSink sink_;
};

TEST_F(Pipeline, AKeysCommandsStayInOrderAcrossBatchesInFlight) {
  Batch b;
  KeyOp& set1 = b.set("k", "v1");
  pipeline_->add(&set1);
  pump();
  ASSERT_EQ(pipeline_->in_flight(), 1u) << "the SET's write waits for the engine";
  const std::vector<std::size_t> first = gated().unfinished();
  ASSERT_EQ(first.size(), 1u);
  // While it is in flight: the same key's commands, and another key's.
  KeyOp& get1 = b.get("k");
  KeyOp& set2 = b.set("k", "v2");
  KeyOp& get2 = b.get("k");
  KeyOp& other_set = b.set("other", "x");
  KeyOp& other_get = b.get("other");
  for (KeyOp* op : {&get1, &set2, &get2, &other_set, &other_get}) pipeline_->add(op);
  pump();
  EXPECT_EQ(pipeline_->in_flight(), 2u) << "the other key's commands go in flight beside the first batch";
  EXPECT_EQ(pipeline_->queued(), 3u) << "k's later commands wait for its batch in flight";
  // The engine answers the later batch first.
  gated().release_all_but(first);
  pump();
  EXPECT_EQ(reply(other_set), kOk);
  EXPECT_EQ(reply(other_get), bulk("x"));
  EXPECT_EQ(reply(get1), "(not done)");
  EXPECT_EQ(pipeline_->in_flight(), 1u);
  gated().open = true;
  pump();
  EXPECT_TRUE(pipeline_->idle());
  EXPECT_EQ(reply(set1), kOk);
  EXPECT_EQ(reply(get1), bulk("v1"));
  EXPECT_EQ(reply(set2), kOk);
  EXPECT_EQ(reply(get2), bulk("v2"));
  EXPECT_EQ(stored("k"), "v2");
  EXPECT_GE(pipeline_->overlapped(), 1u);
}

TEST_F(Pipeline, AReadAfterItsOwnWriteSeesItWhateverOrderTheEngineAnswers) {
  Batch b;
  KeyOp& w = b.set("mine", "written");
  pipeline_->add(&w);
  pump();
  const std::vector<std::size_t> write = gated().unfinished();
  ASSERT_EQ(write.size(), 1u);
  // A read of the key in a later pass, and reads of other keys.
  KeyOp& r = b.get("mine");
  KeyOp& x = b.get("x");
  pipeline_->add(&r);
  pipeline_->add(&x);
  pump();
  gated().release_all_but(write);  // whatever went in flight after the write is answered first
  pump();
  EXPECT_EQ(reply(x), kNil);
  EXPECT_EQ(reply(r), "(not done)");
  gated().open = true;
  pump();
  EXPECT_EQ(reply(w), kOk);
  EXPECT_EQ(reply(r), bulk("written"));
}

TEST_F(Pipeline, ReadModifyWriteStaysAtomicAcrossItsTwoStages) {
  Batch b;
  KeyOp& a = b.add(Cmd::kIncr, "n");
  pipeline_->add(&a);
  pump();
  ASSERT_EQ(gated().unfinished().size(), 1u) << "the INCR's read is in flight";
  gated().submitted[0].released = true;
  pump();
  const std::vector<std::size_t> write = gated().unfinished();
  ASSERT_EQ(write.size(), 1u) << "the INCR's write is in flight";
  // Another client's INCR and APPEND of the same key arrive between the two stages.
  KeyOp& c = b.add(Cmd::kIncr, "n");
  KeyOp& d = b.add(Cmd::kAppend, "n", "0");
  KeyOp& e = b.get("n");
  for (KeyOp* op : {&c, &d, &e}) pipeline_->add(op);
  pump();
  gated().release_all_but(write);
  pump();
  EXPECT_EQ(reply(c), "(not done)");
  gated().open = true;
  pump();
  EXPECT_EQ(reply(a), integer(1));
  EXPECT_EQ(reply(c), integer(2));
  EXPECT_EQ(reply(d), integer(2));
  EXPECT_EQ(reply(e), bulk("20"));
  EXPECT_EQ(stored("n"), "20");
}

TEST_F(Pipeline, ReadsOfOneKeyShareFlightButAWriteWaitsForThem) {
  Batch b;
  preset("r", "old");
  KeyOp& r1 = b.get("r");
  pipeline_->add(&r1);
  pump();
  KeyOp& r2 = b.get("r");
  pipeline_->add(&r2);
  pump();
  EXPECT_EQ(pipeline_->in_flight(), 2u) << "reads do not wait for reads";
  KeyOp& w = b.set("r", "new");
  pipeline_->add(&w);
  pump();
  EXPECT_EQ(pipeline_->queued(), 1u) << "a write waits for the reads in flight";
  gated().open = true;
  pump();
  EXPECT_EQ(reply(r1), bulk("old"));
  EXPECT_EQ(reply(r2), bulk("old"));
  EXPECT_EQ(reply(w), kOk);
}

TEST_F(Pipeline, AReadModifyWriteWaitsForAnotherThreadsBlindWriteInFlight) {
  // Two threads' pipelines sharing the guards: `other` writes the owner's key "n" blindly
  // (announced as IoThread::route does), then the owner gets an INCR of it.
  duet::server::WriteGuards guards;
  auto space_of = [this](unsigned db) -> std::shared_ptr<KvSpace> { return gated_[db]; };
  KeyPipeline owner(space_of, 64, &guards), other(space_of, 64, &guards);
  RecordingSink owner_sink, other_sink;
  Batch b;
  KeyOp& w = b.set("n", "10");
  w.hash = duet::server::key_hash("n");
  const std::size_t gs = duet::server::WriteGuards::stripe_of(w.hash, 0);
  ASSERT_TRUE(guards.try_blind(gs));
  w.direct = true;
  other.add(&w);
  other.pump(other_sink, 64, 8);
  const std::vector<std::size_t> blind_write = gated().unfinished();
  ASSERT_EQ(blind_write.size(), 1u) << "the blind write is in flight";
  KeyOp& incr = b.add(Cmd::kIncr, "n");
  KeyOp& unrelated = b.add(Cmd::kIncr, "m");
  owner.add(&incr);
  owner.add(&unrelated);
  owner.pump(owner_sink, 64, 8);
  EXPECT_EQ(owner.queued(), 1u) << "the INCR of n waits for the blind write in flight";
  EXPECT_FALSE(guards.try_blind(gs)) << "while it waits, new blind writes of n go to the owner";
  // Whatever the owner sent is answered before the blind write.
  gated().release_all_but(blind_write);
  owner.pump(owner_sink, 64, 8);
  gated().release_all_but(blind_write);
  owner.pump(owner_sink, 64, 8);
  EXPECT_EQ(owner_sink.replies[&unrelated], integer(1));
  EXPECT_EQ(owner_sink.replies.count(&incr), 0u);
  gated().open = true;
  other.pump(other_sink, 64, 8);
  EXPECT_EQ(other_sink.replies[&w], kOk);
  owner.pump(owner_sink, 64, 8);
  owner.finish_all(owner_sink);
  EXPECT_EQ(owner_sink.replies[&incr], integer(11));
  EXPECT_EQ(stored("n"), "11");
  ASSERT_TRUE(guards.try_blind(gs)) << "nothing is announced once both completed";
  guards.end_blind(gs);
}

TEST_F(Pipeline, ABlindWriteOfAKeyWhoseReadModifyWriteIsInFlightIsRefused) {
  duet::server::WriteGuards guards;
  KeyPipeline owner([this](unsigned db) -> std::shared_ptr<KvSpace> { return gated_[db]; }, 64, &guards);
  RecordingSink sink;
  Batch b;
  KeyOp& append = b.add(Cmd::kAppend, "s", "x");
  owner.add(&append);
  owner.pump(sink, 64, 8);
  ASSERT_EQ(owner.in_flight(), 1u) << "the APPEND's read is in flight";
  const std::size_t gs = duet::server::WriteGuards::stripe_of(duet::server::key_hash("s"), 0);
  EXPECT_FALSE(guards.try_blind(gs));
  // A blind write that leads its key's group needs no announcement: it does not read.
  KeyOp& set = b.set("t", "v");
  owner.add(&set);
  owner.pump(sink, 64, 8);
  const std::size_t gt = duet::server::WriteGuards::stripe_of(duet::server::key_hash("t"), 0);
  if (gt != gs) {
    EXPECT_TRUE(guards.try_blind(gt));
    guards.end_blind(gt);
  }
  gated().open = true;
  owner.pump(sink, 64, 8);
  owner.finish_all(sink);
  EXPECT_EQ(sink.replies[&append], integer(1));
  EXPECT_TRUE(guards.try_blind(gs));
  guards.end_blind(gs);
}

TEST_F(Pipeline, OpsOfOtherThreadsKeysDoNotWaitBehindAnOpWaitingForTheGuards) {
  // The owner's INCR of n waits for another thread's blind write of n (announced, never
  // completed here). A blind write and a read of a key the owner does not own, which share
  // the INCR's pipeline stripe, must not wait behind it: the blind write could be what an
  // op on its own owner waits for, while that owner's blind write waits here, a cycle.
  duet::server::WriteGuards guards;
  KeyPipeline p([this](unsigned db) -> std::shared_ptr<KvSpace> { return gated_[db]; }, 64, &guards);
  RecordingSink sink;
  gated().open = true;
  Batch b;
  KeyOp& incr = b.add(Cmd::kIncr, "n");
  incr.hash = duet::server::key_hash("n");
  const std::size_t gs = duet::server::WriteGuards::stripe_of(incr.hash, 0);
  ASSERT_TRUE(guards.try_blind(gs));  // the other thread's write of n, in flight
  p.add(&incr);
  p.pump(sink, 64, 8);
  ASSERT_EQ(p.queued(), 1u) << "the INCR waits for the blind write";
  // Keys of the INCR's stripe (found by search) whose owner is another thread.
  std::vector<std::string> same;
  for (int i = 0; same.size() < 2 && i < 10'000'000; ++i) {
    KeyOp probe;
    probe.key = "other:" + std::to_string(i);
    probe.hash = duet::server::key_hash(probe.key);
    if (KeyPipeline::stripe_of(probe) == KeyPipeline::stripe_of(incr)) same.push_back(probe.key);
  }
  ASSERT_EQ(same.size(), 2u);
  KeyOp& write = b.set(same[0], "w");
  write.hash = duet::server::key_hash(same[0]);
  const std::size_t ws = duet::server::WriteGuards::stripe_of(write.hash, 0);
  ASSERT_TRUE(guards.try_blind(ws));
  write.direct = true;
  KeyOp& read = b.get(same[1]);
  read.hash = duet::server::key_hash(same[1]);
  read.local_read = true;
  KeyOp& later = b.add(Cmd::kIncr, "n");  // the owner's later op of n stays behind the first
  p.add(&write);
  p.add(&read);
  p.add(&later);
  p.pump(sink, 64, 8);
  EXPECT_EQ(sink.replies[&write], kOk);
  EXPECT_EQ(sink.replies[&read], kNil);
  EXPECT_EQ(sink.replies.count(&incr), 0u);
  EXPECT_EQ(sink.replies.count(&later), 0u);
  EXPECT_EQ(p.queued(), 2u);
  guards.end_blind(gs);  // the other thread's write completed
  p.pump(sink, 64, 8);
  p.finish_all(sink);
  EXPECT_EQ(sink.replies[&incr], integer(1));
  EXPECT_EQ(sink.replies[&later], integer(2));
}

/// Random commands added in random chunks, pumped with random bounds, their engine batches
/// answered in random order: every reply must be the model's, in arrival order per key.
void random_pipeline(KeyPipeline& p, RecordingSink& sink, std::function<void(std::mt19937&)> answer_some,
                     std::function<void()> answer_all, int rounds, unsigned seed, Model& model, Batch& b) {
  std::mt19937 rng(seed);
  const std::vector<std::string> keys = {"a", "b", "c", "d", "eight888", "a key longer than eight bytes"};
  const std::vector<std::string> values = {"", "0", "1", "-7", "41", "x", "hello"};
  for (int round = 0; round < rounds; ++round) {
    const int n = static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      const std::string& key = keys[rng() % keys.size()];
      const std::string& value = values[rng() % values.size()];
      const unsigned db = rng() % 5 == 0 ? 1 : 0;
      KeyOp* op = nullptr;
      switch (rng() % 10) {
        case 0: case 1: op = &b.get(key, db); break;
        case 2: op = &b.set(key, value, db); break;
        case 3: op = &b.set(key, value, db); op->nx = true; break;
        case 4: op = &b.set(key, value, db); op->get = true; break;
        case 5: op = &b.add(Cmd::kDel, key, {}, db); break;
        case 6: op = &b.incrby(key, static_cast<long long>(rng() % 5) - 2, db); break;
        case 7: op = &b.add(Cmd::kAppend, key, value, db); break;
        case 8: op = &b.add(Cmd::kExists, key, {}, db); break;
        default: op = &b.add(Cmd::kGetSet, key, value, db); break;
      }
      p.add(op);
    }
    answer_some(rng);
    p.pump(sink, 1 + rng() % 8, 1 + rng() % 4);
  }
  answer_all();
  while (!p.idle()) {
    p.pump(sink, 64, 8);
    p.finish_all(sink);
  }
  ASSERT_EQ(sink.order.size(), b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    KeyOp* op = b.ops()[i];
    const std::string want = model.apply(*op);
    if (want == "(too long)") continue;
    ASSERT_EQ(sink.replies[op], want) << "op " << i << " (" << op->cmd->name << " \"" << op->key << "\" db " << op->db << ")";
  }
}

TEST_F(Pipeline, RandomCommandsWithBatchesAnsweredOutOfOrderMatchTheModel) {
  ASSERT_NO_FATAL_FAILURE(open(cpu_config(), 64));
  gated_.clear();
  for (auto& s : spaces_) gated_.push_back(std::make_shared<GatedSpace>(s));
  Model model(64);
  Batch b;
  random_pipeline(
      *pipeline_, sink_,
      [&](std::mt19937& rng) {
        for (auto& g : gated_)
          for (std::size_t i : g->unfinished())
            if (rng() % 3 == 0) g->submitted[i].released = true;
      },
      [&] {
        for (auto& g : gated_) g->open = true;
      },
      3000, 99, model, b);
  EXPECT_GT(pipeline_->overlapped(), 100u);
}

TEST(PipelineOnRealStore, RandomCommandsWithOrchestratorsMatchTheModel) {
  // The engine's own asynchrony: with orchestrator threads, submit() returns before the store
  // has run the batch, and ready() says when it has.
  StoreConfig c = cpu_config(RouterMode::kAllCold);
  c.orchestrators = 2;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(c, &store).ok());
  std::vector<std::shared_ptr<KvSpace>> spaces;
  for (const char* name : {"db0", "db1"}) {
    std::shared_ptr<KvSpace> kv;
    ASSERT_TRUE(store->create_kv(name, &kv).ok());
    spaces.push_back(kv);
  }
  KeyPipeline p([&](unsigned db) -> std::shared_ptr<KvSpace> { return spaces[db]; }, 64);
  RecordingSink sink;
  Model model(64);
  Batch b;
  random_pipeline(p, sink, [](std::mt19937&) {}, [] {}, 800, 5, model, b);
}

// ---- PendingReply::finish_part -----------------------------------------------------------------

void prepare(PendingReply& r, PendingReply::Kind kind, std::size_t parts) {
  r.kind = kind;
  r.parts.resize(parts);
  r.parts_left.store(static_cast<std::uint32_t>(parts));
}

TEST(PendingReplyTest, SingleReplyIsTakenAsIs) {
  PendingReply r;
  EXPECT_TRUE(finish(r, 0, "+OK\r\n"));
  EXPECT_EQ(r.bytes, "+OK\r\n");
  EXPECT_FALSE(r.error);
  PendingReply e;
  EXPECT_TRUE(finish(e, 0, "-ERR no\r\n"));
  EXPECT_EQ(e.bytes, "-ERR no\r\n");
  EXPECT_TRUE(e.error);
}

TEST(PendingReplyTest, ArrayAssemblesPartsInKeyOrderWhateverTheFinishingOrder) {
  PendingReply r;
  prepare(r, PendingReply::Kind::kArray, 3);
  EXPECT_FALSE(finish(r, 2, bulk("c")));
  EXPECT_FALSE(finish(r, 0, "$-1\r\n"));
  EXPECT_TRUE(finish(r, 1, bulk("b")));
  EXPECT_EQ(r.bytes, "*3\r\n$-1\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_FALSE(r.error);
  PendingReply one;
  prepare(one, PendingReply::Kind::kArray, 1);  // MGET of one key
  EXPECT_TRUE(finish(one, 0, bulk("v")));
  EXPECT_EQ(one.bytes, "*1\r\n$1\r\nv\r\n");
}

TEST(PendingReplyTest, SumCountsThePartsThatAnsweredOne) {
  PendingReply r;
  prepare(r, PendingReply::Kind::kSum, 4);
  EXPECT_FALSE(finish(r, 0, ":1\r\n"));
  EXPECT_FALSE(finish(r, 3, ":0\r\n"));
  EXPECT_FALSE(finish(r, 1, ":1\r\n"));
  EXPECT_TRUE(finish(r, 2, ":1\r\n"));
  EXPECT_EQ(r.bytes, ":3\r\n");
  EXPECT_FALSE(r.error);
  PendingReply z;
  prepare(z, PendingReply::Kind::kSum, 2);
  finish(z, 0, ":0\r\n");
  EXPECT_TRUE(finish(z, 1, ":0\r\n"));
  EXPECT_EQ(z.bytes, ":0\r\n");
}

TEST(PendingReplyTest, AllOkIsOneOk) {
  PendingReply r;
  prepare(r, PendingReply::Kind::kAllOk, 3);
  EXPECT_FALSE(finish(r, 1, "+OK\r\n"));
  EXPECT_FALSE(finish(r, 0, "+OK\r\n"));
  EXPECT_TRUE(finish(r, 2, "+OK\r\n"));
  EXPECT_EQ(r.bytes, "+OK\r\n");
  EXPECT_FALSE(r.error);
}

TEST(PendingReplyTest, AnErrorPartBecomesTheReplyOfSumAndAllOk) {
  for (auto kind : {PendingReply::Kind::kSum, PendingReply::Kind::kAllOk}) {
    PendingReply r;
    prepare(r, kind, 3);
    EXPECT_FALSE(finish(r, 0, kind == PendingReply::Kind::kSum ? ":1\r\n" : "+OK\r\n"));
    EXPECT_FALSE(finish(r, 1, "-OOM full\r\n"));
    EXPECT_TRUE(finish(r, 2, kind == PendingReply::Kind::kSum ? ":1\r\n" : "+OK\r\n"));
    EXPECT_EQ(r.bytes, "-OOM full\r\n");
    EXPECT_TRUE(r.error);
  }
}

TEST(PendingReplyTest, PartsFinishedFromManyThreadsCompleteExactlyOnce) {
  constexpr int kParts = 2000, kThreads = 8;
  PendingReply r;
  prepare(r, PendingReply::Kind::kSum, kParts);
  std::atomic<int> completions{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kParts; i += kThreads)
        if (finish(r, static_cast<std::uint32_t>(i), i % 3 ? ":1\r\n" : ":0\r\n")) completions.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(completions.load(), 1);
  int ones = 0;
  for (int i = 0; i < kParts; ++i) ones += i % 3 ? 1 : 0;
  EXPECT_EQ(r.bytes, integer(ones));
}

// ---- parse_int64 -------------------------------------------------------------------------------

TEST(ParseInt64, AcceptsRedisIntegers) {
  const std::pair<const char*, long long> ok[] = {{"0", 0},
                                                  {"-5", -5},
                                                  {"7", 7},
                                                  {"1234567890", 1234567890},
                                                  {"9223372036854775807", LLONG_MAX},
                                                  {"-9223372036854775808", LLONG_MIN}};
  for (const auto& [text, want] : ok) {
    long long v = 42;
    EXPECT_TRUE(parse_int64(text, &v)) << text;
    EXPECT_EQ(v, want) << text;
  }
}

TEST(ParseInt64, RejectsEverythingElse) {
  for (const char* text : {"", "+1", "007", "00", "-0", "-01", " 1", "1 ", "9223372036854775808",
                           "-9223372036854775809", "99999999999999999999", "123456789012345678901", "-", "1a", "0x10",
                           "1.0", "1e3", "--1", "\t1"}) {
    long long v = 42;
    EXPECT_FALSE(parse_int64(text, &v)) << "\"" << text << "\"";
  }
  long long v = 0;
  EXPECT_FALSE(parse_int64(std::string_view("1\0", 2), &v)) << "a NUL after the digits";
}

}  // namespace

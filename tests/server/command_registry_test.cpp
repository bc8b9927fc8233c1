// The command registry (src/server/command.hpp): consistent with itself, reachable by name,
// read by COMMAND (COUNT equals its size), and the keyspace-kind check dispatch uses.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "duet/store.hpp"
#include "server/command.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/server.hpp"

using namespace duet;
using namespace duet::server;

namespace {

TEST(CommandRegistry, IsConsistent) {
  const std::string problems = check_registry(all_commands());
  EXPECT_TRUE(problems.empty()) << problems;
}

TEST(CommandRegistry, CheckFindsBrokenEntries) {
  // The check itself must catch each kind of mistake.
  std::vector<CommandDef> defs;
  defs.push_back({.name = "nohandler", .arity = 1, .flags = kKeyless, .first_key = 0, .last_key = 0, .step = 0,
                  .kinds = kAnyKind, .group = "g", .summary = "s", .since = "1", .complexity = "O(1)"});
  defs.push_back({.name = "keyed", .arity = 2, .flags = kReadOnly, .first_key = 1, .last_key = 1, .step = 1,
                  .kinds = kind_bit(KeyspaceKind::kKv), .group = "g", .summary = "s", .since = "1",
                  .complexity = "O(1)"});
  defs.push_back({.name = "Upper", .arity = 1, .flags = kKeyless, .first_key = 0, .last_key = 0, .step = 0,
                  .kinds = kAnyKind, .group = "g", .summary = "s", .since = "1", .complexity = "O(1)",
                  .local = [](CommandContext&) {}});
  const std::string p = check_registry(defs);
  EXPECT_NE(p.find("nohandler: keyless command without a handler"), std::string::npos) << p;
  EXPECT_NE(p.find("keyed: key command without KeyCommand::apply"), std::string::npos) << p;
  EXPECT_NE(p.find("Upper: name is not lower case"), std::string::npos) << p;
}

TEST(CommandRegistry, EveryCommandIsFoundByNameInAnyCaseAndIdsArePositions) {
  const auto& all = all_commands();
  ASSERT_FALSE(all.empty());
  std::set<std::string> names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const CommandDef& c = all[i];
    EXPECT_EQ(c.id, i) << c.name;
    EXPECT_EQ(find_command(c.name), &c) << c.name;
    std::string upper(c.name);
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_EQ(find_command(upper), &c) << upper;
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_TRUE(c.is_key_command() ? c.key.apply != nullptr : c.local != nullptr) << c.name << " has no handler";
  }
  EXPECT_EQ(find_command("nosuchcommand"), nullptr);
  EXPECT_EQ(find_command(std::string(100, 'g')), nullptr);
}

TEST(CommandRegistry, FlagsDriveDispatch) {
  // The lists that used to be written out separately are flags of the entries now.
  for (const char* n : {"dbsize", "flushdb", "flushall", "scan"}) EXPECT_TRUE(find_command(n)->has(kBarrier)) << n;
  for (const char* n : {"get", "mget", "exists", "strlen", "type"}) EXPECT_TRUE(find_command(n)->has(kReadOnly)) << n;
  for (const char* n : {"set", "getset", "del", "mset"}) EXPECT_TRUE(find_command(n)->has(kOverwrite)) << n;
  for (const char* n : {"incr", "append", "get"}) EXPECT_FALSE(find_command(n)->has(kOverwrite)) << n;
  for (const auto& c : all_commands()) {
    if (c.has(kBarrier)) EXPECT_FALSE(c.is_key_command()) << c.name;
  }
}

TEST(CommandRegistry, CommandCountEqualsTheRegistrySize) {
  StoreConfig sc;
  sc.device = DeviceChoice::kCpu;
  sc.expected_keys = 1024;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(sc, &store).ok());
  ServerConfig cfg;
  Server server(cfg, store.get());  // not started: the handler needs no threads
  Session session;
  session.info = std::make_shared<ClientInfo>();
  auto run = [&](std::vector<std::string_view> words) {
    PendingReply reply;
    ReplyWriter w(&reply.bytes, 2);
    CommandContext ctx{server, session, Args(words.data(), words.size()), w, reply};
    find_command(words[0])->local(ctx);
    return reply.bytes;
  };
  EXPECT_EQ(run({"command", "count"}), ":" + std::to_string(all_commands().size()) + "\r\n");
  const std::string list = run({"command", "list"});
  EXPECT_EQ(list.rfind("*" + std::to_string(all_commands().size()) + "\r\n", 0), 0u) << list.substr(0, 20);
  for (const auto& c : all_commands()) EXPECT_NE(list.find(std::string("\r\n") + c.name + "\r\n"), std::string::npos) << c.name;
}

TEST(CommandRegistry, AKindACommandDoesNotRunOnGetsAnErrorNamingTheKind) {
  for (const auto& c : all_commands()) {
    for (KeyspaceKind kind : {KeyspaceKind::kKv, KeyspaceKind::kTxn, KeyspaceKind::kBatch}) {
      const bool runs = (c.kinds & kind_bit(kind)) != 0;
      EXPECT_EQ(kind_error(c, 0, kind).empty(), runs) << c.name << " on " << keyspace_kind_name(kind);
    }
  }
  EXPECT_EQ(kind_error(*find_command("get"), 0, KeyspaceKind::kKv), "");
  EXPECT_NE(kind_error(*find_command("get"), 0, KeyspaceKind::kBatch), "");
  CommandDef other = *find_command("get");
  other.kinds = 0;  // a command of some other kind's family
  EXPECT_EQ(kind_error(other, 3, KeyspaceKind::kKv),
            "ERR 'get' is not supported by database 3, whose keyspace kind is 'kv'");
}

TEST(CommandRegistry, ReportedFlagsUseRedisSpellingAndHideContainerFlags) {
  const auto flags = [](const char* n) {
    std::vector<std::string> out;
    for (const char* f : reported_flags(*find_command(n))) out.emplace_back(f);
    return out;
  };
  EXPECT_EQ(flags("get"), (std::vector<std::string>{"readonly", "fast"}));
  EXPECT_EQ(flags("set"), (std::vector<std::string>{"write", "denyoom"}));
  EXPECT_EQ(flags("hello"),
            (std::vector<std::string>{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}));
  EXPECT_TRUE(flags("config").empty());
  EXPECT_TRUE(find_command("config")->has(kAdmin));
}

}  // namespace

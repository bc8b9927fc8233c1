// The server's settings (src/server/config.hpp): parse_size's units, glob_match (Redis's glob,
// binary safe, optionally case-folding), apply_setting (live and fixed settings; a bad value
// leaves the configuration as it was), load_config_file (redis.conf syntax; errors name the
// line), parse_server_args (--name value, --name=value, --config FILE with flags overriding
// the file) and config_get's pattern matching.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "server/config.hpp"

using namespace std::string_literals;
using duet::DeviceChoice;
using duet::RouterMode;
using duet::Status;
using duet::StatusCode;
using duet::server::apply_setting;
using duet::server::config_get;
using duet::server::glob_match;
using duet::server::load_config_file;
using duet::server::parse_server_args;
using duet::server::parse_size;
using duet::server::ServerConfig;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// ---- parse_size --------------------------------------------------------------------------------

TEST(ParseSize, PlainNumbersAndUnits) {
  const std::pair<const char*, std::uint64_t> ok[] = {
      {"0", 0},
      {"100", 100},
      {"100b", 100},
      {"1k", 1000},
      {"1kb", 1024},
      {"1K", 1000},
      {"1KB", 1024},
      {"3m", 3000000},
      {"3mb", 3u << 20},
      {"2g", 2000000000ull},
      {"2gb", 2ull << 30},
      {"2GB", 2ull << 30},
      {"18446744073709551615", UINT64_MAX},
  };
  for (const auto& [text, want] : ok) {
    std::uint64_t v = 7;
    EXPECT_TRUE(parse_size(text, &v)) << text;
    EXPECT_EQ(v, want) << text;
  }
}

TEST(ParseSize, RejectsAnythingElseAndLeavesTheOutputAlone) {
  for (const char* text : {"", "x", "-1", "+1", "k", "1x", "1 kb", " 1", "1 ", "1kbb", "1tb", "1.5k",
                           "18446744073709551616", "17179869184gb", "0x10"}) {
    std::uint64_t v = 7;
    EXPECT_FALSE(parse_size(text, &v)) << "\"" << text << "\"";
    EXPECT_EQ(v, 7u) << "\"" << text << "\"";
  }
}

// ---- glob_match --------------------------------------------------------------------------------

TEST(GlobMatch, StarAndQuestionMark) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_TRUE(glob_match("h*o", "hello"));
  EXPECT_TRUE(glob_match("h*o", "ho"));
  EXPECT_FALSE(glob_match("h*o", "hola"));
  EXPECT_TRUE(glob_match("*llo", "hello"));
  EXPECT_TRUE(glob_match("he**o", "hello"));
  EXPECT_TRUE(glob_match("*a*b*", "xxaxxbxx"));
  EXPECT_FALSE(glob_match("*a*b*", "xxbxxaxx"));
  EXPECT_TRUE(glob_match("h?llo", "hallo"));
  EXPECT_FALSE(glob_match("h?llo", "hllo"));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_TRUE(glob_match("???", "abc"));
  EXPECT_FALSE(glob_match("???", "abcd"));
  EXPECT_TRUE(glob_match("*?", "a"));
  EXPECT_FALSE(glob_match("*?", ""));
  EXPECT_TRUE(glob_match("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaab"));
  EXPECT_FALSE(glob_match("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaa"));
}

TEST(GlobMatch, CharacterClasses) {
  EXPECT_TRUE(glob_match("h[ae]llo", "hello"));
  EXPECT_TRUE(glob_match("h[ae]llo", "hallo"));
  EXPECT_FALSE(glob_match("h[ae]llo", "hillo"));
  EXPECT_FALSE(glob_match("h[ae]llo", "hllo"));
  EXPECT_TRUE(glob_match("h[^e]llo", "hallo"));
  EXPECT_FALSE(glob_match("h[^e]llo", "hello"));
  EXPECT_TRUE(glob_match("h[a-c]llo", "hbllo"));
  EXPECT_TRUE(glob_match("h[a-c]llo", "hcllo"));
  EXPECT_FALSE(glob_match("h[a-c]llo", "hdllo"));
  EXPECT_TRUE(glob_match("h[c-a]llo", "hbllo")) << "a reversed range is swapped";
  EXPECT_TRUE(glob_match("[0-9][0-9]", "42"));
  EXPECT_FALSE(glob_match("[0-9][0-9]", "4x"));
  EXPECT_TRUE(glob_match("[^0-9]", "x"));
  EXPECT_FALSE(glob_match("[^0-9]", "5"));
  EXPECT_TRUE(glob_match("[a-cx-z]", "y"));
  EXPECT_FALSE(glob_match("[a-cx-z]", "m"));
  EXPECT_TRUE(glob_match("*[abc]", "xxb"));
  EXPECT_FALSE(glob_match("[abc]", "ab")) << "a class matches one character";
}

TEST(GlobMatch, EscapesMakeSpecialCharactersLiteral) {
  EXPECT_TRUE(glob_match("a\\*b", "a*b"));
  EXPECT_FALSE(glob_match("a\\*b", "axb"));
  EXPECT_TRUE(glob_match("a\\?b", "a?b"));
  EXPECT_FALSE(glob_match("a\\?b", "axb"));
  EXPECT_TRUE(glob_match("\\[x]", "[x]"));
  EXPECT_FALSE(glob_match("\\[x]", "x"));
  EXPECT_TRUE(glob_match("[\\]]", "]"));
  EXPECT_TRUE(glob_match("[\\-]", "-"));
  EXPECT_FALSE(glob_match("[\\-]", "a"));
  EXPECT_TRUE(glob_match("a\\\\b", "a\\b"));
  EXPECT_TRUE(glob_match("ab\\", "ab\\")) << "a trailing backslash is literal";
}

TEST(GlobMatch, NocaseFoldsAsciiCase) {
  EXPECT_FALSE(glob_match("HELLO", "hello"));
  EXPECT_TRUE(glob_match("HELLO", "hello", true));
  EXPECT_TRUE(glob_match("h*O", "HellO", true));
  EXPECT_TRUE(glob_match("[A-C]x", "bX", true));
  EXPECT_FALSE(glob_match("[A-C]x", "bX"));
  EXPECT_TRUE(glob_match("[^A]", "b", true));
  EXPECT_FALSE(glob_match("[^A]", "a", true));
  EXPECT_TRUE(glob_match("max*", "MAXCLIENTS", true));
  EXPECT_TRUE(glob_match("\\A", "a", true));
}

TEST(GlobMatch, TextIsBinarySafe) {
  const std::string text = "a\0b\xff\r\n"s;
  EXPECT_TRUE(glob_match("*", text));
  EXPECT_TRUE(glob_match("a?b*", text));
  EXPECT_TRUE(glob_match(std::string("a\0b*", 4), text));
  EXPECT_FALSE(glob_match("ab*", text)) << "the NUL byte must not end the text";
  EXPECT_TRUE(glob_match(std::string("*\xff\r\n"), text));
  EXPECT_TRUE(glob_match(std::string("a[\0x]b*", 7), text));
  EXPECT_TRUE(glob_match(std::string("a[^x]b[\xfe\xff]??"), text));
  EXPECT_TRUE(glob_match(std::string("[\x01-\x7f]*"), text));
  EXPECT_FALSE(glob_match(std::string("[\x01-\x7f]*"), "\0"s));
  EXPECT_EQ(glob_match("??????", text), true);
  EXPECT_EQ(glob_match("???????", text), false);
}

// ---- apply_setting -----------------------------------------------------------------------------

TEST(ApplySetting, StartupSettingsParseTheirValues) {
  ServerConfig c;
  EXPECT_TRUE(apply_setting(&c, "port", "7000", false).ok());
  EXPECT_EQ(c.port, 7000);
  EXPECT_TRUE(apply_setting(&c, "PORT", "7001", false).ok()) << "names are case-insensitive";
  EXPECT_EQ(c.port, 7001);
  EXPECT_TRUE(apply_setting(&c, "io-threads", "4", false).ok()) << "Redis's name for threads";
  EXPECT_EQ(c.threads, 4u);
  EXPECT_TRUE(apply_setting(&c, "bind", "0.0.0.0", false).ok());
  EXPECT_EQ(c.bind, "0.0.0.0");
  EXPECT_TRUE(apply_setting(&c, "maxmemory", "2gb", false).ok());
  EXPECT_EQ(c.store.memory_budget_bytes, 2ull << 30);
  EXPECT_TRUE(apply_setting(&c, "device", "cpu", false).ok());
  EXPECT_EQ(c.store.device, DeviceChoice::kCpu);
  EXPECT_TRUE(apply_setting(&c, "router", "all-hot", false).ok());
  EXPECT_EQ(c.store.router.mode, RouterMode::kAllHot);
  EXPECT_TRUE(apply_setting(&c, "max-value-bytes", "1mb", false).ok());
  EXPECT_EQ(c.store.limits.max_value_bytes, 1u << 20);
  EXPECT_TRUE(apply_setting(&c, "databases", "4", false).ok());
  EXPECT_EQ(c.databases, 4u);
}

TEST(ApplySetting, LiveSettingsChangeAtRunTime) {
  ServerConfig c;
  EXPECT_TRUE(apply_setting(&c, "maxclients", "50", true).ok());
  EXPECT_EQ(c.maxclients.load(), 50u);
  EXPECT_TRUE(apply_setting(&c, "proto-max-bulk-len", "1mb", true).ok());
  EXPECT_EQ(c.proto_max_bulk_len.load(), 1u << 20);
  EXPECT_TRUE(apply_setting(&c, "max-batch", "128", true).ok());
  EXPECT_EQ(c.max_batch.load(), 128u);
  EXPECT_TRUE(apply_setting(&c, "max-batches-in-flight", "3", true).ok());
  EXPECT_EQ(c.max_batches_in_flight.load(), 3u);
  EXPECT_TRUE(apply_setting(&c, "max-multibulk-len", "16", true).ok());
  EXPECT_EQ(c.max_multibulk_len.load(), 16u);
  // Below 16 a client could no longer send the CONFIG SET that raises it again.
  EXPECT_FALSE(apply_setting(&c, "max-multibulk-len", "15", true).ok());
  EXPECT_EQ(c.max_multibulk_len.load(), 16u);
  EXPECT_TRUE(apply_setting(&c, "router-threshold", "0.25", true).ok());
  EXPECT_DOUBLE_EQ(c.store.router.threshold, 0.25);
  EXPECT_TRUE(apply_setting(&c, "client-query-buffer-limit", "2mb", true).ok());
  EXPECT_EQ(c.client_query_buffer_limit.load(), 2u << 20);
}

TEST(ApplySetting, FixedSettingsAreRefusedAtRunTime) {
  ServerConfig c;
  for (const char* name : {"port", "bind", "threads", "databases", "maxmemory", "device", "router",
                           "max-value-bytes", "expected-keys"}) {
    const ServerConfig before(c);
    const Status s = apply_setting(&c, name, "1", true);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_TRUE(contains(s.message(), "can't set immutable config")) << s.message();
    EXPECT_TRUE(contains(s.message(), name)) << s.message();
    EXPECT_EQ(c.port, before.port);
    EXPECT_EQ(c.bind, before.bind);
    EXPECT_EQ(c.threads, before.threads);
    EXPECT_EQ(c.databases, before.databases);
    EXPECT_EQ(c.store.memory_budget_bytes, before.store.memory_budget_bytes);
    EXPECT_EQ(c.store.limits.max_value_bytes, before.store.limits.max_value_bytes);
    EXPECT_EQ(c.store.expected_keys, before.store.expected_keys);
  }
  // save and appendonly: accepted and ignored at startup (so a redis.conf loads), refused live.
  EXPECT_TRUE(apply_setting(&c, "appendonly", "yes", false).ok());
  EXPECT_TRUE(apply_setting(&c, "save", "", false).ok());
  EXPECT_EQ(apply_setting(&c, "save", "", true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(apply_setting(&c, "appendonly", "no", true).code(), StatusCode::kInvalidArgument);
}

TEST(ApplySetting, UnknownSettingIsNamedInTheError) {
  ServerConfig c;
  const Status s = apply_setting(&c, "no-such-setting", "1", false);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "no-such-setting")) << s.message();
}

TEST(ApplySetting, BadValuesLeaveTheConfigUnchanged) {
  struct Case {
    const char* name;
    const char* value;
    bool live;
  };
  const Case cases[] = {
      {"port", "0", false},          {"port", "65536", false},     {"port", "x", false},
      {"port", "-1", false},         {"threads", "1025", false},   {"databases", "0", false},
      {"maxmemory", "lots", false},  {"device", "tpu", false},     {"router", "random", false},
      {"maxclients", "0", true},     {"maxclients", "x", true},    {"proto-max-bulk-len", "1000", true},
      {"max-batch", "0", true},      {"max-batches-in-flight", "0", true}, {"max-batches-in-flight", "257", true},
      {"router-threshold", "-1", true}, {"router-threshold", "abc", true},
      {"router-threshold", "0.5x", true}, {"router-threshold", "nan", true}, {"loglevel", "loud", true},
      {"max-key-bytes", "0", false}, {"metrics-port", "70000", false}, {"expected-keys", "0", false},
      {"procedure-compute-device", "tpu", false},
  };
  for (const Case& k : cases) {
    ServerConfig c;
    c.port = 1234;
    c.maxclients = 77;
    const ServerConfig before(c);
    const Status s = apply_setting(&c, k.name, k.value, k.live);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << k.name << " " << k.value;
    EXPECT_TRUE(contains(s.message(), k.name)) << s.message();
    EXPECT_EQ(c.port, before.port) << k.name;
    EXPECT_EQ(c.threads, before.threads) << k.name;
    EXPECT_EQ(c.databases, before.databases) << k.name;
    EXPECT_EQ(c.metrics_port, before.metrics_port) << k.name;
    EXPECT_EQ(c.log_level, before.log_level) << k.name;
    EXPECT_EQ(c.store.memory_budget_bytes, before.store.memory_budget_bytes) << k.name;
    EXPECT_EQ(c.store.device, before.store.device) << k.name;
    EXPECT_EQ(c.store.router.mode, before.store.router.mode) << k.name;
    EXPECT_EQ(c.store.router.threshold, before.store.router.threshold) << k.name;
    EXPECT_EQ(c.store.limits.max_key_bytes, before.store.limits.max_key_bytes) << k.name;
    EXPECT_EQ(c.store.expected_keys, before.store.expected_keys) << k.name;
    EXPECT_EQ(c.procedure_compute_device, before.procedure_compute_device) << k.name;
    EXPECT_EQ(c.maxclients.load(), before.maxclients.load()) << k.name;
    EXPECT_EQ(c.proto_max_bulk_len.load(), before.proto_max_bulk_len.load()) << k.name;
    EXPECT_EQ(c.max_batch.load(), before.max_batch.load()) << k.name;
    EXPECT_EQ(c.max_batches_in_flight.load(), before.max_batches_in_flight.load()) << k.name;
  }
}

TEST(ApplySetting, CopiedConfigCarriesTheLiveValues) {
  ServerConfig c;
  ASSERT_TRUE(apply_setting(&c, "maxclients", "42", true).ok());
  ASSERT_TRUE(apply_setting(&c, "max-batch", "7", true).ok());
  ASSERT_TRUE(apply_setting(&c, "max-batches-in-flight", "5", true).ok());
  const ServerConfig copy(c);
  EXPECT_EQ(copy.maxclients.load(), 42u);
  EXPECT_EQ(copy.max_batch.load(), 7u);
  EXPECT_EQ(copy.max_batches_in_flight.load(), 5u);
}

// ---- load_config_file --------------------------------------------------------------------------

class ConfigFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "duet_server_config_test_" + name;
    std::ofstream(path, std::ios::binary) << text;
    files_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& f : files_) std::remove(f.c_str());
  }
  std::vector<std::string> files_;
};

TEST_F(ConfigFile, ReadsSettingsCommentsBlankLinesAndQuotes) {
  const std::string path = write("good.conf",
                                 "# a comment\n"
                                 "\n"
                                 "port 7000\n"
                                 "   # an indented comment\n"
                                 "\t\n"
                                 "bind \"10.0.0.1\"\n"
                                 "maxmemory '1gb'\n"
                                 "  databases   8  \n"
                                 "MAXCLIENTS 99\r\n"
                                 "router all-cold");  // no newline at the end
  ServerConfig c;
  const Status s = load_config_file(&c, path);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(c.port, 7000);
  EXPECT_EQ(c.bind, "10.0.0.1");
  EXPECT_EQ(c.store.memory_budget_bytes, 1ull << 30);
  EXPECT_EQ(c.databases, 8u);
  EXPECT_EQ(c.maxclients.load(), 99u);
  EXPECT_EQ(c.store.router.mode, RouterMode::kAllCold);
}

TEST_F(ConfigFile, PersistenceLinesOfARedisConfAreAcceptedAndIgnored) {
  const std::string path = write("redis-like.conf", "save 3600 1 300 100 60 10000\nsave \"\"\nappendonly no\nport 7100\n");
  ServerConfig c;
  ASSERT_TRUE(load_config_file(&c, path).ok());
  EXPECT_EQ(c.port, 7100);
}

TEST_F(ConfigFile, ErrorsNameTheFileAndTheLine) {
  struct Case {
    const char* text;
    int line;
    const char* says;
  };
  const Case cases[] = {
      {"port 7000\n# fine\nport x\n", 3, "port"},
      {"\n\nno-such-setting 1\n", 3, "no-such-setting"},
      {"port 7000 7001\n", 1, "expected 'name value'"},
      {"bind a\nport\n", 2, "port"},
  };
  int n = 0;
  for (const Case& k : cases) {
    const std::string path = write("bad" + std::to_string(n++) + ".conf", k.text);
    ServerConfig c;
    const Status s = load_config_file(&c, path);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << k.text;
    EXPECT_TRUE(contains(s.message(), path + ":" + std::to_string(k.line) + ":")) << s.message();
    EXPECT_TRUE(contains(s.message(), k.says)) << s.message();
  }
}

TEST_F(ConfigFile, MissingFileIsAnError) {
  ServerConfig c;
  const std::string path = ::testing::TempDir() + "duet_server_config_test_does_not_exist.conf";
  const Status s = load_config_file(&c, path);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), path)) << s.message();
}

// ---- parse_server_args -------------------------------------------------------------------------

Status parse_args(ServerConfig* c, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parse_server_args(c, static_cast<int>(args.size()), argv.data());
}

TEST(ServerArgs, NoArgumentsKeepTheDefaults) {
  ServerConfig c;
  ASSERT_TRUE(parse_args(&c, {}).ok());
  EXPECT_EQ(c.port, 6379);
  EXPECT_EQ(c.bind, "127.0.0.1");
}

TEST(ServerArgs, SpaceAndEqualsForms) {
  ServerConfig c;
  ASSERT_TRUE(parse_args(&c, {"--port", "7000", "--maxmemory=1kb", "--bind=::1", "--threads", "3"}).ok());
  EXPECT_EQ(c.port, 7000);
  EXPECT_EQ(c.store.memory_budget_bytes, 1024u);
  EXPECT_EQ(c.bind, "::1");
  EXPECT_EQ(c.threads, 3u);
  ServerConfig d;
  ASSERT_TRUE(parse_args(&d, {"--port=7001"}).ok());
  EXPECT_EQ(d.port, 7001);
  ServerConfig e;
  ASSERT_TRUE(parse_args(&e, {"--bind=a=b"}).ok()) << "only the first '=' separates";
  EXPECT_EQ(e.bind, "a=b");
}

TEST(ServerArgs, ErrorsForBadArguments) {
  ServerConfig c;
  EXPECT_EQ(parse_args(&c, {"port", "7000"}).code(), StatusCode::kInvalidArgument) << "no leading --";
  EXPECT_EQ(parse_args(&c, {"--port"}).code(), StatusCode::kInvalidArgument) << "a flag without its value";
  EXPECT_EQ(parse_args(&c, {"--port", "x"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_args(&c, {"--nope", "1"}).code(), StatusCode::kInvalidArgument);
  const Status s = parse_args(&c, {"--port"});
  EXPECT_TRUE(contains(s.message(), "--port")) << s.message();
  EXPECT_EQ(c.port, 6379);
}

TEST_F(ConfigFile, FlagsOverrideTheConfigFileWhereverTheyStand) {
  const std::string path = write("args.conf", "port 8000\nbind 10.1.1.1\nmaxclients 5\n");
  ServerConfig a;
  ASSERT_TRUE(parse_args(&a, {"--port", "7000", "--config", path}).ok());
  EXPECT_EQ(a.port, 7000) << "a flag before --config still wins";
  EXPECT_EQ(a.bind, "10.1.1.1") << "the file's other settings apply";
  EXPECT_EQ(a.maxclients.load(), 5u);
  ServerConfig b;
  ASSERT_TRUE(parse_args(&b, {"--config", path, "--port=7001"}).ok());
  EXPECT_EQ(b.port, 7001);
  EXPECT_EQ(b.bind, "10.1.1.1");
}

TEST_F(ConfigFile, ConfigFlagInEqualsFormLoadsTheFile) {
  const std::string path = write("eq.conf", "port 8100\n");
  ServerConfig c;
  const Status s = parse_args(&c, {"--config=" + path});
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(c.port, 8100) << "--config=FILE was accepted but the file was not read";
}

TEST_F(ConfigFile, BadConfigFileFailsTheArguments) {
  const std::string path = write("broken.conf", "port nope\n");
  ServerConfig c;
  const Status s = parse_args(&c, {"--config", path, "--port", "7000"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), path + ":1:")) << s.message();
  EXPECT_EQ(parse_args(&c, {"--config", path + ".missing"}).code(), StatusCode::kInvalidArgument);
}

// ---- config_get --------------------------------------------------------------------------------

std::map<std::string, std::string> get_map(const ServerConfig& c, std::string_view pattern) {
  std::map<std::string, std::string> m;
  for (auto& [k, v] : config_get(c, pattern)) {
    EXPECT_FALSE(m.count(k)) << "setting " << k << " listed twice";
    m[k] = v;
  }
  return m;
}

TEST(ConfigGet, ExactNameGivesOnePair) {
  ServerConfig c;
  c.port = 7000;
  const auto pairs = config_get(c, "port");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, "port");
  EXPECT_EQ(pairs[0].second, "7000");
  EXPECT_EQ(config_get(c, "PORT").size(), 1u) << "patterns fold case";
  EXPECT_TRUE(config_get(c, "no-such-setting").empty());
  EXPECT_TRUE(config_get(c, "por").empty()) << "no prefix match without a star";
}

TEST(ConfigGet, PatternsSelectSettingsWithTheirValues) {
  ServerConfig c;
  ASSERT_TRUE(apply_setting(&c, "maxmemory", "1mb", false).ok());
  ASSERT_TRUE(apply_setting(&c, "maxclients", "12", true).ok());
  const auto max = get_map(c, "max*");
  EXPECT_EQ(max, (std::map<std::string, std::string>{{"maxmemory", "1048576"},
                                                     {"max-key-bytes", "65536"},
                                                     {"max-value-bytes", "536870912"},
                                                     {"max-unread-output", "0"},
                                                     {"maxclients", "12"},
                                                     {"max-batches-in-flight", "8"},
                                                     {"max-multibulk-len", "1048576"},
                                                     {"max-batch", "4096"}}));
  const auto all = get_map(c, "*");
  EXPECT_GE(all.size(), 20u);
  for (const char* name : {"bind", "port", "threads", "databases", "loglevel", "device", "router", "save",
                           "appendonly", "proto-max-bulk-len", "client-query-buffer-limit", "metrics-port"})
    EXPECT_TRUE(all.count(name)) << name;
  EXPECT_EQ(all.at("appendonly"), "no");
  EXPECT_EQ(all.at("save"), "");
  EXPECT_EQ(all.at("bind"), "127.0.0.1");
  EXPECT_EQ(all.at("device"), "auto");
  EXPECT_EQ(all.at("router"), "learned");
  EXPECT_EQ(get_map(c, "?ind"), (std::map<std::string, std::string>{{"bind", "127.0.0.1"}}));
  EXPECT_EQ(get_map(c, "metrics-[bp]*"),
            (std::map<std::string, std::string>{{"metrics-bind", "127.0.0.1"}, {"metrics-port", "0"}}));
  EXPECT_EQ(get_map(c, "*-port").size(), 1u);
}

}  // namespace

TEST(ServerArgs, DatabaseKindsGiveEachDatabaseItsKind) {
  ServerConfig c;
  EXPECT_EQ(c.database_kind(0), duet::KeyspaceKind::kKv) << "every database is kv by default";
  ASSERT_TRUE(parse_args(&c, {"--database-kinds", "kv,3=kv"}).ok());
  EXPECT_EQ(c.database_kind(3), duet::KeyspaceKind::kKv);
  EXPECT_EQ(c.database_kinds, "kv,3=kv");
  ServerConfig bad;
  ServerConfig mixed;
  ASSERT_TRUE(parse_args(&mixed, {"--database-kinds", "kv,2=txn,3=batch"}).ok());
  EXPECT_EQ(mixed.database_kind(2), duet::KeyspaceKind::kTxn);
  EXPECT_EQ(mixed.database_kind(3), duet::KeyspaceKind::kBatch);
  Status s = parse_args(&bad, {"--database-kinds", "nosuchkind"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "database-kinds")) << s.message();
  EXPECT_TRUE(contains(s.message(), "kv")) << "names the known kinds: " << s.message();
  EXPECT_EQ(bad.database_kinds, "kv") << "a bad value changes nothing";
  s = parse_args(&bad, {"--database-kinds", "kv,16=kv"});
  EXPECT_TRUE(contains(s.message(), "beyond databases (16)")) << s.message();
  for (const char* v : {"", "kv,", "x=kv", "kv,kv", "2000=kv"})
    EXPECT_EQ(parse_args(&bad, {"--database-kinds", v}).code(), StatusCode::kInvalidArgument) << "'" << v << "'";
}

TEST(ServerArgs, DbKindLinesAddToDatabaseKinds) {
  ServerConfig c;
  ASSERT_TRUE(apply_setting(&c, "db-kind", "2 txn", false).ok());
  ASSERT_TRUE(apply_setting(&c, "db-kind", "3 batch", false).ok());
  EXPECT_EQ(c.database_kind(2), duet::KeyspaceKind::kTxn);
  EXPECT_EQ(c.database_kind(3), duet::KeyspaceKind::kBatch);
  EXPECT_EQ(c.database_kind(0), duet::KeyspaceKind::kKv);
  for (const char* v : {"2", "2 nosuchkind", "x txn", "2000 txn"})
    EXPECT_EQ(apply_setting(&c, "db-kind", v, false).code(), StatusCode::kInvalidArgument) << "'" << v << "'";
  EXPECT_EQ(c.database_kind(2), duet::KeyspaceKind::kTxn) << "a bad line changes nothing";
  EXPECT_EQ(apply_setting(&c, "db-kind", "4 txn", true).code(), StatusCode::kInvalidArgument) << "not live";
  EXPECT_EQ(c.txn_idle_timeout_ms.load(), 60000u);
  ASSERT_TRUE(apply_setting(&c, "txn-idle-timeout", "250", true).ok()) << "live";
  EXPECT_EQ(c.txn_idle_timeout_ms.load(), 250u);
}

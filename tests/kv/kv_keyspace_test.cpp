// The Store's keyspace seam: kinds and their names, create/find/drop through Keyspace, the typed
// kv conveniences, shared handles (a handle keeps working after its name is dropped, while other
// threads run batches on it, and after the Store is destroyed; a batch in flight keeps its
// keyspace alive), the optional per-request trace and the router's tuning interface.
// Run under AddressSanitizer by scripts/test: a keyspace freed too early shows up there.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "duet/store.hpp"
#include "gpu/device.hpp"
#include "kv/device_probe.hpp"
#include "kv/kv_test_util.hpp"

namespace duet {
namespace {

using kvtest::open_store;
using kvtest::test_config;

std::shared_ptr<KvSpace> make_kv(Store& store, std::string_view name) {
  std::shared_ptr<KvSpace> kv;
  const Status s = store.create_kv(name, &kv);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_NE(kv, nullptr);
  return kv;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string get_or(KvSpace& kv, std::string_view key, std::string_view absent = "(absent)") {
  std::string v;
  bool found = false;
  const Status s = kv.get(key, &v, &found);
  EXPECT_TRUE(s.ok()) << "get " << key << ": " << s.to_string();
  return found ? v : std::string(absent);
}

// ---- Kinds ------------------------------------------------------------------------------------

TEST(KeyspaceKinds, NamesParseBackAndUnknownNamesListTheKinds) {
  KeyspaceKind k = static_cast<KeyspaceKind>(99);
  for (KeyspaceKind kind : {KeyspaceKind::kKv, KeyspaceKind::kTxn, KeyspaceKind::kBatch}) {
    ASSERT_TRUE(parse_keyspace_kind(keyspace_kind_name(kind), &k).ok()) << keyspace_kind_name(kind);
    EXPECT_EQ(k, kind);
  }
  EXPECT_STREQ(keyspace_kind_name(KeyspaceKind::kKv), "kv");
  for (const char* bad : {"", "KV", "Txn", "kv ", "batches"}) {
    const Status s = parse_keyspace_kind(bad, &k);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("kv"), std::string::npos) << "the message names the known kinds: " << s.message();
  }
  EXPECT_STREQ(keyspace_kind_name(static_cast<KeyspaceKind>(99)), "unknown");
}

TEST(KeyspaceKinds, CreateOfAnUnknownKindIsInvalidAndCreatesNothing) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(test_config(), &store));
  std::shared_ptr<Keyspace> ks;
  const Status s = store->create("x", static_cast<KeyspaceKind>(99), &ks);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("kv"), std::string::npos) << s.message();
  EXPECT_EQ(ks, nullptr);
  EXPECT_TRUE(store->keyspaces().empty());
}

// ---- create / find / drop ---------------------------------------------------------------------

TEST(KeyspaceSeam, CreateFindAndTheTypedConveniencesAgree) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(test_config(), &store));
  std::shared_ptr<Keyspace> created;
  ASSERT_TRUE(store->create("users", KeyspaceKind::kKv, &created).ok());
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->kind(), KeyspaceKind::kKv);
  EXPECT_EQ(created->name(), "users");
  EXPECT_EQ(created->size(), 0u);

  std::shared_ptr<Keyspace> found;
  ASSERT_TRUE(store->find("users", &found).ok());
  EXPECT_EQ(found, created);
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->kv("users", &kv).ok());
  EXPECT_EQ(static_cast<Keyspace*>(kv.get()), created.get());

  ASSERT_TRUE(kv->put("alice", "42").ok());
  EXPECT_EQ(created->size(), 1u);
  std::vector<std::string> keys;
  std::uint64_t cursor = 0;
  do {
    ASSERT_TRUE(found->scan(cursor, 10, &keys, &cursor).ok());  // through the kind-neutral interface
  } while (cursor != 0);
  EXPECT_EQ(keys, std::vector<std::string>{"alice"});

  EXPECT_EQ(store->find("nobody", &found).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->kv("nobody", &kv).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->create("users", KeyspaceKind::kKv, &created).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->create_kv("users", &kv).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->create("", KeyspaceKind::kKv, &created).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->keyspaces(), std::vector<std::string>{"users"});
}

TEST(KeyspaceSeam, AHandleTakenBeforeDropKeepsWorkingAndTheNameIsReusableAtOnce) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(test_config(), &store));
  std::shared_ptr<KvSpace> old = make_kv(*store, "db");
  ASSERT_TRUE(old->put("k", "old").ok());
  ASSERT_TRUE(old->put("long/" + std::string(200, 'x'), std::string(300, 'v')).ok());  // dictionary key, value block

  ASSERT_TRUE(store->drop("db").ok());
  std::shared_ptr<KvSpace> none;
  EXPECT_EQ(store->kv("db", &none).code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->keyspaces().empty());
  EXPECT_EQ(store->drop("db").code(), StatusCode::kNotFound);

  std::shared_ptr<KvSpace> fresh = make_kv(*store, "db");  // at once, while `old` is alive
  ASSERT_NE(fresh, old);
  EXPECT_EQ(get_or(*fresh, "k"), "(absent)");
  EXPECT_EQ(fresh->size(), 0u);

  // The dropped keyspace still answers, writes, switches and iterates, independently.
  EXPECT_EQ(get_or(*old, "k"), "old");
  EXPECT_EQ(get_or(*old, "long/" + std::string(200, 'x')), std::string(300, 'v'));
  ASSERT_TRUE(old->put("k", "old2").ok());
  ASSERT_TRUE(old->router().switch_model().ok());
  EXPECT_EQ(get_or(*old, "k"), "old2");
  EXPECT_EQ(old->size(), 2u);
  EXPECT_EQ(get_or(*fresh, "k"), "(absent)");
  ASSERT_TRUE(fresh->put("k", "new").ok());
  EXPECT_EQ(get_or(*old, "k"), "old2");
  EXPECT_EQ(old->name(), "db");
  old.reset();  // the dropped keyspace is freed here
  EXPECT_EQ(get_or(*fresh, "k"), "new");
  EXPECT_EQ(fresh->stats().memory_bytes, 0u)
      << "the dropped keyspace's bytes go back to the shared budget when its last handle goes";
}

TEST(KeyspaceSeam, DropWhileOtherThreadsRunBatchesOnTheKeyspace) {
  std::unique_ptr<Store> store;
  StoreConfig c = test_config();
  c.router.auto_switch = false;
  ASSERT_TRUE(open_store(c, &store));
  std::shared_ptr<KvSpace> kv = make_kv(*store, "busy");
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> batches{0}, errors{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 3; ++t) {
    clients.emplace_back([&, t, kv] {  // each client holds its own share of the handle
      std::vector<std::string> keys(16), values(16);
      std::vector<KvRequest> reqs(16);
      std::vector<KvTrace> trace(16);
      for (std::uint64_t round = 0; !stop.load() || round < 20; ++round) {
        for (int i = 0; i < 16; ++i) {
          keys[i] = "t" + std::to_string(t) + "/" + std::to_string((round * 16 + i) % 97) + std::string(i % 3 * 10, '.');
          values[i] = std::string(1 + (round + i) % 40, static_cast<char>('a' + i));
          reqs[i] = KvRequest{};
          reqs[i].op = i % 3 == 0 ? KvRequest::Op::kGet : i % 3 == 1 ? KvRequest::Op::kPut : KvRequest::Op::kDelete;
          reqs[i].key = keys[i];
          reqs[i].value = values[i];
        }
        if (!kv->execute(reqs, trace).ok()) errors.fetch_add(1);
        batches.fetch_add(1);
      }
    });
  }
  while (batches.load() < 30) std::this_thread::yield();
  ASSERT_TRUE(store->drop("busy").ok());
  kv.reset();  // only the clients hold it now
  std::shared_ptr<KvSpace> again = make_kv(*store, "busy");
  ASSERT_TRUE(again->put("after", "drop").ok());
  const std::uint64_t at_drop = batches.load();
  while (batches.load() < at_drop + 30) std::this_thread::yield();
  stop.store(true);
  for (auto& th : clients) th.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(get_or(*again, "after"), "drop");
  EXPECT_EQ(again->size(), 1u) << "the clients wrote to the dropped keyspace, never to the new one";
}

// ---- Handles outliving the Store --------------------------------------------------------------

TEST(KeyspaceSeam, AHandleOutlivesItsStore) {
  std::shared_ptr<KvSpace> kv;
  std::shared_ptr<Keyspace> other;
  {
    std::unique_ptr<Store> store;
    StoreConfig c = test_config();
    c.router.bins = 1024;
    c.router.threshold = 0.0;
    c.router.sample_every = 1;
    c.router.train_requests = 64;
    ASSERT_TRUE(open_store(c, &store));
    kv = make_kv(*store, "survivor");
    ASSERT_TRUE(store->create("other", KeyspaceKind::kKv, &other).ok());
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(kv->put("key" + std::to_string(i % 50), std::string(64 + i, 'v')).ok());
  }  // the Store is destroyed; its budget and epoch manager live on with the handles
  ASSERT_TRUE(kv->router().switch_model().ok());
  for (int i = 0; i < 200; ++i) {
    std::string prev;
    bool had = false;
    ASSERT_TRUE(kv->put("key" + std::to_string(i % 50), std::string(10 + i, 'w'), &prev, &had).ok());
    ASSERT_TRUE(had);
  }
  EXPECT_EQ(get_or(*kv, "key49"), std::string(10 + 199, 'w'));
  EXPECT_EQ(kv->size(), 50u);
  EXPECT_GT(kv->stats().memory_bytes, 0u);
  std::vector<std::string> keys;
  std::uint64_t cursor = 0;
  do {
    ASSERT_TRUE(kv->scan(cursor, 16, &keys, &cursor).ok());
  } while (cursor != 0);
  EXPECT_EQ(keys.size(), 50u);
  EXPECT_EQ(other->size(), 0u);
  kv.reset();  // frees the keyspace; the shared resources stay for `other`
  other.reset();  // the last handle: the shared resources go too
}

TEST(KeyspaceSeam, ABatchInFlightKeepsItsKeyspaceAlive) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(test_config(), &store));
  std::shared_ptr<KvSpace> kv = make_kv(*store, "p");
  std::vector<std::string> values(64);
  std::vector<std::string> keys(64);
  std::vector<KvRequest> reqs(64);
  for (int i = 0; i < 64; ++i) {
    keys[i] = "k" + std::to_string(i);
    values[i] = std::string(100 + i, 'v');  // value blocks, freed with the keyspace
    reqs[i].op = KvRequest::Op::kPut;
    reqs[i].key = keys[i];
    reqs[i].value = values[i];
  }
  // Finished by the caller after the name was dropped and the Store destroyed.
  std::shared_ptr<KvSpace> copy = kv;
  std::unique_ptr<KvInFlight> batch = kv->submit(reqs);
  ASSERT_TRUE(store->drop("p").ok());
  kv.reset();
  store.reset();
  ASSERT_TRUE(copy->finish(std::move(batch)).ok());
  EXPECT_EQ(copy->size(), 64u);
  // Abandoned after the last handle went: the batch holds the keyspace until it finishes itself.
  for (auto& r : reqs) r.op = KvRequest::Op::kDelete;
  batch = copy->submit(reqs);
  copy.reset();
  batch.reset();  // finishes the batch, then frees the keyspace
}

// ---- Trace ------------------------------------------------------------------------------------

TEST(KeyspaceSeam, ATraceOfTheWrongSizeFailsEveryRequestAndRunsNone) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(test_config(), &store));
  std::shared_ptr<KvSpace> kv = make_kv(*store, "t");
  std::vector<KvRequest> reqs(3);
  for (auto& r : reqs) {
    r.op = KvRequest::Op::kPut;
    r.key = "k";
    r.value = "v";
    r.found = true;
    r.result = "stale";
  }
  std::vector<KvTrace> trace(2);
  const Status s = kv->execute(reqs, trace);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  for (const auto& r : reqs) {
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << r.status.to_string();
    EXPECT_FALSE(r.found);
    EXPECT_EQ(r.result, "");
  }
  for (const auto& t : trace) EXPECT_EQ(t.done_ns, 0u) << "a trace of the wrong size is not written";
  EXPECT_EQ(get_or(*kv, "k"), "(absent)");
  EXPECT_EQ(kv->size(), 0u);
  // Through submit as well.
  std::vector<KvTrace> longer(4);
  EXPECT_EQ(kv->finish(kv->submit(reqs, longer)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(get_or(*kv, "k"), "(absent)");
}

TEST(KeyspaceSeam, ATraceSaysWhichComponentAnsweredAndWhen) {
  for (RouterMode mode : {RouterMode::kAllHot, RouterMode::kAllCold}) {
    StoreConfig c = test_config();
    c.router.mode = mode;
    std::unique_ptr<Store> store;
    ASSERT_TRUE(open_store(c, &store));
    std::shared_ptr<KvSpace> kv = make_kv(*store, "t");
    std::vector<KvRequest> reqs(4);
    const char* keys[] = {"a", "b", "a-rather-long-key-for-the-dictionary", "c"};
    for (int i = 0; i < 4; ++i) {
      reqs[i].op = i % 2 ? KvRequest::Op::kGet : KvRequest::Op::kPut;
      reqs[i].key = keys[i];
      reqs[i].value = "v";
    }
    reqs[3].key = std::string_view();  // the empty key is a valid key
    std::vector<KvTrace> trace(4, KvTrace{KvPath::kNone, 1});
    const std::uint64_t before = now_ns();
    ASSERT_TRUE(kv->execute(reqs, trace).ok());
    const std::uint64_t after = now_ns();
    const KvPath want = mode == RouterMode::kAllHot ? KvPath::kHot : KvPath::kCold;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(trace[i].path, want) << "request " << i;
      EXPECT_GE(trace[i].done_ns, before) << "request " << i;
      EXPECT_LE(trace[i].done_ns, after) << "request " << i;
    }
    // A failed request is traced too: kNone when it never reached the router.
    reqs[0].key = std::string_view();
    reqs[0].value = std::string_view();
    std::string big(c.limits.max_key_bytes + 1, 'k');
    reqs[1].key = big;
    ASSERT_EQ(kv->execute(reqs, trace).code(), StatusCode::kTooLarge);
    EXPECT_EQ(trace[1].path, KvPath::kNone);
    EXPECT_GT(trace[1].done_ns, 0u);
  }
}

// ---- Router control ---------------------------------------------------------------------------

TEST(KeyspaceSeam, SetThresholdRefusesNegativeAndNaNAndChangesNothing) {
  StoreConfig c = test_config();
  c.router.bins = 1024;
  c.router.threshold = 0.0;
  c.router.sample_every = 1;
  c.router.train_requests = 64;
  c.router.auto_switch = false;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(c, &store));
  std::shared_ptr<KvSpace> kv = make_kv(*store, "r");
  KvRouterControl& router = kv->router();
  EXPECT_EQ(router.set_threshold(-0.5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(router.set_threshold(std::numeric_limits<double>::quiet_NaN()).code(), StatusCode::kInvalidArgument);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(kv->put("p" + std::to_string(i % 4), "v").ok());
  ASSERT_TRUE(router.switch_model().ok());
  EXPECT_GT(kv->stats().hot_bins, 0u) << "threshold 0 still applies: the refused values changed nothing";
  ASSERT_TRUE(router.set_threshold(1.0).ok());
  ASSERT_TRUE(router.set_threshold(std::numeric_limits<double>::infinity()).ok());
  ASSERT_TRUE(router.switch_model().ok());
  EXPECT_EQ(kv->stats().hot_bins, 0u);
}

}  // namespace
}  // namespace duet

// ---- Measuring the devices (measure_devices, for --device auto) -------------------------------

namespace duet {
namespace {

TEST(MeasureDevices, RejectsProbesOutOfRange) {
  DeviceMeasurement m;
  auto bad = [&](DeviceProbe p, const char* field) {
    const Status s = measure_devices(StoreConfig{}, p, &m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(s.message().find(field), std::string::npos) << s.to_string();
  };
  DeviceProbe p;
  p.threads = 0;
  bad(p, "threads");
  p = {};
  p.batch = 0;
  bad(p, "batch");
  p = {};
  p.in_flight = 0;
  bad(p, "in_flight");
  p = {};
  p.keys = 0;
  bad(p, "keys");
  p = {};
  p.read_fraction = 1.5;
  bad(p, "read_fraction");
  p = {};
  p.millis = 0;
  bad(p, "millis");
}

TEST(MeasureDevices, ChoosesAndSaysWhy) {
  DeviceProbe p;
  p.threads = 2;
  p.batch = 64;
  p.keys = 4096;
  p.millis = 30;
  DeviceMeasurement m;
  ASSERT_TRUE(measure_devices(StoreConfig{}, p, &m).ok());
  EXPECT_FALSE(m.reason.empty());
  if (gpu::device().present) {  // both measured; the faster chosen
    EXPECT_GT(m.gpu_requests_per_s, 0);
    EXPECT_GT(m.cpu_requests_per_s, 0);
    EXPECT_EQ(m.chosen, m.gpu_requests_per_s >= m.cpu_requests_per_s ? DeviceChoice::kGpu : DeviceChoice::kCpu);
    std::printf("measure_devices: %s\n", m.reason.c_str());
  } else {
    EXPECT_EQ(m.chosen, DeviceChoice::kCpu);
    EXPECT_EQ(m.gpu_requests_per_s, 0);
    EXPECT_EQ(m.cpu_requests_per_s, 0);
    EXPECT_NE(m.reason.find("no GPU"), std::string::npos) << m.reason;
  }
}

TEST(MeasureDevices, TheProbeRunsItsWorkloadOnTheCpuStore) {
  DeviceProbe p;
  p.threads = 2;
  p.batch = 32;
  p.in_flight = 3;
  p.keys = 2048;
  p.read_fraction = 0.5;
  p.millis = 30;
  double rate = 0;
  ASSERT_TRUE(kv::measure_device_rate(StoreConfig{}, DeviceChoice::kCpu, p, &rate).ok());
  EXPECT_GT(rate, 1000.0) << "requests per second";
}

}  // namespace
}  // namespace duet

namespace duet {
namespace {

TEST(MeasureDevices, StoreOpenDecidesAutoByMeasurementWhenAsked) {
  StoreConfig c = kvtest::test_config();
  c.device = DeviceChoice::kAuto;
  c.measure_auto_device = true;
  c.auto_probe.threads = 2;
  c.auto_probe.batch = 64;
  c.auto_probe.keys = 4096;
  c.auto_probe.millis = 30;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(c, &store).ok());
  const std::string d = store->device_description();
  if (gpu::device().present) {
    EXPECT_NE(d.find("chosen by measurement"), std::string::npos) << d;
    std::printf("Store::open with measure_auto_device: %s\n", d.c_str());
  } else {
    EXPECT_EQ(d.rfind("cpu: ", 0), 0u) << d;  // nothing to measure without a GPU
  }
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("after-probe", &kv).ok());
  ASSERT_TRUE(kv->put("k", "v").ok());
  // A bad probe is refused at open, naming the field.
  c.auto_probe.batch = 0;
  const Status s = Store::open(c, &store);
  if (gpu::device().present) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("batch"), std::string::npos) << s.to_string();
  }
}

}  // namespace
}  // namespace duet

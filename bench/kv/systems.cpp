#include "systems.hpp"

#include <algorithm>

namespace duet::bench::kv {
namespace {

/// Duet's kv keyspace in one router mode, on a Store of its own.
class DuetSystem final : public KvSystem {
 public:
  DuetSystem(std::unique_ptr<duet::Store> store, std::shared_ptr<duet::KvSpace> space)
      : store_(std::move(store)), space_(std::move(space)) {}
  duet::Status execute(std::span<duet::KvRequest> batch, std::span<duet::KvTrace> trace) override {
    return space_->execute(batch, trace);
  }
  std::unique_ptr<duet::KvInFlight> submit(std::span<duet::KvRequest> batch, std::span<duet::KvTrace> trace) override {
    return space_->submit(batch, trace);
  }
  duet::Status finish(std::unique_ptr<duet::KvInFlight> batch) override { return space_->finish(std::move(batch)); }
  bool per_element_latency() const override { return false; }
  duet::KvSpace* space() override { return space_.get(); }
  std::string device_description() const override { return store_->device_description(); }

 private:
  std::unique_ptr<duet::Store> store_;
  std::shared_ptr<duet::KvSpace> space_;
};

/// A peer's batch "in flight": already run by submit().
class RanBatch final : public duet::KvInFlight {
 public:
  explicit RanBatch(duet::Status s) : status(std::move(s)) {}
  duet::Status status;
};

}  // namespace

std::unique_ptr<duet::KvInFlight> KvSystem::submit(std::span<duet::KvRequest> batch, std::span<duet::KvTrace> trace) {
  return std::make_unique<RanBatch>(execute(batch, trace));
}

duet::Status KvSystem::finish(std::unique_ptr<duet::KvInFlight> batch) {
  auto* ran = dynamic_cast<RanBatch*>(batch.get());
  return ran ? ran->status : duet::Status::InvalidArgument("finish() of a batch this system did not start");
}

const std::vector<SystemInfo>& kv_systems() {
  static const std::vector<SystemInfo> systems = {
      {"kvcg", true, true, ""},
      {"kvcg-auto", true, true, ""},
      {"kvc", true, true, ""},
      {"kvg", true, true, ""},
#if DUET_BENCH_KV_HAVE_TBB
      {"tbb", false, true, ""},
#else
      {"tbb", false, false, "oneTBB was not found when this binary was configured"},
#endif
#if DUET_BENCH_KV_HAVE_LIBCUCKOO
      {"libcuckoo", false, true, ""},
#else
      {"libcuckoo", false, false, "libcuckoo was not found when this binary was configured"},
#endif
  };
  return systems;
}

const SystemInfo* find_kv_system(const std::string& name) {
  for (const SystemInfo& s : kv_systems())
    if (s.name == name) return &s;
  return nullptr;
}

duet::Status make_kv_system(const std::string& name, const SystemSpec& spec, std::unique_ptr<KvSystem>* out) {
  out->reset();
  const SystemInfo* info = find_kv_system(name);
  if (!info) return duet::Status::InvalidArgument("unknown system " + name);
  if (!info->available) return duet::Status::Unavailable(name + ": " + info->missing_reason);
  if (info->duet) {
    duet::StoreConfig cfg;
    cfg.device = spec.device;
    cfg.orchestrators = spec.orchestrators;
    cfg.max_aggregate = spec.max_aggregate;
    cfg.expected_keys = std::max<std::uint64_t>(spec.expected_keys, 1024);
    cfg.router.mode = is_learned_system(name) ? duet::RouterMode::kLearned
                      : name == "kvc" ? duet::RouterMode::kAllHot
                                      : duet::RouterMode::kAllCold;
    cfg.router.threshold = spec.threshold;
    if (spec.train_requests)
      cfg.router.train_requests = std::max<std::uint64_t>(1, spec.train_requests / cfg.router.sample_every);
    cfg.router.auto_switch = spec.auto_switch;
    cfg.router.min_switch_interval_ms = spec.switch_interval_ms;
    std::unique_ptr<duet::Store> store;
    duet::Status s = duet::Store::open(cfg, &store);
    if (!s.ok()) return s;
    std::shared_ptr<duet::KvSpace> space;
    s = store->create_kv("bench", &space);
    if (!s.ok()) return s;
    *out = std::make_unique<DuetSystem>(std::move(store), std::move(space));
    return duet::Status::Ok();
  }
#if DUET_BENCH_KV_HAVE_TBB
  if (name == "tbb") *out = make_tbb_kv_system(spec);
#endif
#if DUET_BENCH_KV_HAVE_LIBCUCKOO
  if (name == "libcuckoo") *out = make_libcuckoo_kv_system(spec);
#endif
  return *out ? duet::Status::Ok() : duet::Status::Internal("system " + name + " could not be built");
}

}  // namespace duet::bench::kv

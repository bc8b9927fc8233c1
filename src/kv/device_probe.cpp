// measure_devices (duet/store.hpp): the same workload on a Canonical Store on each processor.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kv/device_probe.hpp"

#include "duet/store.hpp"
#include "gpu/device.hpp"

namespace duet::kv {

namespace {

std::string probe_key(std::uint64_t i) {
  char b[32];
  std::snprintf(b, sizeof b, "probe:%012llu", static_cast<unsigned long long>(i));
  return b;
}

}  // namespace

Status measure_device_rate(const StoreConfig& base, DeviceChoice device, const DeviceProbe& probe, double* rate) {
  StoreConfig cfg = base;
  cfg.device = device;
  cfg.expected_keys = std::max<std::uint64_t>(probe.keys, 1024);
  cfg.router.auto_switch = false;  // the probe measures the store, not the router's training
  std::unique_ptr<Store> store;
  Status s = Store::open(cfg, &store);
  if (!s.ok()) return s;
  std::shared_ptr<KvSpace> kv;
  s = store->create_kv("device-probe", &kv);
  if (!s.ok()) return s;
  std::vector<std::string> keys(probe.keys);
  for (std::uint64_t i = 0; i < probe.keys; ++i) keys[i] = probe_key(i);
  const std::string value(16, 'v');
  {  // prefill
    std::vector<KvRequest> batch;
    for (std::uint64_t i = 0; i < probe.keys; i += 4096) {
      batch.clear();
      for (std::uint64_t j = i; j < std::min(probe.keys, i + 4096); ++j) {
        KvRequest r;
        r.op = KvRequest::Op::kPut;
        r.key = keys[j];
        r.value = value;
        r.want_previous = false;
        batch.push_back(std::move(r));
      }
      s = kv->execute(batch);
      if (!s.ok()) return Status(s.code(), "device probe prefill: " + s.message());
    }
  }
  std::atomic<int> phase{0};  // 0 warm-up, 1 measured, 2 stop
  std::vector<std::uint64_t> done(probe.threads, 0);
  std::vector<Status> errors(probe.threads);
  std::vector<std::thread> threads;
  const std::uint32_t read_permille = static_cast<std::uint32_t>(probe.read_fraction * 1000.0 + 0.5);
  for (unsigned t = 0; t < probe.threads; ++t) {
    threads.emplace_back([&, t] {
      std::uint64_t x = 0x9E3779B97F4A7C15ULL * (t + 1);
      auto next = [&] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
      };
      std::vector<std::vector<KvRequest>> batches(probe.in_flight, std::vector<KvRequest>(probe.batch));
      std::vector<std::unique_ptr<KvInFlight>> flights(probe.in_flight);
      auto fill = [&](std::vector<KvRequest>& b) {
        for (KvRequest& r : b) {
          const std::uint64_t v = next();
          r.op = (v % 1000) < read_permille ? KvRequest::Op::kGet : KvRequest::Op::kPut;
          r.key = keys[(v >> 10) % probe.keys];
          r.value = value;
          r.want_previous = false;
        }
      };
      for (unsigned k = 0; k < probe.in_flight; ++k) {
        fill(batches[k]);
        flights[k] = kv->submit(batches[k]);
      }
      for (unsigned k = 0;; k = (k + 1) % probe.in_flight) {
        Status st = kv->finish(std::move(flights[k]));
        if (!st.ok() && errors[t].ok()) errors[t] = st;
        const int ph = phase.load(std::memory_order_relaxed);
        if (ph == 1) done[t] += probe.batch;
        if (ph == 2) break;
        fill(batches[k]);
        flights[k] = kv->submit(batches[k]);
      }
      for (auto& f : flights)
        if (f) (void)kv->finish(std::move(f));
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::uint32_t>(probe.millis / 3, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  phase.store(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(probe.millis));
  phase.store(2);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& th : threads) th.join();
  for (const Status& e : errors)
    if (!e.ok()) return Status(e.code(), "device probe on " + std::string(device_choice_name(device)) + ": " + e.message());
  std::uint64_t total = 0;
  for (std::uint64_t d : done) total += d;
  *rate = static_cast<double>(total) / secs;
  return Status::Ok();
}

}  // namespace duet::kv

namespace duet {
namespace {

std::string millions(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f M req/s", r / 1e6);
  return b;
}

}  // namespace

Status measure_devices(const StoreConfig& config, const DeviceProbe& probe, DeviceMeasurement* out) {
  if (probe.threads < 1 || probe.threads > 1024) return Status::InvalidArgument("device probe: threads must be 1..1024");
  if (probe.batch < 1 || probe.batch > (1u << 20)) return Status::InvalidArgument("device probe: batch must be 1..2^20");
  if (probe.in_flight < 1 || probe.in_flight > 64) return Status::InvalidArgument("device probe: in_flight must be 1..64");
  if (probe.keys < 1 || probe.keys > (1ull << 26)) return Status::InvalidArgument("device probe: keys must be 1..2^26");
  if (!(probe.read_fraction >= 0 && probe.read_fraction <= 1))
    return Status::InvalidArgument("device probe: read_fraction must be in [0, 1]");
  if (probe.millis < 1) return Status::InvalidArgument("device probe: millis must be >= 1");
  *out = DeviceMeasurement{};
  const gpu::DeviceInfo& d = gpu::device();
  if (!d.present) {
    out->chosen = DeviceChoice::kCpu;
    out->reason = "cpu: no GPU (" + d.reason + "), nothing to measure";
    return Status::Ok();
  }
  Status s = kv::measure_device_rate(config, DeviceChoice::kGpu, probe, &out->gpu_requests_per_s);
  if (!s.ok()) return s;
  s = kv::measure_device_rate(config, DeviceChoice::kCpu, probe, &out->cpu_requests_per_s);
  if (!s.ok()) return s;
  const bool gpu = out->gpu_requests_per_s >= out->cpu_requests_per_s;
  out->chosen = gpu ? DeviceChoice::kGpu : DeviceChoice::kCpu;
  char shape[160];
  std::snprintf(shape, sizeof shape, "%u threads, batches of %zu, %u in flight, %llu keys, %.0f%% GET, %u ms each",
                probe.threads, probe.batch, probe.in_flight, static_cast<unsigned long long>(probe.keys),
                probe.read_fraction * 100.0, probe.millis);
  out->reason = std::string(gpu ? "gpu" : "cpu") + ": measured gpu (" + d.name + ") " +
                millions(out->gpu_requests_per_s) + ", cpu " + millions(out->cpu_requests_per_s) + " (" + shape + ")";
  return Status::Ok();
}

}  // namespace duet

// The measuring half of measure_devices (duet/store.hpp), for tests and tools.
#pragma once

#include "duet/store.hpp"

namespace duet::kv {

/// Requests per second of `probe`'s workload on a fresh `kv` keyspace of a temporary Store
/// opened with `config` on `device` (kCpu or kGpu). Errors opening or running the store are
/// returned; the probe is not validated here (measure_devices does it).
Status measure_device_rate(const StoreConfig& config, DeviceChoice device, const DeviceProbe& probe, double* rate);

}  // namespace duet::kv

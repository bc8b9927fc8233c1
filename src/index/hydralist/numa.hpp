// NUMA topology for Hydralist's search-layer replicas: the nodes and their CPUs from
// /sys/devices/system/node, the calling thread's node through getcpu, and pinning a thread to a
// node's CPUs. A machine without that directory (or with one node) is one node holding every
// CPU the process may use.
#pragma once

#include <vector>

namespace duet::hydralist {

struct NumaTopology {
  /// cpus[n]: the CPUs of node n (nodes renumbered 0..N-1 in /sys order).
  std::vector<std::vector<int>> cpus;
  /// node_of_cpu[c]: the node of CPU c (-1 when unknown).
  std::vector<int> node_of_cpu;
  unsigned nodes() const { return static_cast<unsigned>(cpus.size()); }
};

/// Reads the topology once per process (later calls return the cached one).
const NumaTopology& numa_topology();
/// The node of the CPU the calling thread runs on now (0 when unknown).
unsigned current_numa_node();
/// Pins the calling thread to node n's CPUs; false when that failed (the thread then runs
/// wherever the scheduler puts it).
bool pin_to_numa_node(unsigned n);

}  // namespace duet::hydralist

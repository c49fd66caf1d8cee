// What pinning needs to know about a node: its CPUs grouped by core and NUMA node,
// and its NVIDIA GPUs with their PCI address and the CPUs close to them. Read once
// from hwloc (the running machine, or an XML file for tests and for users who want
// to override discovery) into plain data; no hwloc type leaves topology.cpp.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "topo/cpuset.h"

namespace hvd {

struct NumaNode {
  int os_index = -1;
  CpuSet cpus;  // never empty: memory-only nodes are left out
};

struct GpuDevice {
  std::string pci_bus_id;  // "0000:07:00.0", lower case
  std::string uuid;        // "GPU-...", when hwloc's NVML plugin reported it
  std::string model;       // when known
  int cuda_index = -1;     // N of hwloc's "cudaN" OS device (physical order), else -1
  int numa = -1;           // OS index of the one NUMA node it hangs off, -1 if not one
  CpuSet cpus;             // CPUs local to the device (its non-I/O ancestor's)
};

struct Topology {
  std::string source;             // "this machine" or the XML path
  CpuSet cpus;                    // all usable CPUs
  std::vector<CpuSet> cores;      // PUs of each core, in topology order
  std::vector<NumaNode> numa_nodes;
  // In CUDA's physical enumeration order: by hwloc's cudaN index when every GPU has
  // one, else by PCI bus id (CUDA_DEVICE_ORDER=PCI_BUS_ID, which is also the default
  // FASTEST_FIRST order on nodes with one GPU model).
  std::vector<GpuDevice> gpus;
};

// xml_path empty: discover this machine. Fails with HVD_ERR_INVALID_ARGUMENT naming
// the file when the XML cannot be read, and with HVD_ERR_UNSUPPORTED for an XML file
// in a build without hwloc. Without hwloc, this machine is one NUMA node of the
// process's allowed CPUs, with no GPU locality.
Error load_topology(const std::string& xml_path, Topology* out);

}  // namespace hvd

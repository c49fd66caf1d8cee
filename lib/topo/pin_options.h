// What pinning reads of the configuration; core fills it from its parameters
// (HVD_GPU_PINNING, HVD_CPU_BIND, HVD_TOPOLOGY_XML, HOROVOD_THREAD_AFFINITY,
// CUDA_VISIBLE_DEVICES), so topo reads no environment of its own.
#pragma once

#include <optional>
#include <string>

namespace hvd {

// Auto: Core when nothing else placed the process (see pin.cpp), else None.
enum class CpuBind { None, Numa, Core, Auto };

struct PinOptions {
  bool gpu_pinning = true;
  CpuBind cpu_bind = CpuBind::Auto;
  std::string topology_xml;     // empty: this machine's topology
  std::string thread_affinity;  // HOROVOD_THREAD_AFFINITY's text
  // CUDA_VISIBLE_DEVICES as set (possibly empty); nullopt when it is not set.
  std::optional<std::string> cuda_visible_devices;
  // This rank among the ranks of its machine that may run on the same CPUs, of every
  // MPI node there (network namespaces, containers without CPU sets of their own, a
  // launcher's pretend hosts are nodes that share one machine's cores). Where they
  // outnumber the node's ranks and there are no GPUs to place them by, `core` (and so
  // `auto`) cuts the machine's cores among all of them, not each node's among its own.
  int machine_rank = 0;
  int machine_size = 1;
};

}  // namespace hvd

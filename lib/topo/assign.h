// Which GPU and which CPUs each local rank gets.
//
// Ranks are spread evenly over locality domains: the groups of visible GPUs that
// share the same local CPUs (a NUMA node, usually), or the NUMA nodes when there is
// no GPU. Each domain gets a share of the ranks proportional to its GPU count (its
// core count without GPUs), remainders going to the first domains; ranks fill the
// domains in order, so on a balanced node with one rank per GPU local rank i gets
// GPU i. Within a domain, n ranks over g GPUs take GPU floor(j*g/n), spreading them
// across the domain's PCIe switches when n < g and sharing GPUs when n > g; and the
// domain's cores are cut into n contiguous slices, one per rank.
#pragma once

#include <vector>

#include "base/error.h"
#include "topo/cpuset.h"
#include "topo/topology.h"

namespace hvd {

struct RankPlacement {
  int gpu = -1;           // CUDA ordinal (position among the visible GPUs), -1: none
  int physical_gpu = -1;  // index into Topology::gpus, -1: none
  int numa = -1;          // NUMA node OS index of its domain, -1: not a single node
  CpuSet domain_cpus;     // CPUs of its domain (HVD_CPU_BIND=numa)
  CpuSet core_cpus;       // its own slice of the domain's cores (HVD_CPU_BIND=core)
};

// visible: CUDA ordinal -> index into topology.gpus (see visible_gpus). Fails with
// HVD_ERR_INVALID_ARGUMENT for local_size < 1 or an index out of range.
Error assign_gpus(const Topology& topology, const std::vector<int>& visible, int local_size,
                  std::vector<RankPlacement>* out);

}  // namespace hvd

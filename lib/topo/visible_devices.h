// CUDA_VISIBLE_DEVICES as the CUDA runtime reads it: a comma-separated list of
// physical device indices or "GPU-<uuid>" (a unique prefix suffices). The runtime
// stops at the first entry it cannot use (unknown, out of range, repeated, a MIG
// device), keeping the devices before it; so do we, so that our ordinals are the
// ones cudaSetDevice takes.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace hvd {

struct VisibleDevices {
  std::vector<int> physical;  // ordinal -> index into Topology::gpus
  std::string note;           // why parsing stopped early, or empty
};

// visible_list nullptr: the variable is unset and every GPU is visible. An empty
// string hides every GPU, as it does for CUDA.
VisibleDevices visible_gpus(const std::vector<GpuDevice>& gpus, const std::string* visible_list);

}  // namespace hvd

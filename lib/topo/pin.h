// The runtime's one entry point to pinning: called once by hvd_init on the calling
// thread, then pin_background_thread on the background thread when it starts.
#pragma once

#include <string>

#include "base/error.h"
#include "topo/assign.h"
#include "topo/cpuset.h"
#include "topo/pin_options.h"

namespace hvd {

struct PinResult {
  int device = -1;        // CUDA ordinal made current (hvd_gpu_device), -1: none
  int assigned_gpu = -1;  // ordinal the topology chose, even when no CUDA device exists
  RankPlacement placement;
  CpuSet process_cpus;    // the process was bound to these; empty: not bound
  CpuSet thread_cpus;     // the background thread is to be bound to these; empty: leave
  std::string log;        // one line saying what was chosen and why (log it at Info)
  std::string notes;      // why something was skipped (log it at Debug); may be empty
};

// Reads the topology (HVD_TOPOLOGY_XML or this machine), applies CUDA_VISIBLE_DEVICES,
// assigns GPUs and CPUs to the local_size ranks of this node, makes this rank's GPU
// current (HVD_GPU_PINNING, when CUDA has a device), and binds the process
// (HVD_CPU_BIND). No GPU is not an error. Errors: an unreadable HVD_TOPOLOGY_XML, a
// malformed HOROVOD_THREAD_AFFINITY, a binding the process may not have, a CUDA
// failure on an existing device; out then holds what was decided before it.
Error pin_this_rank(const PinOptions& options, int local_rank, int local_size, PinResult* out);

// On the background thread, first thing: the same current device (CUDA's current
// device is per thread) and the thread binding.
Error pin_background_thread(const PinResult& pin);

// The CPUs this rank's threads have to themselves, on the calling thread after
// pin_this_rank: a bound process's CPUs; else the thread's allowed CPUs, shared with
// the node's other local_size - 1 ranks when they are every CPU online (nothing placed
// the ranks, so they share the machine).
double cpus_per_rank(const PinResult& pin, int local_size);

}  // namespace hvd

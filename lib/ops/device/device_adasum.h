// Adasum (HVD_OP_ADASUM) of device memory: a batch's tensors back to back in a device
// buffer (counts[i] elements of tensor i), combined in place.
//   across nodes (NCCL, the global set; Horovod's GPU Adasum): NCCL sums the buffer
//     within each node (reduce-scatter in equal shards on the local communicator; the
//     tail of fewer than local_size elements by allreduce, taken by the node's last
//     rank beside its shard). Each rank copies its part to pinned host memory and
//     combines it across nodes by VHDD on its cross communicator, the dot products and
//     norms of each tensor summed over the node's ranks too (they hold its other
//     parts); copies it back; NCCL gathers the shards and broadcasts the tail within
//     the node. The result is the Adasum across nodes of the node sums: the caller
//     divides by the ranks per node for the node averages, as Horovod does. Needs equal
//     nodes, a power-of-two number of them.
//   staged (no NCCL, HOROVOD_GPU_OPERATIONS=MPI, a dtype NCCL cannot reduce, a process
//     set other than the global one): the staged backend's Adasum, through pinned host
//     memory, over the set's ranks as host tensors are. Needs a power-of-two set.
// Background thread only; the result is queued on the library stream.
#pragma once

#include <vector>

#include "ops/adasum/adasum_vhdd.h"
#include "ops/device/device_buffer.h"
#include "ops/device/device_context.h"
#include "ops/hier/hier_allreduce.h"

namespace hvd {

class NcclBackend;

class DeviceAdasum {
 public:
  // staged: the host-staged backend (the staged path). nccl: nullptr without NCCL or
  // with HOROVOD_GPU_OPERATIONS=MPI.
  DeviceAdasum(DeviceContext* device, Backend* staged, NcclBackend* nccl,
               TrafficCounters* counters)
      : device_(device), staged_(staged), nccl_(nccl), counters_(counters) {}

  // Whether reduce() combines across nodes for this set and dtype (layout: the job's,
  // for the global set; nullptr otherwise). The same answer on every rank.
  bool across_nodes(const Communicator& set, hvd_dtype_t dtype, const NodeLayout* layout) const;
  // Why reduce() cannot run for this set (nodes unequal or not a power of two, a set
  // whose size is not), or success. The same answer on every rank.
  Error check(const Communicator& set, hvd_dtype_t dtype, const NodeLayout* layout) const;
  Error reduce(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
               const Communicator& set, const NodeLayout* layout);

 private:
  Error nodes(char* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
              const NodeLayout& layout);

  DeviceContext* device_;
  Backend* staged_;
  NcclBackend* nccl_;
  TrafficCounters* counters_;
  AdasumVhdd vhdd_;
  PinnedBuffer host_;
};

}  // namespace hvd

// Hierarchical allreduce of device memory: the device counterpart of
// HierarchicalAllreduce, on the same node layout.
//   NCCL, equal ranks per node: reduce-scatter within the node (NCCL, local
//     communicator); allreduce of this rank's shard across nodes, every local rank in
//     parallel (NCCL on this local rank's cross communicator, or MPI on a copy of the
//     shard in pinned host memory); allgather within the node (NCCL). A count not
//     divisible by the local size leaves a tail of fewer than local_size elements:
//     it is allreduced within the node and then across nodes beside the shard.
//   NCCL, unequal nodes (3 + 1): reduce onto each node's first rank, allreduce among
//     those ranks, broadcast within the node: the host algorithm's fallback.
//   no NCCL, or a dtype NCCL cannot reduce (16-bit integers): the buffer goes through
//     pinned host memory and the host algorithm.
// The NCCL communicators of the local and cross groups are made on first use: every
// rank of the job runs the same hierarchical operations in the same order, so that
// is collective. Bytes are counted where the host algorithm counts them.
// Background thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/device/device_buffer.h"
#include "ops/device/device_context.h"
#include "ops/hier/hier_allreduce.h"

namespace hvd {

class NcclBackend;

// How the cross-node step moves device data when NCCL is there.
enum class CrossTransport { Nccl, Mpi };

class DeviceHierarchicalAllreduce {
 public:
  // host: the host algorithm on the same layout (its layout, and the staged path).
  // nccl: nullptr in builds without NCCL and with HOROVOD_GPU_OPERATIONS=MPI.
  DeviceHierarchicalAllreduce(HierarchicalAllreduce* host, DeviceContext* device,
                              NcclBackend* nccl, TrafficCounters* counters)
      : host_(host), device_(device), nccl_(nccl), counters_(counters) {}

  // Must be equal on every rank (it decides which communicators exist).
  void set_cross_transport(CrossTransport transport) { cross_ = transport; }
  CrossTransport cross_transport() const { return cross_; }
  HierarchicalAllreduce* host() const { return host_; }

  // buffer: count elements of device memory, reduced in place over the whole job
  // (op: SUM, MIN, MAX or PRODUCT). The result is queued on the library stream (the
  // staged steps wait for the device midway): record an event after it.
  Error allreduce(void* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);

 private:
  struct Block {
    char* data;
    int64_t count;
  };
  Error even_nodes(char* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);
  Error leaders(char* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);
  // Reduces the blocks in place over this rank's cross communicator.
  Error cross_allreduce(const std::vector<Block>& blocks, hvd_dtype_t dtype, hvd_reduce_op_t op);
  Error staged(void* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);
  Error ensure_communicators(bool cross);

  HierarchicalAllreduce* host_;
  DeviceContext* device_;
  NcclBackend* nccl_;
  TrafficCounters* counters_;
  CrossTransport cross_ = CrossTransport::Nccl;
  PinnedBuffer staging_;
};

}  // namespace hvd

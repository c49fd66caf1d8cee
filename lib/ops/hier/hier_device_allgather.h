// Hierarchical allgather of device memory: the device counterpart of
// HierarchicalAllgather, on the same layout and node numbering.
//   NCCL: each node's blocks go to its first rank (NCCL sends and receives on the
//     local communicator, straight into their places in the output); those ranks
//     exchange them across nodes (one NCCL group of broadcasts on their cross
//     communicator, one per run of adjacent blocks of a node); each first rank
//     broadcasts the whole output within its node.
//   no NCCL: through pinned host memory and the host algorithm.
// Only one rank per node sends across nodes. Communicators are made on first use,
// collectively (see DeviceHierarchicalAllreduce). Background thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/device/device_buffer.h"
#include "ops/device/device_context.h"
#include "ops/hier/hier_allgather.h"

namespace hvd {

class NcclBackend;

class DeviceHierarchicalAllgather {
 public:
  DeviceHierarchicalAllgather(HierarchicalAllgather* host, DeviceContext* device,
                              NcclBackend* nccl, TrafficCounters* counters)
      : host_(host), device_(device), nccl_(nccl), counters_(counters) {}

  HierarchicalAllgather* host() const { return host_; }
  // Whether these counts can go this way (the staged path has the host algorithm's
  // int byte counts). The same answer on every rank.
  bool fits(const std::vector<int64_t>& counts, hvd_dtype_t dtype) const;

  // Backend::allgatherv's contract over the global set, on device memory: world rank
  // r's counts[r] elements land at displs[r] of recv; send may be recv + displs[me].
  // Queued on the library stream: record an event after it.
  Error allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                   const std::vector<int64_t>& displs, hvd_dtype_t dtype);

 private:
  Error with_nccl(const void* send, char* recv, const std::vector<int64_t>& counts,
                  const std::vector<int64_t>& displs, size_t esize);
  Error staged(const void* send, void* recv, const std::vector<int64_t>& counts,
               const std::vector<int64_t>& displs, hvd_dtype_t dtype);

  HierarchicalAllgather* host_;
  DeviceContext* device_;
  NcclBackend* nccl_;
  TrafficCounters* counters_;
  PinnedBuffer staging_;
};

}  // namespace hvd

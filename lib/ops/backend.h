// One interface for the transports that move tensor data. Algorithms above it
// (fusion, hierarchical) are written once against it; mpi/ serves host memory and
// nccl/ device memory. Implementations count the bytes they send.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/error.h"
#include "core/process_sets.h"
#include "hvd/hvd.h"

namespace hvd {

struct TrafficCounters {
  std::atomic<uint64_t> global_bytes{0};
  std::atomic<uint64_t> local_bytes{0};
  std::atomic<uint64_t> cross_bytes{0};
  std::atomic<uint64_t> collectives{0};
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // recv = reduction of send over the set (send == recv: in place). op is SUM, MIN,
  // MAX or PRODUCT; AVERAGE is SUM plus scaling done by the caller.
  virtual Error allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                          hvd_reduce_op_t op, const ProcessSet& set) = 0;
  // count elements from set rank root to every rank of the set.
  virtual Error broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                          const ProcessSet& set) = 0;
};

}  // namespace hvd

// Device tensors through host memory: each operation copies its input from the
// device into a pinned host buffer on the library stream, waits for it, runs the
// host backend (MPI) there, and queues the copy back. Used when NCCL is absent, when
// HOROVOD_GPU_OPERATIONS=MPI, and for what NCCL cannot reduce (16-bit integers).
//
// Like every device backend, a call returns once the result is queued on the
// library stream: record a DeviceEvent after it to know when it is there.
// Background thread only.
#pragma once

#include "ops/backend.h"
#include "ops/device/device_buffer.h"
#include "ops/device/device_context.h"

namespace hvd {

class StagedBackend : public Backend {
 public:
  StagedBackend(DeviceContext* device, Backend* host) : device_(device), host_(host) {}
  const char* name() const override { return "mpi-staged"; }
  Error allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                  hvd_reduce_op_t op, const Communicator& comm) override;
  Error broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                  const Communicator& comm) override;
  Error allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                   const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                   const Communicator& comm) override;
  Error alltoallv(const void* send, const std::vector<int64_t>& send_counts,
                  const std::vector<int64_t>& send_displs, void* recv,
                  const std::vector<int64_t>& recv_counts,
                  const std::vector<int64_t>& recv_displs, hvd_dtype_t dtype,
                  int64_t largest_count, const Communicator& comm) override;
  Error reducescatter(const void* send, void* recv, const std::vector<int64_t>& counts,
                      hvd_dtype_t dtype, hvd_reduce_op_t op, const Communicator& comm) override;
  Error adasum(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
               const Communicator& comm) override;

 private:
  Error to_host(void* host, const void* device, size_t bytes);
  Error to_device(void* device, const void* host, size_t bytes);
  Error wait();

  DeviceContext* device_;
  Backend* host_;
  PinnedBuffer staging_;
};

}  // namespace hvd

// Device-memory collectives over NCCL, on the library's CUDA stream. One NCCL
// communicator per process set (made collectively, through an MPI broadcast of the
// NCCL unique id on the set's communicator), plus any the runtime adds for the local
// and cross groups. Calls return once the work is queued on the stream: record a
// DeviceEvent after them for completion.
//
// Reductions take uint8, int8, int32, int64, float16, bfloat16, float32, float64 and
// bool (MIN/PRODUCT as logical and, SUM/MAX as logical or); 16-bit integers are
// HVD_ERR_UNSUPPORTED (use the staged backend for them: see supports()). Data
// movement (broadcast, allgather, alltoall) takes every dtype.
//
// Background thread only. This header names no NCCL type; nccl.h stays in this folder.
#pragma once

#include <map>
#include <memory>

#include <mpi.h>

#include "ops/backend.h"
#include "ops/device/device_context.h"

namespace hvd {

class NcclBackend : public Backend {
 public:
  // Keys of the communicators the runtime may add besides process sets (ids >= 0).
  static constexpr int64_t kLocalComm = -1;
  static constexpr int64_t kCrossComm = -2;

  NcclBackend(DeviceContext* device, TrafficCounters* counters);
  ~NcclBackend() override;
  const char* name() const override { return "nccl"; }

  // Whether NCCL can reduce dtype (allreduce, reducescatter).
  static bool supports(hvd_dtype_t dtype);
  // The NCCL library's version code (ncclGetVersion: e.g. 21805 for 2.18.5).
  static int version_code();

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

  // Collective over the set's members (non-members return at once). Sets without a
  // communicator get one on first use as well, since members run the same
  // operations in the same order.
  Error process_set_added(const Communicator& comm) override;
  void process_set_removed(const Communicator& comm) override;

  // ncclCommAbort on every communicator, from the watchdog thread while the background
  // thread is stuck in a collective (the table does not change then). Final.
  void abort_all();

  // A communicator over comm (collective over it), for kLocalComm / kCrossComm.
  Error add_communicator(int64_t key, MPI_Comm comm);
  bool has_communicator(int64_t key) const;
  // add_communicator unless the key has one (collective over comm when it has not).
  Error ensure_communicator(int64_t key, MPI_Comm comm);
  int communicator_size(int64_t key) const;  // 0 without one

  // The operations of the hierarchical algorithms on such a communicator. They count
  // neither bytes nor collectives: the algorithm that composes them does, once.
  Error allreduce_on(int64_t key, const void* send, void* recv, int64_t count,
                     hvd_dtype_t dtype, hvd_reduce_op_t op);
  Error reducescatter_on(int64_t key, const void* send, void* recv,
                         const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                         hvd_reduce_op_t op);
  Error allgatherv_on(int64_t key, const void* send, void* recv,
                      const std::vector<int64_t>& counts, const std::vector<int64_t>& displs,
                      hvd_dtype_t dtype);
  // Reduction of count elements onto root (recv is used on root only; in place when
  // send == recv).
  Error reduce_on(int64_t key, const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                  hvd_reduce_op_t op, int root);
  // Each block goes from its root to the same address range on every other rank, all
  // in one NCCL group (blocks of different roots must not overlap).
  struct BroadcastBlock {
    void* buffer;
    size_t bytes;
    int root;
  };
  Error broadcasts_on(int64_t key, const std::vector<BroadcastBlock>& blocks);
  // Point-to-point transfers in one NCCL group: every send must meet the peer's recv
  // of the same size.
  struct PeerBlock {
    void* buffer;  // read for sends, written for receives
    size_t bytes;
    int peer;
  };
  Error send_recv_on(int64_t key, const std::vector<PeerBlock>& sends,
                     const std::vector<PeerBlock>& recvs);

  // Operations between group_start and group_end go to NCCL as one group (one
  // launch): a grouped allreduce of tensors that were not fused. Groups nest.
  Error group_start();
  Error group_end();

 private:
  struct Comm;
  Error comm_for_set(const Communicator& comm, Comm** out);
  Error comm_for_key(int64_t key, Comm** out);
  Error create(int64_t key, MPI_Comm comm, int rank, int size);

  Error do_allreduce(Comm& c, const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                     hvd_reduce_op_t op, std::atomic<uint64_t>* bytes);
  Error do_allgatherv(Comm& c, const void* send, void* recv, const std::vector<int64_t>& counts,
                      const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                      std::atomic<uint64_t>* bytes);
  Error do_reducescatter(Comm& c, const void* send, void* recv, const std::vector<int64_t>& counts,
                         hvd_dtype_t dtype, hvd_reduce_op_t op, std::atomic<uint64_t>* bytes);

  DeviceContext* device_;
  TrafficCounters* counters_;
  std::map<int64_t, std::unique_ptr<Comm>> comms_;
};

}  // namespace hvd

// Device-memory collectives over NCCL, on the library's CUDA stream. One NCCL
// communicator per process set (made collectively by the set's first collective,
// through an MPI broadcast of the NCCL unique id on the set's communicator), plus any
// the runtime adds for the local and cross groups. Calls return once the work is
// queued on the stream: record a DeviceEvent after them for completion.
//
// NCCL itself is loaded when the first communicator is made (nccl_loader.h); until
// then nothing here touches it, and a failure to load is every rank's HVD_ERR_NCCL.
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
#include <string>

#include <mpi.h>

#include "ops/backend.h"
#include "ops/device/device_context.h"

namespace hvd {

struct NcclApi;

class NcclBackend : public Backend {
 public:
  // Keys of the communicators the runtime may add besides process sets (ids >= 0).
  static constexpr int64_t kLocalComm = -1;
  static constexpr int64_t kCrossComm = -2;

  // nccl_library: HVD_NCCL_LIBRARY ("" when unset), where NCCL is loaded from when no
  // NCCL is in the process yet.
  NcclBackend(DeviceContext* device, TrafficCounters* counters, std::string nccl_library);
  ~NcclBackend() override;
  const char* name() const override { return "nccl"; }

  // Whether NCCL can reduce dtype (allreduce, reducescatter).
  static bool supports(hvd_dtype_t dtype);
  // The NCCL version code (ncclGetVersion: e.g. 21805 for 2.18.5) of the NCCL in the
  // process, else of the headers libhvd was built with. Loads nothing.
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

  // Makes nothing: a set's communicator is made by its first collective, collectively
  // over its members, since members run the same operations in the same order.
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
  // Loads NCCL on first use (api_); HVD_ERR_NCCL saying why when it cannot.
  Error load();
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
  std::string nccl_library_;
  const NcclApi* api_ = nullptr;  // set by load(); every communicator implies it
  std::map<int64_t, std::unique_ptr<Comm>> comms_;
};

}  // namespace hvd

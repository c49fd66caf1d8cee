// Everything the executor needs for device tensors on one GPU, behind one object:
// the device context (library stream, events), the backend choice (NCCL, or host-
// staged MPI when NCCL is absent, for HOROVOD_GPU_OPERATIONS=MPI, and for dtypes NCCL
// cannot reduce), the device fusion buffer and the batched copy kernel.
//
// Per operation: begin(streams) orders the library stream after the callers'
// streams; the collective is queued (allreduce() below does fusion and scaling
// itself; other ops call backend_for(...) directly); finish(&event) records
// completion. Background thread only, except the events it hands out.
#pragma once

#include <memory>
#include <vector>

#include "ops/backend.h"
#include "ops/device/batched_copy.h"
#include "ops/device/device_adasum.h"
#include "ops/device/device_buffer.h"
#include "ops/device/device_context.h"
#include "ops/device/gpu_operations.h"
#include "ops/hier/hier_device_allgather.h"
#include "ops/hier/hier_device_allreduce.h"

namespace hvd {

class NcclBackend;
class StagedBackend;

struct DeviceTensor {
  const void* send;  // nullptr: this rank contributes zeros (a joined rank)
  void* recv;        // may equal send; nullptr when send is
  int64_t count;
};

// One tensor of a device reducescatter: counts[q] elements of send (consecutive, in
// rank order) are reduced into set rank q's recv.
struct DeviceScatterTensor {
  const void* send;
  void* recv;  // may equal send
  std::vector<int64_t> counts;
};

class DeviceEngine {
 public:
  // Makes device current and builds the backends. host is the MPI backend used for
  // staging; it and counters outlive the engine. HOROVOD_GPU_OPERATIONS=NCCL in a
  // build without NCCL is HVD_ERR_UNSUPPORTED; no device is HVD_ERR_CUDA. NCCL is not
  // loaded here but by the first collective that needs it, from nccl_library
  // (HVD_NCCL_LIBRARY) when no NCCL is in the process by then.
  static Error create(int device, GpuOperations mode, const std::string& nccl_library,
                      Backend* host, TrafficCounters* counters,
                      std::unique_ptr<DeviceEngine>* out);
  ~DeviceEngine();

  DeviceContext& context() { return *context_; }
  BatchedCopier& copier() { return *copier_; }
  DeviceBuffer& fusion_buffer() { return *fusion_; }
  // "nccl" or "mpi-staged" and why.
  const std::string& description() const { return description_; }

  // The backend for one device operation; reduction: allreduce or reducescatter.
  Backend& backend_for(hvd_dtype_t dtype, bool reduction);

  // Collective hooks, forwarded to the NCCL backend (communicator per set).
  Error process_set_added(const Communicator& comm);
  void process_set_removed(const Communicator& comm);
  NcclBackend* nccl() { return nccl_.get(); }  // nullptr without NCCL (hierarchical use)
  // The operation watchdog's last act, on its own thread while the background thread
  // is stuck in a collective: aborts every NCCL communicator so that the kernels
  // waiting on a lost peer end. The engine is unusable afterwards.
  void abort_communicators();

  // The library stream waits for each caller stream (nullptr: the default stream).
  Error begin(const std::vector<void*>& caller_streams);
  // An event for completion of everything queued so far.
  Error finish(DeviceEvent* done);

  // Allreduce of one tensor, or of several fused through the fusion buffer with one
  // copy kernel launch each way: prescale on the way in, AVERAGE's division and
  // postscale on the way out. op may be AVERAGE. Queued only: call finish().
  // hier (global set only; nullptr: flat): reduce with the hierarchical algorithm on
  // its node layout (DeviceHierarchicalAllreduce).
  Error allreduce(const std::vector<DeviceTensor>& tensors, hvd_dtype_t dtype,
                  hvd_reduce_op_t op, double prescale, double postscale, const Communicator& comm,
                  HierarchicalAllreduce* hier = nullptr);

  // HVD_OP_ADASUM of one tensor or several, fused through the fusion buffer with
  // prescale on the way in and postscale on the way out (DeviceAdasum; with NCCL and
  // the global set, the node sums are combined across nodes and divided by the ranks
  // per node, as Horovod's GPU Adasum). layout: the job's node layout for the global
  // set, nullptr otherwise. Queued only.
  Error adasum(const std::vector<DeviceTensor>& tensors, hvd_dtype_t dtype, double prescale,
               double postscale, const Communicator& set, const NodeLayout* layout);

  // Reducescatter of one tensor, or of several fused through the fusion buffer (one
  // copy kernel launch each way, ranks' blocks interleaved as the host path does);
  // scaling and AVERAGE as for allreduce. In place (send == recv) goes through the
  // fusion buffer too: NCCL's in-place layout is not the caller's. Queued only.
  Error reducescatter(const std::vector<DeviceScatterTensor>& tensors, hvd_dtype_t dtype,
                      hvd_reduce_op_t op, double prescale, double postscale, const Communicator& comm);

  // The device version of a host hierarchical allgather (made on first use), for
  // the global set: check fits(), then allgatherv().
  DeviceHierarchicalAllgather& hierarchical_allgather(HierarchicalAllgather* host);
  // How hierarchical allreduces cross nodes when NCCL is used (default NCCL); equal
  // on every rank.
  void set_hierarchical_cross(CrossTransport transport);

 private:
  // A set of one rank: the reduction is the identity, so each tensor is copied to its
  // output and scaled, in at most two launches and no fusion buffer.
  Error allreduce_alone(const std::vector<DeviceTensor>& tensors, hvd_dtype_t dtype,
                        double prescale, double postscale);
  DeviceEngine() = default;
  // Reserves the fusion buffer for the tensors back to back (*total elements), queues
  // zeros for a member without data (a joined rank), and lists the copies in and out.
  Error lay_out_in_fusion_buffer(const std::vector<DeviceTensor>& tensors, size_t esize,
                                 int64_t* total, std::vector<CopyItem>* in,
                                 std::vector<CopyItem>* out);
  std::unique_ptr<DeviceContext> context_;
  std::unique_ptr<BatchedCopier> copier_;
  std::unique_ptr<DeviceBuffer> fusion_;
  std::unique_ptr<StagedBackend> staged_;
  std::unique_ptr<NcclBackend> nccl_;
  std::unique_ptr<DeviceHierarchicalAllreduce> hier_allreduce_;
  std::unique_ptr<DeviceHierarchicalAllgather> hier_allgather_;
  std::unique_ptr<DeviceAdasum> adasum_;
  CrossTransport hier_cross_ = CrossTransport::Nccl;
  TrafficCounters* counters_ = nullptr;
  std::string description_;
};

}  // namespace hvd

#include "ops/device/device_engine.h"

#include <algorithm>

#include "base/dtype.h"
#include "hvd_build_config.h"
#include "ops/device/order_key.h"
#include "ops/device/staged_backend.h"

#if HVD_HAVE_NCCL
#include "ops/nccl/nccl_backend.h"
#endif
#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "ops/device/cuda_check.h"
#endif

namespace hvd {

// NcclBackend is incomplete here in builds without NCCL; the unique_ptr then only
// ever holds nullptr, and this deleter is never reached with an object.
#if !HVD_HAVE_NCCL
class NcclBackend : public Backend {};
#endif

DeviceEngine::~DeviceEngine() {
  if (context_) context_->synchronize();
  hier_allreduce_.reset();
  hier_allgather_.reset();
  adasum_.reset();
  nccl_.reset();
  staged_.reset();
  fusion_.reset();
  copier_.reset();
}

Error DeviceEngine::create(int device, GpuOperations mode, const std::string& nccl_library,
                           Backend* host, TrafficCounters* counters,
                           std::unique_ptr<DeviceEngine>* out) {
#if !HVD_HAVE_NCCL
  if (mode == GpuOperations::Nccl)
    return make_error(HVD_ERR_UNSUPPORTED,
                      "HOROVOD_GPU_OPERATIONS=NCCL, but this build of libhvd has no NCCL");
#endif
  std::unique_ptr<DeviceEngine> e(new DeviceEngine());
  Error err = DeviceContext::create(device, &e->context_);
  if (!err.ok()) return err;
  e->copier_ = std::make_unique<BatchedCopier>(e->context_->stream());
  e->fusion_ = std::make_unique<DeviceBuffer>(e->context_->stream());
  e->staged_ = std::make_unique<StagedBackend>(e->context_.get(), host);
  e->counters_ = counters;
#if HVD_HAVE_NCCL
  if (mode != GpuOperations::Mpi) {
    e->nccl_ = std::make_unique<NcclBackend>(e->context_.get(), counters, nccl_library);
    e->description_ = "nccl on CUDA device " + std::to_string(device);
  } else {
    e->description_ = "mpi-staged on CUDA device " + std::to_string(device) + " (HOROVOD_GPU_OPERATIONS=MPI)";
  }
#else
  (void)nccl_library;
  e->description_ = "mpi-staged on CUDA device " + std::to_string(device) + " (built without NCCL)";
#endif
  *out = std::move(e);
  return Error::success();
}

Backend& DeviceEngine::backend_for(hvd_dtype_t dtype, bool reduction) {
#if HVD_HAVE_NCCL
  if (nccl_ && (!reduction || NcclBackend::supports(dtype))) return *nccl_;
#else
  (void)dtype;
  (void)reduction;
#endif
  return *staged_;
}

Error DeviceEngine::process_set_added(const Communicator& comm) {
  return nccl_ ? nccl_->process_set_added(comm) : Error::success();
}

void DeviceEngine::abort_communicators() {
#if HVD_HAVE_NCCL
  if (nccl_) nccl_->abort_all();
#endif
}

void DeviceEngine::process_set_removed(const Communicator& comm) {
  if (nccl_) nccl_->process_set_removed(comm);
}

Error DeviceEngine::begin(const std::vector<void*>& caller_streams) {
  std::vector<void*> seen;
  for (void* s : caller_streams) {
    if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
    seen.push_back(s);
    Error err = context_->wait_for(s);
    if (!err.ok()) return err;
  }
  return Error::success();
}

Error DeviceEngine::finish(DeviceEvent* done) { return context_->record(done); }

DeviceHierarchicalAllgather& DeviceEngine::hierarchical_allgather(HierarchicalAllgather* host) {
  if (!hier_allgather_ || hier_allgather_->host() != host)
    hier_allgather_ = std::make_unique<DeviceHierarchicalAllgather>(host, context_.get(), nccl_.get(),
                                                                    counters_);
  return *hier_allgather_;
}

void DeviceEngine::set_hierarchical_cross(CrossTransport transport) {
  hier_cross_ = transport;
  if (hier_allreduce_) hier_allreduce_->set_cross_transport(transport);
}

Error DeviceEngine::lay_out_in_fusion_buffer(const std::vector<DeviceTensor>& tensors, size_t esize,
                                             int64_t* total, std::vector<CopyItem>* in,
                                             std::vector<CopyItem>* out) {
  *total = 0;
  for (const DeviceTensor& t : tensors) *total += t.count;
  HVD_RETURN_IF_ERROR(fusion_->reserve(static_cast<size_t>(*total) * esize));
  char* buffer = static_cast<char*>(fusion_->data());
  int64_t offset = 0;
  for (const DeviceTensor& t : tensors) {
    char* slot = buffer + offset * static_cast<int64_t>(esize);
    if (t.send) {
      in->push_back({t.send, slot, t.count});
      out->push_back({slot, t.recv, t.count});
    } else {
#if HVD_HAVE_CUDA
      HVD_CUDA_CHECK(cudaMemsetAsync(slot, 0, static_cast<size_t>(t.count) * esize,
                                     static_cast<cudaStream_t>(context_->stream())));
#endif
    }
    offset += t.count;
  }
  return Error::success();
}

Error DeviceEngine::allreduce(const std::vector<DeviceTensor>& tensors, hvd_dtype_t dtype,
                              hvd_reduce_op_t op, double prescale, double postscale,
                              const Communicator& comm, HierarchicalAllreduce* hier) {
  if (tensors.empty()) return Error::success();
  const hvd_reduce_op_t transport = op == HVD_OP_AVERAGE ? HVD_OP_SUM : op;
  const int divisor = op == HVD_OP_AVERAGE ? comm.size : 1;
  const bool scale_out = divisor > 1 || postscale != 1.0;
  const size_t esize = dtype_size(dtype);
  if (hier && (!hier_allreduce_ || hier_allreduce_->host() != hier)) {
    hier_allreduce_ = std::make_unique<DeviceHierarchicalAllreduce>(hier, context_.get(), nccl_.get(),
                                                                    counters_);
    hier_allreduce_->set_cross_transport(hier_cross_);
  }
  if (comm.size == 1 && !hier) return allreduce_alone(tensors, dtype, prescale, postscale);
  // MIN and MAX of floats travel as integer keys (ops/device/order_key.h): NCCL's own
  // drop NaN. 16-bit keys have no NCCL type: they take the flat host-staged path.
  const hvd_dtype_t wire = order_key_kernel_available() ? order_key_dtype(dtype, transport) : dtype;
  const bool keyed = wire != dtype;
#if HVD_HAVE_NCCL
  if (keyed && !NcclBackend::supports(wire)) hier = nullptr;
#endif
  Backend& flat = backend_for(wire, true);
  auto keys = [&](void* data, int64_t count, bool to_keys) -> Error {
    const int rc = launch_order_keys(data, count, dtype, transport == HVD_OP_MIN, to_keys,
                                     context_->stream());
#if HVD_HAVE_CUDA
    HVD_CUDA_CHECK(static_cast<cudaError_t>(rc));
#else
    if (rc != 0) return make_error(HVD_ERR_CUDA, "the order key kernel failed (%d)", rc);
#endif
    return Error::success();
  };
  // recv = the reduction of send (both device memory; may be equal).
  auto reduce = [&](const void* send, void* recv, int64_t count) -> Error {
    if (keyed) {  // the keys are made in recv: the caller's send stays as it was
      if (send != recv) HVD_RETURN_IF_ERROR(context_->copy(recv, send, static_cast<size_t>(count) * esize));
      HVD_RETURN_IF_ERROR(keys(recv, count, true));
      send = recv;
    }
    Error err;
    if (!hier) {
      err = flat.allreduce(send, recv, count, wire, transport, comm);
    } else {
      if (send != recv) err = context_->copy(recv, send, static_cast<size_t>(count) * esize);
      if (err.ok()) err = hier_allreduce_->allreduce(recv, count, wire, transport);
    }
    if (!err.ok() || !keyed) return err;
    return keys(recv, count, false);
  };

  if (tensors.size() == 1 && tensors[0].send) {
    const DeviceTensor& t = tensors[0];
    const void* src = t.send;
    if (prescale != 1.0) {
      Error err = copier_->copy({{t.send, t.recv, t.count}}, dtype, prescale, 1);
      if (!err.ok()) return err;
      src = t.recv;
    }
    Error err = reduce(src, t.recv, t.count);
    if (!err.ok() || !scale_out) return err;
    return copier_->copy({{t.recv, t.recv, t.count}}, dtype, postscale, divisor);
  }

  int64_t total = 0;
  std::vector<CopyItem> in, out;
  Error err = lay_out_in_fusion_buffer(tensors, esize, &total, &in, &out);
  if (!err.ok()) return err;
  char* buffer = static_cast<char*>(fusion_->data());
  err = copier_->copy(in, dtype, prescale, 1);
  if (!err.ok()) return err;
  err = reduce(buffer, buffer, total);
  if (!err.ok()) return err;
  return copier_->copy(out, dtype, postscale, divisor);
}

Error DeviceEngine::allreduce_alone(const std::vector<DeviceTensor>& tensors, hvd_dtype_t dtype,
                                    double prescale, double postscale) {
  // The same two roundings as with peers: the prescaled operand, then the result
  // postscaled (an average over one rank divides by one).
  std::vector<CopyItem> operand, result;
  for (const DeviceTensor& t : tensors) {
    if (!t.send) continue;  // this rank joined: nobody receives the result
    if (prescale != 1.0 || t.send != t.recv) operand.push_back({t.send, t.recv, t.count});
    if (postscale != 1.0) result.push_back({t.recv, t.recv, t.count});
  }
  if (!operand.empty()) HVD_RETURN_IF_ERROR(copier_->copy(operand, dtype, prescale, 1));
  if (!result.empty()) HVD_RETURN_IF_ERROR(copier_->copy(result, dtype, postscale, 1));
  if (counters_) counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return Error::success();
}

Error DeviceEngine::adasum(const std::vector<DeviceTensor>& tensors, hvd_dtype_t dtype, double prescale,
                           double postscale, const Communicator& set, const NodeLayout* layout) {
  if (tensors.empty()) return Error::success();
  if (!adasum_) adasum_ = std::make_unique<DeviceAdasum>(context_.get(), staged_.get(), nccl_.get(), counters_);
  HVD_RETURN_IF_ERROR(adasum_->check(set, dtype, layout));
  if (adasum_->across_nodes(set, dtype, layout)) postscale /= layout->local_size;
  const size_t esize = dtype_size(dtype);
  std::vector<int64_t> counts;
  for (const DeviceTensor& t : tensors) counts.push_back(t.count);
  // Always through the fusion buffer: the combination happens on the host or in
  // NCCL's shards, and a copy on the device is cheap beside either. A joined rank's
  // zeros are left out by Adasum.
  int64_t total = 0;
  std::vector<CopyItem> in, out;
  HVD_RETURN_IF_ERROR(lay_out_in_fusion_buffer(tensors, esize, &total, &in, &out));
  char* buffer = static_cast<char*>(fusion_->data());
  HVD_RETURN_IF_ERROR(copier_->copy(in, dtype, prescale, 1));
  HVD_RETURN_IF_ERROR(adasum_->reduce(buffer, counts, dtype, set, layout));
  return copier_->copy(out, dtype, postscale, 1);
}

Error DeviceEngine::reducescatter(const std::vector<DeviceScatterTensor>& tensors, hvd_dtype_t dtype,
                                  hvd_reduce_op_t op, double prescale, double postscale,
                                  const Communicator& comm) {
  if (tensors.empty()) return Error::success();
  const hvd_reduce_op_t transport = op == HVD_OP_AVERAGE ? HVD_OP_SUM : op;
  const int divisor = op == HVD_OP_AVERAGE ? comm.size : 1;
  const bool scale_out = divisor > 1 || postscale != 1.0;
  const int size = comm.size;
  const int me = comm.rank;
  const size_t esize = dtype_size(dtype);
  Backend& backend = backend_for(dtype, true);

  const DeviceScatterTensor& first = tensors[0];
  if (tensors.size() == 1 && prescale == 1.0 && first.send != first.recv) {
    Error err = backend.reducescatter(first.send, first.recv, first.counts, dtype, transport, comm);
    if (!err.ok() || !scale_out) return err;
    const int64_t mine = first.counts[static_cast<size_t>(me)];
    return copier_->copy({{first.recv, first.recv, mine}}, dtype, postscale, divisor);
  }

  // The buffer: every rank's block (each holding that rank's rows of every tensor,
  // tensor after tensor), then room for this rank's reduced block.
  std::vector<int64_t> block(static_cast<size_t>(size), 0);
  for (const DeviceScatterTensor& t : tensors)
    for (int q = 0; q < size; ++q) block[static_cast<size_t>(q)] += t.counts[static_cast<size_t>(q)];
  int64_t total = 0;
  for (int64_t b : block) total += b;
  Error err = fusion_->reserve(static_cast<size_t>(total + block[static_cast<size_t>(me)]) * esize);
  if (!err.ok()) return err;
  char* buffer = static_cast<char*>(fusion_->data());
  char* mine = buffer + total * static_cast<int64_t>(esize);

  std::vector<CopyItem> in, out;
  std::vector<int64_t> read(tensors.size(), 0);  // elements of tensor k placed so far
  int64_t offset = 0;
  for (int q = 0; q < size; ++q) {
    for (size_t k = 0; k < tensors.size(); ++k) {
      const int64_t n = tensors[k].counts[static_cast<size_t>(q)];
      if (n > 0)
        in.push_back({static_cast<const char*>(tensors[k].send) + read[k] * static_cast<int64_t>(esize),
                      buffer + offset * static_cast<int64_t>(esize), n});
      read[k] += n;
      offset += n;
    }
  }
  offset = 0;
  for (const DeviceScatterTensor& t : tensors) {
    const int64_t n = t.counts[static_cast<size_t>(me)];
    if (n > 0) out.push_back({mine + offset * static_cast<int64_t>(esize), t.recv, n});
    offset += n;
  }
  err = copier_->copy(in, dtype, prescale, 1);
  if (!err.ok()) return err;
  err = backend.reducescatter(buffer, mine, block, dtype, transport, comm);
  if (!err.ok()) return err;
  return copier_->copy(out, dtype, postscale, divisor);
}

}  // namespace hvd

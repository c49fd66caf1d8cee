// Batches of device tensors: the device engine orders its stream after the callers'
// streams, runs the collective (NCCL, or host-staged MPI) and the fusion kernel, and
// the batch completes when the recorded event has. Allreduce and allgather of the
// global set take the hierarchical algorithms when the negotiated choice says so,
// exactly as host tensors do.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "base/dtype.h"
#include "execute/execute.h"
#include "ops/device/device_engine.h"

namespace hvd {

namespace {

Error device_output(const Request& r, size_t bytes, void** out) {
  if (!r.allocator)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "tensor '%s': a device %s output of negotiated size needs an allocator "
                      "in the options (hvd_free releases host memory only)",
                      r.name.c_str(), op_type_name(r.spec.op));
  return allocate_output(r, bytes, out);
}

// The timeline's name of a device collective, as Horovod's: NCCL_ALLREDUCE when NCCL
// runs it, MPI_ALLREDUCE when it is staged through host memory.
std::string device_activity(const Backend& backend, const char* op) {
  return std::string(std::strcmp(backend.name(), "nccl") == 0 ? "NCCL_" : "MPI_") + op;
}

}  // namespace

Error Executor::dispatch_device(const Batch& batch, const std::vector<Response>& responses,
                                const std::vector<Request*>& locals, const ProcessSet& set) {
  if (!device_)
    return make_error(HVD_ERR_CUDA, "tensor '%s' is in device memory, but %s",
                      responses[batch.items.front()].name.c_str(), device_error_.c_str());
  DeviceEngine& engine = *device_;
  const Communicator comm = set.communicator();
  const Response& first = responses[batch.items.front()];
  const TensorSpec& spec = first.spec;
  std::vector<void*> streams;
  for (Request* local : locals)
    if (local) streams.push_back(local->stream);
  Error err = engine.begin(streams);
  if (!err.ok()) return err;
  engine.copier().timer().enable(time_copies_);

  std::vector<void*> outputs;  // allocated here: freed by nobody on failure (allocator's)
  switch (spec.op) {
    case OpType::Allreduce: {
      std::vector<DeviceTensor> tensors;
      for (size_t k = 0; k < batch.items.size(); ++k) {
        const int64_t count = responses[batch.items[k]].spec.num_elements();
        tensors.push_back(locals[k] ? DeviceTensor{locals[k]->send, locals[k]->recv, count}
                                    : DeviceTensor{nullptr, nullptr, count});
      }
      if (spec.reduce_op == HVD_OP_ADASUM) {
        activity_start("ADASUM_ALLREDUCE");
        err = engine.adasum(tensors, spec.dtype, spec.prescale, spec.postscale, comm,
                            set.id == 0 && hier_ ? &hier_->layout() : nullptr);
        activity_end();
        break;
      }
      // The same choice as for host tensors: from parameters equal on every rank.
      HierarchicalAllreduce* hier =
          hierarchical_allreduce(set) ? hier_ : nullptr;
      activity_start(hier ? "HIERARCHICAL_ALLREDUCE"
                          : device_activity(engine.backend_for(spec.dtype, true), "ALLREDUCE").c_str());
      err = engine.allreduce(tensors, spec.dtype, spec.reduce_op, spec.prescale, spec.postscale, comm,
                             hier);
      activity_end();
      break;
    }
    case OpType::Broadcast: {
      int root = 0;
      err = broadcast_root(responses[batch.items.front()], set, &root);
      if (!err.ok()) break;
      Backend& backend = engine.backend_for(spec.dtype, false);
      activity_start(device_activity(backend, "BCAST").c_str());
      err = backend.broadcast(locals[0]->recv, spec.num_elements(), spec.dtype, root, comm);
      activity_end();
      break;
    }
    case OpType::Reducescatter: {
      std::vector<DeviceScatterTensor> tensors;
      for (size_t k = 0; k < batch.items.size(); ++k)
        tensors.push_back({locals[k]->send, locals[k]->recv,
                           reducescatter_counts(responses[batch.items[k]].spec, set.size())});
      err = engine.reducescatter(tensors, spec.dtype, spec.reduce_op, spec.prescale, spec.postscale, comm);
      break;
    }
    case OpType::Allgather:
      for (size_t k = 0; k < batch.items.size() && err.ok(); ++k) {
        const Response& r = responses[batch.items[k]];
        const int64_t row = r.spec.row_elements();
        std::vector<int64_t> counts;
        for (int64_t rows : r.per_rank) counts.push_back(rows * row);
        int64_t total = 0;
        for (int64_t c : counts) total += c;
        void* out = nullptr;
        err = device_output(*locals[k], static_cast<size_t>(total) * dtype_size(r.spec.dtype), &out);
        if (!err.ok()) break;
        outputs.push_back(out);
        if (hierarchical_allgather(set) &&
            engine.hierarchical_allgather(hier_ag_).fits(counts, r.spec.dtype)) {
          activity_start("HIERARCHICAL_ALLGATHER");
          err = engine.hierarchical_allgather(hier_ag_)
                    .allgatherv(locals[k]->send, out, counts, displacements(counts), r.spec.dtype);
        } else {
          activity_start(device_activity(engine.backend_for(r.spec.dtype, false), "ALLGATHER").c_str());
          err = engine.backend_for(r.spec.dtype, false)
                    .allgatherv(locals[k]->send, out, counts, displacements(counts), r.spec.dtype, comm);
        }
        activity_end();
      }
      break;
    case OpType::Alltoall: {
      const int size = set.size(), me = set.my_set_rank;
      const int64_t row = spec.row_elements();
      std::vector<int64_t> send_counts(size), recv_counts(size);
      int64_t largest_count = 0;
      for (int64_t rows : first.per_rank) largest_count = std::max(largest_count, rows * row);
      for (int q = 0; q < size; ++q) {
        send_counts[q] = first.per_rank[static_cast<size_t>(me) * size + q] * row;
        recv_counts[q] = first.per_rank[static_cast<size_t>(q) * size + me] * row;
      }
      int64_t total = 0;
      for (int64_t c : recv_counts) total += c;
      void* out = nullptr;
      err = device_output(*locals[0], static_cast<size_t>(total) * dtype_size(spec.dtype), &out);
      if (!err.ok()) break;
      outputs.push_back(out);
      Backend& backend = engine.backend_for(spec.dtype, false);
      activity_start(device_activity(backend, "ALLTOALL").c_str());
      err = backend.alltoallv(locals[0]->send, send_counts, displacements(send_counts), out, recv_counts,
                              displacements(recv_counts), spec.dtype, largest_count, comm);
      activity_end();
      break;
    }
    default:
      err = make_error(HVD_ERR_UNSUPPORTED, "%s has no device version", op_type_name(spec.op));
      break;
  }
  if (!err.ok()) return err;
  auto done = std::make_shared<DeviceEvent>();
  err = engine.finish(done.get());
  if (!err.ok()) return err;
  // Frameworks may order their streams after the result now (hvd_stream_wait); the
  // handle itself completes when the device has finished.
  for (Request* local : locals)
    if (local && local->handle)
      local->handle->publish_stream_waiter(
          [done](void* stream) { return done->make_stream_wait(stream); });
  err = done->synchronize();
  if (!err.ok()) return err;
  // The fusion copies ran on the GPU: step accounting takes their time from its clock.
  if (time_copies_) copy_ns_ += engine.copier().timer().take_ns();

  // Outputs of negotiated size: pointers and row counts back to the caller.
  if (spec.op == OpType::Allgather) {
    for (size_t k = 0; k < batch.items.size(); ++k) {
      const Response& r = responses[batch.items[k]];
      *locals[k]->out_buffer = outputs[k];
      int64_t rows = 0;
      for (int64_t x : r.per_rank) rows += x;
      if (locals[k]->out_dim0) *locals[k]->out_dim0 = rows;
      if (locals[k]->out_per_rank)
        std::memcpy(locals[k]->out_per_rank, r.per_rank.data(), r.per_rank.size() * sizeof(int64_t));
    }
  } else if (spec.op == OpType::Alltoall) {
    const int size = set.size(), me = set.my_set_rank;
    int64_t rows = 0;
    for (int q = 0; q < size; ++q) {
      int64_t got = first.per_rank[static_cast<size_t>(q) * size + me];
      if (locals[0]->out_per_rank) locals[0]->out_per_rank[q] = got;
      rows += got;
    }
    *locals[0]->out_buffer = outputs[0];
    if (locals[0]->out_dim0) *locals[0]->out_dim0 = rows;
  }
  return Error::success();
}

}  // namespace hvd

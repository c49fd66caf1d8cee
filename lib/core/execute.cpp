#include "core/execute.h"

#include <cstring>

#include "core/dtype.h"
#include "core/log.h"
#include "fusion/scale.h"

namespace hvd {

namespace {

hvd_reduce_op_t transport_op(hvd_reduce_op_t op) {
  return op == HVD_OP_AVERAGE ? HVD_OP_SUM : op;
}

int divisor_of(const TensorSpec& spec, const ProcessSet& set) {
  return spec.reduce_op == HVD_OP_AVERAGE ? set.size() : 1;
}

}  // namespace

void* Executor::scratch(size_t bytes, bool zero) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  if (zero) std::memset(scratch_.data(), 0, bytes);
  return scratch_.data();
}

void Executor::run(const Batch& batch, const std::vector<Response>& responses,
                   Controller& controller) {
  const Response& first = responses[batch.items.front()];
  auto set = sets_->find(first.spec.process_set);
  std::vector<Request*> locals;
  for (size_t i : batch.items) locals.push_back(controller.find_local(responses[i].key));

  Error result;
  if (!first.error.ok()) {
    result = first.error;
  } else if (!set || !set->member()) {
    return;  // not ours: the members run it
  } else if (first.spec.device != HVD_DEVICE_CPU) {
    result = make_error(HVD_ERR_UNSUPPORTED,
                        "tensor '%s' is in device memory, and this build of libhvd has no "
                        "device backend enabled",
                        first.name.c_str());
  } else {
    switch (first.spec.op) {
      case OpType::Allreduce:
        result = batch.fused ? allreduce_fused(batch, responses, locals, *set)
                             : allreduce_single(first, locals[0], *set);
        break;
      case OpType::Broadcast:
        result = broadcast(first, locals[0], *set);
        break;
      default:
        result = make_error(HVD_ERR_UNSUPPORTED, "%s is not supported by this version of libhvd",
                            op_type_name(first.spec.op));
        break;
    }
  }
  for (size_t k = 0; k < batch.items.size(); ++k) {
    Request request;
    if (controller.take_local(responses[batch.items[k]].key, &request))
      complete_(std::move(request), result);
  }
}

Error Executor::allreduce_single(const Response& r, Request* local, const ProcessSet& set) {
  const TensorSpec& spec = r.spec;
  const int64_t count = spec.num_elements();
  const size_t bytes = static_cast<size_t>(count) * dtype_size(spec.dtype);
  // A member without a request (a joined rank) contributes zeros into scratch memory.
  const void* send = local ? local->send : scratch(bytes, true);
  void* recv = local ? local->recv : const_cast<void*>(send);
  if (spec.prescale != 1.0) {
    copy_scaled(recv, send, count, spec.dtype, spec.prescale);
    send = recv;
  }
  Error err = host_->allreduce(send, recv, count, spec.dtype, transport_op(spec.reduce_op), set);
  if (!err.ok()) return err;
  int divisor = divisor_of(spec, set);
  if (divisor > 1 || spec.postscale != 1.0)
    copy_averaged(recv, recv, count, spec.dtype, divisor, spec.postscale);
  return Error::success();
}

Error Executor::allreduce_fused(const Batch& batch, const std::vector<Response>& responses,
                                const std::vector<Request*>& locals, const ProcessSet& set) {
  const TensorSpec& spec = responses[batch.items.front()].spec;
  const size_t esize = dtype_size(spec.dtype);
  if (fusion_buffer_.size() < static_cast<size_t>(batch.bytes))
    fusion_buffer_.resize(static_cast<size_t>(batch.bytes));
  unsigned char* buffer = fusion_buffer_.data();

  size_t offset = 0;
  for (size_t k = 0; k < batch.items.size(); ++k) {
    const int64_t count = responses[batch.items[k]].spec.num_elements();
    const size_t bytes = static_cast<size_t>(count) * esize;
    if (locals[k])
      copy_scaled(buffer + offset, locals[k]->send, count, spec.dtype, spec.prescale);
    else
      std::memset(buffer + offset, 0, bytes);
    offset += bytes;
  }
  const int64_t total = static_cast<int64_t>(offset / esize);
  Error err = host_->allreduce(buffer, buffer, total, spec.dtype, transport_op(spec.reduce_op), set);
  if (!err.ok()) return err;
  const int divisor = divisor_of(spec, set);
  offset = 0;
  for (size_t k = 0; k < batch.items.size(); ++k) {
    const int64_t count = responses[batch.items[k]].spec.num_elements();
    if (locals[k])
      copy_averaged(locals[k]->recv, buffer + offset, count, spec.dtype, divisor, spec.postscale);
    offset += static_cast<size_t>(count) * esize;
  }
  return Error::success();
}

Error Executor::broadcast(const Response& r, Request* local, const ProcessSet& set) {
  const int64_t count = r.spec.num_elements();
  void* buffer = local ? local->recv : scratch(static_cast<size_t>(count) * dtype_size(r.spec.dtype), false);
  return host_->broadcast(buffer, count, r.spec.dtype, r.spec.root, set);
}

}  // namespace hvd

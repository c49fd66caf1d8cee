// A fused host allreduce reduced where its tensors are: the backend's ring reads the
// operand and writes the results through the callbacks below, part by part of each
// tensor, with the prescale folded into what it reads and the average and postscale
// into what it writes. No fusion buffer, no copy of the whole batch in or out.
#include <cstring>

#include "base/dtype.h"
#include "execute/execute.h"
#include "fusion/scale.h"

namespace hvd {

Error Executor::allreduce_fused_ring(const Batch& batch, const std::vector<Response>& responses,
                                     const std::vector<Request*>& locals, const ProcessSet& set,
                                     bool* taken) {
  const Communicator comm = set.communicator();
  // Equal on every rank: the batch, the set and the agreed parameters. A batch of one
  // tensor (alone above the threshold) has nothing to copy: it stays on its path; so
  // does a batch of empty tensors, which has nothing to send.
  *taken = batch.fused && batch.bytes > 0 && fused_ring_ && fused_ring_(set.id, batch.bytes) &&
           host_->reduces_scattered(comm.size);
  if (!*taken) return Error::success();
  const TensorSpec& spec = responses[batch.items.front()].spec;
  const hvd_dtype_t dtype = spec.dtype;
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  index_.assign(counts_);
  const int divisor = divisor_of(spec, set);
  const hvd_reduce_op_t op = transport_op(spec.reduce_op);
  const double prescale = spec.prescale;
  auto operand_of = [&](size_t k, int64_t first) {
    return static_cast<const unsigned char*>(locals[k]->send) + first * esize;
  };

  mark_contiguous_runs(locals, static_cast<size_t>(esize));
  Backend::Scattered operand;
  unsigned char* located = nullptr;  // the piece being reduced in the caller's memory
  operand.locate = [&](int64_t offset, int64_t n) -> void* {
    timed_copy([&] { located = locate_in_place(locals, spec, offset, n); });
    return located;
  };
  operand.finish = [&](int64_t, int64_t n) {
    if (divisor > 1 || spec.postscale != 1.0)
      timed_copy([&] { copy_averaged(located, located, n, dtype, divisor, spec.postscale); });
  };
  operand.gather = [&](int64_t offset, int64_t n, void* dst) {
    timed_copy([&] {
      index_.visit(offset, n, [&](size_t k, int64_t first, int64_t count, int64_t at) {
        unsigned char* to = static_cast<unsigned char*>(dst) + at * esize;
        if (locals[k])
          copy_scaled(to, operand_of(k, first), count, dtype, prescale);
        else
          std::memset(to, 0, static_cast<size_t>(count * esize));  // a joined rank's zeros
      });
    });
  };
  auto deliver_part = [&](size_t k, int64_t first, int64_t count, const unsigned char* from) {
    copy_averaged(static_cast<unsigned char*>(locals[k]->recv) + first * esize, from, count, dtype,
                  divisor, spec.postscale);
  };
  operand.accumulate = [&](int64_t offset, int64_t n, void* buf,
                           const Backend::Scattered::Reduce& reduce, bool deliver) {
    index_.visit(offset, n, [&](size_t k, int64_t first, int64_t count, int64_t at) {
      unsigned char* into = static_cast<unsigned char*>(buf) + at * esize;
      if (locals[k] && prescale == 1.0) {
        reduce(operand_of(k, first), into, count);
      } else if (locals[k] || op != HVD_OP_SUM) {
        // A prescaled part, or a joined rank's zeros (which change a MIN, MAX or PRODUCT).
        ring_scaled_.resize(static_cast<size_t>(count * esize));
        if (locals[k])
          copy_scaled(ring_scaled_.data(), operand_of(k, first), count, dtype, prescale);
        else
          std::memset(ring_scaled_.data(), 0, ring_scaled_.size());
        reduce(ring_scaled_.data(), into, count);
      }
      if (deliver && locals[k]) timed_copy([&] { deliver_part(k, first, count, into); });
    });
  };
  operand.deliver = [&](int64_t offset, int64_t n, const void* src) {
    timed_copy([&] {
      index_.visit(offset, n, [&](size_t k, int64_t first, int64_t count, int64_t at) {
        if (locals[k]) deliver_part(k, first, count, static_cast<const unsigned char*>(src) + at * esize);
      });
    });
  };
  // Its own name: the copies are folded into the ring's steps, so a traced batch shows
  // no MEMCPY activities, and the reduction is not MPI's.
  activity_start("RING_ALLREDUCE");
  Error err = host_->allreduce_scattered(batch.bytes / esize, dtype, op, comm, operand);
  activity_end();
  return err;
}

}  // namespace hvd

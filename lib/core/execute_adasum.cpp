// Adasum batches (HVD_OP_ADASUM) of host tensors: the tensors are laid back to back in
// the fusion buffer (prescaled on the way in; a joined rank's are zeros, which Adasum
// leaves out), combined over the set's communicator by VHDD with per-tensor
// coefficients, and copied out postscaled. A lone tensor is combined in its output.
// Always flat: Adasum's tree is over ranks, and a node-local sum first would change
// the result (the device path does that, as Horovod's GPU Adasum does).
#include <cstring>

#include "base/dtype.h"
#include "core/execute.h"
#include "fusion/fused_cursor.h"
#include "fusion/scale.h"

namespace hvd {

Error Executor::allreduce_adasum(const Batch& batch, const std::vector<Response>& responses,
                                 const std::vector<Request*>& locals, const ProcessSet& set) {
  const TensorSpec& spec = responses[batch.items.front()].spec;
  const size_t esize = dtype_size(spec.dtype);
  counts_.clear();
  int64_t total = 0;
  for (size_t i : batch.items) {
    counts_.push_back(responses[i].spec.num_elements());
    total += counts_.back();
  }

  unsigned char* buffer = nullptr;
  const bool lone = batch.items.size() == 1 && locals[0];
  if (lone) {
    buffer = static_cast<unsigned char*>(locals[0]->recv);
    if (locals[0]->send != locals[0]->recv || spec.prescale != 1.0)
      timed_copy([&] { copy_scaled(buffer, locals[0]->send, total, spec.dtype, spec.prescale); });
  } else {
    buffer = fusion_buffer(static_cast<size_t>(total) * esize).data();
    activity_start("MEMCPY_IN_FUSION_BUFFER");
    FusedCursor in(counts_);
    in.visit(0, total, [&](size_t k, int64_t first, int64_t count, int64_t at) {
      unsigned char* dst = buffer + at * static_cast<int64_t>(esize);
      if (locals[k])
        copy_scaled(dst, static_cast<const unsigned char*>(locals[k]->send) + first * static_cast<int64_t>(esize),
                    count, spec.dtype, spec.prescale);
      else
        std::memset(dst, 0, static_cast<size_t>(count) * esize);
    });
    activity_end();
  }

  if (counters_) counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  activity_start("MPI_ADASUM_ALLREDUCE");
  Error err = adasum_.allreduce(buffer, counts_, spec.dtype, set.comm, MPI_COMM_NULL,
                                counters_ ? &counters_->global_bytes : nullptr);
  activity_end();
  HVD_RETURN_IF_ERROR(err);

  if (lone) {
    if (spec.postscale != 1.0)
      timed_copy([&] { copy_scaled(buffer, buffer, total, spec.dtype, spec.postscale); });
    return Error::success();
  }
  activity_start("MEMCPY_OUT_FUSION_BUFFER");
  FusedCursor out(counts_);
  out.visit(0, total, [&](size_t k, int64_t first, int64_t count, int64_t at) {
    if (locals[k])
      copy_scaled(static_cast<unsigned char*>(locals[k]->recv) + first * static_cast<int64_t>(esize),
                  buffer + at * static_cast<int64_t>(esize), count, spec.dtype, spec.postscale);
  });
  activity_end();
  return Error::success();
}

}  // namespace hvd

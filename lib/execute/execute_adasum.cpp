// Adasum batches (HVD_OP_ADASUM) of host tensors: the tensors are laid back to back in
// the fusion buffer (prescaled on the way in; a joined rank's are zeros, which Adasum
// leaves out), combined over the set's communicator by VHDD with per-tensor
// coefficients, and copied out postscaled. A lone tensor is combined in its output.
// Always flat: Adasum's tree is over ranks, and a node-local sum first would change
// the result (the device path does that, as Horovod's GPU Adasum does).
#include "base/dtype.h"
#include "execute/execute.h"
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
    buffer = fusion_buffer(static_cast<size_t>(total) * esize);
    activity_start("MEMCPY_IN_FUSION_BUFFER");
    FusedCursor in(counts_);
    fill_fused(in, locals, spec, spec.dtype, buffer, 0, total);
    activity_end();
  }

  activity_start("MPI_ADASUM_ALLREDUCE");
  Error err = host_->adasum(buffer, counts_, spec.dtype, set.communicator());
  activity_end();
  HVD_RETURN_IF_ERROR(err);

  if (lone) {
    if (spec.postscale != 1.0)
      timed_copy([&] { copy_scaled(buffer, buffer, total, spec.dtype, spec.postscale); });
    return Error::success();
  }
  activity_start("MEMCPY_OUT_FUSION_BUFFER");
  FusedCursor out(counts_);
  drain_fused(out, locals, spec, spec.dtype, 1, buffer, 0, total);
  activity_end();
  return Error::success();
}

}  // namespace hvd

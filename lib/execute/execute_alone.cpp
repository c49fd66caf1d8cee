// An allreduce over a process set of one rank (a one-process job, a set of one): the
// reduction is the identity, so each tensor is only copied to its output and scaled,
// in its own memory. The fused path would copy the batch into the fusion buffer and
// back around an MPI call that does nothing (a one-GPU or one-process training step
// paid two passes over every gradient for it).
#include <cstring>

#include "base/dtype.h"
#include "execute/execute.h"
#include "fusion/scale.h"

namespace hvd {

Error Executor::allreduce_alone(const Batch& batch, const std::vector<Response>& responses,
                                const std::vector<Request*>& locals) {
  for (size_t k = 0; k < batch.items.size(); ++k) {
    const Request* local = locals[k];
    if (!local) continue;  // this rank joined: nobody receives the result
    const TensorSpec& spec = responses[batch.items[k]].spec;
    const int64_t count = spec.num_elements();
    // The same two roundings as with peers: the prescaled operand, then the result
    // postscaled (the average of one rank divides by one).
    timed_copy([&] {
      if (spec.prescale != 1.0 || local->send != local->recv)
        copy_scaled(local->recv, local->send, count, spec.dtype, spec.prescale);
      if (spec.postscale != 1.0)
        copy_averaged(local->recv, local->recv, count, spec.dtype, 1, spec.postscale);
    });
  }
  // Still one data collective for the counters: a batch ran, with no traffic.
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return Error::success();
}

}  // namespace hvd

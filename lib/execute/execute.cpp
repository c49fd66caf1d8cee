#include "execute/execute.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "base/dtype.h"
#include "base/log.h"
#include "fusion/fused_cursor.h"
#include "fusion/scale.h"

namespace hvd {

hvd_reduce_op_t transport_op(hvd_reduce_op_t op) {
  return op == HVD_OP_AVERAGE ? HVD_OP_SUM : op;
}

int divisor_of(const TensorSpec& spec, const ProcessSet& set) {
  return spec.reduce_op == HVD_OP_AVERAGE ? set.size() : 1;
}

hvd_dtype_t transport_dtype(const TensorSpec& spec, const ProcessSet& set) {
  return average_wire_dtype(spec.dtype, divisor_of(spec, set));
}

Error broadcast_root(const Response& r, const ProcessSet& set, int* root) {
  *root = set.set_rank(r.spec.root);
  if (*root < 0)
    return make_error(HVD_ERR_INTERNAL, "tensor '%s': broadcast root %d is not in process set %d",
                      r.name.c_str(), r.spec.root, set.id);
  return Error::success();
}

std::string horovod_dtype_label(hvd_dtype_t dtype) { return "HOROVOD_" + dtype_upper_name(dtype); }

std::string output_shape_text(const Response& r, const ProcessSet& set) {
  const int me = set.my_set_rank, size = set.size();
  TensorSpec s = r.spec_for(me, size);
  if (!s.shape.empty()) {
    int64_t rows = s.shape[0];
    if (r.spec.op == OpType::Allgather) {
      rows = 0;
      for (int64_t x : r.per_rank) rows += x;
    } else if (r.spec.op == OpType::Alltoall && r.per_rank.size() == static_cast<size_t>(size) * size) {
      rows = 0;
      for (int q = 0; q < size; ++q) rows += r.per_rank[static_cast<size_t>(q) * size + me];
    } else if (r.spec.op == OpType::Reducescatter) {
      rows = s.shape[0] / size + (me < s.shape[0] % size ? 1 : 0);
    }
    s.shape[0] = rows;
  }
  std::string text = "[";
  for (size_t i = 0; i < s.shape.size(); ++i) text += (i ? ", " : "") + std::to_string(s.shape[i]);
  return text + "]";
}

std::vector<int64_t> displacements(const std::vector<int64_t>& counts) {
  std::vector<int64_t> displs(counts.size());
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = total;
    total += counts[i];
  }
  return displs;
}

void* Executor::scratch(size_t bytes, bool zero) {
  unsigned char* data = scratch_.reserve(bytes);
  if (zero) std::memset(data, 0, bytes);
  return data;
}

unsigned char* Executor::fusion_buffer(size_t bytes) { return fusion_buffer_.reserve(bytes); }

void Executor::run(const Batch& batch, const std::vector<Response>& responses,
                   Controller& controller) {
  const Response& first = responses[batch.items.front()];
  auto set = sets_->find(first.spec.process_set);
  // The local requests leave the controller now (one lookup each); a member without
  // one (a joined rank) gets nullptr.
  const size_t items = batch.items.size();
  locals_.assign(items, nullptr);
  completing_.clear();
  announced_.clear();
  announced_.reserve(items);  // take_local_in_place keeps pointers into it
  for (size_t k = 0; k < items; ++k) {
    if (Request* local = controller.take_local_in_place(responses[batch.items[k]], &announced_)) {
      locals_[k] = local;
      completing_.push_back(local);
    }
  }
  const std::vector<Request*>& locals = locals_;
  const size_t have = completing_.size();
  if (layout_watch_ && first.error.ok() && first.spec.op == OpType::Allreduce &&
      first.spec.device == HVD_DEVICE_CPU && first.spec.reduce_op != HVD_OP_ADASUM && set &&
      set->member() && set->size() > 1) {
    for (size_t k = 0; k < items; ++k) layout_watch_->note(batch.items[k], locals[k]);
    // Small tensors fuse alone unless the set fuses large ones or a group holds them
    // together (execute/fusion_planner.h).
    if (!batch.fused || batch.fuses_large || first.spec.group_size > 0) layout_watch_->may_hold_large();
  }

  tracing_ = timeline_ && timeline_->enabled() && set && set->member();
  if (tracing_) {
    batch_keys_.clear();
    for (size_t i : batch.items) {
      const Response& r = responses[i];
      batch_keys_.push_back(timeline_row(r.spec, r.name));
      // The tensor's own bytes (this rank's part for allgather and alltoall), not a
      // share of the batch's.
      const int64_t bytes = r.spec_for(set->my_set_rank, set->size()).num_elements() *
                            static_cast<int64_t>(dtype_size(r.spec.dtype));
      timeline_->op_start(batch_keys_.back(), op_type_label(r.spec.op), bytes);
    }
  }

  Error result;
  const OpType op = first.spec.op;
  if (!first.error.ok()) {
    result = first.error;
  } else if (have < batch.items.size() && set && set->member() && op != OpType::Allreduce &&
             op != OpType::Join) {
    // Only allreduce runs with members that have no request (joined ranks); the
    // controller fails every other operation in that case before it gets here.
    result = make_error(HVD_ERR_INTERNAL, "tensor '%s': %s scheduled without a local request",
                        first.name.c_str(), op_type_name(op));
  } else if (!set || !set->member()) {
    if (have == 0) return;  // not ours: the members run it
    result = make_error(HVD_ERR_INTERNAL, "tensor '%s' ran on a process set this rank left",
                        first.name.c_str());
  } else if (first.spec.device != HVD_DEVICE_CPU && op != OpType::Join && op != OpType::Barrier) {
    result = dispatch_device(batch, responses, locals, *set);
  } else {
    result = dispatch(batch, responses, locals, *set);
  }
  if (tracing_) {
    const std::string_view status = result.ok() ? std::string_view("OK") : std::string_view(result.message);
    for (size_t k = 0; k < batch.items.size(); ++k) {
      const Response& r = responses[batch.items[k]];
      if (op == OpType::Barrier || op == OpType::Join || op == OpType::ProcessSetAdd ||
          op == OpType::ProcessSetRemove) {
        timeline_->op_end(batch_keys_[k], status);
      } else {
        timeline_->op_end(batch_keys_[k], status, horovod_dtype_label(r.spec.dtype),
                          output_shape_text(r, *set));
      }
    }
  }
  if (have) complete_(completing_, result);
}

void Executor::activity_start(const char* activity) {
  if (time_copies_ && std::strncmp(activity, "MEMCPY", 6) == 0) copy_started_ns_ = monotonic_ns();
  if (tracing_) timeline_->activity_start(batch_keys_, activity);
}

void Executor::activity_end() {
  if (copy_started_ns_) {
    copy_ns_ += monotonic_ns() - copy_started_ns_;
    copy_started_ns_ = 0;
  }
  if (tracing_) timeline_->activity_end(batch_keys_);
}

Error Executor::dispatch(const Batch& batch, const std::vector<Response>& responses,
                         const std::vector<Request*>& locals, const ProcessSet& set) {
  const Response& first = responses[batch.items.front()];
  switch (first.spec.op) {
    case OpType::Allreduce:
      if (first.spec.reduce_op == HVD_OP_ADASUM) return allreduce_adasum(batch, responses, locals, set);
      if (set.size() == 1) return allreduce_alone(batch, responses, locals);
      // A tensor alone in a set that fuses large ones (one above the threshold) takes
      // the batches' path: it reduces each piece in the tensor's memory, in the pieces
      // the set's batches are cut in (and pads the last where they are kept equal). So
      // does one summed in a wider integer: its copies convert.
      return batch.fused || batch.fuses_large || transport_dtype(first.spec, set) != first.spec.dtype
                 ? allreduce_fused(batch, responses, locals, set)
                 : allreduce_single(first, locals[0], set);
    case OpType::Broadcast:
      return broadcast(first, locals[0], set);
    case OpType::Allgather:
      return allgather(batch, responses, locals, set);
    case OpType::Alltoall:
      return alltoall(first, locals[0], set);
    case OpType::Reducescatter:
      // An average summed in a wider integer takes the fused path's converting copies.
      return batch.fused || transport_dtype(first.spec, set) != first.spec.dtype
                 ? reducescatter_fused(batch, responses, locals, set)
                 : reducescatter(first, locals[0], set);
    case OpType::Barrier:
      return Error::success();  // negotiation completing is the barrier
    case OpType::Join:
      if (locals[0] && locals[0]->out_value && !first.per_rank.empty())
        *locals[0]->out_value = first.per_rank[0];
      return Error::success();
    case OpType::ProcessSetAdd:
    case OpType::ProcessSetRemove:
      return admin_(first, locals[0]);
  }
  return make_error(HVD_ERR_INTERNAL, "unknown operation %d", static_cast<int>(first.spec.op));
}

Error Executor::reduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                        hvd_reduce_op_t op, const ProcessSet& set) {
  if (hierarchical_allreduce(set)) {
    if (send != recv) copy_scaled(recv, send, count, dtype, 1.0);
    activity_start("HIERARCHICAL_ALLREDUCE");
    Error err = hier_->allreduce(recv, count, dtype, op);
    activity_end();
    return err;
  }
  activity_start("MPI_ALLREDUCE");
  Error err = host_->allreduce(send, recv, count, dtype, op, set.communicator());
  activity_end();
  return err;
}

Error Executor::allreduce_single(const Response& r, Request* local, const ProcessSet& set) {
  const TensorSpec& spec = r.spec;
  const int64_t count = spec.num_elements();
  const size_t esize = dtype_size(spec.dtype);
  // A member without a request (a joined rank) contributes zeros into scratch memory.
  const void* send = local ? local->send : scratch(static_cast<size_t>(count) * esize, true);
  void* recv = local ? local->recv : const_cast<void*>(send);
  const hvd_reduce_op_t op = transport_op(spec.reduce_op);
  const int divisor = divisor_of(spec, set);
  const bool prescaled = spec.prescale != 1.0;
  const bool postscaled = divisor > 1 || spec.postscale != 1.0;
  auto part = [&](const void* base, int64_t offset) {
    return static_cast<unsigned char*>(const_cast<void*>(base)) + offset * static_cast<int64_t>(esize);
  };
  // The operand of elements [offset, offset + n), scaled into recv.
  auto prescale = [&](int64_t offset, int64_t n) -> void* {
    timed_copy([&] { copy_scaled(part(recv, offset), part(send, offset), n, spec.dtype, spec.prescale); });
    return part(recv, offset);
  };
  auto postscale = [&](int64_t offset, int64_t n) {
    if (!postscaled) return;
    timed_copy([&] {
      copy_averaged(part(recv, offset), part(recv, offset), n, spec.dtype, divisor, spec.postscale);
    });
  };
  if (hierarchical_allreduce(set)) {  // its cross-node step pays per call: whole passes
    if (prescaled) send = prescale(0, count);
    HVD_RETURN_IF_ERROR(reduce(send, recv, count, spec.dtype, op, set));
    postscale(0, count);
    return Error::success();
  }
  if (!prescaled && !postscaled) return reduce(send, recv, count, spec.dtype, op, set);
  // Each part is scaled right before or after its MPI call, while it is in cache: a
  // pass over a large tensor before or after the reduction streams it through memory
  // again (one 96 MB averaged tensor over shared memory: 7.1-8.4 ms of scaling a step
  // that way, 4.6-4.9 ms this way).
  activity_start("MPI_ALLREDUCE");
  Error err = prescaled ? host_->allreduce_staged(count, spec.dtype, op, set.communicator(),
                                                  prescale, postscale, false)
                        : host_->allreduce_then(send, recv, count, spec.dtype, op,
                                                set.communicator(), postscale);
  activity_end();
  return err;
}

Error Executor::allreduce_fused(const Batch& batch, const std::vector<Response>& responses,
                                const std::vector<Request*>& locals, const ProcessSet& set) {
  const TensorSpec& spec = responses[batch.items.front()].spec;
  counts_.clear();
  for (size_t i : batch.items) counts_.push_back(responses[i].spec.num_elements());
  const int64_t total = batch.bytes / static_cast<int64_t>(dtype_size(spec.dtype));
  const int divisor = divisor_of(spec, set);
  const hvd_reduce_op_t op = transport_op(spec.reduce_op);
  // The buffer's elements: spec.dtype, or the wider integer an AVERAGE is summed in;
  // a widened batch is never reduced in the caller's memory.
  const hvd_dtype_t wire = transport_dtype(spec, set);
  const bool widened = wire != spec.dtype;
  const size_t esize = dtype_size(wire);
  unsigned char* buffer = nullptr;

  FusedCursor in(counts_), out(counts_);
  auto copy_in = [&](int64_t offset, int64_t n) { fill_fused(in, locals, spec, wire, buffer, offset, n); };
  auto copy_out = [&](int64_t offset, int64_t n) {
    drain_fused(out, locals, spec, wire, divisor, buffer, offset, n);
  };

  // Hierarchical reductions take the operand whole (their cross-node step pays per
  // call).
  if (hierarchical_allreduce(set)) {
    buffer = fusion_buffer(static_cast<size_t>(total) * esize);
    activity_start("MEMCPY_IN_FUSION_BUFFER");
    copy_in(0, total);
    activity_end();
    HVD_RETURN_IF_ERROR(reduce(buffer, buffer, total, wire, op, set));
    activity_start("MEMCPY_OUT_FUSION_BUFFER");
    copy_out(0, total);
    activity_end();
    return Error::success();
  }
  bool by_ring = false;
  Error ring_err = widened ? Error::success()
                           : allreduce_fused_ring(batch, responses, locals, set, &by_ring);
  if (by_ring) return ring_err;
  // A batch of several pieces sent over a network keeps them all (nearly) one size:
  // cut evenly, or with its short last piece zero-padded in the buffer
  // (Backend::staging_pieces).
  const bool equal_pieces = batch.equal_pieces;
  const Backend::Pieces cut = host_->staging_pieces(total, wire, equal_pieces);
  const int64_t piece = cut.piece;

  // A traced batch shows its copies and its reduction as one activity each, as in
  // Horovod's timelines, so it is filled whole (and zero-padded to whole pieces where
  // the last one is padded); it still reduces through the staged path, piece by piece
  // in the buffer, with the same pieces: the timeline is on for rank 0 alone, and every
  // rank must make the same MPI calls on the set's communicator. A tensor alone
  // (fuses_large, not fused) has nothing to copy but a padded last piece: it goes
  // piece by piece below.
  if (tracing_ && batch.fused) {
    const int64_t padded = cut.pad_last ? (total + piece - 1) / piece * piece : total;
    buffer = fusion_buffer(static_cast<size_t>(padded) * esize);
    activity_start("MEMCPY_IN_FUSION_BUFFER");
    copy_in(0, total);
    std::memset(buffer + total * static_cast<int64_t>(esize), 0, static_cast<size_t>(padded - total) * esize);
    activity_end();
    activity_start("MPI_ALLREDUCE");
    Error err = host_->allreduce_staged(
        total, wire, op, set.communicator(),
        [&](int64_t offset, int64_t) -> void* { return buffer + offset * esize; },
        [](int64_t, int64_t) {}, equal_pieces);
    activity_end();
    HVD_RETURN_IF_ERROR(err);
    activity_start("MEMCPY_OUT_FUSION_BUFFER");
    copy_out(0, total);
    activity_end();
    return Error::success();
  }
  buffer = fusion_buffer(static_cast<size_t>(piece) * esize);

  // A piece that lies whole in one run of in-place tensors back to back in memory (a
  // framework's flat gradient buffer) is reduced where it is: no copy in or out, only
  // the scaling, in place. One that lies whole in one tensor reduced out of place is
  // copied into that tensor's output and reduced there: one copy instead of two (the
  // large tensors of a batch, execute/fusion_planner.h). Other ranks may copy the same
  // piece; the MPI calls are the same either way.
  mark_contiguous_runs(locals, dtype_size(spec.dtype));
  index_.assign(counts_);
  unsigned char* located = nullptr;  // the piece being reduced in the caller's memory
  auto fill = [&](int64_t offset, int64_t n) -> void* {
    if (cut.pad_last && n < piece) {
      located = nullptr;
      copy_in(offset, n);
      std::memset(buffer + n * esize, 0, static_cast<size_t>(piece - n) * esize);
      return buffer;
    }
    located = widened ? nullptr : locate_in_place(locals, spec, offset, n);
    if (located) return located;
    copy_in(offset, n);
    return buffer;
  };
  auto drain = [&](int64_t offset, int64_t n) {
    if (!located) return copy_out(offset, n);
    out.visit(offset, n, [](size_t, int64_t, int64_t, int64_t) {});  // keeps the cursor in step
    if (divisor > 1 || spec.postscale != 1.0)
      copy_averaged(located, located, n, spec.dtype, divisor, spec.postscale);
  };
  const Communicator comm = set.communicator();
  auto timed_fill = [&](int64_t offset, int64_t n) {
    void* at = nullptr;
    timed_copy([&] { at = fill(offset, n); });
    return at;
  };
  auto timed_drain = [&](int64_t offset, int64_t n) { timed_copy([&] { drain(offset, n); }); };
  activity_start("MPI_ALLREDUCE");  // recorded only while tracing (the tensor alone)
  Error err = time_copies_
                  ? host_->allreduce_staged(total, wire, op, comm, timed_fill, timed_drain, equal_pieces)
                  : host_->allreduce_staged(total, wire, op, comm, fill, drain, equal_pieces);
  activity_end();
  return err;
}

void Executor::fill_fused(FusedCursor& in, const std::vector<Request*>& locals, const TensorSpec& spec,
                          hvd_dtype_t wire, unsigned char* buffer, int64_t offset, int64_t n) {
  const int64_t esize = static_cast<int64_t>(dtype_size(spec.dtype));
  const int64_t wsize = static_cast<int64_t>(dtype_size(wire));
  in.visit(offset, n, [&](size_t k, int64_t first, int64_t count, int64_t at) {
    unsigned char* dst = buffer + at * wsize;
    if (locals[k])
      copy_in_widened(dst, wire, static_cast<const unsigned char*>(locals[k]->send) + first * esize,
                      spec.dtype, count, spec.prescale);
    else
      std::memset(dst, 0, static_cast<size_t>(count * wsize));
  });
}

void Executor::drain_fused(FusedCursor& out, const std::vector<Request*>& locals,
                           const TensorSpec& spec, hvd_dtype_t wire, int divisor,
                           const unsigned char* buffer, int64_t offset, int64_t n) {
  const int64_t esize = static_cast<int64_t>(dtype_size(spec.dtype));
  const int64_t wsize = static_cast<int64_t>(dtype_size(wire));
  out.visit(offset, n, [&](size_t k, int64_t first, int64_t count, int64_t at) {
    if (locals[k])
      copy_out_narrowed(static_cast<unsigned char*>(locals[k]->recv) + first * esize, spec.dtype,
                        buffer + at * wsize, wire, count, divisor, spec.postscale);
  });
}

unsigned char* Executor::locate_in_place(const std::vector<Request*>& locals,
                                         const TensorSpec& spec, int64_t offset, int64_t n) {
  size_t first_k = SIZE_MAX, last_k = 0;
  int64_t first_element = 0;
  index_.visit(offset, n, [&](size_t k, int64_t first, int64_t, int64_t) {
    if (first_k == SIZE_MAX) {
      first_k = k;
      first_element = first;
    }
    last_k = k;
  });
  const Request* owner = first_k != SIZE_MAX ? locals[first_k] : nullptr;
  const bool in_run = owner && run_of_[first_k] >= 0 && run_of_[first_k] == run_of_[last_k];
  if (!in_run && !(owner && first_k == last_k)) return nullptr;
  const int64_t esize = static_cast<int64_t>(dtype_size(spec.dtype));
  unsigned char* at = static_cast<unsigned char*>(owner->recv) + first_element * esize;
  const void* operand = static_cast<const unsigned char*>(owner->send) + first_element * esize;
  if (operand != at || spec.prescale != 1.0) copy_scaled(at, operand, n, spec.dtype, spec.prescale);
  return at;
}

void Executor::mark_contiguous_runs(const std::vector<Request*>& locals, size_t esize) {
  run_of_.assign(locals.size(), -1);
  for (size_t k = 0; k < locals.size(); ++k) {
    const Request* r = locals[k];
    if (!r || r->send != r->recv) continue;
    const Request* prev = k > 0 ? locals[k - 1] : nullptr;
    const bool follows = prev && run_of_[k - 1] >= 0 &&
                         static_cast<const unsigned char*>(prev->recv) + counts_[k - 1] * esize ==
                             static_cast<const unsigned char*>(r->recv);
    run_of_[k] = follows ? run_of_[k - 1] : static_cast<int64_t>(k);
  }
}

Error Executor::broadcast(const Response& r, Request* local, const ProcessSet& set) {
  const int64_t count = r.spec.num_elements();
  void* buffer = local ? local->recv : scratch(static_cast<size_t>(count) * dtype_size(r.spec.dtype), false);
  int root = 0;
  HVD_RETURN_IF_ERROR(broadcast_root(r, set, &root));
  activity_start("MPI_BCAST");
  Error err = host_->broadcast(buffer, count, r.spec.dtype, root, set.communicator());
  activity_end();
  return err;
}

}  // namespace hvd

// Allgather, alltoall and reducescatter: the operations whose output layout depends
// on every rank's rows. Row counts come from the negotiated response, so all ranks
// compute the same counts and displacements.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/dtype.h"
#include "base/host_memory.h"
#include "execute/execute.h"
#include "fusion/scale.h"

namespace hvd {

namespace {

int64_t sum(const std::vector<int64_t>& v) {
  int64_t total = 0;
  for (int64_t x : v) total += x;
  return total;
}

}  // namespace

Error allocate_output(const Request& request, size_t bytes, void** out) {
  *out = request.allocator ? request.allocator(bytes, request.spec.device, request.allocator_data)
                           : alloc_host(bytes);  // hvd_free releases it
  if (!*out && (bytes || !request.allocator))
    return make_error(HVD_ERR_NO_MEMORY, "tensor '%s': could not allocate %zu bytes for the output%s",
                      request.name.c_str(), bytes,
                      request.allocator ? " (the options' allocator returned NULL)" : "");
  return Error::success();
}

// Fused allgather: each rank's block in the buffer holds its rows of every tensor of
// the batch, tensor after tensor; one allgatherv moves all blocks, then each tensor's
// rows are copied out of every block into its own output.
Error Executor::allgather(const Batch& batch, const std::vector<Response>& responses,
                          const std::vector<Request*>& locals, const ProcessSet& set) {
  const size_t n = batch.items.size();
  const int size = set.size();
  const int me = set.my_set_rank;
  const hvd_dtype_t dtype = responses[batch.items[0]].spec.dtype;
  const size_t esize = dtype_size(dtype);

  std::vector<int64_t> row(n);
  std::vector<int64_t> block(size, 0);  // elements of each rank's block
  for (size_t k = 0; k < n; ++k) {
    const Response& r = responses[batch.items[k]];
    row[k] = r.spec.row_elements();
    for (int q = 0; q < size; ++q) block[q] += r.per_rank[q] * row[k];
  }
  const std::vector<int64_t> displs = displacements(block);
  const int64_t total = sum(block);

  // Outputs first: a failed allocation must not leave this rank out of the collective.
  Error alloc_error;
  std::vector<void*> outputs(n, nullptr);
  activity_start("ALLOCATE_OUTPUT");
  for (size_t k = 0; k < n; ++k) {
    const Response& r = responses[batch.items[k]];
    size_t bytes = static_cast<size_t>(sum(r.per_rank) * row[k]) * esize;
    Error err = allocate_output(*locals[k], bytes, &outputs[k]);
    if (!err.ok() && alloc_error.ok()) alloc_error = err;
  }
  activity_end();

  Error err;
  if (n == 1 && outputs[0]) {
    // Alone: gather straight into the output, no copies.
    err = gather(locals[0]->send, outputs[0], block, displs, dtype, set);
  } else {
    unsigned char* buffer = fusion_buffer(static_cast<size_t>(total) * esize);
    size_t offset = static_cast<size_t>(displs[me]) * esize;
    activity_start("MEMCPY_IN_FUSION_BUFFER");
    for (size_t k = 0; k < n; ++k) {
      const Response& r = responses[batch.items[k]];
      size_t bytes = static_cast<size_t>(r.per_rank[me] * row[k]) * esize;
      if (bytes) std::memcpy(buffer + offset, locals[k]->send, bytes);
      offset += bytes;
    }
    activity_end();
    err = gather(buffer + displs[me] * esize, buffer, block, displs, dtype, set);
    if (err.ok()) {
      activity_start("MEMCPY_OUT_FUSION_BUFFER");
      std::vector<size_t> out_offset(n, 0);
      for (int q = 0; q < size; ++q) {
        size_t in = static_cast<size_t>(displs[q]) * esize;
        for (size_t k = 0; k < n; ++k) {
          const Response& r = responses[batch.items[k]];
          size_t bytes = static_cast<size_t>(r.per_rank[q] * row[k]) * esize;
          if (outputs[k] && bytes)
            std::memcpy(static_cast<unsigned char*>(outputs[k]) + out_offset[k], buffer + in, bytes);
          out_offset[k] += bytes;
          in += bytes;
        }
      }
      activity_end();
    }
  }
  if (err.ok()) err = alloc_error;
  for (size_t k = 0; k < n; ++k) {
    Request& local = *locals[k];
    const Response& r = responses[batch.items[k]];
    if (!err.ok()) {
      if (outputs[k] && !local.allocator) std::free(outputs[k]);
      continue;
    }
    *local.out_buffer = outputs[k];
    if (local.out_dim0) *local.out_dim0 = sum(r.per_rank);
    if (local.out_per_rank)
      std::memcpy(local.out_per_rank, r.per_rank.data(), r.per_rank.size() * sizeof(int64_t));
  }
  return err;
}

Error Executor::gather(const void* send, void* recv, const std::vector<int64_t>& counts,
                       const std::vector<int64_t>& displs, hvd_dtype_t dtype, const ProcessSet& set) {
  // The choice depends only on negotiated sizes and equal parameters: the same on
  // every rank.
  if (hierarchical_allgather(set) && hier_ag_->fits(counts, dtype)) {
    activity_start("HIERARCHICAL_ALLGATHER");
    Error err = hier_ag_->allgatherv(send, recv, counts, displs, dtype);
    activity_end();
    return err;
  }
  activity_start("MPI_ALLGATHER");
  Error err = host_->allgatherv(send, recv, counts, displs, dtype, set.communicator());
  activity_end();
  return err;
}

Error Executor::alltoall(const Response& r, Request* local, const ProcessSet& set) {
  const int size = set.size();
  const int me = set.my_set_rank;
  const int64_t row = r.spec.row_elements();
  const size_t esize = dtype_size(r.spec.dtype);
  // per_rank row q: the rows set rank q sends to each rank.
  std::vector<int64_t> send_counts(size), recv_counts(size), recv_rows(size);
  int64_t largest_count = 0;
  for (int64_t rows : r.per_rank) largest_count = std::max(largest_count, rows * row);
  for (int q = 0; q < size; ++q) {
    send_counts[q] = r.per_rank[static_cast<size_t>(me) * size + q] * row;
    recv_rows[q] = r.per_rank[static_cast<size_t>(q) * size + me];
    recv_counts[q] = recv_rows[q] * row;
  }
  const int64_t total = sum(recv_counts);
  void* out = nullptr;
  activity_start("ALLOCATE_OUTPUT");
  Error alloc_error = allocate_output(*local, static_cast<size_t>(total) * esize, &out);
  activity_end();
  void* recv = out ? out : scratch(static_cast<size_t>(total) * esize, false);
  activity_start("MPI_ALLTOALL");
  Error err = host_->alltoallv(local->send, send_counts, displacements(send_counts), recv, recv_counts,
                               displacements(recv_counts), r.spec.dtype, largest_count,
                               set.communicator());
  activity_end();
  if (err.ok()) err = alloc_error;
  if (!err.ok()) {
    if (out && !local->allocator) std::free(out);
    return err;
  }
  *local->out_buffer = out;
  if (local->out_dim0) *local->out_dim0 = sum(recv_rows);
  if (local->out_per_rank)
    std::memcpy(local->out_per_rank, recv_rows.data(), recv_rows.size() * sizeof(int64_t));
  return Error::success();
}

std::vector<int64_t> reducescatter_counts(const TensorSpec& spec, int size) {
  const int64_t dim0 = spec.shape.empty() ? 0 : spec.shape[0];
  const int64_t row = spec.row_elements();
  std::vector<int64_t> counts(size);
  for (int q = 0; q < size; ++q) counts[q] = (dim0 / size + (q < dim0 % size ? 1 : 0)) * row;
  return counts;
}

Error Executor::reducescatter(const Response& r, Request* local, const ProcessSet& set) {
  const TensorSpec& spec = r.spec;
  const std::vector<int64_t> counts = reducescatter_counts(spec, set.size());
  const int64_t count = spec.num_elements();
  const void* send = local->send;
  // MPI reduces out of place: an in-place call (or a prescale) goes through scratch.
  if (spec.prescale != 1.0 || send == local->recv) {
    void* scaled = scratch(static_cast<size_t>(count) * dtype_size(spec.dtype), false);
    copy_scaled(scaled, send, count, spec.dtype, spec.prescale);
    send = scaled;
  }
  activity_start("MPI_REDUCESCATTER");
  Error err = host_->reducescatter(send, local->recv, counts, spec.dtype, transport_op(spec.reduce_op),
                                   set.communicator());
  activity_end();
  if (!err.ok()) return err;
  const int divisor = divisor_of(spec, set);
  if (divisor > 1 || spec.postscale != 1.0)
    copy_averaged(local->recv, local->recv, counts[set.my_set_rank], spec.dtype, divisor,
                  spec.postscale);
  return Error::success();
}

// Fused reducescatter: the buffer holds one block per rank, and each rank's block
// holds that rank's rows of every tensor of the batch, tensor after tensor (with the
// prescale applied on the way in). One reduce-scatter leaves this rank's block,
// whose pieces are copied out to the tensors' outputs (averaged and postscaled). The
// buffer holds wire elements (transport_dtype): an integer average is summed wider.
Error Executor::reducescatter_fused(const Batch& batch, const std::vector<Response>& responses,
                                    const std::vector<Request*>& locals, const ProcessSet& set) {
  const size_t n = batch.items.size();
  const int size = set.size();
  const int me = set.my_set_rank;
  const TensorSpec& spec = responses[batch.items[0]].spec;
  const size_t esize = dtype_size(spec.dtype);
  const hvd_dtype_t wire = transport_dtype(spec, set);
  const size_t wsize = dtype_size(wire);

  std::vector<std::vector<int64_t>> counts(n);  // elements of tensor k for each rank
  std::vector<int64_t> block(size, 0);
  for (size_t k = 0; k < n; ++k) {
    counts[k] = reducescatter_counts(responses[batch.items[k]].spec, size);
    for (int q = 0; q < size; ++q) block[q] += counts[k][q];
  }
  int64_t total = 0;
  for (int64_t b : block) total += b;
  unsigned char* buffer = fusion_buffer(static_cast<size_t>(total) * wsize);
  unsigned char* mine = static_cast<unsigned char*>(scratch(static_cast<size_t>(block[me]) * wsize, false));

  activity_start("MEMCPY_IN_FUSION_BUFFER");
  std::vector<size_t> read(n, 0);  // bytes of tensor k already copied
  size_t offset = 0;
  for (int q = 0; q < size; ++q) {
    for (size_t k = 0; k < n; ++k) {
      const unsigned char* send = static_cast<const unsigned char*>(locals[k]->send);
      copy_in_widened(buffer + offset, wire, send + read[k], spec.dtype, counts[k][q], spec.prescale);
      read[k] += static_cast<size_t>(counts[k][q]) * esize;
      offset += static_cast<size_t>(counts[k][q]) * wsize;
    }
  }
  activity_end();
  activity_start("MPI_REDUCESCATTER");
  Error err =
      host_->reducescatter(buffer, mine, block, wire, transport_op(spec.reduce_op), set.communicator());
  activity_end();
  if (!err.ok()) return err;
  const int divisor = divisor_of(spec, set);
  activity_start("MEMCPY_OUT_FUSION_BUFFER");
  offset = 0;
  for (size_t k = 0; k < n; ++k) {
    copy_out_narrowed(locals[k]->recv, spec.dtype, mine + offset, wire, counts[k][me], divisor,
                      spec.postscale);
    offset += static_cast<size_t>(counts[k][me]) * wsize;
  }
  activity_end();
  return Error::success();
}

}  // namespace hvd

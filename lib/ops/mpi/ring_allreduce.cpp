#include "ops/mpi/ring_allreduce.h"

#include <algorithm>

#include "base/dtype.h"
#include "base/op_progress.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

namespace hvd {

namespace {

constexpr int kTag = 0x5247;  // "RG": ring steps on the set's communicator

// Segment j of count elements cut into size nearly equal parts.
struct Segments {
  int64_t count;
  int size;
  int64_t start(int j) const { return count * j / size; }
  int64_t length(int j) const { return start(j + 1) - start(j); }
};

}  // namespace

Error ring_allreduce(MPI_Comm comm, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                     const Backend::Scattered& operand, std::vector<unsigned char>* scratch) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  const Segments seg{count, size};
  const int64_t most = (count + size - 1) / size;
  auto wrap = [size](int j) { return ((j % size) + size) % size; };
  const int next = wrap(rank + 1), prev = wrap(rank - 1);
  // One step: segment `sent` from `from` to the next rank, the previous rank's segment
  // `received` into `into`.
  auto step = [&](const void* from, int sent, void* into, int received) -> Error {
    int rc = MPI_Sendrecv(from, static_cast<int>(seg.length(sent) * esize), MPI_BYTE, next, kTag,
                          into, static_cast<int>(seg.length(received) * esize), MPI_BYTE, prev,
                          kTag, comm, MPI_STATUS_IGNORE);
    // A step moves 1/size of the piece each way; 2 (size - 1) steps make the piece.
    if (rc == MPI_SUCCESS) note_op_progress(0);
    return rc == MPI_SUCCESS ? Error::success() : mpi_error(rc, "MPI_Sendrecv (ring allreduce)");
  };
  // Reduce-scatter: at step s each rank sends segment rank - s (its partial result)
  // and combines segment rank - s - 1, which it sends next, with what it received.
  // After size - 1 steps it holds segment rank + 1 reduced over every rank. Allgather:
  // each reduced segment goes round the ring the same way.
  const int owned = wrap(rank + 1);

  if (unsigned char* at = static_cast<unsigned char*>(operand.locate ? operand.locate(0, count) : nullptr)) {
    // The piece lies in place in the caller's memory: reduced and gathered there, no
    // copy of it at all.
    auto part = [&](int j) { return at + seg.start(j) * esize; };
    scratch->resize(static_cast<size_t>(most * esize));
    for (int s = 0; s < size - 1; ++s) {
      const int sent = wrap(rank - s), received = wrap(rank - s - 1);
      HVD_RETURN_IF_ERROR(step(part(sent), sent, scratch->data(), received));
      reduce_elements(scratch->data(), part(received), seg.length(received), dtype, op);
    }
    for (int s = 0; s < size - 1; ++s) {
      const int sent = wrap(owned - s), received = wrap(rank - s);
      HVD_RETURN_IF_ERROR(step(part(sent), sent, part(received), received));
    }
    operand.finish(0, count);
    return Error::success();
  }

  // Scattered: each rank gathers the one segment it sends first; what it receives is
  // combined with its tensors' elements in the step buffer and passed on from there;
  // reduced segments are delivered to the tensors as they arrive.
  scratch->resize(static_cast<size_t>(2 * most * esize));
  unsigned char* send = scratch->data();
  unsigned char* recv = send + most * esize;
  const Backend::Scattered::Reduce reduce = [dtype, op](const void* in, void* inout, int64_t n) {
    reduce_elements(in, inout, n, dtype, op);
  };
  // The last combination completes the rank's own segment: delivered as it is made.
  operand.gather(seg.start(rank), seg.length(rank), send);
  for (int s = 0; s < size - 1; ++s) {
    const int sent = wrap(rank - s), received = wrap(rank - s - 1);
    HVD_RETURN_IF_ERROR(step(send, sent, recv, received));
    operand.accumulate(seg.start(received), seg.length(received), recv, reduce, s == size - 2);
    std::swap(send, recv);
  }
  for (int s = 0; s < size - 1; ++s) {
    const int sent = wrap(owned - s), received = wrap(rank - s);
    HVD_RETURN_IF_ERROR(step(send, sent, recv, received));
    operand.deliver(seg.start(received), seg.length(received), recv);
    std::swap(send, recv);
  }
  return Error::success();
}

}  // namespace hvd

#include "ops/hier/hier_allreduce.h"

#include <algorithm>
#include <climits>

#include "base/dtype.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

namespace hvd {

bool HierarchicalAllreduce::useful() const {
  return layout_.num_nodes > 1 && layout_.max_local_size > 1;
}

Error HierarchicalAllreduce::allreduce(void* buffer, int64_t count, hvd_dtype_t dtype,
                                       hvd_reduce_op_t op) {
  const size_t esize = dtype_size(dtype);
  // Pieces keep every MPI count an int and bound the shard buffer.
  const int64_t piece = std::clamp<int64_t>(chunk_bytes_ / static_cast<int64_t>(esize), 1,
                                            INT_MAX / 2);
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  for (int64_t off = 0; off < count; off += piece) {
    char* at = static_cast<char*>(buffer) + off * esize;
    const int64_t n = std::min(piece, count - off);
    Error err = layout_.homogeneous ? piece_homogeneous(at, n, dtype, op)
                                    : piece_leaders(at, n, dtype, op);
    if (!err.ok()) return err;
  }
  return Error::success();
}

Error HierarchicalAllreduce::piece_homogeneous(char* buffer, int64_t count, hvd_dtype_t dtype,
                                               hvd_reduce_op_t op) {
  const int L = layout_.local_size, me = layout_.local_rank;
  const size_t esize = dtype_size(dtype);
  std::vector<int> counts(L), displs(L);
  for (int r = 0, at = 0; r < L; ++r) {
    counts[r] = static_cast<int>(count / L + (r < count % L ? 1 : 0));
    displs[r] = at;
    at += counts[r];
  }
  MPI_Datatype type = mpi_datatype(dtype);
  MPI_Op mpi_op = mpi_reduce_op(op, dtype);
  shard_.resize(static_cast<size_t>(counts[me]) * esize + 1);
  int rc = MPI_Reduce_scatter(buffer, shard_.data(), counts.data(), type, mpi_op, layout_.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Reduce_scatter (hierarchical, local)");
  if (counts[me] > 0) {
    rc = MPI_Allreduce(MPI_IN_PLACE, shard_.data(), counts[me], type, mpi_op, layout_.cross);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce (hierarchical, cross)");
  }
  rc = MPI_Allgatherv(shard_.data(), counts[me], type, buffer, counts.data(), displs.data(), type,
                      layout_.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allgatherv (hierarchical, local)");

  // Ring-style accounting, as the flat backend counts: reduce-scatter and allgather
  // each send (L-1)/L of the piece within the node; the cross allreduce sends
  // 2(C-1)/C of this rank's shard.
  const double bytes = static_cast<double>(count) * esize;
  const int C = layout_.cross_size;
  counters_->local_bytes.fetch_add(static_cast<uint64_t>(2.0 * (L - 1) / L * bytes),
                                   std::memory_order_relaxed);
  counters_->cross_bytes.fetch_add(
      static_cast<uint64_t>(2.0 * (C - 1) / C * counts[me] * static_cast<double>(esize)),
      std::memory_order_relaxed);
  return Error::success();
}

Error HierarchicalAllreduce::piece_leaders(char* buffer, int64_t count, hvd_dtype_t dtype,
                                           hvd_reduce_op_t op) {
  MPI_Datatype type = mpi_datatype(dtype);
  MPI_Op mpi_op = mpi_reduce_op(op, dtype);
  const int n = static_cast<int>(count);
  const bool leader = layout_.local_rank == 0;
  int rc = MPI_Reduce(leader ? MPI_IN_PLACE : buffer, leader ? buffer : nullptr, n, type, mpi_op, 0,
                      layout_.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Reduce (hierarchical, local)");
  const double bytes = static_cast<double>(count) * dtype_size(dtype);
  if (leader && layout_.leaders != MPI_COMM_NULL) {
    int nodes = 1;
    MPI_Comm_size(layout_.leaders, &nodes);
    rc = MPI_Allreduce(MPI_IN_PLACE, buffer, n, type, mpi_op, layout_.leaders);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce (hierarchical, leaders)");
    counters_->cross_bytes.fetch_add(static_cast<uint64_t>(2.0 * (nodes - 1) / nodes * bytes),
                                     std::memory_order_relaxed);
  }
  rc = MPI_Bcast(buffer, n, type, 0, layout_.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Bcast (hierarchical, local)");
  counters_->local_bytes.fetch_add(static_cast<uint64_t>(bytes),
                                   std::memory_order_relaxed);
  return Error::success();
}

}  // namespace hvd

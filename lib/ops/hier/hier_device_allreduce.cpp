#include "ops/hier/hier_device_allreduce.h"

#include <algorithm>
#include <climits>

#include "base/dtype.h"
#include "hvd_build_config.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

#if HVD_HAVE_NCCL
#include "ops/nccl/nccl_backend.h"
#endif

namespace hvd {

namespace {

// 2 (n-1)/n of the bytes: what each rank of a ring allreduce sends, as every
// backend counts it.
uint64_t ring_bytes(int n, double bytes) {
  return n > 1 ? static_cast<uint64_t>(2.0 * (n - 1) / n * bytes) : 0;
}

#if HVD_HAVE_NCCL
// One NCCL group around a scope; the group is closed on every path out of it.
class NcclGroup {
 public:
  explicit NcclGroup(NcclBackend* nccl) : nccl_(nccl), start_(nccl->group_start()) {}
  ~NcclGroup() {
    if (open()) nccl_->group_end();
  }
  Error end() {
    if (!start_.ok()) return start_;
    ended_ = true;
    return nccl_->group_end();
  }

 private:
  bool open() const { return start_.ok() && !ended_; }
  NcclBackend* nccl_;
  Error start_;
  bool ended_ = false;
};
#endif

}  // namespace

Error DeviceHierarchicalAllreduce::allreduce(void* buffer, int64_t count, hvd_dtype_t dtype,
                                             hvd_reduce_op_t op) {
#if HVD_HAVE_NCCL
  if (nccl_ && NcclBackend::supports(dtype)) {
    counters_->collectives.fetch_add(1, std::memory_order_relaxed);
    if (count == 0) return Error::success();  // equal on every rank: nobody communicates
    char* data = static_cast<char*>(buffer);
    return host_->layout().homogeneous ? even_nodes(data, count, dtype, op)
                                       : leaders(data, count, dtype, op);
  }
#endif
  return staged(buffer, count, dtype, op);  // the host algorithm counts itself
}

Error DeviceHierarchicalAllreduce::ensure_communicators(bool cross) {
#if HVD_HAVE_NCCL
  const NodeLayout& layout = host_->layout();
  // Every rank makes the local one first, then (where needed) the cross one: the
  // members of each communicator reach its creation in the same order.
  HVD_RETURN_IF_ERROR(nccl_->ensure_communicator(NcclBackend::kLocalComm, layout.local));
  if (cross) HVD_RETURN_IF_ERROR(nccl_->ensure_communicator(NcclBackend::kCrossComm, layout.cross));
  return Error::success();
#else
  (void)cross;
  return make_error(HVD_ERR_INTERNAL, "hierarchical NCCL step in a build without NCCL");
#endif
}

Error DeviceHierarchicalAllreduce::even_nodes(char* buffer, int64_t count, hvd_dtype_t dtype,
                                              hvd_reduce_op_t op) {
#if HVD_HAVE_NCCL
  const NodeLayout& layout = host_->layout();
  const int L = layout.local_size, me = layout.local_rank;
  const size_t esize = dtype_size(dtype);
  // Equal shards for NCCL's reduce-scatter and allgather (in place: shard r lives at
  // r * shard); the tail, fewer than L elements, goes through allreduces instead.
  const int64_t shard = count / L, tail = count - shard * L;
  char* mine = buffer + static_cast<size_t>(me * shard) * esize;
  char* tail_at = buffer + static_cast<size_t>(shard * L) * esize;
  HVD_RETURN_IF_ERROR(ensure_communicators(cross_ == CrossTransport::Nccl));
  {
    NcclGroup group(nccl_);
    if (shard > 0)
      HVD_RETURN_IF_ERROR(nccl_->reducescatter_on(NcclBackend::kLocalComm, buffer, mine,
                                           std::vector<int64_t>(L, shard), dtype, op));
    if (tail > 0)
      HVD_RETURN_IF_ERROR(nccl_->allreduce_on(NcclBackend::kLocalComm, tail_at, tail_at, tail, dtype, op));
    HVD_RETURN_IF_ERROR(group.end());
  }
  std::vector<Block> across;
  if (shard > 0) across.push_back({mine, shard});
  if (tail > 0) across.push_back({tail_at, tail});
  HVD_RETURN_IF_ERROR(cross_allreduce(across, dtype, op));
  if (shard > 0) {
    std::vector<int64_t> displs(L);
    for (int r = 0; r < L; ++r) displs[r] = r * shard;
    HVD_RETURN_IF_ERROR(nccl_->allgatherv_on(NcclBackend::kLocalComm, mine, buffer,
                                      std::vector<int64_t>(L, shard), displs, dtype));
  }
  // As the host algorithm counts: reduce-scatter and allgather each send (L-1)/L of
  // the buffer within the node (the tail's allreduce the same share of the tail).
  counters_->local_bytes.fetch_add(ring_bytes(L, static_cast<double>(count) * esize),
                                   std::memory_order_relaxed);
  return Error::success();
#else
  (void)buffer, (void)count, (void)dtype, (void)op;
  return ensure_communicators(false);
#endif
}

Error DeviceHierarchicalAllreduce::leaders(char* buffer, int64_t count, hvd_dtype_t dtype,
                                           hvd_reduce_op_t op) {
#if HVD_HAVE_NCCL
  const NodeLayout& layout = host_->layout();
  const bool leader = layout.local_rank == 0;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  // Only the first rank of each node crosses nodes; its cross communicator holds the
  // first rank of every node.
  HVD_RETURN_IF_ERROR(ensure_communicators(cross_ == CrossTransport::Nccl && leader));
  HVD_RETURN_IF_ERROR(nccl_->reduce_on(NcclBackend::kLocalComm, buffer, buffer, count, dtype, op, 0));
  if (leader) HVD_RETURN_IF_ERROR(cross_allreduce({{buffer, count}}, dtype, op));
  HVD_RETURN_IF_ERROR(nccl_->broadcasts_on(NcclBackend::kLocalComm, {{buffer, bytes, 0}}));
  counters_->local_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return Error::success();
#else
  (void)buffer, (void)count, (void)dtype, (void)op;
  return ensure_communicators(false);
#endif
}

Error DeviceHierarchicalAllreduce::cross_allreduce(const std::vector<Block>& blocks,
                                                   hvd_dtype_t dtype, hvd_reduce_op_t op) {
  const NodeLayout& layout = host_->layout();
  const int C = layout.cross_size;
  if (C <= 1 || blocks.empty()) return Error::success();
  const size_t esize = dtype_size(dtype);
  int64_t total = 0;
  for (const Block& b : blocks) total += b.count;

  if (cross_ == CrossTransport::Nccl) {
#if HVD_HAVE_NCCL
    NcclGroup group(nccl_);
    for (const Block& b : blocks)
      HVD_RETURN_IF_ERROR(nccl_->allreduce_on(NcclBackend::kCrossComm, b.data, b.data, b.count, dtype, op));
    HVD_RETURN_IF_ERROR(group.end());
#else
    return make_error(HVD_ERR_INTERNAL, "NCCL cross-node step in a build without NCCL");
#endif
  } else {
    // MPI on host copies of the blocks, packed in the pinned staging buffer.
    HVD_RETURN_IF_ERROR(staging_.reserve(static_cast<size_t>(total) * esize));
    char* host = static_cast<char*>(staging_.data());
    size_t at = 0;
    for (const Block& b : blocks) {
      HVD_RETURN_IF_ERROR(device_->copy(host + at, b.data, static_cast<size_t>(b.count) * esize));
      at += static_cast<size_t>(b.count) * esize;
    }
    HVD_RETURN_IF_ERROR(device_->synchronize());
    // Pieces keep MPI's counts int.
    const int64_t piece = std::clamp<int64_t>(host_->chunk_bytes() / static_cast<int64_t>(esize), 1,
                                              INT_MAX / 2);
    MPI_Datatype type = mpi_datatype(dtype);
    MPI_Op mpi_op = mpi_reduce_op(op, dtype);
    for (int64_t off = 0; off < total; off += piece) {
      const int n = static_cast<int>(std::min(piece, total - off));
      int rc = MPI_Allreduce(MPI_IN_PLACE, host + static_cast<size_t>(off) * esize, n, type, mpi_op,
                             layout.cross);
      if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce (hierarchical device, cross)");
    }
    at = 0;
    for (const Block& b : blocks) {
      HVD_RETURN_IF_ERROR(device_->copy(b.data, host + at, static_cast<size_t>(b.count) * esize));
      at += static_cast<size_t>(b.count) * esize;
    }
  }
  counters_->cross_bytes.fetch_add(ring_bytes(C, static_cast<double>(total) * esize),
                                   std::memory_order_relaxed);
  return Error::success();
}

Error DeviceHierarchicalAllreduce::staged(void* buffer, int64_t count, hvd_dtype_t dtype,
                                          hvd_reduce_op_t op) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  // A copy queued by the previous operation may still read the staging buffer; this
  // one's copy in is queued behind it on the same stream, and awaited.
  HVD_RETURN_IF_ERROR(staging_.reserve(bytes));
  HVD_RETURN_IF_ERROR(device_->copy(staging_.data(), buffer, bytes));
  HVD_RETURN_IF_ERROR(device_->synchronize());
  HVD_RETURN_IF_ERROR(host_->allreduce(staging_.data(), count, dtype, op));
  return device_->copy(buffer, staging_.data(), bytes);
}

}  // namespace hvd

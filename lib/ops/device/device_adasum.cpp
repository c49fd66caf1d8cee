#include "ops/device/device_adasum.h"

#include <algorithm>

#include "base/dtype.h"
#include "hvd_build_config.h"

#if HVD_HAVE_NCCL
#include "ops/nccl/nccl_backend.h"
#endif

namespace hvd {

namespace {

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// The elements of each tensor inside [lo, hi) of the fused buffer.
std::vector<int64_t> counts_within(const std::vector<int64_t>& counts, int64_t lo, int64_t hi) {
  std::vector<int64_t> within(counts.size(), 0);
  int64_t start = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    within[k] = std::max<int64_t>(0, std::min(start + counts[k], hi) - std::max(start, lo));
    start += counts[k];
  }
  return within;
}

}  // namespace

bool DeviceAdasum::across_nodes(const Communicator& set, hvd_dtype_t dtype, const NodeLayout* layout) const {
#if HVD_HAVE_NCCL
  return nccl_ && layout && set.id == 0 && NcclBackend::supports(dtype);
#else
  (void)set, (void)dtype, (void)layout;
  return false;
#endif
}

Error DeviceAdasum::check(const Communicator& set, hvd_dtype_t dtype, const NodeLayout* layout) const {
  if (!across_nodes(set, dtype, layout)) {
    if (!power_of_two(set.size))
      return make_error(HVD_ERR_UNSUPPORTED,
                        "HVD_OP_ADASUM needs a power-of-two number of ranks in the process set; "
                        "this one has %d",
                        set.size);
    return Error::success();
  }
  if (!layout->homogeneous)
    return make_error(HVD_ERR_UNSUPPORTED,
                      "HVD_OP_ADASUM of device tensors with NCCL sums within each node and "
                      "combines across nodes, which needs the same number of ranks on every node; "
                      "set HOROVOD_GPU_OPERATIONS=MPI to combine every rank through host memory");
  if (!power_of_two(layout->num_nodes))
    return make_error(HVD_ERR_UNSUPPORTED,
                      "HVD_OP_ADASUM of device tensors with NCCL combines nodes pairwise and needs "
                      "a power-of-two number of nodes; this job has %d",
                      layout->num_nodes);
  return Error::success();
}

Error DeviceAdasum::reduce(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                           const Communicator& set, const NodeLayout* layout) {
  HVD_RETURN_IF_ERROR(check(set, dtype, layout));
  if (!across_nodes(set, dtype, layout)) return staged_->adasum(buffer, counts, dtype, set);  // counts itself
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return nodes(static_cast<char*>(buffer), counts, dtype, *layout);
}

Error DeviceAdasum::nodes(char* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                          const NodeLayout& layout) {
#if HVD_HAVE_NCCL
  const int L = layout.local_size, me = layout.local_rank;
  const size_t esize = dtype_size(dtype);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  const int64_t shard = total / L, tail = total - shard * L;
  // This rank's part: its shard, and for the node's last rank the tail after it (they
  // are adjacent in the buffer).
  const int64_t lo = me * shard, hi = me == L - 1 ? total : lo + shard;
  char* mine = buffer + static_cast<size_t>(lo) * esize;
  char* tail_at = buffer + static_cast<size_t>(shard * L) * esize;

  HVD_RETURN_IF_ERROR(nccl_->ensure_communicator(NcclBackend::kLocalComm, layout.local));
  HVD_RETURN_IF_ERROR(nccl_->group_start());
  Error err;
  if (shard > 0)
    err = nccl_->reducescatter_on(NcclBackend::kLocalComm, buffer, mine, std::vector<int64_t>(L, shard),
                                  dtype, HVD_OP_SUM);
  if (err.ok() && tail > 0)
    err = nccl_->allreduce_on(NcclBackend::kLocalComm, tail_at, tail_at, tail, dtype, HVD_OP_SUM);
  Error ended = nccl_->group_end();
  HVD_RETURN_IF_ERROR(err);
  HVD_RETURN_IF_ERROR(ended);

  // Every local rank runs the cross-node combination, with or without elements: the
  // node's ranks sum their dot products at every level together.
  const size_t bytes = static_cast<size_t>(hi - lo) * esize;
  HVD_RETURN_IF_ERROR(host_.reserve(bytes));
  HVD_RETURN_IF_ERROR(device_->copy(host_.data(), mine, bytes));
  HVD_RETURN_IF_ERROR(device_->synchronize());
  HVD_RETURN_IF_ERROR(vhdd_.allreduce(host_.data(), counts_within(counts, lo, hi), dtype, layout.cross,
                                      layout.local, &counters_->cross_bytes));
  HVD_RETURN_IF_ERROR(device_->copy(mine, host_.data(), bytes));

  HVD_RETURN_IF_ERROR(nccl_->group_start());
  if (shard > 0) {
    std::vector<int64_t> displs(static_cast<size_t>(L));
    for (int r = 0; r < L; ++r) displs[static_cast<size_t>(r)] = r * shard;
    err = nccl_->allgatherv_on(NcclBackend::kLocalComm, mine, buffer, std::vector<int64_t>(L, shard), displs,
                               dtype);
  }
  if (err.ok() && tail > 0)
    err = nccl_->broadcasts_on(NcclBackend::kLocalComm, {{tail_at, static_cast<size_t>(tail) * esize, L - 1}});
  ended = nccl_->group_end();
  HVD_RETURN_IF_ERROR(err);
  HVD_RETURN_IF_ERROR(ended);
  // Within the node: the reduce-scatter and the allgather each send (L-1)/L of the
  // buffer from each rank.
  if (L > 1)
    counters_->local_bytes.fetch_add(static_cast<uint64_t>(2.0 * (L - 1) / L * static_cast<double>(total) * esize),
                                     std::memory_order_relaxed);
  return Error::success();
#else
  (void)buffer, (void)counts, (void)dtype, (void)layout;
  return make_error(HVD_ERR_INTERNAL, "Adasum across nodes with NCCL in a build without NCCL");
#endif
}

}  // namespace hvd

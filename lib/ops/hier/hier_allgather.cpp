#include "ops/hier/hier_allgather.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/dtype.h"
#include "ops/mpi/mpi_backend.h"

namespace hvd {

HierarchicalAllgather::HierarchicalAllgather(const NodeLayout& layout, std::vector<int> node_of,
                                             std::vector<int> local_rank_of, int my_rank,
                                             TrafficCounters* counters)
    : layout_(layout), counters_(counters) {
  int nodes = 0;
  for (int n : node_of) nodes = std::max(nodes, n + 1);
  members_.resize(nodes);
  for (size_t r = 0; r < node_of.size(); ++r) {
    auto& m = members_[node_of[r]];
    if (static_cast<int>(m.size()) <= local_rank_of[r]) m.resize(local_rank_of[r] + 1, -1);
    m[local_rank_of[r]] = static_cast<int>(r);
  }
  my_node_ = node_of.empty() ? 0 : node_of[my_rank];
}

bool HierarchicalAllgather::fits(const std::vector<int64_t>& counts, hvd_dtype_t dtype) const {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  return total * static_cast<int64_t>(dtype_size(dtype)) < INT_MAX;
}

Error HierarchicalAllgather::allgatherv(const void* send, void* recv,
                                        const std::vector<int64_t>& counts,
                                        const std::vector<int64_t>& displs, hvd_dtype_t dtype) {
  const size_t esize = dtype_size(dtype);
  MPI_Datatype bytes_type = MPI_BYTE;
  const std::vector<int>& mine = members_[my_node_];
  const int L = static_cast<int>(mine.size());

  // Within the node, in bytes (counts fit in int: checked by the caller).
  std::vector<int> local_counts(L), local_displs(L);
  int64_t node_bytes = 0;
  for (int l = 0; l < L; ++l) {
    local_counts[l] = static_cast<int>(counts[mine[l]] * static_cast<int64_t>(esize));
    local_displs[l] = static_cast<int>(node_bytes);
    node_bytes += local_counts[l];
  }
  const int64_t my_bytes = local_counts[layout_.local_rank];
  // send may lie inside recv (the fused batch gathers in place). The gather below has
  // read it before anything writes recv (the leader's reordering, the broadcast), and
  // what lands on this rank's block is its own bytes: no copy is needed.
  const bool leader = layout_.local_rank == 0;
  char* node_buf =
      leader ? reinterpret_cast<char*>(node_buf_.reserve(static_cast<size_t>(node_bytes) + 1)) : nullptr;
  int rc = MPI_Gatherv(send, static_cast<int>(my_bytes), bytes_type,
                       node_buf, local_counts.data(), local_displs.data(),
                       bytes_type, 0, layout_.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Gatherv (hierarchical allgather, local)");
  counters_->local_bytes.fetch_add(static_cast<uint64_t>(my_bytes), std::memory_order_relaxed);

  int64_t total_bytes = 0;
  for (int64_t c : counts) total_bytes += c * static_cast<int64_t>(esize);
  if (leader) {
    const int nodes = static_cast<int>(members_.size());
    std::vector<int> node_counts(nodes), node_displs(nodes);
    int64_t at = 0;
    for (int n = 0; n < nodes; ++n) {
      int64_t b = 0;
      for (int w : members_[n]) b += counts[w] * static_cast<int64_t>(esize);
      node_counts[n] = static_cast<int>(b);
      node_displs[n] = static_cast<int>(at);
      at += b;
    }
    char* all_buf = reinterpret_cast<char*>(all_buf_.reserve(static_cast<size_t>(at) + 1));
    rc = MPI_Allgatherv(node_buf, static_cast<int>(node_bytes), bytes_type, all_buf,
                        node_counts.data(), node_displs.data(), bytes_type, layout_.cross);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allgatherv (hierarchical allgather, cross)");
    counters_->cross_bytes.fetch_add(static_cast<uint64_t>(node_bytes) * (nodes - 1),
                                     std::memory_order_relaxed);
    // Node-major order to rank order.
    for (int n = 0; n < nodes; ++n) {
      int64_t in = node_displs[n];
      for (int w : members_[n]) {
        const int64_t b = counts[w] * static_cast<int64_t>(esize);
        if (b) std::memcpy(static_cast<char*>(recv) + displs[w] * esize, all_buf + in, b);
        in += b;
      }
    }
  }
  rc = MPI_Bcast(recv, static_cast<int>(total_bytes), bytes_type, 0, layout_.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Bcast (hierarchical allgather, local)");
  if (leader)
    counters_->local_bytes.fetch_add(static_cast<uint64_t>(total_bytes), std::memory_order_relaxed);
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return Error::success();
}

}  // namespace hvd

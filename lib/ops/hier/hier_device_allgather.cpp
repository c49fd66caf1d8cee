#include "ops/hier/hier_device_allgather.h"

#include <algorithm>

#include "base/dtype.h"
#include "hvd_build_config.h"

#if HVD_HAVE_NCCL
#include "ops/nccl/nccl_backend.h"
#endif

namespace hvd {

namespace {

int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t end = 0;
  for (size_t i = 0; i < counts.size() && i < displs.size(); ++i)
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  return end;
}

}  // namespace

bool DeviceHierarchicalAllgather::fits(const std::vector<int64_t>& counts, hvd_dtype_t dtype) const {
  return nccl_ != nullptr || host_->fits(counts, dtype);
}

Error DeviceHierarchicalAllgather::allgatherv(const void* send, void* recv,
                                              const std::vector<int64_t>& counts,
                                              const std::vector<int64_t>& displs,
                                              hvd_dtype_t dtype) {
  if (counts.empty() || displs.size() != counts.size())
    return make_error(HVD_ERR_INTERNAL, "hierarchical allgather needs one count and displacement per rank");
  if (!nccl_) return staged(send, recv, counts, displs, dtype);  // the host algorithm counts itself
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return with_nccl(send, static_cast<char*>(recv), counts, displs, dtype_size(dtype));
}

Error DeviceHierarchicalAllgather::with_nccl(const void* send, char* recv,
                                             const std::vector<int64_t>& counts,
                                             const std::vector<int64_t>& displs, size_t esize) {
#if HVD_HAVE_NCCL
  const NodeLayout& layout = host_->layout();
  const std::vector<std::vector<int>>& members = host_->members();
  const std::vector<int>& mine = members[static_cast<size_t>(host_->my_node())];
  const int L = static_cast<int>(mine.size());
  const bool leader = layout.local_rank == 0;
  const int nodes = static_cast<int>(members.size());
  auto bytes_of = [&](int w) { return static_cast<size_t>(counts[static_cast<size_t>(w)]) * esize; };
  auto place_of = [&](int w) { return recv + static_cast<size_t>(displs[static_cast<size_t>(w)]) * esize; };
  const int me = mine[static_cast<size_t>(layout.local_rank)];

  // The local communicator first, then the leaders' cross one, on every rank alike.
  HVD_RETURN_IF_ERROR(nccl_->ensure_communicator(NcclBackend::kLocalComm, layout.local));
  if (leader && nodes > 1)
    HVD_RETURN_IF_ERROR(nccl_->ensure_communicator(NcclBackend::kCrossComm, layout.cross));

  // 1. The node's blocks to its first rank, in their places.
  std::vector<NcclBackend::PeerBlock> sends, recvs;
  if (leader) {
    HVD_RETURN_IF_ERROR(device_->copy(place_of(me), send, bytes_of(me)));
    for (int l = 1; l < L; ++l) recvs.push_back({place_of(mine[l]), bytes_of(mine[l]), l});
  } else {
    sends.push_back({const_cast<void*>(send), bytes_of(me), 0});
  }
  HVD_RETURN_IF_ERROR(nccl_->send_recv_on(NcclBackend::kLocalComm, sends, recvs));

  // 2. Across nodes among first ranks: node n's first rank is rank n of their cross
  // communicator. Adjacent blocks of one node travel as one broadcast.
  size_t node_bytes = 0;
  for (int w : mine) node_bytes += bytes_of(w);
  if (leader && nodes > 1) {
    std::vector<NcclBackend::BroadcastBlock> runs;
    for (int n = 0; n < nodes; ++n) {
      bool open = false;
      for (int w : members[static_cast<size_t>(n)]) {
        if (w < 0 || bytes_of(w) == 0) continue;
        char* at = place_of(w);
        if (open && static_cast<char*>(runs.back().buffer) + runs.back().bytes == at) {
          runs.back().bytes += bytes_of(w);
        } else {
          runs.push_back({at, bytes_of(w), n});
          open = true;
        }
      }
    }
    HVD_RETURN_IF_ERROR(nccl_->broadcasts_on(NcclBackend::kCrossComm, runs));
    counters_->cross_bytes.fetch_add(static_cast<uint64_t>(node_bytes) * (nodes - 1),
                                     std::memory_order_relaxed);
  }

  // 3. The whole output from the first rank to the rest of the node.
  const size_t total = static_cast<size_t>(extent(counts, displs)) * esize;
  if (L > 1) HVD_RETURN_IF_ERROR(nccl_->broadcasts_on(NcclBackend::kLocalComm, {{recv, total, 0}}));

  // As the host algorithm counts: every rank sends its block within the node, the
  // first rank the whole output.
  counters_->local_bytes.fetch_add(static_cast<uint64_t>(bytes_of(me)), std::memory_order_relaxed);
  if (leader) counters_->local_bytes.fetch_add(static_cast<uint64_t>(total), std::memory_order_relaxed);
  return Error::success();
#else
  (void)send, (void)recv, (void)counts, (void)displs, (void)esize;
  return make_error(HVD_ERR_INTERNAL, "hierarchical NCCL allgather in a build without NCCL");
#endif
}

Error DeviceHierarchicalAllgather::staged(const void* send, void* recv,
                                          const std::vector<int64_t>& counts,
                                          const std::vector<int64_t>& displs, hvd_dtype_t dtype) {
  const size_t esize = dtype_size(dtype);
  const int me = host_->members()[static_cast<size_t>(host_->my_node())]
                                 [static_cast<size_t>(host_->layout().local_rank)];
  const size_t total = static_cast<size_t>(extent(counts, displs)) * esize;
  const size_t offset = static_cast<size_t>(displs[static_cast<size_t>(me)]) * esize;
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(me)]) * esize;
  HVD_RETURN_IF_ERROR(staging_.reserve(std::max(total, offset + mine)));
  char* host = static_cast<char*>(staging_.data());
  HVD_RETURN_IF_ERROR(device_->copy(host + offset, send, mine));
  HVD_RETURN_IF_ERROR(device_->synchronize());
  HVD_RETURN_IF_ERROR(host_->allgatherv(host + offset, host, counts, displs, dtype));
  return device_->copy(recv, host, total);
}

}  // namespace hvd

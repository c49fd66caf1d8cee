// Hierarchical allgather over host memory: gather within each node to its first
// rank, exchange node blocks among those ranks across nodes, broadcast the result
// within each node. Only one rank per node sends across nodes, once per node block.
#pragma once

#include <vector>

#include "base/host_memory.h"
#include "ops/hier/hier_allreduce.h"

namespace hvd {

class HierarchicalAllgather {
 public:
  // node_of / local_rank_of: for every world rank, its node index and local rank.
  HierarchicalAllgather(const NodeLayout& layout, std::vector<int> node_of,
                        std::vector<int> local_rank_of, int my_rank, TrafficCounters* counters);

  bool useful() const { return layout_.num_nodes > 1 && layout_.max_local_size > 1; }
  // Whether the output fits the int byte counts this algorithm uses (else: flat).
  bool fits(const std::vector<int64_t>& counts, hvd_dtype_t dtype) const;
  const NodeLayout& layout() const { return layout_; }
  // node index -> its world ranks by local rank; a node's index is its first rank's
  // rank in the cross communicator of local rank 0.
  const std::vector<std::vector<int>>& members() const { return members_; }
  int my_node() const { return my_node_; }

  // The same contract as Backend::allgatherv over the global set (world rank r's
  // counts[r] elements land at displs[r]; send may lie inside recv).
  Error allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                   const std::vector<int64_t>& displs, hvd_dtype_t dtype);

 private:
  NodeLayout layout_;
  std::vector<std::vector<int>> members_;  // node -> world ranks by local rank
  int my_node_ = 0;
  TrafficCounters* counters_;
  HostBuffer node_buf_, all_buf_;  // in huge pages: MPI moves them between ranks
};

}  // namespace hvd

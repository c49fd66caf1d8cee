// Hierarchical allreduce over host memory, composed from MPI on the node-local and
// cross-node communicators:
//   equal ranks per node: reduce-scatter within the node, allreduce of each shard
//     across nodes (every local rank in parallel, on its own cross communicator),
//     allgather within the node. Cross-node traffic is 1/local_size of a flat
//     allreduce's.
//   unequal nodes (e.g. 3 + 1): reduce to the node's first rank, allreduce among
//     those, broadcast within the node. Correct for any layout, less parallel.
#pragma once

#include <mpi.h>

#include <vector>

#include "ops/backend.h"

namespace hvd {

struct NodeLayout {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm cross = MPI_COMM_NULL;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  bool homogeneous = true;
  int num_nodes = 1;       // equal on every rank, as are the two below
  int max_local_size = 1;
  // Communicator of the first rank of every node (MPI_COMM_NULL elsewhere); used on
  // unequal layouts. Created by the owner.
  MPI_Comm leaders = MPI_COMM_NULL;
};

class HierarchicalAllreduce {
 public:
  HierarchicalAllreduce(const NodeLayout& layout, int64_t chunk_bytes, TrafficCounters* counters)
      : layout_(layout), chunk_bytes_(chunk_bytes), counters_(counters) {}

  // True when the job has more than one node and more than one rank on some node
  // (otherwise a flat allreduce is the same thing). The same answer on every rank.
  bool useful() const;
  const NodeLayout& layout() const { return layout_; }
  int64_t chunk_bytes() const { return chunk_bytes_; }

  // buffer (count elements) is reduced in place over the whole job. op: SUM, MIN, MAX
  // or PRODUCT.
  Error allreduce(void* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);

 private:
  Error piece_homogeneous(char* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);
  Error piece_leaders(char* buffer, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op);

  NodeLayout layout_;
  int64_t chunk_bytes_;
  TrafficCounters* counters_;
  std::vector<char> shard_;
};

}  // namespace hvd

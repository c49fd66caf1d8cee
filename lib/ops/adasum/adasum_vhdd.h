// Adasum over MPI with Horovod's algorithm: recursive vector halving, distance
// doubling (VHDD). At distance d = 1, 2, 4, ... each rank swaps half of its current
// slice with rank ^ d, so that the pair holds the two subtrees' vectors (left: ranks
// with bit d clear) on complementary halves; the ranks that share a slice of the
// same tensors (2d of them) sum their partial dot products and norms, and each
// combines its half with the Adasum coefficients of the whole tensors. Then the
// halves travel back in reverse order, so every rank ends with the whole result.
// Each tensor of a fused batch gets its own coefficients: the per-tensor sums travel
// together, one small exchange per partner.
//
// The combination is a binary tree over the ranks in order ((0,1),(2,3)), ...), so
// the communicator's size must be a power of two (as in Horovod); the caller checks.
#pragma once

#include <mpi.h>

#include <atomic>
#include <utility>
#include <vector>

#include "ops/adasum/adasum_math.h"
#include "ops/backend.h"

namespace hvd {

class AdasumVhdd {
 public:
  // buffer: this rank's elements of a batch's tensors, back to back, counts[i] of
  // tensor i (0 where this rank holds none of it); every rank of comm passes the same
  // number of tensors and the same sum of counts. Reduced in place over comm.
  // peers: MPI_COMM_NULL, or the ranks holding the other parts of the same tensors,
  // each running this call on its own comm at the same time (the hierarchical device
  // path: every local rank reduces its shard across nodes); their dot products and
  // norms are summed with ours. sent: bytes this rank sends are added there.
  Error allreduce(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                  MPI_Comm comm, MPI_Comm peers, std::atomic<uint64_t>* sent);

 private:
  // Swaps send (send_count elements) for recv (recv_count) with partner.
  Error exchange(const void* send, int64_t send_count, void* recv, int64_t recv_count,
                 size_t esize, int partner, MPI_Comm comm, std::atomic<uint64_t>* sent);
  // sums_ += the same vector of every rank within distance d (rank ^ 1, ^ 2, ... ^ d)
  // and of peers.
  Error sum_within(int rank, int d, MPI_Comm comm, MPI_Comm peers);

  std::vector<unsigned char> other_;  // the partner's copy of the half this rank keeps
  std::vector<double> sums_;          // per tensor: a.b, |a|^2, |b|^2 (a: left subtree)
  std::vector<double> received_;
  std::vector<int64_t> starts_;       // offset of each tensor in the buffer
  std::vector<std::pair<int64_t, int64_t>> levels_;  // slices held, level by level
};

}  // namespace hvd

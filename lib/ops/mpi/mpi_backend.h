// Host-memory collectives over MPI. Buffers larger than the chunk size are reduced
// in consecutive chunks: MPI counts are int, and MPICH's one large call is slower
// than several medium ones (it allocates and faults in a temporary buffer per call).
// Allgather, alltoall and reduce-scatter blocks go in rounds of the same chunks, so
// the operation watchdog sees each round arrive (base/op_progress.h).
// Staged (fused) allreduces go in pieces smaller than a core's cache: copied in,
// reduced and copied out while the piece is still cached, instead of streaming the
// whole fusion buffer through memory three times.
#pragma once

#include "ops/adasum/adasum_vhdd.h"
#include "ops/backend.h"

namespace hvd {

class MpiBackend : public Backend {
 public:
  MpiBackend(int64_t chunk_bytes, TrafficCounters* counters)
      : chunk_bytes_(chunk_bytes), counters_(counters) {}
  const char* name() const override { return "mpi"; }
  void set_piece_bytes(int64_t bytes) { piece_bytes_ = bytes; }
  // The chunk size of allreduce() and allreduce_then() from now on (broadcasts keep
  // the one given at construction). Every rank of a set must use the same for the
  // same call: it changes only between negotiation rounds, by an agreed flag.
  void set_allreduce_chunk_bytes(int64_t bytes) { allreduce_chunk_bytes_ = bytes; }
  int64_t allreduce_chunk_bytes() const { return allreduce_chunk_bytes_; }
  Error allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                  hvd_reduce_op_t op, const Communicator& comm) override;
  // Each chunk finished after its MPI call: the calls are those allreduce() makes.
  Error allreduce_then(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                       hvd_reduce_op_t op, const Communicator& comm,
                       const Stage& finish) override;
  Error broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                  const Communicator& comm) override;
  Error allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                   const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                   const Communicator& comm) override;
  Error alltoallv(const void* send, const std::vector<int64_t>& send_counts,
                  const std::vector<int64_t>& send_displs, void* recv,
                  const std::vector<int64_t>& recv_counts,
                  const std::vector<int64_t>& recv_displs, hvd_dtype_t dtype,
                  int64_t largest_count, const Communicator& comm) override;
  Error reducescatter(const void* send, void* recv, const std::vector<int64_t>& counts,
                      hvd_dtype_t dtype, hvd_reduce_op_t op, const Communicator& comm) override;
  int64_t staging_count(int64_t count, hvd_dtype_t dtype) const override;
  Pieces staging_pieces(int64_t count, hvd_dtype_t dtype, bool equal_pieces) const override;
  Error allreduce_staged(int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                         const Communicator& comm, const Fill& fill, const Stage& drain,
                         bool equal_pieces) override;
  bool reduces_scattered(int set_size) const override { return set_size >= 2; }
  // In pieces of the staging size, cut evenly, each a ring (ops/mpi/ring_allreduce.h).
  Error allreduce_scattered(int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                            const Communicator& comm, const Scattered& operand) override;
  Error adasum(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
               const Communicator& comm) override;

  // The same on an explicit communicator (hierarchical algorithms use local/cross).
  // finish, if given, runs on each chunk's result right after its call.
  Error allreduce_on(MPI_Comm comm, const void* send, void* recv, int64_t count,
                     hvd_dtype_t dtype, hvd_reduce_op_t op, std::atomic<uint64_t>* bytes,
                     const Stage* finish = nullptr);

 private:
  int64_t chunk_elements(hvd_dtype_t dtype) const;
  // Rounds of allgatherv, alltoallv and reducescatter: the largest block in chunks.
  int64_t rounds_of(int64_t largest_block, hvd_dtype_t dtype) const;
  int64_t chunk_bytes_;
  int64_t allreduce_chunk_bytes_ = chunk_bytes_;
  int64_t piece_bytes_ = 512 << 10;
  TrafficCounters* counters_;
  AdasumVhdd adasum_;
  std::vector<unsigned char> ring_buffers_;
  std::vector<unsigned char> pack_buffer_;  // a reduce-scatter round's operand
};

Error mpi_error(int code, const char* what);

}  // namespace hvd

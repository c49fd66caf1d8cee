// One interface for the transports that move tensor data. Algorithms above it
// (fusion, hierarchical) are written once against it; mpi/ serves host memory and
// nccl/ device memory. Implementations count the bytes they send.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/error.h"
#include "hvd/hvd.h"
#include "ops/communicator.h"

namespace hvd {

struct TrafficCounters {
  std::atomic<uint64_t> global_bytes{0};
  std::atomic<uint64_t> local_bytes{0};
  std::atomic<uint64_t> cross_bytes{0};
  std::atomic<uint64_t> collectives{0};
  std::atomic<uint64_t> ring_allreduces{0};  // of the collectives: allreduce_scattered's
  std::atomic<uint64_t> core_round_trip_ns{0};  // adapt/far_cores.h
  std::atomic<uint64_t> far_cores{0};
  std::atomic<uint64_t> back_to_back{0};  // adapt/layout_watch.h
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // recv = reduction of send over the set (send == recv: in place). op is SUM, MIN,
  // MAX or PRODUCT; AVERAGE is SUM plus scaling done by the caller.
  virtual Error allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                          hvd_reduce_op_t op, const Communicator& comm) = 0;
  // A fused allreduce of count elements that the caller hands over piece by piece:
  // fill(offset, n) prepares elements [offset, offset + n) of the operand and returns
  // where they lie (the start of a staging buffer with room for staging_count(count)
  // elements, or the caller's own memory when the piece is already contiguous there),
  // the backend reduces them there in place, and drain(offset, n) takes the result
  // out. One collective. Every rank makes the same calls whatever fill returns: where
  // a piece lies is a local matter. This default takes the operand whole; a backend
  // may go piece by piece, so that a piece is still in cache when it is reduced and
  // drained. equal_pieces: every call moves (nearly) the same bytes (over TCP one
  // odd-sized call slows the full-sized ones after it for tens of calls:
  // docs/performance.md, 2026-11-27 07:15 entry); see staging_pieces.
  using Fill = std::function<void*(int64_t offset, int64_t count)>;
  using Stage = std::function<void(int64_t offset, int64_t count)>;
  virtual int64_t staging_count(int64_t count, hvd_dtype_t) const { return count; }
  // How allreduce_staged cuts count elements: pieces of `piece` elements, the last one
  // shorter by what is left over. With equal_pieces the count is cut evenly (pieces
  // differ by at most one element per piece of the cut), and where an even cut would
  // leave pieces much smaller than the staging size, the last piece is instead reduced
  // at the others' length (pad_last): fill then returns the staging buffer for it,
  // zeroed past the piece. The same on every rank for the same count.
  struct Pieces {
    int64_t piece;
    bool pad_last;
  };
  virtual Pieces staging_pieces(int64_t count, hvd_dtype_t, bool equal_pieces) const {
    (void)equal_pieces;  // one piece
    return {count, false};
  }
  virtual Error allreduce_staged(int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                                 const Communicator& comm, const Fill& fill, const Stage& drain,
                                 bool equal_pieces) {
    (void)equal_pieces;  // one piece
    void* at = fill(0, count);
    HVD_RETURN_IF_ERROR(allreduce(at, at, count, dtype, op, comm));
    drain(0, count);
    return Error::success();
  }
  // A fused allreduce of count elements that stay in the caller's tensors, for
  // backends that reduce them there instead of staging the operand (reduces_scattered):
  // gather(offset, n, dst) writes elements [offset, offset + n) of the operand into
  // dst; accumulate(offset, n, buf, reduce, deliver) makes buf[i] = operand[offset + i]
  // (op) buf[i] by calling reduce(in, inout, k) on its parts (inout[j] = in[j] (op)
  // inout[j], as the backend combines two ranks' elements) and, with deliver, also
  // delivers each part so made, while it is in cache; deliver(offset, n, src) puts
  // reduced elements into their outputs. Ranges come in any order; each element
  // is delivered once. The same calls on every rank. Where a whole range the backend
  // reduces at once (a piece) lies in the caller's memory, in place (a flat gradient
  // buffer, or one large tensor), locate(offset, n) returns it, its operand ready
  // there, and the backend reduces it where it is, then calls finish(offset, n) for its
  // scaling; elsewhere locate returns nullptr (where it lies is a local matter: every
  // rank still makes the same calls).
  struct Scattered {
    using Reduce = std::function<void(const void* in, void* inout, int64_t count)>;
    std::function<void*(int64_t offset, int64_t count)> locate;
    std::function<void(int64_t offset, int64_t count)> finish;
    std::function<void(int64_t offset, int64_t count, void* dst)> gather;
    std::function<void(int64_t offset, int64_t count, void* buf, const Reduce& reduce,
                       bool deliver)>
        accumulate;
    std::function<void(int64_t offset, int64_t count, const void* src)> deliver;
  };
  // Whether allreduce_scattered can reduce on a set of set_size ranks.
  virtual bool reduces_scattered(int set_size) const {
    (void)set_size;
    return false;
  }
  virtual Error allreduce_scattered(int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                                    const Communicator& comm, const Scattered& operand) {
    (void)count, (void)dtype, (void)op, (void)comm, (void)operand;
    return make_error(HVD_ERR_INTERNAL, "the %s backend does not reduce scattered operands",
                      name());
  }
  // allreduce() with finish(offset, n) run on each part of recv as soon as the part is
  // reduced (the caller's scaling, while the part is still in cache, instead of a pass
  // over the whole result afterwards). This default reduces whole, then finishes once.
  virtual Error allreduce_then(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                               hvd_reduce_op_t op, const Communicator& comm,
                               const Stage& finish) {
    HVD_RETURN_IF_ERROR(allreduce(send, recv, count, dtype, op, comm));
    finish(0, count);
    return Error::success();
  }
  // count elements from set rank root to every rank of the set.
  virtual Error broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                          const Communicator& comm) = 0;
  // Set rank r contributes counts[r] elements; recv holds them all, rank r's block at
  // displs[r] (elements). send may be recv + displs[my rank] (in place).
  virtual Error allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                           const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                           const Communicator& comm) = 0;
  // send_counts[r] elements at send_displs[r] go to set rank r; recv_counts[r] elements
  // from set rank r land at recv_displs[r]. Out of place only. largest_count: the most
  // elements any rank of the set sends to any one rank, alike on every rank (a backend
  // that moves the blocks in rounds of chunks makes that many rounds everywhere).
  virtual Error alltoallv(const void* send, const std::vector<int64_t>& send_counts,
                          const std::vector<int64_t>& send_displs, void* recv,
                          const std::vector<int64_t>& recv_counts,
                          const std::vector<int64_t>& recv_displs, hvd_dtype_t dtype,
                          int64_t largest_count, const Communicator& comm) = 0;
  // send holds sum(counts) elements laid out rank by rank; recv gets counts[my rank]
  // elements, the reduction over the set of block my rank. Out of place only.
  virtual Error reducescatter(const void* send, void* recv, const std::vector<int64_t>& counts,
                              hvd_dtype_t dtype, hvd_reduce_op_t op, const Communicator& comm) = 0;

  // HVD_OP_ADASUM of a batch in place: buffer holds the tensors back to back,
  // counts[i] elements of tensor i, each combined with its own coefficients over the
  // set, whose size is a power of two (the caller has checked). Float dtypes only.
  virtual Error adasum(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                       const Communicator& comm) {
    return make_error(HVD_ERR_UNSUPPORTED, "the %s backend has no Adasum", name());
  }

  // Called on every rank of the world, collectively, after a set is created and
  // before it is destroyed (comm.mpi is MPI_COMM_NULL on non-members), so a backend
  // can build or free its own communicators.
  virtual Error process_set_added(const Communicator& comm) { return {}; }
  virtual void process_set_removed(const Communicator& comm) {}
};

}  // namespace hvd

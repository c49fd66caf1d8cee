#include "ops/mpi/mpi_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/dtype.h"
#include "base/op_progress.h"
#include "ops/mpi/mpi_types.h"
#include "ops/mpi/ring_allreduce.h"

namespace hvd {

Error mpi_error(int code, const char* what) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(code, text, &len);
  return make_error(HVD_ERR_MPI, "%s failed: %s", what, text);
}

int64_t MpiBackend::chunk_elements(hvd_dtype_t dtype) const {
  int64_t n = allreduce_chunk_bytes_ / static_cast<int64_t>(dtype_size(dtype));
  return std::clamp<int64_t>(n, 1, INT_MAX / 2);
}

Error MpiBackend::allreduce_on(MPI_Comm comm, const void* send, void* recv, int64_t count,
                               hvd_dtype_t dtype, hvd_reduce_op_t op,
                               std::atomic<uint64_t>* bytes, const Stage* finish) {
  const size_t esize = dtype_size(dtype);
  const int64_t chunk = chunk_elements(dtype);
  MPI_Datatype type = mpi_datatype(dtype);
  MPI_Op mpi_op = mpi_reduce_op(op, dtype);
  int size = 1;
  MPI_Comm_size(comm, &size);
  for (int64_t off = 0; off < count; off += chunk) {
    int n = static_cast<int>(std::min(chunk, count - off));
    char* out = static_cast<char*>(recv) + off * esize;
    const void* in = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + off * esize;
    int rc = MPI_Allreduce(in, out, n, type, mpi_op, comm);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce");
    note_op_progress(static_cast<int64_t>(n) * static_cast<int64_t>(esize));
    if (finish) (*finish)(off, n);
  }
  // A ring allreduce sends 2 (n-1)/n of the buffer from each rank.
  if (bytes && size > 1)
    bytes->fetch_add(static_cast<uint64_t>(2.0 * (size - 1) / size * count * esize));
  return Error::success();
}

Error MpiBackend::allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                            hvd_reduce_op_t op, const Communicator& comm) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return allreduce_on(comm.mpi, send, recv, count, dtype, op, &counters_->global_bytes);
}

Error MpiBackend::allreduce_then(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                                 hvd_reduce_op_t op, const Communicator& comm,
                                 const Stage& finish) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return allreduce_on(comm.mpi, send, recv, count, dtype, op, &counters_->global_bytes, &finish);
}

int64_t MpiBackend::staging_count(int64_t count, hvd_dtype_t dtype) const {
  const int64_t piece = std::max<int64_t>(1, piece_bytes_ / static_cast<int64_t>(dtype_size(dtype)));
  return std::min(count, piece);
}

Backend::Pieces MpiBackend::staging_pieces(int64_t count, hvd_dtype_t dtype,
                                           bool equal_pieces) const {
  const int64_t most = staging_count(count, dtype);
  if (!equal_pieces || count <= most) return {most, false};
  // Cut evenly: no padded copy of a short last piece (a flat gradient buffer is then
  // reduced entirely where it lies) and no padding sent. An even cut of a count just
  // above a piece would halve the calls' size, so below 7/8 of the staging size the
  // last piece is padded instead.
  const int64_t pieces = (count + most - 1) / most;
  const int64_t even = (count + pieces - 1) / pieces;
  if (even * 8 >= most * 7) return {even, false};
  return {most, true};
}

Error MpiBackend::allreduce_staged(int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                                   const Communicator& comm, const Fill& fill, const Stage& drain,
                                   bool equal_pieces) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  const Pieces cut = staging_pieces(count, dtype, equal_pieces);
  const int64_t piece = cut.piece;
  for (int64_t offset = 0; offset < count; offset += piece) {
    const int64_t n = std::min(piece, count - offset);
    void* at = fill(offset, n);
    const int64_t reduced = cut.pad_last ? piece : n;
    HVD_RETURN_IF_ERROR(allreduce_on(comm.mpi, at, at, reduced, dtype, op, &counters_->global_bytes));
    drain(offset, n);
  }
  return Error::success();
}

Error MpiBackend::allreduce_scattered(int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                                      const Communicator& comm, const Scattered& operand) {
  if (count <= 0) return Error::success();  // nothing to send (and no piece size to cut by)
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  counters_->ring_allreduces.fetch_add(1, std::memory_order_relaxed);
  // Pieces of one size (the staging size, cut evenly): each piece's segments are sent
  // while the tensors they came from are still in cache, and over TCP equal calls keep
  // their speed (see staging_pieces).
  const int64_t most = std::min<int64_t>(staging_count(count, dtype), (INT_MAX / 2) / static_cast<int64_t>(dtype_size(dtype)));
  const int64_t pieces = (count + most - 1) / most;
  const int64_t even = (count + pieces - 1) / pieces;
  for (int64_t offset = 0; offset < count; offset += even) {
    const int64_t n = std::min(even, count - offset);
    const Scattered piece{
        [&](int64_t o, int64_t k) { return operand.locate(offset + o, k); },
        [&](int64_t o, int64_t k) { operand.finish(offset + o, k); },
        [&](int64_t o, int64_t k, void* dst) { operand.gather(offset + o, k, dst); },
        [&](int64_t o, int64_t k, void* buf, const Scattered::Reduce& reduce, bool deliver) {
          operand.accumulate(offset + o, k, buf, reduce, deliver);
        },
        [&](int64_t o, int64_t k, const void* src) { operand.deliver(offset + o, k, src); }};
    HVD_RETURN_IF_ERROR(ring_allreduce(comm.mpi, n, dtype, op, piece, &ring_buffers_));
    note_op_progress(n * static_cast<int64_t>(dtype_size(dtype)));
  }
  if (comm.size > 1)
    counters_->global_bytes.fetch_add(
        static_cast<uint64_t>(2.0 * (comm.size - 1) / comm.size * count * dtype_size(dtype)));
  return Error::success();
}

Error MpiBackend::adasum(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                         const Communicator& comm) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return adasum_.allreduce(buffer, counts, dtype, comm.mpi, MPI_COMM_NULL, &counters_->global_bytes);
}

Error MpiBackend::broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                            const Communicator& comm) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
  const int64_t chunk = std::clamp<int64_t>(chunk_bytes_, 1, INT_MAX / 2);
  for (int64_t off = 0; off < bytes; off += chunk) {
    int n = static_cast<int>(std::min(chunk, bytes - off));
    int rc = MPI_Bcast(static_cast<char*>(buffer) + off, n, MPI_BYTE, root, comm.mpi);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Bcast");
    note_op_progress(n);
  }
  if (comm.rank == root)
    counters_->global_bytes.fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
  return Error::success();
}

namespace {

bool fits_int(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x >= 0 && x <= INT_MAX; });
}

std::vector<int> to_int(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

#if MPI_VERSION >= 4
std::vector<MPI_Count> to_count(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }
std::vector<MPI_Aint> to_aint(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }
#endif

[[maybe_unused]] Error too_large(const char* what) {
  return make_error(HVD_ERR_UNSUPPORTED,
                    "%s of more than 2^31 elements per rank needs an MPI-4 library "
                    "(large-count functions); split the tensor", what);
}

uint64_t sum_bytes(const std::vector<int64_t>& counts, int skip, size_t esize) {
  uint64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r)
    if (static_cast<int>(r) != skip) total += static_cast<uint64_t>(counts[r]) * esize;
  return total;
}

}  // namespace

namespace {

int64_t largest(const std::vector<int64_t>& v) {
  int64_t most = 0;
  for (int64_t x : v) most = std::max(most, x);
  return most;
}

int64_t total(const std::vector<int64_t>& v) {
  int64_t sum = 0;
  for (int64_t x : v) sum += x;
  return sum;
}

// Where each rank's segment starts in a buffer that holds them rank after rank.
std::vector<int64_t> segment_starts(const std::vector<int64_t>& counts) {
  std::vector<int64_t> starts(counts.size());
  int64_t at = 0;
  for (size_t q = 0; q < counts.size(); ++q) {
    starts[q] = at;
    at += counts[q];
  }
  return starts;
}

// Round `round` of blocks moved in chunks of `chunk` elements: chunk `round` of each
// block (none where a block is shorter), and where it starts.
void cut_round(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs,
               int64_t round, int64_t chunk, std::vector<int64_t>* round_counts,
               std::vector<int64_t>* round_displs) {
  const int64_t skip = round * chunk;
  for (size_t q = 0; q < counts.size(); ++q) {
    const int64_t done = std::min(skip, counts[q]);
    (*round_counts)[q] = std::min(chunk, counts[q] - done);
    (*round_displs)[q] = displs[q] + done;
  }
}

// Large counts go through MPI-4's _c functions; everything else through the classic
// int-count calls, which every MPI implements and tunes best.
Error allgatherv_once(const void* in, void* recv, const std::vector<int64_t>& counts,
                      const std::vector<int64_t>& displs, MPI_Datatype type, int me, MPI_Comm comm) {
  int rc;
  if (fits_int(counts) && fits_int(displs)) {
    auto c = to_int(counts), d = to_int(displs);
    rc = MPI_Allgatherv(in, c[me], type, recv, c.data(), d.data(), type, comm);
  } else {
#if MPI_VERSION >= 4
    auto c = to_count(counts);
    auto d = to_aint(displs);
    rc = MPI_Allgatherv_c(in, c[me], type, recv, c.data(), d.data(), type, comm);
#else
    return too_large("allgather");
#endif
  }
  return rc == MPI_SUCCESS ? Error::success() : mpi_error(rc, "MPI_Allgatherv");
}

Error alltoallv_once(const void* send, const std::vector<int64_t>& send_counts,
                     const std::vector<int64_t>& send_displs, void* recv,
                     const std::vector<int64_t>& recv_counts,
                     const std::vector<int64_t>& recv_displs, MPI_Datatype type, MPI_Comm comm) {
  int rc;
  if (fits_int(send_counts) && fits_int(send_displs) && fits_int(recv_counts) &&
      fits_int(recv_displs)) {
    auto sc = to_int(send_counts), sd = to_int(send_displs);
    auto rcn = to_int(recv_counts), rd = to_int(recv_displs);
    rc = MPI_Alltoallv(send, sc.data(), sd.data(), type, recv, rcn.data(), rd.data(), type, comm);
  } else {
#if MPI_VERSION >= 4
    auto sc = to_count(send_counts), rcn = to_count(recv_counts);
    auto sd = to_aint(send_displs), rd = to_aint(recv_displs);
    rc = MPI_Alltoallv_c(send, sc.data(), sd.data(), type, recv, rcn.data(), rd.data(), type, comm);
#else
    return too_large("alltoall");
#endif
  }
  return rc == MPI_SUCCESS ? Error::success() : mpi_error(rc, "MPI_Alltoallv");
}

Error reducescatter_once(const void* send, void* recv, const std::vector<int64_t>& counts,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  int rc;
  if (fits_int(counts)) {
    auto c = to_int(counts);
    rc = MPI_Reduce_scatter(send, recv, c.data(), type, op, comm);
  } else {
#if MPI_VERSION >= 4
    auto c = to_count(counts);
    rc = MPI_Reduce_scatter_c(send, recv, c.data(), type, op, comm);
#else
    return too_large("reducescatter");
#endif
  }
  return rc == MPI_SUCCESS ? Error::success() : mpi_error(rc, "MPI_Reduce_scatter");
}

}  // namespace

// The three below move every rank's block in rounds, chunk r of each block in round r
// (chunks of the allreduce's size, the same on every rank of the call), and report each
// round to the watchdog: one call over a slow link would show no progress until it all
// arrived. A block within one chunk makes one round, today's single call.
int64_t MpiBackend::rounds_of(int64_t largest_block, hvd_dtype_t dtype) const {
  const int64_t chunk = chunk_elements(dtype);
  return std::max<int64_t>(1, (largest_block + chunk - 1) / chunk);
}

Error MpiBackend::allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                             const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                             const Communicator& comm) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  MPI_Datatype type = mpi_datatype(dtype);
  const int me = comm.rank;
  const size_t esize = dtype_size(dtype);
  const bool in_place = send == static_cast<const char*>(recv) + displs[me] * esize;
  const int64_t rounds = rounds_of(largest(counts), dtype);
  if (rounds == 1) {
    HVD_RETURN_IF_ERROR(
        allgatherv_once(in_place ? MPI_IN_PLACE : send, recv, counts, displs, type, me, comm.mpi));
    note_op_progress(total(counts) * static_cast<int64_t>(esize));
  } else {
    const int64_t chunk = chunk_elements(dtype);
    std::vector<int64_t> c(counts.size()), d(counts.size());
    for (int64_t round = 0; round < rounds; ++round) {
      cut_round(counts, displs, round, chunk, &c, &d);
      // In place, this rank's chunk already lies at d[me]; otherwise it is read from
      // the same place in send as it goes to in recv.
      const void* in = in_place ? MPI_IN_PLACE
                                : static_cast<const char*>(send) + (d[me] - displs[me]) * esize;
      HVD_RETURN_IF_ERROR(allgatherv_once(in, recv, c, d, type, me, comm.mpi));
      note_op_progress(total(c) * static_cast<int64_t>(esize));
    }
  }
  counters_->global_bytes.fetch_add(static_cast<uint64_t>(counts[me]) * esize * (comm.size - 1),
                                    std::memory_order_relaxed);
  return Error::success();
}

Error MpiBackend::alltoallv(const void* send, const std::vector<int64_t>& send_counts,
                            const std::vector<int64_t>& send_displs, void* recv,
                            const std::vector<int64_t>& recv_counts,
                            const std::vector<int64_t>& recv_displs, hvd_dtype_t dtype,
                            int64_t largest_count, const Communicator& comm) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  MPI_Datatype type = mpi_datatype(dtype);
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  // Every rank makes the rounds of the largest block any rank sends (negotiated, so
  // alike everywhere), with empty calls where its own blocks have run out.
  const int64_t rounds = rounds_of(largest_count, dtype);
  if (rounds == 1) {
    HVD_RETURN_IF_ERROR(alltoallv_once(send, send_counts, send_displs, recv, recv_counts,
                                       recv_displs, type, comm.mpi));
    note_op_progress(total(send_counts) * esize);
  } else {
    const int64_t chunk = chunk_elements(dtype);
    const size_t n = send_counts.size();
    std::vector<int64_t> sc(n), sd(n), rc(n), rd(n);
    for (int64_t round = 0; round < rounds; ++round) {
      cut_round(send_counts, send_displs, round, chunk, &sc, &sd);
      cut_round(recv_counts, recv_displs, round, chunk, &rc, &rd);
      HVD_RETURN_IF_ERROR(alltoallv_once(send, sc, sd, recv, rc, rd, type, comm.mpi));
      note_op_progress(total(sc) * esize);
    }
  }
  counters_->global_bytes.fetch_add(sum_bytes(send_counts, comm.rank, dtype_size(dtype)),
                                    std::memory_order_relaxed);
  return Error::success();
}

// In rounds, each round's chunks of every rank's segment are packed side by side, as
// MPI_Reduce_scatter wants its operand: one copy of the operand, a chunk-sized buffer
// that stays in cache, and no byte more on the wire. A derived datatype would not save
// the copy: the call takes one datatype for the operand and the result (the result's
// chunk is contiguous), the reduction ops (MPI's own, and libhvd's float16, bfloat16
// and unsigned MIN/MAX) are made for contiguous elements, and MPI packs a
// non-contiguous operand into a buffer of its own before it reduces.
Error MpiBackend::reducescatter(const void* send, void* recv, const std::vector<int64_t>& counts,
                                hvd_dtype_t dtype, hvd_reduce_op_t op, const Communicator& comm) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  MPI_Datatype type = mpi_datatype(dtype);
  MPI_Op mpi_op = mpi_reduce_op(op, dtype);
  const size_t esize = dtype_size(dtype);
  const int me = comm.rank;
  const int64_t rounds = rounds_of(largest(counts), dtype);
  if (rounds == 1) {
    HVD_RETURN_IF_ERROR(reducescatter_once(send, recv, counts, type, mpi_op, comm.mpi));
    note_op_progress(total(counts) * static_cast<int64_t>(esize));
  } else {
    const int64_t chunk = chunk_elements(dtype);
    const std::vector<int64_t> starts = segment_starts(counts);
    std::vector<int64_t> c(counts.size()), at(counts.size());
    int64_t packed_most = 0;
    for (int64_t x : counts) packed_most += std::min(x, chunk);
    pack_buffer_.resize(static_cast<size_t>(packed_most) * esize);
    for (int64_t round = 0; round < rounds; ++round) {
      cut_round(counts, starts, round, chunk, &c, &at);
      unsigned char* packed = pack_buffer_.data();
      for (size_t q = 0; q < counts.size(); ++q) {
        const size_t bytes = static_cast<size_t>(c[q]) * esize;
        if (bytes) std::memcpy(packed, static_cast<const char*>(send) + at[q] * esize, bytes);
        packed += bytes;
      }
      void* out = static_cast<char*>(recv) + (at[me] - starts[me]) * esize;
      HVD_RETURN_IF_ERROR(reducescatter_once(pack_buffer_.data(), out, c, type, mpi_op, comm.mpi));
      note_op_progress(total(c) * static_cast<int64_t>(esize));
    }
  }
  counters_->global_bytes.fetch_add(sum_bytes(counts, comm.rank, dtype_size(dtype)),
                                    std::memory_order_relaxed);
  return Error::success();
}

}  // namespace hvd

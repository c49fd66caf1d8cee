#include "ops/adasum/adasum_vhdd.h"

#include <algorithm>
#include <climits>

#include "base/dtype.h"
#include "ops/mpi/mpi_backend.h"

namespace hvd {

namespace {

constexpr int kTag = 0x4144;           // "AD": VHDD messages on the set's communicator
constexpr int64_t kMessageBytes = 1 << 30;  // MPI counts are int

// The part of [lo, hi) that tensor k, at [start, start + count), covers.
struct Span {
  int64_t first, count;  // offset into the buffer, elements
};
Span overlap(int64_t start, int64_t count, int64_t lo, int64_t hi) {
  const int64_t a = std::max(start, lo), b = std::min(start + count, hi);
  return {a, std::max<int64_t>(0, b - a)};
}

}  // namespace

Error AdasumVhdd::exchange(const void* send, int64_t send_count, void* recv, int64_t recv_count,
                           size_t esize, int partner, MPI_Comm comm, std::atomic<uint64_t>* sent) {
  const int64_t send_bytes = send_count * static_cast<int64_t>(esize);
  const int64_t recv_bytes = recv_count * static_cast<int64_t>(esize);
  // Both sides loop over the larger of the two, so they make the same number of calls.
  const int64_t total = std::max(send_bytes, recv_bytes);
  int64_t off = 0;
  do {
    const int s = static_cast<int>(std::clamp<int64_t>(send_bytes - off, 0, kMessageBytes));
    const int r = static_cast<int>(std::clamp<int64_t>(recv_bytes - off, 0, kMessageBytes));
    int rc = MPI_Sendrecv(static_cast<const char*>(send) + (s ? off : 0), s, MPI_BYTE, partner, kTag,
                          static_cast<char*>(recv) + (r ? off : 0), r, MPI_BYTE, partner, kTag, comm,
                          MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Sendrecv (Adasum)");
    off += kMessageBytes;
  } while (off < total);
  if (sent) sent->fetch_add(static_cast<uint64_t>(send_bytes), std::memory_order_relaxed);
  return Error::success();
}

Error AdasumVhdd::sum_within(int rank, int d, MPI_Comm comm, MPI_Comm peers) {
  const int n = static_cast<int>(sums_.size());
  received_.resize(sums_.size());
  // Recursive doubling: x + y on one side, y + x on the other, so every rank of the
  // group ends with the same bits and applies the same coefficients.
  for (int k = 1; k <= d; k <<= 1) {
    int rc = MPI_Sendrecv(sums_.data(), n, MPI_DOUBLE, rank ^ k, kTag + 1, received_.data(), n,
                          MPI_DOUBLE, rank ^ k, kTag + 1, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Sendrecv (Adasum norms)");
    for (int i = 0; i < n; ++i) sums_[static_cast<size_t>(i)] += received_[static_cast<size_t>(i)];
  }
  if (peers != MPI_COMM_NULL) {
    int rc = MPI_Allreduce(MPI_IN_PLACE, sums_.data(), n, MPI_DOUBLE, MPI_SUM, peers);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce (Adasum norms)");
  }
  return Error::success();
}

Error AdasumVhdd::allreduce(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                            MPI_Comm comm, MPI_Comm peers, std::atomic<uint64_t>* sent) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size & (size - 1))
    return make_error(HVD_ERR_INTERNAL, "Adasum on a communicator of %d ranks (not a power of two)", size);
  const size_t esize = dtype_size(dtype);
  char* data = static_cast<char*>(buffer);
  starts_.resize(counts.size());
  int64_t total = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    starts_[k] = total;
    total += counts[k];
  }
  other_.resize(static_cast<size_t>((total + 1) / 2) * esize);

  // Reduce: halve the slice at each distance. levels_[j] is the slice held before
  // distance 2^j, for the way back.
  std::vector<std::pair<int64_t, int64_t>>& levels = levels_;
  levels.clear();
  int64_t lo = 0, hi = total;
  for (int d = 1; d < size; d <<= 1) {
    const int partner = rank ^ d;
    const bool left = (rank & d) == 0;
    const int64_t mid = lo + (hi - lo) / 2;
    const int64_t keep_lo = left ? lo : mid, keep_hi = left ? mid : hi;
    const int64_t give_lo = left ? mid : lo, give_hi = left ? hi : mid;
    HVD_RETURN_IF_ERROR(exchange(data + give_lo * static_cast<int64_t>(esize), give_hi - give_lo,
                                 other_.data(), keep_hi - keep_lo, esize, partner, comm, sent));
    // Per tensor: a is the left subtree's vector, b the right's.
    sums_.assign(counts.size() * 3, 0.0);
    for (size_t k = 0; k < counts.size(); ++k) {
      const Span s = overlap(starts_[k], counts[k], keep_lo, keep_hi);
      if (s.count == 0) continue;
      const char* mine = data + s.first * static_cast<int64_t>(esize);
      const unsigned char* theirs = other_.data() + (s.first - keep_lo) * static_cast<int64_t>(esize);
      const DotNorms p = left ? dot_and_norms(mine, theirs, s.count, dtype)
                              : dot_and_norms(theirs, mine, s.count, dtype);
      sums_[3 * k] = p.dot;
      sums_[3 * k + 1] = p.aa;
      sums_[3 * k + 2] = p.bb;
    }
    HVD_RETURN_IF_ERROR(sum_within(rank, d, comm, peers));
    for (size_t k = 0; k < counts.size(); ++k) {
      const Span s = overlap(starts_[k], counts[k], keep_lo, keep_hi);
      if (s.count == 0) continue;
      const AdasumCoefficients c = adasum_coefficients({sums_[3 * k], sums_[3 * k + 1], sums_[3 * k + 2]});
      char* mine = data + s.first * static_cast<int64_t>(esize);
      const unsigned char* theirs = other_.data() + (s.first - keep_lo) * static_cast<int64_t>(esize);
      if (left)
        scaled_add(mine, c.a, theirs, c.b, s.count, dtype);
      else
        scaled_add(mine, c.b, theirs, c.a, s.count, dtype);
    }
    levels.emplace_back(lo, hi);
    lo = keep_lo;
    hi = keep_hi;
  }

  // Gather back: at each distance, from the largest down, swap the finished halves.
  for (int d = size >> 1; d >= 1; d >>= 1) {
    const auto [prev_lo, prev_hi] = levels.back();
    levels.pop_back();
    const bool left = (rank & d) == 0;  // kept the first half: the partner has the rest
    const int64_t their_lo = left ? hi : prev_lo;
    const int64_t their_hi = left ? prev_hi : lo;
    HVD_RETURN_IF_ERROR(exchange(data + lo * static_cast<int64_t>(esize), hi - lo,
                                 data + their_lo * static_cast<int64_t>(esize), their_hi - their_lo,
                                 esize, rank ^ d, comm, sent));
    lo = prev_lo;
    hi = prev_hi;
  }
  return Error::success();
}

}  // namespace hvd

// A ring allreduce (reduce-scatter, then allgather, in size - 1 steps each) of an
// operand that stays in the caller's tensors (Backend::Scattered). Where MPI_Allreduce
// needs the operand in one buffer, so a fused batch of separate tensors is copied in
// whole and out whole around it, the ring touches the tensors only where its steps
// need them: it gathers the one segment it sends first, reduces what it receives with
// the tensors' own elements, and delivers each reduced segment to the tensors as it
// arrives, each while it is in cache. On the lab 1000 separate 4 KB tensors went from
// 0.87-0.94 to 0.98 x the fused copies around MPI_Allreduce (docs/performance.md,
// 2026-11-28 04:55 entry).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include <mpi.h>

#include "base/error.h"
#include "hvd/hvd.h"
#include "ops/backend.h"

namespace hvd {

// count elements of dtype reduced with op (SUM, MIN, MAX or PRODUCT) over comm. scratch
// holds the two step buffers (grown as needed). Each rank sends 2 (size - 1) segments
// of about count / size elements.
Error ring_allreduce(MPI_Comm comm, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                     const Backend::Scattered& operand, std::vector<unsigned char>* scratch);

}  // namespace hvd

// One MPI reduction over a negotiation bit vector and a tensor behind it: the words
// are ANDed, the tensor reduced elementwise with its own dtype and op, in a single
// allreduce (one round trip). Speculation (negotiate/speculation.h) sends a lone small
// allreduce's data this way with its negotiation round.
//
// The buffer is one element of a contiguous datatype of the whole length, so MPI
// never splits it (a split would hand the reduction a piece without its layout), and
// the reduction reads the layout set before the allreduce is posted: one such
// allreduce may be in flight per process (the background thread's round).
#pragma once

#include <cstdint>

#include <mpi.h>

#include "hvd/hvd.h"

namespace hvd {

struct NegotiationLayout {
  int64_t words = 0;        // uint64 words of bits, ANDed, first
  int64_t count = 0;        // elements of the tensor after them
  hvd_dtype_t dtype = HVD_FLOAT32;
  hvd_reduce_op_t op = HVD_OP_SUM;  // SUM, MIN, MAX or PRODUCT
};

// Sets the layout of the next allreduce; returns the op and the datatype (count 1)
// to post it with. After mpi_types_init(); both are freed by mpi_types_free().
void negotiation_op_for(const NegotiationLayout& layout, MPI_Op* op, MPI_Datatype* type);

// Frees the op and the datatypes (from mpi_types_free, before MPI_Finalize).
void negotiation_op_free();

}  // namespace hvd

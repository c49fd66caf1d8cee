// MPI datatypes and reduction ops for every hvd dtype, including the custom ops
// that reduce float16 and bfloat16 in float32.
#pragma once

#include <mpi.h>

#include "hvd/hvd.h"

namespace hvd {

// Creates the custom ops (idempotent; after MPI_Init) and frees them (before
// MPI_Finalize).
void mpi_types_init();
void mpi_types_free();

MPI_Datatype mpi_datatype(hvd_dtype_t dtype);
// op is SUM, MIN, MAX or PRODUCT.
MPI_Op mpi_reduce_op(hvd_reduce_op_t op, hvd_dtype_t dtype);

}  // namespace hvd

// MPI datatypes and reduction ops for every hvd dtype, including the custom ops
// that reduce float16 and bfloat16 in float32 and the NaN-propagating MIN and MAX of
// every float type (base/float_order.h).
#pragma once

#include <cstdint>

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

// What that op computes, on this process: inout[i] = in[i] (op) inout[i], float16 and
// bfloat16 SUM and PRODUCT through float32 (a NaN result canonical), MIN and MAX of
// floats as IEEE 754-2019 minimum and maximum (base/float_order.h), bool's MIN and
// PRODUCT as AND and the others as OR. Bitwise commutative for MIN and MAX of every
// dtype. The custom ops are this; reductions of our own (the ring,
// ops/mpi/negotiation_op.h) use it.
void reduce_elements(const void* in, void* inout, int64_t count, hvd_dtype_t dtype,
                     hvd_reduce_op_t op);

}  // namespace hvd

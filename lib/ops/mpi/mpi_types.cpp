#include "ops/mpi/mpi_types.h"

#include <algorithm>

#include "base/dtype.h"
#include "ops/mpi/negotiation_op.h"

namespace hvd {

namespace {

MPI_Op g_half_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
MPI_Op g_bf16_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

struct Sum { static float apply(float a, float b) { return a + b; } };
struct Min { static float apply(float a, float b) { return std::min(a, b); } };
struct Max { static float apply(float a, float b) { return std::max(a, b); } };
struct Prod { static float apply(float a, float b) { return a * b; } };

template <typename Op, float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FromFloat(Op::apply(ToFloat(a[i]), ToFloat(b[i])));
}

int op_index(hvd_reduce_op_t op) {
  switch (op) {
    case HVD_OP_MIN: return 1;
    case HVD_OP_MAX: return 2;
    case HVD_OP_PRODUCT: return 3;
    default: return 0;
  }
}

}  // namespace

void mpi_types_init() {
  if (g_half_ops[0] != MPI_OP_NULL) return;
  MPI_Op_create(reduce16<Sum, half_to_float, float_to_half>, 1, &g_half_ops[0]);
  MPI_Op_create(reduce16<Min, half_to_float, float_to_half>, 1, &g_half_ops[1]);
  MPI_Op_create(reduce16<Max, half_to_float, float_to_half>, 1, &g_half_ops[2]);
  MPI_Op_create(reduce16<Prod, half_to_float, float_to_half>, 1, &g_half_ops[3]);
  MPI_Op_create(reduce16<Sum, bf16_to_float, float_to_bf16>, 1, &g_bf16_ops[0]);
  MPI_Op_create(reduce16<Min, bf16_to_float, float_to_bf16>, 1, &g_bf16_ops[1]);
  MPI_Op_create(reduce16<Max, bf16_to_float, float_to_bf16>, 1, &g_bf16_ops[2]);
  MPI_Op_create(reduce16<Prod, bf16_to_float, float_to_bf16>, 1, &g_bf16_ops[3]);
}

void mpi_types_free() {
  negotiation_op_free();
  for (MPI_Op& op : g_half_ops)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  for (MPI_Op& op : g_bf16_ops)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
}

MPI_Datatype mpi_datatype(hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_UINT8: return MPI_UINT8_T;
    case HVD_INT8: return MPI_INT8_T;
    case HVD_UINT16: return MPI_UINT16_T;
    case HVD_INT16: return MPI_INT16_T;
    case HVD_INT32: return MPI_INT32_T;
    case HVD_INT64: return MPI_INT64_T;
    case HVD_FLOAT16: return MPI_UINT16_T;
    case HVD_BFLOAT16: return MPI_UINT16_T;
    case HVD_FLOAT32: return MPI_FLOAT;
    case HVD_FLOAT64: return MPI_DOUBLE;
    case HVD_BOOL: return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_reduce_op(hvd_reduce_op_t op, hvd_dtype_t dtype) {
  if (dtype == HVD_FLOAT16) return g_half_ops[op_index(op)];
  if (dtype == HVD_BFLOAT16) return g_bf16_ops[op_index(op)];
  if (dtype == HVD_BOOL)
    return (op == HVD_OP_MIN || op == HVD_OP_PRODUCT) ? MPI_LAND : MPI_LOR;
  switch (op) {
    case HVD_OP_MIN: return MPI_MIN;
    case HVD_OP_MAX: return MPI_MAX;
    case HVD_OP_PRODUCT: return MPI_PROD;
    default: return MPI_SUM;
  }
}

}  // namespace hvd

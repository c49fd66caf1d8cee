#include "ops/mpi/mpi_types.h"

#include <algorithm>

#include "base/cpu_clones.h"
#include "base/dtype.h"
#include "ops/mpi/negotiation_op.h"

namespace hvd {

namespace {

MPI_Op g_half_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
MPI_Op g_bf16_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

template <typename T, typename Combine>
void combine_as(const void* in, void* inout, int64_t count, Combine f) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int64_t i = 0; i < count; ++i) b[i] = static_cast<T>(f(a[i], b[i]));
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), typename Combine>
void combine16(const void* in, void* inout, int64_t count, Combine f) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int64_t i = 0; i < count; ++i) b[i] = FromFloat(f(ToFloat(a[i]), ToFloat(b[i])));
}

// The op is chosen once per call, outside the element loop.
template <typename Combine>
void combine_dtype(const void* in, void* inout, int64_t count, hvd_dtype_t dtype, Combine f) {
  switch (dtype) {
    case HVD_UINT8: return combine_as<uint8_t>(in, inout, count, f);
    case HVD_INT8: return combine_as<int8_t>(in, inout, count, f);
    case HVD_UINT16: return combine_as<uint16_t>(in, inout, count, f);
    case HVD_INT16: return combine_as<int16_t>(in, inout, count, f);
    case HVD_INT32: return combine_as<int32_t>(in, inout, count, f);
    case HVD_INT64: return combine_as<int64_t>(in, inout, count, f);
    case HVD_FLOAT16: return combine16<half_to_float, float_to_half>(in, inout, count, f);
    case HVD_BFLOAT16: return combine16<bf16_to_float, float_to_bf16>(in, inout, count, f);
    case HVD_FLOAT32: return combine_as<float>(in, inout, count, f);
    case HVD_FLOAT64: return combine_as<double>(in, inout, count, f);
    case HVD_BOOL: return combine_as<uint8_t>(in, inout, count, f);
  }
}

// The custom MPI ops of the 16-bit floats.
template <hvd_dtype_t Dtype, hvd_reduce_op_t Op>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_elements(in, inout, *len, Dtype, Op);
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
  MPI_Op_create(reduce16<HVD_FLOAT16, HVD_OP_SUM>, 1, &g_half_ops[0]);
  MPI_Op_create(reduce16<HVD_FLOAT16, HVD_OP_MIN>, 1, &g_half_ops[1]);
  MPI_Op_create(reduce16<HVD_FLOAT16, HVD_OP_MAX>, 1, &g_half_ops[2]);
  MPI_Op_create(reduce16<HVD_FLOAT16, HVD_OP_PRODUCT>, 1, &g_half_ops[3]);
  MPI_Op_create(reduce16<HVD_BFLOAT16, HVD_OP_SUM>, 1, &g_bf16_ops[0]);
  MPI_Op_create(reduce16<HVD_BFLOAT16, HVD_OP_MIN>, 1, &g_bf16_ops[1]);
  MPI_Op_create(reduce16<HVD_BFLOAT16, HVD_OP_MAX>, 1, &g_bf16_ops[2]);
  MPI_Op_create(reduce16<HVD_BFLOAT16, HVD_OP_PRODUCT>, 1, &g_bf16_ops[3]);
}

HVD_CPU_CLONES
void reduce_elements(const void* in, void* inout, int64_t count, hvd_dtype_t dtype,
                     hvd_reduce_op_t op) {
  if (dtype == HVD_BOOL) {
    // As mpi_reduce_op maps bool: MIN and PRODUCT are logical AND, the others OR.
    if (op == HVD_OP_MIN || op == HVD_OP_PRODUCT)
      return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return a && b; });
    return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return a || b; });
  }
  switch (op) {
    case HVD_OP_MIN: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return std::min(a, b); });
    case HVD_OP_MAX: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return std::max(a, b); });
    case HVD_OP_PRODUCT: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return a * b; });
    default: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return a + b; });
  }
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

#include "ops/mpi/mpi_types.h"

#include <algorithm>
#include <limits>

#include "base/cpu_clones.h"
#include "base/dtype.h"
#include "base/float_order.h"
#include "ops/mpi/negotiation_op.h"

namespace hvd {

namespace {

// Our own ops, by dtype and op_index: every op of the 16-bit floats (MPI has no such
// type), MIN and MAX of the unsigned integers (mpi_types_init), and MIN and MAX of every float (MPI_MIN and MPI_MAX let NaN's fate depend on
// the operand order, base/float_order.h). MPI_OP_NULL where MPI's own op serves.
MPI_Op g_custom_ops[kNumDtypes][4];
bool g_custom_ops_made = false;

template <typename T, typename Combine>
void combine_as(const void* in, void* inout, int64_t count, Combine f) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int64_t i = 0; i < count; ++i) b[i] = static_cast<T>(f(a[i], b[i]));
}

// A NaN result is the canonical one: which NaN's sign an addition keeps depends on the
// operand order, which differs from rank to rank.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), typename Combine>
void combine16(const void* in, void* inout, int64_t count, Combine f) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int64_t i = 0; i < count; ++i) {
    const float r = f(ToFloat(a[i]), ToFloat(b[i]));
    b[i] = FromFloat(r == r ? r : std::numeric_limits<float>::quiet_NaN());
  }
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

template <typename F, bool Min>
void combine_float_bits(const void* in, void* inout, int64_t count) {
  using U = typename F::Bits;
  const U* a = static_cast<const U*>(in);
  U* b = static_cast<U*>(inout);
  for (int64_t i = 0; i < count; ++i) b[i] = Min ? float_bits_min<F>(a[i], b[i]) : float_bits_max<F>(a[i], b[i]);
}

template <bool Min>
void min_max_float(const void* in, void* inout, int64_t count, hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_FLOAT16: return combine_float_bits<Float16Bits, Min>(in, inout, count);
    case HVD_BFLOAT16: return combine_float_bits<Bfloat16Bits, Min>(in, inout, count);
    case HVD_FLOAT32: return combine_float_bits<Float32Bits, Min>(in, inout, count);
    case HVD_FLOAT64: return combine_float_bits<Float64Bits, Min>(in, inout, count);
    default: return;
  }
}

// The custom MPI ops: what reduce_elements computes.
template <hvd_dtype_t Dtype, hvd_reduce_op_t Op>
void reduce_custom(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_elements(in, inout, *len, Dtype, Op);
}

template <hvd_dtype_t Dtype, hvd_reduce_op_t Op>
void make_op(int index) {
  MPI_Op_create(reduce_custom<Dtype, Op>, 1, &g_custom_ops[Dtype][index]);
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
  if (g_custom_ops_made) return;
  g_custom_ops_made = true;
  for (auto& ops : g_custom_ops)
    for (MPI_Op& op : ops) op = MPI_OP_NULL;
  make_op<HVD_FLOAT16, HVD_OP_SUM>(0);
  make_op<HVD_FLOAT16, HVD_OP_MIN>(1);
  make_op<HVD_FLOAT16, HVD_OP_MAX>(2);
  make_op<HVD_FLOAT16, HVD_OP_PRODUCT>(3);
  make_op<HVD_BFLOAT16, HVD_OP_SUM>(0);
  make_op<HVD_BFLOAT16, HVD_OP_MIN>(1);
  make_op<HVD_BFLOAT16, HVD_OP_MAX>(2);
  make_op<HVD_BFLOAT16, HVD_OP_PRODUCT>(3);
  // MPICH 4.0's MPI_MIN and MPI_MAX compare MPI_UINT8_T and MPI_UINT16_T as signed
  // (max(100, 150) of uint8 gives 100): our own ops for the unsigned types.
  make_op<HVD_UINT8, HVD_OP_MIN>(1);
  make_op<HVD_UINT8, HVD_OP_MAX>(2);
  make_op<HVD_UINT16, HVD_OP_MIN>(1);
  make_op<HVD_UINT16, HVD_OP_MAX>(2);
  make_op<HVD_FLOAT32, HVD_OP_MIN>(1);
  make_op<HVD_FLOAT32, HVD_OP_MAX>(2);
  make_op<HVD_FLOAT64, HVD_OP_MIN>(1);
  make_op<HVD_FLOAT64, HVD_OP_MAX>(2);
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
  if (dtype_is_float(dtype) && op == HVD_OP_MIN) return min_max_float<true>(in, inout, count, dtype);
  if (dtype_is_float(dtype) && op == HVD_OP_MAX) return min_max_float<false>(in, inout, count, dtype);
  switch (op) {
    case HVD_OP_MIN: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return std::min(a, b); });
    case HVD_OP_MAX: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return std::max(a, b); });
    case HVD_OP_PRODUCT: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return a * b; });
    default: return combine_dtype(in, inout, count, dtype, [](auto a, auto b) { return a + b; });
  }
}

void mpi_types_free() {
  negotiation_op_free();
  if (!g_custom_ops_made) return;
  for (auto& ops : g_custom_ops)
    for (MPI_Op& op : ops)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
  g_custom_ops_made = false;
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
  if (g_custom_ops_made && g_custom_ops[dtype][op_index(op)] != MPI_OP_NULL)
    return g_custom_ops[dtype][op_index(op)];
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

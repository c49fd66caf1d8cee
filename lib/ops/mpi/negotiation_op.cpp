#include "ops/mpi/negotiation_op.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "base/dtype.h"

namespace hvd {

namespace {

NegotiationLayout g_layout;  // of the allreduce in flight (read by the reduction)
MPI_Op g_op = MPI_OP_NULL;
std::map<int64_t, MPI_Datatype> g_types;  // by byte length
std::mutex g_mutex;  // init and free only: rounds come from one thread

template <typename T>
T combine(T a, T b, hvd_reduce_op_t op) {
  switch (op) {
    case HVD_OP_MIN: return std::min(a, b);
    case HVD_OP_MAX: return std::max(a, b);
    case HVD_OP_PRODUCT: return static_cast<T>(a * b);
    default: return static_cast<T>(a + b);
  }
}

template <typename T>
void reduce_as(const void* in, void* inout, int64_t count, hvd_reduce_op_t op) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int64_t i = 0; i < count; ++i) b[i] = combine(a[i], b[i], op);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce16(const void* in, void* inout, int64_t count, hvd_reduce_op_t op) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int64_t i = 0; i < count; ++i) b[i] = FromFloat(combine(ToFloat(a[i]), ToFloat(b[i]), op));
}

void reduce_negotiation(void* in, void* inout, int* len, MPI_Datatype*) {
  const NegotiationLayout& l = g_layout;
  const int64_t bytes = l.words * 8 + l.count * static_cast<int64_t>(dtype_size(l.dtype));
  for (int e = 0; e < *len; ++e) {
    auto* a = static_cast<unsigned char*>(in) + e * bytes;
    auto* b = static_cast<unsigned char*>(inout) + e * bytes;
    const uint64_t* wa = reinterpret_cast<const uint64_t*>(a);
    uint64_t* wb = reinterpret_cast<uint64_t*>(b);
    for (int64_t w = 0; w < l.words; ++w) wb[w] &= wa[w];
    reduce_elements(a + l.words * 8, b + l.words * 8, l.count, l.dtype, l.op);
  }
}

}  // namespace

void reduce_elements(const void* in, void* inout, int64_t count, hvd_dtype_t dtype,
                     hvd_reduce_op_t op) {
  switch (dtype) {
    case HVD_UINT8: return reduce_as<uint8_t>(in, inout, count, op);
    case HVD_INT8: return reduce_as<int8_t>(in, inout, count, op);
    case HVD_UINT16: return reduce_as<uint16_t>(in, inout, count, op);
    case HVD_INT16: return reduce_as<int16_t>(in, inout, count, op);
    case HVD_INT32: return reduce_as<int32_t>(in, inout, count, op);
    case HVD_INT64: return reduce_as<int64_t>(in, inout, count, op);
    case HVD_FLOAT16: return reduce16<half_to_float, float_to_half>(in, inout, count, op);
    case HVD_BFLOAT16: return reduce16<bf16_to_float, float_to_bf16>(in, inout, count, op);
    case HVD_FLOAT32: return reduce_as<float>(in, inout, count, op);
    case HVD_FLOAT64: return reduce_as<double>(in, inout, count, op);
    case HVD_BOOL: {
      // As mpi_reduce_op maps bool: MIN and PRODUCT are logical AND, the rest OR.
      const uint8_t* a = static_cast<const uint8_t*>(in);
      uint8_t* b = static_cast<uint8_t*>(inout);
      const bool conjunction = op == HVD_OP_MIN || op == HVD_OP_PRODUCT;
      for (int64_t i = 0; i < count; ++i)
        b[i] = conjunction ? (a[i] && b[i]) : (a[i] || b[i]);
      return;
    }
  }
}

void negotiation_op_for(const NegotiationLayout& layout, MPI_Op* op, MPI_Datatype* type) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_op == MPI_OP_NULL) MPI_Op_create(reduce_negotiation, 1, &g_op);
  const int64_t bytes = layout.words * 8 + layout.count * static_cast<int64_t>(dtype_size(layout.dtype));
  auto it = g_types.find(bytes);
  if (it == g_types.end()) {
    MPI_Datatype t;
    MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    it = g_types.emplace(bytes, t).first;
  }
  g_layout = layout;
  *op = g_op;
  *type = it->second;
}

void negotiation_op_free() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_op != MPI_OP_NULL) MPI_Op_free(&g_op);
  for (auto& [bytes, t] : g_types) MPI_Type_free(&t);
  g_types.clear();
}

}  // namespace hvd

#include "ops/device/order_key.h"

namespace hvd {

hvd_dtype_t order_key_dtype(hvd_dtype_t dtype, hvd_reduce_op_t op) {
  if (op != HVD_OP_MIN && op != HVD_OP_MAX) return dtype;
  switch (dtype) {
    case HVD_FLOAT16:
    case HVD_BFLOAT16: return HVD_INT16;
    case HVD_FLOAT32: return HVD_INT32;
    case HVD_FLOAT64: return HVD_INT64;
    default: return dtype;
  }
}

}  // namespace hvd

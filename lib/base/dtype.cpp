#include "base/dtype.h"

#include <cctype>

namespace hvd {

size_t dtype_size(hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
    case HVD_INT8:
    case HVD_BOOL: return 1;
    case HVD_UINT16:
    case HVD_INT16:
    case HVD_FLOAT16:
    case HVD_BFLOAT16: return 2;
    case HVD_INT32:
    case HVD_FLOAT32: return 4;
    case HVD_INT64:
    case HVD_FLOAT64: return 8;
  }
  return 0;
}

const char* dtype_name(hvd_dtype_t dtype) {
  static const char* names[] = {"uint8",   "int8",     "uint16",  "int16",   "int32", "int64",
                                "float16", "bfloat16", "float32", "float64", "bool"};
  return dtype_valid(dtype) ? names[dtype] : "invalid";
}

std::string dtype_upper_name(hvd_dtype_t dtype) {
  std::string name = dtype_name(dtype);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

const char* reduce_op_name(hvd_reduce_op_t op) {
  static const char* names[] = {"average", "sum", "adasum", "min", "max", "product"};
  return reduce_op_valid(op) ? names[op] : "invalid";
}

}  // namespace hvd

#include "dtypes.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hvdbench {

namespace {

template <typename T>
double load_as(const void* data, size_t i) {
  return static_cast<double>(static_cast<const T*>(data)[i]);
}

template <typename T>
void store_as(void* data, size_t i, double v) {
  static_cast<T*>(data)[i] = static_cast<T>(v);
}

// IEEE binary16 <-> float, exact for the small integers and halves the check uses.
double load_half(const void* data, size_t i) {
  uint16_t h = static_cast<const uint16_t*>(data)[i];
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : std::ldexp(mant | 0x400, exp - 25);
  return (h & 0x8000) ? -v : v;
}

void store_half(void* data, size_t i, double value) {
  uint16_t sign = value < 0 ? 0x8000 : 0;
  double a = std::fabs(value);
  uint16_t bits = sign;
  if (a != 0) {
    int e = 0;
    double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    int exp = e + 14;
    if (exp <= 0) {
      bits = static_cast<uint16_t>(sign | std::lrint(std::ldexp(a, 24)));
    } else if (exp >= 31) {
      bits = sign | 0x7c00;
    } else {
      long mant = std::lrint((m * 2 - 1) * 1024);
      if (mant == 1024) {
        mant = 0;
        ++exp;
      }
      bits = exp >= 31 ? (sign | 0x7c00) : static_cast<uint16_t>(sign | (exp << 10) | mant);
    }
  }
  static_cast<uint16_t*>(data)[i] = bits;
}

double load_bf16(const void* data, size_t i) {
  uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(data)[i]) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void store_bf16(void* data, size_t i, double value) {
  float f = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(bits >> 16);
}

#define HVD_BENCH_DTYPE(name, hvd, mpi, T, is_float) \
  Dtype { name, hvd, mpi, sizeof(T), is_float, load_as<T>, store_as<T> }

const Dtype kDtypes[] = {
    HVD_BENCH_DTYPE("float", HVD_FLOAT32, MPI_FLOAT, float, true),
    HVD_BENCH_DTYPE("double", HVD_FLOAT64, MPI_DOUBLE, double, true),
    Dtype{"half", HVD_FLOAT16, MPI_DATATYPE_NULL, 2, true, load_half, store_half},
    Dtype{"bfloat16", HVD_BFLOAT16, MPI_DATATYPE_NULL, 2, true, load_bf16, store_bf16},
    HVD_BENCH_DTYPE("int8", HVD_INT8, MPI_INT8_T, int8_t, false),
    HVD_BENCH_DTYPE("uint8", HVD_UINT8, MPI_UINT8_T, uint8_t, false),
    HVD_BENCH_DTYPE("int32", HVD_INT32, MPI_INT32_T, int32_t, false),
    HVD_BENCH_DTYPE("int64", HVD_INT64, MPI_INT64_T, int64_t, false),
};

#undef HVD_BENCH_DTYPE

}  // namespace

const Dtype* find_dtype(const std::string& name) {
  for (const Dtype& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

std::string dtype_names() {
  std::string s;
  for (const Dtype& d : kDtypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

}  // namespace hvdbench

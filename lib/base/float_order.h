// MIN and MAX of floats as IEEE 754-2019 minimum and maximum, on bit patterns: a NaN
// operand gives NaN (as torch.minimum and torch.maximum), -0.0 is below +0.0, and the
// result depends on the two operands' values alone, never on their order. That last
// property is what keeps replicas equal: MPI combines operands in an order that differs
// from rank to rank (recursive doubling gives rank a f(b, a) and rank b f(a, b)), so an
// operation that is not bitwise commutative leaves ranks with different bytes. A NaN
// result is always the one canonical quiet NaN of the type (positive sign, top mantissa
// bit only), whatever NaNs came in.
//
// Plain integer code, usable by the host loops and by CUDA kernels alike.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HVD_HOST_DEVICE __host__ __device__
#else
#define HVD_HOST_DEVICE
#endif

namespace hvd {

// The layout of one float type as unsigned bits U.
template <typename U, U SignBit, U ExponentMask, U CanonicalNan>
struct FloatBits {
  using Bits = U;
  static constexpr U kSign = SignBit;
  static constexpr U kExponent = ExponentMask;  // all exponent bits; NaN above it
  static constexpr U kCanonicalNan = CanonicalNan;
};

using Float16Bits = FloatBits<uint16_t, 0x8000u, 0x7c00u, 0x7e00u>;
using Bfloat16Bits = FloatBits<uint16_t, 0x8000u, 0x7f80u, 0x7fc0u>;
using Float32Bits = FloatBits<uint32_t, 0x80000000u, 0x7f800000u, 0x7fc00000u>;
using Float64Bits =
    FloatBits<uint64_t, 0x8000000000000000ull, 0x7ff0000000000000ull, 0x7ff8000000000000ull>;

template <typename F>
HVD_HOST_DEVICE inline bool bits_are_nan(typename F::Bits x) {
  return static_cast<typename F::Bits>(x & static_cast<typename F::Bits>(~F::kSign)) > F::kExponent;
}

// A key whose unsigned order is the order of the (non-NaN) values, -0.0 below +0.0:
// negative numbers have every bit flipped, the others their sign bit set.
template <typename F>
HVD_HOST_DEVICE inline typename F::Bits order_key(typename F::Bits x) {
  using U = typename F::Bits;
  return (x & F::kSign) ? static_cast<U>(~x) : static_cast<U>(x | F::kSign);
}

template <typename F>
HVD_HOST_DEVICE inline typename F::Bits float_bits_min(typename F::Bits a, typename F::Bits b) {
  if (bits_are_nan<F>(a) || bits_are_nan<F>(b)) return F::kCanonicalNan;
  return order_key<F>(a) <= order_key<F>(b) ? a : b;
}

template <typename F>
HVD_HOST_DEVICE inline typename F::Bits float_bits_max(typename F::Bits a, typename F::Bits b) {
  if (bits_are_nan<F>(a) || bits_are_nan<F>(b)) return F::kCanonicalNan;
  return order_key<F>(a) >= order_key<F>(b) ? a : b;
}

}  // namespace hvd

//! Element types that libhvd can reduce and move, mapped to hvd_dtype_t.
//!
//! HVD_BOOL is not offered: libhvd's output byte is "0 or non-zero", and a Rust
//! `bool` holding anything but 0 or 1 is undefined behaviour; use `u8` (then SUM
//! adds rather than or-ing). Half precision comes as the raw-bit types `F16` and
//! `Bf16`, with conversions from and to `f32`.
use crate::ffi;

mod sealed {
    pub trait Sealed {}
}

/// A type whose values libhvd reads and writes as `DTYPE`. Sealed: an
/// implementation with the wrong size would let libhvd write out of bounds.
pub trait Element: Copy + Default + Send + Sync + 'static + sealed::Sealed {
    const DTYPE: ffi::hvd_dtype_t;
}

macro_rules! element {
    ($($t:ty => $dtype:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: ffi::hvd_dtype_t = ffi::$dtype;
        }
    )*};
}

element!(
    u8 => HVD_UINT8, i8 => HVD_INT8, u16 => HVD_UINT16, i16 => HVD_INT16,
    i32 => HVD_INT32, i64 => HVD_INT64, f32 => HVD_FLOAT32, f64 => HVD_FLOAT64,
    F16 => HVD_FLOAT16, Bf16 => HVD_BFLOAT16,
);

/// IEEE binary16, as its bits (HVD_FLOAT16). libhvd reduces it in float32 and
/// stores each partial result back as binary16.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

/// bfloat16, as its bits (HVD_BFLOAT16): the upper half of a float32.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bf16(pub u16);

impl F16 {
    /// Rounds to the nearest binary16 (ties to even); beyond 65504 gives infinity.
    pub fn from_f32(x: f32) -> F16 {
        let bits = x.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exp = ((bits >> 23) & 0xff) as i32;
        let man = bits & 0x7f_ffff;
        if exp == 0xff {
            return F16(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            if e < -10 {
                return F16(sign);
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rem = m & ((1u32 << shift) - 1);
            let mut h = m >> shift;
            if rem > half || (rem == half && h & 1 == 1) {
                h += 1;
            }
            return F16(sign | h as u16);
        }
        let mut h = ((e as u32) << 10) | (man >> 13);
        let rem = man & 0x1fff;
        if rem > 0x1000 || (rem == 0x1000 && h & 1 == 1) {
            h += 1; // a carry into the exponent is the right result (up to infinity)
        }
        F16(sign | h as u16)
    }

    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        if exp == 0 {
            let magnitude = man as f32 * (1.0 / 16_777_216.0); // man * 2^-24
            return if sign != 0 { -magnitude } else { magnitude };
        }
        let bits = if exp == 0x1f {
            sign | 0x7f80_0000 | (man << 13)
        } else {
            sign | ((exp + 112) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }
}

impl Bf16 {
    /// Rounds to the nearest bfloat16 (ties to even).
    pub fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) | 0x40) as u16);
        }
        let rounding = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }

    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

/// Reduction operations (Horovod's numbering). `Average` divides by the process
/// set's size (integers: truncating). `Adasum`: floating-point allreduce over a
/// set of 1, 2, 4, 8... ranks (hvd.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Average,
    Sum,
    Min,
    Max,
    Product,
    Adasum,
}

impl ReduceOp {
    pub fn raw(self) -> ffi::hvd_reduce_op_t {
        match self {
            ReduceOp::Average => ffi::HVD_OP_AVERAGE,
            ReduceOp::Sum => ffi::HVD_OP_SUM,
            ReduceOp::Min => ffi::HVD_OP_MIN,
            ReduceOp::Max => ffi::HVD_OP_MAX,
            ReduceOp::Product => ffi::HVD_OP_PRODUCT,
            ReduceOp::Adasum => ffi::HVD_OP_ADASUM,
        }
    }
}

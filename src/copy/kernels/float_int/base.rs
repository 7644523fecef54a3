//! The dtype rule per item ([`SatCast`]) and the loops every CPU runs: f32 / f64 convert
//! directly, f16 / bf16 are widened to f32 (exact) in cache-sized chunks first.

use half::f16;
use half::slice::HalfFloatSliceExt;

/// `self as I` (saturating; NaN -> 0), written as selects, clamps and an unchecked
/// conversion of an in-range value, which LLVM turns into packed `cvtt*` instructions
/// (`as` itself is scalarised).
pub(super) trait SatCast<I>: Copy {
    fn sat(self) -> I;
}

// The clamps are written as comparisons (`if y > lo { y } else { lo }`): that is exactly
// x86's `maxps` / `minps`, and a NaN compares false, so it lands on `lo`. For unsigned
// types `lo` is 0, which is NaN's result anyway; signed types zero NaN first.
macro_rules! sat_cast {
    // I's whole range is exactly representable in F: clamp, then convert through $w.
    (exact $f:ty => $($i:ty as $w:ty),*) => {
        $(impl SatCast<$i> for $f {
            #[inline(always)]
            fn sat(self) -> $i {
                let (lo, hi) = (<$i>::MIN as $f, <$i>::MAX as $f);
                let y = if <$i>::MIN != 0 && self.is_nan() { 0.0 } else { self };
                let y = if y > lo { y } else { lo };
                let y = if y < hi { y } else { hi };
                // SAFETY: y is finite and within I's range.
                unsafe { y.to_int_unchecked::<$w>() as $i }
            }
        })*
    };
    // I::MAX is not representable in F: everything >= 2^bits (`$top`, a power of two,
    // exact) saturates by a select; I::MIN (0 or -2^k) is exact.
    (wide $f:ty => $($i:ty, $top:expr);*) => {
        $(impl SatCast<$i> for $f {
            #[inline(always)]
            fn sat(self) -> $i {
                let lo = <$i>::MIN as $f;
                let y = if <$i>::MIN != 0 && self.is_nan() { 0.0 } else { self };
                let big = y >= $top;
                let y = if y > lo { y } else { lo };
                let y = if big { 0.0 } else { y };
                // SAFETY: MIN <= y < 2^bits, so its truncation fits I.
                let r = unsafe { y.to_int_unchecked::<$i>() };
                if big {
                    <$i>::MAX
                } else {
                    r
                }
            }
        })*
    };
}
sat_cast!(exact f32 => u8 as i32, i8 as i32, i16 as i32, u16 as i32);
sat_cast!(exact f64 => u8 as i32, i8 as i32, i16 as i32, u16 as i32, i32 as i32, u32 as u32);
sat_cast!(wide f32 => i32, 2147483648.0; u32, 4294967296.0;
    i64, 9223372036854775808.0; u64, 18446744073709551616.0);
sat_cast!(wide f64 => i64, 9223372036854775808.0; u64, 18446744073709551616.0);

/// `dst[i] = src[i].sat()` over the shorter of the two, a loop LLVM vectorises (`zip`:
/// no per-item bounds checks).
#[inline(always)]
pub(super) fn cast_loop<F: SatCast<I>, I>(dst: &mut [I], src: &[F]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = x.sat();
    }
}

/// [`cast_loop`] compiled for AVX2 (packed conversions over 256-bit vectors).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn cast_avx2<F: SatCast<I>, I>(dst: &mut [I], src: &[F]) {
    cast_loop(dst, src)
}

/// Elements widened per chunk for 16-bit float sources (16 KiB of f32: stays in L1).
const CHUNK: usize = 4096;

/// f16 (`F16`) or bf16 items, as their bits, to `I`: widened chunk by chunk into an
/// L1-resident buffer (f16 by the half crate, which uses F16C itself when present; bf16
/// exactly, as the top half of an f32), then converted.
pub(super) fn from_half<const F16: bool, I>(dst: &mut [I], src: &[u16])
where
    f32: SatCast<I>,
{
    use half::slice::HalfBitsSliceExt;
    let mut buf = [0f32; CHUNK];
    for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
        let buf = &mut buf[..s.len()];
        if F16 {
            s.reinterpret_cast::<f16>().convert_to_f32_slice(buf);
        } else {
            for (o, &x) in buf.iter_mut().zip(s) {
                *o = f32::from_bits((x as u32) << 16);
            }
        }
        cast_loop(d, buf);
    }
}

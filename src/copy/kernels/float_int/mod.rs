//! float -> integer conversion of contiguous runs, vectorised, with exactly the dtype.rs
//! rule (Rust's `as`: truncate toward zero, saturate at the integer's bounds, NaN -> 0).
//!
//! One dispatch ([`float_to_int`]) picks, per (source, destination) pair, one of four
//! kernel families; each family checks the CPU once (`cpu.rs`) and otherwise runs the
//! baseline loop of `base.rs`:
//!
//! | pair | AVX2 + F16C | baseline |
//! |---|---|---|
//! | f32 / f64 -> 8- to 32-bit | `cast_loop` compiled for AVX2 | `cast_loop` |
//! | f16 / bf16 -> 8- to 32-bit | `narrow.rs`: widen, convert, pack in registers | `from_half`: widen to f32 in L1 chunks, then `cast_loop` |
//! | any -> i64 / u64 | `long.rs`: by integer operations on f64 bits | as the row above |
//!
//! The kernels take slices and are safe functions; `unsafe` is only at the call of a
//! `#[target_feature]` kernel (the CPU was checked just before) and in the vector loads
//! and stores of `../steps.rs`. Tests (`tests.rs`) compare every pair, on this CPU's path and
//! on the baseline one, with the scalar rule.

mod base;
#[cfg(target_arch = "x86_64")]
mod long;
#[cfg(target_arch = "x86_64")]
mod narrow;
#[cfg(test)]
mod tests;

use super::cpu;
use super::{same, same_mut};
use base::{cast_loop, from_half, SatCast};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// A float source run: f16 / bf16 as their bits.
#[derive(Clone, Copy)]
enum Floats<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    F16(&'a [u16]),
    Bf16(&'a [u16]),
}

/// f32 / f64 -> 8- to 32-bit integers.
fn float_small<F: SatCast<I>, I>(dst: &mut [I], src: &[F]) {
    #[cfg(target_arch = "x86_64")]
    if cpu::avx2() {
        // SAFETY: CPU checked.
        return unsafe { base::cast_avx2(dst, src) };
    }
    cast_loop(dst, src)
}

/// f16 (`F16`) or bf16 bits -> 8- to 32-bit integers.
fn half_small<const F16: bool, I: Copy + 'static>(dst: &mut [I], src: &[u16], stream: bool)
where
    f32: SatCast<I>,
{
    #[cfg(target_arch = "x86_64")]
    if cpu::avx2_f16c() {
        // SAFETY: CPU checked.
        return unsafe { narrow::run::<I, F16>(dst, src, stream) };
    }
    let _ = stream; // only the direct kernels stream
    from_half::<F16, I>(dst, src)
}

/// Any float -> i64 / u64.
fn to_long<I: Copy + 'static>(dst: &mut [I], src: Floats, stream: bool)
where
    f32: SatCast<I>,
    f64: SatCast<I>,
{
    #[cfg(target_arch = "x86_64")]
    if cpu::avx2_f16c() {
        // SAFETY: CPU checked.
        return unsafe { long::run(dst, src, stream) };
    }
    let _ = stream;
    match src {
        Floats::F64(s) => cast_loop(dst, s),
        Floats::F32(s) => cast_loop(dst, s),
        Floats::F16(s) => from_half::<true, I>(dst, s),
        Floats::Bf16(s) => from_half::<false, I>(dst, s),
    }
}

/// The float -> integer fast path for contiguous runs (`S`, `D` as in `Convert<S, D>`):
/// converts `src` into `dst` (equal lengths) and returns true, or returns false when
/// `S -> D` is not such a pair. `stream`:
/// the write step's streaming choice for the whole output (kernels that
/// write it straight to memory then use streaming stores).
///
/// The dispatch is a list of pairs rather than a table built at run time: `S` and `D` are
/// known at compile time (one `Convert<S, D>` per pair), so each monomorphisation keeps
/// exactly one arm and calls its family directly, where a table would add an indirect
/// call per run and hide the kernel from the inliner.
pub(super) fn float_to_int<S: 'static, D: 'static>(dst: &mut [D], src: &[S], stream: bool) -> bool {
    assert_eq!(dst.len(), src.len());
    macro_rules! pairs {
        ($($s:ty => [$($i:ty),*] |$d:ident, $x:ident| $call:expr;)*) => {$($(
            if let (Some($x), Some($d)) = (same::<S, $s>(src), same_mut::<D, $i>(dst)) {
                $call;
                return true;
            }
        )*)*};
    }
    pairs! {
        f32 => [u8, i8, i16, u16, i32, u32] |d, s| float_small(d, s);
        f64 => [u8, i8, i16, u16, i32, u32] |d, s| float_small(d, s);
        f16 => [u8, i8, i16, u16, i32, u32] |d, s| half_small::<true, _>(d, s.reinterpret_cast(), stream);
        bf16 => [u8, i8, i16, u16, i32, u32] |d, s| half_small::<false, _>(d, s.reinterpret_cast(), stream);
        f32 => [i64, u64] |d, s| to_long(d, Floats::F32(s), stream);
        f64 => [i64, u64] |d, s| to_long(d, Floats::F64(s), stream);
        f16 => [i64, u64] |d, s| to_long(d, Floats::F16(s.reinterpret_cast()), stream);
        bf16 => [i64, u64] |d, s| to_long(d, Floats::Bf16(s.reinterpret_cast()), stream);
    }
    false
}

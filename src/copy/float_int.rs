//! float -> integer conversion of contiguous runs, vectorised, with exactly the dtype.rs
//! rule (Rust's `as`: truncate toward zero, saturate at the integer's bounds, NaN -> 0).
//! f32 and f64 sources convert directly; f16 and bf16 sources are widened to f32 (exact)
//! in cache-sized chunks first. The loops are compiled twice (baseline x86-64, AVX2 + F16C)
//! and picked at run time; tests compare every pair with the scalar rule.

use super::kernels::is;
use crate::dtype::Element;
use half::{bf16, f16};
use std::any::TypeId;

/// `self as I` (saturating; NaN -> 0), written as selects, clamps and an unchecked
/// conversion of an in-range value, which LLVM turns into packed `cvtt*` instructions
/// (`as` itself is scalarised).
trait SatCast<I>: Copy {
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

/// The conversion loop over slices, so LLVM vectorises it (no per-item bounds checks:
/// `zip`).
///
/// # Safety
/// `n` aligned `F` items at `s` readable, `n` aligned `I` items at `d` writable, the two
/// runs not overlapping. (Every `unsafe fn` of this module has this contract, for its
/// own item types; `float_to_int` states it once for a run of `S` and `D`.)
#[inline(always)]
unsafe fn cast_loop<F: SatCast<I>, I>(d: *mut I, s: *const F, n: usize) {
    // SAFETY: the two runs of the contract as slices: aligned, in bounds, disjoint (so the
    // mutable one aliases nothing); F and I are plain numbers (any bits valid).
    let (src, dst) = unsafe {
        (
            std::slice::from_raw_parts(s, n),
            std::slice::from_raw_parts_mut(d, n),
        )
    };
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = x.sat();
    }
}

/// [`cast_loop`] compiled for AVX2 (packed conversions over 256-bit vectors).
///
/// # Safety
/// As [`cast_loop`]; the CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn cast_avx2<F: SatCast<I>, I>(d: *mut I, s: *const F, n: usize) {
    // SAFETY: the same contract as ours.
    unsafe { cast_loop(d, s, n) }
}

/// 0 unknown, 1 baseline, 2 AVX2 + F16C. (AVX-512 target features need Rust 1.89, past
/// the crate's MSRV.)
#[cfg(target_arch = "x86_64")]
static LEVEL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

#[cfg(target_arch = "x86_64")]
fn level() -> u8 {
    use std::sync::atomic::Ordering;
    match LEVEL.load(Ordering::Relaxed) {
        0 => {
            let l = if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c") {
                2
            } else {
                1
            };
            LEVEL.store(l, Ordering::Relaxed);
            l
        }
        l => l,
    }
}

/// Converts `n` contiguous, aligned elements with the best loop this CPU runs.
///
/// # Safety
/// As [`cast_loop`].
#[inline]
unsafe fn cast<F: SatCast<I>, I>(d: *mut I, s: *const F, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if level() == 2 {
        // SAFETY: our contract; level 2 means the CPU has AVX2 (and F16C).
        return unsafe { cast_avx2(d, s, n) };
    }
    // SAFETY: the same contract as ours.
    unsafe { cast_loop(d, s, n) }
}

/// Elements widened per chunk for 16-bit float sources (16 KiB of f32: stays in L1).
const CHUNK: usize = 4096;

/// bf16 -> f32 (exact: the top half of an f32).
///
/// # Safety
/// `dst.len()` aligned `u16` (bf16 bits) readable at `s`, not overlapping `dst`.
#[inline(always)]
unsafe fn widen_bf16(dst: &mut [f32], s: *const u16) {
    // SAFETY: the contract.
    let src = unsafe { std::slice::from_raw_parts(s, dst.len()) };
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = f32::from_bits((x as u32) << 16);
    }
}

/// Widens chunk by chunk into an L1-resident buffer, then converts it: `widen(buf, i)`
/// fills `buf` with source items `i..i + buf.len()` as f32.
///
/// # Safety
/// `n` aligned `I` items writable at `d`.
#[inline(always)]
unsafe fn chunked<I>(d: *mut I, n: usize, mut widen: impl FnMut(&mut [f32], usize))
where
    f32: SatCast<I>,
{
    let mut buf = [0f32; CHUNK];
    let mut i = 0;
    while i < n {
        let m = CHUNK.min(n - i);
        widen(&mut buf[..m], i);
        // SAFETY: items i..i + m (i + m <= n) of the destination run, from m items of the
        // local buffer (which the destination cannot overlap).
        unsafe { cast_loop(d.add(i), buf.as_ptr(), m) };
        i += m;
    }
}

fn is_f16<H: 'static>() -> bool {
    TypeId::of::<H>() == TypeId::of::<f16>()
}

/// Baseline: the half crate's f16 conversion (it uses F16C itself when present).
///
/// # Safety
/// As [`cast_loop`]; `H` is f16 or bf16.
unsafe fn from_half_base<H: 'static, I>(d: *mut I, s: *const H, n: usize)
where
    f32: SatCast<I>,
{
    use half::slice::HalfFloatSliceExt;
    // SAFETY: the destination run is chunked's; `widen` reads source items
    // i..i + buf.len() <= n, as f16 when H is f16, else as bf16 bits (u16, same layout).
    unsafe {
        chunked(d, n, |buf, i| {
            if is_f16::<H>() {
                std::slice::from_raw_parts((s as *const f16).add(i), buf.len())
                    .convert_to_f32_slice(buf);
            } else {
                widen_bf16(buf, (s as *const u16).add(i));
            }
        })
    }
}

/// [`from_half_base`] with F16C conversions of 8 items at a time, compiled for AVX2.
///
/// # Safety
/// As [`from_half_base`]; the CPU must support AVX2 and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn from_half_avx2<H: 'static, I>(d: *mut I, s: *const H, n: usize)
where
    f32: SatCast<I>,
{
    use std::arch::x86_64::*;
    // SAFETY: the destination run is chunked's; `widen` reads source items
    // i..i + buf.len() <= n as 16-bit words (f16 or bf16 bits): the 8-item loads end at
    // k + 8 <= m = buf.len() and store into buf's first m items; F16C and AVX2 are
    // enabled here (the caller checked the CPU).
    unsafe {
        chunked(d, n, |buf, i| {
            let p = (s as *const u16).add(i);
            if is_f16::<H>() {
                let m = buf.len();
                let mut k = 0;
                while k + 8 <= m {
                    let h = _mm_loadu_si128(p.add(k) as *const __m128i);
                    _mm256_storeu_ps(buf.as_mut_ptr().add(k), _mm256_cvtph_ps(h));
                    k += 8;
                }
                for (j, o) in buf.iter_mut().enumerate().skip(k) {
                    *o = f16::from_bits(*p.add(j)).to_f32();
                }
            } else {
                widen_bf16(buf, p);
            }
        })
    }
}

/// f16 / bf16 -> integer with the best loop this CPU runs.
///
/// # Safety
/// As [`from_half_base`].
unsafe fn from_half<H: 'static, I>(d: *mut I, s: *const H, n: usize)
where
    f32: SatCast<I>,
{
    #[cfg(target_arch = "x86_64")]
    if level() == 2 {
        // SAFETY: our contract; level 2 means the CPU has AVX2 and F16C.
        return unsafe { from_half_avx2(d, s, n) };
    }
    // SAFETY: the same contract as ours.
    unsafe { from_half_base(d, s, n) }
}

/// Converts one source float type to integer `D`; false when `D` is not an integer.
///
/// # Safety
/// As [`cast_loop`], for `F` items at `s` and `D` items at `d`.
unsafe fn to_int<F, D: 'static>(d: *mut u8, s: *const F, n: usize, run: impl CastTo<F>) -> bool {
    macro_rules! each_int {
        ($($i:ty),*) => {
            $(if is::<D, $i>() {
                // SAFETY: D is $i (tested): the contract for $i items at d.
                unsafe { run.run::<$i>(d as *mut $i, s, n) };
                return true;
            })*
        };
    }
    each_int!(u8, i8, i16, u16, i32, u32, i64, u64);
    false
}

/// How one source type reaches integer `I`.
trait CastTo<F> {
    /// Converts `n` items from `s` to `d`.
    ///
    /// # Safety
    /// As [`cast_loop`]; for [`Half`], `F` is f16 or bf16.
    unsafe fn run<I>(&self, d: *mut I, s: *const F, n: usize)
    where
        f32: SatCast<I>,
        f64: SatCast<I>;
}

struct Direct;
impl CastTo<f32> for Direct {
    unsafe fn run<I>(&self, d: *mut I, s: *const f32, n: usize)
    where
        f32: SatCast<I>,
        f64: SatCast<I>,
    {
        // SAFETY: the trait's contract, which is cast's.
        unsafe { cast(d, s, n) }
    }
}
impl CastTo<f64> for Direct {
    unsafe fn run<I>(&self, d: *mut I, s: *const f64, n: usize)
    where
        f32: SatCast<I>,
        f64: SatCast<I>,
    {
        // SAFETY: the trait's contract, which is cast's.
        unsafe { cast(d, s, n) }
    }
}
struct Half;
impl<H: 'static> CastTo<H> for Half {
    unsafe fn run<I>(&self, d: *mut I, s: *const H, n: usize)
    where
        f32: SatCast<I>,
        f64: SatCast<I>,
    {
        // SAFETY: the trait's contract, which is from_half's.
        unsafe { from_half(d, s, n) }
    }
}

/// The float -> integer fast path for contiguous aligned runs (`S`, `D` as in
/// `Convert<S, D>`): false when `S -> D` is not such a pair.
///
/// # Safety
/// `n` aligned `S` items readable at `s`, `n` aligned `D` items writable at `d`, the two
/// runs not overlapping.
pub(super) unsafe fn float_to_int<S: Element, D: Element>(
    d: *mut u8,
    s: *const u8,
    n: usize,
) -> bool {
    // SAFETY: S is the very type each branch tests for, so the cast source pointer
    // addresses the contract's run of S (f16 / bf16 going to Half, as it requires); to_int
    // gets D's run unchanged and checks D itself.
    unsafe {
        if is::<S, f32>() {
            to_int::<f32, D>(d, s as *const f32, n, Direct)
        } else if is::<S, f64>() {
            to_int::<f64, D>(d, s as *const f64, n, Direct)
        } else if is::<S, f16>() {
            to_int::<f16, D>(d, s as *const f16, n, Half)
        } else if is::<S, bf16>() {
            to_int::<bf16, D>(d, s as *const bf16, n, Half)
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interesting_f64() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            0.999,
            -0.999,
            1.0,
            -1.0,
            127.9,
            128.0,
            -128.9,
            -129.0,
            255.5,
            256.0,
            32767.9,
            32768.0,
            -32768.9,
            -32769.0,
            65535.9,
            65536.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
        ];
        for e in [31, 32, 63, 64] {
            let p = 2f64.powi(e);
            v.extend([
                p,
                -p,
                p - 1.0,
                -p - 1.0,
                p - 1024.0,
                -p + 1024.0,
                p + 4096.0,
            ]);
            v.push(f32::from_bits((p as f32).to_bits() - 1) as f64);
            v.push(-(f32::from_bits((p as f32).to_bits() - 1) as f64));
        }
        let mut x = 0x2545F4914F6CDD1Du64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mag = 2f64.powi((x % 70) as i32);
            v.push((x as i64 as f64 / i64::MAX as f64) * mag);
        }
        v
    }

    fn check<S: Element + Copy, D: Element + Default + PartialEq + std::fmt::Debug>(src: &[S]) {
        let mut out = vec![D::default(); src.len()];
        // SAFETY: two distinct Vecs of src.len() items, aligned for their types.
        let ok = unsafe {
            float_to_int::<S, D>(
                out.as_mut_ptr() as *mut u8,
                src.as_ptr() as *const u8,
                src.len(),
            )
        };
        assert!(ok);
        for (i, &x) in src.iter().enumerate() {
            let want = D::from_scalar(x.to_scalar());
            assert_eq!(out[i], want, "{:?} of {:?}", D::DTYPE, x.to_scalar());
        }
    }

    fn all_ints<S: Element + Copy>(src: &[S]) {
        check::<S, u8>(src);
        check::<S, i8>(src);
        check::<S, i16>(src);
        check::<S, u16>(src);
        check::<S, i32>(src);
        check::<S, u32>(src);
        check::<S, i64>(src);
        check::<S, u64>(src);
    }

    #[test]
    fn every_float_int_pair_equals_the_dtype_rule() {
        let v = interesting_f64();
        all_ints::<f64>(&v);
        let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        all_ints::<f32>(&f);
        // every 16-bit pattern, over more than one chunk
        let h: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        all_ints::<f16>(&h);
        let b: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        all_ints::<bf16>(&b);
        // not float -> int: not this path (which returns before touching memory)
        // SAFETY: zero items: nothing is read or written.
        assert!(!unsafe { float_to_int::<i32, u8>(std::ptr::null_mut(), std::ptr::null(), 0) });
        // SAFETY: as above.
        assert!(!unsafe { float_to_int::<f32, f64>(std::ptr::null_mut(), std::ptr::null(), 0) });
    }
}

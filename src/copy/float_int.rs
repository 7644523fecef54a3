//! float -> integer conversion of contiguous runs, vectorised, with exactly the dtype.rs
//! rule (Rust's `as`: truncate toward zero, saturate at the integer's bounds, NaN -> 0).
//! f32 and f64 sources convert directly; f16 and bf16 sources are widened to f32 (exact)
//! in cache-sized chunks first, except on AVX2 + F16C CPUs: there a direct kernel
//! ([`narrow`]) widens, converts and packs in registers for 8- to 32-bit integers, and
//! every source goes to i64 / u64 through another ([`long`]: AVX2 has no packed float ->
//! 64-bit conversion, so it converts by integer operations on f64 bits). The loops are
//! compiled twice (baseline x86-64, AVX2 + F16C) and picked at run time; tests compare
//! every pair with the scalar rule.

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

/// The loop of every AVX2 kernel here: 32 bytes of output per step, and, for big outputs,
/// streaming stores after a scalar head up to 32-byte alignment; a scalar tail.
#[cfg(target_arch = "x86_64")]
mod steps {
    use std::arch::x86_64::__m256i;
    use std::arch::x86_64::{_mm256_storeu_si256, _mm256_stream_si256, _mm_sfence};
    use std::mem::size_of;

    /// One conversion, item by item and 32 bytes of output at a time.
    pub(super) trait Step {
        /// The source item.
        type S;
        /// The output item.
        type D;
        /// Item `*s` by the dtype rule.
        ///
        /// # Safety
        /// One `S` readable at `s`; the CPU supports AVX2 and F16C.
        unsafe fn one(s: *const Self::S) -> Self::D;
        /// Items `s[0..32 / size_of::<D>()]` by the dtype rule, as 32 bytes of `D`.
        ///
        /// # Safety
        /// `32 / size_of::<D>()` `S` readable at `s`; the CPU supports AVX2 and F16C.
        unsafe fn block(s: *const Self::S) -> __m256i;
    }

    /// Runs with fewer output bytes keep plain stores even when the whole output is big
    /// (the engine converts one contiguous run per call): each streamed run ends with an
    /// `sfence` and writes its partial first and last lines both ways. Measured, f16 ->
    /// i16 into 24 MiB in runs of n items: n = 24 streamed 9x slower than plain, n = 1000
    /// 2x, n = 2000 even, n >= 8000 5-10% faster.
    const MIN_STREAM_RUN: usize = 16 << 10;

    /// Whether a run of `n` `D` items streams: `stream` (the whole output is far bigger
    /// than the caches) and the run is at least [`MIN_STREAM_RUN`] bytes. Streaming
    /// stores skip reading the output's lines in before writing them, as a large memcpy
    /// does.
    pub(super) fn streams<D>(stream: bool, n: usize) -> bool {
        stream && n * size_of::<D>() >= MIN_STREAM_RUN
    }

    /// Converts `n` items with `K`, streaming when `STREAM`.
    ///
    /// # Safety
    /// `n` aligned `K::S` readable at `s`, `n` aligned `K::D` writable at `d`, not
    /// overlapping; the CPU supports AVX2 and F16C (the caller is compiled for them: this
    /// is inlined into it).
    #[inline(always)]
    pub(super) unsafe fn drive<K: Step, const STREAM: bool>(
        d: *mut K::D,
        s: *const K::S,
        n: usize,
    ) {
        let per = 32 / size_of::<K::D>();
        // Streaming stores need a 32-byte aligned destination: scalar items up to there
        // (d is D-aligned, so that is a whole number of items).
        let head = if STREAM {
            ((32 - d as usize % 32) % 32 / size_of::<K::D>()).min(n)
        } else {
            0
        };
        // SAFETY: every access is item j < n of the contract's runs: the head j < head <=
        // n, the blocks i..i + per with i + per <= n (d + i is 32-byte aligned when
        // streaming: head and per are multiples of 32 bytes away), the tail i..n; the CPU
        // has AVX2 and F16C (the contract).
        unsafe {
            for j in 0..head {
                d.add(j).write(K::one(s.add(j)));
            }
            let mut i = head;
            while i + per <= n {
                let v = K::block(s.add(i));
                let q = d.add(i) as *mut __m256i;
                if STREAM {
                    _mm256_stream_si256(q, v);
                } else {
                    _mm256_storeu_si256(q, v);
                }
                i += per;
            }
            for j in i..n {
                d.add(j).write(K::one(s.add(j)));
            }
            if STREAM {
                // Streaming stores are weakly ordered: make them visible before we return.
                _mm_sfence();
            }
        }
    }
}

/// The direct AVX2 + F16C kernel for f16 / bf16 -> i8 / u8 / i16 / u16 / i32 / u32: 32
/// bytes of output per step are widened in registers, saturated, converted and packed,
/// with no pass through an f32 buffer. (For 16-bit -> 16-bit that pass made the
/// conversion slower than a memcpy of the same bytes: 0.77-0.93x before this kernel.)
#[cfg(target_arch = "x86_64")]
mod narrow {
    use super::steps::{drive, streams, Step};
    use super::{is, SatCast};
    use half::f16;
    use std::arch::x86_64::*;
    use std::marker::PhantomData;
    use std::mem::size_of;

    /// Whether [`run`] converts to `I`.
    pub(super) fn handles<I: 'static>() -> bool {
        is::<I, i8>() || is::<I, u8>() || is::<I, i16>() || is::<I, u16>() || wide::<I>()
    }

    fn signed<I: 'static>() -> bool {
        is::<I, i8>() || is::<I, i16>() || is::<I, i32>()
    }

    /// i32 and u32: their MAX is not an f32, so they saturate by a mask, not a clamp.
    fn wide<I: 'static>() -> bool {
        is::<I, i32>() || is::<I, u32>()
    }

    /// `(I::MIN, I::MAX)` as f32 (exact) for [`handles`]'s 8- and 16-bit types.
    fn bounds<I: 'static>() -> (f32, f32) {
        if is::<I, i8>() {
            (i8::MIN as f32, i8::MAX as f32)
        } else if is::<I, u8>() {
            (0.0, u8::MAX as f32)
        } else if is::<I, i16>() {
            (i16::MIN as f32, i16::MAX as f32)
        } else {
            (0.0, u16::MAX as f32)
        }
    }

    /// One item's bits as f32 (exact): f16 through F16C, bf16 as an f32's top half.
    #[inline(always)]
    fn widen1<const F16: bool>(x: u16) -> f32 {
        if F16 {
            f16::from_bits(x).to_f32()
        } else {
            f32::from_bits((x as u32) << 16)
        }
    }

    /// `I`'s rule for eight f32 lanes, as i32 lanes: NaN -> 0, clamp to `[lo, hi]` (I's
    /// bounds), truncate. Clamping to integral bounds and then truncating equals
    /// truncating and then saturating, and the clamped value cannot overflow `cvttps`.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[inline(always)]
    unsafe fn sat<I: 'static>(x: __m256, lo: __m256, hi: __m256) -> __m256i {
        // SAFETY: register-only AVX intrinsics; the CPU has AVX (the contract).
        unsafe {
            // Signed types zero NaN first (an ordered-compare mask). Unsigned ones need
            // not: `maxps` returns its second operand when the first is NaN, so NaN lands
            // on lo = 0.
            let x = if signed::<I>() {
                _mm256_and_ps(x, _mm256_cmp_ps::<_CMP_ORD_Q>(x, x))
            } else {
                x
            };
            _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(x, lo), hi))
        }
    }

    /// The dtype rule for i32 / u32 on eight f32 lanes (as [`sat`], but I::MAX is not an
    /// f32: lanes at or above 2^bits saturate by a mask).
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[inline(always)]
    unsafe fn sat32<I: 'static>(x: __m256) -> __m256i {
        const TWO31: f32 = 2147483648.0;
        // SAFETY: register-only AVX / AVX2 intrinsics; the CPU has AVX2 (the contract).
        unsafe {
            if signed::<I>() {
                let x = _mm256_and_ps(x, _mm256_cmp_ps::<_CMP_ORD_Q>(x, x));
                let big =
                    _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(TWO31)));
                let r = _mm256_cvttps_epi32(_mm256_max_ps(x, _mm256_set1_ps(-TWO31)));
                // `cvttps` gives 0x8000_0000 for lanes >= 2^31: all bits flipped, i32::MAX.
                _mm256_xor_si256(r, big)
            } else {
                // NaN -> 0 as in sat.
                let x = _mm256_max_ps(x, _mm256_setzero_ps());
                let big = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(2.0 * TWO31));
                let top = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(TWO31));
                // Lanes in [2^31, 2^32) lose 2^31 (exact: both are multiples of their ulp,
                // 256), convert, and get it back as the sign bit; lanes >= 2^32 (their
                // conversion gives 0x8000_0000, cleared by that xor) become all ones.
                let y = _mm256_sub_ps(x, _mm256_and_ps(top, _mm256_set1_ps(TWO31)));
                let sign = _mm256_and_si256(_mm256_castps_si256(top), _mm256_set1_epi32(i32::MIN));
                let r = _mm256_xor_si256(_mm256_cvttps_epi32(y), sign);
                _mm256_or_si256(r, _mm256_castps_si256(big))
            }
        }
    }

    /// Items `p[0..8]` as f32.
    ///
    /// # Safety
    /// The CPU supports AVX2 and F16C; 8 u16 readable at `p`.
    #[inline(always)]
    unsafe fn widen8<const F16: bool>(p: *const u16) -> __m256 {
        // SAFETY: the contract: 16 bytes read at p (unaligned load), AVX2 and F16C.
        unsafe {
            let x = _mm_loadu_si128(p as *const __m128i);
            if F16 {
                _mm256_cvtph_ps(x)
            } else {
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(x)))
            }
        }
    }

    /// Items `p[0..16]` as two f32 vectors `(a, b)`: a holds items 0-3 and 8-11, b items
    /// 4-7 and 12-15, the order in which `_mm256_packs_epi32(a, b)` (per 128-bit lane: 4
    /// of a, then 4 of b) lists them from 0 to 15, so no cross-lane shuffle is needed.
    ///
    /// # Safety
    /// The CPU supports AVX2 and F16C; 16 u16 readable at `p`.
    #[inline(always)]
    unsafe fn widen16<const F16: bool>(p: *const u16) -> (__m256, __m256) {
        // SAFETY: the contract: 32 bytes read at p (unaligned loads), AVX2 and F16C.
        unsafe {
            if F16 {
                let x0 = _mm_loadu_si128(p as *const __m128i);
                let x1 = _mm_loadu_si128(p.add(8) as *const __m128i);
                (
                    _mm256_cvtph_ps(_mm_unpacklo_epi64(x0, x1)),
                    _mm256_cvtph_ps(_mm_unpackhi_epi64(x0, x1)),
                )
            } else {
                // A zero word below each bf16 makes it the f32 it is; the in-lane unpacks
                // give exactly the order above.
                let v = _mm256_loadu_si256(p as *const __m256i);
                let z = _mm256_setzero_si256();
                (
                    _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v)),
                    _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v)),
                )
            }
        }
    }

    /// Items `p[0..16]` by `I`'s rule as 16 words in order (I's values, which fit i16 for
    /// the 8-bit types).
    ///
    /// # Safety
    /// As [`widen16`].
    #[inline(always)]
    unsafe fn words<I: 'static, const F16: bool>(p: *const u16, lo: __m256, hi: __m256) -> __m256i {
        // SAFETY: the contract, which is widen16's (sat needs only AVX2).
        unsafe {
            let (a, b) = widen16::<F16>(p);
            let (a, b) = (sat::<I>(a, lo, hi), sat::<I>(b, lo, hi));
            // The lanes are in I's range already, so the packs' saturation changes
            // nothing; u16 values above i16::MAX need the unsigned pack.
            if is::<I, u16>() {
                _mm256_packus_epi32(a, b)
            } else {
                _mm256_packs_epi32(a, b)
            }
        }
    }

    /// The next 32 bytes of output: items `p[0..32 / size_of::<I>()]` by `I`'s rule.
    ///
    /// # Safety
    /// As [`widen16`], with `32 / size_of::<I>()` u16 readable at `p`.
    #[inline(always)]
    unsafe fn block<I: 'static, const F16: bool>(p: *const u16, lo: __m256, hi: __m256) -> __m256i {
        // SAFETY: the contract: widen8 reads p[0..8] for 32-bit I, words p[0..16] and, for
        // 8-bit I, p[16..32].
        unsafe {
            if wide::<I>() {
                return sat32::<I>(widen8::<F16>(p));
            }
            if size_of::<I>() == 2 {
                return words::<I, F16>(p, lo, hi);
            }
            let (w0, w1) = (
                words::<I, F16>(p, lo, hi),
                words::<I, F16>(p.add(16), lo, hi),
            );
            let b = if signed::<I>() {
                _mm256_packs_epi16(w0, w1)
            } else {
                _mm256_packus_epi16(w0, w1)
            };
            // Per lane 8 bytes of w0, then 8 of w1: quarters 0, 2, 1, 3 are in order.
            _mm256_permute4x64_epi64::<0b11_01_10_00>(b)
        }
    }

    /// f16 (`F16`) or bf16 bits -> `I`, as [`Step`]s.
    struct Halves<I, const F16: bool>(PhantomData<I>);

    impl<I: 'static, const F16: bool> Step for Halves<I, F16>
    where
        f32: SatCast<I>,
    {
        type S = u16;
        type D = I;
        #[inline(always)]
        unsafe fn one(s: *const u16) -> I {
            // SAFETY: the contract: one u16 at s.
            widen1::<F16>(unsafe { *s }).sat()
        }
        #[inline(always)]
        unsafe fn block(s: *const u16) -> __m256i {
            let (lo, hi) = bounds::<I>();
            // SAFETY: the contract, which is block's (AVX2 and F16C, 32 bytes of output's
            // items at s).
            unsafe { block::<I, F16>(s, _mm256_set1_ps(lo), _mm256_set1_ps(hi)) }
        }
    }

    /// [`run`] for one source type and store kind.
    ///
    /// # Safety
    /// As [`run`], with `F16` for `f16` and `STREAM` for `stream`.
    #[target_feature(enable = "avx2,f16c")]
    unsafe fn go<I: 'static, const F16: bool, const STREAM: bool>(
        d: *mut I,
        s: *const u16,
        n: usize,
    ) where
        f32: SatCast<I>,
    {
        // SAFETY: the contract, which is drive's; AVX2 and F16C are enabled here.
        unsafe { drive::<Halves<I, F16>, STREAM>(d, s, n) }
    }

    /// Converts `n` f16 (when `f16`, else bf16) items, as their bits at `s`, to `I` at
    /// `d` by the dtype rule. `stream`: the whole output is far bigger than the caches
    /// (see [`streams`]).
    ///
    /// # Safety
    /// `n` aligned u16 readable at `s`, `n` aligned `I` writable at `d`, not overlapping;
    /// `I` is one of [`handles`]'s types; the CPU supports AVX2 and F16C.
    pub(super) unsafe fn run<I: 'static>(
        f16: bool,
        stream: bool,
        d: *mut I,
        s: *const u16,
        n: usize,
    ) where
        f32: SatCast<I>,
    {
        debug_assert!(handles::<I>());
        // SAFETY: the contract, with the const parameters matching f16 and stream.
        unsafe {
            match (f16, streams::<I>(stream, n)) {
                (true, true) => go::<I, true, true>(d, s, n),
                (true, false) => go::<I, true, false>(d, s, n),
                (false, true) => go::<I, false, true>(d, s, n),
                (false, false) => go::<I, false, false>(d, s, n),
            }
        }
    }
}

/// The AVX2 kernel for f32 / f64 / f16 / bf16 -> i64 / u64. AVX2 has no packed float ->
/// 64-bit integer conversion (AVX-512's `vcvttpd2qq` is not in the baseline), so four
/// items at a time are widened to f64 (exact) and converted by integer operations on
/// their bits: the mantissa with its implicit one, shifted by the exponent, then
/// saturated by masks. No pass through a buffer; streaming stores for big outputs.
#[cfg(target_arch = "x86_64")]
mod long {
    use super::steps::{drive, streams, Step};
    use super::{is, SatCast};
    use half::{bf16, f16};
    use std::arch::x86_64::*;
    use std::marker::PhantomData;

    /// Whether [`run`] converts to `I`.
    pub(super) fn handles<I: 'static>() -> bool {
        is::<I, i64>() || is::<I, u64>()
    }

    /// A source float type, read four items at a time as f64.
    pub(super) trait Src: Copy + 'static {
        /// The item as f64 (exact).
        fn wide(self) -> f64;
        /// Items `p[0..4]` as f64 (exact).
        ///
        /// # Safety
        /// 4 items readable at `p`; the CPU supports AVX2 and F16C.
        unsafe fn load4(p: *const Self) -> __m256d;
    }

    // SAFETY (the four load4s): the contract: 4 items (32, 16, 8, 8 bytes) read at p by
    // unaligned loads; AVX2 and F16C.
    impl Src for f64 {
        #[inline(always)]
        fn wide(self) -> f64 {
            self
        }
        #[inline(always)]
        unsafe fn load4(p: *const f64) -> __m256d {
            // SAFETY: above.
            unsafe { _mm256_loadu_pd(p) }
        }
    }
    impl Src for f32 {
        #[inline(always)]
        fn wide(self) -> f64 {
            self as f64
        }
        #[inline(always)]
        unsafe fn load4(p: *const f32) -> __m256d {
            // SAFETY: above.
            unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
        }
    }
    impl Src for f16 {
        #[inline(always)]
        fn wide(self) -> f64 {
            self.to_f64()
        }
        #[inline(always)]
        unsafe fn load4(p: *const f16) -> __m256d {
            // SAFETY: above.
            unsafe { _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(p as *const __m128i))) }
        }
    }
    impl Src for bf16 {
        #[inline(always)]
        fn wide(self) -> f64 {
            self.to_f64()
        }
        #[inline(always)]
        unsafe fn load4(p: *const bf16) -> __m256d {
            // SAFETY: above. A bf16 is the top half of an f32.
            unsafe {
                let w = _mm_cvtepu16_epi32(_mm_loadl_epi64(p as *const __m128i));
                _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32::<16>(w)))
            }
        }
    }

    /// The dtype rule for four f64 lanes to i64 (`SIGNED`) or u64.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[inline(always)]
    unsafe fn sat64<const SIGNED: bool>(x: __m256d) -> __m256i {
        const INF: i64 = 0x7FF0_0000_0000_0000;
        const TWO63: i64 = (1023 + 63) << 52;
        const TWO64: i64 = (1023 + 64) << 52;
        // SAFETY: register-only AVX2 intrinsics; the CPU has AVX2 (the contract).
        unsafe {
            let set = _mm256_set1_epi64x;
            let b = _mm256_castpd_si256(x);
            // |x|'s bits, so the signed 64-bit compares below order them as numbers.
            let a = _mm256_and_si256(b, set(i64::MAX));
            let e = _mm256_srli_epi64::<52>(a);
            let m = _mm256_or_si256(_mm256_and_si256(a, set((1 << 52) - 1)), set(1 << 52));
            // |x| = m * 2^(e - 1075), truncated: m << (e - 1075) or m >> (1075 - e). The
            // other count is negative, a huge u64: `vpsllvq` / `vpsrlvq` give 0 for counts
            // >= 64, so the OR is the one that applies, and |x| < 1 (including zeros and
            // subnormals, whose missing implicit one does not matter) gives 0. Shifts left
            // by more than 10 (|x| >= 2^63) are saturated below.
            let mag = _mm256_or_si256(
                _mm256_sllv_epi64(m, _mm256_sub_epi64(e, set(1075))),
                _mm256_srlv_epi64(m, _mm256_sub_epi64(set(1075), e)),
            );
            let nan = _mm256_cmpgt_epi64(a, set(INF));
            let neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), b);
            if SIGNED {
                // |x| >= 2^63 (inf included): MAX, or MIN (MAX ^ all ones) when negative.
                let big = _mm256_cmpgt_epi64(a, set(TWO63 - 1));
                let r = _mm256_sub_epi64(_mm256_xor_si256(mag, neg), neg);
                let r = _mm256_blendv_epi8(r, _mm256_xor_si256(set(i64::MAX), neg), big);
                _mm256_andnot_si256(nan, r)
            } else {
                // x >= 2^64 (inf included): all ones; negatives (which truncate to 0 or
                // saturate to it) and NaN: 0.
                let big = _mm256_cmpgt_epi64(a, set(TWO64 - 1));
                _mm256_andnot_si256(_mm256_or_si256(nan, neg), _mm256_or_si256(mag, big))
            }
        }
    }

    /// `F` -> i64 (`SIGNED`) or u64 (`I`), as [`Step`]s.
    struct Long<F, I, const SIGNED: bool>(PhantomData<(F, I)>);

    impl<F: Src, I, const SIGNED: bool> Step for Long<F, I, SIGNED>
    where
        f64: SatCast<I>,
    {
        type S = F;
        type D = I;
        #[inline(always)]
        unsafe fn one(s: *const F) -> I {
            // SAFETY: the contract: one F at s.
            unsafe { *s }.wide().sat()
        }
        #[inline(always)]
        unsafe fn block(s: *const F) -> __m256i {
            // SAFETY: the contract: 4 items at s (32 bytes of I), AVX2 and F16C.
            unsafe { sat64::<SIGNED>(F::load4(s)) }
        }
    }

    /// [`run`] for one output type and store kind.
    ///
    /// # Safety
    /// As [`run`], with `SIGNED` when `I` is i64 and `STREAM` for streaming stores.
    #[target_feature(enable = "avx2,f16c")]
    unsafe fn go<F: Src, I, const SIGNED: bool, const STREAM: bool>(
        d: *mut I,
        s: *const F,
        n: usize,
    ) where
        f64: SatCast<I>,
    {
        // SAFETY: the contract, which is drive's; AVX2 and F16C are enabled here.
        unsafe { drive::<Long<F, I, SIGNED>, STREAM>(d, s, n) }
    }

    /// Converts `n` `F` items at `s` to `I` at `d` by the dtype rule. `stream`: the whole
    /// output is far bigger than the caches (see [`streams`]).
    ///
    /// # Safety
    /// `n` aligned `F` readable at `s`, `n` aligned `I` writable at `d`, not overlapping;
    /// `I` is i64 or u64 ([`handles`]); the CPU supports AVX2 and F16C.
    pub(super) unsafe fn run<F: Src, I: 'static>(stream: bool, d: *mut I, s: *const F, n: usize)
    where
        f64: SatCast<I>,
    {
        debug_assert!(handles::<I>());
        // SAFETY: the contract, with SIGNED exactly when I is i64 (else it is u64).
        unsafe {
            match (is::<I, i64>(), streams::<I>(stream, n)) {
                (true, true) => go::<F, I, true, true>(d, s, n),
                (true, false) => go::<F, I, true, false>(d, s, n),
                (false, true) => go::<F, I, false, true>(d, s, n),
                (false, false) => go::<F, I, false, false>(d, s, n),
            }
        }
    }
}

/// f16 / bf16 -> integer with the best loop this CPU runs. `stream`: the whole output is
/// big (see [`STREAM_BYTES`](super::kernels::STREAM_BYTES)).
///
/// # Safety
/// As [`from_half_base`].
unsafe fn from_half<H: 'static, I: 'static>(d: *mut I, s: *const H, n: usize, stream: bool)
where
    f32: SatCast<I>,
    f64: SatCast<I>,
{
    #[cfg(target_arch = "x86_64")]
    if level() == 2 {
        if long::handles::<I>() {
            // SAFETY: our contract, H being f16 exactly when is_f16 (else bf16); level 2
            // means the CPU has AVX2 and F16C; I is i64 or u64 (handles).
            return unsafe {
                if is_f16::<H>() {
                    long::run(stream, d, s as *const f16, n)
                } else {
                    long::run(stream, d, s as *const bf16, n)
                }
            };
        }
        if narrow::handles::<I>() {
            // SAFETY: our contract (H's items are 16-bit words; f16 exactly when
            // is_f16); level 2 means the CPU has AVX2 and F16C; I is one of narrow's
            // types (handles).
            return unsafe { narrow::run(is_f16::<H>(), stream, d, s as *const u16, n) };
        }
        // long and narrow cover every integer type to_int passes: the chunked loop below
        // is the baseline CPUs' path.
    }
    // Only the direct kernels stream.
    let _ = stream;
    // SAFETY: the same contract as ours.
    unsafe { from_half_base(d, s, n) }
}

/// Converts one source float type to integer `D`; false when `D` is not an integer.
///
/// # Safety
/// As [`cast_loop`], for `F` items at `s` and `D` items at `d`.
unsafe fn to_int<F, D: 'static>(
    d: *mut u8,
    s: *const F,
    n: usize,
    stream: bool,
    run: impl CastTo<F>,
) -> bool {
    macro_rules! each_int {
        ($($i:ty),*) => {
            $(if is::<D, $i>() {
                // SAFETY: D is $i (tested): the contract for $i items at d.
                unsafe { run.run::<$i>(d as *mut $i, s, n, stream) };
                return true;
            })*
        };
    }
    each_int!(u8, i8, i16, u16, i32, u32, i64, u64);
    false
}

/// How one source type reaches integer `I`.
trait CastTo<F> {
    /// Converts `n` items from `s` to `d`; `stream` as [`float_to_int`]'s.
    ///
    /// # Safety
    /// As [`cast_loop`]; for [`Half`], `F` is f16 or bf16.
    unsafe fn run<I: 'static>(&self, d: *mut I, s: *const F, n: usize, stream: bool)
    where
        f32: SatCast<I>,
        f64: SatCast<I>;
}

/// f32 / f64 -> integer with the best loop this CPU runs; `stream` as [`from_half`]'s
/// (only the 64-bit kernel streams).
///
/// # Safety
/// As [`cast_loop`]; `F` is f32 or f64.
unsafe fn direct<F: SatCast<I> + 'static, I: 'static>(
    d: *mut I,
    s: *const F,
    n: usize,
    stream: bool,
) where
    f64: SatCast<I>,
{
    #[cfg(target_arch = "x86_64")]
    if level() == 2 && long::handles::<I>() {
        // SAFETY: our contract, F being f32 exactly when tested (else f64); level 2 means
        // the CPU has AVX2 and F16C; I is i64 or u64 (handles).
        return unsafe {
            if is::<F, f32>() {
                long::run(stream, d, s as *const f32, n)
            } else {
                long::run(stream, d, s as *const f64, n)
            }
        };
    }
    let _ = stream;
    // SAFETY: the same contract as ours.
    unsafe { cast(d, s, n) }
}

struct Direct;
impl CastTo<f32> for Direct {
    unsafe fn run<I: 'static>(&self, d: *mut I, s: *const f32, n: usize, stream: bool)
    where
        f32: SatCast<I>,
        f64: SatCast<I>,
    {
        // SAFETY: the trait's contract, which is direct's.
        unsafe { direct(d, s, n, stream) }
    }
}
impl CastTo<f64> for Direct {
    unsafe fn run<I: 'static>(&self, d: *mut I, s: *const f64, n: usize, stream: bool)
    where
        f32: SatCast<I>,
        f64: SatCast<I>,
    {
        // SAFETY: the trait's contract, which is direct's.
        unsafe { direct(d, s, n, stream) }
    }
}
struct Half;
impl<H: 'static> CastTo<H> for Half {
    unsafe fn run<I: 'static>(&self, d: *mut I, s: *const H, n: usize, stream: bool)
    where
        f32: SatCast<I>,
        f64: SatCast<I>,
    {
        // SAFETY: the trait's contract, which is from_half's.
        unsafe { from_half(d, s, n, stream) }
    }
}

/// The float -> integer fast path for contiguous aligned runs (`S`, `D` as in
/// `Convert<S, D>`): false when `S -> D` is not such a pair. `stream`: the whole output
/// is at least [`STREAM_BYTES`](super::kernels::STREAM_BYTES) (kernels that write it
/// straight to memory then use streaming stores).
///
/// # Safety
/// `n` aligned `S` items readable at `s`, `n` aligned `D` items writable at `d`, the two
/// runs not overlapping.
pub(super) unsafe fn float_to_int<S: Element, D: Element>(
    d: *mut u8,
    s: *const u8,
    n: usize,
    stream: bool,
) -> bool {
    // SAFETY: S is the very type each branch tests for, so the cast source pointer
    // addresses the contract's run of S (f16 / bf16 going to Half, as it requires); to_int
    // gets D's run unchanged and checks D itself.
    unsafe {
        if is::<S, f32>() {
            to_int::<f32, D>(d, s as *const f32, n, stream, Direct)
        } else if is::<S, f64>() {
            to_int::<f64, D>(d, s as *const f64, n, stream, Direct)
        } else if is::<S, f16>() {
            to_int::<f16, D>(d, s as *const f16, n, stream, Half)
        } else if is::<S, bf16>() {
            to_int::<bf16, D>(d, s as *const bf16, n, stream, Half)
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
        // The 64-bit kernel's edges: exponents where its shifts change direction (2^52,
        // 2^53) and where it saturates (2^63, 2^64), each with its neighbours; f64 and f32
        // subnormals; NaN payloads (signalling, negative, quiet with bits).
        for e in [52, 53, 62, 63, 64, 65] {
            let p = 2f64.powi(e);
            let up = f64::from_bits(p.to_bits() + 1);
            let down = f64::from_bits(p.to_bits() - 1);
            v.extend([up, down, -up, -down, down + 0.5, p + 0.5, -(p - 0.5)]);
        }
        v.extend([
            4503599627370495.5,
            -4503599627370495.5,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::from_bits(0x000F_FFFF_FFFF_FFFF),
            f32::from_bits(1) as f64,
            f64::from_bits(0x7FF0_0000_0000_0001),
            f64::from_bits(0xFFF0_0000_0000_0001),
            f64::from_bits(0x7FF8_0000_DEAD_BEEF),
            f64::from_bits(0xFFFF_FFFF_FFFF_FFFF),
        ]);
        let mut x = 0x2545F4914F6CDD1Du64;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mag = 2f64.powi((x % 70) as i32);
            v.push((x as i64 as f64 / i64::MAX as f64) * mag);
        }
        v
    }

    /// Asserts that `out` is `src` item by item by the dtype rule.
    fn assert_rule<S: Element + Copy, D: Element + PartialEq + std::fmt::Debug>(
        src: &[S],
        out: &[D],
    ) {
        assert_eq!(src.len(), out.len());
        for (i, &x) in src.iter().enumerate() {
            let want = D::from_scalar(x.to_scalar());
            assert_eq!(out[i], want, "{:?} of {:?}", D::DTYPE, x.to_scalar());
        }
    }

    /// Converts `src` with `float_to_int` into a buffer `skew` items past its start (the
    /// output alignments a streaming kernel must handle), `stream` as for a big output.
    fn check<S: Element + Copy, D: Element + PartialEq + std::fmt::Debug>(
        src: &[S],
        skew: usize,
        stream: bool,
    ) {
        // Prefilled with a value most items do not convert to: a skipped item shows.
        let mut buf = vec![D::from_scalar(crate::dtype::Scalar::Int(77)); skew + src.len()];
        let out = &mut buf[skew..];
        // SAFETY: two distinct buffers of src.len() items, aligned for their types.
        let ok = unsafe {
            float_to_int::<S, D>(
                out.as_mut_ptr() as *mut u8,
                src.as_ptr() as *const u8,
                src.len(),
                stream,
            )
        };
        assert!(ok);
        assert_rule(src, out);
    }

    fn all_ints<S: Element + Copy>(src: &[S], skew: usize, stream: bool) {
        check::<S, u8>(src, skew, stream);
        check::<S, i8>(src, skew, stream);
        check::<S, i16>(src, skew, stream);
        check::<S, u16>(src, skew, stream);
        check::<S, i32>(src, skew, stream);
        check::<S, u32>(src, skew, stream);
        check::<S, i64>(src, skew, stream);
        check::<S, u64>(src, skew, stream);
    }

    /// Every 16-bit pattern as f16 and as bf16.
    fn all_halves() -> (Vec<f16>, Vec<bf16>) {
        (
            (0..=u16::MAX).map(f16::from_bits).collect(),
            (0..=u16::MAX).map(bf16::from_bits).collect(),
        )
    }

    #[test]
    fn every_float_int_pair_equals_the_dtype_rule() {
        let v = interesting_f64();
        all_ints::<f64>(&v, 0, false);
        let mut f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        // f32 bit patterns `as f32` does not give: NaN payloads, the largest subnormal.
        f.extend([0x7F80_0001, 0xFF80_0001, 0x7FC0_BEEF, 0x007F_FFFF].map(f32::from_bits));
        all_ints::<f32>(&f, 0, false);
        // Sub-runs with tails (the 64-bit kernel converts 4 items per step) and output
        // offsets, with both store kinds (runs over 16 KiB of output stream).
        for (start, skew, end, stream) in [(3, 1, 7, true), (1, 3, 2, false), (0, 2, 3, true)] {
            all_ints::<f64>(&v[start..v.len() - end], skew, stream);
            all_ints::<f32>(&f[start..f.len() - end], skew, stream);
        }
        // Every 16-bit pattern, over more than one chunk; then sub-runs with tails (the
        // direct kernel converts 16 or 32 items per step) and output offsets (streaming
        // stores start after a scalar head up to 32-byte alignment), with both store kinds,
        // of the patterns rotated to start at 0x4A00 (f16 12.0, bf16 2^21): the heads and
        // tails hold numbers, mostly in or past every integer range, not zeros and NaNs.
        let (mut h, mut b) = all_halves();
        all_ints::<f16>(&h, 0, false);
        all_ints::<bf16>(&b, 0, false);
        h.rotate_left(0x4A00);
        b.rotate_left(0x4A00);
        let l = h.len();
        for (start, skew, end, stream) in [
            (0, 0, l, true),
            (3, 1, l - 7, true),
            (1, 5, l - 29, false),
            (17, 3, l, true),
            (0, 9, l - 31, true),
            (5, 2, 40, true),
        ] {
            all_ints::<f16>(&h[start..end], skew, stream);
            all_ints::<bf16>(&b[start..end], skew, stream);
        }
        // not float -> int: not this path (which returns before touching memory)
        // SAFETY: zero items: nothing is read or written.
        assert!(!unsafe {
            float_to_int::<i32, u8>(std::ptr::null_mut(), std::ptr::null(), 0, false)
        });
        // SAFETY: as above.
        assert!(!unsafe {
            float_to_int::<f32, f64>(std::ptr::null_mut(), std::ptr::null(), 0, false)
        });
    }

    #[test]
    fn baseline_float_loops_equal_the_dtype_rule() {
        // This CPU runs the 64-bit kernel for f32 / f64 -> i64 / u64; the loop other CPUs
        // run (and, compiled for AVX2, this one for the narrower types) is cast_loop.
        fn base<F, I>(src: &[F])
        where
            F: Element + Copy + SatCast<I>,
            I: Element + Default + PartialEq + std::fmt::Debug,
        {
            let mut out = vec![I::default(); src.len()];
            // SAFETY: two distinct buffers of src.len() items, aligned for their types.
            unsafe { cast_loop(out.as_mut_ptr(), src.as_ptr(), src.len()) };
            assert_rule(src, &out);
        }
        let v = interesting_f64();
        let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        base::<f64, i64>(&v);
        base::<f64, u64>(&v);
        base::<f32, i64>(&f);
        base::<f32, u64>(&f);
    }

    #[test]
    fn baseline_half_loops_equal_the_dtype_rule() {
        // This CPU may run the AVX2 + F16C loops above; these are the ones other CPUs run.
        fn base<H: Element + Copy + 'static, I: Element + Default + PartialEq + std::fmt::Debug>(
            src: &[H],
        ) where
            f32: SatCast<I>,
        {
            let mut out = vec![I::default(); src.len()];
            // SAFETY: two distinct buffers of src.len() items, aligned for their types; H
            // is f16 or bf16.
            unsafe { from_half_base(out.as_mut_ptr(), src.as_ptr(), src.len()) };
            assert_rule(src, &out);
        }
        fn all<H: Element + Copy + 'static>(src: &[H]) {
            base::<H, u8>(src);
            base::<H, i8>(src);
            base::<H, i16>(src);
            base::<H, u16>(src);
            base::<H, i32>(src);
            base::<H, u32>(src);
            base::<H, i64>(src);
            base::<H, u64>(src);
        }
        let (h, b) = all_halves();
        all(&h);
        all(&b);
    }
}

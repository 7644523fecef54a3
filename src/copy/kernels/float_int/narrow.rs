//! The direct AVX2 + F16C kernel for f16 / bf16 -> i8 / u8 / i16 / u16 / i32 / u32: 32
//! bytes of output per step are widened in registers, saturated, converted and packed,
//! with no pass through an f32 buffer. (For 16-bit -> 16-bit that pass made the
//! conversion slower than a memcpy of the same bytes: 0.77-0.93x before this kernel.)

use super::super::is;
use super::super::steps::{drive, load_u16x16, load_u16x8, streams};
use super::base::SatCast;
use half::f16;
use std::arch::x86_64::*;
use std::mem::size_of;

// Facts about the output type, constant per monomorphisation.

fn signed<I: 'static>() -> bool {
    is::<I, i8>() || is::<I, i16>() || is::<I, i32>()
}

/// i32 and u32: their MAX is not an f32, so they saturate by a mask, not a clamp.
fn wide<I: 'static>() -> bool {
    is::<I, i32>() || is::<I, u32>()
}

/// `(I::MIN, I::MAX)` as f32 (exact) for the 8- and 16-bit types.
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
#[target_feature(enable = "avx2")]
#[inline]
fn sat<I: 'static>(x: __m256, lo: __m256, hi: __m256) -> __m256i {
    // Signed types zero NaN first (an ordered-compare mask). Unsigned ones need not:
    // `maxps` returns its second operand when the first is NaN, so NaN lands on lo = 0.
    let x = if signed::<I>() {
        _mm256_and_ps(x, _mm256_cmp_ps::<_CMP_ORD_Q>(x, x))
    } else {
        x
    };
    _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(x, lo), hi))
}

/// The dtype rule for i32 / u32 on eight f32 lanes (as [`sat`], but I::MAX is not an
/// f32: lanes at or above 2^bits saturate by a mask).
#[target_feature(enable = "avx2")]
#[inline]
fn sat32<I: 'static>(x: __m256) -> __m256i {
    const TWO31: f32 = 2147483648.0;
    if signed::<I>() {
        let x = _mm256_and_ps(x, _mm256_cmp_ps::<_CMP_ORD_Q>(x, x));
        let big = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(TWO31)));
        let r = _mm256_cvttps_epi32(_mm256_max_ps(x, _mm256_set1_ps(-TWO31)));
        // `cvttps` gives 0x8000_0000 for lanes >= 2^31: all bits flipped, i32::MAX.
        _mm256_xor_si256(r, big)
    } else {
        // NaN -> 0 as in sat.
        let x = _mm256_max_ps(x, _mm256_setzero_ps());
        let big = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(2.0 * TWO31));
        let top = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(TWO31));
        // Lanes in [2^31, 2^32) lose 2^31 (exact: both are multiples of their ulp, 256),
        // convert, and get it back as the sign bit; lanes >= 2^32 (their conversion gives
        // 0x8000_0000, cleared by that xor) become all ones.
        let y = _mm256_sub_ps(x, _mm256_and_ps(top, _mm256_set1_ps(TWO31)));
        let sign = _mm256_and_si256(_mm256_castps_si256(top), _mm256_set1_epi32(i32::MIN));
        let r = _mm256_xor_si256(_mm256_cvttps_epi32(y), sign);
        _mm256_or_si256(r, _mm256_castps_si256(big))
    }
}

/// Items `p[0..8]` as f32.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn widen8<const F16: bool>(p: &[u16]) -> __m256 {
    let x = load_u16x8(p);
    if F16 {
        _mm256_cvtph_ps(x)
    } else {
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(x)))
    }
}

/// Items `p[0..16]` as two f32 vectors `(a, b)`: a holds items 0-3 and 8-11, b items
/// 4-7 and 12-15, the order in which `_mm256_packs_epi32(a, b)` (per 128-bit lane: 4
/// of a, then 4 of b) lists them from 0 to 15, so no cross-lane shuffle is needed.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn widen16<const F16: bool>(p: &[u16]) -> (__m256, __m256) {
    if F16 {
        let (x0, x1) = (load_u16x8(p), load_u16x8(&p[8..]));
        (
            _mm256_cvtph_ps(_mm_unpacklo_epi64(x0, x1)),
            _mm256_cvtph_ps(_mm_unpackhi_epi64(x0, x1)),
        )
    } else {
        // A zero word below each bf16 makes it the f32 it is; the in-lane unpacks give
        // exactly the order above.
        let v = load_u16x16(p);
        let z = _mm256_setzero_si256();
        (
            _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v)),
            _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v)),
        )
    }
}

/// Items `p[0..16]` by `I`'s rule as 16 words in order (I's values, which fit i16 for
/// the 8-bit types).
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn words<I: 'static, const F16: bool>(p: &[u16], lo: __m256, hi: __m256) -> __m256i {
    let (a, b) = widen16::<F16>(p);
    let (a, b) = (sat::<I>(a, lo, hi), sat::<I>(b, lo, hi));
    // The lanes are in I's range already, so the packs' saturation changes nothing; u16
    // values above i16::MAX need the unsigned pack.
    if is::<I, u16>() {
        _mm256_packus_epi32(a, b)
    } else {
        _mm256_packs_epi32(a, b)
    }
}

/// The next 32 bytes of output: items `p[0..32 / size_of::<I>()]` by `I`'s rule.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn block<I: 'static, const F16: bool>(p: &[u16], lo: __m256, hi: __m256) -> __m256i {
    if wide::<I>() {
        return sat32::<I>(widen8::<F16>(p));
    }
    if size_of::<I>() == 2 {
        return words::<I, F16>(p, lo, hi);
    }
    let (w0, w1) = (
        words::<I, F16>(p, lo, hi),
        words::<I, F16>(&p[16..], lo, hi),
    );
    let b = if signed::<I>() {
        _mm256_packs_epi16(w0, w1)
    } else {
        _mm256_packus_epi16(w0, w1)
    };
    // Per lane 8 bytes of w0, then 8 of w1: quarters 0, 2, 1, 3 are in order.
    _mm256_permute4x64_epi64::<0b11_01_10_00>(b)
}

/// [`run`] for one store kind.
#[target_feature(enable = "avx2,f16c")]
fn go<I: Copy + 'static, const F16: bool, const STREAM: bool>(dst: &mut [I], src: &[u16])
where
    f32: SatCast<I>,
{
    let (lo, hi) = bounds::<I>();
    let (lo, hi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
    drive::<u16, I, STREAM>(
        dst,
        src,
        |x| widen1::<F16>(x).sat(),
        |p| block::<I, F16>(p, lo, hi),
    )
}

/// Converts f16 (`F16`, else bf16) items, as their bits, to `I` (i8, u8, i16, u16, i32
/// or u32) by the dtype rule. `stream`: the whole output is far bigger than the caches
/// (see [`streams`]).
#[target_feature(enable = "avx2,f16c")]
pub(super) fn run<I: Copy + 'static, const F16: bool>(dst: &mut [I], src: &[u16], stream: bool)
where
    f32: SatCast<I>,
{
    if streams::<I>(stream, dst.len()) {
        go::<I, F16, true>(dst, src)
    } else {
        go::<I, F16, false>(dst, src)
    }
}

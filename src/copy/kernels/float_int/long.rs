//! The AVX2 kernel for f32 / f64 / f16 / bf16 -> i64 / u64. AVX2 has no packed float ->
//! 64-bit integer conversion (AVX-512's `vcvttpd2qq` is not in the baseline), so four
//! items at a time are widened to f64 (exact) and converted by integer operations on
//! their bits: the mantissa with its implicit one, shifted by the exponent, then
//! saturated by masks. No pass through a buffer; streaming stores for big outputs.

use super::super::is;
use super::super::steps::{drive, load_f32x4, load_f64x4, load_u16x4, streams};
use super::base::SatCast;
use super::Floats;
use half::{bf16, f16};
use std::arch::x86_64::*;

/// The dtype rule for four f64 lanes to i64 (`SIGNED`) or u64.
#[target_feature(enable = "avx2")]
#[inline]
fn sat64<const SIGNED: bool>(x: __m256d) -> __m256i {
    const INF: i64 = 0x7FF0_0000_0000_0000;
    const TWO63: i64 = (1023 + 63) << 52;
    const TWO64: i64 = (1023 + 64) << 52;
    let set = |v: i64| _mm256_set1_epi64x(v);
    let b = _mm256_castpd_si256(x);
    // |x|'s bits, so the signed 64-bit compares below order them as numbers.
    let a = _mm256_and_si256(b, set(i64::MAX));
    let e = _mm256_srli_epi64::<52>(a);
    let m = _mm256_or_si256(_mm256_and_si256(a, set((1 << 52) - 1)), set(1 << 52));
    // |x| = m * 2^(e - 1075), truncated: m << (e - 1075) or m >> (1075 - e). The other
    // count is negative, a huge u64: `vpsllvq` / `vpsrlvq` give 0 for counts >= 64, so
    // the OR is the one that applies, and |x| < 1 (including zeros and subnormals, whose
    // missing implicit one does not matter) gives 0. Shifts left by more than 10
    // (|x| >= 2^63) are saturated below.
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
        // x >= 2^64 (inf included): all ones; negatives (which truncate to 0 or saturate
        // to it) and NaN: 0.
        let big = _mm256_cmpgt_epi64(a, set(TWO64 - 1));
        _mm256_andnot_si256(_mm256_or_si256(nan, neg), _mm256_or_si256(mag, big))
    }
}

/// [`run`] for one source, given as `wide` (an item as f64, exact) and `load4` (its
/// first four items as f64 lanes).
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn go<S: Copy, I: Copy + 'static>(
    dst: &mut [I],
    src: &[S],
    stream: bool,
    wide: impl Fn(S) -> f64,
    load4: impl Fn(&[S]) -> __m256d,
) where
    f64: SatCast<I>,
{
    let one = |x| wide(x).sat();
    match (is::<I, i64>(), streams::<I>(stream, dst.len())) {
        (true, true) => drive::<S, I, true>(dst, src, one, |p| sat64::<true>(load4(p))),
        (true, false) => drive::<S, I, false>(dst, src, one, |p| sat64::<true>(load4(p))),
        (false, true) => drive::<S, I, true>(dst, src, one, |p| sat64::<false>(load4(p))),
        (false, false) => drive::<S, I, false>(dst, src, one, |p| sat64::<false>(load4(p))),
    }
}

/// Converts `src` to `I` (i64 or u64) by the dtype rule. `stream`: the whole output is far
/// bigger than the caches (see [`streams`]).
#[target_feature(enable = "avx2,f16c")]
pub(super) fn run<I: Copy + 'static>(dst: &mut [I], src: Floats, stream: bool)
where
    f64: SatCast<I>,
{
    match src {
        Floats::F64(s) => go(dst, s, stream, |x| x, |p| load_f64x4(p)),
        Floats::F32(s) => go(
            dst,
            s,
            stream,
            |x| x as f64,
            |p| _mm256_cvtps_pd(load_f32x4(p)),
        ),
        Floats::F16(s) => go(
            dst,
            s,
            stream,
            |x| f16::from_bits(x).to_f64(),
            |p| _mm256_cvtps_pd(_mm_cvtph_ps(load_u16x4(p))),
        ),
        // A bf16 is the top half of an f32.
        Floats::Bf16(s) => go(
            dst,
            s,
            stream,
            |x| bf16::from_bits(x).to_f64(),
            |p| {
                let w = _mm_cvtepu16_epi32(load_u16x4(p));
                _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32::<16>(w)))
            },
        ),
    }
}

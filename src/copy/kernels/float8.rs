//! Contiguous fast paths between float32 / bfloat16 and the float8 dtypes, for
//! `Convert` (`casts.rs`). With AVX2 + F16C (`cpu.rs`), the four sign-exponent-mantissa
//! formats go through the hand-written kernels of [`avx2`]: the rules of `crate::float8`
//! (round to nearest even, saturation, NaN) on eight 32-bit lanes for float32 (a
//! subnormal result by one float addition) and sixteen 16-bit lanes for bfloat16 (integer
//! operations only), packed to bytes in registers; decoding on sixteen 16-bit lanes. Otherwise (e8m0fnu, or a CPU without them) the encoder and
//! the arithmetic decoder of `crate::float8` run in plain loops, compiled for AVX2 where
//! the CPU has it. Tests (here and `casts.rs`) check every path against the per-item
//! rule bit for bit.

use crate::float8::Float8;

/// `s`'s codes as bytes (Float8 types are `repr(transparent)` over a `u8`).
fn codes<F: Float8>(s: &[F]) -> &[u8] {
    const { assert!(size_of::<F>() == 1 && align_of::<F>() == 1) };
    // SAFETY: F is one byte, a transparent u8 (the trait's contract): the same memory,
    // every bit pattern a valid u8.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, s.len()) }
}

/// [`codes`] for a mutable slice.
fn codes_mut<F: Float8>(s: &mut [F]) -> &mut [u8] {
    const { assert!(size_of::<F>() == 1 && align_of::<F>() == 1) };
    // SAFETY: as in `codes`; every u8 is a valid F (a code), so writes keep it one.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, s.len()) }
}

/// Elements widened per chunk for bfloat16 sources (16 KiB of f32: stays in L1).
const CHUNK: usize = 4096;

#[inline(always)]
fn encode_loop<F: Float8>(dst: &mut [F], src: &[f32]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = F::from_f32(x);
    }
}

/// [`encode_loop`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn encode_avx2<F: Float8>(dst: &mut [F], src: &[f32]) {
    encode_loop(dst, src)
}

/// float32 -> `F` (equal lengths). `stream`: the whole output is far bigger than the
/// caches (streaming stores, `steps::streams`).
pub(super) fn encode_f32<F: Float8>(dst: &mut [F], src: &[f32], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(f), true) = (F::FORMAT, super::cpu::avx2_f16c()) {
        // SAFETY: CPU checked.
        return unsafe { avx2::encode_f32::<F>(codes_mut(dst), src, f, stream) };
    }
    let _ = stream; // only the kernels of `avx2` stream
    encode_scalar(dst, src)
}

/// float32 -> `F` without the kernels of [`avx2`] (the baseline, and e8m0fnu).
fn encode_scalar<F: Float8>(dst: &mut [F], src: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::avx2() {
        // SAFETY: CPU checked.
        return unsafe { encode_avx2(dst, src) };
    }
    encode_loop(dst, src)
}

/// bfloat16 (as bits) -> `F` (equal lengths); `stream` as in [`encode_f32`]. Without the
/// kernels of [`avx2`]: widened exactly to f32 (the top half) in L1-sized chunks, then
/// encoded as float32.
pub(super) fn encode_bf16<F: Float8>(dst: &mut [F], src: &[u16], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(f), true) = (F::FORMAT, super::cpu::avx2_f16c()) {
        // SAFETY: CPU checked.
        return unsafe { avx2::encode_bf16::<F>(codes_mut(dst), src, f, stream) };
    }
    let _ = stream;
    let mut buf = [0f32; CHUNK];
    for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
        let b = &mut buf[..s.len()];
        for (o, &x) in b.iter_mut().zip(s) {
            *o = f32::from_bits((x as u32) << 16);
        }
        encode_scalar(d, b);
    }
}

/// A decoded item: float32, or bfloat16 bits (exact: every float8 value has at most 3
/// mantissa bits, so the bfloat16 is the float32's top half).
pub(super) trait Narrowed: Copy + 'static {
    fn from_f32_bits(b: u32) -> Self;
}

impl Narrowed for f32 {
    #[inline(always)]
    fn from_f32_bits(b: u32) -> Self {
        f32::from_bits(b)
    }
}

impl Narrowed for u16 {
    #[inline(always)]
    fn from_f32_bits(b: u32) -> Self {
        (b >> 16) as u16
    }
}

#[inline(always)]
fn decode_loop<F: Float8, N: Narrowed>(dst: &mut [N], src: &[F]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = N::from_f32_bits(x.decode());
    }
}

/// [`decode_loop`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn decode_avx2<F: Float8, N: Narrowed>(dst: &mut [N], src: &[F]) {
    decode_loop(dst, src)
}

/// `F` -> float32 or bfloat16 bits (equal lengths); `stream` as in [`encode_f32`].
pub(super) fn decode<F: Float8, N: Narrowed>(dst: &mut [N], src: &[F], stream: bool) {
    use super::same_mut;
    #[cfg(target_arch = "x86_64")]
    if let (Some(f), true) = (F::FORMAT, super::cpu::avx2_f16c()) {
        if let Some(d) = same_mut::<N, u16>(dst) {
            // SAFETY: CPU checked.
            return unsafe { avx2::decode_bf16::<F>(d, codes(src), f, stream) };
        }
        if let Some(d) = same_mut::<N, f32>(dst) {
            // SAFETY: CPU checked.
            return unsafe { avx2::decode_f32::<F>(d, codes(src), f, stream) };
        }
    }
    let _ = stream;
    decode_scalar(dst, src)
}

/// `F` -> float32 or bfloat16 bits without the kernels of [`avx2`].
fn decode_scalar<F: Float8, N: Narrowed>(dst: &mut [N], src: &[F]) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::avx2() {
        // SAFETY: CPU checked.
        return unsafe { decode_avx2(dst, src) };
    }
    decode_loop(dst, src)
}

/// The AVX2 kernels. Each computes the rule of `crate::float8` (`encode`, `decode_bits`)
/// for one [`Format`](crate::float8::Format), lane by lane (the functions' docs say where the steps differ):
/// tests check them against it on every bfloat16 and every code, and on float32 edge and
/// random values.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::steps::{drive, load_u16x16, streams};
    use crate::float8::{Float8, Format};
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    #[inline]
    fn w16(v: i32) -> __m256i {
        _mm256_set1_epi16(v as i16)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn w32(v: i32) -> __m256i {
        _mm256_set1_epi32(v)
    }

    /// The min() that applies the overflow rule: a result past `max` becomes `overflow`
    /// (sign added after, except fnuz, where the sign of 0x80 changes nothing), which is
    /// `max` (e4m3fn saturates) or `max + 1` (e5m2's inf, fnuz's NaN) in every format.
    const fn check(f: Format) -> Format {
        assert!(f.overflow == f.max || f.overflow == f.max + 1);
        f
    }

    /// Sixteen bfloat16 (bits, one per 16-bit lane) -> their codes, one per 16-bit lane.
    /// bfloat16's low half is zero, so `encode`'s shifts on the float32 shrink by 16:
    /// a normal result (target exponent `t >= 1`) is `abs - rebias` shifted by `7 - M`;
    /// a subnormal one is the 8-bit significand shifted by `s = 8 - M - t`, where only
    /// `t` in `[-M, 0]` leaves a non-zero value (`s <= 8`). Both are one rounded shift
    /// (`shift_rne`) by `mulhi` with 2^(16 - s), its `s` from two 16-entry tables indexed
    /// by the exponent: the multiplier's high byte (0 below the subnormal range) and
    /// `2^(s-1) - 1`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn encode16(x: __m256i, f: Format, tmul: __m256i, thalf: __m256i) -> __m256i {
        let (m, bias) = (f.man as i32, f.bias);
        let abs = _mm256_and_si256(x, w16(0x7FFF));
        let sign = _mm256_and_si256(_mm256_srli_epi16::<8>(x), w16(0x80));
        // k = exp - (126 - BIAS - M), saturated to [0, M + 2]: 0 is t < -M, 1..=M + 1 is
        // t = k - M - 1 (s = 9 - k), M + 2 every normal t (s = 7 - M). The high byte of
        // each lane's index is 0: its lookup is entry 0, 0 in both tables.
        let k = _mm256_subs_epu16(_mm256_srli_epi16::<7>(abs), w16(126 - bias - m));
        let k = _mm256_min_epu16(k, w16(m + 2));
        let mul = _mm256_slli_epi16::<8>(_mm256_shuffle_epi8(tmul, k));
        let hm1 = _mm256_shuffle_epi8(thalf, k);
        // t >= 1: abs >= (128 - BIAS) << 7.
        let is_normal = _mm256_cmpgt_epi16(abs, w16(((128 - bias) << 7) - 1));
        let sig = _mm256_or_si256(_mm256_and_si256(abs, w16(0x7F)), w16(0x80));
        let v = _mm256_blendv_epi8(
            sig,
            _mm256_sub_epi16(abs, w16((127 - bias) << 7)),
            is_normal,
        );
        let odd = _mm256_and_si256(_mm256_mulhi_epu16(v, mul), w16(1));
        let q = _mm256_mulhi_epu16(_mm256_add_epi16(_mm256_add_epi16(v, hm1), odd), mul);
        let q = _mm256_min_epu16(q, w16(f.overflow as i32));
        let nan = _mm256_cmpgt_epi16(abs, w16(0x7F80));
        let q = _mm256_blendv_epi8(q, w16(if f.fnuz { 0x80 } else { 0x7F }), nan);
        let sign = if f.fnuz {
            // No −0: a zero result drops its sign.
            _mm256_andnot_si256(_mm256_cmpeq_epi16(q, _mm256_setzero_si256()), sign)
        } else {
            sign
        };
        _mm256_or_si256(q, sign)
    }

    /// [`encode16`]'s tables (the same 16 bytes in both 128-bit lanes).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn encode16_tables(f: Format) -> (__m256i, __m256i) {
        let (mut tm, mut th) = ([0u8; 16], [0u8; 16]);
        let m = f.man as usize;
        for k in 1..=m + 2 {
            // s = 9 - k, and 7 - M for the normal entry k = M + 2
            let s = if k == m + 2 { 7 - m } else { 9 - k };
            tm[k] = 1 << (8 - s); // the high byte of 2^(16 - s)
            th[k] = (1u32 << (s - 1)) as u8 - 1;
        }
        // SAFETY: reads 16 bytes of each array (unaligned loads; SSE2 is baseline).
        let (a, b) = unsafe {
            (
                _mm_loadu_si128(tm.as_ptr() as *const __m128i),
                _mm_loadu_si128(th.as_ptr() as *const __m128i),
            )
        };
        (
            _mm256_broadcastsi128_si256(a),
            _mm256_broadcastsi128_si256(b),
        )
    }

    /// Eight float32 (bits, one per 32-bit lane) -> their codes, one per 32-bit lane:
    /// `encode`, with its normal value left unmasked (it is selected only where the
    /// subtraction does not wrap). A subnormal result (`abs < 2^(1 - BIAS)`) is
    /// `abs / 2^(1 - BIAS - M)` rounded to nearest even, which one float addition makes:
    /// `abs + 2^(24 - BIAS - M)` stays in that power of two's binade, whose ulp is the
    /// quantum, so the sum's low bits are the rounded quotient (exactly `encode`'s
    /// integer rounding; float32 subnormal inputs give 0 there too). It needs the
    /// default rounding mode, which Rust code assumes throughout (float casts included).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn encode32(x: __m256i, f: Format) -> __m256i {
        let (m, bias) = (f.man as i32, f.bias);
        let one = w32(1);
        let abs = _mm256_and_si256(x, w32(0x7FFF_FFFF));
        let sign = _mm256_and_si256(_mm256_srli_epi32::<24>(x), w32(0x80));
        let s = _mm_cvtsi32_si128(23 - m);
        let v = _mm256_sub_epi32(abs, w32((127 - bias) << 23));
        let odd = _mm256_and_si256(_mm256_srl_epi32(v, s), one);
        let v = _mm256_add_epi32(_mm256_add_epi32(v, w32((1 << (22 - m)) - 1)), odd);
        let normal = _mm256_srl_epi32(v, s);
        let magic = w32((151 - bias - m) << 23);
        let sum = _mm256_add_ps(_mm256_castsi256_ps(abs), _mm256_castsi256_ps(magic));
        let sub = _mm256_sub_epi32(_mm256_castps_si256(sum), magic);
        let is_normal = _mm256_cmpgt_epi32(abs, w32(((128 - bias) << 23) - 1));
        let q = _mm256_blendv_epi8(sub, normal, is_normal);
        let q = _mm256_min_epu32(q, w32(f.overflow as i32));
        let nan = _mm256_cmpgt_epi32(abs, w32(0x7F80_0000));
        let q = _mm256_blendv_epi8(q, w32(if f.fnuz { 0x80 } else { 0x7F }), nan);
        let sign = if f.fnuz {
            _mm256_andnot_si256(_mm256_cmpeq_epi32(q, _mm256_setzero_si256()), sign)
        } else {
            sign
        };
        _mm256_or_si256(q, sign)
    }

    /// Items `p[0..8]` as bits.
    #[target_feature(enable = "avx")]
    #[inline]
    fn load_f32x8(p: &[f32]) -> __m256i {
        let a: &[f32; 8] = p[..8].try_into().unwrap();
        // SAFETY: reads the 32 bytes of `a` (an unaligned load); AVX is enabled here.
        _mm256_castps_si256(unsafe { _mm256_loadu_ps(a.as_ptr()) })
    }

    #[target_feature(enable = "avx2,f16c")]
    fn encode_f32_go<F: Float8, const STREAM: bool>(dst: &mut [u8], src: &[f32], f: Format) {
        let f = check(f);
        // 32 items: four vectors of codes in 32-bit lanes; the packs leave 4-item groups in
        // the order a0 b0 c0 d0 a1 b1 c1 d1 (per 128-bit lane: a, b, then c, d), put back
        // by a dword permutation.
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        drive::<f32, u8, STREAM>(dst, src, F::encode, |p| {
            let a = encode32(load_f32x8(p), f);
            let b = encode32(load_f32x8(&p[8..]), f);
            let c = encode32(load_f32x8(&p[16..]), f);
            let d = encode32(load_f32x8(&p[24..]), f);
            let ab = _mm256_packus_epi32(a, b);
            let cd = _mm256_packus_epi32(c, d);
            _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order)
        })
    }

    /// float32 -> `F`'s codes, `F::FORMAT` being `f`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) fn encode_f32<F: Float8>(dst: &mut [u8], src: &[f32], f: Format, stream: bool) {
        if streams::<u8>(stream, dst.len()) {
            encode_f32_go::<F, true>(dst, src, f)
        } else {
            encode_f32_go::<F, false>(dst, src, f)
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    fn encode_bf16_go<F: Float8, const STREAM: bool>(dst: &mut [u8], src: &[u16], f: Format) {
        let f = check(f);
        let (tm, th) = encode16_tables(f);
        drive::<u16, u8, STREAM>(
            dst,
            src,
            |x| F::encode(f32::from_bits((x as u32) << 16)),
            |p| {
                let a = encode16(load_u16x16(p), f, tm, th);
                let b = encode16(load_u16x16(&p[16..]), f, tm, th);
                // Per 128-bit lane 8 codes of a, then 8 of b: quarters 0, 2, 1, 3 in order.
                _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi16(a, b))
            },
        )
    }

    /// bfloat16 bits -> `F`'s codes, `F::FORMAT` being `f`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) fn encode_bf16<F: Float8>(dst: &mut [u8], src: &[u16], f: Format, stream: bool) {
        if streams::<u8>(stream, dst.len()) {
            encode_bf16_go::<F, true>(dst, src, f)
        } else {
            encode_bf16_go::<F, false>(dst, src, f)
        }
    }

    /// Sixteen codes (one per 16-bit lane) -> their bfloat16 bits (`decode_bits`' top
    /// half: exact). Normal codes move exponent and mantissa into place; a subnormal
    /// code (`mag < 2^M`, at most 8 of them) is looked up in `tsub`, its bfloat16 as a
    /// 16-byte table indexed by the byte pairs `(2·mag, 2·mag + 1)`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn decode16(x: __m256i, f: Format, tsub: __m256i) -> __m256i {
        let (m, bias) = (f.man as i32, f.bias);
        let mag = _mm256_and_si256(x, w16(0x7F));
        let sign = _mm256_slli_epi16::<8>(_mm256_and_si256(x, w16(0x80)));
        let normal = _mm256_add_epi16(
            _mm256_sll_epi16(mag, _mm_cvtsi32_si128(7 - m)),
            w16((127 - bias) << 7),
        );
        let idx = _mm256_add_epi16(_mm256_mullo_epi16(mag, w16(0x0202)), w16(0x0100));
        let sub = _mm256_shuffle_epi8(tsub, idx);
        let is_sub = _mm256_cmpgt_epi16(w16(1 << m), mag);
        let v = _mm256_or_si256(_mm256_blendv_epi8(normal, sub, is_sub), sign);
        if f.fnuz {
            // 0x80, the one NaN (no sign).
            let nan = _mm256_cmpeq_epi16(x, w16(0x80));
            _mm256_blendv_epi8(v, w16(0x7FC0), nan)
        } else if m == 2 {
            // e5m2: all-ones exponent is inf (mantissa 0) or NaN, signed.
            let nan = _mm256_cmpgt_epi16(mag, w16(0x7C));
            let inf = _mm256_cmpeq_epi16(mag, w16(0x7C));
            let v = _mm256_blendv_epi8(v, _mm256_or_si256(sign, w16(0x7FC0)), nan);
            _mm256_blendv_epi8(v, _mm256_or_si256(sign, w16(0x7F80)), inf)
        } else {
            // e4m3fn: NaN at S.1111.111 only.
            let nan = _mm256_cmpeq_epi16(mag, w16(0x7F));
            _mm256_blendv_epi8(v, _mm256_or_si256(sign, w16(0x7FC0)), nan)
        }
    }

    /// [`decode16`]'s table, from `F`'s decoding table.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn decode16_table<F: Float8>(f: Format) -> __m256i {
        let mut t = [0u16; 8];
        for (mag, e) in t.iter_mut().enumerate().take(1 << f.man) {
            *e = (F::TABLE[mag] >> 16) as u16;
        }
        // SAFETY: reads the 16 bytes of `t` (an unaligned load; SSE2 is baseline).
        _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(t.as_ptr() as *const __m128i) })
    }

    /// The table decoding of one code (the head and the tail).
    #[inline(always)]
    fn one<F: Float8>(x: u8) -> u32 {
        F::TABLE[x as usize]
    }

    /// Items `p[0..16]` (16 bytes).
    #[inline(always)]
    fn load_u8x16(p: &[u8]) -> __m128i {
        let a: &[u8; 16] = p[..16].try_into().unwrap();
        // SAFETY: reads the 16 bytes of `a` (an unaligned SSE2 load: baseline x86-64).
        unsafe { _mm_loadu_si128(a.as_ptr() as *const __m128i) }
    }

    /// Items `p[0..8]` (8 bytes) in the low half.
    #[inline(always)]
    fn load_u8x8(p: &[u8]) -> __m128i {
        let a: &[u8; 8] = p[..8].try_into().unwrap();
        // SAFETY: reads the 8 bytes of `a` (an unaligned SSE2 load: baseline x86-64).
        unsafe { _mm_loadl_epi64(a.as_ptr() as *const __m128i) }
    }

    #[target_feature(enable = "avx2,f16c")]
    fn decode_bf16_go<F: Float8, const STREAM: bool>(dst: &mut [u16], src: &[u8], f: Format) {
        let t = decode16_table::<F>(f);
        drive::<u8, u16, STREAM>(
            dst,
            src,
            |x| (one::<F>(x) >> 16) as u16,
            |p| decode16(_mm256_cvtepu8_epi16(load_u8x16(p)), f, t),
        )
    }

    /// `F`'s codes -> bfloat16 bits, `F::FORMAT` being `f`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) fn decode_bf16<F: Float8>(dst: &mut [u16], src: &[u8], f: Format, stream: bool) {
        if streams::<u16>(stream, dst.len()) {
            decode_bf16_go::<F, true>(dst, src, f)
        } else {
            decode_bf16_go::<F, false>(dst, src, f)
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    fn decode_f32_go<F: Float8, const STREAM: bool>(dst: &mut [f32], src: &[u8], f: Format) {
        let t = decode16_table::<F>(f);
        // 8 codes per 32 bytes of output: decoded in the low half of a 16-lane vector,
        // widened to float32 (bfloat16 is its top half: exact).
        drive::<u8, f32, STREAM>(
            dst,
            src,
            |x| f32::from_bits(one::<F>(x)),
            |p| {
                let h = decode16(_mm256_cvtepu8_epi16(load_u8x8(p)), f, t);
                _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)))
            },
        )
    }

    /// `F`'s codes -> float32, `F::FORMAT` being `f`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) fn decode_f32<F: Float8>(dst: &mut [f32], src: &[u8], f: Format, stream: bool) {
        if streams::<f32>(stream, dst.len()) {
            decode_f32_go::<F, true>(dst, src, f)
        } else {
            decode_f32_go::<F, false>(dst, src, f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float8::*;

    /// Float32 inputs for the encoders: every code's value and its neighbours, every
    /// midpoint between adjacent codes (the ties) and one ulp either side, powers of two
    /// from 2^-149 to 2^127, the saturation and overflow thresholds, f32 subnormals,
    /// zeros, infinities, NaNs with several payloads and both signs; then random bit
    /// patterns, uniform and with exponents near the float8 ranges. Both signs of each.
    fn f32_inputs() -> Vec<f32> {
        let mut v: Vec<f32> = Vec::new();
        let tables: [&[u32; 256]; 4] = [
            &DECODE_E5M2,
            &DECODE_E4M3FN,
            &DECODE_E5M2FNUZ,
            &DECODE_E4M3FNUZ,
        ];
        for t in tables {
            let mut finite: Vec<f64> = t
                .iter()
                .map(|&b| f32::from_bits(b) as f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .collect();
            finite.sort_by(|a, b| a.partial_cmp(b).unwrap());
            for w in finite.windows(2) {
                for x in [w[0], (w[0] + w[1]) / 2.0] {
                    let b = (x as f32).to_bits();
                    v.extend([b.wrapping_sub(1), b, b + 1].map(f32::from_bits));
                }
            }
            // Past the largest: the midpoint to the next would-be code, and far beyond.
            let top = *finite.last().unwrap();
            let next = top + (top - finite[finite.len() - 2]);
            for x in [top, (top + next) / 2.0, next, top * 4.0] {
                let b = (x as f32).to_bits();
                v.extend([b - 1, b, b + 1].map(f32::from_bits));
            }
        }
        for e in 0..=254u32 {
            v.extend([e << 23, (e << 23) | 0x40_0000, (e << 23) | 0x7F_FFFF].map(f32::from_bits));
        }
        v.extend([1u32, 2, 0x40_0000, 0x7F_FFFF].map(f32::from_bits));
        v.extend([0.0, f32::INFINITY, f32::MAX, f32::MIN_POSITIVE]);
        v.extend(
            [
                0x7F80_0001u32,
                0x7FC0_0000,
                0x7FFF_FFFF,
                0x7FA0_0000,
                0x7F80_1000,
            ]
            .map(f32::from_bits),
        );
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..200_000 {
            let r = next();
            v.push(f32::from_bits(r as u32));
            // exponent 95..=159: the float8 ranges with a margin either side
            let e = 95 + (r >> 40) as u32 % 65;
            v.push(f32::from_bits((e << 23) | (r >> 8) as u32 & 0x7F_FFFF));
        }
        let neg: Vec<f32> = v.iter().map(|x| -x).collect();
        v.extend(neg);
        v
    }

    /// Every path of this file (the AVX2 kernels where the CPU has them, with and without
    /// streaming stores, and the plain loops) against the per-item rule of float8.rs,
    /// bit for bit: float32 from [`f32_inputs`], all 65536 bfloat16 patterns, all 256
    /// codes (decoded to float32 and bfloat16), each at several start offsets so the
    /// heads and tails around the 32-byte steps are covered.
    #[test]
    fn simd_paths_equal_the_scalar_rule() {
        fn check<F: Float8 + std::fmt::Debug>() {
            let f = f32_inputs();
            let bf: Vec<u16> = (0..=u16::MAX).collect();
            // 64 copies of the 256 codes: 16 KiB, long enough to stream as bfloat16 too.
            let codes: Vec<F> = (0..256 * 64).map(|i| F::from_bits(i as u8)).collect();
            let want_f: Vec<u8> = f.iter().map(|&x| F::encode(x)).collect();
            let want_b: Vec<u8> = bf
                .iter()
                .map(|&x| F::encode(f32::from_bits((x as u32) << 16)))
                .collect();
            for off in [0, 1, 7, 31] {
                for stream in [false, true] {
                    let mut got = vec![F::from_bits(0); f.len() - off];
                    encode_f32(&mut got, &f[off..], stream);
                    for (i, g) in got.iter().enumerate() {
                        assert_eq!(g.bits(), want_f[i + off], "f32 {:#x}", f[i + off].to_bits());
                    }
                    let mut got = vec![F::from_bits(0); bf.len() - off];
                    encode_bf16(&mut got, &bf[off..], stream);
                    for (i, g) in got.iter().enumerate() {
                        assert_eq!(g.bits(), want_b[i + off], "bf16 {:#x}", bf[i + off]);
                    }
                    let mut d32 = vec![0f32; codes.len() - off];
                    decode(&mut d32, &codes[off..], stream);
                    let mut d16 = vec![0u16; codes.len() - off];
                    decode(&mut d16, &codes[off..], stream);
                    for i in 0..d32.len() {
                        let want = F::TABLE[codes[i + off].bits() as usize];
                        assert_eq!(d32[i].to_bits(), want, "code {:?}", codes[i + off]);
                        assert_eq!(d16[i] as u32, want >> 16, "code {:?}", codes[i + off]);
                    }
                }
            }
            // The plain loops (the baseline and e8m0fnu's path) against the same rule.
            let mut got = vec![F::from_bits(0); f.len()];
            encode_scalar(&mut got, &f);
            assert!(got.iter().zip(&want_f).all(|(g, w)| g.bits() == *w));
            let mut d32 = vec![0f32; codes.len()];
            decode_scalar(&mut d32, &codes);
            let t = F::TABLE;
            assert!(d32
                .iter()
                .zip(&codes)
                .all(|(d, c)| d.to_bits() == t[c.bits() as usize]));
        }
        if !super::super::cpu::avx2_f16c() {
            eprintln!("no AVX2 + F16C here: only the plain loops are checked");
        }
        check::<F8E5M2>();
        check::<F8E4M3Fn>();
        check::<F8E5M2Fnuz>();
        check::<F8E4M3Fnuz>();
        check::<F8E8M0Fnu>();
    }
}

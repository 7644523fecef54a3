//! Contiguous fast paths between float32 / bfloat16 and the float8 dtypes, for
//! `Convert` (kernels.rs): the encoder and the arithmetic decoder of `crate::float8` in
//! loops compiled for AVX2 where the CPU has it (their selects, shifts and conversions
//! vectorise). Tests (`kernels.rs`) check them against the per-item rule of dtype.rs bit
//! for bit.

use crate::float8::Float8;

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

/// float32 -> `F` (equal lengths).
pub(super) fn encode_f32<F: Float8>(dst: &mut [F], src: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::avx2() {
        // SAFETY: CPU checked.
        return unsafe { encode_avx2(dst, src) };
    }
    encode_loop(dst, src)
}

/// bfloat16 (as bits) -> `F` (equal lengths): widened exactly to f32 (the top half) in
/// L1-sized chunks, then [`encode_f32`].
pub(super) fn encode_bf16<F: Float8>(dst: &mut [F], src: &[u16]) {
    let mut buf = [0f32; CHUNK];
    for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
        let b = &mut buf[..s.len()];
        for (o, &x) in b.iter_mut().zip(s) {
            *o = f32::from_bits((x as u32) << 16);
        }
        encode_f32(d, b);
    }
}

/// A decoded item: float32, or bfloat16 bits (exact: every float8 value has at most 3
/// mantissa bits, so the bfloat16 is the float32's top half).
pub(super) trait Narrowed: Copy {
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

/// `F` -> float32 or bfloat16 bits (equal lengths).
pub(super) fn decode<F: Float8, N: Narrowed>(dst: &mut [N], src: &[F]) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::avx2() {
        // SAFETY: CPU checked.
        return unsafe { decode_avx2(dst, src) };
    }
    decode_loop(dst, src)
}

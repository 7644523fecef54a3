//! Contiguous fast paths between float32 / bfloat16 and the float8 dtypes, for
//! `Convert` (kernels.rs): the encoder of `crate::float8` in a loop compiled for AVX2
//! where the CPU has it (its selects and variable shifts vectorise), and table lookups
//! for decoding. Tests (`kernels.rs`) check them against the per-item rule of dtype.rs
//! bit for bit.

use crate::float8::Float8;

/// A source item the encoder widens to f32 exactly: f32 itself, or bfloat16 bits.
pub(super) trait Wide: Copy {
    fn f32(self) -> f32;
}

impl Wide for f32 {
    #[inline(always)]
    fn f32(self) -> f32 {
        self
    }
}

impl Wide for u16 {
    /// bfloat16 bits: the top half of an f32.
    #[inline(always)]
    fn f32(self) -> f32 {
        f32::from_bits((self as u32) << 16)
    }
}

#[inline(always)]
fn encode_loop<F: Float8, S: Wide>(dst: &mut [F], src: &[S]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = F::from_f32(x.f32());
    }
}

/// [`encode_loop`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn encode_avx2<F: Float8, S: Wide>(dst: &mut [F], src: &[S]) {
    encode_loop(dst, src)
}

/// float32 or bfloat16-bits items -> `F` (equal lengths).
pub(super) fn encode<F: Float8, S: Wide>(dst: &mut [F], src: &[S]) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::avx2() {
        // SAFETY: CPU checked.
        return unsafe { encode_avx2(dst, src) };
    }
    encode_loop(dst, src)
}

/// `F` -> float32 by the table (equal lengths).
pub(super) fn decode_f32<F: Float8>(dst: &mut [f32], src: &[F]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = x.to_f32();
    }
}

/// `F` -> bfloat16 bits (exact: the top half of the float32; equal lengths).
pub(super) fn decode_bf16<F: Float8>(dst: &mut [u16], src: &[F]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = (F::TABLE[x.bits() as usize] >> 16) as u16;
    }
}

//! `copy_affine_`: `dst[..., c, ...] = src[..., c, ...] · scale[c] + shift[c]` in one pass,
//! with `src` broadcast to `dst` and converted as `copy_` converts.
//!
//! The op runs the one strided-iteration engine once per index `c` of `dst`'s dim `dim`
//! (or once over everything when one scale/shift serves all), with an [`Affine`] kernel
//! holding that index's scale and shift (the dtype dispatch: `engine::dispatch::affine_raw`). Arithmetic: float64 for a float64 or integer
//! destination (integer results then truncate and saturate as `copy_` does), float32 for
//! float32 / float16 / bfloat16 destinations (then rounded to the output type).
//!
//! The hot case of image preprocessing, a uint8 HWC frame permuted to CHW into a float32
//! CHW tensor, becomes per channel one run of `H·W` items read 3 bytes apart and written
//! contiguously; that run has an AVX2 loop (`simd`) that computes exactly what the scalar
//! loop computes (multiply, then add, each rounded to float32).

use super::{cpu, is, Kernel};
use crate::dtype::{Bool, Element};
use half::{bf16, f16};
use std::mem::size_of;

/// The arithmetic type of an output element type.
pub(crate) trait AffineOut: Element {
    /// `x · scale + shift` rounded to `Self`, from an input read as f64.
    fn affine(x: f64, scale: f64, shift: f64) -> Self;
}

macro_rules! via_f64 {
    ($($t:ty),*) => {$(
        impl AffineOut for $t {
            #[inline(always)]
            fn affine(x: f64, scale: f64, shift: f64) -> Self {
                <$t as Element>::from_scalar(crate::dtype::Scalar::Float(x * scale + shift))
            }
        }
    )*};
}
via_f64!(u8, i8, i16, i32, i64, u16, u32, u64, Bool, f64);

macro_rules! via_f32 {
    ($($t:ty),*) => {$(
        impl AffineOut for $t {
            #[inline(always)]
            fn affine(x: f64, scale: f64, shift: f64) -> Self {
                let v = (x as f32) * (scale as f32) + (shift as f32);
                <$t as Element>::from_scalar(crate::dtype::Scalar::Float(v as f64))
            }
        }
    )*};
}
via_f32!(f32, f16, bf16);
// float8 outputs round the f32 result once more, to the format (float8.rs).
use crate::float8::{F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, F8E8M0Fnu, F8E5M2};
via_f32!(F8E5M2, F8E4M3Fn, F8E5M2Fnuz, F8E4M3Fnuz, F8E8M0Fnu);

/// The kernel: one scale and shift for every element it is given.
pub(crate) struct Affine<S, D> {
    pub scale: f64,
    pub shift: f64,
    /// The whole output is far bigger than the caches: the SIMD loops use streaming stores.
    pub stream: bool,
    _t: std::marker::PhantomData<(S, D)>,
}

impl<S, D> Affine<S, D> {
    pub fn new(scale: f64, shift: f64, stream: bool) -> Self {
        Affine {
            scale,
            shift,
            stream,
            _t: std::marker::PhantomData,
        }
    }
}

impl<S: Element, D: AffineOut> Kernel for Affine<S, D> {
    #[inline]
    unsafe fn run(&mut self, d: *mut u8, s: *const u8, n: usize, ds: isize, ss: isize) -> bool {
        // Every loop below touches exactly the items i < n at d + i·ds and s + i·ss, which
        // the `Kernel::run` contract puts inside the operands' layouts (dst writable); the
        // accesses are unaligned (foreign memory need not be aligned).
        let (a, b) = (self.scale, self.shift);
        if is::<S, u8>() && is::<D, f32>() && ds == 4 {
            #[cfg(target_arch = "x86_64")]
            if cpu::avx2() && (ss == 1 || ss == 3) {
                // SAFETY: CPU checked; n u8 items ss (1 or 3) apart at s and n contiguous
                // f32 at d (ds == 4): the run u8_to_f32 requires.
                unsafe { simd::u8_to_f32(self.stream, d, s, n, ss as usize, a as f32, b as f32) };
                return true;
            }
            // Scalar: the same two float32 roundings as the SIMD loop.
            let (a, b) = (a as f32, b as f32);
            let d = d as *mut f32;
            // SAFETY: item i < n is s + i·ss (a byte) and d + i·4 (run's contract).
            unsafe {
                for i in 0..n {
                    let x = *s.offset(i as isize * ss) as f32;
                    d.add(i).write_unaligned(x * a + b);
                }
            }
            return true;
        }
        let rd = |x: S| x.to_scalar().to_f64();
        if ss == 0 {
            // SAFETY: with ss == 0 the source is the one item at s; the writes are the n
            // destination items d + i·ds (run's contract).
            unsafe {
                let v = D::affine(rd((s as *const S).read_unaligned()), a, b);
                for i in 0..n {
                    (d.offset(i as isize * ds) as *mut D).write_unaligned(v);
                }
            }
        } else if ds == size_of::<D>() as isize && ss == size_of::<S>() as isize {
            // SAFETY: item i < n is d + i·ds and s + i·ss with ds, ss the item sizes.
            unsafe {
                let (d, s) = (d as *mut D, s as *const S);
                for i in 0..n {
                    d.add(i)
                        .write_unaligned(D::affine(rd(s.add(i).read_unaligned()), a, b));
                }
            }
        } else {
            // SAFETY: item i < n is d + i·ds and s + i·ss (run's contract).
            unsafe {
                for i in 0..n {
                    let x = (s.offset(i as isize * ss) as *const S).read_unaligned();
                    (d.offset(i as isize * ds) as *mut D).write_unaligned(D::affine(rd(x), a, b));
                }
            }
        }
        true
    }
}

/// x86-64 loops for the image case, chosen at run time.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// `n` bytes read `ss` apart (1 or 3) to `n` contiguous f32 `x·a + b` (a multiply and
    /// an add, each rounded: the scalar loop's values). `stream`: streaming stores (after
    /// a scalar head up to 32-byte alignment), not fenced: the op that asked for them
    /// fences once when it is done ([`fence_streaming_stores`](super::super::fence_streaming_stores);
    /// a fence per run, thousands per frame, each waiting for the run's lines to drain).
    ///
    /// # Safety
    /// The `n` bytes `s + i·ss` (i < n) are readable and the `n` f32 (unaligned) at `d`
    /// writable, not overlapping them; `ss` is 1 or 3; the CPU supports AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn u8_to_f32(
        stream: bool,
        d: *mut u8,
        s: *const u8,
        n: usize,
        ss: usize,
        a: f32,
        b: f32,
    ) {
        let d = d as *mut f32;
        // Streaming stores need 32-byte aligned outputs: scalar items up to there (only
        // when the output is 4-byte aligned, i.e. a whole number of items away).
        let head = if stream && (d as usize).is_multiple_of(4) {
            ((32 - (d as usize) % 32) % 32 / 4).min(n)
        } else {
            0
        };
        // SAFETY: items j < head <= n of the contract's runs.
        let (d2, s2, n2) = unsafe {
            for j in 0..head {
                d.add(j).write_unaligned(*s.add(j * ss) as f32 * a + b);
            }
            (d.add(head), s.add(head * ss), n - head)
        };
        let aligned = stream && (d2 as usize).is_multiple_of(32);
        // SAFETY: the rest of the runs, items head..n, with ss 1 (dense) or 3 (stride3),
        // as each requires; AVX2 is enabled here (the contract); streaming stores only when
        // d2 is 32-byte aligned (then every 8-item store of dense / stride3 is).
        unsafe {
            match (ss, aligned) {
                (1, false) => dense::<false>(d2, s2, n2, a, b),
                (1, true) => dense::<true>(d2, s2, n2, a, b),
                (_, false) => stride3::<false>(d2, s2, n2, a, b),
                (_, true) => stride3::<true>(d2, s2, n2, a, b),
            }
        }
    }

    /// Eight bytes (in the low half of `v`) to eight floats `x·a + b` at `d` (32-byte
    /// aligned when `STREAM`).
    ///
    /// # Safety
    /// The CPU supports AVX2; 32 bytes writable at `d`, 32-byte aligned when `STREAM`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn emit8<const STREAM: bool>(d: *mut f32, v: __m128i, a: __m256, b: __m256) {
        // SAFETY: the contract, which emit8_u32's is.
        unsafe { emit8_u32::<STREAM>(d, _mm256_cvtepu8_epi32(v), a, b) }
    }

    /// Eight 32-bit integers (bytes zero-extended) to eight floats `x·a + b` at `d`.
    ///
    /// # Safety
    /// The CPU supports AVX2; 32 bytes writable at `d`, 32-byte aligned when `STREAM`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn emit8_u32<const STREAM: bool>(d: *mut f32, x: __m256i, a: __m256, b: __m256) {
        // SAFETY: one 32-byte store at d, aligned when streaming: the contract.
        unsafe {
            let y = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(x), a), b);
            if STREAM {
                _mm256_stream_ps(d, y)
            } else {
                _mm256_storeu_ps(d, y)
            }
        }
    }

    /// Bytes 0, 3, ..., 21 at `p`, zero-extended into eight 32-bit lanes: one shuffle (`m`,
    /// in `stride3`) of the 16 bytes at `p` (lane 0) and the 16 at `p + 6` (lane 1).
    ///
    /// # Safety
    /// The CPU supports AVX2; the 22 bytes at `p` readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn gather8(p: *const u8, m: __m256i) -> __m256i {
        // SAFETY: bytes p..p + 16 and p + 6..p + 22: the contract.
        unsafe {
            let lo = _mm_loadu_si128(p as *const __m128i);
            let hi = _mm_loadu_si128(p.add(6) as *const __m128i);
            _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), m)
        }
    }

    /// `n` contiguous bytes to `n` contiguous floats `x·a + b`, 16 at a time.
    ///
    /// # Safety
    /// The CPU supports AVX2; `n` bytes readable at `s`, `n` f32 writable at `d`; with
    /// `STREAM`, `d` is 32-byte aligned.
    #[target_feature(enable = "avx2")]
    unsafe fn dense<const STREAM: bool>(d: *mut f32, s: *const u8, n: usize, a: f32, b: f32) {
        let (va, vb) = (_mm256_set1_ps(a), _mm256_set1_ps(b));
        // SAFETY: the block loop reads bytes i..i + 16 and writes floats i..i + 16 with
        // i + 16 <= n (d + i stays 32-byte aligned when d is: i is a multiple of 16); the
        // tail moves items i..n one by one.
        unsafe {
            let mut i = 0;
            while i + 16 <= n {
                let v = _mm_loadu_si128(s.add(i) as *const __m128i);
                emit8::<STREAM>(d.add(i), v, va, vb);
                emit8::<STREAM>(d.add(i + 8), _mm_unpackhi_epi64(v, v), va, vb);
                i += 16;
            }
            for j in i..n {
                d.add(j).write_unaligned(*s.add(j) as f32 * a + b);
            }
        }
    }

    /// Every third byte, 16 outputs per step: each 8 come from one 256-bit shuffle of two
    /// 16-byte loads 6 bytes apart (lane 0 holds bytes 0..16, lane 1 bytes 6..22), which
    /// puts bytes 0, 3, ..., 21 zero-extended into the eight 32-bit lanes directly.
    ///
    /// # Safety
    /// The CPU supports AVX2; the `n` bytes `s + 3i` (i < n) readable, `n` f32 writable at
    /// `d`; with `STREAM`, `d` is 32-byte aligned.
    #[target_feature(enable = "avx2")]
    unsafe fn stride3<const STREAM: bool>(d: *mut f32, s: *const u8, n: usize, a: f32, b: f32) {
        let (va, vb) = (_mm256_set1_ps(a), _mm256_set1_ps(b));
        // Output k of a group of 8 takes byte 3k: k < 4 from lane 0 (bytes 0, 3, 6, 9),
        // k >= 4 from lane 1, loaded 6 bytes later (its bytes 6, 9, 12, 15 = 12, ..., 21).
        let z = -1i8;
        let m = _mm256_setr_epi8(
            0, z, z, z, 3, z, z, z, 6, z, z, z, 9, z, z, z, //
            6, z, z, z, 9, z, z, z, 12, z, z, z, 15, z, z, z,
        );
        // SAFETY: a group of 8 at item i reads bytes 3i..3i + 16 and 3i + 6..3i + 22, whose
        // last byte 3i + 21 = 3(i + 7) is an item's; the loop writes floats i..i + 16 <= n
        // (d + i 32-byte aligned when d is: i is a multiple of 16); the tail moves items
        // i..n one by one.
        unsafe {
            let mut i = 0;
            while i + 16 <= n {
                let p = s.add(3 * i);
                emit8_u32::<STREAM>(d.add(i), gather8(p, m), va, vb);
                emit8_u32::<STREAM>(d.add(i + 8), gather8(p.add(24), m), va, vb);
                i += 16;
            }
            for j in i..n {
                d.add(j).write_unaligned(*s.add(3 * j) as f32 * a + b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's u8 -> f32 run (AVX2 when the CPU has it) against the scalar formula,
    /// for every run length around the 16-item blocks, dense and 3 bytes apart, with the
    /// source ending exactly at its last item (the stride-3 loads must stay inside).
    #[test]
    fn u8_to_f32_runs_equal_the_scalar_formula() {
        let (a, b) = (1.0f64 / (255.0 * 0.229), -0.485f64 / 0.229);
        for ss in [1usize, 3, 2] {
            for n in 0..70usize {
                let len = if n == 0 { 0 } else { (n - 1) * ss + 1 };
                let src: Vec<u8> = (0..len).map(|i| (i * 37 + i / 5) as u8).collect();
                // Every output alignment (streaming stores start after a scalar head).
                for (skew, stream) in [
                    (0, false),
                    (0, true),
                    (1, true),
                    (3, true),
                    (5, true),
                    (7, true),
                ] {
                    let mut buf = vec![f32::NAN; n + 8];
                    let out = &mut buf[skew..skew + n];
                    let mut k = Affine::<u8, f32>::new(a, b, stream);
                    // SAFETY: n items ss apart inside src; n contiguous f32 in out.
                    unsafe { k.run(out.as_mut_ptr() as *mut u8, src.as_ptr(), n, 4, ss as isize) };
                    // The kernel leaves the fence to its op, as copy_affine_ does.
                    crate::copy::kernels::fence_streaming_stores();
                    for (i, &o) in out.iter().enumerate() {
                        let want = src[i * ss] as f32 * a as f32 + b as f32;
                        assert_eq!(
                            o.to_bits(),
                            want.to_bits(),
                            "ss {ss} n {n} skew {skew} item {i}"
                        );
                    }
                    assert!(buf[..skew]
                        .iter()
                        .chain(&buf[skew + n..])
                        .all(|x| x.is_nan()));
                }
            }
        }
    }

    #[test]
    fn integer_outputs_truncate_and_saturate_like_copy() {
        let src: Vec<f64> = vec![-3.7, 2.9, 300.0, f64::NAN, 1e300];
        let mut out = vec![0u8; src.len()];
        let mut k = Affine::<f64, u8>::new(1.0, 0.0, false);
        // SAFETY: both buffers hold src.len() items.
        unsafe { k.run(out.as_mut_ptr(), src.as_ptr() as *const u8, src.len(), 1, 8) };
        assert_eq!(out, vec![0, 2, 255, 0, 255]);
    }
}

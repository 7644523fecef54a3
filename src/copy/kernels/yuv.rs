//! The walk of `copy_yuv_affine_` (its arguments are checked in `copy/yuv.rs`): 8-bit (or
//! 10-bit in uint16: `Sample`) YUV 4:2:0 planes (I420 or NV12 / P010, any strides) to a
//! normalized RGB tensor in one pass: colour conversion, chroma upsampling,
//! `rgb · scale + shift` and the output conversion, each output element written once.
//!
//! Arithmetic (the contract written in the header, `tensor_copy_yuv_affine_`), all in
//! float32, for output pixel (i, j) with chroma sample (i / 2, j / 2):
//!
//! ```text
//! y' = (Y - y0) · ky          u = U - 128, v = V - 128
//! R = y' + rv·v    G = y' + (gu·u + gv·v)    B = y' + bu·u      (each clamped to [0, 255])
//! out_c = R/G/B · scale_c + shift_c   (float32; then rounded to f16 / bf16, or for uint8
//!                                      clamped to [0, 255] and rounded, halves up)
//! ```
//!
//! with `y0, ky = 16, 255/219` (limited range) or `0, 1` (full), and, from the matrix's
//! `Kr, Kb` (`Kg = 1 - Kr - Kb`) and `kc = 255/224` (limited) or 1 (full):
//! `rv = 2(1 - Kr)·kc`, `bu = 2(1 - Kb)·kc`, `gu = -2(1 - Kb)·Kb/Kg·kc`,
//! `gv = -2(1 - Kr)·Kr/Kg·kc` (computed in float64, then rounded to float32 once).
//!
//! Speed: per chroma row the three chroma terms are computed once into a row buffer
//! (each value twice, for the two columns sharing it), then every output row is one
//! loop over contiguous arrays that LLVM vectorizes; the whole walk is compiled twice,
//! for baseline x86-64 and for AVX2 (`cpu::avx2`, chosen once per call).

use super::cpu;
use half::{bf16, f16};

/// A plane sample type: the sample as a value on the 8-bit scale (`m`: the uint16 planes'
/// factor, 1/4 for 10 bits in the low bits, 1/256 for 10 bits in the high bits).
pub(crate) trait Sample {
    const U8: bool;
    /// # Safety
    /// One sample readable at `p`.
    unsafe fn load(p: *const u8, m: f32) -> f32;
}
pub(crate) struct S8;
impl Sample for S8 {
    const U8: bool = true;
    #[inline(always)]
    unsafe fn load(p: *const u8, _m: f32) -> f32 {
        // SAFETY: our contract.
        unsafe { *p as f32 }
    }
}
pub(crate) struct S16;
impl Sample for S16 {
    const U8: bool = false;
    #[inline(always)]
    unsafe fn load(p: *const u8, m: f32) -> f32 {
        // SAFETY: our contract (two bytes, any alignment).
        unsafe { (p as *const u16).read_unaligned() as f32 * m }
    }
}

/// The float32 coefficients of one matrix and range (see the module doc).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coef {
    pub y0: f32,
    pub ky: f32,
    pub rv: f32,
    pub gu: f32,
    pub gv: f32,
    pub bu: f32,
}

/// An output element type: from the float32 value `rgb · scale + shift`.
pub(crate) trait YuvOut: Copy + 'static {
    fn from_f32(x: f32) -> Self;
}
impl YuvOut for f32 {
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        x
    }
}
impl YuvOut for f16 {
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
}
impl YuvOut for bf16 {
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
}
impl YuvOut for u8 {
    /// Clamped to [0, 255] (NaN gives 0), then rounded to nearest, halves up.
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        (clamp255(x) + 0.5) as i32 as u8
    }
}

/// `x` clamped to [0, 255], NaN to 0 (written as selects, which become min/max).
#[inline(always)]
fn clamp255(x: f32) -> f32 {
    let x = if x > 0.0 { x } else { 0.0 };
    if x < 255.0 {
        x
    } else {
        255.0
    }
}

/// One call's layout, in bytes for the planes and in elements for `dst`.
pub(crate) struct Job {
    pub h: usize,
    pub w: usize,
    pub y: *const u8,
    pub y_row: isize,
    pub y_col: isize,
    pub u: *const u8,
    pub u_row: isize,
    pub u_col: isize,
    pub v: *const u8,
    pub v_row: isize,
    pub v_col: isize,
    /// Element offsets of the R, G and B channels from dst's first element.
    pub out: [isize; 3],
    pub d_row: isize,
    pub d_col: isize,
    /// (scale, shift) of R, G and B.
    pub param: [(f32, f32); 3],
    pub k: Coef,
    /// The output is far bigger than the caches: the AVX2 float32 rows use streaming stores.
    pub stream: bool,
    /// uint16 planes: a sample's factor to the 8-bit scale.
    pub m: f32,
}

/// Converts `job` into `d` (typed as `D`), with `scratch` holding `6 · ceil(W / 2)` floats.
///
/// # Safety
/// Every offset `job` describes (rows `i < h`, columns `j < w` of the planes at their
/// chroma positions, and of the three channels of `dst`) lies inside validated layouts
/// over live memory, `dst`'s writable; `dst` does not overlap the planes.
pub(crate) unsafe fn run<D: YuvOut, S: Sample>(job: &Job, d: *mut D, scratch: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if cpu::avx2() {
        // SAFETY: CPU checked; the rest is our own contract.
        unsafe { run_avx2::<D, S>(job, d, scratch) };
        return;
    }
    // SAFETY: our contract; no SIMD row (the CPU was not checked).
    unsafe { walk::<D, S, false>(job, d, scratch) }
}

/// [`walk`] compiled for AVX2.
///
/// # Safety
/// As [`run`]; the CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<D: YuvOut, S: Sample>(job: &Job, d: *mut D, scratch: &mut [f32]) {
    // SAFETY: our contract; AVX2 is enabled here (the caller checked the CPU).
    unsafe {
        walk::<D, S, true>(job, d, scratch);
        if job.stream {
            // The streaming stores of simd::row_f32 are ordered before the call returns.
            std::arch::x86_64::_mm_sfence();
        }
    }
}

/// The walk: per chroma row the chroma terms, per output row one [`row`] loop (or, with
/// `SIMD`, for float32 rows with contiguous uint8 luma and output, [`simd::row_f32`]).
///
/// # Safety
/// As [`run`]; with `SIMD`, the CPU supports AVX2.
#[inline(always)]
unsafe fn walk<D: YuvOut, S: Sample, const SIMD: bool>(job: &Job, d: *mut D, scratch: &mut [f32]) {
    let wc = job.w.div_ceil(2);
    let (cr, rest) = scratch.split_at_mut(2 * wc);
    let (cg, cb) = rest.split_at_mut(2 * wc);
    let (cr, cg, cb) = (&mut cr[..2 * wc], &mut cg[..2 * wc], &mut cb[..2 * wc]);
    let k = job.k;
    for i in 0..job.h {
        if i % 2 == 0 {
            let ci = (i / 2) as isize;
            // SAFETY: chroma row i / 2 < ceil(h / 2), columns < wc: inside the planes.
            unsafe {
                let (u, v) = (job.u.offset(ci * job.u_row), job.v.offset(ci * job.v_row));
                let (uc, vc) = (job.u_col, job.v_col);
                // Samples done by the AVX2 loop (contiguous I420 rows, or NV12's pairs).
                #[allow(unused_mut)]
                let mut first = 0;
                #[cfg(target_arch = "x86_64")]
                if SIMD && S::U8 {
                    let nv12 = uc == 2 && vc == 2 && v == u.wrapping_add(1);
                    if (uc == 1 && vc == 1) || nv12 {
                        first = simd::chroma_row(nv12, u, v, wc, &k, (cr, cg, cb));
                    }
                }
                for c in first..wc {
                    let uu = S::load(u.offset(c as isize * uc), job.m) - 128.0;
                    let vv = S::load(v.offset(c as isize * vc), job.m) - 128.0;
                    let (r, g, b) = (k.rv * vv, k.gu * uu + k.gv * vv, k.bu * uu);
                    cr[2 * c] = r;
                    cr[2 * c + 1] = r;
                    cg[2 * c] = g;
                    cg[2 * c + 1] = g;
                    cb[2 * c] = b;
                    cb[2 * c + 1] = b;
                }
            }
        }
        let ii = i as isize;
        // SAFETY: row i < h of y and of dst's three channels, w columns each.
        unsafe {
            let y = job.y.offset(ii * job.y_row);
            let o = d.offset(ii * job.d_row);
            let out = [
                o.offset(job.out[0]),
                o.offset(job.out[1]),
                o.offset(job.out[2]),
            ];
            let (w, p, m) = (job.w, &job.param, job.m);
            // Constant strides for the common layouts, so each gets its own vector loop.
            match (job.y_col, job.d_col) {
                #[cfg(target_arch = "x86_64")]
                (1, 1) if SIMD && S::U8 && super::is::<D, f32>() => {
                    let out = out.map(|o| o as *mut f32);
                    simd::row_f32(job.stream, y, out, w, (cr, cg, cb), &k, p)
                }
                (1, 1) => row::<D, S>(y, 1, out, 1, w, (cr, cg, cb), &k, p, m),
                (1, 3) => row::<D, S>(y, 1, out, 3, w, (cr, cg, cb), &k, p, m),
                (yc, dc) => row::<D, S>(y, yc, out, dc, w, (cr, cg, cb), &k, p, m),
            }
        }
    }
}

/// One output row: `w` pixels, luma samples `ys` bytes apart from `y` (read as `S`, factor
/// `m`), output `os` elements apart from each of `out` (R, G, B), chroma terms `c` (one
/// per column).
///
/// # Safety
/// The `w` luma bytes and `3·w` output items are inside their layouts (dst writable, not
/// overlapping the luma); each of `c` holds at least `w` values.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn row<D: YuvOut, S: Sample>(
    y: *const u8,
    ys: isize,
    out: [*mut D; 3],
    os: isize,
    w: usize,
    c: (&[f32], &[f32], &[f32]),
    k: &Coef,
    p: &[(f32, f32); 3],
    m: f32,
) {
    let (cr, cg, cb) = (&c.0[..w], &c.1[..w], &c.2[..w]);
    for j in 0..w {
        let jj = j as isize;
        // SAFETY: item j < w of the luma row and of the three output rows.
        unsafe {
            let yv = (S::load(y.offset(jj * ys), m) - k.y0) * k.ky;
            let r = clamp255(yv + cr[j]);
            let g = clamp255(yv + cg[j]);
            let b = clamp255(yv + cb[j]);
            out[0]
                .offset(jj * os)
                .write_unaligned(D::from_f32(r * p[0].0 + p[0].1));
            out[1]
                .offset(jj * os)
                .write_unaligned(D::from_f32(g * p[1].0 + p[1].1));
            out[2]
                .offset(jj * os)
                .write_unaligned(D::from_f32(b * p[2].0 + p[2].1));
        }
    }
}

/// The explicit AVX2 float32 row (the bulk of the work for the common CHW float32 output).
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{clamp255, Coef};
    use std::arch::x86_64::*;

    /// The chroma terms of samples `0..m` of one chroma row (the portable loop does the
    /// rest, from the returned `m`): each term twice, for the two columns sharing it, with
    /// the portable loop's float32 operations. `nv12`: U at `u + 2c`, V at `u + 2c + 1`
    /// (`v == u + 1`), else U at `u + c`, V at `v + c`.
    ///
    /// # Safety
    /// The CPU supports AVX2; the `wc` samples are readable (as laid out above); each of
    /// `c` holds at least `2·wc` values.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn chroma_row(
        nv12: bool,
        u: *const u8,
        v: *const u8,
        wc: usize,
        k: &Coef,
        c: (&mut [f32], &mut [f32], &mut [f32]),
    ) -> usize {
        let (cr, cg, cb) = (&mut c.0[..2 * wc], &mut c.1[..2 * wc], &mut c.2[..2 * wc]);
        let half = _mm256_set1_ps(128.0);
        let (rv, gu, gv, bu) = (
            _mm256_set1_ps(k.rv),
            _mm256_set1_ps(k.gu),
            _mm256_set1_ps(k.gv),
            _mm256_set1_ps(k.bu),
        );
        // NV12: the 16 bytes of 8 pairs, U to the low 8, V to the high 8.
        let split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
        let mut c = 0;
        // SAFETY: block c reads samples c..c + 8 <= wc (NV12: bytes 2c..2c + 16 of the
        // pairs, the last one 2(c + 7) + 1) and writes terms 2c..2c + 16 <= 2·wc.
        unsafe {
            while c + 8 <= wc {
                let (ub, vb) = if nv12 {
                    let x =
                        _mm_shuffle_epi8(_mm_loadu_si128(u.add(2 * c) as *const __m128i), split);
                    (x, _mm_unpackhi_epi64(x, x))
                } else {
                    (
                        _mm_loadl_epi64(u.add(c) as *const __m128i),
                        _mm_loadl_epi64(v.add(c) as *const __m128i),
                    )
                };
                let uu = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(ub)), half);
                let vv = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(vb)), half);
                let r = _mm256_mul_ps(rv, vv);
                let g = _mm256_add_ps(_mm256_mul_ps(gu, uu), _mm256_mul_ps(gv, vv));
                let b = _mm256_mul_ps(bu, uu);
                for (t, dst) in [(r, &mut *cr), (g, &mut *cg), (b, &mut *cb)] {
                    // [t0 t0 t1 t1 | t4 t4 t5 t5] and [t2 t2 t3 t3 | t6 t6 t7 t7], reordered.
                    let (lo, hi) = (_mm256_unpacklo_ps(t, t), _mm256_unpackhi_ps(t, t));
                    let p = dst.as_mut_ptr().add(2 * c);
                    _mm256_storeu_ps(p, _mm256_permute2f128_ps(lo, hi, 0x20));
                    _mm256_storeu_ps(p.add(8), _mm256_permute2f128_ps(lo, hi, 0x31));
                }
                c += 8;
            }
        }
        c
    }

    /// [`row`](super::row) for contiguous luma and float32 output, 16 pixels at a time
    /// (then 8) with the same float32 operations in the same order (so the same values);
    /// `stream`: streaming stores when the three rows are equally aligned (after a scalar
    /// head up to 64 bytes), fenced by the caller. A 16-pixel block writes each channel's
    /// 64-byte line with two consecutive stores, so every write-combining buffer fills
    /// completely before the next channel's (8-pixel blocks left each line half written
    /// while the other two channels were stored).
    ///
    /// # Safety
    /// The CPU supports AVX2; `w` bytes readable at `y`; `w` float32 writable at each of
    /// `out` (not overlapping `y` or each other); each of `c` holds at least `w` values.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn row_f32(
        stream: bool,
        y: *const u8,
        out: [*mut f32; 3],
        w: usize,
        c: (&[f32], &[f32], &[f32]),
        k: &Coef,
        p: &[(f32, f32); 3],
    ) {
        let (cr, cg, cb) = (&c.0[..w], &c.1[..w], &c.2[..w]);
        let mis = |o: *mut f32| (o as usize) % 64;
        let aligned = stream
            && mis(out[0]) % 4 == 0
            && mis(out[0]) == mis(out[1])
            && mis(out[0]) == mis(out[2]);
        let head = if aligned {
            ((64 - mis(out[0])) % 64 / 4).min(w)
        } else {
            0
        };
        let one = |j: usize| {
            // SAFETY: j < w: item j of the luma row and of the three output rows.
            unsafe {
                let yv = (*y.add(j) as f32 - k.y0) * k.ky;
                let (r, g, b) = (
                    clamp255(yv + cr[j]),
                    clamp255(yv + cg[j]),
                    clamp255(yv + cb[j]),
                );
                out[0].add(j).write_unaligned(r * p[0].0 + p[0].1);
                out[1].add(j).write_unaligned(g * p[1].0 + p[1].1);
                out[2].add(j).write_unaligned(b * p[2].0 + p[2].1);
            }
        };
        (0..head).for_each(one);
        let (y0, ky) = (_mm256_set1_ps(k.y0), _mm256_set1_ps(k.ky));
        let (lo, hi) = (_mm256_setzero_ps(), _mm256_set1_ps(255.0));
        let sc = p.map(|(a, _)| _mm256_set1_ps(a));
        let sh = p.map(|(_, b)| _mm256_set1_ps(b));
        let terms = [cr.as_ptr(), cg.as_ptr(), cb.as_ptr()];
        // The block's luma (8 pixels from item j) and one channel's stored value; called
        // with j + 8 <= w only.
        let luma = |j: usize| {
            // SAFETY: bytes j..j + 8 of the luma row, j + 8 <= w.
            unsafe {
                let yb = _mm_loadl_epi64(y.add(j) as *const __m128i);
                let yv = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(yb));
                _mm256_mul_ps(_mm256_sub_ps(yv, y0), ky)
            }
        };
        let put = |ch: usize, j: usize, yv: __m256| {
            // SAFETY: values j..j + 8 of the chroma terms and items j..j + 8 of output row
            // `ch`, j + 8 <= w; streaming stores only when aligned (then out[ch] + j is
            // 32-byte aligned: j - head is a multiple of 8 and the head brought each row to
            // a 64-byte boundary).
            unsafe {
                let x = _mm256_add_ps(yv, _mm256_loadu_ps(terms[ch].add(j)));
                // clamp255: max with 0 first, then min with 255 (no NaN here).
                let x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
                let v = _mm256_add_ps(_mm256_mul_ps(x, sc[ch]), sh[ch]);
                if aligned {
                    _mm256_stream_ps(out[ch].add(j), v);
                } else {
                    _mm256_storeu_ps(out[ch].add(j), v);
                }
            }
        };
        let mut j = head;
        while j + 16 <= w {
            let (a, b) = (luma(j), luma(j + 8));
            for ch in 0..3 {
                put(ch, j, a);
                put(ch, j + 8, b);
            }
            j += 16;
        }
        if j + 8 <= w {
            let a = luma(j);
            for ch in 0..3 {
                put(ch, j, a);
            }
            j += 8;
        }
        (j..w).for_each(one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 float32 row (streaming or not, at every alignment and length) gives exactly
    /// the portable row's values, and writes nothing outside its items.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn simd_row_matches_the_portable_row() {
        if !cpu::avx2() {
            return;
        }
        let (k, _) =
            crate::copy::yuv::coef(crate::copy::yuv::BT709 | crate::copy::yuv::LIMITED).unwrap();
        let p = [(0.017f32, -2.1f32), (1.0, 0.0), (-0.5, 3.0)];
        let ybytes: Vec<u8> = (0..80u32).map(|i| (i * 37 % 256) as u8).collect();
        let terms: Vec<f32> = (0..80).map(|i| (i as f32 - 40.0) * 3.7).collect();
        // Lengths that end in each part: the head, 16-pixel blocks, one 8-pixel block, the
        // scalar tail; skews that put the rows at every 4-byte offset of a 64-byte line.
        for w in [0usize, 1, 7, 8, 9, 15, 16, 17, 24, 31, 40, 64, 70] {
            for skew in 0..16 {
                for stream in [false, true] {
                    let mut got = vec![f32::NAN; 3 * 96];
                    let mut want = vec![f32::NAN; 3 * 96];
                    let c = (&terms[..], &terms[3..], &terms[5..]);
                    // Three rows 96 apart, each starting `skew` items in.
                    let rows = |b: &mut [f32]| {
                        let base = b.as_mut_ptr();
                        // SAFETY: skew + w <= 86 items inside each third of b.
                        unsafe { [base.add(skew), base.add(96 + skew), base.add(192 + skew)] }
                    };
                    // SAFETY: w luma bytes, w items per row inside the buffers, AVX2 checked.
                    unsafe {
                        simd::row_f32(stream, ybytes.as_ptr(), rows(&mut got), w, c, &k, &p);
                        if stream {
                            std::arch::x86_64::_mm_sfence();
                        }
                        row::<f32, S8>(ybytes.as_ptr(), 1, rows(&mut want), 1, w, c, &k, &p, 1.0);
                    }
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            a.to_bits() == b.to_bits(),
                            "w {w} skew {skew} stream {stream} item {i}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }
}

//! The loop of every AVX2 kernel here: 32 bytes of output per step, and, for big outputs,
//! streaming stores after a scalar head up to 32-byte alignment; a scalar tail. Also the
//! kernels' vector loads, from slices.

use std::arch::x86_64::*;
use std::mem::{align_of, size_of};

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

/// Converts `src` into `dst` (over the shorter of the two): `block` turns the
/// `32 / size_of::<D>()` items of the chunk it is given into 32 bytes of output, `one`
/// converts one item (the head and the tail). `STREAM`: streaming stores, fenced before
/// returning. `D` is a plain integer (its size is its alignment and divides 32).
#[target_feature(enable = "avx2,f16c")]
#[inline]
pub(super) fn drive<S: Copy, D: Copy, const STREAM: bool>(
    dst: &mut [D],
    src: &[S],
    one: impl Fn(S) -> D,
    block: impl Fn(&[S]) -> __m256i,
) {
    const { assert!(size_of::<D>() == align_of::<D>() && 32 % size_of::<D>() == 0) };
    let n = dst.len().min(src.len());
    let per = 32 / size_of::<D>();
    // Streaming stores need a 32-byte aligned destination: scalar items up to there (dst
    // is D-aligned and D's size is its alignment, so that is a whole number of items).
    let head = if STREAM {
        ((32 - dst.as_ptr() as usize % 32) % 32 / size_of::<D>()).min(n)
    } else {
        0
    };
    let (dh, dst) = dst[..n].split_at_mut(head);
    let (sh, src) = src[..n].split_at(head);
    for (o, &x) in dh.iter_mut().zip(sh) {
        *o = one(x);
    }
    let m = src.len() / per * per;
    let (dst, dt) = dst.split_at_mut(m);
    let (src, st) = src.split_at(m);
    for (o, s) in dst.chunks_exact_mut(per).zip(src.chunks_exact(per)) {
        let v = block(s);
        let q = o.as_mut_ptr() as *mut __m256i;
        // SAFETY: q is the chunk `o`, `per` items of D: 32 bytes, ours to write. Streamed
        // only when STREAM, and then 32-byte aligned: every chunk starts a multiple of 32
        // bytes past dst + head, which the head made aligned. AVX2 is enabled here.
        unsafe {
            if STREAM {
                _mm256_stream_si256(q, v);
            } else {
                _mm256_storeu_si256(q, v);
            }
        }
    }
    for (o, &x) in dt.iter_mut().zip(st) {
        *o = one(x);
    }
    if STREAM {
        // Streaming stores are weakly ordered: make them visible before we return.
        // SAFETY: a store fence; it touches no memory. (A safe intrinsic in newer Rust;
        // `unsafe` under the MSRV, 1.87.)
        #[allow(unused_unsafe)]
        unsafe {
            _mm_sfence()
        };
    }
}

/// Items `p[0..4]` (8 bytes) in the low half of a vector.
#[inline(always)]
pub(super) fn load_u16x4(p: &[u16]) -> __m128i {
    let a: &[u16; 4] = p[..4].try_into().unwrap();
    // SAFETY: reads the 8 bytes of `a` (an unaligned SSE2 load: baseline x86-64).
    unsafe { _mm_loadl_epi64(a.as_ptr() as *const __m128i) }
}

/// Items `p[0..8]` (16 bytes).
#[inline(always)]
pub(super) fn load_u16x8(p: &[u16]) -> __m128i {
    let a: &[u16; 8] = p[..8].try_into().unwrap();
    // SAFETY: reads the 16 bytes of `a` (an unaligned SSE2 load: baseline x86-64).
    unsafe { _mm_loadu_si128(a.as_ptr() as *const __m128i) }
}

/// Items `p[0..4]` (16 bytes).
#[inline(always)]
pub(super) fn load_f32x4(p: &[f32]) -> __m128 {
    let a: &[f32; 4] = p[..4].try_into().unwrap();
    // SAFETY: reads the 16 bytes of `a` (an unaligned SSE load: baseline x86-64).
    unsafe { _mm_loadu_ps(a.as_ptr()) }
}

/// Items `p[0..16]` (32 bytes).
#[target_feature(enable = "avx")]
#[inline]
pub(super) fn load_u16x16(p: &[u16]) -> __m256i {
    let a: &[u16; 16] = p[..16].try_into().unwrap();
    // SAFETY: reads the 32 bytes of `a` (an unaligned load); AVX is enabled here.
    unsafe { _mm256_loadu_si256(a.as_ptr() as *const __m256i) }
}

/// Items `p[0..4]` (32 bytes).
#[target_feature(enable = "avx")]
#[inline]
pub(super) fn load_f64x4(p: &[f64]) -> __m256d {
    let a: &[f64; 4] = p[..4].try_into().unwrap();
    // SAFETY: reads the 32 bytes of `a` (an unaligned load); AVX is enabled here.
    unsafe { _mm256_loadu_pd(a.as_ptr()) }
}

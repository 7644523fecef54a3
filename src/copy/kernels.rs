//! Typed inner loops for the engine. Each op picks one kernel per call (dtype dispatch
//! happens once, in `copy/mod.rs`); the loops here are monomorphised per element type so
//! the compiler vectorises the contiguous cases.
//!
//! All element reads and writes are unaligned-tolerant (`read_unaligned` /
//! `write_unaligned`, plain moves on x86): wrapped foreign memory need not be aligned.
//!
//! Soundness: every kernel is an `unsafe fn` whose contract is the engine's
//! ([`Kernel::run`] / [`Kernel::tile`]): each item address the call is given
//! (`d + i·ds`, `s + i·ss` for `i < n`; `d + r·dr + c·dc`, `s + r·sr + c·sc` inside the
//! tile) lies inside its operand's validated layout over a live block, operand 0 is
//! writable, and a copy's two operands do not overlap (the op snapshots the source first
//! when they might). Each loop touches exactly those addresses, so its pointer arithmetic
//! stays inside one allocation and its reads and writes are in bounds; the loops keep raw
//! pointers (no slices, no index checks) so that they vectorise. The SAFETY comments below
//! say which of those addresses a block touches and what else it relies on (the CPU
//! features of the SIMD paths, alignment of the slice paths).

use super::engine::Kernel;
use crate::dtype::Element;
use half::{bf16, f16};
use std::any::TypeId;
use std::mem::size_of;

/// Same-dtype copy (and fill, with a stride-0 source), moving `T`-sized items; `T` is an
/// integer of the element's size, so every dtype of one size shares the code.
pub(crate) struct CopySame<T> {
    /// The output is far bigger than the caches: transposes may use streaming stores.
    stream: bool,
    _t: std::marker::PhantomData<T>,
}

impl<T> CopySame<T> {
    /// `out_bytes`: the size of the whole destination (picks streaming stores).
    pub fn new(out_bytes: usize) -> Self {
        CopySame {
            stream: streams_output(out_bytes),
            _t: std::marker::PhantomData,
        }
    }
}

/// Whether an output of `out_bytes` (the whole destination of one op) is written with
/// streaming (non-temporal) stores by the kernels that have them (transposes, the
/// converting kernels, `copy_affine_`, `copy_yuv_affine_`): the one place for that choice.
/// Outputs of at least half the last-level cache ([`cpu::l3_bytes`](super::cpu::l3_bytes),
/// read once) stream: they would be evicted before anyone reads them anyway, and skipping
/// the read-for-ownership of their lines leaves two memory streams instead of three.
/// Smaller outputs keep plain stores, which leave the result in cache for the next op.
/// Half, not all of it: the input and everything else running share the L3. Measured with
/// `bench_norm` on a Zen 4 VM with a 32 MiB L3 (loaded, two cores): a 1080p float32 CHW
/// frame (23.7 MiB, rewritten in a loop) took 1.35-1.44x a hand loop's time with plain
/// stores and 0.98-1.08x with streaming ones; a 720p one (10.5 MiB) is faster with plain
/// stores. Without a known L3 size, [`STREAM_FALLBACK_BYTES`].
///
/// The crate's unit tests keep the fixed fallback on every host, so that their 16 MiB
/// outputs exercise the streaming kernels whatever the L3 size.
#[inline]
pub(crate) fn streams_output(out_bytes: usize) -> bool {
    let l3 = if cfg!(test) {
        None
    } else {
        super::cpu::l3_bytes()
    };
    out_bytes >= stream_threshold(l3)
}

/// Orders an op's streaming stores before whatever follows it (a flag another thread reads,
/// a free of the block): x86's `sfence`, once at the end of an op whose kernels stream
/// without fencing. Nothing on other targets (their kernels store normally).
#[inline]
pub(crate) fn fence_streaming_stores() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions (SSE, part of x86_64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// The smallest output that streams, given the L3 size (when known): half of it.
pub(crate) fn stream_threshold(l3_bytes: Option<usize>) -> usize {
    l3_bytes.map_or(STREAM_FALLBACK_BYTES, |n| n / 2)
}

/// The streaming threshold when the L3 size is unknown: 16 MiB, beyond a typical
/// last-level cache.
pub(crate) const STREAM_FALLBACK_BYTES: usize = 16 << 20;

/// Contiguous copies of more than this many bytes, and at most [`VEC_COPY_MAX`], are
/// [`copy_bytes`]' own AVX2 loop: glibc 2.36's `memcpy` moves them with `rep movsb` from
/// 2112 bytes on a CPU with fast short `rep movsb` (FSRM), which on the Zen 4 host of
/// BENCHMARKS.md ("Small-tensor clone") took 1.1-1.4x the loop's time for a 3-8 KiB copy
/// whose lines are in the L1 cache (and 2-4.6x with a destination 16 bytes past the source
/// modulo 4 KiB).
const VEC_COPY_MIN: usize = 2048;
/// See [`VEC_COPY_MIN`]: past 16 KiB the two measured alike.
const VEC_COPY_MAX: usize = 16 << 10;

/// Copies `n` bytes from `s` to `d`, as `std::ptr::copy_nonoverlapping(s, d, n)`: with
/// AVX2 (CPU checked) and `n` in (`VEC_COPY_MIN`, `VEC_COPY_MAX`], a loop of 32-byte
/// loads and stores, four a step, whose last step re-copies part of the one before so that
/// it ends on the last byte; otherwise `memcpy`.
///
/// # Safety
/// `s` is valid for reads and `d` for writes of `n` bytes, and the two ranges do not
/// overlap.
#[inline]
pub(crate) unsafe fn copy_bytes(d: *mut u8, s: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if n > VEC_COPY_MIN && n <= VEC_COPY_MAX && super::cpu::avx2() {
        // SAFETY: AVX2 checked; n >= 128 (VEC_COPY_MIN); the rest is the contract.
        return unsafe { copy_bytes_avx2(d, s, n) };
    }
    // SAFETY: the contract.
    unsafe { std::ptr::copy_nonoverlapping(s, d, n) }
}

/// [`copy_bytes`]' loop.
///
/// # Safety
/// As `copy_bytes`, with `n >= 128` and AVX2 available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_bytes_avx2(d: *mut u8, s: *const u8, n: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256};
    /// The 128 bytes at `s + at` to `d + at`.
    ///
    /// # Safety
    /// `at + 128 <= n`, and `copy_bytes`' contract.
    #[inline(always)]
    unsafe fn step(d: *mut u8, s: *const u8, at: usize) {
        // SAFETY: bytes at..at + 128 of both ranges (the contract); unaligned accesses.
        unsafe {
            let (s, d) = (s.add(at) as *const __m256i, d.add(at) as *mut __m256i);
            let (a, b) = (_mm256_loadu_si256(s), _mm256_loadu_si256(s.add(1)));
            let (c, e) = (_mm256_loadu_si256(s.add(2)), _mm256_loadu_si256(s.add(3)));
            _mm256_storeu_si256(d, a);
            _mm256_storeu_si256(d.add(1), b);
            _mm256_storeu_si256(d.add(2), c);
            _mm256_storeu_si256(d.add(3), e);
        }
    }
    let mut at = 0;
    while at + 128 <= n {
        // SAFETY: at + 128 <= n.
        unsafe { step(d, s, at) };
        at += 128;
    }
    if at < n {
        // SAFETY: n >= 128: the last 128 bytes, some of them copied already (from the same
        // source bytes: the ranges do not overlap, so they are unchanged).
        unsafe { step(d, s, n - 128) };
    }
}

/// 16-byte items (complex128) as a plain pair of words.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Bytes16([u64; 2]);

impl<T: Copy> Kernel for CopySame<T> {
    #[inline]
    unsafe fn run(&mut self, d: *mut u8, s: *const u8, n: usize, ds: isize, ss: isize) -> bool {
        let sz = size_of::<T>() as isize;
        if ds == sz && ss == sz {
            // SAFETY: both runs are n contiguous items (n·sz bytes) inside their layouts
            // (run's contract); the op guarantees that dst and src do not overlap (it
            // snapshots src first when they might).
            unsafe { copy_bytes(d, s, n * sz as usize) };
        } else if ss == 0 {
            // SAFETY: with ss == 0 the source is the one item at s; the writes are the n
            // destination items d + i·ds, i < n (run's contract); unaligned accesses.
            unsafe {
                let v = (s as *const T).read_unaligned();
                if ds == sz {
                    let d = d as *mut T;
                    for i in 0..n {
                        d.add(i).write_unaligned(v);
                    }
                } else {
                    for i in 0..n {
                        (d.offset(i as isize * ds) as *mut T).write_unaligned(v);
                    }
                }
            }
        } else if ds == sz {
            // SAFETY: item i < n is d + i·sz (= d + i·ds) and s + i·ss (run's contract).
            unsafe {
                let d = d as *mut T;
                for i in 0..n {
                    d.add(i)
                        .write_unaligned((s.offset(i as isize * ss) as *const T).read_unaligned());
                }
            }
        } else {
            // SAFETY: item i < n is d + i·ds and s + i·ss (run's contract).
            unsafe {
                for i in 0..n {
                    (d.offset(i as isize * ds) as *mut T)
                        .write_unaligned((s.offset(i as isize * ss) as *const T).read_unaligned());
                }
            }
        }
        true
    }

    #[inline]
    unsafe fn tile(
        &mut self,
        d: *mut u8,
        s: *const u8,
        rows: usize,
        cols: usize,
        dr: isize,
        dc: isize,
        sr: isize,
        sc: isize,
    ) -> bool {
        // The engine tiles only when dst is contiguous along columns and src along rows.
        debug_assert!(dc == size_of::<T>() as isize && sr == size_of::<T>() as isize);
        #[cfg(target_arch = "x86_64")]
        if super::cpu::avx2() {
            // Streaming stores need 32-byte aligned rows.
            let stream = self.stream && (d as usize).is_multiple_of(32) && dr % 32 == 0;
            // Register blocks of 32 x 32 bytes: 8x8 4-byte items or 4x4 8-byte ones.
            let b = 32 / size_of::<T>();
            let blocks = (size_of::<T>() == 4 || size_of::<T>() == 8) && rows >= b && cols >= b;
            // SAFETY: CPU checked. The tile is tile's contract's with dc == sr ==
            // size_of::<T>() (asserted above: the engine tiles only then, and CopySame's T
            // is the dtype's item size); simd::tile gets 4- or 8-byte items, and `stream`
            // only when d and dr are multiples of 32; the interleaves get dr ==
            // C·size_of::<T>() with C == cols (tested; dr == 12 for interleave3_u32).
            let done = unsafe {
                if blocks {
                    simd::tile::<T>(stream, d, s, rows, cols, dr, sc);
                    true
                } else if dr == cols as isize * size_of::<T>() as isize {
                    // A few planes interleaved into dense rows (NCHW -> NHWC, 2-4 channels).
                    match cols {
                        2 => simd::interleave::<T, 2>(d, s, rows, sc),
                        3 if size_of::<T>() == 4 => simd::interleave3_u32(d, s, rows, sc),
                        3 => simd::interleave::<T, 3>(d, s, rows, sc),
                        4 => simd::interleave::<T, 4>(d, s, rows, sc),
                        _ => false,
                    }
                } else {
                    false
                }
            };
            if done {
                return true;
            }
        }
        // SAFETY: tile's contract with dc == sr == size_of::<T>() (asserted above), which
        // is scalar_tile's.
        unsafe { scalar_tile::<T>(d, s, rows, cols, dr, sc) };
        true
    }
}

/// A transposing tile with plain moves (any item size; ragged edges of the SIMD tiles).
///
/// # Safety
/// As [`Kernel::tile`], with `dc == sr == size_of::<T>()`.
#[inline]
unsafe fn scalar_tile<T: Copy>(
    d: *mut u8,
    s: *const u8,
    rows: usize,
    cols: usize,
    dr: isize,
    sc: isize,
) {
    // Both loop orders touch exactly the tile's items (r, c), r < rows, c < cols: dst at
    // d + r·dr + c·size, src at s + r·size + c·sc.
    if cols >= rows {
        // Contiguous writes, strided reads; the tile's src lines stay in L1.
        // SAFETY: row r's start d + r·dr and src item s + r·size are items of the tile, and
        // so is every (r, c) reached from them (the function's contract).
        unsafe {
            for r in 0..rows {
                let drow = d.offset(r as isize * dr) as *mut T;
                let srow = (s as *const T).add(r) as *const u8;
                for c in 0..cols {
                    drow.add(c).write_unaligned(
                        (srow.offset(c as isize * sc) as *const T).read_unaligned(),
                    );
                }
            }
        }
    } else {
        // Short rows (e.g. 3 channels): contiguous reads down each column.
        // SAFETY: column c's starts d + c·size and s + c·sc are items of the tile, and so
        // is every (r, c) reached from them (the function's contract).
        unsafe {
            for c in 0..cols {
                let dcol = (d as *mut T).add(c) as *mut u8;
                let scol = s.offset(c as isize * sc) as *const T;
                for r in 0..rows {
                    (dcol.offset(r as isize * dr) as *mut T)
                        .write_unaligned(scol.add(r).read_unaligned());
                }
            }
        }
    }
}

/// x86-64 SIMD transposes, chosen at run time (the library is built for baseline x86-64).
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;
    use std::mem::size_of;

    /// Walks a `rows x cols` transposing tile (element (r, c) from `s + r·size + c·sc` to
    /// `d + r·dr + c·size`) in `B x B` blocks handed to `block(dst, src)`; the ragged
    /// edges go through the scalar loop.
    ///
    /// # Safety
    /// As `Kernel::tile` with `dc == sr == size_of::<T>()`. `block` is called only with the
    /// origins (top-left items) of `B x B` blocks that lie wholly inside the tile.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blocked<T: Copy, const B: usize>(
        d: *mut u8,
        s: *const u8,
        rows: usize,
        cols: usize,
        dr: isize,
        sc: isize,
        mut block: impl FnMut(*mut u8, *const u8),
    ) {
        let sz = std::mem::size_of::<T>() as isize;
        let (rb, cb) = (rows / B * B, cols / B * B);
        let mut r = 0;
        while r < rb {
            let mut c = 0;
            while c < cb {
                // SAFETY: r < rb <= rows and c < cb <= cols: item (r, c) of the tile, the
                // origin of a B x B block that ends at (r + B - 1, c + B - 1), inside it.
                let (dd, ss) = unsafe {
                    (
                        d.offset(r as isize * dr + c as isize * sz),
                        s.offset(r as isize * sz + c as isize * sc),
                    )
                };
                block(dd, ss);
                c += B;
            }
            r += B;
        }
        // SAFETY: the right edge (rows 0..rb, columns cb..cols) and the bottom edge (rows
        // rb..rows, every column) are sub-tiles of the tile, with origins at its items
        // (0, cb) and (rb, 0) when non-empty, and the same strides: scalar_tile's contract.
        unsafe {
            if cb < cols {
                let (dd, ss) = (d.offset(cb as isize * sz), s.offset(cb as isize * sc));
                super::scalar_tile::<T>(dd, ss, rb, cols - cb, dr, sc);
            }
            if rb < rows {
                let (dd, ss) = (d.offset(rb as isize * dr), s.offset(rb as isize * sz));
                super::scalar_tile::<T>(dd, ss, rows - rb, cols, dr, sc);
            }
        }
    }

    /// Transposes a tile of 4-byte items in 8x8 register blocks (eight 32-byte loads, 24
    /// shuffles, eight 32-byte stores), or of 8-byte items in 4x4 ones. `stream`:
    /// non-temporal stores (32-byte aligned rows required), fenced before returning.
    ///
    /// # Safety
    /// As `Kernel::tile` with `dc == sr == size_of::<T>()`, which is 4 or 8; the CPU must
    /// support AVX2; with `stream`, `d` and `dr` are multiples of 32.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn tile<T: Copy>(
        stream: bool,
        d: *mut u8,
        s: *const u8,
        rows: usize,
        cols: usize,
        dr: isize,
        sc: isize,
    ) {
        debug_assert!(size_of::<T>() == 4 || size_of::<T>() == 8);
        // SAFETY: the caller's tile contract is blocked's; blocked hands the closures only
        // origins of B x B blocks inside the tile (B = 8 for 4-byte items, 4 for 8-byte
        // ones), whose B source columns and B destination rows of 32 bytes are then inside
        // it: block8's and block4's contract. AVX2 is enabled here (target_feature; the
        // caller checked the CPU). With `stream`, a block origin d + r·dr + c·size (c·size
        // a multiple of 32) is 32-byte aligned as d and dr are.
        unsafe {
            match (size_of::<T>() == 4, stream) {
                (true, true) => blocked::<u32, 8>(d, s, rows, cols, dr, sc, |dd, ss| {
                    block8::<true>(dd, dr, ss, sc)
                }),
                (true, false) => blocked::<u32, 8>(d, s, rows, cols, dr, sc, |dd, ss| {
                    block8::<false>(dd, dr, ss, sc)
                }),
                (false, true) => blocked::<u64, 4>(d, s, rows, cols, dr, sc, |dd, ss| {
                    block4::<true>(dd, dr, ss, sc)
                }),
                (false, false) => blocked::<u64, 4>(d, s, rows, cols, dr, sc, |dd, ss| {
                    block4::<false>(dd, dr, ss, sc)
                }),
            }
            if stream {
                _mm_sfence();
            }
        }
    }

    /// One 4x4 block of 8-byte items: four source columns (4 items contiguous each, `sc`
    /// apart) become four destination rows (`dr` apart).
    ///
    /// # Safety
    /// The CPU supports AVX2; for k < 4 the 32 bytes at `s + k·sc` are readable and the 32
    /// bytes at `d + k·dr` writable, and with `STREAM` each `d + k·dr` is 32-byte aligned.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn block4<const STREAM: bool>(d: *mut u8, dr: isize, s: *const u8, sc: isize) {
        // SAFETY: the four loads read s + c·sc and the four stores write d + r·dr, c, r < 4,
        // 32 bytes each (unaligned forms, streaming only when aligned): the contract above.
        unsafe {
            let ld = |c: isize| _mm256_loadu_pd(s.offset(c * sc) as *const f64);
            let (v0, v1, v2, v3) = (ld(0), ld(1), ld(2), ld(3));
            let t0 = _mm256_unpacklo_pd(v0, v1);
            let t1 = _mm256_unpackhi_pd(v0, v1);
            let t2 = _mm256_unpacklo_pd(v2, v3);
            let t3 = _mm256_unpackhi_pd(v2, v3);
            let st = |r: isize, v: __m256d| {
                let p = d.offset(r * dr) as *mut f64;
                if STREAM {
                    _mm256_stream_pd(p, v)
                } else {
                    _mm256_storeu_pd(p, v)
                }
            };
            st(0, _mm256_permute2f128_pd::<0x20>(t0, t2));
            st(1, _mm256_permute2f128_pd::<0x20>(t1, t3));
            st(2, _mm256_permute2f128_pd::<0x31>(t0, t2));
            st(3, _mm256_permute2f128_pd::<0x31>(t1, t3));
        }
    }

    /// `C` planes (`sc` bytes apart, each `rows` contiguous items) interleaved into `rows`
    /// dense rows of `C` items at `d`. Plain loops compiled for AVX2, which LLVM turns
    /// into shuffles over whole vectors. Returns true (always handles the tile).
    ///
    /// # Safety
    /// As `Kernel::tile` with `dr == C·size_of::<T>()`; the CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn interleave<T: Copy, const C: usize>(
        d: *mut u8,
        s: *const u8,
        rows: usize,
        sc: isize,
    ) -> bool {
        // SAFETY: plane c < C starts at item (0, c) of the tile, s + c·sc, and holds the
        // `rows` contiguous items (r, c); d + (r·C + c)·size is item (r, c) of dst since
        // dr == C·size (the contract). Those are the only addresses touched.
        unsafe {
            let planes: [*const T; C] =
                std::array::from_fn(|c| s.offset(c as isize * sc) as *const T);
            let d = d as *mut T;
            for r in 0..rows {
                for (c, p) in planes.iter().enumerate() {
                    d.add(r * C + c).write_unaligned(p.add(r).read_unaligned());
                }
            }
            true
        }
    }

    /// [`interleave`] of three 4-byte planes (RGB-like NCHW -> NHWC), 8 rows at a time:
    /// each of the three output vectors gathers its items from the three planes with one
    /// lane permutation per plane and two blends.
    ///
    /// # Safety
    /// As `Kernel::tile` with `dr == 12`; the CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn interleave3_u32(d: *mut u8, s: *const u8, rows: usize, sc: isize) -> bool {
        // SAFETY: as `interleave` with C = 3 and 4-byte items: the loads read items r..r+8
        // of each plane and the stores write dst items 3r..3r+24 with r + 8 <= r8 <= rows,
        // i.e. rows r..r+8 of the tile (dr == 12); the tail loop moves items (r, c) one by
        // one. The intrinsics need AVX2, enabled here (the caller checked the CPU).
        unsafe {
            let (pa, pb, pc) = (
                s as *const f32,
                s.offset(sc) as *const f32,
                s.offset(2 * sc) as *const f32,
            );
            let out = d as *mut f32;
            // Output vector k holds rows 8i + (8k + p) / 3 at lane p; the plane is (8k + p) % 3.
            let i0 = _mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2);
            let i1 = _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5);
            let i2 = _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7);
            let r8 = rows & !7;
            let mut r = 0;
            while r < r8 {
                let a = _mm256_loadu_ps(pa.add(r));
                let b = _mm256_loadu_ps(pb.add(r));
                let c = _mm256_loadu_ps(pc.add(r));
                let pick = |i: __m256i| {
                    (
                        _mm256_permutevar8x32_ps(a, i),
                        _mm256_permutevar8x32_ps(b, i),
                        _mm256_permutevar8x32_ps(c, i),
                    )
                };
                let (xa, xb, xc) = pick(i0);
                // lanes from b: 1, 4, 7 (0x92); from c: 2, 5 (0x24)
                let o0 = _mm256_blend_ps::<0x24>(_mm256_blend_ps::<0x92>(xa, xb), xc);
                let (xa, xb, xc) = pick(i1);
                // from b: 2, 5; from c: 0, 3, 6
                let o1 = _mm256_blend_ps::<0x49>(_mm256_blend_ps::<0x24>(xa, xb), xc);
                let (xa, xb, xc) = pick(i2);
                // from b: 0, 3, 6; from c: 1, 4, 7
                let o2 = _mm256_blend_ps::<0x92>(_mm256_blend_ps::<0x49>(xa, xb), xc);
                let o = out.add(3 * r);
                _mm256_storeu_ps(o, o0);
                _mm256_storeu_ps(o.add(8), o1);
                _mm256_storeu_ps(o.add(16), o2);
                r += 8;
            }
            for r in r8..rows {
                let o = out.add(3 * r);
                o.write_unaligned(pa.add(r).read_unaligned());
                o.add(1).write_unaligned(pb.add(r).read_unaligned());
                o.add(2).write_unaligned(pc.add(r).read_unaligned());
            }
            true
        }
    }

    /// One 8x8 block: the eight source columns (each 8 items contiguous in `s`, `sc`
    /// apart) become the eight destination rows (`dr` apart).
    ///
    /// # Safety
    /// The CPU supports AVX2; for k < 8 the 32 bytes at `s + k·sc` are readable and the 32
    /// bytes at `d + k·dr` writable, and with `STREAM` each `d + k·dr` is 32-byte aligned.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn block8<const STREAM: bool>(d: *mut u8, dr: isize, s: *const u8, sc: isize) {
        // SAFETY: the eight loads read s + c·sc and the eight stores write d + r·dr, c, r < 8,
        // 32 bytes each (unaligned forms, streaming only when aligned): the contract above.
        unsafe {
            let ld = |c: isize| _mm256_loadu_ps(s.offset(c * sc) as *const f32);
            let (v0, v1, v2, v3) = (ld(0), ld(1), ld(2), ld(3));
            let (v4, v5, v6, v7) = (ld(4), ld(5), ld(6), ld(7));
            let t0 = _mm256_unpacklo_ps(v0, v1);
            let t1 = _mm256_unpackhi_ps(v0, v1);
            let t2 = _mm256_unpacklo_ps(v2, v3);
            let t3 = _mm256_unpackhi_ps(v2, v3);
            let t4 = _mm256_unpacklo_ps(v4, v5);
            let t5 = _mm256_unpackhi_ps(v4, v5);
            let t6 = _mm256_unpacklo_ps(v6, v7);
            let t7 = _mm256_unpackhi_ps(v6, v7);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            // Streaming stores skip the read-for-ownership of destination lines that a big
            // output (beyond the caches) would otherwise pay: 2 memory streams instead of 3.
            let st = |r: isize, v: __m256| {
                let p = d.offset(r * dr) as *mut f32;
                if STREAM {
                    _mm256_stream_ps(p, v)
                } else {
                    _mm256_storeu_ps(p, v)
                }
            };
            st(0, _mm256_permute2f128_ps::<0x20>(u0, u4));
            st(1, _mm256_permute2f128_ps::<0x20>(u1, u5));
            st(2, _mm256_permute2f128_ps::<0x20>(u2, u6));
            st(3, _mm256_permute2f128_ps::<0x20>(u3, u7));
            st(4, _mm256_permute2f128_ps::<0x31>(u0, u4));
            st(5, _mm256_permute2f128_ps::<0x31>(u1, u5));
            st(6, _mm256_permute2f128_ps::<0x31>(u2, u6));
            st(7, _mm256_permute2f128_ps::<0x31>(u3, u7));
        }
    }
}

/// Converting copy `S -> D` through dtype.rs's rule (`D::from_scalar(s.to_scalar())`),
/// with vectorised slice paths for f32 <-> f16 / bf16 that tests check bit-for-bit against
/// the rule.
pub(crate) struct Convert<S, D> {
    /// The output is far bigger than the caches: contiguous kernels may stream their stores.
    stream: bool,
    _t: std::marker::PhantomData<(S, D)>,
}

impl<S, D> Convert<S, D> {
    /// `out_bytes`: the size of the whole destination (picks streaming stores).
    pub fn new(out_bytes: usize) -> Self {
        Convert {
            stream: streams_output(out_bytes),
            _t: std::marker::PhantomData,
        }
    }
}

#[inline(always)]
fn convert<S: Element, D: Element>(x: S) -> D {
    D::from_scalar(x.to_scalar())
}

/// Whether `A` is `B`: the kernels' compile-time type tests (constant-folded per
/// monomorphisation, so each picks its fast path with no run-time branch).
pub(super) fn is<A: 'static, B: 'static>() -> bool {
    TypeId::of::<A>() == TypeId::of::<B>()
}

/// `s` as a slice of `T` when `S` is `T`, else None (constant-folded as [`is`]): how a
/// generic kernel hands its run to a kernel for one type, without pointer casts.
pub(super) fn same<S: 'static, T: 'static>(s: &[S]) -> Option<&[T]> {
    // SAFETY: S is T (equal TypeIds): the same slice, retyped to itself.
    is::<S, T>().then(|| unsafe { &*(s as *const [S] as *const [T]) })
}

/// [`same`] for a mutable slice.
pub(super) fn same_mut<S: 'static, T: 'static>(s: &mut [S]) -> Option<&mut [T]> {
    // SAFETY: S is T (equal TypeIds): the same slice, retyped to itself.
    is::<S, T>().then(|| unsafe { &mut *(s as *mut [S] as *mut [T]) })
}

/// f32 -> bf16, round to nearest even, NaN kept quiet with its top payload bits: the same
/// bits as `bf16::from_f32` (the dtype.rs rule), written branch-free so it vectorises.
#[inline(always)]
pub(crate) fn f32_to_bf16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    let rounded = x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16;
    let nan = (x >> 16) | 0x0040;
    if x & 0x7FFF_FFFF > 0x7F80_0000 {
        nan as u16
    } else {
        rounded as u16
    }
}

/// Contiguous, aligned runs of the fast pairs: f32 <-> f16 / bf16 here, float ->
/// integer in `float_int/`. Returns false when `S -> D` has no fast path (true for an
/// empty run: nothing to convert).
///
/// # Safety
/// `n` contiguous `S` items at `s` are readable, `n` contiguous `D` items at `d` writable,
/// and the two runs do not overlap (`Kernel::run`'s contract for a contiguous run of a
/// converting copy). `stream`: [`streams_output`] of the whole output.
unsafe fn fast_contiguous<S: Element, D: Element>(
    d: *mut u8,
    s: *const u8,
    n: usize,
    stream: bool,
) -> bool {
    use half::slice::HalfFloatSliceExt;
    if n == 0 {
        return true;
    }
    let aligned = (d as usize).is_multiple_of(std::mem::align_of::<D>())
        && (s as usize).is_multiple_of(std::mem::align_of::<S>());
    if !aligned {
        return false;
    }
    // SAFETY: the two runs of the contract (n > 0 items: non-null), aligned (checked
    // above), as slices of their own item types (numbers, Bool(u8) and pairs of floats:
    // every bit pattern is valid); they do not overlap, so the mutable one aliases nothing.
    let (src, dst) = unsafe {
        (
            std::slice::from_raw_parts(s as *const S, n),
            std::slice::from_raw_parts_mut(d as *mut D, n),
        )
    };
    if let (Some(s), Some(d)) = (same::<S, f32>(src), same_mut::<D, f16>(dst)) {
        d.convert_from_f32_slice(s);
    } else if let (Some(s), Some(d)) = (same::<S, f16>(src), same_mut::<D, f32>(dst)) {
        s.convert_to_f32_slice(d);
    } else if let (Some(s), Some(d)) = (same::<S, f32>(src), same_mut::<D, bf16>(dst)) {
        for (o, &x) in d.reinterpret_cast_mut().iter_mut().zip(s) {
            *o = f32_to_bf16_bits(x);
        }
    } else if let (Some(s), Some(d)) = (same::<S, bf16>(src), same_mut::<D, f32>(dst)) {
        // Exact: bf16 is the top half of an f32.
        for (o, &x) in d.iter_mut().zip(s.reinterpret_cast()) {
            *o = f32::from_bits((x as u32) << 16);
        }
    } else if !float8_fast::<S, D>(dst, src, stream) {
        return super::float_int::float_to_int(dst, src, stream);
    }
    true
}

/// The float32 / bfloat16 <-> float8 pairs of [`fast_contiguous`] (`copy/float8.rs`);
/// false for any other pair.
fn float8_fast<S: 'static, D: 'static>(dst: &mut [D], src: &[S], stream: bool) -> bool {
    use super::float8::{decode, encode_bf16, encode_f32};
    use crate::float8::*;
    use half::slice::HalfFloatSliceExt;
    macro_rules! each {
        ($($f:ty),*) => {$(
            if let (Some(s), Some(d)) = (same::<S, f32>(src), same_mut::<D, $f>(dst)) {
                encode_f32(d, s, stream);
                return true;
            }
            if let (Some(s), Some(d)) = (same::<S, bf16>(src), same_mut::<D, $f>(dst)) {
                encode_bf16(d, s.reinterpret_cast(), stream);
                return true;
            }
            if let (Some(s), Some(d)) = (same::<S, $f>(src), same_mut::<D, f32>(dst)) {
                decode(d, s, stream);
                return true;
            }
            if let (Some(s), Some(d)) = (same::<S, $f>(src), same_mut::<D, bf16>(dst)) {
                let d: &mut [u16] = d.reinterpret_cast_mut();
                decode(d, s, stream);
                return true;
            }
        )*};
    }
    each!(F8E5M2, F8E4M3Fn, F8E5M2Fnuz, F8E4M3Fnuz, F8E8M0Fnu);
    false
}

impl<S: Element, D: Element> Kernel for Convert<S, D> {
    #[inline]
    unsafe fn run(&mut self, d: *mut u8, s: *const u8, n: usize, ds: isize, ss: isize) -> bool {
        let (szs, szd) = (size_of::<S>() as isize, size_of::<D>() as isize);
        if ds == szd && ss == szs {
            // SAFETY: both runs are n contiguous items (run's contract), not overlapping
            // (the op's guarantee): fast_contiguous's contract.
            if unsafe { fast_contiguous::<S, D>(d, s, n, self.stream) } {
                return true;
            }
            // SAFETY: item i < n is d + i·szd and s + i·szs (run's contract).
            unsafe {
                let (d, s) = (d as *mut D, s as *const S);
                for i in 0..n {
                    d.add(i)
                        .write_unaligned(convert::<S, D>(s.add(i).read_unaligned()));
                }
            }
        } else if ss == 0 {
            // SAFETY: with ss == 0 the source is the one item at s; the writes are the n
            // destination items d + i·ds, i < n (run's contract).
            unsafe {
                let v: D = convert((s as *const S).read_unaligned());
                for i in 0..n {
                    (d.offset(i as isize * ds) as *mut D).write_unaligned(v);
                }
            }
        } else {
            // SAFETY: item i < n is d + i·ds and s + i·ss (run's contract).
            unsafe {
                for i in 0..n {
                    let x = (s.offset(i as isize * ss) as *const S).read_unaligned();
                    (d.offset(i as isize * ds) as *mut D).write_unaligned(convert(x));
                }
            }
        }
        true
    }
}

/// Element-wise equality of two same-dtype operands (IEEE: NaN != NaN, -0 == +0; bool by
/// truth value). Stops at the first difference.
pub(crate) struct Equal<T> {
    pub equal: bool,
    _t: std::marker::PhantomData<T>,
}

impl<T> Equal<T> {
    pub fn new() -> Self {
        Equal {
            equal: true,
            _t: std::marker::PhantomData,
        }
    }
}

impl<T: Element> Kernel for Equal<T> {
    #[inline]
    unsafe fn run(&mut self, a: *mut u8, b: *const u8, n: usize, sa: isize, sb: isize) -> bool {
        // Chunks without an early exit inside, so the contiguous case vectorises; the
        // answer is checked after each chunk.
        const CHUNK: usize = 256;
        let sz = size_of::<T>() as isize;
        let same = |x: T, y: T| x.to_scalar() == y.to_scalar();
        let mut i = 0;
        while i < n {
            let end = n.min(i + CHUNK);
            let mut all = true;
            if sa == sz && sb == sz {
                // SAFETY: item j < end <= n of each operand is a + j·sz, b + j·sz (run's
                // contract); only reads.
                unsafe {
                    let (pa, pb) = (a as *const T, b as *const T);
                    for j in i..end {
                        all &= same(pa.add(j).read_unaligned(), pb.add(j).read_unaligned());
                    }
                }
            } else {
                // SAFETY: item j < end <= n of each operand is a + j·sa, b + j·sb (run's
                // contract); only reads.
                unsafe {
                    for j in i..end {
                        let x = (a.offset(j as isize * sa) as *const T).read_unaligned();
                        let y = (b.offset(j as isize * sb) as *const T).read_unaligned();
                        all &= same(x, y);
                    }
                }
            }
            if !all {
                self.equal = false;
                return false;
            }
            i = end;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;

    /// The L3 size decides streaming: from half of it up. With a 32 MiB L3 a 720p float32
    /// CHW frame (10.5 MiB) keeps plain stores and 1080p (23.7 MiB) streams; with a 96 MiB
    /// one 1080p keeps plain stores; an unknown L3 streams from 16 MiB. The sysfs size
    /// strings parse to bytes.
    #[test]
    fn streaming_threshold_follows_the_l3_size() {
        let (sd, hd) = (720 * 1280 * 3 * 4, 1080 * 1920 * 3 * 4);
        let l3 = super::super::cpu::parse_cache_size("32768K");
        assert_eq!(l3, Some(32 << 20));
        assert!(sd < stream_threshold(l3) && hd >= stream_threshold(l3));
        assert!(hd < stream_threshold(Some(96 << 20)));
        assert_eq!(stream_threshold(None), 16 << 20);
        use super::super::cpu::parse_cache_size as p;
        assert_eq!(p("1M"), Some(1 << 20));
        assert_eq!(p("512"), Some(512));
        assert_eq!(p("2G"), Some(2 << 30));
        for bad in ["", "K", "0K", "x", "-1K", "99999999999999999999G"] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
        // This host's answer, when it has one, is a plausible cache size.
        if let Some(n) = super::super::cpu::l3_bytes() {
            assert!((1 << 16..=1 << 31).contains(&n), "L3 {n}");
        }
    }

    /// Every exponent, sign, NaN/inf, round-half cases and pseudo-random mantissas.
    fn interesting_f32() -> Vec<f32> {
        let mut v: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-40,
            -1e-45,
            65504.0,
            65519.0,
            65520.0,
            6.0e-8,
            3.0e-8,
            2.9e-8,
        ];
        let mut x: u32 = 0x1234_5678;
        for _ in 0..200_000 {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(f32::from_bits(x));
            // halfway patterns for bf16 and f16
            v.push(f32::from_bits((x & 0xFFFF_0000) | 0x8000));
            v.push(f32::from_bits((x & 0xFFFF_E000) | 0x1000));
            v.push(f32::from_bits(0x7F80_0001 | (x & 0x807F_FFFF)));
        }
        v
    }

    fn run_fast<S: Element, D: Element + Default>(src: &[S]) -> Vec<D> {
        let mut out = vec![D::default(); src.len()];
        let mut k = Convert::<S, D>::new(0);
        // SAFETY: out and src are distinct buffers of src.len() contiguous items each.
        unsafe {
            k.run(
                out.as_mut_ptr() as *mut u8,
                src.as_ptr() as *const u8,
                src.len(),
                size_of::<D>() as isize,
                size_of::<S>() as isize,
            );
        }
        out
    }

    #[test]
    fn fast_paths_equal_the_dtype_rule_bit_for_bit() {
        let src = interesting_f32();
        let h: Vec<f16> = run_fast(&src);
        let b: Vec<bf16> = run_fast(&src);
        for (i, &x) in src.iter().enumerate() {
            let gh: f16 = f16::from_scalar(Scalar::Float(x as f64));
            let gb: bf16 = bf16::from_scalar(Scalar::Float(x as f64));
            assert_eq!(
                h[i].to_bits(),
                gh.to_bits(),
                "f16 of {x:e} ({:#x})",
                x.to_bits()
            );
            assert_eq!(
                b[i].to_bits(),
                gb.to_bits(),
                "bf16 of {x:e} ({:#x})",
                x.to_bits()
            );
        }
        // and back: every 16-bit pattern
        let hs: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let bs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let hf: Vec<f32> = run_fast(&hs);
        let bf: Vec<f32> = run_fast(&bs);
        for i in 0..hs.len() {
            let gh: f32 = f32::from_scalar(hs[i].to_scalar());
            let gb: f32 = f32::from_scalar(bs[i].to_scalar());
            assert!(
                hf[i].to_bits() == gh.to_bits() || (hf[i].is_nan() && gh.is_nan()),
                "{i:#x}"
            );
            assert!(
                bf[i].to_bits() == gb.to_bits() || (bf[i].is_nan() && gb.is_nan()),
                "{i:#x}"
            );
        }
    }

    /// The float8 slice paths (copy/float8.rs) against the per-item rule of dtype.rs:
    /// f32 and every bf16 pattern in, every code out, bit for bit (NaN codes too, since
    /// both sides encode through float8.rs from the same f32).
    #[test]
    fn float8_fast_paths_equal_the_dtype_rule() {
        use crate::float8::*;
        fn check<F: Float8 + Element + Default + PartialEq + std::fmt::Debug>() {
            let src = interesting_f32();
            let got: Vec<F> = run_fast(&src);
            for (i, &x) in src.iter().enumerate() {
                assert_eq!(got[i], F::from_scalar(Scalar::Float(x as f64)), "{x:e}");
            }
            let bs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
            let got: Vec<F> = run_fast(&bs);
            for (i, &x) in bs.iter().enumerate() {
                assert_eq!(got[i], F::from_scalar(x.to_scalar()), "bf16 {i:#x}");
            }
            let codes: Vec<F> = (0..=255u8).map(F::from_bits).collect();
            let f: Vec<f32> = run_fast(&codes);
            let b: Vec<bf16> = run_fast(&codes);
            for (i, &c) in codes.iter().enumerate() {
                let want: f32 = f32::from_scalar(c.to_scalar());
                let wb: bf16 = bf16::from_scalar(c.to_scalar());
                assert!(f[i] == want || (f[i].is_nan() && want.is_nan()), "{i:#x}");
                assert!(
                    (f[i] == want && f[i].to_bits() == want.to_bits()) || want.is_nan(),
                    "{i:#x}: -0 keeps its sign"
                );
                assert!(
                    b[i].to_bits() == wb.to_bits() || (b[i].is_nan() && wb.is_nan()),
                    "{i:#x}"
                );
            }
        }
        check::<F8E5M2>();
        check::<F8E4M3Fn>();
        check::<F8E5M2Fnuz>();
        check::<F8E4M3Fnuz>();
        check::<F8E8M0Fnu>();
    }

    #[test]
    fn bf16_rounds_f32_to_nearest_even() {
        // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (down).
        assert_eq!(f32_to_bf16_bits(1.0 + 2f32.powi(-8)), 0x3F80);
        // Slightly above halfway: up (the sticky bit is in f32's lowest mantissa bits,
        // which rounding through f64 with truncation would lose).
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3F80_8001)), 0x3F81);
        let g: bf16 = bf16::from_scalar(Scalar::Float(f32::from_bits(0x3F80_8001) as f64));
        assert_eq!(g.to_bits(), 0x3F81);
    }

    /// `copy_bytes` copies exactly the `n` bytes asked, at every size around the vector
    /// loop's range and its 128-byte steps (the last step ending on the last byte) and at
    /// unaligned offsets, leaving the bytes around the destination untouched.
    #[test]
    fn copy_bytes_copies_exactly_the_range() {
        let sizes = [
            0usize, 1, 127, 128, 2047, 2048, 2049, 2111, 2112, 2113, 2175, 2176, 4095, 4096, 4097,
            4200, 8191, 16383, 16384, 16385, 20000,
        ];
        let src: Vec<u8> = (0..20_100u32).map(|i| (i * 7 + 3) as u8).collect();
        for &n in &sizes {
            for (so, doff) in [(0usize, 32usize), (1, 32), (0, 35), (5, 49), (16, 32)] {
                let mut dst = vec![0xEEu8; n + 128];
                // SAFETY: src has so + n bytes (so <= 16, n <= 20000 < 20100 - 16), dst
                // doff + n (doff < 64), and they are separate vectors.
                unsafe { copy_bytes(dst.as_mut_ptr().add(doff), src.as_ptr().add(so), n) };
                assert!(dst[..doff].iter().all(|&b| b == 0xEE), "before, n {n}");
                assert_eq!(&dst[doff..doff + n], &src[so..so + n], "n {n}, offset {so}");
                assert!(dst[doff + n..].iter().all(|&b| b == 0xEE), "after, n {n}");
            }
        }
    }
}

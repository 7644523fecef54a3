//! Same-dtype copies (and fills, with a stride-0 source): contiguous runs as one
//! [`copy_bytes`], strided runs as plain moves, and the engine's transposed tiles as
//! register transposes (AVX2: 8x8 4-byte or 4x4 8-byte blocks, streaming stores for big
//! outputs) or interleaves of 2-4 planes, else [`scalar_tile`]. Items move as unsigned
//! words of the dtype's size ([`Bytes16`] for 16-byte ones), so every dtype of one size
//! shares the code.

use super::{cpu, Kernel};
use std::mem::size_of;

/// Same-dtype copy (and fill, with a stride-0 source), moving `T`-sized items; `T` is an
/// integer of the element's size, so every dtype of one size shares the code.
pub(crate) struct CopySame<T> {
    /// The output is far bigger than the caches: transposes may use streaming stores.
    stream: bool,
    _t: std::marker::PhantomData<T>,
}

impl<T> CopySame<T> {
    /// `stream`: the write step's streaming choice for the whole destination.
    pub fn new(stream: bool) -> Self {
        CopySame {
            stream,
            _t: std::marker::PhantomData,
        }
    }
}

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
    if n > VEC_COPY_MIN && n <= VEC_COPY_MAX && cpu::avx2() {
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
        if cpu::avx2() {
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

#[cfg(test)]
mod tests {
    use super::*;

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

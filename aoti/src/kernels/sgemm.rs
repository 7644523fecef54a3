//! float32 GEMM on AVX-512F for the layouts a model's products come in, with no copy of a
//! weight kept anywhere:
//!
//! - **dots**: both operands contiguous along k ("NT": `A[i, p] = a[i * rsa + p]`,
//!   `B[p, j] = b[j * csb + p]`), the layout of a linear layer's `addmm(bias, x, w.t())` in a
//!   `freezing=False` package (the weight used in place, as stored), of a channels-last
//!   convolution's `col @ w.t()` and of attention's `q @ k.t()`. Each `MR x NR` tile of C
//!   is `MR * NR` dot products, a vector accumulator each (16 lanes of k per step: `MR + NR`
//!   loads for `MR * NR` FMAs), reduced across lanes once per block of k. Nothing is
//!   packed; the next columns of B (a weight, read once per run, from memory) are
//!   prefetched while the tiles of a block of rows pass over the current ones. Small
//!   batches (m = 1..16) read the weight once.
//! - **rows**: B contiguous along n (`B[p, j] = b[p * rsb + j]`: GPT-2's `Conv1D` weights,
//!   `attn @ v`), C's rows contiguous: tiles of `RM` rows x up to `RN` columns (three
//!   vectors), each step one row of B (in place, prefetched ahead) times `RM` broadcast
//!   elements of A. No lane reduction.
//! - **packed rows**: the same tiles over a copy of B made per call in panels of `RN`
//!   columns, for NT products with many rows of A (a convolution's positions: the copy
//!   costs `k * n` against `m * k * n`) or a short k and some rows (`SHORT_K`), or any other
//!   layout of B with many rows.
//!
//! On AVX2 + FMA (no AVX-512F) the dot tiles (`3 x 4` tiles of 8 lanes, for k >=
//! `AVX2_DOTS_MIN_K`) and the row tiles over B in place (`6 x 16`, blocks of 32 rows of B)
//! run for products of up to `AVX2_DOTS_MAX_M` rows. Everything else (and other CPUs) goes
//! to the `gemm` crate (`gemm.rs`).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::vmath;

/// Dot tiles: rows of A and columns of B per tile (24 accumulators, 4 + 1 registers for the
/// operands).
const MR: usize = 4;
const NR: usize = 6;
/// Dot tiles: most of k per block (a tile's 6 columns of B, 18 KiB, and 4 rows of A, 12 KiB,
/// fit in L1 together), rows of A per block (L2) and columns of B per block.
const KC: usize = 768;
const MC: usize = 128;
const NC: usize = 768;
/// Dot tiles: how far ahead along k a tile prefetches its rows of A.
const PF_AHEAD: usize = 128;
/// Dot tiles: from how many tiles per strip the next strip is prefetched a share per tile;
/// below, a strip's first tile prefetches its own columns of B PF_B floats ahead.
const PF_SPREAD: usize = 8;
const PF_B: usize = 256;

/// Row tiles on AVX-512F: rows of A, columns of B (three vectors, 24 accumulators; AVX2's:
/// `RowTiles`).
const RM: usize = 8;
const RN: usize = 48;
/// Row tiles: k per block (a panel, 128 * 48 * 4 = 24 KiB, stays in L1 while the tiles of a
/// block of rows pass over it), rows of A per block (columns of B per block: ten panels,
/// `RowTiles::RNC`).
const RKC: usize = 128;
const RMC: usize = 128;
/// Row tiles over B in place with one tile of rows: k per block (short: the blocks of all
/// the panels read a band of B's rows, in memory order).
const RKC_FEW: usize = 32;
/// Row tiles over B in place, more than one tile but at most `STREAM_MAX_M` rows of A (a
/// decoder step, small batches: B read from memory once, each panel by a few tiles): k per
/// block, and each tile prefetches B's rows two panels on along the row (what the next
/// panel's tiles read), as with one tile. GPT-2's Conv1D products (16 x 768 x 2304 / 768 /
/// 3072, 16 x 3072 x 768), `gemm_floor.py --cold`, 1 GiB of weight copies in turn: on a
/// Sapphire Rapids (8 x 48 tiles) 41-46 GFLOP/s with blocks of 128 rows of B prefetched
/// `RPF` rows down the panel, 68-79 this way (32: 65-82, 128: 47-62); on an AMD EPYC (AVX2,
/// 6 x 16) 40-49 with blocks of 32 down the panel, 53-57 this way (32: 45-46, 96: 42-50).
const RKC_STREAM: usize = 64;
const STREAM_MAX_M: usize = 32;
/// Row tiles over B in place, more rows of A (each panel read by many tiles, from L1 after
/// the first): how many rows of B ahead a tile prefetches down its panel (128 x 768 x 768:
/// 126-130 GFLOP/s, 120 the streaming way).
const RPF: usize = 24;
/// Rows of A from which an NT product packs B (k * n copies, small against m * k * n).
const PACK_MIN_M: usize = 256;
/// An NT product of at most `SHORT_K` packs B from `PACK_SHORT_K_MIN_M` rows of A: a dot
/// tile's lane sums and stores are paid once per block of k, a large share of a short one
/// (the 1 x 1 convolutions of MobileNet / EfficientNet at 14 x 14 and 7 x 7: k 64-160, m 196
/// and 49, 1.3-1.9x faster packed, against MKL in one run: `aoti/bench/gemm_floor.py`).
/// Attention's `q @ k^T` over blocks of 32 query rows (k = the head's 64) stays on dot tiles:
/// packed, BERT-base ran 1.25x slower than libtorch instead of 1.04-1.17x.
const SHORT_K: usize = 256;
const PACK_SHORT_K_MIN_M: usize = 48;

thread_local! {
    /// The packed panels of B of this thread's products, kept between calls.
    static PANELS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A float32 matrix view: element (i, j) at `ptr + i * rs + j * cs` (elements).
#[derive(Clone, Copy)]
pub struct View {
    pub ptr: *mut f32,
    pub rs: isize,
    pub cs: isize,
}

impl View {
    fn t(self) -> View {
        View {
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
}

/// `C = alpha * C (if read_c) + beta * A @ B` for A m x k, B k x n, C m x n, on the calling
/// thread, when this CPU and the layouts suit one of the kernels; false (nothing done)
/// otherwise.
///
/// # Safety
///
/// Every element the three views address for i < m, j < n, p < k is in bounds of live
/// memory and aligned for f32, readable for A and B (and C when `read_c`), writable for C;
/// C overlaps neither A nor B, and nothing else uses C during the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm(
    m: usize,
    n: usize,
    k: usize,
    c: View,
    read_c: bool,
    alpha: f32,
    beta: f32,
    a: View,
    b: View,
) -> bool {
    let Some(isa) = vmath::Isa::best() else {
        return false;
    };
    // SAFETY: the caller's contract; `isa` is this CPU's.
    unsafe { gemm_on(isa, m, n, k, c, read_c, alpha, beta, a, b) }
}

/// `gemm` on the kernels of `isa` (the tests run each ISA this CPU has).
///
/// # Safety
///
/// `gemm`'s, and this CPU runs `isa`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_on(
    isa: vmath::Isa,
    m: usize,
    n: usize,
    k: usize,
    c: View,
    read_c: bool,
    alpha: f32,
    beta: f32,
    a: View,
    b: View,
) -> bool {
    // C with contiguous columns (its rows not): the transposed product C^T = B^T A^T.
    let (m, n, c, a, b) = if c.cs != 1 && c.rs == 1 {
        (n, m, c.t(), b.t(), a.t())
    } else {
        (m, n, c, a, b)
    };
    let nt = a.cs == 1 && b.rs == 1;
    let how = if m == 0 || n == 0 {
        return true;
    } else if k == 0 {
        How::Scale
    } else if nt && (c.cs != 1 || m < PACK_MIN_M && (m < PACK_SHORT_K_MIN_M || k > SHORT_K)) {
        How::Dots
    } else if c.cs == 1 && b.cs == 1 && !nt {
        How::Rows
    } else if c.cs == 1 && (nt || m >= PACK_MIN_M) {
        How::Packed
    } else {
        return false;
    };
    #[cfg(target_arch = "x86_64")]
    {
        let g = Gemm {
            m,
            n,
            k,
            c,
            read_c,
            alpha,
            beta,
            a,
            b,
        };
        if isa.lanes() == 16 {
            // SAFETY: AVX-512F is present (an Isa of 16 lanes), the views are the caller's
            // (transposed together when swapped: the same elements), and `how` matches
            // their layout.
            unsafe { g.run(how) };
        } else if how == How::Rows && m <= AVX2_DOTS_MAX_M {
            // SAFETY: AVX2 and FMA are present (an Isa of 8 lanes); the views as above, B
            // and C contiguous along n (Rows), k > 0.
            unsafe { g.rows_avx2() };
        } else if how == How::Dots && k >= AVX2_DOTS_MIN_K && m <= AVX2_DOTS_MAX_M {
            // SAFETY: AVX2 and FMA are present (an Isa of 8 lanes); the views as above, A
            // and B contiguous along k (Dots), k > 0.
            unsafe { g.dots_avx2() };
        } else {
            // The other kernels are AVX-512F's: the gemm crate runs these on AVX2.
            return false;
        }
    }
    true
}

/// On AVX2, the dot tiles run from this k on: their lane sums (a horizontal add per
/// accumulator, once per block of k) cost too large a share of a shorter product, e.g.
/// attention's `q @ k^T` over a head of 64.
const AVX2_DOTS_MIN_K: usize = 256;
/// On AVX2, the dot and row tiles run up to this many rows of A (the products of a decoder
/// step, small batches: the weight read once, in place, in memory order). With more, the
/// `gemm` crate's packed 16 x 6 tiles are faster (`aoti/bench/gemm_floor.py --cold` on an
/// AMD EPYC: BERT's 128-row products 83 GFLOP/s there, 70 on 3 x 4 dot tiles; GPT-2's
/// 16-row LM head 36 and 48).
const AVX2_DOTS_MAX_M: usize = 32;

/// The row tiles of one ISA: rows of A per tile, columns of B per panel (up to three
/// vectors: `RM * RN / N` accumulators, 24 of AVX-512F's 32 registers, 12 of AVX2's 16),
/// columns per block (ten panels) and rows of B per block.
#[cfg(target_arch = "x86_64")]
trait RowTiles: vmath::Lanes {
    const RM: usize;
    const RN: usize;
    const RNC: usize = 10 * Self::RN;
}

#[cfg(target_arch = "x86_64")]
impl RowTiles for vmath::Avx512 {
    const RM: usize = RM;
    const RN: usize = RN;
}

#[cfg(target_arch = "x86_64")]
impl RowTiles for vmath::Avx2 {
    const RM: usize = 6;
    const RN: usize = 16;
}

/// A prefetch hint of the cache line at `p` (`_MM_HINT_T0`: into L1, `T1`: L2).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch<const HINT: i32>(p: *const f32) {
    // SAFETY: SSE is x86_64's baseline; a prefetch reads nothing and never faults, whatever
    // the address.
    unsafe { _mm_prefetch::<HINT>(p.cast()) }
}

/// The dot tiles of one ISA: rows of A and columns of B per tile (`MR * NR` accumulators
/// and `MR + 1` operand registers: 24 + 5 of AVX-512F's 32, 12 + 4 of AVX2's 16) and the
/// tile kernel.
#[cfg(target_arch = "x86_64")]
trait DotTiles {
    const MR: usize;
    const NR: usize;
    /// The `mr x nr` tile `t` (mr <= MR, nr <= NR), stored by `st`.
    ///
    /// # Safety
    ///
    /// The ISA is present; as `Dots::run` for `mr x nr`.
    unsafe fn tile(t: &Dots, mr: usize, nr: usize, st: Store);
}

/// `$t.$run::<M, N>($st)` for the `(M, N)` of the listed tile shapes that is `($mr, $nr)`.
macro_rules! tile_dispatch {
    ($t:ident.$run:ident($st:expr), $mr:expr, $nr:expr; $($m:literal, $n:literal;)*) => {
        match ($mr, $nr) {
            // SAFETY: the caller's contract, for a tile of mr x nr.
            $(($m, $n) => unsafe { $t.$run::<$m, $n>($st) },)*
            _ => unreachable!(),
        }
    };
}

#[cfg(target_arch = "x86_64")]
impl DotTiles for vmath::Avx512 {
    const MR: usize = MR;
    const NR: usize = NR;
    #[inline(always)]
    unsafe fn tile(t: &Dots, mr: usize, nr: usize, st: Store) {
        tile_dispatch! {
            t.run(st), mr, nr;
            4, 6; 4, 5; 4, 4; 4, 3; 4, 2; 4, 1;
            3, 6; 3, 5; 3, 4; 3, 3; 3, 2; 3, 1;
            2, 6; 2, 5; 2, 4; 2, 3; 2, 2; 2, 1;
            1, 6; 1, 5; 1, 4; 1, 3; 1, 2; 1, 1;
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl DotTiles for vmath::Avx2 {
    const MR: usize = 3;
    const NR: usize = 4;
    #[inline(always)]
    unsafe fn tile(t: &Dots, mr: usize, nr: usize, st: Store) {
        tile_dispatch! {
            t.run_avx2(st), mr, nr;
            3, 4; 3, 3; 3, 2; 3, 1;
            2, 4; 2, 3; 2, 2; 2, 1;
            1, 4; 1, 3; 1, 2; 1, 1;
        }
    }
}

/// Which kernel a product runs.
#[derive(Clone, Copy, PartialEq)]
enum How {
    /// k == 0: C scaled (or zeroed).
    Scale,
    Dots,
    Rows,
    Packed,
}

/// One call's operands (`gemm`'s arguments).
#[cfg(target_arch = "x86_64")]
struct Gemm {
    m: usize,
    n: usize,
    k: usize,
    c: View,
    read_c: bool,
    alpha: f32,
    beta: f32,
    a: View,
    b: View,
}

/// How a tile's sums go into C: the first block of k sets C (`alpha * C + beta * s`, or
/// `beta * s` without `read_c`), the next ones add `beta * s`.
#[derive(Clone, Copy)]
struct Store {
    first: bool,
    read_c: bool,
    alpha: f32,
    beta: f32,
}

impl Store {
    fn update(self, old: f32, s: f32) -> f32 {
        if !self.first {
            old + self.beta * s
        } else if self.read_c {
            self.alpha * old + self.beta * s
        } else {
            self.beta * s
        }
    }
}

/// `kl`-long blocks of `0..k` (the last one shorter), each with its `Store`.
fn k_blocks(
    k: usize,
    kc: usize,
    read_c: bool,
    alpha: f32,
    beta: f32,
) -> impl Iterator<Item = (usize, usize, Store)> {
    (0..k).step_by(kc).map(move |p0| {
        let st = Store {
            first: p0 == 0,
            read_c,
            alpha,
            beta,
        };
        (p0, kc.min(k - p0), st)
    })
}

#[cfg(target_arch = "x86_64")]
impl Gemm {
    /// # Safety
    ///
    /// As `gemm`, AVX-512F present, and `how` chosen by `gemm` for these views.
    #[target_feature(enable = "avx512f")]
    unsafe fn run(&self, how: How) {
        match how {
            // SAFETY: the caller's contract.
            How::Scale => unsafe { self.scale_c() },
            // SAFETY: the caller's contract; gemm chose Dots for k-contiguous A and B.
            How::Dots => unsafe { self.dots::<vmath::Avx512>() },
            // SAFETY: the caller's contract; gemm chose Rows for n-contiguous B and C.
            How::Rows => unsafe { self.rows::<vmath::Avx512>(None) },
            How::Packed => PANELS.with(|cell| {
                let mut own = Vec::new();
                let mut guard = cell.try_borrow_mut();
                let buf = match guard.as_mut() {
                    Ok(v) => &mut **v,
                    Err(_) => &mut own,
                };
                // SAFETY: the caller's contract; gemm chose Packed for n-contiguous C.
                unsafe { self.rows::<vmath::Avx512>(Some(buf)) }
            }),
        }
    }

    /// C = alpha * C (read_c) or 0: a product over k == 0.
    ///
    /// # Safety
    ///
    /// As `gemm`.
    unsafe fn scale_c(&self) {
        let c = self.c;
        for i in 0..self.m {
            for j in 0..self.n {
                // SAFETY: (i, j) is inside C (the caller's contract): writable, readable
                // when read_c.
                unsafe {
                    let cp = c.ptr.offset(i as isize * c.rs + j as isize * c.cs);
                    *cp = if self.read_c { self.alpha * *cp } else { 0.0 };
                }
            }
        }
    }

    /// The blocked loops of the dot tiles.
    ///
    /// # Safety
    ///
    /// `L`'s ISA is present; as `gemm`, k > 0, A and B contiguous along k.
    #[inline(always)]
    unsafe fn dots<L: DotTiles>(&self) {
        let (mr_max, nr_max) = (L::MR, L::NR);
        let (m, n, k) = (self.m, self.n, self.k);
        // k in blocks of equal length (a multiple of 16: one tail, in the last block).
        let kc = k.div_ceil(k.div_ceil(KC)).div_ceil(16) * 16;
        for (p0, kl, st) in k_blocks(k, kc, self.read_c, self.alpha, self.beta) {
            for j0 in (0..n).step_by(NC) {
                let j1 = (j0 + NC).min(n);
                for i0 in (0..m).step_by(MC) {
                    let i1 = (i0 + MC).min(m);
                    let tiles = (i1 - i0).div_ceil(mr_max);
                    let mut j = j0;
                    while j < j1 {
                        let nr = nr_max.min(j1 - j);
                        // B's columns (a weight: from memory) prefetched: with tiles enough
                        // the next strip's, into L2 a share per tile of this strip; with
                        // few, the strip's own, ahead of the first tile's loads.
                        let next = (j + nr)..(j + nr + nr_max).min(n);
                        let (mut i, mut t) = (i0, 0);
                        while i < i1 {
                            let mr = mr_max.min(i1 - i);
                            if tiles >= PF_SPREAD {
                                self.prefetch_b(next.clone(), p0, kl, t, tiles);
                            }
                            // SAFETY: rows i..i+mr <= m, columns j..j+nr <= n and k range
                            // p0..p0+kl <= k: inside the views (the caller's contract).
                            unsafe {
                                self.dot_tile::<L>(
                                    mr,
                                    nr,
                                    i,
                                    j,
                                    p0,
                                    kl,
                                    st,
                                    tiles < PF_SPREAD && t == 0,
                                )
                            };
                            i += mr;
                            t += 1;
                        }
                        j += nr;
                    }
                }
            }
        }
    }

    /// `rows(None)` in AVX2 registers.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA are present; as `rows` with no buffer.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn rows_avx2(&self) {
        // SAFETY: AVX2 and FMA (this function's), the ISA of vmath::Avx2; the rest the
        // caller's.
        unsafe { self.rows::<vmath::Avx2>(None) }
    }

    /// `dots` in AVX2 registers.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA are present; as `dots`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dots_avx2(&self) {
        // SAFETY: AVX2 and FMA (this function's), the ISA of vmath::Avx2; the rest the
        // caller's.
        unsafe { self.dots::<vmath::Avx2>() }
    }

    /// Share `t` of `tiles` of the cache lines of B's columns `cols` over k `p0..p0 + kl`,
    /// prefetched into L2 (hints: an address outside B is never read).
    #[inline(always)]
    fn prefetch_b(
        &self,
        cols: std::ops::Range<usize>,
        p0: usize,
        kl: usize,
        t: usize,
        tiles: usize,
    ) {
        let per_col = kl.div_ceil(16);
        let lines = cols.len() * per_col;
        for l in (t * lines / tiles)..((t + 1) * lines / tiles) {
            let (q, at) = (cols.start + l / per_col, p0 + (l % per_col) * 16);
            let addr = self
                .b
                .ptr
                .wrapping_offset(q as isize * self.b.cs + at as isize);
            prefetch::<_MM_HINT_T1>(addr);
        }
    }

    /// The dot tile of rows `i..i + mr`, columns `j..j + nr` over k `p0..p0 + kl`.
    ///
    /// # Safety
    ///
    /// As `dots`, the ranges inside m, n, k.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn dot_tile<L: DotTiles>(
        &self,
        mr: usize,
        nr: usize,
        i: usize,
        j: usize,
        p0: usize,
        kl: usize,
        st: Store,
        pf_b: bool,
    ) {
        let (a, b, c) = (self.a, self.b, self.c);
        let t = Dots {
            kl,
            a: a.ptr.wrapping_offset(i as isize * a.rs + p0 as isize),
            lda: a.rs,
            b: b.ptr.wrapping_offset(j as isize * b.cs + p0 as isize),
            ldb: b.cs,
            c: c.ptr.wrapping_offset(i as isize * c.rs + j as isize * c.cs),
            rsc: c.rs,
            csc: c.cs,
            pf_b,
        };
        // SAFETY: the caller's contract, for a tile of mr x nr.
        unsafe { L::tile(&t, mr, nr, st) }
    }

    /// The blocked loops of the row tiles: over B in place (`buf` None: B contiguous along
    /// n) or over panels of B packed into `buf`.
    ///
    /// # Safety
    ///
    /// As `gemm`, k > 0, C's rows contiguous, B's too when `buf` is None.
    #[inline(always)]
    unsafe fn rows<L: RowTiles>(&self, mut buf: Option<&mut Vec<f32>>) {
        let (rm, rn, rnc) = (L::RM, L::RN, L::RNC);
        // The packed panels are AVX-512F's (pack_columns: RN wide).
        assert!(buf.is_none() || rn == RN);
        let (m, n, k) = (self.m, self.n, self.k);
        let few = m <= rm && buf.is_none();
        let stream = m <= STREAM_MAX_M && buf.is_none();
        let kc = k.div_ceil(k.div_ceil(if few {
            RKC_FEW
        } else if stream {
            RKC_STREAM
        } else {
            RKC
        }));
        if let Some(buf) = buf.as_mut() {
            let len = kc * rnc.min(n).div_ceil(rn) * rn;
            if buf.len() < len {
                buf.resize(len, 0.0);
            }
        }
        for (p0, kl, st) in k_blocks(k, kc, self.read_c, self.alpha, self.beta) {
            for j0 in (0..n).step_by(rnc) {
                let nl = rnc.min(n - j0);
                let panels = nl.div_ceil(rn);
                if let Some(buf) = buf.as_mut() {
                    self.pack(&mut buf[..panels * rn * kl], j0, nl, p0, kl);
                }
                for i0 in (0..m).step_by(RMC) {
                    let i1 = (i0 + RMC).min(m);
                    for panel in 0..panels {
                        let nr = rn.min(nl - panel * rn);
                        let (bp, rsb) = match buf.as_ref() {
                            Some(buf) => (buf[panel * rn * kl..].as_ptr(), rn as isize),
                            None => (
                                self.b.ptr.cast_const().wrapping_offset(
                                    p0 as isize * self.b.rs + (j0 + panel * rn) as isize,
                                ),
                                self.b.rs,
                            ),
                        };
                        let mut i = i0;
                        while i < i1 {
                            let mr = rm.min(i1 - i);
                            let t = Rows {
                                kl,
                                a: self.a.ptr.cast_const().wrapping_offset(
                                    i as isize * self.a.rs + p0 as isize * self.a.cs,
                                ),
                                rsa: self.a.rs,
                                csa: self.a.cs,
                                b: bp,
                                rsb,
                                prefetch: match (&buf, stream) {
                                    (Some(_), _) => 0,
                                    // The same row's band two panels on (the tiles of one
                                    // block of k walk B's rows in memory order).
                                    (None, true) => 2 * rn as isize,
                                    // Down the panel, RPF rows on.
                                    (None, false) => RPF as isize * self.b.rs,
                                },
                                c: self.c.ptr.wrapping_offset(
                                    i as isize * self.c.rs + (j0 + panel * rn) as isize,
                                ),
                                rsc: self.c.rs,
                                nr,
                            };
                            // SAFETY: rows i..i+mr <= m, columns j0 + panel * rn + nr <= n,
                            // k range p0..p0+kl <= k: inside the views; a packed panel is
                            // kl * rn floats of buf.
                            unsafe { t.dispatch::<L>(mr, st) };
                            i += mr;
                        }
                    }
                }
            }
        }
    }

    /// Columns `j0..j0 + nl` of B over k `p0..p0 + kl` into `buf` as panels of RN columns,
    /// `buf[(panel * kl + p) * RN + q] = B[p0 + p, j0 + panel * RN + q]` (the last panel's
    /// columns past nl are left as they are: the tiles' masked loads never read them).
    fn pack(&self, buf: &mut [f32], j0: usize, nl: usize, p0: usize, kl: usize) {
        let b = self.b;
        if b.rs == 1 {
            // SAFETY: AVX-512F is present (Gemm runs only then); the columns j0..j0 + nl over
            // k p0..p0 + kl are readable (the caller's contract), each contiguous (rs 1).
            unsafe {
                pack_columns(
                    b.ptr.wrapping_offset(j0 as isize * b.cs + p0 as isize),
                    b.cs,
                    buf,
                    nl,
                    kl,
                )
            };
            return;
        }
        for (panel, dst) in buf.chunks_exact_mut(kl * RN).enumerate() {
            for q in 0..RN.min(nl - panel * RN) {
                let j = panel * RN + q;
                let col = b
                    .ptr
                    .wrapping_offset((j0 + j) as isize * b.cs + p0 as isize * b.rs);
                for p in 0..kl {
                    // SAFETY: column j0 + j < n of B, element p0 + p < k: readable (the
                    // caller's contract).
                    dst[p * RN + q] = unsafe { *col.offset(p as isize * b.rs) };
                }
            }
        }
    }
}

/// `nl` columns of B from `col0` (column q at `col0 + q * cs`, `kl` contiguous elements
/// each) into `buf` as panels of RN columns, `buf[(panel * kl + p) * RN + q']` = element p of
/// column `panel * RN + q'`: 16 x 16 blocks transposed in registers (lanes past kl or nl are
/// not read; the last panel's columns past nl get zeros).
///
/// # Safety
///
/// AVX-512F is present; the `nl` columns' `kl` elements are readable; `buf` holds
/// `nl.div_ceil(RN) * RN * kl` floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn pack_columns(col0: *const f32, cs: isize, buf: &mut [f32], nl: usize, kl: usize) {
    let panels = nl.div_ceil(RN);
    assert!(buf.len() >= panels * RN * kl);
    let out = buf.as_mut_ptr();
    for panel in 0..panels {
        for qb in (0..RN).step_by(16) {
            let q0 = panel * RN + qb;
            for p0 in (0..kl).step_by(16) {
                let pm: __mmask16 = ((1u32 << (kl - p0).min(16)) - 1) as u16;
                let mut v = [_mm512_setzero_ps(); 16];
                for (q, v) in v.iter_mut().enumerate() {
                    if q0 + q < nl {
                        // SAFETY: column q0 + q < nl, its elements p0.. < kl (the unmasked
                        // lanes): readable (the contract).
                        *v = unsafe {
                            _mm512_maskz_loadu_ps(
                                pm,
                                col0.wrapping_offset((q0 + q) as isize * cs).add(p0),
                            )
                        };
                    }
                }
                let rows = transpose16(v);
                for (p, r) in rows.iter().enumerate().take((kl - p0).min(16)) {
                    // SAFETY: row p0 + p < kl of the panel, its 16 columns from qb (qb + 16 <=
                    // RN): inside buf (asserted above).
                    unsafe { _mm512_storeu_ps(out.add((panel * kl + p0 + p) * RN + qb), *r) };
                }
            }
        }
    }
}

/// The transpose of a 16 x 16 block: lane j of result i is lane i of `v[j]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn transpose16(v: [__m512; 16]) -> [__m512; 16] {
    // Pairs of rows interleaved by 32-bit lanes, then by 64-bit: u[4 g + k] holds, in each
    // 128-bit lane L, the elements 4 L + k of rows 4 g..4 g + 4.
    let mut t = [_mm512_setzero_ps(); 16];
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    let mut u = [_mm512_setzero_ps(); 16];
    for g in 0..4 {
        let (a, b, c, d) = (
            _mm512_castps_pd(t[4 * g]),
            _mm512_castps_pd(t[4 * g + 1]),
            _mm512_castps_pd(t[4 * g + 2]),
            _mm512_castps_pd(t[4 * g + 3]),
        );
        u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    // The 128-bit lanes gathered across the four groups: row 4 L + k.
    let mut r = [_mm512_setzero_ps(); 16];
    for k in 0..4 {
        let x01_lo = _mm512_shuffle_f32x4::<0b10_00_10_00>(u[k], u[4 + k]);
        let x01_hi = _mm512_shuffle_f32x4::<0b11_01_11_01>(u[k], u[4 + k]);
        let x23_lo = _mm512_shuffle_f32x4::<0b10_00_10_00>(u[8 + k], u[12 + k]);
        let x23_hi = _mm512_shuffle_f32x4::<0b11_01_11_01>(u[8 + k], u[12 + k]);
        r[k] = _mm512_shuffle_f32x4::<0b10_00_10_00>(x01_lo, x23_lo);
        r[8 + k] = _mm512_shuffle_f32x4::<0b11_01_11_01>(x01_lo, x23_lo);
        r[4 + k] = _mm512_shuffle_f32x4::<0b10_00_10_00>(x01_hi, x23_hi);
        r[12 + k] = _mm512_shuffle_f32x4::<0b11_01_11_01>(x01_hi, x23_hi);
    }
    r
}

/// One dot tile's operands: A's rows, B's columns and C's corner at the tile, `kl` of k.
#[cfg(target_arch = "x86_64")]
struct Dots {
    kl: usize,
    a: *const f32,
    lda: isize,
    b: *const f32,
    ldb: isize,
    c: *mut f32,
    rsc: isize,
    csc: isize,
    /// Prefetch B's columns PF_B ahead (B from memory, this tile its first reader).
    pf_b: bool,
}

#[cfg(target_arch = "x86_64")]
impl Dots {
    /// `M x N` dot products of length `kl` (M <= MR, N <= NR), stored by `st`.
    ///
    /// # Safety
    ///
    /// Rows `0..M` of A and columns `0..N` of B from the tile's pointers, `kl` elements each,
    /// are readable; C's `M x N` corner is writable (and readable when it is read).
    #[allow(clippy::needless_range_loop)] // acc[r][q]: both indices are the loops'
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const M: usize, const N: usize>(&self, st: Store) {
        let zero = _mm512_setzero_ps();
        let mut acc = [[zero; NR]; MR];
        let (a, b) = (self.a, self.b);
        let (lda, ldb) = (self.lda, self.ldb);
        let full = self.kl / 16 * 16;
        let mut p = 0;
        while p < full {
            let mut av = [zero; MR];
            for (r, v) in av.iter_mut().enumerate().take(M) {
                let row = a.wrapping_offset(r as isize * lda + p as isize);
                // SAFETY: row r < M, elements p..p+16 <= kl of it: readable (the contract).
                *v = unsafe { _mm512_loadu_ps(row) };
                // A hint only (never faults): the row's line PF_AHEAD floats on, from L2.
                _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(PF_AHEAD).cast());
            }
            for q in 0..N {
                let col = b.wrapping_offset(q as isize * ldb + p as isize);
                // SAFETY: column q < N, elements p..p+16 <= kl of it: readable.
                let bv = unsafe { _mm512_loadu_ps(col) };
                if self.pf_b {
                    // A hint only (never faults).
                    _mm_prefetch::<_MM_HINT_T0>(col.wrapping_add(PF_B).cast());
                }
                for r in 0..M {
                    acc[r][q] = _mm512_fmadd_ps(av[r], bv, acc[r][q]);
                }
            }
            p += 16;
        }
        if p < self.kl {
            // The tail: masked loads read (and may fault on) only the kl - p elements left.
            let mask: __mmask16 = (1u32 << (self.kl - p)).wrapping_sub(1) as u16;
            let mut av = [zero; MR];
            for (r, v) in av.iter_mut().enumerate().take(M) {
                // SAFETY: the unmasked lanes are elements p..kl of row r: readable.
                *v =
                    unsafe { _mm512_maskz_loadu_ps(mask, a.offset(r as isize * lda + p as isize)) };
            }
            for q in 0..N {
                // SAFETY: the unmasked lanes are elements p..kl of column q: readable.
                let bv =
                    unsafe { _mm512_maskz_loadu_ps(mask, b.offset(q as isize * ldb + p as isize)) };
                for r in 0..M {
                    acc[r][q] = _mm512_fmadd_ps(av[r], bv, acc[r][q]);
                }
            }
        }
        // The sums: s[4 r + q] for q < 4, s[16 + 2 r + (q - 4)] for q = 4, 5.
        let lo = [
            acc[0][0], acc[0][1], acc[0][2], acc[0][3], acc[1][0], acc[1][1], acc[1][2], acc[1][3],
            acc[2][0], acc[2][1], acc[2][2], acc[2][3], acc[3][0], acc[3][1], acc[3][2], acc[3][3],
        ];
        let mut s = [0f32; 32];
        // SAFETY: s holds 32 floats: 16 from 0, 16 from 16.
        unsafe { _mm512_storeu_ps(s.as_mut_ptr(), sum16(lo)) };
        if N > 4 {
            let hi = [
                acc[0][4], acc[0][5], acc[1][4], acc[1][5], acc[2][4], acc[2][5], acc[3][4],
                acc[3][5],
            ];
            // SAFETY: as above.
            unsafe { _mm512_storeu_ps(s.as_mut_ptr().add(16), sum8(hi)) };
        }
        for r in 0..M {
            for q in 0..N {
                let v = if q < 4 {
                    s[4 * r + q]
                } else {
                    s[16 + 2 * r + q - 4]
                };
                // SAFETY: (r, q) is in C's M x N corner: writable, readable when read.
                unsafe {
                    let cp = self.c.offset(r as isize * self.rsc + q as isize * self.csc);
                    *cp = st.update(*cp, v);
                }
            }
        }
    }

    /// `Dots::run` in AVX2 registers (M <= 3, N <= 4: 12 accumulators), each sum reduced
    /// across its lanes on its own.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA are present; as `run`.
    #[allow(clippy::needless_range_loop)] // acc[r][q]: both indices are the loops'
    #[inline(always)]
    unsafe fn run_avx2<const M: usize, const N: usize>(&self, st: Store) {
        use vmath::{Avx2, Lanes};
        // SAFETY: AVX2 and FMA (the caller's), here and in every block below.
        let zero = unsafe { Avx2::zero() };
        let mut acc = [[zero; N]; M];
        let (a, b) = (self.a, self.b);
        let (lda, ldb) = (self.lda, self.ldb);
        // Full steps of 8 lanes, then one of the kl % 8 left (its loads read, and may fault
        // on, only those).
        let full = self.kl / 8 * 8;
        // (a macro, not a closure: a closure would not get this function's target features)
        macro_rules! step {
            ($p:expr, $lanes:expr, $hints:expr) => {{
                let (p, lanes) = ($p, $lanes);
                let mut av = [zero; M];
                for (r, v) in av.iter_mut().enumerate() {
                    let row = a.wrapping_offset(r as isize * lda + p as isize);
                    // SAFETY: row r < M, elements p..p + lanes <= kl of it: readable (the
                    // contract).
                    *v = unsafe { Avx2::load(row, lanes) };
                    if $hints {
                        // The row's line PF_AHEAD floats on, from L2.
                        prefetch::<_MM_HINT_T0>(row.wrapping_add(PF_AHEAD));
                    }
                }
                for q in 0..N {
                    let col = b.wrapping_offset(q as isize * ldb + p as isize);
                    // SAFETY: column q < N, elements p..p + lanes <= kl of it: readable.
                    let bv = unsafe { Avx2::load(col, lanes) };
                    if $hints && self.pf_b {
                        prefetch::<_MM_HINT_T0>(col.wrapping_add(PF_B));
                    }
                    for r in 0..M {
                        // SAFETY: see above.
                        acc[r][q] = unsafe { Avx2::fmadd(av[r], bv, acc[r][q]) };
                    }
                }
            }};
        }
        for p in (0..full).step_by(8) {
            step!(p, 8, true);
        }
        if full < self.kl {
            step!(full, self.kl - full, false);
        }
        for r in 0..M {
            for q in 0..N {
                // SAFETY: see above.
                let v = unsafe { Avx2::hsum(acc[r][q]) };
                // SAFETY: (r, q) is in C's M x N corner: writable, readable when read.
                unsafe {
                    let cp = self.c.offset(r as isize * self.rsc + q as isize * self.csc);
                    *cp = st.update(*cp, v);
                }
            }
        }
    }
}

/// One row tile's operands: A's rows, B's rows (in place or a packed panel) and C's
/// corner at the tile, `kl` of k, `nr` columns.
#[cfg(target_arch = "x86_64")]
struct Rows {
    kl: usize,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    /// B in place (from memory): how far ahead of each row of B to prefetch (elements; 0:
    /// not at all).
    prefetch: isize,
    c: *mut f32,
    rsc: isize,
    nr: usize,
}

#[cfg(target_arch = "x86_64")]
impl Rows {
    /// # Safety
    ///
    /// `L`'s ISA is present; as `run`, for `mr` (1..=L::RM) rows.
    #[inline(always)]
    unsafe fn dispatch<L: RowTiles>(&self, mr: usize, st: Store) {
        let v = self.nr.div_ceil(L::N);
        macro_rules! dispatch {
            ($($m:literal)*) => {
                match (mr, v) {
                    $(
                        // SAFETY: the caller's contract, for mr rows, 3 vectors of columns.
                        ($m, 3) => unsafe { self.run::<L, $m, 3>(st) },
                        // SAFETY: as above, 2 vectors.
                        ($m, 2) => unsafe { self.run::<L, $m, 2>(st) },
                        // SAFETY: as above, 1 vector.
                        ($m, 1) => unsafe { self.run::<L, $m, 1>(st) },
                    )*
                    _ => unreachable!(),
                }
            };
        }
        if L::RM == 6 {
            dispatch!(6 5 4 3 2 1)
        } else {
            dispatch!(8 7 6 5 4 3 2 1)
        }
    }

    /// `M x (L::N V)` sums over `kl` (M <= L::RM, V <= 3), of which the first `nr` columns
    /// are stored by `st` into C's rows (contiguous).
    ///
    /// # Safety
    ///
    /// `L`'s ISA is present; rows `0..M` of A (`kl` elements each) are readable, and the
    /// first `nr` elements of `kl` rows of B; C's `M x nr` corner (rows at `rsc`, columns
    /// contiguous) is writable (and readable when it is read).
    #[inline(always)]
    unsafe fn run<L: RowTiles, const M: usize, const V: usize>(&self, st: Store) {
        let nr = self.nr;
        // The columns of each vector: all but the last vector's are full.
        let mut cols = [0usize; 3];
        for (h, c) in cols.iter_mut().enumerate() {
            *c = nr.saturating_sub(L::N * h).min(L::N);
        }
        // SAFETY: the caller's contract, for the panel's nr columns (all V vectors full
        // when nr is V * N).
        let acc = unsafe {
            if nr == V * L::N {
                self.sums::<L, M, V, true>(&cols)
            } else {
                self.sums::<L, M, V, false>(&cols)
            }
        };
        // SAFETY: L's ISA.
        let (alpha, beta) = unsafe { (L::splat(st.alpha), L::splat(st.beta)) };
        for (r, acc) in acc.iter().enumerate() {
            let row = self.c.wrapping_offset(r as isize * self.rsc);
            for h in 0..V {
                let cp = row.wrapping_add(L::N * h);
                // SAFETY: the loaded and stored lanes are columns < nr of row r of C:
                // readable (when it is read) and writable; L's ISA.
                unsafe {
                    let v = if st.first && !st.read_c {
                        L::mul(beta, acc[h])
                    } else {
                        let old = L::load(cp, cols[h]);
                        let old = if st.first { L::mul(alpha, old) } else { old };
                        L::fmadd(beta, acc[h], old)
                    };
                    L::store(cp, cols[h], v);
                }
            }
        }
    }

    /// The tile's `M x (L::N V)` sums over `kl`: B's rows by unmasked loads when `FULL`
    /// (every one of the V vectors' columns inside nr), else only the first `cols[h]`
    /// columns of vector h.
    ///
    /// # Safety
    ///
    /// As `run`; `FULL` only when nr is `V * L::N`.
    #[inline(always)]
    unsafe fn sums<L: RowTiles, const M: usize, const V: usize, const FULL: bool>(
        &self,
        cols: &[usize; 3],
    ) -> [[L::V; 3]; M] {
        // SAFETY: L's ISA (the caller's), here and in every block below.
        let zero = unsafe { L::zero() };
        let mut acc = [[zero; 3]; M];
        let (rsa, csa, rsb) = (self.rsa, self.csa, self.rsb);
        let (mut ap, mut brow) = (self.a, self.b);
        for _ in 0..self.kl {
            let mut bv = [zero; 3];
            for (h, v) in bv.iter_mut().enumerate().take(V) {
                // SAFETY: the loaded lanes are columns < nr of this row (< kl) of B:
                // readable (all N of them when FULL).
                *v = unsafe {
                    if FULL {
                        L::load(brow.add(L::N * h), L::N)
                    } else {
                        L::load(brow.add(L::N * h), cols[h])
                    }
                };
            }
            if self.prefetch != 0 {
                let ahead = brow.wrapping_offset(self.prefetch);
                for h in 0..V {
                    prefetch::<_MM_HINT_T0>(ahead.wrapping_add(L::N * h));
                }
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: this element (< kl) of row r < M of A: readable; L's ISA.
                unsafe {
                    let av = L::splat(*ap.offset(r as isize * rsa));
                    for h in 0..V {
                        acc[h] = L::fmadd(av, bv[h], acc[h]);
                    }
                }
            }
            ap = ap.wrapping_offset(csa);
            brow = brow.wrapping_offset(rsb);
        }
        acc
    }
}

/// The lane sums of 16 vectors: lane t of the result is the sum of `v[t]`'s lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn sum16(v: [__m512; 16]) -> __m512 {
    // Pairs (x, y) -> per 128-bit lane [x, y, x, y] partials.
    let mut s = [_mm512_setzero_ps(); 8];
    for (i, s) in s.iter_mut().enumerate() {
        let (x, y) = (v[2 * i], v[2 * i + 1]);
        *s = _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y));
    }
    // Pairs of those -> per 128-bit lane the partials of 4 vectors [v0, v1, v2, v3].
    let mut u = [_mm512_setzero_ps(); 4];
    for (i, u) in u.iter_mut().enumerate() {
        let (x, y) = (_mm512_castps_pd(s[2 * i]), _mm512_castps_pd(s[2 * i + 1]));
        *u = _mm512_add_ps(
            _mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
            _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)),
        );
    }
    // 128-bit lanes: [u0.0 + u0.1, u0.2 + u0.3, u1.0 + u1.1, u1.2 + u1.3] and so for u2, u3.
    let w01 = _mm512_add_ps(
        _mm512_shuffle_f32x4::<0b10_00_10_00>(u[0], u[1]),
        _mm512_shuffle_f32x4::<0b11_01_11_01>(u[0], u[1]),
    );
    let w23 = _mm512_add_ps(
        _mm512_shuffle_f32x4::<0b10_00_10_00>(u[2], u[3]),
        _mm512_shuffle_f32x4::<0b11_01_11_01>(u[2], u[3]),
    );
    _mm512_add_ps(
        _mm512_shuffle_f32x4::<0b10_00_10_00>(w01, w23),
        _mm512_shuffle_f32x4::<0b11_01_11_01>(w01, w23),
    )
}

/// The lane sums of 8 vectors, in lanes 0..8 of the result (lanes 8..16 undefined).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn sum8(v: [__m512; 8]) -> __m512 {
    let mut s = [_mm512_setzero_ps(); 4];
    for (i, s) in s.iter_mut().enumerate() {
        let (x, y) = (v[2 * i], v[2 * i + 1]);
        *s = _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y));
    }
    let mut u = [_mm512_setzero_ps(); 2];
    for (i, u) in u.iter_mut().enumerate() {
        let (x, y) = (_mm512_castps_pd(s[2 * i]), _mm512_castps_pd(s[2 * i + 1]));
        *u = _mm512_add_ps(
            _mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
            _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)),
        );
    }
    // [u0.0 + u0.1, u0.2 + u0.3, u1.0 + u1.1, u1.2 + u1.3]
    let w = _mm512_add_ps(
        _mm512_shuffle_f32x4::<0b10_00_10_00>(u[0], u[1]),
        _mm512_shuffle_f32x4::<0b11_01_11_01>(u[0], u[1]),
    );
    // [w.0 + w.1, w.2 + w.3, ..]
    _mm512_add_ps(
        _mm512_shuffle_f32x4::<0b00_00_10_00>(w, w),
        _mm512_shuffle_f32x4::<0b00_00_11_01>(w, w),
    )
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// `gemm` against a float64 reference on the products of small batches, NT (the dot
    /// tiles) and NN (the row tiles over B in place), on AVX-512F or AVX2, whichever this
    /// CPU runs: tails of k and of the tiles, C strided, read or not, scaled; `gemm` may
    /// decline a layout (false: nothing written), never compute it wrongly.
    #[test]
    fn products_match_a_float64_reference() {
        let mut rng = super::super::Lcg(11);
        let mut next = |n: usize| rng.below(n);
        let isas = vmath::Isa::all();
        let mut ran = vec![0; isas.len()];
        for trial in 0..60 {
            let m = 1 + next(32);
            let k = if trial % 3 == 0 {
                1 + next(40)
            } else {
                256 + next(600)
            };
            let n = 1 + next(50);
            let (read_c, alpha, beta) =
                [(false, 0.0, 1.0), (true, 1.0, 1.0), (true, 0.5, -2.0)][trial % 3];
            let val = |i: usize| ((i * 7919) % 23) as f32 * 0.125 - 1.4;
            // A [m, k] row-major; B the transpose of a row-major [n, k] (NT), or (every
            // fourth trial) row-major [k, n].
            let nt = trial % 4 != 3;
            let a: Vec<f32> = (0..m * k).map(val).collect();
            let b: Vec<f32> = (0..n * k).map(|i| val(i + 5)).collect();
            let (brs, bcs) = if nt { (1, k as isize) } else { (n as isize, 1) };
            // C with a row stride past n (and a column stride of 1).
            let ldc = n + 3;
            let c0: Vec<f32> = (0..m * ldc).map(|i| val(i + 9)).collect();
            let view = |p: *const f32, rs: isize, cs: isize| View {
                ptr: p.cast_mut(),
                rs,
                cs,
            };
            for (&isa, ran) in isas.iter().zip(&mut ran) {
                let mut c = c0.clone();
                // SAFETY: every view addresses, for its m x k / k x n / m x n indices,
                // elements of its own Vec; C overlaps neither input; `isa` is this CPU's.
                let done = unsafe {
                    gemm_on(
                        isa,
                        m,
                        n,
                        k,
                        view(c.as_mut_ptr(), ldc as isize, 1),
                        read_c,
                        alpha,
                        beta,
                        view(a.as_ptr(), k as isize, 1),
                        view(b.as_ptr(), brs, bcs),
                    )
                };
                if !done {
                    assert_eq!(c, c0, "trial {trial} ({isa:?}): declined, yet C changed");
                    continue;
                }
                *ran += 1;
                for i in 0..m {
                    for j in 0..n {
                        let dot: f64 = (0..k)
                            .map(|p| {
                                let bv = b[(p as isize * brs + j as isize * bcs) as usize];
                                a[i * k + p] as f64 * bv as f64
                            })
                            .sum();
                        let old = if read_c {
                            alpha as f64 * c0[i * ldc + j] as f64
                        } else {
                            0.0
                        };
                        let want = old + beta as f64 * dot;
                        let got = c[i * ldc + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                            "trial {trial} ({isa:?}, {m} x {k} x {n}, nt {nt}): C[{i}, {j}] = \
                             {got}, want {want}"
                        );
                    }
                    assert_eq!(
                        c[i * ldc + n..(i + 1) * ldc],
                        c0[i * ldc + n..(i + 1) * ldc]
                    );
                }
            }
        }
        // Some product ran on our kernels on each ISA (AVX-512F's, AVX2's row and dot
        // tiles).
        assert!(ran.iter().all(|&r| r > 0), "products run per ISA: {ran:?}");
    }

    #[test]
    fn packed_columns_are_the_transposed_panels() {
        if !is_x86_feature_detected!("avx512f") {
            return;
        }
        for (nl, kl) in [
            (1usize, 1usize),
            (16, 16),
            (48, 16),
            (50, 33),
            (97, 7),
            (200, 130),
        ] {
            let cs = kl + 3;
            let b: Vec<f32> = (0..nl * cs).map(|i| i as f32 * 0.5 - 7.0).collect();
            let mut buf = vec![f32::NAN; nl.div_ceil(RN) * RN * kl];
            // SAFETY: AVX-512F (checked); nl columns of kl elements at stride cs inside b;
            // buf of the size asked.
            unsafe { pack_columns(b.as_ptr(), cs as isize, &mut buf, nl, kl) };
            for j in 0..nl.div_ceil(RN) * RN {
                for p in 0..kl {
                    let got = buf[((j / RN) * kl + p) * RN + j % RN];
                    let want = if j < nl { b[j * cs + p] } else { 0.0 };
                    assert_eq!(got, want, "column {j}, element {p} (nl {nl}, kl {kl})");
                }
            }
        }
    }
}

//! Layer 3 of `copy/`, the engine: the strided iteration behind every bulk data op (copy_,
//! contiguous, clone, to_dtype, repeat, fill, equal, reshape's copy, copy_affine_), its
//! dtype dispatch (`dispatch.rs`) and the split of big copies over threads or the host's
//! executor (`parallel.rs`). It imports the leaf kernels below it (`crate::copy::kernels`),
//! never the write step or the ops above.
//!
//! An op describes two operands over one shape: operand 0 (`dst`, the one written, or the
//! left side of a comparison) and operand 1 (`src`; broadcast dims have stride 0). The
//! engine turns that into a [`Plan`]:
//!
//! 1. size-1 dims are dropped (their stride never matters);
//! 2. dims are ordered by operand 0's stride, largest outermost, so writes are sequential;
//! 3. neighbouring dims that are contiguous with each other in *both* operands are merged,
//!    so a contiguous copy of any rank becomes one run and NCHW -> NHWC becomes the 3-D
//!    problem `[N, H·W, C]`.
//!
//! It then calls the op's [`Kernel`] once per innermost run (a tight loop the compiler
//! vectorises), or, when the innermost dim is contiguous in `dst` but not in `src` and some
//! other dim is contiguous in `src` (a transpose), once per cache-sized 2-D tile over those
//! two dims, so that both the reads and the writes of a tile stay in L1.
//!
//! The kernel is chosen (dtype dispatch, `dispatch.rs`) once per call; the iteration itself
//! knows nothing about element types beyond byte strides.

pub(crate) mod dispatch;
pub(crate) mod parallel;

use super::kernels::Kernel;
use smallvec::SmallVec;

/// Byte strides, pointer-sized (the layout was validated, so products fit).
/// Inline room for every dim a tensor can have ([`MAX_DIMS`](crate::shape::MAX_DIMS)):
/// the engine never allocates, so a copy cannot fail (or abort) for want of memory.
const DIMS: usize = crate::shape::MAX_DIMS;
type Strides = SmallVec<[isize; DIMS]>;

/// Elements per tile side for blocked transposes: 128 x 128 (64 KiB per f32 operand).
/// Raised from 32 together with the AVX2 register transposes (commit fb0e21e; numbers in
/// BENCHMARKS.md, data movement): those work in 8x8 register blocks, so a tile need not
/// fit in L1, and bigger tiles mean fewer per-tile calls.
pub(crate) const TILE: usize = 128;
/// Elements a tile may hold when one side is short (e.g. 3 channels): keeps tiles
/// `TILE_ELEMS` big so the per-tile overhead stays small.
const TILE_ELEMS: usize = 2048;

/// The iteration space after dropping size-1 dims, sorting and merging. `sizes` runs
/// outermost to innermost; the innermost entry is the run length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub sizes: SmallVec<[usize; DIMS]>,
    pub strides: [Strides; 2],
}

impl Plan {
    /// Builds the plan for `sizes` with element strides `st0`/`st1` and item sizes
    /// `isz0`/`isz1`. `None` when there is nothing to do (a size-0 dim).
    pub fn new(sizes: &[i64], st0: &[i64], isz0: usize, st1: &[i64], isz1: usize) -> Option<Plan> {
        debug_assert!(sizes.len() == st0.len() && sizes.len() == st1.len());
        if sizes.contains(&0) {
            return None;
        }
        // (size, byte stride 0, byte stride 1) of every dim that matters.
        let mut dims: SmallVec<[(usize, isize, isize); DIMS]> = sizes
            .iter()
            .zip(st0.iter().zip(st1))
            .filter(|(&n, _)| n != 1)
            .map(|(&n, (&a, &b))| {
                (
                    n as usize,
                    a as isize * isz0 as isize,
                    b as isize * isz1 as isize,
                )
            })
            .collect();
        // Outermost first: by operand 0's stride, then operand 1's (stable, so equal
        // strides keep the tensor's own order).
        dims.sort_by_key(|x| std::cmp::Reverse((x.1, x.2)));
        let mut merged: SmallVec<[(usize, isize, isize); DIMS]> = SmallVec::new();
        for &(n, a, b) in dims.iter().rev() {
            // Walking inner to outer: merge into the previous (inner) dim when contiguous
            // with it in both operands.
            if let Some(inner) = merged.last_mut() {
                let (m, ia, ib) = *inner;
                // Checked: an overflowing product equals no stride.
                let m_i = m as isize;
                if ia.checked_mul(m_i) == Some(a) && ib.checked_mul(m_i) == Some(b) {
                    inner.0 = m * n;
                    continue;
                }
            }
            merged.push((n, a, b));
        }
        if merged.is_empty() {
            // 0-dim or all size-1: one element.
            merged.push((1, 0, 0));
        }
        merged.reverse();
        Some(Plan {
            sizes: merged.iter().map(|d| d.0).collect(),
            strides: [
                merged.iter().map(|d| d.1).collect(),
                merged.iter().map(|d| d.2).collect(),
            ],
        })
    }

    /// The dim to tile with the innermost one, when the copy is a transpose: the innermost
    /// dim is contiguous in operand 0 but not in operand 1, and another dim is contiguous
    /// in operand 1.
    fn transpose_dim(&self, isz0: usize, isz1: usize) -> Option<usize> {
        let last = self.sizes.len() - 1;
        let (a, b) = (&self.strides[0], &self.strides[1]);
        if last == 0 || a[last] != isz0 as isize || b[last] == isz1 as isize || b[last] == 0 {
            return None;
        }
        (0..last).rev().find(|&k| b[k] == isz1 as isize)
    }
}

/// Runs `k` over every element of the plan. Returns false when the kernel stopped early.
///
/// # Safety
/// `p0`/`p1` with the plan's sizes and strides must address only memory valid for the
/// kernel's accesses (validated tensor layouts over live storages; `p0` writable when the
/// kernel writes).
pub(crate) unsafe fn execute(
    plan: &Plan,
    p0: *mut u8,
    p1: *const u8,
    isz0: usize,
    isz1: usize,
    k: &mut dyn Kernel,
) -> bool {
    // SAFETY: our contract is theirs; kdim comes from transpose_dim (a dim other than the
    // innermost).
    unsafe {
        match plan.transpose_dim(isz0, isz1) {
            Some(kdim) => execute_tiled(plan, kdim, p0, p1, k),
            None => execute_runs(plan, p0, p1, k),
        }
    }
}

/// Steps the row-major odometer `idx` (one counter per dim, outermost first; the last one
/// moves fastest) to its next position, where dim `j` has `size(j)` positions. Every
/// counter that changes is reported as `moved(j, delta)`: `delta` is +1, or `1 - size(j)`
/// when it wraps back to 0 and carries into dim `j - 1`, so a caller moves its pointers by
/// `delta` strides. Returns false once past the last position (every counter back at 0).
/// The crate's one odometer: the run and tile loops below and the tests' reference reader
/// (`copy::reference_values`) step with it.
#[inline(always)]
pub(crate) fn odometer_step(
    idx: &mut [usize],
    size: impl Fn(usize) -> usize,
    mut moved: impl FnMut(usize, isize),
) -> bool {
    for j in (0..idx.len()).rev() {
        let n = size(j);
        idx[j] += 1;
        if idx[j] < n {
            moved(j, 1);
            return true;
        }
        idx[j] = 0;
        moved(j, 1 - n as isize);
    }
    false
}

/// Odometer over every dim but the innermost; one kernel run per innermost line.
///
/// # Safety
/// As [`execute`].
unsafe fn execute_runs(plan: &Plan, p0: *mut u8, p1: *const u8, k: &mut dyn Kernel) -> bool {
    let nd = plan.sizes.len();
    let last = nd - 1;
    let (n, ds, ss) = (
        plan.sizes[last],
        plan.strides[0][last],
        plan.strides[1][last],
    );
    let outer = &plan.sizes[..last];
    let mut idx: SmallVec<[usize; DIMS]> = SmallVec::from_elem(0, last);
    let (mut d, mut s) = (p0, p1);
    loop {
        // SAFETY: d and s are the operands' items at index (idx, 0) of the plan (idx < the
        // outer sizes), so the line's n items ds / ss apart are the plan's items
        // (idx, 0..n), inside the layouts (execute's contract).
        if !unsafe { k.run(d, s, n, ds, ss) } {
            return false;
        }
        // Advance the odometer (innermost outer dim first). The pointers move with wrapping
        // arithmetic and are only dereferenced (by the kernel) at in-layout positions.
        let more = odometer_step(
            &mut idx,
            |j| outer[j],
            |j, delta| {
                d = d.wrapping_offset(delta * plan.strides[0][j]);
                s = s.wrapping_offset(delta * plan.strides[1][j]);
            },
        );
        if !more {
            return true;
        }
    }
}

/// Blocked 2-D iteration over dims (`kdim`, innermost), odometer over the rest.
///
/// # Safety
/// As [`execute`]; `kdim` is a dim of the plan other than the innermost.
unsafe fn execute_tiled(
    plan: &Plan,
    kdim: usize,
    p0: *mut u8,
    p1: *const u8,
    k: &mut dyn Kernel,
) -> bool {
    let nd = plan.sizes.len();
    let last = nd - 1;
    let (nr, nc) = (plan.sizes[kdim], plan.sizes[last]);
    let (dr, dc) = (plan.strides[0][kdim], plan.strides[0][last]);
    let (sr, sc) = (plan.strides[1][kdim], plan.strides[1][last]);
    // Tile shape: TILE x TILE, but a short side gives its room to the other one.
    let (br, bc) = if nc < TILE {
        (nr.min(TILE_ELEMS / nc), nc)
    } else if nr < TILE {
        (nr, nc.min(TILE_ELEMS / nr))
    } else {
        (TILE, TILE)
    };
    let others: SmallVec<[usize; DIMS]> = (0..last).filter(|&x| x != kdim).collect();
    let mut idx: SmallVec<[usize; DIMS]> = SmallVec::from_elem(0, others.len());
    let (mut d, mut s) = (p0, p1);
    loop {
        let mut r0 = 0;
        while r0 < nr {
            let rows = br.min(nr - r0);
            let mut c0 = 0;
            while c0 < nc {
                let cols = bc.min(nc - c0);
                let td = d.wrapping_offset(r0 as isize * dr + c0 as isize * dc);
                let ts = s.wrapping_offset(r0 as isize * sr + c0 as isize * sc);
                // SAFETY: td / ts are the operands' items at (r0, c0) of dims (kdim, last) for
                // the current odometer index of the other dims; with r0 + rows <= nr and
                // c0 + cols <= nc every item of the tile is an item of the plan, inside the
                // layouts (execute's contract).
                if !unsafe { k.tile(td, ts, rows, cols, dr, dc, sr, sc) } {
                    return false;
                }
                c0 += cols;
            }
            r0 += rows;
        }
        let more = odometer_step(
            &mut idx,
            |j| plan.sizes[others[j]],
            |j, delta| {
                let dim = others[j];
                d = d.wrapping_offset(delta * plan.strides[0][dim]);
                s = s.wrapping_offset(delta * plan.strides[1][dim]);
            },
        );
        if !more {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(sizes: &[i64], a: &[i64], b: &[i64]) -> Plan {
        Plan::new(sizes, a, 4, b, 4).unwrap()
    }

    #[test]
    fn odometer_visits_every_position_in_row_major_order() {
        let sizes = [2usize, 1, 3];
        let strides = [3isize, 3, 1];
        let mut idx = [0usize; 3];
        let (mut off, mut seen) = (0isize, vec![0isize]);
        while odometer_step(&mut idx, |j| sizes[j], |j, delta| off += delta * strides[j]) {
            let want: isize = idx
                .iter()
                .zip(&strides)
                .map(|(&i, &s)| i as isize * s)
                .sum();
            assert_eq!(off, want, "{idx:?}");
            seen.push(off);
        }
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
        assert_eq!(
            (idx, off),
            ([0, 0, 0], 0),
            "back at the start after the last position"
        );
        // No dims: one position only.
        assert!(!odometer_step(
            &mut [],
            |_| 1,
            |_, _| panic!("no dim moves")
        ));
    }

    #[test]
    fn contiguous_of_any_rank_is_one_run() {
        let p = plan(&[2, 3, 4], &[12, 4, 1], &[12, 4, 1]);
        assert_eq!(&p.sizes[..], &[24]);
        assert_eq!(&p.strides[0][..], &[4]);
        let p = plan(&[], &[], &[]);
        assert_eq!(&p.sizes[..], &[1]);
        let p = plan(&[1, 1], &[7, 9], &[0, 0]);
        assert_eq!(&p.sizes[..], &[1]);
        assert!(Plan::new(&[2, 0], &[1, 1], 4, &[1, 1], 4).is_none());
    }

    #[test]
    fn broadcast_source_merges_with_stride_zero() {
        // fill-like: src all stride 0
        let p = plan(&[5, 6], &[6, 1], &[0, 0]);
        assert_eq!(&p.sizes[..], &[30]);
        assert_eq!(&p.strides[1][..], &[0]);
        // row broadcast: [5, 6] <- [6]
        let p = plan(&[5, 6], &[6, 1], &[0, 1]);
        assert_eq!(&p.sizes[..], &[5, 6]);
    }

    #[test]
    fn nchw_to_nhwc_is_a_3d_transpose() {
        // dst channels-last [N, C, H, W] strides (C·H·W, 1, W·C, C); src contiguous.
        let (n, c, h, w) = (2i64, 3, 4, 5);
        let p = plan(
            &[n, c, h, w],
            &[c * h * w, 1, w * c, c],
            &[c * h * w, h * w, w, 1],
        );
        assert_eq!(&p.sizes[..], &[2, 20, 3]);
        assert_eq!(p.transpose_dim(4, 4), Some(1));
        // plain 2-D transpose
        let p = plan(&[4, 3], &[3, 1], &[1, 4]);
        assert_eq!(p.transpose_dim(4, 4), Some(0));
    }
}

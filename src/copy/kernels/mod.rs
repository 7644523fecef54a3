//! Layer 4 of `copy/`, the leaf kernels: typed inner loops over raw runs and tiles, and
//! the CPU checks their SIMD paths need. They import nothing above them (not the engine,
//! the write step or the ops; the crate's foundation below, `dtype` and the float8 rules,
//! they may): the engine drives them through [`Kernel`], defined here, and every choice
//! made above (streaming stores, the snapshot of an overlapping source) reaches them as an
//! argument. Inside the layer the files point one way: `casts` hands runs to `float8` and
//! `float_int`, which share `steps`; every kernel may use this file's helpers and `cpu`.
//! `src/tests/module_deps.rs` checks it.
//!
//! All element reads and writes are unaligned-tolerant (`read_unaligned` /
//! `write_unaligned`, plain moves on x86): wrapped foreign memory need not be aligned.
//!
//! Soundness: every kernel is an `unsafe fn` whose contract is [`Kernel::run`] /
//! [`Kernel::tile`]'s (or, for the YUV walk, `yuv::run`'s): each item address the call is
//! given (`d + i·ds`, `s + i·ss` for `i < n`; `d + r·dr + c·dc`, `s + r·sr + c·sc` inside
//! the tile) lies inside its operand's validated layout over a live block, operand 0 is
//! writable, and a copy's two operands do not overlap (the write step snapshots the source
//! first when they might). Each loop touches exactly those addresses, so its pointer
//! arithmetic stays inside one allocation and its reads and writes are in bounds; the loops
//! keep raw pointers (no slices, no index checks) so that they vectorise. The float ->
//! integer kernels (`float_int/`) get aligned contiguous runs as slices and are safe
//! functions. The SAFETY comments say which of those addresses a block touches and what
//! else it relies on (the CPU features of the SIMD paths, alignment of the slice paths).
//!
//! | file | kernels |
//! |---|---|
//! | `transpose.rs` | same-dtype copies: runs, fills, transposed tiles ([`CopySame`]) |
//! | `casts.rs` | converting copies ([`Convert`]) and their f16 / bf16 fast paths |
//! | `float8.rs` | float32 / bfloat16 <-> float8 runs |
//! | `float_int/` | float -> integer runs |
//! | `steps.rs` | the AVX2 loop and loads `float8` and `float_int` share |
//! | `equal.rs` | element-wise equality ([`Equal`]) |
//! | `affine.rs` | `x · scale + shift` runs ([`Affine`](affine::Affine)) |
//! | `yuv.rs` | the YUV 4:2:0 -> RGB walk |
//! | `cpu.rs` | CPU feature checks, the L3 size |

pub(crate) mod affine;
pub(crate) mod casts;
pub(crate) mod cpu;
pub(crate) mod equal;
mod float8;
mod float_int;
#[cfg(target_arch = "x86_64")]
mod steps;
pub(crate) mod transpose;
pub(crate) mod yuv;

pub(crate) use casts::Convert;
pub(crate) use equal::Equal;
pub(crate) use transpose::{copy_bytes, Bytes16, CopySame};

use std::any::TypeId;

/// A typed inner loop: what the engine calls (the op picks one per call, by dtype).
pub(crate) trait Kernel {
    /// Processes `n` elements: operand 0 at `d + i·ds`, operand 1 at `s + i·ss` (bytes).
    /// Returns false to stop the iteration early (equal found a difference).
    ///
    /// # Safety
    /// For every `i < n`, the item at `d + i·ds` lies inside operand 0's validated layout
    /// over a live block (writable when the kernel writes) and the item at `s + i·ss`
    /// inside operand 1's; for a copy, the two operands do not overlap. Items need not be
    /// aligned.
    unsafe fn run(&mut self, d: *mut u8, s: *const u8, n: usize, ds: isize, ss: isize) -> bool;

    /// Processes a `rows x cols` tile: element (r, c) is at `d + r·dr + c·dc` and
    /// `s + r·sr + c·sc`. `dc` is operand 0's contiguous direction and `sr` operand 1's.
    /// The default walks the rows with [`run`](Self::run); same-dtype copies override it
    /// with a typed transposer.
    ///
    /// # Safety
    /// As for `run`, for every item (r, c), `r < rows`, `c < cols`, of the tile.
    #[allow(clippy::too_many_arguments)]
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
        // Runs go along the longer side of the tile.
        let (outer, len, d_out, d_in, s_out, s_in) = if cols >= rows {
            (rows, cols, dr, dc, sr, sc)
        } else {
            (cols, rows, dc, dr, sc, sr)
        };
        for i in 0..outer as isize {
            // SAFETY: line i < outer starts at tile item (i, 0) (or (0, i) when walking
            // columns) and holds `len` items d_in / s_in apart: items of the tile, which
            // tile's contract makes valid.
            if !unsafe { self.run(d.offset(i * d_out), s.offset(i * s_out), len, d_in, s_in) } {
                return false;
            }
        }
        true
    }
}

/// Whether `A` is `B`: the kernels' compile-time type tests (constant-folded per
/// monomorphisation, so each picks its fast path with no run-time branch).
pub(crate) fn is<A: 'static, B: 'static>() -> bool {
    TypeId::of::<A>() == TypeId::of::<B>()
}

/// `s` as a slice of `T` when `S` is `T`, else None (constant-folded as [`is`]): how a
/// generic kernel hands its run to a kernel for one type, without pointer casts.
pub(crate) fn same<S: 'static, T: 'static>(s: &[S]) -> Option<&[T]> {
    // SAFETY: S is T (equal TypeIds): the same slice, retyped to itself.
    is::<S, T>().then(|| unsafe { &*(s as *const [S] as *const [T]) })
}

/// [`same`] for a mutable slice.
pub(crate) fn same_mut<S: 'static, T: 'static>(s: &mut [S]) -> Option<&mut [T]> {
    // SAFETY: S is T (equal TypeIds): the same slice, retyped to itself.
    is::<S, T>().then(|| unsafe { &mut *(s as *mut [S] as *mut [T]) })
}

/// Orders an op's streaming stores before whatever follows it (a flag another thread reads,
/// a free of the block): x86's `sfence`, once at the end of a write whose kernels stream
/// without fencing (the write step calls it). Nothing on other targets (their kernels store
/// normally).
#[inline]
pub(crate) fn fence_streaming_stores() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions (SSE, part of x86_64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

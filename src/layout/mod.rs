//! The geometry of a tensor: sizes and strides in one inline buffer (no heap for up to
//! [`MAX_INLINE_DIMS`] dims), and the contiguity bits PyTorch caches, computed in ONE function
//! ([`Flags::compute`]) that [`CachedFlags`] calls the first time a tensor's bits are read.
//!
//! One job per file: `buf` (the sizes-and-strides buffer), this file (the layouts: owned,
//! borrowed, and described dim by dim for the view rules to write in place), `checked`
//! (the one validation, [`CheckedLayout`]), `flags` (the cached contiguity bits and the
//! density tests).

mod buf;
mod checked;
mod flags;

pub use checked::{CheckedLayout, Strides};
pub use flags::{non_overlapping, CachedFlags, Flags};

use crate::error::{Error, Result, Status};
use crate::shape::{fmt_dims, MAX_INLINE_DIMS};
use buf::{Buf, BufData, INLINE};
use std::mem::MaybeUninit;

/// A strided layout as a TensorImpl stores it: sizes followed by strides in one buffer,
/// `[n0 .. nD-1, st0 .. stD-1]`, inline up to [`MAX_INLINE_DIMS`] dims (c10's
/// `SizesAndStrides`), and the storage offset. The view rules build this value and the
/// TensorImpl takes it by move: one buffer from the rule to the tensor, no copy between.
///
/// Invariant: the buffer has even length (as many strides as sizes). Validity is not a
/// property of this type but of [`CheckedLayout`], whose constructors are the one
/// validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    dims: Buf,
    /// Storage offset, in elements.
    pub offset: i64,
}

/// A borrowed layout: what the view rules read (a tensor's, via [`Layout::as_ref`], or
/// any pair of equal-length slices in tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutRef<'a> {
    pub sizes: &'a [i64],
    pub strides: &'a [i64],
    pub offset: i64,
}

impl<'a> LayoutRef<'a> {
    #[inline]
    pub fn new(sizes: &'a [i64], strides: &'a [i64], offset: i64) -> Self {
        debug_assert_eq!(sizes.len(), strides.len());
        LayoutRef {
            sizes,
            strides,
            offset,
        }
    }
}

impl LayoutRef<'_> {
    /// The storage-bounds check of every layout, with c10's `setStorage` message: `needed`
    /// bytes (this layout's extent at `itemsize`, from `shape::validate_layout` or
    /// `shape::storage_nbytes_needed`) within a storage of `storage_nbytes` bytes.
    #[inline]
    pub fn check_fits(self, itemsize: usize, needed: i64, storage_nbytes: usize) -> Result<()> {
        if needed as u64 <= storage_nbytes as u64 {
            return Ok(());
        }
        Err(self.out_of_bounds(itemsize, needed, storage_nbytes))
    }

    // Out of line and cold: the hot path does not materialise the layout for the message.
    #[cold]
    #[inline(never)]
    fn out_of_bounds(self, itemsize: usize, needed: i64, storage_nbytes: usize) -> Error {
        Error::from_fmt(
            Status::OutOfBounds,
            format_args!(
                "setStorage: sizes {}, strides {}, storage offset {}, and itemsize {itemsize} requiring a storage size of {needed} are out of bounds for storage of size {storage_nbytes}",
                fmt_dims(self.sizes),
                fmt_dims(self.strides),
                self.offset
            ),
        )
    }
}

impl Layout {
    /// A copy of `sizes` and `strides` (equal lengths). Fails only when the heap block for
    /// more than [`MAX_INLINE_DIMS`] dims cannot be allocated.
    // Always inlined: its callers (the view rules, CheckedLayout::new) then build the layout in
    // place instead of returning it through memory and copying it (measured by
    // benches/c/count.sh: about 60 instructions per view otherwise).
    #[inline(always)]
    pub fn new(sizes: &[i64], strides: &[i64], offset: i64) -> Result<Self> {
        debug_assert_eq!(sizes.len(), strides.len());
        let strides = &strides[..sizes.len()];
        Self::from_fn(sizes.len(), offset, |i| (sizes[i], strides[i]))
    }

    /// `nd` dims, dim `i` being `dim(i)` = (size, stride), each item written once. The
    /// view rules that change a few dims (transpose, slice) build their layout with it
    /// rather than copying the input's and patching it: loading back an item just stored
    /// at an index the CPU learns late (the swapped or sliced dim) stalled every such view
    /// (bench_views: transpose 56-59 -> 42-44 ns, for 8 more instructions). Fails only
    /// when the heap block for more than [`MAX_INLINE_DIMS`] dims cannot be allocated.
    // Always inlined, as `new`.
    #[inline(always)]
    pub fn from_fn(nd: usize, offset: i64, dim: impl DimSource) -> Result<Self> {
        let mut g = MaybeUninit::<Layout>::uninit();
        // SAFETY: a place for a Layout, ours, holding nothing; `Ok` means it was written
        // whole (write_from_fn's contract).
        unsafe {
            Self::write_from_fn(g.as_mut_ptr(), nd, offset, dim)?;
            Ok(g.assume_init())
        }
    }

    /// [`from_fn`](Self::from_fn) written at `dst` (a new TensorImpl's layout field:
    /// `TensorImpl::make_view_lazy`), field by field: on `Ok` a valid `Layout` is there (its
    /// owner drops it); on `Err` (out of memory) nothing was allocated and `dst` holds
    /// nothing to drop.
    ///
    /// # Safety
    /// `dst` is valid for writes of a `Layout` and holds no value that needs dropping.
    #[inline(always)]
    pub unsafe fn write_from_fn(
        dst: *mut Layout,
        nd: usize,
        offset: i64,
        mut dim: impl DimSource,
    ) -> Result<()> {
        // SAFETY: (the whole body) places inside *dst, writable (the contract), each
        // written once; the Buf's `len` matches the union field written (inline up to
        // INLINE items, else the heap block).
        unsafe {
            let len = std::ptr::addr_of_mut!((*dst).dims.len);
            let data = std::ptr::addr_of_mut!((*dst).dims.data);
            if nd <= MAX_INLINE_DIMS {
                // Item by item up to a fixed bound into the unzeroed buffer: no 80-byte
                // memset and no memcpy calls per view, and every item is one 8-byte store
                // that the rule's (and the validation's) 8-byte loads forward from
                // (benches/c/count.sh: 20 to 45 fewer instructions per view than
                // copy_from_slice into a zeroed buffer).
                let p = std::ptr::addr_of_mut!((*data).inline) as *mut i64;
                for i in 0..MAX_INLINE_DIMS {
                    if i < nd {
                        let (size, stride) = dim.dim(i);
                        // i < nd <= MAX_INLINE_DIMS: items i and nd + i lie in the
                        // buffer of INLINE items.
                        p.add(i).write(size);
                        p.add(nd + i).write(stride);
                    }
                }
            } else {
                // The heap block: every item written once (no zero-fill first).
                let heap = Buf::alloc_heap(2 * nd)?;
                // 2·nd items writable at the block (DimSource::fill_heap's contract).
                dim.fill_heap(heap.as_ptr(), nd);
                std::ptr::addr_of_mut!((*data).heap).write(heap);
            }
            // Items 0..2·nd are written.
            len.write(2 * nd);
            std::ptr::addr_of_mut!((*dst).offset).write(offset);
            Ok(())
        }
    }

    /// `nd` dims, all sizes and strides 0, to be filled through [`dims_mut`](Self::dims_mut).
    // Always inlined, as `new`.
    #[inline(always)]
    pub fn zeros(nd: usize, offset: i64) -> Result<Self> {
        if nd <= MAX_INLINE_DIMS {
            let dims = Buf {
                len: 2 * nd,
                data: BufData {
                    inline: MaybeUninit::new([0; INLINE]),
                },
            };
            return Ok(Layout { dims, offset });
        }
        let heap = Buf::alloc_heap(2 * nd)?;
        // SAFETY: the 2·nd items of the block just allocated.
        unsafe { std::ptr::write_bytes(heap.as_ptr(), 0, 2 * nd) };
        let dims = Buf {
            len: 2 * nd,
            data: BufData { heap },
        };
        Ok(Layout { dims, offset })
    }

    // Each accessor derefs the buffer once (`as_slice`: one inline-or-heap test) and
    // splits the result: these run several times per view.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.dims.len() / 2
    }
    #[inline]
    pub fn sizes(&self) -> &[i64] {
        self.as_ref().sizes
    }
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.as_ref().strides
    }
    /// (sizes, strides), mutable.
    #[inline]
    pub fn dims_mut(&mut self) -> (&mut [i64], &mut [i64]) {
        let all = self.dims.as_mut_slice();
        let nd = all.len() / 2;
        all.split_at_mut(nd)
    }
    #[inline]
    pub fn as_ref(&self) -> LayoutRef<'_> {
        let all = self.dims.as_slice();
        let (sizes, strides) = all.split_at(all.len() / 2);
        LayoutRef {
            sizes,
            strides,
            offset: self.offset,
        }
    }
    /// Heap-allocated (more than [`MAX_INLINE_DIMS`] dims)?
    #[cfg(test)]
    pub(crate) fn spilled(&self) -> bool {
        self.dims.spilled()
    }
}

/// What describes a layout dim by dim ([`Layout::from_fn`], [`LazyLayout`]): dim `i` as
/// (size, stride). Any `FnMut(usize) -> (i64, i64)` is one; a rule may also write a heap
/// block (past [`MAX_INLINE_DIMS`] dims) its own, faster way (transpose: a copy of the
/// input's block and two swapped dims, about 17 instructions per dim instead of 33).
pub trait DimSource {
    /// Dim `i` (< the layout's `nd`) as (size, stride).
    fn dim(&mut self, i: usize) -> (i64, i64);

    /// Writes the `2·nd` items of a heap block: sizes to `0..nd`, strides to `nd..2·nd`;
    /// by default one [`dim`](Self::dim) call per dim.
    ///
    /// # Safety
    /// `2·nd` items are writable at `p`; `nd` is the layout's.
    #[inline(always)]
    unsafe fn fill_heap(&mut self, p: *mut i64, nd: usize) {
        for i in 0..nd {
            let (size, stride) = self.dim(i);
            // SAFETY: i < nd: items i and nd + i lie in the 2·nd items (the contract).
            unsafe {
                p.add(i).write(size);
                p.add(nd + i).write(stride);
            }
        }
    }
}

impl<F: FnMut(usize) -> (i64, i64)> DimSource for F {
    #[inline(always)]
    fn dim(&mut self, i: usize) -> (i64, i64) {
        self(i)
    }
}

/// A layout described dim by dim and not written yet: `nd` dims, dim `i` being `dim(i)` =
/// (size, stride), at `offset` (the rule checked its arguments; the layout itself is
/// checked where it is written). What the view rules that pick each dim of the input
/// return (transpose, slice, select): `TensorImpl::make_view_lazy` writes it straight into
/// the new TensorImpl, once, where [`Layout::from_fn`] then a move would copy it through
/// the stack (16-byte copies of 8-byte stores, which the CPU cannot forward: a stall each).
pub struct LazyLayout<F> {
    pub nd: usize,
    pub offset: i64,
    pub dim: F,
}

impl<F> std::fmt::Debug for LazyLayout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyLayout")
            .field("nd", &self.nd)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl<F: DimSource> LazyLayout<F> {
    /// The layout as a value ([`Layout::from_fn`]; the rules' unit tests read it so).
    #[cfg(test)]
    pub fn build(self) -> Result<Layout> {
        Layout::from_fn(self.nd, self.offset, self.dim)
    }
}

/// A layout filled through its sizes and strides: `nd` dims at `offset`, all 0 until
/// `fill(sizes, strides)` writes them, `Ok(false)` when the rule finds that no layout
/// expresses the request (view: the strides cannot). What the view rules that compute
/// their dims in a pass over the output (view, expand) return: `TensorImpl::make_view_filled`
/// fills it straight in the new TensorImpl, as `LazyLayout`.
pub struct FilledLayout<F> {
    pub nd: usize,
    pub offset: i64,
    pub fill: F,
}

/// What fills a [`FilledLayout`]: `(sizes, strides)`, zeroed, to `Ok(found)`.
pub trait Fill: FnOnce(&mut [i64], &mut [i64]) -> Result<bool> {}
impl<F: FnOnce(&mut [i64], &mut [i64]) -> Result<bool>> Fill for F {}

impl<F> std::fmt::Debug for FilledLayout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilledLayout")
            .field("nd", &self.nd)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl<F: Fill> FilledLayout<F> {
    /// The layout as a value (`None`: `fill` found none).
    #[inline(always)]
    pub fn build(self) -> Result<Option<Layout>> {
        let mut g = Layout::zeros(self.nd, self.offset)?;
        let (sizes, strides) = g.dims_mut();
        Ok((self.fill)(sizes, strides)?.then_some(g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_storage() {
        let s = Layout::new(&[2, 3], &[3, 1], 7).unwrap();
        assert_eq!(s.ndim(), 2);
        assert_eq!(s.sizes(), &[2, 3]);
        assert_eq!(s.strides(), &[3, 1]);
        assert_eq!(s.as_ref(), LayoutRef::new(&[2, 3], &[3, 1], 7));
        assert!(!s.spilled());
        let inline = [1; MAX_INLINE_DIMS];
        assert!(!Layout::new(&inline, &inline, 0).unwrap().spilled());
        assert!(!Layout::zeros(MAX_INLINE_DIMS, 0).unwrap().spilled());
        let big = [1; MAX_INLINE_DIMS + 1];
        let l = Layout::new(&big, &big, 0).unwrap();
        assert!(l.spilled());
        assert_eq!((l.sizes(), l.strides()), (&big[..], &big[..]));
        let mut z = Layout::zeros(MAX_INLINE_DIMS + 1, 3).unwrap();
        assert!(z.spilled());
        z.dims_mut().1[0] = 5;
        assert_eq!(
            (z.sizes(), z.strides()[0], z.offset),
            (&[0; MAX_INLINE_DIMS + 1][..], 5, 3)
        );
    }
}

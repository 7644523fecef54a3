//! The geometry of a tensor: sizes and strides in one inline buffer (no heap for up to
//! [`MAX_INLINE_DIMS`] dims), and the contiguity bits PyTorch caches, computed in ONE function
//! ([`Flags::compute`]) that [`CachedFlags`] calls the first time a tensor's bits are read.

use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::refcount::BoxAlloc;
use crate::shape::{
    self, fmt_dims, Dims, CHANNELS_LAST_3D_ORDER, CHANNELS_LAST_ORDER, MAX_DIMS, MAX_INLINE_DIMS,
};
use smallvec::SmallVec;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

/// Items of the inline buffer: sizes then strides of up to [`MAX_INLINE_DIMS`] dims.
const INLINE: usize = 2 * MAX_INLINE_DIMS;
/// Layouts of up to this many dims (past [`MAX_INLINE_DIMS`]) share one heap block size,
/// so that their blocks are kept and reused per thread (`allocator::DimsBoxes`); more dims
/// take a block of their exact size from the global allocator.
const CACHED_BLOCK_DIMS: usize = 8;

/// Sizes then strides, `len` items: inline up to [`MAX_INLINE_DIMS`] dims, else one heap
/// block owned by this value (what `SmallVec` did, with the block's allocation in our
/// hands: items written once, never zero-filled first, and the block of a 6- to 8-dim
/// layout reused per thread instead of a glibc `malloc`/`free` per view).
struct Buf {
    /// Items: `2·ndim`. Inline when `len <= INLINE`.
    len: usize,
    data: BufData,
}

union BufData {
    inline: MaybeUninit<[i64; INLINE]>,
    heap: std::ptr::NonNull<i64>,
}

// SAFETY: a Buf owns its items (inline or its heap block) like a Vec<i64>; nothing is
// shared between values.
unsafe impl Send for Buf {}
// SAFETY: as above; `&Buf` only reads.
unsafe impl Sync for Buf {}

impl Buf {
    /// The heap block's layout for `len > INLINE` items.
    #[inline]
    fn heap_layout(len: usize) -> std::alloc::Layout {
        let items = if len <= 2 * CACHED_BLOCK_DIMS {
            2 * CACHED_BLOCK_DIMS
        } else {
            len
        };
        // len <= 2·MAX_DIMS items (CheckedLayout refuses more, and the view rules add at
        // most one dim to a checked layout): never overflows.
        std::alloc::Layout::array::<i64>(items).expect("dims block layout")
    }

    /// `len` uninitialised items: the caller writes every one of them before reading.
    #[inline(always)]
    fn uninit(len: usize) -> Result<Self> {
        if len <= INLINE {
            return Ok(Buf {
                len,
                data: BufData {
                    inline: MaybeUninit::uninit(),
                },
            });
        }
        Self::uninit_heap(len)
    }

    /// A heap block for `len > INLINE` items (uninitialised).
    // Inlined: out of line it cost 10 instructions per 6- to 8-dim view
    // (benches/c/count.sh); the views of fewer dims do not reach it.
    #[inline(always)]
    fn alloc_heap(len: usize) -> Result<std::ptr::NonNull<i64>> {
        let layout = Self::heap_layout(len);
        // SAFETY: a non-zero size (len > INLINE).
        let p = unsafe {
            if len <= 2 * CACHED_BLOCK_DIMS {
                <crate::allocator::DimsBoxes as BoxAlloc>::alloc(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        std::ptr::NonNull::new(p as *mut i64).ok_or_else(layout_oom)
    }

    /// `len > INLINE` uninitialised items in a heap block (the caller writes them all).
    #[inline(always)]
    fn uninit_heap(len: usize) -> Result<Self> {
        let heap = Self::alloc_heap(len)?;
        Ok(Buf {
            len,
            data: BufData { heap },
        })
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut i64 {
        if self.len <= INLINE {
            // SAFETY: inline (len <= INLINE): the `inline` field is the live one.
            unsafe { self.data.inline.as_mut_ptr() as *mut i64 }
        } else {
            // SAFETY: spilled: the `heap` field is the live one.
            unsafe { self.data.heap.as_ptr() }
        }
    }

    #[inline(always)]
    fn as_slice(&self) -> &[i64] {
        let p = if self.len <= INLINE {
            // SAFETY: inline: the `inline` field is the live one.
            unsafe { self.data.inline.as_ptr() as *const i64 }
        } else {
            // SAFETY: spilled: the `heap` field is the live one.
            unsafe { self.data.heap.as_ptr() as *const i64 }
        };
        // SAFETY: every constructor leaves items 0..len written (`uninit`'s contract).
        unsafe { std::slice::from_raw_parts(p, self.len) }
    }

    #[inline(always)]
    fn as_mut_slice(&mut self) -> &mut [i64] {
        let len = self.len;
        // SAFETY: as as_slice; `&mut self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), len) }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    fn spilled(&self) -> bool {
        self.len > INLINE
    }
}

impl Drop for Buf {
    #[inline]
    fn drop(&mut self) {
        if self.len > INLINE {
            // SAFETY: spilled: `heap` is the live field, a block from `alloc_heap(len)`,
            // given up here. (The block and length by value: the Buf's own address does
            // not escape, which would keep every move of a layout in memory.)
            unsafe { Self::free_heap(self.data.heap, self.len) };
        }
    }
}

impl Buf {
    /// # Safety
    /// `heap` came from `alloc_heap(len)` and the caller gives it up.
    #[inline(never)]
    unsafe fn free_heap(heap: std::ptr::NonNull<i64>, len: usize) {
        let layout = Self::heap_layout(len);
        let p = heap.as_ptr() as *mut u8;
        // SAFETY: the same choice of allocator by len as alloc_heap (the contract).
        unsafe {
            if len <= 2 * CACHED_BLOCK_DIMS {
                <crate::allocator::DimsBoxes as BoxAlloc>::free(p, layout)
            } else {
                std::alloc::dealloc(p, layout)
            }
        }
    }

    /// Fallible clone (the allocation of a spilled copy may fail). An inline buffer is
    /// copied whole, as one fixed-size move (its unwritten items too, as `MaybeUninit`):
    /// no call and no length-dependent copy (a `memcpy` call, about 50 instructions per
    /// small clone).
    #[inline(always)]
    fn try_clone(&self) -> Result<Self> {
        if self.len <= INLINE {
            return Ok(Buf {
                len: self.len,
                data: BufData {
                    // SAFETY: inline (len <= INLINE): the `inline` field is the live one; a
                    // `MaybeUninit` array is copied as it is, written items or not.
                    inline: unsafe { self.data.inline },
                },
            });
        }
        self.try_clone_heap()
    }

    /// [`try_clone`](Self::try_clone) of a spilled buffer.
    #[inline(never)]
    fn try_clone_heap(&self) -> Result<Self> {
        let mut b = Buf::uninit(self.len)?;
        let src = self.as_slice();
        // SAFETY: b has room for src.len() = len items (uninit's contract), written here
        // through a raw pointer (no reference to the unwritten items), from another value.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), b.as_mut_ptr(), src.len()) };
        Ok(b)
    }
}

impl Clone for Buf {
    fn clone(&self) -> Self {
        self.try_clone()
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(Self::heap_layout(self.len)))
    }
}

impl PartialEq for Buf {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for Buf {}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

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

#[cold]
#[inline(never)]
fn layout_oom() -> Error {
    Error::new(Status::OutOfMemory, "failed to allocate sizes and strides")
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

/// The strides a caller gives with its sizes: none (row-major), in elements, or in bytes
/// (OpenCV's `step`, FFmpeg's `linesize`, NumPy's `__array_interface__`: each a multiple of
/// the item size).
#[derive(Clone, Copy, Debug)]
pub enum Strides<'a> {
    Contiguous,
    Elements(&'a [i64]),
    Bytes(&'a [i64]),
}

impl<'a> Strides<'a> {
    /// `None` (a NULL strides pointer from C): contiguous; else in elements.
    pub fn elements_or_contiguous(strides: Option<&'a [i64]>) -> Self {
        strides.map_or(Strides::Contiguous, Strides::Elements)
    }
}

/// A layout that passed the one validation for a dtype: at most `MAX_DIMS` dims, as many
/// strides as sizes, sizes, strides and offset >= 0, numel and the byte extent free of
/// int64 overflow. Its fields are private and its only constructors are [`new`](Self::new)
/// and [`check`](Self::check), so a value of this type proves all that; what is left to
/// check against a storage is the one comparison `nbytes() <= storage.nbytes()`, which
/// `Tensor::new` makes (a storage made for the layout has exactly `nbytes()` bytes).
pub struct CheckedLayout {
    layout: Layout,
    /// The product of the sizes.
    numel: i64,
    /// Bytes of storage the layout reaches at `dtype`'s item size (0 without elements).
    nbytes: i64,
    dtype: DType,
}

impl CheckedLayout {
    /// Validates a layout given as slices (by C, a wrap, a test): see
    /// [`new_then`](Self::new_then).
    pub fn new(sizes: &[i64], strides: Strides, offset: i64, dtype: DType) -> Result<Self> {
        Self::new_then(sizes, strides, offset, dtype, Ok)
    }

    /// Validates a layout given as slices: the sizes first (number of dims, signs), then the
    /// strides as given (`Contiguous`: row-major; `Bytes`: each a multiple of the item
    /// size, converted to elements, checked before the sizes), then
    /// [`check`](Self::check)'s one pass; builds the [`Layout`] it proves and hands the
    /// result to `then`.
    // The continuation: returned in a Result, the checked layout is copied once more on its
    // way into the TensorImpl (benches/c/count.sh: from_storage 656 -> 719 instructions,
    // from_blob 766 -> 793). The view rules' `check` returns a Result: there a continuation
    // measured worse (a closure shared by the view methods is compiled out of line).
    #[inline(always)]
    pub fn new_then<T>(
        sizes: &[i64],
        strides: Strides,
        offset: i64,
        dtype: DType,
        then: impl FnOnce(CheckedLayout) -> Result<T>,
    ) -> Result<T> {
        let owned: Dims;
        let strides: &[i64] = match strides {
            Strides::Contiguous => {
                shape::check_sizes(sizes)?;
                owned = shape::contiguous_strides(sizes)?;
                &owned
            }
            Strides::Elements(st) => {
                shape::check_sizes(sizes)?;
                st
            }
            Strides::Bytes(b) => {
                owned = elements_from_bytes(b, dtype)?;
                shape::check_sizes(sizes)?;
                &owned
            }
        };
        let (numel, nbytes) = shape::validate_layout(sizes, strides, offset, dtype.itemsize())?;
        then(CheckedLayout {
            layout: Layout::new(sizes, strides, offset)?,
            numel,
            nbytes,
            dtype,
        })
    }

    /// Validates `layout` (a view rule's output) for `dtype`: [`shape::validate_layout`],
    /// one pass over the dims.
    // Inlining: check, Tensor::new and the TensorImpl view constructors are
    // #[inline(always)] so that each view method is one function in which the layout its
    // rule wrote is read in place and moved once into the TensorImpl; out of line, it is
    // passed and copied through memory (benches/c/count.sh: 40 to 90 more instructions per
    // view with #[inline]).
    #[inline(always)]
    pub fn check(layout: Layout, dtype: DType) -> Result<Self> {
        let (numel, nbytes) = Self::validate(&layout, dtype)?;
        Ok(CheckedLayout {
            layout,
            numel,
            nbytes,
            dtype,
        })
    }

    /// The one validation of a layout for `dtype` ([`shape::validate_layout`]): its numel
    /// and the bytes of storage it reaches. What [`check`](Self::check) proves, and what a
    /// layout written in place (`TensorImpl::make_view_lazy`) is checked by where it lies.
    #[inline(always)]
    pub fn validate(layout: &Layout, dtype: DType) -> Result<(i64, i64)> {
        let l = layout.as_ref();
        shape::validate_layout(l.sizes, l.strides, l.offset, dtype.itemsize())
    }

    /// The storage-bounds check: the bytes the layout reaches within `storage_nbytes`
    /// ([`LayoutRef::check_fits`]'s message on failure).
    #[inline(always)]
    pub fn check_fits(&self, storage_nbytes: usize) -> Result<()> {
        if self.nbytes as u64 <= storage_nbytes as u64 {
            return Ok(());
        }
        Err(self.out_of_bounds(storage_nbytes))
    }

    // Out of line and cold, as LayoutRef's: the hot path does not materialise the
    // borrowed layout for the message (count.sh: 14 instructions per view).
    #[cold]
    #[inline(never)]
    fn out_of_bounds(&self, storage_nbytes: usize) -> Error {
        let itemsize = self.dtype.itemsize();
        (self.layout.as_ref()).out_of_bounds(itemsize, self.nbytes, storage_nbytes)
    }

    #[inline]
    pub fn numel(&self) -> i64 {
        self.numel
    }
    /// Bytes of storage the layout reaches (a wrap's storage size).
    #[inline]
    pub fn nbytes(&self) -> usize {
        // validate_layout checked it non-negative and within i64.
        self.nbytes as usize
    }
    /// A tensor's own layout moved to offset 0, for a new tensor with its dtype: valid
    /// without checking again when `layout` (of `numel` elements at `dtype`) is
    /// non-overlapping and dense, since then it reaches exactly `numel` items from offset 0
    /// (and the tensor's extent already fit in i64). `None` when it does not qualify or
    /// the copy cannot be allocated (callers then take the checking path).
    #[inline(always)] // into the clone's `empty_dense_like`, which writes it in place
    pub fn dense_at_zero(layout: &Layout, numel: i64, dtype: DType, dense: bool) -> Option<Self> {
        if !dense {
            return None;
        }
        let nbytes = numel.checked_mul(dtype.itemsize() as i64)?;
        Some(CheckedLayout {
            layout: Layout {
                dims: layout.dims.try_clone().ok()?,
                offset: 0,
            },
            numel,
            nbytes,
            dtype,
        })
    }

    /// The layout, its numel and dtype, for the TensorImpl that takes them.
    #[inline(always)]
    pub fn into_parts(self) -> (Layout, i64, DType) {
        (self.layout, self.numel, self.dtype)
    }
}

/// Byte strides as element strides: each must be a multiple of `dtype`'s item size.
fn elements_from_bytes(byte_strides: &[i64], dtype: DType) -> Result<Dims> {
    let isz = dtype.itemsize() as i64;
    if let Some((d, &st)) = byte_strides
        .iter()
        .enumerate()
        .find(|(_, &st)| st % isz != 0)
    {
        bail!(
            InvalidArgument,
            "byte stride {st} of dim {d} is not a multiple of the item size {isz} of {} (byte strides {})",
            dtype.name().trim_end_matches('\0'),
            fmt_dims(byte_strides)
        );
    }
    // Fallible beyond MAX_INLINE_DIMS, like every other dims list (no abort on OOM).
    let mut st = shape::dims_from_slice(byte_strides)?;
    st.iter_mut().for_each(|s| *s /= isz);
    Ok(st)
}

/// Cached layout bits (c10's `is_contiguous_`, `is_channels_last_contiguous_`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags(u8);

impl Flags {
    pub const CONTIGUOUS: u8 = 1;
    pub const CHANNELS_LAST_CONTIGUOUS: u8 = 2;
    pub const CHANNELS_LAST_3D_CONTIGUOUS: u8 = 4;
    pub const CHANNELS_LAST_STRIDES: u8 = 8;
    pub const CHANNELS_LAST_3D_STRIDES: u8 = 16;
    pub const NON_OVERLAPPING_AND_DENSE: u8 = 32;
    const ALL: u8 = Self::CONTIGUOUS
        | Self::CHANNELS_LAST_CONTIGUOUS
        | Self::CHANNELS_LAST_3D_CONTIGUOUS
        | Self::CHANNELS_LAST_STRIDES
        | Self::CHANNELS_LAST_3D_STRIDES
        | Self::NON_OVERLAPPING_AND_DENSE;

    #[inline]
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The refresh: the combination rules of c10's `TensorImpl::_refresh_contiguous`
    /// (called through [`CachedFlags`]; the tests call it directly).
    #[inline]
    pub fn compute(sizes: &[i64], strides: &[i64], numel: i64) -> Flags {
        let contiguous = is_contiguous(sizes, strides, numel);
        let mut f = contiguous as u8 * Self::CONTIGUOUS;
        let mut dense_by_format = contiguous;
        if let (Ok(n), Ok(st)) = (<&[i64; 4]>::try_from(sizes), <&[i64; 4]>::try_from(strides)) {
            let cl = is_contiguous_in_order(n, st, &CHANNELS_LAST_ORDER);
            f |= cl as u8 * Self::CHANNELS_LAST_CONTIGUOUS;
            f |=
                strides_like_order(n, st, &CHANNELS_LAST_ORDER) as u8 * Self::CHANNELS_LAST_STRIDES;
            dense_by_format |= cl;
        } else if let (Ok(n), Ok(st)) =
            (<&[i64; 5]>::try_from(sizes), <&[i64; 5]>::try_from(strides))
        {
            // c10: for 5 dims the 2d bits are false and is_channels_last_3d_ is the plain
            // strides-like test.
            let cl3 = is_contiguous_in_order(n, st, &CHANNELS_LAST_3D_ORDER);
            f |= cl3 as u8 * Self::CHANNELS_LAST_3D_CONTIGUOUS;
            f |= strides_like_order(n, st, &CHANNELS_LAST_3D_ORDER) as u8
                * Self::CHANNELS_LAST_3D_STRIDES;
            dense_by_format |= cl3;
        }
        if dense_by_format || non_overlapping_and_dense(sizes, strides) {
            f |= Self::NON_OVERLAPPING_AND_DENSE;
        }
        Flags(f)
    }
}

/// The [`Flags`] of one immutable layout, computed by [`Flags::compute`] the first time
/// they are read, then kept. c10 refreshes its bits whenever a TensorImpl's sizes change;
/// our layouts never change after construction, so the refresh can wait for the first
/// question. A tensor that is asked pays once, as before; one that is never asked (a view
/// only indexed, or passed on and released) never pays (benches/c/count.sh: 100 to 160
/// instructions per view, a fifth of a transpose).
///
/// Threads may race to fill it: each computes the same bits from the same immutable
/// layout and stores the same byte, so `Relaxed` is enough (the byte publishes nothing
/// else).
pub struct CachedFlags(AtomicU8);

impl CachedFlags {
    /// Set once the other bits hold the computed flags.
    const KNOWN: u8 = 0x80;

    /// Not computed yet.
    #[inline]
    pub const fn new() -> Self {
        CachedFlags(AtomicU8::new(0))
    }

    /// The flags of `layout` with `numel` elements (the layout this cache belongs to).
    #[inline]
    pub fn get(&self, layout: LayoutRef, numel: i64) -> Flags {
        let f = self.0.load(Ordering::Relaxed);
        if f & Self::KNOWN != 0 {
            return Flags(f & !Self::KNOWN);
        }
        self.fill(layout, numel)
    }

    /// The flags if they have been computed already (nothing is computed here).
    #[inline]
    pub fn known(&self) -> Option<Flags> {
        let f = self.0.load(Ordering::Relaxed);
        (f & Self::KNOWN != 0).then_some(Flags(f & !Self::KNOWN))
    }

    // Out of line: one copy of the refresh, run once per tensor that is asked.
    #[inline(never)]
    fn fill(&self, layout: LayoutRef, numel: i64) -> Flags {
        let f = Flags::compute(layout.sizes, layout.strides, numel);
        const { assert!(Flags::ALL & CachedFlags::KNOWN == 0) };
        self.0.store(f.0 | Self::KNOWN, Ordering::Relaxed);
        f
    }
}

/// Row-major contiguity; size-1 dims are skipped, numel 0 is contiguous.
#[inline]
pub fn is_contiguous(sizes: &[i64], strides: &[i64], numel: i64) -> bool {
    if numel == 0 {
        return true;
    }
    let mut expected = 1i64;
    for (&n, &s) in sizes.iter().zip(strides).rev() {
        if n != 1 {
            if s != expected {
                return false;
            }
            expected = expected.wrapping_mul(n);
        }
    }
    true
}

/// Dense in the given innermost-first order; size-1 dims skipped, no numel shortcut.
#[inline]
fn is_contiguous_in_order<const D: usize>(n: &[i64; D], st: &[i64; D], order: &[usize; D]) -> bool {
    let mut expected = 1i64;
    for &d in order {
        if n[d] != 1 {
            if st[d] != expected {
                return false;
            }
            expected = expected.wrapping_mul(n[d]);
        }
    }
    true
}

/// c10's `is_channels_last_strides_2d_s4` / `_3d_s5` walk: are the strides ordered like
/// the memory format (used by `suggest_memory_format`)?
#[inline]
fn strides_like_order<const D: usize>(n: &[i64; D], st: &[i64; D], order: &[usize; D]) -> bool {
    if st[1] == 0 {
        return false;
    }
    let mut min = 0i64;
    for &d in order {
        if n[d] == 0 || st[d] < min {
            return false;
        }
        // Ambiguous NC11 / N1HW-like cases: dim 0 must not tie with the channel stride.
        if d == 0 && min == st[1] {
            return false;
        }
        min = st[d].wrapping_mul(n[d].max(1));
    }
    true
}

/// Sorting networks (compare-exchanges of slots `a < b`) for 2..=5 keys (ranks up to
/// NCDHW; more dims take the bit-mask walk of `non_overlapping_and_dense`): sorting by a
/// fixed sequence of branch-free compare-exchanges is cheaper than any data-dependent
/// sort at these lengths. Checked exhaustively on 0/1 inputs by the tests.
const NETWORK_2: [(usize, usize); 1] = [(0, 1)];
const NETWORK_3: [(usize, usize); 3] = [(0, 2), (0, 1), (1, 2)];
const NETWORK_4: [(usize, usize); 5] = [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)];
const NETWORK_5: [(usize, usize); 9] = [
    (0, 3),
    (1, 4),
    (0, 2),
    (1, 3),
    (0, 1),
    (2, 4),
    (1, 2),
    (3, 4),
    (2, 3),
];

/// c10's formulation for `D` <= 5 dims: sort the (stride, size) pairs of the dims with a
/// sorting network, then walk. A dim of size < 2 gets the key `u64::MAX`, above every
/// stride, so those dims sort last and end the walk. Equal strides may land in either
/// order: the walk fails on them either way (the requirement grows past a repeated
/// stride), unless it has saturated at i64::MAX, when every remaining stride must equal it.
// Always inlined: one copy per D, with the network's (a, b) pairs as constants (the
// compare-exchanges then compile to branch-free selects on registers).
#[inline(always)]
fn dense_by_network<const D: usize>(
    sizes: &[i64; D],
    strides: &[i64; D],
    network: &[(usize, usize)],
) -> bool {
    let mut key = [0u64; D];
    let mut negative = 0i64;
    for i in 0..D {
        let counted = sizes[i] >= 2;
        // A negative stride of a counted dim never equals the (positive) requirement.
        negative |= if counted { strides[i] } else { 0 };
        key[i] = if counted { strides[i] as u64 } else { u64::MAX };
    }
    if negative < 0 {
        return false;
    }
    let mut n = *sizes;
    for &(a, b) in network {
        let (ka, kb, na, nb) = (key[a], key[b], n[a], n[b]);
        let swap = ka > kb;
        key[a] = if swap { kb } else { ka };
        key[b] = if swap { ka } else { kb };
        n[a] = if swap { nb } else { na };
        n[b] = if swap { na } else { nb };
    }
    let mut req = 1i64;
    for (&k, &size) in key.iter().zip(&n) {
        if k == u64::MAX {
            break;
        }
        if k != req as u64 {
            return false;
        }
        req = req.saturating_mul(size);
    }
    true
}

/// Provably no two elements at one offset (a sufficient test, not an exact one): with the
/// dims of size >= 2 sorted by stride, each stride exceeds the farthest offset the smaller
/// ones reach (`Σ stride·(size-1)`), so the dims nest. True for every layout made from a
/// non-overlapping one by slicing, permuting and striding, and for layouts without
/// elements; false for every layout with a stride-0 dim of size >= 2, every other
/// self-overlapping one, and a few exotic non-overlapping ones (sizes {3, 2}, strides
/// {2, 3}). Strides are those of a validated layout (>= 0, extent within i64).
pub fn non_overlapping(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut dims: SmallVec<[(i64, i64); MAX_INLINE_DIMS]> = sizes
        .iter()
        .zip(strides)
        .filter(|&(&n, _)| n >= 2)
        .map(|(&n, &st)| (st, n))
        .collect();
    dims.sort_unstable();
    let mut reach = 0i64;
    for (st, n) in dims {
        if st <= reach {
            return false;
        }
        // A validated layout's extent fits in i64; saturating keeps the answer safe anyway.
        reach = reach.saturating_add(st.saturating_mul(n - 1));
    }
    true
}

/// Every element at a distinct offset, and together filling a dense block, in some dim
/// order: c10's rule — dims of size < 2 are ignored; the others, by increasing stride,
/// must have strides 1, n0, n0·n1, ...
pub fn non_overlapping_and_dense(sizes: &[i64], strides: &[i64]) -> bool {
    let d = sizes.len();
    debug_assert_eq!(d, strides.len());
    // Computed for every new TensorImpl that is neither contiguous nor channels-last (every
    // transpose, permute, expand, ...): <= 5 dims sort with a network.
    macro_rules! small {
        ($d:literal, $network:expr) => {
            if let (Ok(n), Ok(st)) = (
                <&[i64; $d]>::try_from(sizes),
                <&[i64; $d]>::try_from(strides),
            ) {
                return dense_by_network(n, st, &$network);
            }
        };
    }
    match d {
        0 => return true,
        1 => return sizes[0] < 2 || strides[0] == 1,
        _ => {}
    }
    small!(2, NETWORK_2);
    small!(3, NETWORK_3);
    small!(4, NETWORK_4);
    small!(5, NETWORK_5);
    // A TensorImpl has at most MAX_DIMS (64) dims (CheckedLayout refuses more): one bit each.
    debug_assert!(d <= MAX_DIMS && MAX_DIMS <= 64);
    // 6..=64 dims: the same walk without sorting. Each step matches one unmatched
    // dim of size >= 2 whose stride equals the requirement (1, then req·n). It agrees with
    // the sorted walk: a match is the next dim in stride order; two dims sharing a stride
    // fail in both (the requirement grows past it), unless it has saturated at i64::MAX,
    // when in both every remaining stride must equal it, in any order.
    let mut unmatched: u64 = 0;
    for (i, &n) in sizes.iter().enumerate() {
        unmatched |= u64::from(n >= 2) << i;
    }
    let mut req = 1i64;
    while unmatched != 0 {
        let mut rest = unmatched;
        loop {
            if rest == 0 {
                return false;
            }
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if strides[i] == req {
                unmatched &= !(1u64 << i);
                req = req.saturating_mul(sizes[i]);
                break;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {

    #[test]
    fn non_overlapping_nests_or_refuses() {
        for (sizes, strides, want) in [
            (&[][..], &[][..], true),
            (&[4, 3][..], &[3, 1][..], true),
            (&[3, 4][..], &[1, 3][..], true),  // a transpose
            (&[2, 2][..], &[8, 2][..], true),  // a strided slice
            (&[2, 0][..], &[0, 0][..], true),  // no elements
            (&[1, 5][..], &[0, 1][..], true),  // size-1 dims do not count
            (&[2, 3][..], &[0, 1][..], false), // expanded
            (&[2, 2][..], &[1, 1][..], false), // byte strides {4, 4} over float32
            (&[2, 2][..], &[2, 2][..], false),
            (&[3, 2][..], &[2, 3][..], false), // exotic: distinct offsets, not nested
        ] {
            assert_eq!(
                non_overlapping(sizes, strides),
                want,
                "{sizes:?} {strides:?}"
            );
        }
    }
    use super::*;
    use crate::shape::{channels_last_3d_strides, channels_last_strides, contiguous_strides};

    /// The three ways to give strides name one layout: `Contiguous`, the row-major
    /// strides in elements, and those strides in bytes give the same checked layout (sizes,
    /// strides, numel, bytes reached), and `check` of a built layout agrees with `new`.
    #[test]
    fn checked_layout_stride_forms_agree() {
        for (sizes, dtype) in [
            (&[2i64, 3, 4][..], DType::F32),
            (&[][..], DType::C128),
            (&[5, 0, 7][..], DType::I16),
            (&[1, 1, 9][..], DType::U8),
        ] {
            let st = contiguous_strides(sizes).unwrap();
            let bytes: Vec<i64> = st.iter().map(|s| s * dtype.itemsize() as i64).collect();
            let forms = [
                CheckedLayout::new(sizes, Strides::Contiguous, 0, dtype).unwrap(),
                CheckedLayout::new(sizes, Strides::Elements(&st), 0, dtype).unwrap(),
                CheckedLayout::new(sizes, Strides::Bytes(&bytes), 0, dtype).unwrap(),
                CheckedLayout::check(Layout::new(sizes, &st, 0).unwrap(), dtype).unwrap(),
            ];
            let numel: i64 = sizes.iter().product();
            for c in &forms {
                assert_eq!(c.layout, forms[0].layout, "{sizes:?}");
                assert_eq!(
                    (c.numel(), c.nbytes()),
                    (numel, numel as usize * dtype.itemsize())
                );
            }
        }
    }

    /// The one validation's order: byte strides are checked before the sizes, the sizes
    /// (count, signs) before the strides, then the one pass (signs, overflow); bounds come
    /// last, against a storage size.
    #[test]
    fn checked_layout_refusals() {
        let err = |r: Result<CheckedLayout>| r.err().expect("refused");
        let e = err(CheckedLayout::new(
            &[-1, 2],
            Strides::Bytes(&[6, 4]),
            0,
            DType::F32,
        ));
        assert!(
            e.message.contains("byte stride 6 of dim 0"),
            "{}",
            e.message
        );
        let e = err(CheckedLayout::new(
            &[-1, 2],
            Strides::Elements(&[-2, 1]),
            0,
            DType::F32,
        ));
        assert!(e.message.contains("negative dimension -1"), "{}", e.message);
        let e = err(CheckedLayout::new(
            &[1; 65],
            Strides::Contiguous,
            0,
            DType::U8,
        ));
        assert!(e.message.contains("number of dims 65"), "{}", e.message);
        let e = err(CheckedLayout::new(
            &[2, 2],
            Strides::Elements(&[-2, 1]),
            0,
            DType::F32,
        ));
        assert!(e.message.contains("negative strides"), "{}", e.message);
        let e = err(CheckedLayout::new(
            &[2],
            Strides::Elements(&[1]),
            -1,
            DType::F32,
        ));
        assert!(
            e.message.contains("negative storage offset -1"),
            "{}",
            e.message
        );
        let big = [1i64 << 40, 1 << 40];
        let e = err(CheckedLayout::new(
            &big,
            Strides::Elements(&[0, 0]),
            0,
            DType::F32,
        ));
        assert_eq!(e.status, Status::Overflow);
        let c = CheckedLayout::new(&[4], Strides::Elements(&[2]), 1, DType::F32).unwrap();
        assert_eq!(c.nbytes(), 32);
        assert!(c.check_fits(32).is_ok());
        let e = c.check_fits(31).unwrap_err();
        assert_eq!(e.status, Status::OutOfBounds);
        assert!(
            e.message.contains("requiring a storage size of 32"),
            "{}",
            e.message
        );
    }

    fn flags(sizes: &[i64], strides: &[i64]) -> Flags {
        let numel = sizes.iter().product();
        Flags::compute(sizes, strides, numel)
    }

    /// The cache answers exactly what the refresh computes, on the first read and after
    /// it, for layouts that set each bit (the KNOWN marker never shows through).
    #[test]
    fn cached_flags_equal_the_refresh() {
        let n4 = [2i64, 3, 4, 5];
        let n5 = [2i64, 3, 4, 5, 6];
        let layouts: Vec<(Vec<i64>, Vec<i64>)> = vec![
            (vec![], vec![]),
            (n4.to_vec(), contiguous_strides(&n4).unwrap().to_vec()),
            (n4.to_vec(), channels_last_strides(&n4).unwrap().to_vec()),
            (n5.to_vec(), channels_last_3d_strides(&n5).unwrap().to_vec()),
            (vec![3, 4], vec![1, 3]), // transposed: dense, not contiguous
            (vec![3, 4], vec![0, 1]), // expanded: neither
            (vec![3, 0], vec![7, 9]), // no elements: contiguous
            (vec![4, 4], vec![8, 1]), // a slice's rows: neither
            (
                vec![2, 3, 4, 5, 6, 7],
                contiguous_strides(&[2, 3, 4, 5, 6, 7]).unwrap().to_vec(),
            ),
        ];
        let mut seen = 0u8;
        for (sizes, strides) in &layouts {
            let l = LayoutRef::new(sizes, strides, 0);
            let numel = sizes.iter().product();
            let want = Flags::compute(sizes, strides, numel);
            let cache = CachedFlags::new();
            assert_eq!(
                cache.0.load(Ordering::Relaxed),
                0,
                "unknown before the first read"
            );
            assert_eq!(cache.get(l, numel), want, "{sizes:?} {strides:?}");
            assert_eq!(
                cache.0.load(Ordering::Relaxed),
                want.0 | CachedFlags::KNOWN,
                "kept after the first read"
            );
            assert_eq!(cache.get(l, numel), want, "{sizes:?} {strides:?}");
            seen |= want.0;
        }
        assert_eq!(seen, Flags::ALL, "every bit set by some layout");
    }

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

    #[test]
    fn contiguous_cases() {
        let f = flags(&[2, 3], &[3, 1]);
        assert!(f.has(Flags::CONTIGUOUS) && f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        // transposed: not contiguous, but non-overlapping and dense
        let f = flags(&[3, 2], &[1, 3]);
        assert!(!f.has(Flags::CONTIGUOUS) && f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        // expanded: neither
        let f = flags(&[4, 3], &[0, 1]);
        assert!(!f.has(Flags::CONTIGUOUS) && !f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        // size-1 dims ignore their stride
        assert!(flags(&[2, 1, 3], &[3, 99, 1]).has(Flags::CONTIGUOUS));
        // size 0 is contiguous whatever the strides
        assert!(flags(&[2, 0, 3], &[7, 5, 2]).has(Flags::CONTIGUOUS));
        // 0-dim
        assert!(flags(&[], &[]).has(Flags::CONTIGUOUS));
        assert!(flags(&[], &[]).has(Flags::NON_OVERLAPPING_AND_DENSE));
        // sliced with a step: not dense
        let f = flags(&[3], &[2]);
        assert!(!f.has(Flags::CONTIGUOUS) && !f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        assert!(flags(&[1], &[5]).has(Flags::NON_OVERLAPPING_AND_DENSE));
    }

    #[test]
    fn channels_last_cases() {
        let n = [2, 3, 4, 5];
        let cl = channels_last_strides(&n).unwrap();
        let f = flags(&n, &cl);
        assert!(f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        assert!(f.has(Flags::CHANNELS_LAST_STRIDES));
        assert!(!f.has(Flags::CONTIGUOUS));
        assert!(f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        let f = flags(&n, &contiguous_strides(&n).unwrap());
        assert!(!f.has(Flags::CHANNELS_LAST_CONTIGUOUS) && !f.has(Flags::CHANNELS_LAST_STRIDES));
        // C == 1: both contiguous and channels-last contiguous (NCHW with C=1)
        let n1 = [2, 1, 4, 5];
        let f = flags(&n1, &contiguous_strides(&n1).unwrap());
        assert!(f.has(Flags::CONTIGUOUS) && f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        // N,C,1,1: contiguous strides [C,1,1,1] are channels-last contiguous, but the
        // strides-like walk refuses the tie between dim 0 and the channel stride? No:
        // st = [3,1,1,1]; order 1,3,2,0: min goes 0 -> 3 at d=1; d=3 stride 1 < 3 -> false.
        let n2 = [2, 3, 1, 1];
        let f = flags(&n2, &contiguous_strides(&n2).unwrap());
        assert!(f.has(Flags::CONTIGUOUS) && f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        assert!(!f.has(Flags::CHANNELS_LAST_STRIDES));
        // 3d
        let n5 = [2, 3, 4, 5, 6];
        let f = flags(&n5, &channels_last_3d_strides(&n5).unwrap());
        assert!(
            f.has(Flags::CHANNELS_LAST_3D_CONTIGUOUS) && f.has(Flags::CHANNELS_LAST_3D_STRIDES)
        );
        assert!(!f.has(Flags::CHANNELS_LAST_CONTIGUOUS) && !f.has(Flags::CHANNELS_LAST_STRIDES));
        // channels-last bits never on other ranks
        let f = flags(&[3, 4, 5], &[1, 15, 3]);
        assert!(!f.has(Flags::CHANNELS_LAST_STRIDES) && !f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        // size-0 dim: strides-like refuses
        let n0 = [2, 3, 0, 5];
        let f = flags(&n0, &channels_last_strides(&n0).unwrap());
        assert!(!f.has(Flags::CHANNELS_LAST_STRIDES));
        assert!(f.has(Flags::CONTIGUOUS));
    }

    /// c10's formulation, kept as the reference: a stable sort of the dim indices (size < 2
    /// last, the others by increasing stride), then the dense walk.
    fn reference_dense(sizes: &[i64], strides: &[i64]) -> bool {
        let mut perm: Vec<usize> = (0..sizes.len()).collect();
        perm.sort_by(|&a, &b| {
            let (sa, sb) = (sizes[a] < 2, sizes[b] < 2);
            sa.cmp(&sb).then(if sa || sb {
                std::cmp::Ordering::Equal
            } else {
                strides[a].cmp(&strides[b])
            })
        });
        let mut req = 1i64;
        for &i in &perm {
            if sizes[i] < 2 {
                return true;
            }
            if strides[i] != req {
                return false;
            }
            req = req.saturating_mul(sizes[i]);
        }
        true
    }

    /// The sorting networks sort every 0/1 input (the 0-1 principle: then they sort all).
    #[test]
    fn sorting_networks_sort() {
        fn check(d: usize, network: &[(usize, usize)]) {
            for bits in 0u32..1 << d {
                let mut v: Vec<u32> = (0..d).map(|i| bits >> i & 1).collect();
                for &(a, b) in network {
                    assert!(a < b && b < d);
                    if v[a] > v[b] {
                        v.swap(a, b);
                    }
                }
                assert!(
                    v.windows(2).all(|w| w[0] <= w[1]),
                    "{d} dims, input {bits:b}"
                );
            }
        }
        check(2, &NETWORK_2);
        check(3, &NETWORK_3);
        check(4, &NETWORK_4);
        check(5, &NETWORK_5);
    }

    /// Every layout of 0..=9 dims with sizes in 0..=3 and strides drawn from a small set
    /// (dense ones, ties, zeros, gaps) agrees with the reference.
    #[test]
    fn non_overlapping_and_dense_matches_reference() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let (mut dense, mut not_dense) = (0, 0);
        for _ in 0..200_000 {
            let d = next(10) as usize;
            let sizes: Vec<i64> = (0..d).map(|_| next(4) as i64).collect();
            // Mostly a permuted contiguous layout (so the dense answer is common), with
            // some strides perturbed.
            let mut strides = contiguous_strides(&sizes).unwrap().to_vec();
            for i in (1..d).rev() {
                strides.swap(i, next(i as u64 + 1) as usize);
            }
            for s in strides.iter_mut() {
                match next(8) {
                    0 => *s = 0,
                    1 => *s += 1,
                    2 => *s *= 2,
                    _ => {}
                }
            }
            let want = reference_dense(&sizes, &strides);
            assert_eq!(
                non_overlapping_and_dense(&sizes, &strides),
                want,
                "sizes {sizes:?} strides {strides:?}"
            );
            if want {
                dense += 1;
            } else {
                not_dense += 1;
            }
        }
        // Both answers were exercised substantially.
        assert!(dense > 20_000 && not_dense > 20_000, "{dense} {not_dense}");
        // A saturated requirement (only reachable outside valid layouts).
        let m = i64::MAX;
        for (sizes, strides) in [
            ([m, 2, 2], [1, m, m]),
            ([m, 2, 2], [1, m, 5]),
            ([2, m, 2], [m, 1, m]),
            ([2, 2, m], [m, 3, 1]),
        ] {
            assert_eq!(
                non_overlapping_and_dense(&sizes, &strides),
                reference_dense(&sizes, &strides),
                "sizes {sizes:?} strides {strides:?}"
            );
        }
        // Negative strides (outside valid layouts): never dense when counted.
        for (sizes, strides) in [
            (&[2i64, 3][..], &[-3i64, 1][..]),
            (&[1, 3], &[-3, 1]),
            (&[2, 3, 4, 2], &[12, 4, 1, -1]),
            (&[2, 1, 4, 2], &[8, -5, 2, 1]),
            (&[2, 3, 4, 2, 2], &[48, 16, 4, 2, -1]),
        ] {
            assert_eq!(
                non_overlapping_and_dense(sizes, strides),
                reference_dense(sizes, strides),
                "sizes {sizes:?} strides {strides:?}"
            );
        }
        // Up to 64 dims (the bit mask; a tensor has no more): 2^k sizes, dense when ordered.
        for d in [9usize, 64] {
            let sizes = vec![2i64; d];
            let mut strides: Vec<i64> = (0..d).map(|i| 1i64 << (i % 62)).collect();
            strides.reverse();
            for bump in [None, Some(d / 2)] {
                let mut st = strides.clone();
                if let Some(i) = bump {
                    st[i] += 1;
                }
                assert_eq!(
                    non_overlapping_and_dense(&sizes, &st),
                    reference_dense(&sizes, &st),
                    "{d} dims, bump {bump:?}"
                );
            }
        }
    }
}

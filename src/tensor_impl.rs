//! TensorImpl: one strided view of a storage. Its invariants are written on its fields
//! (c10-style); they are established by one validation ([`CheckedLayout::validate`]: a
//! [`CheckedLayout`]'s constructors run it) and one constructor, [`Tensor::new`], which
//! takes that proof and checks it against the storage (the views whose rule describes the
//! layout dim by dim, [`TensorImpl::make_view_lazy`], run the same two checks on the layout
//! written in the new box); both build it in place (`TensorBox`). They never change
//! afterwards. External memory is wrapped in one
//! place, [`Tensor::wrap`] (over [`StorageImpl::wrap`], which owns the disarm step).
//!
//! Views share the storage *and* the version counter of their base. Where the counter
//! lives (see [`VersionOf`]): a tensor made together with its storage (empty, from_blob,
//! a DLPack import, every op's output) uses the counter embedded in that storage, so
//! making and releasing its views touches no counter refcount; a tensor put over an
//! existing storage (`from_storage`) gets a counter of its own, as in PyTorch, which its
//! views then share by reference.

use crate::allocator::Allocator;
use crate::device::Device;
use crate::dtype::{read_scalar, write_scalar, DType, Scalar};
use crate::error::{Error, Result, Status};
use crate::layout::{
    CachedFlags, CheckedLayout, DimSource, Fill, FilledLayout, Flags, Layout, LayoutRef,
    LazyLayout, Strides,
};
use crate::refcount::{Intrusive, IntrusivePtr, UninitBox};
use crate::shape::{self, fmt_dims, Dims};
use crate::storage::{Blob, Observer, Storage, StorageImpl, StorageKind};
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The version counter shared by a tensor and all its views (bumped by in-place writes).
pub struct VersionCounter(AtomicU64);
impl Intrusive for VersionCounter {
    type Boxes = crate::refcount::Global;
}
pub type VersionPtr = IntrusivePtr<VersionCounter>;

/// Memory formats (codes equal `c10::MemoryFormat`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum MemoryFormat {
    Contiguous = 0,
    Preserve = 1,
    ChannelsLast = 2,
    ChannelsLast3d = 3,
}

impl MemoryFormat {
    pub fn from_code(c: i32) -> Option<MemoryFormat> {
        Some(match c {
            0 => MemoryFormat::Contiguous,
            1 => MemoryFormat::Preserve,
            2 => MemoryFormat::ChannelsLast,
            3 => MemoryFormat::ChannelsLast3d,
            _ => return None,
        })
    }

    /// The strides this format gives `sizes` (Preserve is not a layout: an error).
    pub fn strides_for(self, sizes: &[i64]) -> Result<Dims> {
        match self {
            MemoryFormat::Contiguous => shape::contiguous_strides(sizes),
            MemoryFormat::ChannelsLast => shape::channels_last_strides(sizes),
            MemoryFormat::ChannelsLast3d => shape::channels_last_3d_strides(sizes),
            MemoryFormat::Preserve => bail!(
                InvalidArgument,
                "preserve memory format does not name a layout"
            ),
        }
    }
}

/// Which version counter a new tensor uses.
#[derive(Clone, Copy)]
pub enum VersionOf<'a> {
    /// The counter embedded in the storage: only for the first tensor of a storage made
    /// for it (nothing else can have bumped or shared that counter).
    Storage,
    /// A counter of its own (a tensor over an existing storage).
    New,
    /// The counter of the tensor this one is a view of.
    Share(&'a TensorImpl),
}

/// One strided view of a storage. Every field is set once, by [`Tensor::new`], and
/// never changed: a TensorImpl is immutable (in-place ops change element data, not these).
/// The one exception is `flags`, a cache of what the layout already determines.
pub struct TensorImpl {
    /// The bytes. Shared with every view; may be resized later by its owner, so data access
    /// re-checks the bounds ([`TensorImpl::check_in_bounds`]).
    storage: Storage,
    /// Sizes, strides (in elements) and storage offset. Invariants: as many strides as
    /// sizes, at most `MAX_DIMS` dims; sizes, strides and offset >= 0; the extent
    /// `(offset + 1 + Σ stride·(size-1))·itemsize` fits in i64 and, when the tensor was
    /// made, within `storage.nbytes()` (a layout without elements reaches nothing: any
    /// offset and strides).
    layout: Layout,
    /// The product of the sizes; fits in i64 (checked, never wrapped).
    numel: i64,
    /// `None`: the storage's embedded counter; `Some`: a counter of its own (from_storage)
    /// or its base's. See [`VersionOf`].
    version: Option<VersionPtr>,
    /// Element type: the itemsize in the extent above is `dtype.itemsize()`.
    dtype: DType,
    /// The cached contiguity bits of exactly `layout`'s sizes and strides, computed by the
    /// one refresh, [`Flags::compute`], when they are first read ([`TensorImpl::flags`]).
    /// The only field that changes after construction, and only from unknown to known.
    flags: CachedFlags,
    /// Where the tensor observer filed this tensor, if it did ([`ObserverSlot`]).
    observer_slot: ObserverSlot,
}

/// An index the tensor observer may choose for a tensor when told it was made, and read
/// back when told it was released, so it finds its entry without a search. Written only
/// when the observer files the tensor, while its maker holds its only reference;
/// `ObserverSlot::NONE` until then. (It lives in
/// what was padding after the one-byte fields: the TensorImpl does not grow.)
pub(crate) struct ObserverSlot(AtomicU32);

impl ObserverSlot {
    pub(crate) const NONE: u32 = u32::MAX;
    #[inline]
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
    /// Only the observer's table sets it, to a number the table handed out (the table finds
    /// a slot from it without a bounds test).
    #[inline]
    pub(crate) fn set(&self, slot: u32) {
        self.0.store(slot, Ordering::Relaxed)
    }
}

impl Intrusive for TensorImpl {
    type Boxes = crate::allocator::TensorBoxes;

    /// Called at strong count 0 only while weak references exist, and the only weak
    /// reference to a tensor is its observer's (the memory snapshot's registration): so
    /// this tells the observer, and an untracked tensor's release path stays the one-step
    /// fast path. The observer gives its weak reference up to the release (one decrement
    /// for both units).
    fn release_resources(&self) -> u64 {
        Observer::tensor_released(self)
    }

    /// The release of a tracked tensor's only reference while the observer's is its only
    /// weak one (the common short-lived view): the observer takes its registration back
    /// and the tensor is destroyed with no read-modify-write of its count (an untracked
    /// tensor, with no weak reference, never gets here).
    #[inline(always)]
    fn reclaim_sole_weak(&self) -> bool {
        Observer::tensor_reclaimed(self)
    }
    const RECLAIMS_SOLE_WEAK: bool = true;
}

/// What watches the tensors made on a tracked storage (`StorageImpl::is_tracked`), from
/// above the foundation, as `storage::StorageObserver` watches storages: the memory
/// snapshot implements both for [`Observer`].
pub(crate) trait TensorObserver {
    /// A tensor was made on a tracked storage (just made: its maker holds its only
    /// reference, not yet shared): the observer may keep a weak reference to it (its only
    /// weak references) and set its [`ObserverSlot`].
    fn tensor_made(t: &Tensor);
    /// A tensor made on a tracked storage reached strong count 0 while weak references
    /// remain (`release_resources`): returns how many of its weak references the observer
    /// gave up undropped (0 or 1), which the release then drops.
    fn tensor_released(t: &TensorImpl) -> u64;
    /// The only strong reference to a tensor is being released and it has exactly one
    /// weak reference (`Intrusive::reclaim_sole_weak`): true if that was the observer's,
    /// which it has taken back (no one else can reach the tensor now: the release destroys
    /// it); false, nothing done, if the observer holds none (then the release decrements
    /// as usual).
    fn tensor_reclaimed(t: &TensorImpl) -> bool;
}

/// A strong reference to a TensorImpl (`Clone` = retain, `Drop` = release); the C handle
/// `tensor_t*` is the same pointer.
#[derive(Clone)]
pub struct Tensor(pub(crate) IntrusivePtr<TensorImpl>);

impl Deref for Tensor {
    type Target = TensorImpl;
    #[inline]
    fn deref(&self) -> &TensorImpl {
        &self.0
    }
}

fn oom(what: &str) -> Error {
    Error::from_fmt(
        Status::OutOfMemory,
        format_args!("failed to allocate the {what} object"),
    )
}

fn new_version_counter() -> Result<VersionPtr> {
    IntrusivePtr::try_new(VersionCounter(AtomicU64::new(0))).map_err(|_| oom("version counter"))
}

impl VersionOf<'_> {
    /// The counter field of a new tensor (allocates for `New`).
    #[inline(always)] // as CheckedLayout::check
    fn resolve(self) -> Result<Option<VersionPtr>> {
        Ok(match self {
            VersionOf::Share(base) => base.version.clone(),
            VersionOf::Storage => None,
            VersionOf::New => Some(new_version_counter()?),
        })
    }
}

/// A TensorImpl's box, written field by field in place (no copy of the TensorImpl, nor of
/// its layout when that is written straight in: `TensorImpl::make_view_lazy`), then
/// [`finish`](Self::finish)ed: the one place a TensorImpl is made. Dropped unfinished, the
/// block goes back (its layout, if written, dropped by the writer first).
struct TensorBox(UninitBox<TensorImpl>);

impl TensorBox {
    #[inline(always)]
    fn alloc() -> Option<TensorBox> {
        UninitBox::alloc().map(TensorBox)
    }

    /// The layout's place (uninitialised until written).
    #[inline(always)]
    fn layout_ptr(&self) -> *mut Layout {
        // SAFETY: a place inside the box's value, not a read.
        unsafe { std::ptr::addr_of_mut!((*self.0.value_ptr()).layout) }
    }

    /// Writes the other fields and hands the tensor out (to the tensor observer first when
    /// the storage is tracked). `storage` is the reference the tensor keeps, moved in: a
    /// tensor made with its storage (`Tensor::empty_in`) takes the storage's first
    /// reference, instead of a second one while the first is dropped (two atomic
    /// read-modify-writes per new tensor).
    ///
    /// # Safety
    /// The layout is written: valid for `dtype` ([`CheckedLayout::validate`]), `numel` its
    /// element count, within `storage.nbytes()`.
    #[inline(always)]
    unsafe fn finish(
        self,
        storage: Storage,
        numel: i64,
        version: Option<VersionPtr>,
        dtype: DType,
    ) -> Result<Tensor> {
        let p = self.0.value_ptr();
        let tracked = storage.is_tracked();
        // SAFETY: each remaining field written once through its place; with the layout
        // (the contract) the value is whole.
        let t = Tensor(unsafe {
            std::ptr::addr_of_mut!((*p).storage).write(storage);
            std::ptr::addr_of_mut!((*p).numel).write(numel);
            std::ptr::addr_of_mut!((*p).version).write(version);
            std::ptr::addr_of_mut!((*p).dtype).write(dtype);
            std::ptr::addr_of_mut!((*p).flags).write(CachedFlags::new());
            std::ptr::addr_of_mut!((*p).observer_slot)
                .write(ObserverSlot(AtomicU32::new(ObserverSlot::NONE)));
            self.0.assume_init()
        });
        // Tensors on a tracked storage are watched too (the memory snapshot registers them).
        if tracked {
            Observer::tensor_made(&t);
        }
        Ok(t)
    }
}

impl Tensor {
    /// The one constructor of a TensorImpl: a tensor over `storage` with the checked
    /// `layout` (its dtype, numel and layout), which must fit the storage
    /// ([`CheckedLayout::check_fits`], the one check a checked layout leaves), and the version
    /// counter `version` (see [`VersionOf`]). Its flags are computed when first read.
    #[inline(always)] // as CheckedLayout::check
    pub fn new(storage: &Storage, layout: CheckedLayout, version: VersionOf) -> Result<Tensor> {
        layout.check_fits(storage.nbytes())?;
        // SAFETY: checked just above.
        unsafe { Tensor::new_fitting(storage.clone(), layout, version) }
    }

    /// [`new`](Self::new) taking the storage reference the tensor keeps, the layout's fit
    /// checked by the caller.
    ///
    /// # Safety
    /// `layout` fits `storage` (`layout.check_fits(storage.nbytes())` passed, or the storage
    /// was made for exactly `layout.nbytes()` bytes and nothing else has it yet): the
    /// invariant written on `TensorImpl::layout`.
    #[inline(always)]
    unsafe fn new_fitting(
        storage: Storage,
        layout: CheckedLayout,
        version: VersionOf,
    ) -> Result<Tensor> {
        debug_assert!(layout.check_fits(storage.nbytes()).is_ok());
        let version = version.resolve()?;
        let (layout, numel, dtype) = layout.into_parts();
        let b = TensorBox::alloc().ok_or_else(|| oom("tensor"))?;
        // SAFETY: the layout's place in the new box, written once.
        unsafe { b.layout_ptr().write(layout) };
        // SAFETY: a checked layout that fits the storage (the caller's check), written.
        unsafe { b.finish(storage, numel, version, dtype) }
    }

    /// The one wrap of external memory as a tensor (from_blob, from_blob_bytes, DLPack
    /// imports): a storage of exactly the bytes `layout` reaches at `blob.data`
    /// ([`StorageImpl::wrap`]), and the tensor over it. On failure the deleter is not
    /// called and the caller keeps the memory.
    pub fn wrap(blob: Blob, layout: CheckedLayout) -> Result<Tensor> {
        // SAFETY: an External storage (the contract is for Mapped ones).
        let storage = unsafe { StorageImpl::wrap(blob, layout.nbytes(), StorageKind::External) }?;
        Tensor::new(&storage, layout, VersionOf::Storage).inspect_err(|_| {
            // We hold the only reference: give the memory back to the caller.
            storage.disarm();
        })
    }

    /// Uninitialised tensor with the given strides, on a new storage of exactly the bytes
    /// they reach, from the default allocator.
    pub fn empty_strided(sizes: &[i64], strides: &[i64], dtype: DType) -> Result<Tensor> {
        Tensor::empty_in(CheckedLayout::new(
            sizes,
            Strides::Elements(strides),
            0,
            dtype,
        )?)
    }

    /// An uninitialised tensor with `t`'s sizes, strides and dtype at offset 0, `t`
    /// non-overlapping and dense (what `clone` of such a tensor makes): its layout is
    /// copied, not validated again ([`CheckedLayout::dense_at_zero`]); otherwise as
    /// [`empty_strided`](Self::empty_strided).
    pub fn empty_dense_like(t: &TensorImpl) -> Result<Tensor> {
        match CheckedLayout::dense_at_zero(
            &t.layout,
            t.numel,
            t.dtype,
            t.is_non_overlapping_and_dense(),
        ) {
            Some(layout) => Tensor::empty_in_inlined(layout),
            None => Tensor::empty_strided(t.sizes(), t.strides(), t.dtype),
        }
    }

    /// Uninitialised contiguous tensor.
    pub fn empty(sizes: &[i64], dtype: DType) -> Result<Tensor> {
        Tensor::empty_in(CheckedLayout::new(sizes, Strides::Contiguous, 0, dtype)?)
    }

    /// An uninitialised tensor with `layout`, on a new storage of exactly its bytes.
    fn empty_in(layout: CheckedLayout) -> Result<Tensor> {
        Tensor::empty_in_inlined(layout)
    }

    /// [`empty_in`](Self::empty_in), inlined where the layout is built (`empty_dense_like`,
    /// a clone's): the layout is then written into the new box from where it is made, not
    /// moved through memory on the way (about 30 instructions per small clone).
    #[inline(always)]
    fn empty_in_inlined(layout: CheckedLayout) -> Result<Tensor> {
        let storage = StorageImpl::allocate(layout.nbytes(), Allocator::default_allocator())?;
        // SAFETY: a new storage of exactly the layout's bytes, ours alone: it fits.
        unsafe { Tensor::new_fitting(storage, layout, VersionOf::Storage) }
    }

    pub fn zeros(sizes: &[i64], dtype: DType) -> Result<Tensor> {
        let t = Tensor::empty(sizes, dtype)?;
        // All-zero bytes are 0 in every dtype (including f16, bf16, bool, complex).
        // SAFETY: a fresh contiguous tensor owns nbytes() bytes at data_ptr().
        unsafe { std::ptr::write_bytes(t.data_ptr(), 0, t.nbytes()) };
        Ok(t)
    }

    pub fn full(sizes: &[i64], dtype: DType, value: Scalar) -> Result<Tensor> {
        dtype.check_has_values("fill_")?;
        let t = Tensor::empty(sizes, dtype)?;
        t.fill_fresh(value);
        Ok(t)
    }

    /// `0, 1, ..., n-1` converted to `dtype`.
    pub fn arange(n: i64, dtype: DType) -> Result<Tensor> {
        ensure!(
            n >= 0,
            InvalidArgument,
            "arange: upper bound {n} must be >= 0"
        );
        dtype.check_has_values("arange")?;
        let t = Tensor::empty(&[n], dtype)?;
        let p = t.data_ptr();
        let isz = dtype.itemsize();
        crate::dtype::with_dtype!(dtype, T => {
            use crate::dtype::Element;
            for i in 0..n as usize {
                // SAFETY: i < n elements of a fresh contiguous buffer.
                unsafe { (p.add(i * isz) as *mut T).write_unaligned(T::from_scalar(Scalar::Int(i as i64))) };
            }
        });
        Ok(t)
    }

    /// Fills a freshly allocated contiguous tensor (no version bump, no checks).
    fn fill_fresh(&self, value: Scalar) {
        let p = self.data_ptr();
        let n = self.numel as usize;
        crate::dtype::with_dtype!(self.dtype, T => {
            use crate::dtype::Element;
            let v = T::from_scalar(value);
            if n > 0 {
                // SAFETY: a fresh contiguous tensor with n > 0 elements: its storage holds
                // exactly n elements of T at p, aligned by the allocator, and nothing else
                // references them yet.
                unsafe { std::slice::from_raw_parts_mut(p as *mut T, n).fill(v) };
            }
        });
    }

    /// Wraps caller memory ([`wrap`](Self::wrap)); on failure the deleter is not called and
    /// the caller keeps ownership.
    pub fn from_blob(blob: Blob, sizes: &[i64], strides: Strides, dtype: DType) -> Result<Tensor> {
        CheckedLayout::new_then(sizes, strides, 0, dtype, |l| Tensor::wrap(blob, l))
    }

    /// [`from_blob`](Self::from_blob) with strides in **bytes** (what OpenCV's `step`,
    /// FFmpeg's `linesize` and NumPy's `__array_interface__` give; `None`: contiguous), and
    /// `data` aligned for the dtype, checked first.
    pub fn from_blob_bytes(
        blob: Blob,
        sizes: &[i64],
        byte_strides: Option<&[i64]>,
        dtype: DType,
    ) -> Result<Tensor> {
        let align = crate::dtype::with_dtype!(dtype, T => std::mem::align_of::<T>());
        ensure!(
            (blob.data as usize).is_multiple_of(align),
            InvalidArgument,
            "data pointer {:p} is not aligned for {} (needs a multiple of {align} bytes)",
            blob.data,
            dtype.name().trim_end_matches('\0')
        );
        let strides = byte_strides.map_or(Strides::Contiguous, Strides::Bytes);
        Tensor::from_blob(blob, sizes, strides, dtype)
    }

    /// A tensor over an existing storage (bounds-checked), with a version counter of its
    /// own. `strides = None`: contiguous.
    pub fn from_storage(
        storage: &Storage,
        offset: i64,
        sizes: &[i64],
        strides: Option<&[i64]>,
        dtype: DType,
    ) -> Result<Tensor> {
        let strides = Strides::elements_or_contiguous(strides);
        CheckedLayout::new_then(sizes, strides, offset, dtype, |l| {
            Tensor::new(storage, l, VersionOf::New)
        })
    }

    /// Same handle? (pointer identity, as `at::Tensor::is_same`)
    #[cfg(test)]
    pub fn is_same(&self, other: &Tensor) -> bool {
        IntrusivePtr::ptr_eq(&self.0, &other.0)
    }

    #[cfg(test)]
    pub fn use_count(&self) -> u64 {
        self.0.use_count()
    }
}

impl TensorImpl {
    /// A view of `self`'s storage with a checked layout (its own dtype): shares the storage
    /// and the version counter. The one view constructor; every other goes through it.
    #[inline(always)] // as CheckedLayout::check
    pub fn share(&self, layout: CheckedLayout) -> Result<Tensor> {
        Tensor::new(&self.storage, layout, VersionOf::Share(self))
    }

    /// A view with the layout a view rule wrote (same dtype): checks it
    /// ([`CheckedLayout::check`]) and moves it into the new TensorImpl.
    #[inline(always)] // as CheckedLayout::check
    pub fn make_view_layout(&self, layout: Layout) -> Result<Tensor> {
        self.share(CheckedLayout::check(layout, self.dtype)?)
    }

    /// A view with the layout a view rule described dim by dim (same dtype), written
    /// straight into the new TensorImpl and validated there, as
    /// [`make_view_layout`](Self::make_view_layout) validates a built one
    /// ([`CheckedLayout::validate`], then the storage bounds).
    #[inline(always)] // as CheckedLayout::check
    pub fn make_view_lazy(&self, layout: LazyLayout<impl DimSource>) -> Result<Tensor> {
        let version = VersionOf::Share(self).resolve()?;
        let b = TensorBox::alloc().ok_or_else(|| oom("tensor"))?;
        let LazyLayout { nd, offset, dim } = layout;
        // SAFETY: the layout's place in the new box, holding nothing yet. On Err nothing
        // was written, and the box is freed.
        unsafe { Layout::write_from_fn(b.layout_ptr(), nd, offset, dim)? };
        // SAFETY: the layout is written.
        unsafe { self.finish_view(b, version) }
    }

    /// A view with the layout a view rule fills (same dtype; `Ok(None)` when the rule finds
    /// none), zeroed then filled straight in the new TensorImpl and validated there, as
    /// [`make_view_lazy`](Self::make_view_lazy).
    #[inline(always)] // as CheckedLayout::check
    pub fn make_view_filled(&self, layout: FilledLayout<impl Fill>) -> Result<Option<Tensor>> {
        let version = VersionOf::Share(self).resolve()?;
        let b = TensorBox::alloc().ok_or_else(|| oom("tensor"))?;
        let dst = b.layout_ptr();
        let FilledLayout { nd, offset, fill } = layout;
        // SAFETY: the layout's place in the new box, holding nothing yet: zeros written (On
        // Err nothing was, and the box is freed), then filled through a borrow of it that
        // ends with the fill.
        let filled = unsafe {
            Layout::write_from_fn(dst, nd, offset, |_| (0, 0))?;
            let (sizes, strides) = (*dst).dims_mut();
            fill(sizes, strides)
        };
        match filled {
            // SAFETY: the layout is written.
            Ok(true) => unsafe { self.finish_view(b, version) }.map(Some),
            other => {
                // SAFETY: the layout written above, dropped once; the box then freed.
                unsafe { std::ptr::drop_in_place(dst) };
                other.map(|_| None)
            }
        }
    }

    /// Validates the layout written in `b` for this tensor's dtype and storage, and
    /// finishes the view; a refused layout is dropped (and the box freed).
    ///
    /// # Safety
    /// A layout is written at `b.layout_ptr()`.
    #[inline(always)]
    unsafe fn finish_view(&self, b: TensorBox, version: Option<VersionPtr>) -> Result<Tensor> {
        let dtype = self.dtype;
        let dst = b.layout_ptr();
        // SAFETY: written (the contract); the borrow ends before the layout is dropped or
        // the box finished.
        let l = unsafe { &*dst };
        let checked = CheckedLayout::validate(l, dtype).and_then(|(numel, nbytes)| {
            let fits = l
                .as_ref()
                .check_fits(dtype.itemsize(), nbytes, self.storage.nbytes());
            fits.map(|()| numel)
        });
        match checked {
            // SAFETY: a layout validated for dtype, within the storage, written.
            Ok(numel) => unsafe { b.finish(self.storage.clone(), numel, version, dtype) },
            Err(e) => {
                // SAFETY: the layout written (the contract), dropped once; the box then freed.
                unsafe { std::ptr::drop_in_place(dst) };
                Err(e)
            }
        }
    }

    /// A view with a layout given as slices (same dtype).
    pub fn make_view(&self, sizes: &[i64], strides: &[i64], offset: i64) -> Result<Tensor> {
        let strides = Strides::Elements(strides);
        self.share(CheckedLayout::new(sizes, strides, offset, self.dtype)?)
    }

    #[inline]
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }
    #[inline]
    pub fn sizes(&self) -> &[i64] {
        self.layout.sizes()
    }
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.layout.strides()
    }
    #[inline]
    pub fn storage_offset(&self) -> i64 {
        self.layout.offset
    }
    /// Size of dim `dim` (negative wraps; a 0-dim tensor has none: Index).
    pub fn size(&self, dim: i64) -> Result<i64> {
        shape::at_dim(self.sizes(), dim)
    }
    /// Stride of dim `dim`, in elements (as [`size`](Self::size)).
    pub fn stride(&self, dim: i64) -> Result<i64> {
        shape::at_dim(self.strides(), dim)
    }
    /// Storage offset, in elements, of the element at `index` (one per dim; negative
    /// indices wrap). Errors: Index.
    pub fn element_offset(&self, index: &[i64]) -> Result<i64> {
        shape::element_offset(self.sizes(), self.strides(), self.layout.offset, index)
    }
    /// Sizes, strides and offset, borrowed (what the view rules read).
    #[inline]
    pub fn layout(&self) -> LayoutRef<'_> {
        self.layout.as_ref()
    }
    #[inline]
    pub fn numel(&self) -> i64 {
        self.numel
    }
    #[inline]
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    #[inline]
    pub fn itemsize(&self) -> usize {
        self.dtype.itemsize()
    }
    /// numel·itemsize, saturating at `usize::MAX` (an expanded view may have more element
    /// bytes than the address space; a layout without such aliasing always fits).
    pub fn nbytes(&self) -> usize {
        (self.numel as usize).saturating_mul(self.itemsize())
    }
    pub fn device(&self) -> Device {
        self.storage.device()
    }
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    /// The tensor observer's index for this tensor ([`ObserverSlot`]).
    #[inline]
    pub(crate) fn observer_slot(&self) -> &ObserverSlot {
        &self.observer_slot
    }
    /// The version counter this tensor shares with its views.
    fn version_cell(&self) -> &AtomicU64 {
        match &self.version {
            Some(v) => &v.0,
            None => self.storage.version_cell(),
        }
    }
    pub fn version(&self) -> u64 {
        self.version_cell().load(Ordering::Relaxed)
    }
    /// Called once by every in-place write.
    pub fn bump_version(&self) {
        self.version_cell().fetch_add(1, Ordering::Relaxed);
    }
    /// Does `self` share its version counter with `other` (a view of the same base)?
    #[cfg(test)]
    pub fn shares_version(&self, other: &TensorImpl) -> bool {
        std::ptr::eq(self.version_cell(), other.version_cell())
    }
    pub fn shares_storage(&self, other: &TensorImpl) -> bool {
        IntrusivePtr::ptr_eq(&self.storage, &other.storage)
    }

    /// Storage data + offset·itemsize (NULL for a storage without data). Meaningful (inside
    /// the storage) only for a tensor with elements whose layout fits the storage
    /// (`check_in_bounds`): a tensor without elements may have any offset, so the address
    /// arithmetic wraps instead of overflowing (the same in release and debug builds).
    pub fn data_ptr(&self) -> *mut u8 {
        let base = self.storage.data_ptr();
        if base.is_null() {
            return base;
        }
        base.wrapping_add((self.layout.offset as usize).wrapping_mul(self.itemsize()))
    }

    /// The cached contiguity bits (computed on the first call).
    #[inline]
    fn flags(&self) -> Flags {
        self.flags.get(self.layout(), self.numel)
    }

    pub fn is_contiguous(&self, fmt: MemoryFormat) -> bool {
        let f = self.flags();
        match fmt {
            MemoryFormat::Contiguous => f.has(Flags::CONTIGUOUS),
            MemoryFormat::ChannelsLast => f.has(Flags::CHANNELS_LAST_CONTIGUOUS),
            MemoryFormat::ChannelsLast3d => f.has(Flags::CHANNELS_LAST_3D_CONTIGUOUS),
            MemoryFormat::Preserve => false,
        }
    }

    pub fn is_non_overlapping_and_dense(&self) -> bool {
        self.flags().has(Flags::NON_OVERLAPPING_AND_DENSE)
    }

    /// The layout an op producing a tensor "like this one" should use.
    pub fn suggest_memory_format(&self) -> MemoryFormat {
        let f = self.flags();
        if f.has(Flags::CHANNELS_LAST_STRIDES) {
            MemoryFormat::ChannelsLast
        } else if f.has(Flags::CHANNELS_LAST_3D_STRIDES) {
            MemoryFormat::ChannelsLast3d
        } else {
            MemoryFormat::Contiguous
        }
    }

    /// Whether two elements of this tensor share memory (a dim of size > 1 with stride 0),
    /// PyTorch's cheap `has_internal_overlap` test: as there, a non-overlapping-and-dense
    /// tensor (e.g. any tensor with no elements) never overlaps.
    pub fn has_internal_overlap(&self) -> bool {
        !self.is_non_overlapping_and_dense()
            && self
                .sizes()
                .iter()
                .zip(self.strides())
                .any(|(&n, &s)| n > 1 && s == 0)
    }

    /// Checks that element data can be read: host-accessible device, and the layout still
    /// inside the storage (which may have been resized since). Returns the data pointer.
    pub fn data_for_read(&self) -> Result<*mut u8> {
        let dev = self.device();
        ensure!(
            dev.is_host_accessible(),
            Device,
            "cannot access the data of a tensor on device type {} (id {}) from the host",
            dev.device_type,
            dev.device_id
        );
        self.check_in_bounds()?;
        Ok(self.data_ptr())
    }

    /// The layout still inside the storage as it is now (a storage may have been resized
    /// since the tensor was made): the check of every data access and of DLPack export.
    pub fn check_in_bounds(&self) -> Result<()> {
        if self.numel > 0 {
            // Cannot overflow: checked at construction.
            let needed = self.nbytes_needed()?;
            ensure!(
                needed as u64 <= self.storage.nbytes() as u64,
                OutOfBounds,
                "the tensor needs {needed} bytes of storage but its storage was resized to {} bytes",
                self.storage.nbytes()
            );
        }
        Ok(())
    }

    /// Bytes of storage the layout reaches (`numel > 0`): from the offset, the extent
    /// `offset + 1 + Σ stride·(size-1)` elements; for a non-overlapping and dense layout
    /// whose flags are known already, `offset + numel` (its elements fill exactly `numel`
    /// consecutive items, size-1 dims adding nothing), without a pass over the dims.
    #[inline]
    fn nbytes_needed(&self) -> Result<i64> {
        let (offset, isz) = (self.layout.offset, self.itemsize() as i64);
        if self
            .flags
            .known()
            .is_some_and(|f| f.has(Flags::NON_OVERLAPPING_AND_DENSE))
        {
            let end = shape::add(offset, self.numel, "storage extent")?;
            return shape::mul(end, isz, "storage size in bytes");
        }
        shape::storage_nbytes_needed(self.sizes(), self.strides(), offset, isz as usize)
    }

    /// [`data_for_read`](Self::data_for_read) plus: the storage is writable and no two
    /// elements alias (`allow_overlap` false).
    pub fn data_for_write(&self, allow_overlap: bool) -> Result<*mut u8> {
        let p = self.data_for_read()?;
        self.storage.check_writable()?;
        ensure!(
            allow_overlap || !self.has_internal_overlap(),
            Overlap,
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location (sizes {}, strides {}); clone() it first",
            fmt_dims(self.sizes()),
            fmt_dims(self.strides())
        );
        Ok(p)
    }

    /// Element at `index` (negative indices wrap).
    pub fn get(&self, index: &[i64]) -> Result<Scalar> {
        self.dtype.check_has_values("item")?;
        let off = self.element_offset(index)?;
        self.data_for_read()?;
        let base = self.storage.data_ptr();
        // SAFETY: `off` is an element of the layout (element_offset checked the index), and
        // data_for_read checked the layout against the storage as it is now: the address is
        // inside the storage, host-accessible; read_scalar reads unaligned.
        Ok(unsafe { read_scalar(self.dtype, base.add(off as usize * self.itemsize())) })
    }

    /// Writes one element (converted to the dtype) and bumps the version.
    pub fn set(&self, index: &[i64], value: Scalar) -> Result<()> {
        self.dtype.check_has_values("fill_")?;
        let off = self.element_offset(index)?;
        // One element is written: aliasing elsewhere in the tensor is harmless.
        self.data_for_write(true)?;
        let base = self.storage.data_ptr();
        // SAFETY: as in get (the element is inside the checked layout); data_for_write also
        // checked that the storage is writable.
        unsafe { write_scalar(self.dtype, base.add(off as usize * self.itemsize()), value) };
        self.bump_version();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refcount::RcBox;
    use std::ffi::c_void;

    /// Where the counter lives does not change what is shared: views share their base's
    /// counter (storage-embedded or not), from_storage starts its own, every in-place write
    /// bumps the shared one once.
    #[test]
    fn version_counters_are_shared_by_views_only() {
        let base = Tensor::zeros(&[4, 6], DType::F32).unwrap();
        let v = base.transpose(0, 1).unwrap();
        let vv = v.slice(0, 1, 4, 2).unwrap();
        assert!(base.shares_version(&v) && base.shares_version(&vv));
        let other = Tensor::from_storage(base.storage(), 0, &[24], None, DType::F32).unwrap();
        let ov = other.view(&[6, 4]).unwrap();
        assert!(!other.shares_version(&base) && other.shares_version(&ov));
        assert_eq!((base.version(), other.version()), (0, 0));
        vv.fill_(Scalar::Float(1.0)).unwrap();
        assert_eq!((base.version(), v.version(), vv.version()), (1, 1, 1));
        assert_eq!(
            (other.version(), ov.version()),
            (0, 0),
            "from_storage: separate"
        );
        ov.fill_(Scalar::Float(2.0)).unwrap();
        assert_eq!((other.version(), ov.version(), base.version()), (1, 1, 1));
        let again = Tensor::from_storage(base.storage(), 0, &[24], None, DType::F32).unwrap();
        assert!(!again.shares_version(&other) && again.version() == 0);
        // a clone is new memory with its own counter
        let c = base.deep_clone(MemoryFormat::Contiguous).unwrap();
        assert!(!c.shares_version(&base) && c.version() == 0);
        // views outlive their base and keep counting
        drop(base);
        v.fill_(Scalar::Float(3.0)).unwrap();
        assert_eq!(vv.version(), 2);
    }

    #[test]
    fn tensor_impl_is_small() {
        // PyTorch's TensorImpl is 176 bytes; ours, with its refcount, must stay <= 144.
        assert!(
            std::mem::size_of::<RcBox<TensorImpl>>() <= 144,
            "size {}",
            std::mem::size_of::<RcBox<TensorImpl>>()
        );
    }

    #[test]
    fn create_and_read_back() {
        let t = Tensor::arange(6, DType::F32).unwrap();
        assert_eq!(t.sizes(), &[6]);
        assert_eq!(t.strides(), &[1]);
        assert_eq!(t.get(&[4]).unwrap().to_f64(), 4.0);
        assert_eq!(t.get(&[-1]).unwrap().to_f64(), 5.0);
        assert_eq!(t.version(), 0);
        t.set(&[0], Scalar::Float(2.5)).unwrap();
        assert_eq!(t.version(), 1);
        assert_eq!(t.get(&[0]).unwrap().to_f64(), 2.5);
        let z = Tensor::zeros(&[2, 3], DType::I32).unwrap();
        assert_eq!(z.get(&[1, 2]).unwrap().to_i64(), 0);
        let f = Tensor::full(&[2], DType::BF16, Scalar::Float(1.5)).unwrap();
        assert_eq!(f.get(&[1]).unwrap().to_f64(), 1.5);
        let s = Tensor::full(&[], DType::C64, Scalar::Int(3)).unwrap();
        assert_eq!(s.numel(), 1);
        assert_eq!(s.get(&[]).unwrap().to_f64(), 3.0);
    }

    #[test]
    fn views_share_version_and_storage() {
        let t = Tensor::zeros(&[2, 3], DType::F64).unwrap();
        let v = t.make_view(&[3, 2], &[1, 3], 0).unwrap();
        assert!(v.shares_storage(&t));
        v.set(&[2, 1], Scalar::Float(7.0)).unwrap();
        assert_eq!(t.version(), 1);
        assert_eq!(t.get(&[1, 2]).unwrap().to_f64(), 7.0);
        assert!(!v.is_contiguous(MemoryFormat::Contiguous));
        assert!(v.is_non_overlapping_and_dense());
    }

    #[test]
    fn constructor_validates() {
        let t = Tensor::zeros(&[4], DType::F32).unwrap();
        let e = t.make_view(&[5], &[1], 0).err().unwrap();
        assert_eq!(e.status, Status::OutOfBounds);
        assert!(
            e.message.contains("20") && e.message.contains("16"),
            "{}",
            e.message
        );
        assert_eq!(
            t.make_view(&[2], &[-1], 0).err().unwrap().status,
            Status::InvalidArgument
        );
        assert_eq!(
            t.make_view(&[-2], &[1], 0).err().unwrap().status,
            Status::InvalidArgument
        );
        assert_eq!(
            t.make_view(&[1], &[1], -1).err().unwrap().status,
            Status::InvalidArgument
        );
        assert_eq!(
            t.make_view(&[2, 2], &[1], 0).err().unwrap().status,
            Status::InvalidArgument
        );
        assert!(
            t.make_view(&[0, 100], &[1000, 1000], 1000).is_ok(),
            "size 0 always fits"
        );
        let big = [1i64 << 40, 1 << 40];
        assert_eq!(
            t.make_view(&big, &[0, 0], 0).err().unwrap().status,
            Status::Overflow
        );
        assert_eq!(
            Tensor::empty(&[1; 65], DType::U8).err().unwrap().status,
            Status::InvalidArgument
        );
    }

    #[test]
    fn resize_shrink_is_caught_at_access() {
        let t = Tensor::zeros(&[4], DType::F32).unwrap();
        // SAFETY: this test's thread is the only user of the storage.
        unsafe { t.storage().resize(4) }.unwrap();
        assert_eq!(t.get(&[3]).unwrap_err().status, Status::OutOfBounds);
    }

    /// The bounds check of a dense tensor whose flags are known (`offset + numel` items,
    /// no pass over the dims) counts the offset and every element, in any dim order: a
    /// storage shrunk by one item under such a view is caught, one of exactly its extent
    /// is not.
    #[test]
    fn dense_bounds_check_counts_offset_and_elements() {
        let base = Tensor::zeros(&[8], DType::F32).unwrap();
        // 2x3 at offset 2, then its transpose: dense, extent (2 + 6) items = 32 bytes.
        let v = Tensor::from_storage(base.storage(), 2, &[2, 3], None, DType::F32).unwrap();
        let t = v.transpose(0, 1).unwrap();
        for x in [&v, &t] {
            assert!(x.is_non_overlapping_and_dense(), "flags computed: dense");
            assert!(x.flags.known().is_some());
            assert!(x.check_in_bounds().is_ok());
        }
        // SAFETY: this test's thread is the only user of the storage.
        unsafe { base.storage().resize(28) }.unwrap();
        for x in [&v, &t] {
            let e = x.check_in_bounds().unwrap_err();
            assert_eq!(e.status, Status::OutOfBounds);
            assert!(
                e.message.contains("32") && e.message.contains("28"),
                "{}",
                e.message
            );
        }
        // SAFETY: as above.
        unsafe { base.storage().resize(32) }.unwrap();
        assert!(v.check_in_bounds().is_ok() && t.check_in_bounds().is_ok());
    }

    #[test]
    fn overlap_and_read_only() {
        let t = Tensor::zeros(&[3], DType::F32).unwrap();
        let e = t.make_view(&[4, 3], &[0, 1], 0).unwrap();
        assert!(e.has_internal_overlap());
        assert_eq!(e.data_for_write(false).unwrap_err().status, Status::Overlap);
        t.storage().mark_read_only();
        assert_eq!(
            t.set(&[0], Scalar::Int(1)).unwrap_err().status,
            Status::ReadOnly
        );
        assert_eq!(t.version(), 0);
    }

    #[test]
    fn suggest_memory_format() {
        let t = Tensor::empty_with_format(&[2, 3, 4, 5], DType::F32, MemoryFormat::ChannelsLast)
            .unwrap();
        assert_eq!(t.suggest_memory_format(), MemoryFormat::ChannelsLast);
        assert!(t.is_contiguous(MemoryFormat::ChannelsLast));
        let t =
            Tensor::empty_with_format(&[2, 3, 4, 5, 6], DType::F32, MemoryFormat::ChannelsLast3d)
                .unwrap();
        assert_eq!(t.suggest_memory_format(), MemoryFormat::ChannelsLast3d);
        let t = Tensor::empty(&[2, 3, 4, 5], DType::F32).unwrap();
        assert_eq!(t.suggest_memory_format(), MemoryFormat::Contiguous);
    }

    #[test]
    fn device_data_access_refused() {
        let cuda = Device {
            device_type: 2,
            device_id: 0,
        };
        let blob = Blob {
            device: cuda,
            ..Blob::borrowed(0x1000 as *mut c_void)
        };
        let t = Tensor::from_blob(blob, &[4], Strides::Contiguous, DType::F32).unwrap();
        assert_eq!(t.storage().nbytes(), 16);
        assert_eq!(t.get(&[0]).unwrap_err().status, Status::Device);
        assert_eq!(t.data_ptr() as usize, 0x1000);
    }
}

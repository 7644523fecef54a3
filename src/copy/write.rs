//! Layer 2 of `copy/`, the write step: what every op that writes element data does, once.
//! It may import the engine and the kernels below it, never the ops above.
//!
//! - In place ([`Write`]: `copy_`, `fill_`, `copy_affine_`, `copy_yuv_affine_`): the checked
//!   destination (`data_for_write`: device, bounds, read-only, internal overlap), the
//!   snapshot of a source that may share memory with it ([`Write::source`], by
//!   [`may_overlap`], the one overlap rule), the streaming choice for the whole
//!   destination, and at the end ([`Write::finish`]) one fence of streamed stores and
//!   exactly one bump of the shared version counter. An op that fails before `finish` has
//!   not bumped it.
//! - Fresh outputs (`clone`, `contiguous`, `to_dtype`, `repeat`, the snapshot itself): no
//!   check (the output is private) and no bump (nobody saw it before); the pages prefaulted
//!   for writing and the same streaming choice ([`fresh_output`]).

use super::engine::dispatch::copy_raw;
use super::kernels::{self, cpu};
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::{self, Dims};
use crate::tensor_impl::{MemoryFormat, Tensor, TensorImpl};

/// Up to this many bytes, a dense same-layout same-dtype copy skips the engine (clone of
/// small tensors): one copy of the span (`kernels::copy_bytes`), as fast as the engine's
/// single-threaded copy at these sizes without its planning (a 16 KiB clone took 2.4x a
/// `malloc` + `memcpy` + `free` through the engine; the engine's streaming stores and
/// threads start far above).
const SMALL_COPY_BYTES: usize = 64 << 10;

/// Whether an output of `out_bytes` (the whole destination of one op) is written with
/// streaming (non-temporal) stores by the kernels that have them (transposes, the
/// converting kernels, `copy_affine_`, `copy_yuv_affine_`): the one place for that choice.
/// Outputs of at least half the last-level cache ([`cpu::l3_bytes`],
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
pub(super) fn streams_output(out_bytes: usize) -> bool {
    let l3 = if cfg!(test) { None } else { cpu::l3_bytes() };
    out_bytes >= stream_threshold(l3)
}

/// The smallest output that streams, given the L3 size (when known): half of it.
fn stream_threshold(l3_bytes: Option<usize>) -> usize {
    l3_bytes.map_or(STREAM_FALLBACK_BYTES, |n| n / 2)
}

/// The streaming threshold when the L3 size is unknown: 16 MiB, beyond a typical
/// last-level cache.
const STREAM_FALLBACK_BYTES: usize = 16 << 20;

/// Prepares the fresh tensor `out` for being written whole, as the write step does for
/// every fresh output: its block prefaulted for writing (every byte of it is about to be
/// written: a fresh output's layout is dense), and the streaming choice for its size.
#[inline]
pub(super) fn fresh_output(out: &TensorImpl) -> bool {
    let block = out.storage();
    crate::allocator::prefault_for_write(block.data_ptr(), block.nbytes());
    streams_output(block.nbytes())
}

/// Address range `[start, end)` of the bytes a tensor's elements occupy (in memory, not
/// in its storage: two storages may wrap the same bytes, e.g. two from_blob calls on one
/// buffer or a DLPack round trip). For a tensor with elements whose layout was checked
/// against its storage (data_for_read): the range lies inside the storage's block.
fn address_range(t: &TensorImpl) -> (usize, usize) {
    let isz = t.itemsize();
    let base = t.storage().data_ptr() as usize;
    let start = t.storage_offset() as usize * isz;
    // Inside the storage (checked by data_for_read): cannot overflow.
    let end =
        shape::extent_elems(t.sizes(), t.strides(), t.storage_offset()).unwrap_or(0) as usize * isz;
    (base + start, base + end.max(start))
}

/// Whether writing `dst` may change elements `src` still has to read: intersecting
/// address ranges, whatever the storages (conservative: interleaved layouts over one
/// range count as overlapping), or, at different addresses, the same pages of a mapped
/// object (two mappings of one file or memfd: the storages answer,
/// [`StorageImpl::shares_pages_with`](crate::storage::StorageImpl::shares_pages_with)).
/// Disjoint ranges keep the direct copy. The one overlap rule of every write
/// ([`Write::source`]).
fn may_overlap(dst: &TensorImpl, src: &TensorImpl) -> bool {
    if dst.numel() == 0 || src.numel() == 0 {
        return false;
    }
    let (a, b) = (address_range(dst), address_range(src));
    if a.0 < b.1 && b.0 < a.1 {
        return true;
    }
    dst.storage().shares_pages_with(a, src.storage(), b)
}

/// An in-place write into `dst` (see the module doc): made by [`Write::begin`], ended by
/// [`Write::finish`].
pub(super) struct Write<'a> {
    dst: &'a TensorImpl,
    ptr: *mut u8,
    stream: bool,
}

/// A source as a write reads it: the tensor itself, or a snapshot of it (a fresh copy)
/// when it may share memory with the destination. Alive until the write is done.
pub(super) enum Source<'s> {
    Direct(&'s TensorImpl, *const u8),
    Snapshot(Tensor),
}

impl Source<'_> {
    /// The tensor to read (its strides address [`ptr`](Self::ptr)).
    #[inline]
    pub fn tensor(&self) -> &TensorImpl {
        match self {
            Source::Direct(t, _) => t,
            Source::Snapshot(t) => t,
        }
    }

    /// The data pointer to read, valid for [`tensor`](Self::tensor)'s layout.
    #[inline]
    pub fn ptr(&self) -> *const u8 {
        match self {
            Source::Direct(_, p) => *p,
            Source::Snapshot(t) => t.data_ptr(),
        }
    }

    /// Whether this is a snapshot (its strides may differ from the source's).
    #[inline]
    pub fn is_snapshot(&self) -> bool {
        matches!(self, Source::Snapshot(_))
    }
}

impl<'a> Write<'a> {
    /// Checks `dst` for writing (`data_for_write`; `aliased`: elements of `dst` may share a
    /// memory location, as an expanded view's do, when writing each location once is
    /// right: `fill_`) and makes the streaming choice for the bytes written (stride-0 dims
    /// count once when `aliased`).
    #[inline]
    pub fn begin(dst: &'a TensorImpl, aliased: bool) -> Result<Write<'a>> {
        let ptr = dst.data_for_write(aliased)?;
        let items = if aliased {
            distinct_numel(dst)
        } else {
            dst.numel() as usize
        };
        Ok(Write {
            dst,
            ptr,
            stream: streams_output(items.saturating_mul(dst.itemsize())),
        })
    }

    /// The destination's data pointer, valid for writing its layout.
    #[inline]
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Whether the kernels write the destination with streaming stores.
    #[inline]
    pub fn stream(&self) -> bool {
        self.stream
    }

    /// `src` checked for reading (`data_for_read`), and read from a snapshot when writing
    /// the destination may change it ([`may_overlap`]; never for an empty destination).
    /// Errors: Device, OutOfBounds (src), OutOfMemory (the snapshot).
    pub fn source<'s>(&self, src: &'s TensorImpl) -> Result<Source<'s>> {
        let p = src.data_for_read()?;
        if self.dst.numel() > 0 && may_overlap(self.dst, src) {
            return Ok(Source::Snapshot(src.deep_clone(MemoryFormat::Preserve)?));
        }
        Ok(Source::Direct(src, p))
    }

    /// Ends the write: streamed stores fenced, the version counter bumped once.
    #[inline]
    pub fn finish(self) {
        if self.stream {
            kernels::fence_streaming_stores();
        }
        self.dst.bump_version();
    }
}

/// The number of distinct memory locations `t`'s elements have when its stride-0 dims are
/// the only aliasing (each such dim counts once), saturating.
fn distinct_numel(t: &TensorImpl) -> usize {
    t.sizes()
        .iter()
        .zip(t.strides())
        .fold(1usize, |n, (&s, &st)| {
            n.saturating_mul(if st == 0 { s.min(1) } else { s } as usize)
        })
}

/// What [`TensorImpl::like_strides`] gives: `self`'s own strides, borrowed (no copy on a
/// small clone's path), or new ones.
pub(super) enum LikeStrides<'a> {
    Same(&'a [i64]),
    New(Dims),
}

impl std::ops::Deref for LikeStrides<'_> {
    type Target = [i64];
    #[inline]
    fn deref(&self) -> &[i64] {
        match self {
            LikeStrides::Same(s) => s,
            LikeStrides::New(d) => d,
        }
    }
}

impl TensorImpl {
    /// The strides `empty_like` / `clone` give a tensor like `self` in `fmt`: Preserve
    /// keeps the exact strides of a non-overlapping-and-dense tensor, else dense strides
    /// in `self`'s dim order (PyTorch's infer_dense_strides).
    pub(super) fn like_strides(&self, fmt: MemoryFormat) -> Result<LikeStrides<'_>> {
        Ok(match fmt {
            MemoryFormat::Preserve if self.is_non_overlapping_and_dense() => {
                LikeStrides::Same(self.strides())
            }
            MemoryFormat::Preserve => {
                LikeStrides::New(shape::infer_dense_strides(self.sizes(), self.strides())?)
            }
            f => LikeStrides::New(f.strides_for(self.sizes())?),
        })
    }

    /// A new tensor with `dtype` and `strides`, holding `self`'s values converted.
    pub(super) fn copy_to_new(&self, strides: &[i64], dtype: DType) -> Result<Tensor> {
        dtype.check_convert_from(self.dtype(), "copy_")?;
        let src = self.data_for_read()?;
        let out = Tensor::empty_strided(self.sizes(), strides, dtype)?;
        // A dense source copied to its own strides in its own dtype: one span.
        let same = dtype == self.dtype()
            && self.is_non_overlapping_and_dense()
            && out.strides() == self.strides();
        // SAFETY: src from data_for_read; out fresh; `same` as computed.
        unsafe { self.copy_into_fresh(src, out, same) }
    }

    /// `clone(Preserve)` of a non-overlapping and dense `self`: a new tensor with its sizes,
    /// strides and dtype at offset 0 (`Tensor::empty_dense_like`: the layout copied, not
    /// validated again), holding its values. What `copy_to_new(self.strides(),
    /// self.dtype())` does, without the dtype, layout and strides tests whose answers are
    /// known here.
    fn clone_dense(&self) -> Result<Tensor> {
        debug_assert!(self.is_non_overlapping_and_dense());
        let src = self.data_for_read()?;
        let out = Tensor::empty_dense_like(self)?;
        debug_assert!(out.strides() == self.strides() && out.dtype() == self.dtype());
        // SAFETY: src from data_for_read; out fresh, with self's strides and dtype, self
        // non-overlapping and dense.
        unsafe { self.copy_into_fresh(src, out, true) }
    }

    /// Copies `self`'s values into `out`, a fresh tensor of its sizes; returns `out`.
    ///
    /// # Safety
    /// `src` is `self.data_for_read()`'s pointer; `out` is fresh (private, every byte of its
    /// storage about to be written: a dense layout); `same`: `self` is non-overlapping and
    /// dense and `out` has its dtype and strides.
    #[inline(always)]
    unsafe fn copy_into_fresh(&self, src: *mut u8, out: Tensor, same: bool) -> Result<Tensor> {
        let nbytes = self.nbytes();
        // Small tensors: a dense source copied to the same strides in the same dtype is
        // one copy of its span; the engine's planning would cost more than the copy.
        if nbytes <= SMALL_COPY_BYTES && same && self.dtype() != DType::Bool {
            if nbytes > 0 {
                // SAFETY: both are dense with equal strides: each covers exactly nbytes
                // bytes from its data pointer (self checked by data_for_read); out is fresh.
                unsafe { kernels::copy_bytes(out.data_ptr(), src, nbytes) };
            }
            return Ok(out);
        }
        let stream = fresh_output(&out);
        // SAFETY: self validated by data_for_read; out is fresh, private and laid out by
        // its own strides.
        unsafe {
            copy_raw(
                self.sizes(),
                out.data_ptr(),
                out.strides(),
                out.dtype(),
                src,
                self.strides(),
                self.dtype(),
                stream,
            )
        };
        Ok(out)
    }

    /// PyTorch's `clone(memory_format)`: a copy of the elements in new memory, with its own
    /// version counter (`tensor_clone`). Not `Tensor::clone`, which is one more reference to
    /// the same TensorImpl (a retain). Errors: InvalidArgument (format on the wrong rank),
    /// Device, OutOfBounds, OutOfMemory.
    pub fn deep_clone(&self, fmt: MemoryFormat) -> Result<Tensor> {
        // `like_strides`' Same case, without building its result (a `Dims` moved through a
        // `Result`: about 40 instructions of a small clone).
        if matches!(fmt, MemoryFormat::Preserve) && self.is_non_overlapping_and_dense() {
            return self.clone_dense();
        }
        self.copy_to_new(&self.like_strides(fmt)?, self.dtype())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The L3 size decides streaming: from half of it up. With a 32 MiB L3 a 720p float32
    /// CHW frame (10.5 MiB) keeps plain stores and 1080p (23.7 MiB) streams; with a 96 MiB
    /// one 1080p keeps plain stores; an unknown L3 streams from 16 MiB. The sysfs size
    /// strings parse to bytes.
    #[test]
    fn streaming_threshold_follows_the_l3_size() {
        let (sd, hd) = (720 * 1280 * 3 * 4, 1080 * 1920 * 3 * 4);
        let l3 = cpu::parse_cache_size("32768K");
        assert_eq!(l3, Some(32 << 20));
        assert!(sd < stream_threshold(l3) && hd >= stream_threshold(l3));
        assert!(hd < stream_threshold(Some(96 << 20)));
        assert_eq!(stream_threshold(None), 16 << 20);
        use cpu::parse_cache_size as p;
        assert_eq!(p("1M"), Some(1 << 20));
        assert_eq!(p("512"), Some(512));
        assert_eq!(p("2G"), Some(2 << 30));
        for bad in ["", "K", "0K", "x", "-1K", "99999999999999999999G"] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
        // This host's answer, when it has one, is a plausible cache size.
        if let Some(n) = cpu::l3_bytes() {
            assert!((1 << 16..=1 << 31).contains(&n), "L3 {n}");
        }
    }
}

//! Operations that move element data in bulk: copy_, fill_, contiguous, clone, empty_like,
//! to_dtype, repeat, reshape/flatten (when a view is impossible) and equal. Each one
//! validates, allocates its output, picks a typed kernel once (dtype dispatch), and hands
//! the layouts to the one strided-iteration engine (`engine.rs`); none has loops of its own.
//!
//! In-place ops (`copy_`, `fill_`) write through `data_for_write` (device, bounds,
//! read-only, internal-overlap checks) and bump the shared version counter exactly once;
//! freshly made outputs are not bumped.
//!
//! Unsafe code: the kernels and the engine work on raw pointers (see `kernels.rs` for why
//! and for the contract they share), except the float -> integer kernels (`float_int/`),
//! which get aligned contiguous runs as slices and are safe functions; SIMD code runs
//! after one check in `cpu.rs`. Every unsafe operation in this module and its submodules
//! states its reason, enforced here (also inside `unsafe fn` bodies).

pub(crate) mod affine;
mod cpu;
pub(crate) mod engine;
mod float8;
mod float_int;
pub(crate) mod kernels;
pub(crate) mod parallel;
pub(crate) mod yuv;

use crate::dtype::{write_scalar, DType, Scalar};
use crate::error::{Error, Result, Status};
use crate::shape::{self, fmt_dims, Dims};
use crate::storage::StorageKind;
use crate::tensor_impl::{MemoryFormat, Tensor, TensorImpl};
use engine::{execute, Kernel, Plan};
use kernels::{Bytes16, Convert, CopySame, Equal};

/// Up to this many bytes, a dense same-layout same-dtype copy skips the engine (clone of
/// small tensors): one copy of the span (`kernels::copy_bytes`), as fast as the engine's
/// single-threaded copy at these sizes without its planning (a 16 KiB clone took 2.4x a
/// `malloc` + `memcpy` + `free` through the engine; the engine's streaming stores and
/// threads start far above).
const SMALL_COPY_BYTES: usize = 64 << 10;

/// Runs `k` over two operands laid out as (`sizes`, `st0`) and (`sizes`, `st1`).
///
/// # Safety
/// Both layouts must be valid for their pointers (validated tensor layouts over live
/// storages); `p0` must be writable when the kernel writes.
#[allow(clippy::too_many_arguments)]
unsafe fn run_engine(
    sizes: &[i64],
    p0: *mut u8,
    st0: &[i64],
    isz0: usize,
    p1: *const u8,
    st1: &[i64],
    isz1: usize,
    k: &mut dyn Kernel,
) -> bool {
    match Plan::new(sizes, st0, isz0, st1, isz1) {
        // SAFETY: the plan only drops size-1 dims, reorders and merges the two layouts:
        // it addresses exactly their elements, which our contract makes valid.
        Some(plan) => unsafe { execute(&plan, p0, p1, isz0, isz1, k) },
        None => true,
    }
}

/// Copies (converting dtypes) `src` data, laid out with `src_st` over `sizes`, into `dst`
/// data laid out with `dst_st`. The one dtype dispatch of every copying op. Big copies
/// are split over threads when the user asked for more than one, or over the host's
/// executor when one is set (`parallel.rs`).
///
/// # Safety
/// As [`run_engine`]; the two regions must not overlap.
#[allow(clippy::too_many_arguments)]
unsafe fn copy_raw(
    sizes: &[i64],
    dst: *mut u8,
    dst_st: &[i64],
    dst_dtype: DType,
    src: *const u8,
    src_st: &[i64],
    src_dtype: DType,
) {
    let (i0, i1) = (dst_dtype.itemsize(), src_dtype.itemsize());
    // numel of a validated layout fits; its bytes saturate (only a size hint).
    // (Saturating: with a size-0 dim the other sizes may multiply past i64.)
    let numel = match shape::numel(sizes) {
        Ok(n) => n as usize,
        Err(_) => usize::MAX,
    };
    let out_bytes = numel.saturating_mul(i0);
    // Only a dst whose elements provably do not share memory is split: the parts of one
    // that may (PyTorch's TOO_HARD layouts, accepted by copy_) would write the same
    // element from two threads at once, and a 16-byte element could end up half each.
    let split =
        parallel::split(sizes, out_bytes).filter(|_| crate::layout::non_overlapping(sizes, dst_st));
    let Some(split) = split else {
        // SAFETY: our contract, which is copy_part's.
        return unsafe {
            copy_part(
                sizes, dst, dst_st, dst_dtype, src, src_st, src_dtype, out_bytes,
            )
        };
    };
    // Each part is the sub-box [start, start + len) of dim d: disjoint parts of dst (its
    // elements do not share memory, checked above).
    let (dst_addr, src_addr) = (dst as usize, src as usize);
    let d = split.dim;
    parallel::run_parts(sizes[d], &split, &|start, len| {
        let mut part: Dims = sizes.into();
        part[d] = len;
        let (od, os) = (start * dst_st[d] * i0 as i64, start * src_st[d] * i1 as i64);
        // SAFETY: the offsets stay inside the validated layouts (start < sizes[d]); the
        // parts write disjoint elements of a non-overlapping dst.
        unsafe {
            copy_part(
                &part,
                (dst_addr as *mut u8).offset(od as isize),
                dst_st,
                dst_dtype,
                (src_addr as *const u8).offset(os as isize),
                src_st,
                src_dtype,
                out_bytes,
            )
        }
    });
}

/// [`copy_raw`] of one part on the calling thread; `out_bytes` is the whole output's size
/// (it picks streaming stores).
///
/// # Safety
/// As [`copy_raw`].
#[allow(clippy::too_many_arguments)]
unsafe fn copy_part(
    sizes: &[i64],
    dst: *mut u8,
    dst_st: &[i64],
    dst_dtype: DType,
    src: *const u8,
    src_st: &[i64],
    src_dtype: DType,
    out_bytes: usize,
) {
    let (i0, i1) = (dst_dtype.itemsize(), src_dtype.itemsize());
    // The engine over the two layouts with kernel `$k` (a `&mut` to it).
    macro_rules! engine {
        ($k:expr) => {
            run_engine(sizes, dst, dst_st, i0, src, src_st, i1, $k)
        };
    }
    // bool -> bool converts too: a bool byte other than 0 / 1 (foreign memory, a
    // view_dtype) is written as 1, as PyTorch's copies do.
    if dst_dtype == src_dtype && dst_dtype != DType::Bool {
        // Same dtype: only the item width matters.
        macro_rules! same {
            ($word:ty) => {
                engine!(&mut CopySame::<$word>::new(out_bytes))
            };
        }
        // SAFETY: our contract is run_engine's; the word moved is the item size i0
        // (== i1: same dtype), so the kernel's reads and writes are the layouts' items.
        unsafe {
            match i0 {
                1 => same!(u8),
                2 => same!(u16),
                4 => same!(u32),
                8 => same!(u64),
                _ => same!(Bytes16),
            }
        };
    } else {
        // SAFETY: our contract is run_engine's; S and D are the layouts' dtypes.
        unsafe {
            crate::dtype::with_dtype!(src_dtype, S => crate::dtype::with_dtype!(dst_dtype, D => {
                engine!(&mut Convert::<S, D>::new(out_bytes));
            }));
        }
    }
}

/// Strides of `src` broadcast to `sizes` (stride 0 on new and expanded dims), or PyTorch's
/// error when `src` does not broadcast to exactly `sizes`.
fn broadcast_strides(sizes: &[i64], src: &TensorImpl) -> Result<Dims> {
    broadcast_layout(sizes, src.sizes(), src.strides())
}

/// [`broadcast_strides`] of a layout given as sizes and strides.
fn broadcast_layout(sizes: &[i64], src_sizes: &[i64], src_strides: &[i64]) -> Result<Dims> {
    let b = shape::broadcast_shapes(sizes, src_sizes)?;
    ensure!(
        &b[..] == sizes,
        Shape,
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_dims(sizes),
        fmt_dims(&b)
    );
    let lead = sizes.len() - src_sizes.len();
    let mut st = shape::zeros(sizes.len())?;
    for (d, s) in st.iter_mut().enumerate() {
        if d >= lead && src_sizes[d - lead] == sizes[d] {
            *s = src_strides[d - lead];
        }
    }
    Ok(st)
}

/// `src`'s strides for a channel-mapped read along `dst`'s dim `d` (copy_affine_ with a
/// `src_index`): every other dim broadcasts as [`broadcast_strides`]; dim `d` of `src`
/// (aligned from the right; a missing dim counts as size 1) may have any size and keeps
/// its own stride. Also gives that size, the range of the indices.
fn mapped_strides(sizes: &[i64], d: usize, src: &TensorImpl) -> Result<(Dims, i64)> {
    let lead = sizes.len().checked_sub(src.ndim());
    let Some(own) = lead.filter(|&l| d >= l).map(|l| d - l) else {
        // No dim d in src (or more dims than dst: broadcast_strides's error).
        return Ok((broadcast_strides(sizes, src)?, 1));
    };
    let mut ss = shape::dims_from_slice(src.sizes())?;
    ss[own] = sizes[d];
    let mut st = broadcast_layout(sizes, &ss, src.strides())?;
    st[d] = src.strides()[own];
    Ok((st, src.sizes()[own]))
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
/// object (two mappings of one file or memfd: `files::mmap::same_pages`, which compares
/// file offsets). Disjoint ranges keep the direct copy. The one overlap rule of every
/// copying op (`copy_`, `copy_affine_`).
fn may_overlap(dst: &TensorImpl, src: &TensorImpl) -> bool {
    if dst.numel() == 0 || src.numel() == 0 {
        return false;
    }
    let (a, b) = (address_range(dst), address_range(src));
    if a.0 < b.1 && b.0 < a.1 {
        return true;
    }
    let (ds, ss) = (dst.storage(), src.storage());
    ds.kind() == StorageKind::Mapped
        && ss.kind() == StorageKind::Mapped
        && crate::files::mmap::same_pages(ds, a, ss, b)
}

/// Bytes of output per block and per index in copy_affine_'s blocked walk (the block's src
/// stays in L2 while every index of `dim` reads it: 384 KiB of a uint8 HWC frame for a
/// float32 output). 512 KiB rather than 128 KiB: fewer switches between the output's
/// planes; a 1080p frame went from 1.06-1.09x a hand loop's time to 0.98-1.00x
/// (`bench_norm`, streaming stores, same run).
const AFFINE_BLOCK: usize = 512 << 10;

/// What [`TensorImpl::like_strides`] gives: `self`'s own strides, borrowed (no copy on a
/// small clone's path), or new ones.
enum LikeStrides<'a> {
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
    /// `dst.copy_(src)`: broadcasts `src` to `self`'s shape and converts its dtype; when
    /// the two share memory the result is that of copying from a snapshot of `src`.
    /// Errors: Shape (broadcast), Device, OutOfBounds, ReadOnly, Overlap (self has
    /// internal overlap).
    pub fn copy_(&self, src: &TensorImpl) -> Result<()> {
        // As PyTorch: copying the very same elements is a no-op that skips every layout
        // check (even on an expanded dst), and dst's internal overlap is refused before
        // the broadcast is checked.
        let same = std::ptr::eq(self, src)
            || (self.data_ptr() == src.data_ptr()
                && self.dtype() == src.dtype()
                && self.sizes() == src.sizes()
                && self.strides() == src.strides());
        self.dtype().check_convert_from(src.dtype(), "copy_")?;
        let dst_ptr = self.data_for_write(same)?;
        let src_st = broadcast_strides(self.sizes(), src)?;
        let src_ptr = src.data_for_read()?;
        if !same && self.numel() > 0 {
            if may_overlap(self, src) {
                // Snapshot: src into a fresh buffer first, then into dst.
                let tmp = src.deep_clone(MemoryFormat::Preserve)?;
                let tmp_st = broadcast_strides(self.sizes(), &tmp)?;
                // SAFETY: validated layouts (data_for_write/read above; tmp is fresh) and
                // tmp does not share memory with self.
                unsafe {
                    copy_raw(
                        self.sizes(),
                        dst_ptr,
                        self.strides(),
                        self.dtype(),
                        tmp.data_ptr(),
                        &tmp_st,
                        tmp.dtype(),
                    )
                };
            } else {
                // SAFETY: validated layouts that do not overlap.
                unsafe {
                    copy_raw(
                        self.sizes(),
                        dst_ptr,
                        self.strides(),
                        self.dtype(),
                        src_ptr,
                        &src_st,
                        src.dtype(),
                    )
                };
            }
        }
        self.bump_version();
        Ok(())
    }

    /// `copy_affine_`: `self[..., c, ...] = src[..., c, ...] · scale_c + shift_c` for
    /// every index `c` of `self`'s dim `dim`, where `(scale_c, shift_c) = param(c)` and
    /// `n` (1, or the size of that dim) is how many there are (`param` is called only
    /// with `c < n`, after `n` is checked; with `n == 1`, `param(0)` serves every index).
    /// `src` is broadcast to `self` and converted as `copy_` converts (see `affine.rs` for
    /// the arithmetic). Errors: Index (dim), InvalidArgument (n), DType (complex), Shape
    /// (broadcast), Device, OutOfBounds, ReadOnly, Overlap, OutOfMemory (snapshot).
    ///
    /// `src_index` (the channel map, `copy_affine_ex`): index `c` of `dim` reads index
    /// `src_index(c)` of `src`'s dim (called for every `c` below the size of `dim`); that
    /// dim of `src` may then have any size (each index must be inside it), the other dims
    /// broadcast. `None` is the identity (and the plain broadcast rule).
    pub fn copy_affine_(
        &self,
        src: &TensorImpl,
        dim: i64,
        n: i64,
        param: &dyn Fn(usize) -> (f64, f64),
        src_index: Option<&dyn Fn(usize) -> i64>,
    ) -> Result<()> {
        let d = shape::wrap_dim(dim, self.ndim())?;
        let size = if self.ndim() == 0 { 1 } else { self.sizes()[d] };
        ensure!(
            n == 1 || n == size,
            InvalidArgument,
            "n (the number of scale and shift values) must be 1 or {size} (the size of dim {dim}), got {n}"
        );
        let n = n as usize;
        for t in [self, src] {
            ensure!(
                !t.dtype().is_complex(),
                DType,
                "copy_affine_ does not support complex tensors (got {})",
                t.dtype().name()
            );
            t.dtype().check_has_values("copy_affine_")?;
        }
        // The source index of every index of dim (identity without a map), checked
        // against the size of src's dim before any data is touched.
        let mut index: Vec<i64> = Vec::new();
        index.try_reserve_exact(size as usize).map_err(|_| {
            Error::from_fmt(
                Status::OutOfMemory,
                format_args!("failed to allocate the {size} source indices"),
            )
        })?;
        let strides_of = |t: &TensorImpl| -> Result<(Dims, i64)> {
            if src_index.is_some() && self.ndim() > 0 {
                mapped_strides(self.sizes(), d, t)
            } else {
                Ok((broadcast_strides(self.sizes(), t)?, size))
            }
        };
        let dst_ptr = self.data_for_write(false)?;
        let (src_st, src_size) = strides_of(src)?;
        match src_index {
            Some(f) => {
                for c in 0..size as usize {
                    let i = f(c);
                    ensure!(
                        (0..src_size).contains(&i),
                        Index,
                        "src_index[{c}] is {i}, out of range for size {src_size} of src's dim {dim}"
                    );
                    index.push(i);
                }
            }
            None => index.extend(0..size),
        }
        // One pass over everything: one scale and shift, and each index reads its own.
        let whole = n == 1 && src_size == size && index.iter().copied().eq(0..size);
        let src_ptr = src.data_for_read()?;
        if self.numel() > 0 {
            let snapshot;
            let (sp, sst, sdt) = if may_overlap(self, src) {
                snapshot = src.deep_clone(MemoryFormat::Preserve)?;
                let st = strides_of(&snapshot)?.0;
                (snapshot.data_ptr() as *const u8, st, snapshot.dtype())
            } else {
                (src_ptr as *const u8, src_st, src.dtype())
            };
            let (dt, isz, ssz) = (
                self.dtype(),
                self.itemsize() as isize,
                sdt.itemsize() as isize,
            );
            let stream = kernels::streams_output(self.numel() as usize * self.itemsize());
            if whole {
                let (a, b) = param(0);
                // SAFETY: validated layouts that do not overlap (snapshot otherwise).
                unsafe {
                    affine::affine_raw(
                        self.sizes(),
                        dst_ptr,
                        self.strides(),
                        dt,
                        sp,
                        &sst,
                        sdt,
                        a,
                        b,
                        stream,
                    )
                };
            } else {
                // One engine pass per index of `dim`, over the other dims, block by block
                // of the outermost of those (in dst's order), so that a block of src read
                // by the first index is still in cache for the others (an HWC frame is
                // read from memory once, not once per channel).
                // Every list allocated fallibly (more than five dims, the parameters).
                let rest = |v: &[i64]| -> Result<Dims> {
                    let mut r = shape::dims_with_capacity(v.len() - 1)?;
                    r.extend(
                        v.iter()
                            .enumerate()
                            .filter(|&(i, _)| i != d)
                            .map(|(_, &x)| x),
                    );
                    Ok(r)
                };
                let (mut sizes, dst_st, src_st) =
                    (rest(self.sizes())?, rest(self.strides())?, rest(&sst)?);
                let (dstep, sstep) = (self.strides()[d] as isize * isz, sst[d] as isize * ssz);
                let mut params: Vec<(f64, f64)> = Vec::new();
                params.try_reserve_exact(n).map_err(|_| {
                    Error::from_fmt(
                        Status::OutOfMemory,
                        format_args!("failed to allocate the {n} scale and shift values"),
                    )
                })?;
                params.extend((0..n).map(param));
                let param_of = |c: usize| params[if n == 1 { 0 } else { c }];
                let outer = (0..sizes.len())
                    .filter(|&i| sizes[i] > 1)
                    .max_by_key(|&i| dst_st[i]);
                let (total, per) = match outer {
                    // Outer-dim items per block: about AFFINE_BLOCK bytes of dst per index.
                    Some(o) => {
                        let item = (self.numel() / size / sizes[o]).max(1) as usize * isz as usize;
                        (sizes[o], (AFFINE_BLOCK / item).max(1) as i64)
                    }
                    None => (1, 1),
                };
                let mut start = 0;
                while start < total {
                    let len = per.min(total - start);
                    let (doff, soff) = match outer {
                        Some(o) => {
                            sizes[o] = len;
                            (
                                start as isize * dst_st[o] as isize * isz,
                                start as isize * src_st[o] as isize * ssz,
                            )
                        }
                        None => (0, 0),
                    };
                    for (c, &i) in index.iter().enumerate() {
                        let (a, b) = param_of(c);
                        // SAFETY: index c of dim d (of dst), index i of it (of src, checked
                        // against its size above) and items start..start+len of the
                        // outer dim are inside both layouts; the sub-layouts are those
                        // layouts restricted to them.
                        unsafe {
                            affine::affine_raw(
                                &sizes,
                                dst_ptr.offset(c as isize * dstep + doff),
                                &dst_st,
                                dt,
                                sp.offset(i as isize * sstep + soff),
                                &src_st,
                                sdt,
                                a,
                                b,
                                stream,
                            )
                        };
                    }
                    start += len;
                }
            }
            if stream {
                kernels::fence_streaming_stores();
            }
        }
        self.bump_version();
        Ok(())
    }

    /// Sets every element to `value` converted to the dtype (dtype.rs rules). As in
    /// PyTorch, a destination whose elements alias (an expanded view) is allowed: filling
    /// is idempotent, so each distinct location is written once (stride-0 dims collapse to
    /// size 1). Errors: Device, OutOfBounds, ReadOnly.
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        self.dtype().check_has_values("fill_")?;
        let dst = self.data_for_write(true)?;
        let mut item = [0u8; 16];
        // SAFETY: 16 bytes hold any dtype's item.
        unsafe { write_scalar(self.dtype(), item.as_mut_ptr(), value) };
        let zeros = shape::zeros(self.ndim())?;
        let distinct = self.distinct_sizes()?;
        // SAFETY: validated destination; the source is one item read with stride 0.
        unsafe {
            copy_raw(
                &distinct,
                dst,
                self.strides(),
                self.dtype(),
                item.as_ptr(),
                &zeros,
                self.dtype(),
            )
        };
        self.bump_version();
        Ok(())
    }

    /// The sizes with every stride-0 dim collapsed to (at most) 1: with `self`'s strides,
    /// each distinct memory location once (an expanded view of 10^18 elements may hold
    /// three).
    fn distinct_sizes(&self) -> Result<Dims> {
        let mut out = shape::dims_from_slice(self.sizes())?;
        for (n, &s) in out.iter_mut().zip(self.strides()) {
            if s == 0 {
                *n = (*n).min(1);
            }
        }
        Ok(out)
    }

    /// The strides `empty_like` / `clone` give a tensor like `self` in `fmt`: Preserve
    /// keeps the exact strides of a non-overlapping-and-dense tensor, else dense strides
    /// in `self`'s dim order (PyTorch's infer_dense_strides).
    fn like_strides(&self, fmt: MemoryFormat) -> Result<LikeStrides<'_>> {
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

    /// An uninitialised tensor with `self`'s sizes, dtype and the layout of `fmt` (see
    /// `like_strides`). Errors: InvalidArgument (channels-last on the
    /// wrong rank), OutOfMemory.
    pub fn empty_like(&self, fmt: MemoryFormat) -> Result<Tensor> {
        Tensor::empty_strided(self.sizes(), &self.like_strides(fmt)?, self.dtype())
    }

    /// A new tensor with `dtype` and `strides`, holding `self`'s values converted.
    fn copy_to_new(&self, strides: &[i64], dtype: DType) -> Result<Tensor> {
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
        // Every byte of out's fresh storage is about to be written (its layout is dense).
        let block = out.storage();
        crate::allocator::prefault_for_write(block.data_ptr(), block.nbytes());
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

    /// `repeat(repeats)`: tiles `self` `repeats[i]` times along dim i (leading extra
    /// repeats add dims). Built as one engine copy from a stride-0 "expanded" view of the
    /// source into the output seen as `[r0, n0, r1, n1, ...]`.
    pub fn repeat(&self, repeats: &[i64]) -> Result<Tensor> {
        ensure!(
            repeats.len() >= self.ndim(),
            InvalidArgument,
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        );
        shape::check_ndim(repeats.len())?;
        let lead = repeats.len() - self.ndim();
        let padded = |d: usize| {
            if d < lead {
                (1, 0)
            } else {
                (self.sizes()[d - lead], self.strides()[d - lead])
            }
        };
        let mut out_sizes = shape::dims_with_capacity(repeats.len())?;
        for (d, &r) in repeats.iter().enumerate() {
            out_sizes.push(r.checked_mul(padded(d).0).ok_or_else(|| {
                crate::error::Error::new(
                    crate::error::Status::Overflow,
                    "repeat: output size overflows int64",
                )
            })?);
        }
        if let Some(&n) = out_sizes.iter().find(|&&n| n < 0) {
            bail!(
                InvalidArgument,
                "Trying to create tensor with negative dimension {n}: {}",
                fmt_dims(&out_sizes)
            );
        }
        let src = self.data_for_read()?;
        let out = Tensor::empty(&out_sizes, self.dtype())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let mut sizes = shape::dims_with_capacity(2 * repeats.len())?;
        let mut dst_st = shape::dims_with_capacity(2 * repeats.len())?;
        let mut src_st = shape::dims_with_capacity(2 * repeats.len())?;
        for (d, &r) in repeats.iter().enumerate() {
            let (n, st) = padded(d);
            let os = out.strides()[d];
            sizes.extend([r, n]);
            // n <= r·n, a size of the (allocated) output: cannot overflow; checked anyway.
            dst_st.extend([shape::mul(os, n, "repeat stride")?, os]);
            src_st.extend([0, st]);
        }
        // SAFETY: self validated; out fresh; the interleaved layout addresses exactly the
        // contiguous output (repeat index r and source index i of dim d land on
        // (r·n + i)·stride).
        unsafe {
            copy_raw(
                &sizes,
                out.data_ptr(),
                &dst_st,
                self.dtype(),
                src,
                &src_st,
                self.dtype(),
            )
        };
        Ok(out)
    }

    /// `torch.equal`: same sizes and equal values (NaN != NaN). Mixed dtypes are compared
    /// after PyTorch's type promotion. Errors: DType (unsupported promotion), Device,
    /// OutOfBounds.
    pub fn equal(&self, other: &TensorImpl) -> Result<bool> {
        // Sizes first, as PyTorch: different sizes are unequal even when the dtypes do not
        // promote.
        if self.sizes() != other.sizes() {
            return Ok(false);
        }
        if self.dtype() == other.dtype() {
            self.dtype().check_has_values("equal")?;
        }
        let common = self.dtype().promote(other.dtype())?;
        let (pa, pb) = (self.data_for_read()?, other.data_for_read()?);
        if self.dtype() != common || other.dtype() != common {
            let a = self.copy_to_new(&self.like_strides(MemoryFormat::Preserve)?, common)?;
            let b = other.copy_to_new(&other.like_strides(MemoryFormat::Preserve)?, common)?;
            return a.equal(&b);
        }
        let isz = self.itemsize();
        // ATen's alias fast path (cpu_equal): the same elements of the same bytes (here the
        // same address, whatever the storages) are equal, except that a floating or
        // complex NaN is never equal to itself: then compare each distinct element with
        // itself (stride-0 dims collapsed, so an expanded view costs what its base does).
        if pa == pb && self.strides() == other.strides() {
            if !common.is_floating_point() && !common.is_complex() {
                return Ok(true);
            }
            let distinct = self.distinct_sizes()?;
            return Ok(crate::dtype::with_dtype!(common, T => {
                let mut k = Equal::<T>::new();
                // SAFETY: a layout validated by data_for_read, read twice.
                unsafe { run_engine(&distinct, pa, self.strides(), isz, pa, self.strides(), isz, &mut k) };
                k.equal
            }));
        }
        Ok(crate::dtype::with_dtype!(common, T => {
            let mut k = Equal::<T>::new();
            // SAFETY: both layouts validated by data_for_read; the kernel only reads.
            unsafe { run_engine(self.sizes(), pa, self.strides(), isz, pb, other.strides(), isz, &mut k) };
            k.equal
        }))
    }
}

impl Tensor {
    /// `contiguous(fmt)`: `self` (the same handle) when already contiguous in `fmt`, else a
    /// copy laid out in `fmt`. Errors: InvalidArgument (Preserve; channels-last on the
    /// wrong rank), Device, OutOfBounds, OutOfMemory.
    pub fn contiguous(&self, fmt: MemoryFormat) -> Result<Tensor> {
        ensure!(
            fmt != MemoryFormat::Preserve,
            InvalidArgument,
            "preserve memory format is unsupported by the contiguous operator"
        );
        if self.is_contiguous(fmt) {
            return Ok(self.clone());
        }
        self.copy_to_new(&fmt.strides_for(self.sizes())?, self.dtype())
    }

    /// `to(dtype)`: `self` (the same handle) when the dtype already matches, else a
    /// converted copy with the preserve-format layout.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        self.copy_to_new(&self.like_strides(MemoryFormat::Preserve)?, dtype)
    }

    /// `reshape(sizes)`: a view when the strides allow it, else a contiguous copy viewed.
    pub fn reshape(&self, sizes: &[i64]) -> Result<Tensor> {
        match self.try_view(sizes)? {
            Some(v) => Ok(v),
            None => self.deep_clone(MemoryFormat::Contiguous)?.view(sizes),
        }
    }

    /// `flatten(start, end)`: dims start..=end merged (reshape semantics); a 0-dim tensor
    /// becomes `[1]`; start == end gives an alias.
    pub fn flatten(&self, start: i64, end: i64) -> Result<Tensor> {
        let s = shape::wrap_dim(start, self.ndim())?;
        let e = shape::wrap_dim(end, self.ndim())?;
        ensure!(
            s <= e,
            InvalidArgument,
            "flatten() has invalid args: start_dim cannot come after end_dim"
        );
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        if s == e {
            return self.make_view(self.sizes(), self.strides(), self.storage_offset());
        }
        let n = self.sizes();
        let mut sizes = shape::dims_with_capacity(n.len() - (e - s))?;
        sizes.extend_from_slice(&n[..s]);
        sizes.push(shape::numel(&n[s..=e])?);
        sizes.extend_from_slice(&n[e + 1..]);
        self.reshape(&sizes)
    }
}

/// Reads every element of `t` in row-major order through the checked per-element path
/// (the reference the tests compare the engine against).
#[cfg(test)]
pub(crate) fn reference_values(t: &TensorImpl) -> Vec<Scalar> {
    let mut out = Vec::new();
    let n = t.sizes().to_vec();
    if n.contains(&0) {
        return out;
    }
    let mut idx = vec![0usize; n.len()];
    loop {
        let at: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
        out.push(t.get(&at).unwrap());
        if !engine::odometer_step(&mut idx, |d| n[d] as usize, |_, _| {}) {
            return out;
        }
    }
}

#[cfg(test)]
mod tests;

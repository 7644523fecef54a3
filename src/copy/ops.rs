//! Layer 1 of `copy/`, the ops and their argument rules: copy_, copy_affine_, fill_,
//! contiguous, clone, empty_like, to_dtype, repeat, reshape/flatten (when a view is
//! impossible) and equal (`copy_yuv_affine_` is `yuv.rs`). Each one checks its arguments in
//! PyTorch's order, then writes through the write step (`write.rs`: the checked destination,
//! the snapshot of an overlapping source, the streaming choice, the one version bump) and
//! the engine's dtype dispatch (`engine/dispatch.rs`); none has loops of its own.

use super::engine::dispatch::{affine_raw, copy_raw, run_engine};
use super::kernels::Equal;
use super::write::{fresh_output, Write};
use crate::dtype::{write_scalar, DType, Scalar};
use crate::error::{Error, Result, Status};
use crate::shape::{self, fmt_dims, Dims};
use crate::tensor_impl::{MemoryFormat, Tensor, TensorImpl};

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

/// Bytes of output per block and per index in copy_affine_'s blocked walk (the block's src
/// stays in L2 while every index of `dim` reads it: 384 KiB of a uint8 HWC frame for a
/// float32 output). 512 KiB rather than 128 KiB: fewer switches between the output's
/// planes; a 1080p frame went from 1.06-1.09x a hand loop's time to 0.98-1.00x
/// (`bench_norm`, streaming stores, same run).
const AFFINE_BLOCK: usize = 512 << 10;

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
        let w = Write::begin(self, same)?;
        let src_st = broadcast_strides(self.sizes(), src)?;
        if same {
            src.data_for_read()?;
        } else {
            let s = w.source(src)?;
            if self.numel() > 0 {
                // A snapshot (src copied first: it shares memory with self) has strides
                // of its own.
                let st = if s.is_snapshot() {
                    broadcast_strides(self.sizes(), s.tensor())?
                } else {
                    src_st
                };
                // SAFETY: validated layouts (Write::begin / source) that do not overlap (a
                // source that might is read from its snapshot).
                unsafe {
                    copy_raw(
                        self.sizes(),
                        w.ptr(),
                        self.strides(),
                        self.dtype(),
                        s.ptr(),
                        &st,
                        s.tensor().dtype(),
                        w.stream(),
                    )
                };
            }
        }
        w.finish();
        Ok(())
    }

    /// `copy_affine_`: `self[..., c, ...] = src[..., c, ...] · scale_c + shift_c` for
    /// every index `c` of `self`'s dim `dim`, where `(scale_c, shift_c) = param(c)` and
    /// `n` (1, or the size of that dim) is how many there are (`param` is called only
    /// with `c < n`, after `n` is checked; with `n == 1`, `param(0)` serves every index).
    /// `src` is broadcast to `self` and converted as `copy_` converts (see `kernels/affine.rs` for
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
        let w = Write::begin(self, false)?;
        let dst_ptr = w.ptr();
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
        let s = w.source(src)?;
        if self.numel() > 0 {
            let (sp, sdt) = (s.ptr(), s.tensor().dtype());
            let sst = if s.is_snapshot() {
                strides_of(s.tensor())?.0
            } else {
                src_st
            };
            let (dt, isz, ssz) = (
                self.dtype(),
                self.itemsize() as isize,
                sdt.itemsize() as isize,
            );
            let stream = w.stream();
            if whole {
                let (a, b) = param(0);
                // SAFETY: validated layouts that do not overlap (snapshot otherwise).
                unsafe {
                    affine_raw(
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
                            affine_raw(
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
        }
        w.finish();
        Ok(())
    }

    /// Sets every element to `value` converted to the dtype (dtype.rs rules). As in
    /// PyTorch, a destination whose elements alias (an expanded view) is allowed: filling
    /// is idempotent, so each distinct location is written once (stride-0 dims collapse to
    /// size 1). Errors: Device, OutOfBounds, ReadOnly.
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        self.dtype().check_has_values("fill_")?;
        let w = Write::begin(self, true)?;
        let mut item = [0u8; 16];
        // SAFETY: 16 bytes hold any dtype's item.
        unsafe { write_scalar(self.dtype(), item.as_mut_ptr(), value) };
        let zeros = shape::zeros(self.ndim())?;
        let distinct = self.distinct_sizes()?;
        // SAFETY: validated destination; the source is one item read with stride 0.
        unsafe {
            copy_raw(
                &distinct,
                w.ptr(),
                self.strides(),
                self.dtype(),
                item.as_ptr(),
                &zeros,
                self.dtype(),
                w.stream(),
            )
        };
        w.finish();
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

    /// An uninitialised tensor with `self`'s sizes, dtype and the layout of `fmt` (see
    /// `like_strides`). Errors: InvalidArgument (channels-last on the
    /// wrong rank), OutOfMemory.
    pub fn empty_like(&self, fmt: MemoryFormat) -> Result<Tensor> {
        Tensor::empty_strided(self.sizes(), &self.like_strides(fmt)?, self.dtype())
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
        let stream = fresh_output(&out);
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
                stream,
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

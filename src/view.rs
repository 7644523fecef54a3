//! View operations (docs/c-api.md, "Views"). Each rule is a pure function from a borrowed
//! layout ([`LayoutRef`]: sizes, strides, storage offset) to the view's [`Layout`] — the
//! very value the new TensorImpl stores — or PyTorch's error; then one `TensorImpl` method
//! per operation moves that layout into [`TensorImpl::make_view_layout`] (or, checked for
//! another dtype, [`TensorImpl::share`]), which validates it once
//! ([`CheckedLayout::check`]), builds the TensorImpl over the same storage and shares the
//! version counter (the cached flags wait for their first reader:
//! `layout::CachedFlags`). The rules that pick each dim of the input (transpose, t, slice,
//! narrow, select, permute, unsqueeze) return the layout described dim by dim instead ([`LazyLayout`]), which
//! [`TensorImpl::make_view_lazy`] writes straight into the new TensorImpl and validates
//! there, the same way; view and expand, which compute their dims in a pass over the
//! output, return it as a fill of zeroed sizes and strides ([`FilledLayout`]), which
//! [`TensorImpl::make_view_filled`] runs in the new TensorImpl. No view touches element data, and for <= `MAX_INLINE_DIMS` dims
//! the only heap allocation is the TensorImpl itself (the layout is inline).
//!
//! Status codes: a dim or element index out of range is `Index`; a size rule between the
//! tensor and the request (expand, view(dtype), t() on > 2 dims, unfold size) is `Shape`;
//! a bad argument value (step <= 0, negative length / size / stride / offset, duplicate or
//! identical dims, wrong number of dims for permute) is `InvalidArgument`; a layout outside
//! the storage is `OutOfBounds`; int64 overflow is `Overflow`.

use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::layout::{CheckedLayout, DimSource, Fill, FilledLayout, Layout, LayoutRef, LazyLayout};
use crate::shape::{self, fmt_dims, wrap_dim};
use crate::tensor_impl::{Tensor, TensorImpl};

/// A layout of `nd` dims (offset `offset`) whose first dims are `src`'s dims `k` with
/// `keep(k)`, in order; any slots after them stay 0 for the caller to fill. Written once,
/// without copying all dims and then shifting (select, squeeze, diagonal).
#[inline]
fn kept_dims(
    src: LayoutRef,
    nd: usize,
    offset: i64,
    keep: impl Fn(usize) -> bool,
) -> Result<Layout> {
    let (n, st) = (src.sizes, src.strides);
    let mut g = Layout::zeros(nd, offset)?;
    let (sizes, strides) = g.dims_mut();
    let kept = (0..n.len()).filter(|&k| keep(k));
    for ((size, stride), k) in sizes.iter_mut().zip(strides.iter_mut()).zip(kept) {
        *size = n[k];
        *stride = st[k];
    }
    Ok(g)
}

/// The layout of `src` without dim `d` (< its ndim).
#[inline]
fn without(src: LayoutRef, d: usize) -> Result<Layout> {
    kept_dims(src, src.sizes.len() - 1, src.offset, |k| k != d)
}

fn not_viewable() -> Error {
    Error::new(
        Status::NotViewable,
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
    )
}

// ---- the pure rules ---------------------------------------------------------------------

/// `view(sizes)` (one `-1` allowed): `Ok(None)` when the strides cannot express the new
/// shape (reshape then copies; view fails). Errors: as `shape::infer_size`.
#[inline]
pub fn view<'a>(src: LayoutRef<'a>, sizes: &'a [i64]) -> Result<FilledLayout<impl Fill + 'a>> {
    let (n, st, off) = (src.sizes, src.strides, src.offset);
    let numel = shape::numel(n)?;
    shape::check_ndim(sizes.len())?;
    // Sizes and strides are written straight into the layout the view will store.
    Ok(FilledLayout {
        nd: sizes.len(),
        offset: off,
        fill: move |new_sizes: &mut [i64], new_strides: &mut [i64]| {
            shape::infer_size(sizes, numel, new_sizes)?;
            if numel == 0 && n != &new_sizes[..] {
                // No elements: always viewable, with contiguous strides, unless those
                // overflow int64 (an Overflow, not a layout the strides cannot express).
                new_strides.copy_from_slice(&shape::contiguous_strides(new_sizes)?);
                return Ok(true);
            }
            shape::compute_stride(n, st, new_sizes, new_strides)
        },
    })
}

/// The tail of `view_dtype`'s messages ("to view float as short (different element sizes)").
struct ViewDtypeWhat(DType, DType);

impl std::fmt::Display for ViewDtypeWhat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "to view {} as {} (different element sizes)",
            self.0.scalar_type_name(),
            self.1.scalar_type_name()
        )
    }
}

/// `view(dtype)`: reinterprets the bytes. Same itemsize: only the dtype changes. Otherwise
/// the tensor needs >= 1 dim and last stride 1; shrinking by `r` multiplies the last size,
/// the other strides and the offset by `r`; growing by `r` divides them (each must be
/// divisible; PyTorch checks the last size, the offset, the last stride, then the other
/// strides). Errors: Shape (with PyTorch's messages), Overflow.
pub fn view_dtype(src: LayoutRef, from: DType, to: DType) -> Result<Layout> {
    let (n, st, off) = (src.sizes, src.strides, src.offset);
    let (a, b) = (from.itemsize() as i64, to.itemsize() as i64);
    if a == b {
        return Layout::new(n, st, off);
    }
    // Formatted only on failure, into the error's (fallible) message.
    let what = || ViewDtypeWhat(from, to);
    ensure!(!n.is_empty(), Shape, "self.dim() cannot be 0 {}", what());
    let last = n.len() - 1;
    let check_last_stride = || -> Result<()> {
        ensure!(
            st[last] == 1,
            Shape,
            "self.stride(-1) must be 1 {}, but got {}",
            what(),
            st[last]
        );
        Ok(())
    };
    let mut g = Layout::new(n, st, off)?;
    let (sizes, strides) = g.dims_mut();
    if a > b {
        check_last_stride()?;
        let r = a / b;
        sizes[last] = shape::mul(n[last], r, "view(dtype) size")?;
        for s in &mut strides[..last] {
            *s = shape::mul(*s, r, "view(dtype) stride")?;
        }
        g.offset = shape::mul(off, r, "view(dtype) storage offset")?;
    } else {
        let r = b / a;
        ensure!(
            n[last] % r == 0,
            Shape,
            "self.size(-1) must be divisible by {r} {}, but got {}",
            what(),
            n[last]
        );
        ensure!(
            off % r == 0,
            Shape,
            "self.storage_offset() must be divisible by {r} {}, but got {off}",
            what()
        );
        check_last_stride()?;
        for (d, &s) in st[..last].iter().enumerate() {
            ensure!(
                s % r == 0,
                Shape,
                "self.stride({d}) must be divisible by {r} {}, but got {s}",
                what()
            );
        }
        sizes[last] /= r;
        for s in &mut strides[..last] {
            *s /= r;
        }
        g.offset /= r;
    }
    Ok(g)
}

/// `as_strided(sizes, strides, offset)` over a storage of `storage_nbytes` bytes holding
/// elements of `itemsize` bytes. Errors (in PyTorch's order): InvalidArgument (length
/// mismatch, negative stride, negative offset, negative size), Overflow, OutOfBounds.
pub fn as_strided(
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
    itemsize: usize,
    storage_nbytes: usize,
) -> Result<Layout> {
    ensure!(
        sizes.len() == strides.len(),
        InvalidArgument,
        "mismatch in length of strides and shape"
    );
    shape::check_ndim(sizes.len())?;
    ensure!(
        strides.iter().all(|&s| s >= 0),
        InvalidArgument,
        "as_strided: Negative strides are not supported at the moment, got strides: {}",
        fmt_dims(strides)
    );
    ensure!(
        offset >= 0,
        InvalidArgument,
        "Tensor: invalid storage offset {offset}"
    );
    ensure!(
        sizes.iter().all(|&n| n >= 0),
        InvalidArgument,
        "as_strided: Negative sizes are not supported, got sizes: {}",
        fmt_dims(sizes)
    );
    let needed = shape::storage_nbytes_needed(sizes, strides, offset, itemsize).map_err(|e| {
        Error::from_fmt(
            e.status,
            format_args!(
                "Storage size calculation overflowed with sizes={} and strides={}",
                fmt_dims(sizes),
                fmt_dims(strides)
            ),
        )
    })?;
    let l = LayoutRef::new(sizes, strides, offset);
    l.check_fits(itemsize, needed, storage_nbytes)?;
    Layout::new(sizes, strides, offset)
}

/// `transpose(d0, d1)`: swaps two dims (both wrapped; equal dims give the same geometry).
#[inline]
pub fn transpose<'a>(src: LayoutRef<'a>, d0: i64, d1: i64) -> Result<LazyLayout<Swap<'a>>> {
    let n = src.sizes;
    let a = wrap_dim(d0, n.len())?;
    let b = wrap_dim(d1, n.len())?;
    Ok(LazyLayout {
        nd: n.len(),
        offset: src.offset,
        dim: Swap {
            sizes: n,
            strides: &src.strides[..n.len()],
            a,
            b,
        },
    })
}

/// transpose's dims: the input's, with dims `a` and `b` (< the number of dims, as many
/// strides as sizes) swapped.
pub struct Swap<'a> {
    sizes: &'a [i64],
    strides: &'a [i64],
    a: usize,
    b: usize,
}

impl DimSource for Swap<'_> {
    #[inline(always)]
    fn dim(&mut self, i: usize) -> (i64, i64) {
        let j = if i == self.a {
            self.b
        } else if i == self.b {
            self.a
        } else {
            i
        };
        (self.sizes[j], self.strides[j])
    }

    /// The input's block copied, then the two dims written (nothing reads back an item
    /// just stored, the stall that one write per dim avoids inline).
    #[inline(always)]
    unsafe fn fill_heap(&mut self, p: *mut i64, nd: usize) {
        let (n, st, a, b) = (self.sizes, self.strides, self.a, self.b);
        // The struct's invariant (transpose builds it so), asserted: a LazyLayout's fields
        // are public, and an `nd` changed after the rule would read or write out of bounds.
        assert!(nd == n.len() && nd == st.len() && a < nd && b < nd);
        // SAFETY: 2·nd items writable at p (the contract), nd the number of sizes and of
        // strides (asserted), from the input's slices (another block); a, b < nd.
        // (`copy_nonoverlapping`, a `memcpy` call: `shape::copy_dims` here took 12
        // instructions off and made every transpose, whose code this shares, 1.7 ns slower.)
        unsafe {
            std::ptr::copy_nonoverlapping(n.as_ptr(), p, nd);
            std::ptr::copy_nonoverlapping(st.as_ptr(), p.add(nd), nd);
            p.add(a).write(n[b]);
            p.add(b).write(n[a]);
            p.add(nd + a).write(st[b]);
            p.add(nd + b).write(st[a]);
        }
    }
}

/// `t()`: transpose of a <= 2-D tensor (0-D and 1-D are unchanged). Errors: Shape.
pub fn transpose_2d<'a>(src: LayoutRef<'a>) -> Result<LazyLayout<Swap<'a>>> {
    let n = src.sizes;
    ensure!(
        n.len() <= 2,
        Shape,
        "t() expects a tensor with <= 2 dimensions, but self is {}D",
        n.len()
    );
    transpose(src, 0, if n.len() < 2 { 0 } else { 1 })
}

/// `permute(dims)`: dim `i` of the view is dim `dims[i]` of the input. Errors:
/// InvalidArgument (wrong count, duplicates), Index.
#[inline]
pub fn permute<'a>(
    src: LayoutRef<'a>,
    dims: &'a [i64],
) -> Result<LazyLayout<impl FnMut(usize) -> (i64, i64) + 'a>> {
    let (n, st) = (src.sizes, src.strides);
    ensure!(
        dims.len() == n.len(),
        InvalidArgument,
        "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
        n.len(),
        dims.len()
    );
    // A tensor has at most 64 dims (CheckedLayout refuses more): a bit per dim.
    debug_assert!(n.len() <= shape::MAX_DIMS && shape::MAX_DIMS <= 64);
    let mut seen = 0u64;
    for &d in dims {
        let bit = 1u64 << wrap_dim(d, n.len())?;
        let repeated = seen & bit != 0;
        seen |= bit;
        ensure!(
            !repeated,
            InvalidArgument,
            "permute(): duplicate dims are not allowed."
        );
    }
    Ok(LazyLayout {
        nd: n.len(),
        offset: src.offset,
        dim: move |i| {
            // In range: wrap_dim accepted it above (wrapped the same way).
            let d = dims[i];
            let d = if d < 0 { d + n.len() as i64 } else { d } as usize;
            (n[d], st[d])
        },
    })
}

/// `movedim(src, dst)`: dim `src` moves to position `dst`; the other dims keep their
/// relative order. Errors: Index.
pub fn movedim(src: LayoutRef, source: i64, destination: i64) -> Result<Layout> {
    let (n, st) = (src.sizes, src.strides);
    let s = wrap_dim(source, n.len())?;
    let d = wrap_dim(destination, n.len())?;
    let mut g = Layout::zeros(n.len(), src.offset)?;
    let (sizes, strides) = g.dims_mut();
    let mut rest = (0..n.len()).filter(|&k| k != s);
    for i in 0..n.len() {
        let from = if i == d {
            s
        } else {
            rest.next().expect("D-1 other dims fill D-1 slots")
        };
        sizes[i] = n[from];
        strides[i] = st[from];
    }
    Ok(g)
}

/// `slice(dim, start, end, step)` with Python's rules: negative start/end count from the
/// end once, both are clamped to [0, n]; `i64::MAX` means "to the end". Errors: Index
/// (0-dim, dim), InvalidArgument (step <= 0), Overflow.
#[inline]
pub fn slice<'a>(
    src: LayoutRef<'a>,
    dim: i64,
    start: i64,
    end: i64,
    step: i64,
) -> Result<LazyLayout<impl FnMut(usize) -> (i64, i64) + 'a>> {
    let (n, st, off) = (src.sizes, src.strides, src.offset);
    ensure!(
        !n.is_empty(),
        Index,
        "slice() cannot be applied to a 0-dim tensor."
    );
    let d = wrap_dim(dim, n.len())?;
    ensure!(step > 0, InvalidArgument, "slice step must be positive");
    let len = n[d];
    let mut start = if start < 0 { start + len } else { start };
    let mut end = if end < 0 { end + len } else { end };
    start = start.clamp(0, len);
    if end < start {
        end = start;
    } else if end > len {
        end = len;
    }
    let span = end - start;
    let offset = shape::add(
        off,
        shape::mul(start, st[d], "slice offset")?,
        "slice offset",
    )?;
    let size = span / step + i64::from(span % step != 0);
    let stride = shape::mul(st[d], step, "slice stride")?;
    Ok(LazyLayout {
        nd: n.len(),
        offset,
        dim: move |i| {
            if i == d {
                (size, stride)
            } else {
                (n[i], st[i])
            }
        },
    })
}

/// `narrow(dim, start, length)`: `slice(dim, start, start + length)` with strict bounds
/// (start may be negative or equal to the size). Errors: Index (0-dim, dim, start, start +
/// length past the end), InvalidArgument (length < 0).
pub fn narrow<'a>(
    src: LayoutRef<'a>,
    dim: i64,
    start: i64,
    length: i64,
) -> Result<LazyLayout<impl FnMut(usize) -> (i64, i64) + 'a>> {
    let n = src.sizes;
    ensure!(
        !n.is_empty(),
        Index,
        "narrow() cannot be applied to a 0-dim tensor."
    );
    ensure!(
        length >= 0,
        InvalidArgument,
        "narrow(): length must be non-negative."
    );
    let d = wrap_dim(dim, n.len())?;
    let size = n[d];
    ensure!(
        start >= -size && start <= size,
        Index,
        "start out of range (expected to be in range of [{}, {size}], but got {start})",
        -size
    );
    let start = if start < 0 { start + size } else { start };
    ensure!(
        start <= size - length,
        Index,
        "start ({start}) + length ({length}) exceeds dimension size ({size})."
    );
    slice(src, d as i64, start, start + length, 1)
}

/// `select(dim, index)`: drops `dim`, moving the offset to element `index` of it.
/// Errors: Index (0-dim, dim, index).
#[inline]
pub fn select<'a>(
    src: LayoutRef<'a>,
    dim: i64,
    index: i64,
) -> Result<LazyLayout<impl FnMut(usize) -> (i64, i64) + 'a>> {
    let (n, st, off) = (src.sizes, src.strides, src.offset);
    ensure!(
        !n.is_empty(),
        Index,
        "select() cannot be applied to a 0-dim tensor."
    );
    let d = wrap_dim(dim, n.len())?;
    let size = n[d];
    ensure!(
        index >= -size && index < size,
        Index,
        "select(): index {index} out of range for tensor of size {} at dimension {d}",
        fmt_dims(n)
    );
    let i = if index < 0 { index + size } else { index };
    // A layout without elements (another dim of size 0) may have any offset and stride.
    let offset = shape::add(off, shape::mul(i, st[d], "select offset")?, "select offset")?;
    // The dims but `d`, in order.
    Ok(LazyLayout {
        nd: n.len() - 1,
        offset,
        dim: move |k| {
            let j = k + usize::from(k >= d);
            (n[j], st[j])
        },
    })
}

/// `squeeze()`: drops every size-1 dim.
pub fn squeeze(src: LayoutRef) -> Result<Layout> {
    let n = src.sizes;
    let kept = n.iter().filter(|&&size| size != 1).count();
    kept_dims(src, kept, src.offset, |k| n[k] != 1)
}

/// `squeeze(dim)`: drops `dim` if its size is 1, else the same geometry. Errors: Index.
pub fn squeeze_dim(src: LayoutRef, dim: i64) -> Result<Layout> {
    let n = src.sizes;
    let d = wrap_dim(dim, n.len())?;
    if !n.is_empty() && n[d] == 1 {
        without(src, d)
    } else {
        Layout::new(n, src.strides, src.offset)
    }
}

/// `unsqueeze(dim)`: inserts a size-1 dim at `dim` (wrapped against D + 1), stride
/// `n[dim]·st[dim]` (1 at the end). Errors: Index, Overflow.
#[inline]
pub fn unsqueeze<'a>(
    src: LayoutRef<'a>,
    dim: i64,
) -> Result<LazyLayout<impl FnMut(usize) -> (i64, i64) + 'a>> {
    let (n, st) = (src.sizes, src.strides);
    let d = wrap_dim(dim, n.len() + 1)?;
    let stride = if d < n.len() {
        shape::mul(n[d], st[d], "unsqueeze stride")?
    } else {
        1
    };
    Ok(LazyLayout {
        nd: n.len() + 1,
        offset: src.offset,
        dim: move |i| {
            if i == d {
                (1, stride)
            } else {
                let j = i - usize::from(i > d);
                (n[j], st[j])
            }
        },
    })
}

/// `expand(sizes)`: size-1 dims repeat with stride 0, new leading dims are added, `-1`
/// keeps an existing size. A 0-dim input takes `sizes` as they are (all strides 0), as in
/// PyTorch. Errors: Shape (fewer sizes than dims, non-singleton mismatch), InvalidArgument
/// (-1 in a new leading dim, negative resulting size), Overflow.
#[inline]
pub fn expand<'a>(src: LayoutRef<'a>, sizes: &'a [i64]) -> Result<FilledLayout<impl Fill + 'a>> {
    let (n, st) = (src.sizes, src.strides);
    shape::check_ndim(sizes.len())?;
    ensure!(
        sizes.len() >= n.len(),
        Shape,
        "expand(tensor of size {}, size={}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
        fmt_dims(n),
        fmt_dims(sizes),
        sizes.len(),
        n.len()
    );
    let nd = sizes.len();
    Ok(FilledLayout {
        nd,
        offset: src.offset,
        fill: move |new_sizes: &mut [i64], new_strides: &mut [i64]| {
            shape::copy_dims(new_sizes, sizes);
            if !n.is_empty() {
                let lead = nd - n.len();
                for i in (0..nd).rev() {
                    let mut target = sizes[i];
                    let (size, stride) = if i >= lead {
                        let e = i - lead;
                        if target == -1 {
                            target = n[e];
                        }
                        if n[e] == target {
                            (n[e], st[e])
                        } else {
                            ensure!(
                            n[e] == 1,
                            Shape,
                            "The expanded size of the tensor ({target}) must match the existing size ({}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}",
                            n[e],
                            fmt_dims(sizes),
                            fmt_dims(n)
                        );
                            (target, 0)
                        }
                    } else {
                        ensure!(
                        target != -1,
                        InvalidArgument,
                        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                    );
                        // A new size-1 dim keeps the stride it would have in memory order.
                        let inner =
                            shape::mul(new_sizes[i + 1], new_strides[i + 1], "expand stride")?;
                        (target, if target == 1 { inner } else { 0 })
                    };
                    new_sizes[i] = size;
                    new_strides[i] = stride;
                }
            }
            if let Some(bad) = new_sizes.iter().find(|&&s| s < 0) {
                bail!(
                InvalidArgument,
                "expand: the expanded size of the tensor ({bad}) is negative (only -1, on an existing dimension, is allowed).  Target sizes: {}.  Tensor sizes: {}",
                fmt_dims(sizes),
                fmt_dims(n)
            );
            }
            Ok(true)
        },
    })
}

/// `unflatten(dim, sizes)`: splits `dim` into `sizes` (one `-1` allowed), then views.
/// Errors: Index (0-dim, dim), InvalidArgument (empty or invalid sizes), Shape (product).
pub fn unflatten(src: LayoutRef, dim: i64, sizes: &[i64]) -> Result<Layout> {
    let n = src.sizes;
    // ATen's order (at::unflatten; Python's Tensor.unflatten checks the sizes first): the
    // dim (wrapped as for a 1-D tensor when 0-dim), the sizes, then the size of that dim,
    // which a 0-dim tensor does not have.
    let d = wrap_dim(dim, n.len())?;
    ensure!(
        !sizes.is_empty(),
        InvalidArgument,
        "unflatten: sizes must be non-empty"
    );
    ensure!(
        !n.is_empty(),
        Index,
        "Dimension specified as {d} but tensor has no dimensions"
    );
    // The new shape: n[..d], the inferred sizes, n[d + 1..].
    shape::check_ndim(sizes.len())?;
    let mut shape = shape::zeros(n.len() + sizes.len() - 1)?;
    let (head, rest) = shape.split_at_mut(d);
    shape::copy_dims(head, &n[..d]);
    let (inferred, tail) = rest.split_at_mut(sizes.len());
    shape::copy_dims(tail, &n[d + 1..]);
    shape::infer_size(sizes, n[d], inferred).map_err(|e| {
        if e.status == Status::Shape && !e.message.contains("ambiguous") {
            Error::from_fmt(
                Status::Shape,
                format_args!(
                    "unflatten: Provided sizes {} don't multiply up to the size of dim {d} ({}) in the input tensor",
                    fmt_dims(sizes),
                    n[d]
                ),
            )
        } else {
            e
        }
    })?;
    let g = view(src, &shape)?.build()?;
    g.ok_or_else(not_viewable)
}

/// `diagonal(offset, d1, d2)`: drops `d1` and `d2` and appends the diagonal as the last dim
/// (stride `st1 + st2`). Errors: Index, InvalidArgument (identical dims), Overflow.
pub fn diagonal(src: LayoutRef, offset: i64, dim1: i64, dim2: i64) -> Result<Layout> {
    let (n, st, off) = (src.sizes, src.strides, src.offset);
    let a = wrap_dim(dim1, n.len())?;
    let b = wrap_dim(dim2, n.len())?;
    ensure!(
        a != b,
        InvalidArgument,
        "diagonal dimensions cannot be identical {dim1}, {dim2}"
    );
    // a != b implies ndim >= 2.
    let len = if offset >= 0 {
        n[a].min(n[b].saturating_sub(offset)).max(0)
    } else {
        n[a].saturating_add(offset).min(n[b]).max(0)
    };
    let mut new_off = off;
    if len > 0 {
        // A layout without elements (another dim of size 0) may have any offset and
        // stride: checked. `offset` is within a dim here, so `-offset` cannot overflow.
        let step = if offset >= 0 {
            shape::mul(offset, st[b], "diagonal offset")?
        } else {
            shape::mul(-offset, st[a], "diagonal offset")?
        };
        new_off = shape::add(off, step, "diagonal offset")?;
    }
    let stride = shape::add(st[a], st[b], "diagonal stride")?;
    let mut g = kept_dims(src, n.len() - 1, new_off, |k| k != a && k != b)?;
    let (sizes, strides) = g.dims_mut();
    let last = n.len() - 2;
    sizes[last] = len;
    strides[last] = stride;
    Ok(g)
}

/// `unfold(dim, size, step)`: dim `dim` becomes the number of windows, `(n - size)/step +
/// 1`, with stride `st·step`; a last dim of `size` (stride `st`) walks one window. A 0-dim
/// input counts as size 1. Errors: Index, InvalidArgument (size < 0, step <= 0), Shape
/// (size larger than the dim), Overflow.
pub fn unfold(src: LayoutRef, dim: i64, size: i64, step: i64) -> Result<Layout> {
    let (n, st, off) = (src.sizes, src.strides, src.offset);
    let d = wrap_dim(dim, n.len())?;
    let max = if n.is_empty() { 1 } else { n[d] };
    ensure!(
        size <= max,
        Shape,
        "maximum size for tensor at dimension {d} is {max} but size is {size}"
    );
    ensure!(
        size >= 0,
        InvalidArgument,
        "size is {size} but must be >= 0"
    );
    ensure!(step > 0, InvalidArgument, "step is {step} but must be > 0");
    if n.is_empty() {
        return Layout::new(&[size], &[1], off);
    }
    // `n[d] - size` is in [0, n[d]]; the `+ 1` overflows for a dim of i64::MAX (a layout
    // without elements, or an expanded one) with step 1: checked.
    let windows = shape::add((n[d] - size) / step, 1, "unfold window count")?;
    let window_stride = shape::mul(st[d], step, "unfold stride")?;
    let nd = n.len();
    let mut g = Layout::zeros(nd + 1, off)?;
    let (sizes, strides) = g.dims_mut();
    shape::copy_dims(&mut sizes[..nd], n);
    shape::copy_dims(&mut strides[..nd], st);
    sizes[d] = windows;
    strides[d] = window_stride;
    sizes[nd] = size;
    strides[nd] = st[d];
    Ok(g)
}

// ---- the TensorImpl methods -------------------------------------------------------------

// On `TensorImpl` (a `Tensor` reaches them through `Deref`): a view needs only a borrow
// of its base, so the C functions do not retain and release `self` around the call.
impl TensorImpl {
    /// `view(sizes)` (one `-1` allowed): `Ok(None)` when the strides cannot express the new
    /// shape (reshape then copies; view fails).
    pub fn try_view(&self, sizes: &[i64]) -> Result<Option<Tensor>> {
        self.make_view_filled(view(self.layout(), sizes)?)
    }

    /// PyTorch's `view`: same data, new shape; works on non-contiguous tensors whenever
    /// `compute_stride` allows. Errors: Shape (numel), InvalidArgument, NotViewable.
    pub fn view(&self, sizes: &[i64]) -> Result<Tensor> {
        self.try_view(sizes)?.ok_or_else(not_viewable)
    }

    /// `view(dtype)`: the same bytes as another element type.
    pub fn view_dtype(&self, dtype: DType) -> Result<Tensor> {
        let g = view_dtype(self.layout(), self.dtype(), dtype)?;
        self.share(CheckedLayout::check(g, dtype)?)
    }

    /// `as_strided(sizes, strides, storage_offset)`: any layout inside the storage.
    pub fn as_strided(
        &self,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: i64,
    ) -> Result<Tensor> {
        let g = as_strided(
            sizes,
            strides,
            storage_offset,
            self.itemsize(),
            self.storage().nbytes(),
        )?;
        // The rule checked, with PyTorch's messages, all that the one validation checks but
        // numel (kept: the rule's checks come first and decide the message).
        self.make_view_layout(g)
    }

    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        self.make_view_lazy(transpose(self.layout(), dim0, dim1)?)
    }

    /// `t()`.
    pub fn transpose_2d(&self) -> Result<Tensor> {
        self.make_view_lazy(transpose_2d(self.layout())?)
    }

    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        self.make_view_lazy(permute(self.layout(), dims)?)
    }

    pub fn movedim(&self, source: i64, destination: i64) -> Result<Tensor> {
        self.make_view_layout(movedim(self.layout(), source, destination)?)
    }

    pub fn slice(&self, dim: i64, start: i64, end: i64, step: i64) -> Result<Tensor> {
        self.make_view_lazy(slice(self.layout(), dim, start, end, step)?)
    }

    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        self.make_view_lazy(narrow(self.layout(), dim, start, length)?)
    }

    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        self.make_view_lazy(select(self.layout(), dim, index)?)
    }

    pub fn squeeze(&self) -> Result<Tensor> {
        self.make_view_layout(squeeze(self.layout())?)
    }

    pub fn squeeze_dim(&self, dim: i64) -> Result<Tensor> {
        self.make_view_layout(squeeze_dim(self.layout(), dim)?)
    }

    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        self.make_view_lazy(unsqueeze(self.layout(), dim)?)
    }

    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        // expand's fill always finds its layout: never None.
        self.make_view_filled(expand(self.layout(), sizes)?)?
            .ok_or_else(not_viewable)
    }

    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        self.make_view_layout(unflatten(self.layout(), dim, sizes)?)
    }

    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        self.make_view_layout(diagonal(self.layout(), offset, dim1, dim2)?)
    }

    pub fn unfold(&self, dim: i64, size: i64, step: i64) -> Result<Tensor> {
        self.make_view_layout(unfold(self.layout(), dim, size, step)?)
    }

    /// A new TensorImpl with the same storage, geometry, dtype and version counter.
    pub fn alias(&self) -> Result<Tensor> {
        let l = self.layout();
        self.make_view_layout(Layout::new(l.sizes, l.strides, l.offset)?)
    }

    /// `detach()`: without autograd this is [`alias`](Self::alias) — the same storage and
    /// the same version counter, as in PyTorch.
    pub fn detach(&self) -> Result<Tensor> {
        self.alias()
    }
}

#[cfg(test)]
mod tests;

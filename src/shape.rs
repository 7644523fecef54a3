//! Shape arithmetic: checked integer math, dim wrapping, `-1` inference, `compute_stride`
//! (view on non-contiguous tensors), broadcasting, and the storage extent of a strided
//! layout. Every rule here is a pure function over plain slices; the rest of the crate calls
//! these and never re-derives them.

use crate::error::{Error, Result, Status};
use smallvec::SmallVec;

/// Maximum number of dims (`TENSOR_MAX_DIMS`).
pub const MAX_DIMS: usize = 64;

/// How many dims are held without a heap block: by [`Dims`], and by the sizes-and-strides
/// buffer of a layout (`layout::Layout`, twice this many values). The one constant every
/// inline size derives from, as c10's `C10_SIZES_AND_STRIDES_MAX_INLINE_SIZE`.
pub(crate) const MAX_INLINE_DIMS: usize = 5;

/// A list of sizes or strides; inline for the common <= [`MAX_INLINE_DIMS`] dims.
pub type Dims = SmallVec<[i64; MAX_INLINE_DIMS]>;

/// `[3, 5]`, the way PyTorch prints an `IntArrayRef` (formatted where it is written: an
/// error message formats without allocating anything but the message itself).
pub fn fmt_dims(d: &[i64]) -> DimsDisplay<'_> {
    DimsDisplay(d)
}

/// See [`fmt_dims`].
pub struct DimsDisplay<'a>(&'a [i64]);

impl std::fmt::Display for DimsDisplay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        f.write_str("]")
    }
}

#[cold]
#[inline(never)]
fn overflow_err(what: &str) -> Error {
    Error::from_fmt(Status::Overflow, format_args!("{what} overflows int64"))
}

pub fn mul(a: i64, b: i64, what: &str) -> Result<i64> {
    a.checked_mul(b).ok_or_else(|| overflow_err(what))
}

pub fn add(a: i64, b: i64, what: &str) -> Result<i64> {
    a.checked_add(b).ok_or_else(|| overflow_err(what))
}

/// Product of `sizes`, checked.
pub fn numel(sizes: &[i64]) -> Result<i64> {
    numel_checked(sizes)
}

/// A size-0 dim makes the product 0 whatever the other sizes, so the answer does not
/// depend on the order of the dims (`[0, 2^62, 4]` and its transpose `[2^62, 4, 0]` both
/// have 0 elements; found by the fuzzer: transpose answered OVERFLOW).
fn numel_checked(sizes: &[i64]) -> Result<i64> {
    if sizes.contains(&0) {
        return Ok(0);
    }
    sizes.iter().try_fold(1i64, |acc, &n| mul(acc, n, "numel"))
}

/// Rejects more than [`MAX_DIMS`] dims and negative sizes.
pub fn check_sizes(sizes: &[i64]) -> Result<()> {
    check_ndim(sizes.len())?;
    if let Some(n) = sizes.iter().find(|&&n| n < 0) {
        bail!(
            InvalidArgument,
            "negative dimension {n} in size {}",
            fmt_dims(sizes)
        );
    }
    Ok(())
}

/// Rejects negative strides (PyTorch does not support them).
pub fn check_strides(strides: &[i64]) -> Result<()> {
    if let Some(s) = strides.iter().find(|&&s| s < 0) {
        bail!(
            InvalidArgument,
            "negative strides are not supported (got stride {s} in {})",
            fmt_dims(strides)
        );
    }
    Ok(())
}

pub fn check_ndim(ndim: usize) -> Result<()> {
    ensure!(
        ndim <= MAX_DIMS,
        InvalidArgument,
        "number of dims {ndim} exceeds the maximum of {MAX_DIMS}"
    );
    Ok(())
}

/// Wraps a possibly negative `dim` into `[0, ndim)`. A 0-dim tensor wraps as if it had one
/// dim, as in PyTorch (`maybe_wrap_dim` with `wrap_scalar`).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    let (lo, hi) = (-n, n - 1);
    ensure!(
        dim >= lo && dim <= hi,
        Index,
        "Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
    );
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// `values[wrap(dim)]`: the size or stride of one dim (PyTorch's `size(dim)` /
/// `stride(dim)`). Unlike [`wrap_dim`], a 0-dim layout has no dim to answer for.
pub fn at_dim(values: &[i64], dim: i64) -> Result<i64> {
    ensure!(
        !values.is_empty(),
        Index,
        "dimension specified as {dim} but tensor has no dimensions"
    );
    Ok(values[wrap_dim(dim, values.len())?])
}

/// Row-major strides; size-0 and size-1 dims count as 1 (`st[d] = st[d+1]·max(n[d+1], 1)`).
/// Only the strides are formed: the outermost size multiplies nothing.
pub fn contiguous_strides(sizes: &[i64]) -> Result<Dims> {
    let mut st = zeros(sizes.len())?;
    let mut acc = 1i64;
    for (d, (s, &n)) in st.iter_mut().zip(sizes).enumerate().rev() {
        *s = acc;
        if d > 0 {
            acc = mul(acc, n.max(1), "contiguous stride")?;
        }
    }
    Ok(st)
}

/// Strides that visit dims in `order` (innermost first). Unlike contiguous strides, the
/// sizes are used as they are (a size-0 dim zeroes the strides outside it), as c10's
/// `get_channels_last_strides_2d/3d` do: `empty(0, 2, 0, 3, channels_last)` has strides
/// `[0, 1, 6, 2]` in PyTorch.
fn strides_in_order(sizes: &[i64], order: &[usize]) -> Result<Dims> {
    let mut st = zeros(sizes.len())?;
    let mut acc = 1i64;
    for &d in order {
        st[d] = acc;
        acc = mul(acc, sizes[d], "channels-last stride")?;
    }
    Ok(st)
}

/// Innermost-first dim order of channels-last (NHWC) for 4-D sizes.
pub const CHANNELS_LAST_ORDER: [usize; 4] = [1, 3, 2, 0];
/// Innermost-first dim order of channels-last-3d (NDHWC) for 5-D sizes.
pub const CHANNELS_LAST_3D_ORDER: [usize; 5] = [1, 4, 3, 2, 0];

pub fn channels_last_strides(sizes: &[i64]) -> Result<Dims> {
    ensure!(
        sizes.len() == 4,
        InvalidArgument,
        "required rank 4 tensor to use channels_last format (got {} dims)",
        sizes.len()
    );
    strides_in_order(sizes, &CHANNELS_LAST_ORDER)
}

pub fn channels_last_3d_strides(sizes: &[i64]) -> Result<Dims> {
    ensure!(
        sizes.len() == 5,
        InvalidArgument,
        "required rank 5 tensor to use channels_last_3d format (got {} dims)",
        sizes.len()
    );
    strides_in_order(sizes, &CHANNELS_LAST_3D_ORDER)
}

/// Dense strides that keep the dim order of (`sizes`, `strides`), PyTorch's
/// `infer_dense_strides` (used by empty_like / clone with the preserve format when the
/// input is not non-overlapping-and-dense). Dims are ordered innermost-first by increasing
/// stride (equal strides: the smaller size inside); a stride-0 dim is never moved past
/// another dim, so expanded dims keep their place. Then the strides are laid out densely.
pub fn infer_dense_strides(sizes: &[i64], strides: &[i64]) -> Result<Dims> {
    let nd = sizes.len();
    // perm[0] is the innermost dim; start from row-major order. Inline like `Dims`; the
    // heap block for more dims is allocated fallibly, as every dims list.
    let mut perm: SmallVec<[usize; MAX_INLINE_DIMS]> = SmallVec::new();
    if nd > MAX_INLINE_DIMS {
        perm.try_reserve_exact(nd).map_err(|_| dims_oom())?;
    }
    perm.extend((0..nd).rev());
    // > 0: `b` belongs inside `a` (swap); < 0: already ordered; 0: not comparable.
    let should_swap = |a: usize, b: usize| -> i32 {
        let (sa, sb) = (strides[a], strides[b]);
        if sa == 0 || sb == 0 {
            0
        } else if sa < sb {
            -1
        } else if sa > sb || sizes[a] > sizes[b] {
            1
        } else {
            0
        }
    };
    // Insertion sort that only moves a dim past dims it is comparable with.
    for i in 1..nd {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    let mut out = zeros(nd)?;
    let mut acc = 1i64;
    for &d in &perm {
        out[d] = acc;
        if sizes[d] > 1 {
            acc = mul(acc, sizes[d], "dense stride")?;
        }
    }
    Ok(out)
}

/// Number of elements (from the storage start) a layout reaches: 0 if any size is 0, else
/// `off + 1 + Σ st[d]·(n[d]-1)`. Multiply by the itemsize for bytes.
pub fn extent_elems(sizes: &[i64], strides: &[i64], offset: i64) -> Result<i64> {
    if sizes.contains(&0) {
        return Ok(0);
    }
    let mut end = add(offset, 1, "storage extent")?;
    for (&n, &s) in sizes.iter().zip(strides) {
        end = add(end, mul(s, n - 1, "storage extent")?, "storage extent")?;
    }
    Ok(end)
}

/// Bytes of storage a layout needs (`storage_nbytes_needed` of docs/shape-rules.md).
pub fn storage_nbytes_needed(
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
    itemsize: usize,
) -> Result<i64> {
    mul(
        extent_elems(sizes, strides, offset)?,
        itemsize as i64,
        "storage size in bytes",
    )
}

/// Validates a strided layout in one pass (the hot path of every view): ndim <= 64,
/// sizes >= 0, strides >= 0, offset >= 0, numel and extent free of int64 overflow.
/// Returns `(numel, bytes of storage needed)`. Errors carry the offending values.
// Always inlined into the one validation (`layout::CheckedLayout`'s constructors, themselves
// inlined into each constructor): with #[inline], 20 to 40 more instructions per view
// (count.sh).
#[inline(always)]
pub fn validate_layout(
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
    itemsize: usize,
) -> Result<(i64, i64)> {
    let nd = sizes.len();
    if nd != strides.len() || nd > MAX_DIMS {
        bail!(
            InvalidArgument,
            "mismatch in length of strides and shape ({} sizes, {} strides) or more than {MAX_DIMS} dims",
            nd,
            strides.len()
        );
    }
    // Accumulate without branching per dim; report precisely only on failure.
    let mut numel: i64 = 1;
    let mut reach: i64 = offset; // offset + Σ st·(n-1), valid when numel > 0
    let mut neg = offset;
    let mut overflow = false;
    for (&n, &s) in sizes.iter().zip(strides) {
        neg |= n | s;
        let (m, o1) = numel.overflowing_mul(n);
        let (step, o2) = s.overflowing_mul(n - 1);
        let (r, o3) = reach.overflowing_add(step);
        numel = m;
        reach = r;
        overflow |= o1 | o2 | o3;
    }
    if neg < 0 {
        check_sizes(sizes)?;
        check_strides(strides)?;
        bail!(InvalidArgument, "negative storage offset {offset}");
    }
    if overflow {
        // Recompute with the checked helpers for the precise error; a layout with a
        // size-0 dim may still be fine (its extent is 0) if only the extent overflowed.
        let numel = numel_checked(sizes)?;
        let needed = storage_nbytes_needed(sizes, strides, offset, itemsize)?;
        return Ok((numel, needed));
    }
    if numel == 0 {
        return Ok((0, 0));
    }
    let needed = reach
        .checked_add(1)
        .and_then(|e| e.checked_mul(itemsize as i64))
        .ok_or_else(|| overflow_err("storage size in bytes"))?;
    Ok((numel, needed))
}

/// `len` copies of `v` (inline without a loop for <= [`MAX_INLINE_DIMS`]). More dims take one heap
/// block, allocated fallibly: OUT_OF_MEMORY instead of Rust's abort on allocation failure
/// (as every [`Dims`] the library builds: [`dims_with_capacity`], [`dims_from_slice`]).
#[inline]
pub fn filled(v: i64, len: usize) -> Result<Dims> {
    if len <= MAX_INLINE_DIMS {
        Ok(SmallVec::from_buf_and_len([v; MAX_INLINE_DIMS], len))
    } else {
        let mut d = dims_with_capacity(len)?;
        d.resize(len, v);
        Ok(d)
    }
}

/// `len` zeros (see [`filled`]).
#[inline]
pub fn zeros(len: usize) -> Result<Dims> {
    filled(0, len)
}

/// An empty [`Dims`] that holds `len` values without reallocating (the heap block, for more
/// than [`MAX_INLINE_DIMS`], allocated fallibly).
#[inline]
pub fn dims_with_capacity(len: usize) -> Result<Dims> {
    let mut d = Dims::new();
    reserve(&mut d, len)?;
    Ok(d)
}

/// Makes room in `d` for `additional` more values (fallibly; see [`filled`]).
#[inline]
pub fn reserve(d: &mut Dims, additional: usize) -> Result<()> {
    if d.capacity() - d.len() < additional {
        reserve_dims(d, additional)?;
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn reserve_dims(d: &mut Dims, additional: usize) -> Result<()> {
    d.try_reserve_exact(additional).map_err(|_| dims_oom())
}

#[cold]
#[inline(never)]
fn dims_oom() -> Error {
    Error::new(
        Status::OutOfMemory,
        "failed to allocate a list of sizes or strides",
    )
}

/// A copy of `s` as [`Dims`] (see [`filled`]).
#[inline]
pub fn dims_from_slice(s: &[i64]) -> Result<Dims> {
    if s.len() <= MAX_INLINE_DIMS {
        return Ok(SmallVec::from_slice(s));
    }
    let mut d = dims_with_capacity(s.len())?;
    d.extend_from_slice(s);
    Ok(d)
}

/// Copies `src` into `dst` (the same length): dims (sizes or strides) of a view's layout.
/// Up to 8 items with no call, as overlapping moves (1 to 3 items: the first, middle and
/// last; 4 to 8: two 4-item moves); a `copy_from_slice` of a length the compiler cannot
/// see is a `memcpy` call, about 12 instructions in glibc and the caller's registers saved
/// around it. Longer runs go to `copy_from_slice`.
#[inline(always)]
pub fn copy_dims(dst: &mut [i64], src: &[i64]) {
    assert_eq!(dst.len(), src.len(), "copy_dims: lengths differ");
    let (n, s, d) = (src.len(), src.as_ptr(), dst.as_mut_ptr());
    // SAFETY: every index used is below n, the length of both slices (asserted); each move
    // reads before it writes, and the two slices cannot overlap (one is borrowed mutably).
    // (Raw moves: with indexing the bounds checks stay, 8 to 19 instructions more per view.)
    unsafe {
        match n {
            0 => {}
            1..=3 => {
                let (a, b, c) = (s.read(), s.add(n / 2).read(), s.add(n - 1).read());
                d.write(a);
                d.add(n / 2).write(b);
                d.add(n - 1).write(c);
            }
            4..=8 => {
                let head = (s as *const [i64; 4]).read_unaligned();
                let tail = (s.add(n - 4) as *const [i64; 4]).read_unaligned();
                (d as *mut [i64; 4]).write_unaligned(head);
                (d.add(n - 4) as *mut [i64; 4]).write_unaligned(tail);
            }
            _ => std::ptr::copy_nonoverlapping(s, d, n),
        }
    }
}

/// Resolves one `-1` in `shape` against `numel` (PyTorch's `infer_size`), writing the
/// sizes to `out` (`shape.len()` values: `view` passes the layout the new tensor stores;
/// the caller checked `shape.len()` with [`check_ndim`] before allocating it).
#[inline]
pub fn infer_size(shape: &[i64], numel: i64, out: &mut [i64]) -> Result<()> {
    debug_assert!(shape.len() == out.len() && shape.len() <= MAX_DIMS);
    let mut infer: Option<usize> = None;
    let mut p = 1i64;
    let mut overflow = false;
    for (i, &n) in shape.iter().enumerate() {
        if n == -1 {
            ensure!(
                infer.is_none(),
                InvalidArgument,
                "only one dimension can be inferred"
            );
            infer = Some(i);
        } else if n >= 0 {
            // An overflowing product can never match numel (not even i64::MAX, the numel of
            // an expanded view: a saturated product did, found by the fuzzer), unless a size
            // is 0.
            match p.checked_mul(n) {
                Some(q) => p = q,
                None => overflow = true,
            }
        } else {
            bail!(
                InvalidArgument,
                "invalid shape dimension {n} at index {i} of shape {}",
                fmt_dims(shape)
            );
        }
    }
    if overflow && !shape.contains(&0) {
        bail!(
            Shape,
            "shape '{}' is invalid for input of size {numel}",
            fmt_dims(shape)
        );
    }
    if overflow {
        p = 0;
    }
    copy_dims(out, shape);
    if numel == p {
        if let Some(i) = infer {
            // p == numel with a -1 present: -1 becomes 1 unless numel is 0 (ambiguous).
            if p == 0 {
                bail!(
                    Shape,
                    "cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                    fmt_dims(shape)
                );
            }
            out[i] = 1;
        }
        return Ok(());
    }
    if let Some(i) = infer {
        // view(-1) and friends: nothing else to divide by.
        if p == 1 {
            out[i] = numel;
            return Ok(());
        }
        if p > 0 && numel % p == 0 {
            out[i] = numel / p;
            return Ok(());
        }
    }
    bail!(
        Shape,
        "shape '{}' is invalid for input of size {numel}",
        fmt_dims(shape)
    )
}

/// Strides that let `new_n` view memory laid out as (`old_n`, `old_st`), written to `out`
/// (`new_n.len()` values); `false` when some group of new dims would span two
/// non-contiguous chunks of old dims (PyTorch's `computeStride`). `new_n` must already have
/// the same numel as `old_n`. Writing into the caller's buffer lets `view` fill the layout
/// the new tensor stores, without a list in between.
#[inline]
pub fn compute_stride(
    old_n: &[i64],
    old_st: &[i64],
    new_n: &[i64],
    out: &mut [i64],
) -> Result<bool> {
    debug_assert_eq!(new_n.len(), out.len());
    if old_n.is_empty() {
        out.fill(1);
        return Ok(true);
    }
    // No elements (a size-0 dim; no multiply chain to find out).
    if old_n.contains(&0) {
        if old_n == new_n {
            out.copy_from_slice(old_st);
            return Ok(true);
        }
        return match contiguous_strides(new_n) {
            Ok(st) => {
                out.copy_from_slice(&st);
                Ok(true)
            }
            Err(e) if e.status == Status::OutOfMemory => Err(e),
            Err(_) => Ok(false),
        };
    }
    // Same lengths, told to the optimiser (no bounds checks on old_st below).
    let old_st = &old_st[..old_n.len()];
    let mut vd = new_n.len() as isize - 1;
    let mut base = old_st[old_n.len() - 1];
    let mut tn: i64 = 1;
    let mut vn: i64 = 1;
    // tn and vn are products of sizes of a layout with elements: they fit (<= numel). The
    // products with a stride are checked: the layout fits its storage, but a chunk's
    // tn·base may still pass i64 (an overflowing product equals no stride; an overflowing
    // new stride cannot be expressed: not viewable, reshape copies).
    for td in (0..old_n.len()).rev() {
        tn *= old_n[td];
        let chunk_end =
            td == 0 || (old_n[td - 1] != 1 && tn.checked_mul(base) != Some(old_st[td - 1]));
        if chunk_end {
            while vd >= 0 && (vn < tn || new_n[vd as usize] == 1) {
                let Some(st) = vn.checked_mul(base) else {
                    return Ok(false);
                };
                out[vd as usize] = st;
                vn *= new_n[vd as usize];
                vd -= 1;
            }
            if vn != tn {
                return Ok(false);
            }
            if td > 0 {
                base = old_st[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    Ok(vd == -1)
}

/// Broadcast shape of `a` and `b` (numpy rules), or a Shape error naming the rightmost
/// mismatching dim (PyTorch's infer_size walks from the right).
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out = filled(1, n)?;
    for i in (0..n).rev() {
        let da = if i < n - a.len() {
            1
        } else {
            a[i - (n - a.len())]
        };
        let db = if i < n - b.len() {
            1
        } else {
            b[i - (n - b.len())]
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            bail!(
                Shape,
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            );
        };
    }
    Ok(out)
}

/// Storage offset (in elements) of the element at `index`; each index may be negative.
pub fn element_offset(sizes: &[i64], strides: &[i64], offset: i64, index: &[i64]) -> Result<i64> {
    ensure!(
        index.len() == sizes.len(),
        Index,
        "expected {} indices for a tensor of size {}, got {}",
        sizes.len(),
        fmt_dims(sizes),
        index.len()
    );
    // Every index first: a layout without elements (some dim of size 0) has no element to
    // address, whatever its offset and strides, and answers Index.
    for (d, (&i, &n)) in index.iter().zip(sizes).enumerate() {
        ensure!(
            i >= -n && i < n,
            Index,
            "index {i} is out of bounds for dimension {d} with size {n}"
        );
    }
    let mut off = offset;
    for ((&i, &n), &s) in index.iter().zip(sizes).zip(strides) {
        let i = if i < 0 { i + n } else { i };
        // An element of a validated layout: inside its extent, so this fits; checked all
        // the same.
        off = add(off, mul(i, s, "element offset")?, "element offset")?;
    }
    Ok(off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 12 (each branch of the copy and past it): the items copied
    /// in order, nothing written past them (the sentinels), the source unchanged.
    #[test]
    fn copy_dims_copies_exactly_the_items() {
        for n in 0..=12usize {
            let src: Vec<i64> = (0..n as i64).map(|i| 100 + 7 * i).collect();
            let mut dst = vec![-1i64; n + 2];
            copy_dims(&mut dst[1..=n], &src);
            assert_eq!(&dst[1..=n], &src[..], "n = {n}");
            assert_eq!((dst[0], dst[n + 1]), (-1, -1), "n = {n}: written outside");
        }
    }

    #[test]
    fn wrap_dim_matches_pytorch() {
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert_eq!(wrap_dim(-3, 3).unwrap(), 0);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        assert_eq!(wrap_dim(-1, 0).unwrap(), 0);
        let e = wrap_dim(2, 2).unwrap_err();
        assert_eq!(e.status, Status::Index);
        assert_eq!(
            e.message,
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
        );
        assert!(wrap_dim(1, 0).is_err());
        assert!(wrap_dim(-3, 2).is_err());
    }

    #[test]
    fn contiguous_and_channels_last_strides() {
        assert_eq!(&contiguous_strides(&[2, 3, 4]).unwrap()[..], &[12, 4, 1]);
        assert_eq!(&contiguous_strides(&[2, 0, 4]).unwrap()[..], &[4, 4, 1]);
        assert!(contiguous_strides(&[]).unwrap().is_empty());
        assert_eq!(
            &channels_last_strides(&[2, 3, 4, 5]).unwrap()[..],
            &[60, 1, 15, 3]
        );
        assert_eq!(
            &channels_last_3d_strides(&[2, 3, 4, 5, 6]).unwrap()[..],
            &[360, 1, 90, 18, 3]
        );
        assert!(channels_last_strides(&[2, 3]).is_err());
        // size-0 dims, from PyTorch 2.15's empty(..., memory_format=channels_last(_3d))
        assert_eq!(
            &channels_last_strides(&[0, 2, 0, 3]).unwrap()[..],
            &[0, 1, 6, 2]
        );
        assert_eq!(
            &channels_last_strides(&[2, 0, 3, 4]).unwrap()[..],
            &[0, 1, 0, 0]
        );
        assert_eq!(
            &channels_last_strides(&[1, 0, 1, 1]).unwrap()[..],
            &[0, 1, 0, 0]
        );
        assert_eq!(
            &channels_last_3d_strides(&[0, 2, 3, 0, 1]).unwrap()[..],
            &[0, 1, 0, 2, 2]
        );
        assert_eq!(
            contiguous_strides(&[2, i64::MAX, 2]).unwrap_err().status,
            Status::Overflow
        );
        // The outermost size multiplies nothing: [2^40, 0, 2^40] has strides [2^40, 2^40, 1].
        assert_eq!(
            &contiguous_strides(&[1 << 40, 0, 1 << 40]).unwrap()[..],
            &[1 << 40, 1 << 40, 1]
        );
        assert_eq!(
            &contiguous_strides(&[i64::MAX, 2, 2]).unwrap()[..],
            &[4, 2, 1]
        );
    }

    #[test]
    fn infer_dense_strides_matches_pytorch() {
        // (sizes, strides) -> torch.empty_like(as_strided(...)).stride(), from PyTorch 2.15
        let cases: &[(&[i64], &[i64], &[i64])] = &[
            (&[3, 4], &[1, 0], &[4, 1]),
            (&[3, 4], &[0, 1], &[4, 1]),
            (&[2, 3, 4], &[1, 0, 2], &[1, 2, 6]),
            (&[2, 3, 4], &[0, 0, 0], &[12, 4, 1]),
            (&[8, 4, 3], &[1, 48, 16], &[1, 24, 8]),
            (&[2, 2, 2], &[4, 4, 1], &[4, 2, 1]),
            (&[3, 1, 4], &[8, 1, 2], &[4, 1, 1]),
            (&[3, 1, 4], &[2, 1, 8], &[1, 1, 3]),
            (&[2, 3], &[2, 2], &[1, 2]),
            (&[2, 3, 4, 5], &[120, 1, 30, 6], &[60, 1, 15, 3]),
            (&[2, 3, 4, 5], &[0, 1, 15, 3], &[60, 1, 15, 3]),
            (&[5], &[2], &[1]),
            (&[], &[], &[]),
        ];
        for (n, st, want) in cases {
            assert_eq!(
                &infer_dense_strides(n, st).unwrap()[..],
                *want,
                "{n:?} {st:?}"
            );
        }
    }

    #[test]
    fn extent() {
        assert_eq!(extent_elems(&[2, 3], &[3, 1], 0).unwrap(), 6);
        assert_eq!(extent_elems(&[2, 3], &[3, 1], 4).unwrap(), 10);
        assert_eq!(extent_elems(&[2, 0], &[3, 1], 100).unwrap(), 0);
        assert_eq!(extent_elems(&[], &[], 5).unwrap(), 6);
        assert_eq!(extent_elems(&[4, 3], &[0, 1], 0).unwrap(), 3);
        assert_eq!(storage_nbytes_needed(&[2, 3], &[3, 1], 0, 4).unwrap(), 24);
        assert_eq!(
            extent_elems(&[i64::MAX], &[2], 0).unwrap_err().status,
            Status::Overflow
        );
    }

    #[test]
    fn validate_layout_one_pass() {
        assert_eq!(validate_layout(&[2, 3], &[3, 1], 0, 4).unwrap(), (6, 24));
        assert_eq!(validate_layout(&[2, 3], &[3, 1], 2, 4).unwrap(), (6, 32));
        assert_eq!(validate_layout(&[], &[], 3, 8).unwrap(), (1, 32));
        assert_eq!(validate_layout(&[0, 5], &[9, 9], 100, 4).unwrap(), (0, 0));
        assert_eq!(
            validate_layout(&[2, -1], &[1, 1], 0, 4).unwrap_err().status,
            Status::InvalidArgument
        );
        assert_eq!(
            validate_layout(&[2], &[-1], 0, 4).unwrap_err().status,
            Status::InvalidArgument
        );
        assert_eq!(
            validate_layout(&[2], &[1], -1, 4).unwrap_err().status,
            Status::InvalidArgument
        );
        assert_eq!(
            validate_layout(&[2], &[1, 1], 0, 4).unwrap_err().status,
            Status::InvalidArgument
        );
        assert_eq!(
            validate_layout(&[1 << 40, 1 << 40], &[0, 0], 0, 4)
                .unwrap_err()
                .status,
            Status::Overflow
        );
        assert_eq!(
            validate_layout(&[4], &[i64::MAX / 2], 0, 1)
                .unwrap_err()
                .status,
            Status::Overflow
        );
        assert_eq!(
            validate_layout(&[i64::MAX / 2], &[1], 0, 4)
                .unwrap_err()
                .status,
            Status::Overflow
        );
        // the extent overflows but a size-0 dim makes the layout empty
        assert_eq!(
            validate_layout(&[0, 3], &[1, i64::MAX], 0, 4).unwrap(),
            (0, 0)
        );
    }

    /// `infer_size` into a fresh list.
    fn infer_size(shape: &[i64], numel: i64) -> Result<Dims> {
        let mut out = zeros(shape.len())?;
        super::infer_size(shape, numel, &mut out)?;
        Ok(out)
    }

    #[test]
    fn infer_size_rules() {
        assert_eq!(&infer_size(&[-1, 4], 12).unwrap()[..], &[3, 4]);
        assert_eq!(&infer_size(&[3, 4], 12).unwrap()[..], &[3, 4]);
        assert_eq!(&infer_size(&[-1], 0).unwrap()[..], &[0]);
        assert_eq!(&infer_size(&[-1, 3], 0).unwrap()[..], &[0, 3]);
        assert_eq!(&infer_size(&[-1, 1], 1).unwrap()[..], &[1, 1]);
        let e = infer_size(&[3, 5], 12).unwrap_err();
        assert_eq!(e.message, "shape '[3, 5]' is invalid for input of size 12");
        assert_eq!(e.status, Status::Shape);
        let e = infer_size(&[-1, 0], 0).unwrap_err();
        assert!(e.message.contains("ambiguous"), "{}", e.message);
        assert_eq!(
            infer_size(&[-1, -1], 4).unwrap_err().message,
            "only one dimension can be inferred"
        );
        assert_eq!(
            infer_size(&[-2, 2], 4).unwrap_err().status,
            Status::InvalidArgument
        );
        assert_eq!(infer_size(&[5, -1], 12).unwrap_err().status, Status::Shape);
        // products that overflow never match
        assert_eq!(
            infer_size(&[i64::MAX, 4], 12).unwrap_err().status,
            Status::Shape
        );
    }

    /// `compute_stride` into a fresh list: `None` when not viewable.
    fn compute_stride(old_n: &[i64], old_st: &[i64], new_n: &[i64]) -> Result<Option<Dims>> {
        let mut out = zeros(new_n.len())?;
        Ok(super::compute_stride(old_n, old_st, new_n, &mut out)?.then_some(out))
    }

    #[test]
    fn compute_stride_cases() {
        // contiguous [2,3,4] -> [6,4]
        assert_eq!(
            &compute_stride(&[2, 3, 4], &[12, 4, 1], &[6, 4])
                .unwrap()
                .unwrap()[..],
            &[4, 1]
        );
        // transposed [3,2] strides [1,3] cannot flatten
        assert!(compute_stride(&[3, 2], &[1, 3], &[6]).unwrap().is_none());
        // transposed can add size-1 dims
        assert_eq!(
            &compute_stride(&[3, 2], &[1, 3], &[3, 1, 2])
                .unwrap()
                .unwrap()[..],
            &[1, 6, 3]
        );
        // sliced rows [2,4] of [4,4] (stride 8,1): split last dim ok
        assert_eq!(
            &compute_stride(&[2, 4], &[8, 1], &[2, 2, 2])
                .unwrap()
                .unwrap()[..],
            &[8, 2, 1]
        );
        assert!(compute_stride(&[2, 4], &[8, 1], &[8]).unwrap().is_none());
        // 0-dim
        assert_eq!(
            &compute_stride(&[], &[], &[1, 1]).unwrap().unwrap()[..],
            &[1, 1]
        );
        // numel 0
        assert_eq!(
            &compute_stride(&[0, 3], &[3, 1], &[3, 0]).unwrap().unwrap()[..],
            &[1, 1]
        );
        assert_eq!(
            &compute_stride(&[0, 3], &[7, 2], &[0, 3]).unwrap().unwrap()[..],
            &[7, 2]
        );
        // expanded dim (stride 0)
        assert_eq!(
            &compute_stride(&[3, 4], &[0, 1], &[3, 2, 2])
                .unwrap()
                .unwrap()[..],
            &[0, 2, 1]
        );
        assert!(compute_stride(&[3, 4], &[0, 1], &[12]).unwrap().is_none());
    }

    #[test]
    fn broadcasting() {
        assert_eq!(&broadcast_shapes(&[3], &[2, 3]).unwrap()[..], &[2, 3]);
        assert_eq!(&broadcast_shapes(&[2, 1], &[1, 3]).unwrap()[..], &[2, 3]);
        assert_eq!(&broadcast_shapes(&[], &[4]).unwrap()[..], &[4]);
        assert_eq!(&broadcast_shapes(&[0], &[1]).unwrap()[..], &[0]);
        assert_eq!(
            broadcast_shapes(&[2], &[3]).unwrap_err().status,
            Status::Shape
        );
        // torch.zeros(2, 3, 4).copy_(torch.zeros(5, 3, 2)) names the rightmost mismatch
        assert_eq!(
            broadcast_shapes(&[2, 3, 4], &[5, 3, 2]).unwrap_err().message,
            "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 2"
        );
    }

    #[test]
    fn element_offsets() {
        assert_eq!(element_offset(&[2, 3], &[3, 1], 1, &[1, 2]).unwrap(), 6);
        assert_eq!(element_offset(&[2, 3], &[3, 1], 0, &[-1, -1]).unwrap(), 5);
        assert_eq!(element_offset(&[], &[], 7, &[]).unwrap(), 7);
        assert_eq!(
            element_offset(&[2, 3], &[3, 1], 0, &[2, 0])
                .unwrap_err()
                .status,
            Status::Index
        );
        assert_eq!(
            element_offset(&[2, 3], &[3, 1], 0, &[0])
                .unwrap_err()
                .status,
            Status::Index
        );
    }
}

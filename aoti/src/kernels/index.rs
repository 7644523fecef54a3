//! Indexing by tensors:
//!
//! - `nonzero` (int64 [n, ndim] of the coordinates in row-major order, strides (1, n) as
//!   ATen's CPU kernel), `nonzero_static` (contiguous [size, ndim], padded with
//!   `fill_value`);
//! - `index_Tensor`, `index_put` (and shim.h's `index_put_out`, the one Inductor emits):
//!   ATen's advanced indexing (`make_info`): int64 / int32 indices (negative ones wrap) and
//!   bool / uint8 masks (their nonzero coordinates, one index per mask dim), broadcast
//!   together; the indexed dims' result takes their place when they are adjacent, else goes
//!   first; `index`'s output has the strides TensorIterator gives it over the restrided
//!   self and the indices; `index_put` works on a clone of self (ATen's functional op),
//!   visits positions in TensorIterator's order (so a repeated index keeps the value ATen's
//!   serial loop leaves, and `accumulate` adds in its order, in self's dtype), and takes
//!   ATen's masked-fill path for one mask and a one-element value.

use super::{
    broadcast, contiguous, for_each_position, iterator_output_strides, iterator_perm,
    not_implemented, row_major, Arith, AtenTensorHandle,
};
use crate::dispatch;
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Bool, Handle, Owned, Tensor};
use half::{bf16, f16};

/// ATen's `nonzero`: the coordinates of the nonzero elements (NaN counts, -0.0 does not)
/// in row-major order, `[n, ndim]`.
fn nonzero_coords(t: Tensor) -> Result<(usize, Vec<i64>)> {
    util::require_cpu(t, "self")?;
    if t.numel() >= i32::MAX as i64 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            "nonzero is not supported for tensors with more than INT_MAX elements",
        );
    }
    let c = contiguous(t)?;
    let nd = t.ndim() as usize;
    let mut coords = Vec::new();
    let mut n = 0usize;
    dispatch!(t.dtype(), [u8, i8, i16, i32, i64, Bool, f16, bf16, f32, f64], T => {
        let v = c.get().values::<T>()?;
        let zero = T::default();
        let st = util::contiguous_strides(t.sizes())?;
        for_each_position(t.sizes(), &row_major(nd), [&st], |coord, [off]| {
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if v[off as usize] != zero {
                coords.extend_from_slice(coord);
                n += 1;
            }
            Ok(())
        })?;
    }, _ => return not_implemented("nonzero_count_cpu", t.dtype()));
    Ok((n, coords))
}

fn nonzero(t: Tensor) -> Result<Owned> {
    let (n, coords) = nonzero_coords(t)?;
    let nd = t.ndim() as usize;
    let rows = n as i64;
    let mut o = util::empty_strided(&[rows, nd as i64], &[1, rows], sys::TENSOR_INT64)?;
    // SAFETY: o was just allocated (empty_strided) and nothing else reaches it.
    let v = unsafe { o.values_mut::<i64>() }?;
    if nd > 0 {
        for (i, c) in coords.chunks_exact(nd).enumerate() {
            for (j, &x) in c.iter().enumerate() {
                v[i + j * n] = x;
            }
        }
    }
    Ok(o)
}

fn nonzero_static(t: Tensor, size: i64, fill: i64) -> Result<Owned> {
    if size < 0 {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("nonzero_static: 'size' must be an non-negative integer, got {size}"),
        );
    }
    let nd = t.ndim();
    let sizes = [size, nd];
    let mut o = util::empty(&sizes, sys::TENSOR_INT64)?;
    if size == 0 || nd == 0 {
        return Ok(o); // ATen returns before it looks at the values (or their dtype)
    }
    let (n, coords) = nonzero_coords(t)?;
    // SAFETY: o was just allocated (empty_strided) and nothing else reaches it.
    let v = unsafe { o.values_mut::<i64>() }?;
    let kept = n.min(size as usize) * nd as usize;
    v[..kept].copy_from_slice(&coords[..kept]);
    v[kept..].fill(fill);
    Ok(o)
}

/// ATen's `AdvancedIndex` of a call: self (permuted when the indexed dims are not
/// adjacent), the indices broadcast together, and the geometry of the result.
struct Info {
    /// self, or self permuted so that the indexed dims come first.
    base: Owned,
    /// base restrided to the result's shape: the indexed dims replaced by the index shape
    /// with stride 0 (`restride_src`).
    src: Owned,
    /// The indices (int64) reshaped to the result's rank (`reshape_indexer`).
    indexers: Vec<Owned>,
    /// Each index's values at the index shape, row-major.
    values: Vec<Owned>,
    /// Size and stride (elements) of each indexed dim of base.
    indexed: Vec<(i64, i64)>,
    /// Dims of base before the indexed ones; the index shape.
    before: usize,
    ishape: Vec<i64>,
}

impl Info {
    fn shape(&self) -> &[i64] {
        self.src.get().sizes()
    }

    /// ATen's kernel fails an internal assert without an index tensor (all None, or only
    /// 0-dim masks), once there is an element to visit.
    fn some_index(&self) -> Result<()> {
        if self.values.is_empty() && self.src.get().numel() > 0 {
            return err(
                sys::TENSOR_ERR_INDEX,
                "no index tensor (all indices are None or 0-dim masks)",
            );
        }
        Ok(())
    }

    /// For each position of the index shape (row-major), the element offset the indices
    /// select in base (bounds checked, negative indices wrapped as ATen does).
    fn offsets(&self) -> Result<Vec<i64>> {
        let n: i64 = self.ishape.iter().product();
        let mut off = vec![0i64; n as usize];
        for (j, (v, &(size, stride))) in self.values.iter().zip(&self.indexed).enumerate() {
            for (o, &x) in off.iter_mut().zip(v.get().values::<i64>()?) {
                if x < -size || x >= size {
                    return err(
                        sys::TENSOR_ERR_INDEX,
                        format!("index {x} is out of bounds for dimension {j} with size {size}"),
                    );
                }
                let wrapped = if x < 0 { x + size } else { x };
                *o += wrapped * stride;
            }
        }
        Ok(off)
    }

    /// Strides over the result's shape that walk the index shape row-major (0 elsewhere).
    fn index_strides(&self) -> Result<Vec<i64>> {
        let mut st = vec![0i64; self.shape().len()];
        let inner = util::contiguous_strides(&self.ishape)?;
        st[self.before..self.before + inner.len()].copy_from_slice(&inner);
        Ok(st)
    }
}

/// The index tensors of a call (`None` for an absent one).
fn read_indices(list: &[Option<Tensor>]) -> Result<()> {
    for t in list.iter().flatten() {
        util::require_cpu(*t, "indices")?;
        if !matches!(
            t.dtype(),
            sys::TENSOR_INT64 | sys::TENSOR_INT32 | sys::TENSOR_UINT8 | sys::TENSOR_BOOL
        ) {
            return err(
                sys::TENSOR_ERR_INDEX,
                "tensors used as indices must be long, int, byte or bool tensors",
            );
        }
    }
    Ok(())
}

fn too_many(t: Tensor, n: usize) -> Result<()> {
    if n > t.ndim() as usize {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!(
                "too many indices for tensor of dimension {} (got {n})",
                t.ndim()
            ),
        );
    }
    Ok(())
}

/// A mask's shape against self's dims from `at` (ATen's `invalid_mask` check).
fn check_mask(t: Tensor, m: Tensor, at: usize) -> Result<()> {
    for (j, &s) in m.sizes().iter().enumerate() {
        let d = at + j;
        if t.sizes().get(d) != Some(&s) {
            return err(
                sys::TENSOR_ERR_INDEX,
                format!(
                    "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {d}",
                    m.sizes(),
                    t.sizes()
                ),
            );
        }
    }
    Ok(())
}

/// A 1-D int64 tensor of `v`.
fn long_tensor(v: &[i64]) -> Result<Owned> {
    let n = v.len() as i64;
    let mut o = util::empty_strided(&[n], &[1], sys::TENSOR_INT64)?;
    // SAFETY: o was just allocated (empty_strided) and nothing else reaches it.
    unsafe { o.values_mut::<i64>() }?.copy_from_slice(v);
    Ok(o)
}

/// ATen's `make_info(self, indices)`.
fn make_info(t: Tensor, list: &[Option<Tensor>]) -> Result<Info> {
    read_indices(list)?;
    too_many(t, list.len())?;
    // Masks become the columns of their nonzero coordinates.
    let mut idx: Vec<Option<Owned>> = Vec::new();
    for entry in list {
        match entry {
            None => idx.push(None),
            Some(m) if matches!(m.dtype(), sys::TENSOR_BOOL | sys::TENSOR_UINT8) => {
                check_mask(t, *m, idx.len())?;
                let (n, coords) = nonzero_coords(*m)?;
                let nd = m.ndim() as usize;
                for j in 0..nd {
                    let col: Vec<i64> = (0..n).map(|i| coords[i * nd + j]).collect();
                    idx.push(Some(long_tensor(&col)?));
                }
            }
            Some(i) => idx.push(Some(i.retain())),
        }
    }
    too_many(t, idx.len())?;
    // Broadcast together.
    let shapes: Vec<&[i64]> = idx.iter().flatten().map(|o| o.get().sizes()).collect();
    let Some(ishape) = broadcast(&shapes) else {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!("shape mismatch: indexing tensors could not be broadcast together with shapes {shapes:?}"),
        );
    };
    let mut idx: Vec<Option<Owned>> = idx
        .into_iter()
        .map(|o| match o {
            Some(o) if o.get().sizes() != ishape => o.get().expand(&ishape).map(Some),
            o => Ok(o),
        })
        .collect::<Result<_>>()?;
    let nd = t.ndim() as usize;
    idx.resize_with(nd, || None);
    // Not adjacent: the indexed dims (and their indices) go first.
    let first = idx.iter().position(Option::is_some);
    let last = idx.iter().rposition(Option::is_some);
    let adjacent = match (first, last) {
        (Some(a), Some(b)) => idx[a..=b].iter().all(Option::is_some),
        _ => true,
    };
    let base = if adjacent {
        t.alias()?
    } else {
        let order: Vec<usize> = (0..nd)
            .filter(|&d| idx[d].is_some())
            .chain((0..nd).filter(|&d| idx[d].is_none()))
            .collect();
        let s: Vec<i64> = order.iter().map(|&d| t.sizes()[d]).collect();
        let st: Vec<i64> = order.iter().map(|&d| t.strides()[d]).collect();
        let mut reordered: Vec<Option<Owned>> = Vec::with_capacity(nd);
        for &d in &order {
            reordered.push(idx[d].take());
        }
        idx = reordered;
        t.as_strided(&s, &st, t.storage_offset())?
    };
    // int32 indices as int64 (ATen's `.to(kLong)`: a preserve-format copy).
    let idx: Vec<Option<Owned>> = idx
        .into_iter()
        .map(|o| match o {
            Some(o) if o.get().dtype() == sys::TENSOR_INT32 => {
                o.get().to_dtype(sys::TENSOR_INT64).map(Some)
            }
            o => Ok(o),
        })
        .collect::<Result<_>>()?;
    let b = base.get();
    let before = idx.iter().position(Option::is_some).unwrap_or(nd);
    let count = idx.iter().filter(|o| o.is_some()).count();
    let after = nd - before - count;
    let indexed: Vec<(i64, i64)> = (before..before + count)
        .map(|d| (b.sizes()[d], b.strides()[d]))
        .collect();
    if indexed.iter().any(|&(s, _)| s == 0) && !ishape.contains(&0) {
        return err(
            sys::TENSOR_ERR_INDEX,
            "index is out of bounds for dimension with size 0",
        );
    }
    let (mut shape, mut strides) = (b.sizes()[..before].to_vec(), b.strides()[..before].to_vec());
    if count > 0 {
        shape.extend_from_slice(&ishape);
        strides.extend(std::iter::repeat_n(0, ishape.len()));
    }
    shape.extend_from_slice(&b.sizes()[before + count..]);
    strides.extend_from_slice(&b.strides()[before + count..]);
    let src = b.as_strided(&shape, &strides, b.storage_offset())?;
    let ishape = if count > 0 { ishape } else { Vec::new() };
    let mut view_shape = vec![1i64; before];
    view_shape.extend_from_slice(&ishape);
    view_shape.extend(std::iter::repeat_n(1, after));
    let mut indexers = Vec::new();
    let mut values = Vec::new();
    for o in idx.into_iter().flatten() {
        indexers.push(o.get().view(&view_shape)?);
        values.push(contiguous(o.get())?);
    }
    Ok(Info {
        base,
        src,
        indexers,
        values,
        indexed,
        before,
        ishape,
    })
}

fn index(t: Tensor, list: &[Option<Tensor>]) -> Result<Owned> {
    util::require_cpu(t, "self")?;
    let info = make_info(t, list)?;
    info.some_index()?;
    let shape = info.shape().to_vec();
    let mut ops = vec![info.src.get()];
    ops.extend(info.indexers.iter().map(|o| o.get()));
    let ost = iterator_output_strides(&shape, &ops)?;
    let mut res = util::empty_strided(&shape, &ost, t.dtype())?;
    let offsets = info.offsets()?;
    let ist = info.index_strides()?;
    let sst = info.src.get().strides().to_vec();
    let b = info.base.get();
    dispatch!(t.dtype(), T => {
        let src = b.values::<T>()?;
        // SAFETY: res was just allocated (empty_strided) and nothing else reaches it.
        let dst = unsafe { res.values_mut::<T>() }?;
        for_each_position(&shape, &row_major(shape.len()), [&ost, &sst, &ist], |_, [o, s, i]| {
            dst[o as usize] = src[(s + offsets[i as usize]) as usize];
            Ok(())
        })?;
    }, _ => return not_implemented("index_cpu", t.dtype()));
    Ok(res)
}

/// ATen's `canDispatchToMaskedFill`: Some when no index is a non-mask tensor and at most
/// one is a mask: the mask (None when every index is None, which ATen then fails on) and
/// the self dim it starts at.
#[allow(clippy::type_complexity)]
fn masked_fill_target<'a>(list: &[Option<Tensor<'a>>]) -> Option<(Option<Tensor<'a>>, usize)> {
    let mut mask = None;
    let mut at = 0;
    for entry in list {
        match entry {
            None => {
                if mask.is_none() {
                    at += 1;
                }
            }
            Some(m)
                if matches!(m.dtype(), sys::TENSOR_BOOL | sys::TENSOR_UINT8) && mask.is_none() =>
            {
                mask = Some(*m)
            }
            Some(_) => return None,
        }
    }
    Some((mask, at))
}

/// `self.clone().index_put_(indices, values, accumulate)` (ATen's functional index_put).
fn index_put(t: Tensor, list: &[Option<Tensor>], v: Tensor, accumulate: bool) -> Result<Owned> {
    util::require_cpu(t, "self")?;
    util::require_cpu(v, "values")?;
    let mut res = t.clone_as(sys::TENSOR_PRESERVE_FORMAT)?;
    too_many(t, list.len())?;
    read_indices(list)?;
    let dtype = t.dtype();
    if !accumulate && v.numel() == 1 {
        if let Some((m, at)) = masked_fill_target(list) {
            // self.masked_fill_(mask, values.item()): the value converted to self's dtype.
            let Some(m) = m else {
                return err(
                    sys::TENSOR_ERR_INDEX,
                    "masked_fill_ only supports boolean masks, but got an undefined mask (every index is None)",
                );
            };
            check_mask(t, m, at)?;
            if m.dtype() != sys::TENSOR_BOOL {
                return err(
                    sys::TENSOR_ERR_DTYPE,
                    format!(
                        "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                        util::dtype_name(m.dtype())
                    ),
                );
            }
            let one = util::empty_strided(&[], &[], dtype)?;
            one.get()
                .copy_from(v.as_strided(&[], &[], v.storage_offset())?.get())?;
            let mc = contiguous(m)?;
            let mv = mc.get().values::<Bool>()?;
            let mst = {
                let mut s = vec![0i64; t.ndim() as usize];
                s[at..at + m.ndim() as usize]
                    .copy_from_slice(&util::contiguous_strides(m.sizes())?);
                s
            };
            let shape = res.get().sizes().to_vec();
            let rst = res.get().strides().to_vec();
            dispatch!(dtype, [u8, i8, i16, i32, i64, Bool, f16, bf16, f32, f64], T => {
                let x = one.get().values::<T>()?[0];
                // SAFETY: res is the clone just made and nothing else reaches it.
                let dst = unsafe { res.values_mut::<T>() }?;
                for_each_position(&shape, &row_major(shape.len()), [&rst, &mst], |_, [o, k]| {
                    if mv[k as usize].0 != 0 {
                        dst[o as usize] = x;
                    }
                    Ok(())
                })?;
            }, _ => return not_implemented("masked_fill", dtype));
            return Ok(res);
        }
    }
    let info = make_info(res.get(), list)?;
    let shape = info.shape().to_vec();
    let vs = v.sizes();
    let expandable = vs.len() <= shape.len()
        && vs
            .iter()
            .rev()
            .zip(shape.iter().rev())
            .all(|(&a, &b)| a == b || a == 1);
    if !expandable {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("shape mismatch: value tensor of shape {vs:?} cannot be broadcast to indexing result of shape {shape:?}"),
        );
    }
    if v.dtype() != dtype {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
                util::dtype_name(dtype),
                util::dtype_name(v.dtype())
            ),
        );
    }
    info.some_index()?;
    // TensorIterator's order over (restrided self, values, indices).
    let mut ops = vec![info.src.get(), v];
    ops.extend(info.indexers.iter().map(|o| o.get()));
    let order = iterator_perm(&shape, &ops);
    let offsets = info.offsets()?;
    let ist = info.index_strides()?;
    let sst = info.src.get().strides().to_vec();
    let vst = super::broadcast_strides(v, &shape);
    drop(info.indexers);
    drop(info.src);
    drop(info.base);
    dispatch!(dtype, [u8, i8, i16, i32, i64, Bool, f16, bf16, f32, f64], T => {
        let src = v.values::<T>()?;
        // SAFETY: res is the clone just made; the views of it made by make_info (base,
        // src, whose geometry was read above) have been dropped, and nothing else
        // reaches its storage.
        let dst = unsafe { res.values_mut::<T>() }?;
        for_each_position(&shape, &order, [&sst, &vst, &ist], |_, [o, s, i]| {
            let at = (o + offsets[i as usize]) as usize;
            dst[at] = if accumulate {
                T::from_w(T::add(dst[at].to_w(), src[s as usize].to_w()))
            } else {
                src[s as usize]
            };
            Ok(())
        })?;
    }, _ => return not_implemented("index_put", dtype));
    Ok(res)
}

/// The optional index handles of c_shim_cpu.h's `const AtenTensorHandle** indices`.
fn indices_ptr<'a>(p: *const *const Handle, n: i64) -> Result<Vec<Option<Tensor<'a>>>> {
    let list = util::array(p, n, "indices")?;
    Ok(list
        .iter()
        .map(|&h| util::optional_handle(h, "indices"))
        .collect())
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_nonzero(
    self_: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = nonzero(t)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_nonzero_static(
    self_: AtenTensorHandle,
    size: i64,
    fill_value: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = nonzero_static(t, size, fill_value)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_index_Tensor(
    self_: AtenTensorHandle,
    indices: *const *const AtenTensorHandle,
    indices_len_: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let list = indices_ptr(indices, indices_len_)?;
        let r = out(ret0, "ret0")?;
        *r = index(t, &list)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_index_put(
    self_: AtenTensorHandle,
    indices: *const *const AtenTensorHandle,
    indices_len_: i64,
    values: AtenTensorHandle,
    accumulate: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let list = indices_ptr(indices, indices_len_)?;
        let v = handle(values, "values")?;
        let r = out(ret0, "ret0")?;
        *r = index_put(t, &list, v, accumulate != 0)?.into_raw();
        Ok(())
    })
}

/// shim.h's `index_put_out` (what Inductor emits for an index_put_ fallback, with `out`
/// and `self` the same buffer): `out.copy_(index_put(self, ...))`. Its indices are an
/// array of handles, NULL for an absent one.
#[no_mangle]
pub extern "C" fn aoti_torch_index_put_out(
    out_: AtenTensorHandle,
    self_: AtenTensorHandle,
    indices: *const AtenTensorHandle,
    num_indices: u32,
    values: AtenTensorHandle,
    accumulate: bool,
) -> i32 {
    shim(fn_name!(), || {
        let o = handle(out_, "out")?;
        let t = handle(self_, "self")?;
        let list: Vec<Option<Tensor>> = util::array(indices, num_indices as i64, "indices")?
            .iter()
            .map(|&h| handle(h, "indices").ok())
            .collect();
        let v = handle(values, "values")?;
        util::require_cpu(o, "out")?;
        if o.sizes() != t.sizes() || o.dtype() != t.dtype() {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "out ({} {:?}) does not match self ({} {:?})",
                    util::dtype_name(o.dtype()),
                    o.sizes(),
                    util::dtype_name(t.dtype()),
                    t.sizes()
                ),
            );
        }
        let r = index_put(t, &list, v, accumulate)?;
        o.copy_from(r.get())
    })
}

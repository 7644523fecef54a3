//! Sorting along a dim, with ATen's CPU results down to the indices of ties:
//!
//! - `sort`, `sort_stable`: NaN is greater than everything (last ascending, first
//!   descending); stable keeps equal elements in input order, not stable is libstdc++'s
//!   `std::sort` (ATen's), so ties land where ATen's do; a lane whose input stride is 0 is
//!   left in input order (ATen skips it). Values and indices have self's strides when self
//!   is non-overlapping and dense, else dense strides in its dim order (ATen's sort meta).
//! - `topk`: ATen's loop: `std::partial_sort` of (value, index) pairs when 64·k <= n, else
//!   `std::nth_element` at k - 1 then, if `sorted`, `std::sort` of the k - 1 before it;
//!   NaN counts as the largest. Contiguous outputs.
//! - `kthvalue` (ATen's quickselect), `mode` (`std::sort` by value, the last index of the
//!   most frequent run), `median` (all elements: NaN if any, else the lower median),
//!   `nanmedian` (the lower median of the non-NaN elements).
//!   Reduced outputs are contiguous with the dim kept, then squeezed unless `keepdim`.

use super::order;
use super::{contiguous, isnan, lanes, not_implemented, optional, AtenTensorHandle, LaneOut};
use crate::dispatch;
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Bool, Element, Owned, Tensor};
use half::{bf16, f16};

type Pair<T> = (T, i64);

/// ATen's ascending key order: NaN after everything.
fn lt_nan_last<T: PartialOrd + Copy>(a: &Pair<T>, b: &Pair<T>) -> bool {
    (!isnan(a.0) && isnan(b.0)) || a.0 < b.0
}

/// ATen's descending key order: NaN before everything.
fn gt_nan_first<T: PartialOrd + Copy>(a: &Pair<T>, b: &Pair<T>) -> bool {
    (isnan(a.0) && !isnan(b.0)) || a.0 > b.0
}

/// The (value, index) pairs of each lane: `f` gets them numbered 0..n, and writes its
/// result (the first `k` pairs) to the rows of `values` and `indices`.
fn per_lane<T: Element>(
    src: &[T],
    n: usize,
    k: usize,
    values: &mut LaneOut,
    indices: &mut LaneOut,
    f: impl Fn(&mut Vec<Pair<T>>),
) -> Result<()> {
    let vs = values.rows::<T>()?;
    let is = indices.rows::<i64>()?;
    let mut pairs: Vec<Pair<T>> = Vec::with_capacity(n);
    for ((row, vrow), irow) in src
        .chunks_exact(n)
        .zip(vs.chunks_exact_mut(k))
        .zip(is.chunks_exact_mut(k))
    {
        pairs.clear();
        pairs.extend(row.iter().enumerate().map(|(j, &x)| (x, j as i64)));
        f(&mut pairs);
        for ((v, i), p) in vrow.iter_mut().zip(irow.iter_mut()).zip(&pairs) {
            *v = p.0;
            *i = p.1;
        }
    }
    Ok(())
}

/// A 0-dim input's two results: its value and index 0.
fn scalar_case(values: LaneOut, indices: LaneOut, t: Tensor) -> Result<(Owned, Owned)> {
    let (v, i) = (values.finish()?, indices.finish()?);
    v.get().copy_from(t)?;
    i.get().fill_i64(0)?;
    Ok((v, i))
}

fn sort(t: Tensor, stable: bool, dim: i64, descending: bool) -> Result<(Owned, Owned)> {
    util::require_cpu(t, "self")?;
    let d = util::wrap_dim(dim, t.ndim() as usize, true)?;
    let like = t.empty_like(sys::TENSOR_PRESERVE_FORMAT)?;
    let strides = like.get().strides().to_vec();
    let sizes = t.sizes();
    let mut values = LaneOut::over(like, d)?;
    let mut indices = LaneOut::new(sizes, &strides, sys::TENSOR_INT64, d)?;
    if t.ndim() == 0 {
        return scalar_case(values, indices, t);
    }
    if t.numel() == 0 {
        return Ok((values.finish()?, indices.finish()?));
    }
    let n = sizes[d] as usize;
    // ATen fills the indices and leaves a lane whose input stride is 0 unsorted.
    let keep = t.strides()[d] == 0;
    let src = lanes(t, d)?;
    dispatch!(t.dtype(), T => {
        let less = if descending { gt_nan_first::<T> } else { lt_nan_last::<T> };
        per_lane(src.get().values::<T>()?, n, n, &mut values, &mut indices, |p| {
            if keep {
            } else if stable {
                p.sort_by(|a, b| {
                    if less(a, b) {
                        std::cmp::Ordering::Less
                    } else if less(b, a) {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                });
            } else {
                order::sort(p, &less);
            }
        })?;
    }, _ => return not_implemented("sort", t.dtype()));
    Ok((values.finish()?, indices.finish()?))
}

fn topk(t: Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Owned, Owned)> {
    util::require_cpu(t, "self")?;
    let d = util::wrap_dim(dim, t.ndim() as usize, true)?;
    let slice = if t.ndim() == 0 { 1 } else { t.sizes()[d] };
    if k < 0 || k > slice {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!("selected index k out of range (k {k}, dim {d} of size {slice})"),
        );
    }
    if t.dtype() == sys::TENSOR_BOOL {
        return err(
            sys::TENSOR_ERR_DTYPE,
            "topk does not support bool dtypes on CPU",
        );
    }
    let mut sizes = t.sizes().to_vec();
    if !sizes.is_empty() {
        sizes[d] = k;
    }
    let st = util::contiguous_strides(&sizes)?;
    let mut values = LaneOut::new(&sizes, &st, t.dtype(), d)?;
    let mut indices = LaneOut::new(&sizes, &st, sys::TENSOR_INT64, d)?;
    if t.ndim() == 0 {
        return scalar_case(values, indices, t);
    }
    let dtype = t.dtype();
    let (n, k) = (slice as usize, k as usize);
    dispatch!(dtype, [u8, i8, i16, i32, i64, f16, bf16, f32, f64], T => {
        if t.numel() > 0 && k > 0 {
            let src = lanes(t, d)?;
            let less = if largest { gt_nan_first::<T> } else { lt_nan_last::<T> };
            per_lane(src.get().values::<T>()?, n, k, &mut values, &mut indices, |p| {
                if k * 64 <= n {
                    order::partial_sort(p, k, &less);
                } else {
                    order::nth_element(p, k - 1, &less);
                    if sorted {
                        order::sort(&mut p[..k - 1], &less);
                    }
                }
            })?;
        }
    }, _ => return not_implemented("topk_cpu", dtype));
    Ok((values.finish()?, indices.finish()?))
}

/// The outputs of a reduction along `d` (ATen's `_reduction_with_indices_allocate_or_
/// resize_output`): contiguous with the dim kept as 1.
fn reduced_outputs(t: Tensor, d: usize) -> Result<(LaneOut, LaneOut)> {
    let mut sizes = t.sizes().to_vec();
    if !sizes.is_empty() {
        sizes[d] = 1;
    }
    let st = util::contiguous_strides(&sizes)?;
    Ok((
        LaneOut::new(&sizes, &st, t.dtype(), d)?,
        LaneOut::new(&sizes, &st, sys::TENSOR_INT64, d)?,
    ))
}

/// `o` without dim `d` (ATen's `squeeze_(d)`), unless `keepdim` or `o` is 0-dim.
fn squeeze(o: Owned, d: usize, keepdim: bool) -> Result<Owned> {
    let t = o.get();
    if keepdim || t.ndim() == 0 {
        return Ok(o);
    }
    let (mut s, mut st) = (t.sizes().to_vec(), t.strides().to_vec());
    s.remove(d);
    st.remove(d);
    t.as_strided(&s, &st, t.storage_offset())
}

/// ATen's `zero_numel_check_dims`: the reduced dim may not be empty.
fn nonempty_dim(t: Tensor, d: usize, op: &str) -> Result<()> {
    if t.ndim() > 0 && t.sizes()[d] == 0 {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!("{op}(): Expected reduction dim {d} to have non-zero size."),
        );
    }
    Ok(())
}

fn kthvalue(t: Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Owned, Owned)> {
    util::require_cpu(t, "self")?;
    let d = util::wrap_dim(dim, t.ndim() as usize, true)?;
    let slice = if t.ndim() == 0 { 1 } else { t.sizes()[d] };
    nonempty_dim(t, d, "kthvalue")?;
    if k < 1 || k > slice {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!("kthvalue(): selected number k out of range for dimension {d} (k {k}, size {slice})"),
        );
    }
    let (mut values, mut indices) = reduced_outputs(t, d)?;
    if t.ndim() == 0 {
        return scalar_case(values, indices, t);
    }
    let dtype = t.dtype();
    dispatch!(dtype, [u8, i8, i16, i32, i64, f16, bf16, f32, f64], T => {
        if t.numel() > 0 {
            let src = lanes(t, d)?;
            let k = (k - 1) as usize;
            per_lane(src.get().values::<T>()?, slice as usize, 1, &mut values, &mut indices, |p| {
                order::quick_select(p, k, &gt_nan_first::<T>);
                p.swap(0, k);
            })?;
        }
    }, _ => return not_implemented("kthvalue_cpu", dtype));
    Ok((
        squeeze(values.finish()?, d, keepdim)?,
        squeeze(indices.finish()?, d, keepdim)?,
    ))
}

fn mode(t: Tensor, dim: i64, keepdim: bool) -> Result<(Owned, Owned)> {
    util::require_cpu(t, "self")?;
    let d = util::wrap_dim(dim, t.ndim() as usize, true)?;
    if t.numel() == 0 {
        nonempty_dim(t, d, "mode")?;
    }
    let (mut values, mut indices) = reduced_outputs(t, d)?;
    if t.ndim() == 0 {
        return scalar_case(values, indices, t);
    }
    let dtype = t.dtype();
    if t.numel() > 0 {
        let n = t.sizes()[d] as usize;
        let src = lanes(t, d)?;
        dispatch!(dtype, [u8, i8, i16, i32, i64, Bool, f16, bf16, f32, f64], T => {
            per_lane(src.get().values::<T>()?, n, 1, &mut values, &mut indices, |p| {
                order::sort(p, &|a: &Pair<T>, b: &Pair<T>| a.0 < b.0);
                // The last pair of the first run longer than all before it.
                let (mut best, mut best_len, mut run) = (p[0], 0usize, 0usize);
                for i in 0..n {
                    run += 1;
                    #[allow(clippy::neg_cmp_op_on_partial_ord)]
                    let ends = i == n - 1 || p[i].0 != p[i + 1].0;
                    if ends {
                        if run > best_len {
                            best = p[i];
                            best_len = run;
                        }
                        run = 0;
                    }
                }
                p[0] = best;
            })?;
        }, _ => return not_implemented("mode_cpu", dtype));
    }
    Ok((
        squeeze(values.finish()?, d, keepdim)?,
        squeeze(indices.finish()?, d, keepdim)?,
    ))
}

/// A 0-dim tensor of `dtype` holding `x`.
fn scalar_of<T: Element>(x: T) -> Result<Owned> {
    let mut o = util::empty_strided(&[], &[], T::DTYPE)?;
    // SAFETY: o was just allocated (empty_strided) and nothing else reaches its storage.
    unsafe { o.values_mut::<T>() }?[0] = x;
    Ok(o)
}

/// torch.median(self): NaN if self has one, else the ((n - 1) / 2)-th smallest element;
/// torch.nanmedian(self) (`ignore_nan`): NaN counts as larger than every number and the
/// ((n - nans - 1) / 2)-th smallest is taken (C++'s truncating division: the first element,
/// a NaN, when all are NaN). Empty: ATen's NaN converted to the dtype (as x86 converts: the
/// most negative int32 / int64, 0 for the narrower integers, true for bool).
fn median(t: Tensor, ignore_nan: bool) -> Result<Owned> {
    util::require_cpu(t, "self")?;
    let dtype = t.dtype();
    if t.numel() == 0 {
        return match dtype {
            sys::TENSOR_INT64 => scalar_of(i64::MIN),
            sys::TENSOR_INT32 => scalar_of(i32::MIN),
            sys::TENSOR_BOOL => scalar_of(Bool(1)),
            _ => {
                dispatch!(dtype, [f16, bf16, f32, f64], T => scalar_of(T::from_f64(f64::NAN)), _ => {
                    let o = util::empty_strided(&[], &[], dtype)?;
                    o.get().fill_i64(0)?;
                    Ok(o)
                })
            }
        };
    }
    let c = contiguous(t)?;
    dispatch!(dtype, [u8, i8, i16, i32, i64, f16, bf16, f32, f64], T => {
        let v = c.get().values::<T>()?;
        let nans = v.iter().filter(|&&x| isnan(x)).count();
        if nans > 0 && !ignore_nan {
            return scalar_of(T::from_f64(f64::NAN));
        }
        let mut w = v.to_vec();
        let m = (w.len() - nans).saturating_sub(1) / 2;
        order::nth_element(&mut w, m, &|a: &T, b: &T| a < b || (isnan(*b) && !isnan(*a)));
        scalar_of(w[m])
    }, _ => not_implemented("median_cpu", dtype))
}

fn two_outputs(
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
    f: impl FnOnce() -> Result<(Owned, Owned)>,
) -> Result<()> {
    let r0 = out(ret0, "ret0")?;
    let r1 = out(ret1, "ret1")?;
    let (v, i) = f()?;
    *r0 = v.into_raw();
    *r1 = i.into_raw();
    Ok(())
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_sort(
    self_: AtenTensorHandle,
    dim: i64,
    descending: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        two_outputs(ret0, ret1, || sort(t, false, dim, descending != 0))
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_sort_stable(
    self_: AtenTensorHandle,
    stable: *mut i32,
    dim: i64,
    descending: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let stable = optional(stable).is_some_and(|s| s != 0);
        two_outputs(ret0, ret1, || sort(t, stable, dim, descending != 0))
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_topk(
    self_: AtenTensorHandle,
    k: i64,
    dim: i64,
    largest: i32,
    sorted: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        two_outputs(ret0, ret1, || topk(t, k, dim, largest != 0, sorted != 0))
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_kthvalue(
    self_: AtenTensorHandle,
    k: i64,
    dim: i64,
    keepdim: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        two_outputs(ret0, ret1, || kthvalue(t, k, dim, keepdim != 0))
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mode(
    self_: AtenTensorHandle,
    dim: i64,
    keepdim: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        two_outputs(ret0, ret1, || mode(t, dim, keepdim != 0))
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_median(
    self_: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = median(t, false)?.into_raw();
        Ok(())
    })
}

/// torch.nanmedian(self): the lower median of the non-NaN elements (NaN when all are NaN or
/// self is empty). Inductor leaves it as this fallback (`nanmedian(x, dim)` goes through
/// the proxy executor, which libtensor_aoti does not have).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_nanmedian(
    self_: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = median(t, true)?.into_raw();
        Ok(())
    })
}

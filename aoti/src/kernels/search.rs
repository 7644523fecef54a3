//! Binary search into sorted boundaries: `searchsorted_Tensor`, `searchsorted_Scalar`,
//! `bucketize_Tensor` (ATen's Bucketization.cpp semantics: 1-D boundaries for any input, or
//! boundaries whose dims before the last are the input's; `right` / `side` (lower or upper
//! bound), an optional int64 `sorter` giving each boundary row's order; the input and the
//! boundaries compared in their promoted dtype (ATen's result_type, the Scalar variant's
//! value counting as a Python float); int64 results, int32 with `out_int32`, contiguous
//! with the input's sizes). The search is ATen's (the same midpoints and comparisons), so
//! unsorted boundaries and NaN give ATen's positions too: a NaN input goes past
//! everything.

use super::{contiguous, not_implemented, optional_str};
use super::{result_type, AtenTensorHandle, Operand};
use crate::dispatch;
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Owned, Tensor};
use half::{bf16, f16};
use std::ffi::c_char;

/// The first position in bd[start..end) (through `sorter` when given) whose boundary is not
/// below `v` (`right`: above `v`), relative to `start`: ATen's `cus_lower_bound` /
/// `cus_upper_bound`.
fn bound<T: PartialOrd + Copy>(
    bd: &[T],
    sorter: Option<&[i64]>,
    start: usize,
    end: usize,
    v: T,
    right: bool,
) -> usize {
    let (mut lo, mut hi) = (start, end);
    while lo < hi {
        let mid = lo + ((hi - lo) >> 1);
        // A sorter holds positions within its row (checked in range).
        let b = match sorter {
            Some(s) => bd[start + s[mid] as usize],
            None => bd[mid],
        };
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let below = if right { !(b > v) } else { !(b >= v) };
        if below {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo - start
}

/// The values searched for: a tensor (a handle, then a checked [`Tensor`]), or the Scalar
/// variant's number.
#[derive(Clone, Copy)]
enum Needle<T> {
    Tensor(T),
    Scalar(f64),
}

fn searchsorted(
    bd: Tensor,
    needle: Needle<Tensor>,
    out_int32: bool,
    right: bool,
    side: Option<String>,
    sorter: Option<Tensor>,
) -> Result<Owned> {
    let name = "torch.searchsorted()";
    if let Some(s) = &side {
        if s != "left" && s != "right" {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("{name}: side can only be 'left' or 'right' but got {s}"),
            );
        }
        if right && s != "right" {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("{name}: side and right can't be set to opposites, got side of {s} while right was True"),
            );
        }
    }
    util::require_cpu(bd, "sorted_sequence")?;
    // The Scalar variant's value as a 0-dim float64 tensor (ATen wraps it likewise).
    let scalar;
    let (input, input_op) = match needle {
        Needle::Tensor(t) => {
            util::require_cpu(t, "self")?;
            let op = if t.ndim() == 0 {
                Operand::ZeroDim(t.dtype())
            } else {
                Operand::Dim(t.dtype())
            };
            (t, op)
        }
        Needle::Scalar(x) => {
            let mut s = util::empty_strided(&[], &[], sys::TENSOR_FLOAT64)?;
            // SAFETY: s was just allocated (empty_strided) and nothing else reaches it.
            unsafe { s.values_mut::<f64>() }?[0] = x;
            scalar = s;
            (scalar.get(), Operand::Wrapped(sys::TENSOR_FLOAT64))
        }
    };
    let last = bd.sizes().last().copied();
    if let Some(s) = sorter {
        util::require_cpu(s, "sorter")?;
        if s.sizes() != bd.sizes() {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("{name}: boundary and sorter must have the same size, but got boundary tensor {:?}and got sorter tensor {:?}", bd.sizes(), s.sizes()),
            );
        }
        if s.dtype() != sys::TENSOR_INT64 {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "{name}: sorter must be a tensor of long dtype but got dtype {}",
                    util::dtype_name(s.dtype())
                ),
            );
        }
    }
    if !(input.ndim() > 0 || (input.numel() == 1 && bd.ndim() == 1)) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("{name}: input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim({}) and input value's dim({}) numel({})", bd.ndim(), input.ndim(), input.numel()),
        );
    }
    let Some(width) = last else {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "{name}: boundaries tensor should have positive dimension, but got 0 dimension"
            ),
        );
    };
    let (bs, is) = (bd.sizes(), input.sizes());
    let batched = bd.ndim() > 1;
    if batched && (bs.len() != is.len() || bs[..bs.len() - 1] != is[..is.len() - 1]) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("{name}: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {bs:?} and input value tensor {is:?}"),
        );
    }
    if out_int32 && width >= i32::MAX as i64 {
        return err(
            sys::TENSOR_ERR_OVERFLOW,
            format!("{name}: the size of boundaries' last dimension should be less than {}, but we got {width}", i32::MAX),
        );
    }
    // The sorter's entries are positions within a row.
    let sorter = match sorter {
        Some(s) => {
            let c = contiguous(s)?;
            let v = c.get().values::<i64>()?;
            if let Some(bad) = v.iter().find(|&&x| x < 0 || x >= width) {
                return err(
                    sys::TENSOR_ERR_INDEX,
                    format!("{name}: sorter index out of range (entry {bad}, rows of {width})"),
                );
            }
            Some(c)
        }
        None => None,
    };
    let right = side.map_or(right, |s| s == "right");
    let out_dtype = if out_int32 {
        sys::TENSOR_INT32
    } else {
        sys::TENSOR_INT64
    };
    let mut res = util::empty(is, out_dtype)?;
    if input.numel() == 0 {
        return Ok(res);
    }
    let common = result_type(&[Operand::Dim(bd.dtype()), input_op])?;
    let dense = |t: Tensor| -> Result<Owned> {
        if t.dtype() == common {
            contiguous(t)
        } else {
            contiguous(t.to_dtype(common)?.get())
        }
    };
    let (b, x) = (dense(bd)?, dense(input)?);
    let row_in = if input.ndim() == 0 {
        1
    } else {
        is[is.len() - 1] as usize
    };
    let width = width as usize;
    let sorter = match &sorter {
        Some(s) => Some(s.get().values::<i64>()?),
        None => None,
    };
    dispatch!(common, [u8, i8, i16, i32, i64, f16, bf16, f32, f64], T => {
        let (bv, xv) = (b.get().values::<T>()?, x.get().values::<T>()?);
        let pos = |i: usize, v: T| {
            let start = if batched { i / row_in * width } else { 0 };
            bound(bv, sorter, start, start + width, v, right)
        };
        if out_int32 {
            // SAFETY: res was just allocated (empty_strided) and nothing else reaches it.
            let o = unsafe { res.values_mut::<i32>() }?;
            for (i, (y, &v)) in o.iter_mut().zip(xv).enumerate() {
                *y = pos(i, v) as i32;
            }
        } else {
            // SAFETY: as above.
            let o = unsafe { res.values_mut::<i64>() }?;
            for (i, (y, &v)) in o.iter_mut().zip(xv).enumerate() {
                *y = pos(i, v) as i64;
            }
        }
    }, _ => return not_implemented("searchsorted_out_cpu", common));
    Ok(res)
}

/// The two searchsorted entry points: arguments checked, then [`searchsorted`].
fn searchsorted_shim(
    name: &str,
    sorted_sequence: AtenTensorHandle,
    needle: Needle<AtenTensorHandle>,
    out_int32: i32,
    right: i32,
    side: *const *const c_char,
    sorter: *mut AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(name, || {
        let bd = handle(sorted_sequence, "sorted_sequence")?;
        let needle = match needle {
            Needle::Tensor(h) => Needle::Tensor(handle(h, "self")?),
            Needle::Scalar(x) => Needle::Scalar(x),
        };
        let s = util::optional_handle(sorter, "sorter");
        let r = out(ret0, "ret0")?;
        let side = optional_str(side);
        *r = searchsorted(bd, needle, out_int32 != 0, right != 0, side, s)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_searchsorted_Tensor(
    sorted_sequence: AtenTensorHandle,
    self_: AtenTensorHandle,
    out_int32: i32,
    right: i32,
    side: *const *const c_char,
    sorter: *mut AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    let name = fn_name!();
    let needle = Needle::Tensor(self_);
    searchsorted_shim(
        name,
        sorted_sequence,
        needle,
        out_int32,
        right,
        side,
        sorter,
        ret0,
    )
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_searchsorted_Scalar(
    sorted_sequence: AtenTensorHandle,
    self_: f64,
    out_int32: i32,
    right: i32,
    side: *const *const c_char,
    sorter: *mut AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    let name = fn_name!();
    let needle = Needle::Scalar(self_);
    searchsorted_shim(
        name,
        sorted_sequence,
        needle,
        out_int32,
        right,
        side,
        sorter,
        ret0,
    )
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_bucketize_Tensor(
    self_: AtenTensorHandle,
    boundaries: AtenTensorHandle,
    out_int32: i32,
    right: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let bd = handle(boundaries, "boundaries")?;
        let r = out(ret0, "ret0")?;
        if bd.ndim() != 1 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "boundaries tensor must be 1 dimension, but got dim({})",
                    bd.ndim()
                ),
            );
        }
        *r = searchsorted(
            bd,
            Needle::Tensor(t),
            out_int32 != 0,
            right != 0,
            None,
            None,
        )?
        .into_raw();
        Ok(())
    })
}

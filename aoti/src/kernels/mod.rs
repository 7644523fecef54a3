//! Fallback kernels a CPU AOTInductor model calls for the ops Inductor does not generate
//! itself (`aoti_torch_cpu_*`, signatures of torch's generated `c_shim_cpu.h`), one file per
//! job:
//!
//! - `gemm`: the one GEMM primitive (the `gemm` crate) the others call;
//! - `matmul`: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out`;
//! - `conv`: `convolution` (im2col + gemm);
//! - `attention`: `_scaled_dot_product_flash_attention_for_cpu`;
//! - `scan`: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`;
//! - `order`: libstdc++'s sort / nth_element / partial_sort and ATen's quickselect, step for
//!   step, so that ties come out in ATen's order (used by `sort`);
//! - `sort`: `sort`, `sort_stable`, `topk`, `kthvalue`, `median`, `mode`;
//! - `search`: `searchsorted_Tensor`, `searchsorted_Scalar`, `bucketize_Tensor`.
//!
//! This file holds what they share: argument checks, allocation, lanes along a dim, dtype
//! promotion. Outputs allocated here have exactly ATen's strides: the generated code that
//! follows indexes them with hard-coded strides.

mod attention;
mod conv;
mod gemm;
mod matmul;
mod order;
mod scan;
mod search;
mod sort;

use crate::error::{err, Result};
use crate::sys::{self, tensor_t};
use crate::util::{self, Element, Owned, Tensor};

/// A tensor handle argument as the shim passes it.
type AtenTensorHandle = *mut tensor_t;

const F16: i32 = sys::TENSOR_FLOAT16;
const F32: i32 = sys::TENSOR_FLOAT32;
const F64: i32 = sys::TENSOR_FLOAT64;
const BF16: i32 = sys::TENSOR_BFLOAT16;

fn same_dtype(ts: &[(Tensor, &str)]) -> Result<i32> {
    let d = ts[0].0.dtype();
    for &(t, name) in ts {
        util::require_cpu(t, name)?;
        let e = t.dtype();
        if e != d {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "expected {} and {name} to have the same dtype, but got: {} != {}",
                    ts[0].1,
                    util::dtype_name(d),
                    util::dtype_name(e)
                ),
            );
        }
    }
    if !matches!(d, F16 | F32 | F64 | BF16) {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "{} is not supported (float32, float64, float16, bfloat16)",
                util::dtype_name(d)
            ),
        );
    }
    Ok(d)
}

fn expect_sizes(t: Tensor, want: &[i64], name: &str) -> Result<()> {
    if t.sizes() != want {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("{name} has sizes {:?}, expected {want:?}", t.sizes()),
        );
    }
    Ok(())
}

fn expect_dim(t: Tensor, n: usize, name: &str) -> Result<()> {
    if t.sizes().len() != n {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("{name} must be a {n}-D tensor, got sizes {:?}", t.sizes()),
        );
    }
    Ok(())
}

/// A float32 copy of a bfloat16 tensor (the GEMM has no bfloat16 kernel), same strides.
fn as_f32(t: Tensor) -> Result<Owned> {
    t.to_dtype(F32)
}

/// An uninitialised tensor with the given strides.
fn empty(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Owned> {
    util::empty_strided(sizes, strides, dtype)
}

fn contiguous(t: Tensor) -> Result<Owned> {
    t.contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)
}

/// c10's contiguous strides (a size-0 or size-1 dim counts as 1).
pub fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut st = vec![1i64; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * sizes[i + 1].max(1);
    }
    st
}

/// c10's channels-last strides (`get_channels_last_strides_2d` / `_3d`): channels
/// innermost, then the spatial dims from last to first, then the batch.
pub fn channels_last_strides(sizes: &[i64]) -> Vec<i64> {
    let n = sizes.len();
    let mut st = vec![0i64; n];
    st[1] = 1;
    let mut acc = sizes[1].max(1);
    for d in (2..n).rev() {
        st[d] = acc;
        acc *= sizes[d].max(1);
    }
    st[0] = acc;
    st
}

/// ATen's "not implemented for" error of a kernel that does not dispatch over `dtype`.
fn not_implemented<T>(op: &str, dtype: i32) -> Result<T> {
    err(
        sys::TENSOR_ERR_DTYPE,
        format!("\"{op}\" not implemented for '{}'", util::dtype_name(dtype)),
    )
}

/// An optional scalar argument passed as a pointer (c_shim_cpu.h's `int?`, `bool?`, ...):
/// None for NULL.
fn optional<T: Copy>(p: *const T) -> Option<T> {
    if p.is_null() {
        None
    } else {
        // SAFETY: p is non-NULL (checked above); c_shim_cpu.h passes an optional scalar as a
        // pointer to one readable value, live for the call.
        Some(unsafe { p.read() })
    }
}

/// An optional string argument passed as `const char**` (c_shim_cpu.h's `str?`): None for a
/// NULL pointer or a NULL string.
fn optional_str(p: *const *const std::ffi::c_char) -> Option<String> {
    optional(p).and_then(util::c_string)
}

/// `x != x`: NaN for the float types, never for the others (ATen's `_isnan`).
fn isnan<T: PartialEq>(x: T) -> bool {
    #[allow(clippy::eq_op)]
    let nan = x != x;
    nan
}

/// True for the integer dtypes and bool (ATen's `isIntegralType(t, includeBool=true)`).
fn is_integral(dtype: i32) -> bool {
    matches!(
        dtype,
        sys::TENSOR_UINT8
            | sys::TENSOR_INT8
            | sys::TENSOR_INT16
            | sys::TENSOR_INT32
            | sys::TENSOR_INT64
            | sys::TENSOR_UINT16
            | sys::TENSOR_UINT32
            | sys::TENSOR_UINT64
            | sys::TENSOR_BOOL
    )
}

fn is_float(dtype: i32) -> bool {
    matches!(dtype, F16 | BF16 | F32 | F64)
}

/// c10's `promoteTypes` over the real dtypes: bool gives way to anything, uint8 with a
/// signed type is at least int16, an integer with a float is the float, float16 with
/// bfloat16 is float32; uint16/32/64 promote only with themselves or a float (c10 refuses
/// the rest).
fn promote_types(a: i32, b: i32) -> Result<i32> {
    const SIGNED: [i32; 4] = [
        sys::TENSOR_INT8,
        sys::TENSOR_INT16,
        sys::TENSOR_INT32,
        sys::TENSOR_INT64,
    ];
    let float_rank = |d: i32| match d {
        F16 | BF16 => 1,
        F32 => 2,
        F64 => 3,
        _ => 0,
    };
    let int_rank = |d: i32| SIGNED.iter().position(|&s| s == d);
    if a == b {
        return Ok(a);
    }
    let barebones = |d| {
        matches!(
            d,
            sys::TENSOR_UINT16 | sys::TENSOR_UINT32 | sys::TENSOR_UINT64
        )
    };
    Ok(match (float_rank(a), float_rank(b)) {
        (0, 0) if barebones(a) || barebones(b) => {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {} and {}",
                    util::dtype_name(a),
                    util::dtype_name(b)
                ),
            )
        }
        (0, 0) if a == sys::TENSOR_BOOL => b,
        (0, 0) if b == sys::TENSOR_BOOL => a,
        (0, 0) => match (int_rank(a), int_rank(b)) {
            (Some(x), Some(y)) => SIGNED[x.max(y)],
            // uint8 with a signed type: int16 at least
            (None, Some(y)) | (Some(y), None) => SIGNED[y.max(1)],
            (None, None) => a,
        },
        (fa, fb) if fa == fb => F32, // float16 with bfloat16
        (fa, fb) if fa > fb => a,
        _ => b,
    })
}

/// One operand of ATen's `result_type`: a tensor with dims, a 0-dim tensor, or a wrapped
/// Python number (whose float kind counts as the default dtype, float32).
#[derive(Clone, Copy)]
enum Operand {
    Dim(i32),
    ZeroDim(i32),
    Wrapped(i32),
}

/// ATen's `result_type` (TypeProperties.cpp): operands of a higher category (tensors with
/// dims, then 0-dim tensors, then wrapped numbers) decide, unless a lower one is of a
/// higher kind (a float over integers, anything over bool).
fn result_type(ops: &[Operand]) -> Result<i32> {
    const NONE: i32 = -1;
    let (mut dim, mut zero, mut wrapped) = (NONE, NONE, NONE);
    let join = |acc: i32, d: i32| {
        if acc == NONE {
            Ok(d)
        } else {
            promote_types(acc, d)
        }
    };
    for &op in ops {
        match op {
            Operand::Dim(d) => dim = join(dim, d)?,
            Operand::ZeroDim(d) => zero = join(zero, d)?,
            Operand::Wrapped(d) => wrapped = join(wrapped, if is_float(d) { F32 } else { d })?,
        }
    }
    let combine = |higher: i32, lower: i32| -> Result<i32> {
        if higher != NONE && is_float(higher) {
            return Ok(higher);
        }
        if higher == sys::TENSOR_BOOL || (lower != NONE && is_float(lower)) {
            return if higher == NONE {
                Ok(lower)
            } else if lower == NONE {
                Ok(higher)
            } else {
                promote_types(higher, lower)
            };
        }
        Ok(if higher != NONE { higher } else { lower })
    };
    combine(dim, combine(zero, wrapped)?)
}

/// The sizes and strides of a layout with dim `d` moved last.
fn dim_last(sizes: &[i64], strides: &[i64], d: usize) -> (Vec<i64>, Vec<i64>) {
    let mut s: Vec<i64> = sizes.to_vec();
    let mut st: Vec<i64> = strides.to_vec();
    if d < s.len() {
        let (n, x) = (s.remove(d), st.remove(d));
        s.push(n);
        st.push(x);
    }
    (s, st)
}

/// A dense copy of `t` whose rows are its lanes along `dim` (dim moved last, then
/// contiguous): `values` reads them as consecutive rows of `t.size(dim)` elements, the
/// other dims in row-major order. A 0-dim tensor is one lane of one element.
fn lanes(t: Tensor, dim: usize) -> Result<Owned> {
    let (s, st) = dim_last(t.sizes(), t.strides(), dim);
    let v = t.as_strided(&s, &st, t.storage_offset())?;
    contiguous(v.get())
}

/// An output a lane kernel writes row by row (its lanes along `dim`, in the order of
/// [`lanes`]), whatever its strides: directly when its dim-last view is contiguous, else
/// through a dense buffer copied in by `finish`.
struct LaneOut {
    out: Owned,
    view: Owned,
    buf: Option<Owned>,
}

impl LaneOut {
    /// Over a tensor this crate has just allocated (nothing else holds its storage).
    fn over(out: Owned, dim: usize) -> Result<LaneOut> {
        let t = out.get();
        let (s, st) = dim_last(t.sizes(), t.strides(), dim);
        let view = t.as_strided(&s, &st, t.storage_offset())?;
        let buf = if view.get().is_contiguous(sys::TENSOR_CONTIGUOUS_FORMAT) {
            None
        } else {
            Some(empty(&s, &contiguous_strides(&s), t.dtype())?)
        };
        Ok(LaneOut { out, view, buf })
    }

    fn new(sizes: &[i64], strides: &[i64], dtype: i32, dim: usize) -> Result<LaneOut> {
        LaneOut::over(empty(sizes, strides, dtype)?, dim)
    }

    /// The rows to write, in lane order.
    fn rows<T: Element>(&mut self) -> Result<&mut [T]> {
        let t = self.buf.as_mut().unwrap_or(&mut self.out);
        // SAFETY: `out` and `buf` were allocated by this crate (`over`'s contract, `empty`)
        // and nothing else reaches their storage: `view` aliases `out` but is only read by
        // `finish`, after this borrow of self has ended.
        unsafe { t.values_mut::<T>() }
    }

    fn finish(self) -> Result<Owned> {
        if let Some(b) = &self.buf {
            self.view.get().copy_from(b.get())?;
        }
        Ok(self.out)
    }
}

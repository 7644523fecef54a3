//! Fallback kernels a CPU AOTInductor model calls for the ops Inductor does not generate
//! itself (`aoti_torch_cpu_*`, signatures of torch's generated `c_shim_cpu.h`), one file per
//! job:
//!
//! - `gemm`: the one GEMM primitive (the `gemm` crate) the others call;
//! - `matmul`: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out`;
//! - `conv`: `convolution` (im2col + gemm);
//! - `attention`: `_scaled_dot_product_flash_attention_for_cpu`;
//! - `rnn`: `mkldnn_rnn_layer` (one LSTM layer and direction, c/shim_cpu.h);
//! - `int8mm`: `_weight_int8pack_mm`, `_int_mm_out`;
//! - `fft`: `_fft_r2c`, `_fft_c2c` (mixed radix, Bluestein);
//! - `complex`: `view_as_real`, `view_as_complex`, `abs` of a complex tensor.
//!
//! This file holds what they share: argument checks and allocation. Outputs allocated here
//! have exactly ATen's strides: the generated code that follows indexes them with hard-coded
//! strides.

mod attention;
mod complex;
mod conv;
mod fft;
mod gemm;
mod int8mm;
mod matmul;
mod rnn;

use crate::error::{err, Result};
use crate::sys::{self, tensor_t};
use crate::util::{self, Owned, Tensor};

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

/// `t`'s values as a contiguous float32 tensor (`t` itself when it already is one).
fn dense_f32(t: Tensor) -> Result<Owned> {
    contiguous(as_f32(t)?.get())
}

/// DTYPE naming `name` unless `t` is a CPU tensor of one of the `allowed` dtypes.
fn expect_dtype(t: Tensor, allowed: &[i32], name: &str) -> Result<()> {
    util::require_cpu(t, name)?;
    if allowed.contains(&t.dtype()) {
        return Ok(());
    }
    let names: Vec<String> = allowed.iter().map(|&d| util::dtype_name(d)).collect();
    err(
        sys::TENSOR_ERR_DTYPE,
        format!(
            "{name} is {}, expected {}",
            util::dtype_name(t.dtype()),
            names.join(" or ")
        ),
    )
}

/// `a * b * ...` of non-negative sizes as a usize, or OVERFLOW naming `what`.
fn checked_numel(dims: &[i64], what: &str) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| {
            usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
        })
        .ok_or_else(|| crate::error::Error {
            status: sys::TENSOR_ERR_OVERFLOW,
            msg: format!("{what}: {dims:?} overflows (or is negative)"),
        })
}

/// An uninitialised tensor with the given strides.
fn empty(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Owned> {
    util::empty_strided(sizes, strides, dtype)
}

fn contiguous(t: Tensor) -> Result<Owned> {
    t.contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)
}

/// Calls `f(a, b)` for every index of `sizes`, in row-major order, with that index's
/// offsets under the strides `sa` and `sb` (non-negative).
fn for_each_offset(sizes: &[i64], sa: &[i64], sb: &[i64], mut f: impl FnMut(usize, usize)) {
    if sizes.contains(&0) {
        return;
    }
    let nd = sizes.len();
    let mut idx = vec![0i64; nd];
    let (mut a, mut b) = (0i64, 0i64);
    loop {
        f(a as usize, b as usize);
        let mut d = nd;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            a += sa[d];
            b += sb[d];
            if idx[d] < sizes[d] {
                break;
            }
            a -= sa[d] * sizes[d];
            b -= sb[d] * sizes[d];
            idx[d] = 0;
        }
    }
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

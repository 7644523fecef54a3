//! Fallback kernels a CPU AOTInductor model calls for the ops Inductor does not generate
//! itself (`aoti_torch_cpu_*`, signatures of torch's generated `c_shim_cpu.h`), one file per
//! job:
//!
//! - `gemm`: the one GEMM primitive (the `gemm` crate) the others call;
//! - `matmul`: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out`;
//! - `conv`: `convolution` (im2col + gemm);
//! - `attention`: `_scaled_dot_product_flash_attention_for_cpu`.
//!
//! This file holds what they share: argument checks and allocation. Outputs allocated here
//! have exactly ATen's strides: the generated code that follows indexes them with hard-coded
//! strides.

mod attention;
mod conv;
mod gemm;
mod matmul;

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

fn contiguous(t: Tensor) -> Result<Owned> {
    t.contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)
}

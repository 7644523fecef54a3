//! Fallback kernels a CPU AOTInductor model calls for the ops Inductor does not generate
//! itself (`aoti_torch_cpu_*`, signatures of torch's generated `c_shim_cpu.h`), one file per
//! job:
//!
//! - `gemm`: the one GEMM primitive (the `gemm` crate) the others call;
//! - `parallel`: the kernels' threads (the model's OpenMP team);
//! - `matmul`: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out`;
//! - `conv`: `convolution` (direct depthwise, pointwise GEMM, im2col + GEMM);
//! - `attention`: `_scaled_dot_product_flash_attention_for_cpu`;
//! - `pool`: `max_pool2d_with_indices`, `max_pool3d_with_indices`, `adaptive_max_pool2d`,
//!   `adaptive_max_pool3d`, `_adaptive_avg_pool2d`, `_adaptive_avg_pool3d`, `avg_pool2d`,
//!   `avg_pool3d`;
//! - `embedding`: `_embedding_bag`, `_embedding_bag_forward_only`.
//!
//! This file holds what they share: argument checks and allocation. Outputs allocated here
//! have exactly ATen's strides: the generated code that follows indexes them with hard-coded
//! strides.

mod attention;
mod conv;
mod embedding;
mod gemm;
mod parallel;
mod matmul;
mod pool;

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

fn contiguous(t: Tensor) -> Result<Owned> {
    t.contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)
}

/// An int-list argument of a spatial op (`stride`, `padding`, ...): one value for every
/// spatial dim, or `spatial` values.
fn spatial_param(p: *const i64, n: i64, spatial: usize, name: &str) -> Result<Vec<i64>> {
    let v = util::array(p, n, name)?;
    match v.len() {
        1 => Ok(vec![v[0]; spatial]),
        l if l == spatial => Ok(v.to_vec()),
        l => err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{name} has {l} values, expected 1 or {spatial} (the spatial dims)"),
        ),
    }
}

/// ATen's accumulation type for a sum of elements (`at::opmath_type`, and int64 for the
/// integers): float32 for float16, bfloat16 and float32, float64 for float64, a wrapping
/// int64 for the integer and bool dtypes.
trait Accumulate: Element {
    type Acc: Sum;
    fn widen(self) -> Self::Acc;
    fn narrow(a: Self::Acc) -> Self;
}

/// Arithmetic of an accumulator: C++'s for its type (integer division truncates; the
/// integer ops wrap where C++ leaves overflow undefined).
trait Sum: Copy {
    const ZERO: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `self / d` with `d` converted to the accumulator's type (`d != 0` for the integers).
    fn div_i64(self, d: i64) -> Self;
    /// `self / d` (`d != 0` for the integers).
    fn div(self, d: Self) -> Self;
}

macro_rules! float_sum {
    ($($t:ty),*) => {$(
        impl Sum for $t {
            const ZERO: Self = 0.0;
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div_i64(self, d: i64) -> Self {
                self / d as $t
            }
            fn div(self, d: Self) -> Self {
                self / d
            }
        }
    )*};
}
float_sum!(f32, f64);

impl Sum for i64 {
    const ZERO: Self = 0;
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    fn div_i64(self, d: i64) -> Self {
        self.wrapping_div(d)
    }
    fn div(self, d: Self) -> Self {
        self.wrapping_div(d)
    }
}

macro_rules! accumulate {
    ($acc:ty: $($t:ty),*) => {$(
        impl Accumulate for $t {
            type Acc = $acc;
            fn widen(self) -> $acc {
                self as $acc
            }
            fn narrow(a: $acc) -> Self {
                a as $t
            }
        }
    )*};
}
accumulate!(i64: u8, i8, i16, i32, i64, u16, u32, u64);
accumulate!(f32: f32);
accumulate!(f64: f64);

/// float16 and bfloat16 accumulate in float32 (`at::opmath_type`).
macro_rules! accumulate_half {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            type Acc = f32;
            fn widen(self) -> f32 {
                self.to_f32()
            }
            fn narrow(a: f32) -> Self {
                <$t>::from_f32(a)
            }
        }
    )*};
}
accumulate_half!(half::f16, half::bf16);

impl Accumulate for util::Bool {
    type Acc = i64;
    fn widen(self) -> i64 {
        (self.0 != 0) as i64
    }
    fn narrow(a: i64) -> Self {
        util::Bool((a != 0) as u8)
    }
}

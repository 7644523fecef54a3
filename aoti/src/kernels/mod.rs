//! Fallback kernels a CPU AOTInductor model calls for the ops Inductor does not generate
//! itself (`aoti_torch_cpu_*`, signatures of torch's generated `c_shim_cpu.h`), one file per
//! job:
//!
//! - `gemm`: the one GEMM primitive the others call (`sgemm` or the `gemm` crate);
//! - `sgemm`: float32 products with both operands contiguous along k, on AVX-512F;
//! - `parallel`: the kernels' threads (the model's OpenMP team);
//! - `matmul`: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out`, `_addmm_activation`,
//!   `addmv`, `addbmm` (and shim.h's `_mm_plus_mm_out`);
//! - `conv`: `convolution` (direct depthwise, pointwise GEMM, im2col + GEMM);
//! - `attention`: `_scaled_dot_product_flash_attention_for_cpu`;
//! - `pool`: `max_pool2d_with_indices`, `max_pool3d_with_indices`, `adaptive_max_pool2d`,
//!   `adaptive_max_pool3d`, `_adaptive_avg_pool2d`, `_adaptive_avg_pool3d`, `avg_pool2d`,
//!   `avg_pool3d`;
//! - `grid`: `grid_sampler_3d`;
//! - `unpool`: `max_unpool2d`, `max_unpool3d`;
//! - `embedding`: `_embedding_bag`, `_embedding_bag_forward_only`;
//! - `rnn`: `mkldnn_rnn_layer` (one LSTM layer and direction, c/shim_cpu.h);
//! - `mkldnn`: a `freezing=True` package's kernels of packed weights,
//!   `mkldnn__convolution_pointwise` (+ `_binary`, `_binary_`), `_linear_pointwise` (+
//!   `_binary`), `_mkl_linear`;
//! - `int8mm`: `_weight_int8pack_mm`, `_int_mm_out`;
//! - `fft`: `_fft_r2c`, `_fft_c2c` (mixed radix, Bluestein);
//! - `complex`: `view_as_real`, `view_as_complex`, `abs` of a complex tensor; the complex
//!   element types;
//! - `arith`: `add_Tensor`, `add_Scalar`, `mul_Tensor`, `mul_Scalar`, `angle`, `polar`,
//!   `gcd`;
//! - `scan`: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`;
//! - `order`: libstdc++'s sort / nth_element / partial_sort and ATen's quickselect, step for
//!   step, so that ties come out in ATen's order (used by `sort`);
//! - `sort`: `sort`, `sort_stable`, `topk`, `kthvalue`, `median`, `nanmedian`, `mode`;
//! - `search`: `searchsorted_Tensor`, `searchsorted_Scalar`, `bucketize_Tensor`;
//! - `index`: `nonzero`, `nonzero_static`, `index_Tensor`, `index_put` (and shim.h's
//!   `index_put_out`);
//! - `reduce_misc`: `index_reduce`, `segment_reduce`;
//! - `masked`: `masked_select`, `masked_scatter`, `repeat_interleave_Tensor`;
//! - `scatter`: `scatter_src_out`, `scatter_value_out`, `scatter_reduce_two_out` (and
//!   shim.h's `scatter_out`, `scatter_reduce_out`);
//! - `shape`: `cat`, `narrow`, `permute`, `reshape`, `squeeze_dim`, `slice_Tensor`,
//!   `view_dtype`, `pad`, `fill__Scalar`, `resize_`, `resize_as_`, `set__source_Tensor`.
//!
//! This file holds what they share: argument checks, allocation, lanes along a dim, dtype
//! promotion. Outputs allocated here have exactly ATen's strides: the generated code that
//! follows indexes them with hard-coded strides.

mod arith;
mod attention;
mod complex;
mod conv;
mod embedding;
mod fft;
mod gemm;
mod grid;
mod index;
mod int8mm;
mod masked;
mod matmul;
mod mkldnn;
mod order;
mod parallel;
mod pool;
mod reduce_misc;
mod rnn;
mod scan;
mod scatter;
mod search;
mod sgemm;
mod shape;
mod sort;
mod unpool;
mod vmath;

/// A small deterministic generator for the kernels' unit tests: a 64-bit LCG, its high bits.
#[cfg(test)]
struct Lcg(u64);

#[cfg(test)]
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A value in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A value in [-1, 1), a multiple of 1 / 1024.
    fn value(&mut self) -> f32 {
        (self.next() % 2048) as f32 / 1024.0 - 1.0
    }
}

/// [`crate::dispatch!`] over every dtype a kernel that only moves elements takes: the real
/// ones and complex64 / complex128 (as [`complex::Complex`]).
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {{
        let code = $dtype;
        if code == $crate::sys::TENSOR_COMPLEX64 {
            type $T = $crate::kernels::complex::Complex<f32>;
            $body
        } else if code == $crate::sys::TENSOR_COMPLEX128 {
            type $T = $crate::kernels::complex::Complex<f64>;
            $body
        } else {
            $crate::dispatch!(code, $T => $body, _ => $other)
        }
    }};
}
use dispatch_all;

use crate::error::{err, Result};
use crate::sys::{self, tensor_t};
use crate::util::{self, Element, Owned, Tensor};

/// A tensor handle argument as the shim passes it.
type AtenTensorHandle = *mut tensor_t;

const F16: i32 = sys::TENSOR_FLOAT16;
const F32: i32 = sys::TENSOR_FLOAT32;
const F64: i32 = sys::TENSOR_FLOAT64;
const BF16: i32 = sys::TENSOR_BFLOAT16;
const C64: i32 = sys::TENSOR_COMPLEX64;
const C128: i32 = sys::TENSOR_COMPLEX128;

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
    optional(p).and_then(crate::error::c_string)
}

/// A string argument (c_shim_cpu.h's `str`, a `const char*`), or NULL_POINTER naming it.
fn required_str(p: *const std::ffi::c_char, what: &str) -> Result<String> {
    crate::error::c_string(p).map_or_else(
        || err(sys::TENSOR_ERR_NULL_POINTER, format!("{what} is NULL")),
        Ok,
    )
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

/// c10's `promoteTypes` over the real and complex dtypes: bool gives way to anything, uint8
/// with a signed type is at least int16, an integer with a float is the float, float16 with
/// bfloat16 is float32; a complex type wins over the real ones, complex64 with float64 is
/// complex128; uint16/32/64 promote only with themselves or a real float (c10 refuses the
/// rest).
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
    let refuse = || {
        err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {} and {}",
                util::dtype_name(a),
                util::dtype_name(b)
            ),
        )
    };
    if is_complex(a) || is_complex(b) {
        if barebones(a) || barebones(b) {
            return refuse();
        }
        let wide = a == C128 || b == C128 || a == F64 || b == F64;
        return Ok(if wide { C128 } else { C64 });
    }
    Ok(match (float_rank(a), float_rank(b)) {
        (0, 0) if barebones(a) || barebones(b) => return refuse(),
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

fn is_complex(dtype: i32) -> bool {
    matches!(dtype, C64 | C128)
}

/// c10's `toComplexType` of a real float dtype (complex32, for float16, is not a libtensor
/// dtype; bfloat16 has none).
fn to_complex(dtype: i32) -> Result<i32> {
    match dtype {
        F32 => Ok(C64),
        F64 => Ok(C128),
        d => err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "the complex type of {} is not supported (complex64 and complex128 only)",
                util::dtype_name(d)
            ),
        ),
    }
}

/// One operand of ATen's `result_type`: a tensor with dims, a 0-dim tensor, or a wrapped
/// Python number (whose float kind counts as the default dtype, float32, and complex kind
/// as complex64).
#[derive(Clone, Copy)]
enum Operand {
    Dim(i32),
    ZeroDim(i32),
    Wrapped(i32),
}

/// ATen's `result_type` (TypeProperties.cpp): operands of a higher category (tensors with
/// dims, then 0-dim tensors, then wrapped numbers) decide, unless a lower one is of a
/// higher kind (complex over real, a float over integers, anything over bool; a complex
/// lower one keeps a float higher one's precision).
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
            Operand::Wrapped(d) => {
                let d = if is_complex(d) {
                    C64
                } else if is_float(d) {
                    F32
                } else {
                    d
                };
                wrapped = join(wrapped, d)?
            }
        }
    }
    let combine = |higher: i32, lower: i32| -> Result<i32> {
        if higher != NONE && is_complex(higher) {
            return Ok(higher);
        }
        if lower != NONE && is_complex(lower) {
            return if higher != NONE && is_float(higher) {
                to_complex(higher)
            } else {
                Ok(lower)
            };
        }
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
            Some(util::empty(&s, t.dtype())?)
        };
        Ok(LaneOut { out, view, buf })
    }

    fn new(sizes: &[i64], strides: &[i64], dtype: i32, dim: usize) -> Result<LaneOut> {
        LaneOut::over(util::empty_strided(sizes, strides, dtype)?, dim)
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

/// Calls `f(coords, offsets)` at every position of `shape`, the dims visited in `order`
/// (`order[0]` fastest), where `offsets[k]` is the position's offset under `strides[k]`.
/// Nothing for a shape with a 0 size; once for a 0-dim shape.
fn for_each_position<const N: usize>(
    shape: &[i64],
    order: &[usize],
    strides: [&[i64]; N],
    mut f: impl FnMut(&[i64], [i64; N]) -> Result<()>,
) -> Result<()> {
    if shape.contains(&0) {
        return Ok(());
    }
    let mut coord = vec![0i64; shape.len()];
    let mut off = [0i64; N];
    loop {
        f(&coord, off)?;
        let mut k = 0;
        loop {
            let Some(&d) = order.get(k) else {
                return Ok(());
            };
            coord[d] += 1;
            for (o, st) in off.iter_mut().zip(&strides) {
                *o += st[d];
            }
            if coord[d] < shape[d] {
                break;
            }
            for (o, st) in off.iter_mut().zip(&strides) {
                *o -= st[d] * shape[d];
            }
            coord[d] = 0;
            k += 1;
        }
    }
}

/// Row-major order for [`for_each_position`]: the last dim fastest.
fn row_major(ndim: usize) -> Vec<usize> {
    (0..ndim).rev().collect()
}

/// The broadcast of `shapes` (PyTorch's `infer_size`), or None.
fn broadcast(shapes: &[&[i64]]) -> Option<Vec<i64>> {
    let nd = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1i64; nd];
    for s in shapes {
        let off = nd - s.len();
        for (i, &x) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = x;
            } else if x != 1 && x != *o {
                return None;
            }
        }
    }
    Some(out)
}

/// The strides of `t` broadcast to `shape` (right-aligned; 0 for a new or expanded dim).
fn broadcast_strides(t: Tensor, shape: &[i64]) -> Vec<i64> {
    let (s, st) = (t.sizes(), t.strides());
    let off = shape.len() - s.len();
    let mut v = vec![0i64; shape.len()];
    for i in 0..s.len() {
        if !(s[i] == 1 && shape[off + i] != 1) {
            v[off + i] = st[i];
        }
    }
    v
}

/// TensorIterator's dim order (`reorder_dimensions`) for operands `ops` (each at most
/// `shape`'s rank, broadcasting to it): `perm[0]` is the fastest dim. Dims are sorted by the
/// operands' strides in turn, a broadcast (stride 0) dim deciding nothing, equal strides
/// putting the smaller size first, by an insertion sort that stops at the first operand
/// with an opinion.
fn iterator_perm(shape: &[i64], ops: &[Tensor]) -> Vec<usize> {
    let nd = shape.len();
    if nd <= 1 {
        return (0..nd).collect();
    }
    let st: Vec<Vec<i64>> = ops.iter().map(|&t| broadcast_strides(t, shape)).collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        for v in &st {
            let (s0, s1) = (v[d0], v[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    let mut perm: Vec<usize> = (0..nd).rev().collect();
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
    perm
}

/// The strides TensorIterator gives an output it allocates for inputs `ops` broadcast to
/// `shape`: its fast setup when every input has exactly `shape` (all contiguous, all
/// channels-last, or all non-overlapping and dense with the same strides), else dense in
/// [`iterator_perm`]'s order (contiguous when that order is the row-major one).
fn iterator_output_strides(shape: &[i64], ops: &[Tensor]) -> Result<Vec<i64>> {
    if ops.iter().all(|t| t.sizes() == shape) {
        if ops
            .iter()
            .all(|t| t.is_contiguous(sys::TENSOR_CONTIGUOUS_FORMAT))
        {
            return util::contiguous_strides(shape);
        }
        if shape.len() == 4
            && ops
                .iter()
                .all(|t| t.is_contiguous(sys::TENSOR_CHANNELS_LAST))
        {
            return util::format_strides(shape, sys::TENSOR_CHANNELS_LAST);
        }
        if let Some(last) = ops.last() {
            if ops
                .iter()
                .all(|t| t.is_non_overlapping_and_dense() && t.strides() == last.strides())
            {
                return Ok(last.strides().to_vec());
            }
        }
    }
    let perm = iterator_perm(shape, ops);
    if perm.iter().copied().eq((0..shape.len()).rev()) {
        return util::contiguous_strides(shape);
    }
    let mut st = vec![0i64; shape.len()];
    let mut next = 1i64;
    for &d in &perm {
        st[d] = next;
        next = next.saturating_mul(shape[d]);
    }
    Ok(st)
}

/// The arithmetic ATen's scatter / index_put kernels do per element type, in a work type
/// `W` (ATen's op-math type: float32 for float16 / bfloat16, the type itself otherwise):
/// integers wrap, bool adds as `or` and multiplies as `and`; `div` is floor division for
/// the integers (ATen's `div_floor_integer`), true division for the floats.
trait Arith: Element {
    type W: Element;
    fn to_w(self) -> Self::W;
    fn from_w(w: Self::W) -> Self;
    fn add(a: Self::W, b: Self::W) -> Self::W;
    fn mul(a: Self::W, b: Self::W) -> Self::W;
    fn div(a: Self::W, b: Self::W) -> Self::W;
    /// A count as this type (C++'s conversion: integers wrap).
    fn from_count(n: i64) -> Self;
    /// The identities of amax / amin: the lowest and highest values (the infinities for
    /// the floats).
    const LOWEST: Self;
    const HIGHEST: Self;
}

macro_rules! arith_int {
    ($($t:ty),*) => {
        $(
            impl Arith for $t {
                type W = $t;
                fn to_w(self) -> $t {
                    self
                }
                fn from_w(w: $t) -> $t {
                    w
                }
                fn add(a: $t, b: $t) -> $t {
                    a.wrapping_add(b)
                }
                fn mul(a: $t, b: $t) -> $t {
                    a.wrapping_mul(b)
                }
                fn div(a: $t, b: $t) -> $t {
                    let q = a.wrapping_div(b);
                    #[allow(unused_comparisons)]
                    let signs_differ = (a < 0) != (b < 0);
                    if signs_differ && a.wrapping_rem(b) != 0 {
                        q.wrapping_sub(1)
                    } else {
                        q
                    }
                }
                fn from_count(n: i64) -> $t {
                    n as $t
                }
                const LOWEST: $t = <$t>::MIN;
                const HIGHEST: $t = <$t>::MAX;
            }
        )*
    };
}
arith_int!(u8, i8, i16, i32, i64, u16, u32, u64);

macro_rules! arith_float {
    ($($t:ty: $w:ty, |$x:ident| $to:expr, |$y:ident| $from:expr;)*) => {
        $(
            impl Arith for $t {
                type W = $w;
                fn to_w(self) -> $w {
                    let $x = self;
                    $to
                }
                fn from_w($y: $w) -> $t {
                    $from
                }
                fn add(a: $w, b: $w) -> $w {
                    a + b
                }
                fn mul(a: $w, b: $w) -> $w {
                    a * b
                }
                fn div(a: $w, b: $w) -> $w {
                    a / b
                }
                fn from_count(n: i64) -> $t {
                    <$t as Element>::from_f64(n as f64)
                }
                const LOWEST: $t = <$t>::NEG_INFINITY;
                const HIGHEST: $t = <$t>::INFINITY;
            }
        )*
    };
}
arith_float! {
    f32: f32, |x| x, |y| y;
    f64: f64, |x| x, |y| y;
    half::f16: f32, |x| x.to_f32(), |y| half::f16::from_f32(y);
    half::bf16: f32, |x| x.to_f32(), |y| half::bf16::from_f32(y);
}

impl Arith for util::Bool {
    type W = util::Bool;
    fn to_w(self) -> util::Bool {
        self
    }
    fn from_w(w: util::Bool) -> util::Bool {
        w
    }
    fn add(a: util::Bool, b: util::Bool) -> util::Bool {
        util::Bool((a.0 != 0 || b.0 != 0) as u8)
    }
    fn mul(a: util::Bool, b: util::Bool) -> util::Bool {
        util::Bool((a.0 != 0 && b.0 != 0) as u8)
    }
    fn div(a: util::Bool, _b: util::Bool) -> util::Bool {
        a
    }
    fn from_count(n: i64) -> util::Bool {
        util::Bool((n != 0) as u8)
    }
    const LOWEST: util::Bool = util::Bool(0);
    const HIGHEST: util::Bool = util::Bool(1);
}

/// ATen's `assert_no_internal_overlap`: `t` (written to) may not have a stride-0 dim of
/// size > 1.
fn no_internal_overlap(t: Tensor, name: &str) -> Result<()> {
    if t.sizes()
        .iter()
        .zip(t.strides())
        .any(|(&n, &s)| n > 1 && s == 0)
    {
        return err(
            sys::TENSOR_ERR_OVERLAP,
            format!("unsupported operation: more than one element of the written-to tensor ({name}) refers to a single memory location. Please clone() the tensor before performing the operation."),
        );
    }
    Ok(())
}

/// ATen's `assert_no_overlap(written, read)`: the two may not share elements (decided, as
/// ATen does, only when both are non-overlapping and dense: by their byte ranges).
fn no_overlap(written: Tensor, read: Tensor, name: &str) -> Result<()> {
    if !(written.is_non_overlapping_and_dense() && read.is_non_overlapping_and_dense()) {
        return Ok(());
    }
    let range = |t: Tensor| {
        let start = t.data_ptr() as usize;
        let n = t.numel().max(0) as usize * util::itemsize(t.dtype());
        (start, start + n)
    };
    let ((a0, a1), (b0, b1)) = (range(written), range(read));
    if a0 < b1 && b0 < a1 {
        return err(
            sys::TENSOR_ERR_OVERLAP,
            format!("unsupported operation: some elements of the input tensor ({name}) and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation."),
        );
    }
    Ok(())
}

/// ATen's checked conversion of a Python float (a `Scalar` holding a double) to `dtype`
/// (`Scalar::to<T>`): for an integer dtype NaN, infinities and values below its lowest or
/// not below its highest + 1 overflow; for a float dtype finite values past its range do;
/// bool takes anything.
fn check_scalar(v: f64, dtype: i32) -> Result<()> {
    let int_range = |bits: i32, signed: bool| {
        if signed {
            (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1))
        } else {
            (0.0, 2f64.powi(bits))
        }
    };
    let bad = match dtype {
        sys::TENSOR_BOOL => false,
        F16 | BF16 | F32 | F64 => {
            let max = match dtype {
                F16 => 65504.0,
                BF16 => f64::from(half::bf16::MAX.to_f32()),
                F32 => f64::from(f32::MAX),
                _ => f64::MAX,
            };
            v.is_finite() && v.abs() > max
        }
        _ => {
            let (lo, hi) = match dtype {
                sys::TENSOR_UINT8 => int_range(8, false),
                sys::TENSOR_INT8 => int_range(8, true),
                sys::TENSOR_INT16 => int_range(16, true),
                sys::TENSOR_UINT16 => int_range(16, false),
                sys::TENSOR_INT32 => int_range(32, true),
                sys::TENSOR_UINT32 => int_range(32, false),
                sys::TENSOR_INT64 => int_range(64, true),
                _ => int_range(64, false),
            };
            !(v >= lo && v < hi)
        }
    };
    if bad {
        return err(
            sys::TENSOR_ERR_OVERFLOW,
            format!(
                "value cannot be converted to type {} without overflow (value {v})",
                util::dtype_name(dtype)
            ),
        );
    }
    Ok(())
}

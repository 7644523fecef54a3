//! Scans along a dim: `cumsum`, `cumprod` (ATen's dtype rule: integer and bool inputs give
//! int64 unless `dtype` is given; the input is converted to the output dtype first, then
//! accumulated in ATen's CPU accumulation type: int64 for the integers, float64 for
//! float32 / float64, float32 for float16 / bfloat16, rounded to the output at each step),
//! `logcumsumexp` (float dtypes, in the same accumulation type, ATen's handling of NaN and
//! infinities), `cummax`, `cummin` (values and int64 indices: the last index of the running
//! extreme, a NaN sticks and each later NaN takes its index). Outputs are contiguous, as
//! ATen's.

use super::{
    is_float, is_integral, isnan, lanes, not_implemented, optional, AtenTensorHandle, LaneOut,
};
use crate::dispatch;
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Bool, Element, Owned, Tensor};
use half::{bf16, f16};

/// An element type cumsum / cumprod dispatch over, with ATen's CPU accumulation type.
trait Cum: Element {
    type Acc: Copy;
    const ACC_ZERO: Self::Acc;
    const ACC_ONE: Self::Acc;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(a: Self::Acc) -> Self;
    fn acc_add(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn acc_mul(a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

macro_rules! cum_int {
    ($($t:ty),*) => {
        $(
            impl Cum for $t {
                type Acc = i64;
                const ACC_ZERO: i64 = 0;
                const ACC_ONE: i64 = 1;
                fn to_acc(self) -> i64 {
                    self as i64
                }
                fn from_acc(a: i64) -> Self {
                    a as $t // C++'s conversion: the low bits
                }
                fn acc_add(a: i64, b: i64) -> i64 {
                    a.wrapping_add(b)
                }
                fn acc_mul(a: i64, b: i64) -> i64 {
                    a.wrapping_mul(b)
                }
            }
        )*
    };
}
cum_int!(u8, i8, i16, i32, i64);

macro_rules! cum_float {
    ($($t:ty: $a:ty, |$x:ident| $to:expr, |$y:ident| $from:expr;)*) => {
        $(
            impl Cum for $t {
                type Acc = $a;
                const ACC_ZERO: $a = 0.0;
                const ACC_ONE: $a = 1.0;
                fn to_acc(self) -> $a {
                    let $x = self;
                    $to
                }
                fn from_acc($y: $a) -> Self {
                    $from
                }
                fn acc_add(a: $a, b: $a) -> $a {
                    a + b
                }
                fn acc_mul(a: $a, b: $a) -> $a {
                    a * b
                }
            }
        )*
    };
}
cum_float! {
    f32: f64, |x| x as f64, |y| y as f32;
    f64: f64, |x| x, |y| y;
    f16: f32, |x| x.to_f32(), |y| f16::from_f32(y);
    bf16: f32, |x| x.to_f32(), |y| bf16::from_f32(y);
}

/// The float accumulation types, with what log-add-exp needs.
trait AccFloat: Copy + PartialOrd {
    const NEG_INF: Self;
    fn exp(self) -> Self;
    fn ln_1p(self) -> Self;
    fn is_finite(self) -> bool;
    fn sub(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
}

macro_rules! acc_float {
    ($($t:ty),*) => {
        $(
            impl AccFloat for $t {
                const NEG_INF: $t = <$t>::NEG_INFINITY;
                fn exp(self) -> $t {
                    <$t>::exp(self)
                }
                fn ln_1p(self) -> $t {
                    <$t>::ln_1p(self)
                }
                fn is_finite(self) -> bool {
                    <$t>::is_finite(self)
                }
                fn sub(self, o: $t) -> $t {
                    self - o
                }
                fn add(self, o: $t) -> $t {
                    self + o
                }
            }
        )*
    };
}
acc_float!(f32, f64);

/// ATen's `_log_add_exp_helper(x, y)`: min/max as `std::min` / `std::max` (the first
/// argument when the other is NaN, y itself when y is NaN), `log1p(exp(min - max)) + max`,
/// but x when both are the same infinity.
fn log_add_exp<A: AccFloat>(x: A, y: A) -> A {
    let y_nan = isnan(y);
    let lo = if y_nan || y < x { y } else { x };
    let hi = if y_nan || x < y { y } else { x };
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if lo != hi || lo.is_finite() {
        lo.sub(hi).exp().ln_1p().add(hi)
    } else {
        x
    }
}

/// The kind of scan.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Sum,
    Prod,
    LogSumExp,
    Max,
    Min,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sum => "cumsum",
            Kind::Prod => "cumprod",
            Kind::LogSumExp => "logcumsumexp",
            Kind::Max => "cummax",
            Kind::Min => "cummin",
        }
    }
}

/// Each row of `src` (rows of `n`) scanned into `dst`: `step(acc, x)` from `init`.
fn scan_rows<T: Copy, A: Copy>(
    src: &[T],
    dst: &mut [T],
    n: usize,
    init: A,
    step: impl Fn(A, T) -> A,
    emit: impl Fn(A) -> T,
) {
    for (s, d) in src.chunks_exact(n).zip(dst.chunks_exact_mut(n)) {
        let mut a = init;
        for (x, y) in s.iter().zip(d) {
            a = step(a, *x);
            *y = emit(a);
        }
    }
}

/// cumsum / cumprod / logcumsumexp of `t` along `dim` as `dtype` (the output's).
fn cum(t: Tensor, dim: i64, dtype: i32, kind: Kind) -> Result<Owned> {
    util::require_cpu(t, "self")?;
    let d = util::wrap_dim(dim, t.ndim() as usize, true)?;
    let sizes = t.sizes();
    if util::itemsize(dtype) == 0 {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!("dtype {dtype} is not a dtype code"),
        );
    }
    let mut res = LaneOut::new(sizes, &util::contiguous_strides(sizes)?, dtype, d)?;
    if kind == Kind::LogSumExp && !is_float(dtype) {
        // ATen dispatches logcumsumexp before it looks at the shape.
        return not_implemented("logcumsumexp_out_cpu", dtype);
    }
    if t.ndim() == 0 || t.numel() == 0 {
        // ATen: a 0-dim result is filled with self (converted), an empty one is left.
        let r = res.finish()?;
        if t.ndim() == 0 {
            r.get().copy_from(t)?;
        }
        return Ok(r);
    }
    // ATen converts self to the result's dtype, then scans that.
    let conv = if t.dtype() == dtype {
        t.retain()
    } else {
        t.to_dtype(dtype)?
    };
    let src = lanes(conv.get(), d)?;
    let n = sizes[d] as usize;
    macro_rules! go {
        ($T:ty, $init:expr, |$a:ident, $x:ident| $step:expr, |$b:ident| $emit:expr) => {{
            let s = src.get().values::<$T>()?;
            scan_rows(
                s,
                res.rows::<$T>()?,
                n,
                $init,
                |$a, $x: $T| $step,
                |$b| $emit,
            );
        }};
    }
    match kind {
        Kind::Sum => dispatch!(dtype, [u8, i8, i16, i32, i64, f16, bf16, f32, f64], T => go!(
            T, T::ACC_ZERO, |a, x| T::acc_add(a, x.to_acc()), |a| T::from_acc(a)
        ), _ => return not_implemented("cumsum_out_cpu", dtype)),
        Kind::Prod => dispatch!(dtype, [u8, i8, i16, i32, i64, f16, bf16, f32, f64], T => go!(
            T, T::ACC_ONE, |a, x| T::acc_mul(a, x.to_acc()), |a| T::from_acc(a)
        ), _ => return not_implemented("cumprod_out_cpu", dtype)),
        Kind::LogSumExp => dispatch!(dtype, [f16, bf16, f32, f64], T => go!(
            T, <<T as Cum>::Acc as AccFloat>::NEG_INF, |a, x| log_add_exp(x.to_acc(), a), |a| T::from_acc(a)
        ), _ => return not_implemented("logcumsumexp_out_cpu", dtype)),
        Kind::Max | Kind::Min => unreachable!(),
    }
    res.finish()
}

/// cummax / cummin: values (self's dtype) and int64 indices, ATen's NaN rule.
fn cum_extreme(t: Tensor, dim: i64, kind: Kind) -> Result<(Owned, Owned)> {
    util::require_cpu(t, "self")?;
    let d = util::wrap_dim(dim, t.ndim() as usize, true)?;
    let sizes = t.sizes();
    let st = util::contiguous_strides(sizes)?;
    let mut values = LaneOut::new(sizes, &st, t.dtype(), d)?;
    let mut indices = LaneOut::new(sizes, &st, sys::TENSOR_INT64, d)?;
    if t.ndim() == 0 || t.numel() == 0 {
        let (v, i) = (values.finish()?, indices.finish()?);
        if t.ndim() == 0 {
            v.get().copy_from(t)?;
            i.get().fill_i64(0)?;
        }
        return Ok((v, i));
    }
    let n = sizes[d] as usize;
    let src = lanes(t, d)?;
    let max = kind == Kind::Max;
    dispatch!(t.dtype(), [u8, i8, i16, i32, i64, Bool, f16, bf16, f32, f64], T => {
        let s = src.get().values::<T>()?;
        let vs = values.rows::<T>()?;
        let is = indices.rows::<i64>()?;
        for ((row, vrow), irow) in s.chunks_exact(n).zip(vs.chunks_exact_mut(n)).zip(is.chunks_exact_mut(n)) {
            let (mut best, mut at) = (row[0], 0usize);
            for (j, &x) in row.iter().enumerate() {
                // ATen: `isnan(x) || (!isnan(best) && x >= best)` (<= for cummin).
                let better = if max { x >= best } else { x <= best };
                if isnan(x) || (!isnan(best) && better) {
                    best = x;
                    at = j;
                }
                vrow[j] = best;
                irow[j] = at as i64;
            }
        }
    }, _ => return not_implemented(if max { "cummax_cpu" } else { "cummin_cpu" }, t.dtype()));
    Ok((values.finish()?, indices.finish()?))
}

fn cum_shim(
    name: &str,
    self_: AtenTensorHandle,
    dim: i64,
    dtype: *const i32,
    ret0: *mut AtenTensorHandle,
    kind: Kind,
) -> i32 {
    shim(name, || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let dt = optional(dtype).unwrap_or(if is_integral(t.dtype()) && kind != Kind::LogSumExp {
            sys::TENSOR_INT64
        } else {
            t.dtype()
        });
        *r = cum(t, dim, dt, kind)
            .map_err(|mut e| {
                e.msg = format!("{}: {}", kind.name(), e.msg);
                e
            })?
            .into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_cumsum(
    self_: AtenTensorHandle,
    dim: i64,
    dtype: *mut i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    cum_shim(fn_name!(), self_, dim, dtype, ret0, Kind::Sum)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_cumprod(
    self_: AtenTensorHandle,
    dim: i64,
    dtype: *mut i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    cum_shim(fn_name!(), self_, dim, dtype, ret0, Kind::Prod)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_logcumsumexp(
    self_: AtenTensorHandle,
    dim: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    cum_shim(
        fn_name!(),
        self_,
        dim,
        std::ptr::null(),
        ret0,
        Kind::LogSumExp,
    )
}

fn extreme_shim(
    name: &str,
    self_: AtenTensorHandle,
    dim: i64,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
    kind: Kind,
) -> i32 {
    shim(name, || {
        let t = handle(self_, "self")?;
        let r0 = out(ret0, "ret0")?;
        let r1 = out(ret1, "ret1")?;
        let (v, i) = cum_extreme(t, dim, kind)?;
        *r0 = v.into_raw();
        *r1 = i.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_cummax(
    self_: AtenTensorHandle,
    dim: i64,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    extreme_shim(fn_name!(), self_, dim, ret0, ret1, Kind::Max)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_cummin(
    self_: AtenTensorHandle,
    dim: i64,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    extreme_shim(fn_name!(), self_, dim, ret0, ret1, Kind::Min)
}

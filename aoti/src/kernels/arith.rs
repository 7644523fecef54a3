//! Pointwise arithmetic Inductor leaves to fallbacks for the dtypes it does not generate
//! (complex, mostly: `x * y` and `x + 2.5` on complex64 compile to `aoti_torch_cpu_mul_Tensor`
//! and `add_Tensor`, the scalar as a 0-dim tensor; `torch.polar` and `torch.gcd` always are
//! fallbacks): `add_Tensor`, `add_Scalar`, `mul_Tensor`, `mul_Scalar`, `angle`, `polar`,
//! `gcd`.
//!
//! As ATen's TensorIterator: operands broadcast, the result dtype is `result_type` (a Scalar
//! argument is a Python float: a wrapped number), the output laid out as TensorIterator
//! lays out a new output ([`iterator_output_strides`]), and each element computed as ATen's
//! CPU kernel computes it: `add` is `fma(other, alpha, self)` in float32 / float64 (float16
//! and bfloat16: in float32 with alpha rounded to the dtype, then rounded), `mul` of a
//! float16 / bfloat16 tensor by a one-element `other` multiplies by other's value before
//! rounding to the dtype (ATen's `original_scalar_value`), complex products are
//! `(ac - bd, ad + bc)`. (ATen's scalar loop for the last elements of a vectorized run
//! rounds float16 / bfloat16 `add` twice: those may differ by one unit in the last place.)

use super::complex::{value_dtype, Complex};
use super::{
    broadcast, broadcast_strides, for_each_position, is_complex, is_float, is_integral,
    iterator_output_strides, iterator_perm, not_implemented, result_type, Arith, AtenTensorHandle,
    Operand, BF16, C128, C64, F16, F32, F64,
};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

/// A tensor operand's `result_type` category.
fn operand(t: Tensor) -> Operand {
    if t.ndim() == 0 {
        Operand::ZeroDim(t.dtype())
    } else {
        Operand::Dim(t.dtype())
    }
}

/// A Python float argument as the 0-dim float64 tensor ATen wraps it in.
fn wrapped(v: f64) -> Result<Owned> {
    let t = util::empty(&[], F64)?;
    t.get().fill_f64(v)?;
    Ok(t)
}

/// The broadcast shape of `ts` and the strides TensorIterator gives a new output over them.
fn layout(ts: &[Tensor]) -> Result<(Vec<i64>, Vec<i64>)> {
    let shapes: Vec<&[i64]> = ts.iter().map(|t| t.sizes()).collect();
    let Some(shape) = broadcast(&shapes) else {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("the shapes {shapes:?} cannot be broadcast together"),
        );
    };
    let strides = iterator_output_strides(&shape, ts)?;
    Ok((shape, strides))
}

/// `t` in `dtype` (itself when it already is).
fn cast(t: Tensor, dtype: i32) -> Result<Owned> {
    if t.dtype() == dtype {
        t.alias()
    } else {
        t.to_dtype(dtype)
    }
}

/// `o[p] = f(a[p], b[p])` over the broadcast positions `p` of `o` (just allocated), `a` and
/// `b` of `o`'s dtype or of `T`'s, visited in TensorIterator's dim order.
fn zip2<A: Element, B: Element, T: Element>(
    o: &mut Owned,
    a: Tensor,
    b: Tensor,
    f: impl Fn(A, B) -> T,
) -> Result<()> {
    let shape = o.get().sizes().to_vec();
    let ost = o.get().strides().to_vec();
    let (sa, sb) = (broadcast_strides(a, &shape), broadcast_strides(b, &shape));
    let order = iterator_perm(&shape, &[a, b]);
    let (av, bv) = (a.values::<A>()?, b.values::<B>()?);
    // SAFETY: o was just allocated by the caller (zip2's contract): nothing else reaches its
    // storage.
    let ov = unsafe { o.values_mut::<T>() }?;
    for_each_position(&shape, &order, [&ost, &sa, &sb], |_, [at, x, y]| {
        ov[at as usize] = f(av[x as usize], bv[y as usize]);
        Ok(())
    })
}

/// A binary op's output over `a` and `b` (already in the common dtype: on the CPU,
/// TensorIterator replaces an input of another dtype by its converted copy, laid out as
/// `to(dtype)` lays it out, before it orders the dims): broadcast, laid out by
/// TensorIterator's rules.
fn binary_out(a: Tensor, b: Tensor, dtype: i32) -> Result<Owned> {
    let (shape, strides) = layout(&[a, b])?;
    util::empty_strided(&shape, &strides, dtype)
}

/// The common dtype of `self op other` where `other_op` is other's category.
fn common(a: Tensor, other: Operand) -> Result<i32> {
    result_type(&[operand(a), other])
}

// ------------------------------------------------------------------------------------------
// add

/// `self + alpha * other` in their result dtype. ATen's `alpha_check`: an integral or bool
/// result refuses a floating-point alpha, and the shim's alpha is always a double (so
/// libtorch refuses integer adds through this entry point too).
fn add(a: Tensor, b: Tensor, b_op: Operand, alpha: f64) -> Result<Owned> {
    util::require_cpu(a, "self")?;
    util::require_cpu(b, "other")?;
    let dtype = common(a, b_op)?;
    if is_integral(dtype) {
        return err(
            sys::TENSOR_ERR_DTYPE,
            "For integral input tensors, argument alpha must not be a floating point number.",
        );
    }
    let (ac, bc) = (cast(a, dtype)?, cast(b, dtype)?);
    let (x, y) = (ac.get(), bc.get());
    let mut o = binary_out(x, y, dtype)?;
    match dtype {
        F32 => {
            let al = alpha as f32;
            zip2(&mut o, x, y, |p: f32, q: f32| q.mul_add(al, p))?
        }
        F64 => zip2(&mut o, x, y, |p: f64, q: f64| q.mul_add(alpha, p))?,
        F16 => {
            let al = half::f16::from_f64(alpha).to_f32();
            zip2(&mut o, x, y, |p: half::f16, q: half::f16| {
                half::f16::from_f32(q.to_f32().mul_add(al, p.to_f32()))
            })?
        }
        BF16 => {
            let al = half::bf16::from_f64(alpha).to_f32();
            zip2(&mut o, x, y, |p: half::bf16, q: half::bf16| {
                half::bf16::from_f32(q.to_f32().mul_add(al, p.to_f32()))
            })?
        }
        C64 => {
            let al = Complex::<f32>::from_f64(alpha);
            zip2(&mut o, x, y, |p: Complex<f32>, q: Complex<f32>| {
                p.add(al.mul(q))
            })?
        }
        C128 => {
            let al = Complex::<f64>::from_f64(alpha);
            zip2(&mut o, x, y, |p: Complex<f64>, q: Complex<f64>| {
                p.add(al.mul(q))
            })?
        }
        d => return not_implemented("add", d),
    }
    Ok(o)
}

/// `self + alpha * other` (broadcast; ATen's type promotion).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_add_Tensor(
    self_: AtenTensorHandle,
    other: AtenTensorHandle,
    alpha: f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (a, b) = (handle(self_, "self")?, handle(other, "other")?);
        let r = out(ret0, "ret0")?;
        *r = add(a, b, operand(b), alpha)?.into_raw();
        Ok(())
    })
}

/// `self + alpha * other` for a Python float `other` (an integer or bool self gives
/// float32, as in ATen).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_add_Scalar(
    self_: AtenTensorHandle,
    other: f64,
    alpha: f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let a = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let b = wrapped(other)?;
        *r = add(a, b.get(), Operand::Wrapped(F64), alpha)?.into_raw();
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// mul

/// `self * other` in their result dtype: integers wrap, bool is `and`, float16 / bfloat16
/// in float32 (by other's own value when other has one element), complex `(ac - bd, ad +
/// bc)`.
fn mul(a: Tensor, b: Tensor, b_op: Operand) -> Result<Owned> {
    util::require_cpu(a, "self")?;
    util::require_cpu(b, "other")?;
    let dtype = common(a, b_op)?;
    let (ac, bc) = (cast(a, dtype)?, cast(b, dtype)?);
    let (x, y) = (ac.get(), bc.get());
    let mut o = binary_out(x, y, dtype)?;
    if matches!(dtype, F16 | BF16) && b.numel() == 1 {
        // ATen's mul_kernel: a scalar other in op-math, from its value before the cast.
        let s = b.first_f64()? as f32;
        return crate::dispatch!(dtype, [half::f16, half::bf16], T => {
            zip2(&mut o, x, y, |p: T, _q: T| T::from_f64(f64::from(p.to_f64() as f32 * s)))?;
            Ok(o)
        }, _ => not_implemented("mul", dtype));
    }
    match dtype {
        C64 => zip2(&mut o, x, y, |p: Complex<f32>, q: Complex<f32>| p.mul(q))?,
        C128 => zip2(&mut o, x, y, |p: Complex<f64>, q: Complex<f64>| p.mul(q))?,
        d => crate::dispatch!(d, T => {
            zip2(&mut o, x, y, |p: T, q: T| T::from_w(T::mul(p.to_w(), q.to_w())))?
        }, _ => return not_implemented("mul", d)),
    }
    Ok(o)
}

/// `self * other` (broadcast; ATen's type promotion).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mul_Tensor(
    self_: AtenTensorHandle,
    other: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (a, b) = (handle(self_, "self")?, handle(other, "other")?);
        let r = out(ret0, "ret0")?;
        *r = mul(a, b, operand(b))?.into_raw();
        Ok(())
    })
}

/// `self * other` for a Python float `other` (an integer or bool self gives float32).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mul_Scalar(
    self_: AtenTensorHandle,
    other: f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let a = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let b = wrapped(other)?;
        *r = mul(a, b.get(), Operand::Wrapped(F64))?.into_raw();
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// angle, polar

/// `angle(self)`: for a complex self `atan2(im, re)` in its value dtype, contiguous (ATen
/// computes it complex to complex and copies the real part into a resized output); for a
/// real self `pi` where it is negative, NaN where NaN, else 0, in self's dtype (float32 for
/// integers and bool), laid out as a unary op's output. Inductor computes the complex angle
/// itself from `view_as_real` (no fallback with the default configs).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_angle(
    self_: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        util::require_cpu(t, "self")?;
        *r = angle(t)?.into_raw();
        Ok(())
    })
}

fn angle(t: Tensor) -> Result<Owned> {
    let d = t.dtype();
    if is_complex(d) {
        let mut o = util::empty(t.sizes(), value_dtype(d))?;
        if d == C64 {
            zip2(&mut o, t, t, |z: Complex<f32>, _: Complex<f32>| {
                z.im.atan2(z.re)
            })?;
        } else {
            zip2(&mut o, t, t, |z: Complex<f64>, _: Complex<f64>| {
                z.im.atan2(z.re)
            })?;
        }
        return Ok(o);
    }
    let od = if is_float(d) { d } else { F32 };
    let x = cast(t, od)?;
    let (shape, strides) = layout(&[x.get()])?;
    let mut o = util::empty_strided(&shape, &strides, od)?;
    crate::dispatch!(od, [f32, f64, half::f16, half::bf16], T => {
        let pi = T::from_f64(std::f64::consts::PI);
        zip2(&mut o, x.get(), x.get(), |v: T, _: T| {
            if super::isnan(v) {
                v
            } else if v < T::from_f64(0.0) {
                pi
            } else {
                T::from_f64(0.0)
            }
        })?
    }, _ => return not_implemented("angle", od));
    Ok(o)
}

/// `polar(abs, angle)`: `abs * (cos angle + i sin angle)`, broadcast, complex64 from
/// float32, complex128 from float64 (both the same dtype, as ATen requires; float16's
/// complex32 is not a libtensor dtype), laid out as TensorIterator lays out a new output.
/// Inductor leaves `torch.polar` as this fallback.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_polar(
    abs: AtenTensorHandle,
    angle: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (a, t) = (handle(abs, "abs")?, handle(angle, "angle")?);
        let r = out(ret0, "ret0")?;
        util::require_cpu(a, "abs")?;
        util::require_cpu(t, "angle")?;
        let d = a.dtype();
        if !matches!(d, F32 | F64) || t.dtype() != d {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "Expected both inputs to be Float or Double tensors (Half's complex32 is not a libtensor dtype) but got {} and {}",
                    util::dtype_name(d),
                    util::dtype_name(t.dtype())
                ),
            );
        }
        let mut o = binary_out(a, t, if d == F32 { C64 } else { C128 })?;
        if d == F32 {
            zip2(&mut o, a, t, |m: f32, th: f32| Complex {
                re: m * th.cos(),
                im: m * th.sin(),
            })?;
        } else {
            zip2(&mut o, a, t, |m: f64, th: f64| Complex {
                re: m * th.cos(),
                im: m * th.sin(),
            })?;
        }
        *r = o.into_raw();
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// gcd

/// Euclid's algorithm on the absolute values, as ATen's `calc_gcd` (C++'s wrapping `abs`
/// and truncating `%`: the most negative value stays negative).
trait Gcd: Element {
    fn gcd(a: Self, b: Self) -> Self;
}

macro_rules! gcd_signed {
    ($($t:ty),*) => {$(
        impl Gcd for $t {
            fn gcd(a: $t, b: $t) -> $t {
                let (mut a, mut b) = (a.wrapping_abs(), b.wrapping_abs());
                while a != 0 {
                    let c = a;
                    a = b.wrapping_rem(a);
                    b = c;
                }
                b
            }
        }
    )*};
}
gcd_signed!(i8, i16, i32, i64);

impl Gcd for u8 {
    fn gcd(mut a: u8, mut b: u8) -> u8 {
        while a != 0 {
            let c = a;
            a = b % a;
            b = c;
        }
        b
    }
}

/// `gcd(self, other)`: broadcast, in their promoted integer dtype (uint8, int8, int16,
/// int32, int64, as ATen's kernel; bool, the wider unsigned types and floats are refused).
/// Inductor leaves `torch.gcd` as this fallback.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_gcd(
    self_: AtenTensorHandle,
    other: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (a, b) = (handle(self_, "self")?, handle(other, "other")?);
        let r = out(ret0, "ret0")?;
        util::require_cpu(a, "self")?;
        util::require_cpu(b, "other")?;
        let dtype = common(a, operand(b))?;
        let (ac, bc) = (cast(a, dtype)?, cast(b, dtype)?);
        let mut o = binary_out(ac.get(), bc.get(), dtype)?;
        crate::dispatch!(dtype, [u8, i8, i16, i32, i64], T => {
            zip2(&mut o, ac.get(), bc.get(), |p: T, q: T| <T as Gcd>::gcd(p, q))?
        }, _ => return not_implemented("gcd_cpu", dtype));
        *r = o.into_raw();
        Ok(())
    })
}

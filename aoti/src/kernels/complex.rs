//! The complex-tensor companions of the FFT that Inductor leaves as fallbacks:
//! `view_as_real`, `view_as_complex` (views over the same storage, c10's checks) and `abs`
//! of a complex tensor (its magnitude, real of the component dtype, laid out like the input
//! as a unary op's output is; Inductor computes `abs` of real tensors itself).

use super::{for_each_offset, AtenTensorHandle, C128, C64, F32, F64};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

/// The dtype of a complex dtype's real and imaginary parts.
pub fn value_dtype(cdtype: i32) -> i32 {
    if cdtype == C64 {
        F32
    } else {
        F64
    }
}

/// The complex dtype of a CPU tensor of float32 / float64 (`what` names the op in the DTYPE
/// error of any other dtype).
pub fn complex_of(t: Tensor, what: &str) -> Result<i32> {
    util::require_cpu(t, "self")?;
    match t.dtype() {
        F32 => Ok(C64),
        F64 => Ok(C128),
        d => err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "{what} takes float32 or float64, got {}",
                util::dtype_name(d)
            ),
        ),
    }
}

/// The real view of a complex layout (`view_as_real`): its value dtype, sizes + [2],
/// strides * 2 + [1].
fn real_layout(sizes: &[i64], strides: &[i64], cdtype: i32) -> (i32, Vec<i64>, Vec<i64>) {
    let mut vs = sizes.to_vec();
    vs.push(2);
    let mut vt: Vec<i64> = strides.iter().map(|&s| 2 * s).collect();
    vt.push(1);
    (value_dtype(cdtype), vs, vt)
}

/// `view_as_real(t)` for a complex `t`: a tensor over its storage.
pub fn as_real(t: Tensor) -> Result<Owned> {
    let (vdt, vs, vt) = real_layout(t.sizes(), t.strides(), t.dtype());
    t.over_storage(2 * t.storage_offset(), &vs, &vt, vdt)
}

fn require_complex(t: Tensor, what: &str) -> Result<()> {
    util::require_cpu(t, "self")?;
    if matches!(t.dtype(), C64 | C128) {
        return Ok(());
    }
    err(
        sys::TENSOR_ERR_DTYPE,
        format!(
            "{what} is only supported for complex tensors (complex64, complex128), got {}",
            util::dtype_name(t.dtype())
        ),
    )
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_view_as_real(
    self_: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        require_complex(t, "view_as_real")?;
        *r = as_real(t)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_view_as_complex(
    self_: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let cdt = complex_of(t, "view_as_complex (complex32 is not a libtensor dtype)")?;
        let (sizes, strides) = (t.sizes(), t.strides());
        let Some((&last, rest)) = sizes.split_last() else {
            return err(
                sys::TENSOR_ERR_SHAPE,
                "Input tensor must have one or more dimensions",
            );
        };
        if last != 2 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("Tensor must have a last dimension of size 2, got sizes {sizes:?}"),
            );
        }
        if strides[strides.len() - 1] != 1 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("Tensor must have a last dimension with stride 1, got strides {strides:?}"),
            );
        }
        let rest_st = &strides[..strides.len() - 1];
        if rest_st.iter().any(|s| s % 2 != 0) {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("Tensor must have a stride divisible by 2 for all but last dimension, got strides {strides:?}"),
            );
        }
        if t.storage_offset() % 2 != 0 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "Tensor must have a storage_offset divisible by 2, got {}",
                    t.storage_offset()
                ),
            );
        }
        let half: Vec<i64> = rest_st.iter().map(|s| s / 2).collect();
        *r = t
            .over_storage(t.storage_offset() / 2, rest, &half, cdt)?
            .into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_abs(self_: AtenTensorHandle, ret0: *mut AtenTensorHandle) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        require_complex(t, "the abs fallback (Inductor computes it for real dtypes)")?;
        // A unary op's output layout: the input's strides when dense, else dense in its
        // dim order (empty_like's preserve format).
        let like = t.empty_like(sys::TENSOR_PRESERVE_FORMAT)?;
        let (sizes, strides) = (like.get().sizes(), like.get().strides());
        let vdt = value_dtype(t.dtype());
        let mut o = util::empty_strided(sizes, strides, vdt)?;
        let src = as_real(t)?;
        if vdt == F32 {
            magnitudes::<f32>(&mut o, src.get(), t.strides())?;
        } else {
            magnitudes::<f64>(&mut o, src.get(), t.strides())?;
        }
        *r = o.into_raw();
        Ok(())
    })
}

/// `o[i] = |re + i im|` (hypot, no overflow or underflow on the way) for every index `i`,
/// reading the real view `src` of a complex tensor with complex strides `cst`. `o` was just
/// allocated (`empty`).
fn magnitudes<T: Element>(o: &mut Owned, src: Tensor, cst: &[i64]) -> Result<()> {
    let (sizes, ost) = (o.get().sizes().to_vec(), o.get().strides().to_vec());
    let sst: Vec<i64> = cst.iter().map(|&s| 2 * s).collect();
    let sv = src.values::<T>()?;
    // SAFETY: o was allocated by `empty` in aoti_torch_cpu_abs, which hands it out only
    // after this returns: no other reference reaches its storage.
    let ov = unsafe { o.values_mut::<T>() }?;
    for_each_offset(&sizes, &ost, &sst, |at, from| {
        ov[at] = T::from_f64(sv[from].to_f64().hypot(sv[from + 1].to_f64()));
    });
    Ok(())
}

/// A complex element (c10's `complex<T>`: real part, then imaginary part), so that kernels
/// read complex64 / complex128 tensors through typed slices with their own strides. As an
/// `Element` its float64 conversions are C++'s: to a real takes the real part, from a real
/// gives a zero imaginary part.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Complex<T> {
    pub re: T,
    pub im: T,
}

/// Complex values compare by their real parts (an order only for `Element`'s bound;
/// complex kernels do not sort).
impl<T: PartialOrd> PartialOrd for Complex<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.re.partial_cmp(&other.re)
    }
}

macro_rules! complex_element {
    ($($t:ty = $code:ident;)*) => {$(
        impl Element for Complex<$t> {
            const DTYPE: i32 = $code;
            fn to_f64(self) -> f64 {
                self.re as f64
            }
            fn from_f64(v: f64) -> Self {
                Complex { re: v as $t, im: 0.0 }
            }
        }

        impl Complex<$t> {
            /// c10's `complex * complex`: `(ac - bd, ad + bc)`, no fused multiply-add.
            pub fn mul(self, o: Self) -> Self {
                Complex {
                    re: self.re * o.re - self.im * o.im,
                    im: self.re * o.im + self.im * o.re,
                }
            }

            pub fn add(self, o: Self) -> Self {
                Complex { re: self.re + o.re, im: self.im + o.im }
            }
        }
    )*};
}
complex_element! {
    f32 = C64;
    f64 = C128;
}

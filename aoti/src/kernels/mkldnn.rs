//! The kernels a `freezing=True` package calls on its packed weights, over libtensor_aoti's
//! own convolution and GEMM: `mkldnn::_convolution_pointwise` (a convolution, then a unary
//! op), its `.binary` form (then a binary op with `other`, then the unary op) and in-place
//! `_convolution_pointwise_.binary` (the result written into `other`, Inductor's residual
//! add), `mkldnn::_linear_pointwise` (+ `.binary`) and `mkl::_mkl_linear`.
//!
//! The packed weights reach these as dense tensors: the loader unpacks each oneDNN-layout
//! constant once, when the model loads (`shim::unpack_onednn`). As ATen's oneDNN kernels,
//! a convolution by such a weight returns channels-last (-3d) whatever the input's layout,
//! a linear a contiguous output. The post-ops are ATen's `fusion_unary_attr_map` /
//! `fusion_binary_alg_map`: unary `none`, `relu`, `sigmoid`, `tanh`, `hardswish`, `swish`,
//! `leaky_relu` (scalars: slope), `hardtanh` (min, max), `gelu` (algorithm `none` or
//! `tanh`), `hardsigmoid`; binary `add`, `sub`, `mul`, `div` (then none or `relu`; in place
//! `add` only). They run in float32 (a
//! float16 / bfloat16 output is rounded once, after them).

use super::conv::convolution;
use super::matmul::linear;
use super::parallel::{self, Shared};
use super::vmath;
use super::{optional_str, required_str, spatial_param, AtenTensorHandle, F32};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Owned, Tensor};

/// A unary post-op.
#[derive(Clone, Copy, Debug)]
enum Unary {
    None,
    Relu,
    Sigmoid,
    Tanh,
    Hardswish,
    Swish,
    LeakyRelu(f32),
    Hardtanh(f32, f32),
    Gelu { tanh: bool },
    Hardsigmoid,
}

impl Unary {
    /// The op `attr` names, with its `scalars` and `algorithm` (checked as ATen checks
    /// them: the scalars an op reads must be there).
    fn parse(attr: &str, scalars: &[Option<f64>], algorithm: Option<&str>) -> Result<Unary> {
        let scalar = |k: usize| match scalars.get(k).copied().flatten() {
            Some(v) => Ok(v as f32),
            None => err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("post-op \"{attr}\" needs scalar {k}, scalars are {scalars:?}"),
            ),
        };
        Ok(match attr {
            "none" | "" => Unary::None,
            "relu" => Unary::Relu,
            "sigmoid" => Unary::Sigmoid,
            "tanh" => Unary::Tanh,
            "hardswish" => Unary::Hardswish,
            "swish" => Unary::Swish,
            "hardsigmoid" => Unary::Hardsigmoid,
            "leaky_relu" => Unary::LeakyRelu(scalar(0)?),
            "hardtanh" => Unary::Hardtanh(scalar(0)?, scalar(1)?),
            "gelu" => match algorithm.unwrap_or("none") {
                "none" | "" => Unary::Gelu { tanh: false },
                "tanh" => Unary::Gelu { tanh: true },
                a => {
                    return err(
                        sys::TENSOR_ERR_INVALID_ARGUMENT,
                        format!("gelu post-op: algorithm \"{a}\" (\"none\" or \"tanh\")"),
                    )
                }
            },
            _ => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!("unary post-op \"{attr}\" is not one of none, relu, sigmoid, tanh, hardswish, swish, leaky_relu, hardtanh, gelu, hardsigmoid"),
                )
            }
        })
    }

    /// `v = op(v)` over `v`: one loop per op, so that each is compiled (and vectorized)
    /// on its own; `sigmoid`, `swish` and `gelu` with a vector `exp` / `erf` (`vmath`).
    fn apply(self, v: &mut [f32]) {
        fn each(v: &mut [f32], f: impl Fn(f32) -> f32) {
            for x in v {
                *x = f(*x);
            }
        }
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        let relu6 = |x: f32| x.clamp(0.0, 6.0);
        match self {
            Unary::None => {}
            // NaN kept (ATen's relu, oneDNN's eltwise_relu)
            Unary::Relu => each(v, |x| if x < 0.0 { 0.0 } else { x }),
            Unary::Sigmoid | Unary::Swish => {
                let swish = matches!(self, Unary::Swish);
                let done = sigmoid_vec(v, swish);
                if swish {
                    each(&mut v[done..], |x| x * sigmoid(x));
                } else {
                    each(&mut v[done..], sigmoid);
                }
            }
            Unary::Tanh => each(v, f32::tanh),
            Unary::Hardswish => each(v, |x| x * relu6(x + 3.0) / 6.0),
            Unary::Hardsigmoid => each(v, |x| relu6(x + 3.0) / 6.0),
            Unary::LeakyRelu(a) => each(v, |x| if x < 0.0 { x * a } else { x }),
            Unary::Hardtanh(lo, hi) => each(v, |x| x.max(lo).min(hi)),
            Unary::Gelu { tanh: false } => {
                let done = gelu_vec(v);
                each(&mut v[done..], |x| {
                    0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
                })
            }
            Unary::Gelu { tanh: true } => {
                let k = (2.0 / std::f32::consts::PI).sqrt();
                each(v, |x| {
                    0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
                })
            }
        }
    }
}

/// `gelu(x)` (the erf form) of every element of `v` in vectors of this CPU's widest ISA
/// (`vmath::erf`); returns how many it did (`v.len()`, or 0 on a CPU without one).
fn gelu_vec(v: &mut [f32]) -> usize {
    match vmath::Isa::best() {
        Some(isa) => {
            gelu_on(isa, v);
            v.len()
        }
        None => 0,
    }
}

/// `sigmoid(x)` (`swish`: `x * sigmoid(x)`) of every element of `v` in vectors of this
/// CPU's widest ISA (`vmath::exp`); returns how many it did (`v.len()`, or 0).
fn sigmoid_vec(v: &mut [f32], swish: bool) -> usize {
    match vmath::Isa::best() {
        Some(isa) => {
            sigmoid_on(isa, v, swish);
            v.len()
        }
        None => 0,
    }
}

vmath::lanes_fn!(fn gelu_on(v: &mut [f32]) = gelu_lanes);
vmath::lanes_fn!(fn sigmoid_on(v: &mut [f32], swish: bool) = sigmoid_lanes);

/// `gelu_vec` in vectors of `L`.
///
/// # Safety
///
/// `L`'s ISA is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn gelu_lanes<L: vmath::Lanes>(v: &mut [f32]) {
    for c in v.chunks_mut(L::N) {
        // SAFETY: L's ISA (the caller's); c holds c.len() <= L::N floats.
        unsafe {
            let x = L::load(c.as_ptr(), c.len());
            let e = vmath::erf::<L>(L::mul(x, L::splat(std::f32::consts::FRAC_1_SQRT_2)));
            let y = L::mul(L::mul(L::splat(0.5), x), L::add(L::splat(1.0), e));
            L::store(c.as_mut_ptr(), c.len(), y);
        }
    }
}

/// `sigmoid_vec` in vectors of `L`.
///
/// # Safety
///
/// `L`'s ISA is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn sigmoid_lanes<L: vmath::Lanes>(v: &mut [f32], swish: bool) {
    for c in v.chunks_mut(L::N) {
        // SAFETY: L's ISA (the caller's); c holds c.len() <= L::N floats.
        unsafe {
            let one = L::splat(1.0);
            let x = L::load(c.as_ptr(), c.len());
            let e = vmath::exp::<L>(L::sub(L::zero(), x));
            let s = L::div(one, L::add(one, e));
            let y = if swish { L::mul(x, s) } else { s };
            L::store(c.as_mut_ptr(), c.len(), y);
        }
    }
}

/// A binary post-op, `y op other`.
#[derive(Clone, Copy, Debug)]
enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

impl Binary {
    fn parse(attr: &str) -> Result<Binary> {
        Ok(match attr {
            "add" => Binary::Add,
            "sub" => Binary::Sub,
            "mul" => Binary::Mul,
            "div" => Binary::Div,
            _ => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!("binary post-op \"{attr}\" is not one of add, sub, mul, div"),
                )
            }
        })
    }

    /// `y = y op o` elementwise, one loop per op.
    fn apply(self, y: &mut [f32], o: &[f32]) {
        fn each(y: &mut [f32], o: &[f32], f: impl Fn(f32, f32) -> f32) {
            for (v, &w) in y.iter_mut().zip(o) {
                *v = f(*v, w);
            }
        }
        match self {
            Binary::Add => each(y, o, |a, b| a + b),
            Binary::Sub => each(y, o, |a, b| a - b),
            Binary::Mul => each(y, o, |a, b| a * b),
            Binary::Div => each(y, o, |a, b| a / b),
        }
    }
}

/// `const double** scalars` of `n` entries (c_shim_cpu.h's `Scalar?[]`): each NULL or one
/// value.
fn scalars(p: *const *const f64, n: i64) -> Result<Vec<Option<f64>>> {
    Ok(util::array(p, n, "scalars")?
        .iter()
        .map(|&q| super::optional(q))
        .collect())
}

/// The unary post-op of the binary convolutions: none (NULL) or `relu`, the two ATen's
/// oneDNN kernels fuse after a binary op (any other is "undefined" there, refused here).
fn after_binary(
    attr: *const *const std::ffi::c_char,
    scalars_: *const *const f64,
    n: i64,
) -> Result<Unary> {
    scalars(scalars_, n)?;
    match optional_str(attr).as_deref() {
        None => Ok(Unary::None),
        Some("relu") => Ok(Unary::Relu),
        Some(a) => err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("unary post-op \"{a}\" after a binary one (ATen fuses none or relu there)"),
        ),
    }
}

/// `alpha` of a binary post-op: ATen's oneDNN kernels take only 1 (or none).
fn check_alpha(alpha: *const f64) -> Result<()> {
    match super::optional(alpha) {
        None => Ok(()),
        Some(1.0) => Ok(()),
        Some(a) => err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("alpha {a}: the binary post-op takes alpha 1 only (as ATen's oneDNN kernels)"),
        ),
    }
}

/// A float32 tensor with `y`'s sizes and strides holding `t`'s values (`t` itself when it
/// already is one), or SHAPE when `t`'s sizes are not `y`'s.
fn laid_like(t: Tensor, y: Tensor, name: &str) -> Result<Option<Owned>> {
    if t.sizes() != y.sizes() {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "{name} has sizes {:?}, the result {:?}",
                t.sizes(),
                y.sizes()
            ),
        );
    }
    if t.dtype() == F32 && t.strides() == y.strides() {
        return Ok(None);
    }
    let c = util::empty_strided(y.sizes(), y.strides(), F32)?;
    c.get().copy_from(t)?;
    Ok(Some(c))
}

/// `y = unary(y op other)` (`other` and `op` when given) in place, elementwise in float32;
/// `y` was just allocated (dense: channels-last or contiguous).
fn epilogue(y: &mut Owned, other: Option<(Tensor, Binary)>, un: Unary) -> Result<()> {
    if other.is_none() && matches!(un, Unary::None) {
        return Ok(());
    }
    let mut y32 = laid_like(y.get(), y.get(), "the result")?;
    let oc = match other {
        Some((o, _)) => Some(laid_like(o, y.get(), "other")?),
        None => None,
    };
    {
        let target = y32.as_mut().unwrap_or(&mut *y);
        let ov = match (&oc, other) {
            (Some(Some(c)), _) => Some(c.get().values::<f32>()?),
            (Some(None), Some((o, _))) => Some(o.values::<f32>()?),
            _ => None,
        };
        // SAFETY: target is y (just allocated by the caller: nothing else reaches it) or
        // its float32 copy made here.
        let yv = unsafe { target.values_mut::<f32>() }?;
        // Blocks of the result, each through the binary op and then the unary one while
        // it is in cache; the blocks are tasks on the model's OpenMP threads.
        const BLOCK: usize = 1 << 12;
        let n = yv.len();
        let blocks = n.div_ceil(BLOCK);
        let yp = Shared(yv.as_mut_ptr());
        let op = other.map(|(_, op)| op);
        let block = |k: usize| {
            let lo = k * BLOCK;
            // SAFETY: block k of yv (lo < n): each task's blocks are its own.
            let yb = unsafe { std::slice::from_raw_parts_mut(yp.get().add(lo), BLOCK.min(n - lo)) };
            if let (Some(ov), Some(op)) = (ov, op) {
                op.apply(yb, &ov[lo..]);
            }
            un.apply(yb);
        };
        let threads = parallel::threads();
        if threads > 1 && blocks >= 2 * threads {
            parallel::run(threads, &|part| {
                for k in parallel::chunk(blocks, threads, 1, part) {
                    block(k);
                }
            });
        } else {
            (0..blocks).for_each(block);
        }
    }
    if let Some(c) = y32 {
        y.get().copy_from(c.get())?;
    }
    Ok(())
}

/// The convolution of the three conv shims: parameters read for x's rank.
#[allow(clippy::too_many_arguments)]
fn conv(
    x: Tensor,
    w: Tensor,
    b: *mut AtenTensorHandle,
    padding: (*const i64, i64),
    stride: (*const i64, i64),
    dilation: (*const i64, i64),
    groups: i64,
) -> Result<Owned> {
    let sp = (x.ndim() as usize).max(3) - 2;
    let padding = spatial_param(padding.0, padding.1, sp, "padding")?;
    let stride = spatial_param(stride.0, stride.1, sp, "stride")?;
    let dilation = spatial_param(dilation.0, dilation.1, sp, "dilation")?;
    let b = util::optional_handle(b, "B");
    convolution(x, w, b, &stride, &padding, &dilation, groups, true)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mkldnn__convolution_pointwise(
    x: AtenTensorHandle,
    w: AtenTensorHandle,
    b: *mut AtenTensorHandle,
    padding: *const i64,
    padding_len_: i64,
    stride: *const i64,
    stride_len_: i64,
    dilation: *const i64,
    dilation_len_: i64,
    groups: i64,
    attr: *const std::ffi::c_char,
    scalars_: *const *const f64,
    scalars_len_: i64,
    algorithm: *const *const std::ffi::c_char,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, w) = (handle(x, "X")?, handle(w, "W")?);
        let r = out(ret0, "ret0")?;
        let un = Unary::parse(
            &required_str(attr, "attr")?,
            &scalars(scalars_, scalars_len_)?,
            optional_str(algorithm).as_deref(),
        )?;
        let mut y = conv(
            x,
            w,
            b,
            (padding, padding_len_),
            (stride, stride_len_),
            (dilation, dilation_len_),
            groups,
        )?;
        epilogue(&mut y, None, un)?;
        *r = y.into_raw();
        Ok(())
    })
}

/// The two binary convolutions: `unary(conv(x) op other)` in a new output, the post-ops
/// checked as ATen checks them (`in_place`: `add` only, and `other` not overlapping `x`).
#[allow(clippy::type_complexity)]
fn conv_binary(
    x: Tensor,
    other: Tensor,
    w: Tensor,
    b: *mut AtenTensorHandle,
    [padding, stride, dilation]: [(*const i64, i64); 3],
    groups: i64,
    (binary_attr, alpha): (*const std::ffi::c_char, *const f64),
    unary: (*const *const std::ffi::c_char, *const *const f64, i64),
    in_place: bool,
) -> Result<Owned> {
    let attr = required_str(binary_attr, "binary_attr")?;
    if in_place && attr != "add" {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("binary post-op \"{attr}\": the in-place form fuses add only"),
        );
    }
    let op = Binary::parse(&attr)?;
    check_alpha(alpha)?;
    let un = after_binary(unary.0, unary.1, unary.2)?;
    let mut y = conv(x, w, b, padding, stride, dilation, groups)?;
    if in_place {
        super::no_overlap(other, x, "other")?;
    }
    epilogue(&mut y, Some((other, op)), un)?;
    Ok(y)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mkldnn__convolution_pointwise_binary(
    x: AtenTensorHandle,
    other: AtenTensorHandle,
    w: AtenTensorHandle,
    b: *mut AtenTensorHandle,
    padding: *const i64,
    padding_len_: i64,
    stride: *const i64,
    stride_len_: i64,
    dilation: *const i64,
    dilation_len_: i64,
    groups: i64,
    binary_attr: *const std::ffi::c_char,
    alpha: *const f64,
    unary_attr: *const *const std::ffi::c_char,
    unary_scalars: *const *const f64,
    unary_scalars_len_: i64,
    unary_algorithm: *const *const std::ffi::c_char,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, o, w) = (handle(x, "X")?, handle(other, "other")?, handle(w, "W")?);
        let r = out(ret0, "ret0")?;
        let _ = unary_algorithm; // relu and none take none
        let y = conv_binary(
            x,
            o,
            w,
            b,
            [
                (padding, padding_len_),
                (stride, stride_len_),
                (dilation, dilation_len_),
            ],
            groups,
            (binary_attr, alpha),
            (unary_attr, unary_scalars, unary_scalars_len_),
            false,
        )?;
        *r = y.into_raw();
        Ok(())
    })
}

/// In place: `other = unary(conv(X) + other)`, returned as a new handle to `other` (ATen
/// fuses only `add` this way).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mkldnn__convolution_pointwise_binary_(
    other: AtenTensorHandle,
    x: AtenTensorHandle,
    w: AtenTensorHandle,
    b: *mut AtenTensorHandle,
    padding: *const i64,
    padding_len_: i64,
    stride: *const i64,
    stride_len_: i64,
    dilation: *const i64,
    dilation_len_: i64,
    groups: i64,
    binary_attr: *const std::ffi::c_char,
    alpha: *const f64,
    unary_attr: *const *const std::ffi::c_char,
    unary_scalars: *const *const f64,
    unary_scalars_len_: i64,
    unary_algorithm: *const *const std::ffi::c_char,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (o, x, w) = (handle(other, "other")?, handle(x, "X")?, handle(w, "W")?);
        let r = out(ret0, "ret0")?;
        let _ = unary_algorithm; // relu and none take none
        let y = conv_binary(
            x,
            o,
            w,
            b,
            [
                (padding, padding_len_),
                (stride, stride_len_),
                (dilation, dilation_len_),
            ],
            groups,
            (binary_attr, alpha),
            (unary_attr, unary_scalars, unary_scalars_len_),
            true,
        )?;
        o.copy_from(y.get())?;
        *r = o.alias()?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__linear_pointwise(
    x: AtenTensorHandle,
    w: AtenTensorHandle,
    b: *mut AtenTensorHandle,
    attr: *const std::ffi::c_char,
    scalars_: *const *const f64,
    scalars_len_: i64,
    algorithm: *const *const std::ffi::c_char,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, w) = (handle(x, "X")?, handle(w, "W")?);
        let b = util::optional_handle(b, "B");
        let r = out(ret0, "ret0")?;
        let un = Unary::parse(
            &required_str(attr, "attr")?,
            &scalars(scalars_, scalars_len_)?,
            optional_str(algorithm).as_deref(),
        )?;
        let mut y = linear(x, w, b)?;
        epilogue(&mut y, None, un)?;
        *r = y.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__linear_pointwise_binary(
    x: AtenTensorHandle,
    other: AtenTensorHandle,
    w: AtenTensorHandle,
    b: *mut AtenTensorHandle,
    attr: *const std::ffi::c_char,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, o, w) = (handle(x, "X")?, handle(other, "other")?, handle(w, "W")?);
        let b = util::optional_handle(b, "B");
        let r = out(ret0, "ret0")?;
        let op = Binary::parse(&required_str(attr, "attr")?)?;
        let mut y = linear(x, w, b)?;
        epilogue(&mut y, Some((o, op)), Unary::None)?;
        *r = y.into_raw();
        Ok(())
    })
}

/// `X @ origin_W.T + B`: `W` is MKL's packed copy of `origin_W` (MKL's own format, which
/// only MKL reads), the dense weight the package also carries.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu__mkl_linear(
    x: AtenTensorHandle,
    w: AtenTensorHandle,
    origin_w: AtenTensorHandle,
    b: *mut AtenTensorHandle,
    prepack_batch_size: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let x = handle(x, "X")?;
        handle(w, "W")?;
        let ow = handle(origin_w, "origin_W")?;
        let b = util::optional_handle(b, "B");
        let r = out(ret0, "ret0")?;
        let _ = prepack_batch_size;
        *r = linear(x, ow, b)?.into_raw();
        Ok(())
    })
}

//! Shape ops Inductor leaves to fallbacks (it does so for complex tensors, whose views and
//! copies it does not generate: `x.permute(..).reshape(..)`, `x[:, a:b].squeeze(0)` and
//! `torch.cat` of complex64 tensors compile to `aoti_torch_cpu_permute`, `reshape`,
//! `slice_Tensor`, `squeeze_dim`, `cat`): `cat`, `narrow`, `permute`, `reshape`,
//! `squeeze_dim`, `slice_Tensor`, `view_dtype`, `pad`, `fill__Scalar`, `resize_`,
//! `resize_as_`, `set__source_Tensor`.
//!
//! Where ATen returns a view this returns libtensor's view (same storage, ATen's sizes,
//! strides and offset: libtensor's view calls are PyTorch's); where ATen copies, a new
//! tensor laid out as ATen's. Every dtype libtensor has (complex included), unless noted.

use super::{check_scalar, optional, result_type, AtenTensorHandle, Operand, C128, C64};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Owned, Tensor};

/// `torch.cat(tensors, dim)`. ATen's rules: a 1-D tensor of size 0 is skipped (legacy);
/// the others must have the same number of dims and the same sizes except along `dim`
/// (wrapped against the first one kept); 0-dim tensors are refused; the dtype is the
/// `result_type` of all of them; the layout channels-last (3d) when every input suggests
/// it, else contiguous; all inputs skipped gives the first one's sizes' `[0]`.
///
/// Inductor emits it for complex inputs (it concatenates real tensors itself).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_cat(
    tensors: *const AtenTensorHandle,
    tensors_len_: i64,
    dim: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let hs = util::list(tensors, tensors_len_, "tensors")?;
        let ts = hs
            .iter()
            .enumerate()
            .map(|(i, &h)| handle(h, &format!("tensors[{i}]")))
            .collect::<Result<Vec<Tensor>>>()?;
        let r = out(ret0, "ret0")?;
        *r = cat(&ts, dim)?.into_raw();
        Ok(())
    })
}

fn cat(ts: &[Tensor], dim: i64) -> Result<Owned> {
    if ts.is_empty() {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            "torch.cat(): expected a non-empty list of Tensors",
        );
    }
    for (i, &t) in ts.iter().enumerate() {
        util::require_cpu(t, "tensors")?;
        if t.ndim() == 0 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("zero-dimensional tensor (at position {i}) cannot be concatenated"),
            );
        }
    }
    let skipped = |t: Tensor| t.sizes() == [0];
    let ops: Vec<Operand> = ts.iter().map(|t| Operand::Dim(t.dtype())).collect();
    let dtype = result_type(&ops)?;
    let fmt = cat_memory_format(ts);
    let Some(first) = ts.iter().copied().find(|&t| !skipped(t)) else {
        return util::empty(&[0], dtype);
    };
    let nd = first.ndim() as usize;
    let d = util::wrap_dim(dim, nd, true)?;
    let mut sizes = first.sizes().to_vec();
    sizes[d] = 0;
    for (i, &t) in ts.iter().enumerate() {
        if skipped(t) {
            continue;
        }
        if t.ndim() as usize != nd {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "Tensors must have same number of dimensions: got {nd} and {}",
                    t.ndim()
                ),
            );
        }
        for (k, (&a, &b)) in first.sizes().iter().zip(t.sizes()).enumerate() {
            if k != d && a != b {
                return err(
                    sys::TENSOR_ERR_SHAPE,
                    format!("Sizes of tensors must match except in dimension {d}. Expected size {a} but got size {b} for tensor number {i} in the list."),
                );
            }
        }
        sizes[d] = sizes[d]
            .checked_add(t.sizes()[d])
            .ok_or(crate::error::Error {
                status: sys::TENSOR_ERR_OVERFLOW,
                msg: format!("the concatenated size of dim {d} overflows"),
            })?;
    }
    let o = util::empty_strided(&sizes, &util::format_strides(&sizes, fmt)?, dtype)?;
    let mut at = 0i64;
    for &t in ts {
        if skipped(t) {
            continue;
        }
        let n = t.sizes()[d];
        if n > 0 && t.numel() > 0 {
            o.get().narrow(d as i64, at, n)?.get().copy_from(t)?;
        }
        at += n;
    }
    Ok(o)
}

/// ATen's `cat_compute_output_memory_format`: the format every input suggests, contiguous
/// at the first one that suggests contiguous or one that disagrees.
fn cat_memory_format(ts: &[Tensor]) -> i32 {
    let mut fmt = None;
    for t in ts {
        let f = t.suggest_memory_format();
        if f == sys::TENSOR_CONTIGUOUS_FORMAT || fmt.is_some_and(|g| g != f) {
            return sys::TENSOR_CONTIGUOUS_FORMAT;
        }
        fmt = Some(f);
    }
    fmt.unwrap_or(sys::TENSOR_CONTIGUOUS_FORMAT)
}

/// `self.narrow(dim, start, length)`: a view (`start` may be negative).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_narrow(
    self_: AtenTensorHandle,
    dim: i64,
    start: i64,
    length: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = t.narrow(dim, start, length)?.into_raw();
        Ok(())
    })
}

/// `self.permute(dims)`: a view (negative dims wrap; a repeated dim is refused).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_permute(
    self_: AtenTensorHandle,
    dims: *const i64,
    dims_len_: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let dims = util::array(dims, dims_len_, "dims")?;
        let r = out(ret0, "ret0")?;
        *r = t.permute(dims)?.into_raw();
        Ok(())
    })
}

/// `self.reshape(shape)`: a view with ATen's strides when one exists, else a contiguous
/// copy (one -1 inferred).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_reshape(
    self_: AtenTensorHandle,
    shape: *const i64,
    shape_len_: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let shape = util::array(shape, shape_len_, "shape")?;
        let r = out(ret0, "ret0")?;
        *r = t.reshape(shape)?.into_raw();
        Ok(())
    })
}

/// `self.squeeze(dim)`: a view without `dim` when its size is 1, else an alias.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_squeeze_dim(
    self_: AtenTensorHandle,
    dim: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = t.squeeze_dim(dim)?.into_raw();
        Ok(())
    })
}

/// `self[..., start:end:step, ...]` along `dim` (`slice.Tensor`): a view; a NULL `start`
/// is 0 and a NULL `end` the end of the dim; both clamp as ATen's; `step` must be positive.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_slice_Tensor(
    self_: AtenTensorHandle,
    dim: i64,
    start: *mut i64,
    end: *mut i64,
    step: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let s = optional(start.cast_const()).unwrap_or(0);
        let e = optional(end.cast_const()).unwrap_or(i64::MAX);
        *r = t.slice(dim, s, e, step)?.into_raw();
        Ok(())
    })
}

/// `self.view(dtype)`: the same bytes as another dtype (a view; with another item size the
/// last dim is rescaled, as c10 does, and refused where c10 refuses).
///
/// Inductor emits it for complex arithmetic it lowers itself (`x + 2 * y` on complex64
/// views the operands as float32).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_view_dtype(
    self_: AtenTensorHandle,
    dtype: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        *r = t.view_dtype(dtype)?.into_raw();
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// pad

/// `F.pad(self, pad, mode, value)` (`aten::pad`): `pad` lists (left, right) pairs from
/// the last dim inwards.
///
/// - "constant" (the default; `value` or 0): ATen's `constant_pad_nd` — negative pads
///   crop, all pads non-positive gives a clone of the crop (preserving its layout), else a
///   new tensor in the input's suggested memory format, filled, with the crop copied in.
/// - "reflect", "replicate": ATen's `reflection_pad{1,2,3}d` / `replication_pad{1,2,3}d`
///   for 2 / 4 / 6 pads on a tensor with one or two more dims (ATen's shape checks; a
///   reflection pad must be smaller than its dim), in the input's suggested format; not
///   bool, uint16, uint32, uint64 (ATen's kernels do not take them).
/// - "circular": ATen's `_pad_circular` (a wrap of at most one period), contiguous; where
///   a pad is wider than what negative pads leave of the input, ATen's result is partly
///   uninitialised memory, and zeros here.
///
/// The non-constant modes refuse a `value` other than 0. Every dtype (complex included).
/// Inductor lowers `F.pad` itself (no fallback with the default configs); this is for the
/// packages that keep `aten.pad` as an extern kernel.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_pad(
    self_: AtenTensorHandle,
    pad: *const i64,
    pad_len_: i64,
    mode: *const std::ffi::c_char,
    value: *mut f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let p = util::array(pad, pad_len_, "pad")?;
        let mode = super::required_str(mode, "mode")?;
        let r = out(ret0, "ret0")?;
        util::require_cpu(t, "self")?;
        *r = pad_op(t, p, &mode, optional(value.cast_const()))?.into_raw();
        Ok(())
    })
}

#[derive(Clone, Copy, PartialEq)]
enum PadMode {
    Reflect,
    Replicate,
    Circular,
}

fn pad_op(t: Tensor, pad: &[i64], mode: &str, value: Option<f64>) -> Result<Owned> {
    let mode = match mode {
        "constant" => None,
        "reflect" => Some(PadMode::Reflect),
        "replicate" => Some(PadMode::Replicate),
        "circular" => Some(PadMode::Circular),
        m => {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("Unrecognised padding mode {m}"),
            )
        }
    };
    let nd = t.ndim();
    if !pad.len().is_multiple_of(2) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            "Padding length must be divisible by 2",
        );
    }
    if pad.len() as i64 > 2 * nd {
        return err(sys::TENSOR_ERR_INVALID_ARGUMENT, "Padding length too large");
    }
    let Some(mode) = mode else {
        return constant_pad(t, pad, value.unwrap_or(0.0));
    };
    if value.is_some_and(|v| v != 0.0) {
        let name = match mode {
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
            PadMode::Circular => "circular",
        };
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("Padding mode \"{name}\" doesn't take in value argument"),
        );
    }
    let k = (pad.len() / 2) as i64;
    if !(1..=3).contains(&k) || !(nd == k + 1 || nd == k + 2) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!(
                "Padding size {} is not supported for {nd}D input tensor.",
                pad.len()
            ),
        );
    }
    if mode == PadMode::Circular {
        return circular_pad(t, pad);
    }
    // ATen's reflection / replication kernels dispatch over all types but bool and the
    // wider unsigned ones (complex, float16 and bfloat16 included).
    let d = t.dtype();
    if matches!(
        d,
        sys::TENSOR_BOOL | sys::TENSOR_UINT16 | sys::TENSOR_UINT32 | sys::TENSOR_UINT64
    ) {
        let op = if mode == PadMode::Reflect {
            "reflection"
        } else {
            "replication"
        };
        return super::not_implemented(&format!("{op}_pad{k}d"), d);
    }
    edge_pad(t, pad, mode == PadMode::Reflect)
}

/// `(left, right)` of the dim `i` pairs in from the last.
fn pad_pair(pad: &[i64], i: usize) -> (i64, i64) {
    (pad[2 * i], pad[2 * i + 1])
}

fn overflow(what: &str) -> crate::error::Error {
    crate::error::Error {
        status: sys::TENSOR_ERR_OVERFLOW,
        msg: format!("{what} overflows"),
    }
}

/// `padded = size + left + right`, or OVERFLOW.
fn padded(size: i64, (l, r): (i64, i64)) -> Result<i64> {
    size.checked_add(l)
        .and_then(|v| v.checked_add(r))
        .ok_or_else(|| overflow("the padded size"))
}

/// ATen's `constant_pad_nd`.
fn constant_pad(t: Tensor, pad: &[i64], value: f64) -> Result<Owned> {
    let nd = t.ndim() as usize;
    let k = pad.len() / 2;
    let mut crop = t.alias()?;
    let mut positive = false;
    for i in 0..k {
        let d = (nd - 1 - i) as i64;
        let (l, r) = pad_pair(pad, i);
        if l < 0 {
            let size = crop.get().sizes()[d as usize];
            crop = crop.get().narrow(d, -l, size + l)?;
        }
        if r < 0 {
            let size = crop.get().sizes()[d as usize];
            crop = crop.get().narrow(d, 0, size + r)?;
        }
        positive |= l > 0 || r > 0;
    }
    if !positive {
        return crop.get().clone_as(sys::TENSOR_PRESERVE_FORMAT);
    }
    let mut sizes = t.sizes().to_vec();
    for i in 0..k {
        let d = nd - 1 - i;
        let n = padded(sizes[d], pad_pair(pad, i))?;
        if n < 0 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("The input size {}, plus negative padding {} and {} resulted in a negative output size, which is invalid. Check dimension {d} of your input.", sizes[d], pad[2 * i], pad[2 * i + 1]),
            );
        }
        sizes[d] = n;
    }
    check_fill(value, t.dtype())?;
    let fmt = t.suggest_memory_format();
    let o = util::empty_strided(&sizes, &util::format_strides(&sizes, fmt)?, t.dtype())?;
    o.get().fill_f64(value)?;
    let mut inner = o.get().alias()?;
    for i in 0..k {
        let d = (nd - 1 - i) as i64;
        let (l, r) = pad_pair(pad, i);
        if l > 0 {
            let size = inner.get().sizes()[d as usize];
            inner = inner.get().narrow(d, l, size - l)?;
        }
        if r > 0 {
            let size = inner.get().sizes()[d as usize];
            inner = inner.get().narrow(d, 0, size - r)?;
        }
    }
    inner.get().copy_from(crop.get())?;
    Ok(o)
}

/// ATen's `_pad_circular` over the last `pad.len() / 2` dims (with or without a batch dim):
/// the input (cropped by negative pads) in the middle, then each padded dim's wrapped ends
/// copied from the output itself, innermost pair first.
fn circular_pad(t: Tensor, pad: &[i64]) -> Result<Owned> {
    let nd = t.ndim() as usize;
    let k = pad.len() / 2;
    let mut sizes = t.sizes().to_vec();
    for i in 0..k {
        let d = nd - 1 - i;
        let (l, r) = pad_pair(pad, i);
        let size = t.sizes()[d];
        sizes[d] = padded(size, (l, r))?;
        if l > size || r > size {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "Padding value causes wrapping around more than once.",
            );
        }
        if sizes[d] < 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "Negative padding value is resulting in an empty dimension",
            );
        }
    }
    let o = util::empty(&sizes, t.dtype())?;
    // ATen wraps from the output itself; a pad wider than the part of the input kept there
    // reads elements nothing wrote (uninitialised in ATen): zeros here.
    let defined = (0..k).all(|i| {
        let (l, r) = pad_pair(pad, i);
        let kept = t.sizes()[nd - 1 - i] + l.min(0) + r.min(0);
        kept >= l.max(0) && kept >= r.max(0)
    });
    if !defined {
        o.get().fill_i64(0)?;
    }
    let (mut dst, mut src) = (o.get().alias()?, t.alias()?);
    for i in 0..k {
        let d = nd - 1 - i;
        let (l, r) = pad_pair(pad, i);
        dst = dst
            .get()
            .slice(d as i64, l.max(0), sizes[d] - r.max(0), 1)?;
        src = src
            .get()
            .slice(d as i64, (-l).max(0), t.sizes()[d] - (-r).max(0), 1)?;
    }
    dst.get().copy_from(src.get())?;
    for i in 0..k {
        let d = (nd - 1 - i) as i64;
        let n = sizes[d as usize];
        let (l, r) = pad_pair(pad, i);
        if l > 0 {
            let from = o.get().slice(d, n - l - r.max(0), n - r.max(0), 1)?;
            o.get().slice(d, 0, l, 1)?.get().copy_from(from.get())?;
        }
        if r > 0 {
            let from = o.get().slice(d, l.max(0), l.max(0) + r, 1)?;
            o.get().slice(d, n - r, n, 1)?.get().copy_from(from.get())?;
        }
    }
    Ok(o)
}

/// ATen's reflection / replication pads: `padding::pad_shape_check`'s checks, then every
/// output element read from the input position its dims map to.
fn edge_pad(t: Tensor, pad: &[i64], reflect: bool) -> Result<Owned> {
    let nd = t.ndim() as usize;
    let k = pad.len() / 2;
    let batch = nd == k + 2;
    let sizes = t.sizes();
    if sizes.iter().skip(usize::from(batch)).any(|&s| s == 0) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("Expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {sizes:?}", k + 1, k + 2),
        );
    }
    if reflect {
        for i in 0..k {
            let d = nd - 1 - i;
            let (l, r) = pad_pair(pad, i);
            if !(l < sizes[d] && r < sizes[d]) {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!("Argument #{}: Padding size should be less than the corresponding input dimension, but got: padding ({l}, {r}) at dimension {d} of input {sizes:?}", 4 + 2 * i),
                );
            }
        }
    }
    let mut osizes = sizes.to_vec();
    for i in 0..k {
        let d = nd - 1 - i;
        osizes[d] = padded(sizes[d], pad_pair(pad, i))?;
    }
    if osizes[nd - k..].iter().any(|&s| s < 1) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "Calculated output sizes {:?} must be >= 1 in every padded dimension (input {:?})",
                &osizes[nd - k..],
                &sizes[nd - k..]
            ),
        );
    }
    // Which input index each output index of each dim reads (identity off the padded dims).
    let maps: Vec<Vec<i64>> = (0..nd)
        .map(|d| {
            if d < nd - k {
                return (0..osizes[d]).collect();
            }
            let (l, _) = pad_pair(pad, nd - 1 - d);
            let size = sizes[d];
            (0..osizes[d])
                .map(|j| edge_index(j, size, l, reflect))
                .collect()
        })
        .collect();
    if let Some(d) = (0..nd).find(|&d| maps[d].iter().any(|&i| !(0..sizes[d]).contains(&i))) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("padding {pad:?} reads outside dim {d} of input {sizes:?}"),
        );
    }
    let fmt = t.suggest_memory_format();
    let o = util::empty_strided(&osizes, &util::format_strides(&osizes, fmt)?, t.dtype())?;
    gather(t, o, &maps)
}

/// The input index ATen's `ReflectionPad::index` / `ReplicationPad::index` give output
/// index `j` of a dim of `size` with left pad `l` (negative pads crop).
fn edge_index(j: i64, size: i64, l: i64, reflect: bool) -> i64 {
    let offset = (-l).max(0) - l.max(0);
    let i = if j < l {
        if reflect {
            2 * l - j
        } else {
            l
        }
    } else if j < size + l {
        j
    } else if reflect {
        2 * (size + l - 1) - j
    } else {
        size + l - 1
    };
    i + offset
}

/// `o[p] = t[maps[0][p0], maps[1][p1], ...]` for every position `p` of `o` (just
/// allocated, `maps[d]` of `o`'s size `d`, each entry an index of `t`'s dim `d`).
fn gather(t: Tensor, mut o: Owned, maps: &[Vec<i64>]) -> Result<Owned> {
    // Each dim's input offsets, so a position's source is a sum of table entries.
    let tables: Vec<Vec<i64>> = maps
        .iter()
        .zip(t.strides())
        .map(|(m, &st)| m.iter().map(|&i| i * st).collect())
        .collect();
    let shape = o.get().sizes().to_vec();
    let ost = o.get().strides().to_vec();
    let nd = shape.len();
    super::dispatch_all!(t.dtype(), T => {
        let src = t.values::<T>()?;
        // SAFETY: o was just allocated by the caller (gather's contract): nothing else
        // reaches its storage.
        let dst = unsafe { o.values_mut::<T>() }?;
        let order = super::row_major(nd);
        let zeros = vec![0i64; nd];
        super::for_each_position(&shape, &order, [&ost, &zeros], |coord, [at, _]| {
            let from: i64 = coord.iter().zip(&tables).map(|(&c, tab)| tab[c as usize]).sum();
            dst[at as usize] = src[from as usize];
            Ok(())
        })?
    }, _ => return super::not_implemented("pad", t.dtype()));
    Ok(o)
}

// ------------------------------------------------------------------------------------------
// In-place ops

/// ATen's check of a fill value (a Python float) against the dtype it is converted to:
/// complex dtypes take any value (as their float part does).
fn check_fill(value: f64, dtype: i32) -> Result<()> {
    match dtype {
        C64 => check_scalar(value, sys::TENSOR_FLOAT32),
        C128 => Ok(()),
        d => check_scalar(value, d),
    }
}

/// `self.fill_(value)`: every element set to `value` converted to self's dtype, refused
/// (before writing anything) where ATen's checked conversion overflows: NaN or infinities
/// into an integer dtype, values out of an integer dtype's range or past a float dtype's
/// largest finite value (except into a one-element real float tensor, which ATen fills
/// unchecked). An expanded self is allowed (every element written the same). Inductor
/// generates `fill_` itself (no fallback with the default configs).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_fill__Scalar(self_: AtenTensorHandle, value: f64) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        util::require_cpu(t, "self")?;
        // ATen fills a one-element float tensor without the range check (its scalar_fill):
        // a value past the dtype's range becomes an infinity there.
        let unchecked = t.numel() == 1 && super::is_float(t.dtype());
        if !unchecked {
            check_fill(value, t.dtype())?;
        }
        t.fill_f64(value)
    })
}

/// Why an in-place metadata change is refused: a `tensor_t*` is the TensorImpl the model
/// holds, and libtensor's C API changes no TensorImpl's sizes, strides or storage.
const NO_RESTRIDE: &str =
    "libtensor's C API cannot change a tensor's sizes, strides or storage in place";

/// `self.resize_(size, memory_format)`: ATen's checks (non-negative sizes, no preserve
/// format, channels-last only for 4-D, channels-last-3d only for 5-D); succeeds when the
/// tensor already has the layout ATen would give it (same sizes and, with a memory format,
/// that format's strides): ATen then changes nothing. Any other resize is refused
/// (NO_RESTRIDE).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_resize_(
    self_: AtenTensorHandle,
    size: *const i64,
    size_len_: i64,
    memory_format: *mut i32,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let size = util::array(size, size_len_, "size")?;
        resize(t, size, optional(memory_format.cast_const()))
    })
}

/// `self.resize_as_(the_template, memory_format)`: `resize_` to the template's sizes (a
/// preserve memory format takes the template's suggested one).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_resize_as_(
    self_: AtenTensorHandle,
    the_template: AtenTensorHandle,
    memory_format: *mut i32,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let tpl = handle(the_template, "the_template")?;
        let fmt = optional(memory_format.cast_const()).map(|f| {
            if f == sys::TENSOR_PRESERVE_FORMAT {
                tpl.suggest_memory_format()
            } else {
                f
            }
        });
        resize(t, tpl.sizes(), fmt)
    })
}

fn resize(t: Tensor, size: &[i64], fmt: Option<i32>) -> Result<()> {
    if let Some(&s) = size.iter().find(|&&s| s < 0) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("Trying to create tensor with negative dimension {s}: {size:?}"),
        );
    }
    let want_strides = match fmt {
        None => None,
        Some(sys::TENSOR_PRESERVE_FORMAT) => {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "Unsupported memory format Preserve",
            )
        }
        Some(f) => {
            let rank = match f {
                sys::TENSOR_CHANNELS_LAST => Some(4),
                sys::TENSOR_CHANNELS_LAST_3D => Some(5),
                _ => None,
            };
            if rank.is_some_and(|r| r != size.len()) {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!(
                        "required rank {} tensor to use memory format {f}",
                        rank.unwrap_or(0)
                    ),
                );
            }
            Some(util::format_strides(size, f)?)
        }
    };
    let same = t.sizes() == size && want_strides.as_deref().is_none_or(|s| s == t.strides());
    if same {
        return Ok(());
    }
    err(
        sys::TENSOR_ERR_INVALID_ARGUMENT,
        format!(
            "resizing sizes {:?} strides {:?} to {size:?} (strides {:?}) is not supported: {NO_RESTRIDE}",
            t.sizes(),
            t.strides(),
            want_strides.unwrap_or_else(|| t.strides().to_vec())
        ),
    )
}

/// `self.set_(source)`: ATen's dtype check; succeeds when self already is a view of
/// source's storage with source's offset, sizes and strides (ATen then changes nothing);
/// anything else is refused (NO_RESTRIDE).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_set__source_Tensor(
    self_: AtenTensorHandle,
    source: AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let s = handle(source, "source")?;
        if t.dtype() != s.dtype() {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "Could not set tensor of type {} to a tensor of type {}",
                    util::dtype_name(t.dtype()),
                    util::dtype_name(s.dtype())
                ),
            );
        }
        let same = t.shares_storage(s)
            && t.storage_offset() == s.storage_offset()
            && t.sizes() == s.sizes()
            && t.strides() == s.strides();
        if same {
            return Ok(());
        }
        err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("set_ to another storage or layout is not supported: {NO_RESTRIDE}"),
        )
    })
}

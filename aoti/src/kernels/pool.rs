//! Pooling with ATen's CPU semantics: `max_pool2d_with_indices`, `max_pool3d_with_indices`,
//! `adaptive_max_pool2d`, `adaptive_max_pool3d`, `_adaptive_avg_pool2d`,
//! `_adaptive_avg_pool3d`, `avg_pool2d`, `avg_pool3d`.
//!
//! Every op is one driver (`pool`) over the input seen as [N, C, D, H, W] (a 2-d op has
//! D = 1, an unbatched input N = 1) read through its own strides, with per-dim windows
//! (`Win`) and a reduction (`Max`, `Avg`). The output is allocated with ATen's layout (what
//! `suggest_memory_format` gives, per op: see `out_layout`); when it is channels-last the
//! driver runs the channels as the inner loop, as ATen's channels-last kernels do.

use super::{spatial_param, Accumulate, AtenTensorHandle, Sum};
use crate::dispatch;
use crate::error::{err, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Tensor};

const I64: i32 = sys::TENSOR_INT64;

/// The dtypes ATen's CPU max pooling takes (`AT_DISPATCH_ALL_TYPES_AND2(BFloat16, Half)`).
const MAX_DTYPES: &[i32] = &[
    sys::TENSOR_UINT8,
    sys::TENSOR_INT8,
    sys::TENSOR_INT16,
    sys::TENSOR_INT32,
    sys::TENSOR_INT64,
    sys::TENSOR_FLOAT16,
    sys::TENSOR_BFLOAT16,
    sys::TENSOR_FLOAT32,
    sys::TENSOR_FLOAT64,
];
/// Adaptive pooling: the floating dtypes.
const FLOAT_DTYPES: &[i32] = &[
    sys::TENSOR_FLOAT16,
    sys::TENSOR_BFLOAT16,
    sys::TENSOR_FLOAT32,
    sys::TENSOR_FLOAT64,
];
/// avg_pool2d: the floating dtypes and int64.
const AVG2D_DTYPES: &[i32] = &[
    sys::TENSOR_INT64,
    sys::TENSOR_FLOAT16,
    sys::TENSOR_BFLOAT16,
    sys::TENSOR_FLOAT32,
    sys::TENSOR_FLOAT64,
];
/// avg_pool3d (`avg_pool3d_out_frame`): float32, float64, int64.
const AVG3D_DTYPES: &[i32] = &[sys::TENSOR_INT64, sys::TENSOR_FLOAT32, sys::TENSOR_FLOAT64];

fn check_dtype(x: Tensor, allowed: &[i32], op: &str) -> Result<i32> {
    util::require_cpu(x, "input")?;
    let d = x.dtype();
    if allowed.contains(&d) {
        return Ok(d);
    }
    let names: Vec<String> = allowed.iter().map(|&a| util::dtype_name(a)).collect();
    err(
        sys::TENSOR_ERR_DTYPE,
        format!(
            "{op}: {} is not supported ({})",
            util::dtype_name(d),
            names.join(", ")
        ),
    )
}

/// ATen's pooling checks on the input's rank and sizes: `sp + 1` (unbatched) or `sp + 2`
/// dims, every dim but the batch non-empty.
fn check_input(x: Tensor, sp: usize, op: &str) -> Result<()> {
    let s = x.sizes();
    if s.len() != sp + 1 && s.len() != sp + 2 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "{op}: expected a {}-D or {}-D (batched) input, got sizes {s:?}",
                sp + 1,
                sp + 2
            ),
        );
    }
    let first = usize::from(s.len() == sp + 2);
    if let Some(i) = (first..s.len()).find(|&i| s[i] == 0) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("{op}: expected input to have non-zero size for non-batch dimensions, but input has sizes {s:?} with dimension {i} being empty"),
        );
    }
    Ok(())
}

/// An `int[]` parameter that must fit a C `int` (ATen's `safe_downcast<int>`).
fn int_param(p: *const i64, n: i64, sp: usize, name: &str, op: &str) -> Result<Vec<i64>> {
    let v = spatial_param(p, n, sp, name)?;
    if v.iter().any(|&x| i32::try_from(x).is_err()) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{op}: {name} {v:?} does not fit a 32-bit int"),
        );
    }
    Ok(v)
}

/// A kernel, stride (empty: the kernel), padding and dilation, per spatial dim.
struct Params {
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
}

#[allow(clippy::too_many_arguments)]
fn params(
    sp: usize,
    op: &str,
    kernel: (*const i64, i64),
    stride: (*const i64, i64),
    padding: (*const i64, i64),
    dilation: Option<(*const i64, i64)>,
) -> Result<Params> {
    let kernel = int_param(kernel.0, kernel.1, sp, "kernel_size", op)?;
    let stride = if stride.1 == 0 {
        kernel.clone()
    } else {
        int_param(stride.0, stride.1, sp, "stride", op)?
    };
    let padding = int_param(padding.0, padding.1, sp, "padding", op)?;
    let dilation = match dilation {
        Some((p, n)) => int_param(p, n, sp, "dilation", op)?,
        None => vec![1; sp],
    };
    Ok(Params {
        kernel,
        stride,
        padding,
        dilation,
    })
}

/// `floor(a / b)` for `b != 0` (ATen's `div_rtn`).
fn div_floor(a: i64, b: i64) -> i64 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn overflow<T>(op: &str, what: &str) -> Result<T> {
    err(sys::TENSOR_ERR_OVERFLOW, format!("{op}: {what} overflows"))
}

/// ATen's `pooling_output_shape` (and its checks) for one spatial dim, then the
/// `pool2d_shape_check` / `pool3d_shape_check` conditions on the parameters and the result.
fn out_size(input: i64, p: &Params, d: usize, ceil: bool, op: &str) -> Result<i64> {
    let (k, s, pad, dil) = (p.kernel[d], p.stride[d], p.padding[d], p.dilation[d]);
    if s == 0 {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{op}: stride should not be zero"),
        );
    }
    if k <= 0 || s <= 0 || dil <= 0 {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!(
                "{op}: kernel size {:?}, stride {:?} and dilation {:?} should be greater than zero",
                p.kernel, p.stride, p.dilation
            ),
        );
    }
    if pad < 0 || pad > k / 2 {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{op}: pad should be non-negative and at most half of the kernel size, but got padding {:?} and kernel_size {:?}", p.padding, p.kernel),
        );
    }
    // Everything below is small: the parameters fit an i32, the input size a tensor's.
    let reach = dil * (k - 1) + 1;
    let num = input
        .checked_add(2 * pad)
        .and_then(|v| v.checked_sub(reach))
        .and_then(|v| v.checked_add(if ceil { s - 1 } else { 0 }));
    let Some(num) = num else {
        return overflow(op, "the output size");
    };
    let mut o = div_floor(num, s) + 1;
    // ceil mode: the last window must start inside the input or the left padding.
    if ceil && (o - 1) * s >= input + pad {
        o -= 1;
    }
    Ok(o)
}

fn check_out_sizes(x: Tensor, os: &[i64], op: &str) -> Result<()> {
    if os.iter().any(|&o| o < 1) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "{op}: given input size {:?}, the calculated output size {os:?} is too small",
                x.sizes()
            ),
        );
    }
    Ok(())
}

/// One window along one spatial dim: input positions `start, start + step, ... < end`
/// (`start <= end`, both inside the input); `padded` is its extent counting the padding
/// (avg_pool's `count_include_pad` divisor).
#[derive(Clone, Copy)]
struct Win {
    start: usize,
    end: usize,
    step: usize,
    padded: i64,
}

impl Win {
    fn new(start: i64, end: i64, step: i64, padded: i64) -> Win {
        let end = end.max(start);
        Win {
            start: start as usize,
            end: end as usize,
            step: step as usize,
            padded,
        }
    }

    fn len(self) -> i64 {
        (self.end - self.start) as i64
    }
}

/// Max pooling windows (`cpu_max_pool`): from `o * stride - pad`, `kernel` taps `dilation`
/// apart, the taps before the input skipped.
fn max_windows(input: i64, out: i64, k: i64, s: i64, pad: i64, dil: i64) -> Vec<Win> {
    (0..out)
        .map(|o| {
            let mut start = o * s - pad;
            let end = (start + (k - 1) * dil + 1).min(input);
            if start < 0 {
                start += (-start + dil - 1) / dil * dil; // the first tap at or after 0
            }
            Win::new(start, end, dil, 0)
        })
        .collect()
}

/// Average pooling windows (`cpu_avg_pool`): `kernel` positions from `o * stride - pad`,
/// clipped to the padded input for the divisor, then to the input.
fn avg_windows(input: i64, out: i64, k: i64, s: i64, pad: i64) -> Vec<Win> {
    (0..out)
        .map(|o| {
            let start = o * s - pad;
            let end = (start + k).min(input + pad);
            Win::new(start.max(0), end.min(input), 1, end - start)
        })
        .collect()
}

/// Adaptive windows: ATen's `start_index` / `end_index` (`AdaptivePooling.h`).
fn adaptive_windows(input: i64, out: i64, op: &str) -> Result<Vec<Win>> {
    if out
        .checked_add(1)
        .and_then(|o| o.checked_mul(input))
        .is_none()
    {
        return overflow(op, "the window arithmetic");
    }
    Ok((0..out)
        .map(|o| {
            let start = (o / out) * input + ((o % out) * input) / out;
            let end = 1 + ((o + 1) * input - 1) / out;
            Win::new(start, end, 1, end - start)
        })
        .collect())
}

/// Sizes and strides of a tensor seen as [N, C, D, H, W] (usize: the sizes of a live
/// tensor; a missing dim has size 1 and stride 0).
struct Dims5 {
    size: [usize; 5],
    stride: [usize; 5],
}

fn dims5(sizes: &[i64], strides: &[i64], sp: usize) -> Dims5 {
    let nd = sizes.len();
    let mut size = [1usize; 5];
    let mut stride = [0usize; 5];
    for k in 0..sp {
        size[4 - k] = sizes[nd - 1 - k] as usize;
        stride[4 - k] = strides[nd - 1 - k] as usize;
    }
    size[1] = sizes[nd - 1 - sp] as usize;
    stride[1] = strides[nd - 1 - sp] as usize;
    if nd == sp + 2 {
        size[0] = sizes[0] as usize;
        stride[0] = strides[0] as usize;
    }
    Dims5 { size, stride }
}

/// A reduction over one window of one channel.
trait Reduce<T>: Copy {
    type Acc: Copy;
    /// The accumulator before the first element; `first` is the window's first flat index.
    fn init(self, first: i64) -> Self::Acc;
    /// Takes element `v` at flat spatial index `at`.
    fn step(self, acc: &mut Self::Acc, v: T, at: i64);
    /// The output value and index of the window `w` (D, H, W) with accumulator `acc`.
    fn finish(self, acc: Self::Acc, w: [Win; 3]) -> (T, i64);
}

/// An element a max pooling takes: its smallest value (`-inf` for the floats).
trait Lowest: Element {
    const LOWEST: Self;
}

macro_rules! lowest {
    ($($t:ty = $v:expr;)*) => {$(
        impl Lowest for $t {
            const LOWEST: Self = $v;
        }
    )*};
}
lowest! {
    u8 = u8::MIN; i8 = i8::MIN; i16 = i16::MIN; i32 = i32::MIN; i64 = i64::MIN;
    u16 = u16::MIN; u32 = u32::MIN; u64 = u64::MIN;
    f32 = f32::NEG_INFINITY; f64 = f64::NEG_INFINITY;
    half::f16 = half::f16::NEG_INFINITY; half::bf16 = half::bf16::NEG_INFINITY;
    util::Bool = util::Bool(0);
}

/// Max with index: a larger value or a NaN takes over (so the last NaN wins), a tie keeps
/// the first; an empty window keeps `LOWEST` at the window's first index.
#[derive(Clone, Copy)]
struct Max;

impl<T: Lowest> Reduce<T> for Max {
    type Acc = (T, i64);
    fn init(self, first: i64) -> (T, i64) {
        (T::LOWEST, first)
    }
    fn step(self, acc: &mut (T, i64), v: T, at: i64) {
        #[allow(clippy::eq_op)] // v != v: NaN
        if v > acc.0 || v.partial_cmp(&v).is_none() {
            *acc = (v, at);
        }
    }
    fn finish(self, acc: (T, i64), _: [Win; 3]) -> (T, i64) {
        acc
    }
}

/// How an average divides its sum.
#[derive(Clone, Copy)]
enum Divide {
    /// avg_pool: one division by `divisor_override`, or the window's size counting the
    /// padding (`count_include_pad`) or not.
    Product {
        include_pad: bool,
        divisor: Option<i64>,
    },
    /// adaptive avg pool: by each dim's window length in turn (`sum / kh / kw`).
    EachDim,
}

/// Average in ATen's accumulation type (`elementwise`: in the element type, every sum and
/// division rounded to it, as ATen's `adaptive_avg_pool3d_out_frame` does); an empty window
/// is 0.
#[derive(Clone, Copy)]
struct Avg {
    divide: Divide,
    elementwise: bool,
}

impl<T: Accumulate> Reduce<T> for Avg {
    type Acc = T::Acc;
    fn init(self, _: i64) -> T::Acc {
        T::Acc::ZERO
    }
    fn step(self, acc: &mut T::Acc, v: T, _: i64) {
        *acc = acc.add(v.widen());
        if self.elementwise {
            *acc = T::narrow(*acc).widen();
        }
    }
    fn finish(self, acc: T::Acc, w: [Win; 3]) -> (T, i64) {
        if w.iter().any(|w| w.start >= w.end) {
            return (T::narrow(T::Acc::ZERO), 0);
        }
        let v = match self.divide {
            Divide::Product {
                include_pad,
                divisor,
            } => {
                let d = divisor.unwrap_or_else(|| {
                    w.iter()
                        .map(|w| if include_pad { w.padded } else { w.len() })
                        .product()
                });
                acc.div_i64(d)
            }
            // C++'s `Half / int` divides by the int converted to the element type.
            Divide::EachDim if self.elementwise => w.iter().fold(acc, |a, w| {
                T::narrow(a.div(T::from_f64(w.len() as f64).widen())).widen()
            }),
            Divide::EachDim => w.iter().fold(acc, |a, w| a.div_i64(w.len())),
        };
        (T::narrow(v), 0)
    }
}

/// Runs reduction `r` over every window of every channel of `x` (laid out as `xd`) into
/// `out` (and `idx`, same layout, for the max's indices) laid out as `od`; `wins` are the
/// windows along D, H, W (one per output position). `lanes`: channels innermost (the
/// channels-last order).
#[allow(clippy::too_many_arguments)]
fn pool<T: Copy, R: Reduce<T>>(
    r: R,
    x: &[T],
    xd: &Dims5,
    wins: &[Vec<Win>; 3],
    out: &mut [T],
    od: &Dims5,
    mut idx: Option<&mut [i64]>,
    lanes: bool,
) {
    let [n_n, n_c, _, in_h, in_w] = xd.size;
    let xs = xd.stride;
    let os = od.stride;
    let flat = |d: usize, h: usize, w: usize| ((d * in_h + h) * in_w + w) as i64;
    let mut store = |o: usize, (v, i): (T, i64)| {
        out[o] = v;
        if let Some(ix) = idx.as_deref_mut() {
            ix[o] = i;
        }
    };
    if !lanes {
        for n in 0..n_n {
            for c in 0..n_c {
                let xb = n * xs[0] + c * xs[1];
                let ob = n * os[0] + c * os[1];
                for (a, wd) in wins[0].iter().enumerate() {
                    for (b, wh) in wins[1].iter().enumerate() {
                        for (e, ww) in wins[2].iter().enumerate() {
                            let mut acc = r.init(flat(wd.start, wh.start, ww.start));
                            for id in (wd.start..wd.end).step_by(wd.step) {
                                for ih in (wh.start..wh.end).step_by(wh.step) {
                                    let row = xb + id * xs[2] + ih * xs[3];
                                    for iw in (ww.start..ww.end).step_by(ww.step) {
                                        r.step(&mut acc, x[row + iw * xs[4]], flat(id, ih, iw));
                                    }
                                }
                            }
                            let o = ob + a * os[2] + b * os[3] + e * os[4];
                            store(o, r.finish(acc, [*wd, *wh, *ww]));
                        }
                    }
                }
            }
        }
        return;
    }
    let mut accs = vec![r.init(0); n_c];
    for n in 0..n_n {
        for (a, wd) in wins[0].iter().enumerate() {
            for (b, wh) in wins[1].iter().enumerate() {
                for (e, ww) in wins[2].iter().enumerate() {
                    accs.fill(r.init(flat(wd.start, wh.start, ww.start)));
                    for id in (wd.start..wd.end).step_by(wd.step) {
                        for ih in (wh.start..wh.end).step_by(wh.step) {
                            for iw in (ww.start..ww.end).step_by(ww.step) {
                                let base = n * xs[0] + id * xs[2] + ih * xs[3] + iw * xs[4];
                                let at = flat(id, ih, iw);
                                for (c, acc) in accs.iter_mut().enumerate() {
                                    r.step(acc, x[base + c * xs[1]], at);
                                }
                            }
                        }
                    }
                    let ob = n * os[0] + a * os[2] + b * os[3] + e * os[4];
                    for (c, &acc) in accs.iter().enumerate() {
                        store(ob + c * os[1], r.finish(acc, [*wd, *wh, *ww]));
                    }
                }
            }
        }
    }
}

/// The layout of a pooling output.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Contiguous,
    /// channels-last(-3d) strides of the output's sizes.
    ChannelsLast,
    /// max_pool3d of a 4-D input that is channels-last-3d as [1, C, D, H, W] but not
    /// contiguous: channels-last-3d strides of that 5-D shape, its first dim dropped.
    ChannelsLastUnbatched,
}

/// The output layout ATen's CPU kernel gives for `x`: 2-d ops (and max_pool3d) follow
/// `suggest_memory_format`; adaptive 3-d pooling and avg_pool3d are always contiguous
/// (measured against torch 2.15 by aoti/tests/ops_pool.py).
fn out_layout(x: Tensor, sp: usize, follows_format: bool) -> Result<Layout> {
    if !follows_format {
        return Ok(Layout::Contiguous);
    }
    let nd = x.sizes().len();
    let fmt = if sp == 2 {
        sys::TENSOR_CHANNELS_LAST
    } else {
        sys::TENSOR_CHANNELS_LAST_3D
    };
    if nd == sp + 2 {
        return Ok(if x.suggest_memory_format() == fmt {
            Layout::ChannelsLast
        } else {
            Layout::Contiguous
        });
    }
    if sp == 3 {
        // DilatedMaxPool3d's work-around: x.unsqueeze(0) that is channels-last-3d only.
        let (s, t) = (x.sizes(), x.strides());
        let mut s5 = vec![1];
        s5.extend_from_slice(s);
        let mut t5 = vec![s[0] * t[0]];
        t5.extend_from_slice(t);
        let v = x.as_strided(&s5, &t5, x.storage_offset())?;
        let v = v.get();
        if !v.is_contiguous(sys::TENSOR_CONTIGUOUS_FORMAT) && v.is_contiguous(fmt) {
            return Ok(Layout::ChannelsLastUnbatched);
        }
    }
    Ok(Layout::Contiguous)
}

/// The output's strides for `layout` (c10's format strides, from libtensor).
fn out_strides(os: &[i64], layout: Layout) -> Result<Vec<i64>> {
    match layout {
        Layout::Contiguous => util::contiguous_strides(os),
        Layout::ChannelsLast => util::format_strides(
            os,
            if os.len() == 5 {
                sys::TENSOR_CHANNELS_LAST_3D
            } else {
                sys::TENSOR_CHANNELS_LAST
            },
        ),
        // Channels-last-3d of [1, C, D, H, W] with the 1 dropped.
        Layout::ChannelsLastUnbatched => {
            let mut s5 = vec![1];
            s5.extend_from_slice(os);
            Ok(util::format_strides(&s5, sys::TENSOR_CHANNELS_LAST_3D)?[1..].to_vec())
        }
    }
}

/// ATen's channels-last max pooling keeps indices in the integer type of the element's
/// size (`vec::int_same_size_t<opmath_t>`) and refuses an input whose D*H*W it exceeds.
fn check_cl_index_range(x: Tensor, sp: usize, dtype: i32, op: &str) -> Result<()> {
    let plane: i64 = x.sizes()[x.sizes().len() - sp..].iter().product();
    let max = match dtype {
        sys::TENSOR_UINT8 | sys::TENSOR_INT8 => i8::MAX as i64,
        sys::TENSOR_INT16 => i16::MAX as i64,
        sys::TENSOR_INT64 | sys::TENSOR_FLOAT64 => i64::MAX,
        _ => i32::MAX as i64,
    };
    if plane > max {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("{op}: a channels-last {} input's spatial size {plane} exceeds {max} (ATen's index type for it)", util::dtype_name(dtype)),
        );
    }
    Ok(())
}

/// What one pooling call computes.
#[derive(Clone, Copy)]
enum Kind {
    Max,
    Avg(Avg),
}

/// Allocates the outputs (values in `x`'s dtype, and int64 indices for a max), runs the
/// pooling and writes the handles.
#[allow(clippy::too_many_arguments)]
fn run(
    x: Tensor,
    sp: usize,
    dtype: i32,
    os: &[i64],
    wins: [Vec<Win>; 3],
    layout: Layout,
    kind: Kind,
    ret0: &mut AtenTensorHandle,
    ret1: Option<&mut AtenTensorHandle>,
) -> Result<()> {
    let ost = out_strides(os, layout)?;
    let mut values = util::empty_strided(os, &ost, dtype)?;
    let mut indices = match (kind, &ret1) {
        (Kind::Max, Some(_)) => Some(util::empty_strided(os, &ost, I64)?),
        _ => None,
    };
    let xd = dims5(x.sizes(), x.strides(), sp);
    let od = dims5(os, &ost, sp);
    let lanes = layout != Layout::Contiguous;
    if values.get().numel() > 0 {
        dispatch!(dtype, T => {
            let xv = x.values::<T>()?;
            // SAFETY: `values` was just allocated by `empty`: nothing else reaches its
            // storage while this slice lives.
            let ov = unsafe { values.values_mut::<T>() }?;
            let iv = match indices.as_mut() {
                // SAFETY: as for `values`: `indices` was just allocated and is not shared.
                Some(i) => Some(unsafe { i.values_mut::<i64>() }?),
                None => None,
            };
            match kind {
                Kind::Max => pool(Max, xv, &xd, &wins, ov, &od, iv, lanes),
                Kind::Avg(a) => pool(a, xv, &xd, &wins, ov, &od, iv, lanes),
            }
        }, _ => return err(sys::TENSOR_ERR_DTYPE, format!("{} is not a real dtype", util::dtype_name(dtype))));
    }
    *ret0 = values.into_raw();
    if let (Some(r1), Some(i)) = (ret1, indices) {
        *r1 = i.into_raw();
    }
    Ok(())
}

/// The output sizes: the input's leading (batch, channel) dims, then `spatial`.
fn out_sizes(x: Tensor, sp: usize, spatial: &[i64]) -> Vec<i64> {
    let s = x.sizes();
    let mut os = s[..s.len() - sp].to_vec();
    os.extend_from_slice(spatial);
    os
}

/// The spatial input sizes as [D, H, W] (D = 1 for a 2-d op).
fn in_dhw(x: Tensor, sp: usize) -> [i64; 3] {
    let s = x.sizes();
    let mut r = [1i64; 3];
    r[3 - sp..].copy_from_slice(&s[s.len() - sp..]);
    r
}

/// The windows of every spatial dim, [D, H, W] (a 2-d op's D: the one position 0).
fn windows_3(sp: usize, per_dim: impl Fn(usize) -> Result<Vec<Win>>) -> Result<[Vec<Win>; 3]> {
    let mut w = [
        vec![Win::new(0, 1, 1, 1)],
        vec![Win::new(0, 1, 1, 1)],
        vec![],
    ];
    for (k, slot) in w.iter_mut().skip(3 - sp).enumerate() {
        *slot = per_dim(k)?;
    }
    Ok(w)
}

#[allow(clippy::too_many_arguments)]
fn max_pool(
    op: &str,
    sp: usize,
    input: AtenTensorHandle,
    kernel: (*const i64, i64),
    stride: (*const i64, i64),
    padding: (*const i64, i64),
    dilation: (*const i64, i64),
    ceil_mode: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> Result<()> {
    let x = handle(input, "self")?;
    let r0 = out(ret0, "ret0")?;
    let r1 = out(ret1, "ret1")?;
    let dtype = check_dtype(x, MAX_DTYPES, op)?;
    let p = params(sp, op, kernel, stride, padding, Some(dilation))?;
    check_input(x, sp, op)?;
    let dhw = in_dhw(x, sp);
    let spatial = (0..sp)
        .map(|d| out_size(dhw[3 - sp + d], &p, d, ceil_mode != 0, op))
        .collect::<Result<Vec<i64>>>()?;
    check_out_sizes(x, &spatial, op)?;
    let layout = out_layout(x, sp, true)?;
    if layout != Layout::Contiguous {
        check_cl_index_range(x, sp, dtype, op)?;
    }
    let wins = windows_3(sp, |d| {
        Ok(max_windows(
            dhw[3 - sp + d],
            spatial[d],
            p.kernel[d],
            p.stride[d],
            p.padding[d],
            p.dilation[d],
        ))
    })?;
    let os = out_sizes(x, sp, &spatial);
    run(x, sp, dtype, &os, wins, layout, Kind::Max, r0, Some(r1))
}

/// Exports `max_pool2d_with_indices` / `max_pool3d_with_indices` (`$sp` spatial dims).
macro_rules! export_max_pool {
    ($($name:ident: $sp:expr;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(
            self_: AtenTensorHandle,
            kernel_size: *const i64,
            kernel_size_len_: i64,
            stride: *const i64,
            stride_len_: i64,
            padding: *const i64,
            padding_len_: i64,
            dilation: *const i64,
            dilation_len_: i64,
            ceil_mode: i32,
            ret0: *mut AtenTensorHandle,
            ret1: *mut AtenTensorHandle,
        ) -> i32 {
            let op = stringify!($name);
            shim(op, || {
                max_pool(
                    op,
                    $sp,
                    self_,
                    (kernel_size, kernel_size_len_),
                    (stride, stride_len_),
                    (padding, padding_len_),
                    (dilation, dilation_len_),
                    ceil_mode,
                    ret0,
                    ret1,
                )
            })
        }
    )*};
}

export_max_pool! {
    aoti_torch_cpu_max_pool2d_with_indices: 2;
    aoti_torch_cpu_max_pool3d_with_indices: 3;
}

#[allow(clippy::too_many_arguments)]
fn avg_pool(
    op: &str,
    sp: usize,
    input: AtenTensorHandle,
    kernel: (*const i64, i64),
    stride: (*const i64, i64),
    padding: (*const i64, i64),
    ceil_mode: i32,
    count_include_pad: i32,
    divisor_override: *mut i64,
    ret0: *mut AtenTensorHandle,
) -> Result<()> {
    let x = handle(input, "self")?;
    let r0 = out(ret0, "ret0")?;
    let dtype = check_dtype(x, if sp == 2 { AVG2D_DTYPES } else { AVG3D_DTYPES }, op)?;
    let p = params(sp, op, kernel, stride, padding, None)?;
    let divisor = if divisor_override.is_null() {
        None
    } else {
        // SAFETY: divisor_override is non-NULL (checked above); c_shim_cpu.h passes an
        // optional int (`int?`) as a pointer to one readable int64, live for the call.
        Some(unsafe { divisor_override.read() })
    };
    if divisor == Some(0) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{op}: divisor must be not zero"),
        );
    }
    check_input(x, sp, op)?;
    let dhw = in_dhw(x, sp);
    if sp == 3 && (0..3).any(|d| dhw[d] < p.kernel[d]) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "{op}: input image {:?} smaller than kernel size {:?}",
                &dhw, p.kernel
            ),
        );
    }
    let spatial = (0..sp)
        .map(|d| out_size(dhw[3 - sp + d], &p, d, ceil_mode != 0, op))
        .collect::<Result<Vec<i64>>>()?;
    check_out_sizes(x, &spatial, op)?;
    let layout = out_layout(x, sp, sp == 2)?;
    let wins = windows_3(sp, |d| {
        Ok(avg_windows(
            dhw[3 - sp + d],
            spatial[d],
            p.kernel[d],
            p.stride[d],
            p.padding[d],
        ))
    })?;
    let os = out_sizes(x, sp, &spatial);
    let kind = Kind::Avg(Avg {
        divide: Divide::Product {
            include_pad: count_include_pad != 0,
            divisor,
        },
        elementwise: false,
    });
    run(x, sp, dtype, &os, wins, layout, kind, r0, None)
}

/// Exports `avg_pool2d` / `avg_pool3d` (`$sp` spatial dims).
macro_rules! export_avg_pool {
    ($($name:ident: $sp:expr;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(
            self_: AtenTensorHandle,
            kernel_size: *const i64,
            kernel_size_len_: i64,
            stride: *const i64,
            stride_len_: i64,
            padding: *const i64,
            padding_len_: i64,
            ceil_mode: i32,
            count_include_pad: i32,
            divisor_override: *mut i64,
            ret0: *mut AtenTensorHandle,
        ) -> i32 {
            let op = stringify!($name);
            shim(op, || {
                avg_pool(
                    op,
                    $sp,
                    self_,
                    (kernel_size, kernel_size_len_),
                    (stride, stride_len_),
                    (padding, padding_len_),
                    ceil_mode,
                    count_include_pad,
                    divisor_override,
                    ret0,
                )
            })
        }
    )*};
}

export_avg_pool! {
    aoti_torch_cpu_avg_pool2d: 2;
    aoti_torch_cpu_avg_pool3d: 3;
}

/// The adaptive ops: `kind` Max (values and indices) or the average.
fn adaptive(
    op: &str,
    sp: usize,
    input: AtenTensorHandle,
    output_size: (*const i64, i64),
    kind: Kind,
    ret0: *mut AtenTensorHandle,
    ret1: Option<*mut AtenTensorHandle>,
) -> Result<()> {
    let x = handle(input, "self")?;
    let r0 = out(ret0, "ret0")?;
    let r1 = match ret1 {
        Some(p) => Some(out(p, "ret1")?),
        None => None,
    };
    let dtype = check_dtype(x, FLOAT_DTYPES, op)?;
    let size = util::array(output_size.0, output_size.1, "output_size")?;
    if size.len() != sp {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{op}: output_size must have {sp} values, got {size:?}"),
        );
    }
    if size.iter().any(|&s| s < 0) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!(
                "{op}: elements of output_size must be greater than or equal to 0, got {size:?}"
            ),
        );
    }
    check_input(x, sp, op)?;
    let dhw = in_dhw(x, sp);
    let wins = windows_3(sp, |d| adaptive_windows(dhw[3 - sp + d], size[d], op))?;
    let layout = out_layout(x, sp, sp == 2)?;
    let os = out_sizes(x, sp, size);
    run(x, sp, dtype, &os, wins, layout, kind, r0, r1)
}

/// Exports `adaptive_max_pool2d` / `adaptive_max_pool3d` (`$sp` spatial dims).
macro_rules! export_adaptive_max {
    ($($name:ident: $sp:expr;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(
            self_: AtenTensorHandle,
            output_size: *const i64,
            output_size_len_: i64,
            ret0: *mut AtenTensorHandle,
            ret1: *mut AtenTensorHandle,
        ) -> i32 {
            let op = stringify!($name);
            shim(op, || {
                let size = (output_size, output_size_len_);
                adaptive(op, $sp, self_, size, Kind::Max, ret0, Some(ret1))
            })
        }
    )*};
}

export_adaptive_max! {
    aoti_torch_cpu_adaptive_max_pool2d: 2;
    aoti_torch_cpu_adaptive_max_pool3d: 3;
}

/// Exports `_adaptive_avg_pool2d` / `_adaptive_avg_pool3d` (`$sp` spatial dims; the 3-d
/// one computes in the element type, as ATen's `adaptive_avg_pool3d_out_frame`).
macro_rules! export_adaptive_avg {
    ($($name:ident: $sp:expr;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(
            self_: AtenTensorHandle,
            output_size: *const i64,
            output_size_len_: i64,
            ret0: *mut AtenTensorHandle,
        ) -> i32 {
            let op = stringify!($name);
            shim(op, || {
                let size = (output_size, output_size_len_);
                let kind = Kind::Avg(Avg {
                    divide: Divide::EachDim,
                    elementwise: $sp == 3,
                });
                adaptive(op, $sp, self_, size, kind, ret0, None)
            })
        }
    )*};
}

export_adaptive_avg! {
    aoti_torch_cpu__adaptive_avg_pool2d: 2;
    aoti_torch_cpu__adaptive_avg_pool3d: 3;
}

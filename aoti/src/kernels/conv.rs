//! Convolution (`convolution`: 1-, 2-, 3-D, groups, stride, padding, dilation; not
//! transposed), output strides as ATen's: a direct kernel for 2-D depthwise convolutions,
//! a GEMM on the input for pointwise (1 x 1) ones, im2col + GEMM for the rest; on the
//! model's OpenMP threads.

use super::gemm::{gemm_any, gemm_serial, strided, Mat};
use super::parallel::{self, Shared};
use super::vmath;
use super::{
    as_f32, contiguous, expect_sizes, same_dtype, spatial_param, AtenTensorHandle, BF16, F16, F32,
};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

/// Whether ATen's CPU convolution would take its oneDNN backend (`use_mkldnn` in
/// Convolution.cpp, for float inputs, with one thread: its `get_num_threads() > 1` term is
/// taken as false).
fn conv_uses_mkldnn(xs: &[i64], ws: &[i64], stride: &[i64], dilation: &[i64], groups: i64) -> bool {
    let strided = stride.iter().any(|&s| s != 1);
    let dilated = dilation.iter().any(|&d| d != 1);
    let n = ws.len();
    (strided || dilated || xs[0] >= 16 || ws[n - 1] != 1 || ws[n - 2] != 1)
        && (groups > 1
            || (ws[n - 1] > 3 && ws[n - 2] > 3)
            || xs[0] > 1
            || xs[0] * xs[1] * xs[2] * xs[3] > 20480)
}

/// The output strides ATen's CPU convolution gives (c10's format strides, from libtensor).
/// 4-D: channels-last when the input or the weight suggests channels-last (both its oneDNN
/// and its native path). 3-D (conv1d): channels-last of the 4-D view ATen makes (a size-1
/// dim inserted at 2), then that dim dropped, when the 4-D view of the weight suggests it; a
/// 3-D input never suggests it (measured against torch 2.15 by aoti/tests/ops_core.py).
/// 5-D: channels-last-3d when either suggests it and the oneDNN path is taken (the native
/// 3-D path returns contiguous). Else contiguous.
fn conv_out_strides(
    x: Tensor,
    w: Tensor,
    os: &[i64],
    stride: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Vec<i64>> {
    let suggests = |t: Tensor, fmt: i32| t.suggest_memory_format() == fmt;
    let (cl, cl3d) = (sys::TENSOR_CHANNELS_LAST, sys::TENSOR_CHANNELS_LAST_3D);
    let contiguous = sys::TENSOR_CONTIGUOUS_FORMAT;
    match os.len() {
        4 => {
            let fmt = if suggests(x, cl) || suggests(w, cl) {
                cl
            } else {
                contiguous
            };
            util::format_strides(os, fmt)
        }
        3 => {
            let (sz, st) = (w.sizes(), w.strides());
            let s4 = [sz[0], sz[1], 1, sz[2]];
            let t4 = [st[0], st[1], st[2] * sz[2].max(1), st[2]];
            let w4 = w.as_strided(&s4, &t4, w.storage_offset())?;
            let fmt = if suggests(w4.get(), cl) {
                cl
            } else {
                contiguous
            };
            let st4 = util::format_strides(&[os[0], os[1], 1, os[2]], fmt)?;
            Ok(vec![st4[0], st4[1], st4[3]])
        }
        5 => {
            let fmt = if (suggests(x, cl3d) || suggests(w, cl3d))
                && conv_uses_mkldnn(x.sizes(), w.sizes(), stride, dilation, groups)
            {
                cl3d
            } else {
                contiguous
            };
            util::format_strides(os, fmt)
        }
        _ => util::contiguous_strides(os),
    }
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_convolution(
    input: AtenTensorHandle,
    weight: AtenTensorHandle,
    bias: *mut AtenTensorHandle,
    stride: *const i64,
    stride_len_: i64,
    padding: *const i64,
    padding_len_: i64,
    dilation: *const i64,
    dilation_len_: i64,
    transposed: i32,
    output_padding: *const i64,
    output_padding_len_: i64,
    groups: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let x = handle(input, "input")?;
        let w = handle(weight, "weight")?;
        let b = util::optional_handle(bias, "bias");
        let r = out(ret0, "ret0")?;
        if transposed != 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "transposed convolution is not implemented",
            );
        }
        let _ = (output_padding, output_padding_len_);
        let nd = x.ndim() as usize;
        if !(3..=5).contains(&nd) {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("expected a 3-D, 4-D or 5-D input, got {:?}", x.sizes()),
            );
        }
        let sp = nd - 2;
        let stride = spatial_param(stride, stride_len_, sp, "stride")?;
        let padding = spatial_param(padding, padding_len_, sp, "padding")?;
        let dilation = spatial_param(dilation, dilation_len_, sp, "dilation")?;
        let result = convolution(x, w, b, &stride, &padding, &dilation, groups, false)?;
        *r = result.into_raw();
        Ok(())
    })
}

/// A (non-transposed) convolution of `x` by `w` (+ `b`), checked as ATen checks it, into a
/// new output laid out as ATen's CPU convolution lays it out, or, with `channels_last`,
/// channels-last (-3d) for a 4-D (5-D) input: the layout ATen's oneDNN kernels give when the
/// weight is a packed oneDNN one (`mkldnn::_convolution_pointwise`).
pub(super) fn convolution(
    x: Tensor,
    w: Tensor,
    b: Option<Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    channels_last: bool,
) -> Result<Owned> {
    let mut ts = vec![(x, "input"), (w, "weight")];
    if let Some(b) = b {
        ts.push((b, "bias"));
    }
    let dtype = same_dtype(&ts)?;
    let xs = x.sizes().to_vec();
    let ws = w.sizes().to_vec();
    let nd = xs.len();
    if !(3..=5).contains(&nd) || ws.len() != nd {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("expected a 3-D, 4-D or 5-D input and a weight of the same rank, got input {xs:?} and weight {ws:?}"),
        );
    }
    let sp = nd - 2;
    if groups < 1 || xs[1] != ws[1] * groups || ws[0] % groups != 0 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("input {xs:?} with {groups} groups does not match weight {ws:?} (input channels must be weight.size(1) * groups, output channels divisible by groups)"),
        );
    }
    if stride.iter().any(|&s| s < 1)
        || dilation.iter().any(|&d| d < 1)
        || padding.iter().any(|&p| p < 0)
    {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("stride {stride:?} and dilation {dilation:?} must be >= 1, padding {padding:?} >= 0"),
        );
    }
    let mut os = vec![xs[0], ws[0]];
    for d in 0..sp {
        let eff = dilation[d] * (ws[2 + d] - 1) + 1;
        let o = (xs[2 + d] + 2 * padding[d] - eff) / stride[d] + 1;
        if xs[2 + d] + 2 * padding[d] < eff {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("input {xs:?} padded by {padding:?} is smaller than the dilated kernel {ws:?} (dilation {dilation:?})"),
            );
        }
        os.push(o);
    }
    if let Some(b) = b {
        expect_sizes(b, &[ws[0]], "bias")?;
    }
    let ost = if channels_last && nd > 3 {
        let fmt = if nd == 4 {
            sys::TENSOR_CHANNELS_LAST
        } else {
            sys::TENSOR_CHANNELS_LAST_3D
        };
        util::format_strides(&os, fmt)?
    } else {
        conv_out_strides(x, w, &os, stride, dilation, groups)?
    };
    let mut result = util::empty_strided(&os, &ost, dtype)?;
    if dtype == BF16 || dtype == F16 {
        let (x32, w32) = (as_f32(x)?, as_f32(w)?);
        let b32 = match b {
            Some(b) => Some(as_f32(b)?),
            None => None,
        };
        let mut o32 = util::empty_strided(&os, &ost, F32)?;
        conv_f::<f32>(
            &mut o32,
            x32.get(),
            w32.get(),
            b32.as_ref().map(|b| b.get()),
            stride,
            padding,
            dilation,
            groups,
        )?;
        result.get().copy_from(o32.get())?;
    } else if dtype == F32 {
        conv_f::<f32>(&mut result, x, w, b, stride, padding, dilation, groups)?;
    } else {
        conv_f::<f64>(&mut result, x, w, b, stride, padding, dilation, groups)?;
    }
    Ok(result)
}

/// The element types the convolution computes in (float32; float64), with the one inner
/// loop the direct kernels share, `acc[i] += w * x[i]`, compiled for the widest vector ISA
/// this CPU has (checked once per call through std's cached feature detection).
pub(super) trait ConvFloat:
    Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    fn axpy(acc: &mut [Self], w: Self, x: &[Self]);
    /// `acc[i] += w[i] * x[i]`.
    fn fma(acc: &mut [Self], w: &[Self], x: &[Self]);
    /// One output row of a channels-last depthwise convolution by a kernel of this type's
    /// own (float32 in vectors of this CPU's `vmath::Isa`: `dw_row_f32`), or false: the caller
    /// runs the generic loop.
    fn depthwise_row(_row: &mut DwRow<'_, Self>) -> bool {
        false
    }
}

/// `$name` for each ISA: the body compiled with AVX-512F, with AVX2 + FMA, and plain,
/// picked at run time.
macro_rules! multiversion {
    ($name:ident, $v512:ident, $v2:ident, ($($arg:ident: $ty:ty),*), $body:block) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        fn $v512($($arg: $ty),*) $body
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $v2($($arg: $ty),*) $body
        fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F (checked just above), all the
                    // function's target features ask.
                    return unsafe { $v512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has AVX2 and FMA (checked just above).
                    return unsafe { $v2($($arg),*) };
                }
            }
            $body
        }
    };
}

macro_rules! conv_float {
    ($($t:ty, $axpy:ident, $axpy512:ident, $axpy2:ident, $fma:ident, $fma512:ident, $fma2:ident;)*) => {$(
        multiversion!($axpy, $axpy512, $axpy2, (acc: &mut [$t], w: $t, x: &[$t]), {
            for (a, &v) in acc.iter_mut().zip(x) {
                *a += w * v;
            }
        });
        multiversion!($fma, $fma512, $fma2, (acc: &mut [$t], w: &[$t], x: &[$t]), {
            for ((a, &u), &v) in acc.iter_mut().zip(w).zip(x) {
                *a += u * v;
            }
        });
    )*};
}

conv_float! {
    f32, axpy_f32, axpy_f32_avx512, axpy_f32_avx2, fma_f32, fma_f32_avx512, fma_f32_avx2;
    f64, axpy_f64, axpy_f64_avx512, axpy_f64_avx2, fma_f64, fma_f64_avx512, fma_f64_avx2;
}

impl ConvFloat for f32 {
    fn axpy(acc: &mut [f32], w: f32, x: &[f32]) {
        axpy_f32(acc, w, x)
    }
    fn fma(acc: &mut [f32], w: &[f32], x: &[f32]) {
        fma_f32(acc, w, x)
    }
    fn depthwise_row(row: &mut DwRow<'_, f32>) -> bool {
        match vmath::Isa::best() {
            Some(isa) => {
                dw_row_f32(isa, row);
                true
            }
            None => false,
        }
    }
}

impl ConvFloat for f64 {
    fn axpy(acc: &mut [f64], w: f64, x: &[f64]) {
        axpy_f64(acc, w, x)
    }
    fn fma(acc: &mut [f64], w: &[f64], x: &[f64]) {
        fma_f64(acc, w, x)
    }
}

thread_local! {
    /// The im2col buffer of this thread's convolutions, kept between calls (a model calls
    /// the same shapes every run: no allocation, no page faults, no zeroing per call).
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` over `n` elements of `T` (float32 / float64) of this thread's scratch buffer. The
/// contents are whatever the last call left: `f` writes every element before reading it.
/// A nested call (none today) gets a fresh buffer.
fn with_scratch<T: ConvFloat, R>(n: usize, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
    let words = n
        .checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(crate::error::Error {
            status: sys::TENSOR_ERR_OVERFLOW,
            msg: format!("im2col buffer of {n} elements overflows"),
        })?
        .div_ceil(8);
    SCRATCH.with(|cell| {
        let mut own = Vec::new();
        let mut guard = cell.try_borrow_mut();
        let v = match guard.as_mut() {
            Ok(v) => &mut **v,
            Err(_) => &mut own,
        };
        if v.len() < words {
            v.resize(words, 0);
        }
        // SAFETY: v holds at least words * 8 >= n * size_of::<T>() initialised bytes, 8-byte
        // aligned (a Vec<u64>), and T is f32 or f64 (ConvFloat), for which every bit
        // pattern is a value and whose alignment is at most 8; the slice borrows v
        // mutably for f's call only.
        let buf = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<T>(), n) };
        Ok(f(buf))
    })
}

/// The convolution in `T` (the dtype of every tensor here), into `o`, the output just
/// allocated (`empty`) and dense (contiguous or channels-last), so that its flattened
/// spatial index has one stride (its last dim's). Three ways, by shape:
/// - 2-D depthwise (one input channel per group): a direct kernel, each (image, output
///   channel) plane a task on the model's OpenMP threads;
/// - 1 x 1 kernel, stride 1, no padding, over an input whose spatial dims flatten to one
///   stride: one GEMM per image and group straight on the input (no im2col copy);
/// - else im2col (its rows filled in parallel) + one GEMM per image and group.
fn conv_f<T: ConvFloat>(
    o: &mut Owned,
    x: Tensor,
    w: Tensor,
    b: Option<Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<()> {
    let (xs, xst) = (x.sizes().to_vec(), x.strides().to_vec());
    let (os, ost) = (o.get().sizes().to_vec(), o.get().strides().to_vec());
    let ws = w.sizes().to_vec();
    let cin_g = ws[1] as usize;
    let cout_g = (ws[0] / groups) as usize;
    let ksz: Vec<usize> = ws[2..].iter().map(|&k| k as usize).collect();
    let kvol: usize = ksz.iter().product();
    let osp: Vec<usize> = os[2..].iter().map(|&s| s as usize).collect();
    let p: usize = osp.iter().product();
    let kk = cin_g * kvol;
    if p == 0 || os[0] == 0 || os[1] == 0 {
        return Ok(());
    }
    // Every element the input's layout reaches.
    let xv = x.values::<T>()?;
    let bc = match b {
        Some(b) => Some(contiguous(b)?),
        None => None,
    };
    let bv = match &bc {
        Some(bc) => Some(bc.get().values::<T>()?),
        None => None,
    };
    // SAFETY: o is the output the caller has just allocated with `empty`: its storage is
    // reachable from nothing but o, and nothing else runs on it during this call.
    let ov = unsafe { o.values_mut::<T>() }?;
    let geo = Geometry {
        xs: &xs,
        xst: &xst,
        osp: &osp,
        ksz: &ksz,
        stride,
        padding,
        dilation,
    };
    let nd = xs.len();
    let pointwise = kvol == 1
        && stride.iter().all(|&s| s == 1)
        && padding.iter().all(|&q| q == 0)
        && (2..nd - 1).all(|d| xst[d] == xs[d + 1] * xst[d + 1]);
    if nd == 4 && !pointwise && nhwc(&xs, &xst) && nhwc(&os, &ost) {
        // Channels-last input and output (Inductor's layout for the convolutions of a CNN):
        // the weight in (kh, kw, ci) order, i.e. channels-last too.
        let wl = if w.is_contiguous(sys::TENSOR_CHANNELS_LAST) && nhwc(&ws, w.strides()) {
            None
        } else {
            Some(w.contiguous(sys::TENSOR_CHANNELS_LAST)?)
        };
        let wv = match &wl {
            Some(wl) => wl.get().values::<T>()?,
            None => w.values::<T>()?,
        };
        if cin_g == 1 && cout_g == 1 {
            depthwise2d_nhwc(&geo, xv, wv, bv, ov, &ost);
        } else {
            conv2d_nhwc(
                &geo,
                xv,
                wv,
                bv,
                ov,
                &os,
                &ost,
                cin_g,
                cout_g,
                groups as usize,
            )?;
        }
        return Ok(());
    }
    // The weight contiguous: [cout, cin_g * kvol] in (ci, kh, kw) order.
    let wc = contiguous(w)?;
    let wv = wc.get().values::<T>()?;
    if cin_g == 1 && nd == 4 {
        depthwise2d(&geo, xv, wv, bv, ov, &ost, cout_g);
        return Ok(());
    }
    let pstride = ost[xs.len() - 1] as usize; // the last spatial dim's stride
                                              // The bias first: the products are then accumulated onto it.
    if let Some(bv) = bv {
        let cout = os[1] as usize;
        for n in 0..os[0] as usize {
            let base = n * ost[0] as usize;
            if ost[1] == 1 {
                // channels-last: each position's channels are one run
                for q in 0..p {
                    ov[base + q * pstride..][..cout].copy_from_slice(&bv[..cout]);
                }
                continue;
            }
            for (c, &v) in bv.iter().enumerate().take(cout) {
                fill_run(ov, base + c * ost[1] as usize, pstride, p, v);
            }
        }
    }
    // col: [kk, p] contiguous, in T (unused by a pointwise convolution).
    let n_col = if pointwise { 0 } else { kk * p };
    with_scratch::<T, _>(n_col, |col| {
        gemm_nchw(
            &geo,
            xv,
            wv,
            ov,
            &ost,
            col,
            pointwise,
            cin_g,
            cout_g,
            groups,
            b.is_some(),
        )
    })?;
    Ok(())
}

/// The GEMMs of `conv_f` (NCHW or other layouts): per image and group, out (+)= W_g @ col,
/// col the im2col matrix of the input (filled here into `col`) or, for a pointwise
/// convolution, the input itself.
#[allow(clippy::too_many_arguments)]
fn gemm_nchw<T: ConvFloat>(
    geo: &Geometry,
    xv: &[T],
    wv: &[T],
    ov: &mut [T],
    ost: &[i64],
    col: &mut [T],
    pointwise: bool,
    cin_g: usize,
    cout_g: usize,
    groups: i64,
    acc: bool,
) {
    let (xs, xst) = (geo.xs, geo.xst);
    let nd = xs.len();
    let kvol: usize = geo.ksz.iter().product();
    let p: usize = geo.osp.iter().product();
    let kk = cin_g * kvol;
    let pstride = ost[nd - 1] as usize;
    let optr = ov.as_mut_ptr();
    for n in 0..xs[0] as usize {
        for g in 0..groups as usize {
            let base = n * xst[0] as usize + g * cin_g * xst[1] as usize;
            let rhs = if pointwise {
                // x[n, g*cin_g + ci, spatial] is element (ci, spatial) of a cin_g x p matrix.
                Mat {
                    ptr: xv.as_ptr().wrapping_add(base).cast_mut().cast(),
                    rs: xst[1] as isize,
                    cs: xst[nd - 1] as isize,
                }
            } else {
                im2col(geo, xv, base, cin_g, kvol, p, col);
                Mat {
                    ptr: col.as_mut_ptr().cast(),
                    rs: p as isize,
                    cs: 1,
                }
            };
            // out[n, g*cout_g .. , :] (+)= W_g [cout_g, kk] @ col [kk, p]
            let dst = Mat {
                ptr: optr
                    .wrapping_add(n * ost[0] as usize + g * cout_g * ost[1] as usize)
                    .cast(),
                rs: ost[1] as isize,
                cs: pstride as isize,
            };
            let lhs = Mat {
                ptr: wv.as_ptr().wrapping_add(g * cout_g * kk).cast_mut().cast(),
                rs: kk as isize,
                cs: 1,
            };
            // SAFETY: T is float32/64, and the views are inside their buffers: dst is output
            // channels [g*cout_g, (g+1)*cout_g) of batch n over its p spatial positions (one
            // stride, pstride: o is dense) in ov, the output's aligned elements, which only
            // this call uses; lhs is group g's cout_g x kk rows of the contiguous weight wv
            // (ws[0] = groups*cout_g rows of kk); rhs is col (kk x p), or for a pointwise
            // convolution input channels [g*cin_g, (g+1)*cin_g) of image n over its p
            // positions, whose spatial dims flatten to the one stride xst[nd-1] (checked
            // in conv_f), inside xv (the input's extent); dst overlaps neither (o is a fresh
            // allocation, col this thread's scratch buffer).
            unsafe {
                gemm_any(
                    T::DTYPE,
                    cout_g,
                    p,
                    kk,
                    dst,
                    acc,
                    lhs,
                    rhs,
                    if acc { 1.0 } else { 0.0 },
                    1.0,
                )
            };
        }
    }
}

/// The im2col matrix of one image and group (input offset `base`): `cin_g * kvol` rows of
/// `p`, into `col`, the rows shared among the model's OpenMP threads.
fn im2col<T: ConvFloat>(
    geo: &Geometry,
    xv: &[T],
    base: usize,
    cin_g: usize,
    kvol: usize,
    p: usize,
    col: &mut [T],
) {
    let rows = cin_g * kvol;
    let parts = parallel::threads().min(rows * p / 16384).max(1);
    let dst = Shared(col.as_mut_ptr());
    let xst1 = geo.xst[1] as usize;
    parallel::run(parts, &|i| {
        for r in parallel::chunk(rows, parts, 1, i) {
            let (ci, kf) = (r / kvol, r % kvol);
            // SAFETY: row r of col (p elements from r * p, inside col's rows * p), written
            // only by the task whose chunk holds r; col outlives the parallel run.
            let row = unsafe { std::slice::from_raw_parts_mut(dst.get().add(r * p), p) };
            im2col_row(geo, xv, base + ci * xst1, kf, row);
        }
    });
}

/// A 2-D convolution whose groups each have one input channel (depthwise, `cout_g` output
/// channels per group), computed directly: per output row, the sum over the kernel taps of
/// the weight times a (strided) run of an input row, from the bias. `ov` is the dense
/// output of strides `ost`; one task per (image, output channel) plane.
fn depthwise2d<T: ConvFloat>(
    g: &Geometry,
    xv: &[T],
    wv: &[T],
    bv: Option<&[T]>,
    ov: &mut [T],
    ost: &[i64],
    cout_g: usize,
) {
    let (oh_n, ow_n) = (g.osp[0], g.osp[1]);
    let (kh_n, kw_n) = (g.ksz[0], g.ksz[1]);
    let (ih_n, iw_n) = (g.xs[2], g.xs[3]);
    let (sh, sw) = (g.stride[0], g.stride[1] as usize);
    let (ph, pw) = (g.padding[0], g.padding[1]);
    let (dh, dw) = (g.dilation[0], g.dilation[1]);
    let xst: Vec<usize> = g.xst.iter().map(|&s| s as usize).collect();
    let ost: Vec<usize> = ost.iter().map(|&s| s as usize).collect();
    let channels = cout_g * g.xs[1] as usize;
    let planes = g.xs[0] as usize * channels;
    let out = Shared(ov.as_mut_ptr());
    let out_len = ov.len();
    let parts = parallel::threads().min(planes).max(1);
    parallel::run(parts, &|part| {
        let mut acc = vec![T::default(); ow_n];
        let mut gathered = vec![T::default(); ow_n];
        for plane in parallel::chunk(planes, parts, 1, part) {
            let (n, oc) = (plane / channels, plane % channels);
            let xbase = n * xst[0] + (oc / cout_g) * xst[1];
            let obase = n * ost[0] + oc * ost[1];
            let bias = bv.map_or(T::default(), |b| b[oc]);
            let wk = &wv[oc * kh_n * kw_n..(oc + 1) * kh_n * kw_n];
            for oh in 0..oh_n {
                acc.fill(bias);
                for kh in 0..kh_n {
                    let ih = oh as i64 * sh - ph + kh as i64 * dh;
                    if ih < 0 || ih >= ih_n {
                        continue;
                    }
                    let xrow = xbase + ih as usize * xst[2];
                    for kw in 0..kw_n {
                        // Output columns whose input column ow * sw + k0 is inside the row.
                        let k0 = kw as i64 * dw - pw;
                        let (lo, hi) = inside_run(k0, sw, iw_n, ow_n);
                        if lo >= hi {
                            continue;
                        }
                        let first = xrow + (lo as i64 * sw as i64 + k0) as usize * xst[3];
                        let wt = wk[kh * kw_n + kw];
                        if sw == 1 && xst[3] == 1 {
                            T::axpy(&mut acc[lo..hi], wt, &xv[first..first + (hi - lo)]);
                        } else {
                            let step = sw * xst[3];
                            for (j, v) in gathered[..hi - lo].iter_mut().enumerate() {
                                *v = xv[first + j * step];
                            }
                            T::axpy(&mut acc[lo..hi], wt, &gathered[..hi - lo]);
                        }
                    }
                }
                let orow = obase + oh * ost[2];
                for (ow, &v) in acc.iter().enumerate() {
                    let at = orow + ow * ost[3];
                    assert!(at < out_len);
                    // SAFETY: at is inside ov (asserted), in the plane (n, oc) of the dense
                    // output, which only this task writes; ov outlives the parallel run.
                    unsafe { *out.get().add(at) = v };
                }
            }
        }
    });
}

/// `v` at `n` positions `base + i * stride` of `o`.
fn fill_run<T: Copy>(o: &mut [T], base: usize, stride: usize, n: usize, v: T) {
    for i in 0..n {
        o[base + i * stride] = v;
    }
}

/// Whether a 4-D layout is dense channels-last with the standard strides (those of every
/// dim of size > 1 checked): element (n, c, h, w) at `n * strides[0] + (h * W + w) * C + c`.
fn nhwc(sizes: &[i64], strides: &[i64]) -> bool {
    let (c, w) = (sizes[1], sizes[3]);
    let want = [strides[0], 1, w * c, c];
    (1..4).all(|d| sizes[d] <= 1 || strides[d] == want[d])
}

/// A 2-D convolution over channels-last input and output by im2col + GEMM, in blocks of
/// output rows: each block's im2col rows (about `COL_BLOCK` elements: the thread's L2 holds
/// them between the copy and the product; at least `MIN_BLOCK_POSITIONS` output positions)
/// go into the thread's scratch buffer and are multiplied there by the group's weight
/// (channels-last: rows of (kh, kw, ci)) into the block's output rows. With blocks enough
/// the blocks are the tasks on the model's OpenMP threads; with few (small images, many
/// channels) they run in turn, each product split over the threads.
#[allow(clippy::too_many_arguments)]
fn conv2d_nhwc<T: ConvFloat>(
    g: &Geometry,
    xv: &[T],
    wv: &[T],
    bv: Option<&[T]>,
    ov: &mut [T],
    os: &[i64],
    ost: &[i64],
    cin_g: usize,
    cout_g: usize,
    groups: usize,
) -> Result<()> {
    let cout = os[1] as usize;
    let (oh_n, ow_n) = (g.osp[0], g.osp[1]);
    let kk = g.ksz[0] * g.ksz[1] * cin_g;
    let row_elems = ow_n.checked_mul(kk).filter(|&e| {
        e.checked_mul(std::mem::size_of::<T>())
            .is_some_and(|b| b <= isize::MAX as usize)
    });
    let Some(row_elems) = row_elems else {
        return err(sys::TENSOR_ERR_OVERFLOW, "im2col buffer size overflows");
    };
    let rows_per = (COL_BLOCK / row_elems.max(1))
        .max(MIN_BLOCK_POSITIONS.div_ceil(ow_n.max(1)))
        .clamp(1, oh_n.max(1));
    let blocks = oh_n.div_ceil(rows_per);
    let tasks = g.xs[0] as usize * groups * blocks;
    let threads = parallel::threads();
    let job = ConvBlocks {
        g,
        xv,
        wv,
        bv,
        out: Shared(ov.as_mut_ptr()),
        obatch: ost[0] as usize,
        cout,
        cin_g,
        cout_g,
        groups,
        kk,
        rows_per,
        blocks,
    };
    let failed = std::sync::Mutex::new(None);
    let each = |t: usize, inner: bool| {
        if let Err(e) = job.run(t, inner) {
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    };
    if threads > 1 && tasks >= 2 * threads {
        parallel::run(threads, &|part| {
            for t in parallel::chunk(tasks, threads, 1, part) {
                each(t, false);
            }
        });
    } else {
        (0..tasks).for_each(|t| each(t, true));
    }
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Elements of im2col rows per block of `conv2d_nhwc` (512 KiB of float32), unless that
/// is fewer than `MIN_BLOCK_POSITIONS` output positions.
const COL_BLOCK: usize = 1 << 17;
/// Output positions (rows of the block's product) per block of `conv2d_nhwc`, at least (or
/// the whole image): the product packs the weight for its tiles once per block, which a
/// small block pays for each of its few rows, and at two threads too few blocks split
/// unevenly. (resnet18's 14 x 14 and 7 x 7 layers, 2304 and 4608 elements per position,
/// had blocks of 56 and 28 positions. Measured on an AMD EPYC with AVX2, resnet18 through
/// `bench_run`, medians of interleaved runs: 1 thread 64.4 ms with no minimum, 58.4 at
/// 196, 60.3 at 256; 2 threads 35.3 ms, 33.9 at 128, 32.4-33.0 at 196, 34.5 at 256.)
const MIN_BLOCK_POSITIONS: usize = 196;

/// What the blocks of one `conv2d_nhwc` share: task `t` is image `t / (groups * blocks)`,
/// group `t / blocks % groups`, output rows `rows_per * (t % blocks)..` (at most rows_per).
struct ConvBlocks<'a, T> {
    g: &'a Geometry<'a>,
    xv: &'a [T],
    wv: &'a [T],
    bv: Option<&'a [T]>,
    /// The dense channels-last output (image stride `obatch`, position stride `cout`).
    out: Shared<T>,
    obatch: usize,
    cout: usize,
    cin_g: usize,
    cout_g: usize,
    groups: usize,
    kk: usize,
    rows_per: usize,
    blocks: usize,
}

impl<T: ConvFloat> ConvBlocks<'_, T> {
    /// Task `t`: its output rows' im2col rows, then their product with the group's weight
    /// (plus the bias); `split`: the product on the model's threads (`gemm_any`), else on
    /// this one.
    fn run(&self, t: usize, split: bool) -> Result<()> {
        let g = self.g;
        let (oh_n, ow_n) = (g.osp[0], g.osp[1]);
        let (n, gi, blk) = (
            t / (self.groups * self.blocks),
            t / self.blocks % self.groups,
            t % self.blocks,
        );
        let r0 = blk * self.rows_per;
        let r1 = (r0 + self.rows_per).min(oh_n);
        let (kk, cout, cout_g) = (self.kk, self.cout, self.cout_g);
        let m = (r1 - r0) * ow_n;
        let obase = n * self.obatch + r0 * ow_n * cout + gi * cout_g;
        if let Some(bv) = self.bv {
            for q in 0..m {
                // SAFETY: position r0 * ow_n + q of image n, channels of group gi: inside
                // the dense channels-last output, written only by this task (its rows and
                // group); the output outlives the run.
                let d = unsafe {
                    std::slice::from_raw_parts_mut(self.out.get().add(obase + q * cout), cout_g)
                };
                d.copy_from_slice(&bv[gi * cout_g..(gi + 1) * cout_g]);
            }
        }
        let xbase = n * g.xst[0] as usize + gi * self.cin_g;
        with_scratch::<T, _>(m * kk, |col| {
            for oh in r0..r1 {
                let row = &mut col[(oh - r0) * ow_n * kk..(oh - r0 + 1) * ow_n * kk];
                im2col_row_nhwc(g, self.xv, xbase, self.cin_g, oh, row);
            }
            let dst = Mat {
                ptr: self.out.get().wrapping_add(obase).cast(),
                rs: cout as isize,
                cs: 1,
            };
            let lhs = strided(col.as_ptr(), kk, 1);
            let rhs = strided(self.wv.as_ptr().wrapping_add(gi * cout_g * kk), 1, kk);
            let acc = if self.bv.is_some() { 1.0 } else { 0.0 };
            // SAFETY: T is float32/64; dst is output channels [gi*cout_g, (gi+1)*cout_g) of
            // image n over positions r0 * ow_n.. (m of them; channels-last, standard strides:
            // checked by nhwc, so position q is at q * cout) inside the output, which only
            // this task writes there; lhs is col (m x kk, this thread's scratch buffer); rhs
            // the transposed rows of group gi of the channels-last weight wv (cout rows of
            // kk, in (kh, kw, ci) order), inside it; dst overlaps neither.
            unsafe {
                let f = if split { gemm_any } else { gemm_serial };
                f(
                    T::DTYPE,
                    m,
                    cout_g,
                    kk,
                    dst,
                    self.bv.is_some(),
                    lhs,
                    rhs,
                    acc,
                    1.0,
                )
            };
        })
    }
}

/// The im2col row of output row `oh` of a channels-last convolution: for each output pixel,
/// its `kh * kw * cin_g` inputs in (kh, kw, ci) order (0 in the padding), from the image
/// and group at `xbase`. An interior pixel's taps along a kernel row are one contiguous run
/// of the input when the group is all the channels and the width is not dilated: one copy.
fn im2col_row_nhwc<T: ConvFloat>(
    g: &Geometry,
    xv: &[T],
    xbase: usize,
    cin_g: usize,
    oh: usize,
    row: &mut [T],
) {
    let (ow_n, kh_n, kw_n) = (g.osp[1], g.ksz[0], g.ksz[1]);
    let (ih_n, iw_n) = (g.xs[2], g.xs[3]);
    let cin = g.xs[1] as usize;
    let kk = kh_n * kw_n * cin_g;
    let s = g.stride[1] as usize;
    let whole = cin_g == cin && g.dilation[1] == 1;
    // Pixels whose every tap along a row is inside it.
    let (lo_all, hi_all) = inside_run(
        -g.padding[1],
        s,
        iw_n - (kw_n as i64 - 1) * g.dilation[1],
        ow_n,
    );
    for kh in 0..kh_n {
        let ih = oh as i64 * g.stride[0] - g.padding[0] + kh as i64 * g.dilation[0];
        let at = kh * kw_n * cin_g;
        if ih < 0 || ih >= ih_n {
            for ow in 0..ow_n {
                row[ow * kk + at..ow * kk + at + kw_n * cin_g].fill(T::default());
            }
            continue;
        }
        let xrow = xbase + ih as usize * iw_n as usize * cin;
        if whole {
            for ow in lo_all..hi_all {
                let src = xrow + (ow * s - g.padding[1] as usize) * cin;
                row[ow * kk + at..ow * kk + at + kw_n * cin]
                    .copy_from_slice(&xv[src..src + kw_n * cin]);
            }
        }
        for kw in 0..kw_n {
            let k0 = kw as i64 * g.dilation[1] - g.padding[1];
            let (lo, hi) = inside_run(k0, s, iw_n, ow_n);
            let at = at + kw * cin_g;
            for ow in 0..ow_n {
                if whole && (lo_all..hi_all).contains(&ow) {
                    continue;
                }
                let d = &mut row[ow * kk + at..ow * kk + at + cin_g];
                if ow < lo || ow >= hi {
                    d.fill(T::default());
                } else {
                    let src = xrow + ((ow * s) as i64 + k0) as usize * cin;
                    d.copy_from_slice(&xv[src..src + cin_g]);
                }
            }
        }
    }
}

/// A depthwise 2-D convolution (one input and one output channel per group) over
/// channels-last input and output: each output pixel's C channels are the bias plus, per
/// kernel tap inside the input, the tap's C weights times the input pixel's C channels
/// (contiguous runs: vectorized over channels). Output rows are tasks.
fn depthwise2d_nhwc<T: ConvFloat>(
    g: &Geometry,
    xv: &[T],
    wv: &[T],
    bv: Option<&[T]>,
    ov: &mut [T],
    ost: &[i64],
) {
    let (oh_n, ow_n) = (g.osp[0], g.osp[1]);
    let c = g.xs[1] as usize;
    let taps = g.ksz[0] * g.ksz[1];
    // The weight as [tap][c] (it is [c][tap] in memory).
    let mut wt = vec![T::default(); taps * c];
    for ch in 0..c {
        for t in 0..taps {
            wt[t * c + ch] = wv[ch * taps + t];
        }
    }
    let rows = g.xs[0] as usize * oh_n;
    let out = Shared(ov.as_mut_ptr());
    let out_len = ov.len();
    let parts = parallel::threads().min(rows * ow_n * c / 8192).max(1);
    parallel::run(parts, &|part| {
        for row in parallel::chunk(rows, parts, 1, part) {
            let (n, oh) = (row / oh_n, row % oh_n);
            let xbase = n * g.xst[0] as usize;
            let obase = n * ost[0] as usize + oh * ow_n * c;
            assert!(obase + ow_n * c <= out_len);
            // SAFETY: output row (n, oh): ow_n * c elements from obase (channels-last,
            // standard strides), inside ov (asserted), written only by this task; ov
            // outlives the parallel run.
            let orow = unsafe { std::slice::from_raw_parts_mut(out.get().add(obase), ow_n * c) };
            let mut job = DwRow {
                g,
                x: xv,
                xbase,
                wt: &wt,
                bias: bv,
                out: orow,
                oh,
            };
            if !T::depthwise_row(&mut job) {
                dw_row_generic(&mut job);
            }
        }
    });
}

/// `DwRow` by the generic loop (any `ConvFloat`): per output pixel, its channels from the
/// bias, then per kernel tap inside the input one `fma` over the channels.
fn dw_row_generic<T: ConvFloat>(r: &mut DwRow<'_, T>) {
    let g = r.g;
    let (ow_n, kh_n, kw_n) = (g.osp[1], g.ksz[0], g.ksz[1]);
    let (ih_n, iw_n) = (g.xs[2], g.xs[3]);
    let c = g.xs[1] as usize;
    for ow in 0..ow_n {
        let acc = &mut r.out[ow * c..(ow + 1) * c];
        match r.bias {
            Some(b) => acc.copy_from_slice(&b[..c]),
            None => acc.fill(T::default()),
        }
        for kh in 0..kh_n {
            let ih = r.oh as i64 * g.stride[0] - g.padding[0] + kh as i64 * g.dilation[0];
            if ih < 0 || ih >= ih_n {
                continue;
            }
            for kw in 0..kw_n {
                let iw = ow as i64 * g.stride[1] - g.padding[1] + kw as i64 * g.dilation[1];
                if iw < 0 || iw >= iw_n {
                    continue;
                }
                let src = r.xbase + (ih as usize * iw_n as usize + iw as usize) * c;
                let t = kh * kw_n + kw;
                T::fma(acc, &r.wt[t * c..(t + 1) * c], &r.x[src..src + c]);
            }
        }
    }
}

/// One output row of a channels-last depthwise convolution (`depthwise2d_nhwc`): the input
/// (`x`, its layout's extent; image `n` from `xbase`, dense channels-last), the weight as
/// `[tap][c]` and the bias, the row `oh` of the output (`ow_n * c` elements).
pub(super) struct DwRow<'a, T> {
    g: &'a Geometry<'a>,
    x: &'a [T],
    xbase: usize,
    wt: &'a [T],
    bias: Option<&'a [T]>,
    out: &'a mut [T],
    oh: usize,
}

vmath::lanes_fn!(fn dw_row_f32<'a>(r: &mut DwRow<'a, f32>) = dw_row_f32_lanes);

/// `DwRow` in float32 vectors of `L` (inlined into the entry point of its ISA): the row's
/// pixels in tiles of 8 (the last one shorter), a tile with a pixel near an edge checking
/// each tap's input column (the taps in the padding skipped); per tile, every block of
/// `L::N` channels in turn (the tile's input pixels stay in L1 across them), the
/// accumulators in registers, each tap's weight vector loaded once.
///
/// # Safety
///
/// `L`'s ISA is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn dw_row_f32_lanes<L: vmath::Lanes>(r: &mut DwRow<'_, f32>) {
    let g = r.g;
    let c = g.xs[1] as usize;
    let (ow_n, kw_n) = (g.osp[1], g.ksz[1]);
    let (ih_n, iw_n) = (g.xs[2], g.xs[3]);
    let (sw, pw, dw) = (g.stride[1], g.padding[1], g.dilation[1]);
    // The kernel rows inside the input, with their input row's offset.
    let rows: Vec<(usize, usize)> = (0..g.ksz[0])
        .filter_map(|kh| {
            let ih = r.oh as i64 * g.stride[0] - g.padding[0] + kh as i64 * g.dilation[0];
            (0..ih_n)
                .contains(&ih)
                .then(|| (kh, r.xbase + ih as usize * iw_n as usize * c))
        })
        .collect();
    // Interior pixels: ow * sw - pw and ow * sw - pw + (kw_n - 1) * dw inside 0..iw_n.
    let (lo, hi) = inside_run(-pw, sw as usize, iw_n - (kw_n as i64 - 1) * dw, ow_n);
    let t = DwTile {
        rows: &rows,
        c,
        kw_n,
        iw_n,
        sw,
        pw,
        dw,
        x: r.x,
        wt: r.wt,
        bias: r.bias,
        out: r.out.as_mut_ptr(),
        olen: r.out.len(),
    };
    let mut ow = 0;
    while ow < ow_n {
        let p = (ow_n - ow).min(8);
        let interior = lo <= ow && ow + p <= hi;
        macro_rules! tiles {
            ($($n:literal)*) => {
                match (p, interior) {
                    $(
                        // SAFETY: L's ISA (the caller's); pixels ow..ow + p <= ow_n,
                        // interior (every tap inside the row) when the taps go unchecked.
                        ($n, true) => unsafe { t.run::<L, $n, false>(ow) },
                        // SAFETY: as above, the taps checked.
                        ($n, false) => unsafe { t.run::<L, $n, true>(ow) },
                    )*
                    _ => unreachable!(),
                }
            };
        }
        tiles!(1 2 3 4 5 6 7 8);
        ow += p;
    }
}

/// What the tiles of one `dw_row_f32` row share.
#[cfg(target_arch = "x86_64")]
struct DwTile<'a> {
    rows: &'a [(usize, usize)],
    c: usize,
    kw_n: usize,
    iw_n: i64,
    sw: i64,
    pw: i64,
    dw: i64,
    x: &'a [f32],
    wt: &'a [f32],
    bias: Option<&'a [f32]>,
    out: *mut f32,
    olen: usize,
}

#[cfg(target_arch = "x86_64")]
impl DwTile<'_> {
    /// Output pixels `ow..ow + P` of the row, all channels; `CHECK`: skip the taps whose
    /// input column is outside the row (else every tap of every pixel is inside).
    ///
    /// # Safety
    ///
    /// `L`'s ISA is present; `ow + P <= ow_n`, and without `CHECK` the pixels are interior.
    #[inline(always)]
    unsafe fn run<L: vmath::Lanes, const P: usize, const CHECK: bool>(&self, ow: usize) {
        let c = self.c;
        let (xp, wp) = (self.x.as_ptr(), self.wt.as_ptr());
        for cb in (0..c).step_by(L::N) {
            let n = (c - cb).min(L::N);
            let bias = match self.bias {
                // SAFETY: channels cb..cb + n <= c of the bias (c elements).
                Some(b) => unsafe { L::load(b[..c].as_ptr().add(cb), n) },
                // SAFETY: L's ISA (the caller's).
                None => unsafe { L::zero() },
            };
            let mut acc = [bias; P];
            for &(kh, xrow) in self.rows {
                for kw in 0..self.kw_n {
                    let iw0 = ow as i64 * self.sw - self.pw + kw as i64 * self.dw;
                    // SAFETY: tap kh * kw_n + kw's channels cb..cb + n <= c inside wt
                    // ([tap][c]).
                    let wv = unsafe { L::load(wp.add((kh * self.kw_n + kw) * c + cb), n) };
                    for (p, a) in acc.iter_mut().enumerate() {
                        let iw = iw0 + p as i64 * self.sw;
                        if CHECK && !(0..self.iw_n).contains(&iw) {
                            continue;
                        }
                        let xi = xrow + iw as usize * c + cb;
                        debug_assert!(xi + n <= self.x.len());
                        // SAFETY: input pixel (ih, iw0 + p * sw) is inside the row (checked,
                        // or an interior pixel), so inside the dense channels-last input;
                        // its channels cb..cb + n <= c inside x's extent.
                        *a = unsafe { L::fmadd(L::load(xp.add(xi), n), wv, *a) };
                    }
                }
            }
            for (p, a) in acc.iter().enumerate() {
                debug_assert!((ow + p) * c + cb + n <= self.olen);
                // SAFETY: output pixel ow + p < ow_n, channels cb..cb + n <= c: inside the
                // row.
                unsafe { L::store(self.out.add((ow + p) * c + cb), n, *a) };
            }
        }
    }
}

/// The output positions `lo..hi` (of `0..out_n`) whose input position `o * stride + k0`
/// falls inside `0..in_n` (lo == hi when none does).
fn inside_run(k0: i64, stride: usize, in_n: i64, out_n: usize) -> (usize, usize) {
    let lo = if k0 < 0 {
        ((-k0) as usize).div_ceil(stride).min(out_n)
    } else {
        0
    };
    let hi = if k0 >= in_n {
        lo
    } else {
        (((in_n - 1 - k0) as usize) / stride + 1).clamp(lo, out_n)
    };
    (lo, hi)
}

/// The shape of one convolution, for im2col.
struct Geometry<'a> {
    xs: &'a [i64],
    xst: &'a [i64],
    osp: &'a [usize],
    ksz: &'a [usize],
    stride: &'a [i64],
    padding: &'a [i64],
    dilation: &'a [i64],
}

/// One im2col row: for kernel offset `kf` (flattened over the spatial dims), the input
/// element each output position reads (0 where it falls in the padding), over every
/// output position in order, into `dst`. `x` holds the input's elements (its layout's
/// extent), `base` is the (batch, channel) offset into it.
fn im2col_row<T: Copy + Default>(g: &Geometry, x: &[T], base: usize, kf: usize, dst: &mut [T]) {
    let sp = g.osp.len();
    let mut kidx = [0i64; 3];
    let mut rem = kf;
    for d in (0..sp).rev() {
        kidx[d] = (rem % g.ksz[d]) as i64;
        rem /= g.ksz[d];
    }
    let last = sp - 1;
    let ow_n = g.osp[last];
    let (s_l, p_l, d_l, in_l, st_l) = (
        g.stride[last],
        g.padding[last],
        g.dilation[last],
        g.xs[2 + last],
        g.xst[2 + last] as usize,
    );
    // Odometer over the outer output dims; a run over the last one.
    let outer: usize = g.osp[..last].iter().product();
    let mut oidx = [0usize; 3];
    let mut at = 0usize;
    for _ in 0..outer {
        let mut off = base;
        let mut inside = true;
        for d in 0..last {
            let i = oidx[d] as i64 * g.stride[d] - g.padding[d] + kidx[d] * g.dilation[d];
            if i < 0 || i >= g.xs[2 + d] {
                inside = false;
                break;
            }
            off += i as usize * g.xst[2 + d] as usize;
        }
        let run = &mut dst[at..at + ow_n];
        if inside {
            // The output columns whose input column ow * s_l + k0 is inside the row: zeros
            // on either side, the input's (strided) run between.
            let k0 = kidx[last] * d_l - p_l;
            let s = s_l as usize;
            let (lo, hi) = inside_run(k0, s, in_l, ow_n);
            run[..lo].fill(T::default());
            run[hi..].fill(T::default());
            if lo < hi {
                let first = off + (lo as i64 * s_l + k0) as usize * st_l;
                let step = s * st_l;
                if step == 1 {
                    run[lo..hi].copy_from_slice(&x[first..first + (hi - lo)]);
                } else {
                    let src = &x[first..=first + (hi - lo - 1) * step];
                    for (r, v) in run[lo..hi].iter_mut().zip(src.iter().step_by(step)) {
                        *r = *v;
                    }
                }
            }
        } else {
            run.fill(T::default());
        }
        at += ow_n;
        for d in (0..last).rev() {
            oidx[d] += 1;
            if oidx[d] < g.osp[d] {
                break;
            }
            oidx[d] = 0;
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Every ISA's depthwise row kernel this CPU runs (AVX-512F; AVX2 + FMA, whichever CPU
    /// the tests run on) agrees with the generic loop on random geometries: channel counts
    /// around the vector widths (tails), kernels 1-7, strides, padding, dilation, rows near
    /// the edges and rows with no interior pixel.
    #[test]
    fn depthwise_row_kernels_match_the_generic_loop() {
        let isas = vmath::Isa::all();
        let mut rng = super::super::Lcg(7);
        for trial in 0..300 {
            let c = 1 + rng.below(40) as i64;
            let k = [1, 3, 5, 7][rng.below(4)];
            let (s, d) = (
                1 + rng.below(2) as i64,
                1 + (rng.below(2) * (trial % 3 / 2)) as i64,
            );
            let p = rng.below(k as usize / 2 + 2) as i64;
            let span = d * (k - 1) + 1;
            let ih = (span - 2 * p).max(1) + rng.below(12) as i64;
            let iw = (span - 2 * p).max(1) + rng.below(20) as i64;
            let (oh, ow) = ((ih + 2 * p - span) / s + 1, (iw + 2 * p - span) / s + 1);
            let xs = [1, c, ih, iw];
            let xst = [ih * iw * c, 1, iw * c, c];
            let osp = [oh as usize, ow as usize];
            let ksz = [k as usize, k as usize];
            let g = Geometry {
                xs: &xs,
                xst: &xst,
                osp: &osp,
                ksz: &ksz,
                stride: &[s, s],
                padding: &[p, p],
                dilation: &[d, d],
            };
            let c = c as usize;
            let x: Vec<f32> = (0..(ih * iw) as usize * c).map(|_| rng.value()).collect();
            let wt: Vec<f32> = (0..k as usize * k as usize * c)
                .map(|_| rng.value())
                .collect();
            let bias: Vec<f32> = (0..c).map(|_| rng.value()).collect();
            let with_bias = trial % 4 != 0;
            for row in 0..osp[0] {
                // Output row `row` by `kernel`.
                let run = |kernel: &dyn Fn(&mut DwRow<'_, f32>)| {
                    let mut out = vec![f32::NAN; osp[1] * c];
                    kernel(&mut DwRow {
                        g: &g,
                        x: &x,
                        xbase: 0,
                        wt: &wt,
                        bias: with_bias.then_some(&bias[..]),
                        out: &mut out,
                        oh: row,
                    });
                    out
                };
                let want = run(&|job| dw_row_generic(job));
                for &isa in &isas {
                    let got = run(&|job| dw_row_f32(isa, job));
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                            "{isa:?}: trial {trial} (c {c}, k {k}, s {s}, p {p}, d {d}, \
                             {ih} x {iw}), row {row}, element {i}: {a} != {b}"
                        );
                    }
                }
            }
        }
        assert!(!isas.is_empty() || !is_x86_feature_detected!("avx2"));
    }
}

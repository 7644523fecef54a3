//! Convolution (`convolution`: 1-, 2-, 3-D, groups, stride, padding, dilation; not
//! transposed): im2col + gemm, output strides as ATen's.

use super::gemm::{gemm_any, Mat};
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
        let stride = spatial_param(stride, stride_len_, sp, "stride")?;
        let padding = spatial_param(padding, padding_len_, sp, "padding")?;
        let dilation = spatial_param(dilation, dilation_len_, sp, "dilation")?;
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
        let ost = conv_out_strides(x, w, &os, &stride, &dilation, groups)?;
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
                &stride,
                &padding,
                &dilation,
                groups,
            )?;
            result.get().copy_from(o32.get())?;
        } else if dtype == F32 {
            conv_f::<f32>(&mut result, x, w, b, &stride, &padding, &dilation, groups)?;
        } else {
            conv_f::<f64>(&mut result, x, w, b, &stride, &padding, &dilation, groups)?;
        }
        *r = result.into_raw();
        Ok(())
    })
}

/// im2col + gemm, per batch element and group, in `T` (the dtype of every tensor here).
/// `o` is the output, just allocated (`empty`) and dense (contiguous or channels-last), so
/// its flattened spatial index has one stride (its last dim's).
fn conv_f<T: Element>(
    o: &mut Owned,
    x: Tensor,
    w: Tensor,
    b: Option<Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<()> {
    let item = std::mem::size_of::<T>();
    let (xs, xst) = (x.sizes().to_vec(), x.strides().to_vec());
    let (os, ost) = (o.get().sizes().to_vec(), o.get().strides().to_vec());
    let wc = contiguous(w)?;
    let ws = wc.get().sizes().to_vec();
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
    // col: [kk, p] contiguous, in T.
    let n_col = kk
        .checked_mul(p)
        .filter(|v| v.checked_mul(item).is_some())
        .ok_or(crate::error::Error {
            status: sys::TENSOR_ERR_OVERFLOW,
            msg: "im2col buffer size overflows".into(),
        })?;
    let mut col = vec![T::default(); n_col];
    // Every element the input's layout reaches, and the weight's (contiguous: in order).
    let xv = x.values::<T>()?;
    let wv = wc.get().values::<T>()?;
    // SAFETY: o is the output the caller has just allocated with `empty`: its storage is
    // reachable from nothing but o, and nothing else runs on it during this call.
    let ov = unsafe { o.values_mut::<T>() }?;
    let pstride = ost[xs.len() - 1] as usize; // the last spatial dim's stride
                                              // The bias first: the products are then accumulated onto it.
    if let Some(b) = b {
        let bc = contiguous(b)?;
        let bv = bc.get().values::<T>()?;
        for n in 0..os[0] as usize {
            for (c, &v) in bv.iter().enumerate().take(os[1] as usize) {
                let base = n * ost[0] as usize + c * ost[1] as usize;
                fill_run(ov, base, pstride, p, v);
            }
        }
    }
    let geo = Geometry {
        xs: &xs,
        xst: &xst,
        osp: &osp,
        ksz: &ksz,
        stride,
        padding,
        dilation,
    };
    let optr = ov.as_mut_ptr();
    for n in 0..xs[0] as usize {
        for g in 0..groups as usize {
            for ci in 0..cin_g {
                let base = n * xst[0] as usize + (g * cin_g + ci) * xst[1] as usize;
                for kf in 0..kvol {
                    let row = (ci * kvol + kf) * p;
                    im2col_row(&geo, xv, base, kf, &mut col[row..row + p]);
                }
            }
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
            let rhs = Mat {
                ptr: col.as_mut_ptr().cast(),
                rs: p as isize,
                cs: 1,
            };
            let acc = b.is_some();
            // SAFETY: T is float32/64, and the views are inside their buffers: dst is output
            // channels [g*cout_g, (g+1)*cout_g) of batch n over its p spatial positions (one
            // stride, pstride: o is dense) in ov, the output's aligned elements, which only
            // this call uses; lhs is group g's cout_g x kk rows of the contiguous weight wv
            // (ws[0] = groups*cout_g rows of kk); rhs is col, kk x p; dst overlaps neither
            // (o is a fresh allocation, col a Vec of this call).
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
    Ok(())
}

/// `v` at `n` positions `base + i * stride` of `o`.
fn fill_run<T: Copy>(o: &mut [T], base: usize, stride: usize, n: usize, v: T) {
    for i in 0..n {
        o[base + i * stride] = v;
    }
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
            let k0 = kidx[last] * d_l - p_l;
            for (ow, r) in run.iter_mut().enumerate() {
                let i = ow as i64 * s_l + k0;
                *r = if i < 0 || i >= in_l {
                    T::default()
                } else {
                    x[off + i as usize * st_l]
                };
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

// ------------------------------------------------------------------------------------------
// Scaled dot-product attention (CPU flash): out [B, H, L, Ev] with the strides of
// (B, L, H, Ev).transpose(1, 2), logsumexp [B, H, L] with those of (B, L, H).transpose(1, 2).

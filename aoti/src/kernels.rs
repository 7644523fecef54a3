//! Fallback kernels a CPU AOTInductor model calls for the ops Inductor does not generate
//! itself (`aoti_torch_cpu_*`, signatures of torch's generated `c_shim_cpu.h`): matrix
//! products through the `gemm` crate, convolution (im2col + gemm) and CPU flash attention.
//! Outputs allocated here have exactly ATen's strides: the generated code that follows
//! indexes them with hard-coded strides.

use crate::error::{err, shim, Result};
use crate::sys::{self, tensor_t};
use crate::util::{self, handle, out, Element, Owned, Tensor};

type AtenTensorHandle = *mut tensor_t;

const F16: i32 = 5;
const F32: i32 = 6;
const F64: i32 = 7;
const BF16: i32 = 15;

/// A strided matrix view: element (i, j) at `ptr + (i * rs + j * cs) * itemsize`.
#[derive(Clone, Copy)]
struct Mat {
    ptr: *mut u8,
    rs: isize,
    cs: isize,
}

/// `dst = alpha * dst (if read_dst) + beta * lhs @ rhs` for an m x k by k x n product, in
/// `dtype` (float32, float64, float16).
///
/// # Safety
///
/// `dtype` is float32, float64 or float16, and each `Mat` addresses, for every (i, j) of
/// its m x k, k x n or m x n shape, an aligned element of that dtype inside live memory:
/// readable for `lhs`, `rhs` (and `dst` when `read_dst`), writable for `dst`, with `dst`
/// overlapping neither `lhs` nor `rhs`, and nothing else using `dst` during the call.
unsafe fn gemm_any(
    dtype: i32,
    m: usize,
    n: usize,
    k: usize,
    dst: Mat,
    read_dst: bool,
    lhs: Mat,
    rhs: Mat,
    alpha: f64,
    beta: f64,
) {
    macro_rules! go {
        ($t:ty, $a:expr, $b:expr) => {
            // SAFETY: gemm::gemm needs what gemm_any's `# Safety` asks of its caller: every
            // element the three strided views address is in bounds, aligned and a $t (the
            // dtype this arm matched), and dst is exclusive and overlaps neither input.
            unsafe {
                gemm::gemm::<$t>(
                    m,
                    n,
                    k,
                    dst.ptr.cast(),
                    dst.cs,
                    dst.rs,
                    read_dst,
                    lhs.ptr.cast(),
                    lhs.cs,
                    lhs.rs,
                    rhs.ptr.cast(),
                    rhs.cs,
                    rhs.rs,
                    $a,
                    $b,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                )
            }
        };
    }
    match dtype {
        F32 => go!(f32, alpha as f32, beta as f32),
        F64 => go!(f64, alpha, beta),
        F16 => go!(
            gemm::f16,
            gemm::f16::from_f64(alpha),
            gemm::f16::from_f64(beta)
        ),
        _ => unreachable!(),
    }
}

/// The matrix of dims (d0, d1) of `t` at its data pointer.
fn mat(t: Tensor, d0: usize, d1: usize) -> Mat {
    let st = t.strides();
    Mat {
        ptr: t.data_ptr().cast(),
        rs: st[d0] as isize,
        cs: st[d1] as isize,
    }
}

fn offset(m: Mat, bytes: isize) -> Mat {
    Mat {
        ptr: m.ptr.wrapping_offset(bytes),
        ..m
    }
}

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

/// `out[b] = beta * self[b] + alpha * a[b] @ b[b]` over a batch (`batched`) or one matrix.
/// `self_` None: no addend (beta ignored, as ATen ignores self when beta == 0).
fn matmul_into(
    outp: Tensor,
    self_: Option<Tensor>,
    a: Tensor,
    b: Tensor,
    beta: f64,
    alpha: f64,
    batched: bool,
) -> Result<()> {
    let mut ts = vec![(outp, "out"), (a, "mat1"), (b, "mat2")];
    if let Some(s) = self_ {
        ts.push((s, "self"));
    }
    let dtype = same_dtype(&ts)?;
    let nd = if batched { 3 } else { 2 };
    expect_dim(a, nd, "mat1")?;
    expect_dim(b, nd, "mat2")?;
    let (sa, sb) = (a.sizes(), b.sizes());
    let (bt, m, k) = if batched {
        (sa[0], sa[1], sa[2])
    } else {
        (1, sa[0], sa[1])
    };
    let (bb, k2, n) = if batched {
        (sb[0], sb[1], sb[2])
    } else {
        (1, sb[0], sb[1])
    };
    if k != k2 || bt != bb {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("mat1 and mat2 shapes cannot be multiplied ({sa:?} and {sb:?})"),
        );
    }
    let want: Vec<i64> = if batched { vec![bt, m, n] } else { vec![m, n] };
    expect_sizes(outp, &want, "out")?;
    let addend = self_.filter(|_| beta != 0.0);
    if let Some(s) = addend {
        outp.copy_from(s).map_err(|mut e| {
            e.msg = format!(
                "self {:?} does not broadcast to out {want:?}: {}",
                s.sizes(),
                e.msg
            );
            e
        })?;
    }
    if dtype == BF16 {
        // Through float32: the product in float32, rounded once into the bfloat16 out.
        let (a32, b32, o32) = (as_f32(a)?, as_f32(b)?, as_f32(outp)?);
        matmul_f(
            o32.get(),
            addend.is_some(),
            a32.get(),
            b32.get(),
            beta,
            alpha,
            batched,
            F32,
        )?;
        return outp.copy_from(o32.get());
    }
    matmul_f(outp, addend.is_some(), a, b, beta, alpha, batched, dtype)
}

/// The product of `matmul_into` once its shapes are checked: `outp`, `a` and `b` are CPU
/// tensors of `dtype` (float32, float64, float16) with sizes [batch,] m x n, m x k, k x n.
fn matmul_f(
    outp: Tensor,
    read_dst: bool,
    a: Tensor,
    b: Tensor,
    beta: f64,
    alpha: f64,
    batched: bool,
    dtype: i32,
) -> Result<()> {
    let item = util::itemsize(dtype) as isize;
    let (sa, sb) = (a.sizes(), b.sizes());
    let d = if batched { 1 } else { 0 };
    let (m, k, n) = (sa[d] as usize, sa[d + 1] as usize, sb[d + 1] as usize);
    let batch = if batched { sa[0] } else { 1 };
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (mo, ma, mb) = (mat(outp, d, d + 1), mat(a, d, d + 1), mat(b, d, d + 1));
    let bstride = |t: Tensor| {
        if batched {
            t.strides()[0] as isize * item
        } else {
            0
        }
    };
    let (bo, ba, bb) = (bstride(outp), bstride(a), bstride(b));
    for i in 0..batch as isize {
        // SAFETY: dtype is float32/64/16 and outp, a, b are live CPU tensors of it with the
        // sizes above (same_dtype, expect_dim, the k and batch checks and expect_sizes in
        // matmul_into), so batch i's views at their data pointers, batch strides and
        // strides address only their elements, which libtensor keeps inside their storages
        // (allocated 64-byte aligned, or a caller's blob, aligned for its dtype as c10
        // requires); out is the model's output buffer, overlapping neither input (an ATen
        // out= contract), and used by nothing else during the call.
        unsafe {
            gemm_any(
                dtype,
                m,
                n,
                k,
                offset(mo, i * bo),
                read_dst,
                offset(ma, i * ba),
                offset(mb, i * bb),
                if read_dst { beta } else { 0.0 },
                alpha,
            )
        };
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mm_out(
    out_: AtenTensorHandle,
    self_: AtenTensorHandle,
    mat2: AtenTensorHandle,
) -> i32 {
    shim("aoti_torch_cpu_mm_out", || {
        matmul_into(
            handle(out_, "out")?,
            None,
            handle(self_, "self")?,
            handle(mat2, "mat2")?,
            0.0,
            1.0,
            false,
        )
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_addmm_out(
    out_: AtenTensorHandle,
    self_: AtenTensorHandle,
    mat1: AtenTensorHandle,
    mat2: AtenTensorHandle,
    beta: f64,
    alpha: f64,
) -> i32 {
    shim("aoti_torch_cpu_addmm_out", || {
        let s = handle(self_, "self")?;
        matmul_into(
            handle(out_, "out")?,
            Some(s),
            handle(mat1, "mat1")?,
            handle(mat2, "mat2")?,
            beta,
            alpha,
            false,
        )
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_bmm_out(
    out_: AtenTensorHandle,
    self_: AtenTensorHandle,
    mat2: AtenTensorHandle,
) -> i32 {
    shim("aoti_torch_cpu_bmm_out", || {
        matmul_into(
            handle(out_, "out")?,
            None,
            handle(self_, "self")?,
            handle(mat2, "mat2")?,
            0.0,
            1.0,
            true,
        )
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_baddbmm_out(
    out_: AtenTensorHandle,
    self_: AtenTensorHandle,
    batch1: AtenTensorHandle,
    batch2: AtenTensorHandle,
    beta: f64,
    alpha: f64,
) -> i32 {
    shim("aoti_torch_cpu_baddbmm_out", || {
        let s = handle(self_, "self")?;
        matmul_into(
            handle(out_, "out")?,
            Some(s),
            handle(batch1, "batch1")?,
            handle(batch2, "batch2")?,
            beta,
            alpha,
            true,
        )
    })
}

// ------------------------------------------------------------------------------------------
// Convolution.

/// c10's contiguous strides (a size-0 or size-1 dim counts as 1).
fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut st = vec![1i64; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * sizes[i + 1].max(1);
    }
    st
}

/// c10's channels-last strides (`get_channels_last_strides_2d` / `_3d`): channels
/// innermost, then the spatial dims from last to first, then the batch.
fn channels_last_strides(sizes: &[i64]) -> Vec<i64> {
    let n = sizes.len();
    let mut st = vec![0i64; n];
    st[1] = 1;
    let mut acc = sizes[1].max(1);
    for d in (2..n).rev() {
        st[d] = acc;
        acc *= sizes[d].max(1);
    }
    st[0] = acc;
    st
}

/// An uninitialised tensor with the given strides.
fn empty(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Owned> {
    util::empty_strided(sizes, strides, dtype)
}

fn contiguous(t: Tensor) -> Result<Owned> {
    t.contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)
}

fn params(p: *const i64, n: i64, spatial: usize, name: &str) -> Result<Vec<i64>> {
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

/// The output strides ATen's CPU convolution gives. 4-D: channels-last when the input or
/// the weight suggests channels-last (both its oneDNN and its native path). 3-D (conv1d):
/// channels-last (then that dim dropped) when the 4-D view of the weight ATen makes (a
/// size-1 dim inserted at 2) suggests it; a 3-D input never suggests it (measured against
/// torch 2.15 by aoti/tests/kernels.py). 5-D: channels-last-3d when either suggests it and the oneDNN path is taken (the
/// native 3-D path returns contiguous). Else contiguous.
fn conv_out_strides(
    x: Tensor,
    w: Tensor,
    os: &[i64],
    stride: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Vec<i64>> {
    let nd = os.len();
    let suggests = |t: Tensor, fmt: i32| t.suggest_memory_format() == fmt;
    match nd {
        4 => Ok(if suggests(x, 2) || suggests(w, 2) {
            channels_last_strides(os)
        } else {
            contiguous_strides(os)
        }),
        3 => {
            let view4 = |t: Tensor| -> Result<Owned> {
                let (sz, st) = (t.sizes(), t.strides());
                let s4 = [sz[0], sz[1], 1, sz[2]];
                let t4 = [st[0], st[1], st[2] * sz[2].max(1), st[2]];
                t.as_strided(&s4, &t4, t.storage_offset())
            };
            let w4 = view4(w)?;
            let o4 = [os[0], os[1], 1, os[2]];
            let st = if suggests(w4.get(), 2) {
                channels_last_strides(&o4)
            } else {
                contiguous_strides(&o4)
            };
            Ok(vec![st[0], st[1], st[3]])
        }
        5 => {
            let (xs, ws) = (x.sizes(), w.sizes());
            let cl = (suggests(x, 3) || suggests(w, 3))
                && conv_uses_mkldnn(xs, ws, stride, dilation, groups);
            Ok(if cl {
                channels_last_strides(os)
            } else {
                contiguous_strides(os)
            })
        }
        _ => Ok(contiguous_strides(os)),
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
    shim("aoti_torch_cpu_convolution", || {
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
        let stride = params(stride, stride_len_, sp, "stride")?;
        let padding = params(padding, padding_len_, sp, "padding")?;
        let dilation = params(dilation, dilation_len_, sp, "dilation")?;
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
        let mut result = empty(&os, &ost, dtype)?;
        if dtype == BF16 || dtype == F16 {
            let (x32, w32) = (as_f32(x)?, as_f32(w)?);
            let b32 = match b {
                Some(b) => Some(as_f32(b)?),
                None => None,
            };
            let mut o32 = empty(&os, &ost, F32)?;
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
fn conv_f<T: Real + Element + Default>(
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

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    query: AtenTensorHandle,
    key: AtenTensorHandle,
    value: AtenTensorHandle,
    dropout_p: f64,
    is_causal: i32,
    attn_mask: *mut AtenTensorHandle,
    scale: *const f64,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
) -> i32 {
    shim(
        "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu",
        || {
            let q = handle(query, "query")?;
            let k = handle(key, "key")?;
            let v = handle(value, "value")?;
            let mask = util::optional_handle(attn_mask, "attn_mask");
            let r0 = out(ret0, "ret0")?;
            let r1 = out(ret1, "ret1")?;
            if dropout_p != 0.0 {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!("dropout_p {dropout_p} is not supported (inference: 0)"),
                );
            }
            let dtype = same_dtype(&[(q, "query"), (k, "key"), (v, "value")])?;
            for (t, n) in [(q, "query"), (k, "key"), (v, "value")] {
                expect_dim(t, 4, n)?;
            }
            let (qs, ks, vs) = (q.sizes().to_vec(), k.sizes().to_vec(), v.sizes().to_vec());
            let (bsz, h, l, e) = (qs[0], qs[1], qs[2], qs[3]);
            let (s, ev) = (ks[2], vs[3]);
            if ks[0] != bsz || vs[0] != bsz || ks[1] != h || vs[1] != h || ks[3] != e || vs[2] != s
            {
                return err(
                sys::TENSOR_ERR_SHAPE,
                format!("query {qs:?}, key {ks:?} and value {vs:?} do not fit [B, H, L, E], [B, H, S, E], [B, H, S, Ev]"),
            );
            }
            let scale = if scale.is_null() {
                1.0 / (e as f64).sqrt()
            } else {
                // SAFETY: scale is non-NULL (checked above); c_shim_cpu.h passes an optional
                // double (`float?`) as a pointer to one readable double, live for the call.
                unsafe { scale.read() }
            };
            let osz = [bsz, h, l, ev];
            // ATen's output is laid out like the query (empty_like(query) when E == Ev: the
            // query's strides if it is dense, e.g. the (B, L, H, E).transpose(1, 2) a model's
            // projection gives); otherwise dense in the query's dim order.
            let ost: Vec<i64> = if e == ev {
                let like = q.empty_like(sys::TENSOR_PRESERVE_FORMAT)?;
                like.get().strides().to_vec()
            } else {
                let qst = q.strides();
                let mut order: Vec<usize> = (0..4).collect();
                order.sort_by(|&a, &b| qst[b].cmp(&qst[a]));
                let mut st = [0i64; 4];
                let mut acc = 1;
                for &d in order.iter().rev() {
                    st[d] = acc;
                    acc *= osz[d].max(1);
                }
                st.to_vec()
            };
            let lsz = [bsz, h, l];
            let lst = [l * h, 1, h];
            let mut outp = empty(&osz, &ost, dtype)?;
            let _ = contiguous_strides; // (used by the mask below)
            let mut lse = empty(&lsz, &lst, F32.max(if dtype == F64 { F64 } else { F32 }))?;
            // Float32 (float64 for float64) working copies, contiguous.
            let work = if dtype == F64 { F64 } else { F32 };
            let cvt = |t: Tensor| -> Result<Owned> {
                let c = t.to_dtype(work)?;
                contiguous(c.get())
            };
            let (qc, kc, vc) = (cvt(q)?, cvt(k)?, cvt(v)?);
            let mc = match mask {
                Some(m) => {
                    // broadcast to [B, H, L, S] as float (bool: true keeps, false is -inf)
                    let mut full =
                        empty(&[bsz, h, l, s], &contiguous_strides(&[bsz, h, l, s]), work)?;
                    if m.dtype() == 11 {
                        let f = m.to_dtype(work)?;
                        full.get().copy_from(f.get())?;
                        if work == F64 {
                            bool_mask_to_additive::<f64>(&mut full)?;
                        } else {
                            bool_mask_to_additive::<f32>(&mut full)?;
                        }
                    } else {
                        full.get().copy_from(m).map_err(|mut er| {
                            er.msg = format!(
                                "attn_mask {:?} does not broadcast to {:?}: {}",
                                m.sizes(),
                                [bsz, h, l, s],
                                er.msg
                            );
                            er
                        })?;
                    }
                    Some(full)
                }
                None => None,
            };
            if work == F64 {
                attention::<f64>(
                    &qc,
                    &kc,
                    &vc,
                    mc.as_ref(),
                    [bsz, h, l, s, e, ev],
                    scale,
                    is_causal != 0,
                    F64,
                    &mut outp,
                    &mut lse,
                    dtype,
                )?;
            } else {
                attention::<f32>(
                    &qc,
                    &kc,
                    &vc,
                    mc.as_ref(),
                    [bsz, h, l, s, e, ev],
                    scale,
                    is_causal != 0,
                    F32,
                    &mut outp,
                    &mut lse,
                    dtype,
                )?;
            }
            *r0 = outp.into_raw();
            *r1 = lse.into_raw();
            Ok(())
        },
    )
}

trait Real: Copy + 'static {
    fn f(x: f64) -> Self;
    fn d(self) -> f64;
}
impl Real for f32 {
    fn f(x: f64) -> Self {
        x as f32
    }
    fn d(self) -> f64 {
        self as f64
    }
}
impl Real for f64 {
    fn f(x: f64) -> Self {
        x
    }
    fn d(self) -> f64 {
        self
    }
}

/// A bool mask already converted to float (1 / 0) into the additive mask it means: 0
/// where kept, -inf where masked. `full` is the mask buffer just allocated (`empty`).
fn bool_mask_to_additive<T: Real + Element>(full: &mut Owned) -> Result<()> {
    // SAFETY: full was allocated by `empty` in the attention kernel and only filled by
    // copy_from since: no other reference reaches its storage.
    for x in unsafe { full.values_mut::<T>() }? {
        *x = if x.d() != 0.0 {
            T::f(0.0)
        } else {
            T::f(f64::NEG_INFINITY)
        };
    }
    Ok(())
}

/// Flash attention in `T` (`work`): `q`, `k`, `v`, `mask` are contiguous `T` tensors of
/// sizes [B, H, L, E], [B, H, S, E], [B, H, S, Ev], [B, H, L, S]; `outp` ([B, H, L, Ev],
/// dense, of `out_dtype`) and `lse` ([B, H, L] with strides (L*H, 1, H), of `T`) were just
/// allocated by the caller.
fn attention<T: Real + Element>(
    q: &Owned,
    k: &Owned,
    v: &Owned,
    mask: Option<&Owned>,
    dims: [i64; 6],
    scale: f64,
    causal: bool,
    work: i32,
    outp: &mut Owned,
    lse: &mut Owned,
    out_dtype: i32,
) -> Result<()> {
    let [bsz, h, l, s, e, ev] = dims.map(|x| x as usize);
    let (qv, kv, vv) = (
        q.get().values::<T>()?,
        k.get().values::<T>()?,
        v.get().values::<T>()?,
    );
    let mv = match mask {
        Some(m) => Some(m.get().values::<T>()?),
        None => None,
    };
    // Results in the working dtype with the output strides, then converted if needed.
    let ost: Vec<usize> = outp.get().strides().iter().map(|&x| x as usize).collect();
    let mut o_work = if out_dtype == work {
        None
    } else {
        Some(empty(outp.get().sizes(), outp.get().strides(), work)?)
    };
    // SAFETY: o_work was allocated by `empty` just above, and outp by `empty` in the
    // flash-attention entry point, which hands it to the model only after this returns:
    // no other reference reaches either storage while ov lives.
    let ov = unsafe {
        match o_work.as_mut() {
            Some(o) => o.values_mut::<T>(),
            None => outp.values_mut::<T>(),
        }
    }?;
    // SAFETY: lse was allocated by `empty` in the flash-attention entry point, which hands
    // it to the model only after this returns: no other reference reaches its storage.
    let lv = unsafe { lse.values_mut::<T>() }?;
    let mut scores = vec![T::f(0.0); l * s.max(1)];
    for bi in 0..bsz {
        for hi in 0..h {
            let bh = bi * h + hi;
            if l == 0 {
                continue;
            }
            if s > 0 {
                // SAFETY: T is float32/64 (Element); dst is scores, l x s (its l * s
                // elements); lhs is head bh of the contiguous query qv, l x e from bh*l*e,
                // and rhs the transposed head bh of the contiguous key kv, e x s from
                // bh*s*e, both inside their slices (B*H*L*E and B*H*S*E elements, aligned:
                // checked by values); scores is this call's Vec, overlapping neither.
                unsafe {
                    gemm_any(
                        T::DTYPE,
                        l,
                        s,
                        e,
                        Mat {
                            ptr: scores.as_mut_ptr().cast(),
                            rs: s as isize,
                            cs: 1,
                        },
                        false,
                        Mat {
                            ptr: qv.as_ptr().wrapping_add(bh * l * e).cast_mut().cast(),
                            rs: e as isize,
                            cs: 1,
                        },
                        Mat {
                            ptr: kv.as_ptr().wrapping_add(bh * s * e).cast_mut().cast(),
                            rs: 1,
                            cs: e as isize,
                        },
                        0.0,
                        scale,
                    )
                };
            }
            for i in 0..l {
                let row = &mut scores[i * s..(i + 1) * s];
                let mut mx = f64::NEG_INFINITY;
                for (j, x) in row.iter_mut().enumerate() {
                    let mut val = x.d();
                    if let Some(mv) = mv {
                        val += mv[(bh * l + i) * s + j].d();
                    }
                    if causal && j > i {
                        val = f64::NEG_INFINITY;
                    }
                    *x = T::f(val);
                    mx = mx.max(val);
                }
                let mut sum = 0.0;
                if mx.is_finite() {
                    for x in row.iter_mut() {
                        let p = (x.d() - mx).exp();
                        sum += p;
                        *x = T::f(p);
                    }
                    for x in row.iter_mut() {
                        *x = T::f(x.d() / sum);
                    }
                } else {
                    row.fill(T::f(0.0)); // a fully masked row: zeros, as ATen's flash kernel
                }
                let lse_v = if mx.is_finite() {
                    mx + sum.ln()
                } else {
                    f64::INFINITY
                };
                lv[(bi * l * h) + i * h + hi] = T::f(lse_v);
            }
            // out[b, h] (rows at stride h*ev) = P @ v
            let at = bi * ost[0] + hi * ost[1];
            if s == 0 {
                for i in 0..l {
                    for c in 0..ev {
                        ov[at + i * ost[2] + c * ost[3]] = T::f(0.0);
                    }
                }
                continue;
            }
            let dst = Mat {
                ptr: ov.as_mut_ptr().wrapping_add(at).cast(),
                rs: ost[2] as isize,
                cs: ost[3] as isize,
            };
            // SAFETY: T is float32/64 (Element); dst is out[bi, hi], l x ev at the output's
            // strides inside ov (the dense [B, H, L, Ev] output's aligned elements, which
            // only this call uses); lhs is scores (l x s, this call's Vec) and rhs head bh of
            // the contiguous value vv, s x ev from bh*s*ev, inside it; dst overlaps neither.
            unsafe {
                gemm_any(
                    T::DTYPE,
                    l,
                    ev,
                    s,
                    dst,
                    false,
                    Mat {
                        ptr: scores.as_mut_ptr().cast(),
                        rs: s as isize,
                        cs: 1,
                    },
                    Mat {
                        ptr: vv.as_ptr().wrapping_add(bh * s * ev).cast_mut().cast(),
                        rs: ev as isize,
                        cs: 1,
                    },
                    0.0,
                    1.0,
                )
            };
        }
    }
    if let Some(o) = o_work {
        outp.get().copy_from(o.get())?;
    }
    Ok(())
}

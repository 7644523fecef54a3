//! Matrix products: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out` (float32, float64,
//! float16; bfloat16 through float32), any strides, into the model's `out`.

use super::gemm::{gemm_any, mat, offset};
use super::{as_f32, expect_dim, expect_sizes, same_dtype, AtenTensorHandle, BF16, F32};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, Tensor};

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
    shim(fn_name!(), || {
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
    shim(fn_name!(), || {
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
    shim(fn_name!(), || {
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
    shim(fn_name!(), || {
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

//! Integer-weight matrix products.
//!
//! - `_weight_int8pack_mm(A, B, scales)`: `A [M, K]` (float32, bfloat16, float16; unit
//!   stride along K) times the int8 weight `B [N, K]` (contiguous) with per-output-channel
//!   `scales [N]` of A's dtype: `C[m, n] = Σ_k A[m, k] * (B[n, k] * scales[n])` accumulated
//!   in float32, rounded once to A's dtype; C is `[M, N]` contiguous of A's dtype
//!   (aten/src/ATen/native/cpu/int8mm_kernel.cpp).
//! - `_int_mm_out(out, A, B)`: `A [M, K]` int8 or uint8 times `B [K, N]` int8, any strides,
//!   into the contiguous int32 `out [M, N]`, accumulated in int32 with wraparound.

use super::gemm::{gemm_any, mat, strided};
use super::{
    as_f32, contiguous, dense_f32, expect_dim, expect_dtype, AtenTensorHandle, BF16, F16, F32,
};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Owned, Tensor};

const I8: i32 = sys::TENSOR_INT8;
const U8: i32 = sys::TENSOR_UINT8;
const I32: i32 = sys::TENSOR_INT32;

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__weight_int8pack_mm(
    self_: AtenTensorHandle,
    mat2: AtenTensorHandle,
    scales: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let a = handle(self_, "self")?;
        let b = handle(mat2, "mat2")?;
        let s = handle(scales, "scales")?;
        let r = out(ret0, "ret0")?;
        expect_dtype(a, &[F32, BF16, F16], "A (self)")?;
        expect_dim(a, 2, "A (self)")?;
        if a.strides()[1] != 1 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "A must be contiguous on the last dimension (strides {:?})",
                    a.strides()
                ),
            );
        }
        expect_dtype(b, &[I8], "B (mat2)")?;
        expect_dim(b, 2, "B (mat2)")?;
        if !b.is_contiguous(sys::TENSOR_CONTIGUOUS_FORMAT) {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("expect B to be contiguous (strides {:?})", b.strides()),
            );
        }
        let (m, k, n) = (a.sizes()[0], a.sizes()[1], b.sizes()[0]);
        if b.sizes()[1] != k {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "expect B.size(1) == {k} (A is {:?}, B {:?})",
                    a.sizes(),
                    b.sizes()
                ),
            );
        }
        if s.sizes() != [n] {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "expect scales to be 1d tensor with size {n}, got {:?}",
                    s.sizes()
                ),
            );
        }
        expect_dtype(s, &[a.dtype()], "scales")?;
        *r = weight_int8_mm(a, b, s, [m, k, n])?.into_raw();
        Ok(())
    })
}

/// `_weight_int8pack_mm` once checked: the weight dequantised to float32 (`B * scales`, as
/// ATen's kernel scales it), one float32 GEMM, then A's dtype.
fn weight_int8_mm(a: Tensor, b: Tensor, s: Tensor, [m, k, n]: [i64; 3]) -> Result<Owned> {
    let d = a.dtype();
    let mut c = util::empty(&[m, n], F32)?;
    if m > 0 && n > 0 {
        let (mu, ku, nu) = (m as usize, k as usize, n as usize);
        let sc = dense_f32(s)?;
        let sv = sc.get().values::<f32>()?;
        let bv = b.values::<i8>()?;
        let (bs0, bs1) = (b.strides()[0] as usize, b.strides()[1] as usize);
        let mut w = util::empty(&[n, k], F32)?;
        // SAFETY: w was allocated just above by `empty`: no other reference reaches it.
        let wv = unsafe { w.values_mut::<f32>() }?;
        for (row, (wr, &scale)) in wv.chunks_exact_mut(ku.max(1)).zip(sv).enumerate() {
            for (col, x) in wr.iter_mut().enumerate() {
                *x = f32::from(bv[row * bs0 + col * bs1]) * scale;
            }
        }
        let a32 = as_f32(a)?; // A itself when float32; same strides otherwise
                              // SAFETY: c was allocated just above by `empty`: no other reference reaches it.
        let cv = unsafe { c.values_mut::<f32>() }?;
        if k == 0 {
            cv.fill(0.0);
        } else {
            let (dst, rhs) = (strided(cv.as_mut_ptr(), nu, 1), strided(wv.as_ptr(), 1, ku));
            // SAFETY: float32 views inside live memory: dst is c, [M, N] contiguous (its
            // M*N elements); lhs is A's float32 tensor at its own strides ([M, K], checked
            // sizes; libtensor keeps a tensor's layout inside its storage); rhs is w read
            // transposed, element (k, n) at n * K + k, [K, N]. c and w are this call's
            // allocations, overlapping each other and A in nothing.
            unsafe {
                gemm_any(
                    F32,
                    mu,
                    nu,
                    ku,
                    dst,
                    false,
                    mat(a32.get(), 0, 1),
                    rhs,
                    0.0,
                    1.0,
                )
            };
        }
    }
    if d == F32 {
        Ok(c)
    } else {
        c.get().to_dtype(d)
    }
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__int_mm_out(
    out_: AtenTensorHandle,
    self_: AtenTensorHandle,
    mat2: AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let o = handle(out_, "out")?;
        let a = handle(self_, "self")?;
        let b = handle(mat2, "mat2")?;
        expect_dim(a, 2, "self")?;
        expect_dim(b, 2, "mat2")?;
        let (sa, sb) = (a.sizes(), b.sizes());
        if sa[1] != sb[0] {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("self and mat2 shapes cannot be multiplied ({sa:?} and {sb:?})"),
            );
        }
        expect_dtype(a, &[I8, U8], "self")?;
        expect_dtype(b, &[I8], "mat2")?;
        expect_dtype(o, &[I32], "out")?;
        expect_dim(o, 2, "out")?;
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        if o.sizes() != [m, n] {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("out has sizes {:?}, expected [{m}, {n}]", o.sizes()),
            );
        }
        if !o.is_contiguous(sys::TENSOR_CONTIGUOUS_FORMAT) {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("expected out to be contiguous (strides {:?})", o.strides()),
            );
        }
        let mut res = util::empty(&[m, n], I32)?;
        {
            // SAFETY: res was allocated just above by `empty`: no other reference reaches it.
            let rv = unsafe { res.values_mut::<i32>() }?;
            rv.fill(0);
            let (ac, bc) = (contiguous(a)?, contiguous(b)?);
            let bv = bc.get().values::<i8>()?;
            let dims = [m as usize, k as usize, n as usize];
            if a.dtype() == I8 {
                int_mm(ac.get().values::<i8>()?, bv, rv, dims);
            } else {
                int_mm(ac.get().values::<u8>()?, bv, rv, dims);
            }
        }
        o.copy_from(res.get())
    })
}

/// `c += a @ b` in int32 with wraparound (each product of 8-bit values fits; the sums wrap,
/// as ATen's): `a` [M, K], `b` [K, N], `c` [M, N], all dense row-major; a row of `c` stays
/// in cache while the rows of `b` stream through it.
fn int_mm<A: Copy + Into<i32>>(a: &[A], b: &[i8], c: &mut [i32], [m, k, n]: [usize; 3]) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    for (ar, cr) in a.chunks_exact(k).zip(c.chunks_exact_mut(n)).take(m) {
        for (&x, br) in ar.iter().zip(b.chunks_exact(n)) {
            let x: i32 = x.into();
            if x == 0 {
                continue;
            }
            for (cv, &bv) in cr.iter_mut().zip(br) {
                *cv = cv.wrapping_add(x * i32::from(bv));
            }
        }
    }
}

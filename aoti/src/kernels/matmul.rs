//! Matrix products: `mm_out`, `addmm_out`, `bmm_out`, `baddbmm_out` into the model's
//! `out`; shim.h's `_mm_plus_mm_out`; `_addmm_activation`, `addmv`, `addbmm` (new
//! contiguous outputs, as ATen's). Float32, float64, float16; bfloat16 through float32
//! (rounded into bfloat16 once per ATen kernel call); any strides. Integer dtypes, which
//! ATen's CPU kernels also take, are refused (Inductor generates integer products itself).

use super::gemm::{gemm_any, mat, offset};
use super::{as_f32, expect_dim, expect_sizes, same_dtype, AtenTensorHandle, BF16, F16, F32, F64};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

/// What a product adds to: nothing, `self` (broadcast to out, as addmm's), or what `out`
/// already holds (`out.addmm_(a, b)`, as `_mm_plus_mm`'s second product and `addbmm`'s
/// later batches).
#[derive(Clone, Copy)]
enum Addend<'a> {
    None,
    Tensor(Tensor<'a>),
    Out,
}

/// `out[b] = beta * addend[b] + alpha * a[b] @ b[b]` over a batch (`batched`) or one
/// matrix; the addend is ignored when beta == 0 (as ATen ignores self, NaN included).
fn matmul_into(
    outp: Tensor,
    addend: Addend,
    a: Tensor,
    b: Tensor,
    beta: f64,
    alpha: f64,
    batched: bool,
) -> Result<()> {
    let mut ts = vec![(outp, "out"), (a, "mat1"), (b, "mat2")];
    if let Addend::Tensor(s) = addend {
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
    if let Addend::Tensor(s) = addend {
        // (ATen checks that self broadcasts even when beta == 0 ignores it)
        s.expand(&want).map_err(|mut e| {
            e.msg = format!(
                "self {:?} does not broadcast to out {want:?}: {}",
                s.sizes(),
                e.msg
            );
            e
        })?;
    }
    let read_dst = beta != 0.0 && !matches!(addend, Addend::None);
    if let (true, Addend::Tensor(s)) = (read_dst, addend) {
        outp.copy_from(s)?;
    }
    if dtype == BF16 {
        // Through float32: the product in float32, rounded once into the bfloat16 out.
        let (a32, b32, o32) = (as_f32(a)?, as_f32(b)?, as_f32(outp)?);
        matmul_f(
            o32.get(),
            read_dst,
            a32.get(),
            b32.get(),
            beta,
            alpha,
            batched,
            F32,
        )?;
        return outp.copy_from(o32.get());
    }
    matmul_f(outp, read_dst, a, b, beta, alpha, batched, dtype)
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
            Addend::None,
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
            Addend::Tensor(s),
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
            Addend::None,
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
            Addend::Tensor(s),
            handle(batch1, "batch1")?,
            handle(batch2, "batch2")?,
            beta,
            alpha,
            true,
        )
    })
}

// ------------------------------------------------------------------------------------------
// Products with a new output, and shim.h's sum of two products.

/// `out = a @ b + c @ d` (shim.h; libtorch runs `at::mm_out(out, a, b)` then
/// `out.addmm_(c, d)`, so a bfloat16 out is rounded after each product). Inductor emits it
/// with `max_autotune` when the ATen choice wins for a sum of two products.
#[no_mangle]
pub extern "C" fn aoti_torch__mm_plus_mm_out(
    out_: AtenTensorHandle,
    a: AtenTensorHandle,
    b: AtenTensorHandle,
    c: AtenTensorHandle,
    d: AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let o = handle(out_, "out")?;
        let (a, b) = (handle(a, "a")?, handle(b, "b")?);
        let (c, d) = (handle(c, "c")?, handle(d, "d")?);
        matmul_into(o, Addend::None, a, b, 0.0, 1.0, false)?;
        matmul_into(o, Addend::Out, c, d, 1.0, 1.0, false)
    })
}

/// `x @ w.T + b` (ATen's `linear`) for `x` of any rank >= 1 over its last dim, `w` an
/// [out, in] matrix, `b` [out] or none: a new contiguous output of sizes x's but the last,
/// then `out`.
pub(super) fn linear(x: Tensor, w: Tensor, b: Option<Tensor>) -> Result<Owned> {
    expect_dim(w, 2, "weight")?;
    let (xs, ws) = (x.sizes(), w.sizes());
    let Some((&k, lead)) = xs.split_last() else {
        return err(sys::TENSOR_ERR_SHAPE, "linear: the input is 0-dim");
    };
    if k != ws[1] {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("linear: input {xs:?} and weight {ws:?} cannot be multiplied (its last dim must be weight.size(1))"),
        );
    }
    let m = super::checked_numel(lead, "linear input")? as i64;
    let x2 = x.reshape(&[m, k])?;
    let wt = w.as_strided(
        &[ws[1], ws[0]],
        &[w.strides()[1], w.strides()[0]],
        w.storage_offset(),
    )?;
    let mut os = lead.to_vec();
    os.push(ws[0]);
    let o = util::empty(&os, x.dtype())?;
    let o2 = o.get().view(&[m, ws[0]])?;
    let addend = b.map_or(Addend::None, Addend::Tensor);
    matmul_into(o2.get(), addend, x2.get(), wt.get(), 1.0, 1.0, false)?;
    Ok(o)
}

/// A new contiguous `[m, n]` output for the product of `mat1` (m x k) and `mat2` (k x n),
/// once both are matrices, in mat1's dtype (`matmul_into` checks the rest).
fn product_out(mat1: Tensor, mat2: Tensor, names: [&str; 2]) -> Result<Owned> {
    expect_dim(mat1, 2, names[0])?;
    expect_dim(mat2, 2, names[1])?;
    util::empty(&[mat1.sizes()[0], mat2.sizes()[1]], mat1.dtype())
}

/// `_addmm_activation(self, mat1, mat2, beta, alpha, use_gelu)`: `addmm` then ATen's CPU
/// epilogue in place, `gelu` (the exact, erf form: `approximate="none"`) or `relu` (NaN
/// kept). Inductor leaves it as a fallback when the graph calls it (its addmm + gelu
/// pattern is lowered to `addmm_out` and its own gelu instead).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu__addmm_activation(
    self_: AtenTensorHandle,
    mat1: AtenTensorHandle,
    mat2: AtenTensorHandle,
    beta: f64,
    alpha: f64,
    use_gelu: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let s = handle(self_, "self")?;
        let (a, b) = (handle(mat1, "mat1")?, handle(mat2, "mat2")?);
        let r = out(ret0, "ret0")?;
        let mut o = product_out(a, b, ["mat1", "mat2"])?;
        matmul_into(o.get(), Addend::Tensor(s), a, b, beta, alpha, false)?;
        activate(&mut o, use_gelu != 0)?;
        *r = o.into_raw();
        Ok(())
    })
}

/// GELU or ReLU of every element of `o` (a float tensor just allocated), in ATen's op-math
/// type (float32 for float32, float16 and bfloat16; float64 for float64).
fn activate(o: &mut Owned, gelu: bool) -> Result<()> {
    fn apply<T: Element, W: Copy>(
        o: &mut Owned,
        to: impl Fn(T) -> W,
        from: impl Fn(W) -> T,
        f: impl Fn(W) -> W,
    ) -> Result<()> {
        // SAFETY: o was just allocated by the caller (activate's contract) and nothing else
        // reaches its storage.
        for v in unsafe { o.values_mut::<T>() }? {
            *v = from(f(to(*v)));
        }
        Ok(())
    }
    let g32 = |x: f32| x * 0.5 * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2));
    let g64 = |x: f64| x * 0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
    let r32 = |x: f32| if x < 0.0 { 0.0 } else { x };
    let r64 = |x: f64| if x < 0.0 { 0.0 } else { x };
    let f32_of = |x: f32| x;
    match (o.get().dtype(), gelu) {
        (F64, true) => apply::<f64, f64>(o, |x| x, |x| x, g64),
        (F64, false) => apply::<f64, f64>(o, |x| x, |x| x, r64),
        (F32, true) => apply::<f32, f32>(o, f32_of, f32_of, g32),
        (F32, false) => apply::<f32, f32>(o, f32_of, f32_of, r32),
        (F16, true) => apply(o, half::f16::to_f32, half::f16::from_f32, g32),
        (F16, false) => apply(o, half::f16::to_f32, half::f16::from_f32, r32),
        (BF16, true) => apply(o, half::bf16::to_f32, half::bf16::from_f32, g32),
        (BF16, false) => apply(o, half::bf16::to_f32, half::bf16::from_f32, r32),
        (d, _) => err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "_addmm_activation: {} is not supported",
                util::dtype_name(d)
            ),
        ),
    }
}

/// `addmv(self, mat, vec, beta, alpha)`: `beta * self + alpha * mat @ vec`, a new
/// contiguous `[m]` (self broadcast to it; ignored when beta == 0). An empty mat with beta
/// != 0 gives `beta * self` with self's own sizes, as ATen's shortcut does. Inductor lowers
/// `torch.addmv` and `mat @ vec` itself (no fallback with the default configs).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_addmv(
    self_: AtenTensorHandle,
    mat: AtenTensorHandle,
    vec: AtenTensorHandle,
    beta: f64,
    alpha: f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let s = handle(self_, "self")?;
        let (a, v) = (handle(mat, "mat")?, handle(vec, "vec")?);
        let r = out(ret0, "ret0")?;
        expect_dim(a, 2, "mat")?;
        expect_dim(v, 1, "vec")?;
        let (m, k) = (a.sizes()[0], a.sizes()[1]);
        if v.sizes()[0] != k {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "size mismatch, got input ({}), mat ({m}x{k}), vec ({})",
                    s.sizes().first().copied().unwrap_or(1),
                    v.sizes()[0]
                ),
            );
        }
        if s.ndim() > 1 || s.expand(&[m]).is_err() {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("self {:?} does not broadcast to [{m}]", s.sizes()),
            );
        }
        if a.numel() == 0 && beta != 0.0 {
            // ATen's shortcut for an empty mat: `mul_out(result, self, beta)`, which resizes
            // the result to self's own sizes (contiguous), not to [m].
            let o = util::empty(s.sizes(), s.dtype())?;
            let n = s.numel();
            let (o2, s2) = (
                o.get().view(&[n, 1])?,
                s.contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)?,
            );
            let s2 = s2.get().view(&[n, 1])?;
            let (e1, e2) = (
                util::empty(&[n, 0], a.dtype())?,
                util::empty(&[0, 1], a.dtype())?,
            );
            let addend = Addend::Tensor(s2.get());
            matmul_into(o2.get(), addend, e1.get(), e2.get(), beta, alpha, false)?;
            *r = o.into_raw();
            return Ok(());
        }
        // As matrices: out and self [m, 1], vec [k, 1].
        let o = util::empty(&[m], a.dtype())?;
        let (o2, v2) = (o.get().unsqueeze(1)?, v.unsqueeze(1)?);
        let s2 = s.expand(&[m])?.get().unsqueeze(1)?;
        matmul_into(
            o2.get(),
            Addend::Tensor(s2.get()),
            a,
            v2.get(),
            beta,
            alpha,
            false,
        )?;
        *r = o.into_raw();
        Ok(())
    })
}

/// `addbmm(self, batch1, batch2, beta, alpha)`: `beta * self + alpha * sum_b batch1[b] @
/// batch2[b]`, a new contiguous `[m, n]`, accumulated batch by batch as ATen's CPU kernel
/// (`addmm_` per batch, beta for the first only; no batches gives `beta * self`, or zeros
/// when beta == 0). Inductor leaves `torch.addbmm` as this fallback.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_addbmm(
    self_: AtenTensorHandle,
    batch1: AtenTensorHandle,
    batch2: AtenTensorHandle,
    beta: f64,
    alpha: f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let s = handle(self_, "self")?;
        let (b1, b2) = (handle(batch1, "batch1")?, handle(batch2, "batch2")?);
        let r = out(ret0, "ret0")?;
        expect_dim(b1, 3, "batch1")?;
        expect_dim(b2, 3, "batch2")?;
        let (nb, m, k) = (b1.sizes()[0], b1.sizes()[1], b1.sizes()[2]);
        let (nb2, k2, n) = (b2.sizes()[0], b2.sizes()[1], b2.sizes()[2]);
        if nb != nb2 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("batch1 and batch2 must have same number of batches, got {nb} and {nb2}"),
            );
        }
        if k != k2 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("Incompatible matrix sizes for bmm ({m}x{k} and {k2}x{n})"),
            );
        }
        let o = util::empty(&[m, n], b1.dtype())?;
        if nb == 0 {
            // beta * self through an empty product (k = 0).
            let (e1, e2) = (
                util::empty(&[m, 0], b1.dtype())?,
                util::empty(&[0, n], b1.dtype())?,
            );
            matmul_into(
                o.get(),
                Addend::Tensor(s),
                e1.get(),
                e2.get(),
                beta,
                alpha,
                false,
            )?;
        }
        for i in 0..nb {
            let (x, y) = (b1.select(0, i)?, b2.select(0, i)?);
            let (addend, scale) = if i == 0 {
                (Addend::Tensor(s), beta)
            } else {
                (Addend::Out, 1.0)
            };
            matmul_into(o.get(), addend, x.get(), y.get(), scale, alpha, false)?;
        }
        *r = o.into_raw();
        Ok(())
    })
}

//! Scaled dot-product attention (`_scaled_dot_product_flash_attention_for_cpu`): out
//! [B, H, L, Ev] with the strides of (B, L, H, Ev).transpose(1, 2), logsumexp [B, H, L] with
//! those of (B, L, H).transpose(1, 2).

use super::gemm::{gemm_any, gemm_serial, Mat};
use super::parallel::{self, Shared};
use super::{contiguous, expect_dim, same_dtype, vmath, AtenTensorHandle, F32, F64};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

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
    shim(fn_name!(), || {
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
        if ks[0] != bsz || vs[0] != bsz || ks[1] != h || vs[1] != h || ks[3] != e || vs[2] != s {
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
        // Float32 (float64 for float64): the working dtype, and logsumexp's.
        let work = if dtype == F64 { F64 } else { F32 };
        // ATen's output is laid out like the query (empty_like(query) when E == Ev: the
        // query's strides if it is dense, e.g. the (B, L, H, E).transpose(1, 2) a model's
        // projection gives); otherwise dense in the query's dim order.
        let mut outp = if e == ev {
            q.empty_like(sys::TENSOR_PRESERVE_FORMAT)?
        } else {
            let qst = q.strides();
            let mut order: Vec<usize> = (0..4).collect();
            order.sort_by(|&a, &b| qst[b].cmp(&qst[a]));
            util::empty_permuted(&osz, &order, dtype)?
        };
        // logsumexp [B, H, L] laid out as (B, L, H).transpose(1, 2).
        let mut lse = util::empty_permuted(&[bsz, h, l], &[0, 2, 1], work)?;
        if let (F32, Some(isa)) = (dtype, vmath::Isa::best()) {
            let mask = match mask {
                Some(m) => Some(additive_mask_f32(m, [bsz, h, l, s])?),
                None => None,
            };
            attention_f32(
                isa,
                q,
                k,
                v,
                mask.as_ref().map(|m| m.get()),
                [bsz, h, l, s, e, ev],
                scale as f32,
                is_causal != 0,
                &mut outp,
                &mut lse,
            )?;
            *r0 = outp.into_raw();
            *r1 = lse.into_raw();
            return Ok(());
        }
        // Working copies, contiguous.
        let cvt = |t: Tensor| -> Result<Owned> {
            let c = t.to_dtype(work)?;
            contiguous(c.get())
        };
        let (qc, kc, vc) = (cvt(q)?, cvt(k)?, cvt(v)?);
        let mc = match mask {
            Some(m) => {
                // broadcast to [B, H, L, S] as float (bool: true keeps, false is -inf)
                let mut full = util::empty(&[bsz, h, l, s], work)?;
                if m.dtype() == sys::TENSOR_BOOL {
                    let f = m.to_dtype(work)?;
                    full.get().copy_from(f.get())?;
                    if work == F64 {
                        bool_mask_to_additive::<f64>(&mut full)?;
                    } else {
                        bool_mask_to_additive::<f32>(&mut full)?;
                    }
                } else {
                    full.get()
                        .copy_from(m)
                        .map_err(|er| not_broadcast(er, m, [bsz, h, l, s]))?;
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
    })
}

/// The error of a mask that does not broadcast to the scores' [B, H, L, S].
fn not_broadcast(mut er: crate::error::Error, m: Tensor, full: [i64; 4]) -> crate::error::Error {
    er.msg = format!(
        "attn_mask {:?} does not broadcast to {full:?}: {}",
        m.sizes(),
        er.msg
    );
    er
}

/// `m` as the float32 additive mask of the scores: [B, H, L, S] (`full`) broadcast from it
/// (zero strides), its last dim contiguous. A bool mask becomes 0 where true and -inf where
/// false; another dtype is converted.
fn additive_mask_f32(m: Tensor, full: [i64; 4]) -> Result<Owned> {
    let add = if m.dtype() == sys::TENSOR_BOOL {
        let mut f = util::empty(m.sizes(), F32)?;
        f.get().copy_from(m)?;
        bool_mask_to_additive::<f32>(&mut f)?;
        f
    } else if m.dtype() == F32 {
        m.retain()
    } else {
        m.to_dtype(F32)?
    };
    let wide = add
        .get()
        .expand(&full)
        .map_err(|er| not_broadcast(er, m, full))?;
    if wide.get().strides()[3] == 1 || full[3] <= 1 {
        Ok(wide)
    } else {
        contiguous(wide.get())
    }
}

/// Rows of the query per task of the float32 kernel (its scores: `QB x S` floats).
const QB: usize = 32;

/// Flash attention in float32 in vectors of `isa` (AVX-512F; AVX2 + FMA), straight on the
/// caller's tensors (any strides): one task per (batch, head, block of `QB` query rows) on
/// the model's OpenMP threads, each
/// `scores = scale * q @ k^T` (a GEMM), softmax over each row with the mask added and the
/// causal columns left out (vector `exp`), `out = scores @ v` (a GEMM into the output's
/// rows). `mask` is `additive_mask_f32`'s; `outp` and `lse` as for `attention`, float32.
#[allow(clippy::too_many_arguments)]
fn attention_f32(
    isa: vmath::Isa,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Option<Tensor>,
    dims: [i64; 6],
    scale: f32,
    causal: bool,
    outp: &mut Owned,
    lse: &mut Owned,
) -> Result<()> {
    let [bsz, h, l, s, e, ev] = dims.map(|x| x as usize);
    let st = |t: Tensor| -> Vec<usize> { t.strides().iter().map(|&x| x as usize).collect() };
    let (qs, ks, vs, os, ls) = (st(q), st(k), st(v), st(outp.get()), st(lse.get()));
    let (qv, kv, vv) = (q.values::<f32>()?, k.values::<f32>()?, v.values::<f32>()?);
    let mv = match mask {
        Some(m) => Some((m.values::<f32>()?, st(m))),
        None => None,
    };
    // SAFETY: outp and lse were allocated by `empty` in the flash-attention entry point,
    // which hands them to the model only after this returns: nothing else reaches them.
    let (ov, lv) = unsafe { (outp.values_mut::<f32>()?, lse.values_mut::<f32>()?) };
    let (optr, lptr) = (Shared(ov.as_mut_ptr()), Shared(lv.as_mut_ptr()));
    let blocks = l.div_ceil(QB);
    let tasks = bsz * h * blocks;
    let parts = parallel::threads().min(tasks).max(1);
    parallel::run(parts, &|part| {
        let mut scores = vec![0f32; QB * s.max(1)];
        for t in parallel::chunk(tasks, parts, 1, part) {
            let (bi, hi, i0) = (t / (h * blocks), t / blocks % h, t % blocks * QB);
            let rows = QB.min(l - i0);
            // The key columns any row of the block keeps (causal: j <= i).
            let kk = if causal { (i0 + rows).min(s) } else { s };
            let out_at = bi * os[0] + hi * os[1] + i0 * os[2];
            let dst = Mat {
                ptr: optr.get().wrapping_add(out_at).cast(),
                rs: os[2] as isize,
                cs: os[3] as isize,
            };
            let sc = Mat {
                ptr: scores.as_mut_ptr().cast(),
                rs: s as isize,
                cs: 1,
            };
            if kk > 0 {
                // SAFETY: float32 views: scores (this task's Vec, rows x kk at row stride
                // s <= its QB * s); rows i0..i0 + rows of head (bi, hi) of q (e columns) and
                // the first kk rows of that head of k, read transposed (e x kk): elements
                // their own layouts reach, inside qv / kv (values' extents); scores overlaps
                // neither.
                unsafe {
                    gemm_serial(
                        F32,
                        rows,
                        kk,
                        e,
                        sc,
                        false,
                        view(qv, bi * qs[0] + hi * qs[1] + i0 * qs[2], qs[2], qs[3]),
                        view(kv, bi * ks[0] + hi * ks[1], ks[3], ks[2]),
                        0.0,
                        scale as f64,
                    )
                };
            }
            for r in 0..rows {
                let i = i0 + r;
                let keep = if causal { (i + 1).min(s) } else { s };
                let mrow = mv
                    .as_ref()
                    .map(|(m, ms)| &m[bi * ms[0] + hi * ms[1] + i * ms[2]..][..s]);
                let lse_v = softmax_row(isa, &mut scores[r * s..r * s + kk], keep, mrow);
                // SAFETY: element (bi, hi, i) of lse, written only by this task (the one of
                // row i's block of head (bi, hi)); lse outlives the run.
                unsafe { *lptr.get().add(bi * ls[0] + hi * ls[1] + i * ls[2]) = lse_v };
            }
            // SAFETY: float32 views: the block's rows x ev of the output (its own layout,
            // inside ov; only this task writes them), scores (rows x kk, this task's Vec)
            // and the first kk rows of head (bi, hi) of v (inside vv); dst overlaps neither.
            unsafe {
                gemm_serial(
                    F32,
                    rows,
                    ev,
                    kk,
                    dst,
                    false,
                    sc,
                    view(vv, bi * vs[0] + hi * vs[1], vs[2], vs[3]),
                    0.0,
                    1.0,
                )
            };
        }
    });
    Ok(())
}

/// The float32 matrix at element `at` of `v` with strides `rs`, `cs`.
fn view(v: &[f32], at: usize, rs: usize, cs: usize) -> Mat {
    Mat {
        ptr: v.as_ptr().wrapping_add(at).cast_mut().cast(),
        rs: rs as isize,
        cs: cs as isize,
    }
}

/// One row of scores into its softmax, in place: `row[..keep]` plus `mask[..keep]`, then
/// `exp(x - max) / sum`; `row[keep..]` (causally left out) is 0. A row with nothing kept
/// (all -inf) is all 0 and its logsumexp 0, as ATen's flash kernel gives. Returns the row's
/// logsumexp (`max + ln(sum)`).
///
/// # Safety
///
/// `L`'s ISA is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn softmax_row_lanes<L: vmath::Lanes>(
    row: &mut [f32],
    keep: usize,
    mask: Option<&[f32]>,
) -> f32 {
    let keep = keep.min(row.len());
    let p = row.as_mut_ptr();
    // SAFETY: L's ISA (the caller's), here and in every block below; their loads and stores
    // of n = keep - j lanes from j are elements j..keep of row (and of mask, whose length
    // is at least row's): in bounds.
    let mut vmax = unsafe { L::splat(f32::NEG_INFINITY) };
    for j in (0..keep).step_by(L::N) {
        let n = keep - j;
        // SAFETY: see above; the lanes past n are -inf (and 0 in the mask): no effect on
        // the max.
        unsafe {
            let mut x = L::load_fill(p.add(j), n, f32::NEG_INFINITY);
            if let Some(m) = mask {
                x = L::add(x, L::load(m[..keep].as_ptr().add(j), n));
                L::store(p.add(j), n, x);
            }
            vmax = L::max(vmax, x);
        }
    }
    // SAFETY: see above.
    let mx = unsafe { L::hmax(vmax) };
    if mx == f32::NEG_INFINITY {
        row.fill(0.0);
        return 0.0;
    }
    // SAFETY: see above.
    let (vmx, mut vsum) = unsafe { (L::splat(mx), L::zero()) };
    for j in (0..keep).step_by(L::N) {
        let n = keep - j;
        // SAFETY: see above; the lanes past n are exp(-inf) = 0 in the sum.
        unsafe {
            let e = vmath::exp::<L>(L::sub(L::load_fill(p.add(j), n, f32::NEG_INFINITY), vmx));
            L::store(p.add(j), n, e);
            vsum = L::add(vsum, e);
        }
    }
    // SAFETY: see above.
    let sum = unsafe { L::hsum(vsum) };
    // SAFETY: see above.
    let inv = unsafe { L::splat(1.0 / sum) };
    for j in (0..keep).step_by(L::N) {
        let n = keep - j;
        // SAFETY: see above.
        unsafe {
            let x = L::load(p.add(j), n);
            L::store(p.add(j), n, L::mul(x, inv));
        }
    }
    row[keep..].fill(0.0);
    mx + sum.ln()
}

vmath::lanes_fn!(fn softmax_row<'a>(row: &'a mut [f32], keep: usize, mask: Option<&'a [f32]>) -> f32 = softmax_row_lanes);

/// A bool mask already converted to float (1 / 0) into the additive mask it means: 0
/// where kept, -inf where masked. `full` is the mask buffer just allocated (`empty`).
fn bool_mask_to_additive<T: Element>(full: &mut Owned) -> Result<()> {
    // SAFETY: full was allocated by `empty` in the attention kernel and only filled by
    // copy_from since: no other reference reaches its storage.
    for x in unsafe { full.values_mut::<T>() }? {
        *x = if x.to_f64() != 0.0 {
            T::from_f64(0.0)
        } else {
            T::from_f64(f64::NEG_INFINITY)
        };
    }
    Ok(())
}

/// Flash attention in `T` (`work`): `q`, `k`, `v`, `mask` are contiguous `T` tensors of
/// sizes [B, H, L, E], [B, H, S, E], [B, H, S, Ev], [B, H, L, S]; `outp` ([B, H, L, Ev],
/// dense, of `out_dtype`) and `lse` ([B, H, L] with strides (L*H, 1, H), of `T`) were just
/// allocated by the caller.
fn attention<T: Element>(
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
        Some(util::empty_strided(
            outp.get().sizes(),
            outp.get().strides(),
            work,
        )?)
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
    let mut scores = vec![T::from_f64(0.0); l * s.max(1)];
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
                    let mut val = x.to_f64();
                    if let Some(mv) = mv {
                        val += mv[(bh * l + i) * s + j].to_f64();
                    }
                    if causal && j > i {
                        val = f64::NEG_INFINITY;
                    }
                    *x = T::from_f64(val);
                    mx = mx.max(val);
                }
                let mut sum = 0.0;
                if mx != f64::NEG_INFINITY {
                    for x in row.iter_mut() {
                        let p = (x.to_f64() - mx).exp();
                        sum += p;
                        *x = T::from_f64(p);
                    }
                    for x in row.iter_mut() {
                        *x = T::from_f64(x.to_f64() / sum);
                    }
                } else {
                    // A fully masked row: zeros, and logsumexp 0, as ATen's flash kernel.
                    row.fill(T::from_f64(0.0));
                }
                let lse_v = if mx != f64::NEG_INFINITY {
                    mx + sum.ln()
                } else {
                    0.0
                };
                lv[(bi * l * h) + i * h + hi] = T::from_f64(lse_v);
            }
            // out[b, h] (rows at stride h*ev) = P @ v
            let at = bi * ost[0] + hi * ost[1];
            if s == 0 {
                for i in 0..l {
                    for c in 0..ev {
                        ov[at + i * ost[2] + c * ost[3]] = T::from_f64(0.0);
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

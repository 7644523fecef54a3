//! Scaled dot-product attention (`_scaled_dot_product_flash_attention_for_cpu`): out
//! [B, H, L, Ev] with the strides of (B, L, H, Ev).transpose(1, 2), logsumexp [B, H, L] with
//! those of (B, L, H).transpose(1, 2).

use super::gemm::{gemm_any, Mat};
use super::{contiguous, expect_dim, same_dtype, AtenTensorHandle, F32, F64};
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
    })
}

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
                if mx.is_finite() {
                    for x in row.iter_mut() {
                        let p = (x.to_f64() - mx).exp();
                        sum += p;
                        *x = T::from_f64(p);
                    }
                    for x in row.iter_mut() {
                        *x = T::from_f64(x.to_f64() / sum);
                    }
                } else {
                    row.fill(T::from_f64(0.0)); // a fully masked row: zeros, as ATen's flash kernel
                }
                let lse_v = if mx.is_finite() {
                    mx + sum.ln()
                } else {
                    f64::INFINITY
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

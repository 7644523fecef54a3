//! The recurrent layer ATen runs through oneDNN (`mkldnn_rnn_layer`, c/shim_cpu.h): one
//! direction of one LSTM layer over a whole sequence.
//!
//! Inductor emits it for `nn.LSTM` in float32 / bfloat16 inference (torch/_decomp's
//! `mkldnn_one_layer_lstm`, one call per layer and direction, the batch-first transpose, the
//! stacking of the states and the concatenation of the directions done around it). GRU,
//! vanilla RNN and LSTM with projections or in float16 are decomposed by Inductor into
//! `addmm` / `mm` per time step instead.
//!
//! What ATen computes (aten/src/ATen/native/mkldnn/RNN.cpp, checked against torch 2.15): the
//! input is `[T, B, I]` time-major whatever `batch_first` says; with gates
//! `(i, f, g, o) = x_t W0^T + h W1^T + (w2 + w3)` (`W0 = weight0 [4H, I]`,
//! `W1 = weight1 [4H, H]`, the biases `weight2`, `weight3` [4H] read only when `has_biases`),
//! `c = σ(f) c + σ(i) tanh(g)`, `h = σ(o) tanh(c)`, from `hx`, `cx` (B*H values each), over
//! t = 0..T (T-1..0 when `reverse`, the outputs staying at their time index). Outputs:
//! `output [T, B, hidden_size]` of the input's dtype, `hy` with hx's sizes and dtype, `cy`
//! with cx's, all contiguous; the workspace (oneDNN's training buffer) is an empty uint8
//! tensor, as ATen's meta function gives (an undefined tensor in ATen inference).
//! `num_layers`, `bidirectional`, `batch_first` and `train` do not change the result in
//! ATen and are not read here.

use super::gemm::{gemm_any, strided};
use super::{
    checked_numel, dense_f32, expect_dim, expect_dtype, expect_sizes, AtenTensorHandle, BF16, F16,
    F32,
};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Owned, Tensor};

/// `mode` of an LSTM (ideep::rnn_kind::LSTM); ATen's oneDNN primitive computes no other.
const LSTM: i64 = 2;

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_mkldnn_rnn_layer(
    input: AtenTensorHandle,
    weight0: AtenTensorHandle,
    weight1: AtenTensorHandle,
    weight2: AtenTensorHandle,
    weight3: AtenTensorHandle,
    hx_: AtenTensorHandle,
    cx_: AtenTensorHandle,
    reverse: i32,
    batch_sizes: *const i64,
    batch_sizes_len_: i64,
    mode: i64,
    hidden_size: i64,
    num_layers: i64,
    has_biases: i32,
    bidirectional: i32,
    batch_first: i32,
    train: i32,
    ret0: *mut AtenTensorHandle,
    ret1: *mut AtenTensorHandle,
    ret2: *mut AtenTensorHandle,
    ret3: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let x = handle(input, "input")?;
        let w0 = handle(weight0, "weight0")?;
        let w1 = handle(weight1, "weight1")?;
        let w2 = handle(weight2, "weight2")?;
        let w3 = handle(weight3, "weight3")?;
        let hx = handle(hx_, "hx_")?;
        let cx = handle(cx_, "cx_")?;
        let rets = [
            out(ret0, "ret0")?,
            out(ret1, "ret1")?,
            out(ret2, "ret2")?,
            out(ret3, "ret3")?,
        ];
        let _ = (num_layers, bidirectional, batch_first, train); // not read by ATen either
        if mode != LSTM {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("mode {mode} is not supported: only LSTM (mode 2) is, as in ATen, whose oneDNN primitive is an LSTM (Inductor decomposes GRU and RNN into mm/addmm)"),
            );
        }
        if batch_sizes_len_ != 0 {
            let _ = util::array(batch_sizes, batch_sizes_len_, "batch_sizes")?;
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("batch_sizes has {batch_sizes_len_} entries: packed sequences are not supported (ATen's mkldnn_rnn refuses them too)"),
            );
        }
        let layer = check_layer(x, w0, w1, w2, w3, hx, cx, hidden_size, has_biases != 0)?;
        let outputs = run_layer(&layer, reverse != 0)?;
        for (r, o) in rets.into_iter().zip(outputs) {
            *r = o.into_raw();
        }
        Ok(())
    })
}

/// The checked arguments of one layer: its tensors and sizes.
struct Layer<'a> {
    x: Tensor<'a>,
    w_ih: Tensor<'a>,
    w_hh: Tensor<'a>,
    biases: Option<(Tensor<'a>, Tensor<'a>)>,
    hx: Tensor<'a>,
    cx: Tensor<'a>,
    /// seq_len, batch, input_size, hidden_size
    t: usize,
    b: usize,
    i: usize,
    h: usize,
}

/// ATen's dtype rules (oneDNN's: input, weights and hx of one of float32, bfloat16, float16;
/// cx and the biases of that dtype or float32) and the sizes its kernel assumes without
/// checking (it reads past a short tensor; here that is a SHAPE error).
#[allow(clippy::too_many_arguments)]
fn check_layer<'a>(
    x: Tensor<'a>,
    w0: Tensor<'a>,
    w1: Tensor<'a>,
    w2: Tensor<'a>,
    w3: Tensor<'a>,
    hx: Tensor<'a>,
    cx: Tensor<'a>,
    hidden_size: i64,
    has_biases: bool,
) -> Result<Layer<'a>> {
    expect_dtype(x, &[F32, BF16, F16], "input")?;
    let d = x.dtype();
    for (t, name) in [(w0, "weight0"), (w1, "weight1"), (hx, "hx_")] {
        expect_dtype(t, &[d], name)?;
    }
    let wide: &[i32] = if d == F32 { &[F32] } else { &[d, F32] };
    expect_dtype(cx, wide, "cx_")?;
    expect_dim(x, 3, "input")?;
    let (t, b, i) = (x.sizes()[0], x.sizes()[1], x.sizes()[2]);
    let h = hidden_size;
    let g4 = h
        .checked_mul(4)
        .filter(|_| h >= 0)
        .ok_or_else(|| crate::error::Error {
            status: sys::TENSOR_ERR_INVALID_ARGUMENT,
            msg: format!("hidden_size {h} is negative or too large"),
        })?;
    expect_sizes(w0, &[g4, i], "weight0")?;
    expect_sizes(w1, &[g4, h], "weight1")?;
    let biases = if has_biases {
        for (t, name) in [(w2, "weight2"), (w3, "weight3")] {
            expect_dtype(t, wide, name)?;
            expect_sizes(t, &[g4], name)?;
        }
        Some((w2, w3))
    } else {
        None
    };
    let state = checked_numel(&[b, h], "batch * hidden_size")?;
    for (s, name) in [(hx, "hx_"), (cx, "cx_")] {
        if s.sizes().last() != Some(&h) || s.numel() as u64 != state as u64 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "{name} has sizes {:?}, expected {b} * {h} (batch * hidden_size) elements with hidden_size last, e.g. [1, {b}, {h}]",
                    s.sizes()
                ),
            );
        }
    }
    checked_numel(&[t, b, g4], "the gates of every step")?;
    Ok(Layer {
        x,
        w_ih: w0,
        w_hh: w1,
        biases,
        hx,
        cx,
        t: t as usize,
        b: b as usize,
        i: i as usize,
        h: h as usize,
    })
}

/// A float32 tensor, contiguous, with these sizes.
fn dense(sizes: &[i64]) -> Result<Owned> {
    util::empty(sizes, F32)
}

/// Rounds a float32 value to `dtype`'s precision (bfloat16, float16) and back.
fn rounder(dtype: i32) -> fn(f32) -> f32 {
    match dtype {
        BF16 => |v| half::bf16::from_f32(v).to_f32(),
        F16 => |v| half::f16::from_f32(v).to_f32(),
        _ => |v| v,
    }
}

/// Runs the layer in float32 (the low-precision dtypes' values converted exactly; each
/// step's h rounded to the input dtype, as the output it is and the state oneDNN feeds
/// back): output, hy, cy and the empty workspace, in ATen's dtypes and layouts.
fn run_layer(l: &Layer, reverse: bool) -> Result<[Owned; 4]> {
    let d = l.x.dtype();
    let (x, w_ih, w_hh) = (dense_f32(l.x)?, dense_f32(l.w_ih)?, dense_f32(l.w_hh)?);
    let bias = match l.biases {
        Some((b2, b3)) => {
            // ATen adds the two in their promoted dtype.
            let round = if b2.dtype() == b3.dtype() {
                rounder(b2.dtype())
            } else {
                |v| v
            };
            let (b2, b3) = (dense_f32(b2)?, dense_f32(b3)?);
            let (v2, v3) = (b2.get().values::<f32>()?, b3.get().values::<f32>()?);
            Some(
                v2.iter()
                    .zip(v3)
                    .map(|(a, b)| round(a + b))
                    .collect::<Vec<f32>>(),
            )
        }
        None => None,
    };
    let (t, b, h) = (l.t as i64, l.b as i64, l.h as i64);
    let mut y = dense(&[t, b, h])?;
    let mut hy = dense(l.hx.sizes())?;
    let mut cy = dense(l.cx.sizes())?;
    hy.get().copy_from(l.hx)?;
    cy.get().copy_from(l.cx)?;
    let mut gates = dense(&[t * b, 4 * h])?;
    {
        // SAFETY: y, hy, cy and gates were allocated just above by `dense` (hy and cy then
        // filled by copy_from): no other reference reaches their storages.
        let (yv, hv, cv, gv) = unsafe {
            (
                y.values_mut::<f32>()?,
                hy.values_mut::<f32>()?,
                cy.values_mut::<f32>()?,
                gates.values_mut::<f32>()?,
            )
        };
        let state = State {
            gates: gv,
            h: hv,
            c: cv,
            y: yv,
        };
        lstm(
            l,
            x.get().values::<f32>()?,
            w_ih.get().values::<f32>()?,
            w_hh.get().values::<f32>()?,
            bias.as_deref(),
            state,
            reverse,
            rounder(d),
        )?;
    }
    let to = |o: Owned, dtype: i32| -> Result<Owned> {
        if dtype == F32 {
            Ok(o)
        } else {
            o.get().to_dtype(dtype) // contiguous stays contiguous
        }
    };
    let workspace = util::empty_strided(&[0], &[1], sys::TENSOR_UINT8)?;
    Ok([
        to(y, d)?,
        to(hy, l.hx.dtype())?,
        to(cy, l.cx.dtype())?,
        workspace,
    ])
}

/// The buffers the recurrence writes: the gates of every step ([T * B, 4H]), the running
/// h and c ([B, H], holding the initial states on entry and the final ones on return) and
/// the output ([T, B, H]).
struct State<'s> {
    gates: &'s mut [f32],
    h: &'s mut [f32],
    c: &'s mut [f32],
    y: &'s mut [f32],
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

/// The LSTM recurrence in float32: the input projection of every step as one GEMM
/// (`gates = bias + x W_ih^T`), then per step the recurrent GEMM (`gates[t] += h W_hh^T`)
/// and the cell update. `x` [T, B, I], `w_ih` [4H, I], `w_hh` [4H, H] and `bias` [4H] are
/// dense; `round` is applied to each new h.
#[allow(clippy::too_many_arguments)]
fn lstm(
    l: &Layer,
    x: &[f32],
    w_ih: &[f32],
    w_hh: &[f32],
    bias: Option<&[f32]>,
    s: State,
    reverse: bool,
    round: fn(f32) -> f32,
) -> Result<()> {
    let (t, b, i, h) = (l.t, l.b, l.i, l.h);
    let g4 = 4 * h;
    // The sizes were checked by check_layer (these products fit: the gates' did); the
    // lengths are what the GEMMs below rely on.
    if x.len() != t * b * i
        || w_ih.len() != g4 * i
        || w_hh.len() != g4 * h
        || bias.is_some_and(|v| v.len() != g4)
        || s.gates.len() != t * b * g4
        || s.h.len() != b * h
        || s.c.len() != b * h
        || s.y.len() != t * b * h
    {
        return err(
            sys::TENSOR_ERR_INTERNAL,
            "mkldnn_rnn_layer: a buffer does not have the layer's size",
        );
    }
    if g4 == 0 {
        return Ok(());
    }
    for row in s.gates.chunks_exact_mut(g4) {
        match bias {
            Some(bv) => row.copy_from_slice(bv),
            None => row.fill(0.0),
        }
    }
    if t * b > 0 && i > 0 {
        // SAFETY: float32 views inside their slices (lengths checked above): dst is gates,
        // [T*B, 4H] row-major; lhs is x, [T*B, I] row-major; rhs is w_ih read transposed,
        // element (k, n) at n * I + k, [I, 4H]. gates is its own allocation, overlapping
        // neither input, and borrowed mutably here only.
        unsafe {
            gemm_any(
                F32,
                t * b,
                g4,
                i,
                strided(s.gates.as_mut_ptr(), g4, 1),
                true,
                strided(x.as_ptr(), i, 1),
                strided(w_ih.as_ptr(), 1, i),
                1.0,
                1.0,
            )
        };
    }
    for step in 0..t {
        let ti = if reverse { t - 1 - step } else { step };
        let g = &mut s.gates[ti * b * g4..(ti + 1) * b * g4];
        if b > 0 && h > 0 {
            // SAFETY: float32 views inside their slices: dst is step ti's gates, [B, 4H]
            // row-major (g has b * 4H elements); lhs is the running h, [B, H] row-major;
            // rhs is w_hh read transposed, element (k, n) at n * H + k, [H, 4H]. g and h
            // are distinct allocations (gates, hy), and neither aliases w_hh.
            unsafe {
                gemm_any(
                    F32,
                    b,
                    g4,
                    h,
                    strided(g.as_mut_ptr(), g4, 1),
                    true,
                    strided(s.h.as_ptr(), h, 1),
                    strided(w_hh.as_ptr(), 1, h),
                    1.0,
                    1.0,
                )
            };
        }
        let y = &mut s.y[ti * b * h..(ti + 1) * b * h];
        for bi in 0..b {
            let gr = &g[bi * g4..(bi + 1) * g4];
            let (gi, gf, gg, go) = (&gr[..h], &gr[h..2 * h], &gr[2 * h..3 * h], &gr[3 * h..]);
            let at = bi * h;
            for j in 0..h {
                let c = sigmoid(gf[j]) * s.c[at + j] + sigmoid(gi[j]) * gg[j].tanh();
                let hn = round(sigmoid(go[j]) * c.tanh());
                s.c[at + j] = c;
                s.h[at + j] = hn;
                y[at + j] = hn;
            }
        }
    }
    Ok(())
}

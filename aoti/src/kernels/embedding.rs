//! Embedding bags (`_embedding_bag`, `_embedding_bag_forward_only`) with ATen's CPU
//! semantics (EmbeddingBag.cpp): modes sum / mean / max, `offsets` with or without the last
//! offset, `per_sample_weights` (sum only), `padding_idx`; `scale_grad_by_freq` and `sparse`
//! only matter to the backward and are ignored. All four outputs as ATen gives them:
//!
//! - `output` [bags, D] in the weight's dtype, summed in ATen's accumulation type;
//! - `offset2bag` [indices] (each index's bag), or [0] when ATen's fast sum path skips it;
//! - `bag_size` [bags] (indices per bag, less the padding ones) for mean and max, and for
//!   `_embedding_bag`; zeros for sum ([offsets] for `_embedding_bag_forward_only`);
//! - `max_indices` [bags, D] (the weight row each max came from) for max, else a copy of
//!   `bag_size`.
//!
//! The three index outputs have the indices' and offsets' promoted dtype (int32 or int64).
//! ATen's fast path (sum or mean, no padding_idx, float32 / float16 / bfloat16 weight rows
//! of stride 1, per_sample_weights of stride 1) bags by `offsets` ranges and refuses
//! decreasing offsets; the other paths bag by `offset2bag`, which for `include_last_offset`
//! runs the last bag to the end of `indices`.

use super::{contiguous, expect_dim, Accumulate, AtenTensorHandle, Sum};
use crate::dispatch;
use crate::error::{err, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

const SUM: i64 = 0;
const MEAN: i64 = 1;
const MAX: i64 = 2;

/// An index element (int32 or int64), converted exactly.
trait Index: Element {
    fn get(self) -> i64;
    fn make(v: i64) -> Self;
}

impl Index for i32 {
    fn get(self) -> i64 {
        self as i64
    }
    fn make(v: i64) -> Self {
        v as i32
    }
}

impl Index for i64 {
    fn get(self) -> i64 {
        self
    }
    fn make(v: i64) -> Self {
        v
    }
}

/// The dtype ATen promotes `indices` and `offsets` to (`promoteTypes`), which must be int32
/// or int64; bool and the narrower signed and unsigned integers promote into either.
fn index_dtype(indices: Tensor, offsets: Tensor) -> Result<i32> {
    let rank = |d: i32| match d {
        sys::TENSOR_BOOL => Some(0),
        sys::TENSOR_UINT8 | sys::TENSOR_INT8 => Some(1),
        sys::TENSOR_INT16 => Some(2),
        sys::TENSOR_INT32 => Some(3),
        sys::TENSOR_INT64 => Some(4),
        _ => None,
    };
    let (a, b) = (indices.dtype(), offsets.dtype());
    match (rank(a), rank(b)) {
        (Some(x), Some(y)) if x.max(y) >= 3 => Ok(if x.max(y) == 4 {
            sys::TENSOR_INT64
        } else {
            sys::TENSOR_INT32
        }),
        _ => err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "indices ({}) and offsets ({}) must promote to int32 or int64",
                util::dtype_name(a),
                util::dtype_name(b)
            ),
        ),
    }
}

/// The arguments, checked.
struct Bag<'a> {
    weight: Tensor<'a>,
    psw: Option<Tensor<'a>>,
    mode: i64,
    include_last: bool,
    padding_idx: i64,
    /// `_embedding_bag` (its bag_size for sum has [bags] entries).
    requires_grad: bool,
}

#[allow(clippy::too_many_arguments)]
fn embedding_bag(
    weight: AtenTensorHandle,
    indices: AtenTensorHandle,
    offsets: AtenTensorHandle,
    mode: i64,
    per_sample_weights: *mut AtenTensorHandle,
    include_last_offset: i32,
    padding_idx: i64,
    requires_grad: bool,
    rets: [*mut AtenTensorHandle; 4],
) -> Result<()> {
    let w = handle(weight, "weight")?;
    let ind = handle(indices, "indices")?;
    let off = handle(offsets, "offsets")?;
    let psw = util::optional_handle(per_sample_weights, "per_sample_weights");
    let r0 = out(rets[0], "ret0")?;
    let r1 = out(rets[1], "ret1")?;
    let r2 = out(rets[2], "ret2")?;
    let r3 = out(rets[3], "ret3")?;
    for (t, n) in [(w, "weight"), (ind, "indices"), (off, "offsets")] {
        util::require_cpu(t, n)?;
    }
    let dtype = w.dtype();
    if !matches!(
        dtype,
        sys::TENSOR_FLOAT16 | sys::TENSOR_BFLOAT16 | sys::TENSOR_FLOAT32 | sys::TENSOR_FLOAT64
    ) {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "weight is {}; expected float16, bfloat16, float32 or float64",
                util::dtype_name(dtype)
            ),
        );
    }
    expect_dim(w, 2, "weight")?;
    expect_dim(ind, 1, "indices")?;
    expect_dim(off, 1, "offsets")?;
    let idt = index_dtype(ind, off)?;
    if !(SUM..=MAX).contains(&mode) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("`mode` must be sum (0), mean (1), or max (2), got {mode}"),
        );
    }
    if let Some(p) = psw {
        util::require_cpu(p, "per_sample_weights")?;
        if mode != SUM {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "per_sample_weights only supported with mode='sum'",
            );
        }
        if p.dtype() != dtype {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "per_sample_weights is {}, weight {}",
                    util::dtype_name(p.dtype()),
                    util::dtype_name(dtype)
                ),
            );
        }
        expect_dim(p, 1, "per_sample_weights")?;
        if p.numel() != ind.numel() {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "per_sample_weights has {} values for {} indices",
                    p.numel(),
                    ind.numel()
                ),
            );
        }
    }
    let include_last = include_last_offset != 0;
    if include_last && off.numel() < 1 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            "include_last_offset: number of offset should be at least 1",
        );
    }
    let ind = ind.to_dtype(idt)?;
    let ind = contiguous(ind.get())?;
    let off = off.to_dtype(idt)?;
    let off = contiguous(off.get())?;
    let bag = Bag {
        weight: w,
        psw,
        mode,
        include_last,
        padding_idx,
        requires_grad,
    };
    let outs = dispatch!(dtype, T => {
        if idt == sys::TENSOR_INT32 {
            compute::<T, i32>(&bag, ind.get(), off.get(), idt)?
        } else {
            compute::<T, i64>(&bag, ind.get(), off.get(), idt)?
        }
    }, _ => unreachable!("weight dtype checked above"));
    let [o0, o1, o2, o3] = outs;
    *r0 = o0.into_raw();
    *r1 = o1.into_raw();
    *r2 = o2.into_raw();
    *r3 = o3.into_raw();
    Ok(())
}

/// A new contiguous tensor of `sizes`, its elements as a mutable slice to `fill`.
fn filled<X: Element>(sizes: &[i64], dtype: i32, fill: impl FnOnce(&mut [X])) -> Result<Owned> {
    let mut t = util::empty(sizes, dtype)?;
    // SAFETY: t was just allocated by `util::empty`: nothing else reaches its storage.
    let v = unsafe { t.values_mut::<X>() }?;
    fill(v);
    Ok(t)
}

/// The four outputs for weight element `T` and index element `I` (`ind`, `off`: contiguous
/// 1-D tensors of `I`).
fn compute<T: Accumulate, I: Index>(
    b: &Bag,
    ind: Tensor,
    off: Tensor,
    idt: i32,
) -> Result<[Owned; 4]> {
    let w = b.weight;
    let (vocab, dim) = (w.sizes()[0], w.sizes()[1]);
    let (ws0, ws1) = (w.strides()[0] as usize, w.strides()[1] as usize);
    let wv = w.values::<T>()?;
    let indices: Vec<i64> = ind.values::<I>()?.iter().map(|v| v.get()).collect();
    let offsets: Vec<i64> = off.values::<I>()?.iter().map(|v| v.get()).collect();
    let n = indices.len() as i64;
    // The offsets that start bags (all, or all but the last).
    let k = offsets.len() - usize::from(b.include_last);
    let bags = k;
    if let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) {
        if first != 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {first}"),
            );
        }
        if last > n {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}"),
            );
        }
    }
    let psw_strided = b.psw.is_none_or(|p| p.strides()[0] == 1);
    let fast = b.mode != MAX
        && ws1 == 1
        && b.padding_idx < 0
        && psw_strided
        && matches!(
            T::DTYPE,
            sys::TENSOR_FLOAT32 | sys::TENSOR_FLOAT16 | sys::TENSOR_BFLOAT16
        );
    // The indices the reduction reads: the fast path stops at the last offset.
    let end = if fast {
        if offsets.windows(2).any(|p| p[1] < p[0]) {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("offsets must not decrease (got {offsets:?})"),
            );
        }
        if dim == 0 && bags > 0 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                "embedding rows of 0 elements (ATen's fast path refuses them)",
            );
        }
        if b.include_last {
            offsets[k] as usize
        } else {
            indices.len()
        }
    } else {
        if let Some(&o) = offsets[..k].iter().find(|&&o| o < 0 || o > n) {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("offset {o} is out of range for {n} indices"),
            );
        }
        indices.len()
    };
    // offset2bag[i]: the number of bag-starting offsets <= i, less one.
    let mut starts = vec![0i64; indices.len() + 1];
    for &o in &offsets[..k] {
        starts[o as usize] += 1;
    }
    let mut offset2bag = Vec::with_capacity(indices.len());
    let mut acc = -1i64;
    for s in &starts[..indices.len()] {
        acc += s;
        offset2bag.push(acc);
    }
    // bag_size: the offsets' differences, the last bag to the end of indices.
    let mut bag_size: Vec<i64> = (0..bags)
        .map(|j| {
            if j + 1 < bags {
                offsets[j + 1] - offsets[j]
            } else {
                n - offsets[j]
            }
        })
        .collect();
    let psw_vals: Option<Vec<T>> = match b.psw {
        Some(p) => Some(contiguous(p)?.get().values::<T>()?.to_vec()),
        None => None,
    };
    let d = dim as usize;
    // Sums (sum, mean) or maxima and their rows (max), per bag and column.
    let (n_sum, n_max) = if b.mode == MAX {
        (0, bags * d)
    } else {
        (bags * d, 0)
    };
    let mut outv = vec![T::Acc::ZERO; n_sum];
    let mut maxv = vec![T::default(); n_max];
    let mut max_idx = vec![0i64; n_max];
    let mut seen = vec![false; bags];
    for (i, &idx) in indices.iter().enumerate().take(end) {
        if idx < 0 || idx >= vocab {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("embedding_bag: Expected idx >= 0 && idx < num_embeddings ({vocab}) but found idx to be {idx}"),
            );
        }
        let bag = offset2bag[i];
        if bag < 0 || bag as usize >= bags {
            continue; // no bag (no offsets): ATen writes out of bounds here
        }
        let bag = bag as usize;
        if idx == b.padding_idx {
            bag_size[bag] -= 1;
            continue;
        }
        let row = idx as usize * ws0;
        let dst = bag * d..(bag + 1) * d;
        if b.mode == MAX {
            let first = !seen[bag];
            seen[bag] = true;
            for (j, (m, mi)) in maxv[dst.clone()]
                .iter_mut()
                .zip(&mut max_idx[dst])
                .enumerate()
            {
                let v = wv[row + j * ws1];
                if first || v > *m {
                    *m = v;
                    *mi = idx;
                }
            }
        } else {
            let scale = psw_vals.as_ref().map(|p| p[i].widen());
            for (j, a) in outv[dst].iter_mut().enumerate() {
                let v = wv[row + j * ws1].widen();
                *a = a.add(match scale {
                    Some(s) => v.mul(s),
                    None => v,
                });
            }
        }
    }
    let output = filled::<T>(&[bags as i64, dim], T::DTYPE, |o| {
        if b.mode == MAX {
            o.copy_from_slice(&maxv);
            return;
        }
        for (x, &a) in o.iter_mut().zip(&outv) {
            *x = T::narrow(a);
        }
        if b.mode == MEAN {
            // ATen: output /= max(bag_size, 1) converted to the weight's dtype.
            for (row, &s) in o.chunks_mut(d.max(1)).zip(&bag_size) {
                let c = T::from_f64(s.max(1) as f64).widen();
                for x in row {
                    *x = T::narrow(x.widen().div(c));
                }
            }
        }
    })?;
    let o2b_len = if fast && b.mode == SUM {
        0
    } else {
        indices.len()
    };
    let offset2bag = filled::<I>(&[o2b_len as i64], idt, |o| {
        for (x, &v) in o.iter_mut().zip(&offset2bag) {
            *x = I::make(v);
        }
    })?;
    let bag_len = if b.mode == SUM && !b.requires_grad {
        offsets.len()
    } else {
        bags
    };
    let bag_size_vals: Vec<i64> = if b.mode == SUM {
        vec![0; bag_len]
    } else {
        bag_size
    };
    let bag_size = filled::<I>(&[bag_len as i64], idt, |o| {
        for (x, &v) in o.iter_mut().zip(&bag_size_vals) {
            *x = I::make(v);
        }
    })?;
    let max_indices = if b.mode == MAX {
        filled::<I>(&[bags as i64, dim], idt, |o| {
            for (x, &v) in o.iter_mut().zip(&max_idx) {
                *x = I::make(v);
            }
        })?
    } else {
        filled::<I>(&[bag_len as i64], idt, |o| {
            for (x, &v) in o.iter_mut().zip(&bag_size_vals) {
                *x = I::make(v);
            }
        })?
    };
    Ok([output, offset2bag, bag_size, max_indices])
}

/// Exports `_embedding_bag` (`$grad`: true) and `_embedding_bag_forward_only`.
macro_rules! export_embedding_bag {
    ($($name:ident: $grad:expr;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(
            weight: AtenTensorHandle,
            indices: AtenTensorHandle,
            offsets: AtenTensorHandle,
            scale_grad_by_freq: i32,
            mode: i64,
            sparse: i32,
            per_sample_weights: *mut AtenTensorHandle,
            include_last_offset: i32,
            padding_idx: i64,
            ret0: *mut AtenTensorHandle,
            ret1: *mut AtenTensorHandle,
            ret2: *mut AtenTensorHandle,
            ret3: *mut AtenTensorHandle,
        ) -> i32 {
            shim(stringify!($name), || {
                let _ = (scale_grad_by_freq, sparse); // backward-only options
                embedding_bag(
                    weight,
                    indices,
                    offsets,
                    mode,
                    per_sample_weights,
                    include_last_offset,
                    padding_idx,
                    $grad,
                    [ret0, ret1, ret2, ret3],
                )
            })
        }
    )*};
}

export_embedding_bag! {
    aoti_torch_cpu__embedding_bag: true;
    aoti_torch_cpu__embedding_bag_forward_only: false;
}

//! Reductions into slots chosen by an index or by segment lengths, which Inductor leaves to
//! fallbacks: `index_reduce` (`prod`, `mean`, `amax`, `amin` of source slices into self's
//! slices along a dim) and `segment_reduce` (a reduction over consecutive runs of a dim).
//!
//! Both fold element by element in ATen's order with ATen's per-step arithmetic (float16 /
//! bfloat16 rounded after each step: [`Arith`]), NaN propagating through `amax` / `amin`.

use super::{
    check_scalar, contiguous, isnan, not_implemented, optional, required_str, Arith,
    AtenTensorHandle,
};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, optional_handle, out, Owned, Tensor};

#[derive(Clone, Copy, PartialEq)]
enum Reduce {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

/// `acc op x` in `T`'s arithmetic, rounded back to `T` (ATen's stubs / scalar loops).
fn step<T: Arith>(op: Reduce, acc: T, x: T) -> T {
    match op {
        Reduce::Sum | Reduce::Mean => T::from_w(T::add(acc.to_w(), x.to_w())),
        Reduce::Prod => T::from_w(T::mul(acc.to_w(), x.to_w())),
        Reduce::Max | Reduce::Min if isnan(x) || isnan(acc) => {
            if isnan(x) {
                x
            } else {
                acc
            }
        }
        Reduce::Max => {
            if acc < x {
                x
            } else {
                acc
            }
        }
        Reduce::Min => {
            if x < acc {
                x
            } else {
                acc
            }
        }
    }
}

/// The starting value of a reduction with nothing folded in yet.
fn identity<T: Arith>(op: Reduce) -> T {
    match op {
        Reduce::Sum | Reduce::Mean => T::from_count(0),
        Reduce::Prod => T::from_count(1),
        Reduce::Max => T::LOWEST,
        Reduce::Min => T::HIGHEST,
    }
}

/// `acc / n` as ATen's mean finalisation: true division for the floats (n converted to the
/// dtype first, as c10's `Half / int64_t`), floor division for the integers.
fn mean_of<T: Arith>(acc: T, n: i64) -> T {
    T::from_w(T::div(acc.to_w(), T::from_count(n).to_w()))
}

/// An `[outer, n, inner]` view of `sizes` around `dim` (a 0-dim tensor is `[1, 1, 1]`).
fn around(sizes: &[i64], dim: usize) -> (usize, usize, usize) {
    if sizes.is_empty() {
        return (1, 1, 1);
    }
    let outer: i64 = sizes[..dim].iter().product();
    let inner: i64 = sizes[dim + 1..].iter().product();
    (outer as usize, sizes[dim] as usize, inner as usize)
}

// ------------------------------------------------------------------------------------------
// index_reduce

/// `index_reduce(self, dim, index, source, reduce, include_self)`: a new contiguous copy of
/// self in which, for each `i`, slice `index[i]` along `dim` is reduced with source's slice
/// `i` (`prod`, `mean`, `amax`, `amin`), in index order; `include_self == 0` first resets
/// the indexed slices to the reduction's identity; `mean` divides by the number of values
/// folded into a slice (self's included), floor division for integers. ATen's checks: a 1-D
/// (or 0-dim) int64 / int32 index within the dim (no negative index), source of self's dtype
/// and shape but for `dim`, one index per source slice. Dtypes uint8, int8, int16, int32,
/// int64, float16, bfloat16, float32, float64 (ATen's CPU kernel also takes bool, the wider
/// unsigned and the complex dtypes for some reductions with include_self on tensors of two
/// or more dims: refused here). Inductor leaves `Tensor.index_reduce` as this fallback.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_index_reduce(
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    source: AtenTensorHandle,
    reduce: *const std::ffi::c_char,
    include_self: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let (ix, src) = (handle(index, "index")?, handle(source, "source")?);
        let red = required_str(reduce, "reduce")?;
        let r = out(ret0, "ret0")?;
        *r = index_reduce(t, dim, ix, src, &red, include_self != 0)?.into_raw();
        Ok(())
    })
}

fn index_reduce(
    t: Tensor,
    dim: i64,
    ix: Tensor,
    src: Tensor,
    red: &str,
    include_self: bool,
) -> Result<Owned> {
    for (x, name) in [(t, "self"), (ix, "index"), (src, "source")] {
        util::require_cpu(x, name)?;
    }
    let op = match red {
        "prod" => Reduce::Prod,
        "mean" => Reduce::Mean,
        "amax" => Reduce::Max,
        "amin" => Reduce::Min,
        _ => {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {red}."),
            )
        }
    };
    let nd = t.ndim() as usize;
    let d = util::wrap_dim(dim, nd, true)?;
    if ix.ndim() > 1 {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!(
                "index_reduce_(): Index is supposed to be a vector, but got sizes {:?}",
                ix.sizes()
            ),
        );
    }
    if !matches!(ix.dtype(), sys::TENSOR_INT64 | sys::TENSOR_INT32) {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "index_reduce_(): Expected dtype int32/int64 for index but got: {}",
                util::dtype_name(ix.dtype())
            ),
        );
    }
    if src.dtype() != t.dtype() {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "index_reduce_(): self ({}) and source ({}) must have the same scalar type",
                util::dtype_name(t.dtype()),
                util::dtype_name(src.dtype())
            ),
        );
    }
    let n = if src.ndim() == 0 {
        1
    } else {
        src.size(d as i64)?
    };
    if ix.numel() != n {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "index_reduce_(): Number of indices ({}) should be equal to source.size(dim): ({n}), for dim: {d}",
                ix.numel()
            ),
        );
    }
    let (ts, ss) = (t.sizes(), src.sizes());
    let shapes_match = ts.len() == ss.len()
        && ts
            .iter()
            .zip(ss)
            .enumerate()
            .all(|(k, (a, b))| k == d || a == b);
    if !shapes_match {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {ts:?} source.shape = {ss:?}"),
        );
    }
    let ic = contiguous(ix.to_dtype(sys::TENSOR_INT64)?.get())?;
    let idx: Vec<i64> = ic.get().values::<i64>()?.to_vec();
    let (outer, size, inner) = around(ts, d);
    if let Some(&bad) = idx.iter().find(|&&i| !(0..size as i64).contains(&i)) {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!("index out of range in self (index {bad}, dim {d} of size {size})"),
        );
    }
    let mut o = t.clone_as(sys::TENSOR_CONTIGUOUS_FORMAT)?;
    let sc = contiguous(src)?;
    let geometry = Geometry {
        outer,
        size,
        inner,
        n: idx.len(),
    };
    crate::dispatch!(t.dtype(), [u8, i8, i16, i32, i64, half::f16, half::bf16, f32, f64], T => {
        // SAFETY: o is the contiguous clone made above: nothing else reaches its storage.
        let ov = unsafe { o.values_mut::<T>() }?;
        fold_indexed::<T>(ov, sc.get().values::<T>()?, &idx, geometry, op, include_self)
    }, _ => return not_implemented("index_func_", t.dtype()));
    Ok(o)
}

/// `[outer, size, inner]` of the output and `[outer, n, inner]` of the source.
#[derive(Clone, Copy)]
struct Geometry {
    outer: usize,
    size: usize,
    inner: usize,
    n: usize,
}

fn fold_indexed<T: Arith>(
    ov: &mut [T],
    sv: &[T],
    idx: &[i64],
    g: Geometry,
    op: Reduce,
    include_self: bool,
) {
    let at = |o: usize, j: usize, k: usize| (o * g.size + j) * g.inner + k;
    if !include_self {
        let init = identity::<T>(op);
        for &j in idx {
            for o in 0..g.outer {
                for k in 0..g.inner {
                    ov[at(o, j as usize, k)] = init;
                }
            }
        }
    }
    for (i, &j) in idx.iter().enumerate() {
        for o in 0..g.outer {
            for k in 0..g.inner {
                let p = at(o, j as usize, k);
                ov[p] = step(op, ov[p], sv[(o * g.n + i) * g.inner + k]);
            }
        }
    }
    if op == Reduce::Mean {
        let mut counts = vec![i64::from(include_self); g.size];
        for &j in idx {
            counts[j as usize] += 1;
        }
        for o in 0..g.outer {
            for (j, &c) in counts.iter().enumerate() {
                for k in 0..g.inner {
                    let p = at(o, j, k);
                    ov[p] = mean_of(ov[p], c.max(1));
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// segment_reduce

/// `segment_reduce(data, reduce, lengths, indices, offsets, axis, unsafe, initial)`: for
/// each run of `axis` given by `lengths` or by consecutive `offsets` (offsets win when both
/// are given, as in ATen), the `sum`, `mean`, `max` / `amax`, `min` / `amin` or `prod` of the run (from
/// `initial` when given, else the reduction's identity; an empty run's mean is NaN), as a
/// new contiguous tensor with `axis` of size the number of runs. ATen's checks: lengths /
/// offsets of int64 / int32 whose last dim is `axis` and whose leading dims are data's,
/// no negative run, `indices` refused; unless `unsafe`, each row of lengths sums to the
/// dim's size; `initial` converted with ATen's overflow check. Runs past the dim (which
/// ATen reads out of bounds with `unsafe` or offsets) are refused. Float dtypes only, as
/// ATen. Inductor leaves `torch.segment_reduce` as this fallback.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_segment_reduce(
    data: AtenTensorHandle,
    reduce: *const std::ffi::c_char,
    lengths: *mut AtenTensorHandle,
    indices: *mut AtenTensorHandle,
    offsets: *mut AtenTensorHandle,
    axis: i64,
    unsafe_: i32,
    initial: *mut f64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let x = handle(data, "data")?;
        let red = required_str(reduce, "reduce")?;
        let lengths = optional_handle(lengths.cast_const(), "lengths");
        let indices = optional_handle(indices.cast_const(), "indices");
        let offsets = optional_handle(offsets.cast_const(), "offsets");
        let r = out(ret0, "ret0")?;
        let runs = match (lengths, offsets, indices) {
            (None, None, Some(_)) => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    "segment_reduce(): indices based reduction is not supported yet.",
                )
            }
            (_, Some(o), _) => Runs::Offsets(o),
            (Some(l), None, _) => Runs::Lengths(l),
            (None, None, None) => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    "segment_reduce(): Either lengths or offsets must be defined.",
                )
            }
        };
        let init = optional(initial.cast_const());
        *r = segment_reduce(x, &red, runs, axis, unsafe_ != 0, init)?.into_raw();
        Ok(())
    })
}

#[derive(Clone, Copy)]
enum Runs<'a> {
    Lengths(Tensor<'a>),
    Offsets(Tensor<'a>),
}

fn segment_reduce(
    x: Tensor,
    red: &str,
    runs: Runs,
    axis: i64,
    unchecked: bool,
    init: Option<f64>,
) -> Result<Owned> {
    let (counts, is_offsets) = match runs {
        Runs::Lengths(l) => (l, false),
        Runs::Offsets(o) => (o, true),
    };
    util::require_cpu(x, "data")?;
    util::require_cpu(counts, "lengths")?;
    let nd = x.ndim() as usize;
    let axis = util::wrap_dim(axis, nd, true)?;
    if !matches!(counts.dtype(), sys::TENSOR_INT64 | sys::TENSOR_INT32) {
        return not_implemented("_segment_reduce_lengths_cpu_kernel1", counts.dtype());
    }
    if counts.ndim() as usize != axis + 1 {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}."),
        );
    }
    if nd == 0 || counts.sizes()[..axis] != x.sizes()[..axis] {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "segment_reduce(): lengths {:?} do not match the leading dims of data {:?}",
                counts.sizes(),
                x.sizes()
            ),
        );
    }
    let op = match red {
        "sum" => Reduce::Sum,
        "mean" => Reduce::Mean,
        "max" | "amax" => Reduce::Max,
        "min" | "amin" => Reduce::Min,
        "prod" => Reduce::Prod,
        _ => {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("reduce argument must be either sum, prod, mean, amax or amin, got {red}"),
            )
        }
    };
    let c = counts.to_dtype(sys::TENSOR_INT64)?;
    let c = contiguous(c.get())?;
    let cv = c.get().values::<i64>()?;
    let width = counts.sizes()[axis] as usize;
    let size = x.sizes()[axis];
    // Each row's runs as (start, length).
    let segs = if is_offsets {
        width.saturating_sub(1)
    } else {
        width
    };
    let (outer, _, inner) = around(x.sizes(), axis);
    let mut spans = Vec::with_capacity(outer * segs);
    for o in 0..outer {
        let row = &cv[o * width..(o + 1) * width];
        let mut start = 0i64;
        for j in 0..segs {
            let (s, len) = if is_offsets {
                (row[j], row[j + 1].checked_sub(row[j]).unwrap_or(-1))
            } else {
                (start, row[j])
            };
            if len < 0 {
                let what = if is_offsets {
                    "Expected segment_length >= 0 to be true, but got false."
                } else {
                    "lengths contains negative value!"
                };
                return err(sys::TENSOR_ERR_INVALID_ARGUMENT, what);
            }
            if len > 0 && (s < 0 || s.checked_add(len).is_none_or(|e| e > size)) {
                return err(
                    sys::TENSOR_ERR_INDEX,
                    format!("segment_reduce(): a segment [{s}, {s} + {len}) lies outside dim {axis} of size {size}"),
                );
            }
            spans.push(Span {
                start: s.max(0) as usize,
                len: len as usize,
            });
            start = s.saturating_add(len);
        }
        if !is_offsets && !unchecked && start != size {
            return err(
                sys::TENSOR_ERR_SHAPE,
                "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.",
            );
        }
    }
    if let Some(v) = init {
        check_scalar(v, x.dtype())?;
    }
    let mut osizes = x.sizes().to_vec();
    osizes[axis] = segs as i64;
    let mut o = util::empty(&osizes, x.dtype())?;
    let xc = contiguous(x)?;
    let g = Geometry {
        outer,
        size: size as usize,
        inner,
        n: segs,
    };
    crate::dispatch!(x.dtype(), [half::f16, half::bf16, f32, f64], T => {
        // SAFETY: o was just allocated (empty) and nothing else reaches its storage.
        let ov = unsafe { o.values_mut::<T>() }?;
        fold_segments::<T>(ov, xc.get().values::<T>()?, &spans, g, op, init)
    }, _ => return not_implemented("_segment_reduce_cpu", x.dtype()));
    Ok(o)
}

/// A run of the reduced dim: its start and length.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    len: usize,
}

/// Output `[outer, n, inner]` from data `[outer, size, inner]`, `spans[o * n + j]` the run
/// of output slot `j` in row `o`.
fn fold_segments<T: Arith>(
    ov: &mut [T],
    xv: &[T],
    spans: &[Span],
    g: Geometry,
    op: Reduce,
    init: Option<f64>,
) {
    let start = init.map_or_else(|| identity::<T>(op), T::from_f64);
    for o in 0..g.outer {
        for j in 0..g.n {
            let Span { start: s, len } = spans[o * g.n + j];
            for k in 0..g.inner {
                let mut acc = start;
                for e in s..s + len {
                    acc = step(op, acc, xv[(o * g.size + e) * g.inner + k]);
                }
                if op == Reduce::Mean {
                    if len == 0 && init.is_none() {
                        acc = T::from_f64(f64::NAN);
                    } else if len > 0 && !isnan(acc) {
                        acc = mean_of(acc, len as i64);
                    }
                }
                ov[(o * g.n + j) * g.inner + k] = acc;
            }
        }
    }
}

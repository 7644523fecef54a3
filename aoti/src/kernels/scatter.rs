//! Scatter into a copy of self, written to the model's `out`: `scatter_src_out`,
//! `scatter_value_out`, `scatter_reduce_two_out` (and shim.h's `scatter_out`,
//! `scatter_reduce_out`), with ATen's CPU semantics:
//!
//! - int64 or int32 index of self's rank, no larger than self (but along `dim`) and src;
//!   an index outside [0, self.size(dim)) is an error (no wrapping); an empty index leaves
//!   self;
//! - `out[..., index[i, j], ...] = src[i, j]` visited in row-major index order, so along
//!   `dim` the last of repeated indices wins and reductions fold in index order;
//! - reduce `sum`, `prod`, `mean`, `amax`, `amin` (NaN propagates); `include_self=False`
//!   first sets every scattered-to element to the reduction's identity; `mean` divides by
//!   the number of values folded (self counting when included), in the dtype: floor division
//!   for integers;
//! - float16 / bfloat16 accumulate in float32 and round once (ATen's op-math buffer), the
//!   mean's count and quotient in the dtype;
//! - `out` may be self; it may not overlap index or src, nor be expanded.

use super::{
    check_scalar, contiguous, for_each_position, no_internal_overlap, no_overlap, not_implemented,
    row_major, Arith, AtenTensorHandle,
};
use crate::dispatch;
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, Bool, Element, Owned, Tensor};
use half::{bf16, f16};
use std::ffi::c_char;

#[derive(Clone, Copy, PartialEq)]
enum Reduce {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

fn parse_reduce(s: &str) -> Result<Reduce> {
    Ok(match s {
        "sum" => Reduce::Sum,
        "prod" => Reduce::Prod,
        "mean" => Reduce::Mean,
        "amax" | "max" => Reduce::Max,
        "amin" | "min" => Reduce::Min,
        _ => {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("reduce argument must be either sum, prod, mean, amax or amin, got {s}"),
            )
        }
    })
}

/// What is scattered: a tensor (a handle, then a checked [`Tensor`]) or a value.
#[derive(Clone, Copy)]
enum Source<T> {
    Tensor(T),
    Value(f64),
}

/// Sizes and strides with a 0-dim tensor as one element of one dim (ATen's
/// `ensure_nonempty_*`).
fn nonempty(t: Tensor) -> (Vec<i64>, Vec<i64>) {
    if t.ndim() == 0 {
        (vec![1], vec![1])
    } else {
        (t.sizes().to_vec(), t.strides().to_vec())
    }
}

/// ATen's `scatter_shape_check` (nothing to check for an empty index).
fn shape_check(s: Tensor, d: usize, index: Tensor, src: Option<Tensor>) -> Result<()> {
    if index.numel() == 0 {
        return Ok(());
    }
    let (ss, is) = (nonempty(s).0, nonempty(index).0);
    if ss.len() != is.len() {
        return err(
            sys::TENSOR_ERR_SHAPE,
            "Index tensor must have the same number of dimensions as self tensor",
        );
    }
    let mut wrong = (0..ss.len()).any(|k| k != d && is[k] > ss[k]);
    if let Some(src) = src {
        let rs = nonempty(src).0;
        if rs.len() != is.len() {
            return err(
                sys::TENSOR_ERR_SHAPE,
                "Index tensor must have the same number of dimensions as src tensor",
            );
        }
        wrong = wrong || (0..rs.len()).any(|k| is[k] > rs[k]);
        if wrong {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("Expected index {:?} to be no larger than self {:?} apart from dimension {d} and to be no larger size than src {:?}", index.sizes(), s.sizes(), src.sizes()),
            );
        }
    } else if wrong {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "Expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                index.sizes(),
                s.sizes()
            ),
        );
    }
    Ok(())
}

/// A dense copy of `t` as `dtype` that only this crate holds.
fn fresh_dense(t: Tensor, dtype: i32) -> Result<Owned> {
    if t.dtype() == dtype {
        t.clone_as(sys::TENSOR_CONTIGUOUS_FORMAT)
    } else {
        let c = t.to_dtype(dtype)?;
        contiguous(c.get())
    }
}

/// Which dtypes ATen's CPU kernels take for this call (its dispatch sets differ by path).
fn supported(dtype: i32, reduce: Option<Reduce>, include_self: bool) -> bool {
    let unsigned = matches!(
        dtype,
        sys::TENSOR_UINT16 | sys::TENSOR_UINT32 | sys::TENSOR_UINT64
    );
    match reduce {
        None => true,
        Some(Reduce::Mean) => !unsigned && dtype != sys::TENSOR_BOOL,
        Some(Reduce::Sum | Reduce::Prod) => include_self || !unsigned,
        Some(Reduce::Max | Reduce::Min) => !unsigned,
    }
}

/// The scatter on `work` (a dense copy of self as `T::W`): returns nothing, `work` holds
/// the result in the work type.
fn scatter_into<T: Arith>(
    work: &mut Owned,
    d: usize,
    index: Tensor,
    src: Source<Tensor>,
    reduce: Option<Reduce>,
    include_self: bool,
) -> Result<()> {
    let (wsizes, _) = nonempty(work.get());
    let wst_full = util::contiguous_strides(&wsizes)?;
    let (dim_size, dim_stride) = (wsizes[d], wst_full[d]);
    let mut wst = wst_full.clone();
    wst[d] = 0;
    let (ishape, _) = nonempty(index);
    let ic = contiguous(index.to_dtype(sys::TENSOR_INT64)?.get())?;
    let iv = ic.get().values::<i64>()?;
    let ist = util::contiguous_strides(&ishape)?;
    let sc = match src {
        Source::Tensor(s) => Some(contiguous(s)?),
        Source::Value(_) => None,
    };
    let (sv, sst): (&[T], Vec<i64>) = match &sc {
        Some(c) => (
            c.get().values::<T>()?,
            match src {
                Source::Tensor(s) => util::contiguous_strides(&nonempty(s).0)?,
                Source::Value(_) => unreachable!(),
            },
        ),
        None => (&[], vec![0; ishape.len()]),
    };
    let value = match src {
        Source::Value(x) => T::from_f64(x),
        Source::Tensor(_) => T::default(),
    };
    let n = work.get().numel() as usize;
    // SAFETY: work is the dense copy this crate just made (fresh_dense); nothing else
    // reaches its storage.
    let w = unsafe { work.values_mut::<T::W>() }?;
    let order = row_major(ishape.len());
    // Each index position's target in work, bounds checked.
    let target = |base: i64, at: i64| -> Result<usize> {
        let i = iv[at as usize];
        if i < 0 || i >= dim_size {
            return err(
                sys::TENSOR_ERR_INDEX,
                format!("index {i} is out of bounds for dimension {d} with size {dim_size}"),
            );
        }
        Ok((base + i * dim_stride) as usize)
    };
    if let (Some(r), false) = (reduce, include_self) {
        let init = match r {
            Reduce::Sum | Reduce::Mean => T::from_count(0),
            Reduce::Prod => T::from_count(1),
            Reduce::Max => T::LOWEST,
            Reduce::Min => T::HIGHEST,
        }
        .to_w();
        for_each_position(&ishape, &order, [&wst, &ist], |_, [o, i]| {
            w[target(o, i)?] = init;
            Ok(())
        })?;
    }
    let mut counts = if reduce == Some(Reduce::Mean) {
        vec![include_self as i64; n]
    } else {
        Vec::new()
    };
    for_each_position(&ishape, &order, [&wst, &ist, &sst], |_, [o, i, s]| {
        let at = target(o, i)?;
        let x = match src {
            Source::Tensor(_) => sv[s as usize],
            Source::Value(_) => value,
        }
        .to_w();
        let cur = w[at];
        w[at] = match reduce {
            None => x,
            Some(Reduce::Sum) => T::add(cur, x),
            Some(Reduce::Mean) => {
                counts[at] += 1;
                T::add(cur, x)
            }
            Some(Reduce::Prod) => T::mul(cur, x),
            // ATen: `isnan(x) ? x : std::max(cur, x)` (std::max keeps cur unless cur < x).
            Some(Reduce::Max) => {
                if super::isnan(x) || cur < x {
                    x
                } else {
                    cur
                }
            }
            Some(Reduce::Min) => {
                if super::isnan(x) || x < cur {
                    x
                } else {
                    cur
                }
            }
        };
        Ok(())
    })?;
    if reduce == Some(Reduce::Mean) {
        let one = T::from_count(1);
        for (x, &c) in w.iter_mut().zip(&counts) {
            // ATen: out (rounded to the dtype) / count (in the dtype, 0 made 1).
            let mut ct = T::from_count(c);
            if ct == T::from_count(0) {
                ct = one;
            }
            *x = T::div(T::from_w(*x).to_w(), ct.to_w());
        }
    }
    Ok(())
}

fn scatter(
    out: Tensor,
    s: Tensor,
    dim: i64,
    index: Tensor,
    src: Source<Tensor>,
    reduce: Option<&str>,
    include_self: bool,
) -> Result<()> {
    for (t, n) in [(out, "out"), (s, "self"), (index, "index")] {
        util::require_cpu(t, n)?;
    }
    let d = util::wrap_dim(dim, s.ndim() as usize, true)?;
    if index.numel() != 0 && !matches!(index.dtype(), sys::TENSOR_INT64 | sys::TENSOR_INT32) {
        return err(
            sys::TENSOR_ERR_DTYPE,
            "scatter(): Expected dtype int32/int64 for index",
        );
    }
    let src_t = match src {
        Source::Tensor(t) => {
            util::require_cpu(t, "src")?;
            if t.dtype() != s.dtype() {
                return err(
                    sys::TENSOR_ERR_DTYPE,
                    "scatter(): Expected self.dtype to be equal to src.dtype",
                );
            }
            Some(t)
        }
        Source::Value(_) => None,
    };
    shape_check(s, d, index, src_t)?;
    no_internal_overlap(out, "out")?;
    no_overlap(out, index, "index")?;
    if let Some(t) = src_t {
        no_overlap(out, t, "src")?;
    }
    if out.sizes() != s.sizes() || out.dtype() != s.dtype() {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "out ({} {:?}) does not match self ({} {:?})",
                util::dtype_name(out.dtype()),
                out.sizes(),
                util::dtype_name(s.dtype()),
                s.sizes()
            ),
        );
    }
    let reduce = reduce.map(parse_reduce).transpose()?;
    let dtype = s.dtype();
    // ATen's mean divides by the counts even when nothing was scattered (and dispatches).
    if !supported(dtype, reduce, include_self)
        && (index.numel() > 0 || reduce == Some(Reduce::Mean))
    {
        return not_implemented("scatter", dtype);
    }
    if index.numel() == 0 {
        return out.copy_from(s);
    }
    if let Source::Value(v) = src {
        check_scalar(v, dtype)?;
    }
    dispatch!(dtype, [u8, i8, i16, i32, i64, u16, u32, u64, Bool, f16, bf16, f32, f64], T => {
        let mut work = fresh_dense(s, <<T as Arith>::W as Element>::DTYPE)?;
        scatter_into::<T>(&mut work, d, index, src, reduce, include_self)?;
        out.copy_from(work.get())
    }, _ => not_implemented("scatter", dtype))
}

/// Every scatter entry point: its arguments checked, then [`scatter`].
fn scatter_shim(
    name: &str,
    out: AtenTensorHandle,
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    src: Source<AtenTensorHandle>,
    reduce: Option<*const c_char>,
    include_self: i32,
) -> i32 {
    shim(name, || {
        let src = match src {
            Source::Tensor(h) => Source::Tensor(handle(h, "src")?),
            Source::Value(v) => Source::Value(v),
        };
        let reduce = reduce
            .map(|p| super::required_str(p, "reduce"))
            .transpose()?;
        scatter(
            handle(out, "out")?,
            handle(self_, "self")?,
            dim,
            handle(index, "index")?,
            src,
            reduce.as_deref(),
            include_self != 0,
        )
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_scatter_src_out(
    out: AtenTensorHandle,
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    src: AtenTensorHandle,
) -> i32 {
    let name = fn_name!();
    scatter_shim(name, out, self_, dim, index, Source::Tensor(src), None, 1)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_scatter_value_out(
    out: AtenTensorHandle,
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    value: f64,
) -> i32 {
    let name = fn_name!();
    scatter_shim(name, out, self_, dim, index, Source::Value(value), None, 1)
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_scatter_reduce_two_out(
    out: AtenTensorHandle,
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    src: AtenTensorHandle,
    reduce: *const c_char,
    include_self: i32,
) -> i32 {
    let name = fn_name!();
    let src = Source::Tensor(src);
    scatter_shim(
        name,
        out,
        self_,
        dim,
        index,
        src,
        Some(reduce),
        include_self,
    )
}

/// shim.h's `scatter_out`: `scatter_src_out`.
#[no_mangle]
pub extern "C" fn aoti_torch_scatter_out(
    out: AtenTensorHandle,
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    src: AtenTensorHandle,
) -> i32 {
    let name = fn_name!();
    scatter_shim(name, out, self_, dim, index, Source::Tensor(src), None, 1)
}

/// shim.h's `scatter_reduce_out`: `scatter_reduce_two_out`.
#[no_mangle]
pub extern "C" fn aoti_torch_scatter_reduce_out(
    out: AtenTensorHandle,
    self_: AtenTensorHandle,
    dim: i64,
    index: AtenTensorHandle,
    src: AtenTensorHandle,
    reduce: *const c_char,
    include_self: i32,
) -> i32 {
    let name = fn_name!();
    let src = Source::Tensor(src);
    scatter_shim(
        name,
        out,
        self_,
        dim,
        index,
        src,
        Some(reduce),
        include_self,
    )
}

//! Checks a run's inputs against what the model was compiled for, as the wrapper source
//! states it (`reader::wrapper`): per input the dtype, the rank, each static size, the
//! bounds of each dynamic size and each stride; then the sizes shared between inputs (the
//! symbols `run_impl` binds, evaluated from the inputs in its order, and each input's
//! asserted sizes and strides in those symbols). Every size is read only after the rank
//! is known to cover it.

use crate::error::{err, Result};
use crate::reader::wrapper::{Binding, Expr, Input, Wrapper};
use crate::sys;
use crate::util::{self, Tensor};

fn shape_text(x: &Input) -> String {
    x.sizes
        .iter()
        .map(|e| match e.as_int() {
            Some(v) => v.to_string(),
            None => e.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Input `i` alone: dtype, rank, static sizes, bounds, the strides `check_input` fixes.
fn check_one(i: usize, t: Tensor, x: &Input) -> Result<()> {
    let dtype = t.dtype();
    if let Some(name) = &x.dtype {
        let Some(want) = util::dtype_code(name) else {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!("input {i}: the model was compiled for dtype {name}, which libtensor does not have"),
            );
        };
        if want != dtype {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "input {i} is {}, the model was compiled for {}",
                    util::dtype_name(dtype),
                    util::dtype_name(want)
                ),
            );
        }
    }
    let (sizes, strides) = (t.sizes(), t.strides());
    if sizes.len() != x.ndim {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "input {i} has {} dims (sizes {sizes:?}), the model was compiled for {} dims",
                sizes.len(),
                x.ndim
            ),
        );
    }
    for k in 0..x.ndim {
        let fixed = x.sizes[k].as_int();
        let bad = fixed.is_some_and(|s| s != sizes[k])
            || x.min[k].is_some_and(|m| sizes[k] < m)
            || x.max[k].is_some_and(|m| sizes[k] > m);
        if bad {
            let bounds = match (x.min[k], x.max[k]) {
                (Some(a), Some(b)) => format!(" in [{a}, {b}]"),
                (Some(a), None) => format!(" >= {a}"),
                (None, Some(b)) => format!(" <= {b}"),
                _ => String::new(),
            };
            let want = fixed.map_or("dynamic".to_string(), |v| v.to_string());
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "input {i} has sizes {sizes:?}: size {} at dim {k} does not fit the compiled shape [{}] (dim {k}: {want}{bounds})",
                    sizes[k],
                    shape_text(x),
                ),
            );
        }
        if let Some(s) = x.fixed_strides[k] {
            if s != strides[k] {
                return err(
                    sys::TENSOR_ERR_SHAPE,
                    format!(
                        "input {i} has strides {strides:?}: the model was compiled for stride {s} at dim {k} (make it contiguous in the compiled memory format first)"
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Checks every input (`ins[i]` for `w.inputs[i]`).
pub fn check(w: &Wrapper, ins: &[Tensor]) -> Result<()> {
    for (i, (t, x)) in ins.iter().zip(&w.inputs).enumerate() {
        check_one(i, *t, x)?;
    }
    // The symbols, in the wrapper's order; the ranks are checked, so every dim exists.
    let mut env: Vec<(&str, i64)> = Vec::with_capacity(w.symbols.len());
    for (name, b) in &w.symbols {
        let v = match b {
            Binding::Size { input, dim } => ins[*input].sizes().get(*dim).copied(),
            Binding::Stride { input, dim } => ins[*input].strides().get(*dim).copied(),
            Binding::Expr(e) => e.eval(&|s| lookup(&env, s)),
        };
        let Some(v) = v else {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("the model's size {name} cannot be computed from these inputs"),
            );
        };
        env.push((name, v));
    }
    let value = |e: &Expr| e.eval(&|s| lookup(&env, s));
    for (i, (t, x)) in ins.iter().zip(&w.inputs).enumerate() {
        let (sizes, strides) = (t.sizes(), t.strides());
        for k in 0..x.ndim {
            let want = value(&x.sizes[k]);
            if want != Some(sizes[k]) {
                return err(
                    sys::TENSOR_ERR_SHAPE,
                    format!(
                        "input {i} has sizes {sizes:?}: the model needs size {} = {} at dim {k} (its sizes [{}] relate the inputs' dims)",
                        x.sizes[k],
                        want.map_or("?".to_string(), |v| v.to_string()),
                        shape_text(x)
                    ),
                );
            }
            if let Some(e) = &x.strides[k] {
                let want = value(e);
                if sizes[k] > 1 && want != Some(strides[k]) {
                    return err(
                        sys::TENSOR_ERR_SHAPE,
                        format!(
                            "input {i} has strides {strides:?}: the model needs stride {e} = {} at dim {k} (make it contiguous in the compiled memory format first)",
                            want.map_or("?".to_string(), |v| v.to_string())
                        ),
                    );
                }
            }
        }
    }
    Ok(())
}

fn lookup(env: &[(&str, i64)], s: &str) -> Option<i64> {
    env.iter().rev().find(|(n, _)| *n == s).map(|&(_, v)| v)
}

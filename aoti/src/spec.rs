//! What each input of a model was compiled for, read from the generated wrapper source that
//! a `.pt2` package ships beside the model `.so` (`<hash>.wrapper.cpp`): its
//! `check_input_<i>` functions state the dtype, each static size and stride, and the bounds
//! of each dynamic size. (The model's own copies of these checks run only when
//! `AOTI_RUNTIME_CHECK_INPUTS` is set, and they index sizes without checking the rank.)

use crate::error::{err, Result};
use crate::sys;
use crate::util::{self, Tensor};

#[derive(Debug, Default, Clone)]
pub struct InputSpec {
    pub dtype: Option<i32>,
    pub ndim: usize,
    /// Per dim: the static size, or None (dynamic).
    pub sizes: Vec<Option<i64>>,
    pub min: Vec<Option<i64>>,
    pub max: Vec<Option<i64>>,
    pub strides: Vec<Option<i64>>,
}

fn dtype_code(name: &str) -> Option<i32> {
    Some(match name {
        "uint8" => 0,
        "int8" => 1,
        "int16" => 2,
        "int32" => 3,
        "int64" => 4,
        "float16" => 5,
        "float32" => 6,
        "float64" => 7,
        "complex64" => 9,
        "complex128" => 10,
        "bool" => 11,
        "bfloat16" => 15,
        "uint16" => 27,
        "uint32" => 28,
        "uint64" => 29,
        _ => return None,
    })
}

/// `<int> != NAME_size[K]` style operands: the integer literal, if the text is one.
fn int(s: &str) -> Option<i64> {
    s.trim().trim_end_matches('L').parse().ok()
}

/// `NAME_<what>[K]` in `s` (the variable holding input `i`): K.
fn index_of(s: &str, prefix: &str) -> Option<usize> {
    let rest = s.trim().strip_prefix(prefix)?;
    rest.strip_suffix(']')?.parse().ok()
}

/// The specs of inputs 0..n from a wrapper source, or None when it has no check functions
/// for them (then only the count, device and the model's own checks apply).
pub fn parse(src: &str, n: usize) -> Option<Vec<InputSpec>> {
    let mut specs = Vec::with_capacity(n);
    for i in 0..n {
        let head = format!("static void check_input_{i}(");
        let start = src.find(&head)?;
        let body = &src[start + head.len()..];
        let end = body.find("AOTI_NOINLINE static").unwrap_or(body.len());
        let body = &body[..end];
        let marker = format!(" = ConstantHandle(input_handles[{i}]);");
        let line = body.lines().find(|l| l.contains(&marker))?;
        let name = line
            .trim()
            .strip_prefix("ConstantHandle ")?
            .split(' ')
            .next()?;
        let size_p = format!("{name}_size[");
        let stride_p = format!("{name}_stride[");
        let mut spec = InputSpec::default();
        let set = |v: &mut Vec<Option<i64>>, k: usize, x: i64| {
            if v.len() <= k {
                v.resize(k + 1, None);
            }
            v[k] = Some(x);
        };
        let mut ndim = 0usize;
        for l in body.lines() {
            let l = l.trim();
            if let Some(rest) = l.strip_prefix(&format!(
                "int32_t {name}_expected_dtype = aoti_torch_dtype_"
            )) {
                spec.dtype = rest.strip_suffix("();").and_then(dtype_code);
                continue;
            }
            let Some(cond) = l.strip_prefix("if (").and_then(|c| c.strip_suffix(") {")) else {
                continue;
            };
            if let Some((a, b)) = cond.split_once(" != ") {
                if let (Some(x), Some(k)) = (int(a), index_of(b, &size_p)) {
                    set(&mut spec.sizes, k, x);
                    ndim = ndim.max(k + 1);
                } else if let (Some(x), Some(k)) = (int(a), index_of(b, &stride_p)) {
                    set(&mut spec.strides, k, x);
                    ndim = ndim.max(k + 1);
                }
            } else if let Some((a, b)) = cond.split_once(" < ") {
                if let (Some(k), Some(x)) = (index_of(a, &size_p), int(b)) {
                    set(&mut spec.min, k, x);
                    ndim = ndim.max(k + 1);
                }
            } else if let Some((a, b)) = cond.split_once(" > ") {
                if let (Some(k), Some(x)) = (index_of(a, &size_p), int(b)) {
                    set(&mut spec.max, k, x);
                    ndim = ndim.max(k + 1);
                }
            }
        }
        // A 0-dim input has no size checks; a dim whose size and stride are both
        // symbolic has no literal check either, but the dims are checked in order, so a
        // later literal still gives the rank. (A trailing fully symbolic dim would be
        // missed: the model's own checks then still hold the stride.)
        spec.ndim = ndim;
        for v in [
            &mut spec.sizes,
            &mut spec.min,
            &mut spec.max,
            &mut spec.strides,
        ] {
            v.resize(ndim, None);
        }
        specs.push(spec);
    }
    Some(specs)
}

/// Checks input `i` against its spec: dtype, rank, each static size, dynamic bounds, and
/// each static stride of a dim of size > 1.
pub fn check(i: usize, t: Tensor, spec: &InputSpec) -> Result<()> {
    let dtype = t.dtype();
    if let Some(want) = spec.dtype {
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
    if sizes.len() != spec.ndim {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "input {i} has {} dims (sizes {sizes:?}), the model was compiled for {} dims",
                sizes.len(),
                spec.ndim
            ),
        );
    }
    let want = |k: usize| match spec.sizes[k] {
        Some(s) => s.to_string(),
        None => "dynamic".to_string(),
    };
    let shape: Vec<String> = (0..spec.ndim).map(want).collect();
    for k in 0..spec.ndim {
        let bad = spec.sizes[k].is_some_and(|s| s != sizes[k])
            || spec.min[k].is_some_and(|m| sizes[k] < m)
            || spec.max[k].is_some_and(|m| sizes[k] > m);
        if bad {
            let bounds = match (spec.min[k], spec.max[k]) {
                (Some(a), Some(b)) => format!(" in [{a}, {b}]"),
                (Some(a), None) => format!(" >= {a}"),
                (None, Some(b)) => format!(" <= {b}"),
                _ => String::new(),
            };
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "input {i} has sizes {sizes:?}: size {} at dim {k} does not fit the compiled shape [{}] (dim {k}: {}{bounds})",
                    sizes[k],
                    shape.join(", "),
                    want(k)
                ),
            );
        }
    }
    for k in 0..spec.ndim {
        if let Some(s) = spec.strides[k] {
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

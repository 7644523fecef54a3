//! Operations that may copy element data, and in-place writes (section 8), plus
//! `tensor_empty_like` (section 5). Each converts its arguments and calls the core in
//! `crate::copy`.

use super::*;
use crate::dtype::Scalar;

/// An uninitialised tensor with `t`'s sizes and dtype in `*out` (owned). `fmt` PRESERVE
/// keeps `t`'s strides when `t` is non-overlapping and dense, else uses dense strides in
/// `t`'s dim order (as PyTorch); the other formats give their strides. Errors:
/// NULL_POINTER, INVALID_ARGUMENT (unknown format, channels-last on a tensor that is not
/// 4-D / 5-D), OVERFLOW, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_empty_like(
    t: *const tensor_t,
    fmt: tensor_memory_format_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_empty_like", out, || {
        tensor_arg(t, "t")?.empty_like(format_arg(fmt)?)
    })
}

/// `self` reshaped to `sizes` (one -1 allowed) in `*out` (owned): a view sharing `self`'s
/// storage and version counter whenever `tensor_view` would succeed, else a contiguous
/// copy. Errors: NULL_POINTER, INVALID_ARGUMENT, SHAPE (numel mismatch), DEVICE (a copy
/// was needed of non-host data), OUT_OF_BOUNDS (the storage was shrunk below `self`),
/// OVERFLOW (the strides of the new shape overflow int64), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_reshape(
    self_: *const tensor_t,
    sizes: *const i64,
    ndim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_reshape", out, || {
        let t = tensor_owned(self_, "self")?;
        t.reshape(int_list(sizes, ndim, "sizes")?)
    })
}

/// `self` with dims `start_dim..=end_dim` merged (negative dims wrap) in `*out` (owned),
/// with reshape semantics: a view when possible, else a copy. A 0-dim tensor becomes
/// `[1]`; `start_dim == end_dim` gives an alias. Errors: NULL_POINTER, INDEX (dim out of
/// range), INVALID_ARGUMENT (start after end), DEVICE, OUT_OF_BOUNDS, OVERFLOW (the merged
/// size, on a tensor without elements), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_flatten(
    self_: *const tensor_t,
    start_dim: i64,
    end_dim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_flatten", out, || {
        tensor_owned(self_, "self")?.flatten(start_dim, end_dim)
    })
}

/// `self` laid out contiguously in `fmt`, in `*out` (owned). When `self` already is, `*out`
/// is `self` itself with one more reference (the same pointer, as in PyTorch); otherwise a
/// new tensor holding a copy. Errors: NULL_POINTER, INVALID_ARGUMENT (PRESERVE, unknown
/// format, channels-last on the wrong rank), DEVICE, OUT_OF_BOUNDS, OVERFLOW (the new
/// strides, on a tensor without elements whose other sizes are huge), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_contiguous(
    self_: *const tensor_t,
    fmt: tensor_memory_format_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_contiguous", out, || {
        let fmt = format_arg(fmt)?;
        tensor_owned(self_, "self")?.contiguous(fmt)
    })
}

/// A copy of `self` in new memory, in `*out` (owned; its own version counter). `fmt`
/// PRESERVE keeps the strides of a non-overlapping-and-dense `self`, else dense strides in
/// `self`'s dim order. Errors: NULL_POINTER, INVALID_ARGUMENT (unknown format,
/// channels-last on the wrong rank), DEVICE, OUT_OF_BOUNDS, OVERFLOW (the new strides, on
/// a tensor without elements whose other sizes are huge), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_clone(
    self_: *const tensor_t,
    fmt: tensor_memory_format_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_clone", out, || {
        tensor_arg(self_, "self")?.deep_clone(format_arg(fmt)?)
    })
}

/// `self` converted to `dtype`, in `*out` (owned). Same dtype: `self` itself with one more
/// reference (as `Tensor.to(dtype)`); otherwise a new tensor with the preserve-format
/// layout. Conversions: float -> int truncates toward zero and saturates (NaN -> 0), int ->
/// int wraps, -> bool is `!= 0`, complex -> real keeps the real part; to a float8 dtype
/// through float32, rounding to nearest even with PyTorch 2.15's overflow rules (e5m2: inf;
/// e4m3fn: saturate to ±448; fnuz: NaN; e8m0fnu: powers of two, docs/c-api.md section 4).
/// float4_e2m1fn_x2 converts to nothing and from nothing (as in PyTorch). Errors:
/// NULL_POINTER, INVALID_ARGUMENT (unknown dtype), DTYPE (float4_e2m1fn_x2 to or from
/// another dtype), DEVICE, OUT_OF_BOUNDS, OVERFLOW (the new strides, on a tensor without
/// elements whose other sizes are huge), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_to_dtype(
    self_: *const tensor_t,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_to_dtype", out, || {
        let dtype = dtype_arg(dtype)?;
        tensor_owned(self_, "self")?.to_dtype(dtype)
    })
}

/// `self` tiled `repeats[i]` times along each dim (`n >= ndim`; extra leading repeats add
/// dims), a new contiguous tensor in `*out` (owned). Errors: NULL_POINTER,
/// INVALID_ARGUMENT (n < ndim, negative repeat), OVERFLOW, DEVICE, OUT_OF_BOUNDS,
/// OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_repeat(
    self_: *const tensor_t,
    repeats: *const i64,
    n: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_repeat", out, || {
        let t = tensor_arg(self_, "self")?;
        t.repeat(int_list(repeats, n, "repeats")?)
    })
}

/// Copies `src` into `dst` in place: `src` broadcasts to `dst`'s shape and is converted to
/// `dst`'s dtype (rules as tensor_to_dtype). When the two share memory the result is that
/// of copying from a snapshot of `src`: sharing is decided from the byte ranges the two
/// span, by address, and, for two mapped storages (`storage_is_mapped`) with `dst` a
/// shared mapping, by file offset when both map the same file or shared-memory segment
/// (two mappings of one file, or `storage_from_fd(storage_fd(s))`, are two addresses for
/// the same pages; a private `src` counts, since its unwritten pages show `dst`'s writes).
/// Bumps `dst`'s version once. Internal overlap of `dst` is checked as PyTorch's
/// `assert_no_internal_overlap` checks it: a dim of size > 1 with stride 0 (an expanded
/// view) is refused with OVERLAP; other layouts whose elements share memory (e.g. sizes
/// {2, 2} with strides {1, 1}, an unfold with step < size: PyTorch's TOO_HARD) are not
/// detected and are accepted, each element then holding one of the values written to it,
/// unspecified which. Errors: NULL_POINTER, DTYPE (float4_e2m1fn_x2 to or from another
/// dtype), SHAPE (src does not broadcast to dst), OVERLAP (dst has a stride-0 dim of size > 1),
/// READ_ONLY, DEVICE, OUT_OF_BOUNDS, OUT_OF_MEMORY (the snapshot).
#[no_mangle]
pub extern "C" fn tensor_copy_(dst: *mut tensor_t, src: *const tensor_t) -> tensor_status_t {
    call("tensor_copy_", || {
        tensor_arg(dst, "dst")?.copy_(tensor_arg(src, "src")?)
    })
}

/// One-pass affine copy: `dst[..., c, ...] = src[..., c, ...] * scale[c] + shift[c]` for
/// every index `c` of `dst`'s dim `dim` (negative wraps), with `src` broadcast to `dst` and
/// converted as `tensor_copy_` converts (any dtypes but complex, any strides). `n` is
/// `dst`'s size at `dim`, or 1 for one scale and shift for every element; `scale` and
/// `shift` hold `n` values each. Arithmetic is float64 for float64 and integer outputs
/// (integer results are then truncated toward zero and saturated, NaN gives 0, as
/// `tensor_copy_`), float32 for float32 / float16 / bfloat16 outputs (a multiply and an
/// add, each rounded to float32). Typical use: a uint8 HWC frame permuted to CHW into a
/// float32 CHW tensor with `scale[c] = 1 / (255 * std[c])`, `shift[c] = -mean[c] / std[c]`.
/// Same rules as `tensor_copy_`: `src` is read as if snapshotted when it overlaps `dst`,
/// `dst` must be writable, with `tensor_copy_`'s internal-overlap check (only a stride-0
/// dim of size > 1 is refused; other self-overlapping layouts are accepted, as there), and
/// `dst`'s version is bumped once.
/// Errors: NULL_POINTER, INDEX (dim out of range), INVALID_ARGUMENT (n is neither 1 nor
/// the size of dim), DTYPE (a complex or float4_e2m1fn_x2 tensor), SHAPE (src does not broadcast to dst),
/// DEVICE, OUT_OF_BOUNDS, READ_ONLY, OVERLAP (dst has a stride-0 dim of size > 1),
/// OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_copy_affine_(
    dst: *mut tensor_t,
    src: *const tensor_t,
    dim: i64,
    scale: *const f64,
    shift: *const f64,
    n: i64,
) -> tensor_status_t {
    call("tensor_copy_affine_", || {
        let (d, s) = (tensor_arg(dst, "dst")?, tensor_arg(src, "src")?);
        ensure!(!scale.is_null(), NullPointer, "argument 'scale' is NULL");
        ensure!(!shift.is_null(), NullPointer, "argument 'shift' is NULL");
        // SAFETY: the caller promises n readable values at each (checked non-NULL);
        // copy_affine_ asks only for c < n after checking n.
        d.copy_affine_(s, dim, n, &|c| unsafe { (*scale.add(c), *shift.add(c)) })
    })
}

/// Sets every element of `dst` to `value` converted to its dtype; bumps the version once
/// (PyTorch's `fill_`). As in PyTorch, an expanded `dst` (elements aliasing each other) is
/// allowed: filling is idempotent. Errors: NULL_POINTER, DTYPE (float4_e2m1fn_x2, which has
/// no values), READ_ONLY, DEVICE, OUT_OF_BOUNDS, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_fill_f64_(dst: *mut tensor_t, value: f64) -> tensor_status_t {
    call("tensor_fill_f64_", || fill(dst, Scalar::Float(value)))
}

/// Sets every element of `dst` to `value` converted to its dtype (exact for every int64
/// in integer dtypes); bumps the version once. Errors: as tensor_fill_f64_.
#[no_mangle]
pub extern "C" fn tensor_fill_i64_(dst: *mut tensor_t, value: i64) -> tensor_status_t {
    call("tensor_fill_i64_", || fill(dst, Scalar::Int(value)))
}

/// Alias of tensor_fill_f64_, kept for 0.x: new code calls tensor_fill_f64_ (the same
/// function; its error messages name tensor_fill_f64). Errors: as tensor_fill_f64_.
#[no_mangle]
pub extern "C" fn tensor_fill_f64(dst: *mut tensor_t, value: f64) -> tensor_status_t {
    call("tensor_fill_f64", || fill(dst, Scalar::Float(value)))
}

/// Alias of tensor_fill_i64_, kept for 0.x: new code calls tensor_fill_i64_ (the same
/// function; its error messages name tensor_fill_i64). Errors: as tensor_fill_i64_.
#[no_mangle]
pub extern "C" fn tensor_fill_i64(dst: *mut tensor_t, value: i64) -> tensor_status_t {
    call("tensor_fill_i64", || fill(dst, Scalar::Int(value)))
}

/// The body of the fill functions and their aliases (each passes its own name to `call`).
fn fill(dst: *mut tensor_t, value: Scalar) -> Result<()> {
    tensor_arg(dst, "dst")?.fill_(value)
}

/// `torch.equal(a, b)` in `*out`: true when the sizes match and every element is equal
/// (NaN is never equal; -0 equals +0). Different dtypes are compared after PyTorch's type
/// promotion. As ATen's, the same layout over the same bytes (e.g. `tensor_equal(t, t)`)
/// is answered without comparing pairs: true for integer and bool dtypes, and for floating
/// and complex ones true unless a distinct element is NaN (stride-0 dims are not walked,
/// so an expanded view costs what its base does). float8 tensors compare by value (PyTorch
/// has no float8 kernel for it). Errors: NULL_POINTER, DTYPE (a promotion PyTorch refuses,
/// e.g. uint16 with int8 or a float8 with any other dtype; float4_e2m1fn_x2, which has no
/// values), DEVICE, OUT_OF_BOUNDS, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_equal(
    a: *const tensor_t,
    b: *const tensor_t,
    out: *mut bool,
) -> tensor_status_t {
    call("tensor_equal", || {
        let out = out_arg(out)?;
        *out = tensor_arg(a, "a")?.equal(tensor_arg(b, "b")?)?;
        Ok(())
    })
}

/// Sets how many threads big copies may use (clone, contiguous, to_dtype, copy_, ...;
/// outputs of at least 16 MiB, split along their outermost dim) and writes the previous
/// count to `*previous` when it is not NULL. The default is 1: no thread is ever started.
/// With n > 1 each big copy starts n - 1 short-lived threads of its own. The start-up
/// value comes from the environment variable `TENSOR_COPY_THREADS` (read once). Results
/// are identical for every count. Thread-safe.
/// Errors: INVALID_ARGUMENT (n outside [1, 256]).
#[no_mangle]
pub extern "C" fn tensor_set_copy_threads(n: i64, previous: *mut i64) -> tensor_status_t {
    call("tensor_set_copy_threads", || {
        let prev = crate::copy::parallel::set_copy_threads(n)?;
        // SAFETY: a non-NULL out-parameter points to writable memory.
        if let Some(p) = unsafe { previous.as_mut() } {
            *p = prev as i64;
        }
        Ok(())
    })
}

/// The number of threads big copies may use (see `tensor_set_copy_threads`).
#[no_mangle]
pub extern "C" fn tensor_copy_threads() -> i64 {
    guard_or("tensor_copy_threads", 1, || {
        crate::copy::parallel::copy_threads() as i64
    })
}

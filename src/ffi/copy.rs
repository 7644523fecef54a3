//! Copies: operations that move element data, in-place writes
//!
//! Operations that may copy element data, and in-place writes, plus `tensor_empty_like`
//! and the threads copies may use. Each converts its arguments and calls the core in
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
    call_tensor(fn_name!(), out, || {
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
    call_tensor(fn_name!(), out, || {
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
    call_tensor(fn_name!(), out, || {
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
    call_tensor(fn_name!(), out, || {
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
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.deep_clone(format_arg(fmt)?)
    })
}

/// `self` converted to `dtype`, in `*out` (owned). Same dtype: `self` itself with one more
/// reference (as `Tensor.to(dtype)`); otherwise a new tensor with the preserve-format
/// layout. Conversions: float -> int truncates toward zero and saturates (NaN -> 0), int ->
/// int wraps, -> bool is `!= 0`, complex -> real keeps the real part; to a float8 dtype
/// through float32, rounding to nearest even with PyTorch 2.15's overflow rules (e5m2: inf;
/// e4m3fn: saturate to ±448; fnuz: NaN; e8m0fnu: powers of two; docs/c-api.md, "Types and constants").
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
    call_tensor(fn_name!(), out, || {
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
    call_tensor(fn_name!(), out, || {
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
    call(fn_name!(), || {
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
    call(fn_name!(), || {
        copy_affine(dst, src, dim, scale, shift, n, std::ptr::null())
    })
}

/// `tensor_copy_affine_` with a channel map: index `c` of `dst`'s dim `dim` reads index
/// `src_index[c]` of `src`'s dim (aligned from the right, as broadcasting aligns dims), so
/// `dst[..., c, ...] = src[..., src_index[c], ...] * scale[c] + shift[c]`: BGR -> RGB is
/// `src_index = {2, 1, 0}`, BGRA -> RGB the same over a 4-channel `src`, at the speed of the
/// unmapped copy (the same kernels, in the same pass). `src_index` holds one value per index
/// of `dim` (`dst`'s size there, whatever `n`); `src`'s size at that dim may then be any
/// (a missing dim counts as size 1), every value must be in `[0, that size)`, and the
/// other dims broadcast as in `tensor_copy_`. NULL `src_index` is the identity:
/// exactly `tensor_copy_affine_`. Everything else (arithmetic, overlap, version) as
/// `tensor_copy_affine_`.
/// Errors: NULL_POINTER, INDEX (dim out of range, a `src_index` value outside `src`'s
/// dim), INVALID_ARGUMENT (n is neither 1 nor the size of dim), DTYPE (a complex or
/// float4_e2m1fn_x2 tensor), SHAPE (src does not broadcast to dst), DEVICE, OUT_OF_BOUNDS, READ_ONLY, OVERLAP (dst
/// has a stride-0 dim of size > 1), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_copy_affine_ex(
    dst: *mut tensor_t,
    src: *const tensor_t,
    dim: i64,
    scale: *const f64,
    shift: *const f64,
    n: i64,
    src_index: *const i64,
) -> tensor_status_t {
    call(fn_name!(), || {
        copy_affine(dst, src, dim, scale, shift, n, src_index)
    })
}

/// The body of tensor_copy_affine_ and tensor_copy_affine_ex (NULL `src_index`: identity).
fn copy_affine(
    dst: *mut tensor_t,
    src: *const tensor_t,
    dim: i64,
    scale: *const f64,
    shift: *const f64,
    n: i64,
    src_index: *const i64,
) -> Result<()> {
    let (d, s) = (tensor_arg(dst, "dst")?, tensor_arg(src, "src")?);
    ensure!(!scale.is_null(), NullPointer, "argument 'scale' is NULL");
    ensure!(!shift.is_null(), NullPointer, "argument 'shift' is NULL");
    // SAFETY: the caller promises n readable values at each (checked non-NULL);
    // copy_affine_ asks only for c < n after checking n.
    let param = |c: usize| unsafe { (*scale.add(c), *shift.add(c)) };
    // SAFETY: a non-NULL src_index holds one value per index of dst's dim (the contract);
    // copy_affine_ asks only for c below that size, after checking dim.
    let index = |c: usize| unsafe { *src_index.add(c) };
    let map: Option<&dyn Fn(usize) -> i64> = if src_index.is_null() {
        None
    } else {
        Some(&index)
    };
    d.copy_affine_(s, dim, n, &param, map)
}

/// Sets every element of `dst` to `value` converted to its dtype; bumps the version once
/// (PyTorch's `fill_`). As in PyTorch, an expanded `dst` (elements aliasing each other) is
/// allowed: filling is idempotent. Errors: NULL_POINTER, DTYPE (float4_e2m1fn_x2, which has
/// no values), READ_ONLY, DEVICE, OUT_OF_BOUNDS, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_fill_f64_(dst: *mut tensor_t, value: f64) -> tensor_status_t {
    call(fn_name!(), || fill(dst, Scalar::Float(value)))
}

/// Sets every element of `dst` to `value` converted to its dtype (exact for every int64
/// in integer dtypes); bumps the version once. Errors: as tensor_fill_f64_.
#[no_mangle]
pub extern "C" fn tensor_fill_i64_(dst: *mut tensor_t, value: i64) -> tensor_status_t {
    call(fn_name!(), || fill(dst, Scalar::Int(value)))
}

/// Alias of tensor_fill_f64_, kept for 0.x: new code calls tensor_fill_f64_ (the same
/// function; its error messages name tensor_fill_f64). Errors: as tensor_fill_f64_.
#[no_mangle]
pub extern "C" fn tensor_fill_f64(dst: *mut tensor_t, value: f64) -> tensor_status_t {
    call(fn_name!(), || fill(dst, Scalar::Float(value)))
}

/// Alias of tensor_fill_i64_, kept for 0.x: new code calls tensor_fill_i64_ (the same
/// function; its error messages name tensor_fill_i64). Errors: as tensor_fill_i64_.
#[no_mangle]
pub extern "C" fn tensor_fill_i64(dst: *mut tensor_t, value: i64) -> tensor_status_t {
    call(fn_name!(), || fill(dst, Scalar::Int(value)))
}

/// The body of the fill functions and their aliases (each passes `fn_name!()` to `call`).
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
    call(fn_name!(), || {
        let out = out_arg(out)?;
        *out = tensor_arg(a, "a")?.equal(tensor_arg(b, "b")?)?;
        Ok(())
    })
}

/// Sets how many threads big copies may use (clone, contiguous, to_dtype, copy_, ...;
/// outputs of at least 16 MiB, split along their outermost dim) and writes the previous
/// count to `*previous` when it is not NULL. The default is 1: no thread is ever started.
/// With n > 1 each big copy starts n - 1 short-lived threads of its own, unless the host
/// set an executor (`tensor_set_copy_executor`): then the count is the number of parts
/// handed to it, and no thread is started. The start-up value comes from the environment
/// variable `TENSOR_COPY_THREADS` (read once). Results are identical for every count.
/// Thread-safe.
/// Errors: INVALID_ARGUMENT (n outside [1, 256]).
#[no_mangle]
pub extern "C" fn tensor_set_copy_threads(n: i64, previous: *mut i64) -> tensor_status_t {
    call(fn_name!(), || {
        let prev = crate::copy::parallel::set_copy_threads(n)?;
        // SAFETY: a non-NULL out-parameter points to writable memory.
        if let Some(p) = unsafe { previous.as_mut() } {
            *p = prev as i64;
        }
        Ok(())
    })
}

/// One part of a big copy: the executor calls it as `task_fn(task_ctx, i)`.
pub type tensor_task_fn = Option<unsafe extern "C" fn(task_ctx: *mut c_void, i: usize)>;

/// The host's executor for big copies (see `tensor_set_copy_executor`): calls
/// `task_fn(task_ctx, i)` once for every `i` in `[0, n_tasks)`, on any threads and in any
/// order, and returns once every call has returned.
pub type tensor_copy_executor_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        n_tasks: usize,
        task_fn: tensor_task_fn,
        task_ctx: *mut c_void,
    ),
>;

/// Runs the parts of big copies on the host's thread pool (OpenMP, TBB, a job system)
/// instead of threads of the library's own. With `executor` set, a copy whose output has
/// at least 16 MiB (clone, contiguous, to_dtype, copy_, ...) is cut along its outermost
/// dim of size >= n into `n` parts and calls `executor(ctx, n, task_fn, task_ctx)` once,
/// from the copying thread; the library starts no thread. `n` is `tensor_copy_threads()`
/// when that was set (by `tensor_set_copy_threads` or `TENSOR_COPY_THREADS`; 1 then keeps
/// copies on the calling thread), else the number of CPUs the process may run on (read
/// once), at most 256. Results are identical to the single-threaded copy's. NULL
/// `executor` restores the default (threads of the library's own when the count is > 1);
/// `ctx` is then ignored.
///
/// The executor's contract (what it must do):
/// - Call `task_fn(task_ctx, i)` for each `i` in `[0, n_tasks)`, from any threads (the
///   calling thread included), in any order or concurrently, and return only after every
///   call has returned (e.g. `#pragma omp parallel for` over `i`, or `tbb::parallel_for`).
/// - Return normally: never throw or `longjmp` out of `executor` (or out of a task), and
///   never call `task_fn` after returning.
/// - Be thread-safe: `executor` is called from whatever threads make big copies, possibly
///   several at once with the same `ctx`.
/// - Never call `tensor_set_copy_executor` from `executor` or a task (a task may call the
///   rest of libtensor).
///
/// What the library survives:
/// - Leniency costs speed, never correctness: a part `executor` skipped runs on the
///   copying thread after it returns; a second call for the same `i`, or an `i` out of
///   range, does nothing.
/// - A task called after `executor` returned is refused: it does nothing (`task_ctx` is a
///   ticket of the copy, not its memory, and the copy is over).
/// - A task never unwinds into `executor`: a panic inside the library in a task is caught
///   there, the other parts still run, and once `executor` returns the copy fails with
///   INTERNAL and its message.
/// - This call from inside `executor` or a task on the same thread (running on that
///   thread's own stack) is refused with INVALID_ARGUMENT, rather than waiting for itself.
/// - An executor that `longjmp`s out of a copy (a broken contract) abandons that copy: what
///   the copy held is lost, and its parts still running elsewhere write on; the library
///   takes back its hold on the executor when the thread it jumped on next calls
///   `tensor_set_copy_executor` (which is then neither refused nor kept waiting by it) or
///   exits. Until then a setter on another thread waits for that copy.
///
/// Setting is thread-safe and may happen while copies run: a copy keeps the executor it
/// started with to its end, and this call returns only once every copy running on the
/// previous executor has returned, so the previous `ctx` may be freed as soon as it
/// returns. It therefore must not be called from inside `executor` or a task, nor from a
/// thread the executor needs to finish those copies.
/// Errors: INVALID_ARGUMENT (called from inside an executor call or one of its tasks).
#[no_mangle]
pub extern "C" fn tensor_set_copy_executor(
    executor: tensor_copy_executor_fn,
    ctx: *mut c_void,
) -> tensor_status_t {
    call(fn_name!(), || {
        crate::copy::parallel::set_executor(executor, ctx)
    })
}

/// The number of threads big copies may use (see `tensor_set_copy_threads`).
#[no_mangle]
pub extern "C" fn tensor_copy_threads() -> i64 {
    guard_or(fn_name!(), 1, || {
        crate::copy::parallel::copy_threads() as i64
    })
}

/// `color` matrix: ITU-R BT.601 (`Kr = 0.299, Kb = 0.114`; SD video, JPEG with FULL).
pub const TENSOR_YUV_BT601: i32 = 1;
/// `color` matrix: ITU-R BT.709 (`Kr = 0.2126, Kb = 0.0722`; HD video).
pub const TENSOR_YUV_BT709: i32 = 2;
/// `color` matrix: ITU-R BT.2020 non-constant luminance (`Kr = 0.2627, Kb = 0.0593`).
pub const TENSOR_YUV_BT2020: i32 = 3;
/// `color` range: limited ("video", "TV", MPEG) range, Y in 16..235 and U, V in 16..240.
pub const TENSOR_YUV_LIMITED: i32 = 0x10;
/// `color` range: full ("PC", JPEG) range, Y, U and V in 0..255.
pub const TENSOR_YUV_FULL: i32 = 0x20;
/// `color` flag: write B, G, R to channels 0, 1, 2 instead of R, G, B.
pub const TENSOR_YUV_BGR: i32 = 0x100;
/// `color` flag for uint16 planes: the 10-bit samples are in the high bits (P010, P016's
/// layout: sample = value << 6); without it uint16 planes hold them in the low bits
/// (YUV420P10). Uint8 planes with it: INVALID_ARGUMENT.
pub const TENSOR_YUV_MSB: i32 = 0x200;

// The core's codes are these (cbindgen needs the literals here).
const _: () = {
    use crate::copy::yuv;
    assert!(TENSOR_YUV_BT601 == yuv::BT601 && TENSOR_YUV_BT709 == yuv::BT709);
    assert!(TENSOR_YUV_BT2020 == yuv::BT2020 && TENSOR_YUV_BGR == yuv::BGR);
    assert!(TENSOR_YUV_LIMITED == yuv::LIMITED && TENSOR_YUV_FULL == yuv::FULL);
    assert!(TENSOR_YUV_MSB == yuv::MSB);
};

/// One-pass YUV 4:2:0 -> normalized RGB: colour conversion, chroma upsampling and
/// `tensor_copy_affine_`'s per-channel `scale` / `shift`, each output element written once.
///
/// Planes (uint8, any strides: a decoder's padded line size is a byte stride, wrapped with
/// `tensor_from_blob_bytes`): `y` is `[H, W]`; YUV420P (I420): `u` and `v` are
/// `[ceil(H/2), ceil(W/2)]`; NV12: `u` is the interleaved plane as `[ceil(H/2), ceil(W/2),
/// 2]` (U at index 0, V at 1 of the last dim) and `v` is NULL. `dst` is `[3, H, W]`,
/// `[H, W, 3]` (the 3 channels at `channel_dim`, negative wraps, between the two others),
/// or either with a leading batch dim of 1; any strides; float32, float16, bfloat16 or
/// uint8. `color` is a matrix (`TENSOR_YUV_BT601`, `TENSOR_YUV_BT709`,
/// `TENSOR_YUV_BT2020`) OR'd with a range (`TENSOR_YUV_LIMITED` or `TENSOR_YUV_FULL`) and
/// optionally `TENSOR_YUV_BGR` (channels 0, 1, 2 get B, G, R). `n` is 3 (one `scale` and
/// `shift` per dst channel) or 1 (one for all).
///
/// 10-bit video: the three planes may instead all be uint16 (wrapped the same way:
/// `tensor_from_blob_bytes` takes the decoder's line size in bytes), each sample `s` read
/// on the 8-bit scale as `Y = s / 4` (YUV420P10: the value in the low 10 bits) or, with
/// `TENSOR_YUV_MSB` in `color`, `Y = s / 256` (P010: in the high 10 bits), likewise U and
/// V, exactly in float32 (so 10-bit LIMITED range 64..940 maps to 16..235); the formula
/// below is unchanged. NV12's 10-bit form is P010 (`u` interleaved, `v` NULL).
///
/// Chroma siting: nearest neighbour; pixel (i, j) uses chroma sample (i / 2, j / 2)
/// (integer division), so each 2x2 block of pixels shares one chroma sample (an odd last
/// row or column uses the last sample), as libyuv and libswscale's SWS_POINT do: no
/// interpolation, whatever chroma location the stream signals.
///
/// Arithmetic, all in float32, with `u = U - 128`, `v = V - 128`:
/// `y' = (Y - y0) * ky`; `R = y' + rv*v`, `G = y' + (gu*u + gv*v)`, `B = y' + bu*u`, each
/// clamped to [0, 255] (`rgb_c`, the converted value in 0..255); then channel `c` of dst
/// gets `rgb_c * scale[c] + shift[c]` (so `scale[c] = 1 / (255 * std[c])`,
/// `shift[c] = -mean[c] / std[c]` is the usual mean/std normalization), stored as float32,
/// rounded to nearest-even for float16 / bfloat16, or for uint8 clamped to [0, 255] (NaN
/// gives 0) and rounded to nearest, halves up. Constants, from the matrix's `Kr`, `Kb`
/// (`Kg = 1 - Kr - Kb`), computed in float64 and rounded to float32 once: LIMITED has
/// `y0 = 16, ky = 255/219, kc = 255/224`, FULL `y0 = 0, ky = 1, kc = 1`; `rv = 2(1-Kr)kc`,
/// `bu = 2(1-Kb)kc`, `gu = -2(1-Kb)(Kb/Kg)kc`, `gv = -2(1-Kr)(Kr/Kg)kc`.
///
/// Same rules as `tensor_copy_affine_`: a plane sharing memory with `dst` is read as if
/// snapshotted, `dst` must be writable and without a stride-0 dim of size > 1, and its
/// version is bumped once. Single-threaded.
/// Errors: NULL_POINTER (dst, y, u, scale or shift), INVALID_ARGUMENT (an unknown
/// `color`, TENSOR_YUV_MSB with uint8 planes, n neither 1 nor 3), INDEX (channel_dim out of
/// range), DTYPE (a plane neither uint8 nor uint16, or not of y's dtype, dst not float32 /
/// float16 / bfloat16 / uint8), SHAPE (dst not one of the layouts
/// above, planes whose sizes do not match dst's H and W), DEVICE, OUT_OF_BOUNDS,
/// READ_ONLY, OVERLAP, OUT_OF_MEMORY.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn tensor_copy_yuv_affine_(
    dst: *mut tensor_t,
    y: *const tensor_t,
    u: *const tensor_t,
    v: *const tensor_t,
    color: i32,
    channel_dim: i64,
    scale: *const f64,
    shift: *const f64,
    n: i64,
) -> tensor_status_t {
    call(fn_name!(), || {
        let d = tensor_arg(dst, "dst")?;
        let (y, u) = (tensor_arg(y, "y")?, tensor_arg(u, "u")?);
        let v = if v.is_null() {
            None
        } else {
            Some(tensor_arg(v, "v")?)
        };
        ensure!(!scale.is_null(), NullPointer, "argument 'scale' is NULL");
        ensure!(!shift.is_null(), NullPointer, "argument 'shift' is NULL");
        // SAFETY: the caller promises n readable values at each (checked non-NULL);
        // copy_yuv_affine_ asks only for c < n after checking n.
        let param = |c: usize| unsafe { (*scale.add(c), *shift.add(c)) };
        crate::copy::yuv::copy_yuv_affine_(d, y, u, v, color, channel_dim, n, &param)
    })
}

//! Tensors: creating them and reading their metadata and elements

use super::*;
use crate::dtype::Scalar;
use crate::layout::Strides;
use std::ffi::{c_char, c_void};

/// An uninitialised contiguous tensor in `*out` (owned). `ndim == 0` makes a 0-dim tensor
/// (`sizes` may be NULL). Errors: NULL_POINTER, INVALID_ARGUMENT (negative size, ndim
/// outside [0, 64], unknown dtype), OVERFLOW, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_empty(
    sizes: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        Tensor::empty(int_list(sizes, ndim, "sizes")?, dtype_arg(dtype)?)
    })
}

/// An uninitialised tensor with the given strides (in elements) in `*out` (owned), on a
/// storage of exactly the bytes they reach. Errors: as tensor_empty, plus
/// INVALID_ARGUMENT for negative strides.
#[no_mangle]
pub extern "C" fn tensor_empty_strided(
    sizes: *const i64,
    strides: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        Tensor::empty_strided(
            int_list(sizes, ndim, "sizes")?,
            int_list(strides, ndim, "strides")?,
            dtype_arg(dtype)?,
        )
    })
}

/// Bytes of storage a layout needs (PyTorch's `computeStorageNbytes`) in `*out`: 0 when a
/// size is 0, else `(storage_offset + 1 + sum of strides[d] * (sizes[d] - 1)) * itemsize`:
/// what a storage under `tensor_from_storage` with this layout must hold, and what
/// `tensor_empty_strided` allocates (with offset 0). Errors: NULL_POINTER,
/// INVALID_ARGUMENT (negative size, stride or offset, ndim outside [0, 64], unknown dtype),
/// OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_storage_nbytes_needed(
    sizes: *const i64,
    strides: *const i64,
    ndim: i64,
    storage_offset: i64,
    dtype: tensor_dtype_t,
    out: *mut usize,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let sizes = int_list(sizes, ndim, "sizes")?;
        let strides = int_list(strides, ndim, "strides")?;
        let dtype = dtype_arg(dtype)?;
        shape::check_sizes(sizes)?;
        shape::check_strides(strides)?;
        ensure!(
            storage_offset >= 0,
            InvalidArgument,
            "negative storage offset {storage_offset}"
        );
        let n = shape::storage_nbytes_needed(sizes, strides, storage_offset, dtype.itemsize())?;
        *out = usize::try_from(n).map_err(|_| {
            Error::from_fmt(
                Status::Overflow,
                format_args!("{n} bytes do not fit size_t"),
            )
        })?;
        Ok(())
    })
}

/// The strides of a dense tensor of `sizes` in memory format `fmt`, in elements, written to
/// `strides[0..ndim]`: row-major for TENSOR_CONTIGUOUS_FORMAT (c10's `contiguous_strides`:
/// size-0 and size-1 dims count as 1), channels-last for TENSOR_CHANNELS_LAST (4 dims) and
/// TENSOR_CHANNELS_LAST_3D (5 dims), as c10's `get_channels_last_strides_2d` / `_3d` (which
/// use the sizes as they are). What `tensor_empty_strided` needs to make such a tensor.
/// `strides` is untouched on failure. Errors: NULL_POINTER, INVALID_ARGUMENT (negative
/// size, ndim outside [0, 64], TENSOR_PRESERVE_FORMAT or an unknown code, a channels-last
/// format of another rank), OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_format_strides(
    sizes: *const i64,
    ndim: i64,
    fmt: tensor_memory_format_t,
    strides: *mut i64,
) -> tensor_status_t {
    call(fn_name!(), || {
        let sizes = int_list(sizes, ndim, "sizes")?;
        shape::check_sizes(sizes)?;
        let st = format_arg(fmt)?.strides_for(sizes)?;
        if sizes.is_empty() {
            return Ok(());
        }
        ensure!(!strides.is_null(), NullPointer, "'strides' is NULL");
        // SAFETY: non-NULL (checked); the C contract gives it ndim writable entries.
        unsafe { std::slice::from_raw_parts_mut(strides, sizes.len()) }.copy_from_slice(&st);
        Ok(())
    })
}

/// A tensor of zeros in `*out` (owned). Errors: as tensor_empty.
#[no_mangle]
pub extern "C" fn tensor_zeros(
    sizes: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        Tensor::zeros(int_list(sizes, ndim, "sizes")?, dtype_arg(dtype)?)
    })
}

/// A tensor of ones in `*out` (owned). Errors: as tensor_empty, plus DTYPE
/// (float4_e2m1fn_x2, which has no values).
#[no_mangle]
pub extern "C" fn tensor_ones(
    sizes: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        Tensor::full(
            int_list(sizes, ndim, "sizes")?,
            dtype_arg(dtype)?,
            Scalar::Int(1),
        )
    })
}

/// A tensor filled with `value` converted to `dtype` (float → int truncates, saturating)
/// in `*out` (owned). Errors: as tensor_empty, plus DTYPE (float4_e2m1fn_x2, which has no
/// values).
#[no_mangle]
pub extern "C" fn tensor_full(
    sizes: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    value: f64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        Tensor::full(
            int_list(sizes, ndim, "sizes")?,
            dtype_arg(dtype)?,
            Scalar::Float(value),
        )
    })
}

/// The 1-D tensor `[0, 1, ..., n-1]` in `dtype` in `*out` (owned).
/// Errors: NULL_POINTER, INVALID_ARGUMENT (n < 0, unknown dtype), DTYPE
/// (float4_e2m1fn_x2, which has no values), OVERFLOW (n elements overflow the byte count),
/// OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_arange(
    n: i64,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || Tensor::arange(n, dtype_arg(dtype)?))
}

/// Wraps caller memory without copying, in `*out` (owned). `strides` are in **elements**,
/// not bytes (for byte strides such as `cv::Mat::step` or `AVFrame::linesize` use
/// `tensor_from_blob_bytes`); NULL means contiguous. The tensor owns a storage of exactly
/// the bytes its sizes and strides reach.
/// On success `deleter(data, ctx)` (if non-NULL) runs exactly once, when the last strong
/// reference to the storage dies, on that thread; on failure it is not called and the
/// caller keeps `data`. Errors: NULL_POINTER, INVALID_ARGUMENT (negative size/stride,
/// unknown dtype or device), OVERFLOW, OUT_OF_MEMORY.
#[no_mangle]
// The C signature: memory, its layout, its dtype and device, its deleter, the result.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn tensor_from_blob(
    data: *mut c_void,
    sizes: *const i64,
    strides: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    device: tensor_device_t,
    deleter: tensor_deleter_fn,
    ctx: *mut c_void,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        let sizes = int_list(sizes, ndim, "sizes")?;
        let strides = Strides::elements_or_contiguous(opt_int_list(strides, ndim, "strides")?);
        let blob = Blob {
            data,
            device: device.into(),
            deleter,
            ctx,
        };
        Tensor::from_blob(blob, sizes, strides, dtype_arg(dtype)?)
    })
}

/// Wraps caller memory without copying, like `tensor_from_blob`, but `byte_strides` are in
/// **bytes** (not elements): pass OpenCV's `cv::Mat::step[i]`, FFmpeg's
/// `AVFrame::linesize[p]` or NumPy's `__array_interface__` strides as they are. Each byte
/// stride must be a multiple of the dtype's item size and `data` must be aligned for the
/// dtype (`tensor_dtype_itemsize`; 4 for complex64, 8 for complex128); both are refused
/// with a message naming the value. `byte_strides` NULL means contiguous. Ownership and
/// `deleter` as `tensor_from_blob`: it runs exactly once on success, never on failure.
/// Errors: NULL_POINTER, INVALID_ARGUMENT (byte stride not a multiple of the item size,
/// misaligned data, negative size/stride, unknown dtype or device), OVERFLOW,
/// OUT_OF_MEMORY.
#[no_mangle]
// The C signature: memory, its layout, its dtype and device, its deleter, the result.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn tensor_from_blob_bytes(
    data: *mut c_void,
    sizes: *const i64,
    byte_strides: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    device: tensor_device_t,
    deleter: tensor_deleter_fn,
    ctx: *mut c_void,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        let sizes = int_list(sizes, ndim, "sizes")?;
        let strides = opt_int_list(byte_strides, ndim, "byte_strides")?;
        let blob = Blob {
            data,
            device: device.into(),
            deleter,
            ctx,
        };
        Tensor::from_blob_bytes(blob, sizes, strides, dtype_arg(dtype)?)
    })
}

/// A tensor over `s` at `storage_offset` (elements) in `*out` (owned; holds a strong
/// reference to `s`). `strides` are in elements (not bytes); NULL means contiguous.
/// Errors: NULL_POINTER, INVALID_ARGUMENT, OVERFLOW, OUT_OF_BOUNDS (the layout reaches
/// past the storage), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_from_storage(
    s: *mut storage_t,
    storage_offset: i64,
    sizes: *const i64,
    strides: *const i64,
    ndim: i64,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        storage_arg(s, "s")?;
        // SAFETY: a live handle, non-NULL (checked above).
        let storage = unsafe { storage_t::retain_live(s) };
        let sizes = int_list(sizes, ndim, "sizes")?;
        let strides = opt_int_list(strides, ndim, "strides")?;
        Tensor::from_storage(&storage, storage_offset, sizes, strides, dtype_arg(dtype)?)
    })
}

/// Number of dims (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_ndim(t: *const tensor_t) -> i64 {
    guard(fn_name!(), || tensor_opt(t).map_or(0, |t| t.ndim() as i64))
}

/// The sizes (borrowed, `ndim` entries, valid while `t` lives; NULL for NULL).
#[no_mangle]
pub extern "C" fn tensor_sizes(t: *const tensor_t) -> *const i64 {
    guard(fn_name!(), || {
        tensor_opt(t).map_or(std::ptr::null(), |t| t.sizes().as_ptr())
    })
}

/// The strides in elements (borrowed, `ndim` entries; NULL for NULL).
#[no_mangle]
pub extern "C" fn tensor_strides(t: *const tensor_t) -> *const i64 {
    guard(fn_name!(), || {
        tensor_opt(t).map_or(std::ptr::null(), |t| t.strides().as_ptr())
    })
}

/// Size of dim `dim` (negative wraps) in `*out`. Errors: NULL_POINTER, INDEX.
#[no_mangle]
pub extern "C" fn tensor_size(t: *const tensor_t, dim: i64, out: *mut i64) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let t = tensor_arg(t, "t")?;
        *out = t.size(dim)?;
        Ok(())
    })
}

/// Stride of dim `dim` (negative wraps), in elements, in `*out`. Errors: NULL_POINTER, INDEX.
#[no_mangle]
pub extern "C" fn tensor_stride(t: *const tensor_t, dim: i64, out: *mut i64) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let t = tensor_arg(t, "t")?;
        *out = t.stride(dim)?;
        Ok(())
    })
}

/// PyTorch's dim wrapping (`maybe_wrap_dim`), the one every call taking a dim applies: `dim`
/// of a tensor with `ndim` dims as an index in `[0, ndim)` in `*out` (a negative dim counts
/// from the end; a 0-dim tensor wraps as if it had one dim, so 0 and -1 give 0). For callers
/// that take dims of their own (libtensor_aoti's kernels). Errors: NULL_POINTER, INDEX (out
/// of range), INVALID_ARGUMENT (ndim outside [0, 64]).
#[no_mangle]
pub extern "C" fn tensor_wrap_dim(dim: i64, ndim: i64, out: *mut i64) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        ensure!(
            (0..=crate::shape::MAX_DIMS as i64).contains(&ndim),
            InvalidArgument,
            "ndim {ndim} is outside [0, {}]",
            crate::shape::MAX_DIMS
        );
        *out = shape::wrap_dim(dim, ndim as usize)? as i64;
        Ok(())
    })
}

/// Offset of the first element in the storage, in elements (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_storage_offset(t: *const tensor_t) -> i64 {
    guard(fn_name!(), || {
        tensor_opt(t).map_or(0, |t| t.storage_offset())
    })
}

/// Number of elements (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_numel(t: *const tensor_t) -> i64 {
    guard(fn_name!(), || tensor_opt(t).map_or(0, |t| t.numel()))
}

/// The element type (TENSOR_UINT8, i.e. 0, for NULL).
#[no_mangle]
pub extern "C" fn tensor_dtype(t: *const tensor_t) -> tensor_dtype_t {
    guard(fn_name!(), || {
        tensor_opt(t).map_or(tensor_dtype_t(0), |t| dtype_code(t.dtype()))
    })
}

/// Bytes per element (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_itemsize(t: *const tensor_t) -> usize {
    guard(fn_name!(), || tensor_opt(t).map_or(0, |t| t.itemsize()))
}

/// numel * itemsize (0 for NULL; SIZE_MAX when an expanded view has more element bytes
/// than that).
#[no_mangle]
pub extern "C" fn tensor_nbytes(t: *const tensor_t) -> usize {
    guard(fn_name!(), || tensor_opt(t).map_or(0, |t| t.nbytes()))
}

/// The device of the tensor's storage ({0, 0} for NULL).
#[no_mangle]
pub extern "C" fn tensor_device(t: *const tensor_t) -> tensor_device_t {
    let none = tensor_device_t {
        device_type: 0,
        device_id: 0,
    };
    guard(fn_name!(), || {
        tensor_opt(t).map_or(none, |t| t.device().into())
    })
}

/// Storage data + storage_offset * itemsize (borrowed; NULL for NULL, a data-less storage,
/// or a tensor with no elements, as c10's data_ptr: its offset may lie anywhere). Valid
/// until the storage is resized or freed.
#[no_mangle]
pub extern "C" fn tensor_data_ptr(t: *const tensor_t) -> *mut c_void {
    guard(fn_name!(), || match tensor_opt(t) {
        Some(t) if t.numel() > 0 => t.data_ptr() as *mut c_void,
        _ => std::ptr::null_mut(),
    })
}

/// The tensor's storage (borrowed: valid while `t` lives; retain it to keep it). NULL for
/// NULL.
#[no_mangle]
pub extern "C" fn tensor_storage(t: *const tensor_t) -> *mut storage_t {
    guard(fn_name!(), || {
        tensor_opt(t).map_or(std::ptr::null_mut(), |t| storage_t::as_raw(t.storage()))
    })
}

/// Whether `a` and `b` view the same storage (false if either is NULL).
#[no_mangle]
pub extern "C" fn tensor_shares_storage(a: *const tensor_t, b: *const tensor_t) -> bool {
    guard(fn_name!(), || match (tensor_opt(a), tensor_opt(b)) {
        (Some(a), Some(b)) => a.shares_storage(b),
        _ => false,
    })
}

/// Whether `t` is contiguous in `fmt` (cached, O(1)); false for NULL, PRESERVE or an
/// unknown code.
#[no_mangle]
pub extern "C" fn tensor_is_contiguous(t: *const tensor_t, fmt: tensor_memory_format_t) -> bool {
    guard(fn_name!(), || match (tensor_opt(t), format_arg(fmt)) {
        (Some(t), Ok(f)) => t.is_contiguous(f),
        _ => false,
    })
}

/// Whether the elements of `t` occupy a dense block without aliasing, in some dim order
/// (cached, O(1)); false for NULL.
#[no_mangle]
pub extern "C" fn tensor_is_non_overlapping_and_dense(t: *const tensor_t) -> bool {
    guard(fn_name!(), || {
        tensor_opt(t).is_some_and(|t| t.is_non_overlapping_and_dense())
    })
}

/// PyTorch's suggest_memory_format: CHANNELS_LAST(_3D) when the strides are ordered like
/// it, else CONTIGUOUS (also for NULL).
#[no_mangle]
pub extern "C" fn tensor_suggest_memory_format(t: *const tensor_t) -> tensor_memory_format_t {
    guard(fn_name!(), || {
        tensor_opt(t).map_or(TENSOR_CONTIGUOUS_FORMAT, |t| {
            format_code(t.suggest_memory_format())
        })
    })
}

/// The version counter shared by `t` and every view of its base; each in-place write
/// adds one. 0 for NULL. New tensors start at 0: those made with their own storage
/// (empty, from_blob, DLPack imports, op outputs) use a counter kept in that storage,
/// which their views share; `tensor_from_storage` starts a separate counter even when the
/// storage already has tensors (as PyTorch), which its views then share.
#[no_mangle]
pub extern "C" fn tensor_version(t: *const tensor_t) -> u64 {
    guard(fn_name!(), || tensor_opt(t).map_or(0, |t| t.version()))
}

/// Adds one to `t`'s version counter, as an in-place write does: for code that writes a
/// tensor's memory directly (e.g. a compiled model writing an input through its data
/// pointer), so that views and autograd-style users see the change. Errors: NULL_POINTER,
/// READ_ONLY (the storage refuses writes: nothing is bumped).
#[no_mangle]
pub extern "C" fn tensor_bump_version(t: *mut tensor_t) -> tensor_status_t {
    call(fn_name!(), || {
        let t = tensor_arg(t, "t")?;
        t.storage().check_writable()?;
        t.bump_version();
        Ok(())
    })
}

/// Storage offset in elements of `t[index]` (`n` must equal ndim; negative indices wrap)
/// in `*out`. Errors: NULL_POINTER, INVALID_ARGUMENT, INDEX.
#[no_mangle]
pub extern "C" fn tensor_element_offset(
    t: *const tensor_t,
    index: *const i64,
    n: i64,
    out: *mut i64,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let t = tensor_arg(t, "t")?;
        let index = int_list(index, n, "index")?;
        *out = t.element_offset(index)?;
        Ok(())
    })
}

/// The body of tensor_get_f64 / tensor_get_i64: reads `t[index]` through `convert`.
#[inline(always)]
fn get_element<T>(
    function: &'static str,
    t: *const tensor_t,
    index: *const i64,
    n: i64,
    out: *mut T,
    convert: fn(Scalar) -> T,
) -> tensor_status_t {
    call(function, || {
        let out = out_arg(out)?;
        let t = tensor_arg(t, "t")?;
        *out = convert(t.get(int_list(index, n, "index")?)?);
        Ok(())
    })
}

/// The body of tensor_set_f64 / tensor_set_i64: writes `value` at `t[index]`.
#[inline(always)]
fn set_element(
    function: &'static str,
    t: *mut tensor_t,
    index: *const i64,
    n: i64,
    value: Scalar,
) -> tensor_status_t {
    call(function, || {
        tensor_arg(t, "t")?.set(int_list(index, n, "index")?, value)
    })
}

/// Reads `t[index]` converted to double (complex: the real part) into `*out`.
/// Errors: NULL_POINTER, INVALID_ARGUMENT, INDEX, DTYPE (float4_e2m1fn_x2, which has no
/// values), DEVICE, OUT_OF_BOUNDS.
#[no_mangle]
pub extern "C" fn tensor_get_f64(
    t: *const tensor_t,
    index: *const i64,
    n: i64,
    out: *mut f64,
) -> tensor_status_t {
    get_element(fn_name!(), t, index, n, out, Scalar::to_f64)
}

/// Reads `t[index]` converted to int64 (floats truncate toward zero, saturating) into
/// `*out`. Errors: as tensor_get_f64.
#[no_mangle]
pub extern "C" fn tensor_get_i64(
    t: *const tensor_t,
    index: *const i64,
    n: i64,
    out: *mut i64,
) -> tensor_status_t {
    get_element(fn_name!(), t, index, n, out, Scalar::to_i64)
}

/// Writes `value` converted to the dtype at `t[index]`; bumps the version.
/// Errors: as tensor_get_f64, plus READ_ONLY.
#[no_mangle]
pub extern "C" fn tensor_set_f64(
    t: *mut tensor_t,
    index: *const i64,
    n: i64,
    value: f64,
) -> tensor_status_t {
    set_element(fn_name!(), t, index, n, Scalar::Float(value))
}

/// Writes `value` converted to the dtype at `t[index]`; bumps the version.
/// Errors: as tensor_set_f64.
#[no_mangle]
pub extern "C" fn tensor_set_i64(
    t: *mut tensor_t,
    index: *const i64,
    n: i64,
    value: i64,
) -> tensor_status_t {
    set_element(fn_name!(), t, index, n, Scalar::Int(value))
}

/// Writes a PyTorch-like repr of `t` ("tensor([[1., 2.], ...])", summarised beyond 1000
/// elements) into `buf`, snprintf-style: at most `cap - 1` bytes plus a NUL; returns the
/// length the full text needs (excluding the NUL). `buf` may be NULL when `cap` is 0.
/// Returns 0 (writing "" if it can) for NULL `t`. Never allocates (the text streams into
/// `buf`), so it cannot fail for lack of memory.
#[no_mangle]
pub extern "C" fn tensor_format(t: *const tensor_t, buf: *mut c_char, cap: usize) -> usize {
    guard(fn_name!(), || {
        let dst: &mut [u8] = if buf.is_null() || cap == 0 {
            &mut []
        } else {
            // SAFETY: the caller promises cap writable bytes at buf; the last is the NUL's.
            unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, cap - 1) }
        };
        let n = match tensor_opt(t) {
            Some(t) => crate::format::format_into(t, dst),
            None => 0,
        };
        if !buf.is_null() && cap > 0 {
            // SAFETY: n.min(cap - 1) < cap: inside the caller's buffer.
            unsafe { *buf.add(n.min(cap - 1)) = 0 };
        }
        n
    })
}

//! DLPack import and export (section 10). The managed-tensor structs are DLPack's own
//! (`struct DLManagedTensorVersioned`, `struct DLManagedTensor`): the header only
//! forward-declares them, so it works with or without `<dlpack/dlpack.h>`; the layouts
//! live in `crate::dlpack`.

use super::*;
use crate::dlpack;

/// DLPack's `struct DLManagedTensorVersioned` (opaque here; layout in `crate::dlpack`).
pub struct DLManagedTensorVersioned {
    _opaque: [u8; 0],
}

/// DLPack's legacy `struct DLManagedTensor` (opaque here; layout in `crate::dlpack`).
pub struct DLManagedTensor {
    _opaque: [u8; 0],
}

/// Exports `t` without copying as a DLPack 1.x managed tensor in `*out` (version {1, 1}).
/// `data` is the address of the first element and `byte_offset` is 0 (as PyTorch does;
/// NULL data for a tensor with no elements); `shape` and `strides` (in elements) are owned
/// by the managed tensor; `flags` has DLPACK_FLAG_BITMASK_READ_ONLY when the storage is
/// read-only. The managed tensor holds a reference that keeps the tensor's data alive until
/// the consumer calls its `deleter` (exactly once, from any thread); `t` itself stays owned
/// by the caller. Until then storage_resize of that storage fails with NOT_RESIZABLE, so
/// the exported bytes never move. The layout is checked against the storage as it is now:
/// a tensor that no longer fits its (shrunk) storage is refused with OUT_OF_BOUNDS.
/// Errors: NULL_POINTER, OUT_OF_BOUNDS, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_to_dlpack(
    t: *const tensor_t,
    out: *mut *mut DLManagedTensorVersioned,
) -> tensor_status_t {
    call("tensor_to_dlpack", || {
        let out = out_arg(out)?;
        let m = dlpack::to_dlpack_versioned(tensor_owned(t, "t")?)?;
        *out = m as *mut DLManagedTensorVersioned;
        Ok(())
    })
}

/// Imports a DLPack 1.x managed tensor without copying, in `*out` (owned). The tensor's
/// storage starts at `data` plus the part of `byte_offset` that is not a whole element;
/// the whole elements become the storage offset; NULL `strides` means compact row-major.
/// DLPACK_FLAG_BITMASK_READ_ONLY makes the storage read-only. On success the library owns
/// `src` and calls its `deleter` (if non-NULL) exactly once, when the last reference to
/// the storage dies, on that thread; on failure the deleter is not called and the caller
/// still owns `src`. Errors: NULL_POINTER (src, out, shape with ndim > 0, data with
/// elements), INVALID_ARGUMENT (major version != 1, ndim < 0 or > 64, negative size or
/// stride, unknown device), DTYPE (lanes != 1, a type code/bits pair with no dtype),
/// OVERFLOW, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_from_dlpack(
    src: *mut DLManagedTensorVersioned,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_from_dlpack", out, || {
        // SAFETY: the C contract: a non-NULL src is a live managed tensor.
        unsafe { dlpack::from_dlpack_versioned(src as *mut dlpack::DLManagedTensorVersioned) }
    })
}

/// As tensor_to_dlpack, as a legacy (unversioned) `DLManagedTensor` (the same bounds
/// check, and the same refusal of storage_resize until the deleter runs). It cannot signal
/// read-only, so a read-only tensor is refused. Errors: NULL_POINTER, READ_ONLY,
/// OUT_OF_BOUNDS, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_to_dlpack_unversioned(
    t: *const tensor_t,
    out: *mut *mut DLManagedTensor,
) -> tensor_status_t {
    call("tensor_to_dlpack_unversioned", || {
        let out = out_arg(out)?;
        let m = dlpack::to_dlpack_unversioned(tensor_owned(t, "t")?)?;
        *out = m as *mut DLManagedTensor;
        Ok(())
    })
}

/// As tensor_from_dlpack, for a legacy (unversioned) `DLManagedTensor` (no version check,
/// never read-only). Errors: as tensor_from_dlpack, without the version check.
#[no_mangle]
pub extern "C" fn tensor_from_dlpack_unversioned(
    src: *mut DLManagedTensor,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor("tensor_from_dlpack_unversioned", out, || {
        // SAFETY: as in tensor_from_dlpack.
        unsafe { dlpack::from_dlpack_unversioned(src as *mut dlpack::DLManagedTensor) }
    })
}

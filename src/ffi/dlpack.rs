//! Interop: DLPack import and export
//!
//! DLPack's C layouts and the glue between them and
//! the Rust-typed export / import of `crate::dlpack` (which states the conventions). The
//! header only forward-declares the managed tensors (`struct DLManagedTensorVersioned`,
//! `struct DLManagedTensor`; the layouts below are excluded in cbindgen.toml), so it works
//! with or without `<dlpack/dlpack.h>`.

use super::*;
use crate::dlpack::{self, Export, Import};
use crate::storage::DeleterFn;
use std::ffi::{c_char, c_int, CStr};

/// The DLPack ABI version this module implements (and exports).
pub const DLPACK_MAJOR_VERSION: u32 = 1;
pub const DLPACK_MINOR_VERSION: u32 = 3;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write.
pub const FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy (informational for us).
pub const FLAG_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte values are one per byte (we have
/// none such: a float4 import with it is refused).
pub const FLAG_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

// ---- the C layouts (dlpack.h, version 1.3) ----------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType` (a C enum: int-sized).
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// DLPack's legacy (unversioned) `struct DLManagedTensor`.
#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// DLPack's `struct DLManagedTensorVersioned` (DLPack >= 1.0).
#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

// ---- dtypes -----------------------------------------------------------------------------

/// Our dtype as a DLPack type (see [`dlpack::dl_type`]).
pub(crate) fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits, lanes) = dlpack::dl_type(d);
    DLDataType { code, bits, lanes }
}

/// The dtype a DLPack type describes, given the managed tensor's flags (see
/// [`dlpack::dtype_from_dl`]).
pub(crate) fn dtype_from_dl(t: DLDataType, flags: u64) -> Result<DType> {
    dlpack::dtype_from_dl(
        t.code,
        t.bits,
        t.lanes,
        flags & FLAG_IS_SUBBYTE_TYPE_PADDED != 0,
    )
}

// ---- export -----------------------------------------------------------------------------

/// A boxed export, or OUT_OF_MEMORY instead of aborting.
fn try_box<T>(v: T) -> Result<Box<T>> {
    crate::error::try_box(v).map_err(|_| {
        Error::new(
            Status::OutOfMemory,
            "failed to allocate the DLPack managed tensor",
        )
    })
}

/// What an exported managed tensor points to: the managed struct itself (first, so a
/// pointer to it is a pointer to this) and the export (the tensor's reference, its shape
/// and strides, the storage pin).
#[repr(C)]
struct Exported<M> {
    managed: M,
    export: Export,
}

/// Boxes `managed` with the export of `t`; returns the managed pointer (manager_ctx,
/// shape and strides set by `finish`).
fn export_boxed<M>(
    export: Export,
    managed: M,
    finish: impl FnOnce(&mut M, *mut c_void, *mut i64, *mut i64),
) -> Result<*mut M> {
    // On failure the export is dropped: the reference released, the storage unpinned.
    let raw = Box::into_raw(try_box(Exported { managed, export })?);
    // SAFETY: `raw` is the live box just made, owned here until returned.
    let exported = unsafe { &mut *raw };
    let shape = exported.export.shape_ptr();
    let strides = exported.export.strides_ptr();
    finish(&mut exported.managed, raw as *mut c_void, shape, strides);
    Ok(raw as *mut M)
}

/// The DLTensor describing an export (shape and strides filled in by `export_boxed`).
fn describe(e: &Export) -> DLTensor {
    let t = e.tensor();
    let dev = t.device();
    DLTensor {
        data: e.data(),
        device: DLDevice {
            device_type: dev.device_type,
            device_id: dev.device_id,
        },
        ndim: t.ndim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

/// The deleter of a versioned export.
///
/// # Safety
/// `m` is NULL or a managed tensor made by [`to_dlpack_versioned`], not yet deleted.
unsafe extern "C" fn delete_exported_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: manager_ctx is the Exported box made by `to_dlpack_versioned`; the DLPack
    // contract is that the deleter runs once.
    drop(unsafe { Box::from_raw((*m).manager_ctx as *mut Exported<DLManagedTensorVersioned>) });
}

/// The deleter of an unversioned export.
///
/// # Safety
/// `m` is NULL or a managed tensor made by [`to_dlpack_unversioned`], not yet deleted.
unsafe extern "C" fn delete_exported(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: as above, for `to_dlpack_unversioned`.
    drop(unsafe { Box::from_raw((*m).manager_ctx as *mut Exported<DLManagedTensor>) });
}

/// Exports `t` (whose strong reference the managed tensor takes over) as a versioned
/// managed tensor; the consumer frees it by calling its deleter once.
pub(crate) fn to_dlpack_versioned(t: Tensor) -> Result<*mut DLManagedTensorVersioned> {
    let export = Export::new(t)?;
    let flags = if export.tensor().storage().is_read_only() {
        FLAG_READ_ONLY
    } else {
        0
    };
    let managed = DLManagedTensorVersioned {
        version: DLPackVersion {
            major: DLPACK_MAJOR_VERSION,
            minor: DLPACK_MINOR_VERSION,
        },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_exported_versioned),
        flags,
        dl_tensor: describe(&export),
    };
    export_boxed(export, managed, |m, ctx, shape, strides| {
        m.manager_ctx = ctx;
        m.dl_tensor.shape = shape;
        m.dl_tensor.strides = strides;
    })
}

/// Exports `t` as a legacy (unversioned) managed tensor. A read-only tensor is refused:
/// the legacy struct has no way to say so (use the versioned export).
pub(crate) fn to_dlpack_unversioned(t: Tensor) -> Result<*mut DLManagedTensor> {
    ensure!(
        !t.storage().is_read_only(),
        ReadOnly,
        "cannot export a read-only tensor as an unversioned DLManagedTensor (it cannot signal read-only); use tensor_to_dlpack"
    );
    let export = Export::new(t)?;
    let managed = DLManagedTensor {
        dl_tensor: describe(&export),
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_exported),
    };
    export_boxed(export, managed, |m, ctx, shape, strides| {
        m.manager_ctx = ctx;
        m.dl_tensor.shape = shape;
        m.dl_tensor.strides = strides;
    })
}

// ---- import -----------------------------------------------------------------------------

/// Storage deleter of an imported versioned tensor: hands it back to its producer.
///
/// # Safety
/// `ctx` is the managed tensor the storage took over; called once (by the storage).
unsafe extern "C" fn release_imported_versioned(_data: *mut c_void, ctx: *mut c_void) {
    let m = ctx as *mut DLManagedTensorVersioned;
    // SAFETY: ctx is the live managed tensor we took ownership of; its producer's deleter
    // runs exactly once, here.
    unsafe {
        if let Some(f) = (*m).deleter {
            f(m);
        }
    }
}

/// Storage deleter of an imported unversioned tensor.
///
/// # Safety
/// As [`release_imported_versioned`].
unsafe extern "C" fn release_imported(_data: *mut c_void, ctx: *mut c_void) {
    let m = ctx as *mut DLManagedTensor;
    // SAFETY: as in release_imported_versioned.
    unsafe {
        if let Some(f) = (*m).deleter {
            f(m);
        }
    }
}

/// Decodes `dl` and imports it (see [`dlpack::import`]); on success the storage owns
/// `ctx` and calls `release(data, ctx)` once at its last strong reference. On failure
/// nothing is called. `flags`: the versioned managed tensor's (0 for a legacy one).
///
/// # Safety
/// `dl`'s shape (and strides, when non-NULL) point to `ndim` readable values.
unsafe fn import(
    dl: &DLTensor,
    flags: u64,
    release: DeleterFn,
    ctx: *mut c_void,
) -> Result<Tensor> {
    ensure!(
        dl.ndim >= 0,
        InvalidArgument,
        "DLPack tensor has negative ndim {}",
        dl.ndim
    );
    let nd = dl.ndim as usize;
    shape::check_ndim(nd)?;
    let dtype = dtype_from_dl(dl.dtype, flags)?;
    let device = Device {
        device_type: dl.device.device_type,
        device_id: dl.device.device_id,
    };
    ensure!(
        device.is_known(),
        InvalidArgument,
        "unknown DLPack device (device_type {}, device_id {})",
        device.device_type,
        device.device_id
    );
    let sizes: &[i64] = if nd == 0 {
        &[]
    } else {
        ensure!(
            !dl.shape.is_null(),
            NullPointer,
            "DLPack shape is NULL but ndim is {nd}"
        );
        // SAFETY: non-NULL, and the caller's contract: nd readable values.
        unsafe { std::slice::from_raw_parts(dl.shape, nd) }
    };
    let strides: Option<&[i64]> = if dl.strides.is_null() {
        None
    } else if nd == 0 {
        Some(&[])
    } else {
        // SAFETY: non-NULL, and the caller's contract: nd readable values.
        Some(unsafe { std::slice::from_raw_parts(dl.strides, nd) })
    };
    let src = Import {
        data: dl.data,
        device,
        dtype,
        sizes,
        strides,
        byte_offset: dl.byte_offset,
        read_only: flags & FLAG_READ_ONLY != 0,
    };
    dlpack::import(src, release, ctx)
}

/// Imports a versioned managed tensor (major version 1). On success the tensor owns `src`
/// (its deleter runs once, when the storage's last strong reference dies); on failure the
/// caller keeps it.
///
/// # Safety
/// `src` is NULL or a live managed tensor whose DLTensor fields are valid.
pub(crate) unsafe fn from_dlpack_versioned(src: *mut DLManagedTensorVersioned) -> Result<Tensor> {
    // SAFETY: NULL or live (the caller's contract).
    let Some(m) = (unsafe { src.as_ref() }) else {
        bail!(NullPointer, "argument 'src' is NULL");
    };
    ensure!(
        m.version.major == DLPACK_MAJOR_VERSION,
        InvalidArgument,
        "unsupported DLPack version {}.{} (this library reads major version {DLPACK_MAJOR_VERSION})",
        m.version.major,
        m.version.minor
    );
    // SAFETY: the DLTensor of a live managed tensor (the caller's contract).
    unsafe {
        import(
            &m.dl_tensor,
            m.flags,
            release_imported_versioned,
            src as *mut c_void,
        )
    }
}

/// Imports a legacy (unversioned) managed tensor; ownership as in
/// [`from_dlpack_versioned`].
///
/// # Safety
/// As [`from_dlpack_versioned`].
pub(crate) unsafe fn from_dlpack_unversioned(src: *mut DLManagedTensor) -> Result<Tensor> {
    // SAFETY: NULL or live (the caller's contract).
    let Some(m) = (unsafe { src.as_ref() }) else {
        bail!(NullPointer, "argument 'src' is NULL");
    };
    // SAFETY: the DLTensor of a live managed tensor (the caller's contract).
    unsafe { import(&m.dl_tensor, 0, release_imported, src as *mut c_void) }
}

// ---- the C API --------------------------------------------------------------------------

/// Exports `t` without copying as a DLPack 1.x managed tensor in `*out` (version {1, 3}).
/// float8 dtypes export as DLPack's float8 codes (bits 8, lanes 1); float4_e2m1fn_x2 as
/// `kDLFloat4_e2m1fn` with bits 4 and lanes 2, packed (no
/// DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED), shape and strides counting byte pairs, as
/// PyTorch exports it.
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
    call(fn_name!(), || {
        let out = out_arg(out)?;
        *out = to_dlpack_versioned(tensor_owned(t, "t")?)?;
        Ok(())
    })
}

/// Imports a DLPack 1.x managed tensor without copying, in `*out` (owned). The tensor's
/// storage starts at `data` plus the part of `byte_offset` that is not a whole element;
/// the whole elements become the storage offset; NULL `strides` means compact row-major.
/// DLPACK_FLAG_BITMASK_READ_ONLY makes the storage read-only. On success the library owns
/// `src` and calls its `deleter` (if non-NULL) exactly once, when the last reference to
/// the storage dies, on that thread; on failure the deleter is not called and the caller
/// still owns `src`. Any minor version of major 1 is read (1.0 to 1.3 are what this
/// library knows; later minors only add codes and flags, and an unknown code is refused).
/// The float8 codes map to the float8 dtypes; `kDLFloat4_e2m1fn` is read only as packed
/// pairs (bits 4, lanes 2, without DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED):
/// float4_e2m1fn_x2. Device `kDLTrn` (18) is accepted as a device tag like CUDA's (no
/// element access). Errors: NULL_POINTER (src, out, shape with ndim > 0, data with
/// elements), INVALID_ARGUMENT (major version != 1, ndim < 0 or > 64, negative size or
/// stride, unknown device), DTYPE (lanes other than 1 or float4's 2, a type code/bits
/// pair with no dtype: float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float6, padded or
/// unpaired float4), OVERFLOW, OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_from_dlpack(
    src: *mut DLManagedTensorVersioned,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        // SAFETY: the C contract: a non-NULL src is a live managed tensor.
        unsafe { from_dlpack_versioned(src) }
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
    call(fn_name!(), || {
        let out = out_arg(out)?;
        *out = to_dlpack_unversioned(tensor_owned(t, "t")?)?;
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
    call_tensor(fn_name!(), out, || {
        // SAFETY: as in tensor_from_dlpack.
        unsafe { from_dlpack_unversioned(src) }
    })
}

// ---- the C exchange API (DLPack 1.3) ----------------------------------------------------

/// dlpack.h's `SetError` callback of `DLPackManagedTensorAllocator`: `(error_ctx, kind,
/// message)`, both strings valid for the call only.
pub type DLPackSetError = Option<
    unsafe extern "C" fn(error_ctx: *mut c_void, kind: *const c_char, message: *const c_char),
>;

/// dlpack.h's `DLPackManagedTensorAllocator` (the prototype is a `DLTensor *`).
pub type DLPackManagedTensorAllocator = unsafe extern "C" fn(
    prototype: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: DLPackSetError,
) -> c_int;

/// dlpack.h's `struct DLPackExchangeAPIHeader`.
#[repr(C)]
pub struct DLPackExchangeAPIHeader {
    pub version: DLPackVersion,
    pub prev_api: *mut DLPackExchangeAPIHeader,
}

/// dlpack.h's `struct DLPackExchangeAPI` (1.3): the header, then five function pointers.
#[repr(C)]
pub struct DLPackExchangeAPI {
    pub header: DLPackExchangeAPIHeader,
    pub managed_tensor_allocator: Option<DLPackManagedTensorAllocator>,
    /// `(PyObject *, DLManagedTensorVersioned **)`: NULL here (no Python objects).
    pub managed_tensor_from_py_object_no_sync:
        Option<unsafe extern "C" fn(*mut c_void, *mut *mut DLManagedTensorVersioned) -> c_int>,
    /// `(DLManagedTensorVersioned *, PyObject **)`: NULL here (no Python objects).
    pub managed_tensor_to_py_object_no_sync:
        Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned, *mut *mut c_void) -> c_int>,
    /// `(PyObject *, DLTensor *)`: NULL here (no Python objects; optional in dlpack.h).
    pub dltensor_from_py_object_no_sync:
        Option<unsafe extern "C" fn(*mut c_void, *mut DLTensor) -> c_int>,
    /// `(DLDeviceType, int32_t device_id, void **out_current_stream)`.
    pub current_work_stream: Option<unsafe extern "C" fn(i32, i32, *mut *mut c_void) -> c_int>,
}

/// The table behind [`tensor_dlpack_exchange_api`]: immutable, so shared by every thread.
struct ExchangeApi(DLPackExchangeAPI);
// SAFETY: never written after initialisation; it holds NULL and function pointers only.
unsafe impl Sync for ExchangeApi {}

static EXCHANGE_API: ExchangeApi = ExchangeApi(DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader {
        version: DLPackVersion {
            major: DLPACK_MAJOR_VERSION,
            minor: DLPACK_MINOR_VERSION,
        },
        prev_api: std::ptr::null_mut(),
    },
    managed_tensor_allocator: Some(tensor_dlpack_managed_tensor_allocator),
    managed_tensor_from_py_object_no_sync: None,
    managed_tensor_to_py_object_no_sync: None,
    dltensor_from_py_object_no_sync: None,
    current_work_stream: Some(current_work_stream),
});

/// The Python exception name a consumer raises for a failed allocation (dlpack.h leaves
/// the kind to the producer; TVM-FFI and PyTorch pass a Python exception name).
fn error_kind(status: tensor_status_t) -> &'static CStr {
    match status {
        TENSOR_ERR_DTYPE => c"TypeError",
        TENSOR_ERR_OVERFLOW => c"OverflowError",
        TENSOR_ERR_OUT_OF_MEMORY => c"MemoryError",
        TENSOR_ERR_NULL_POINTER | TENSOR_ERR_INVALID_ARGUMENT | TENSOR_ERR_DEVICE => c"ValueError",
        _ => c"RuntimeError",
    }
}

/// Passes this thread's last error to `set_error` with the kind of `status`. The message
/// is first copied to the stack (no allocation that could fail; cut at a character
/// boundary past [`SET_ERROR_MESSAGE_MAX`] bytes), so a callback that calls back into the
/// library (replacing the last error) still reads it whole.
fn report_error(set_error: DLPackSetError, error_ctx: *mut c_void, status: tensor_status_t) {
    let Some(set_error) = set_error else {
        return;
    };
    // SAFETY: this thread's last message, NUL-terminated.
    let text = unsafe { CStr::from_ptr(last_error_ptr()) }.to_bytes();
    let mut n = text.len().min(SET_ERROR_MESSAGE_MAX);
    while n < text.len() && n > 0 && text[n] & 0xC0 == 0x80 {
        n -= 1;
    }
    let mut copy = [0u8; SET_ERROR_MESSAGE_MAX + 1];
    copy[..n].copy_from_slice(&text[..n]);
    // SAFETY: the caller's callback, given two NUL-terminated strings live for the call.
    unsafe {
        set_error(
            error_ctx,
            error_kind(status).as_ptr(),
            copy.as_ptr() as *const c_char,
        )
    };
}

/// The longest message (in bytes) passed to `SetError`.
const SET_ERROR_MESSAGE_MAX: usize = 1023;

/// A new host tensor with the shape and dtype of the prototype (see
/// [`tensor_dlpack_managed_tensor_allocator`]).
fn allocate_like(p: &DLTensor) -> Result<Tensor> {
    ensure!(
        p.ndim >= 0,
        InvalidArgument,
        "prototype ndim {} is negative",
        p.ndim
    );
    let nd = p.ndim as usize;
    shape::check_ndim(nd)?;
    ensure!(
        p.device.device_type == 1 && p.device.device_id == 0,
        Device,
        "libtensor allocates host memory only (kDLCPU, device_id 0); the prototype's device is (device_type {}, device_id {})",
        p.device.device_type,
        p.device.device_id
    );
    let dtype = dtype_from_dl(p.dtype, 0)?;
    let sizes: &[i64] = if nd == 0 {
        &[]
    } else {
        ensure!(
            !p.shape.is_null(),
            NullPointer,
            "prototype shape is NULL but ndim is {nd}"
        );
        // SAFETY: non-NULL, and the C contract: ndim readable values.
        unsafe { std::slice::from_raw_parts(p.shape, nd) }
    };
    Tensor::empty(sizes, dtype)
}

/// DLPack 1.3's `DLPackManagedTensorAllocator`, backed by the library's allocator (the
/// one tensor_empty uses): a new uninitialised contiguous host tensor with `prototype`'s
/// ndim, shape and dtype (dtypes as tensor_from_dlpack reads them, the packed float4
/// included), exported in `*out` as tensor_to_dlpack exports (version {1, 3}, flags 0,
/// row-major strides, NULL data when it has no elements); the consumer frees it with its
/// deleter. `prototype` is a `DLTensor *` (tensor.h cannot name dlpack.h's untagged
/// `DLTensor`; `tensor_dlpack_exchange_api()->managed_tensor_allocator` is this function
/// typed as dlpack.h's `DLPackManagedTensorAllocator`). As dlpack.h says, only its dtype,
/// ndim, shape and device are read: `data`, `strides` and `byte_offset` are ignored (as
/// PyTorch's allocator does), and the device must be the host (`kDLCPU`, id 0).
/// Returns 0, or -1 on failure after recording the message (tensor_last_error, naming
/// this function) and, when `SetError` is non-NULL, calling `SetError(error_ctx, kind,
/// message)` once with that message (cut at a character boundary past 1023 bytes) and the
/// Python exception name of the failure:
/// "ValueError" (NULL_POINTER, INVALID_ARGUMENT, DEVICE), "TypeError" (DTYPE),
/// "OverflowError" (OVERFLOW), "MemoryError" (OUT_OF_MEMORY), "RuntimeError" (INTERNAL);
/// `*out` is then untouched. Errors: NULL_POINTER (prototype, out, shape with ndim > 0),
/// INVALID_ARGUMENT (ndim < 0 or > 64, a negative size), DEVICE (not the host), DTYPE (lanes
/// other than 1 or float4's 2, a type code/bits pair with no dtype, as tensor_from_dlpack
/// reads them; the prototype has no flags), OVERFLOW, OUT_OF_MEMORY.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn tensor_dlpack_managed_tensor_allocator(
    prototype: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    SetError: DLPackSetError,
) -> c_int {
    let name = fn_name!();
    guard_or(name, -1, || {
        let status = call(name, || {
            let out = out_arg(out)?;
            // SAFETY: the C contract: a non-NULL prototype is a live DLTensor.
            let p = unsafe { (prototype as *const DLTensor).as_ref() }
                .ok_or_else(|| null("prototype"))?;
            *out = to_dlpack_versioned(allocate_like(p)?)?;
            Ok(())
        });
        if status == TENSOR_OK {
            return 0;
        }
        report_error(SetError, error_ctx, status);
        -1
    })
}

/// The table's `current_work_stream`: libtensor queues no work on any device, so there is
/// no stream to order after; `*out` is NULL, as dlpack.h allows a CPU-only producer.
/// -1 for a NULL `out` (no Python error can be set).
extern "C" fn current_work_stream(
    _device_type: i32,
    _device_id: i32,
    out: *mut *mut c_void,
) -> c_int {
    guard_or(fn_name!(), -1, || {
        // SAFETY: NULL or the caller's writable slot.
        match unsafe { out.as_mut() } {
            Some(out) => {
                *out = std::ptr::null_mut();
                0
            }
            None => -1,
        }
    })
}

/// DLPack 1.3's C exchange API table of this library (static, immutable, valid for the
/// life of the process; the same pointer every call): `header.version` {1, 3},
/// `header.prev_api` NULL, `managed_tensor_allocator` =
/// tensor_dlpack_managed_tensor_allocator, `current_work_stream` setting `*out` to NULL
/// for every device (returning 0; -1 for a NULL out), as dlpack.h allows a producer that
/// runs no device work. The three Python-object entries
/// (`managed_tensor_from_py_object_no_sync`, `managed_tensor_to_py_object_no_sync`,
/// `dltensor_from_py_object_no_sync`) are NULL: a C library has no Python objects. A
/// Python binding of libtensor copies this table into its own, fills them in, and
/// publishes that as its type's `__dlpack_c_exchange_api__` capsule. The struct is
/// dlpack.h's `struct DLPackExchangeAPI` (tensor.h forward-declares it; include dlpack.h
/// 1.3 to read it).
#[no_mangle]
pub extern "C" fn tensor_dlpack_exchange_api() -> *const DLPackExchangeAPI {
    guard(fn_name!(), || &EXCHANGE_API.0 as *const DLPackExchangeAPI)
}

#[cfg(test)]
#[allow(clippy::undocumented_unsafe_blocks)]
mod tests {
    use super::*;

    /// The exchange table's layout is dlpack.h 1.3's (checked against the real header by
    /// c_tests/test_torch.cpp's static_asserts, with the same figures).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn exchange_api_has_dlpack_h_layout() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(size_of::<DLPackExchangeAPIHeader>(), 16);
        assert_eq!(offset_of!(DLPackExchangeAPIHeader, prev_api), 8);
        assert_eq!(
            (
                size_of::<DLPackExchangeAPI>(),
                align_of::<DLPackExchangeAPI>()
            ),
            (56, 8)
        );
        assert_eq!(offset_of!(DLPackExchangeAPI, managed_tensor_allocator), 16);
        assert_eq!(
            offset_of!(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync),
            24
        );
        assert_eq!(
            offset_of!(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync),
            32
        );
        assert_eq!(
            offset_of!(DLPackExchangeAPI, dltensor_from_py_object_no_sync),
            40
        );
        assert_eq!(offset_of!(DLPackExchangeAPI, current_work_stream), 48);
    }

    /// A long message reaches SetError cut at a character boundary, NUL-terminated.
    #[test]
    fn set_error_message_is_cut_at_a_character_boundary() {
        unsafe extern "C" fn keep(ctx: *mut c_void, _kind: *const c_char, message: *const c_char) {
            let out = unsafe { &mut *(ctx as *mut Vec<u8>) };
            out.extend_from_slice(unsafe { CStr::from_ptr(message) }.to_bytes());
        }
        // 1400 bytes of two-byte characters after "name: " and no or one byte of padding:
        // for one of the two, byte 1023 is inside a character.
        for pad in ["", "x"] {
            set_last_error(fn_name!(), &format!("{pad}{}", "é".repeat(700)));
            let mut got = Vec::new();
            report_error(
                Some(keep),
                &mut got as *mut Vec<u8> as *mut c_void,
                TENSOR_ERR_DTYPE,
            );
            assert!(got.len() <= SET_ERROR_MESSAGE_MAX && got.len() > 1000);
            let text = std::str::from_utf8(&got).expect("whole characters");
            assert!(text.ends_with('é'));
        }
    }
    use crate::dlpack::{KDL_FLOAT, KDL_UINT};
    use crate::dtype::Scalar;
    use crate::tensor_impl::MemoryFormat;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A producer's deleter that counts its calls in the AtomicUsize at manager_ctx.
    ///
    /// # Safety
    /// `m` is a managed tensor whose manager_ctx points to a live AtomicUsize.
    unsafe extern "C" fn count_versioned(m: *mut DLManagedTensorVersioned) {
        unsafe { (*((*m).manager_ctx as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst) };
    }
    /// # Safety
    /// As count_versioned.
    unsafe extern "C" fn count_unversioned(m: *mut DLManagedTensor) {
        unsafe { (*((*m).manager_ctx as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst) };
    }

    fn dl_f32(data: *mut f32, shape: &mut [i64], strides: Option<&mut [i64]>) -> DLTensor {
        DLTensor {
            data: data as *mut c_void,
            device: DLDevice {
                device_type: 1,
                device_id: 0,
            },
            ndim: shape.len() as i32,
            dtype: DLDataType {
                code: KDL_FLOAT,
                bits: 32,
                lanes: 1,
            },
            shape: shape.as_mut_ptr(),
            strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: 0,
        }
    }

    fn versioned(dl: DLTensor, hits: &AtomicUsize, flags: u64) -> DLManagedTensorVersioned {
        DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: hits as *const AtomicUsize as *mut c_void,
            deleter: Some(count_versioned),
            flags,
            dl_tensor: dl,
        }
    }

    fn f(t: &Tensor, idx: &[i64]) -> f64 {
        match t.get(idx).unwrap() {
            Scalar::Float(v) => v,
            other => panic!("not a float: {other:?}"),
        }
    }

    #[test]
    fn export_checks_bounds_and_pins_the_storage() {
        let t = Tensor::arange(4, DType::F32).unwrap();
        // SAFETY: this test's thread is the only user of the storage.
        unsafe { t.storage().resize(8) }.unwrap();
        let e = to_dlpack_versioned(t.clone()).unwrap_err();
        assert_eq!(e.status, Status::OutOfBounds);
        assert_eq!(
            to_dlpack_unversioned(t.clone()).unwrap_err().status,
            Status::OutOfBounds
        );
        assert_eq!(
            t.storage().export_count(),
            0,
            "a failed export is not counted"
        );
        // SAFETY: this test's thread is the only user of the storage.
        unsafe { t.storage().resize(16) }.unwrap();
        let m = to_dlpack_versioned(t.clone()).unwrap();
        assert_eq!(t.storage().export_count(), 1);
        assert_eq!(
            // SAFETY: this test's thread is the only user of the storage.
            unsafe { t.storage().resize(32) }.unwrap_err().status,
            Status::NotResizable
        );
        // SAFETY: the managed tensor just exported; its deleter runs once.
        unsafe { ((*m).deleter.unwrap())(m) };
        assert_eq!(t.storage().export_count(), 0);
        // SAFETY: this test's thread is the only user of the storage.
        unsafe { t.storage().resize(32) }.unwrap();
    }

    #[test]
    fn versioned_round_trip_shares_bytes() {
        let base = Tensor::arange(24, DType::F32).unwrap();
        // A non-contiguous view with a storage offset: [[5, 9], [6, 10], [7, 11]] ...
        let v = base
            .make_view(&[4, 3], &[4, 1], 4)
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        assert_eq!(
            (v.sizes(), v.strides(), v.storage_offset()),
            (&[3i64, 4][..], &[1i64, 4][..], 4)
        );
        let before = v.use_count();
        let m = to_dlpack_versioned(v.clone()).unwrap();
        assert_eq!(
            v.use_count(),
            before + 1,
            "the managed tensor holds one reference"
        );
        let dl = unsafe { &(*m).dl_tensor };
        unsafe {
            assert_eq!((*m).version, DLPackVersion { major: 1, minor: 3 });
            assert_eq!((*m).flags, 0);
            assert_eq!(std::slice::from_raw_parts(dl.shape, 2), &[3, 4]);
            assert_eq!(std::slice::from_raw_parts(dl.strides, 2), &[1, 4]);
        }
        assert_eq!(dl.data as *mut u8, v.data_ptr(), "data = first element");
        assert_eq!(dl.byte_offset, 0);
        assert_eq!(dl.ndim, 2);
        assert_eq!(
            dl.dtype,
            DLDataType {
                code: 2,
                bits: 32,
                lanes: 1
            }
        );
        assert_eq!(
            dl.device,
            DLDevice {
                device_type: 1,
                device_id: 0
            }
        );

        let back = unsafe { from_dlpack_versioned(m) }.unwrap();
        assert_eq!(back.sizes(), v.sizes());
        assert_eq!(back.strides(), v.strides());
        assert_eq!(back.data_ptr(), v.data_ptr());
        for i in 0..3 {
            for j in 0..4 {
                assert_eq!(f(&back, &[i, j]), f(&v, &[i, j]));
            }
        }
        // Same bytes: a write through one is seen through the other.
        back.set(&[2, 3], Scalar::Float(-1.5)).unwrap();
        assert_eq!(f(&v, &[2, 3]), -1.5);
        // The import keeps the export (and so the tensor) alive until it dies.
        let view_of_back = back.transpose(0, 1).unwrap();
        drop(back);
        assert_eq!(v.use_count(), before + 1);
        drop(view_of_back);
        assert_eq!(
            v.use_count(),
            before,
            "the export's deleter released its reference"
        );
    }

    #[test]
    fn unversioned_round_trip_and_read_only_refusal() {
        let t = Tensor::empty_with_format(&[2, 3, 4, 5], DType::BF16, MemoryFormat::ChannelsLast)
            .unwrap();
        let m = to_dlpack_unversioned(t.clone()).unwrap();
        unsafe {
            assert_eq!(
                (*m).dl_tensor.dtype,
                DLDataType {
                    code: 4,
                    bits: 16,
                    lanes: 1
                }
            );
            assert_eq!(
                std::slice::from_raw_parts((*m).dl_tensor.strides, 4),
                t.strides()
            );
        }
        let back = unsafe { from_dlpack_unversioned(m) }.unwrap();
        assert!(back.is_contiguous(MemoryFormat::ChannelsLast));
        assert_eq!(back.storage().kind(), crate::storage::StorageKind::External);
        assert_eq!(back.data_ptr(), t.data_ptr());
        assert_eq!(t.use_count(), 2);
        drop(back);
        assert_eq!(t.use_count(), 1);

        t.storage().mark_read_only();
        let e = to_dlpack_unversioned(t.clone()).unwrap_err();
        assert_eq!(e.status, Status::ReadOnly);
        assert_eq!(t.use_count(), 1, "a refused export takes no reference");
    }

    #[test]
    fn read_only_flag_both_ways() {
        let t = Tensor::zeros(&[3], DType::I32).unwrap();
        t.storage().mark_read_only();
        let m = to_dlpack_versioned(t.clone()).unwrap();
        assert_eq!(unsafe { (*m).flags } & FLAG_READ_ONLY, FLAG_READ_ONLY);
        let back = unsafe { from_dlpack_versioned(m) }.unwrap();
        assert!(
            back.storage().is_read_only(),
            "the flag survives the round trip"
        );
        drop(back);

        let mut buf = [1.0f32, 2.0, 3.0];
        let mut shape = [3i64];
        let hits = AtomicUsize::new(0);
        let mut m = versioned(
            dl_f32(buf.as_mut_ptr(), &mut shape, None),
            &hits,
            FLAG_READ_ONLY,
        );
        let t = unsafe { from_dlpack_versioned(&mut m) }.unwrap();
        assert!(t.storage().is_read_only());
        assert_eq!(
            t.set(&[0], Scalar::Float(9.0)).unwrap_err().status,
            Status::ReadOnly
        );
        assert_eq!(f(&t, &[2]), 3.0);
        drop(t);
        assert_eq!(buf[0], 1.0);
        assert_eq!(hits.load(Ordering::SeqCst), 1);

        // Other flags (IS_COPIED) do not make it read-only.
        let mut m = versioned(
            dl_f32(buf.as_mut_ptr(), &mut shape, None),
            &hits,
            FLAG_IS_COPIED,
        );
        let t = unsafe { from_dlpack_versioned(&mut m) }.unwrap();
        assert!(!t.storage().is_read_only());
        drop(t);
        assert_eq!(hits.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn dtype_table_both_ways() {
        let want: [(DType, u8, u8); 20] = [
            (DType::U8, 1, 8),
            (DType::I8, 0, 8),
            (DType::I16, 0, 16),
            (DType::I32, 0, 32),
            (DType::I64, 0, 64),
            (DType::F16, 2, 16),
            (DType::F32, 2, 32),
            (DType::F64, 2, 64),
            (DType::C64, 5, 64),
            (DType::C128, 5, 128),
            (DType::Bool, 6, 8),
            (DType::BF16, 4, 16),
            (DType::U16, 1, 16),
            (DType::U32, 1, 32),
            (DType::U64, 1, 64),
            // dlpack.h 1.3's float8 codes
            (DType::F8E5M2, 12, 8),
            (DType::F8E4M3Fn, 10, 8),
            (DType::F8E5M2Fnuz, 13, 8),
            (DType::F8E4M3Fnuz, 11, 8),
            (DType::F8E8M0Fnu, 14, 8),
        ];
        // + float4_e2m1fn_x2, below
        assert_eq!(want.len() + 1, DType::ALL.len());
        for (d, code, bits) in want {
            let dl = DLDataType {
                code,
                bits,
                lanes: 1,
            };
            assert_eq!(dl_dtype(d), dl, "{d:?}");
            assert_eq!(dtype_from_dl(dl, 0).unwrap(), d);
            // The padded flag means nothing for whole-byte types.
            assert_eq!(dtype_from_dl(dl, FLAG_IS_SUBBYTE_TYPE_PADDED).unwrap(), d);
        }
        // float4 pairs: kDLFloat4_e2m1fn, bits 4, lanes 2 (as PyTorch exports them), packed.
        let f4 = DLDataType {
            code: 17,
            bits: 4,
            lanes: 2,
        };
        assert_eq!(dl_dtype(DType::F4E2M1FnX2), f4);
        assert_eq!(dtype_from_dl(f4, 0).unwrap(), DType::F4E2M1FnX2);
        let e = dtype_from_dl(f4, FLAG_IS_SUBBYTE_TYPE_PADDED).unwrap_err();
        assert_eq!(e.status, Status::DType);
        assert!(e.message.contains("PADDED"), "{}", e.message);
        let e = dtype_from_dl(DLDataType { lanes: 1, ..f4 }, 0).unwrap_err();
        assert!(e.message.contains("packed pairs"), "{}", e.message);
        // float8 / float6 codes with no dtype of ours are named.
        for (code, bits, what) in [
            (7, 8, "float8_e3m4"),
            (8, 8, "float8_e4m3 "),
            (9, 8, "float8_e4m3b11fnuz"),
            (15, 6, "float6"),
            (16, 6, "float6"),
        ] {
            let dl = DLDataType {
                code,
                bits,
                lanes: 1,
            };
            let e = dtype_from_dl(dl, 0).unwrap_err();
            assert_eq!(e.status, Status::DType);
            assert!(e.message.contains(what), "{}", e.message);
        }
        for (code, bits) in [
            (3, 64),
            (2, 8),
            (0, 128),
            (6, 1),
            (7, 8),
            (5, 32),
            (4, 32),
            (18, 8),
            (10, 16),
            (17, 8),
        ] {
            let e = dtype_from_dl(
                DLDataType {
                    code,
                    bits,
                    lanes: 1,
                },
                0,
            )
            .unwrap_err();
            assert_eq!(e.status, Status::DType);
            assert!(
                e.message.contains(&format!("code {code}, bits {bits}")),
                "{}",
                e.message
            );
        }
        let e = dtype_from_dl(
            DLDataType {
                code: 2,
                bits: 32,
                lanes: 4,
            },
            0,
        )
        .unwrap_err();
        assert_eq!(e.status, Status::DType);
        assert!(e.message.contains("lanes 4"), "{}", e.message);
    }

    #[test]
    fn refusals_take_nothing() {
        let mut buf = [0.0f32; 16];
        let hits = AtomicUsize::new(0);
        let p = buf.as_mut_ptr();
        let mut shape = [2i64, 3];
        let mut neg = [-1i64, 1];
        let mut zero_shape = [2i64, -3];
        let mut big = [1i64; 65];
        let (neg_p, zero_p, big_p) = (neg.as_mut_ptr(), zero_shape.as_mut_ptr(), big.as_mut_ptr());
        type Case<'a> = (
            &'a str,
            Box<dyn Fn(&mut DLManagedTensorVersioned) + 'a>,
            Status,
            &'a str,
        );
        let cases: Vec<Case> = vec![
            (
                "negative stride",
                Box::new(|m| m.dl_tensor.strides = neg_p),
                Status::InvalidArgument,
                "stride -1",
            ),
            (
                "negative size",
                Box::new(|m| m.dl_tensor.shape = zero_p),
                Status::InvalidArgument,
                "-3",
            ),
            (
                "lanes",
                Box::new(|m| m.dl_tensor.dtype.lanes = 2),
                Status::DType,
                "lanes 2",
            ),
            (
                "type code",
                Box::new(|m| m.dl_tensor.dtype.code = 3),
                Status::DType,
                "code 3, bits 32",
            ),
            (
                "bits",
                Box::new(|m| m.dl_tensor.dtype.bits = 24),
                Status::DType,
                "code 2, bits 24",
            ),
            (
                "ndim > 64",
                Box::new(|m| {
                    m.dl_tensor.ndim = 65;
                    m.dl_tensor.shape = big_p;
                }),
                Status::InvalidArgument,
                "65",
            ),
            (
                "negative ndim",
                Box::new(|m| m.dl_tensor.ndim = -1),
                Status::InvalidArgument,
                "-1",
            ),
            (
                "device",
                Box::new(|m| m.dl_tensor.device.device_type = 5),
                Status::InvalidArgument,
                "device_type 5",
            ),
            (
                "device id",
                Box::new(|m| m.dl_tensor.device.device_id = -2),
                Status::InvalidArgument,
                "device_id -2",
            ),
            (
                "major version",
                Box::new(|m| m.version.major = 2),
                Status::InvalidArgument,
                "2.0",
            ),
            (
                "NULL shape",
                Box::new(|m| m.dl_tensor.shape = std::ptr::null_mut()),
                Status::NullPointer,
                "shape",
            ),
            (
                "NULL data",
                Box::new(|m| m.dl_tensor.data = std::ptr::null_mut()),
                Status::NullPointer,
                "6 elements",
            ),
            (
                "byte_offset",
                Box::new(|m| m.dl_tensor.byte_offset = u64::MAX),
                Status::Overflow,
                "byte_offset",
            ),
            (
                "address wrap",
                Box::new(|m| {
                    m.dl_tensor.data = usize::MAX as *mut c_void;
                    m.dl_tensor.byte_offset = 8;
                }),
                Status::Overflow,
                "wraps",
            ),
        ];
        for (what, edit, status, text) in cases {
            let mut m = versioned(dl_f32(p, &mut shape, None), &hits, 0);
            edit(&mut m);
            let e = unsafe { from_dlpack_versioned(&mut m) }.err().expect(what);
            assert_eq!(e.status, status, "{what}: {}", e.message);
            assert!(e.message.contains(text), "{what}: {}", e.message);
        }
        assert_eq!(
            hits.load(Ordering::SeqCst),
            0,
            "no refusal calls the deleter"
        );
        let e = unsafe { from_dlpack_versioned(std::ptr::null_mut()) }
            .err()
            .unwrap();
        assert_eq!(e.status, Status::NullPointer);
        let e = unsafe { from_dlpack_unversioned(std::ptr::null_mut()) }
            .err()
            .unwrap();
        assert_eq!(e.status, Status::NullPointer);
    }

    #[test]
    fn deleter_once_at_last_view_and_byte_offset_folding() {
        let mut buf = [0u8; 64];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = i as u8;
        }
        // One raw pointer for every use: each `base` re-borrows `buf` uniquely,
        // which (Stacked Borrows, Miri) invalidates the pointer the storage holds.
        let base = buf.as_mut_ptr();
        let hits = AtomicUsize::new(0);
        let mut shape = [2i64, 2];
        let mut strides = [4i64, 1];
        // u16 elements starting at byte 7: 3 whole elements + 1 byte folded into the data.
        let mut m = DLManagedTensor {
            dl_tensor: DLTensor {
                data: base as *mut c_void,
                device: DLDevice {
                    device_type: 1,
                    device_id: 0,
                },
                ndim: 2,
                dtype: DLDataType {
                    code: KDL_UINT,
                    bits: 16,
                    lanes: 1,
                },
                shape: shape.as_mut_ptr(),
                strides: strides.as_mut_ptr(),
                byte_offset: 7,
            },
            manager_ctx: &hits as *const AtomicUsize as *mut c_void,
            deleter: Some(count_unversioned),
        };
        let t = unsafe { from_dlpack_unversioned(&mut m) }.unwrap();
        assert_eq!(t.storage_offset(), 3);
        assert_eq!(t.storage().data_ptr(), base.wrapping_add(1));
        assert_eq!(t.data_ptr(), base.wrapping_add(7));
        // Exactly the bytes the layout reaches: (3 + 1 + 4·1 + 1·1) elements of 2 bytes.
        assert_eq!(
            t.storage().nbytes() as i64,
            shape::storage_nbytes_needed(&[2, 2], &[4, 1], 3, 2).unwrap()
        );
        assert_eq!(t.storage().nbytes(), 18);
        let le = |i: usize| u16::from_le_bytes([buf[i], buf[i + 1]]) as u64;
        let want = [le(7), le(9), le(15), le(17)];
        let got: Vec<u64> = [[0, 0], [0, 1], [1, 0], [1, 1]]
            .iter()
            .map(|ix| match t.get(ix).unwrap() {
                Scalar::Int(v) => v as u64,
                Scalar::UInt(v) => v,
                other => panic!("{other:?}"),
            })
            .collect();
        if cfg!(target_endian = "little") {
            assert_eq!(got, want);
        }
        let stats_before = crate::allocator::memory_stats().live_external_storages;
        assert!(stats_before >= 1);
        let view = t.transpose(0, 1).unwrap();
        drop(t);
        assert_eq!(
            hits.load(Ordering::SeqCst),
            0,
            "a view keeps the storage alive"
        );
        drop(view);
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "deleter at the last reference"
        );
    }

    #[test]
    fn empty_and_zero_dim() {
        let e = Tensor::empty(&[0, 3], DType::F64).unwrap();
        let m = to_dlpack_versioned(e).unwrap();
        unsafe {
            assert!((*m).dl_tensor.data.is_null(), "no elements: data is NULL");
        }
        let back = unsafe { from_dlpack_versioned(m) }.unwrap();
        assert_eq!(back.sizes(), &[0, 3]);
        assert_eq!(back.storage().nbytes(), 0);
        drop(back);

        let s = Tensor::full(&[], DType::C128, Scalar::Complex(1.0, -2.0)).unwrap();
        let m = to_dlpack_versioned(s.clone()).unwrap();
        unsafe {
            assert_eq!((*m).dl_tensor.ndim, 0);
            assert_eq!(
                (*m).dl_tensor.dtype,
                DLDataType {
                    code: 5,
                    bits: 128,
                    lanes: 1
                }
            );
        }
        let back = unsafe { from_dlpack_versioned(m) }.unwrap();
        assert_eq!(back.get(&[]).unwrap(), Scalar::Complex(1.0, -2.0));
        assert_eq!(back.storage().nbytes(), 16);
    }
}

//! Types and constants: handles, status and dtype codes, structs
//!
//! The C ABI. This file holds its handles, codes and structs (the header's first section)
//! and the boundary: every exported function runs its body through [`guard`] (panics become
//! `TENSOR_ERR_INTERNAL`) and, when fallible, through [`call`] (an `Err` becomes its status
//! plus a thread-local message prefixed with the function's name). The helpers below turn
//! raw C arguments into checked Rust values; no shape rule lives in this layer.

// Exported functions take raw pointers by design: the C contract (documented on each) is
// that non-NULL handles are live; NULL is checked everywhere.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

/// The name of the exported function this is written in (directly in its body, not in a
/// closure), as the boundary helpers take it (`guard(fn_name!(), ...)`): the type name of an
/// item nested in the function, a constant like `"tensor::ffi::core::tensor_numel::f"`.
/// Reports trim it to `tensor_numel` ([`reported_name`], on the error path only), so the
/// success path carries the same constant a literal would, and a function's name cannot
/// drift from the one its errors report (an alias reports the name that was called).
macro_rules! fn_name {
    () => {{
        fn f() {}
        ::core::any::type_name_of_val(&f)
    }};
}

// The sections of the generated header, in this order: each `pub mod` is one, titled by its
// first `//!` line (build.rs writes the banners; tests/support/header_model.rs reads both).
pub mod core;
pub mod storage;
pub mod tensor;
pub mod view;
pub mod copy;
pub mod dlpack;
pub mod files;
pub mod memory;
// Not part of the header (not `pub mod`): handle conversions.
pub(crate) mod handle;

use crate::allocator::Allocator;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::refcount::RcBox;
use crate::shape;
use crate::storage::{Blob, Storage, StorageImpl};
use crate::tensor_impl::{MemoryFormat, Tensor, TensorImpl};
pub(crate) use handle::{BoxHandle, RcHandle};
use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Opaque handle: one reference-counted TensorImpl (like `at::Tensor`).
pub struct tensor_t {
    _opaque: [u8; 0],
}

/// Opaque handle: one reference-counted StorageImpl (untyped bytes).
pub struct storage_t {
    _opaque: [u8; 0],
}

/// Opaque weak reference to a StorageImpl.
pub struct storage_weak_t {
    _opaque: [u8; 0],
}

/// Status of a fallible call (`TENSOR_OK` or one of the `TENSOR_ERR_*` codes).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tensor_status_t(pub i32);

pub const TENSOR_OK: tensor_status_t = tensor_status_t(0);
/// A required pointer argument was NULL.
pub const TENSOR_ERR_NULL_POINTER: tensor_status_t = tensor_status_t(1);
/// Bad value: negative size or stride, step <= 0, unknown enum code, ndim > 64, ...
pub const TENSOR_ERR_INVALID_ARGUMENT: tensor_status_t = tensor_status_t(2);
/// Dim or element index out of range.
pub const TENSOR_ERR_INDEX: tensor_status_t = tensor_status_t(3);
/// Sizes incompatible (numel mismatch, expand, broadcast, view(dtype) size rules).
pub const TENSOR_ERR_SHAPE: tensor_status_t = tensor_status_t(4);
/// view() on strides that cannot express the shape: use reshape.
pub const TENSOR_ERR_NOT_VIEWABLE: tensor_status_t = tensor_status_t(5);
/// Unsupported dtype or dtype combination.
pub const TENSOR_ERR_DTYPE: tensor_status_t = tensor_status_t(6);
/// Data access on memory the host cannot read (e.g. a wrapped CUDA pointer).
pub const TENSOR_ERR_DEVICE: tensor_status_t = tensor_status_t(7);
/// Sizes/strides/offset reach outside the storage.
pub const TENSOR_ERR_OUT_OF_BOUNDS: tensor_status_t = tensor_status_t(8);
/// Size, stride or byte arithmetic overflows int64.
pub const TENSOR_ERR_OVERFLOW: tensor_status_t = tensor_status_t(9);
/// An allocation failed.
pub const TENSOR_ERR_OUT_OF_MEMORY: tensor_status_t = tensor_status_t(10);
/// Write into a tensor whose elements alias each other (e.g. an expanded view).
pub const TENSOR_ERR_OVERLAP: tensor_status_t = tensor_status_t(11);
/// Resize of a storage that wraps external memory.
pub const TENSOR_ERR_NOT_RESIZABLE: tensor_status_t = tensor_status_t(12);
/// Write into a storage marked read-only.
pub const TENSOR_ERR_READ_ONLY: tensor_status_t = tensor_status_t(13);
/// A file or descriptor could not be opened, read, mapped or written (missing file,
/// permission denied, a directory), or a file's contents are not valid for its format
/// (empty, truncated, bad header, offsets outside the data).
pub const TENSOR_ERR_IO: tensor_status_t = tensor_status_t(14);
/// A bug: a panic was caught at the boundary.
pub const TENSOR_ERR_INTERNAL: tensor_status_t = tensor_status_t(99);

/// Element type; codes equal `c10::ScalarType`'s.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tensor_dtype_t(pub i32);

pub const TENSOR_UINT8: tensor_dtype_t = tensor_dtype_t(0);
pub const TENSOR_INT8: tensor_dtype_t = tensor_dtype_t(1);
pub const TENSOR_INT16: tensor_dtype_t = tensor_dtype_t(2);
pub const TENSOR_INT32: tensor_dtype_t = tensor_dtype_t(3);
pub const TENSOR_INT64: tensor_dtype_t = tensor_dtype_t(4);
pub const TENSOR_FLOAT16: tensor_dtype_t = tensor_dtype_t(5);
pub const TENSOR_FLOAT32: tensor_dtype_t = tensor_dtype_t(6);
pub const TENSOR_FLOAT64: tensor_dtype_t = tensor_dtype_t(7);
pub const TENSOR_COMPLEX64: tensor_dtype_t = tensor_dtype_t(9);
pub const TENSOR_COMPLEX128: tensor_dtype_t = tensor_dtype_t(10);
pub const TENSOR_BOOL: tensor_dtype_t = tensor_dtype_t(11);
pub const TENSOR_BFLOAT16: tensor_dtype_t = tensor_dtype_t(15);
pub const TENSOR_UINT16: tensor_dtype_t = tensor_dtype_t(27);
pub const TENSOR_UINT32: tensor_dtype_t = tensor_dtype_t(28);
pub const TENSOR_UINT64: tensor_dtype_t = tensor_dtype_t(29);
/// float8_e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE infinities and NaNs.
pub const TENSOR_FLOAT8_E5M2: tensor_dtype_t = tensor_dtype_t(23);
/// float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinity, NaN
/// S.1111.111, largest 448.
pub const TENSOR_FLOAT8_E4M3FN: tensor_dtype_t = tensor_dtype_t(24);
/// float8_e5m2fnuz: as e5m2 with bias 16, no infinity, no -0, the one NaN 0x80.
pub const TENSOR_FLOAT8_E5M2FNUZ: tensor_dtype_t = tensor_dtype_t(25);
/// float8_e4m3fnuz: as e4m3fn with bias 8, no -0, the one NaN 0x80, largest 240.
pub const TENSOR_FLOAT8_E4M3FNUZ: tensor_dtype_t = tensor_dtype_t(26);
/// float8_e8m0fnu: an unsigned power of two 2^(x - 127) (0x00 = 2^-127), NaN 0xFF.
pub const TENSOR_FLOAT8_E8M0FNU: tensor_dtype_t = tensor_dtype_t(44);
/// float4_e2m1fn_x2: two float4_e2m1fn values packed in one byte (element 0 in the low
/// nibble), one element per byte as in PyTorch; bit copies only (no conversion, fill,
/// comparison or element access, as in PyTorch).
pub const TENSOR_FLOAT4_E2M1FN_X2: tensor_dtype_t = tensor_dtype_t(45);

/// Memory format; codes equal `c10::MemoryFormat`'s.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tensor_memory_format_t(pub i32);

pub const TENSOR_CONTIGUOUS_FORMAT: tensor_memory_format_t = tensor_memory_format_t(0);
pub const TENSOR_PRESERVE_FORMAT: tensor_memory_format_t = tensor_memory_format_t(1);
pub const TENSOR_CHANNELS_LAST: tensor_memory_format_t = tensor_memory_format_t(2);
pub const TENSOR_CHANNELS_LAST_3D: tensor_memory_format_t = tensor_memory_format_t(3);

// ---- the code tables ----------------------------------------------------------------------
// Each C code constant above is tied to its Rust enum variant by an exhaustive match (a new
// variant does not compile until it is tabled here) and checked against the variant's own
// discriminant at compile time (the const blocks below) and, for decoding, by a unit test.

/// The C code of a status.
pub(crate) const fn status_code(s: Status) -> tensor_status_t {
    match s {
        Status::Ok => TENSOR_OK,
        Status::NullPointer => TENSOR_ERR_NULL_POINTER,
        Status::InvalidArgument => TENSOR_ERR_INVALID_ARGUMENT,
        Status::Index => TENSOR_ERR_INDEX,
        Status::Shape => TENSOR_ERR_SHAPE,
        Status::NotViewable => TENSOR_ERR_NOT_VIEWABLE,
        Status::DType => TENSOR_ERR_DTYPE,
        Status::Device => TENSOR_ERR_DEVICE,
        Status::OutOfBounds => TENSOR_ERR_OUT_OF_BOUNDS,
        Status::Overflow => TENSOR_ERR_OVERFLOW,
        Status::OutOfMemory => TENSOR_ERR_OUT_OF_MEMORY,
        Status::Overlap => TENSOR_ERR_OVERLAP,
        Status::NotResizable => TENSOR_ERR_NOT_RESIZABLE,
        Status::ReadOnly => TENSOR_ERR_READ_ONLY,
        Status::Io => TENSOR_ERR_IO,
        Status::Internal => TENSOR_ERR_INTERNAL,
    }
}

/// The C code of a dtype.
pub(crate) const fn dtype_code(d: DType) -> tensor_dtype_t {
    match d {
        DType::U8 => TENSOR_UINT8,
        DType::I8 => TENSOR_INT8,
        DType::I16 => TENSOR_INT16,
        DType::I32 => TENSOR_INT32,
        DType::I64 => TENSOR_INT64,
        DType::F16 => TENSOR_FLOAT16,
        DType::F32 => TENSOR_FLOAT32,
        DType::F64 => TENSOR_FLOAT64,
        DType::C64 => TENSOR_COMPLEX64,
        DType::C128 => TENSOR_COMPLEX128,
        DType::Bool => TENSOR_BOOL,
        DType::BF16 => TENSOR_BFLOAT16,
        DType::U16 => TENSOR_UINT16,
        DType::U32 => TENSOR_UINT32,
        DType::U64 => TENSOR_UINT64,
        DType::F8E5M2 => TENSOR_FLOAT8_E5M2,
        DType::F8E4M3Fn => TENSOR_FLOAT8_E4M3FN,
        DType::F8E5M2Fnuz => TENSOR_FLOAT8_E5M2FNUZ,
        DType::F8E4M3Fnuz => TENSOR_FLOAT8_E4M3FNUZ,
        DType::F8E8M0Fnu => TENSOR_FLOAT8_E8M0FNU,
        DType::F4E2M1FnX2 => TENSOR_FLOAT4_E2M1FN_X2,
    }
}

/// The C code of a memory format.
pub(crate) const fn format_code(f: MemoryFormat) -> tensor_memory_format_t {
    match f {
        MemoryFormat::Contiguous => TENSOR_CONTIGUOUS_FORMAT,
        MemoryFormat::Preserve => TENSOR_PRESERVE_FORMAT,
        MemoryFormat::ChannelsLast => TENSOR_CHANNELS_LAST,
        MemoryFormat::ChannelsLast3d => TENSOR_CHANNELS_LAST_3D,
    }
}

/// Every memory format (MemoryFormat has no list of its own).
// Read by the const assertions below, which rustc 1.87 (the MSRV) does not count as a use.
#[allow(dead_code)]
const MEMORY_FORMATS: [MemoryFormat; 4] = [
    MemoryFormat::Contiguous,
    MemoryFormat::Preserve,
    MemoryFormat::ChannelsLast,
    MemoryFormat::ChannelsLast3d,
];

// The C code of every variant equals the variant's discriminant (what the core's
// `from_code` / `as i32` use).
const _: () = {
    let mut i = 0;
    while i < Status::ALL.len() {
        assert!(status_code(Status::ALL[i]).0 == Status::ALL[i] as i32);
        i += 1;
    }
    let mut i = 0;
    while i < DType::ALL.len() {
        assert!(dtype_code(DType::ALL[i]).0 == DType::ALL[i] as i32);
        i += 1;
    }
    let mut i = 0;
    while i < MEMORY_FORMATS.len() {
        assert!(format_code(MEMORY_FORMATS[i]).0 == MEMORY_FORMATS[i] as i32);
        i += 1;
    }
};

#[cfg(test)]
mod code_tables {
    use super::*;

    /// Decoding agrees with the tables: every code the core accepts maps back to itself,
    /// and every variant (the exhaustive matches above) is reachable from its C code.
    #[test]
    fn codes_round_trip_for_every_variant() {
        for code in -1..=255 {
            if let Some(s) = Status::from_code(code) {
                assert_eq!(status_code(s).0, code);
            }
            if let Some(d) = DType::from_code(code) {
                assert_eq!(dtype_code(d).0, code);
            }
            if let Some(f) = MemoryFormat::from_code(code) {
                assert_eq!(format_code(f).0, code);
            }
        }
        for s in Status::ALL {
            assert_eq!(Status::from_code(status_code(s).0), Some(s));
        }
        for d in DType::ALL {
            assert_eq!(DType::from_code(dtype_code(d).0), Some(d));
        }
        for f in MEMORY_FORMATS {
            assert_eq!(MemoryFormat::from_code(format_code(f).0), Some(f));
        }
        assert_eq!(Status::ALL.len(), 16);
        assert_eq!(DType::ALL.len(), 21);
    }
}

#[cfg(test)]
mod names {
    use super::*;

    #[test]
    fn fn_name_is_the_enclosing_functions_own() {
        fn tensor_example_() -> &'static str {
            reported_name(fn_name!())
        }
        assert_eq!(tensor_example_(), "tensor_example_");
        assert_eq!(reported_name("tensor_numel"), "tensor_numel");
    }

    /// An alias reports under the name that was called, the function under its own.
    #[test]
    fn error_messages_start_with_the_called_functions_name() {
        let msg = || {
            // SAFETY: tensor_last_error returns a NUL-terminated string.
            unsafe { std::ffi::CStr::from_ptr(last_error_ptr()) }
                .to_str()
                .unwrap()
                .to_string()
        };
        let t = std::ptr::null_mut();
        assert_eq!(copy::tensor_fill_f64_(t, 1.0), TENSOR_ERR_NULL_POINTER);
        assert_eq!(msg(), "tensor_fill_f64_: argument 'dst' is NULL");
        assert_eq!(copy::tensor_fill_f64(t, 1.0), TENSOR_ERR_NULL_POINTER);
        assert_eq!(msg(), "tensor_fill_f64: argument 'dst' is NULL");
        let mut out = std::ptr::null_mut();
        assert_eq!(
            view::tensor_view(std::ptr::null(), std::ptr::null(), 0, &mut out),
            TENSOR_ERR_NULL_POINTER
        );
        assert_eq!(msg(), "tensor_view: argument 'self' is NULL");
    }
}

/// A device: DLPack `DLDeviceType` code and ordinal.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tensor_device_t {
    /// 1 CPU, 2 CUDA, 3 CUDA host (pinned), 4 OpenCL, 7 Vulkan, 8 Metal, 9 VPI, 10 ROCm,
    /// 11 ROCm host, 12 ext_dev, 13 CUDA managed, 14 oneAPI, 15 WebGPU, 16 Hexagon, 17 MAIA,
    /// 18 Trn (AWS Trainium).
    /// Element access needs host-accessible memory (1, 3, 11, 13).
    pub device_type: i32,
    /// Device ordinal (>= 0).
    pub device_id: i32,
}

impl From<tensor_device_t> for Device {
    fn from(d: tensor_device_t) -> Device {
        Device {
            device_type: d.device_type,
            device_id: d.device_id,
        }
    }
}

impl From<Device> for tensor_device_t {
    fn from(d: Device) -> tensor_device_t {
        tensor_device_t {
            device_type: d.device_type,
            device_id: d.device_id,
        }
    }
}

/// Frees wrapped memory: called exactly once with the data pointer and the ctx given at
/// wrap time, on the thread that drops the last strong reference.
pub type tensor_deleter_fn = Option<unsafe extern "C" fn(data: *mut c_void, ctx: *mut c_void)>;

/// A caller-provided allocator; copied into every storage it allocates, so `ctx` must
/// outlive those storages. Both callbacks may be called from any thread.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tensor_allocator_t {
    /// Passed back to both callbacks.
    pub ctx: *mut c_void,
    /// Returns `nbytes` bytes aligned to `alignment` (64), or NULL on failure.
    pub allocate: Option<
        unsafe extern "C" fn(ctx: *mut c_void, nbytes: usize, alignment: usize) -> *mut c_void,
    >,
    /// Frees a block `allocate` returned, with the same `nbytes`.
    pub deallocate: Option<unsafe extern "C" fn(ctx: *mut c_void, ptr: *mut c_void, nbytes: usize)>,
}

pub(crate) fn allocator_arg(a: *const tensor_allocator_t) -> Result<Option<Allocator>> {
    // SAFETY: a non-NULL allocator points to a valid struct for the call.
    let Some(a) = (unsafe { a.as_ref() }) else {
        return Ok(None);
    };
    match (a.allocate, a.deallocate) {
        (Some(allocate), Some(deallocate)) => Ok(Some(Allocator::Custom {
            ctx: a.ctx,
            allocate,
            deallocate,
        })),
        _ => Err(Error::new(
            Status::NullPointer,
            "allocator callbacks 'allocate' and 'deallocate' must both be non-NULL",
        )),
    }
}

/// Maximum number of dims of a tensor.
pub const TENSOR_MAX_DIMS: i64 = 64;
// A literal above, for cbindgen; tied to the core's limit here.
const _: () = assert!(TENSOR_MAX_DIMS as usize == shape::MAX_DIMS);

// ---- the boundary -----------------------------------------------------------------------

/// This thread's last error message: its own buffer (reused, so that it rarely needs to
/// grow), or, when the buffer could not grow (out of memory), a static text.
struct LastError {
    text: Vec<u8>,
    fallback: Option<&'static std::ffi::CStr>,
}

thread_local! {
    // Const-initialised: the first error of a thread allocates nothing but its text.
    static LAST_ERROR: RefCell<LastError> = const {
        RefCell::new(LastError {
            text: Vec::new(),
            fallback: None,
        })
    };
}

/// Shown by tensor_last_error when even the message could not be stored.
const OOM_MESSAGE: &std::ffi::CStr =
    c"libtensor: out of memory while recording the error message (the status code is exact)";

/// The exported function's own name in a [`fn_name`] path: `tensor_numel` in
/// `"tensor::ffi::core::tensor_numel::f"`. Only error reports call it.
#[cold]
#[inline(never)]
fn reported_name(path: &'static str) -> &'static str {
    let function = path.strip_suffix("::f").unwrap_or(path);
    function.rsplit("::").next().unwrap_or(function)
}

/// Records "function: message" as this thread's last error (`function` as [`fn_name`]
/// gives it). Never aborts: when the buffer cannot grow, the message is the static
/// [`OOM_MESSAGE`].
fn set_last_error(function: &'static str, message: &str) {
    let function = reported_name(function);
    // A thread being torn down has no slot any more: the message is dropped.
    let _ = LAST_ERROR.try_with(|e| {
        let mut e = e.borrow_mut();
        e.text.clear();
        let needed = function.len() + message.len() + 3;
        if e.text.try_reserve(needed).is_err() {
            e.fallback = Some(OOM_MESSAGE);
            return;
        }
        e.fallback = None;
        e.text.extend_from_slice(function.as_bytes());
        e.text.extend_from_slice(b": ");
        e.text.extend(message.bytes().filter(|&b| b != 0));
        e.text.push(0);
    });
}

/// Pointer to this thread's last message (NUL-terminated; "" if none).
pub(crate) fn last_error_ptr() -> *const std::ffi::c_char {
    LAST_ERROR
        .try_with(|e| {
            let e = e.borrow();
            match e.fallback {
                Some(text) => text.as_ptr(),
                None if e.text.is_empty() => c"".as_ptr(),
                None => e.text.as_ptr() as *const std::ffi::c_char,
            }
        })
        .unwrap_or(c"".as_ptr())
}

/// What an exported function returns when its body panicked, chosen by its return type
/// (rustls-ffi's `Defaultable`): a status is `TENSOR_ERR_INTERNAL`, a pointer NULL, a
/// count 0, a predicate false. The few functions that promise another value (a static
/// string, `true`) pass it to [`guard_or`].
pub(crate) trait OnPanic {
    const ON_PANIC: Self;
}

impl OnPanic for tensor_status_t {
    const ON_PANIC: Self = TENSOR_ERR_INTERNAL;
}
impl OnPanic for () {
    const ON_PANIC: Self = ();
}
impl OnPanic for bool {
    const ON_PANIC: Self = false;
}
impl<T> OnPanic for *mut T {
    const ON_PANIC: Self = std::ptr::null_mut();
}
impl<T> OnPanic for *const T {
    const ON_PANIC: Self = std::ptr::null();
}
macro_rules! on_panic_zero {
    ($($t:ty),*) => { $(impl OnPanic for $t { const ON_PANIC: Self = 0; })* };
}
on_panic_zero!(i64, u64, usize, u32);
impl OnPanic for tensor_dtype_t {
    const ON_PANIC: Self = tensor_dtype_t(0);
}
impl OnPanic for tensor_memory_format_t {
    const ON_PANIC: Self = TENSOR_CONTIGUOUS_FORMAT;
}
impl OnPanic for tensor_device_t {
    const ON_PANIC: Self = tensor_device_t {
        device_type: 0,
        device_id: 0,
    };
}

/// Runs an exported function's body; a panic becomes `T::ON_PANIC` plus a message.
#[inline(always)]
pub(crate) fn guard<T: OnPanic>(function: &'static str, body: impl FnOnce() -> T) -> T {
    guard_or(function, T::ON_PANIC, body)
}

/// [`guard`] with an explicit panic value: the one place that catches panics.
#[inline(always)]
pub(crate) fn guard_or<T>(function: &'static str, on_panic: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(payload) => {
            caught_panic(function, payload);
            on_panic
        }
    }
}

/// The panic path of [`guard`], kept out of line (and out of every caller's hot path).
#[cold]
#[inline(never)]
fn caught_panic(function: &'static str, payload: Box<dyn std::any::Any + Send>) {
    if let Some(r) = payload.downcast_ref::<crate::refcount::ReleasedHandle>() {
        released_abort(function, r.0);
    }
    let what: &str = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(|s| s.as_str()))
        .unwrap_or_default();
    let e = Error::from_fmt(
        Status::Internal,
        format_args!("internal error (caught panic: {what})"),
    );
    set_last_error(function, e.text());
}

/// A handle already released reached `function` (`refcount::released_handle`): a use
/// after free in the caller, which no status can report (the handle may already be
/// another live object's, or be about to be). Names the call, lets AddressSanitizer say
/// where the block was freed when it runs, and aborts.
#[cold]
fn released_abort(function: &'static str, addr: usize) -> ! {
    let function = reported_name(function);
    eprintln!(
        "libtensor: {function}: handle {addr:#x} was already released (use after release \
         or double release); aborting"
    );
    crate::sanitizer::describe(addr as *const u8);
    std::process::abort()
}

/// Runs a fallible exported function's body: `Err` becomes its status and message.
#[inline(always)]
pub(crate) fn call(function: &'static str, body: impl FnOnce() -> Result<()>) -> tensor_status_t {
    guard(function, || match body() {
        Ok(()) => TENSOR_OK,
        Err(e) => failed(function, e),
    })
}

/// The error path of [`call`]: records the message, returns the status (out of line).
#[cold]
#[inline(never)]
fn failed(function: &'static str, e: Error) -> tensor_status_t {
    set_last_error(function, e.text());
    status_code(e.status)
}

/// [`call`] for functions that produce a new tensor in `*out` (+1 reference).
#[inline(always)]
pub(crate) fn call_tensor(
    function: &'static str,
    out: *mut *mut tensor_t,
    body: impl FnOnce() -> Result<Tensor>,
) -> tensor_status_t {
    call(function, || {
        let out = out_arg(out)?;
        let t = body()?;
        *out = tensor_t::into_raw(t);
        Ok(())
    })
}

// ---- argument conversion ----------------------------------------------------------------

#[cold]
#[inline(never)]
fn null(what: &str) -> Error {
    Error::from_fmt(
        Status::NullPointer,
        format_args!("argument '{what}' is NULL"),
    )
}

/// A required out-parameter.
pub(crate) fn out_arg<'a, T>(p: *mut T) -> Result<&'a mut T> {
    // SAFETY: non-null checked; the caller promises it points to writable memory.
    unsafe { p.as_mut() }.ok_or_else(|| null("out"))
}

/// A required tensor handle, borrowed for the call.
pub(crate) fn tensor_arg<'a>(p: *const tensor_t, what: &str) -> Result<&'a TensorImpl> {
    // SAFETY: the C contract: a non-NULL handle is live for the duration of the call.
    unsafe { tensor_t::borrow(p) }.ok_or_else(|| null(what))
}

/// A required tensor handle as a new strong reference (for results that may be `self`).
pub(crate) fn tensor_owned(p: *const tensor_t, what: &str) -> Result<Tensor> {
    // SAFETY: as in tensor_arg.
    unsafe { tensor_t::retain(p) }.ok_or_else(|| null(what))
}

/// An accessor's handle: `None` for NULL (accessors then return 0 / NULL / false).
pub(crate) fn tensor_opt<'a>(p: *const tensor_t) -> Option<&'a TensorImpl> {
    // SAFETY: as in tensor_arg.
    unsafe { tensor_t::borrow(p) }
}

/// A storage handle's box (for its counts), borrowed for the call; `None` for NULL.
pub(crate) fn storage_box<'a>(p: *const storage_t) -> Option<&'a RcBox<StorageImpl>> {
    // SAFETY: a non-NULL storage handle is live for the duration of the call.
    unsafe { storage_t::borrow_box(p) }
}

/// A required storage handle, borrowed for the call.
pub(crate) fn storage_arg<'a>(p: *const storage_t, what: &str) -> Result<&'a StorageImpl> {
    // SAFETY: as in storage_box.
    unsafe { storage_t::borrow(p) }.ok_or_else(|| null(what))
}

/// A required storage handle as a new strong reference.
pub(crate) fn storage_owned(p: *const storage_t, what: &str) -> Result<Storage> {
    storage_arg(p, what)?;
    // SAFETY: as in storage_box; non-NULL (checked above).
    Ok(unsafe { storage_t::retain_live(p) })
}

/// `n` int64 values at `p` (sizes, strides, dims, indices). `n == 0` allows NULL.
pub(crate) fn int_list<'a>(p: *const i64, n: i64, what: &str) -> Result<&'a [i64]> {
    ensure!(n >= 0, InvalidArgument, "'{what}' has negative length {n}");
    shape::check_ndim(n as usize)?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: the caller promises n readable values at p.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// An optional list (strides): NULL is `None` ("contiguous"), else as [`int_list`].
pub(crate) fn opt_int_list<'a>(p: *const i64, n: i64, what: &str) -> Result<Option<&'a [i64]>> {
    if p.is_null() {
        Ok(None)
    } else {
        int_list(p, n, what).map(Some)
    }
}

pub(crate) fn dtype_arg(d: tensor_dtype_t) -> Result<DType> {
    DType::from_code(d.0).ok_or_else(|| {
        Error::from_fmt(
            Status::InvalidArgument,
            format_args!("unknown dtype code {}", d.0),
        )
    })
}

pub(crate) fn format_arg(f: tensor_memory_format_t) -> Result<MemoryFormat> {
    MemoryFormat::from_code(f.0).ok_or_else(|| {
        Error::from_fmt(
            Status::InvalidArgument,
            format_args!("unknown memory format code {}", f.0),
        )
    })
}

//! Library: tensor reference counts, errors, dtypes, version
//!
//! Library-wide calls: tensor refcounts, errors, dtypes, identity (the memory calls are in
//! `memory`).

use super::*;
use std::ffi::{c_char, CStr};

/// Adds one strong reference to `t` and returns `t` (NULL gives NULL). The caller owns
/// the new reference and must release it. Reference-count overflow (more than 2^32 - 2
/// strong references to one tensor, i.e. a leak of billions of them) aborts the process
/// by design: continuing would end in a use after free. So does a handle already released,
/// when the library can tell (see `tensor_release`).
#[no_mangle]
pub extern "C" fn tensor_retain(t: *const tensor_t) -> *mut tensor_t {
    guard(fn_name!(), || {
        // SAFETY: NULL or a live handle.
        unsafe { tensor_t::retain(t) }.map_or(std::ptr::null_mut(), tensor_t::into_raw)
    })
}

/// Drops one strong reference; frees the tensor at 0 (and its storage's data when this
/// was the storage's last strong reference). NULL is a no-op.
///
/// A handle already released (a double release, or any call with it afterwards) is a use
/// after free; when the freed object is still in this thread's object cache (the
/// default), or (for a release) AddressSanitizer knows it is freed, the call prints "libtensor: <call>:
/// handle 0x... was already released (use after release or double release); aborting"
/// on stderr and aborts the process (docs/c-api.md, "Debugging caller bugs").
#[no_mangle]
pub extern "C" fn tensor_release(t: *mut tensor_t) {
    guard(fn_name!(), || {
        // SAFETY: the caller gives up one strong reference it owns (or passes NULL).
        if let Some(t) = unsafe { tensor_t::adopt(t) } {
            t.0.release();
        }
    })
}

/// Number of strong references to `t` (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_use_count(t: *const tensor_t) -> u64 {
    guard(fn_name!(), || {
        // SAFETY: NULL or a live handle.
        unsafe { tensor_t::borrow_box(t) }.map_or(0, |b| b.strong_count())
    })
}

/// Static description of a status code (never NULL; "unknown status" for unknown codes).
#[no_mangle]
pub extern "C" fn tensor_status_string(s: tensor_status_t) -> *const c_char {
    guard_or(
        fn_name!(),
        c"unknown status".as_ptr(),
        || match Status::from_code(s.0) {
            Some(st) => st.description().as_ptr(),
            None => c"unknown status".as_ptr(),
        },
    )
}

/// This thread's message for its last failed call, e.g. "tensor_view: shape '[3, 5]' is
/// invalid for input of size 12"; "" if none yet. Borrowed: valid until this thread's
/// next failed call.
#[no_mangle]
pub extern "C" fn tensor_last_error() -> *const c_char {
    guard_or(fn_name!(), c"".as_ptr(), last_error_ptr)
}

/// Bytes per element of `d`; 0 for an unknown code.
#[no_mangle]
pub extern "C" fn tensor_dtype_itemsize(d: tensor_dtype_t) -> usize {
    guard(fn_name!(), || {
        DType::from_code(d.0).map_or(0, |d| d.itemsize())
    })
}

/// PyTorch's name of `d` ("float32", ...); static; NULL for an unknown code.
#[no_mangle]
pub extern "C" fn tensor_dtype_name(d: tensor_dtype_t) -> *const c_char {
    guard(fn_name!(), || {
        DType::from_code(d.0).map_or(std::ptr::null(), |d| d.c_name().as_ptr())
    })
}

/// Cargo.toml's version as a C string.
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("the version has no NUL"),
    };

/// The loaded library's version, e.g. "0.2.0" (`TENSOR_VERSION_STRING` is the header's); static.
#[no_mangle]
pub extern "C" fn tensor_version_string() -> *const c_char {
    guard_or(fn_name!(), c"".as_ptr(), || VERSION.as_ptr())
}

/// ABI revision of the loaded library; equals `TENSOR_ABI_VERSION` of the header it was
/// built with. Compare them at start-up to detect a mismatched `.so`.
#[no_mangle]
pub extern "C" fn tensor_abi_version() -> u32 {
    TENSOR_ABI_VERSION
}

/// ABI revision of this header (see `tensor_abi_version`). The SONAME's major number
/// (`libtensor.so.0`) stays 0 while the ABI is 0.x.
pub const TENSOR_ABI_VERSION: u32 = 1;

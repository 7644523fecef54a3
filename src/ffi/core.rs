//! Library-wide calls: tensor refcounts, errors, dtypes, memory statistics, identity.

use super::*;
use crate::allocator::memory_stats;
use std::ffi::c_char;

/// Adds one strong reference to `t` and returns `t` (NULL gives NULL). The caller owns
/// the new reference and must release it. Reference-count overflow (more than 2^32 - 2
/// strong references to one tensor, i.e. a leak of billions of them) aborts the process
/// by design: continuing would end in a use after free.
#[no_mangle]
pub extern "C" fn tensor_retain(t: *const tensor_t) -> *mut tensor_t {
    guard(
        "tensor_retain",
        std::ptr::null_mut(),
        || match tensor_owned(t, "t") {
            Ok(owned) => owned.into_raw() as *mut tensor_t,
            Err(_) => std::ptr::null_mut(),
        },
    )
}

/// Drops one strong reference; frees the tensor at 0 (and its storage's data when this
/// was the storage's last strong reference). NULL is a no-op.
#[no_mangle]
pub extern "C" fn tensor_release(t: *mut tensor_t) {
    guard("tensor_release", (), || {
        if !t.is_null() {
            // SAFETY: the caller gives up one strong reference it owns.
            drop(unsafe { Tensor::from_raw(t as *mut _) });
        }
    })
}

/// Number of strong references to `t` (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_use_count(t: *const tensor_t) -> u64 {
    guard("tensor_use_count", 0, || {
        if t.is_null() {
            return 0;
        }
        // SAFETY: a live handle.
        let b = unsafe { &*(t as *const crate::refcount::RcBox<TensorImpl>) };
        b.strong_count()
    })
}

/// Static description of a status code (never NULL; "unknown status" for unknown codes).
#[no_mangle]
pub extern "C" fn tensor_status_string(s: tensor_status_t) -> *const c_char {
    guard(
        "tensor_status_string",
        c"unknown status".as_ptr(),
        || match Status::from_code(s.0) {
            Some(st) => st.description().as_ptr() as *const c_char,
            None => c"unknown status".as_ptr(),
        },
    )
}

/// This thread's message for its last failed call, e.g. "tensor_view: shape '[3, 5]' is
/// invalid for input of size 12"; "" if none yet. Borrowed: valid until this thread's
/// next failed call.
#[no_mangle]
pub extern "C" fn tensor_last_error() -> *const c_char {
    guard("tensor_last_error", c"".as_ptr(), last_error_ptr)
}

/// Bytes per element of `d`; 0 for an unknown code.
#[no_mangle]
pub extern "C" fn tensor_dtype_itemsize(d: tensor_dtype_t) -> usize {
    guard("tensor_dtype_itemsize", 0, || {
        DType::from_code(d.0).map_or(0, |d| d.itemsize())
    })
}

/// PyTorch's name of `d` ("float32", ...); static; NULL for an unknown code.
#[no_mangle]
pub extern "C" fn tensor_dtype_name(d: tensor_dtype_t) -> *const c_char {
    guard("tensor_dtype_name", std::ptr::null(), || {
        DType::from_code(d.0).map_or(std::ptr::null(), |d| d.c_name().as_ptr() as *const c_char)
    })
}

/// Library-wide memory counters. The caller sets `out->struct_size = sizeof(*out)`; only
/// the fields that fit in that size are written.
/// Errors: NULL_POINTER; INVALID_ARGUMENT when struct_size is smaller than the first field.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct tensor_memory_stats_t {
    /// Caller sets sizeof(tensor_memory_stats_t): lets the struct grow.
    pub struct_size: usize,
    /// StorageImpls whose data is alive (allocated or wrapped).
    pub live_storages: u64,
    /// Bytes the library allocated for storages still alive.
    pub live_bytes: u64,
    /// Highest live_bytes seen.
    pub peak_bytes: u64,
    /// Allocations made for storages since the library loaded.
    pub total_allocations: u64,
    /// from_blob / DLPack wraps not yet released.
    pub live_external_storages: u64,
}

/// Fills `*out` with the library-wide memory counters (see `tensor_memory_stats_t`).
/// Errors: NULL_POINTER, INVALID_ARGUMENT (struct_size too small).
#[no_mangle]
pub extern "C" fn tensor_memory_stats(out: *mut tensor_memory_stats_t) -> tensor_status_t {
    call("tensor_memory_stats", || {
        let out = out_arg(out)?;
        let size = out.struct_size;
        let header = std::mem::size_of::<usize>();
        ensure!(
            size >= header,
            InvalidArgument,
            "struct_size {size} is smaller than {header}; set it to sizeof(tensor_memory_stats_t)"
        );
        let s = memory_stats();
        let full = tensor_memory_stats_t {
            struct_size: size,
            live_storages: s.live_storages,
            live_bytes: s.live_bytes,
            peak_bytes: s.peak_bytes,
            total_allocations: s.total_allocations,
            live_external_storages: s.live_external_storages,
        };
        let n = size.min(std::mem::size_of::<tensor_memory_stats_t>());
        // SAFETY: the caller's struct holds struct_size bytes; we copy at most that many.
        unsafe {
            std::ptr::copy_nonoverlapping(
                &full as *const _ as *const u8,
                out as *mut _ as *mut u8,
                n,
            )
        };
        Ok(())
    })
}

/// Returns the built-in allocator's cache of freed big blocks (>= 2 MiB, at most 256 MiB,
/// kept so that ops run in a loop do not page-fault again) to the system, like
/// `torch.cuda.empty_cache()`. Returns the number of bytes released. Cached blocks are
/// never counted in `live_bytes`. Safe to call at any time, from any thread.
#[no_mangle]
pub extern "C" fn tensor_empty_cache() -> u64 {
    guard("tensor_empty_cache", 0, crate::allocator::empty_cache)
}

/// The library version, "0.1.0" (static).
#[no_mangle]
pub extern "C" fn tensor_version_string() -> *const c_char {
    guard("tensor_version_string", c"".as_ptr(), || {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
    })
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

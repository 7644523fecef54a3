//! Storages: untyped bytes, their references, allocators
//!
//! Storages (untyped bytes), their refcounts and weak references, and allocators.

use super::*;
use crate::allocator::Allocator;
use std::ffi::c_void;

/// Adds one strong reference to `s` and returns it (NULL gives NULL); release it once.
/// Reference-count overflow (more than 2^32 - 2 strong references to one storage; every
/// tensor on it holds one) aborts the process by design: continuing would end in a use
/// after free.
#[no_mangle]
pub extern "C" fn storage_retain(s: *const storage_t) -> *mut storage_t {
    guard(fn_name!(), || {
        // SAFETY: NULL or a live handle.
        unsafe { storage_t::retain(s) }.map_or(std::ptr::null_mut(), storage_t::into_raw)
    })
}

/// Drops one strong reference. At 0 the data is freed (the deleter of wrapped memory
/// runs, exactly once) even if weak references remain. NULL is a no-op.
#[no_mangle]
pub extern "C" fn storage_release(s: *mut storage_t) {
    guard(fn_name!(), || {
        // SAFETY: the caller gives up one owned strong reference (or passes NULL).
        drop(unsafe { storage_t::adopt(s) });
    })
}

/// Number of strong references (tensors on the storage hold one each); 0 for NULL.
#[no_mangle]
pub extern "C" fn storage_use_count(s: *const storage_t) -> u64 {
    guard(fn_name!(), || {
        storage_box(s).map_or(0, |b| b.strong_count())
    })
}

/// The weak count as c10 keeps it: weak references + 1 while any strong reference
/// remains; 0 for NULL.
#[no_mangle]
pub extern "C" fn storage_weak_count(s: *const storage_t) -> u64 {
    guard(fn_name!(), || storage_box(s).map_or(0, |b| b.weak_count()))
}

/// Creates a weak reference to `s` in `*out` (owned: release with storage_weak_release).
/// Weak-count overflow (more than 2^31 - 2 weak references to one storage) aborts the
/// process by design, as strong-count overflow does (see storage_retain).
/// Errors: NULL_POINTER.
#[no_mangle]
pub extern "C" fn storage_weak_new(
    s: *const storage_t,
    out: *mut *mut storage_weak_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let strong = storage_owned(s, "s")?;
        *out = storage_weak_t::into_raw(strong.downgrade());
        Ok(())
    })
}

/// A new strong reference (owned) if the storage is still alive, else NULL. Strong-count
/// overflow aborts the process, as in storage_retain.
#[no_mangle]
pub extern "C" fn storage_weak_lock(w: *const storage_weak_t) -> *mut storage_t {
    guard(fn_name!(), || {
        // SAFETY: NULL or a live weak handle (borrowed, not dropped).
        match unsafe { storage_weak_t::borrow(w) } {
            Some(weak) => weak
                .lock()
                .map_or(std::ptr::null_mut(), storage_t::into_raw),
            None => std::ptr::null_mut(),
        }
    })
}

/// True once the storage's strong count reached 0 (or for NULL).
#[no_mangle]
pub extern "C" fn storage_weak_expired(w: *const storage_weak_t) -> bool {
    guard_or(fn_name!(), true, || {
        // SAFETY: as in storage_weak_lock.
        unsafe { storage_weak_t::borrow(w) }.is_none_or(|weak| weak.expired())
    })
}

/// Drops a weak reference; the StorageImpl object is freed when the last strong and weak
/// references are gone. NULL is a no-op.
#[no_mangle]
pub extern "C" fn storage_weak_release(w: *mut storage_weak_t) {
    guard(fn_name!(), || {
        // SAFETY: the caller gives up one owned weak reference (or passes NULL).
        drop(unsafe { storage_weak_t::adopt(w) });
    })
}

/// A new resizable storage of `nbytes` uninitialised bytes in `*out` (owned), from
/// `allocator` (copied; NULL: the default allocator, 64-byte aligned).
/// Errors: NULL_POINTER, OUT_OF_MEMORY, OVERFLOW.
#[no_mangle]
pub extern "C" fn storage_new(
    nbytes: usize,
    allocator: *const tensor_allocator_t,
    out: *mut *mut storage_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let alloc = allocator_arg(allocator)?.unwrap_or_else(Allocator::default_allocator);
        *out = storage_t::into_raw(StorageImpl::allocate(nbytes, alloc)?);
        Ok(())
    })
}

/// Wraps `nbytes` at `data` (on `device`) without copying, in `*out` (owned, not
/// resizable). On success `deleter(data, ctx)` (if non-NULL) runs exactly once, when the
/// last strong reference dies; on failure it is not called and the caller keeps `data`.
/// Errors: NULL_POINTER (out, or data with nbytes > 0), INVALID_ARGUMENT (unknown device),
/// OVERFLOW (nbytes > PTRDIFF_MAX), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn storage_from_blob(
    data: *mut c_void,
    nbytes: usize,
    device: tensor_device_t,
    deleter: tensor_deleter_fn,
    ctx: *mut c_void,
    out: *mut *mut storage_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let blob = Blob {
            data,
            device: device.into(),
            deleter,
            ctx,
        };
        *out = storage_t::into_raw(StorageImpl::from_blob(blob, nbytes)?);
        Ok(())
    })
}

/// The data pointer (borrowed; NULL for 0 bytes or NULL `s`). Changes on resize.
#[no_mangle]
pub extern "C" fn storage_data_ptr(s: *const storage_t) -> *mut c_void {
    guard(fn_name!(), || {
        storage_arg(s, "s").map_or(std::ptr::null_mut(), |s| s.data_ptr() as *mut c_void)
    })
}

/// Size in bytes (0 for NULL).
#[no_mangle]
pub extern "C" fn storage_nbytes(s: *const storage_t) -> usize {
    guard(fn_name!(), || storage_arg(s, "s").map_or(0, |s| s.nbytes()))
}

/// The storage's device ({0, 0} for NULL).
#[no_mangle]
pub extern "C" fn storage_device(s: *const storage_t) -> tensor_device_t {
    let none = tensor_device_t {
        device_type: 0,
        device_id: 0,
    };
    guard(fn_name!(), || {
        storage_arg(s, "s").map_or(none, |s| s.device().into())
    })
}

/// True for storages the library allocated (false for wrapped memory and NULL).
#[no_mangle]
pub extern "C" fn storage_is_resizable(s: *const storage_t) -> bool {
    guard(fn_name!(), || {
        storage_arg(s, "s").is_ok_and(|s| s.is_resizable())
    })
}

/// Reallocates to `nbytes`, keeping the common prefix; the data pointer changes. Tensors
/// whose elements no longer fit fail data access with OUT_OF_BOUNDS. Not thread-safe with
/// concurrent users of the storage's data (as PyTorch's resize_). While a DLPack export
/// (tensor_to_dlpack*) of a tensor on this storage is outstanding, i.e. its consumer has
/// not called the managed tensor's deleter yet, the bytes must not move: the resize is
/// refused with NOT_RESIZABLE (the message gives the storage size and the number of
/// outstanding exports) and nothing changes.
/// Errors: NULL_POINTER, NOT_RESIZABLE (wrapped memory, or a DLPack export outstanding),
/// READ_ONLY, OVERFLOW (nbytes > PTRDIFF_MAX), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn storage_resize(s: *mut storage_t, nbytes: usize) -> tensor_status_t {
    call(fn_name!(), || {
        let s = storage_arg(s, "s")?;
        // SAFETY: the C caller keeps every other user off the storage during the call (the
        // rule documented above).
        unsafe { s.resize(nbytes) }
    })
}

/// Whether writes are refused (false for NULL).
#[no_mangle]
pub extern "C" fn storage_is_read_only(s: *const storage_t) -> bool {
    guard(fn_name!(), || {
        storage_arg(s, "s").is_ok_and(|s| s.is_read_only())
    })
}

/// Marks the storage read-only, for good: every later write through any tensor on it
/// fails with READ_ONLY. Errors: NULL_POINTER.
#[no_mangle]
pub extern "C" fn storage_mark_read_only(s: *mut storage_t) -> tensor_status_t {
    call(fn_name!(), || {
        storage_arg(s, "s")?.mark_read_only();
        Ok(())
    })
}

/// Sets the allocator used by every later storage_new(NULL) and tensor creation (the
/// struct is copied; NULL restores the built-in one). Storages keep the allocator that
/// made them. Errors: NULL_POINTER (a callback is NULL).
#[no_mangle]
pub extern "C" fn tensor_set_default_allocator(
    allocator: *const tensor_allocator_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        let a = allocator_arg(allocator)?.unwrap_or(Allocator::Builtin);
        Allocator::set_default(a);
        Ok(())
    })
}

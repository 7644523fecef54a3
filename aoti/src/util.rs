//! Reading handles and C arrays with the checks every shim function needs.

use crate::error::{err, Result};
use crate::sys::{self, tensor_t};

pub type Handle = *mut tensor_t;

/// A non-NULL handle, or NULL_POINTER naming the argument.
pub fn handle(h: Handle, what: &str) -> Result<Handle> {
    if h.is_null() {
        err(sys::TENSOR_ERR_NULL_POINTER, format!("{what} is NULL"))
    } else {
        Ok(h)
    }
}

/// A non-NULL out-pointer as a reference.
pub fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    if p.is_null() {
        err(sys::TENSOR_ERR_NULL_POINTER, format!("{what} is NULL"))
    } else {
        Ok(unsafe { &mut *p })
    }
}

/// `n` entries of a C array (ndim-like `n` in [0, 64]; NULL only when `n == 0`).
pub fn array<'a>(p: *const i64, n: i64, what: &str) -> Result<&'a [i64]> {
    if !(0..=64).contains(&n) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{what}: length {n} is outside [0, 64]"),
        );
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return err(
            sys::TENSOR_ERR_NULL_POINTER,
            format!("{what} is NULL with length {n}"),
        );
    }
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

pub fn sizes<'a>(t: Handle) -> &'a [i64] {
    let n = unsafe { sys::tensor_ndim(t) } as usize;
    if n == 0 {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(sys::tensor_sizes(t), n) }
}

pub fn strides<'a>(t: Handle) -> &'a [i64] {
    let n = unsafe { sys::tensor_ndim(t) } as usize;
    if n == 0 {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(sys::tensor_strides(t), n) }
}

pub fn dtype_name(d: i32) -> String {
    let p = unsafe { sys::tensor_dtype_name(d) };
    if p.is_null() {
        format!("dtype {d}")
    } else {
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }
}

/// A libtensor handle owned by Rust code: released on drop unless `into_raw`.
pub struct Owned(pub Handle);

impl Owned {
    pub fn into_raw(self) -> Handle {
        let h = self.0;
        std::mem::forget(self);
        h
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        unsafe { sys::tensor_release(self.0) }
    }
}

/// Runs a libtensor constructor with an out-parameter.
pub fn make(f: impl FnOnce(*mut Handle) -> sys::tensor_status_t) -> Result<Owned> {
    let mut h: Handle = std::ptr::null_mut();
    crate::error::check(f(&mut h))?;
    Ok(Owned(h))
}

/// The host device of a tensor's storage, or DEVICE naming the function.
pub fn require_cpu(t: Handle, what: &str) -> Result<()> {
    let d = unsafe { sys::storage_device(sys::tensor_storage(t)) };
    if matches!(d.device_type, 1 | 3 | 11 | 13) {
        Ok(())
    } else {
        err(
            sys::TENSOR_ERR_DEVICE,
            format!(
                "{what} is on DLPack device {}:{}; only CPU tensors are supported",
                d.device_type, d.device_id
            ),
        )
    }
}

/// Elements a layout reaches from its offset (c10's computeStorageNbytes / itemsize).
pub fn extent(sizes: &[i64], strides: &[i64]) -> Result<i64> {
    let mut e: i64 = 1;
    for (&s, &st) in sizes.iter().zip(strides) {
        if s < 0 || st < 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("negative size or stride in sizes {sizes:?} strides {strides:?}"),
            );
        }
        if s == 0 {
            return Ok(0);
        }
        e = (s - 1)
            .checked_mul(st)
            .and_then(|x| x.checked_add(e))
            .ok_or(crate::error::Error {
                status: sys::TENSOR_ERR_OVERFLOW,
                msg: format!("sizes {sizes:?} strides {strides:?} overflow int64"),
            })?;
    }
    Ok(e)
}

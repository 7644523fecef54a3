//! The part of libtensor's public C API (include/tensor.h) that libtensor_aoti calls. Every
//! libtensor function it uses is declared here and only here: build.rs reads this file to
//! make the stub library it links against (the real libtensor.so.0 is loaded at run time).

#![allow(non_camel_case_types)]
#![allow(dead_code)] // bindings: the header's constants, used or not

use std::ffi::{c_char, c_void};

pub type tensor_status_t = i32;
pub type tensor_dtype_t = i32;

pub const TENSOR_OK: tensor_status_t = 0;
pub const TENSOR_ERR_NULL_POINTER: tensor_status_t = 1;
pub const TENSOR_ERR_INVALID_ARGUMENT: tensor_status_t = 2;
pub const TENSOR_ERR_SHAPE: tensor_status_t = 4;
pub const TENSOR_ERR_DTYPE: tensor_status_t = 6;
pub const TENSOR_ERR_DEVICE: tensor_status_t = 7;
pub const TENSOR_ERR_OVERFLOW: tensor_status_t = 9;
pub const TENSOR_ERR_OVERLAP: tensor_status_t = 11;
pub const TENSOR_ERR_READ_ONLY: tensor_status_t = 13;
pub const TENSOR_ERR_IO: tensor_status_t = 14;
pub const TENSOR_ERR_INTERNAL: tensor_status_t = 99;

pub const TENSOR_CONTIGUOUS_FORMAT: i32 = 0;
pub const TENSOR_PRESERVE_FORMAT: i32 = 1;
pub const TENSOR_CHANNELS_LAST: i32 = 2;
pub const TENSOR_CHANNELS_LAST_3D: i32 = 3;

pub const TENSOR_UINT8: tensor_dtype_t = 0;
pub const TENSOR_INT8: tensor_dtype_t = 1;
pub const TENSOR_INT16: tensor_dtype_t = 2;
pub const TENSOR_INT32: tensor_dtype_t = 3;
pub const TENSOR_INT64: tensor_dtype_t = 4;
pub const TENSOR_FLOAT16: tensor_dtype_t = 5;
pub const TENSOR_FLOAT32: tensor_dtype_t = 6;
pub const TENSOR_FLOAT64: tensor_dtype_t = 7;
pub const TENSOR_COMPLEX64: tensor_dtype_t = 9;
pub const TENSOR_COMPLEX128: tensor_dtype_t = 10;
pub const TENSOR_BOOL: tensor_dtype_t = 11;
pub const TENSOR_BFLOAT16: tensor_dtype_t = 15;
pub const TENSOR_UINT16: tensor_dtype_t = 27;
pub const TENSOR_UINT32: tensor_dtype_t = 28;
pub const TENSOR_UINT64: tensor_dtype_t = 29;

/// DLPack device type of host memory.
pub const DL_CPU: i32 = 1;

#[repr(C)]
pub struct tensor_t {
    _private: [u8; 0],
}

#[repr(C)]
pub struct storage_t {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct tensor_device_t {
    pub device_type: i32,
    pub device_id: i32,
}

pub type tensor_deleter_fn = Option<unsafe extern "C" fn(data: *mut c_void, ctx: *mut c_void)>;

extern "C" {
    pub fn tensor_retain(t: *const tensor_t) -> *mut tensor_t;
    pub fn tensor_release(t: *mut tensor_t);
    pub fn tensor_last_error() -> *const c_char;
    pub fn tensor_dtype_itemsize(d: tensor_dtype_t) -> usize;
    pub fn tensor_dtype_name(d: tensor_dtype_t) -> *const c_char;
    pub fn tensor_empty_strided(
        sizes: *const i64,
        strides: *const i64,
        ndim: i64,
        dtype: tensor_dtype_t,
        out: *mut *mut tensor_t,
    ) -> tensor_status_t;
    pub fn storage_from_blob(
        data: *mut c_void,
        nbytes: usize,
        device: tensor_device_t,
        deleter: tensor_deleter_fn,
        ctx: *mut c_void,
        out: *mut *mut storage_t,
    ) -> tensor_status_t;
    pub fn storage_release(s: *mut storage_t);
    pub fn storage_nbytes(s: *const storage_t) -> usize;
    pub fn storage_device(s: *const storage_t) -> tensor_device_t;
    pub fn storage_is_read_only(s: *const storage_t) -> bool;
    pub fn tensor_from_storage(
        s: *mut storage_t,
        storage_offset: i64,
        sizes: *const i64,
        strides: *const i64,
        ndim: i64,
        dtype: tensor_dtype_t,
        out: *mut *mut tensor_t,
    ) -> tensor_status_t;
    pub fn tensor_storage(t: *const tensor_t) -> *mut storage_t;
    pub fn tensor_alias(t: *const tensor_t, out: *mut *mut tensor_t) -> tensor_status_t;
    pub fn tensor_use_count(t: *const tensor_t) -> u64;
    pub fn tensor_version(t: *const tensor_t) -> u64;
    pub fn tensor_bump_version(t: *mut tensor_t) -> tensor_status_t;
    pub fn tensor_empty_like(
        t: *const tensor_t,
        fmt: i32,
        out: *mut *mut tensor_t,
    ) -> tensor_status_t;
    pub fn tensor_suggest_memory_format(t: *const tensor_t) -> i32;
    pub fn tensor_ndim(t: *const tensor_t) -> i64;
    pub fn tensor_sizes(t: *const tensor_t) -> *const i64;
    pub fn tensor_strides(t: *const tensor_t) -> *const i64;
    pub fn tensor_size(t: *const tensor_t, dim: i64, out: *mut i64) -> tensor_status_t;
    pub fn tensor_stride(t: *const tensor_t, dim: i64, out: *mut i64) -> tensor_status_t;
    pub fn tensor_storage_offset(t: *const tensor_t) -> i64;
    pub fn tensor_numel(t: *const tensor_t) -> i64;
    pub fn tensor_dtype(t: *const tensor_t) -> tensor_dtype_t;
    pub fn tensor_data_ptr(t: *const tensor_t) -> *mut c_void;
    pub fn tensor_is_contiguous(t: *const tensor_t, fmt: i32) -> bool;
    pub fn tensor_as_strided(
        t: *const tensor_t,
        sizes: *const i64,
        strides: *const i64,
        ndim: i64,
        storage_offset: i64,
        out: *mut *mut tensor_t,
    ) -> tensor_status_t;
    pub fn tensor_clone(t: *const tensor_t, fmt: i32, out: *mut *mut tensor_t) -> tensor_status_t;
    pub fn tensor_contiguous(
        t: *const tensor_t,
        fmt: i32,
        out: *mut *mut tensor_t,
    ) -> tensor_status_t;
    pub fn tensor_copy_(dst: *mut tensor_t, src: *const tensor_t) -> tensor_status_t;
    pub fn tensor_fill_i64(dst: *mut tensor_t, value: i64) -> tensor_status_t;
    pub fn tensor_get_f64(
        t: *const tensor_t,
        index: *const i64,
        n: i64,
        out: *mut f64,
    ) -> tensor_status_t;
    pub fn tensor_get_i64(
        t: *const tensor_t,
        index: *const i64,
        n: i64,
        out: *mut i64,
    ) -> tensor_status_t;
    pub fn tensor_to_dtype(
        t: *const tensor_t,
        dtype: tensor_dtype_t,
        out: *mut *mut tensor_t,
    ) -> tensor_status_t;
}

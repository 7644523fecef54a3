//! DLPack 1.x interchange (spec section 10): the `#[repr(C)]` layouts of DLPack's public
//! ABI, zero-copy export of a tensor as a managed tensor, and zero-copy import of one.
//!
//! Conventions, chosen for the widest consumer compatibility (and as PyTorch and NumPy do):
//!
//! * Export sets `data` to the tensor's first element (storage data + offset·itemsize) and
//!   `byte_offset` to 0, so consumers that ignore `byte_offset` still read the right bytes;
//!   a tensor with no elements exports `data = NULL`. `shape` and `strides` (in elements)
//!   are arrays owned by the managed tensor. The managed tensor holds one strong reference
//!   to the tensor, released by its deleter (which the consumer calls exactly once, on any
//!   thread). The versioned form carries version {1, 1} and `DLPACK_FLAG_BITMASK_READ_ONLY`
//!   when the storage is read-only; the unversioned form cannot say "read-only", so a
//!   read-only tensor is refused there (as NumPy does) rather than handed out writable.
//! * Import accepts any `byte_offset`: `byte_offset / itemsize` becomes the storage offset
//!   and the remainder is folded into the storage's data pointer, so the storage holds
//!   exactly `storage_nbytes_needed(shape, strides, offset, itemsize)` bytes. NULL strides
//!   mean compact row-major. The new storage wraps external memory: it counts as a live
//!   external storage, and calls the producer's deleter exactly once, when its last strong
//!   reference dies, on that thread. On failure nothing is taken: the deleter is not
//!   called and the caller still owns the managed tensor.

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::layout::Layout;
use crate::shape::{self, fmt_dims, Dims};
use crate::storage::{DeleterFn, StorageImpl};
use crate::tensor_impl::{Tensor, VersionOf};
use std::ffi::c_void;

/// The DLPack ABI version this module implements (and exports).
pub const DLPACK_MAJOR_VERSION: u32 = 1;
pub const DLPACK_MINOR_VERSION: u32 = 1;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write.
pub const FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy (informational for us).
pub const FLAG_IS_COPIED: u64 = 1 << 1;

/// `DLDataTypeCode` values we map.
pub const KDL_INT: u8 = 0;
pub const KDL_UINT: u8 = 1;
pub const KDL_FLOAT: u8 = 2;
pub const KDL_BFLOAT: u8 = 4;
pub const KDL_COMPLEX: u8 = 5;
pub const KDL_BOOL: u8 = 6;

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

/// The legacy (unversioned) managed tensor.
#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// The DLPack >= 1.0 managed tensor.
#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

// ---- dtypes -----------------------------------------------------------------------------

/// Our dtype as a DLPack (code, bits, lanes = 1).
pub fn dl_dtype(d: DType) -> DLDataType {
    let code = match d {
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => KDL_INT,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => KDL_UINT,
        DType::F16 | DType::F32 | DType::F64 => KDL_FLOAT,
        DType::BF16 => KDL_BFLOAT,
        DType::C64 | DType::C128 => KDL_COMPLEX,
        DType::Bool => KDL_BOOL,
    };
    DLDataType {
        code,
        bits: (d.itemsize() * 8) as u8,
        lanes: 1,
    }
}

/// The dtype a DLPack type describes, or a DType error naming what we cannot represent.
pub fn dtype_from_dl(t: DLDataType) -> Result<DType> {
    ensure!(
        t.lanes == 1,
        DType,
        "DLPack vector types are not supported (dtype code {}, bits {}, lanes {}; only lanes == 1)",
        t.code,
        t.bits,
        t.lanes
    );
    DType::ALL
        .iter()
        .copied()
        .find(|&d| dl_dtype(d) == t)
        .ok_or_else(|| {
            Error::from_fmt(
                Status::DType,
                format_args!(
                    "unsupported DLPack dtype (code {}, bits {}, lanes {})",
                    t.code, t.bits, t.lanes
                ),
            )
        })
}

// ---- export -----------------------------------------------------------------------------

fn oom(what: &str) -> Error {
    Error::from_fmt(
        Status::OutOfMemory,
        format_args!("failed to allocate the {what}"),
    )
}

/// `Box::new` that reports allocation failure instead of aborting.
fn try_box<T>(v: T) -> Result<Box<T>> {
    let layout = std::alloc::Layout::new::<T>();
    debug_assert!(layout.size() > 0);
    // SAFETY: non-zero-sized layout; on success the block is initialised with `v` and
    // handed to Box, which frees it with the same (global) allocator and layout.
    unsafe {
        let p = std::alloc::alloc(layout) as *mut T;
        if p.is_null() {
            return Err(oom("DLPack managed tensor"));
        }
        p.write(v);
        Ok(Box::from_raw(p))
    }
}

/// What an exported managed tensor points to: the managed struct itself (first, so a
/// pointer to it is a pointer to this), the strong reference keeping the tensor alive, and
/// the shape and strides arrays.
#[repr(C)]
struct Exported<M> {
    managed: M,
    _tensor: Tensor,
    dims: Vec<i64>,
}

impl<M> Drop for Exported<M> {
    fn drop(&mut self) {
        self._tensor.storage().unpin_export();
    }
}

/// The DLTensor describing `t` (shape/strides pointers filled in later), once its layout
/// is checked against the storage as it is now (it may have been shrunk since `t` was
/// made): the consumer will read and write every byte the layout reaches.
fn describe(t: &Tensor) -> Result<DLTensor> {
    t.check_in_bounds()?;
    let dev = t.device();
    Ok(DLTensor {
        data: if t.numel() == 0 {
            std::ptr::null_mut()
        } else {
            t.data_ptr() as *mut c_void
        },
        device: DLDevice {
            device_type: dev.device_type,
            device_id: dev.device_id,
        },
        ndim: t.ndim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    })
}

/// Boxes `managed` with `t` and its dims; returns the managed pointer (manager_ctx, shape
/// and strides set by `finish`).
fn export_boxed<M>(
    t: Tensor,
    managed: M,
    finish: impl FnOnce(&mut M, *mut c_void, *mut i64, *mut i64),
) -> Result<*mut M> {
    let nd = t.ndim();
    let mut dims = Vec::new();
    dims.try_reserve_exact(2 * nd)
        .map_err(|_| oom("DLPack shape and strides"))?;
    dims.extend_from_slice(t.sizes());
    dims.extend_from_slice(t.strides());
    // Unpinned when the Exported is dropped: by the deleter, or just below on failure.
    t.storage().pin_export();
    let raw = Box::into_raw(try_box(Exported {
        managed,
        _tensor: t,
        dims,
    })?);
    // SAFETY: `raw` is the live box just made; the dims buffer is owned by it and never
    // reallocated.
    unsafe {
        let shape = (*raw).dims.as_mut_ptr();
        let strides = shape.add(nd);
        finish(&mut (*raw).managed, raw as *mut c_void, shape, strides);
    }
    Ok(raw as *mut M)
}

unsafe extern "C" fn delete_exported_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: manager_ctx is the Exported box made by `to_dlpack_versioned`; the DLPack
    // contract is that the deleter runs once.
    drop(Box::from_raw(
        (*m).manager_ctx as *mut Exported<DLManagedTensorVersioned>,
    ));
}

unsafe extern "C" fn delete_exported(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: as above, for `to_dlpack_unversioned`.
    drop(Box::from_raw(
        (*m).manager_ctx as *mut Exported<DLManagedTensor>,
    ));
}

/// Exports `t` (whose strong reference the managed tensor takes over) as a versioned
/// managed tensor; the consumer frees it by calling its deleter once.
pub fn to_dlpack_versioned(t: Tensor) -> Result<*mut DLManagedTensorVersioned> {
    let dl = describe(&t)?;
    let flags = if t.storage().is_read_only() {
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
        dl_tensor: dl,
    };
    export_boxed(t, managed, |m, ctx, shape, strides| {
        m.manager_ctx = ctx;
        m.dl_tensor.shape = shape;
        m.dl_tensor.strides = strides;
    })
}

/// Exports `t` as a legacy (unversioned) managed tensor. A read-only tensor is refused:
/// the legacy struct has no way to say so (use the versioned export).
pub fn to_dlpack_unversioned(t: Tensor) -> Result<*mut DLManagedTensor> {
    ensure!(
        !t.storage().is_read_only(),
        ReadOnly,
        "cannot export a read-only tensor as an unversioned DLManagedTensor (it cannot signal read-only); use tensor_to_dlpack"
    );
    let managed = DLManagedTensor {
        dl_tensor: describe(&t)?,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_exported),
    };
    export_boxed(t, managed, |m, ctx, shape, strides| {
        m.manager_ctx = ctx;
        m.dl_tensor.shape = shape;
        m.dl_tensor.strides = strides;
    })
}

// ---- import -----------------------------------------------------------------------------

/// Storage deleter of an imported versioned tensor: hands it back to its producer.
unsafe extern "C" fn release_imported_versioned(_data: *mut c_void, ctx: *mut c_void) {
    let m = ctx as *mut DLManagedTensorVersioned;
    // SAFETY: ctx is the managed tensor we took ownership of; the storage calls this once.
    if let Some(f) = (*m).deleter {
        f(m);
    }
}

unsafe extern "C" fn release_imported(_data: *mut c_void, ctx: *mut c_void) {
    let m = ctx as *mut DLManagedTensor;
    // SAFETY: as above.
    if let Some(f) = (*m).deleter {
        f(m);
    }
}

/// Builds a tensor over the memory `dl` describes; on success the storage owns `ctx` and
/// calls `release(data, ctx)` once at its last strong reference. On failure nothing is
/// called.
///
/// # Safety
/// `dl`'s shape (and strides, when non-NULL) point to `ndim` readable values.
unsafe fn import(
    dl: &DLTensor,
    read_only: bool,
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
    let dtype = dtype_from_dl(dl.dtype)?;
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
        std::slice::from_raw_parts(dl.shape, nd)
    };
    shape::check_sizes(sizes)?;
    let compact: Dims;
    let strides: &[i64] = if dl.strides.is_null() {
        compact = shape::contiguous_strides(sizes)?;
        &compact
    } else if nd == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(dl.strides, nd)
    };
    shape::check_strides(strides)?;

    let itemsize = dtype.itemsize() as u64;
    let offset = i64::try_from(dl.byte_offset / itemsize).map_err(|_| {
        Error::from_fmt(
            Status::Overflow,
            format_args!("DLPack byte_offset {} overflows int64", dl.byte_offset),
        )
    })?;
    let rem = (dl.byte_offset % itemsize) as usize;
    let numel = shape::numel(sizes)?;
    let nbytes =
        shape::storage_nbytes_needed(sizes, strides, offset, itemsize as usize).map_err(|e| {
            Error::from_fmt(
                e.status,
                format_args!(
                    "{} (DLPack sizes {}, strides {}, byte_offset {})",
                    e.message,
                    fmt_dims(sizes),
                    fmt_dims(strides),
                    dl.byte_offset
                ),
            )
        })?;
    let data = dl.data as *mut u8;
    ensure!(
        !data.is_null() || numel == 0,
        NullPointer,
        "DLPack data is NULL for a tensor of sizes {} ({numel} elements)",
        fmt_dims(sizes)
    );
    let base = if data.is_null() {
        data
    } else {
        // The sub-element part of byte_offset moves the storage start; the storage must
        // then fit in the address space.
        let wraps = (data as usize)
            .checked_add(rem)
            .and_then(|b| b.checked_add(nbytes as usize))
            .is_none();
        ensure!(
            !wraps,
            Overflow,
            "DLPack data {:p} + byte_offset {} + {nbytes} bytes wraps the address space",
            data,
            dl.byte_offset
        );
        data.wrapping_add(rem)
    };
    let storage = StorageImpl::from_blob(
        base as *mut c_void,
        nbytes as usize,
        device,
        Some(release),
        ctx,
    )?;
    if read_only {
        storage.mark_read_only();
    }
    // Validated above (dims, signs, numel, extent); the storage is exactly the extent.
    Layout::new(sizes, strides, offset)
        .and_then(|layout| Tensor::from_valid(&storage, layout, numel, dtype, VersionOf::Storage))
        .inspect_err(|_| {
            // We hold the only reference: the producer keeps ownership.
            storage.disarm();
        })
}

/// Imports a versioned managed tensor (major version 1). On success the tensor owns `src`
/// (its deleter runs once, when the storage's last strong reference dies); on failure the
/// caller keeps it.
///
/// # Safety
/// `src` is NULL or a live managed tensor whose DLTensor fields are valid.
pub unsafe fn from_dlpack_versioned(src: *mut DLManagedTensorVersioned) -> Result<Tensor> {
    ensure!(!src.is_null(), NullPointer, "argument 'src' is NULL");
    let m = &*src;
    ensure!(
        m.version.major == DLPACK_MAJOR_VERSION,
        InvalidArgument,
        "unsupported DLPack version {}.{} (this library reads major version {DLPACK_MAJOR_VERSION})",
        m.version.major,
        m.version.minor
    );
    import(
        &m.dl_tensor,
        m.flags & FLAG_READ_ONLY != 0,
        release_imported_versioned,
        src as *mut c_void,
    )
}

/// Imports a legacy (unversioned) managed tensor; ownership as in
/// [`from_dlpack_versioned`].
///
/// # Safety
/// As [`from_dlpack_versioned`].
pub unsafe fn from_dlpack_unversioned(src: *mut DLManagedTensor) -> Result<Tensor> {
    ensure!(!src.is_null(), NullPointer, "argument 'src' is NULL");
    import(
        &(*src).dl_tensor,
        false,
        release_imported,
        src as *mut c_void,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;
    use crate::tensor_impl::MemoryFormat;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A producer's deleter that counts its calls in the AtomicUsize at manager_ctx.
    unsafe extern "C" fn count_versioned(m: *mut DLManagedTensorVersioned) {
        (*((*m).manager_ctx as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst);
    }
    unsafe extern "C" fn count_unversioned(m: *mut DLManagedTensor) {
        (*((*m).manager_ctx as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst);
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
        t.storage().resize(8).unwrap();
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
        t.storage().resize(16).unwrap();
        let m = to_dlpack_versioned(t.clone()).unwrap();
        assert_eq!(t.storage().export_count(), 1);
        assert_eq!(
            t.storage().resize(32).unwrap_err().status,
            Status::NotResizable
        );
        // SAFETY: the managed tensor just exported; its deleter runs once.
        unsafe { ((*m).deleter.unwrap())(m) };
        assert_eq!(t.storage().export_count(), 0);
        t.storage().resize(32).unwrap();
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
            assert_eq!((*m).version, DLPackVersion { major: 1, minor: 1 });
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
        assert!(back.storage().is_external());
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
        let want: [(DType, u8, u8); 15] = [
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
        ];
        assert_eq!(want.len(), DType::ALL.len());
        for (d, code, bits) in want {
            let dl = DLDataType {
                code,
                bits,
                lanes: 1,
            };
            assert_eq!(dl_dtype(d), dl, "{d:?}");
            assert_eq!(dtype_from_dl(dl).unwrap(), d);
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
        ] {
            let e = dtype_from_dl(DLDataType {
                code,
                bits,
                lanes: 1,
            })
            .unwrap_err();
            assert_eq!(e.status, Status::DType);
            assert!(
                e.message.contains(&format!("code {code}, bits {bits}")),
                "{}",
                e.message
            );
        }
        let e = dtype_from_dl(DLDataType {
            code: 2,
            bits: 32,
            lanes: 4,
        })
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

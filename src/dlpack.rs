//! DLPack 1.x interchange, in Rust types: the dtype table, the export of a tensor (kept
//! alive and its bytes pinned while a consumer holds it) and the import of memory a
//! producer describes. The C layouts (`DLTensor`, the managed tensors) and the glue that
//! reads and writes them live in `crate::ffi::dlpack`.
//!
//! Conventions, chosen for the widest consumer compatibility (and as PyTorch and NumPy do):
//!
//! * Export sets `data` to the tensor's first element (storage data + offset·itemsize) and
//!   `byte_offset` to 0, so consumers that ignore `byte_offset` still read the right bytes;
//!   a tensor with no elements exports `data = NULL`. `shape` and `strides` (in elements)
//!   are arrays owned by the managed tensor. The managed tensor holds one strong reference
//!   to the tensor, released by its deleter (which the consumer calls exactly once, on any
//!   thread). The versioned form carries version {1, 3} and `DLPACK_FLAG_BITMASK_READ_ONLY`
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
use crate::layout::{CheckedLayout, Strides};
use crate::shape::{self, fmt_dims};
use crate::storage::{Blob, DeleterFn};
use crate::tensor_impl::Tensor;
use std::ffi::c_void;

/// `DLDataTypeCode` values (dlpack.h 1.3).
pub const KDL_INT: u8 = 0;
pub const KDL_UINT: u8 = 1;
pub const KDL_FLOAT: u8 = 2;
pub const KDL_BFLOAT: u8 = 4;
pub const KDL_COMPLEX: u8 = 5;
pub const KDL_BOOL: u8 = 6;
pub const KDL_FLOAT8_E3M4: u8 = 7;
pub const KDL_FLOAT8_E4M3: u8 = 8;
pub const KDL_FLOAT8_E4M3B11FNUZ: u8 = 9;
pub const KDL_FLOAT8_E4M3FN: u8 = 10;
pub const KDL_FLOAT8_E4M3FNUZ: u8 = 11;
pub const KDL_FLOAT8_E5M2: u8 = 12;
pub const KDL_FLOAT8_E5M2FNUZ: u8 = 13;
pub const KDL_FLOAT8_E8M0FNU: u8 = 14;
pub const KDL_FLOAT6_E2M3FN: u8 = 15;
pub const KDL_FLOAT6_E3M2FN: u8 = 16;
pub const KDL_FLOAT4_E2M1FN: u8 = 17;

// ---- dtypes -----------------------------------------------------------------------------

/// Our dtype as a DLPack type (code, bits, lanes). Every dtype has lanes 1 except
/// float4_e2m1fn_x2: `kDLFloat4_e2m1fn` with bits 4 and lanes 2, packed (no
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`), as PyTorch 2.15 exports it; shape and
/// strides count bytes (pairs), so element `i` of the DLPack view is the low nibble of
/// byte `i / 2` for even `i`, the high one for odd `i`.
pub fn dl_type(d: DType) -> (u8, u8, u16) {
    let code = match d {
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => KDL_INT,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => KDL_UINT,
        DType::F16 | DType::F32 | DType::F64 => KDL_FLOAT,
        DType::BF16 => KDL_BFLOAT,
        DType::C64 | DType::C128 => KDL_COMPLEX,
        DType::Bool => KDL_BOOL,
        DType::F8E5M2 => KDL_FLOAT8_E5M2,
        DType::F8E4M3Fn => KDL_FLOAT8_E4M3FN,
        DType::F8E5M2Fnuz => KDL_FLOAT8_E5M2FNUZ,
        DType::F8E4M3Fnuz => KDL_FLOAT8_E4M3FNUZ,
        DType::F8E8M0Fnu => KDL_FLOAT8_E8M0FNU,
        DType::F4E2M1FnX2 => return (KDL_FLOAT4_E2M1FN, 4, 2),
    };
    (code, (d.itemsize() * 8) as u8, 1)
}

/// The dtype a DLPack type (code, bits, lanes) describes, or a DType error naming what we
/// cannot represent. `padded`: the producer set `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`
/// (one sub-byte value per byte), which no dtype of ours is, so a sub-byte type with it
/// is refused; for other types the flag means nothing and is ignored.
pub fn dtype_from_dl(code: u8, bits: u8, lanes: u16, padded: bool) -> Result<DType> {
    let found = DType::ALL
        .iter()
        .copied()
        .find(|&d| dl_type(d) == (code, bits, lanes));
    match found {
        Some(DType::F4E2M1FnX2) if padded => bail!(
            DType,
            "DLPack float4_e2m1fn with DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (one value per byte) is not supported: only the packed pairs of float4_e2m1fn_x2 (code 17, bits 4, lanes 2)"
        ),
        Some(d) => Ok(d),
        None if lanes != 1 => bail!(
            DType,
            "DLPack vector types are not supported (dtype code {code}, bits {bits}, lanes {lanes}; only lanes == 1, and lanes 2 for float4_e2m1fn pairs)"
        ),
        None => {
            let what = match code {
                KDL_FLOAT8_E3M4 => " (float8_e3m4 has no libtensor dtype)",
                KDL_FLOAT8_E4M3 => " (float8_e4m3 has no libtensor dtype)",
                KDL_FLOAT8_E4M3B11FNUZ => " (float8_e4m3b11fnuz has no libtensor dtype)",
                KDL_FLOAT6_E2M3FN | KDL_FLOAT6_E3M2FN => " (float6 has no libtensor dtype)",
                KDL_FLOAT4_E2M1FN => {
                    " (float4_e2m1fn is supported only as packed pairs: bits 4, lanes 2)"
                }
                _ => "",
            };
            bail!(
                DType,
                "unsupported DLPack dtype (code {code}, bits {bits}, lanes {lanes}){what}"
            )
        }
    }
}

// ---- export -----------------------------------------------------------------------------

fn oom(what: &str) -> Error {
    Error::from_fmt(
        Status::OutOfMemory,
        format_args!("failed to allocate the {what}"),
    )
}

/// A tensor handed to a DLPack consumer: holds one strong reference and the shape and
/// strides arrays, and keeps the storage's bytes from moving (storage_resize refuses)
/// until it is dropped (by the consumer's call of the managed tensor's deleter).
pub struct Export {
    tensor: Tensor,
    /// sizes, then strides (in elements); never reallocated, so pointers into it stay valid.
    dims: Vec<i64>,
}

impl Export {
    /// Takes over `t`'s strong reference, once its layout is checked against the storage as
    /// it is now (it may have been shrunk since `t` was made): the consumer will read and
    /// write every byte the layout reaches.
    pub fn new(t: Tensor) -> Result<Export> {
        t.check_in_bounds()?;
        let nd = t.ndim();
        let mut dims = Vec::new();
        dims.try_reserve_exact(2 * nd)
            .map_err(|_| oom("DLPack shape and strides"))?;
        dims.extend_from_slice(t.sizes());
        dims.extend_from_slice(t.strides());
        // Unpinned when the Export is dropped.
        t.storage().pin_export();
        Ok(Export { tensor: t, dims })
    }

    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// The first element's address (NULL for a tensor with no elements).
    pub fn data(&self) -> *mut c_void {
        if self.tensor.numel() == 0 {
            std::ptr::null_mut()
        } else {
            self.tensor.data_ptr() as *mut c_void
        }
    }

    /// The shape array (ndim values), owned by `self`.
    pub fn shape_ptr(&mut self) -> *mut i64 {
        self.dims.as_mut_ptr()
    }

    /// The strides array (ndim values, in elements), owned by `self`.
    pub fn strides_ptr(&mut self) -> *mut i64 {
        self.dims[self.tensor.ndim()..].as_mut_ptr()
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        self.tensor.storage().unpin_export();
    }
}

// ---- import -----------------------------------------------------------------------------

/// What a producer describes, decoded from its C struct (`crate::ffi::dlpack`).
pub struct Import<'a> {
    pub data: *mut c_void,
    pub device: Device,
    pub dtype: DType,
    pub sizes: &'a [i64],
    /// `None`: compact row-major.
    pub strides: Option<&'a [i64]>,
    pub byte_offset: u64,
    pub read_only: bool,
}

/// Builds a tensor over the memory `src` describes; on success the storage owns `ctx` and
/// calls `release(data, ctx)` once at its last strong reference. On failure nothing is
/// called.
pub fn import(src: Import<'_>, release: DeleterFn, ctx: *mut c_void) -> Result<Tensor> {
    let Import {
        data,
        device,
        dtype,
        sizes,
        strides,
        byte_offset,
        read_only,
    } = src;
    let itemsize = dtype.itemsize() as u64;
    let offset = i64::try_from(byte_offset / itemsize).map_err(|_| {
        Error::from_fmt(
            Status::Overflow,
            format_args!("DLPack byte_offset {byte_offset} overflows int64"),
        )
    })?;
    let rem = (byte_offset % itemsize) as usize;
    let strides = Strides::elements_or_contiguous(strides);
    let layout = CheckedLayout::new(sizes, strides, offset, dtype).map_err(|e| {
        if e.status != Status::Overflow {
            return e;
        }
        // The strides the layout was checked with (compact ones computed for NULL), shown
        // without a String of their own: this runs when memory may have run out.
        let computed;
        let shown: &[i64] = match strides {
            Strides::Elements(st) => st,
            _ => match shape::contiguous_strides(sizes) {
                Ok(st) => {
                    computed = st;
                    &computed
                }
                Err(_) => return e,
            },
        };
        Error::from_fmt(
            e.status,
            format_args!(
                "{} (DLPack sizes {}, strides {}, byte_offset {byte_offset})",
                e.text(),
                fmt_dims(sizes),
                fmt_dims(shown),
            ),
        )
    })?;
    let (numel, nbytes) = (layout.numel(), layout.nbytes());
    let data = data as *mut u8;
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
            .and_then(|b| b.checked_add(nbytes))
            .is_none();
        ensure!(
            !wraps,
            Overflow,
            "DLPack data {:p} + byte_offset {} + {nbytes} bytes wraps the address space",
            data,
            byte_offset
        );
        data.wrapping_add(rem)
    };
    let blob = Blob {
        data: base as *mut c_void,
        device,
        deleter: Some(release),
        ctx,
    };
    let t = Tensor::wrap(blob, layout)?;
    if read_only {
        t.storage().mark_read_only();
    }
    Ok(t)
}

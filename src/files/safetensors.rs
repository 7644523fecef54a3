//! `.safetensors` files through the format's reference crate (`safetensors` on crates.io):
//! its header validation is the format's own (size bounds, JSON, offsets contiguous from 0
//! to the end of the file so none overlap or fall outside, shapes matching byte lengths,
//! overflow-checked), and its writer produces what the Python package reads.
//!
//! Loading maps the file once, read-only; every tensor is a view over that one storage
//! (no byte copied). A tensor whose data offset is not a multiple of its element size
//! (the format does not promise alignment; files written by the reference writers are
//! aligned, since they pad the header to 8 bytes and order tensors by decreasing
//! alignment) is copied into its own aligned block instead: reading a misaligned element
//! is undefined behaviour in the kernels. Dtypes libtensor lacks (float8, float4, float6)
//! are refused by name (DType); complex128 has no safetensors dtype, so saving one is
//! refused.

use super::mmap::{map_whole_file, MapMode};
use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::shape;
use crate::storage::Storage;
use crate::tensor_impl::Tensor;
use ::safetensors::tensor::{Dtype, Metadata, SafeTensorError, SafeTensors, TensorInfo};
use std::ffi::{CStr, CString};
use std::path::Path;

/// One tensor of a parsed file: absolute byte range in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub begin: usize,
    pub end: usize,
}

fn to_ours(d: Dtype) -> Result<DType> {
    Ok(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::U16 => DType::U16,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::I32 => DType::I32,
        Dtype::U32 => DType::U32,
        Dtype::F32 => DType::F32,
        Dtype::C64 => DType::C64,
        Dtype::F64 => DType::F64,
        Dtype::I64 => DType::I64,
        Dtype::U64 => DType::U64,
        Dtype::F8_E5M2 => DType::F8E5M2,
        Dtype::F8_E4M3 => DType::F8E4M3Fn,
        Dtype::F8_E5M2FNUZ => DType::F8E5M2Fnuz,
        Dtype::F8_E4M3FNUZ => DType::F8E4M3Fnuz,
        Dtype::F8_E8M0 => DType::F8E8M0Fnu,
        other => bail!(
            DType,
            "safetensors dtype {other:?} is not supported by libtensor"
        ),
    })
}

fn to_theirs(d: DType) -> Result<Dtype> {
    Ok(match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::U16 => Dtype::U16,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I32 => Dtype::I32,
        DType::U32 => Dtype::U32,
        DType::F32 => Dtype::F32,
        DType::C64 => Dtype::C64,
        DType::F64 => Dtype::F64,
        DType::I64 => Dtype::I64,
        DType::U64 => Dtype::U64,
        DType::F8E5M2 => Dtype::F8_E5M2,
        DType::F8E4M3Fn => Dtype::F8_E4M3,
        DType::F8E5M2Fnuz => Dtype::F8_E5M2FNUZ,
        DType::F8E4M3Fnuz => Dtype::F8_E4M3FNUZ,
        DType::F8E8M0Fnu => Dtype::F8_E8M0,
        DType::C128 => bail!(DType, "the safetensors format has no complex128 dtype"),
        // safetensors' F4 counts single 4-bit values; ours are pairs.
        DType::F4E2M1FnX2 => bail!(
            DType,
            "float4_e2m1fn_x2 is not saved to safetensors (its F4 dtype counts single 4-bit values, not pairs)"
        ),
    })
}

fn format_error(e: SafeTensorError) -> Error {
    let status = match &e {
        SafeTensorError::ValidationOverflow => Status::Overflow,
        // An unknown dtype name fails inside the JSON decoding of the header.
        SafeTensorError::InvalidHeaderDeserialization(j) if j.to_string().contains("variant") => {
            Status::DType
        }
        _ => Status::Io,
    };
    Error::from_fmt(status, format_args!("invalid safetensors file: {e}"))
}

/// Parses and validates the safetensors file in `bytes` (the whole file) with the
/// reference crate; the tensors in data order. Errors: Io (malformed, or a tensor name with
/// a NUL byte), DType (a dtype libtensor lacks), Overflow (shape), InvalidArgument (more than
/// 64 dims).
pub fn parse(bytes: &[u8]) -> Result<Vec<Entry>> {
    let (n, meta) = SafeTensors::read_metadata(bytes).map_err(format_error)?;
    // read_metadata checked 8 + n + data length == bytes.len().
    let data_start = 8 + n;
    let mut out = Vec::new();
    for (index, name) in meta.offset_keys().into_iter().enumerate() {
        let Some(info) = meta.info(&name) else {
            continue;
        };
        // JSON allows "\u0000" in a name; a C string ends there, so the tensor could never
        // be looked up by name (and two names could become one).
        if let Some(at) = name.bytes().position(|b| b == 0) {
            bail!(
                Io,
                "tensor {index} (in data order) has a name with a NUL byte at byte {at} (\"{}\"): tensor names must be C strings",
                name.escape_debug()
            );
        }
        let dtype = to_ours(info.dtype).map_err(|e| {
            Error::from_fmt(e.status, format_args!("tensor '{name}': {}", e.text()))
        })?;
        shape::check_ndim(info.shape.len())?;
        let mut dims = Vec::with_capacity(info.shape.len());
        for &d in &info.shape {
            ensure!(
                d <= i64::MAX as usize,
                Overflow,
                "tensor '{name}': dimension {d} overflows int64"
            );
            dims.push(d as i64);
        }
        out.push(Entry {
            name,
            dtype,
            shape: dims,
            begin: data_start + info.data_offsets.0,
            end: data_start + info.data_offsets.1,
        });
    }
    Ok(out)
}

/// The tensors of the safetensors file held in `storage` (the whole file), in data order:
/// views over it, or aligned copies of misaligned tensors (see the module doc).
pub fn tensors_from_storage(storage: &Storage) -> Result<Vec<(String, Tensor)>> {
    let bytes = super::storage_bytes(storage, "safetensors")?;
    let ptr = storage.data_ptr();
    let entries = parse(bytes)?;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let isz = e.dtype.itemsize();
        let t = if e.begin % isz == 0 && (ptr as usize).is_multiple_of(isz) {
            Tensor::from_storage(storage, (e.begin / isz) as i64, &e.shape, None, e.dtype)?
        } else {
            let t = Tensor::empty(&e.shape, e.dtype)?;
            if e.end > e.begin {
                // SAFETY: the fresh contiguous tensor owns end - begin bytes (validated
                // against the shape by the parser).
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr.add(e.begin), t.data_ptr(), e.end - e.begin)
                };
            }
            t
        };
        out.push((e.name, t));
    }
    Ok(out)
}

/// A loaded file: its tensors in data order, their names as C strings (what the C API
/// hands out), and an index of them sorted by name for lookups. The tensors hold the
/// file's mapping (those copied for alignment do not).
pub struct SafetensorsFile {
    names: Vec<CString>,
    tensors: Vec<Tensor>,
    /// Indices into `names` / `tensors`, sorted by name.
    by_name: Vec<usize>,
}

impl SafetensorsFile {
    /// Indexes `named` (in data order) by name.
    fn new(named: Vec<(String, Tensor)>) -> Result<SafetensorsFile> {
        let mut names = Vec::with_capacity(named.len());
        let mut tensors = Vec::with_capacity(named.len());
        for (name, t) in named {
            // The parser refused names with a NUL byte.
            let name = CString::new(name).map_err(|e| {
                Error::new(
                    Status::Io,
                    format!(
                        "a tensor name holds a NUL byte at byte {}",
                        e.nul_position()
                    ),
                )
            })?;
            names.push(name);
            tensors.push(t);
        }
        let mut by_name: Vec<usize> = (0..names.len()).collect();
        by_name.sort_by(|&a, &b| names[a].cmp(&names[b]));
        Ok(SafetensorsFile {
            names,
            tensors,
            by_name,
        })
    }

    /// Number of tensors.
    pub fn count(&self) -> usize {
        self.tensors.len()
    }

    /// Name of tensor `i` (data order).
    pub fn name(&self, i: usize) -> Option<&CStr> {
        self.names.get(i).map(CString::as_c_str)
    }

    /// Tensor `i` (data order).
    pub fn tensor(&self, i: usize) -> Option<&Tensor> {
        self.tensors.get(i)
    }

    /// The tensor named `name`.
    pub fn get(&self, name: &CStr) -> Option<&Tensor> {
        self.by_name
            .binary_search_by(|&i| self.names[i].as_c_str().cmp(name))
            .ok()
            .map(|k| &self.tensors[self.by_name[k]])
    }
}

/// Maps `path` read-only and makes its tensors, indexed by name.
pub fn load(path: &Path) -> Result<SafetensorsFile> {
    let storage = map_whole_file(path, MapMode::ReadOnly, ".safetensors")?;
    let tensors = tensors_from_storage(&storage).map_err(|e| {
        Error::from_fmt(e.status, format_args!("'{}': {}", path.display(), e.text()))
    })?;
    SafetensorsFile::new(tensors)
}

/// Writes the named tensors to `path` (non-contiguous ones are made contiguous first), in
/// the reference writer's order (decreasing alignment, then name, so every tensor starts
/// aligned) with the header padded to 8 bytes. The header is the crate's `Metadata`
/// (validated by it) serialized as JSON; the data is streamed from the tensors into
/// [`write_atomically`](super::write_atomically).
/// Errors: InvalidArgument (duplicate or reserved name), DType (complex128), Device,
/// OutOfBounds, Overflow, OutOfMemory, Io.
pub fn save(path: &Path, named: &[(&str, &Tensor)]) -> Result<()> {
    let mut items: Vec<(&str, Dtype, Tensor, usize)> = Vec::with_capacity(named.len());
    for &(name, t) in named {
        ensure!(
            name != "__metadata__",
            InvalidArgument,
            "tensor name '__metadata__' is reserved by the safetensors format"
        );
        ensure!(
            !items.iter().any(|it| it.0 == name),
            InvalidArgument,
            "tensor name '{name}' given twice"
        );
        let dtype = to_theirs(t.dtype()).map_err(|e| {
            Error::from_fmt(e.status, format_args!("tensor '{name}': {}", e.text()))
        })?;
        let (c, nbytes) = super::npy::contiguous_bytes(t)?;
        items.push((name, dtype, c, nbytes));
    }
    items.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut infos = Vec::with_capacity(items.len());
    let mut offset = 0usize;
    for (name, dtype, t, nbytes) in &items {
        let info = TensorInfo {
            dtype: *dtype,
            shape: t.sizes().iter().map(|&d| d as usize).collect(),
            data_offsets: (offset, offset.saturating_add(*nbytes)),
        };
        offset = offset
            .checked_add(*nbytes)
            .filter(|&o| o <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::new(
                    Status::Overflow,
                    "the tensors' total size overflows the address space",
                )
            })?;
        infos.push((name.to_string(), info));
    }
    let meta = Metadata::new(None, infos).map_err(format_error)?;
    let mut header = serde_json::to_vec(&meta).map_err(|e| {
        Error::from_fmt(
            Status::Io,
            format_args!(
                "cannot serialize the safetensors header of '{}': {e}",
                path.display()
            ),
        )
    })?;
    header.resize(header.len().div_ceil(8) * 8, b' ');
    let mut parts: Vec<&[u8]> = Vec::with_capacity(items.len() + 2);
    let len = (header.len() as u64).to_le_bytes();
    parts.push(&len);
    parts.push(&header);
    for (_, _, t, nbytes) in &items {
        if *nbytes > 0 {
            // SAFETY: a contiguous host tensor (contiguous_bytes checked it) has nbytes
            // readable bytes at data_ptr().
            parts.push(unsafe { std::slice::from_raw_parts(t.data_ptr(), *nbytes) });
        }
    }
    super::write_atomically(path, &parts)
}

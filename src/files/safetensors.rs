//! `.safetensors` files through the format's reference crate (`safetensors` on crates.io):
//! its header validation is the format's own (size bounds, JSON, offsets contiguous from 0
//! to the end of the file so none overlap or fall outside, shapes matching byte lengths,
//! overflow-checked), and its writer produces what the Python package reads.
//!
//! Loading maps the file once, in one of the three map modes (read-only, private
//! copy-on-write, or shared read-write); every tensor is a view over that one storage
//! (no byte copied). A tensor whose data offset is not a multiple of its element size
//! (the format does not promise alignment; files written by the reference writers are
//! aligned, since they pad the header to 8 bytes and order tensors by decreasing
//! alignment) is copied into its own aligned block instead: reading a misaligned element
//! is undefined behaviour in the kernels. Dtypes libtensor lacks (F6_E2M3, F6_E3M2) are
//! refused by name (DType); complex128 has no safetensors dtype, so saving one is refused.
//! F4 counts single 4-bit values and float4_e2m1fn_x2 pairs of them along the last dim:
//! F4 `[.., 2n]` is float4_e2m1fn_x2 `[.., n]` over the same bytes, both ways, as the
//! Python package's `safetensors.torch` maps it.
//!
//! The header's `__metadata__` (string keys to string values, as the format defines it) is
//! kept, sorted by key, and written back by [`save`] with the tensors.

use super::mmap::MapMode;
use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::shape;
use crate::storage::Storage;
use crate::tensor_impl::Tensor;
use ::safetensors::tensor::{Dtype, Metadata, SafeTensorError, SafeTensors, TensorInfo};
use std::ffi::{CStr, CString};
use std::path::Path;

/// An F4 entry's shape (single 4-bit values) as float4_e2m1fn_x2's (pairs): the last dim
/// halved, as PyTorch's safetensors loader does; an odd last dim (a pair split across
/// rows) is refused (DType). The crate already refused a shape whose values do not fill
/// whole bytes (a 0-dim F4 among them).
fn f4_pairs(name: &str, dims: &mut [i64]) -> Result<()> {
    match dims.last_mut() {
        Some(last) if *last % 2 == 0 => {
            *last /= 2;
            Ok(())
        }
        _ => bail!(
            DType,
            "tensor '{name}': safetensors dtype F4 with shape {dims:?}: libtensor reads F4 as float4_e2m1fn_x2 (pairs of values along the last dim, as PyTorch does), which needs an even last dim"
        ),
    }
}

/// float4_e2m1fn_x2's shape `sizes` (pairs) as the F4 shape a file holds (single values):
/// the last dim doubled, as PyTorch's safetensors saver writes it. A 0-dim tensor has no
/// last dim to double (PyTorch's saver refuses it too: DType).
fn f4_values(name: &str, sizes: &[i64]) -> Result<Vec<usize>> {
    let mut shape: Vec<usize> = sizes.iter().map(|&d| d as usize).collect();
    let Some(last) = shape.last_mut() else {
        bail!(
            DType,
            "tensor '{name}': a 0-dim float4_e2m1fn_x2 tensor cannot be saved as safetensors F4 (its shape counts single values along the last dim, which a 0-dim tensor lacks)"
        );
    };
    let pairs = *last;
    *last = pairs.checked_mul(2).ok_or_else(|| {
        Error::from_fmt(
            Status::Overflow,
            format_args!("tensor '{name}': the F4 last dim (twice {pairs}) overflows"),
        )
    })?;
    Ok(shape)
}

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
        // F4 counts single values, float4_e2m1fn_x2 pairs: `parse` halves the last dim.
        Dtype::F4 => DType::F4E2M1FnX2,
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
        // F4 counts single values: `save` doubles the last dim.
        DType::F4E2M1FnX2 => Dtype::F4,
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

/// A parsed header: the tensors in data order, and the `__metadata__` pairs sorted by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub entries: Vec<Entry>,
    pub metadata: Vec<(String, String)>,
}

/// The byte of `s` that is NUL, if any, for the C-string rule (JSON allows "\u0000", a C
/// string ends there).
fn nul_at(s: &str) -> Option<usize> {
    s.bytes().position(|b| b == 0)
}

/// Parses and validates the safetensors file in `bytes` (the whole file) with the
/// reference crate; the tensors in data order and the metadata sorted by key. Errors: Io
/// (malformed: a metadata value that is not a string among the causes; or a tensor name,
/// metadata key or value with a NUL byte), DType (a dtype libtensor lacks), Overflow
/// (shape), InvalidArgument (more than 64 dims).
pub fn parse(bytes: &[u8]) -> Result<Header> {
    let (n, meta) = SafeTensors::read_metadata(bytes).map_err(format_error)?;
    // read_metadata checked 8 + n + data length == bytes.len().
    let data_start = 8 + n;
    let mut out = Vec::new();
    for (index, name) in meta.offset_keys().into_iter().enumerate() {
        let Some(info) = meta.info(&name) else {
            continue;
        };
        // A name with a NUL byte could never be looked up by name (and two names could
        // become one).
        if let Some(at) = nul_at(&name) {
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
        if info.dtype == Dtype::F4 {
            f4_pairs(&name, &mut dims)?;
        }
        out.push(Entry {
            name,
            dtype,
            shape: dims,
            begin: data_start + info.data_offsets.0,
            end: data_start + info.data_offsets.1,
        });
    }
    let mut metadata: Vec<(String, String)> = meta
        .metadata()
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    metadata.sort();
    // The same rule as for names: the C API hands keys and values out as C strings.
    for (k, v) in &metadata {
        if let Some(at) = nul_at(k) {
            bail!(
                Io,
                "the metadata key \"{}\" has a NUL byte at byte {at}: metadata keys must be C strings",
                k.escape_debug()
            );
        }
        if let Some(at) = nul_at(v) {
            bail!(
                Io,
                "the value of metadata key '{k}' has a NUL byte at byte {at} (\"{}\"): metadata values must be C strings",
                v.escape_debug()
            );
        }
    }
    Ok(Header {
        entries: out,
        metadata,
    })
}

/// The tensors of the safetensors file held in `storage` (the whole file), in data order:
/// views over it, or aligned copies of misaligned tensors (see the module doc). (For the
/// parser tests and fuzz targets; the loader makes a [`SafetensorsFile`].)
#[cfg(any(test, fuzzing))]
pub fn tensors_from_storage(storage: &Storage) -> Result<Vec<(String, Tensor)>> {
    let bytes = super::storage_bytes(storage, "safetensors")?;
    tensors_of(storage, parse(bytes)?.entries)
}

/// The tensors of `entries` over the file held in `storage`.
fn tensors_of(storage: &Storage, entries: Vec<Entry>) -> Result<Vec<(String, Tensor)>> {
    let ptr = storage.data_ptr();
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

/// The whole loaded file held in `storage`: its tensors (as [`tensors_from_storage`]) and
/// metadata.
pub fn file_from_storage(storage: &Storage) -> Result<SafetensorsFile> {
    let bytes = super::storage_bytes(storage, "safetensors")?;
    let h = parse(bytes)?;
    SafetensorsFile::new(tensors_of(storage, h.entries)?, h.metadata)
}

/// A loaded file: its tensors in data order, their names as C strings (what the C API
/// hands out), an index of them sorted by name for lookups, and the metadata pairs as C
/// strings, sorted by key. The tensors hold the file's mapping (those copied for alignment
/// do not).
pub struct SafetensorsFile {
    names: Vec<CString>,
    tensors: Vec<Tensor>,
    /// Indices into `names` / `tensors`, sorted by name.
    by_name: Vec<usize>,
    metadata: Vec<(CString, CString)>,
}

/// `s` as a C string: the parser refused strings with a NUL byte, so this fails only if a
/// caller skipped it (Io, naming `what`).
fn c_string(s: String, what: &str) -> Result<CString> {
    CString::new(s).map_err(|e| {
        Error::from_fmt(
            Status::Io,
            format_args!("{what} holds a NUL byte at byte {}", e.nul_position()),
        )
    })
}

impl SafetensorsFile {
    /// Indexes `named` (in data order) by name; `metadata` sorted by key.
    fn new(
        named: Vec<(String, Tensor)>,
        metadata: Vec<(String, String)>,
    ) -> Result<SafetensorsFile> {
        let mut names = Vec::with_capacity(named.len());
        let mut tensors = Vec::with_capacity(named.len());
        for (name, t) in named {
            names.push(c_string(name, "a tensor name")?);
            tensors.push(t);
        }
        let mut by_name: Vec<usize> = (0..names.len()).collect();
        by_name.sort_by(|&a, &b| names[a].cmp(&names[b]));
        let mut meta = Vec::with_capacity(metadata.len());
        for (k, v) in metadata {
            meta.push((
                c_string(k, "a metadata key")?,
                c_string(v, "a metadata value")?,
            ));
        }
        Ok(SafetensorsFile {
            names,
            tensors,
            by_name,
            metadata: meta,
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

    /// Number of metadata pairs.
    pub fn metadata_count(&self) -> usize {
        self.metadata.len()
    }

    /// Metadata pair `i` (sorted by key): key and value.
    pub fn metadata(&self, i: usize) -> Option<(&CStr, &CStr)> {
        self.metadata
            .get(i)
            .map(|(k, v)| (k.as_c_str(), v.as_c_str()))
    }
}

/// A tensor loaded as a copy, named in the message refusing a shared mapping.
struct Copied<'a>(&'a CStr);

impl std::fmt::Display for Copied<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the misaligned tensor '{}'",
            self.0.to_bytes().escape_ascii()
        )
    }
}

impl super::OverMapping for SafetensorsFile {
    fn copied(&self, storage: &Storage) -> Option<impl std::fmt::Display + '_> {
        self.tensors
            .iter()
            .zip(&self.names)
            .find(|(t, _)| t.storage().data_ptr() != storage.data_ptr())
            .map(|(_, name)| Copied(name))
    }
}

/// The longest header the format's reference implementation reads or writes: its
/// `MAX_HEADER_SIZE` (safetensors 0.8, `src/tensor.rs`, not exported), against which its
/// reader checks the 8-byte length at the start of a file (the padded header) and its
/// writers, the Python package's among them, the header they would write.
const MAX_HEADER_SIZE: usize = 100_000_000;

/// The header [`save`] writes for `tensors` (the crate's `Metadata`, its entries validated)
/// and the `meta` pairs (sorted by key, distinct): JSON padded with spaces to a multiple of
/// 8 bytes. Errors: InvalidArgument (longer than [`MAX_HEADER_SIZE`], which no reader of
/// the format would read), Io (serialization).
fn encode_header(path: &Path, tensors: &Metadata, meta: &[(&str, &str)]) -> Result<Vec<u8>> {
    let meta_json = |e: serde_json::Error| {
        Error::from_fmt(
            Status::Io,
            format_args!(
                "cannot serialize the safetensors header of '{}': {e}",
                path.display()
            ),
        )
    };
    let mut header = serde_json::to_vec(tensors).map_err(meta_json)?;
    if !meta.is_empty() {
        // `{"__metadata__":{...sorted...}` then the tensors' entries: the crate's JSON
        // object is `{` + its entries + `}`, and keeps its metadata in a hash map, whose
        // order changes from run to run.
        let sorted: std::collections::BTreeMap<&str, &str> = meta.iter().copied().collect();
        let mut h = b"{\"__metadata__\":".to_vec();
        h.extend_from_slice(&serde_json::to_vec(&sorted).map_err(meta_json)?);
        if header.len() > 2 {
            h.push(b',');
        }
        h.extend_from_slice(&header[1..]);
        header = h;
    }
    let padded = header.len().div_ceil(8) * 8;
    if padded > MAX_HEADER_SIZE {
        return Err(header_too_large(path, padded, ""));
    }
    header.resize(padded, b' ');
    Ok(header)
}

/// InvalidArgument: the header of `path` would be `size` bytes (`more`: "more than "), over
/// [`MAX_HEADER_SIZE`].
#[cold]
fn header_too_large(path: &Path, size: usize, more: &str) -> Error {
    Error::from_fmt(
        Status::InvalidArgument,
        format_args!(
            "the safetensors header of '{}' would be {more}{size} bytes (tensor names, shapes and metadata), over {MAX_HEADER_SIZE}, the most the format's readers accept",
            path.display()
        ),
    )
}

/// Maps `path` with `mode` and makes its tensors, indexed by name, and its metadata (see
/// [`load_mapped`](super::load_mapped): `Shared` refuses a file with a misaligned tensor,
/// which would be a copy).
pub fn load(path: &Path, mode: MapMode) -> Result<SafetensorsFile> {
    super::load_mapped(path, mode, ".safetensors", file_from_storage)
}

/// Writes the named tensors to `path` (non-contiguous ones are made contiguous first), in
/// the reference writer's order (decreasing alignment, then name, so every tensor starts
/// aligned) with the header padded to 8 bytes, and the `metadata` pairs as the header's
/// `__metadata__` (none: no `__metadata__`, as the reference writers do). The header is the
/// crate's `Metadata` (validated by it) serialized as JSON, after `__metadata__` with its
/// keys sorted (so a save is byte-for-byte reproducible); the data is streamed from the
/// tensors into [`write_atomically`](super::write_atomically). Nothing is written when the
/// header would be longer than [`MAX_HEADER_SIZE`] (the format's readers refuse it).
/// Errors: InvalidArgument (duplicate or reserved name, duplicate metadata key, a header
/// over [`MAX_HEADER_SIZE`]), DType
/// (complex128), Device, OutOfBounds, Overflow, OutOfMemory, Io.
pub fn save(path: &Path, named: &[(&str, &Tensor)], metadata: &[(&str, &str)]) -> Result<()> {
    // The header holds every name, key and value (JSON escapes only lengthen them): refused
    // here, before a tensor is copied or a byte serialized, when they alone are too long.
    let strings = (named.iter().map(|(n, _)| n.len()))
        .chain(
            metadata
                .iter()
                .map(|(k, v)| k.len().saturating_add(v.len())),
        )
        .fold(0usize, usize::saturating_add);
    if strings > MAX_HEADER_SIZE {
        return Err(header_too_large(path, strings, "more than "));
    }
    let mut items: Vec<(&str, Dtype, Tensor, usize, Vec<usize>)> = Vec::with_capacity(named.len());
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
        let shape = if dtype == Dtype::F4 {
            f4_values(name, t.sizes())?
        } else {
            t.sizes().iter().map(|&d| d as usize).collect()
        };
        let (c, nbytes) = super::npy::contiguous_bytes(t)?;
        items.push((name, dtype, c, nbytes, shape));
    }
    let mut meta: Vec<(&str, &str)> = metadata.to_vec();
    meta.sort_unstable();
    if let Some(w) = meta.windows(2).find(|w| w[0].0 == w[1].0) {
        bail!(InvalidArgument, "metadata key '{}' given twice", w[0].0);
    }
    items.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut infos = Vec::with_capacity(items.len());
    let mut offset = 0usize;
    for (name, dtype, _, nbytes, shape) in &items {
        let info = TensorInfo {
            dtype: *dtype,
            shape: shape.clone(),
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
    let tensors = Metadata::new(None, infos).map_err(format_error)?;
    let header = encode_header(path, &tensors, &meta)?;
    let mut parts: Vec<&[u8]> = Vec::with_capacity(items.len() + 2);
    let len = (header.len() as u64).to_le_bytes();
    parts.push(&len);
    parts.push(&header);
    for (_, _, t, nbytes, _) in &items {
        if *nbytes > 0 {
            // SAFETY: a contiguous host tensor (contiguous_bytes checked it) has nbytes
            // readable bytes at data_ptr().
            parts.push(unsafe { std::slice::from_raw_parts(t.data_ptr(), *nbytes) });
        }
    }
    super::write_atomically(path, &parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header size limit is the reference reader's: a header of exactly
    /// [`MAX_HEADER_SIZE`] bytes is encoded and the crate reads it back; one more byte of
    /// JSON pads it to 8 bytes more, which [`encode_header`] refuses (InvalidArgument,
    /// naming the file and the sizes) and the crate's reader refuses too (`HeaderTooLarge`).
    /// The value is mostly control characters, which JSON writes as 6-byte escapes: its
    /// own bytes pass the early test of [`save`], the header it makes does not.
    #[test]
    fn header_limit_is_the_reference_readers() {
        let path = Path::new("limit.safetensors");
        let no_tensors = Metadata::new(None, Vec::new()).unwrap();
        let json_len = |h: &[u8]| h.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        let empty = encode_header(path, &no_tensors, &[("k", "")]).unwrap();
        let room = MAX_HEADER_SIZE - json_len(&empty);
        // `room` bytes of JSON: \u0001 escapes, then plain letters for the rest
        let value = "\u{1}".repeat(room / 6) + &"a".repeat(room % 6);
        let at = encode_header(path, &no_tensors, &[("k", &value)]).unwrap();
        assert_eq!(
            (at.len(), json_len(&at)),
            (MAX_HEADER_SIZE, MAX_HEADER_SIZE)
        );
        let file = |h: &[u8]| [&(h.len() as u64).to_le_bytes()[..], h].concat();
        let bytes = file(&at);
        let (n, read) = SafeTensors::read_metadata(&bytes).expect("the reference reads it");
        assert_eq!(n, MAX_HEADER_SIZE);
        assert_eq!(read.metadata().as_ref().unwrap().get("k"), Some(&value));
        drop((bytes, read));

        let over = value + "a";
        let e = encode_header(path, &no_tensors, &[("k", &over)]).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        let want = format!("would be {} bytes", MAX_HEADER_SIZE + 8);
        let msg = e.text();
        assert!(
            msg.contains(&want) && msg.contains("limit.safetensors"),
            "{msg}"
        );
        assert!(msg.contains(&format!("over {MAX_HEADER_SIZE}")), "{msg}");
        drop(over);
        let mut padded = at;
        padded.extend_from_slice(b"        ");
        assert!(matches!(
            SafeTensors::read_metadata(&file(&padded)),
            Err(SafeTensorError::HeaderTooLarge)
        ));
    }

    /// Names and metadata longer than the limit by themselves are refused before anything
    /// else: into a directory that does not exist, the refusal is InvalidArgument, not the
    /// IO error a write would meet.
    #[test]
    fn save_refuses_long_strings_first() {
        let t = Tensor::empty(&[1], DType::U8).unwrap();
        let long = "n".repeat(MAX_HEADER_SIZE + 1);
        let (a, b) = (
            &long[..MAX_HEADER_SIZE / 2],
            &long[..MAX_HEADER_SIZE / 2 + 1],
        );
        let path = Path::new("/nonexistent-libtensor-dir/x.safetensors");
        // (names, pairs, their bytes: every name, key and value)
        for (named, meta, bytes) in [
            (vec![(long.as_str(), &t)], vec![], MAX_HEADER_SIZE + 1),
            (
                vec![("t", &t)],
                vec![("k", long.as_str())],
                MAX_HEADER_SIZE + 3,
            ),
            (vec![("t", &t)], vec![(a, b)], MAX_HEADER_SIZE + 2),
        ] {
            let e = save(path, &named, &meta).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument, "{}", e.text());
            let want = format!("would be more than {bytes} bytes");
            assert!(e.text().contains(&want), "{}", e.text());
        }
    }
}

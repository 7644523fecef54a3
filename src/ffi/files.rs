//! Files: mapped files, shared memory, .safetensors and .npy
//!
//! Memory beyond the allocator: storages over memory-mapped files, shared memory between
//! processes (memfd + a descriptor to send with SCM_RIGHTS), and loading / saving
//! `.safetensors` and `.npy` files without copying.

use super::*;
use crate::files::mmap::{self, MapMode};
use crate::files::npy;
use crate::files::safetensors::{self, SafetensorsFile};
use crate::storage::StorageKind;
use std::ffi::{c_char, c_int, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How a file region is mapped (`TENSOR_MAP_*`).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tensor_map_mode_t(pub i32);

/// Read-only pages; the storage is read-only (every write refuses with READ_ONLY, DLPack
/// exports carry the read-only flag).
pub const TENSOR_MAP_READ_ONLY: tensor_map_mode_t = tensor_map_mode_t(0);
/// Read-write and shared: writes reach the file (like `numpy.memmap(mode="r+")`).
pub const TENSOR_MAP_SHARED: tensor_map_mode_t = tensor_map_mode_t(1);
/// Read-write, private copy-on-write: writes stay in this process (`mode="c"`).
pub const TENSOR_MAP_PRIVATE: tensor_map_mode_t = tensor_map_mode_t(2);

/// Pass as `nbytes` to map from `offset` to the end of the file.
pub const TENSOR_MAP_TO_END: u64 = u64::MAX;

/// Opaque handle: a loaded `.safetensors` file (its names, tensors and metadata, over one
/// mapping of the file).
pub struct tensor_safetensors_t {
    _opaque: [u8; 0],
}

fn path_arg<'a>(p: *const c_char, what: &str) -> Result<&'a Path> {
    if p.is_null() {
        bail!(NullPointer, "argument '{what}' is NULL");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    Ok(Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

/// The C code of a map mode (an exhaustive match: a new mode does not compile, in test
/// builds, until it is tabled here); `MapMode::from_code` decodes (the test below ties the
/// two). Only tests need the encoding.
#[cfg(test)]
const fn map_mode_code(m: MapMode) -> tensor_map_mode_t {
    match m {
        MapMode::ReadOnly => TENSOR_MAP_READ_ONLY,
        MapMode::Shared => TENSOR_MAP_SHARED,
        MapMode::Private => TENSOR_MAP_PRIVATE,
    }
}

#[test]
fn map_mode_codes_round_trip() {
    let mut decoded = 0;
    for code in -1..=255 {
        if let Some(m) = MapMode::from_code(code) {
            assert_eq!(map_mode_code(m).0, code);
            decoded += 1;
        }
    }
    for m in [MapMode::ReadOnly, MapMode::Shared, MapMode::Private] {
        assert_eq!(MapMode::from_code(map_mode_code(m).0), Some(m));
    }
    assert_eq!(decoded, 3);
}

fn mode_arg(m: tensor_map_mode_t) -> Result<MapMode> {
    MapMode::from_code(m.0).ok_or_else(|| {
        Error::from_fmt(
            Status::InvalidArgument,
            format_args!("unknown map mode {}", m.0),
        )
    })
}

fn region_arg(nbytes: u64) -> Result<Option<usize>> {
    if nbytes == TENSOR_MAP_TO_END {
        return Ok(None);
    }
    ensure!(
        nbytes <= isize::MAX as u64,
        Overflow,
        "region of {nbytes} bytes exceeds the address space"
    );
    Ok(Some(nbytes as usize))
}

/// A storage over `nbytes` bytes at byte `offset` of the file at `path`
/// (`TENSOR_MAP_TO_END`: to the end of the file), mapped with `mode`, in `*out` (owned, not
/// resizable, `storage_is_mapped`). No byte is read or copied: the data pointer is inside
/// the mapping, which is released when the last strong reference dies. Any offset works
/// (the mapping starts at the page boundary below it). Like
/// `torch.UntypedStorage.from_file` and `numpy.memmap`; truncating the file while it is
/// mapped makes later reads fault, as with them.
/// Only a regular file or a block device can be mapped: anything else at `path` is refused
/// with IO naming it (a FIFO is opened without waiting for a writer, then refused).
/// Errors: NULL_POINTER (path, out), INVALID_ARGUMENT (unknown mode, zero-length region),
/// IO (cannot open, stat or map: missing file, permission denied; a directory, FIFO,
/// socket or character device), OUT_OF_BOUNDS (region past the end of the file), OVERFLOW,
/// OUT_OF_MEMORY (the mapping does not fit: mmap's ENOMEM, e.g. a huge sparse file; or
/// the heap is exhausted: the mapping's bookkeeping or the storage object).
#[no_mangle]
pub extern "C" fn storage_from_file(
    path: *const c_char,
    offset: u64,
    nbytes: u64,
    mode: tensor_map_mode_t,
    out: *mut *mut storage_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let path = path_arg(path, "path")?;
        let s = mmap::map_file(path, offset, region_arg(nbytes)?, mode_arg(mode)?)?;
        *out = storage_t::into_raw(s);
        Ok(())
    })
}

/// [`storage_from_file`] on an open descriptor (a file, or a shared-memory segment received
/// from another process). The caller keeps `fd`; the storage keeps its own duplicate
/// (returned by `storage_fd`, so the segment can be passed on). `TENSOR_MAP_SHARED` needs
/// a descriptor open for writing.
/// Errors: NULL_POINTER, INVALID_ARGUMENT (negative fd, unknown mode, zero-length region),
/// IO (bad descriptor, permission denied; not a regular file or block device), OUT_OF_BOUNDS
/// (region past the end), OVERFLOW, OUT_OF_MEMORY (mmap's ENOMEM, or an exhausted heap).
#[no_mangle]
pub extern "C" fn storage_from_fd(
    fd: c_int,
    offset: u64,
    nbytes: u64,
    mode: tensor_map_mode_t,
    out: *mut *mut storage_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let s = mmap::map_descriptor(fd, offset, region_arg(nbytes)?, mode_arg(mode)?)?;
        *out = storage_t::into_raw(s);
        Ok(())
    })
}

/// A new shared-memory storage of `nbytes` zero bytes (an anonymous `memfd_create`
/// segment, read-write) in `*out` (owned). Send `storage_fd`'s descriptor to another
/// process over a UNIX socket (`SCM_RIGHTS`); it maps the same pages with
/// `storage_from_fd`. The segment is sealed against resizing, and lives until every
/// process's last reference is gone.
/// Errors: NULL_POINTER, INVALID_ARGUMENT (nbytes 0), OVERFLOW (nbytes > PTRDIFF_MAX),
/// OUT_OF_MEMORY (ENOMEM or ENOSPC from memfd_create, sizing or mmap: e.g. a segment larger
/// than the address space; or an exhausted heap), IO (any other failure of those calls).
#[no_mangle]
pub extern "C" fn storage_new_shared(nbytes: usize, out: *mut *mut storage_t) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        *out = storage_t::into_raw(mmap::new_shared(nbytes)?);
        Ok(())
    })
}

/// The descriptor of a shared-memory storage, or of one made by `storage_from_fd`, in
/// `*out`: borrowed (owned by the storage, closed when its last strong reference dies;
/// do not close it). Send it with `SCM_RIGHTS`, which gives the receiver its own copy.
/// Errors: NULL_POINTER, INVALID_ARGUMENT (the storage keeps no descriptor: allocated,
/// wrapped, or mapped from a path).
#[no_mangle]
pub extern "C" fn storage_fd(s: *const storage_t, out: *mut c_int) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        *out = mmap::storage_fd(storage_arg(s, "s")?)?;
        Ok(())
    })
}

/// True when the storage's bytes are a memory mapping (a file, a received descriptor, or
/// shared memory); false for allocated or wrapped memory and NULL.
#[no_mangle]
pub extern "C" fn storage_is_mapped(s: *const storage_t) -> bool {
    guard(fn_name!(), || {
        storage_arg(s, "s").is_ok_and(|s| s.kind() == StorageKind::Mapped)
    })
}

/// Loads the `.npy` file at `path` (format 1.0, 2.0 or 3.0; C or Fortran order; every
/// libtensor dtype NumPy has; 0-d and empty arrays) in `*out` (owned): a view over a
/// mapping of the file made with `mode`, no byte copied, like
/// `numpy.load(path, mmap_mode=...)`. Two cases load a copy instead: big-endian data
/// (converted to native order) and data not aligned to its element size (never the case
/// for files NumPy writes); `TENSOR_MAP_SHARED` refuses both with DTYPE.
/// Errors: NULL_POINTER, INVALID_ARGUMENT (unknown mode, more than 64 dims), IO (cannot
/// open or map; not a regular file or block device, as in storage_from_file; not a .npy
/// file, truncated, malformed header), DTYPE (unsupported dtype: structured, datetime,
/// strings, float128...), OVERFLOW (shape), OUT_OF_MEMORY (mmap's ENOMEM, the copy of a
/// big-endian or misaligned array, or an exhausted heap: a shape of more than five dims,
/// the mapping's bookkeeping, the tensor object).
#[no_mangle]
pub extern "C" fn tensor_load_npy(
    path: *const c_char,
    mode: tensor_map_mode_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        npy::load(path_arg(path, "path")?, mode_arg(mode)?)
    })
}

/// Writes `t` to `path` as a `.npy` file (C order, format 1.0, or 2.0 for very long
/// headers) that `numpy.load` reads; a non-contiguous `t` is written in C order.
///
/// The save is atomic: the bytes go to a new temporary file in the destination's
/// directory (`.<name>.tmp-<random>`, created exclusively, never through a symbolic link
/// planted at that name), which is fsynced, renamed over the destination, and the
/// directory is fsynced. A reader of `path`, or an existing mapping of it, sees the old
/// file or the new one, whole; concurrent saves of one path each land whole (the last
/// rename wins). On failure the temporary file is removed and `path` is untouched.
/// - `path` a symbolic link (or a chain of them): its final target is replaced and the
///   link stays a link (a dangling link's target is created), as `numpy.save` writes
///   through a link.
/// - An existing file keeps its permission bits (and owner and group, where the process
///   may set them); a new file gets 0666 less the umask.
/// - Anything but a regular file at `path` (or at its target): a directory, FIFO, socket,
///   device, is refused with IO naming it, and nothing is written.
///
/// Errors: NULL_POINTER, DTYPE (bfloat16, the float8 dtypes and float4_e2m1fn_x2: NumPy has
/// no such dtypes), DEVICE, OUT_OF_BOUNDS, OVERFLOW (an expanded `t` whose bytes overflow),
/// OUT_OF_MEMORY, IO (the destination is not
/// a regular file; cannot create, write, fsync or rename the temporary file; cannot fsync the
/// directory, reported after the rename).
#[no_mangle]
pub extern "C" fn tensor_save_npy(path: *const c_char, t: *const tensor_t) -> tensor_status_t {
    call(fn_name!(), || {
        let path = path_arg(path, "path")?;
        let t = tensor_owned(t, "t")?;
        npy::save(path, &t)
    })
}

/// Loads the `.safetensors` file at `path` in `*out` (owned; release with
/// `tensor_safetensors_release`): the header is validated as the format requires (by the
/// format's reference implementation) and every tensor is a read-only view over one
/// read-only mapping of the file, no byte copied. This is
/// `tensor_load_safetensors_mode(path, TENSOR_MAP_READ_ONLY, out)`. A tensor whose offset
/// is not a multiple of its element size (never the case for files the reference writers
/// produce) is copied to an aligned block. The tensors keep the mapping alive after the
/// handle is released. Tensor names, metadata keys and metadata values are C strings: one
/// holding a NUL byte (JSON's `\u0000`), which no C caller could read whole, makes the file
/// refused (IO naming the file and the tensor's index or the key); so does a metadata
/// value that is not a JSON string (the format's `__metadata__` maps strings to strings;
/// the Python package refuses such files too).
/// Errors: NULL_POINTER, INVALID_ARGUMENT (more than 64 dims), IO (cannot open or map; not
/// a regular file or block device, as in storage_from_file; truncated, bad header length,
/// invalid JSON, offsets overlapping, with gaps or outside the data, shape not matching the
/// byte length, a name, metadata key or value with a NUL byte, a metadata value that is
/// not a string), DTYPE (a dtype libtensor lacks: F6_E2M3, F6_E3M2, named in the message;
/// F4 with an odd last dim), OVERFLOW (shape), OUT_OF_MEMORY (mmap's ENOMEM, or a copy).
/// F4 (single 4-bit values) `[..., 2n]` loads as float4_e2m1fn_x2 (pairs) `[..., n]` over
/// the same bytes, as Python's `safetensors.torch` reads it.
#[no_mangle]
pub extern "C" fn tensor_load_safetensors(
    path: *const c_char,
    out: *mut *mut tensor_safetensors_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        load_safetensors(path, TENSOR_MAP_READ_ONLY, out)
    })
}

/// Alias of tensor_load_safetensors, kept for 0.x: new code calls tensor_load_safetensors
/// (the same function; its error messages name tensor_safetensors_load). Errors: as
/// tensor_load_safetensors.
#[no_mangle]
pub extern "C" fn tensor_safetensors_load(
    path: *const c_char,
    out: *mut *mut tensor_safetensors_t,
) -> tensor_status_t {
    call(fn_name!(), || {
        load_safetensors(path, TENSOR_MAP_READ_ONLY, out)
    })
}

/// tensor_load_safetensors with the file mapped in `mode`, as `tensor_load_npy` maps:
/// - `TENSOR_MAP_READ_ONLY`: read-only pages; every view of them is read-only (writes
///   fail with READ_ONLY, DLPack exports carry the read-only flag). tensor_load_safetensors.
/// - `TENSOR_MAP_PRIVATE`: copy-on-write pages: the tensors are writable, a write copies
///   the page it touches into this process, and the file is never modified (nor are other
///   processes' views of it). The weights to hand to a consumer that writes in place
///   (e.g. libtorch, which ignores DLPack's read-only flag).
/// - `TENSOR_MAP_SHARED`: read-write shared pages: writes reach the file (and every other
///   shared mapping of it); the file must be open for writing (IO otherwise). A file with a
///   misaligned tensor, which would load as a copy that writes could not reach the file
///   through, is refused with DTYPE naming the tensor.
///
/// Every tensor views the one mapping (each keeps it alive), but for a misaligned one,
/// which is an aligned copy (a writable tensor of its own) in READ_ONLY and PRIVATE modes.
/// Validation, names and metadata as tensor_load_safetensors.
/// Errors: NULL_POINTER, INVALID_ARGUMENT (unknown mode, more than 64 dims), IO (as
/// tensor_load_safetensors; also no write permission with TENSOR_MAP_SHARED), DTYPE (a
/// dtype libtensor lacks; a misaligned tensor with TENSOR_MAP_SHARED), OVERFLOW (shape),
/// OUT_OF_MEMORY (mmap's ENOMEM, or a copy).
#[no_mangle]
pub extern "C" fn tensor_load_safetensors_mode(
    path: *const c_char,
    mode: tensor_map_mode_t,
    out: *mut *mut tensor_safetensors_t,
) -> tensor_status_t {
    call(fn_name!(), || load_safetensors(path, mode, out))
}

/// Alias of tensor_load_safetensors_mode (the same function; its error messages name
/// tensor_safetensors_load_mode), in the noun-first spelling of tensor_safetensors_load.
/// Both names stay; new code calls tensor_load_safetensors_mode.
/// Errors: as tensor_load_safetensors_mode.
#[no_mangle]
pub extern "C" fn tensor_safetensors_load_mode(
    path: *const c_char,
    mode: tensor_map_mode_t,
    out: *mut *mut tensor_safetensors_t,
) -> tensor_status_t {
    call(fn_name!(), || load_safetensors(path, mode, out))
}

/// The body of the safetensors loaders (each passes `fn_name!()` to `call`).
fn load_safetensors(
    path: *const c_char,
    mode: tensor_map_mode_t,
    out: *mut *mut tensor_safetensors_t,
) -> Result<()> {
    let out = out_arg(out)?;
    let path = path_arg(path, "path")?;
    let loaded = safetensors::load(path, mode_arg(mode)?)?;
    *out = tensor_safetensors_t::into_raw(Box::new(loaded));
    Ok(())
}

impl BoxHandle for tensor_safetensors_t {
    type Object = SafetensorsFile;
}

fn loaded<'a>(f: *const tensor_safetensors_t) -> Option<&'a SafetensorsFile> {
    // SAFETY: a non-NULL handle is live for the duration of the call.
    unsafe { tensor_safetensors_t::borrow(f) }
}

/// Releases a loaded file's handle (its tensors stay valid: each holds the mapping). NULL
/// is a no-op.
#[no_mangle]
pub extern "C" fn tensor_safetensors_release(f: *mut tensor_safetensors_t) {
    guard(fn_name!(), || {
        // SAFETY: the caller gives up the handle it owns (or passes NULL).
        drop(unsafe { tensor_safetensors_t::adopt(f) });
    })
}

/// Number of tensors in the file (0 for NULL).
#[no_mangle]
pub extern "C" fn tensor_safetensors_count(f: *const tensor_safetensors_t) -> usize {
    guard(fn_name!(), || loaded(f).map_or(0, SafetensorsFile::count))
}

/// Name of tensor `i` (tensors are in file data order), borrowed until the handle is
/// released; NULL when `i` is out of range or `f` is NULL.
#[no_mangle]
pub extern "C" fn tensor_safetensors_name(
    f: *const tensor_safetensors_t,
    i: usize,
) -> *const c_char {
    guard(fn_name!(), || {
        loaded(f)
            .and_then(|f| f.name(i))
            .map_or(std::ptr::null(), CStr::as_ptr)
    })
}

/// Tensor `i` in `*out` (a new reference, owned).
/// Errors: NULL_POINTER, INDEX (i >= count).
#[no_mangle]
pub extern "C" fn tensor_safetensors_at(
    f: *const tensor_safetensors_t,
    i: usize,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        let f = loaded(f).ok_or_else(|| Error::new(Status::NullPointer, "argument 'f' is NULL"))?;
        let n = f.count();
        f.tensor(i).cloned().ok_or_else(|| {
            Error::from_fmt(
                Status::Index,
                format_args!("index {i} is out of range for a file of {n} tensors"),
            )
        })
    })
}

/// The tensor named `name` in `*out` (a new reference, owned).
/// Errors: NULL_POINTER, INDEX (no tensor of that name).
#[no_mangle]
pub extern "C" fn tensor_safetensors_get(
    f: *const tensor_safetensors_t,
    name: *const c_char,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        let f = loaded(f).ok_or_else(|| Error::new(Status::NullPointer, "argument 'f' is NULL"))?;
        ensure!(!name.is_null(), NullPointer, "argument 'name' is NULL");
        // SAFETY: a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(name) };
        match f.get(name) {
            Some(t) => Ok(t.clone()),
            None => bail!(
                Index,
                "no tensor named '{}' in the file",
                name.to_string_lossy()
            ),
        }
    })
}

/// Number of `__metadata__` pairs in the file (0 for NULL, and for a file without
/// `__metadata__`).
#[no_mangle]
pub extern "C" fn tensor_safetensors_metadata_count(f: *const tensor_safetensors_t) -> usize {
    guard(fn_name!(), || {
        loaded(f).map_or(0, SafetensorsFile::metadata_count)
    })
}

/// Key of metadata pair `i` (pairs are sorted by key, bytewise; keys are unique), borrowed
/// until the handle is released; NULL when `i` is out of range or `f` is NULL.
#[no_mangle]
pub extern "C" fn tensor_safetensors_metadata_key(
    f: *const tensor_safetensors_t,
    i: usize,
) -> *const c_char {
    guard(fn_name!(), || {
        loaded(f)
            .and_then(|f| f.metadata(i))
            .map_or(std::ptr::null(), |(k, _)| k.as_ptr())
    })
}

/// Value of metadata pair `i` (the pair whose key tensor_safetensors_metadata_key(f, i)
/// returns), borrowed until the handle is released; NULL when `i` is out of range or `f` is
/// NULL.
#[no_mangle]
pub extern "C" fn tensor_safetensors_metadata_value(
    f: *const tensor_safetensors_t,
    i: usize,
) -> *const c_char {
    guard(fn_name!(), || {
        loaded(f)
            .and_then(|f| f.metadata(i))
            .map_or(std::ptr::null(), |(_, v)| v.as_ptr())
    })
}

/// Writes `n` tensors named `names[i]` to `path` as a `.safetensors` file that the
/// format's readers (Python `safetensors.numpy` / `safetensors.torch`) read back; each is
/// written in C order. Every libtensor dtype but complex128 (the format has none);
/// float4_e2m1fn_x2 `[..., n]` (pairs) as F4 `[..., 2n]` (single values, the same bytes),
/// as Python's `safetensors.torch` writes it. The
/// save is atomic, as tensor_save_npy's (same writer, same rules): a temporary file
/// fsynced and renamed over the destination; a symbolic link's target is replaced, the
/// link kept; the old file's permission bits kept; anything but a regular file at `path`
/// refused with IO; concurrent saves and readers see whole files only. The file has no
/// `__metadata__`: this is tensor_save_safetensors_metadata with no pairs. The header (the
/// JSON of the names, dtypes, shapes and offsets, padded to 8 bytes) may be at most
/// 100,000,000 bytes, the most the format's readers (libtensor's and the Python package's)
/// accept: a longer one is refused before anything is written, the old file kept.
/// Errors: NULL_POINTER (path, or names / tensors with n > 0, or one of their entries),
/// INVALID_ARGUMENT (a name given twice, not UTF-8, or "__metadata__"; a header over
/// 100,000,000 bytes), DTYPE
/// (complex128; a 0-dim float4_e2m1fn_x2, which has no last dim to count F4 values in),
/// DEVICE, OUT_OF_BOUNDS, OVERFLOW, OUT_OF_MEMORY, IO (the causes listed for tensor_save_npy).
#[no_mangle]
pub extern "C" fn tensor_save_safetensors(
    path: *const c_char,
    names: *const *const c_char,
    tensors: *const *const tensor_t,
    n: usize,
) -> tensor_status_t {
    call(fn_name!(), || {
        save_safetensors(
            path,
            names,
            tensors,
            n,
            std::ptr::null(),
            std::ptr::null(),
            0,
        )
    })
}

/// tensor_save_safetensors with `n_meta` metadata pairs `keys[i]` -> `values[i]` written
/// as the header's `__metadata__` (what `safetensors.torch.save_file(..., metadata=...)`
/// writes and `safe_open(...).metadata()` reads; Hugging Face files keep e.g.
/// `{"format": "pt"}` there). To re-save a loaded file with its metadata, pass the pairs
/// of tensor_safetensors_metadata_key / _value. Keys and values are UTF-8 strings; the
/// keys must be distinct (any order: they are written sorted, so equal inputs give equal
/// files). `n_meta` 0 writes no `__metadata__` (keys and values may then be NULL), as
/// tensor_save_safetensors. The pairs are part of the header, whose limit is
/// tensor_save_safetensors': at most 100,000,000 bytes, else refused before anything is
/// written (the old file kept).
/// Errors: NULL_POINTER (path; names / tensors with n > 0, keys / values with
/// n_meta > 0, or one of their entries), INVALID_ARGUMENT (a tensor name given twice, not
/// UTF-8, or "__metadata__"; a metadata key given twice; a key or value not UTF-8; a
/// header over 100,000,000 bytes), DTYPE
/// (as tensor_save_safetensors), DEVICE, OUT_OF_BOUNDS, OVERFLOW, OUT_OF_MEMORY, IO (the causes listed for
/// tensor_save_npy).
#[no_mangle]
pub extern "C" fn tensor_save_safetensors_metadata(
    path: *const c_char,
    names: *const *const c_char,
    tensors: *const *const tensor_t,
    n: usize,
    keys: *const *const c_char,
    values: *const *const c_char,
    n_meta: usize,
) -> tensor_status_t {
    call(fn_name!(), || {
        save_safetensors(path, names, tensors, n, keys, values, n_meta)
    })
}

/// `n` pointers at `p` (none when `n` is 0, whatever `p`); NULL_POINTER naming `what`.
fn array_arg<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    ensure!(
        !p.is_null(),
        NullPointer,
        "argument '{what}' is NULL with {n} entries"
    );
    // SAFETY: the caller passes n readable entries.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Entry `i` of a string array as UTF-8: NULL_POINTER or INVALID_ARGUMENT naming
/// `what[i]`.
fn utf8_entry<'a>(p: *const c_char, what: &str, i: usize) -> Result<&'a str> {
    ensure!(!p.is_null(), NullPointer, "{what}[{i}] is NULL");
    // SAFETY: a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|e| {
        Error::from_fmt(
            Status::InvalidArgument,
            format_args!("{what}[{i}] is not valid UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// The body of tensor_save_safetensors and tensor_save_safetensors_metadata.
fn save_safetensors(
    path: *const c_char,
    names: *const *const c_char,
    tensors: *const *const tensor_t,
    n: usize,
    keys: *const *const c_char,
    values: *const *const c_char,
    n_meta: usize,
) -> Result<()> {
    let path = path_arg(path, "path")?;
    let names = array_arg(names, n, "names")?;
    let tensors = array_arg(tensors, n, "tensors")?;
    let keys = array_arg(keys, n_meta, "keys")?;
    let values = array_arg(values, n_meta, "values")?;
    let mut owned: Vec<(&str, Tensor)> = Vec::with_capacity(n);
    for (i, (&name, &t)) in names.iter().zip(tensors).enumerate() {
        let name = utf8_entry(name, "names", i)?;
        owned.push((name, tensor_owned(t, "tensors[i]")?));
    }
    let mut meta: Vec<(&str, &str)> = Vec::with_capacity(n_meta);
    for (i, (&k, &v)) in keys.iter().zip(values).enumerate() {
        meta.push((utf8_entry(k, "keys", i)?, utf8_entry(v, "values", i)?));
    }
    let named: Vec<(&str, &Tensor)> = owned.iter().map(|(n, t)| (*n, t)).collect();
    safetensors::save(path, &named, &meta)
}

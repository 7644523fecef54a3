//! Memory sources beyond the allocator: memory-mapped files, shared memory between
//! processes, and the two file formats loaded over a mapping without copying
//! (`.safetensors` and NumPy's `.npy`). Every storage made here is an ordinary external
//! storage of kind [`Mapped`](crate::storage::StorageKind::Mapped).

pub mod mmap;
pub mod npy;
pub mod safetensors;

use crate::error::{Error, Result, Status};
use crate::storage::Storage;
use std::io::Write;
use std::path::Path;

/// Writes `parts` to a temporary file next to `path`, then renames it over `path`: a
/// reader mapping an older `path` keeps its (unlinked) pages and never sees a truncation.
pub(crate) fn write_atomically(path: &Path, parts: &[&[u8]]) -> Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let fail = |what: &str, e: std::io::Error| {
        Error::new(
            Status::Io,
            format!("cannot {what} '{}': {e}", path.display()),
        )
    };
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        for p in parts {
            f.write_all(p)?;
        }
        f.flush()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail("write", e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail("replace", e)
    })
}

/// A fresh storage holding a copy of `bytes` (for parsing a file held in memory, e.g. by
/// the fuzz target and tests; compiled for those only).
#[cfg(any(test, fuzzing))]
pub fn storage_from_bytes(bytes: &[u8]) -> Result<Storage> {
    let s =
        crate::storage::StorageImpl::allocate(bytes.len(), crate::allocator::Allocator::Builtin)?;
    if !bytes.is_empty() {
        // SAFETY: the fresh storage owns bytes.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), s.data_ptr(), bytes.len()) };
    }
    Ok(s)
}

/// The bytes of a host storage holding a whole file of `format` (for the parsers).
pub(crate) fn storage_bytes<'a>(storage: &'a Storage, format: &str) -> Result<&'a [u8]> {
    ensure!(
        storage.device().is_host_accessible(),
        Device,
        "cannot parse a {format} file in memory the host cannot read"
    );
    if storage.nbytes() == 0 {
        return Ok(&[]);
    }
    // SAFETY: a host storage owns nbytes() readable bytes at data_ptr(), alive as long as
    // the borrowed storage.
    Ok(unsafe { std::slice::from_raw_parts(storage.data_ptr(), storage.nbytes()) })
}

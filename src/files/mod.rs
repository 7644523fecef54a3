//! Memory sources beyond the allocator: memory-mapped files, shared memory between
//! processes, and the two file formats loaded over a mapping without copying
//! (`.safetensors` and NumPy's `.npy`). Every storage made here is an ordinary external
//! storage of kind [`Mapped`](crate::storage::StorageKind::Mapped).

pub mod mmap;
pub mod npy;
pub mod safetensors;

use crate::error::{Error, Result, Status};
use crate::storage::Storage;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The status of a failed system call: OUT_OF_MEMORY for ENOMEM (a mapping that does not
/// fit the address space, a kernel out of memory), IO for everything else.
pub(crate) fn io_status(e: &std::io::Error) -> Status {
    if e.raw_os_error() == Some(libc::ENOMEM) {
        Status::OutOfMemory
    } else {
        Status::Io
    }
}

/// The error of a failed system call: "`what`: `e`", with [`io_status`]'s status.
pub(crate) fn io_error(what: impl std::fmt::Display, e: std::io::Error) -> Error {
    Error::new(io_status(&e), format!("{what}: {e}"))
}

/// What the file type bits of `st_mode` name, for messages ("a FIFO (named pipe)").
pub(crate) fn file_kind(st_mode: u32) -> &'static str {
    match st_mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO (named pipe)",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "a special file",
    }
}

/// The file `path` names once its symbolic links are followed (each relative target read
/// against its link's directory), up to the kernel's limit of 40 links; `path` itself when
/// it is no link. The result may not exist (a dangling link: a save creates its target).
fn final_target(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..=40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p).map_err(|e| {
                    io_error(format_args!("cannot read the link '{}'", p.display()), e)
                })?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(p),
        }
    }
    bail!(
        Io,
        "cannot save to '{}': more than 40 levels of symbolic links",
        path.display()
    )
}

/// An unpredictable 64-bit suffix for a temporary name: the kernel's random bytes, mixed
/// with a process-wide counter, the time, the pid and a stack address (what is left when
/// getrandom fails). Uniqueness does not rest on it: the file is created with O_EXCL.
fn temp_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut r = [0u8; 8];
    // SAFETY: getrandom writes at most 8 bytes into the 8-byte buffer.
    let got = unsafe { libc::getrandom(r.as_mut_ptr().cast(), 8, libc::GRND_NONBLOCK) };
    let random = if got == 8 { u64::from_ne_bytes(r) } else { 0 };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = COUNTER
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ nanos
        ^ ((std::process::id() as u64) << 32)
        ^ (&r as *const [u8; 8] as usize as u64);
    // splitmix64's finalizer.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    random ^ x ^ (x >> 31)
}

/// A new file `.<name>.tmp-<16 hex digits>` in `dir`, created with O_CREAT | O_EXCL |
/// O_NOFOLLOW (so nothing planted at the name, a symbolic link included, is ever opened)
/// and mode 0666 less the umask.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> std::io::Result<(PathBuf, File)> {
    // Keep the temporary name within NAME_MAX (255 bytes).
    let stem = &name.as_bytes()[..name.len().min(200)];
    let mut last = std::io::Error::from_raw_os_error(libc::EEXIST);
    for _ in 0..16 {
        let mut n = b".".to_vec();
        n.extend_from_slice(stem);
        n.extend_from_slice(format!(".tmp-{:016x}", temp_suffix()).as_bytes());
        let tmp = dir.join(OsString::from_vec(n));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Removes the temporary file when dropped, unless it was renamed into place.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Flushes `dir`'s entries (the rename) to disk. A file system that cannot sync a
/// directory (EINVAL), or a directory this process may write but not open, is skipped.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let d = match File::open(dir) {
        Ok(d) => d,
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => return Ok(()),
        Err(e) => return Err(e),
    };
    match d.sync_all() {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        r => r,
    }
}

/// Replaces the file at `path` with one holding `parts`, atomically: a reader (or a
/// mapping) of `path` sees the old file or the new one, whole, never a partial one, and
/// two saves of one path at once each land whole (the later rename wins).
///
/// - The data goes to a new temporary file next to the destination, under a name no one can
///   predict or share (see [`create_temp`]), is fsynced, renamed over the destination, and
///   the directory is fsynced. On every failure the temporary file is removed.
/// - A symbolic link at `path` is followed to its final target, which is replaced (the link
///   stays a link; a dangling link gets its target created), as `numpy.save` writes through.
/// - The destination's permission bits (and owner and group, where this process may set
///   them) are kept; a new file gets 0666 less the umask.
/// - A destination that is not a regular file (a directory, FIFO, socket, device) is
///   refused with Io before anything is written.
pub(crate) fn write_atomically(path: &Path, parts: &[&[u8]]) -> Result<()> {
    let target = final_target(path)?;
    let shown = if target == path {
        format!("'{}'", path.display())
    } else {
        format!(
            "'{}' (a symbolic link to '{}')",
            path.display(),
            target.display()
        )
    };
    let old = match std::fs::symlink_metadata(&target) {
        Ok(m) => {
            ensure!(
                m.file_type().is_file(),
                Io,
                "cannot save to {shown}: it is {}, and a save replaces only a regular file",
                file_kind(m.mode())
            );
            Some(m)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(format_args!("cannot save to {shown}"), e)),
    };
    let Some(name) = target.file_name() else {
        bail!(Io, "cannot save to {shown}: it names no file");
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let (tmp_path, mut f) = create_temp(dir, name).map_err(|e| {
        io_error(
            format_args!(
                "cannot save to {shown}: cannot create a temporary file in '{}'",
                dir.display()
            ),
            e,
        )
    })?;
    let mut tmp = TempFile(Some(tmp_path));
    let written = (|| {
        for p in parts {
            f.write_all(p)?;
        }
        if let Some(m) = &old {
            // Owner first: chown clears the set-user-ID and set-group-ID bits.
            let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
            f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
                m.mode() & 0o7777,
            ))?;
        }
        f.sync_all()
    })();
    written.map_err(|e| io_error(format_args!("cannot write {shown}"), e))?;
    drop(f);
    let tmp_path = tmp.0.as_deref().unwrap_or(Path::new(""));
    std::fs::rename(tmp_path, &target)
        .map_err(|e| io_error(format_args!("cannot replace {shown}"), e))?;
    // Renamed into place: nothing left to remove.
    tmp.0 = None;
    sync_dir(dir).map_err(|e| {
        io_error(
            format_args!(
                "saved {shown}, but cannot flush its directory '{}' to disk",
                dir.display()
            ),
            e,
        )
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

//! Memory sources beyond the allocator: memory-mapped files, shared memory between
//! processes, and the two file formats loaded over a mapping without copying
//! (`.safetensors` and NumPy's `.npy`). Every storage made here is an ordinary external
//! storage of kind [`Mapped`](crate::storage::StorageKind::Mapped).

pub mod mmap;
pub mod npy;
pub mod safetensors;

use crate::error::{Error, Result, Status};
use crate::storage::Storage;
use std::ffi::{c_char, c_int};
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// Nothing here may abort on an exhausted heap: messages are formatted into the error's
// fallible message, OS error texts come from a stack buffer ([`OsError`]), and paths are
// handed to the kernel from a stack buffer ([`CPath`]), not through std's path calls
// (which copy a path of 384 bytes or more into a heap `CString`).

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
pub(crate) fn io_error(what: impl fmt::Display, e: std::io::Error) -> Error {
    Error::from_fmt(io_status(&e), format_args!("{what}: {}", OsError(&e)))
}

/// An I/O error shown as std shows it ("No such file or directory (os error 2)"), but an
/// OS error's text is read into a stack buffer (std's `Display` allocates a `String`).
pub(crate) struct OsError<'a>(pub &'a std::io::Error);

impl fmt::Display for OsError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(code) = self.0.raw_os_error() else {
            // A kind or a static message (the only others made here): nothing allocated.
            return fmt::Display::fmt(self.0, f);
        };
        let mut buf = [0 as c_char; 128];
        // SAFETY: strerror_r (the XSI one) writes a NUL-terminated text of at most
        // buf.len() bytes into buf; for an unknown code it fails with EINVAL but still
        // writes "Unknown error N", which std shows too.
        unsafe { libc::strerror_r(code, buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by strerror_r (or still all zeros).
        let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_bytes();
        if !text.is_empty() {
            write!(f, "{} (os error {code})", text.escape_ascii())
        } else {
            write!(f, "os error {code}")
        }
    }
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

const PATH_MAX: usize = libc::PATH_MAX as usize;

/// A path as a NUL-terminated string on the stack, of fewer than `PATH_MAX` bytes (the
/// kernel refuses longer path arguments with ENAMETOOLONG, as this does): the system
/// calls on paths here go through it, so none allocates.
pub(crate) struct CPath {
    buf: [u8; PATH_MAX],
    len: usize,
}

impl CPath {
    fn empty() -> CPath {
        CPath {
            buf: [0; PATH_MAX],
            len: 0,
        }
    }

    /// A copy of `path`: ENAMETOOLONG when it is too long, InvalidInput when it holds a
    /// NUL byte (neither allocates).
    pub(crate) fn new(path: &Path) -> std::io::Result<CPath> {
        let mut p = CPath::empty();
        p.push(path.as_os_str().as_bytes())?;
        Ok(p)
    }

    fn push(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.contains(&0) {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        let end = self.len + bytes.len();
        if end >= PATH_MAX {
            return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        self.buf[self.len..end].copy_from_slice(bytes);
        self.buf[end] = 0;
        self.len = end;
        Ok(())
    }

    /// `dir` joined with `name`, as `Path::join` joins a relative name.
    fn join(dir: &Path, name: &[u8]) -> std::io::Result<CPath> {
        let mut p = CPath::new(dir)?;
        if p.len > 0 && p.buf[p.len - 1] != b'/' {
            p.push(b"/")?;
        }
        p.push(name)?;
        Ok(p)
    }

    pub(crate) fn as_path(&self) -> &Path {
        Path::new(std::ffi::OsStr::from_bytes(&self.buf[..self.len]))
    }

    fn as_ptr(&self) -> *const c_char {
        self.buf.as_ptr().cast()
    }
}

fn cvt(r: c_int) -> std::io::Result<c_int> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `open(path, flags | O_CLOEXEC, mode)`.
pub(crate) fn open_path(path: &Path, flags: c_int, mode: libc::mode_t) -> std::io::Result<File> {
    let p = CPath::new(path)?;
    // SAFETY: a NUL-terminated path; the descriptor returned is fresh and ours.
    let fd = cvt(unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, mode) })?;
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// `lstat(path)`.
fn lstat(path: &CPath) -> std::io::Result<libc::stat> {
    // SAFETY: libc::stat is plain integers, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path; lstat writes into the struct we pass.
    cvt(unsafe { libc::lstat(path.as_ptr(), &mut st) })?;
    Ok(st)
}

/// The file `path` names once its symbolic links are followed (each relative target read
/// against its link's directory), up to the kernel's limit of 40 links; `path` itself when
/// it is no link. The result may not exist (a dangling link: a save creates its target).
fn final_target(path: &Path) -> Result<CPath> {
    let mut p = CPath::new(path)
        .map_err(|e| io_error(format_args!("cannot save to '{}'", path.display()), e))?;
    for _ in 0..=40 {
        match lstat(&p) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                let cannot_read = |e| {
                    io_error(
                        format_args!("cannot read the link '{}'", p.as_path().display()),
                        e,
                    )
                };
                let mut link = [0u8; PATH_MAX];
                // SAFETY: readlink writes at most link.len() bytes into link.
                let n = unsafe { libc::readlink(p.as_ptr(), link.as_mut_ptr().cast(), PATH_MAX) };
                if n < 0 {
                    return Err(cannot_read(std::io::Error::last_os_error()));
                }
                let link = &link[..n as usize];
                let next = match p.as_path().parent() {
                    Some(dir) if link.first() != Some(&b'/') => CPath::join(dir, link),
                    _ => CPath::new(Path::new(std::ffi::OsStr::from_bytes(link))),
                };
                p = next.map_err(cannot_read)?;
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
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> std::io::Result<(CPath, File)> {
    // Keep the temporary name within NAME_MAX (255 bytes).
    let stem = &name.as_bytes()[..name.len().min(200)];
    let mut last = std::io::Error::from_raw_os_error(libc::EEXIST);
    for _ in 0..16 {
        let mut n = [0u8; 1 + 200 + 5 + 16];
        n[0] = b'.';
        n[1..1 + stem.len()].copy_from_slice(stem);
        let tail = &mut n[1 + stem.len()..];
        tail[..5].copy_from_slice(b".tmp-");
        let x = temp_suffix();
        for (i, c) in tail[5..21].iter_mut().enumerate() {
            *c = b"0123456789abcdef"[(x >> (60 - 4 * i)) as usize & 0xf];
        }
        let tmp = CPath::join(dir, &n[..1 + stem.len() + 21])?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        match open_path(tmp.as_path(), flags, 0o666) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Removes the temporary file when dropped, unless it was renamed into place.
struct TempFile(Option<CPath>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::unlink(p.as_ptr()) };
        }
    }
}

/// Flushes `dir`'s entries (the rename) to disk. A file system that cannot sync a
/// directory (EINVAL), or a directory this process may write but not open, is skipped.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let d = match open_path(dir, libc::O_RDONLY, 0) {
        Ok(d) => d,
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => return Ok(()),
        Err(e) => return Err(e),
    };
    match d.sync_all() {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        r => r,
    }
}

/// How a save names its destination: "'path'", or "'path' (a symbolic link to 'target')".
struct Shown<'a> {
    path: &'a Path,
    target: &'a Path,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.target == self.path {
            write!(f, "'{}'", self.path.display())
        } else {
            write!(
                f,
                "'{}' (a symbolic link to '{}')",
                self.path.display(),
                self.target.display()
            )
        }
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
    let target_c = final_target(path)?;
    let target = target_c.as_path();
    let shown = Shown { path, target };
    let old = match lstat(&target_c) {
        Ok(m) => {
            ensure!(
                m.st_mode & libc::S_IFMT == libc::S_IFREG,
                Io,
                "cannot save to {shown}: it is {}, and a save replaces only a regular file",
                file_kind(m.st_mode)
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
            let _ = std::os::unix::fs::fchown(&f, Some(m.st_uid), Some(m.st_gid));
            f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
                m.st_mode & 0o7777,
            ))?;
        }
        f.sync_all()
    })();
    written.map_err(|e| io_error(format_args!("cannot write {shown}"), e))?;
    drop(f);
    if let Some(t) = &tmp.0 {
        // SAFETY: two NUL-terminated paths.
        cvt(unsafe { libc::rename(t.as_ptr(), target_c.as_ptr()) })
            .map_err(|e| io_error(format_args!("cannot replace {shown}"), e))?;
    }
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

/// What a loader makes of a mapped file (a tensor, a file of tensors).
pub(crate) trait OverMapping {
    /// A part loaded as a copy (big-endian or misaligned data) instead of as a view of
    /// `storage`, the mapping, for the message refusing a shared mapping; None when every
    /// part views it.
    fn copied(&self, storage: &Storage) -> Option<impl fmt::Display + '_>;
}

/// Loads the `format` file at `path` as the loaders do: maps the whole file with `mode`
/// and makes `T` of the mapping with `make` (its errors prefixed with the path). With
/// `MapMode::Shared`, a part of the result that `make` loaded as a copy instead of as a
/// view of the mapping is refused (DType): writes to it would not reach the file.
/// `ReadOnly` mappings make read-only storages; `Private` ones writable copy-on-write
/// pages that never reach the file.
pub(crate) fn load_mapped<T: OverMapping>(
    path: &Path,
    mode: mmap::MapMode,
    format: &str,
    make: impl FnOnce(&Storage) -> Result<T>,
) -> Result<T> {
    let storage = mmap::map_whole_file(path, mode, format)?;
    let made = make(&storage).map_err(|e| {
        Error::from_fmt(e.status, format_args!("'{}': {}", path.display(), e.text()))
    })?;
    if mode == mmap::MapMode::Shared {
        if let Some(what) = made.copied(&storage) {
            bail!(
                DType,
                "'{}' holds {what}, which is loaded as a copy: it cannot be mapped shared read-write",
                path.display()
            );
        }
    }
    Ok(made)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_read_as_std_shows_them() {
        for code in [
            libc::ENOENT,
            libc::EACCES,
            libc::ENOMEM,
            libc::EISDIR,
            0,
            9999,
        ] {
            let e = std::io::Error::from_raw_os_error(code);
            assert_eq!(OsError(&e).to_string(), e.to_string());
        }
        let e = std::io::Error::from(std::io::ErrorKind::InvalidInput);
        assert_eq!(OsError(&e).to_string(), e.to_string());
    }

    #[test]
    fn stack_paths_join_as_path_join_and_refuse_what_the_kernel_refuses() {
        for (dir, name) in [
            ("a/b", "c"),
            ("a/b/", "c"),
            ("/", "c"),
            ("", "c"),
            (".", "x"),
        ] {
            let p = CPath::join(Path::new(dir), name.as_bytes()).unwrap();
            assert_eq!(p.as_path(), Path::new(dir).join(name));
            // SAFETY: the buffer is NUL-terminated after the path.
            let c = unsafe { std::ffi::CStr::from_ptr(p.as_ptr()) };
            assert_eq!(c.to_bytes(), p.as_path().as_os_str().as_bytes());
        }
        let long = "x".repeat(PATH_MAX);
        let e = CPath::new(Path::new(&long[..PATH_MAX - 1])).map(|p| p.len);
        assert_eq!(e.ok(), Some(PATH_MAX - 1));
        let e = CPath::new(Path::new(&long)).err().unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::ENAMETOOLONG));
        let e = CPath::new(Path::new("a\0b")).err().unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}

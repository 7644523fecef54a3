//! Storages over memory mappings: a file region, a received file descriptor, or an
//! anonymous shared-memory segment (`memfd_create`). Each is an ordinary external storage
//! (kind [`StorageKind::Mapped`]) whose deleter unmaps the region (and closes the
//! descriptor it keeps, if any) when the last strong reference dies. Nothing is copied:
//! the storage's data pointer is inside the mapping.
//!
//! A mapped file that another process truncates under the mapping makes later reads fault
//! (SIGBUS), as with `numpy.memmap` and `torch.UntypedStorage.from_file`; shared-memory
//! segments made here are sealed against shrinking, so their receivers are safe from that.

use super::{file_kind, io_error, io_status, open_path};
use crate::device::Device;
use crate::error::{Error, Result, Status};
use crate::storage::{Blob, MappedObject, Storage, StorageImpl, StorageKind};
use std::ffi::c_void;
use std::fmt::Display;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// How a region is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapMode {
    /// Read-only pages; the storage is read-only (every writer refuses).
    ReadOnly,
    /// Read-write, shared: writes reach the file (and every other mapping of it).
    Shared,
    /// Read-write, private copy-on-write: writes stay in this process.
    Private,
}

impl MapMode {
    pub fn from_code(code: i32) -> Option<MapMode> {
        match code {
            0 => Some(MapMode::ReadOnly),
            1 => Some(MapMode::Shared),
            2 => Some(MapMode::Private),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            MapMode::ReadOnly => "read-only",
            MapMode::Shared => "shared read-write",
            MapMode::Private => "private copy-on-write",
        }
    }
}

/// A mapped storage's deleter context: what it maps first (the storage reads it there,
/// `StorageImpl::wrap`), then what the deleter needs: the page-aligned mapping and
/// the descriptor kept (or -1).
#[repr(C)]
struct Mapping {
    object: MappedObject,
    base: *mut c_void,
    len: usize,
    fd: RawFd,
}

/// The deleter of a mapped storage: unmaps the region and closes the kept descriptor.
///
/// # Safety
/// `ctx` is the `Box<Mapping>` made in `map_fd`, passed to exactly one call (the storage
/// calls its deleter once; `map_fd` calls it itself only when no storage took `ctx`), and
/// nothing uses the mapping afterwards.
unsafe extern "C" fn unmap(_data: *mut c_void, ctx: *mut c_void) {
    // SAFETY: the contract: ctx is ours to take back, once.
    let m = unsafe { Box::from_raw(ctx as *mut Mapping) };
    // SAFETY: m.base / m.len are the mapping mmap made, unused from now on (contract).
    unsafe { libc::munmap(m.base, m.len) };
    if m.fd >= 0 {
        // SAFETY: the descriptor the mapping kept (from an OwnedFd given up in map_fd), closed
        // once, here.
        unsafe { libc::close(m.fd) };
    }
}

/// Size of the object behind `fd`: a regular file's length, or a block device's. Anything
/// else (a directory, FIFO, socket, character device) is refused with Io naming `what` and
/// its kind: none is a file of bytes to map.
pub(crate) fn fd_size(fd: RawFd, what: &dyn Display) -> Result<u64> {
    fd_stat(fd, what).map(|(size, _)| size)
}

/// Size of the object behind `fd` and its identity (`st_dev`, `st_ino`).
fn fd_stat(fd: RawFd, what: &dyn Display) -> Result<(u64, (u64, u64))> {
    // SAFETY: libc::stat is plain integers, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into the struct we pass; an invalid fd gives EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io_error(
            format_args!("cannot stat {what}"),
            std::io::Error::last_os_error(),
        ));
    }
    let identity = (st.st_dev as u64, st.st_ino as u64);
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Ok((st.st_size.max(0) as u64, identity)),
        libc::S_IFBLK => {
            // A block device's size is where its end is. The offset may be shared with a
            // caller's descriptor (storage_from_fd duplicates it): it is put back.
            // SAFETY: lseek on a descriptor we were given; failure is reported.
            let end = unsafe {
                let here = libc::lseek(fd, 0, libc::SEEK_CUR);
                let end = libc::lseek(fd, 0, libc::SEEK_END);
                if here >= 0 {
                    libc::lseek(fd, here, libc::SEEK_SET);
                }
                end
            };
            if end < 0 {
                return Err(io_error(
                    format_args!("cannot find the size of the block device {what}"),
                    std::io::Error::last_os_error(),
                ));
            }
            Ok((end as u64, identity))
        }
        _ => bail!(
            Io,
            "{what} is {}: only regular files and block devices can be mapped",
            file_kind(st.st_mode)
        ),
    }
}

/// Maps `nbytes` at byte `offset` of `fd` (`None`: to the end of the file). `what` names
/// the file in messages. `keep` is the descriptor the storage keeps (closed with the
/// mapping; closed here on failure). An offset that is not a page multiple is mapped from
/// the page boundary below it.
pub(crate) fn map_fd(
    fd: RawFd,
    what: &dyn Display,
    offset: u64,
    nbytes: Option<usize>,
    mode: MapMode,
    keep: Option<OwnedFd>,
) -> Result<Storage> {
    let (size, file) = fd_stat(fd, what)?;
    let nbytes = match nbytes {
        Some(n) => n as u64,
        None => {
            ensure!(
                offset <= size,
                OutOfBounds,
                "offset {offset} is past the end of {what} ({size} bytes)"
            );
            size - offset
        }
    };
    ensure!(
        nbytes > 0,
        InvalidArgument,
        "cannot map a zero-length region (offset {offset}) of {what} ({size} bytes)"
    );
    let end = offset.checked_add(nbytes);
    ensure!(
        end.is_some_and(|e| e <= size),
        OutOfBounds,
        "region of {nbytes} bytes at offset {offset} is past the end of {what} ({size} bytes)"
    );
    let delta = offset % crate::allocator::page_size() as u64;
    let map_len = nbytes + delta;
    ensure!(
        map_len <= isize::MAX as u64 && offset - delta <= i64::MAX as u64,
        Overflow,
        "region of {nbytes} bytes at offset {offset} of {what} exceeds the address space"
    );
    let (prot, flags) = match mode {
        MapMode::ReadOnly => (libc::PROT_READ, libc::MAP_SHARED),
        MapMode::Shared => (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED),
        MapMode::Private => (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE),
    };
    // SAFETY: a fresh mapping chosen by the kernel; arguments checked above.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len as usize,
            prot,
            flags,
            fd,
            (offset - delta) as libc::off_t,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io_error(
            format_args!(
                "cannot map {nbytes} bytes at offset {offset} of {what} {}",
                mode.name()
            ),
            std::io::Error::last_os_error(),
        ));
    }
    let mapping = Mapping {
        base,
        len: map_len as usize,
        fd: keep.map_or(-1, std::os::fd::IntoRawFd::into_raw_fd),
        object: MappedObject {
            file,
            offset,
            shared: flags == libc::MAP_SHARED,
        },
    };
    let ctx = match crate::error::try_box(mapping) {
        Ok(b) => Box::into_raw(b),
        Err(m) => {
            // SAFETY: the mapping and the descriptor just made, used by nothing else.
            unsafe {
                libc::munmap(m.base, m.len);
                if m.fd >= 0 {
                    libc::close(m.fd);
                }
            }
            bail!(
                OutOfMemory,
                "failed to allocate the bookkeeping of a mapping of {what}"
            );
        }
    };
    // SAFETY: delta < map_len: the data pointer is inside the mapping.
    let data = unsafe { (base as *mut u8).add(delta as usize) } as *mut c_void;
    let blob = Blob {
        data,
        device: Device::CPU,
        deleter: Some(unmap),
        ctx: ctx as *mut c_void,
    };
    // SAFETY: ctx is a live Box<Mapping>, repr(C) with its MappedObject first, freed only by
    // the deleter (unmap).
    match unsafe { StorageImpl::wrap(blob, nbytes as usize, StorageKind::Mapped) } {
        Ok(s) => {
            if mode == MapMode::ReadOnly {
                s.mark_read_only();
            }
            Ok(s)
        }
        Err(e) => {
            // SAFETY: the storage was not made (or was disarmed): we still own ctx.
            unsafe { unmap(data, ctx as *mut c_void) };
            Err(e)
        }
    }
}

/// Opens `path` for mapping with `mode`: the one place a file is opened for loading.
/// O_NONBLOCK keeps open() from waiting for a writer when `path` is a FIFO (or for a
/// device); the file must then be a regular file or a block device ([`fd_size`]), and the
/// flag is cleared again.
fn open(path: &Path, mode: MapMode) -> Result<std::fs::File> {
    let access = if mode == MapMode::Shared {
        libc::O_RDWR
    } else {
        libc::O_RDONLY
    };
    let f = open_path(path, access | libc::O_NONBLOCK, 0).map_err(|e| {
        let how = if mode == MapMode::Shared {
            "reading and writing"
        } else {
            "reading"
        };
        io_error(
            format_args!("cannot open '{}' for {how}", path.display()),
            e,
        )
    })?;
    fd_size(f.as_raw_fd(), &Quoted(path))?;
    // SAFETY: fcntl on the descriptor we own; failure is reported.
    let cleared = unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        flags >= 0 && libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        return Err(io_error(
            format_args!("cannot set up '{}' for mapping", path.display()),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(f)
}

/// A file named in messages: "'path'".
struct Quoted<'a>(&'a Path);

impl Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}'", self.0.display())
    }
}

/// A descriptor named in messages: "file descriptor 7".
struct FdName(RawFd);

impl Display for FdName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "file descriptor {}", self.0)
    }
}

/// A storage over `nbytes` at `offset` of the file at `path` (`None`: to its end).
pub fn map_file(path: &Path, offset: u64, nbytes: Option<usize>, mode: MapMode) -> Result<Storage> {
    let f = open(path, mode)?;
    map_fd(f.as_raw_fd(), &Quoted(path), offset, nbytes, mode, None)
}

/// The whole file at `path`; an empty file is an I/O error naming `format` (what the
/// caller expected to find there).
pub(crate) fn map_whole_file(path: &Path, mode: MapMode, format: &str) -> Result<Storage> {
    let f = open(path, mode)?;
    let what = Quoted(path);
    let size = fd_size(f.as_raw_fd(), &what)?;
    ensure!(
        size > 0,
        Io,
        "{what} is empty (0 bytes): not a {format} file"
    );
    map_fd(f.as_raw_fd(), &what, 0, None, mode, None)
}

/// A storage over a region of a descriptor the caller keeps (it is duplicated: the
/// storage's copy is what [`storage_fd`] returns, so the segment can be passed on).
pub fn map_descriptor(
    fd: RawFd,
    offset: u64,
    nbytes: Option<usize>,
    mode: MapMode,
) -> Result<Storage> {
    ensure!(fd >= 0, InvalidArgument, "invalid file descriptor {fd}");
    // SAFETY: F_DUPFD_CLOEXEC on a caller's descriptor; failure is reported.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(io_error(
            format_args!("cannot duplicate file descriptor {fd}"),
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: dup is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(dup) };
    map_fd(dup, &FdName(fd), offset, nbytes, mode, Some(owned))
}

/// A new anonymous shared-memory storage of `nbytes` zeroed bytes (`memfd_create`), read-
/// write, whose descriptor ([`storage_fd`]) can be sent to another process. The segment is
/// sealed against shrinking and growing, so no holder can make another's mapping fault.
pub fn new_shared(nbytes: usize) -> Result<Storage> {
    ensure!(
        nbytes > 0,
        InvalidArgument,
        "cannot create a zero-length shared-memory storage"
    );
    ensure!(
        nbytes <= isize::MAX as usize,
        Overflow,
        "shared-memory storage of {nbytes} bytes exceeds the address space"
    );
    // SAFETY: a NUL-terminated name and flags.
    let fd = unsafe {
        libc::memfd_create(
            c"libtensor-shared".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(io_error(
            "memfd_create failed",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fd is a fresh descriptor we own (closed on every failure path below).
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: plain syscalls on our descriptor.
    if unsafe { libc::ftruncate(fd, nbytes as libc::off_t) } != 0 {
        let e = std::io::Error::last_os_error();
        // A memfd lives in memory: no space there (ENOSPC) is no memory.
        let status = if e.raw_os_error() == Some(libc::ENOSPC) {
            Status::OutOfMemory
        } else {
            io_status(&e)
        };
        return Err(Error::from_fmt(
            status,
            format_args!(
                "cannot size the shared-memory segment to {nbytes} bytes: {}",
                super::OsError(&e)
            ),
        ));
    }
    // Advisory hardening: a kernel without sealing still gives a working segment.
    // SAFETY: as above.
    unsafe {
        libc::fcntl(
            fd,
            libc::F_ADD_SEALS,
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
        )
    };
    map_fd(
        fd,
        &"shared-memory segment",
        0,
        Some(nbytes),
        MapMode::Shared,
        Some(owned),
    )
}

/// The mapping behind a mapped storage, `None` for other kinds.
fn mapping_of(s: &StorageImpl) -> Option<&Mapping> {
    let ctx = s.external_ctx();
    if s.kind() != StorageKind::Mapped || ctx.is_null() {
        return None;
    }
    // SAFETY: a live Mapped storage's ctx is its Mapping (map_fd is the only maker of Mapped
    // storages), freed only by the storage's deleter, which cannot run while `s` is borrowed.
    Some(unsafe { &*(ctx as *const Mapping) })
}

/// The descriptor a shared-memory storage (or one mapped from a descriptor) keeps: valid
/// while the storage lives; send it with `SCM_RIGHTS` (which duplicates it).
pub fn storage_fd(s: &StorageImpl) -> Result<RawFd> {
    let Some(m) = mapping_of(s) else {
        bail!(
            InvalidArgument,
            "the storage is not a mapping (kind {:?}): only shared-memory storages and storages mapped from a descriptor have one",
            s.kind()
        );
    };
    let fd = m.fd;
    ensure!(
        fd >= 0,
        InvalidArgument,
        "the storage maps a file opened by path and keeps no descriptor (map the descriptor with storage_from_fd to keep one)"
    );
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn err<T>(r: Result<T>) -> Error {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("libtensor-{}-{name}", std::process::id()));
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        p
    }

    #[test]
    fn map_unaligned_offset_and_modes() {
        let bytes: Vec<u8> = (0..10000u32).map(|i| (i % 251) as u8).collect();
        let p = temp_file("modes", &bytes);
        let s = map_file(&p, 4099, Some(100), MapMode::ReadOnly).unwrap();
        assert_eq!(s.kind(), StorageKind::Mapped);
        assert!(s.is_read_only() && !s.is_resizable());
        // SAFETY: the storage's 100 mapped bytes, read while it lives.
        let got = unsafe { std::slice::from_raw_parts(s.data_ptr(), 100) };
        assert_eq!(got, &bytes[4099..4199]);
        assert_eq!(err(storage_fd(&s)).status, Status::InvalidArgument);
        // Private: writes stay here; shared: they reach the file.
        let c = map_file(&p, 0, None, MapMode::Private).unwrap();
        assert_eq!(c.nbytes(), 10000);
        // SAFETY: byte 0 of a live 10000-byte writable (private) mapping.
        unsafe { *c.data_ptr() = 200 };
        drop(c);
        assert_eq!(std::fs::read(&p).unwrap()[0], 0);
        let w = map_file(&p, 1, Some(1), MapMode::Shared).unwrap();
        // SAFETY: the one byte of a live writable (shared) mapping.
        unsafe { *w.data_ptr() = 77 };
        drop(w);
        assert_eq!(std::fs::read(&p).unwrap()[1], 77);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn map_errors() {
        let p = temp_file("errs", &[1, 2, 3, 4]);
        let e = err(map_file(&p, 2, Some(3), MapMode::ReadOnly));
        assert_eq!(e.status, Status::OutOfBounds);
        assert!(e.message.contains("3 bytes at offset 2") && e.message.contains("(4 bytes)"));
        let e = err(map_file(&p, 4, None, MapMode::ReadOnly));
        assert_eq!(e.status, Status::InvalidArgument);
        let e = err(map_file(&p, u64::MAX, Some(2), MapMode::ReadOnly));
        assert_eq!(e.status, Status::OutOfBounds);
        let missing = p.with_extension("missing");
        let e = err(map_file(&missing, 0, None, MapMode::ReadOnly));
        assert_eq!(e.status, Status::Io);
        assert!(e.message.contains("No such file"), "{}", e.message);
        let e = err(map_file(&std::env::temp_dir(), 0, None, MapMode::ReadOnly));
        assert_eq!(e.status, Status::Io);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn shared_segment_round_trip_through_its_descriptor() {
        let s = new_shared(8192).unwrap();
        assert_eq!(s.kind(), StorageKind::Mapped);
        // SAFETY: byte 5000 of the live 8192-byte read-write segment.
        unsafe { s.data_ptr().add(5000).write(42) };
        let fd = storage_fd(&s).unwrap();
        let r = map_descriptor(fd, 0, None, MapMode::ReadOnly).unwrap();
        assert!(r.is_read_only());
        // SAFETY: byte 5000 of r's live 8192-byte mapping.
        assert_eq!(unsafe { *r.data_ptr().add(5000) }, 42);
        assert_ne!(
            storage_fd(&r).unwrap(),
            fd,
            "the receiver keeps its own copy"
        );
        drop(s);
        // SAFETY: as above; r is still alive.
        let after = unsafe { *r.data_ptr().add(5000) };
        assert_eq!(after, 42, "outlives the creator");
        assert_eq!(err(new_shared(0)).status, Status::InvalidArgument);
        assert_eq!(
            err(map_descriptor(-1, 0, None, MapMode::ReadOnly)).status,
            Status::InvalidArgument
        );
    }
}

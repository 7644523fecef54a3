//! The file a model's code is `dlopen`ed from: an anonymous file of this process, never a
//! name in a shared directory.
//!
//! `memfd_create` (close-on-exec; `MFD_EXEC` where the kernel knows it, since
//! `vm.memfd_noexec=1` makes memfds non-executable unless asked) holds the bytes; the
//! library is opened as `/proc/self/fd/N`. Only if the kernel has no usable memfd (ENOSYS,
//! or `vm.memfd_noexec=2` refusing `MFD_EXEC`) does it fall back to an unnamed `O_TMPFILE`
//! file (mode 0600) in `$TMPDIR`, then to a file in a fresh 0700 `mkdtemp` directory, both
//! removed before `dlopen` (they too are opened through `/proc/self/fd/N`). So no other
//! user can read or pre-create the model's code, nothing is left behind by a crash, and a
//! noexec `/tmp` does not matter.
//!
//! The descriptor stays open for the model's life: AOTInductor's runtime reopens its own
//! file by the name `dladdr` gives it (`USE_MMAP_SELF`, `aot_inductor.force_mmap_weights`:
//! weights appended to the `.so`), and that name is `/proc/self/fd/N`.
//!
//! glibc's `dlopen` returns an already loaded library of the same name, and a released
//! model can stay mapped (thread-local destructors pending) while a later load reuses its
//! descriptor number: every load spells its path differently (`/proc/self/fd/././/N`,
//! a counter in `./` and `/` steps), so no two loads of the process share a name.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{err, Result};
use crate::sys;

pub struct CodeFile {
    fd: OwnedFd,
    path: CString,
    /// How the file was made (for messages and tests): "memfd", "O_TMPFILE", "mkdtemp".
    pub kind: &'static str,
}

const MFD_CLOEXEC: libc::c_uint = 0x1;
const MFD_ALLOW_SEALING: libc::c_uint = 0x2;
const MFD_EXEC: libc::c_uint = 0x10;

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn memfd(flags: libc::c_uint) -> std::result::Result<OwnedFd, std::io::Error> {
    // SAFETY: the name is a NUL-terminated string; memfd_create takes no other pointer.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, c"tensor_aoti_model".as_ptr(), flags) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: fd is a descriptor the kernel just returned to this process, owned by no one
    // else: OwnedFd closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn tmpdir() -> std::path::PathBuf {
    std::env::temp_dir()
}

fn o_tmpfile() -> std::result::Result<OwnedFd, std::io::Error> {
    let dir = CString::new(tmpdir().as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: dir is a NUL-terminated path; O_TMPFILE makes an unnamed file (mode 0600)
    // that no other process can open by name.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC | libc::O_EXCL,
            0o600,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a descriptor just returned by open, owned here alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn mkdtemp_file() -> std::result::Result<OwnedFd, std::io::Error> {
    let mut template = tmpdir()
        .join("tensor_aoti-XXXXXX")
        .into_os_string()
        .into_encoded_bytes();
    template.push(0);
    // SAFETY: template is a writable NUL-terminated buffer ending in XXXXXX, as mkdtemp
    // requires; it makes a fresh directory of mode 0700.
    if unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) }.is_null() {
        return Err(errno());
    }
    template.pop();
    let dir = std::path::PathBuf::from(std::ffi::OsString::from_vec(template));
    let file = dir.join("model.so");
    let r = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&file);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir(&dir);
    Ok(OwnedFd::from(r?))
}

impl CodeFile {
    /// An empty anonymous file for a model's code (see the module doc for the order tried).
    pub fn create() -> Result<CodeFile> {
        let mut why = Vec::new();
        let made = match memfd(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC) {
            Ok(fd) => Some((fd, "memfd")),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // A kernel before 6.3: no MFD_EXEC, and memfds are executable.
                match memfd(MFD_CLOEXEC | MFD_ALLOW_SEALING) {
                    Ok(fd) => Some((fd, "memfd")),
                    Err(e) => {
                        why.push(format!("memfd_create: {e}"));
                        None
                    }
                }
            }
            Err(e) => {
                why.push(format!("memfd_create(MFD_EXEC): {e}"));
                None
            }
        };
        let made = match made {
            Some(m) => Some(m),
            None => match o_tmpfile() {
                Ok(fd) => Some((fd, "O_TMPFILE")),
                Err(e) => {
                    why.push(format!("O_TMPFILE in {}: {e}", tmpdir().display()));
                    match mkdtemp_file() {
                        Ok(fd) => Some((fd, "mkdtemp")),
                        Err(e) => {
                            why.push(format!("mkdtemp in {}: {e}", tmpdir().display()));
                            None
                        }
                    }
                }
            },
        };
        let Some((fd, kind)) = made else {
            return err(
                sys::TENSOR_ERR_IO,
                format!("no file to load the model's code from ({})", why.join("; ")),
            );
        };
        static LOADS: AtomicU64 = AtomicU64::new(0);
        let n = LOADS.fetch_add(1, Ordering::Relaxed);
        let mut path = String::from("/proc/self/fd/");
        if n > 0 {
            let bits = 64 - n.leading_zeros();
            for b in (0..bits).rev() {
                path.push_str(if n >> b & 1 == 1 { "./" } else { "/" });
            }
        }
        path.push_str(&fd.as_raw_fd().to_string());
        Ok(CodeFile {
            fd,
            path: CString::new(path).expect("no NUL in a /proc path"),
            kind,
        })
    }

    /// The file, for writing the code into (a new handle on the same descriptor).
    pub fn file(&self) -> Result<File> {
        self.fd.try_clone().map(File::from).or_else(|e| {
            err(
                sys::TENSOR_ERR_IO,
                format!("dup of the model's code file: {e}"),
            )
        })
    }

    /// Runs `f` on the file's bytes, mapped shared and writable (changes land in the file).
    pub fn edit<T>(&self, f: impl FnOnce(&mut [u8]) -> Result<T>) -> Result<T> {
        let len = self
            .file()?
            .metadata()
            .map_err(|e| crate::error::Error {
                status: sys::TENSOR_ERR_IO,
                msg: format!("the model's code file: {e}"),
            })?
            .len() as usize;
        if len == 0 {
            return err(sys::TENSOR_ERR_INVALID_ARGUMENT, "the model .so is empty");
        }
        // SAFETY: a fresh shared mapping of len bytes of the file (its length just read);
        // no other mapping of it exists in this process yet (dlopen comes after).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return err(
                sys::TENSOR_ERR_IO,
                format!("mapping the model's code file: {}", errno()),
            );
        }
        // SAFETY: p is the start of a readable and writable mapping of len bytes, used
        // only through this slice until the munmap below.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
        let r = f(bytes);
        // SAFETY: p/len is the mapping made above; the slice is not used after this.
        unsafe { libc::munmap(p, len) };
        r
    }

    /// Seals a memfd against growing and shrinking (before `dlopen`: nothing changes the
    /// code's size once it is loaded); a no-op for the fallbacks.
    pub fn seal_size(&self) {
        self.add_seals(libc::F_SEAL_GROW | libc::F_SEAL_SHRINK);
    }

    /// Seals a memfd against writes and further seals (after `release`: nothing changes
    /// the code once loaded); a no-op for the fallbacks.
    pub fn seal(&self) {
        self.add_seals(libc::F_SEAL_WRITE | libc::F_SEAL_SEAL);
    }

    fn add_seals(&self, seals: libc::c_int) {
        if self.kind == "memfd" {
            // SAFETY: fcntl on a descriptor this CodeFile owns; F_ADD_SEALS takes an int.
            unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_ADD_SEALS, seals) };
        }
    }

    /// Frees the file's whole pages inside `range` (bytes of the file) that nothing reads
    /// again, a hole that reads as zeros (a memfd's pages are memory: the process's own
    /// RSS). Whether the kernel punched it (a file system without holes leaves the bytes).
    pub fn release(&self, range: std::ops::Range<usize>) -> bool {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
        if page == 0 {
            return false;
        }
        let (a, b) = (range.start.next_multiple_of(page), range.end / page * page);
        let (Ok(at), Ok(len)) = (
            libc::off_t::try_from(a),
            libc::off_t::try_from(b.saturating_sub(a)),
        ) else {
            return false;
        };
        // SAFETY: fallocate on a descriptor this CodeFile owns; a hole in [at, at + len),
        // the file's size kept.
        len > 0
            && unsafe {
                libc::fallocate(
                    self.fd.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    at,
                    len,
                )
            } == 0
    }

    /// The path `dlopen` opens (`/proc/self/fd/...N`, unique for this load).
    pub fn path(&self) -> &std::ffi::CStr {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::CodeFile;
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn release_frees_only_the_whole_pages_inside_the_range() {
        let code = CodeFile::create().expect("a code file");
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let bytes: Vec<u8> = (0..4 * page).map(|i| (i % 251) as u8 + 1).collect();
        code.file().unwrap().write_all(&bytes).unwrap();
        let blocks = || code.file().unwrap().metadata().unwrap().blocks();
        let before = blocks();
        // From the middle of page 0 to the middle of page 3: pages 1 and 2 are freed.
        assert!(code.release(page / 2..3 * page + page / 2));
        let mut f = code.file().unwrap();
        f.rewind().unwrap();
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), bytes.len(), "the size is kept");
        assert_eq!(got[..page], bytes[..page]);
        assert!(got[page..3 * page].iter().all(|&b| b == 0));
        assert_eq!(got[3 * page..], bytes[3 * page..]);
        assert!(blocks() < before, "{} blocks, {before} before", blocks());
        // Less than a whole page: nothing to free.
        assert!(!code.release(page + 1..2 * page + 1));
        code.seal();
    }
}

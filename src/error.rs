//! Status codes and the error type every fallible core function returns.
//!
//! The numeric codes are part of the C ABI (`tensor_status_t`) and never change.

use std::ffi::CStr;
use std::fmt;
use std::ptr::NonNull;

/// Stable status codes; `Status as i32` is the C `tensor_status_t` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Status {
    Ok = 0,
    NullPointer = 1,
    InvalidArgument = 2,
    Index = 3,
    Shape = 4,
    NotViewable = 5,
    DType = 6,
    Device = 7,
    OutOfBounds = 8,
    Overflow = 9,
    OutOfMemory = 10,
    Overlap = 11,
    NotResizable = 12,
    ReadOnly = 13,
    Io = 14,
    Internal = 99,
}

impl Status {
    /// Every status, in code order (used by `tensor_status_string` and tests).
    pub const ALL: [Status; 16] = [
        Status::Ok,
        Status::NullPointer,
        Status::InvalidArgument,
        Status::Index,
        Status::Shape,
        Status::NotViewable,
        Status::DType,
        Status::Device,
        Status::OutOfBounds,
        Status::Overflow,
        Status::OutOfMemory,
        Status::Overlap,
        Status::NotResizable,
        Status::ReadOnly,
        Status::Io,
        Status::Internal,
    ];

    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL.iter().copied().find(|s| *s as i32 == code)
    }

    /// Static description (a C string: the C side hands out the pointer).
    pub fn description(self) -> &'static CStr {
        match self {
            Status::Ok => c"ok",
            Status::NullPointer => c"null pointer argument",
            Status::InvalidArgument => c"invalid argument",
            Status::Index => c"index out of range",
            Status::Shape => c"incompatible shape",
            Status::NotViewable => c"not viewable: use reshape",
            Status::DType => c"unsupported dtype",
            Status::Device => c"data not accessible from the host",
            Status::OutOfBounds => c"out of storage bounds",
            Status::Overflow => c"arithmetic overflow",
            Status::OutOfMemory => c"out of memory",
            Status::Overlap => c"destination elements overlap",
            Status::NotResizable => c"storage is not resizable",
            Status::ReadOnly => c"storage is read-only",
            Status::Io => {
                c"file error: cannot open, map or write the file, or its contents are malformed"
            }
            Status::Internal => c"internal error",
        }
    }

    /// [`description`](Self::description) as a Rust string.
    pub fn description_str(self) -> &'static str {
        // Every description is ASCII (a test checks).
        self.description().to_str().unwrap_or_default()
    }
}

/// A failed operation: a status plus a PyTorch-style message naming the offending values.
/// The FFI boundary prefixes the exported function's name. Boxed, so that a `Result` of a
/// handle or of `()` stays one or two registers wide on the (hot) success path; the fields
/// are read through `Deref` (`e.status`, `e.message`).
///
/// Making one never aborts the process: when the message or the box cannot be allocated
/// (an error raised while out of memory), the error is a static one of the same status
/// with an empty message, which `Display` and the C boundary show as the status's
/// description.
///
/// Why boxed: an unboxed `ErrorInner` (status + `String`) would make every `Result<Tensor>`
/// and `Result<()>` 32 bytes, returned through memory on each view call; one pointer keeps
/// `Result<()>` in one register (`errors_own_their_messages` checks the size) and the error
/// path's cost where it belongs, on the (cold) failure.
pub struct Error(NonNull<ErrorInner>);

// SAFETY: the pointee is an owned box (moved with the Error, freed once in Drop) or an
// immutable static; ErrorInner (a Status and a String) is Send.
unsafe impl Send for Error {}
// SAFETY: shared access only reads the pointee (Deref); ErrorInner is Sync.
unsafe impl Sync for Error {}

/// The contents of an [`Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorInner {
    pub status: Status,
    pub message: String,
}

macro_rules! fallbacks {
    ($($s:ident),*) => {
        [$(ErrorInner { status: Status::$s, message: String::new() }),*]
    };
}

/// One static error per status (empty message): see [`Error`]. A status added to
/// `Status::ALL` needs its entry here (a test checks).
static FALLBACK: [ErrorInner; 16] = fallbacks!(
    Ok,
    NullPointer,
    InvalidArgument,
    Index,
    Shape,
    NotViewable,
    DType,
    Device,
    OutOfBounds,
    Overflow,
    OutOfMemory,
    Overlap,
    NotResizable,
    ReadOnly,
    Io,
    Internal
);

/// A `fmt::Write` into a `String` that fails instead of aborting when it cannot grow: the
/// one way the library formats text while the heap may be exhausted (error messages,
/// file headers).
pub(crate) struct FallibleString(pub(crate) String);

impl FallibleString {
    pub(crate) fn new() -> FallibleString {
        FallibleString(String::new())
    }
}

/// `format!` that fails (`None`) instead of aborting when the text cannot be allocated.
pub(crate) fn try_format(args: fmt::Arguments<'_>) -> Option<String> {
    let mut text = FallibleString::new();
    fmt::write(&mut text, args).ok()?;
    Some(text.0)
}

/// `Box::new` that gives `v` back instead of aborting when the block cannot be allocated
/// (`T` must not be zero-sized).
pub(crate) fn try_box<T>(v: T) -> std::result::Result<Box<T>, T> {
    let layout = std::alloc::Layout::new::<T>();
    assert!(layout.size() > 0, "try_box of a zero-sized type");
    // SAFETY: a non-zero-sized layout; on success the block is initialised here and then
    // owned by the Box, which frees it with the same (global) allocator and layout.
    unsafe {
        let p = std::alloc::alloc(layout) as *mut T;
        if p.is_null() {
            return Err(v);
        }
        p.write(v);
        Ok(Box::from_raw(p))
    }
}

impl fmt::Write for FallibleString {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.try_reserve(s.len()).map_err(|_| fmt::Error)?;
        self.0.push_str(s);
        Ok(())
    }
}

impl std::ops::Deref for Error {
    type Target = ErrorInner;
    #[inline]
    fn deref(&self) -> &ErrorInner {
        // SAFETY: a live box this Error owns, or a static.
        unsafe { self.0.as_ref() }
    }
}

impl Error {
    /// An error with a copy of `message` (see [`Error`]: never aborts).
    pub fn new(status: Status, message: impl AsRef<str>) -> Error {
        Error::from_fmt(status, format_args!("{}", message.as_ref()))
    }

    /// [`Error::new`] with a formatted message, out of line: the formatting machinery of
    /// `bail!` / `ensure!` stays out of the functions that use them (errors are cold).
    #[cold]
    #[inline(never)]
    pub fn from_fmt(status: Status, message: fmt::Arguments<'_>) -> Error {
        match try_format(message) {
            Some(message) => Error::boxed(ErrorInner { status, message }),
            None => Error::fallback(status),
        }
    }

    /// The static error of `status` (empty message); used when memory ran out.
    pub fn fallback(status: Status) -> Error {
        let i = FALLBACK
            .iter()
            .position(|f| f.status == status)
            .unwrap_or(Status::OutOfMemory as usize);
        Error(NonNull::from(&FALLBACK[i]))
    }

    fn boxed(inner: ErrorInner) -> Error {
        match try_box(inner) {
            Ok(b) => Error(NonNull::from(Box::leak(b))),
            Err(inner) => Error::fallback(inner.status),
        }
    }

    fn is_static(&self) -> bool {
        FALLBACK
            .as_ptr_range()
            .contains(&(self.0.as_ptr() as *const ErrorInner))
    }

    /// The message, or the status's description when it is empty (a static error).
    pub fn text(&self) -> &str {
        if self.message.is_empty() {
            self.status.description_str()
        } else {
            &self.message
        }
    }
}

impl Drop for Error {
    fn drop(&mut self) {
        if !self.is_static() {
            // SAFETY: not a static: the box `boxed` made, owned by this Error.
            drop(unsafe { Box::from_raw(self.0.as_ptr()) });
        }
    }
}

impl Clone for Error {
    fn clone(&self) -> Error {
        if self.is_static() {
            Error(self.0)
        } else {
            Error::boxed((**self).clone())
        }
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        **self == **other
    }
}

impl Eq for Error {}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// `bail!(Shape, "fmt", args..)` returns early with an [`Error`] of that status.
macro_rules! bail {
    ($status:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::from_fmt(
            $crate::error::Status::$status,
            format_args!($($arg)*),
        ))
    };
}

/// `ensure!(cond, Shape, "fmt", args..)`: bail unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $status:ident, $($arg:tt)*) => {
        if !$cond {
            $crate::error::bail!($status, $($arg)*);
        }
    };
}
// Crate-local (no `#[macro_export]`, which would put them at the crate root): both are in
// scope in every module after `error` through `#[macro_use]` in lib.rs; `bail` also by path,
// for `ensure`'s expansion.
pub(crate) use bail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_a_static_fallback() {
        for s in Status::ALL {
            let e = Error::fallback(s);
            assert_eq!(e.status, s);
            assert!(e.message.is_empty());
            assert_eq!(e.to_string(), s.description_str());
            assert!(!s.description_str().is_empty());
            assert!(e.is_static());
            let c = e.clone();
            assert!(c.is_static() && c == e);
        }
    }

    #[test]
    fn errors_own_their_messages() {
        let e = Error::new(Status::Shape, "bad shape");
        assert!(!e.is_static());
        assert_eq!((e.status, e.message.as_str()), (Status::Shape, "bad shape"));
        let c = e.clone();
        drop(e);
        assert_eq!(c.to_string(), "bad shape");
        let f = Error::from_fmt(Status::Index, format_args!("index {} of {}", 3, 2));
        assert_eq!(f.message, "index 3 of 2");
        assert_eq!(std::mem::size_of::<Result<()>>(), 8, "one register");
    }
}

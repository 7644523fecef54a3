//! Status codes and the error type every fallible core function returns.
//!
//! The numeric codes are part of the C ABI (`tensor_status_t`) and never change.

use std::fmt;

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

    /// Static, NUL-terminated description (the C side hands out the pointer).
    pub fn description(self) -> &'static str {
        match self {
            Status::Ok => "ok\0",
            Status::NullPointer => "null pointer argument\0",
            Status::InvalidArgument => "invalid argument\0",
            Status::Index => "index out of range\0",
            Status::Shape => "incompatible shape\0",
            Status::NotViewable => "not viewable: use reshape\0",
            Status::DType => "unsupported dtype\0",
            Status::Device => "data not accessible from the host\0",
            Status::OutOfBounds => "out of storage bounds\0",
            Status::Overflow => "arithmetic overflow\0",
            Status::OutOfMemory => "out of memory\0",
            Status::Overlap => "destination elements overlap\0",
            Status::NotResizable => "storage is not resizable\0",
            Status::ReadOnly => "storage is read-only\0",
            Status::Io => {
                "file error: cannot open, map or write the file, or its contents are malformed\0"
            }
            Status::Internal => "internal error\0",
        }
    }
}

/// A failed operation: a status plus a PyTorch-style message naming the offending values.
/// The FFI boundary prefixes the exported function's name. Boxed, so that a `Result` of a
/// handle or of `()` stays one or two registers wide on the (hot) success path; the fields
/// are read through `Deref` (`e.status`, `e.message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorInner>);

/// The contents of an [`Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorInner {
    pub status: Status,
    pub message: String,
}

impl std::ops::Deref for Error {
    type Target = ErrorInner;
    #[inline]
    fn deref(&self) -> &ErrorInner {
        &self.0
    }
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error(Box::new(ErrorInner {
            status,
            message: message.into(),
        }))
    }

    /// [`Error::new`] with a formatted message, out of line: the formatting machinery of
    /// `bail!` / `ensure!` stays out of the functions that use them (errors are cold).
    #[cold]
    #[inline(never)]
    pub fn from_fmt(status: Status, message: fmt::Arguments<'_>) -> Error {
        Error::new(status, fmt::format(message))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// `bail!(Shape, "fmt", args..)` returns early with an [`Error`] of that status.
#[macro_export]
macro_rules! bail {
    ($status:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::from_fmt(
            $crate::error::Status::$status,
            format_args!($($arg)*),
        ))
    };
}

/// `ensure!(cond, Shape, "fmt", args..)`: bail unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $status:ident, $($arg:tt)*) => {
        if !$cond {
            $crate::bail!($status, $($arg)*);
        }
    };
}

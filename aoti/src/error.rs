//! Errors of libtensor_aoti: one thread-local message (`tensor_aoti_last_error`), and the one
//! panic-catching helper every `extern "C"` function runs behind. It sits right above `sys`
//! (libtensor's bindings) and below everything else: it reads C strings (libtensor's
//! messages) itself and imports nothing of the crate but `sys`.
//!
//! Two conventions meet here. The host API (`tensor_aoti_*`) returns libtensor's
//! `tensor_status_t` codes. The `aoti_torch_*` shim returns the shim's `AOTITorchError`
//! (`AOTI_TORCH_SUCCESS` 0 / `AOTI_TORCH_FAILURE` 1) and, as libtorch's shim does, logs its
//! reason on stderr; it also keeps it as this thread's last error, so that a failed
//! `tensor_aoti_run` can say which shim call failed and why.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sys;

/// The name of the exported function this is written in (directly in its body, not in a
/// closure), as libtensor's boundary takes it: the type name of an item nested in the
/// function (`"tensor_aoti::shim::aoti_torch_get_dim::f"`), trimmed to the function's name
/// on the error path only ([`reported_name`]), so that a function's name cannot drift from
/// the one its errors report.
macro_rules! fn_name {
    () => {{
        fn f() {}
        ::core::any::type_name_of_val(&f)
    }};
}
pub(crate) use fn_name;

/// `fn_name!()`'s text as reported: the function's own name (a plain name passes through).
pub fn reported_name(name: &str) -> &str {
    let name = name.strip_suffix("::f").unwrap_or(name);
    name.rsplit("::").next().unwrap_or(name)
}

pub const AOTI_TORCH_SUCCESS: i32 = 0;
pub const AOTI_TORCH_FAILURE: i32 = 1;

#[derive(Debug)]
pub struct Error {
    pub status: sys::tensor_status_t,
    pub msg: String,
}

pub type Result<T> = std::result::Result<T, Error>;

pub fn err<T>(status: sys::tensor_status_t, msg: impl Into<String>) -> Result<T> {
    Err(Error {
        status,
        msg: msg.into(),
    })
}

/// A libtensor call's status as a `Result`, with libtensor's own message.
pub fn check(status: sys::tensor_status_t) -> Result<()> {
    if status == sys::TENSOR_OK {
        Ok(())
    } else {
        // SAFETY: tensor_last_error takes nothing and returns this thread's message, a
        // NUL-terminated string libtensor keeps until its next failed call on this thread.
        let msg = c_string(unsafe { sys::tensor_last_error() }).unwrap_or_default();
        err(status, msg)
    }
}

/// A C string (NULL as None), copied: for the strings listed in the SAFETY comment below.
pub fn c_string(p: *const std::ffi::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: p is non-NULL (checked above). Each caller passes a string that its source
    // promises NUL-terminated and live until this copy: libtensor's messages and dtype
    // names (tensor.h), dlerror's and the model's AOTInductorGetLastError message (this
    // thread's, until its next call), this crate's own last error (a CString), and the
    // C string arguments of the shim's diagnostics and fallback ops (shim.h,
    // c_shim_cpu.h: live for the call).
    Some(
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned(),
    )
}

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

pub fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// This thread's last message (borrowed: valid until this thread's next failure).
pub fn last_error_ptr() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs a host-API body: its status, with "`name`: message" as the last error on failure.
pub fn host(name: &str, f: impl FnOnce() -> Result<()>) -> sys::tensor_status_t {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => sys::TENSOR_OK,
        Ok(Err(e)) => {
            set_last_error(&format!("{}: {}", reported_name(name), e.msg));
            e.status
        }
        Err(p) => {
            set_last_error(&format!(
                "{}: internal error: {}",
                reported_name(name),
                panic_text(p)
            ));
            sys::TENSOR_ERR_INTERNAL
        }
    }
}

/// Runs a host-API accessor that cannot report an error: `fallback` on a panic.
pub fn host_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Runs a shim body: `AOTI_TORCH_SUCCESS`, or `AOTI_TORCH_FAILURE` with the reason logged on
/// stderr (unless `TENSOR_AOTI_QUIET=1`) and kept as the last error.
pub fn shim(name: &str, f: impl FnOnce() -> Result<()>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => AOTI_TORCH_SUCCESS,
        Ok(Err(e)) => {
            shim_failed(name, &e.msg);
            AOTI_TORCH_FAILURE
        }
        Err(p) => {
            shim_failed(name, &format!("internal error: {}", panic_text(p)));
            AOTI_TORCH_FAILURE
        }
    }
}

/// Runs a shim function that returns a value and cannot fail (constant getters, ...).
pub fn shim_value<T>(name: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            shim_failed(name, &format!("internal error: {}", panic_text(p)));
            fallback
        }
    }
}

/// `TENSOR_AOTI_QUIET=1`: no notes or shim failures on stderr (read once).
pub fn quiet() -> bool {
    static Q: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *Q.get_or_init(|| std::env::var("TENSOR_AOTI_QUIET").is_ok_and(|v| v == "1"))
}

pub fn shim_failed(name: &str, msg: &str) {
    let text = format!("{}: {msg}", reported_name(name));
    if !quiet() {
        eprintln!("libtensor_aoti: {text}");
    }
    set_last_error(&text);
}

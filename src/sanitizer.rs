//! Is a memory checker watching this process? AddressSanitizer (linked into the program,
//! or this library built with `-Zsanitizer=address`) or a valgrind tool that replaces
//! `malloc` (memcheck, helgrind, drd, massif, dhat; not callgrind or cachegrind, which
//! measure the library as it runs for everyone). Decided once, at the allocator's first
//! use ([`checker`]). The per-thread caches step aside for a checker (`crate::allocator`: a
//! recycled block hides a use after free from it), and under AddressSanitizer a C handle
//! is checked against ASan's shadow memory before it is read ([`asan_freed`]).
//!
//! AddressSanitizer: its interface functions, looked up with `dlsym(RTLD_DEFAULT)` (a
//! program built with `-fsanitize=address` exports them from libasan), or linked directly
//! when this library is itself instrumented (`cfg(tensor_asan)`, set by build.rs from
//! `-Zsanitizer=address` in the rustflags). Valgrind: its tool's preload object
//! (`vgpreload_<tool>-<arch>-linux.so`) among the loaded objects, which stays loaded even if
//! the program edits `LD_PRELOAD`.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

/// `int __asan_address_is_poisoned(const volatile void *)`, once found (null: no ASan).
static ASAN_IS_POISONED: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// `void __asan_describe_address(void *)` (prints where a block was allocated and freed).
static ASAN_DESCRIBE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

type IsPoisoned = unsafe extern "C" fn(*const c_void) -> c_int;
type Describe = unsafe extern "C" fn(*mut c_void);

#[cfg(tensor_asan)]
extern "C" {
    fn __asan_address_is_poisoned(p: *const c_void) -> c_int;
    fn __asan_describe_address(p: *mut c_void);
}

/// The checker watching this process (e.g. "AddressSanitizer", "valgrind (memcheck)",
/// "Miri"),
/// if any. Decided on the first call.
pub(crate) fn checker() -> Option<&'static str> {
    static CHECKER: OnceLock<Option<&'static str>> = OnceLock::new();
    *CHECKER.get_or_init(|| {
        // Miri checks every allocation too (and cannot call dl_iterate_phdr).
        if cfg!(miri) {
            return Some("Miri");
        }
        if find_asan() {
            Some("AddressSanitizer")
        } else {
            valgrind_tool()
        }
    })
}

/// Finds AddressSanitizer's interface; true when present.
fn find_asan() -> bool {
    #[cfg(tensor_asan)]
    let (poisoned, describe) = (
        __asan_address_is_poisoned as IsPoisoned as *mut c_void,
        __asan_describe_address as Describe as *mut c_void,
    );
    #[cfg(not(tensor_asan))]
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only looks symbols up.
    let (poisoned, describe) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"__asan_address_is_poisoned".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"__asan_describe_address".as_ptr()),
        )
    };
    if poisoned.is_null() {
        return false;
    }
    ASAN_DESCRIBE.store(describe, Ordering::Relaxed);
    ASAN_IS_POISONED.store(poisoned, Ordering::Relaxed);
    true
}

/// "valgrind (<tool>)" when a valgrind tool that replaces malloc has its preload object
/// loaded.
#[cfg(target_os = "linux")]
fn valgrind_tool() -> Option<&'static str> {
    const TOOLS: [(&str, &str); 5] = [
        ("vgpreload_memcheck-", "valgrind (memcheck)"),
        ("vgpreload_helgrind-", "valgrind (helgrind)"),
        ("vgpreload_drd-", "valgrind (drd)"),
        ("vgpreload_massif-", "valgrind (massif)"),
        ("vgpreload_dhat-", "valgrind (dhat)"),
    ];
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        found: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info whose dlpi_name is NULL or a C
        // string, and our `found` (an Option<&str> we own for the call).
        unsafe {
            let name = (*info).dlpi_name;
            if name.is_null() {
                return 0;
            }
            let name = std::ffi::CStr::from_ptr(name).to_bytes();
            let file = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
            for (prefix, tool) in TOOLS {
                if file.starts_with(prefix.as_bytes()) {
                    *(found as *mut Option<&'static str>) = Some(tool);
                    return 1;
                }
            }
        }
        0
    }
    let mut found: Option<&'static str> = None;
    // SAFETY: visit matches the callback type and only reads what it is given; `found`
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut _ as *mut c_void) };
    found
}

#[cfg(not(target_os = "linux"))]
fn valgrind_tool() -> Option<&'static str> {
    None
}

/// Whether AddressSanitizer is present and says the block at `p` is freed (its first byte
/// poisoned). False without ASan, or before [`checker`] first ran (no block has been freed
/// through the allocator yet then).
#[inline(always)]
pub(crate) fn asan_freed(p: *const u8) -> bool {
    let f = ASAN_IS_POISONED.load(Ordering::Relaxed);
    !f.is_null() && asan_poisoned(f, p)
}

#[cold]
#[inline(never)]
fn asan_poisoned(f: *mut c_void, p: *const u8) -> bool {
    // SAFETY: f is __asan_address_is_poisoned (find_asan), which only reads ASan's shadow.
    unsafe { std::mem::transmute::<*mut c_void, IsPoisoned>(f)(p as *const c_void) != 0 }
}

/// Under AddressSanitizer, prints what it knows about the block at `p` (where it was
/// allocated and freed) to stderr; nothing otherwise.
pub(crate) fn describe(p: *const u8) {
    let f = ASAN_DESCRIBE.load(Ordering::Relaxed);
    if !f.is_null() {
        // SAFETY: f is __asan_describe_address (find_asan), which only reads ASan's state.
        unsafe { std::mem::transmute::<*mut c_void, Describe>(f)(p as *mut c_void) }
    }
}

#[cfg(test)]
mod tests {
    /// The library built with -Zsanitizer=address (.ci/prove.sh asan) knows it.
    #[test]
    fn an_instrumented_build_detects_asan() {
        let c = super::checker();
        if cfg!(tensor_asan) {
            assert_eq!(c, Some("AddressSanitizer"));
        }
    }
}

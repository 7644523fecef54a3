//! A second, unrelated Rust static library (tests/static_archive.rs links it beside
//! libtensor.a in one C program). It uses the standard library's allocator, formatting,
//! panics and threads, so it carries the same Rust std symbols libtensor.a carried before
//! they were made local.

use std::ffi::{c_char, CStr};

/// Sums 1..=n in a scoped thread after formatting it (0 on a caught panic).
#[no_mangle]
pub extern "C" fn second_sum(n: u32) -> u64 {
    std::panic::catch_unwind(|| {
        let text = format!("{:?}", (1..=u64::from(n)).collect::<Vec<_>>());
        std::thread::scope(|s| s.spawn(|| text.matches(',').count() as u64 + 1).join().unwrap())
            * (u64::from(n) + 1)
            / 2
    })
    .unwrap_or(0)
}

/// The length of a C string, through a Rust `String`.
///
/// # Safety
/// `s` is a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn second_len(s: *const c_char) -> usize {
    CStr::from_ptr(s).to_string_lossy().into_owned().len()
}

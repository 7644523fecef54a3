//! Blocks from and back to the system (`posix_memalign` / `free`): the layer under both
//! caches, and the one place `reserved_bytes` changes.

use super::stats::RESERVED_BYTES;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// Alignment of every block (a cache line; AVX-512 loads never split).
pub(crate) const ALIGNMENT: usize = 64;
/// Blocks at least this big are 2 MiB aligned and advised as huge pages (one fault per
/// 2 MiB instead of per 4 KiB).
pub(crate) const HUGE_THRESHOLD: usize = 2 << 20;
pub(super) const HUGE_ALIGN: usize = 2 << 20;

/// A new block of `nbytes` (> 0) from the system, `ALIGNMENT`-aligned (`HUGE_ALIGN` and
/// advised as huge pages from `HUGE_THRESHOLD` up); NULL when out of memory.
pub(super) fn fresh_alloc(nbytes: usize) -> *mut u8 {
    let align = if nbytes >= HUGE_THRESHOLD {
        HUGE_ALIGN
    } else {
        ALIGNMENT
    };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign with a power-of-two alignment >= sizeof(void*).
    let rc = unsafe { libc::posix_memalign(&mut p, align, nbytes) };
    if rc != 0 {
        return std::ptr::null_mut();
    }
    #[cfg(target_os = "linux")]
    if nbytes >= HUGE_THRESHOLD {
        // Advice only: failure just means 4 KiB pages.
        // SAFETY: p is HUGE_ALIGN-aligned and owns nbytes bytes.
        unsafe {
            libc::madvise(p, nbytes, libc::MADV_HUGEPAGE);
        }
    }
    RESERVED_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed);
    p as *mut u8
}

/// Gives a block of `cap` bytes from [`fresh_alloc`] back to the system.
///
/// # Safety
/// `p` came from `fresh_alloc(cap)`, is owned by the caller and not used again.
pub(super) unsafe fn system_free(p: *mut u8, cap: usize) {
    // SAFETY: a posix_memalign block (the contract), freed once.
    unsafe { libc::free(p as *mut c_void) };
    RESERVED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
}

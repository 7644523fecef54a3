//! Where storage bytes come from: the built-in allocator (64-byte aligned; big blocks
//! page-aligned with transparent-huge-page advice) or a caller's C vtable, plus the
//! library-wide memory statistics.

use crate::error::{Error, Result, Status};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// Alignment of every block (a cache line; AVX-512 loads never split).
pub(crate) const ALIGNMENT: usize = 64;
/// Blocks at least this big are 2 MiB aligned and advised as huge pages (one fault per
/// 2 MiB instead of per 4 KiB).
pub(crate) const HUGE_THRESHOLD: usize = 2 << 20;
const HUGE_ALIGN: usize = 2 << 20;

#[derive(Clone, Copy)]
pub enum Allocator {
    Builtin,
    Custom {
        ctx: *mut c_void,
        allocate: unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void,
        deallocate: unsafe extern "C" fn(*mut c_void, *mut c_void, usize),
    },
}

// SAFETY: a custom allocator's ctx is the caller's; the C API documents that the callbacks
// may be called from any thread.
unsafe impl Send for Allocator {}
unsafe impl Sync for Allocator {}

static DEFAULT: RwLock<Allocator> = RwLock::new(Allocator::Builtin);

impl Allocator {
    pub fn default_allocator() -> Allocator {
        *DEFAULT.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_default(a: Allocator) {
        *DEFAULT.write().unwrap_or_else(|e| e.into_inner()) = a;
    }

    /// Allocates `nbytes` (0 bytes gives NULL without allocating).
    pub fn allocate(&self, nbytes: usize) -> Result<*mut u8> {
        if nbytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let p = match *self {
            Allocator::Builtin => builtin_alloc(nbytes),
            // SAFETY: calling the caller's callback as documented.
            Allocator::Custom { ctx, allocate, .. } => unsafe {
                allocate(ctx, nbytes, ALIGNMENT) as *mut u8
            },
        };
        if p.is_null() {
            return Err(Error::new(
                Status::OutOfMemory,
                format!("failed to allocate {nbytes} bytes"),
            ));
        }
        stats_alloc(nbytes);
        Ok(p)
    }

    /// Frees a block this allocator returned for `nbytes`.
    ///
    /// # Safety
    /// `p` must come from `self.allocate(nbytes)` and not be freed already.
    pub unsafe fn deallocate(&self, p: *mut u8, nbytes: usize) {
        if p.is_null() {
            return;
        }
        stats_free(nbytes);
        match *self {
            Allocator::Builtin => libc::free(p as *mut c_void),
            Allocator::Custom {
                ctx, deallocate, ..
            } => deallocate(ctx, p as *mut c_void, nbytes),
        }
    }
}

fn builtin_alloc(nbytes: usize) -> *mut u8 {
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
    p as *mut u8
}

// ---- statistics -------------------------------------------------------------------------

static LIVE_STORAGES: AtomicU64 = AtomicU64::new(0);
static LIVE_EXTERNAL: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);
static TOTAL_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn stats_alloc(nbytes: usize) {
    let live = LIVE_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed) + nbytes as u64;
    PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
    TOTAL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
}

fn stats_free(nbytes: usize) {
    LIVE_BYTES.fetch_sub(nbytes as u64, Ordering::Relaxed);
}

/// A storage's data came alive (`external`: wrapped, not allocated by us).
pub(crate) fn stats_storage_born(external: bool) {
    LIVE_STORAGES.fetch_add(1, Ordering::Relaxed);
    if external {
        LIVE_EXTERNAL.fetch_add(1, Ordering::Relaxed);
    }
}

pub(crate) fn stats_storage_died(external: bool) {
    LIVE_STORAGES.fetch_sub(1, Ordering::Relaxed);
    if external {
        LIVE_EXTERNAL.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Snapshot of the library-wide counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryStats {
    pub live_storages: u64,
    pub live_bytes: u64,
    pub peak_bytes: u64,
    pub total_allocations: u64,
    pub live_external_storages: u64,
}

pub fn memory_stats() -> MemoryStats {
    MemoryStats {
        live_storages: LIVE_STORAGES.load(Ordering::Relaxed),
        live_bytes: LIVE_BYTES.load(Ordering::Relaxed),
        peak_bytes: PEAK_BYTES.load(Ordering::Relaxed),
        total_allocations: TOTAL_ALLOCATIONS.load(Ordering::Relaxed),
        live_external_storages: LIVE_EXTERNAL.load(Ordering::Relaxed),
    }
}

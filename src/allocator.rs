//! Where storage bytes come from: the built-in allocator (64-byte aligned; big blocks
//! 2 MiB-aligned with transparent-huge-page advice, and reused through a small cache of
//! freed big blocks) or a caller's C vtable, plus the library-wide memory statistics.

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
            return Err(Error::from_fmt(
                Status::OutOfMemory,
                format_args!("failed to allocate {nbytes} bytes"),
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
            Allocator::Builtin => builtin_free(p, nbytes),
            Allocator::Custom {
                ctx, deallocate, ..
            } => deallocate(ctx, p as *mut c_void, nbytes),
        }
    }
}

/// Freed big blocks kept for reuse: a fresh 64 MiB buffer costs tens of milliseconds of
/// page faults (or of zeroing huge pages), more than the copy that fills it, so an op run
/// in a loop (clone, contiguous, to_dtype) reuses the block its previous result freed.
/// Blocks are keyed by capacity (size rounded up to 2 MiB) and matched exactly; the cache
/// holds at most [`CACHE_MAX_BYTES`], evicting the oldest blocks first. Cached blocks are
/// not live: `live_bytes` never counts them (spec section 9).
struct BlockCache {
    blocks: Vec<(usize, *mut u8)>,
    bytes: usize,
}

// SAFETY: the cache owns the blocks it holds; access is serialised by the mutex.
unsafe impl Send for BlockCache {}

static CACHE: std::sync::Mutex<BlockCache> = std::sync::Mutex::new(BlockCache {
    blocks: Vec::new(),
    bytes: 0,
});
const CACHE_MAX_BYTES: usize = 256 << 20;
const CACHE_MAX_BLOCKS: usize = 16;

/// Capacity actually allocated for a big request (a whole number of huge pages).
fn big_capacity(nbytes: usize) -> usize {
    nbytes.div_ceil(HUGE_ALIGN).saturating_mul(HUGE_ALIGN)
}

fn cache_take(cap: usize) -> Option<*mut u8> {
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    // Most recently freed first: its pages are the likeliest to still be in cache.
    let i = c.blocks.iter().rposition(|&(n, _)| n == cap)?;
    let (_, p) = c.blocks.remove(i);
    c.bytes -= cap;
    Some(p)
}

/// Keeps a freed big block, or frees it when it cannot fit.
unsafe fn cache_put(cap: usize, p: *mut u8) {
    if cap > CACHE_MAX_BYTES {
        libc::free(p as *mut c_void);
        return;
    }
    // Inline (the cache holds at most CACHE_MAX_BLOCKS, plus `p`): freeing never allocates,
    // so it cannot abort for want of memory.
    let mut evicted: smallvec::SmallVec<[*mut u8; CACHE_MAX_BLOCKS + 1]> =
        smallvec::SmallVec::new();
    {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        while !c.blocks.is_empty()
            && (c.bytes + cap > CACHE_MAX_BYTES || c.blocks.len() >= CACHE_MAX_BLOCKS)
        {
            let (n, q) = c.blocks.remove(0);
            c.bytes -= n;
            evicted.push(q);
        }
        if c.blocks.try_reserve(1).is_ok() {
            c.blocks.push((cap, p));
            c.bytes += cap;
        } else {
            evicted.push(p);
        }
    }
    for q in evicted {
        libc::free(q as *mut c_void);
    }
}

/// Returns every cached block to the system; the number of bytes released.
pub fn empty_cache() -> u64 {
    let blocks = {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        c.bytes = 0;
        std::mem::take(&mut c.blocks)
    };
    let mut freed = 0u64;
    for (cap, p) in blocks {
        // SAFETY: cached blocks came from posix_memalign and are owned by the cache alone.
        unsafe { libc::free(p as *mut c_void) };
        freed += cap as u64;
    }
    freed
}

/// Frees a block from [`builtin_alloc`]: big ones go to the reuse cache.
unsafe fn builtin_free(p: *mut u8, nbytes: usize) {
    if nbytes >= HUGE_THRESHOLD {
        cache_put(big_capacity(nbytes), p);
    } else {
        libc::free(p as *mut c_void);
    }
}

fn builtin_alloc(nbytes: usize) -> *mut u8 {
    if nbytes >= HUGE_THRESHOLD {
        let cap = big_capacity(nbytes);
        if let Some(p) = cache_take(cap) {
            return p;
        }
        return fresh_alloc(cap);
    }
    fresh_alloc(nbytes)
}

fn fresh_alloc(nbytes: usize) -> *mut u8 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_blocks_are_reused_and_the_cache_is_bounded() {
        // An odd size no other test uses, so the block we free is the one we get back.
        let n = (37 << 20) + 5;
        let a = Allocator::Builtin;
        let p = a.allocate(n).unwrap();
        // SAFETY: the block has n bytes.
        unsafe {
            std::ptr::write_bytes(p, 7, n);
            a.deallocate(p, n);
        }
        let q = a.allocate(n).unwrap();
        assert_eq!(p, q, "the freed block is reused");
        assert_eq!(q as usize % HUGE_ALIGN, 0);
        unsafe { a.deallocate(q, n) };
        // Filling the cache past its bound evicts: it never holds more than the limit.
        let blocks: Vec<*mut u8> = (0..20).map(|_| a.allocate(3 << 20).unwrap()).collect();
        for b in blocks {
            unsafe { a.deallocate(b, 3 << 20) };
        }
        let c = CACHE.lock().unwrap();
        assert!(c.bytes <= CACHE_MAX_BYTES && c.blocks.len() <= CACHE_MAX_BLOCKS);
        assert_eq!(c.bytes, c.blocks.iter().map(|b| b.0).sum::<usize>());
    }

    #[test]
    fn small_blocks_are_aligned() {
        let a = Allocator::Builtin;
        for n in [1usize, 63, 4096, (2 << 20) - 1] {
            let p = a.allocate(n).unwrap();
            assert_eq!(p as usize % ALIGNMENT, 0);
            unsafe { a.deallocate(p, n) };
        }
    }
}

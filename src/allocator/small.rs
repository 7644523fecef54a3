//! Small blocks: a per-thread size-class cache. Small blocks come in 64-byte classes up to
//! [`SMALL_MAX`]; each thread keeps up to [`SMALL_PER_CLASS`] freed blocks per class (at
//! most 68 KiB per thread) and reuses them without calling `posix_memalign`/`free`, whose
//! aligned path costs more than a small clone's copy. Cached small blocks are counted in
//! `cached_bytes` and `reserved_bytes` (never in `live_bytes`), returned at thread exit, by
//! `empty_cache` on their thread, and never kept while the cache limit is 0 or a memory
//! checker runs (`policy::thread_caching`). While cached, a block belongs to its thread's
//! cache.

use super::policy::thread_caching;
use super::stats::CACHED_BYTES;
use super::system::{fresh_alloc, system_free, ALIGNMENT};
use std::sync::atomic::Ordering;

pub(super) const SMALL_MAX: usize = 1024;
const SMALL_CLASSES: usize = SMALL_MAX / ALIGNMENT;
const SMALL_PER_CLASS: usize = 8;

struct SmallCache {
    len: [u8; SMALL_CLASSES],
    blocks: [[*mut u8; SMALL_PER_CLASS]; SMALL_CLASSES],
}

impl SmallCache {
    /// Frees every block; the bytes released.
    fn drain(&mut self) -> u64 {
        let mut freed = 0u64;
        for c in 0..SMALL_CLASSES {
            let cap = (c + 1) * ALIGNMENT;
            for &p in &self.blocks[c][..self.len[c] as usize] {
                CACHED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
                // SAFETY: cached blocks came from fresh_alloc(cap) and are owned here.
                unsafe { system_free(p, cap) };
                freed += cap as u64;
            }
            self.len[c] = 0;
        }
        freed
    }
}

impl Drop for SmallCache {
    fn drop(&mut self) {
        self.drain();
    }
}

thread_local! {
    static SMALL: std::cell::RefCell<SmallCache> = const {
        std::cell::RefCell::new(SmallCache {
            len: [0; SMALL_CLASSES],
            blocks: [[std::ptr::null_mut(); SMALL_PER_CLASS]; SMALL_CLASSES],
        })
    };
}

/// Runs `f` on this thread's cache; `None` when it is in use further up this thread's stack
/// or already torn down (thread exit), when callers fall back to the system.
#[inline]
fn with_small<R>(f: impl FnOnce(&mut SmallCache) -> R) -> Option<R> {
    SMALL
        .try_with(|s| s.try_borrow_mut().ok().map(|mut s| f(&mut s)))
        .ok()
        .flatten()
}

/// Pops the last of `len` blocks of `list`, if any.
#[inline]
pub(super) fn pop(len: &mut u8, list: &[*mut u8]) -> Option<*mut u8> {
    let n = *len as usize;
    if n == 0 {
        return None;
    }
    *len = (n - 1) as u8;
    Some(list[n - 1])
}

/// Pushes `p` after the `len` blocks of `list`; false when it is full.
#[inline]
pub(super) fn push(len: &mut u8, list: &mut [*mut u8], p: *mut u8) -> bool {
    let n = *len as usize;
    if n == list.len() {
        return false;
    }
    list[n] = p;
    *len = (n + 1) as u8;
    true
}

/// The class of a small request (`nbytes` in 1..=SMALL_MAX) and its capacity.
#[inline]
fn small_class(nbytes: usize) -> (usize, usize) {
    let c = (nbytes - 1) / ALIGNMENT;
    (c, (c + 1) * ALIGNMENT)
}

/// A block for a small request (`nbytes` in 1..=SMALL_MAX): a cached one of its class,
/// else a fresh one of the class's capacity; NULL when out of memory.
#[inline] // into `Allocator::allocate`, as `free` into `deallocate`
pub(super) fn alloc(nbytes: usize) -> *mut u8 {
    let (class, cap) = small_class(nbytes);
    if let Some(p) = with_small(|s| pop(&mut s.len[class], &s.blocks[class])).flatten() {
        CACHED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
        return p;
    }
    fresh_alloc(cap)
}

/// Keeps a freed small block for reuse on this thread, or gives it back to the system.
///
/// # Safety
/// `p` came from [`alloc`]`(nbytes)` and the caller gives it up.
#[inline]
pub(super) unsafe fn free(p: *mut u8, nbytes: usize) {
    let (class, cap) = small_class(nbytes);
    let kept = thread_caching()
        && with_small(|s| push(&mut s.len[class], &mut s.blocks[class], p)).unwrap_or(false);
    if kept {
        CACHED_BYTES.fetch_add(cap as u64, Ordering::Relaxed);
    } else {
        // SAFETY: a fresh_alloc(cap) block (alloc), given up (the contract).
        unsafe { system_free(p, cap) };
    }
}

/// Empties the calling thread's cache; the bytes released.
pub(super) fn drain() -> u64 {
    with_small(|s| s.drain()).unwrap_or(0)
}

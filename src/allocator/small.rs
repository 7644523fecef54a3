//! Small and medium blocks: a per-thread cache of freed data blocks. Small blocks come in
//! 64-byte classes up to [`SMALL_MAX`]; each thread keeps up to 8 freed
//! blocks per class (at most 68 KiB per thread) and reuses them without calling
//! `posix_memalign`/`free`, whose aligned path costs more than a small clone's copy.
//! Medium blocks (above `SMALL_MAX`, up to [`MID_MAX`]) keep their exact size: each thread
//! keeps the last 8 freed ones, at most 256 KiB together (the oldest go
//! back to the system first), and a request of the same size takes the most recently
//! freed, whose lines are still in the cache (a fresh `posix_memalign` block is written
//! cold: a clone of 4-16 KiB cost 3x a `malloc` + `memcpy` + `free`).
//!
//! Cached blocks are counted in `cached_bytes` and `reserved_bytes` (never in `live_bytes`),
//! returned at thread exit, by `empty_cache` on their thread, and never kept while the
//! cache limit is 0 or a memory checker runs (`policy::thread_caching`). While cached, a
//! block belongs to its thread's cache.

use super::policy::thread_caching;
use super::stats::CACHED_BYTES;
use super::system::{fresh_alloc, system_free, ALIGNMENT};
use super::thread::{pop, push, with, MID_BYTES, MID_SLOTS, SMALL_CLASSES};
use std::sync::atomic::Ordering;

pub(super) const SMALL_MAX: usize = 1024;
const _: () = assert!(SMALL_MAX / ALIGNMENT == SMALL_CLASSES);
/// The largest medium block.
pub(super) const MID_MAX: usize = 64 << 10;

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
    if let Some(p) = with(|c| pop(&mut c.small.len[class], &c.small.blocks[class])) {
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
        && with(|c| c.may_keep() && push(&mut c.small.len[class], &mut c.small.blocks[class], p));
    if kept {
        CACHED_BYTES.fetch_add(cap as u64, Ordering::Relaxed);
    } else {
        // SAFETY: a fresh_alloc(cap) block (alloc), given up (the contract).
        unsafe { system_free(p, cap) };
    }
}

/// A block for a medium request (`nbytes` in SMALL_MAX+1..=MID_MAX): the most recently
/// freed cached one of exactly this size, else a fresh one; NULL when out of memory.
pub(super) fn alloc_mid(nbytes: usize) -> *mut u8 {
    let hit = with(|c| {
        let s = &mut c.small;
        // The most recent first, without the search (a clone in a loop finds its block
        // there): popped, nothing to move.
        if let Some(&(p, n)) = s.mid[..s.mid_len].last() {
            if n == nbytes {
                s.mid_len -= 1;
                s.mid_bytes -= nbytes;
                return Some(p);
            }
        }
        let i = s.mid[..s.mid_len].iter().rposition(|&(_, n)| n == nbytes)?;
        let p = s.mid[i].0;
        s.mid.copy_within(i + 1..s.mid_len, i);
        s.mid_len -= 1;
        s.mid_bytes -= nbytes;
        Some(p)
    });
    if let Some(p) = hit {
        CACHED_BYTES.fetch_sub(nbytes as u64, Ordering::Relaxed);
        return p;
    }
    fresh_alloc(nbytes)
}

/// Keeps a freed medium block for reuse on this thread (giving the oldest kept ones back
/// to the system to stay within `MID_SLOTS` and `MID_BYTES`).
///
/// # Safety
/// `p` came from [`alloc_mid`]`(nbytes)` and the caller gives it up.
pub(super) unsafe fn free_mid(p: *mut u8, nbytes: usize) {
    let kept = thread_caching()
        && with(|c| {
            if !c.may_keep() {
                return false;
            }
            let s = &mut c.small;
            while s.mid_len == MID_SLOTS || s.mid_bytes + nbytes > MID_BYTES {
                s.evict_oldest();
            }
            s.mid[s.mid_len] = (p, nbytes);
            s.mid_len += 1;
            s.mid_bytes += nbytes;
            true
        });
    if kept {
        CACHED_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed);
    } else {
        // SAFETY: a fresh_alloc(nbytes) block (alloc_mid), given up (the contract).
        unsafe { system_free(p, nbytes) };
    }
}

/// Empties the calling thread's cache; the bytes released.
pub(super) fn drain() -> u64 {
    with(|c| c.small.drain())
}

//! Freed big blocks kept for reuse: a fresh 64 MiB buffer costs tens of milliseconds of
//! page faults (or of zeroing huge pages), more than the copy that fills it, so an op run
//! in a loop (clone, contiguous, to_dtype) reuses the block its previous result freed.
//! Big blocks are those above the per-thread caches' 64 KiB ([`BIG_MIN`] up): below 2 MiB
//! glibc hands them out as `mmap`s or from its heap's top, which it trims back to the
//! system, so each run of a model faulted its intermediates' pages in again (mobilenet_v2
//! through libtensor_aoti: 751 faults per run, 12% of its time on an AVX2 host).
//! Blocks are keyed by capacity ([`big_capacity`]: 2 MiB multiples from 2 MiB, eighths of
//! the next power of two below) and matched exactly; the cache holds at most `cache_limit`
//! bytes (default 256 MiB, 0 = no caching) and [`CACHE_MAX_BLOCKS`] blocks, evicting the
//! oldest blocks first. Cached blocks are not live: `live_bytes` never counts them
//! (docs/c-api.md, "Memory"); `cached_bytes` and `reserved_bytes` do. While cached, a block
//! belongs to this cache (under its mutex). Under a memory checker (`aside_for_checker`)
//! blocks below 2 MiB are not big: exact-sized from the system and back, as the per-thread
//! caches' are, so the checker sees their overflows and their use after free.

use super::policy::{aside_for_checker, cache_limit, swap_limit};
use super::stats::CACHED_BYTES;
use super::system::{fresh_alloc, system_free, HUGE_ALIGN, HUGE_THRESHOLD};
use std::sync::atomic::Ordering;

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
const CACHE_MAX_BLOCKS: usize = 64;

/// The smallest big block: just above the per-thread caches' medium blocks.
pub(super) const BIG_MIN: usize = super::small::MID_MAX + 1;

/// Whether a request of `nbytes` (above the per-thread caches' sizes) is a big block: from
/// 2 MiB always, from [`BIG_MIN`] unless a memory checker watches (decided once per
/// process, so a block is freed the way it was allocated).
pub(super) fn is_big(nbytes: usize) -> bool {
    nbytes >= HUGE_THRESHOLD || (nbytes >= BIG_MIN && !aside_for_checker())
}

/// Capacity actually allocated for a big request: a whole number of huge pages from 2 MiB;
/// below, a multiple of an eighth of the next power of two (at most a quarter more than
/// asked, eight classes per octave).
pub(super) fn big_capacity(nbytes: usize) -> usize {
    if nbytes >= HUGE_THRESHOLD {
        return nbytes.div_ceil(HUGE_ALIGN).saturating_mul(HUGE_ALIGN);
    }
    let step = nbytes.next_power_of_two() / 8;
    nbytes.div_ceil(step) * step
}

fn cache_take(cap: usize) -> Option<*mut u8> {
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    // Most recently freed first: its pages are the likeliest to still be in cache.
    let i = c.blocks.iter().rposition(|&(n, _)| n == cap)?;
    let (_, p) = c.blocks.remove(i);
    c.bytes -= cap;
    CACHED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
    Some(p)
}

/// A block for a big request (`is_big(nbytes)`): a cached one of its capacity, else a
/// fresh one; NULL when out of memory.
pub(super) fn alloc(nbytes: usize) -> *mut u8 {
    let cap = big_capacity(nbytes);
    if let Some(p) = cache_take(cap) {
        return p;
    }
    fresh_alloc(cap)
}

/// Blocks taken out of the cache, to be freed unlocked. Inline: the cache holds at most
/// `CACHE_MAX_BLOCKS`, plus the block being freed, so freeing never allocates (and cannot
/// abort for want of memory).
pub(super) type Evicted = smallvec::SmallVec<[(usize, *mut u8); CACHE_MAX_BLOCKS + 1]>;

/// Removes the oldest blocks until `done` holds; returns them (to be freed unlocked).
fn evict_until(c: &mut BlockCache, done: impl Fn(&BlockCache) -> bool) -> Evicted {
    let mut evicted = Evicted::new();
    while !c.blocks.is_empty() && !done(c) {
        let (n, q) = c.blocks.remove(0);
        c.bytes -= n;
        CACHED_BYTES.fetch_sub(n as u64, Ordering::Relaxed);
        evicted.push((n, q));
    }
    evicted
}

/// Returns blocks to the system. Safe to call because [`Evicted`] lists only blocks taken
/// out of the big-block cache (by `evict_until`) or given up to it (`free`): each came
/// from `fresh_alloc` with that capacity and is owned by nobody else.
pub(super) fn free_blocks(blocks: Evicted) {
    for (cap, p) in blocks {
        // SAFETY: see above.
        unsafe { system_free(p, cap) };
    }
}

/// Keeps a freed big block, or frees it when it cannot fit.
///
/// # Safety
/// `p` came from [`alloc`]`(nbytes)` (a `fresh_alloc(big_capacity(nbytes))` block) and
/// the caller gives it up.
pub(super) unsafe fn free(p: *mut u8, nbytes: usize) {
    let cap = big_capacity(nbytes);
    let limit = cache_limit();
    if cap > limit {
        // SAFETY: our contract.
        unsafe { system_free(p, cap) };
        return;
    }
    let evicted = {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let mut evicted = evict_until(&mut c, |c| {
            c.bytes + cap <= limit && c.blocks.len() < CACHE_MAX_BLOCKS
        });
        if c.blocks.try_reserve(1).is_ok() {
            c.blocks.push((cap, p));
            c.bytes += cap;
            CACHED_BYTES.fetch_add(cap as u64, Ordering::Relaxed);
        } else {
            evicted.push((cap, p));
        }
        evicted
    };
    free_blocks(evicted);
}

/// Sets the cache limit (`policy::swap_limit`, under the cache lock) and takes out the
/// blocks beyond it, to be freed by the caller ([`free_blocks`]). Returns the previous
/// limit.
pub(super) fn set_limit(new: usize) -> (usize, Evicted) {
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let prev = swap_limit(new);
    (prev, evict_until(&mut c, |c| c.bytes <= new))
}

/// Takes out every cached block, to be freed by the caller ([`free_blocks`]).
pub(super) fn take_all() -> Evicted {
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    evict_until(&mut c, |_| false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::Allocator;

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
        // SAFETY: q came from a.allocate(n), freed once.
        unsafe { a.deallocate(q, n) };
        // Filling the cache past its bound evicts: it never holds more than the limit.
        let blocks: Vec<*mut u8> = (0..20).map(|_| a.allocate(3 << 20).unwrap()).collect();
        for b in blocks {
            // SAFETY: each b came from a.allocate(3 << 20), freed once.
            unsafe { a.deallocate(b, 3 << 20) };
        }
        let c = CACHE.lock().unwrap();
        assert!(c.bytes <= cache_limit() && c.blocks.len() <= CACHE_MAX_BLOCKS);
        assert_eq!(c.bytes, c.blocks.iter().map(|b| b.0).sum::<usize>());
    }

    #[test]
    fn capacities_are_classes_at_most_a_quarter_over() {
        let mut last = 0;
        for n in (BIG_MIN..HUGE_THRESHOLD + 5)
            .step_by(997)
            .chain([BIG_MIN, 128 << 10, 1 << 20])
        {
            let cap = big_capacity(n);
            assert!(cap >= n && cap as f64 <= n as f64 * 1.25, "{n} -> {cap}");
            assert_eq!(cap % 64, 0, "{n} -> {cap}: a multiple of the alignment");
            // Monotone in the request, and a class's capacity is its own class.
            if n > last {
                assert!(cap >= big_capacity(last.max(BIG_MIN)));
                last = n;
            }
            assert_eq!(big_capacity(cap), cap, "{n} -> {cap}");
        }
        assert_eq!(big_capacity(HUGE_THRESHOLD + 1), 2 * HUGE_THRESHOLD);
        // Their reuse, with exact figures, is c_tests/test_memory.c's (one process, one
        // thread: no other test takes a block of the class between the free and the use).
    }
}

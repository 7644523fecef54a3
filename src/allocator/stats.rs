//! The library-wide memory statistics: counters every allocation, free and storage
//! updates, read together by `memory_stats`.

use super::policy::cache_limit;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes held by the caches (big blocks and every thread's small blocks).
pub(super) static CACHED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes the built-in allocator holds from the system: live blocks (big ones counted at
/// their 2 MiB-rounded capacity) plus cached blocks.
pub(super) static RESERVED_BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE_STORAGES: AtomicU64 = AtomicU64::new(0);
static LIVE_EXTERNAL: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);
static TOTAL_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

pub(super) fn stats_alloc(nbytes: usize) {
    let live = LIVE_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed) + nbytes as u64;
    // The peak only grows: a plain load first spares the read-modify-write (an atomic
    // cmpxchg on x86) on every allocation that does not set a new peak.
    if live > PEAK_BYTES.load(Ordering::Relaxed) {
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
    }
    TOTAL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
}

pub(super) fn stats_free(nbytes: usize) {
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
    /// Bytes the built-in allocator holds from the system (live blocks, big ones rounded
    /// up to 2 MiB, plus cached blocks).
    pub reserved_bytes: u64,
    /// Bytes of freed big blocks kept for reuse.
    pub cached_bytes: u64,
    /// The cache limit in force.
    pub cache_limit_bytes: u64,
}

pub fn memory_stats() -> MemoryStats {
    MemoryStats {
        live_storages: LIVE_STORAGES.load(Ordering::Relaxed),
        live_bytes: LIVE_BYTES.load(Ordering::Relaxed),
        peak_bytes: PEAK_BYTES.load(Ordering::Relaxed),
        total_allocations: TOTAL_ALLOCATIONS.load(Ordering::Relaxed),
        live_external_storages: LIVE_EXTERNAL.load(Ordering::Relaxed),
        reserved_bytes: RESERVED_BYTES.load(Ordering::Relaxed),
        cached_bytes: CACHED_BYTES.load(Ordering::Relaxed),
        cache_limit_bytes: cache_limit() as u64,
    }
}

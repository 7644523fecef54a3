//! The library-wide memory statistics: counters every allocation, free and storage
//! updates, read together by `memory_stats` into [`MemoryStats`], the one struct both the
//! core and the C API (`tensor_memory_stats_t`) use.

use super::policy::cache_limit;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes held by the caches (big blocks and every thread's blocks of up to 64 KiB).
pub(super) static CACHED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes the built-in allocator holds from the system: live blocks (big ones counted at
/// their capacity, `big::big_capacity`) plus cached blocks.
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

/// The bytes of a storage kept inside its own object came alive (`nbytes` of at most
/// [`INLINE_BYTES`](super::INLINE_BYTES)): counted as an allocation of `nbytes`, reserved
/// as the one 64-byte block it stands in for (what a separate block of that size would
/// count).
pub(crate) fn stats_inline_alloc(nbytes: usize) {
    stats_alloc(nbytes);
    RESERVED_BYTES.fetch_add(super::INLINE_BYTES as u64, Ordering::Relaxed);
}

/// The inline bytes of [`stats_inline_alloc`]`(nbytes)` died (they go with the object, to
/// no data cache: no longer reserved).
pub(crate) fn stats_inline_free(nbytes: usize) {
    stats_free(nbytes);
    RESERVED_BYTES.fetch_sub(super::INLINE_BYTES as u64, Ordering::Relaxed);
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

/// Library-wide memory counters (the core's own struct, which the C API hands out as it
/// is). The caller sets `out->struct_size = sizeof(*out)`; only the fields that fit in
/// that size are written.
/// Errors: NULL_POINTER; INVALID_ARGUMENT when struct_size is smaller than the first field.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryStats {
    /// Caller sets sizeof(tensor_memory_stats_t): lets the struct grow.
    pub struct_size: usize,
    /// StorageImpls whose data is alive (allocated or wrapped).
    pub live_storages: u64,
    /// Bytes the library allocated for storages still alive.
    pub live_bytes: u64,
    /// Highest live_bytes seen.
    pub peak_bytes: u64,
    /// Allocations made for storages since the library loaded.
    pub total_allocations: u64,
    /// from_blob / DLPack wraps not yet released.
    pub live_external_storages: u64,
    /// Bytes the built-in allocator holds from the system and has not returned: the
    /// blocks of live storages (blocks <= 1 KiB counted at their size rounded up to 64
    /// bytes, blocks >= 2 MiB at their size rounded up to 2 MiB, blocks above 64 KiB and
    /// under 2 MiB at their size rounded up to a multiple of an eighth of the next power of
    /// two, e.g. 300000 bytes to 327680; the bytes of a storage of
    /// at most 64, held inside its StorageImpl object, as one 64-byte block) plus
    /// `cached_bytes`. Like PyTorch's "reserved" (allocated is `live_bytes`, which also
    /// counts custom-allocator storages; reserved does not). malloc's own overhead is not
    /// included.
    pub reserved_bytes: u64,
    /// Bytes of freed blocks kept for reuse: big blocks (returned to the system by
    /// `tensor_empty_cache`, by lowering the limit) and every thread's blocks of up to
    /// 64 KiB (see `tensor_empty_cache`). Nothing is kept while the limit is 0. The library's own
    /// objects kept per thread (TensorImpl and StorageImpl boxes) are not tensor memory
    /// and are not counted.
    pub cached_bytes: u64,
    /// The cache limit in force (`tensor_set_cache_limit`, `TENSOR_CACHE_LIMIT`,
    /// `TENSOR_NO_CACHING`; default 268435456).
    pub cache_limit_bytes: u64,
}

/// The counters now (`struct_size`: the whole struct).
pub fn memory_stats() -> MemoryStats {
    MemoryStats {
        struct_size: std::mem::size_of::<MemoryStats>(),
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

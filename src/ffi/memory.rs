//! Memory: statistics, the allocator's cache, snapshots
//!
//! Library-wide counters, the allocator's cache, and the opt-in snapshot of live
//! storages.

use super::*;
use crate::allocator::{memory_stats, MemoryStats};
use crate::storage::StorageKind;

/// The C struct `tensor_memory_stats_t` is the core's counters struct (its fields and
/// their meaning are documented there, and the header is generated from it).
pub use crate::allocator::MemoryStats as tensor_memory_stats_t;

/// Fills `*out` with the library-wide memory counters (see `tensor_memory_stats_t`).
/// Errors: NULL_POINTER, INVALID_ARGUMENT (struct_size too small).
#[no_mangle]
pub extern "C" fn tensor_memory_stats(out: *mut MemoryStats) -> tensor_status_t {
    call(fn_name!(), || {
        let out = out_arg(out)?;
        let size = out.struct_size;
        let header = std::mem::size_of::<usize>();
        ensure!(
            size >= header,
            InvalidArgument,
            "struct_size {size} is smaller than {header}; set it to sizeof(tensor_memory_stats_t)"
        );
        let full = MemoryStats {
            struct_size: size,
            ..memory_stats()
        };
        let n = size.min(std::mem::size_of::<MemoryStats>());
        // SAFETY: the caller's struct holds struct_size bytes; we copy at most that many.
        unsafe {
            std::ptr::copy_nonoverlapping(
                &full as *const _ as *const u8,
                out as *mut _ as *mut u8,
                n,
            )
        };
        Ok(())
    })
}

/// Returns the built-in allocator's cache of freed big blocks to the system, like
/// `torch.cuda.empty_cache()`. Returns the number of bytes released.
///
/// When memory goes back to the system: a storage's block is freed when its last strong
/// reference dies (a view keeps its whole storage alive; see `tensor_memory_snapshot`).
/// Blocks of at most 1 KiB go to the freeing thread's size-class cache (64-byte classes,
/// up to 8 blocks per class: at most 68 KiB per thread), and blocks of 1-64 KiB to its
/// cache of the last 8 freed (at most 256 KiB per thread, oldest out first, reused by a
/// request of exactly the same size), returned when that thread exits or calls this
/// function. Bigger blocks go to a cache shared by all threads (keyed by capacity: the
/// size rounded up to 2 MiB from 2 MiB, below to a multiple of an eighth of the next power
/// of two, at most a quarter more) so that ops run in a loop, and a model run after run,
/// do not page-fault again; they stay reserved (`reserved_bytes`, `cached_bytes` in
/// `tensor_memory_stats_t`) until an allocation of the same capacity reuses them, a newer
/// block evicts them (the cache holds at most `cache_limit_bytes` and 64 blocks, oldest
/// out first), `tensor_set_cache_limit` lowers the limit, or this call. Under a memory
/// checker (unless `TENSOR_NO_CACHING=0`) the blocks of 64 KiB - 2 MiB go straight back
/// to malloc instead, at their exact size. Limit 0 (`tensor_set_cache_limit`) caches nothing of either
/// size. Cached blocks are never counted in `live_bytes`. Safe to call at any time, from
/// any thread (blocks up to 64 KiB: the calling thread's only).
///
/// The library's own objects (each tensor's TensorImpl and each storage's StorageImpl, a
/// few hundred bytes, no tensor data) are kept the same way for reuse: up to 16 of each per
/// thread, returned at thread exit or by this call on that thread, never kept under limit
/// 0; they are not tensor memory, so neither the statistics nor the bytes returned here
/// count them. The per-thread caches (blocks up to 64 KiB and objects) keep nothing while
/// AddressSanitizer or a heap-checking valgrind tool watches the process, unless
/// `TENSOR_NO_CACHING=0` (docs/c-api.md, "Debugging caller bugs").
#[no_mangle]
pub extern "C" fn tensor_empty_cache() -> u64 {
    guard(fn_name!(), crate::allocator::empty_cache)
}

/// Sets the most bytes the big-block cache may hold (see `tensor_empty_cache`) and
/// returns the previous limit. 0 turns caching off: every freed block goes back to the
/// system at once. Blocks beyond the new limit are freed before the call returns. Like
/// PyTorch's `PYTORCH_NO_CUDA_MEMORY_CACHING` / `max_split_size`, the start-up value comes
/// from the environment, read once (at the first big allocation or cache call):
/// `TENSOR_NO_CACHING=1` (or true, yes, on) means 0, else `TENSOR_CACHE_LIMIT=<bytes>[K|M|G]`,
/// else 268435456 (256 MiB); a value it cannot use is ignored with a warning on stderr.
/// This call overrides the environment. Thread-safe.
#[no_mangle]
pub extern "C" fn tensor_set_cache_limit(max_bytes: u64) -> u64 {
    guard(fn_name!(), || crate::allocator::set_cache_limit(max_bytes))
}

/// What a storage's memory is (in `tensor_storage_info_t`).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tensor_storage_kind_t(pub i32);

/// Allocated by the library (built-in or custom allocator).
pub const TENSOR_STORAGE_ALLOCATED: tensor_storage_kind_t = tensor_storage_kind_t(0);
/// Caller memory wrapped by `tensor_from_blob`, `storage_from_blob` or DLPack.
pub const TENSOR_STORAGE_EXTERNAL: tensor_storage_kind_t = tensor_storage_kind_t(1);
/// A memory-mapped file.
pub const TENSOR_STORAGE_MAPPED: tensor_storage_kind_t = tensor_storage_kind_t(2);

/// The C code of a storage kind (an exhaustive match: a new kind does not compile until
/// it is tabled here).
const fn storage_kind_code(k: StorageKind) -> tensor_storage_kind_t {
    match k {
        StorageKind::Allocated => TENSOR_STORAGE_ALLOCATED,
        StorageKind::External => TENSOR_STORAGE_EXTERNAL,
        StorageKind::Mapped => TENSOR_STORAGE_MAPPED,
    }
}

// Each kind's C code equals its discriminant.
const _: () = {
    assert!(storage_kind_code(StorageKind::Allocated).0 == StorageKind::Allocated as i32);
    assert!(storage_kind_code(StorageKind::External).0 == StorageKind::External as i32);
    assert!(storage_kind_code(StorageKind::Mapped).0 == StorageKind::Mapped as i32);
};

/// One live storage in a memory snapshot (`tensor_memory_snapshot`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tensor_storage_info_t {
    /// The storage's data pointer (NULL for 0 bytes).
    pub data: *const c_void,
    /// Bytes the storage holds alive.
    pub nbytes: u64,
    /// TENSOR_STORAGE_ALLOCATED, TENSOR_STORAGE_EXTERNAL or TENSOR_STORAGE_MAPPED.
    pub kind: tensor_storage_kind_t,
    /// Strong references: one per tensor on it plus each `storage_t*` handle.
    pub strong_count: u64,
    /// Weak references (`storage_weak_t*` handles).
    pub weak_count: u64,
    /// Live tensors (handles or views) on this storage.
    pub tensor_count: u64,
    /// Bytes of the storage those tensors can reach: the union over them of the range from
    /// their first to their last element. `reachable_bytes` much smaller than `nbytes`
    /// means small views pin a big block: `tensor_clone` them and release the base.
    pub reachable_bytes: u64,
}

/// Turns memory tracking on (`enabled` non-zero) or off (0) and returns the previous
/// state. (An `int`, not a `bool`, so that any value a C caller passes is defined.)
/// Tracking registers
/// the storages and tensors created while it is on, so that `tensor_memory_snapshot` can
/// list them; it is off by default and costs nothing on the view path when off (one
/// flag test). `TENSOR_MEMORY_TRACKING=1` (or true, yes, on) in the environment turns it on
/// at start-up.
/// Turning it off forgets every registration. Thread-safe.
#[no_mangle]
pub extern "C" fn tensor_set_memory_tracking(enabled: std::ffi::c_int) -> bool {
    guard(fn_name!(), || crate::snapshot::set_tracking(enabled != 0))
}

/// Is memory tracking on (see `tensor_set_memory_tracking`)?
#[no_mangle]
pub extern "C" fn tensor_memory_tracking_enabled() -> bool {
    guard(fn_name!(), crate::snapshot::is_tracking)
}

/// Snapshot of every live storage created while tracking was on, biggest first: sets
/// `*count` to their number and writes the first `min(capacity, *count)` of them to
/// `out` (call with capacity 0 to size the array). 0 storages when tracking is off.
/// Thread-safe, and takes no reference to what it lists: it never runs a deleter, so a
/// storage's deleter still runs on the thread that releases its last reference even while
/// another thread takes snapshots (a storage or tensor being released meanwhile is left
/// out).
/// Errors: NULL_POINTER (count, or out with capacity > 0), OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn tensor_memory_snapshot(
    out: *mut tensor_storage_info_t,
    capacity: usize,
    count: *mut usize,
) -> tensor_status_t {
    call(fn_name!(), || {
        let count = out_arg(count)?;
        ensure!(
            !out.is_null() || capacity == 0,
            NullPointer,
            "argument 'out' is NULL but capacity is {capacity}"
        );
        let snap = crate::snapshot::snapshot()?;
        for (i, s) in snap.iter().take(capacity).enumerate() {
            // SAFETY: the caller's array holds `capacity` entries; i < capacity.
            unsafe {
                out.add(i).write(tensor_storage_info_t {
                    data: s.data as *const c_void,
                    nbytes: s.nbytes,
                    kind: storage_kind_code(s.kind),
                    strong_count: s.strong,
                    weak_count: s.weak,
                    tensor_count: s.tensors,
                    reachable_bytes: s.reachable_bytes,
                })
            };
        }
        *count = snap.len();
        Ok(())
    })
}

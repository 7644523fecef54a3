//! Where storage bytes come from: the built-in allocator (64-byte aligned; blocks of 2 MiB
//! or more 2 MiB-aligned with transparent-huge-page advice; blocks above 64 KiB reused
//! through a bounded cache of freed big blocks) or a caller's C vtable, plus the
//! library-wide memory statistics.
//!
//! One file per job: this one the vtable, the default allocator and the built-in
//! allocator's routing by size; [`system`] the blocks from and back to the system;
//! [`big`] the cache of freed big blocks; [`small`] the per-thread cache of small and
//! medium blocks; [`objects`] the per-thread cache of object boxes (an allocation strategy
//! of `refcount`); [`thread`] the one thread-local both per-thread caches live in; [`policy`] when the caches keep blocks (the limit, the environment);
//! [`stats`] the counters.
//!
//! Ownership of a block: from `allocate` until the matching `deallocate` it is the
//! caller's (a storage); while cached it belongs to the cache that holds it (the global
//! big-block cache under its mutex, or one thread's small-block cache); the system gets it
//! back through exactly one `system_free`.

mod big;
mod objects;
mod policy;
mod small;
mod stats;
mod system;
mod thread;

pub(crate) use objects::{DimsBoxes, StorageBoxes, TensorBoxes};
pub(crate) use policy::{aside_for_checker, cache_limit};
pub use stats::MemoryStats;
pub(crate) use stats::{
    memory_stats, stats_inline_alloc, stats_inline_free, stats_storage_born, stats_storage_died,
};

/// The largest storage whose bytes the built-in allocator places inside the storage's own
/// object (`storage::StorageImpl`: one allocation for both, the bytes on a cache line of
/// their own), instead of a small block: one line.
pub(crate) const INLINE_BYTES: usize = ALIGNMENT;
pub(crate) use system::{page_size, prefault_for_write, ALIGNMENT};

use crate::error::{Error, Result, Status};
use stats::{stats_alloc, stats_free};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

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
// SAFETY: as for Send: the value is only copied and its callbacks called, from any thread.
unsafe impl Sync for Allocator {}

static DEFAULT: RwLock<Allocator> = RwLock::new(Allocator::Builtin);
/// Whether `DEFAULT` holds `Builtin` (written under its write lock): every allocation reads
/// this flag without the lock, and takes the lock only when a custom allocator is set. A
/// read lock is two atomic read-modify-writes per allocation (a sixth of a small clone's
/// atomics).
static DEFAULT_IS_BUILTIN: AtomicBool = AtomicBool::new(true);

impl Allocator {
    pub fn default_allocator() -> Allocator {
        // A reader that sees the flag from before a concurrent set_default gets the old
        // allocator, as if it had read just before the set.
        if DEFAULT_IS_BUILTIN.load(Ordering::Acquire) {
            return Allocator::Builtin;
        }
        *DEFAULT.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_default(a: Allocator) {
        let mut d = DEFAULT.write().unwrap_or_else(|e| e.into_inner());
        *d = a;
        DEFAULT_IS_BUILTIN.store(matches!(a, Allocator::Builtin), Ordering::Release);
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
    // Out of line: inlined into `StorageImpl::release_data`, it makes the storage's drop too
    // big to inline into its box's `refcount::destroy` (benches/c/count.sh, from_blob: 10
    // more instructions per call).
    #[inline(never)]
    pub unsafe fn deallocate(&self, p: *mut u8, nbytes: usize) {
        if p.is_null() {
            return;
        }
        stats_free(nbytes);
        match *self {
            // SAFETY: p came from builtin_alloc(nbytes) (our contract: self is Builtin) and
            // is given up here.
            Allocator::Builtin => unsafe { builtin_free(p, nbytes) },
            Allocator::Custom {
                ctx, deallocate, ..
            } => {
                // SAFETY: p came from this vtable's allocate(ctx, nbytes, ALIGNMENT) (our
                // contract); the callback frees it, as the C API documents.
                unsafe { deallocate(ctx, p as *mut c_void, nbytes) }
            }
        }
    }
}

/// Sets the cache limit (0 turns caching off) and frees the cached blocks beyond it at
/// once. Returns the previous limit. Overrides the environment variables.
pub fn set_cache_limit(bytes: u64) -> u64 {
    let _ = cache_limit(); // the environment is read first, so it never overrides this
    let new = bytes.min(isize::MAX as u64) as usize;
    let (prev, evicted) = big::set_limit(new);
    if new == 0 {
        objects::drain();
        small::drain();
    }
    big::free_blocks(evicted);
    prev as u64
}

/// Returns every cached block to the system; the number of bytes released.
/// Also empties the calling thread's small-block cache (and its object boxes).
pub fn empty_cache() -> u64 {
    let blocks = big::take_all();
    let freed: u64 = blocks.iter().map(|b| b.0 as u64).sum();
    big::free_blocks(blocks);
    objects::drain();
    freed + small::drain()
}

fn builtin_alloc(nbytes: usize) -> *mut u8 {
    if nbytes <= small::SMALL_MAX {
        small::alloc(nbytes)
    } else if nbytes <= small::MID_MAX {
        small::alloc_mid(nbytes)
    } else if big::is_big(nbytes) {
        big::alloc(nbytes)
    } else {
        system::fresh_alloc(nbytes)
    }
}

/// Frees a block from [`builtin_alloc`]: big ones go to the reuse cache, small and medium
/// ones to the thread's cache (unless caching is off).
///
/// # Safety
/// `p` came from `builtin_alloc(nbytes)` (non-NULL) and the caller gives it up.
unsafe fn builtin_free(p: *mut u8, nbytes: usize) {
    // Each branch hands the block back to the one that made it for this nbytes (the same
    // tests as builtin_alloc), as the callees' contracts ask.
    // SAFETY: see above.
    unsafe {
        if nbytes <= small::SMALL_MAX {
            small::free(p, nbytes);
        } else if nbytes <= small::MID_MAX {
            small::free_mid(p, nbytes);
        } else if big::is_big(nbytes) {
            big::free(p, nbytes);
        } else {
            system::system_free(p, nbytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_blocks_are_aligned() {
        let a = Allocator::Builtin;
        for n in [1usize, 63, 4096, (2 << 20) - 1] {
            let p = a.allocate(n).unwrap();
            assert_eq!(p as usize % ALIGNMENT, 0);
            // SAFETY: p came from a.allocate(n), freed once.
            unsafe { a.deallocate(p, n) };
        }
    }
}

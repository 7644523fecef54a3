//! The one thread-local of the per-thread caches: this thread's object boxes (whose
//! policy is in `objects.rs`) and data blocks (`small.rs`) in one struct, reached by
//! [`with`], with the lists' storage and their draining (the files above say what goes in).
//!
//! In a shared library every thread-local access is a `__tls_get_addr` call (general-dynamic
//! TLS), and a `thread_local!` whose value needs dropping adds a state test (alive,
//! destroyed, destructor registered) to each access, a `RefCell` a borrow flag: about 25
//! instructions, six times per small clone + release when each cache had its own. This value
//! needs no drop, so an access is the address and nothing else; what must happen at thread
//! exit (the blocks back to the system) is a separate guard, registered by the first block
//! a thread keeps ([`ThreadCaches::may_keep`]).

use super::stats::CACHED_BYTES;
use super::system::{system_free, ALIGNMENT};
use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::sync::atomic::Ordering;

/// Object slots: one per boxed type (a slot keeps blocks of one layout only; another type's
/// blocks would be freed instead of kept).
const OBJ_SLOTS: usize = 3;
const OBJ_PER_SLOT: usize = 16;

/// Small-block classes (64 bytes each, up to 1 KiB) and the blocks kept per class.
pub(super) const SMALL_CLASSES: usize = 1024 / ALIGNMENT;
const SMALL_PER_CLASS: usize = 8;
/// Medium blocks kept per thread.
pub(super) const MID_SLOTS: usize = 8;
/// Bytes of medium blocks kept per thread.
pub(super) const MID_BYTES: usize = 256 << 10;

/// The object boxes of each slot.
pub(super) struct ObjectCache {
    pub(super) len: [u8; OBJ_SLOTS],
    pub(super) obj: [[*mut u8; OBJ_PER_SLOT]; OBJ_SLOTS],
    /// The layout of each slot's blocks (all of a slot's blocks share it: `put` refuses
    /// another).
    pub(super) layout: [Layout; OBJ_SLOTS],
}

impl ObjectCache {
    const fn new() -> ObjectCache {
        ObjectCache {
            len: [0; OBJ_SLOTS],
            obj: [[std::ptr::null_mut(); OBJ_PER_SLOT]; OBJ_SLOTS],
            layout: [Layout::new::<u8>(); OBJ_SLOTS],
        }
    }

    /// Gives every block back to the global allocator (`system::free_box`).
    pub(super) fn drain(&mut self) {
        for slot in 0..OBJ_SLOTS {
            for &p in &self.obj[slot][..self.len[slot] as usize] {
                // SAFETY: cached object blocks came from system::fresh_box with this
                // slot's layout (objects::put's contract) and are owned here.
                unsafe { super::system::free_box(p, self.layout[slot]) };
            }
            self.len[slot] = 0;
        }
    }
}

/// The data blocks: small ones by class, medium ones by exact size.
pub(super) struct SmallCache {
    pub(super) len: [u8; SMALL_CLASSES],
    pub(super) blocks: [[*mut u8; SMALL_PER_CLASS]; SMALL_CLASSES],
    /// Medium blocks, oldest first, and their sizes.
    pub(super) mid_len: usize,
    pub(super) mid: [(*mut u8, usize); MID_SLOTS],
    pub(super) mid_bytes: usize,
}

impl SmallCache {
    const fn new() -> SmallCache {
        SmallCache {
            len: [0; SMALL_CLASSES],
            blocks: [[std::ptr::null_mut(); SMALL_PER_CLASS]; SMALL_CLASSES],
            mid_len: 0,
            mid: [(std::ptr::null_mut(), 0); MID_SLOTS],
            mid_bytes: 0,
        }
    }

    /// Frees every block; the bytes released.
    pub(super) fn drain(&mut self) -> u64 {
        let mut freed = 0u64;
        for c in 0..SMALL_CLASSES {
            let cap = (c + 1) * ALIGNMENT;
            for &p in &self.blocks[c][..self.len[c] as usize] {
                // SAFETY: cached blocks came from fresh_alloc(cap) and are owned here.
                unsafe { release(p, cap) };
                freed += cap as u64;
            }
            self.len[c] = 0;
        }
        while self.mid_len > 0 {
            freed += self.evict_oldest() as u64;
        }
        freed
    }

    /// Gives the oldest medium block back to the system (`mid_len > 0`); its size.
    pub(super) fn evict_oldest(&mut self) -> usize {
        let (p, n) = self.mid[0];
        self.mid.copy_within(1..self.mid_len, 0);
        self.mid_len -= 1;
        self.mid_bytes -= n;
        // SAFETY: cached medium blocks came from fresh_alloc(n) and are owned here.
        unsafe { release(p, n) };
        n
    }
}

/// A cached block of `cap` bytes back to the system.
///
/// # Safety
/// `p` came from `fresh_alloc(cap)` and was held by a cache, which gives it up.
unsafe fn release(p: *mut u8, cap: usize) {
    CACHED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
    // SAFETY: the contract.
    unsafe { system_free(p, cap) };
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

/// No block kept yet: the thread-exit guard is not registered.
const UNREGISTERED: u8 = 0;
/// The guard is registered: the thread's blocks go back to the system at its exit.
const LIVE: u8 = 1;
/// The guard has run (thread exit) or could not be registered: nothing is kept any more.
const DEAD: u8 = 2;

pub(super) struct ThreadCaches {
    pub(super) objects: ObjectCache,
    pub(super) small: SmallCache,
    state: u8,
}

impl ThreadCaches {
    /// Whether a freed block may be kept here: true once the thread-exit guard is
    /// registered (the first call registers it), false after it ran.
    #[inline(always)]
    pub(super) fn may_keep(&mut self) -> bool {
        if self.state == LIVE {
            return true;
        }
        self.register()
    }

    #[cold]
    #[inline(never)]
    fn register(&mut self) -> bool {
        if self.state == UNREGISTERED {
            // The first access of a thread_local with a destructor registers it (also
            // during another thread-local's destructor; after its own has run it fails).
            self.state = if EXIT_GUARD.try_with(|_| ()).is_ok() {
                LIVE
            } else {
                DEAD
            };
        }
        self.state == LIVE
    }
}

thread_local! {
    static CACHES: UnsafeCell<ThreadCaches> = const {
        UnsafeCell::new(ThreadCaches {
            objects: ObjectCache::new(),
            small: SmallCache::new(),
            state: UNREGISTERED,
        })
    };
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// Runs `f` on this thread's caches. `f` must not call `with` again (the callers' closures
/// push, pop, and give blocks to the system allocator, which never calls back here).
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&mut ThreadCaches) -> R) -> R {
    // The address alone comes out of `LocalKey::with`: a closure that does the work makes
    // it an out-of-line call (benches/c/count.sh).
    let c = CACHES.with(|c| c.get());
    // SAFETY: the value is this thread's, reached only here, and `f` does not re-enter
    // (the contract above): this is the only reference to it while `f` runs.
    f(unsafe { &mut *c })
}

/// Empties this thread's caches when it exits; from then on it keeps nothing.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        with(|c| {
            c.state = DEAD;
            c.objects.drain();
            c.small.drain();
        });
    }
}

//! The one thread-local of the per-thread caches: this thread's object boxes
//! ([`objects`](super::objects)) and data blocks ([`small`](super::small)) in one struct,
//! reached by [`with`].
//!
//! In a shared library every thread-local access is a `__tls_get_addr` call (general-dynamic
//! TLS), and a `thread_local!` whose value needs dropping adds a state test (alive,
//! destroyed, destructor registered) to each access, a `RefCell` a borrow flag: about 25
//! instructions, six times per small clone + release when each cache had its own. This value
//! needs no drop, so an access is the address and nothing else; what must happen at thread
//! exit (the blocks back to the system) is a separate guard, registered by the first block
//! a thread keeps ([`ThreadCaches::may_keep`]).

use super::objects::ObjectCache;
use super::small::SmallCache;
use std::cell::UnsafeCell;

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

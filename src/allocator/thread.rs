//! The one thread-local of the per-thread caches: this thread's object boxes (whose
//! policy is in `objects.rs`) and data blocks (`small.rs`) in one struct, reached by
//! [`with`], with the lists' storage and their draining (the files above say what goes in).
//!
//! In a shared library every `thread_local!` access is a `__tls_get_addr` call
//! (general-dynamic TLS), and one whose value needs dropping adds a state test (alive,
//! destroyed, destructor registered) to each access, a `RefCell` a borrow flag: about 25
//! instructions, six times per small clone + release when each cache had its own. This value
//! needs no drop, so an access is the address and nothing else: on x86_64 Linux a TLS
//! descriptor access of a TLS variable of our own (five instructions, no `__tls_get_addr`:
//! [`caches`]), elsewhere a `thread_local!`. What must happen at thread exit (the blocks
//! back to the system) is a separate guard, registered by the first block a thread keeps
//! ([`ThreadCaches::may_keep`]).

use super::stats::CACHED_BYTES;
use super::system::{system_free, ALIGNMENT};
use std::alloc::Layout;
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
    pub(super) layout: [SlotLayout; OBJ_SLOTS],
}

/// A slot's block layout as its two words, so that the caches' initial state is all zero
/// bytes (see [`caches`]): `(0, 0)`, no layout yet, matches no real one (a `Layout` has no
/// zero value: its alignment is never 0).
#[derive(Clone, Copy)]
pub(super) struct SlotLayout {
    size: usize,
    align: usize,
}

impl SlotLayout {
    const NONE: SlotLayout = SlotLayout { size: 0, align: 0 };

    #[inline(always)]
    pub(super) fn is(self, l: Layout) -> bool {
        self.size == l.size() && self.align == l.align()
    }

    #[inline(always)]
    pub(super) fn set(&mut self, l: Layout) {
        *self = SlotLayout {
            size: l.size(),
            align: l.align(),
        };
    }
}

impl ObjectCache {
    const fn new() -> ObjectCache {
        ObjectCache {
            len: [0; OBJ_SLOTS],
            obj: [[std::ptr::null_mut(); OBJ_PER_SLOT]; OBJ_SLOTS],
            layout: [SlotLayout::NONE; OBJ_SLOTS],
        }
    }

    /// Gives every block back to the global allocator (`system::free_box`).
    pub(super) fn drain(&mut self) {
        for slot in 0..OBJ_SLOTS {
            let SlotLayout { size, align } = self.layout[slot];
            for &p in &self.obj[slot][..self.len[slot] as usize] {
                // SAFETY: a slot holding blocks has the layout `put` stored from a real
                // `Layout` (so size and align are valid for one); its blocks came from
                // system::fresh_box with that layout (objects::put's contract) and are
                // owned here.
                unsafe {
                    let layout = Layout::from_size_align_unchecked(size, align);
                    super::system::free_box(p, layout)
                };
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

impl ThreadCaches {
    /// The initial state: every byte zero (no block kept, guard unregistered), which is how
    /// the x86_64 Linux storage below starts (`.tbss`). Every field is an integer, a raw
    /// pointer or an array / struct of them, for which all-zero bytes are a valid value;
    /// `initial_state_is_all_zero` (a unit test, also run under Miri) checks that this
    /// stays so field by field.
    // With the TLS descriptor (`caches` below) the storage starts zeroed and this is only the
    // test's reference.
    #[cfg_attr(tensor_tls_descriptor, allow(dead_code))]
    const fn new() -> ThreadCaches {
        ThreadCaches {
            objects: ObjectCache::new(),
            small: SmallCache::new(),
            state: UNREGISTERED,
        }
    }
}

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// This thread's caches (x86_64 Linux with glibc, not Miri): a TLS variable of this
/// library's own, defined below, reached through a TLS descriptor (`-mtls-dialect=gnu2`'s
/// access, written out in `asm!`, which stable Rust cannot ask of `thread_local!`).
///
/// A `thread_local!` in a shared library is general-dynamic TLS: every access is a
/// `__tls_get_addr` call through the PLT (about 15 instructions with the call, twice per
/// view + release). Through a descriptor, the dynamic loader picks the access when it
/// relocates the library: when the library's TLS block is in the static TLS area (always
/// for a library the program was linked with, and for a `dlopen`ed one while the static
/// TLS surplus has room) the descriptor's function is `_dl_tlsdesc_return`, two
/// instructions returning the thread-pointer offset; otherwise `_dl_tlsdesc_dynamic`, the
/// `__tls_get_addr` path. Unlike an initial-exec access (`@gottpoff`, which marks the
/// library `DF_STATIC_TLS`), this never makes a `dlopen` fail when the surplus is used up
/// (this library's TLS block is about 1.8 KiB, over glibc's default surplus for
/// `dlopen`ed libraries); linked into an executable (the tests), the linker relaxes it to
/// a constant offset.
///
/// The asm is treated as a C call (`clobber_abi("C")`): the descriptor ABI promises that
/// only `rax` changes, but glibc before 2.39 could clobber vector registers in
/// `_dl_tlsdesc_dynamic`. On entry to an `asm!` block without `nostack` the stack is
/// aligned for a call, as the descriptor function may need.
#[cfg(tensor_tls_descriptor)]
#[inline(always)]
fn caches() -> *mut ThreadCaches {
    let off: usize;
    // SAFETY: the standard x86_64 TLS-descriptor sequence for the TLS symbol defined below:
    // the call returns the variable's offset from the thread pointer (`%fs:0` holds the
    // thread pointer itself), and touches nothing but what `clobber_abi("C")` declares.
    unsafe {
        std::arch::asm!(
            "leaq libtensor_thread_caches@tlsdesc(%rip), %rax",
            "call *libtensor_thread_caches@tlscall(%rax)",
            "addq %fs:0, %rax",
            out("rax") off,
            clobber_abi("C"),
            options(att_syntax),
        );
    }
    off as *mut ThreadCaches
}

// The storage of `caches()`: one `ThreadCaches` per thread, zero-initialised by the dynamic
// loader (`.tbss`: the valid initial state, `ThreadCaches::new`), never dropped (it needs no
// drop; the thread-exit work is `EXIT_GUARD`'s). Hidden: not exported from the library.
#[cfg(tensor_tls_descriptor)]
std::arch::global_asm!(
    ".pushsection .tbss.libtensor_thread_caches,\"awT\",@nobits",
    ".p2align {align}",
    ".globl libtensor_thread_caches",
    ".hidden libtensor_thread_caches",
    ".type libtensor_thread_caches,@tls_object",
    ".size libtensor_thread_caches,{size}",
    "libtensor_thread_caches:",
    ".zero {size}",
    ".popsection",
    size = const std::mem::size_of::<ThreadCaches>(),
    align = const std::mem::align_of::<ThreadCaches>().trailing_zeros(),
    options(att_syntax),
);

/// This thread's caches, elsewhere: a `thread_local!` without a destructor.
#[cfg(not(tensor_tls_descriptor))]
#[inline(always)]
fn caches() -> *mut ThreadCaches {
    use std::cell::UnsafeCell;
    thread_local! {
        static CACHES: UnsafeCell<ThreadCaches> = const { UnsafeCell::new(ThreadCaches::new()) };
    }
    // The address alone comes out of `LocalKey::with`: a closure that does the work makes
    // it an out-of-line call (benches/c/count.sh).
    CACHES.with(|c| c.get())
}

/// Runs `f` on this thread's caches. `f` must not call `with` again (the callers' closures
/// push, pop, and give blocks to the system allocator, which never calls back here).
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&mut ThreadCaches) -> R) -> R {
    let c = caches();
    // SAFETY: the value is this thread's (valid from the thread's start to its end, in its
    // initial state or as left by earlier calls), reached only here, and `f` does not
    // re-enter (the contract above): this is the only reference to it while `f` runs.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The x86_64 Linux storage of the caches starts as zero bytes (`.tbss`), so zero
    /// bytes must be a valid `ThreadCaches` equal to its initial state. Under Miri,
    /// `zeroed().assume_init()` itself fails for a field without a zero value (a `Layout`,
    /// a reference, a `NonNull`).
    #[test]
    fn initial_state_is_all_zero() {
        // SAFETY: every field is an integer, raw pointer, or an array / struct of them.
        let z: ThreadCaches = unsafe { std::mem::MaybeUninit::zeroed().assume_init() };
        let n = ThreadCaches::new();
        assert_eq!(z.state, n.state);
        assert_eq!(z.objects.len, n.objects.len);
        assert_eq!(z.objects.obj, n.objects.obj);
        for (a, b) in z.objects.layout.iter().zip(&n.objects.layout) {
            assert_eq!((a.size, a.align), (b.size, b.align));
        }
        assert_eq!(z.small.len, n.small.len);
        assert_eq!(z.small.blocks, n.small.blocks);
        assert_eq!(z.small.mid_len, n.small.mid_len);
        assert_eq!(z.small.mid, n.small.mid);
        assert_eq!(z.small.mid_bytes, n.small.mid_bytes);
    }

    /// Each thread has its own caches, at a stable address for the thread's life.
    #[test]
    fn caches_are_per_thread() {
        let here = caches() as usize;
        assert_eq!(here, caches() as usize);
        assert_eq!(here % std::mem::align_of::<ThreadCaches>(), 0);
        let there = std::thread::spawn(|| caches() as usize).join().unwrap();
        assert_ne!(here, there);
    }
}

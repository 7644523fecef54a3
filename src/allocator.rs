//! Where storage bytes come from: the built-in allocator (64-byte aligned; big blocks
//! 2 MiB-aligned with transparent-huge-page advice, and reused through a small cache of
//! freed big blocks) or a caller's C vtable, plus the library-wide memory statistics.
//!
//! Ownership of a block: from `allocate` until the matching `deallocate` it is the
//! caller's (a storage); while cached it belongs to the cache that holds it (the global
//! big-block cache under its mutex, or one thread's small-block cache); the system gets it
//! back through exactly one `system_free`.

use crate::error::{Error, Result, Status};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Once, RwLock};

/// Alignment of every block (a cache line; AVX-512 loads never split).
pub(crate) const ALIGNMENT: usize = 64;
/// Blocks at least this big are 2 MiB aligned and advised as huge pages (one fault per
/// 2 MiB instead of per 4 KiB).
pub(crate) const HUGE_THRESHOLD: usize = 2 << 20;
const HUGE_ALIGN: usize = 2 << 20;

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

/// Freed big blocks kept for reuse: a fresh 64 MiB buffer costs tens of milliseconds of
/// page faults (or of zeroing huge pages), more than the copy that fills it, so an op run
/// in a loop (clone, contiguous, to_dtype) reuses the block its previous result freed.
/// Blocks are keyed by capacity (size rounded up to 2 MiB) and matched exactly; the cache
/// holds at most [`cache_limit`] bytes (default 256 MiB, 0 = no caching) and
/// [`CACHE_MAX_BLOCKS`] blocks, evicting the oldest blocks first. Cached blocks are not
/// live: `live_bytes` never counts them (docs/c-api.md section 10); `cached_bytes` and
/// `reserved_bytes` do.
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
/// The cache limit when neither the API nor the environment sets one.
pub const DEFAULT_CACHE_LIMIT: usize = 256 << 20;
const CACHE_MAX_BLOCKS: usize = 16;
/// `CACHE_LIMIT` before the environment has been read.
const LIMIT_UNREAD: usize = usize::MAX;
static CACHE_LIMIT: AtomicUsize = AtomicUsize::new(LIMIT_UNREAD);
static CACHE_ENV: Once = Once::new();
/// Bytes held by the cache (mirrors `BlockCache::bytes` for lock-free statistics).
static CACHED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes the built-in allocator holds from the system: live blocks (big ones counted at
/// their 2 MiB-rounded capacity) plus cached blocks.
static RESERVED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Environment variable: the cache limit in bytes (a number, optionally followed by K, M
/// or G for KiB, MiB, GiB). Read once, at the first big allocation or cache call.
pub const ENV_CACHE_LIMIT: &str = "TENSOR_CACHE_LIMIT";
/// Environment variable, a boolean (`crate::env::flag`): true turns every cache off (limit
/// 0) and wins over the limit; false keeps the per-thread caches even under a memory
/// checker (see [`thread_caching`]); unset: the default.
pub const ENV_NO_CACHING: &str = "TENSOR_NO_CACHING";

/// Parses a byte count: digits with an optional K/M/G (binary) suffix. `None` when
/// malformed or too big.
pub(crate) fn parse_bytes(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, shift) = match t.as_bytes().last()? {
        b'k' | b'K' => (&t[..t.len() - 1], 10),
        b'm' | b'M' => (&t[..t.len() - 1], 20),
        b'g' | b'G' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    let v = n.checked_mul(1usize << shift)?;
    (v <= isize::MAX as usize).then_some(v)
}

/// The limit `TENSOR_CACHE_LIMIT` asks for (the default when it says nothing valid).
fn limit_from_env() -> usize {
    match crate::env::value(ENV_CACHE_LIMIT) {
        Some(v) => parse_bytes(&v).unwrap_or_else(|| {
            crate::env::ignored(ENV_CACHE_LIMIT, &v, "bytes, e.g. 268435456 or 256M");
            DEFAULT_CACHE_LIMIT
        }),
        None => DEFAULT_CACHE_LIMIT,
    }
}

/// Whether the per-thread caches (small blocks and object boxes) keep freed blocks:
/// [`THREAD_ON`] or [`THREAD_OFF`] once the environment has been read. Off while the cache
/// limit is 0, and off by default under a memory checker (AddressSanitizer, valgrind's
/// memcheck: `crate::sanitizer`), which sees a use after free only of a block that really
/// went back to `free`. One relaxed load on every small free, as the limit was.
static THREAD_CACHING: AtomicU8 = AtomicU8::new(THREAD_UNREAD);
const THREAD_UNREAD: u8 = 0;
const THREAD_ON: u8 = 1;
const THREAD_OFF: u8 = 2;
/// The per-thread caches step aside for a memory checker (decided once, with the
/// environment: `TENSOR_NO_CACHING=0` keeps them).
static THREAD_ASIDE: AtomicBool = AtomicBool::new(false);

/// [`THREAD_CACHING`]'s value for a cache limit.
fn thread_state(limit: usize) -> u8 {
    if limit != 0 && !THREAD_ASIDE.load(Ordering::Relaxed) {
        THREAD_ON
    } else {
        THREAD_OFF
    }
}

/// Do the per-thread caches keep freed blocks? (Reads the environment the first time.)
#[inline]
fn thread_caching() -> bool {
    match THREAD_CACHING.load(Ordering::Relaxed) {
        THREAD_ON => true,
        THREAD_OFF => false,
        _ => {
            let _ = cache_limit();
            THREAD_CACHING.load(Ordering::Relaxed) == THREAD_ON
        }
    }
}

/// The current cache limit in bytes (reads the environment the first time).
pub fn cache_limit() -> usize {
    let l = CACHE_LIMIT.load(Ordering::Relaxed);
    if l != LIMIT_UNREAD {
        return l;
    }
    CACHE_ENV.call_once(|| {
        let no_caching = crate::env::flag(ENV_NO_CACHING);
        let limit = limit_from_env(); // read (and checked) even when NO_CACHING wins
        let limit = if no_caching == Some(true) { 0 } else { limit };
        let aside = no_caching.is_none() && crate::sanitizer::checker().is_some();
        THREAD_ASIDE.store(aside, Ordering::Relaxed);
        let _ =
            CACHE_LIMIT.compare_exchange(LIMIT_UNREAD, limit, Ordering::Relaxed, Ordering::Relaxed);
        THREAD_CACHING.store(thread_state(limit), Ordering::Relaxed);
    });
    CACHE_LIMIT.load(Ordering::Relaxed)
}

/// Sets the cache limit (0 turns caching off) and frees the cached blocks beyond it at
/// once. Returns the previous limit. Overrides the environment variables.
pub fn set_cache_limit(bytes: u64) -> u64 {
    let _ = cache_limit(); // the environment is read first, so it never overrides this
    let new = bytes.min(isize::MAX as u64) as usize;
    let (prev, evicted) = {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        // Under the lock: concurrent calls leave the limit and the per-thread state agreeing.
        let prev = CACHE_LIMIT.swap(new, Ordering::Relaxed);
        THREAD_CACHING.store(thread_state(new), Ordering::Relaxed);
        (prev, evict_until(&mut c, |c| c.bytes <= new))
    };
    if new == 0 {
        small_drain();
    }
    free_blocks(evicted);
    prev as u64
}

/// Capacity actually allocated for a big request (a whole number of huge pages).
fn big_capacity(nbytes: usize) -> usize {
    nbytes.div_ceil(HUGE_ALIGN).saturating_mul(HUGE_ALIGN)
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

/// Blocks taken out of the cache, to be freed unlocked. Inline: the cache holds at most
/// `CACHE_MAX_BLOCKS`, plus the block being freed, so freeing never allocates (and cannot
/// abort for want of memory).
type Evicted = smallvec::SmallVec<[(usize, *mut u8); CACHE_MAX_BLOCKS + 1]>;

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
/// out of the big-block cache (by `evict_until`) or given up to it (`cache_put`): each
/// came from `fresh_alloc` with that capacity and is owned by nobody else.
fn free_blocks(blocks: Evicted) {
    for (cap, p) in blocks {
        // SAFETY: see above.
        unsafe { system_free(p, cap) };
    }
}

/// Gives a block of `cap` bytes from [`fresh_alloc`] back to the system.
///
/// # Safety
/// `p` came from `fresh_alloc(cap)`, is owned by the caller and not used again.
unsafe fn system_free(p: *mut u8, cap: usize) {
    // SAFETY: a posix_memalign block (the contract), freed once.
    unsafe { libc::free(p as *mut c_void) };
    RESERVED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
}

/// Keeps a freed big block, or frees it when it cannot fit.
///
/// # Safety
/// As [`system_free`]: `p` came from `fresh_alloc(cap)` and the caller gives it up.
unsafe fn cache_put(cap: usize, p: *mut u8) {
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

/// Returns every cached block to the system; the number of bytes released.
/// Also empties the calling thread's small-block cache.
pub fn empty_cache() -> u64 {
    let blocks = {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        evict_until(&mut c, |_| false)
    };
    let freed: u64 = blocks.iter().map(|b| b.0 as u64).sum();
    free_blocks(blocks);
    freed + small_drain()
}

// ---- small blocks: a per-thread size-class cache ---------------------------------------

/// Small blocks come in 64-byte classes up to [`SMALL_MAX`]; each thread keeps up to
/// [`SMALL_PER_CLASS`] freed blocks per class (at most 68 KiB per thread) and reuses them
/// without calling `posix_memalign`/`free`, whose aligned path costs more than a small
/// clone's copy. Cached small blocks are counted in `cached_bytes` and `reserved_bytes`
/// (never in `live_bytes`), returned at thread exit, by `empty_cache` on their thread, and
/// never kept while the cache limit is 0 or a memory checker runs ([`thread_caching`]).
const SMALL_MAX: usize = 1024;
const SMALL_CLASSES: usize = SMALL_MAX / ALIGNMENT;
const SMALL_PER_CLASS: usize = 8;

/// Object blocks: the heap boxes of the two objects a tensor is made of, its TensorImpl and
/// (for a new tensor) its StorageImpl, are kept per thread too, [`OBJ_PER_SLOT`] of each
/// (about 5 KiB per thread). A view makes one such box and a small clone two; glibc's
/// malloc + free of one costs about 140 instructions, which here become about 40 (a fifth of
/// a view: benches/c/count.sh). They come from and go back to Rust's global allocator
/// (`std::alloc`); they hold no tensor data, so the memory statistics (tensor data) do not
/// count them. Returned like small blocks: at thread exit, by `empty_cache` on their
/// thread, and never kept while the cache limit is 0 or a memory checker runs. A kept box
/// holds its count word at 0 (`refcount::destroy`), which is how a released C handle to it
/// is recognised.
pub(crate) const OBJ_SLOTS: usize = 2;
/// [`OBJ_SLOTS`] slot of the TensorImpl box.
pub(crate) const OBJ_TENSOR: usize = 0;
/// [`OBJ_SLOTS`] slot of the StorageImpl box.
pub(crate) const OBJ_STORAGE: usize = 1;
const OBJ_PER_SLOT: usize = 16;

struct SmallCache {
    len: [u8; SMALL_CLASSES],
    blocks: [[*mut u8; SMALL_PER_CLASS]; SMALL_CLASSES],
    obj_len: [u8; OBJ_SLOTS],
    obj: [[*mut u8; OBJ_PER_SLOT]; OBJ_SLOTS],
    /// The layout of each slot's blocks (all of a slot's blocks share it: obj_put refuses
    /// another).
    obj_layout: [std::alloc::Layout; OBJ_SLOTS],
}

impl SmallCache {
    /// Gives every object block back to the global allocator.
    fn drain_objects(&mut self) {
        for slot in 0..OBJ_SLOTS {
            for &p in &self.obj[slot][..self.obj_len[slot] as usize] {
                // SAFETY: cached object blocks came from std::alloc::alloc with this
                // slot's layout (obj_put's contract) and are owned here.
                unsafe { std::alloc::dealloc(p, self.obj_layout[slot]) };
            }
            self.obj_len[slot] = 0;
        }
    }

    /// Frees every data block; the bytes released.
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
        self.drain_objects();
    }
}

thread_local! {
    static SMALL: std::cell::RefCell<SmallCache> = const {
        std::cell::RefCell::new(SmallCache {
            len: [0; SMALL_CLASSES],
            blocks: [[std::ptr::null_mut(); SMALL_PER_CLASS]; SMALL_CLASSES],
            obj_len: [0; OBJ_SLOTS],
            obj: [[std::ptr::null_mut(); OBJ_PER_SLOT]; OBJ_SLOTS],
            obj_layout: [std::alloc::Layout::new::<u8>(); OBJ_SLOTS],
        })
    };
}

/// The class of a small request (`nbytes` in 1..=SMALL_MAX) and its capacity.
#[inline]
fn small_class(nbytes: usize) -> (usize, usize) {
    let c = (nbytes - 1) / ALIGNMENT;
    (c, (c + 1) * ALIGNMENT)
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
fn pop(len: &mut u8, list: &[*mut u8]) -> Option<*mut u8> {
    let n = *len as usize;
    if n == 0 {
        return None;
    }
    *len = (n - 1) as u8;
    Some(list[n - 1])
}

/// Pushes `p` after the `len` blocks of `list`; false when it is full.
#[inline]
fn push(len: &mut u8, list: &mut [*mut u8], p: *mut u8) -> bool {
    let n = *len as usize;
    if n == list.len() {
        return false;
    }
    list[n] = p;
    *len = (n + 1) as u8;
    true
}

#[inline]
fn small_take(class: usize) -> Option<*mut u8> {
    with_small(|s| pop(&mut s.len[class], &s.blocks[class])).flatten()
}

/// Keeps a freed small block for reuse; false when it must go back to the system.
#[inline]
fn small_put(class: usize, p: *mut u8) -> bool {
    with_small(|s| push(&mut s.len[class], &mut s.blocks[class], p)).unwrap_or(false)
}

/// Empties the calling thread's small-block cache and its object blocks; the data bytes
/// released (object blocks are not tensor data).
fn small_drain() -> u64 {
    with_small(|s| {
        s.drain_objects();
        s.drain()
    })
    .unwrap_or(0)
}

/// A cached object block of `slot` with `layout` (from `std::alloc::alloc(layout)`,
/// uninitialised), if this thread has one (see [`OBJ_SLOTS`]).
#[inline]
pub(crate) fn obj_take(slot: usize, layout: std::alloc::Layout) -> Option<*mut u8> {
    with_small(|s| {
        // The layout test makes a slot shared by two types (a wrong BLOCK_SLOT) a miss,
        // never a block of the wrong size.
        if s.obj_layout[slot] != layout {
            return None;
        }
        pop(&mut s.obj_len[slot], &s.obj[slot])
    })
    .flatten()
}

/// Keeps the freed object block `p` of `slot` for reuse on this thread; false when the
/// caller must free it (also when the slot holds blocks of another layout).
///
/// # Safety
/// `p` came from `std::alloc::alloc(layout)` and the caller gives it up.
#[inline]
pub(crate) unsafe fn obj_put(slot: usize, p: *mut u8, layout: std::alloc::Layout) -> bool {
    if !thread_caching() {
        return false;
    }
    with_small(|s| {
        if s.obj_len[slot] > 0 && s.obj_layout[slot] != layout {
            return false;
        }
        s.obj_layout[slot] = layout;
        push(&mut s.obj_len[slot], &mut s.obj[slot], p)
    })
    .unwrap_or(false)
}

/// Frees a block from [`builtin_alloc`]: big ones go to the reuse cache, small ones to
/// the thread's size-class cache (unless caching is off).
///
/// # Safety
/// `p` came from `builtin_alloc(nbytes)` (non-NULL) and the caller gives it up.
unsafe fn builtin_free(p: *mut u8, nbytes: usize) {
    // Each branch hands the block on with the capacity builtin_alloc gave it for this
    // nbytes (big_capacity, the small class's capacity, or nbytes itself), which is the
    // fresh_alloc capacity the callees' contracts ask for.
    if nbytes >= HUGE_THRESHOLD {
        // SAFETY: see above.
        unsafe { cache_put(big_capacity(nbytes), p) };
    } else if nbytes <= SMALL_MAX {
        let (class, cap) = small_class(nbytes);
        if thread_caching() && small_put(class, p) {
            CACHED_BYTES.fetch_add(cap as u64, Ordering::Relaxed);
        } else {
            // SAFETY: see above.
            unsafe { system_free(p, cap) };
        }
    } else {
        // SAFETY: see above.
        unsafe { system_free(p, nbytes) };
    }
}

fn builtin_alloc(nbytes: usize) -> *mut u8 {
    if nbytes >= HUGE_THRESHOLD {
        let cap = big_capacity(nbytes);
        if let Some(p) = cache_take(cap) {
            return p;
        }
        return fresh_alloc(cap);
    }
    if nbytes <= SMALL_MAX {
        let (class, cap) = small_class(nbytes);
        if let Some(p) = small_take(class) {
            CACHED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
            return p;
        }
        return fresh_alloc(cap);
    }
    fresh_alloc(nbytes)
}

fn fresh_alloc(nbytes: usize) -> *mut u8 {
    let align = if nbytes >= HUGE_THRESHOLD {
        HUGE_ALIGN
    } else {
        ALIGNMENT
    };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign with a power-of-two alignment >= sizeof(void*).
    let rc = unsafe { libc::posix_memalign(&mut p, align, nbytes) };
    if rc != 0 {
        return std::ptr::null_mut();
    }
    #[cfg(target_os = "linux")]
    if nbytes >= HUGE_THRESHOLD {
        // Advice only: failure just means 4 KiB pages.
        // SAFETY: p is HUGE_ALIGN-aligned and owns nbytes bytes.
        unsafe {
            libc::madvise(p, nbytes, libc::MADV_HUGEPAGE);
        }
    }
    RESERVED_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed);
    p as *mut u8
}

// ---- statistics -------------------------------------------------------------------------

static LIVE_STORAGES: AtomicU64 = AtomicU64::new(0);
static LIVE_EXTERNAL: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);
static TOTAL_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn stats_alloc(nbytes: usize) {
    let live = LIVE_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed) + nbytes as u64;
    // The peak only grows: a plain load first spares the read-modify-write (an atomic
    // cmpxchg on x86) on every allocation that does not set a new peak.
    if live > PEAK_BYTES.load(Ordering::Relaxed) {
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
    }
    TOTAL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
}

fn stats_free(nbytes: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn byte_counts_parse() {
        assert_eq!(parse_bytes("0"), Some(0));
        assert_eq!(parse_bytes(" 4096 "), Some(4096));
        assert_eq!(parse_bytes("256M"), Some(256 << 20));
        assert_eq!(parse_bytes("3k"), Some(3 << 10));
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        for bad in [
            "",
            "M",
            "-1",
            "1.5G",
            "12x",
            "99999999999999999999",
            "9999999999G",
        ] {
            assert_eq!(parse_bytes(bad), None, "{bad:?}");
        }
    }

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

//! Intrusive strong/weak reference counting with one `AtomicU64` per object, c10's
//! `combined_refcount_` layout:
//!
//! * bits 0..32 hold the strong count, bits 32..63 the weak count;
//! * while any strong reference exists the weak count carries one extra unit for all of
//!   them together, so `weak == weak refs + 1` while `strong > 0`;
//! * strong → 0 calls [`Intrusive::release_resources`] at once (a storage frees its data /
//!   runs its deleter) even when weak references remain; the object itself is freed when
//!   the weak count also reaches 0;
//! * increments are relaxed, decrements acquire-release; a weak `lock` is a CAS loop that
//!   fails once strong is 0; overflowing either count aborts, never wraps.
//!
//! This module is the only place that juggles raw lifetimes: every handle the C API hands
//! out is a pointer to an [`RcBox`] produced here. The invariants of the count word are
//! stated on [`RcBox::refcount`]; every unsafe operation below relies on them.

use std::alloc::{alloc, dealloc, Layout};
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

const STRONG_ONE: u64 = 1;
const WEAK_ONE: u64 = 1 << 32;
const STRONG_MASK: u64 = 0xFFFF_FFFF;
const STRONG_MAX: u64 = STRONG_MASK;
const WEAK_MAX: u64 = (1 << 31) - 1;

/// Where the heap blocks of a type's [`RcBox`]es come from and go back to: the allocation
/// strategy an [`Intrusive`] type names ([`Intrusive::Boxes`]). [`Global`] is Rust's global
/// allocator; a cache that keeps freed boxes for reuse implements this trait above this
/// module (the per-thread object-box cache, `allocator::objects`).
pub trait BoxAlloc {
    /// An uninitialised block for `layout`, or NULL when out of memory.
    ///
    /// # Safety
    /// `layout` has a non-zero size (a box holds the count word).
    unsafe fn alloc(layout: Layout) -> *mut u8;

    /// Takes back a block: keeps it for a later `alloc` of the same layout, or frees it.
    ///
    /// # Safety
    /// `p` came from `Self::alloc(layout)`, holds no live value any more, and the caller
    /// gives it up.
    unsafe fn free(p: *mut u8, layout: Layout);
}

/// Boxes straight from and back to Rust's global allocator (`std::alloc`).
pub struct Global;

impl BoxAlloc for Global {
    #[inline(always)]
    unsafe fn alloc(layout: Layout) -> *mut u8 {
        // SAFETY: a non-zero size (the contract).
        unsafe { alloc(layout) }
    }

    #[inline(always)]
    unsafe fn free(p: *mut u8, layout: Layout) {
        // SAFETY: p came from `alloc(layout)` above and is given up (the contract).
        unsafe { dealloc(p, layout) }
    }
}

/// What the counter asks of the objects it counts: one hook, [`release_resources`] (as
/// c10's `intrusive_ptr_target`), the allocation strategy of their boxes, and whether they
/// can be reached by address.
///
/// [`release_resources`]: Intrusive::release_resources
pub trait Intrusive {
    /// Where this type's boxes come from and go back to ([`Global`] unless a cache of
    /// this type's boxes is chosen).
    type Boxes: BoxAlloc;

    /// Called exactly once, when the strong count reaches 0 while weak references remain.
    /// `Drop` runs later (when the weak count reaches 0) and must cope with either state.
    /// Returns how many weak references the hook gave up itself (ones it held and now
    /// abandons undropped, as `WeakIntrusivePtr::into_raw`): they are released with the
    /// unit the strong references shared, in one decrement.
    fn release_resources(&self) -> u64 {
        0
    }

    /// Asked by the release of the only strong reference when exactly one weak reference
    /// exists (its acquire load read one strong unit and two weak ones: the unit the
    /// strong references share and that reference's). True: the object held that weak
    /// reference itself (an observer's registration) and has taken it back, so nothing
    /// else can reach the object or change its count any more: the release then destroys
    /// it at once, with no read-modify-write of the count, and neither `release_resources`
    /// nor a decrement happens. False (the default, a constant for most types): the
    /// release goes on with its decrement. Asked only of a type whose
    /// [`RECLAIMS_SOLE_WEAK`](Self::RECLAIMS_SOLE_WEAK) is true. The hook must not touch
    /// the count; when it returns false, nothing of the object is changed. An object
    /// reachable by address ([`reachable_by_address`](Self::reachable_by_address)) answers
    /// false.
    #[inline(always)]
    fn reclaim_sole_weak(&self) -> bool {
        false
    }

    /// Whether [`reclaim_sole_weak`](Self::reclaim_sole_weak) can answer true: only then
    /// does the release test for that count, and it asks the hook out of line
    /// (`release_sole_weak`), so that the sole-owner release keeps its registers (the
    /// tensor's: 2 instructions on every view and retain + release when the hook's work
    /// was inline).
    const RECLAIMS_SOLE_WEAK: bool = false;

    /// Whether other threads may reach this object by its address alone, with no
    /// reference of either kind, and read its counts ([`counts_of`]) or upgrade
    /// ([`try_upgrade`]) there (a registry of objects by address, whose entry the object's
    /// `Drop` removes under the registry's lock). Then the last strong reference is always
    /// released by a decrement, never by the sole-owner shortcut: with the count left at 1
    /// while `Drop` runs, a concurrent `try_upgrade` would revive the object being freed,
    /// and `counts_of` would report a dying object as alive.
    #[inline(always)]
    fn reachable_by_address(&self) -> bool {
        false
    }

    /// The alignment of this type's boxes, when it must exceed `RcBox<Self>`'s own: a type
    /// that lays its fields out by cache line from the start of the box (the storage:
    /// its count word and cold fields on one line, what views read on the next). 1: the
    /// box's own alignment.
    const BOX_ALIGN: usize = 1;
}

/// The layout of a `T`'s box: `RcBox<T>`'s, aligned to at least `T::BOX_ALIGN`.
#[inline(always)]
fn box_layout<T: Intrusive>() -> Layout {
    const {
        let l = Layout::new::<RcBox<T>>();
        let align = if T::BOX_ALIGN > l.align() {
            T::BOX_ALIGN
        } else {
            l.align()
        };
        match Layout::from_size_align(l.size(), align) {
            Ok(l) => l,
            Err(_) => panic!("BOX_ALIGN must be a power of two"),
        }
    }
}

/// The heap block behind every handle: the counter first, then the value.
#[repr(C)]
pub struct RcBox<T> {
    /// The combined strong + weak count word (c10's `combined_refcount_`).
    ///
    /// * Layout: bits 0..32 the strong count (`STRONG_MASK`), bits 32..63 the weak count
    ///   (`WEAK_ONE` per unit); bit 63 stays clear. One word, so "strong reached 0 and no
    ///   weak reference remains" is decided by one atomic operation.
    /// * Strong references ([`IntrusivePtr`], a C handle from `into_raw`) keep `value`
    ///   usable with its resources. While `strong > 0` the weak count holds one extra unit
    ///   shared by all the strong references, so `weak == weak refs + (strong > 0)`.
    /// * Weak references ([`WeakIntrusivePtr`]) keep only the box allocated (the counter
    ///   readable, `value` not yet dropped); `lock` upgrades while `strong > 0`.
    /// * When strong goes 1 -> 0: with no weak reference left the box is dropped and freed
    ///   at once; otherwise [`Intrusive::release_resources`] runs (a storage frees its data
    ///   or runs the caller's deleter, exactly once) and the shared weak unit is given
    ///   back, with any weak references the hook gave up, in one decrement. When weak reaches 0 the value is dropped (`Drop`) and the box freed.
    ///   Strong never rises from 0 again (`try_upgrade` is a CAS loop that fails at 0).
    /// * Orderings (as `Arc`): increments are `Relaxed`, since a new reference is made
    ///   from an existing one, which already keeps the box alive; decrements are `AcqRel`,
    ///   so every use of the object through the released reference happens before the
    ///   free / deleter that the last decrement triggers; the sole-owner shortcut in `Drop`
    ///   loads with `Acquire` for the same reason; `try_upgrade` succeeds with `Acquire`.
    /// * Increments abort one below either count's maximum: the strong count never
    ///   carries into the weak bits and neither wraps to 0.
    /// * A destroyed box that its allocation strategy keeps for reuse ([`BoxAlloc`]: the
    ///   object-box cache) holds 0 (the released mark, written by `destroy`) until `init`
    ///   reuses it. A strong increment or decrement that
    ///   finds strong 0, or a weak decrement that finds weak 0, can only come from a C
    ///   handle used after its release, and unwinds to the call's guard, which aborts
    ///   ([`released_handle`]). A box given back to the allocator is not ours to read:
    ///   the sanitizers watch those (the caches step aside for them, `crate::sanitizer`).
    refcount: AtomicU64,
    pub value: T,
}

#[inline]
fn strong_of(rc: u64) -> u64 {
    rc & STRONG_MASK
}

#[inline]
fn weak_of(rc: u64) -> u64 {
    rc >> 32
}

#[cold]
fn refcount_overflow(which: &str) -> ! {
    eprintln!("libtensor: {which} reference count overflow; aborting");
    std::process::abort()
}

/// The unwind payload of [`released_handle`]: the address of the box.
pub(crate) struct ReleasedHandle(pub(crate) usize);

/// A reference was used (retained, released, read) through a box whose count says no such
/// reference exists any more: a C handle used after its release, or released twice. Unwinds
/// to the exported function's guard (`ffi::guard`), which names the call on stderr and
/// aborts: going on would let two live objects share one block. Never returns.
#[cold]
#[inline(never)]
pub(crate) fn released_handle(addr: *const u8) -> ! {
    if cfg!(panic = "abort") {
        eprintln!(
            "libtensor: handle {addr:p} was already released (use after release or double \
             release); aborting"
        );
        crate::sanitizer::describe(addr);
        std::process::abort()
    }
    // resume_unwind: no panic hook message, only the guard's.
    std::panic::resume_unwind(Box::new(ReleasedHandle(addr as usize)))
}

impl<T> RcBox<T> {
    pub fn strong_count(&self) -> u64 {
        strong_of(self.refcount.load(Ordering::Acquire))
    }
    pub fn weak_count(&self) -> u64 {
        weak_of(self.refcount.load(Ordering::Acquire))
    }
    /// No strong reference exists (a released handle's box: a box kept by the object-box
    /// cache holds 0, `destroy`; a storage's box kept by weak references holds strong 0).
    #[inline(always)]
    pub fn no_strong(&self) -> bool {
        strong_of(self.refcount.load(Ordering::Relaxed)) == 0
    }
    /// No reference of either kind exists (a released weak handle's box in the cache).
    pub fn no_reference(&self) -> bool {
        self.refcount.load(Ordering::Relaxed) == 0
    }
    #[inline]
    fn inc_strong(&self) {
        let old = self.refcount.fetch_add(STRONG_ONE, Ordering::Relaxed);
        // One test for both (as cheap as the overflow test alone): strong was 0, or is
        // about to overflow (STRONG_MAX - 1 wraps to 0, STRONG_MAX to 1); strong is the low
        // 32 bits.
        if (old as u32).wrapping_add(2) <= 2 {
            self.inc_strong_failed(old);
        }
    }
    #[cold]
    #[inline(never)]
    fn inc_strong_failed(&self, old: u64) -> ! {
        if strong_of(old) == 0 {
            released_handle(self as *const Self as *const u8);
        }
        refcount_overflow("strong")
    }
    #[inline]
    fn inc_weak(&self) {
        let old = self.refcount.fetch_add(WEAK_ONE, Ordering::Relaxed);
        if weak_of(old) >= WEAK_MAX - 1 {
            refcount_overflow("weak");
        }
    }
}

/// A strong reference (`Clone` = retain, `Drop` = release).
pub struct IntrusivePtr<T: Intrusive> {
    ptr: NonNull<RcBox<T>>,
    _owns: PhantomData<RcBox<T>>,
}

// SAFETY: the count is atomic and T is shared only by reference, as with Arc: sending a
// strong reference shares `&T` (T: Sync) and may drop T on another thread (T: Send).
unsafe impl<T: Intrusive + Send + Sync> Send for IntrusivePtr<T> {}
// SAFETY: as for Send; `&IntrusivePtr` only hands out `&T` and clones (atomic counts).
unsafe impl<T: Intrusive + Send + Sync> Sync for IntrusivePtr<T> {}

impl<T: Intrusive> IntrusivePtr<T> {
    /// Allocates the object with one strong reference. Allocation failure gives the value
    /// back instead of aborting.
    #[inline]
    pub fn try_new(value: T) -> Result<Self, T> {
        match Self::alloc_box() {
            // SAFETY: a fresh block for RcBox<T> (alloc_box), initialised here.
            Some(ptr) => Ok(unsafe { Self::init(ptr, value) }),
            None => Err(value),
        }
    }

    /// Allocates, then builds the value in place with `make` (called only when the
    /// allocation succeeded). `None` when out of memory.
    // Always inlined: `make` then writes the fields straight into the new block; out of
    // line, the closure's captures are copied through memory first.
    #[inline(always)]
    pub fn try_new_with(make: impl FnOnce() -> T) -> Option<Self> {
        let ptr = Self::alloc_box()?;
        // SAFETY: a fresh block for RcBox<T> (alloc_box), initialised here.
        Some(unsafe { Self::init(ptr, make()) })
    }

    /// An uninitialised block for `RcBox<T>`, from the type's allocation strategy
    /// (`Intrusive::Boxes`: a block a cache kept, else a new one). `None` when out of
    /// memory.
    #[inline(always)]
    fn alloc_box() -> Option<NonNull<RcBox<T>>> {
        // SAFETY: RcBox<T> has non-zero size (it holds the counter).
        let raw = unsafe { T::Boxes::alloc(box_layout::<T>()) };
        NonNull::new(raw as *mut RcBox<T>)
    }

    /// Writes the count word (one strong reference) and `value` into `ptr`.
    ///
    /// # Safety
    /// `ptr` is an uninitialised block from `alloc_box`, owned by the caller.
    #[inline(always)]
    unsafe fn init(ptr: NonNull<RcBox<T>>, value: T) -> Self {
        // SAFETY: the contract: a block properly aligned for RcBox<T>, ours; both fields
        // written in place.
        unsafe {
            let p = ptr.as_ptr();
            std::ptr::addr_of_mut!((*p).refcount).write(AtomicU64::new(STRONG_ONE | WEAK_ONE));
            std::ptr::addr_of_mut!((*p).value).write(value);
        }
        IntrusivePtr {
            ptr,
            _owns: PhantomData,
        }
    }

    pub fn rc_box(&self) -> &RcBox<T> {
        // SAFETY: we hold a strong reference, so the box is alive.
        unsafe { self.ptr.as_ref() }
    }

    pub fn as_ptr(&self) -> *const RcBox<T> {
        self.ptr.as_ptr()
    }

    /// Gives up ownership of this strong reference as a raw pointer (the C handle).
    pub fn into_raw(self) -> *mut RcBox<T> {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Takes back a strong reference produced by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `p` must come from `into_raw` (or [`retain_raw`](Self::retain_raw)'s count) and own
    /// one strong reference that the caller gives up.
    pub unsafe fn from_raw(p: *mut RcBox<T>) -> Self {
        IntrusivePtr {
            // SAFETY: p came from into_raw (contract), a NonNull.
            ptr: unsafe { NonNull::new_unchecked(p) },
            _owns: PhantomData,
        }
    }

    /// A new strong reference to the object behind a borrowed raw handle.
    ///
    /// # Safety
    /// `p` must point to a live `RcBox<T>` with strong count >= 1.
    pub unsafe fn retain_raw(p: *const RcBox<T>) -> Self {
        // SAFETY: p is live with strong >= 1 (contract), so it may be read and one more
        // strong unit, taken here, is ours to give to from_raw.
        unsafe {
            (*p).inc_strong();
            IntrusivePtr::from_raw(p as *mut RcBox<T>)
        }
    }

    #[cfg(test)]
    pub fn use_count(&self) -> u64 {
        self.rc_box().strong_count()
    }

    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    pub fn downgrade(&self) -> WeakIntrusivePtr<T> {
        self.rc_box().inc_weak();
        WeakIntrusivePtr { ptr: self.ptr }
    }

    /// [`downgrade`](Self::downgrade) of an object just made: a plain load and store of
    /// the count word, no read-modify-write (and no overflow test: the weak count is 1).
    ///
    /// # Safety
    /// `self` is the only reference of either kind to the object, made by `try_new` /
    /// `try_new_with` on this thread and not yet shared: nothing else can touch the count.
    #[inline(always)]
    pub unsafe fn downgrade_unshared(&self) -> WeakIntrusivePtr<T> {
        let rc = &self.rc_box().refcount;
        debug_assert_eq!(rc.load(Ordering::Relaxed), STRONG_ONE | WEAK_ONE);
        rc.store(rc.load(Ordering::Relaxed) + WEAK_ONE, Ordering::Relaxed);
        WeakIntrusivePtr { ptr: self.ptr }
    }
}

impl<T: Intrusive> Clone for IntrusivePtr<T> {
    #[inline]
    fn clone(&self) -> Self {
        self.rc_box().inc_strong();
        IntrusivePtr {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T: Intrusive> Deref for IntrusivePtr<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.rc_box().value
    }
}

/// A box allocated for an object not built yet: its value is written in place, field by
/// field through [`value_ptr`](Self::value_ptr) (a value written where it will live is
/// never copied, which a value built first and then moved into the box may be, through
/// the stack), then [`assume_init`](Self::assume_init) makes it the object's first strong
/// reference. Dropped before that, the block goes back to the allocation strategy, its
/// count word at 0 as `destroy` leaves a kept box; the value's fields are not dropped (the
/// writer drops what it wrote before giving up).
pub struct UninitBox<T: Intrusive> {
    ptr: NonNull<RcBox<T>>,
}

impl<T: Intrusive> UninitBox<T> {
    /// A block from the type's allocation strategy; `None` when out of memory.
    #[inline(always)]
    pub fn alloc() -> Option<Self> {
        IntrusivePtr::<T>::alloc_box().map(|ptr| UninitBox { ptr })
    }

    /// The value's place (uninitialised until written).
    #[inline(always)]
    pub fn value_ptr(&self) -> *mut T {
        // SAFETY: inside the block we own (a place, not a read).
        unsafe { std::ptr::addr_of_mut!((*self.ptr.as_ptr()).value) }
    }

    /// The object with one strong reference.
    ///
    /// # Safety
    /// A valid `T` has been written at [`value_ptr`](Self::value_ptr).
    #[inline(always)]
    pub unsafe fn assume_init(self) -> IntrusivePtr<T> {
        let ptr = self.ptr;
        std::mem::forget(self);
        // SAFETY: ours, the value initialised (the contract); the count word written here.
        unsafe {
            std::ptr::addr_of_mut!((*ptr.as_ptr()).refcount)
                .write(AtomicU64::new(STRONG_ONE | WEAK_ONE));
        }
        IntrusivePtr {
            ptr,
            _owns: PhantomData,
        }
    }
}

impl<T: Intrusive> Drop for UninitBox<T> {
    fn drop(&mut self) {
        let p = self.ptr.as_ptr();
        // SAFETY: a block from alloc_box, ours, holding no value that needs dropping (the
        // type's contract above); the released mark first, as destroy writes it.
        unsafe {
            std::ptr::addr_of_mut!((*p).refcount).write(AtomicU64::new(0));
            T::Boxes::free(p as *mut u8, box_layout::<T>());
        }
    }
}

/// Drops the value and frees the box.
///
/// # Safety
/// `p` came from `try_new` / `try_new_with` / `UninitBox::assume_init` and no reference of either kind remains (the
/// count word is, or just became, 0 strong and 0 weak): nobody can reach the box any more.
unsafe fn destroy<T: Intrusive>(p: NonNull<RcBox<T>>) {
    // SAFETY: the box is initialised (try_new or UninitBox wrote both fields), allocated with this
    // layout, and ours alone (contract); the value is dropped once and the box then freed.
    // Only the value is dropped (the counter has no drop glue): `drop_in_place` of the
    // whole box would take `&mut` of the counter too, which a registry's `try_upgrade`
    // may still be loading while the value's Drop waits for the registry lock.
    unsafe {
        std::ptr::drop_in_place(std::ptr::addr_of_mut!((*p.as_ptr()).value));
        // The released mark: a cached box reads "no reference" (the sole-owner shortcut
        // leaves one strong and one weak unit), so a C handle to it used again is caught
        // instead of taking the block twice (`released_handle`).
        (*p.as_ptr()).refcount.store(0, Ordering::Relaxed);
        // Kept for reuse or freed, as the type's allocation strategy decides: a block of
        // `alloc_box`'s layout, holding no value now.
        T::Boxes::free(p.as_ptr() as *mut u8, box_layout::<T>());
    }
}

/// Drops `n` (>= 1) weak units in one decrement; frees the object when they were the last.
///
/// # Safety
/// The caller owns `n` weak units of the live box `p` (weak references, or the unit the
/// strong references shared) and gives them up.
#[inline(always)]
unsafe fn release_weak_units<T: Intrusive>(p: NonNull<RcBox<T>>, n: u64) {
    // SAFETY: our weak units keep the box allocated until the decrement.
    let old = unsafe { p.as_ref() }
        .refcount
        .fetch_sub(n * WEAK_ONE, Ordering::AcqRel);
    if weak_of(old) == n {
        // SAFETY: ours were the last weak units and strong is 0 (a strong reference would
        // hold the shared unit): no reference remains.
        unsafe { destroy(p) };
    } else if weak_of(old) < n {
        // A weak handle released twice (its box kept by the object-box cache).
        released_handle(p.as_ptr() as *const u8);
    }
}

/// Drops one weak unit ([`release_weak_units`]).
///
/// # Safety
/// As `release_weak_units` with one unit.
unsafe fn release_weak<T: Intrusive>(p: NonNull<RcBox<T>>) {
    // SAFETY: the contract.
    unsafe { release_weak_units(p, 1) }
}

impl<T: Intrusive> Drop for IntrusivePtr<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropped: never used again.
        unsafe { self.release_ref() }
    }
}

impl<T: Intrusive> IntrusivePtr<T> {
    /// `drop(self)`, always inlined: for the C API's release, where the drop glue of a
    /// handle's type is left out of line once the release has more than one fast path.
    #[inline(always)]
    pub fn release(self) {
        // SAFETY: the reference is given up here, never used again (nor dropped).
        unsafe { std::mem::ManuallyDrop::new(self).release_ref() }
    }

    /// Gives this strong reference up (`Drop`).
    ///
    /// # Safety
    /// `self` is not used (nor dropped) afterwards.
    #[inline(always)]
    unsafe fn release_ref(&mut self) {
        let rc = &self.rc_box().refcount;
        // Sole owner, no weak refs: nobody else can reach the object, so no other thread
        // can change the count (c10 takes the same shortcut). Skips one atomic RMW for the
        // common short-lived view. Not for objects reachable by address (see
        // `reachable_by_address`; tested only once the count matched, so other objects
        // pay nothing, and a const `false` for tensors).
        let cur = rc.load(Ordering::Acquire);
        if cur == STRONG_ONE | WEAK_ONE && !self.rc_box().value.reachable_by_address() {
            // SAFETY: we are the only reference of either kind (see above), none can be
            // made without one, and no registry can upgrade by address: destroying now is
            // what the decrement would lead to.
            unsafe { destroy(self.ptr) };
            return;
        }
        // The same with one weak reference that the object itself holds and takes back
        // (`reclaim_sole_weak`, asked only of types that hold one).
        if T::RECLAIMS_SOLE_WEAK && cur == STRONG_ONE | (2 * WEAK_ONE) {
            // SAFETY: our strong reference, given up.
            unsafe { release_sole_weak(self.ptr) };
            return;
        }
        // SAFETY: our strong reference, given up.
        unsafe { release_counted(self.ptr) }
    }
}

/// The release of the only strong reference to `p`'s object while the count word read one
/// weak reference too: the object is asked to take it back (`reclaim_sole_weak`), which
/// destroys it at once; otherwise the decrement. The acquire load that read the count
/// synchronises with every earlier release, as the decrement would; the count cannot have
/// changed since unless that weak reference was dropped meanwhile, which the hook then
/// finds (it no longer holds it) and answers false. Out of line: see
/// [`Intrusive::RECLAIMS_SOLE_WEAK`].
///
/// # Safety
/// The caller gives up a strong reference to `p`'s object.
#[inline(never)]
unsafe fn release_sole_weak<T: Intrusive>(p: NonNull<RcBox<T>>) {
    // SAFETY: alive (the caller's reference).
    if unsafe { p.as_ref() }.value.reclaim_sole_weak() {
        // SAFETY: the only strong reference is ours, the only weak one the object has
        // just handed back (its contract): no reference of either kind remains with
        // anyone else and none can be made, so destroying now is what the decrements
        // would lead to.
        unsafe { destroy(p) };
        return;
    }
    // SAFETY: the caller's reference.
    unsafe { release_counted(p) }
}

/// The release of a strong reference to `p`'s object by a decrement (and, at strong count
/// 0, `release_resources` and the weak units, or the destruction).
///
/// # Safety
/// The caller gives up a strong reference to `p`'s object.
#[inline(always)]
unsafe fn release_counted<T: Intrusive>(p: NonNull<RcBox<T>>) {
    // SAFETY: alive (the caller's reference).
    let rc = unsafe { &p.as_ref().refcount };
    let old = rc.fetch_sub(STRONG_ONE, Ordering::AcqRel);
    if strong_of(old) > 1 {
        return;
    }
    if strong_of(old) == 0 {
        // No strong reference existed: a C handle released twice (or after its last
        // release; its box is cached, holding 0). Unwinds to the call's guard.
        released_handle(p.as_ptr() as *const u8);
    }
    // SAFETY: strong just reached 0; the weak unit that the strong references shared
    // is now ours to give back.
    unsafe {
        if weak_of(old) == 1 {
            // No weak reference exists and none can be created any more: one step.
            destroy(p);
        } else {
            // The shared unit, and whatever weak references the hook gave up.
            let given_up = p.as_ref().value.release_resources();
            release_weak_units(p, 1 + given_up);
        }
    }
}

/// A new strong reference to the object in box `p`, or `None` once its strong count has
/// reached 0 (a CAS loop, so it never revives a dying object).
///
/// # Safety
/// The box must stay allocated for the call (a weak reference, or a registry entry that
/// the object's `Drop` removes under a lock the caller holds; such an object must answer
/// true to [`Intrusive::reachable_by_address`]).
pub unsafe fn try_upgrade<T: Intrusive>(p: *const RcBox<T>) -> Option<IntrusivePtr<T>> {
    // SAFETY: the box stays allocated for the call (contract); only the atomic counter is
    // touched until the upgrade succeeds.
    let rc = unsafe { &(*p).refcount };
    let mut cur = rc.load(Ordering::Relaxed);
    loop {
        if strong_of(cur) == 0 {
            return None;
        }
        if strong_of(cur) >= STRONG_MAX - 1 {
            refcount_overflow("strong");
        }
        match rc.compare_exchange_weak(cur, cur + STRONG_ONE, Ordering::Acquire, Ordering::Relaxed)
        {
            // SAFETY: the CAS took one strong unit from a count > 0: a live object, and the
            // unit is ours to hand to from_raw.
            Ok(_) => return Some(unsafe { IntrusivePtr::from_raw(p as *mut RcBox<T>) }),
            Err(actual) => cur = actual,
        }
    }
}

/// The strong and weak counts of box `p`, from one load of its count word (the weak count
/// includes the unit the strong references share while strong > 0). Only the counter is
/// touched: no reference is taken, so nothing is released by the caller either.
///
/// # Safety
/// The box must stay allocated for the call (a registry entry that the object's `Drop`
/// removes under a lock the caller holds, as for [`try_upgrade`]).
pub unsafe fn counts_of<T>(p: *const RcBox<T>) -> (u64, u64) {
    // SAFETY: the box is allocated (contract); the counter is read through a raw place, not
    // through `&RcBox`, since a `Drop` waiting for the caller's lock has `&mut` of `value`.
    let rc = unsafe { &*std::ptr::addr_of!((*p).refcount) }.load(Ordering::Acquire);
    (strong_of(rc), weak_of(rc))
}

/// The box holding `value` (the inverse of `&box.value`).
///
/// # Safety
/// `value` must be the `value` field of an `RcBox<T>`.
pub unsafe fn box_of<T>(value: *const T) -> *const RcBox<T> {
    // SAFETY: value is the `value` field of an RcBox<T> (contract), so stepping back by the
    // field's offset stays inside that box and lands on its start.
    unsafe { (value as *const u8).sub(std::mem::offset_of!(RcBox<T>, value)) as *const RcBox<T> }
}

/// A weak reference: keeps the object (not its resources) alive; `lock` upgrades.
pub struct WeakIntrusivePtr<T: Intrusive> {
    ptr: NonNull<RcBox<T>>,
}

// SAFETY: as for IntrusivePtr: the counts are atomic, and a weak reference may drop T
// (T: Send) or upgrade to a shared one on any thread (T: Sync).
unsafe impl<T: Intrusive + Send + Sync> Send for WeakIntrusivePtr<T> {}
// SAFETY: as for Send; `&WeakIntrusivePtr` only clones, locks and reads the count.
unsafe impl<T: Intrusive + Send + Sync> Sync for WeakIntrusivePtr<T> {}

impl<T: Intrusive> WeakIntrusivePtr<T> {
    fn rc_box(&self) -> &RcBox<T> {
        // SAFETY: a weak reference keeps the box allocated.
        unsafe { self.ptr.as_ref() }
    }

    /// A new strong reference, or `None` once the strong count has reached 0.
    pub fn lock(&self) -> Option<IntrusivePtr<T>> {
        // SAFETY: our weak unit keeps the box allocated.
        unsafe { try_upgrade(self.ptr.as_ptr()) }
    }

    pub fn expired(&self) -> bool {
        self.rc_box().strong_count() == 0
    }

    /// Is this a weak reference to the object at `value`? (An address comparison: nothing
    /// is read.)
    #[cfg(test)]
    pub fn refers_to(&self, value: *const T) -> bool {
        self.ptr.as_ptr() as usize + std::mem::offset_of!(RcBox<T>, value) == value as usize
    }

    /// The object, without upgrading: a weak reference keeps the value undropped (`Drop`
    /// runs at weak count 0), but not its resources, which `release_resources` may be
    /// releasing on another thread at this moment. Unlike `lock`, nothing is retained, so
    /// the caller can never end up dropping the last strong reference (and releasing the
    /// object's resources on its own thread).
    ///
    /// # Safety
    /// The caller uses only parts of `T` that `T::release_resources` neither changes nor
    /// frees.
    pub unsafe fn peek(&self) -> &T {
        &self.rc_box().value
    }

    pub fn into_raw(self) -> *mut RcBox<T> {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }

    /// # Safety
    /// `p` must come from [`into_raw`](Self::into_raw) and own one weak reference.
    pub unsafe fn from_raw(p: *mut RcBox<T>) -> Self {
        WeakIntrusivePtr {
            // SAFETY: p came from into_raw (contract), a NonNull.
            ptr: unsafe { NonNull::new_unchecked(p) },
        }
    }
}

impl<T: Intrusive> Clone for WeakIntrusivePtr<T> {
    fn clone(&self) -> Self {
        self.rc_box().inc_weak();
        WeakIntrusivePtr { ptr: self.ptr }
    }
}

impl<T: Intrusive> Drop for WeakIntrusivePtr<T> {
    fn drop(&mut self) {
        // SAFETY: we own one weak unit.
        unsafe { release_weak(self.ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    struct Probe {
        released: Arc<AtomicUsize>,
        dropped: Arc<AtomicUsize>,
    }
    impl Intrusive for Probe {
        type Boxes = Global;
        fn release_resources(&self) -> u64 {
            self.released.fetch_add(1, Ordering::SeqCst);
            0
        }
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn probe() -> (IntrusivePtr<Probe>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let r = Arc::new(AtomicUsize::new(0));
        let d = Arc::new(AtomicUsize::new(0));
        let p = IntrusivePtr::try_new(Probe {
            released: r.clone(),
            dropped: d.clone(),
        })
        .ok()
        .unwrap();
        (p, r, d)
    }

    #[test]
    fn strong_transitions() {
        let (p, r, d) = probe();
        assert_eq!(p.use_count(), 1);
        assert_eq!(p.rc_box().weak_count(), 1);
        let q = p.clone();
        assert_eq!(p.use_count(), 2);
        assert_eq!(
            p.rc_box().weak_count(),
            1,
            "strong refs share one weak unit"
        );
        drop(p);
        assert_eq!(q.use_count(), 1);
        assert_eq!(d.load(Ordering::SeqCst), 0);
        drop(q);
        // no weak refs: freed in one step without a separate release_resources call
        assert_eq!(d.load(Ordering::SeqCst), 1);
        assert_eq!(r.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn weak_outlives_strong() {
        let (p, r, d) = probe();
        let w = p.downgrade();
        assert_eq!(p.rc_box().weak_count(), 2);
        assert!(!w.expired());
        let locked = w.lock().expect("alive");
        assert_eq!(p.use_count(), 2);
        drop(locked);
        drop(p);
        assert_eq!(
            r.load(Ordering::SeqCst),
            1,
            "resources released at strong 0"
        );
        assert_eq!(d.load(Ordering::SeqCst), 0, "object kept for the weak ref");
        assert!(w.expired());
        assert!(w.lock().is_none(), "lock fails after expiry");
        let w2 = w.clone();
        drop(w);
        assert_eq!(d.load(Ordering::SeqCst), 0);
        drop(w2);
        assert_eq!(d.load(Ordering::SeqCst), 1);
        assert_eq!(r.load(Ordering::SeqCst), 1);
    }

    /// A hook that gives up a weak reference (the object's own, as a registry's entry):
    /// the release drops it with the shared unit, so the object is freed by that release.
    #[test]
    fn release_resources_gives_up_a_weak_reference() {
        use std::sync::Mutex;
        struct Keeper {
            own: Mutex<Option<WeakIntrusivePtr<Keeper>>>,
            dropped: Arc<AtomicUsize>,
        }
        impl Intrusive for Keeper {
            type Boxes = Global;
            fn release_resources(&self) -> u64 {
                match self.own.lock().unwrap().take() {
                    Some(w) => {
                        let _ = w.into_raw();
                        1
                    }
                    None => 0,
                }
            }
        }
        impl Drop for Keeper {
            fn drop(&mut self) {
                self.dropped.fetch_add(1, Ordering::SeqCst);
            }
        }
        let d = Arc::new(AtomicUsize::new(0));
        let p = IntrusivePtr::try_new(Keeper {
            own: Mutex::new(None),
            dropped: d.clone(),
        })
        .ok()
        .unwrap();
        *p.own.lock().unwrap() = Some(p.downgrade());
        assert_eq!(p.rc_box().weak_count(), 2);
        drop(p);
        assert_eq!(d.load(Ordering::SeqCst), 1, "freed by the release");
    }

    /// The release of the only strong reference while the object's own weak reference is
    /// the only weak one: the object takes it back (`reclaim_sole_weak`) and is destroyed
    /// by that release, without `release_resources`. When the object no longer holds it
    /// (someone else's weak reference is the one), the hook answers false and the release
    /// goes the usual way: `release_resources` at strong 0, the object kept for the weak
    /// reference.
    #[test]
    fn reclaim_sole_weak_destroys_without_release_resources() {
        use std::sync::Mutex;
        struct Keeper {
            own: Mutex<Option<WeakIntrusivePtr<Keeper>>>,
            asked: Arc<AtomicUsize>,
            released: Arc<AtomicUsize>,
            dropped: Arc<AtomicUsize>,
        }
        impl Intrusive for Keeper {
            type Boxes = Global;
            fn release_resources(&self) -> u64 {
                self.released.fetch_add(1, Ordering::SeqCst);
                0
            }
            fn reclaim_sole_weak(&self) -> bool {
                self.asked.fetch_add(1, Ordering::SeqCst);
                match self.own.lock().unwrap().take() {
                    Some(w) => {
                        let _ = w.into_raw();
                        true
                    }
                    None => false,
                }
            }
            const RECLAIMS_SOLE_WEAK: bool = true;
        }
        impl Drop for Keeper {
            fn drop(&mut self) {
                self.dropped.fetch_add(1, Ordering::SeqCst);
            }
        }
        let counters = || {
            (0..3)
                .map(|_| Arc::new(AtomicUsize::new(0)))
                .collect::<Vec<_>>()
        };
        let make = |c: &[Arc<AtomicUsize>]| {
            IntrusivePtr::try_new(Keeper {
                own: Mutex::new(None),
                asked: c[0].clone(),
                released: c[1].clone(),
                dropped: c[2].clone(),
            })
            .ok()
            .unwrap()
        };
        let get = |c: &[Arc<AtomicUsize>]| -> Vec<usize> {
            c.iter().map(|a| a.load(Ordering::SeqCst)).collect()
        };
        // Its own weak reference, two strong ones: the first release only decrements.
        let c = counters();
        let p = make(&c);
        *p.own.lock().unwrap() = Some(p.downgrade());
        let q = p.clone();
        drop(q);
        assert_eq!(
            get(&c),
            [0, 0, 0],
            "not the only strong reference: not asked"
        );
        drop(p);
        assert_eq!(
            get(&c),
            [1, 0, 1],
            "reclaimed and destroyed, no release_resources"
        );
        // Someone else's weak reference: asked, declines, released the usual way.
        let c = counters();
        let p = make(&c);
        let w = p.downgrade();
        drop(p);
        assert_eq!(
            get(&c),
            [1, 1, 0],
            "declined: strong 0, kept for the weak reference"
        );
        assert!(w.lock().is_none());
        drop(w);
        assert_eq!(get(&c), [1, 1, 1]);
    }

    #[test]
    fn raw_roundtrip() {
        let (p, _r, d) = probe();
        let raw = p.into_raw();
        // SAFETY: raw holds p's strong reference, so the box is live with strong 1.
        let again = unsafe { IntrusivePtr::retain_raw(raw) };
        assert_eq!(again.use_count(), 2);
        // SAFETY: gives back the strong reference into_raw produced, once.
        drop(unsafe { IntrusivePtr::from_raw(raw) });
        assert_eq!(again.use_count(), 1);
        drop(again);
        assert_eq!(d.load(Ordering::SeqCst), 1);
    }

    /// An object reachable by address (a registry entry removed by its `Drop` under a
    /// lock) is released by a decrement even when its last reference is the only one, so
    /// that while its `Drop` waits for the registry lock, `try_upgrade` under that lock
    /// sees strong 0 and does not revive it.
    #[test]
    fn registry_cannot_revive_a_dying_sole_owned_object() {
        use std::sync::Mutex;
        struct Registered(Arc<Mutex<()>>);
        impl Intrusive for Registered {
            type Boxes = Global;
            fn reachable_by_address(&self) -> bool {
                true
            }
        }
        impl Drop for Registered {
            fn drop(&mut self) {
                // the registry's unregister step
                drop(self.0.lock().unwrap());
            }
        }
        let registry = Arc::new(Mutex::new(()));
        let p = IntrusivePtr::try_new(Registered(registry.clone()))
            .ok()
            .unwrap();
        let addr = p.as_ptr();
        let held = registry.lock().unwrap();
        let dropper = std::thread::spawn(move || drop(p));
        // Drop cannot finish (it waits for `held`), so the box stays allocated meanwhile;
        // only the counter is read (Drop has `&mut` to the value field, not to it).
        let strong = || {
            // SAFETY: the box is allocated until `held` is released, below.
            let rc = unsafe { &*std::ptr::addr_of!((*addr).refcount) };
            strong_of(rc.load(Ordering::Acquire))
        };
        let mut polls = 0u64;
        while strong() != 0 {
            polls += 1;
            assert!(
                polls < 100_000_000,
                "the last strong reference was not released by a decrement"
            );
            std::hint::spin_loop();
        }
        // SAFETY: as above.
        assert!(unsafe { try_upgrade(addr) }.is_none());
        drop(held);
        dropper.join().unwrap();
    }

    #[test]
    fn concurrent_retain_release_and_lock() {
        let (p, r, d) = probe();
        let w = p.downgrade();
        // Miri runs each step about 10^4 times slower (and checks every access of each
        // interleaving it schedules): fewer rounds there.
        let rounds = if cfg!(miri) { 500 } else { 10_000 };
        std::thread::scope(|s| {
            for _ in 0..4 {
                let p = p.clone();
                let w = w.clone();
                s.spawn(move || {
                    for _ in 0..rounds {
                        let q = p.clone();
                        let l = w.lock().unwrap();
                        drop(q);
                        drop(l);
                    }
                });
            }
        });
        assert_eq!(p.use_count(), 1);
        assert_eq!(p.rc_box().weak_count(), 2);
        drop(p);
        assert_eq!(r.load(Ordering::SeqCst), 1);
        drop(w);
        assert_eq!(d.load(Ordering::SeqCst), 1);
    }
}

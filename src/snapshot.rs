//! Opt-in memory snapshot for view-leak diagnostics (PyTorch users find such leaks with
//! `torch.cuda.memory._snapshot()`): every live storage with its size, kind, strong and
//! weak counts, how many live tensors view it and how many of its bytes those tensors can
//! reach. A 10-element view of a 40 MB tensor keeps all 40 MB alive; the snapshot shows it
//! as "40 MB pinned by views that reach 80 bytes".
//!
//! Off by default. When on (`TENSOR_MEMORY_TRACKING=1` at start-up, or [`set_tracking`]),
//! storages created from then on are registered (their addresses with a copy of their
//! data pointer, size and kind, in a mutex-protected map; `Drop` unregisters them) and so
//! are the tensors made on them (a weak reference each, in a lock-free slot table,
//! [`TensorSlots`], removed at the tensor's release: by the release of its only strong
//! reference while that weak reference is its only one, which then destroys the tensor
//! without touching its count, `Intrusive::reclaim_sole_weak`; otherwise by its
//! `release_resources` at strong count 0). Making a tensor tests one flag of its storage
//! (`StorageImpl::is_tracked`); releasing an untracked tensor is unchanged (no weak
//! reference, so the one-step fast path). The foundation only declares those calls
//! (`storage::StorageObserver`, `tensor_impl::TensorObserver`) and the switch of new
//! storages (`storage::set_watching`, which [`set_tracking`] sets); this module implements
//! the calls, so nothing below it names it.
//!
//! A snapshot takes no reference of either kind: it reads everything under the registry
//! lock (and, for the tensors, which register and unregister without that lock, with
//! [`SNAPSHOTTING`] set), from what a registration guarantees to be there (a registered storage's count
//! word and the registry's copy of its figures; a registered tensor's layout and storage
//! address, kept by the registry's weak reference). Holding a reference of its own, even
//! briefly, would make the snapshot drop the last one whenever the owner released the
//! object meanwhile, and so run the storage's deleter on the snapshotting thread instead
//! of the thread that released it (which deleters bound to a thread depend on).

use crate::error::{Error, Result, Status};
use crate::refcount::{box_of, counts_of, RcBox, WeakIntrusivePtr};
use crate::storage::{Observer, Storage, StorageImpl, StorageKind, StorageObserver};
use crate::tensor_impl::{ObserverSlot, Tensor, TensorImpl, TensorObserver};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

/// Environment variable, a boolean (`crate::env::flag`): true turns tracking on at start-up
/// (read once, when the first storage is made or tracking is queried).
pub const ENV_TRACKING: &str = "TENSOR_MEMORY_TRACKING";

/// What the snapshot reports of a registered storage besides its counts: copied at
/// registration and by `resize` (under the lock), so that a snapshot never reads the
/// storage's own data cell, which its release rewrites at strong count 0.
struct Figures {
    data: usize,
    nbytes: usize,
    kind: StorageKind,
    /// The storage's box, as its reference gave it (the whole box's provenance, which the
    /// key, an address, does not carry): where the snapshot reads the counts.
    rc: *const RcBox<StorageImpl>,
}

// SAFETY: `rc` is only dereferenced by the snapshot, under the registry lock, while the
// entry exists (the storage's `Drop` removes it under that lock first); the rest is plain
// data.
unsafe impl Send for Figures {}

/// The registry's keys are object addresses: distinct, 16-byte aligned, and chosen by the
/// allocator, not by a caller, so they need no DoS-resistant hash. SipHash (std's default)
/// was about 90 instructions per registration and as many per removal, a fifth of a
/// tracked view; this is a multiply and a fold.
#[derive(Default, Clone, Copy)]
struct AddrHash(u64);

impl std::hash::Hasher for AddrHash {
    #[inline]
    fn write_usize(&mut self, a: usize) {
        // Fibonacci hashing; the fold brings the product's high bits (which every bit of
        // the address reaches) down to the low ones the table indexes with.
        let h = (a as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_usize(b as usize);
        }
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type AddrMap<V> = HashMap<usize, V, std::hash::BuildHasherDefault<AddrHash>>;

struct Registry {
    /// Tracked `StorageImpl`s whose object is alive, by address.
    storages: AddrMap<Figures>,
}

/// One slot of the tensor table.
struct Slot {
    /// The address of the `RcBox` of the tensor filed here, whose weak unit the table
    /// holds (a `WeakIntrusivePtr` given up by `into_raw`), or 0: free. Taken out by a
    /// compare-exchange or swap to 0: whoever takes it owns the weak unit.
    entry: AtomicUsize,
    /// While the slot is free: the next free slot number ([`ObserverSlot::NONE`]: none).
    next: AtomicU32,
}

/// A slot number is `segment << OFFSET_BITS | offset`, so that finding a slot is a shift,
/// a mask and two loads.
const OFFSET_BITS: u32 = 27;
const OFFSET_MASK: u32 = (1 << OFFSET_BITS) - 1;
/// Segments that can be allocated: 0..31 (the 32nd would hold `ObserverSlot::NONE`).
const SEGMENTS: usize = 31;
/// Segment k holds `64 << min(k, 21)` slots: 64, 128, ... 2^27, then 2^27 each (about
/// 1.5 · 10^9 slots in all); the 32nd, 0.
static SEGMENT_LEN: [u32; SEGMENTS + 1] = {
    let mut len = [0; SEGMENTS + 1];
    let mut k = 0;
    while k < SEGMENTS {
        len[k] = 64 << if k < 21 { k } else { 21 };
        k += 1;
    }
    len
};

/// The tracked tensors in numbered slots: a tensor's slot number is kept in the tensor
/// ([`crate::tensor_impl::ObserverSlot`]), so registering and removing one is an index, not
/// a hash-table insert and removal. Lock-free, with two kinds of slot:
/// - **By address** ([`BY_ADDRESS`] of them, numbered from [`BY_ADDRESS_BASE`]): a tensor
///   is first offered the slot its box's address hashes to, taken by one compare-exchange
///   from 0 and free again when its entry is 0 (on no list). A thread's next view gets the
///   box its last one gave back (the per-thread box cache is last-in first-out), so a
///   short-lived view takes the same slot as the one before it, with no list to pop or
///   push.
/// - **Listed**, when that slot is taken: a number from a free list (a stack whose head
///   carries a tag that every change bumps, so a head popped and pushed back meanwhile
///   fails the compare-exchange: no ABA), freed slots reused last-freed first; the listed
///   slots grow by segments (published by a compare-exchange) that never move and are
///   never freed while the table lives: a stale slot number or a stale free-list read
///   always lands in allocated memory.
///
/// The registry's lock is not taken; the snapshot excludes the freeing of what it reads
/// with its own flag (see [`SNAPSHOTTING`]).
struct TensorSlots {
    /// Segment k's slots (`SEGMENT_LEN[k]`), or NULL; the last is never allocated (its
    /// numbers are the by-address slots' and `ObserverSlot::NONE`).
    segments: [AtomicPtr<Slot>; SEGMENTS + 1],
    /// The free list's head: `tag << 32 | slot number` (`ObserverSlot::NONE`: empty).
    free: AtomicU64,
    /// The by-address slots (their `next` is unused).
    by_address: [Slot; BY_ADDRESS],
}

/// How many by-address slots a table has (16 bytes each: 64 KiB of zero pages until
/// tracking files tensors; a snapshot reads them all). Under Miri, which interprets every
/// snapshot's walk, 64.
const BY_ADDRESS: usize = if cfg!(miri) { 64 } else { 4096 };
/// The number of by-address slot 0: the first of segment 31, which is never allocated.
/// The numbers `BY_ADDRESS_BASE..` name by-address slots modulo [`BY_ADDRESS`]
/// (`ObserverSlot::NONE` among them: see [`TensorSlots::filed`]).
const BY_ADDRESS_BASE: u32 = (SEGMENTS as u32) << OFFSET_BITS;

/// The by-address slot of the box at `addr`: Fibonacci hashing (the product's top bits,
/// which every address bit reaches; boxes are 16-byte aligned).
#[inline(always)]
fn by_address_slot(addr: usize) -> usize {
    let bits = BY_ADDRESS.trailing_zeros();
    ((addr as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

fn segment_layout(k: usize) -> Option<std::alloc::Layout> {
    std::alloc::Layout::array::<Slot>(SEGMENT_LEN[k] as usize).ok()
}

/// `head` with slot number `i` and its tag bumped.
#[inline(always)]
fn retag(head: u64, i: u32) -> u64 {
    (((head >> 32) + 1) << 32) | i as u64
}

impl TensorSlots {
    const fn new() -> TensorSlots {
        TensorSlots {
            segments: [const { AtomicPtr::new(std::ptr::null_mut()) }; SEGMENTS + 1],
            free: AtomicU64::new(ObserverSlot::NONE as u64),
            by_address: [const {
                Slot {
                    entry: AtomicUsize::new(0),
                    next: AtomicU32::new(ObserverSlot::NONE),
                }
            }; BY_ADDRESS],
        }
    }

    /// The slot that a tensor's number `i` names (a number some table handed out, or
    /// `ObserverSlot::NONE`, which names by-address slot `BY_ADDRESS - 1`: the exchange
    /// that takes an entry out compares the address, and a tensor numbered NONE is filed
    /// nowhere, so it finds another tensor there or none). None: a listed number whose
    /// segment is not allocated in this table.
    #[inline(always)]
    fn filed(&self, i: u32) -> Option<&Slot> {
        if i >= BY_ADDRESS_BASE {
            return Some(&self.by_address[i as usize % BY_ADDRESS]);
        }
        self.listed(i)
    }

    /// Listed slot `i`, `i` being `ObserverSlot::NONE` (None) or a listed number that a
    /// table handed out (every table has the same segment sizes), so no bounds test: the
    /// free list's numbers (put there by `grow`, `remove_numbered`, `take_all`) and a
    /// tensor's [`ObserverSlot`] below [`BY_ADDRESS_BASE`] (set only by `insert`). None if
    /// its segment is not allocated here.
    #[inline(always)]
    fn listed(&self, i: u32) -> Option<&Slot> {
        let seg = self.segments[(i >> OFFSET_BITS) as usize].load(Ordering::Acquire);
        if seg.is_null() {
            return None; // (NONE: the last segment is never allocated)
        }
        // SAFETY: such a number's offset is below its segment's `SEGMENT_LEN`, and a
        // published segment is never freed while `self` lives.
        Some(unsafe { &*seg.add((i & OFFSET_MASK) as usize) })
    }

    /// Takes a free slot: its number and the slot.
    #[inline(always)]
    fn pop(&self) -> Option<(u32, &Slot)> {
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            let i = head as u32;
            // A listed number names an allocated slot; its `next` may be stale if another
            // thread took it meanwhile, but then the tag has changed and the exchange fails.
            let slot = self.listed(i)?;
            let next = slot.next.load(Ordering::Relaxed);
            match self.free.compare_exchange_weak(
                head,
                retag(head, next),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some((i, slot)),
                Err(h) => head = h,
            }
        }
    }

    /// Puts `first..=last` (slots linked in that order by `next`, the last's set here)
    /// on the free list.
    #[inline(always)]
    fn push_chain(&self, first: u32, last: &Slot) {
        let mut head = self.free.load(Ordering::Relaxed);
        loop {
            last.next.store(head as u32, Ordering::Relaxed);
            match self.free.compare_exchange_weak(
                head,
                retag(head, first),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// Adds the first missing segment; all its slots but the first go on the free list and
    /// the first is returned. `Err(true)`: another thread added it first (its slots are
    /// listed: pop again); `Err(false)`: out of memory or of slot numbers.
    #[cold]
    #[inline(never)]
    fn grow(&self) -> std::result::Result<(u32, &Slot), bool> {
        let k = self.segments[..SEGMENTS]
            .iter()
            .position(|s| s.load(Ordering::Acquire).is_null())
            .ok_or(false)?;
        let n = SEGMENT_LEN[k] as usize;
        let start = (k as u32) << OFFSET_BITS;
        let layout = segment_layout(k).ok_or(false)?;
        // SAFETY: a non-zero size (n >= 64 slots of 16 bytes).
        let seg = unsafe { std::alloc::alloc(layout) } as *mut Slot;
        if seg.is_null() {
            return Err(false);
        }
        for j in 0..n {
            // SAFETY: j < n slots of the new, unshared block.
            unsafe {
                seg.add(j).write(Slot {
                    entry: AtomicUsize::new(0),
                    // (the last's is set by push_chain)
                    next: AtomicU32::new(if j + 1 < n {
                        start + j as u32 + 1
                    } else {
                        ObserverSlot::NONE
                    }),
                })
            };
        }
        if self.segments[k]
            .compare_exchange(
                std::ptr::null_mut(),
                seg,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: ours, never published.
            unsafe { std::alloc::dealloc(seg as *mut u8, layout) };
            return Err(true);
        }
        // SAFETY: the segment just published, never freed while `self` lives.
        let (first, last) = unsafe { (&*seg, &*seg.add(n - 1)) };
        self.push_chain(start + 1, last);
        Ok((start, first))
    }

    /// Files `weak` (a reference to `t`) and records its slot in `t`: true; out of memory
    /// (or of slot numbers) drops `weak`: false.
    #[inline(always)]
    fn insert(&self, t: &TensorImpl, weak: WeakIntrusivePtr<TensorImpl>) -> bool {
        let me = weak.into_raw();
        let k = by_address_slot(me as usize);
        // Release: a snapshot that reads the entry reads the tensor it names.
        if self.by_address[k]
            .entry
            .compare_exchange(0, me as usize, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            t.observer_slot().set(BY_ADDRESS_BASE + k as u32);
            return true;
        }
        self.insert_listed(t, me)
    }

    /// `insert` in a listed slot (the by-address one is taken): pops one, growing the table
    /// when the list is empty; `weak` is a weak unit given up by `into_raw`. `extern "C"`
    /// only so that calls to it cannot unwind (nothing in here panics; if something did,
    /// the process would abort), which spares `insert`'s callers a landing pad.
    #[cold]
    #[inline(never)]
    extern "C" fn insert_listed(&self, t: &TensorImpl, weak: *mut RcBox<TensorImpl>) -> bool {
        let (i, slot) = loop {
            if let Some(s) = self.pop() {
                break s;
            }
            match self.grow() {
                Ok(s) => break s,
                // another thread grew it first: pop again
                Err(true) => continue,
                Err(false) => {
                    // SAFETY: the unit `weak` gave up; not the last (`t` is alive).
                    drop(unsafe { WeakIntrusivePtr::from_raw(weak) });
                    return false;
                }
            }
        };
        t.observer_slot().set(i);
        slot.entry.store(weak as usize, Ordering::Release);
        true
    }

    /// [`remove_numbered`](Self::remove_numbered) with `t`'s own number (the tests').
    #[cfg(test)]
    fn remove(&self, t: &TensorImpl) -> Option<WeakIntrusivePtr<TensorImpl>> {
        self.remove_numbered(t, t.observer_slot().get())
    }

    /// Takes `t`'s entry out, if this table holds one, and frees its slot. (A tensor whose
    /// entry `take_all` took, or one filed in another table, may name a slot that now
    /// holds another tensor: the exchange, which compares the address, leaves that one
    /// alone.) Sequentially consistent, for [`SNAPSHOTTING`]. `i` is `t`'s number, read
    /// once by the caller.
    #[inline(always)]
    fn remove_numbered(&self, t: &TensorImpl, i: u32) -> Option<WeakIntrusivePtr<TensorImpl>> {
        // A tensor's number is NONE or one a table (this or another) handed out.
        debug_assert!(
            i >= BY_ADDRESS_BASE || (i & OFFSET_MASK) < SEGMENT_LEN[(i >> OFFSET_BITS) as usize]
        );
        let slot = self.filed(i)?;
        // SAFETY: t is a TensorImpl, always the value of an RcBox.
        let me = unsafe { box_of(t) } as usize;
        slot.entry
            .compare_exchange(me, 0, Ordering::SeqCst, Ordering::Relaxed)
            .ok()?;
        if i < BY_ADDRESS_BASE {
            self.push_chain(i, slot);
        }
        // SAFETY: the entry held the weak unit that `insert` gave up; taking it out made it
        // ours.
        Some(unsafe { WeakIntrusivePtr::from_raw(me as *mut RcBox<TensorImpl>) })
    }

    /// Every allocated segment: its number and slots.
    fn segments(&self) -> impl Iterator<Item = (u32, &[Slot])> + '_ {
        self.segments
            .iter()
            .map(|s| s.load(Ordering::Acquire))
            .take_while(|s| !s.is_null())
            .enumerate()
            .map(|(k, seg)| {
                // SAFETY: a published segment of `SEGMENT_LEN[k]` slots, never freed while
                // `self` lives.
                let slots = unsafe {
                    std::slice::from_raw_parts(seg as *const Slot, SEGMENT_LEN[k] as usize)
                };
                (k as u32, slots)
            })
    }

    /// Takes every entry out (freeing its slot) and hands each weak reference to `f`.
    fn take_all(&self, mut f: impl FnMut(WeakIntrusivePtr<TensorImpl>)) {
        // (the by-address slots' numbers are not listed: None)
        let by_address = self.by_address.iter().map(|s| (None, s));
        let listed = self.segments().flat_map(|(k, slots)| {
            (slots.iter().enumerate()).map(move |(j, s)| (Some(k << OFFSET_BITS | j as u32), s))
        });
        for (i, slot) in by_address.chain(listed) {
            if slot.entry.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let e = slot.entry.swap(0, Ordering::SeqCst);
            if e != 0 {
                if let Some(i) = i {
                    self.push_chain(i, slot);
                }
                // SAFETY: as in `remove_numbered`: the swap took the entry's weak unit.
                f(unsafe { WeakIntrusivePtr::from_raw(e as *mut RcBox<TensorImpl>) });
            }
        }
    }

    /// The filed tensors' boxes (a moment's view: entries come and go meanwhile).
    fn entries(&self) -> impl Iterator<Item = *const RcBox<TensorImpl>> + '_ {
        self.by_address
            .iter()
            .chain(self.segments().flat_map(|(_, slots)| slots))
            .map(|s| s.entry.load(Ordering::SeqCst) as *const RcBox<TensorImpl>)
            .filter(|p| !p.is_null())
    }

    /// How many tensors are filed (a moment's count, as `entries`).
    fn len(&self) -> usize {
        self.entries().count()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The filed tensors' weak references, borrowed from the table.
    ///
    /// # Safety
    /// No entry is taken out (and its weak reference dropped) while the results are used:
    /// the table is used by this thread only, or the caller is the snapshot, which holds
    /// the registry lock with [`SNAPSHOTTING`] set.
    unsafe fn values(
        &self,
    ) -> impl Iterator<Item = ManuallyDrop<WeakIntrusivePtr<TensorImpl>>> + '_ {
        self.entries().map(|p| {
            // SAFETY: a filed weak unit, not dropped while borrowed (the contract); the
            // ManuallyDrop never gives it back.
            ManuallyDrop::new(unsafe { WeakIntrusivePtr::from_raw(p as *mut RcBox<TensorImpl>) })
        })
    }
}

impl Drop for TensorSlots {
    /// (Only tables other than the registry's, which is a static.)
    fn drop(&mut self) {
        self.take_all(drop);
        for (k, seg) in self.segments.iter().enumerate() {
            let seg = seg.load(Ordering::Acquire);
            if seg.is_null() {
                break;
            }
            let layout = segment_layout(k).expect("allocated with this layout");
            // SAFETY: allocated by `grow` with this layout; nothing can reach it now.
            unsafe { std::alloc::dealloc(seg as *mut u8, layout) };
        }
    }
}

/// The registry's tensors: never freed (16 bytes a slot: the by-address ones, then listed
/// ones added in segments of 64, 128, ... slots: a process keeps at most about twice 16
/// bytes per tensor of the most it ever had tracked at once, past the by-address ones).
static TENSORS: TensorSlots = TensorSlots::new();

/// Set by the snapshot while it reads the tensor table (holding the registry lock). The
/// snapshot dereferences the entries it reads, so a tensor whose entry was taken out must
/// not drop that weak unit (which may free the tensor) while a snapshot that may have read
/// the entry is still reading: whoever takes an entry out (a sequentially consistent
/// exchange) then reads this flag (sequentially consistent); if it is set, they wait for the
/// registry lock before dropping the weak reference. Either the snapshot's read of the
/// entry comes after the exchange in that order (and finds 0 or another tensor), or the
/// flag's store comes before the load (and the taker waits).
static SNAPSHOTTING: AtomicBool = AtomicBool::new(false);

/// What takes an entry out calls before dropping its weak reference (see [`SNAPSHOTTING`]).
#[inline(always)]
fn wait_out_snapshot() {
    if SNAPSHOTTING.load(Ordering::SeqCst) {
        wait_for_snapshot();
    }
}

/// Waits for the registry lock, which the snapshot setting [`SNAPSHOTTING`] holds.
/// (`extern "C"`, as `TensorSlots::insert_listed`, for a call that cannot unwind.)
#[cold]
#[inline(never)]
extern "C" fn wait_for_snapshot() {
    drop(registry());
}

/// [`wait_for_snapshot`], then true: for a tail call (the result is opaque to the
/// optimiser, which would otherwise keep the constant in a saved register across a plain
/// call); it cannot unwind either.
#[cold]
#[inline(never)]
fn wait_for_snapshot_then_true() -> bool {
    wait_for_snapshot();
    std::hint::black_box(true)
}

/// [`SNAPSHOTTING`] set while alive; cleared by `Drop`, on every path out of the snapshot's
/// reading.
struct Snapshotting;

impl Snapshotting {
    fn start() -> Snapshotting {
        SNAPSHOTTING.store(true, Ordering::SeqCst);
        Snapshotting
    }
}

impl Drop for Snapshotting {
    fn drop(&mut self) {
        SNAPSHOTTING.store(false, Ordering::Release);
    }
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Should storages made now be registered? (The storages' switch, which this module sets;
/// the environment is read the first time.)
pub fn is_tracking() -> bool {
    crate::storage::watching()
}

/// Turns tracking on or off; returns the previous state. Turning it off forgets every
/// registration (objects made while it was on unregister harmlessly later); turning it on
/// tracks what is created from then on, not what already exists.
pub fn set_tracking(on: bool) -> bool {
    let prev = crate::storage::set_watching(on);
    if !on {
        let old = registry().take();
        drop(old);
        TENSORS.take_all(|weak| {
            wait_out_snapshot();
            drop(weak)
        });
    }
    prev
}

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut r = registry();
    f(r.get_or_insert_with(|| Registry {
        storages: AddrMap::default(),
    }))
}

/// Best effort: out of memory leaves the storage unregistered.
#[cold]
#[inline(never)]
pub(crate) fn register_storage(s: &Storage) {
    let figures = Figures {
        data: s.data_ptr() as usize,
        nbytes: s.nbytes(),
        kind: s.kind(),
        rc: s.as_ptr(),
    };
    with_registry(|r| {
        if r.storages.try_reserve(1).is_ok() {
            r.storages
                .insert(&**s as *const StorageImpl as usize, figures);
        }
    })
}

/// Told by `resize` after it replaced a tracked storage's block (by the storage's only
/// user: the resize contract).
#[cold]
#[inline(never)]
pub(crate) fn storage_resized(s: &StorageImpl) {
    let (data, nbytes) = (s.data_ptr() as usize, s.nbytes());
    let mut r = registry();
    if let Some(f) = r
        .as_mut()
        .and_then(|reg| reg.storages.get_mut(&(s as *const StorageImpl as usize)))
    {
        (f.data, f.nbytes) = (data, nbytes);
    }
}

/// Once no tracked storage is alive, frees the storage table (so a process that ends with
/// tracking on but no tracked storage alive holds no registry memory but the tensor
/// table's, [`TENSORS`]); the table is dropped after the lock is released.
#[cold]
#[inline(never)]
pub(crate) fn unregister_storage(s: &StorageImpl) {
    let emptied = {
        let mut r = registry();
        let Some(reg) = r.as_mut() else { return };
        reg.storages.remove(&(s as *const StorageImpl as usize));
        if reg.storages.is_empty() {
            r.take()
        } else {
            None
        }
    };
    drop(emptied);
}

/// Registers a new tensor made on a tracked storage (best effort, as storages): no lock
/// (the table is lock-free, see [`TensorSlots`]). True if filed (the value only lets the
/// growth path be a tail call, which spares the fast path saving a register).
///
/// # Safety
/// As [`TensorObserver::tensor_made`]: `b` is the box of a tensor just made, whose only
/// reference its maker holds (`b` from that reference, with its provenance: the whole box).
#[cold]
#[inline(never)]
pub(crate) unsafe fn register_tensor(b: *const RcBox<TensorImpl>) -> bool {
    // (Asked already: the storage is tracked.)
    if !crate::storage::watching_asked() {
        return false; // its storage was tracked, but tracking has been turned off since
    }
    // SAFETY: the contract; this borrows the maker's reference (never dropped here).
    let me = ManuallyDrop::new(unsafe {
        crate::refcount::IntrusivePtr::from_raw(b as *mut RcBox<TensorImpl>)
    });
    // SAFETY: that only reference, not yet shared.
    TENSORS.insert(&me, unsafe { me.downgrade_unshared() })
}

/// Takes `t`'s entry out of the table, if it is filed there, and gives the entry's weak
/// unit up to the caller, the release of `t` (true), once no snapshot can be reading the
/// entry (see [`SNAPSHOTTING`]); false if it is not filed (any more: `take_all` took it).
/// Told either by the release of the tensor's only strong reference while the entry's is
/// its only weak one (`Intrusive::reclaim_sole_weak`: the release then destroys the tensor
/// without touching its count; with strong still 1 a snapshot that read the entry counts
/// the tensor, whose storage reference is dropped only after that snapshot, as a
/// snapshot requires), or by its `release_resources` at strong count 0 (which drops the
/// unit with the one the strong references shared, in one decrement).
#[cold]
#[inline(never)]
pub(crate) fn unregister_tensor(t: &TensorImpl) -> bool {
    take_registration(t, t.observer_slot().get())
}

/// [`unregister_tensor`]'s work, inlined where the release of a tensor in a by-address
/// slot reclaims its registration (the common short-lived view: no call); `i` is `t`'s
/// number.
#[inline(always)]
fn take_registration(t: &TensorImpl, i: u32) -> bool {
    let Some(weak) = TENSORS.remove_numbered(t, i) else {
        return false;
    };
    let _ = weak.into_raw();
    if SNAPSHOTTING.load(Ordering::SeqCst) {
        // (a tail call: the fast path saves no register)
        return wait_for_snapshot_then_true();
    }
    true
}

/// The registry is what watches storages and the tensors on them (the foundation declares
/// the calls, `storage::StorageObserver` and `tensor_impl::TensorObserver`).
impl StorageObserver for Observer {
    /// `TENSOR_MEMORY_TRACKING` (read once).
    fn watch_from_start() -> bool {
        static ENV: Once = Once::new();
        static ON: AtomicBool = AtomicBool::new(false);
        ENV.call_once(|| {
            ON.store(
                crate::env::flag(ENV_TRACKING) == Some(true),
                Ordering::Relaxed,
            )
        });
        ON.load(Ordering::Relaxed)
    }
    #[inline]
    fn made(s: &Storage) {
        register_storage(s)
    }
    #[inline]
    fn resized(s: &StorageImpl) {
        storage_resized(s)
    }
    #[inline]
    fn dropped(s: &StorageImpl) {
        unregister_storage(s)
    }
}

impl TensorObserver for Observer {
    #[inline]
    fn tensor_made(t: &Tensor) {
        // SAFETY: a tensor just made, its maker's only reference; its box pointer.
        unsafe { register_tensor(t.0.as_ptr()) };
    }
    #[inline]
    fn tensor_released(t: &TensorImpl) -> u64 {
        unregister_tensor(t) as u64
    }
    #[inline(always)]
    fn tensor_reclaimed(t: &TensorImpl) -> bool {
        // A by-address slot is freed inline (no list to push it on); a listed one, whose
        // push is a loop, out of line.
        let i = t.observer_slot().get();
        if i >= BY_ADDRESS_BASE {
            take_registration(t, i)
        } else {
            unregister_tensor(t)
        }
    }
}

/// One live storage in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageInfo {
    pub data: *const u8,
    pub nbytes: u64,
    pub kind: StorageKind,
    /// Strong references: one per tensor on it plus every storage handle.
    pub strong: u64,
    /// Weak references (`storage_weak_t`).
    pub weak: u64,
    /// Live tracked tensors whose storage this is.
    pub tensors: u64,
    /// Bytes of the storage inside the span (first to last element) of at least one of
    /// those tensors.
    pub reachable_bytes: u64,
}

fn oom() -> Error {
    Error::new(Status::OutOfMemory, "failed to allocate the snapshot")
}

/// The byte range `[start, end)` of the storage that `t` spans (empty for numel 0).
fn span(t: &TensorImpl) -> (u64, u64) {
    if t.numel() == 0 {
        return (0, 0);
    }
    let isz = t.itemsize() as u64;
    // The layout was validated against the storage at construction: these fit in u64.
    let last: u64 = t
        .sizes()
        .iter()
        .zip(t.strides())
        .map(|(&n, &s)| (n as u64 - 1) * s as u64)
        .sum();
    let start = t.storage_offset() as u64 * isz;
    (start, start + (last + 1) * isz)
}

/// Total length of the union of `ranges`, which come sorted (by start, then end).
fn union_len(ranges: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for (a, b) in ranges.into_iter().filter(|r| r.1 > r.0) {
        debug_assert!(cur.is_none_or(|(s, _)| s <= a), "ranges not sorted");
        cur = match cur {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                total += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

/// Every live tracked storage, biggest first (empty when tracking is off). Takes no
/// reference (see the module doc): a storage or tensor whose strong count is 0 is being
/// released and is left out.
pub fn snapshot() -> Result<Vec<StorageInfo>> {
    // (address, figures) of each live storage, and (storage address, span) of each live
    // tensor, all read under the lock.
    let mut storages: Vec<(usize, StorageInfo)> = Vec::new();
    let mut spans: Vec<(usize, (u64, u64))> = Vec::new();
    {
        let r = registry();
        if let Some(reg) = r.as_ref() {
            // Set before the first entry of the tensor table is read, cleared after the
            // last use of one, on every path (see SNAPSHOTTING).
            let reading = Snapshotting::start();
            storages
                .try_reserve_exact(reg.storages.len())
                .map_err(|_| oom())?;
            // A first count; tensors filed meanwhile grow the vector (fallibly).
            spans.try_reserve_exact(TENSORS.len()).map_err(|_| oom())?;
            // The tensors first, then the storages' counts: a tensor counted here keeps its
            // storage reference until the snapshot ends (its release waits, above), and one
            // filed later has taken its reference before, so each storage's strong count
            // read below covers every tensor counted on it.
            // SAFETY: the registry lock is held and SNAPSHOTTING set: whoever takes an
            // entry out meanwhile waits for the lock before dropping its weak reference.
            for w in unsafe { TENSORS.values() } {
                if w.expired() {
                    continue;
                }
                // SAFETY: a TensorImpl's release only takes its entry out; its layout and
                // storage field stay as made until it is dropped, which the entry's weak
                // reference prevents until we are done (whoever takes the entry out waits
                // for us before giving that reference up, above; the release that takes it
                // back to destroy the tensor at strong count 1 too). The storage's address
                // is only compared, never followed.
                let t = unsafe { w.peek() };
                if spans.len() == spans.capacity() {
                    spans.try_reserve(1).map_err(|_| oom())?;
                }
                spans.push((&**t.storage() as *const StorageImpl as usize, span(t)));
            }
            for (&a, f) in &reg.storages {
                // SAFETY: registered and not yet unregistered (Drop unregisters under the
                // lock we hold): the box is allocated; only its counter is read.
                let (strong, weak) = unsafe { counts_of(f.rc) };
                if strong == 0 {
                    continue;
                }
                storages.push((
                    a,
                    StorageInfo {
                        data: f.data as *const u8,
                        nbytes: f.nbytes as u64,
                        kind: f.kind,
                        strong,
                        // Minus the weak unit all strong references share.
                        weak: weak - 1,
                        tensors: 0,
                        reachable_bytes: 0,
                    },
                ));
            }
            drop(reading);
        }
    }
    // No allocation per storage: the spans' ranges go to one flat vector, grouped by
    // storage (a counting sort by the storage's index: `start[i]..start[i + 1]` are storage
    // i's), so only a storage with several tensors sorts its few ranges for the union.
    let mut index: AddrMap<usize> = AddrMap::default();
    index.try_reserve(storages.len()).map_err(|_| oom())?;
    for (i, &(a, _)) in storages.iter().enumerate() {
        index.insert(a, i);
    }
    let mut owner: Vec<usize> = Vec::new();
    owner.try_reserve_exact(spans.len()).map_err(|_| oom())?;
    // A span whose storage is not listed (being released) counts nowhere: usize::MAX.
    owner.extend(
        spans
            .iter()
            .map(|(a, _)| index.get(a).copied().unwrap_or(usize::MAX)),
    );
    drop(index);
    let mut start: Vec<usize> = Vec::new();
    start
        .try_reserve_exact(storages.len() + 1)
        .map_err(|_| oom())?;
    start.resize(storages.len() + 1, 0);
    for &o in owner.iter().filter(|&&o| o != usize::MAX) {
        start[o + 1] += 1;
    }
    for i in 0..storages.len() {
        start[i + 1] += start[i];
    }
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    ranges
        .try_reserve_exact(start[storages.len()])
        .map_err(|_| oom())?;
    ranges.resize(start[storages.len()], (0, 0));
    {
        // next[i]: where storage i's next range goes (start[i] moved up as they land).
        let next = &mut start[..];
        for (&o, &(_, r)) in owner.iter().zip(&spans) {
            if o != usize::MAX {
                ranges[next[o]] = r;
                next[o] += 1;
            }
        }
        // Now next[i] = the old start[i + 1]: shift back so start[i] is storage i's first.
        next.copy_within(0..storages.len(), 1);
        next[0] = 0;
    }
    drop((owner, spans));
    for (i, (_, info)) in storages.iter_mut().enumerate() {
        let mine = &mut ranges[start[i]..start[i + 1]];
        if mine.len() > 1 {
            mine.sort_unstable();
        }
        info.tensors = mine.len() as u64;
        info.reachable_bytes = union_len(mine.iter().copied());
    }
    // Biggest first, ties by data pointer (the order of anything still tied was never
    // specified: it was the registry's hash order). The sort moves 24-byte keys that
    // compare as one integer, not the 56-byte entries.
    let mut keys: Vec<(u128, usize)> = Vec::new();
    keys.try_reserve_exact(storages.len()).map_err(|_| oom())?;
    keys.extend(storages.iter().enumerate().map(|(i, (_, info))| {
        (
            ((!info.nbytes as u128) << 64) | info.data as usize as u128,
            i,
        )
    }));
    keys.sort_unstable_by_key(|&(k, _)| k);
    let mut out: Vec<StorageInfo> = Vec::new();
    out.try_reserve_exact(storages.len()).map_err(|_| oom())?;
    out.extend(keys.iter().map(|&(_, i)| storages[i].1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files `t` in a listed slot, as `insert` does when its by-address slot is taken.
    fn insert_listed(table: &TensorSlots, t: &Tensor) -> bool {
        table.insert_listed(t, t.0.downgrade().into_raw())
    }

    /// Files `t` in by-address slot `k` (empty) as if its address hashed there.
    fn occupy(table: &TensorSlots, k: usize, t: &Tensor) {
        let weak = t.0.downgrade().into_raw() as usize;
        assert!(table.by_address[k]
            .entry
            .compare_exchange(0, weak, Ordering::Release, Ordering::Relaxed)
            .is_ok());
        t.observer_slot().set(BY_ADDRESS_BASE + k as u32);
    }

    /// The listed slots: reused last-freed first; a tensor removes only its own entry,
    /// including when its slot number came from another (discarded) table.
    #[test]
    fn tensor_slots_reuse_and_stale_numbers() {
        use crate::dtype::DType;
        let a = Tensor::empty(&[1], DType::F32).unwrap();
        let b = Tensor::empty(&[2], DType::F32).unwrap();
        let c = Tensor::empty(&[3], DType::F32).unwrap();
        let old = TensorSlots::new();
        assert!(insert_listed(&old, &a));
        assert_eq!(a.observer_slot().get(), 0);
        // A fresh table (tracking turned off and on again) gives slot 0 to b.
        let t = TensorSlots::new();
        assert!(insert_listed(&t, &b));
        assert!(insert_listed(&t, &c));
        assert_eq!((b.observer_slot().get(), c.observer_slot().get()), (0, 1));
        assert!(t.remove(&a).is_none(), "a's slot 0 is b's in this table");
        assert_eq!(t.len(), 2);
        // SAFETY: this thread's own table.
        assert!(unsafe { t.values() }.any(|w| w.refers_to(&*b)));
        // Removing b frees slot 0, which the next insert takes.
        assert!(t.remove(&b).is_some_and(|w| w.refers_to(&*b)));
        assert!(t.remove(&b).is_none(), "removed once");
        assert!(insert_listed(&t, &a));
        assert_eq!(a.observer_slot().get(), 0);
        assert_eq!(t.len(), 2);
        assert!(t.remove(&a).is_some() && t.remove(&c).is_some() && t.is_empty());
        assert!(old.remove(&a).is_some() && old.is_empty());
    }

    /// The by-address slots: a tensor takes the one its box hashes to; when another tensor
    /// holds it, a listed one; a removal frees a by-address slot without listing it; a
    /// tensor filed nowhere (number NONE, which names the last by-address slot) removes
    /// nothing.
    #[test]
    fn tensor_slots_by_address() {
        use crate::dtype::DType;
        let _serial = tracking_tests();
        // (untracked tensors: no registration of the registry's, no number, no weak unit)
        set_tracking(false);
        let [a, b, c, d, e] = [1, 2, 3, 4, 5].map(|n| Tensor::empty(&[n], DType::F32).unwrap());
        let t = TensorSlots::new();
        let ka = by_address_slot(a.0.as_ptr() as usize);
        assert!(t.insert(&a, a.0.downgrade()));
        assert_eq!(a.observer_slot().get(), BY_ADDRESS_BASE + ka as u32);
        // b's slot held by another tensor (a, or c put there): b goes to listed slot 0.
        let kb = by_address_slot(b.0.as_ptr() as usize);
        if kb != ka {
            occupy(&t, kb, &c);
        }
        assert!(t.insert(&b, b.0.downgrade()));
        assert_eq!(b.observer_slot().get(), 0);
        assert_eq!(t.len(), 2 + (kb != ka) as usize);
        assert!(t.remove(&b).is_some_and(|w| w.refers_to(&*b)));
        assert!(t.remove(&a).is_some_and(|w| w.refers_to(&*a)));
        if kb != ka {
            assert!(t.remove(&c).is_some_and(|w| w.refers_to(&*c)));
        }
        assert!(t.is_empty());
        // Freed, b's slot is b's again; the by-address slots never went on the free list.
        assert!(t.insert(&b, b.0.downgrade()));
        assert_eq!(b.observer_slot().get(), BY_ADDRESS_BASE + kb as u32);
        assert_eq!(capacity_and_free(&t), (64, 64));
        assert!(t.remove(&b).is_some());
        // NONE names the last by-address slot: e filed there, d never filed.
        occupy(&t, BY_ADDRESS - 1, &e);
        assert_eq!(d.observer_slot().get(), ObserverSlot::NONE);
        assert!(t.remove(&d).is_none());
        assert_eq!(t.len(), 1);
        assert!(t.remove(&e).is_some_and(|w| w.refers_to(&*e)) && t.is_empty());
        for x in [&a, &b, &c, &d, &e] {
            assert_eq!(x.0.rc_box().weak_count(), 1, "every weak unit given back");
        }
    }

    /// Held by the tests that turn tracking on and off and by those that count weak
    /// references (which a tracked tensor's registration adds).
    static TRACKING_TESTS: Mutex<()> = Mutex::new(());

    fn tracking_tests() -> MutexGuard<'static, ()> {
        TRACKING_TESTS.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Slots allocated, and slots on the free list (walked from the head; the table is
    /// idle).
    fn capacity_and_free(t: &TensorSlots) -> (usize, usize) {
        let cap = t.segments().map(|(_, slots)| slots.len()).sum();
        let mut free = 0;
        let mut i = t.free.load(Ordering::Acquire) as u32;
        while let Some(slot) = t.listed(i) {
            free += 1;
            assert!(free <= cap, "the free list loops");
            i = slot.next.load(Ordering::Relaxed);
        }
        (cap, free)
    }

    /// A slot number as an index from 0: the by-address slots, then the listed ones
    /// segment after segment.
    fn dense(i: u32) -> usize {
        if i >= BY_ADDRESS_BASE {
            return (i - BY_ADDRESS_BASE) as usize;
        }
        let k = (i >> OFFSET_BITS) as usize;
        let before: usize = SEGMENT_LEN[..k].iter().map(|&n| n as usize).sum();
        BY_ADDRESS + before + (i & OFFSET_MASK) as usize
    }

    /// Several threads file and remove tensors in one table at once, from empty (so they
    /// grow it concurrently; half the tensors go to listed slots as if their by-address one
    /// was taken): no slot is ever handed to two live entries, each removal gives back the
    /// entry's own weak reference, and at the end every slot is free again, once.
    #[test]
    fn tensor_slots_concurrent_insert_and_remove() {
        use crate::dtype::DType;
        const THREADS: usize = 4;
        const LIVE: usize = 40; // per thread: 160 at once, past the first two segments
        const ROUNDS: usize = 60;
        let _serial = tracking_tests();
        let table = TensorSlots::new();
        // holders[dense(slot)]: how many live entries hold it (0 or 1)
        let holders: Vec<AtomicU32> = (0..BY_ADDRESS + 1024).map(|_| AtomicU32::new(0)).collect();
        std::thread::scope(|sc| {
            for _ in 0..THREADS {
                sc.spawn(|| {
                    let mine: Vec<Tensor> = (0..LIVE)
                        .map(|_| Tensor::empty(&[1], DType::F32).unwrap())
                        .collect();
                    // (1, or 2 with TENSOR_MEMORY_TRACKING set: the registry's)
                    let weak: Vec<u64> = mine.iter().map(|t| t.0.rc_box().weak_count()).collect();
                    for round in 0..ROUNDS {
                        for (j, t) in mine.iter().enumerate() {
                            if j % 2 == 0 {
                                assert!(table.insert(t, t.0.downgrade()));
                            } else {
                                assert!(insert_listed(&table, t));
                            }
                            let i = dense(t.observer_slot().get());
                            assert_eq!(
                                holders[i].fetch_add(1, Ordering::SeqCst),
                                0,
                                "slot {i} given twice"
                            );
                        }
                        // remove in an order that differs by round (LIFO and FIFO)
                        let order: Vec<&Tensor> = if round % 2 == 0 {
                            mine.iter().collect()
                        } else {
                            mine.iter().rev().collect()
                        };
                        for t in order {
                            let i = dense(t.observer_slot().get());
                            assert_eq!(holders[i].fetch_sub(1, Ordering::SeqCst), 1);
                            let w = table.remove(t).expect("filed");
                            assert!(w.refers_to(&**t));
                            drop(w);
                            assert!(table.remove(t).is_none(), "removed once");
                        }
                    }
                    for (t, &w) in mine.iter().zip(&weak) {
                        assert_eq!(t.0.rc_box().weak_count(), w, "every weak unit dropped");
                    }
                });
            }
        });
        assert!(table.is_empty());
        let (cap, free) = capacity_and_free(&table);
        assert_eq!(free, cap, "every listed slot back on the free list, once");
        assert!(cap <= holders.len() - BY_ADDRESS);
    }

    /// `take_all` (what turning tracking off does) races with tensors removing their own
    /// entries and filing new ones: each entry's weak reference is dropped exactly once, by
    /// whichever side took it out, and every slot ends up free exactly once.
    #[test]
    fn tensor_slots_take_all_races_with_remove() {
        use crate::dtype::DType;
        let _serial = tracking_tests();
        let table = TensorSlots::new();
        let done = AtomicBool::new(false);
        let taken = AtomicUsize::new(0);
        let kept: Vec<(Vec<Tensor>, Vec<u64>)> = std::thread::scope(|sc| {
            let workers: Vec<_> = (0..3)
                .map(|_| {
                    sc.spawn(|| {
                        let mine: Vec<Tensor> = (0..30)
                            .map(|_| Tensor::empty(&[1], DType::F32).unwrap())
                            .collect();
                        let weak: Vec<u64> =
                            mine.iter().map(|t| t.0.rc_box().weak_count()).collect();
                        // Until the other side has taken a good number of entries (so the
                        // two really raced), at least 200 rounds.
                        let mut round = 0;
                        while round < 200 || taken.load(Ordering::Relaxed) < 100 {
                            for (j, t) in mine.iter().enumerate() {
                                if j % 2 == 0 {
                                    assert!(table.insert(t, t.0.downgrade()));
                                } else {
                                    assert!(insert_listed(&table, t));
                                }
                            }
                            for t in &mine {
                                // None when take_all got there first
                                drop(table.remove(t));
                            }
                            round += 1;
                        }
                        (mine, weak)
                    })
                })
                .collect();
            sc.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    table.take_all(|w| {
                        taken.fetch_add(1, Ordering::Relaxed);
                        drop(w)
                    });
                }
            });
            let kept = workers.into_iter().map(|w| w.join().unwrap()).collect();
            done.store(true, Ordering::Relaxed);
            kept
        });
        for (mine, weak) in &kept {
            for (t, &w) in mine.iter().zip(weak) {
                assert_eq!(t.0.rc_box().weak_count(), w, "each weak unit dropped once");
            }
        }
        assert!(table.is_empty());
        let (cap, free) = capacity_and_free(&table);
        assert_eq!(free, cap);
    }

    /// Views made and dropped on several threads while snapshots are taken: no crash, no
    /// leak of registrations, and the figures of a storage nobody else touches are exact.
    #[test]
    fn concurrent_views_and_snapshots() {
        use crate::dtype::DType;
        let _serial = tracking_tests();
        set_tracking(true);
        let base = Tensor::empty(&[1000], DType::F32).unwrap();
        let key = base.data_ptr() as usize;
        std::thread::scope(|sc| {
            for _ in 0..3 {
                sc.spawn(|| {
                    for i in 0..2000 {
                        let v = base.slice(0, i % 900, i % 900 + 10, 1).unwrap();
                        let w = v.transpose_2d().unwrap();
                        drop(v);
                        drop(w);
                    }
                });
            }
            sc.spawn(|| {
                for _ in 0..50 {
                    let snap = snapshot().unwrap();
                    let e = snap
                        .iter()
                        .find(|e| e.data as usize == key)
                        .expect("base tracked");
                    assert_eq!(e.nbytes, 4000);
                    assert!(e.tensors >= 1 && e.strong >= e.tensors);
                }
            });
        });
        let snap = snapshot().unwrap();
        let e = snap.iter().find(|e| e.data as usize == key).unwrap();
        assert_eq!(
            (e.tensors, e.strong, e.weak, e.reachable_bytes),
            (1, 1, 0, 4000)
        );
        let v = base.slice(0, 10, 20, 1).unwrap();
        drop(base);
        let snap = snapshot().unwrap();
        let e = snap.iter().find(|e| e.data as usize == key).unwrap();
        assert_eq!((e.tensors, e.reachable_bytes), (1, 40));
        drop(v);
        // A resize shows in the next snapshot (the registry's copy of the figures).
        let s = StorageImpl::allocate(64, crate::allocator::Allocator::Builtin).unwrap();
        // SAFETY: this test's own storage, used by this thread only.
        unsafe { s.resize(4096) }.unwrap();
        let snap = snapshot().unwrap();
        assert!(snap
            .iter()
            .any(|e| std::ptr::eq(e.data, s.data_ptr()) && e.nbytes == 4096 && e.strong == 1));
        drop(s);
        // (another test's storage may reuse the address, not with this size and no tensor)
        let snap = snapshot().unwrap();
        assert!(!snap
            .iter()
            .any(|e| e.data as usize == key && e.nbytes == 4000 && e.tensors == 0));
        set_tracking(false);
    }

    /// Tracking turned off and on again (which takes every tensor entry out of the table)
    /// while views of a tracked storage are made and dropped on several threads and
    /// snapshots are taken: each registration's weak reference is dropped once (by the
    /// view's release or by the switch, whichever took the entry), and no snapshot reads a
    /// tensor that was freed (what the sanitizers check). Afterwards the base, whose
    /// registration the first switch-off dropped, has no weak reference left.
    #[test]
    fn tracking_off_while_views_and_snapshots() {
        use crate::dtype::DType;
        let _serial = tracking_tests();
        set_tracking(true);
        let base = Tensor::empty(&[1000], DType::F32).unwrap();
        assert_eq!(base.0.rc_box().weak_count(), 2, "registered");
        let done = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let views: Vec<_> = (0..3)
                .map(|_| {
                    sc.spawn(|| {
                        for i in 0..1500 {
                            let v = base.slice(0, i % 900, i % 900 + 10, 1).unwrap();
                            let w = v.transpose_2d().unwrap();
                            drop(v);
                            drop(w);
                        }
                    })
                })
                .collect();
            sc.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    let snap = snapshot().unwrap();
                    // the base, while listed (until the first switch-off), has itself at least
                    if let Some(e) = snap.iter().find(|e| std::ptr::eq(e.data, base.data_ptr())) {
                        assert!(e.tensors >= 1 && e.strong >= e.tensors);
                    }
                }
            });
            // Switched off and on until the view threads are done (at least 20 times).
            let mut switches = 0;
            while switches < 20 || !views.iter().all(|v| v.is_finished()) {
                set_tracking(false);
                set_tracking(true);
                switches += 1;
            }
            for v in views {
                v.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
        });
        set_tracking(false);
        assert_eq!(
            base.0.rc_box().weak_count(),
            1,
            "the registration dropped once"
        );
        assert_eq!(base.use_count(), 1);
    }

    #[test]
    fn union_of_ranges() {
        assert_eq!(union_len([]), 0);
        assert_eq!(union_len([(0, 0), (5, 5)]), 0);
        assert_eq!(union_len([(0, 4), (10, 20), (15, 30), (30, 31)]), 4 + 21);
        assert_eq!(union_len([(0, 100), (10, 20)]), 100);
    }
}

//! The tracked tensors' table ([`TensorSlots`]): numbered slots, lock-free, each holding a
//! weak reference to one tensor; a tensor keeps its slot's number, so filing and removing
//! it is an index.

use crate::refcount::{box_of, RcBox, WeakIntrusivePtr};
use crate::tensor_impl::{ObserverSlot, TensorImpl};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

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
/// with its own flag (see `registry::SNAPSHOTTING`).
pub(super) struct TensorSlots {
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
pub(super) const BY_ADDRESS_BASE: u32 = (SEGMENTS as u32) << OFFSET_BITS;

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
    pub(super) const fn new() -> TensorSlots {
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
    pub(super) fn insert(&self, t: &TensorImpl, weak: WeakIntrusivePtr<TensorImpl>) -> bool {
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
    /// alone.) Sequentially consistent, for `registry::SNAPSHOTTING`. `i` is `t`'s number,
    /// read once by the caller.
    #[inline(always)]
    pub(super) fn remove_numbered(
        &self,
        t: &TensorImpl,
        i: u32,
    ) -> Option<WeakIntrusivePtr<TensorImpl>> {
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
    pub(super) fn take_all(&self, mut f: impl FnMut(WeakIntrusivePtr<TensorImpl>)) {
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
    pub(super) fn len(&self) -> usize {
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
    /// the registry lock with `registry::SNAPSHOTTING` set.
    pub(super) unsafe fn values(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{set_tracking, tracking_tests};
    use crate::tensor_impl::Tensor;
    use std::sync::atomic::AtomicBool;

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
}

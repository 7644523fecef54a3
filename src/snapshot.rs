//! Opt-in memory snapshot for view-leak diagnostics (PyTorch users find such leaks with
//! `torch.cuda.memory._snapshot()`): every live storage with its size, kind, strong and
//! weak counts, how many live tensors view it and how many of its bytes those tensors can
//! reach. A 10-element view of a 40 MB tensor keeps all 40 MB alive; the snapshot shows it
//! as "40 MB pinned by views that reach 80 bytes".
//!
//! Off by default. When on (`TENSOR_MEMORY_TRACKING=1` at start-up, or [`set_tracking`]),
//! storages created from then on are registered (their addresses with a copy of their
//! data pointer, size and kind, in a mutex-protected map; `Drop` unregisters them) and so
//! are the tensors made on them (a weak reference each, removed by the tensor's
//! `release_resources` at strong count 0). Making a tensor tests one flag of its storage
//! (`StorageImpl::is_tracked`); releasing an untracked tensor is unchanged (no weak
//! reference, so the one-step fast path). The foundation only declares those calls
//! (`storage::StorageObserver`, `tensor_impl::TensorObserver`) and the switch of new
//! storages (`storage::set_watching`, which [`set_tracking`] sets); this module implements
//! the calls, so nothing below it names it.
//!
//! A snapshot takes no reference of either kind: it reads everything under the registry
//! lock, from what a registration guarantees to be there (a registered storage's count
//! word and the registry's copy of its figures; a registered tensor's layout and storage
//! address, kept by the registry's weak reference). Holding a reference of its own, even
//! briefly, would make the snapshot drop the last one whenever the owner released the
//! object meanwhile, and so run the storage's deleter on the snapshotting thread instead
//! of the thread that released it (which deleters bound to a thread depend on).

use crate::error::{Error, Result, Status};
use crate::refcount::{box_of, counts_of, WeakIntrusivePtr};
use crate::storage::{Observer, Storage, StorageImpl, StorageKind, StorageObserver};
use crate::tensor_impl::{ObserverSlot, Tensor, TensorImpl, TensorObserver};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
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
}

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
    /// Tracked tensors, each through a weak reference: the tensor's `release_resources`
    /// (strong count 0) removes it, so untracked tensors keep the release fast path and no
    /// `Drop` is added to TensorImpl.
    tensors: TensorSlots,
}

/// The tracked tensors in numbered slots: a tensor's slot number is kept in the tensor
/// ([`crate::tensor_impl::ObserverSlot`]), so registering and removing one is an index, not
/// a hash-table insert and removal (which were two thirds of the registry's cost per
/// view). Freed slots are reused last-freed first.
#[derive(Default)]
struct TensorSlots {
    slots: Vec<Option<WeakIntrusivePtr<TensorImpl>>>,
    /// Free slot numbers. Its capacity is kept at least `slots.len()`, so `remove` never
    /// allocates.
    free: Vec<u32>,
    live: usize,
}

impl TensorSlots {
    /// Files `weak` (a reference to `t`) and records its slot in `t`; out of memory (or
    /// 2^32 - 1 slots) hands `weak` back.
    fn insert(
        &mut self,
        t: &TensorImpl,
        weak: WeakIntrusivePtr<TensorImpl>,
    ) -> Option<WeakIntrusivePtr<TensorImpl>> {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                let n = self.slots.len();
                let Ok(i) = u32::try_from(n) else {
                    return Some(weak);
                };
                if i == ObserverSlot::NONE
                    || self.slots.try_reserve(1).is_err()
                    || self.free.try_reserve(n + 1 - self.free.len()).is_err()
                {
                    return Some(weak);
                }
                self.slots.push(None);
                i
            }
        };
        self.slots[i as usize] = Some(weak);
        self.live += 1;
        t.observer_slot().set(i);
        None
    }

    /// Removes `t`'s entry, if this table holds one. (A tensor filed in an earlier table,
    /// one that `set_tracking(false)` discarded, may name a slot that now holds another
    /// tensor: the address check leaves that one alone.)
    fn remove(&mut self, t: &TensorImpl) -> Option<WeakIntrusivePtr<TensorImpl>> {
        let i = t.observer_slot().get();
        let slot = self.slots.get_mut(i as usize)?;
        if !slot.as_ref().is_some_and(|w| w.refers_to(t)) {
            return None;
        }
        let weak = slot.take();
        self.free.push(i); // within capacity (see `free`)
        self.live -= 1;
        weak
    }

    fn len(&self) -> usize {
        self.live
    }

    fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn values(&self) -> impl Iterator<Item = &WeakIntrusivePtr<TensorImpl>> {
        self.slots.iter().flatten()
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
    }
    prev
}

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut r = registry();
    f(r.get_or_insert_with(|| Registry {
        storages: AddrMap::default(),
        tensors: TensorSlots::default(),
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

/// Removes an entry; once nothing tracked is alive, frees the tables (so a process that
/// ends with tracking on but nothing tracked alive holds no registry memory). Whatever
/// is removed is dropped after the lock is released.
fn remove_entry(f: impl FnOnce(&mut Registry) -> Option<WeakIntrusivePtr<TensorImpl>>) {
    let (weak, emptied) = {
        let mut r = registry();
        let Some(reg) = r.as_mut() else { return };
        let weak = f(reg);
        let emptied = if reg.storages.is_empty() && reg.tensors.is_empty() {
            r.take()
        } else {
            None
        };
        (weak, emptied)
    };
    drop(weak);
    drop(emptied);
}

#[cold]
#[inline(never)]
pub(crate) fn unregister_storage(s: &StorageImpl) {
    remove_entry(|r| {
        r.storages.remove(&(s as *const StorageImpl as usize));
        None
    })
}

/// Registers a new tensor made on a tracked storage (best effort, as storages).
#[cold]
#[inline(never)]
pub(crate) fn register_tensor(t: Result<Tensor>) -> Result<Tensor> {
    let Ok(t) = t else { return t };
    if !crate::storage::watching() {
        return Ok(t); // its storage was tracked, but tracking has been turned off since
    }
    let weak = t.0.downgrade();
    let rejected = with_registry(|r| r.tensors.insert(&t, weak));
    drop(rejected);
    Ok(t)
}

/// Told by the tensor's `release_resources` (strong count 0).
#[cold]
#[inline(never)]
pub(crate) fn unregister_tensor(t: &TensorImpl) {
    // The weak reference is dropped unlocked; never the last weak unit (the caller's
    // strong-0 path holds one).
    remove_entry(|r| r.tensors.remove(t))
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
    fn tensor_made(t: Result<Tensor>) -> Result<Tensor> {
        register_tensor(t)
    }
    #[inline]
    fn tensor_released(t: &TensorImpl) {
        unregister_tensor(t)
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
            storages
                .try_reserve_exact(reg.storages.len())
                .map_err(|_| oom())?;
            spans
                .try_reserve_exact(reg.tensors.len())
                .map_err(|_| oom())?;
            for (&a, f) in &reg.storages {
                // SAFETY: registered and not yet unregistered (Drop unregisters under the
                // lock we hold): the box is allocated; only its counter is read.
                let (strong, weak) = unsafe { counts_of(box_of(a as *const StorageImpl)) };
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
            for w in reg.tensors.values() {
                if w.expired() {
                    continue;
                }
                // SAFETY: a TensorImpl's release_resources only unregisters it (under the
                // lock we hold); its layout and storage field stay as made until it is
                // dropped, which the registry's weak reference prevents. The storage's
                // address is only compared, never followed.
                let t = unsafe { w.peek() };
                spans.push((&**t.storage() as *const StorageImpl as usize, span(t)));
            }
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

    /// The slot table: slots are reused last-freed first; a tensor removes only its own
    /// entry, including when its slot number came from another (discarded) table.
    #[test]
    fn tensor_slots_reuse_and_stale_numbers() {
        use crate::dtype::DType;
        let a = Tensor::empty(&[1], DType::F32).unwrap();
        let b = Tensor::empty(&[2], DType::F32).unwrap();
        let c = Tensor::empty(&[3], DType::F32).unwrap();
        let mut old = TensorSlots::default();
        assert!(old.insert(&a, a.0.downgrade()).is_none());
        assert_eq!(a.observer_slot().get(), 0);
        // A fresh table (tracking turned off and on again) gives slot 0 to b.
        let mut t = TensorSlots::default();
        assert!(t.insert(&b, b.0.downgrade()).is_none());
        assert!(t.insert(&c, c.0.downgrade()).is_none());
        assert_eq!((b.observer_slot().get(), c.observer_slot().get()), (0, 1));
        assert!(t.remove(&a).is_none(), "a's slot 0 is b's in this table");
        assert_eq!(t.len(), 2);
        assert!(t.values().any(|w| w.refers_to(&*b)));
        // Removing b frees slot 0, which the next insert takes.
        assert!(t.remove(&b).is_some_and(|w| w.refers_to(&*b)));
        assert!(t.remove(&b).is_none(), "removed once");
        assert!(t.insert(&a, a.0.downgrade()).is_none());
        assert_eq!(a.observer_slot().get(), 0);
        assert_eq!(t.len(), 2);
        assert!(t.remove(&a).is_some() && t.remove(&c).is_some() && t.is_empty());
        assert!(old.remove(&a).is_some() && old.is_empty());
    }

    /// Views made and dropped on several threads while snapshots are taken: no crash, no
    /// leak of registrations, and the figures of a storage nobody else touches are exact.
    #[test]
    fn concurrent_views_and_snapshots() {
        use crate::dtype::DType;
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

    #[test]
    fn union_of_ranges() {
        assert_eq!(union_len([]), 0);
        assert_eq!(union_len([(0, 0), (5, 5)]), 0);
        assert_eq!(union_len([(0, 4), (10, 20), (15, 30), (30, 31)]), 4 + 21);
        assert_eq!(union_len([(0, 100), (10, 20)]), 100);
    }
}

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
//! [`TensorSlots`](slots::TensorSlots), removed at the tensor's release: by the release of
//! its only strong reference while that weak reference is its only one, which then
//! destroys the tensor without touching its count, `Intrusive::reclaim_sole_weak`;
//! otherwise by its `release_resources` at strong count 0). Making a tensor tests one
//! flag of its storage (`StorageImpl::is_tracked`); releasing an untracked tensor is
//! unchanged (no weak reference, so the one-step fast path). The foundation only declares
//! those calls (`storage::StorageObserver`, `tensor_impl::TensorObserver`) and the switch
//! of new storages (`storage::set_watching`, which [`set_tracking`] sets); this module
//! implements the calls, so nothing below it names it.
//!
//! A snapshot takes no reference of either kind: it reads everything under the registry
//! lock (and, for the tensors, which register and unregister without that lock, with
//! `registry::SNAPSHOTTING` set), from what a registration guarantees to be there (a
//! registered storage's count word and the registry's copy of its figures; a registered
//! tensor's layout and storage address, kept by the registry's weak reference). Holding a
//! reference of its own, even briefly, would make the snapshot drop the last one whenever
//! the owner released the object meanwhile, and so run the storage's deleter on the
//! snapshotting thread instead of the thread that released it (which deleters bound to a
//! thread depend on).
//!
//! One job per file: `slots` (the lock-free table of the tracked tensors), `registry` (the
//! tracked storages, the registrations of both and the switch), this file (the snapshot
//! read from them).

mod registry;
mod slots;

pub use registry::{is_tracking, set_tracking};

use crate::error::{Error, Result, Status};
use crate::refcount::counts_of;
use crate::storage::{StorageImpl, StorageKind};
use crate::tensor_impl::TensorImpl;
use registry::{registry, AddrMap, Snapshotting, TENSORS};

/// Environment variable, a boolean (`crate::env::flag`): true turns tracking on at start-up
/// (read once, when the first storage is made or tracking is queried).
pub const ENV_TRACKING: &str = "TENSOR_MEMORY_TRACKING";

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

/// Held by the tests that turn tracking on and off and by those that count weak
/// references (which a tracked tensor's registration adds).
#[cfg(test)]
static TRACKING_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
fn tracking_tests() -> std::sync::MutexGuard<'static, ()> {
    TRACKING_TESTS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor_impl::Tensor;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Views made and dropped on several threads while snapshots are taken: no crash, no
    /// leak of registrations, and the figures of a storage nobody else touches are exact.
    #[test]
    fn concurrent_views_and_snapshots() {
        use crate::dtype::DType;
        let _serial = tracking_tests();
        set_tracking(true);
        let base = Tensor::empty(&[1000], DType::F32).unwrap();
        let key = base.data_ptr() as usize;
        // Fewer rounds under Miri (each step about 10^4 times slower there).
        let (views, snaps) = if cfg!(miri) { (200, 10) } else { (2000, 50) };
        std::thread::scope(|sc| {
            for _ in 0..3 {
                sc.spawn(|| {
                    for i in 0..views {
                        let v = base.slice(0, i % 900, i % 900 + 10, 1).unwrap();
                        let w = v.transpose_2d().unwrap();
                        drop(v);
                        drop(w);
                    }
                });
            }
            sc.spawn(|| {
                for _ in 0..snaps {
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

//! The registry: the tracked storages (by address, with a copy of their figures, under one
//! lock), the registration of each tracked tensor in the slot table ([`TENSORS`]), the
//! flag by which the snapshot keeps what it reads alive ([`SNAPSHOTTING`]), the tracking
//! switch, and the observer calls the foundation makes.

use super::slots::{TensorSlots, BY_ADDRESS_BASE};
use super::ENV_TRACKING;
use crate::refcount::RcBox;
use crate::storage::{Observer, Storage, StorageImpl, StorageKind, StorageObserver};
use crate::tensor_impl::{Tensor, TensorImpl, TensorObserver};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

/// What the snapshot reports of a registered storage besides its counts: copied at
/// registration and by `resize` (under the lock), so that a snapshot never reads the
/// storage's own data cell, which its release rewrites at strong count 0.
pub(super) struct Figures {
    pub(super) data: usize,
    pub(super) nbytes: usize,
    pub(super) kind: StorageKind,
    /// The storage's box, as its reference gave it (the whole box's provenance, which the
    /// key, an address, does not carry): where the snapshot reads the counts.
    pub(super) rc: *const RcBox<StorageImpl>,
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
pub(super) struct AddrHash(u64);

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

pub(super) type AddrMap<V> = HashMap<usize, V, std::hash::BuildHasherDefault<AddrHash>>;

pub(super) struct Registry {
    /// Tracked `StorageImpl`s whose object is alive, by address.
    pub(super) storages: AddrMap<Figures>,
}

/// The registry's tensors: never freed (16 bytes a slot: the by-address ones, then listed
/// ones added in segments of 64, 128, ... slots: a process keeps at most about twice 16
/// bytes per tensor of the most it ever had tracked at once, past the by-address ones).
pub(super) static TENSORS: TensorSlots = TensorSlots::new();

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
pub(super) struct Snapshotting;

impl Snapshotting {
    pub(super) fn start() -> Snapshotting {
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

pub(super) fn registry() -> MutexGuard<'static, Option<Registry>> {
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

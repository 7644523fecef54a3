//! StorageImpl: untyped bytes. A data pointer plus who frees it (an allocator, or a
//! caller's deleter for wrapped memory), the byte count, the device, and a one-way
//! read-only flag. The data is released exactly once, when the last strong reference dies
//! (see `refcount.rs`), on whichever thread that happens.
//!
//! The invariants every user of the data pointer relies on are stated on the fields of
//! [`StorageImpl`] and [`Data`].

use crate::allocator::{stats_storage_born, stats_storage_died, Allocator};
use crate::device::Device;
use crate::error::{Error, Result, Status};
use crate::refcount::{Intrusive, IntrusivePtr};
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// `tensor_deleter_fn`: frees wrapped memory; called once with the data pointer and ctx.
pub type DeleterFn = unsafe extern "C" fn(data: *mut c_void, ctx: *mut c_void);

/// Who frees the bytes. Moves only forward: `Allocated` / `External` -> `Released` (in
/// `release_data`, at strong count 0); `disarm` never writes here (it sets `disarmed`).
enum Owner {
    /// Allocated by us; resizable. `ptr` came from this allocator's `allocate(nbytes)`
    /// (NULL when `nbytes` is 0) and goes back through its `deallocate(ptr, nbytes)`,
    /// exactly once (at release, or in `resize` when a new block replaces it).
    Allocated(Allocator),
    /// Wrapped caller memory; `deleter(ptr, ctx)` (if any) runs exactly once, at release,
    /// unless the storage was disarmed (`disarmed`). `ctx` is the caller's, passed back
    /// untouched.
    External {
        deleter: Option<DeleterFn>,
        ctx: *mut c_void,
    },
    /// Data already released: `ptr` is NULL and `nbytes` 0; nothing is freed again.
    Released,
}

/// What watches storages from above the foundation: told when a storage it chose to watch
/// (its `tracked` flag, fixed at creation) is made, resized and dropped. Storage declares
/// the calls and names no watcher; the one implementation, for [`Observer`], is the memory
/// snapshot's registry (`crate::snapshot`), as `refcount` declares the allocation
/// strategy that the object-box cache implements. Whether new storages are watched is the
/// switch below ([`set_watching`]), which the observer turns on and off.
pub(crate) trait StorageObserver {
    /// Whether to watch from the start, before any [`set_watching`] (the observer's
    /// start-up setting: an environment variable). Asked once, when the first storage is
    /// made or the switch is first read or set.
    fn watch_from_start() -> bool;
    /// A watched storage was made (it may be reached by address from now on, until
    /// `dropped`: the storage answers true to `Intrusive::reachable_by_address`).
    fn made(s: &Storage);
    /// `resize` replaced a watched storage's block (called by the storage's only user).
    fn resized(s: &StorageImpl);
    /// A watched storage's object is being dropped (before its data is released).
    fn dropped(s: &StorageImpl);
}

/// The observer of storages, and of the tensors on them (`tensor_impl::TensorObserver`):
/// a name for the implementation above the foundation.
pub(crate) enum Observer {}

/// Whether storages made now are watched: [`WATCH_OFF`] or [`WATCH_ON`] once the start-up
/// setting has been asked ([`WATCH_UNASKED`] before), so that each new storage tests one
/// byte.
static WATCHING: AtomicU8 = AtomicU8::new(WATCH_UNASKED);
const WATCH_OFF: u8 = 0;
const WATCH_ON: u8 = 1;
const WATCH_UNASKED: u8 = 2;

/// Are storages made now watched by the [`StorageObserver`]?
#[inline]
pub(crate) fn watching() -> bool {
    let w = WATCHING.load(Ordering::Relaxed);
    if w <= WATCH_ON {
        return w == WATCH_ON;
    }
    watching_from_start()
}

/// [`watching`] once the start-up setting has been asked (as it has whenever a watched
/// storage exists): one load and no call (before the question, false).
#[inline(always)]
pub(crate) fn watching_asked() -> bool {
    WATCHING.load(Ordering::Relaxed) == WATCH_ON
}

#[cold]
#[inline(never)]
fn watching_from_start() -> bool {
    let on = Observer::watch_from_start();
    let w = if on { WATCH_ON } else { WATCH_OFF };
    // Unless a concurrent first call or `set_watching` got there first.
    let _ = WATCHING.compare_exchange(WATCH_UNASKED, w, Ordering::Relaxed, Ordering::Relaxed);
    WATCHING.load(Ordering::Relaxed) == WATCH_ON
}

/// Starts or stops watching the storages made from now on; returns the previous state. The
/// start-up setting is asked first, so that it never overrides this.
pub(crate) fn set_watching(on: bool) -> bool {
    let _ = watching();
    let w = if on { WATCH_ON } else { WATCH_OFF };
    WATCHING.swap(w, Ordering::Relaxed) == WATCH_ON
}

/// Where a storage's bytes come from, fixed at creation (reported by the memory snapshot
/// as `tensor_storage_kind_t` codes, and by `storage_is_mapped`). Allocated storages own
/// their block through an allocator; the other two are external memory released by a
/// deleter (a mapped one's deleter unmaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum StorageKind {
    /// Allocated by the library (built-in or custom allocator).
    Allocated = 0,
    /// Caller memory wrapped by from_blob / DLPack.
    External = 1,
    /// A memory mapping of a file or of a shared-memory descriptor (`crate::files::mmap`).
    Mapped = 2,
}

/// The block: the three fields change together, only as `StorageImpl::data` says.
struct Data {
    /// Start of the block: `nbytes` bytes valid for reads (and for writes unless the
    /// storage is read-only: a read-only mapping is `PROT_READ`) from here, for as long as
    /// a strong reference exists and `resize` has not replaced it. NULL only when `nbytes`
    /// is 0 (wrapped memory may also give a non-NULL pointer with 0 bytes). Tensors check
    /// their layouts against `nbytes` (`data_for_read` / `data_for_write`) before any
    /// kernel dereferences it.
    ptr: *mut u8,
    /// Size of the block in bytes, at most `isize::MAX` (checked at creation and by
    /// `resize`), so any offset inside it fits `ptr.offset`. There is no separate
    /// capacity: the built-in allocator rounds its own blocks (`crate::allocator`) and gets the
    /// size back in `deallocate`.
    nbytes: usize,
    /// Who frees `ptr`, and how (see [`Owner`]).
    owner: Owner,
}

/// Aligned to a cache line, so that the refcount word in front of it (`RcBox`) sits on a
/// line of its own: two threads taking views of one base both write that word, and every
/// view reads `nbytes` here for its bounds check; on a shared line each of those reads
/// would wait for the line to come back from the other core (bench_contention, shared /
/// separate bases: 1.23-1.43 before, 1.13-1.33 after; 64 more bytes per storage).
#[repr(align(64))]
pub struct StorageImpl {
    /// The block. Read through shared references (`data()`) by any thread holding a
    /// strong reference; written only
    /// * by `resize`, whose caller guarantees that no other thread uses the storage and
    ///   that nobody holds a pointer into the old block that it will use again (as with
    ///   PyTorch's `resize_`; DLPack exports are refused through `exports`);
    /// * by `release_data`, at strong count 0 (`release_resources`) or in `Drop`: nobody
    ///   else can reach the storage any more.
    ///
    /// Those are the only `&mut` made from the cell, so no `&Data` is live across one.
    data: UnsafeCell<Data>,
    /// Fixed at creation (a known device: `wrap` checks).
    device: Device,
    /// One-way `false -> true` (`mark_read_only`): once set, every write path refuses
    /// (`check_writable`). Release / Acquire, so a thread that sees the flag also sees
    /// what the marking thread did before setting it.
    read_only: AtomicBool,
    /// Set by [`disarm`](Self::disarm): an external storage's deleter is not called.
    /// Atomic, so that disarming never writes through the `data` cell (see `disarm`).
    disarmed: AtomicBool,
    /// DLPack exports of this storage whose consumer has not called the deleter yet:
    /// while > 0 the bytes must not move, so `resize` refuses. Each `pin_export` is
    /// matched by exactly one `unpin_export` (the export's deleter).
    exports: AtomicUsize,
    /// Where the bytes come from; fixed at creation. `Allocated` iff the owner is (or
    /// was) `Owner::Allocated`; `Mapped` storages are external with an unmapping deleter.
    kind: StorageKind,
    /// Watched by the [`StorageObserver`] (it was watching when this was made); fixed.
    /// While set, the observer may hold this object's address (the memory snapshot's
    /// registry, with a copy of its data pointer, size and kind, which `resize` reports),
    /// and `Drop` tells it (it removes the entry under its lock) before the object is
    /// freed.
    tracked: bool,
    /// The version counter of the tensor made together with this storage and its views
    /// (`tensor_impl::VersionOf::Storage`).
    version: AtomicU64,
}

// SAFETY: the raw pointers are plain addresses of a block the storage owns (or wraps for
// a caller who documented that any thread may free it: the C API's threading rules), so
// the storage may be dropped, and its deleter or allocator run, on any thread.
unsafe impl Send for StorageImpl {}
// SAFETY: shared use only reads `data` (its writers are excluded as the field says) and
// the atomics; the bytes themselves are accessed through raw pointers whose races are the
// caller's, as in PyTorch.
unsafe impl Sync for StorageImpl {}

pub type Storage = IntrusivePtr<StorageImpl>;

/// Caller memory and how to give it back: what every wrap of external memory takes
/// ([`StorageImpl::wrap`]). `deleter(data, ctx)`, if any, is called once when the wrapping
/// storage dies, never when the wrap fails.
#[derive(Clone, Copy)]
pub struct Blob {
    pub data: *mut c_void,
    pub device: Device,
    pub deleter: Option<DeleterFn>,
    pub ctx: *mut c_void,
}

fn oom(what: &str) -> Error {
    Error::from_fmt(
        Status::OutOfMemory,
        format_args!("failed to allocate the {what} object"),
    )
}

impl StorageImpl {
    fn data(&self) -> &Data {
        // SAFETY: no `&mut Data` is live while the storage is reachable through `&self`
        // (the writers listed on the field exclude every other user).
        unsafe { &*self.data.get() }
    }

    /// A resizable storage of `nbytes` from `allocator` (uninitialised bytes).
    pub fn allocate(nbytes: usize, allocator: Allocator) -> Result<Storage> {
        ensure!(
            nbytes <= isize::MAX as usize,
            Overflow,
            "storage of {nbytes} bytes exceeds the address space"
        );
        let ptr = allocator.allocate(nbytes)?;
        let s = StorageImpl {
            data: UnsafeCell::new(Data {
                ptr,
                nbytes,
                owner: Owner::Allocated(allocator),
            }),
            device: Device::CPU,
            read_only: AtomicBool::new(false),
            disarmed: AtomicBool::new(false),
            exports: AtomicUsize::new(0),
            kind: StorageKind::Allocated,
            tracked: watching(),
            version: AtomicU64::new(0),
        };
        stats_storage_born(false);
        // On failure the StorageImpl drops here and frees the block.
        let p = IntrusivePtr::try_new(s).map_err(|_| oom("storage"))?;
        if p.tracked {
            Observer::made(&p);
        }
        Ok(p)
    }

    /// Wraps caller memory as a storage (`storage_from_blob`).
    pub fn from_blob(blob: Blob, nbytes: usize) -> Result<Storage> {
        Self::wrap(blob, nbytes, StorageKind::External)
    }

    /// The one wrap of external memory as a storage (from_blob, DLPack imports through
    /// `Tensor::wrap`, file mappings): `nbytes` at `blob.data`. On success the storage owns
    /// the memory and calls `deleter(data, ctx)` once when its last strong reference dies;
    /// on failure the deleter is not called and the caller keeps the memory. A caller that
    /// fails after this succeeded gives the memory back with [`disarm`](Self::disarm)
    /// (`Tensor::wrap` does, the one such caller).
    #[inline]
    pub(crate) fn wrap(blob: Blob, nbytes: usize, kind: StorageKind) -> Result<Storage> {
        let Blob {
            data,
            device,
            deleter,
            ctx,
        } = blob;
        ensure!(
            device.is_known(),
            InvalidArgument,
            "unknown device (device_type {}, device_id {})",
            device.device_type,
            device.device_id
        );
        ensure!(
            !data.is_null() || nbytes == 0,
            NullPointer,
            "data is NULL but nbytes is {nbytes}"
        );
        ensure!(
            nbytes <= isize::MAX as usize,
            Overflow,
            "storage of {nbytes} bytes exceeds the address space"
        );
        let s = StorageImpl {
            data: UnsafeCell::new(Data {
                ptr: data as *mut u8,
                nbytes,
                owner: Owner::External { deleter, ctx },
            }),
            device,
            read_only: AtomicBool::new(false),
            disarmed: AtomicBool::new(false),
            exports: AtomicUsize::new(0),
            kind,
            tracked: watching(),
            version: AtomicU64::new(0),
        };
        stats_storage_born(true);
        match IntrusivePtr::try_new(s) {
            Ok(p) => {
                if p.tracked {
                    Observer::made(&p);
                }
                Ok(p)
            }
            Err(s) => {
                s.disarm();
                Err(oom("storage"))
            }
        }
    }

    /// Forgets the deleter of wrapped memory, so that dropping this storage gives ownership
    /// back to the caller. Used when a call that was to take ownership fails after the
    /// storage was made. An atomic store rather than a write through the `data` cell: the
    /// cell is written only by the two writers its field lists.
    pub fn disarm(&self) {
        // Relaxed: the release path that reads it runs after the last strong reference is
        // dropped, which the reference count's release/acquire orders after this.
        self.disarmed.store(true, Ordering::Relaxed);
    }

    pub fn data_ptr(&self) -> *mut u8 {
        self.data().ptr
    }

    pub fn nbytes(&self) -> usize {
        self.data().nbytes
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn is_resizable(&self) -> bool {
        matches!(self.data().owner, Owner::Allocated(_))
    }

    /// Watched by the [`StorageObserver`] (so are the tensors made on it).
    #[inline(always)]
    pub fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// See the `version` field.
    pub(crate) fn version_cell(&self) -> &AtomicU64 {
        &self.version
    }

    /// Where the bytes come from (set at creation, never changes).
    pub fn kind(&self) -> StorageKind {
        self.kind
    }

    /// The ctx given at creation to an external storage's deleter (NULL otherwise).
    pub(crate) fn external_ctx(&self) -> *mut c_void {
        match self.data().owner {
            Owner::External { ctx, .. } => ctx,
            _ => std::ptr::null_mut(),
        }
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::Acquire)
    }

    /// One-way: every later write through any tensor on this storage fails.
    pub fn mark_read_only(&self) {
        self.read_only.store(true, Ordering::Release);
    }

    /// Fails with ReadOnly when writes are refused.
    pub fn check_writable(&self) -> Result<()> {
        ensure!(
            !self.is_read_only(),
            ReadOnly,
            "cannot write into a read-only storage"
        );
        Ok(())
    }

    /// Counts one more outstanding DLPack export of this storage (see `resize`).
    pub fn pin_export(&self) {
        self.exports.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends one export counted by [`pin_export`](Self::pin_export).
    pub fn unpin_export(&self) {
        self.exports.fetch_sub(1, Ordering::AcqRel);
    }

    /// DLPack exports of this storage whose deleter has not run yet.
    pub fn export_count(&self) -> usize {
        self.exports.load(Ordering::Acquire)
    }

    /// Reallocates to `nbytes`, keeping the common prefix. Refused while a DLPack export of
    /// the storage is outstanding: its consumer holds the data pointer.
    ///
    /// # Safety
    /// Nothing else may use this storage during the call (not thread-safe, as PyTorch's
    /// `resize_`): it replaces the data pointer and byte count in place, which any
    /// concurrent reader of them races with: another thread's call on this storage or on a
    /// tensor over it. (Not the memory snapshot: it reads its registry's copy of the two,
    /// which this updates under the registry lock.) `storage_resize` passes this rule on to
    /// its C callers.
    pub unsafe fn resize(&self, nbytes: usize) -> Result<()> {
        let Owner::Allocated(alloc) = self.data().owner else {
            bail!(
                NotResizable,
                "trying to resize storage that is not resizable (it wraps external memory)"
            );
        };
        let exports = self.export_count();
        ensure!(
            exports == 0,
            NotResizable,
            "cannot resize a storage of {} bytes to {nbytes} bytes while {exports} DLPack export(s) of it are outstanding (the consumer has not called the deleter yet)",
            self.nbytes()
        );
        self.check_writable()?;
        ensure!(
            nbytes <= isize::MAX as usize,
            Overflow,
            "storage of {nbytes} bytes exceeds the address space"
        );
        let old = self.data();
        if nbytes == old.nbytes {
            return Ok(());
        }
        let new_ptr = alloc.allocate(nbytes)?;
        let keep = nbytes.min(old.nbytes);
        // SAFETY: both blocks hold at least `keep` bytes and are distinct; the old block is
        // freed once, by the allocator that made it; then the new one is published, a
        // write through the cell that nothing reads concurrently (the caller's contract).
        unsafe {
            if keep > 0 {
                std::ptr::copy_nonoverlapping(old.ptr, new_ptr, keep);
            }
            alloc.deallocate(old.ptr, old.nbytes);
            let d = &mut *self.data.get();
            d.ptr = new_ptr;
            d.nbytes = nbytes;
        }
        if self.tracked {
            Observer::resized(self);
        }
        Ok(())
    }

    fn release_data(&self) {
        // SAFETY: called when the strong count is 0 (release_resources) or from Drop: no one
        // else can reach the data.
        let d = unsafe { &mut *self.data.get() };
        match std::mem::replace(&mut d.owner, Owner::Released) {
            Owner::Allocated(a) => {
                // SAFETY: the block came from `a` with this size.
                unsafe { a.deallocate(d.ptr, d.nbytes) };
                stats_storage_died(false);
            }
            Owner::External { deleter, ctx } => {
                stats_storage_died(true);
                if let Some(f) = deleter.filter(|_| !self.disarmed.load(Ordering::Relaxed)) {
                    // SAFETY: the caller's deleter, called exactly once (owner is now
                    // Released).
                    unsafe { f(d.ptr as *mut c_void, ctx) };
                }
            }
            Owner::Released => return,
        }
        d.ptr = std::ptr::null_mut();
        d.nbytes = 0;
    }
}

impl Intrusive for StorageImpl {
    type Boxes = crate::allocator::StorageBoxes;

    // Out of line: the release of a storage reference is inlined into every tensor's
    // release, and with the data release inlined too it grows past what the compiler
    // inlines wherever its codegen unit has other storage drops (benches/c/count.sh: 6
    // more instructions per view release).
    #[inline(never)]
    fn release_resources(&self) -> u64 {
        self.release_data();
        0
    }

    /// A tracked storage may be held by address by its observer (the memory snapshot reads
    /// its count word under the registry lock, and leaves out a storage at strong 0).
    #[inline]
    fn reachable_by_address(&self) -> bool {
        self.tracked
    }
}

impl Drop for StorageImpl {
    fn drop(&mut self) {
        if self.tracked {
            Observer::dropped(self);
        }
        self.release_data();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn resize(s: &StorageImpl, nbytes: usize) -> Result<()> {
        // SAFETY: each test's storages are used by its own thread only.
        unsafe { s.resize(nbytes) }
    }

    /// # Safety
    /// `ctx` points to a live `AtomicUsize`.
    unsafe extern "C" fn count_deleter(_data: *mut c_void, ctx: *mut c_void) {
        // SAFETY: the contract (each test passes a counter that outlives the storage).
        unsafe { (*(ctx as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst) };
    }

    #[test]
    fn allocate_aligned_resizable() {
        let s = StorageImpl::allocate(100, Allocator::Builtin).unwrap();
        assert_eq!(s.nbytes(), 100);
        assert_eq!(s.data_ptr() as usize % 64, 0);
        assert!(s.is_resizable() && s.kind() == StorageKind::Allocated);
        // SAFETY: the storage's 100 bytes.
        unsafe { s.data_ptr().write_bytes(7, 100) };
        resize(&s, 200).unwrap();
        assert_eq!(s.nbytes(), 200);
        // SAFETY: byte 99 of the resized 200-byte block.
        assert_eq!(unsafe { *s.data_ptr().add(99) }, 7, "prefix kept");
        resize(&s, 0).unwrap();
        assert!(s.data_ptr().is_null());
        let z = StorageImpl::allocate(0, Allocator::Builtin).unwrap();
        assert!(z.data_ptr().is_null());
    }

    #[test]
    fn blob_deleter_runs_once_at_last_strong() {
        let hits = AtomicUsize::new(0);
        let mut buf = [0u8; 16];
        let blob = Blob {
            deleter: Some(count_deleter),
            ctx: &hits as *const _ as *mut c_void,
            ..Blob::borrowed(buf.as_mut_ptr() as *mut c_void)
        };
        let s = StorageImpl::from_blob(blob, 16).unwrap();
        assert!(!s.is_resizable());
        assert_eq!(resize(&s, 8).unwrap_err().status, Status::NotResizable);
        let w = s.downgrade();
        let s2 = s.clone();
        drop(s);
        assert_eq!(hits.load(Ordering::SeqCst), 0);
        drop(s2);
        assert_eq!(hits.load(Ordering::SeqCst), 1, "deleter at strong 0");
        assert!(w.lock().is_none());
        drop(w);
        assert_eq!(hits.load(Ordering::SeqCst), 1, "never twice");
    }

    #[test]
    fn disarmed_blob_does_not_call_deleter() {
        let hits = AtomicUsize::new(0);
        let blob = Blob {
            deleter: Some(count_deleter),
            ctx: &hits as *const _ as *mut c_void,
            ..Blob::borrowed(8 as *mut c_void)
        };
        let s = StorageImpl::from_blob(blob, 4).unwrap();
        s.disarm();
        drop(s);
        assert_eq!(hits.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn blob_validation() {
        let e = StorageImpl::from_blob(Blob::borrowed(std::ptr::null_mut()), 4);
        assert_eq!(e.err().unwrap().status, Status::NullPointer);
        let bad = Device {
            device_type: 99,
            device_id: 0,
        };
        let blob = Blob {
            device: bad,
            ..Blob::borrowed(8 as *mut c_void)
        };
        let e = StorageImpl::from_blob(blob, 4);
        assert_eq!(e.err().unwrap().status, Status::InvalidArgument);
    }

    #[test]
    fn resize_refused_while_exported() {
        let s = StorageImpl::allocate(8, Allocator::Builtin).unwrap();
        s.pin_export();
        s.pin_export();
        let e = resize(&s, 16).unwrap_err();
        assert_eq!(e.status, Status::NotResizable);
        assert!(
            e.message.contains("8 bytes") && e.message.contains("2 DLPack export"),
            "{}",
            e.message
        );
        assert_eq!(s.nbytes(), 8);
        s.unpin_export();
        assert_eq!(resize(&s, 0).unwrap_err().status, Status::NotResizable);
        s.unpin_export();
        resize(&s, 16).unwrap();
        assert_eq!(s.nbytes(), 16);
    }

    #[test]
    fn read_only_is_one_way() {
        let s = StorageImpl::allocate(8, Allocator::Builtin).unwrap();
        assert!(s.check_writable().is_ok());
        s.mark_read_only();
        assert_eq!(s.check_writable().unwrap_err().status, Status::ReadOnly);
        assert_eq!(resize(&s, 16).unwrap_err().status, Status::ReadOnly);
    }
}

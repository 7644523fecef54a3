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
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// `tensor_deleter_fn`: frees wrapped memory; called once with the data pointer and ctx.
pub type DeleterFn = unsafe extern "C" fn(data: *mut c_void, ctx: *mut c_void);

/// Who frees the bytes. Moves only forward: `Allocated` / `External` -> `Released` (in
/// `release_data`, at strong count 0); `disarm` never writes here (it sets `disarmed`).
enum Owner {
    /// Allocated by us; resizable. `ptr` came from this allocator's `allocate(nbytes)`
    /// (NULL when `nbytes` is 0) and goes back through its `deallocate(ptr, nbytes)`,
    /// exactly once (at release, or in `resize` when a new block replaces it); or, for a
    /// small storage of the built-in allocator, `ptr` is the storage's own `inline` line,
    /// which nothing frees (its statistics are given back instead, [`StorageImpl::free_block`]).
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

/// What a mapped storage maps: the head of its deleter context (see
/// [`StorageImpl::wrap`]), read by [`StorageImpl::shares_pages_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct MappedObject {
    /// The mapped object (`st_dev`, `st_ino` of the descriptor: a file or a memfd).
    pub file: (u64, u64),
    /// File offset of the storage's first byte (its data pointer).
    pub offset: u64,
    /// `MAP_SHARED` (read-write or read-only): writes through any shared mapping of the
    /// object show here. False for `MAP_PRIVATE`.
    pub shared: bool,
}

/// The block: the two fields change together, only as `StorageImpl::data` says.
struct Data {
    /// Start of the block: `nbytes` bytes valid for reads (and for writes unless the
    /// storage is read-only: a read-only mapping is `PROT_READ`) from here, for as long as
    /// a strong reference exists and `resize` has not replaced it. NULL only when `nbytes`
    /// is 0 (wrapped memory may also give a non-NULL pointer with 0 bytes). Tensors check
    /// their layouts against `nbytes` (`data_for_read` / `data_for_write`) before any
    /// kernel dereferences it. For a small storage of the built-in allocator it is the
    /// storage's own `inline` line (see [`StorageImpl::allocate`]): valid as long as the
    /// storage lives, like any block.
    ptr: *mut u8,
    /// Size of the block in bytes, at most `isize::MAX` (checked at creation and by
    /// `resize`), so any offset inside it fits `ptr.offset`. There is no separate
    /// capacity: the built-in allocator rounds its own blocks (`crate::allocator`) and gets the
    /// size back in `deallocate`.
    nbytes: usize,
}

/// The bytes a small storage keeps inside its object (`crate::allocator::INLINE_BYTES`).
const INLINE: usize = crate::allocator::INLINE_BYTES;

/// Laid out by cache line of its box (`BOX_ALIGN`: the box is 64-byte aligned; `RcBox`
/// puts the count word first, this object right after it, at byte 8):
///
/// * line 0: the count word, then what only creation, release, `resize` and DLPack pins
///   touch, and the version counter (written by every in-place op);
/// * line 1: what every view reads (`data`'s pointer and size for its bounds check, the
///   device, the flags): two threads taking views of one base both write the count
///   word, and on a shared line each of those reads would wait for the line to come back
///   from the other core (bench_contention, shared / separate bases: 1.23-1.43 before the
///   count word had a line of its own, 1.13-1.33 after);
/// * line 2: the bytes of a small storage (`inline`), 64-byte aligned as every block of
///   the library, so that a small tensor is two allocations (its TensorImpl and this), not
///   three; unused by other storages.
///
/// The offsets are checked below (`LAYOUT_CHECKED`); the padding fields are never read.
#[repr(C)]
pub struct StorageImpl {
    // ---- line 0 (after the count word) ----
    /// Who frees the bytes. Written only by `release_data` (at strong count 0, or in
    /// `Drop`: nobody else can reach the storage), read by `resize` (whose caller excludes
    /// every other user) and by shared readers that only look at which variant it is or
    /// an external storage's ctx (fixed at creation) while a strong reference exists.
    owner: UnsafeCell<Owner>,
    /// DLPack exports of this storage whose consumer has not called the deleter yet:
    /// while > 0 the bytes must not move, so `resize` refuses. Each `pin_export` is
    /// matched by exactly one `unpin_export` (the export's deleter).
    exports: AtomicUsize,
    /// The version counter of the tensor made together with this storage and its views
    /// (`tensor_impl::VersionOf::Storage`).
    version: AtomicU64,
    /// Where the bytes come from; fixed at creation. `Allocated` iff the owner is (or
    /// was) `Owner::Allocated`; `Mapped` storages are external with an unmapping deleter.
    kind: StorageKind,
    /// Set by [`disarm`](Self::disarm): an external storage's deleter is not called.
    /// Atomic, so that disarming never writes through the `owner` cell (see `disarm`).
    disarmed: AtomicBool,
    _pad0: [MaybeUninit<u8>; 3],
    // ---- line 1 ----
    /// The block. Read through shared references (`data()`) by any thread holding a
    /// strong reference; written only
    /// * by `allocate`, which points a new small storage at its `inline` line before
    ///   anyone else can reach it;
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
    /// Watched by the [`StorageObserver`] (it was watching when this was made); fixed.
    /// While set, the observer may hold this object's address (the memory snapshot's
    /// registry, with a copy of its data pointer, size and kind, which `resize` reports),
    /// and `Drop` tells it (it removes the entry under its lock) before the object is
    /// freed.
    tracked: bool,
    _pad1: [MaybeUninit<u8>; 38],
    // ---- line 2 ----
    /// The bytes of a small storage (`data.ptr` points here, see `allocate`); never
    /// initialised by the library, reached only through `data.ptr`.
    inline: UnsafeCell<[MaybeUninit<u8>; INLINE]>,
}

/// The box of a storage: the count word (8 bytes, `RcBox`) and the object, line by line as
/// [`StorageImpl`] says.
const LAYOUT_CHECKED: () = {
    use std::mem::{offset_of, size_of};
    let head = size_of::<crate::refcount::RcBox<StorageImpl>>() - size_of::<StorageImpl>();
    assert!(head == 8);
    assert!(head + offset_of!(StorageImpl, data) == 64);
    assert!(head + offset_of!(StorageImpl, tracked) < 128);
    assert!(head + offset_of!(StorageImpl, inline) == 128);
    assert!(head + size_of::<StorageImpl>() == 128 + INLINE);
    assert!(INLINE == 64);
};

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

    fn owner(&self) -> &Owner {
        // SAFETY: as `data`: the one writer (`release_data`) excludes every other user.
        unsafe { &*self.owner.get() }
    }

    /// The storage's own line for the bytes of a small storage.
    #[inline(always)]
    fn inline_ptr(&self) -> *mut u8 {
        self.inline.get() as *mut u8
    }

    /// Whether a storage of `nbytes` from `allocator` keeps its bytes inline: the built-in
    /// allocator, 1 to `INLINE` bytes, and no memory checker watching, as for the
    /// per-thread caches (`TENSOR_NO_CACHING=0` keeps both): a checker should see each
    /// storage's bytes as a block of their own, with its bounds.
    #[inline(always)]
    fn goes_inline(nbytes: usize, allocator: &Allocator) -> bool {
        nbytes.wrapping_sub(1) < INLINE
            && matches!(allocator, Allocator::Builtin)
            && !crate::allocator::aside_for_checker()
    }

    /// Gives back the block `ptr` of `nbytes` that `alloc` made for this storage: through
    /// the allocator, or, for the inline line, its statistics only.
    ///
    /// # Safety
    /// `ptr` is this storage's current block (`Owner::Allocated(alloc)`), given up.
    #[inline(always)]
    unsafe fn free_block(&self, alloc: &Allocator, ptr: *mut u8, nbytes: usize) {
        if ptr == self.inline_ptr() {
            crate::allocator::stats_inline_free(nbytes);
        } else {
            // SAFETY: the block came from `alloc` with this size (the contract).
            unsafe { alloc.deallocate(ptr, nbytes) };
        }
    }

    /// The object, before it has a block (`ptr` NULL or the caller's).
    #[inline(always)]
    fn new_object(data: Data, owner: Owner, device: Device, kind: StorageKind) -> StorageImpl {
        let () = LAYOUT_CHECKED;
        StorageImpl {
            owner: UnsafeCell::new(owner),
            exports: AtomicUsize::new(0),
            version: AtomicU64::new(0),
            kind,
            disarmed: AtomicBool::new(false),
            _pad0: [MaybeUninit::uninit(); 3],
            data: UnsafeCell::new(data),
            device,
            read_only: AtomicBool::new(false),
            tracked: watching(),
            _pad1: [MaybeUninit::uninit(); 38],
            inline: UnsafeCell::new([MaybeUninit::uninit(); INLINE]),
        }
    }

    /// A resizable storage of `nbytes` from `allocator` (uninitialised bytes). A storage
    /// of at most `INLINE` bytes from the built-in allocator keeps them in its own object
    /// (one allocation instead of two, [`goes_inline`](Self::goes_inline)), counted in the
    /// statistics as a 64-byte block of its own would be while the storage lives; `resize`
    /// moves them to a block (the inline line then stays unused).
    pub fn allocate(nbytes: usize, allocator: Allocator) -> Result<Storage> {
        ensure!(
            nbytes <= isize::MAX as usize,
            Overflow,
            "storage of {nbytes} bytes exceeds the address space"
        );
        let inline = Self::goes_inline(nbytes, &allocator);
        let ptr = if inline {
            std::ptr::null_mut()
        } else {
            allocator.allocate(nbytes)?
        };
        // Built in the new box: a value moved in would be copied whole, the uninitialised
        // inline line included (a `memcpy` call of 184 bytes per storage).
        let Some(p) = IntrusivePtr::try_new_with(|| {
            Self::new_object(
                Data { ptr, nbytes },
                Owner::Allocated(allocator),
                Device::CPU,
                StorageKind::Allocated,
            )
        }) else {
            // SAFETY: the block allocated above (NULL if none), published nowhere.
            unsafe { allocator.deallocate(ptr, nbytes) };
            return Err(oom("storage"));
        };
        stats_storage_born(false);
        if inline {
            // SAFETY: the storage is new and ours alone: the first of `data`'s writers.
            unsafe { (*p.data.get()).ptr = p.inline_ptr() };
            crate::allocator::stats_inline_alloc(nbytes);
        }
        if p.tracked {
            Observer::made(&p);
        }
        Ok(p)
    }

    /// Wraps caller memory as a storage (`storage_from_blob`).
    pub fn from_blob(blob: Blob, nbytes: usize) -> Result<Storage> {
        // SAFETY: an External storage (the contract is for Mapped ones).
        unsafe { Self::wrap(blob, nbytes, StorageKind::External) }
    }

    /// The one wrap of external memory as a storage (from_blob, DLPack imports through
    /// `Tensor::wrap`, file mappings): `nbytes` at `blob.data`. On success the storage owns
    /// the memory and calls `deleter(data, ctx)` once when its last strong reference dies;
    /// on failure the deleter is not called and the caller keeps the memory. A caller that
    /// fails after this succeeded gives the memory back with [`disarm`](Self::disarm)
    /// (`Tensor::wrap` does, the one such caller). `kind`: External, or Mapped for a memory
    /// mapping (`crate::files::mmap`), whose deleter context then tells what it maps
    /// ([`MappedObject`], for [`shares_pages_with`](Self::shares_pages_with)).
    ///
    /// # Safety
    /// With `kind` Mapped, `blob.ctx` points to a `#[repr(C)]` struct whose first field is
    /// a [`MappedObject`] describing the mapping behind `blob.data`, valid (and unchanged)
    /// until the deleter runs. Nothing for the other kinds.
    #[inline]
    pub(crate) unsafe fn wrap(blob: Blob, nbytes: usize, kind: StorageKind) -> Result<Storage> {
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
        // Built in the new box (see `allocate`); on failure nothing was made and the
        // deleter is not called.
        let p = IntrusivePtr::try_new_with(|| {
            Self::new_object(
                Data {
                    ptr: data as *mut u8,
                    nbytes,
                },
                Owner::External { deleter, ctx },
                device,
                kind,
            )
        })
        .ok_or_else(|| oom("storage"))?;
        stats_storage_born(true);
        if p.tracked {
            Observer::made(&p);
        }
        Ok(p)
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
        matches!(self.owner(), Owner::Allocated(_))
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
        match *self.owner() {
            Owner::External { ctx, .. } => ctx,
            _ => std::ptr::null_mut(),
        }
    }

    /// What a mapped storage maps (`None` for the other kinds).
    fn mapped_object(&self) -> Option<&MappedObject> {
        let ctx = self.external_ctx();
        if self.kind != StorageKind::Mapped || ctx.is_null() {
            return None;
        }
        // SAFETY: a Mapped storage is made only by `wrap`, whose contract makes its ctx then
        // a repr(C) struct starting with a MappedObject, valid until the deleter runs, which
        // cannot happen while `self` is borrowed.
        Some(unsafe { &*(ctx as *const MappedObject) })
    }

    /// Whether the bytes `[d0, d1)` of `self` and `[s0, s1)` of `src` (addresses inside
    /// each storage's block) are, at different addresses, the same pages: `self` is a
    /// shared mapping and `src` any mapping of the same object (a file, or a memfd mapped
    /// again through its descriptor) whose file ranges intersect. Then writing `self`
    /// changes what `src` reads, as for intersecting addresses (the copy overlap rule asks
    /// this). A private `src` counts too: its pages not yet written in this process are the
    /// object's pages and show `self`'s writes (Linux does not copy them before the first
    /// write). A private `self` does not: its writes go to pages of its own.
    pub(crate) fn shares_pages_with(
        &self,
        (d0, d1): (usize, usize),
        src: &StorageImpl,
        (s0, s1): (usize, usize),
    ) -> bool {
        let (Some(md), Some(ms)) = (self.mapped_object(), src.mapped_object()) else {
            return false;
        };
        if !md.shared || md.file != ms.file {
            return false;
        }
        // File offsets of the two byte ranges (inside their storages, whose file regions
        // were checked to end within the file at mapping time: no overflow).
        let file_range = |m: &MappedObject, s: &StorageImpl, a: usize, b: usize| {
            let base = m.offset + (a - s.data_ptr() as usize) as u64;
            (base, base + (b - a) as u64)
        };
        let (a0, a1) = file_range(md, self, d0, d1);
        let (b0, b1) = file_range(ms, src, s0, s1);
        a0 < b1 && b0 < a1
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

    /// Reallocates to `nbytes`, keeping the common prefix: a new block of the storage's
    /// allocator for any new size (never the inline line, which a storage leaves for
    /// good). Refused while a DLPack export of the storage is outstanding: its consumer
    /// holds the data pointer.
    ///
    /// # Safety
    /// Nothing else may use this storage during the call (not thread-safe, as PyTorch's
    /// `resize_`): it replaces the data pointer and byte count in place, which any
    /// concurrent reader of them races with: another thread's call on this storage or on a
    /// tensor over it. (Not the memory snapshot: it reads its registry's copy of the two,
    /// which this updates under the registry lock.) `storage_resize` passes this rule on to
    /// its C callers.
    pub unsafe fn resize(&self, nbytes: usize) -> Result<()> {
        let Owner::Allocated(alloc) = *self.owner() else {
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
        // freed once, by the allocator that made it (or is the inline line); then the new
        // one is published, a write through the cell that nothing reads concurrently (the
        // caller's contract).
        unsafe {
            if keep > 0 {
                std::ptr::copy_nonoverlapping(old.ptr, new_ptr, keep);
            }
            self.free_block(&alloc, old.ptr, old.nbytes);
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
        let (d, owner) = unsafe { (&mut *self.data.get(), &mut *self.owner.get()) };
        match std::mem::replace(owner, Owner::Released) {
            Owner::Allocated(a) => {
                // SAFETY: the storage's block, from `a` with this size (or inline).
                unsafe { self.free_block(&a, d.ptr, d.nbytes) };
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

    /// Line by line from the box's start: see [`StorageImpl`].
    const BOX_ALIGN: usize = 64;

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

    /// Every storage of the built-in allocator is 64-byte aligned, inline ones too (the
    /// box is 64-aligned and the line at 128 in it), and its bytes are its own: writing
    /// every byte of each of many live storages leaves every other's intact.
    #[test]
    fn data_is_aligned_and_separate_for_every_small_size() {
        let sizes: Vec<usize> = (1..=130).collect();
        let live: Vec<Storage> = sizes
            .iter()
            .map(|&n| StorageImpl::allocate(n, Allocator::Builtin).unwrap())
            .collect();
        for (i, s) in live.iter().enumerate() {
            assert_eq!(s.data_ptr() as usize % 64, 0, "{} bytes", s.nbytes());
            // SAFETY: the storage's own nbytes bytes.
            unsafe { s.data_ptr().write_bytes(i as u8, s.nbytes()) };
        }
        for (i, s) in live.iter().enumerate() {
            // SAFETY: as above, initialised just now.
            let bytes = unsafe { std::slice::from_raw_parts(s.data_ptr(), s.nbytes()) };
            assert!(bytes.iter().all(|&b| b == i as u8), "{} bytes", s.nbytes());
            assert_eq!(
                s.version_cell().load(Ordering::Relaxed),
                0,
                "fields untouched"
            );
            assert!(s.is_resizable() && !s.is_read_only() && s.export_count() == 0);
        }
    }

    /// A small storage of the built-in allocator keeps its bytes in its own box, the line
    /// at byte 128 of the 64-byte-aligned box (one allocation, not two); nothing else does.
    #[test]
    fn small_storage_bytes_are_inline() {
        let s = StorageImpl::allocate(16, Allocator::Builtin).unwrap();
        let boxed = (&*s as *const StorageImpl as usize) - 8; // after the count word
        assert_eq!(boxed % 64, 0, "the box is 64-byte aligned");
        let inline = StorageImpl::goes_inline(16, &Allocator::Builtin);
        // Inline unless the library steps aside for a memory checker (ASan, Miri).
        if crate::sanitizer::checker().is_none() {
            assert!(inline, "no memory checker here: small storages are inline");
        }
        assert_eq!(s.data_ptr() as usize == boxed + 128, inline);
        for n in [0, 65, 256] {
            let big = StorageImpl::allocate(n, Allocator::Builtin).unwrap();
            assert_ne!(big.data_ptr(), big.inline_ptr(), "{n} bytes");
        }
    }

    /// Resizing an inline storage moves its bytes to a block of the allocator, growing or
    /// shrinking, with the common prefix and the exact size asked for; the inline line is
    /// left for good.
    #[test]
    fn inline_storage_resize_moves_to_a_block() {
        let s = StorageImpl::allocate(16, Allocator::Builtin).unwrap();
        // SAFETY: the storage's 16 bytes.
        unsafe {
            for i in 0..16 {
                s.data_ptr().add(i).write(i as u8 + 1);
            }
        }
        for (n, keep) in [(40usize, 16usize), (8, 8), (300, 8), (64, 8)] {
            resize(&s, n).unwrap();
            assert_eq!(s.nbytes(), n);
            assert_ne!(s.data_ptr(), s.inline_ptr(), "resized to {n}: a block");
            assert_eq!(s.data_ptr() as usize % 64, 0);
            // SAFETY: the first `keep` of the storage's n bytes, kept by every resize.
            let got = unsafe { std::slice::from_raw_parts(s.data_ptr(), keep) };
            assert!(
                got.iter().enumerate().all(|(i, &b)| b == i as u8 + 1),
                "{n}"
            );
        }
        resize(&s, 0).unwrap();
        assert!(s.data_ptr().is_null() && s.nbytes() == 0);
    }

    /// # Safety
    /// `ctx` points to a live `AtomicUsize` (the count of live blocks).
    unsafe extern "C" fn counting_alloc(ctx: *mut c_void, n: usize, align: usize) -> *mut c_void {
        let mut p = std::ptr::null_mut();
        // SAFETY: posix_memalign with the library's power-of-two alignment; the contract.
        unsafe {
            if libc::posix_memalign(&mut p, align, n) != 0 {
                return std::ptr::null_mut();
            }
            (*(ctx as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst);
        }
        p
    }

    /// # Safety
    /// `p` came from `counting_alloc` with this `ctx`.
    unsafe extern "C" fn counting_free(ctx: *mut c_void, p: *mut c_void, _n: usize) {
        // SAFETY: the contract.
        unsafe {
            (*(ctx as *const AtomicUsize)).fetch_sub(1, Ordering::SeqCst);
            libc::free(p);
        }
    }

    /// A custom allocator's small storage is a block of that allocator, never inline.
    #[test]
    fn custom_allocator_small_storage_is_its_block() {
        let live = AtomicUsize::new(0);
        let a = Allocator::Custom {
            ctx: &live as *const AtomicUsize as *mut c_void,
            allocate: counting_alloc,
            deallocate: counting_free,
        };
        let s = StorageImpl::allocate(16, a).unwrap();
        assert_eq!(live.load(Ordering::SeqCst), 1);
        assert_ne!(s.data_ptr(), s.inline_ptr());
        drop(s);
        assert_eq!(live.load(Ordering::SeqCst), 0);
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

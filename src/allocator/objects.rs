//! Object boxes: the heap boxes of the two objects a tensor is made of, its TensorImpl and
//! (for a new tensor) its StorageImpl, and the sizes-and-strides block of a 6- to 8-dim
//! layout, kept per thread for reuse, [`OBJ_PER_SLOT`] of each (about 7 KiB per thread).
//! A view makes one such box (and a dims block past 5 dims) and a small clone two; glibc's
//! malloc + free of one costs about 140 instructions, which here become about 40 (a fifth
//! of a view: benches/c/count.sh). They come from and go back to Rust's global allocator
//! (`std::alloc`); they hold no tensor data, so the memory statistics (tensor data) do not
//! count them. Returned at thread exit, by `empty_cache` on their thread, and never kept
//! while the cache limit is 0 or a memory checker runs (`policy::thread_caching`). A kept
//! box holds its count word at 0 (`refcount::destroy`), which is how a released C handle
//! to it is recognised.
//!
//! This is an allocation strategy of the reference count ([`BoxAlloc`]): a type chooses it
//! with `type Boxes = TensorBoxes` (or `StorageBoxes`) in its `Intrusive` impl.

use super::policy::thread_caching;
use super::small::{pop, push};
use super::thread::with;
use crate::refcount::BoxAlloc;
use std::alloc::Layout;

/// Slots: one per boxed type (a slot keeps blocks of one layout only; another type's
/// blocks would be freed instead of kept).
const OBJ_SLOTS: usize = 3;
const OBJ_PER_SLOT: usize = 16;

/// The boxes of one type, kept in slot `SLOT` of each thread's cache.
pub struct PerThread<const SLOT: usize>;
/// The TensorImpl boxes' strategy.
pub type TensorBoxes = PerThread<0>;
/// The StorageImpl boxes' strategy.
pub type StorageBoxes = PerThread<1>;
/// The heap blocks of the sizes and strides of 6- to 8-dim layouts (`layout::Layout`:
/// one block size for all three), which would otherwise cost a glibc `malloc`/`free` per
/// view.
pub type DimsBoxes = PerThread<2>;

pub(super) struct ObjectCache {
    len: [u8; OBJ_SLOTS],
    obj: [[*mut u8; OBJ_PER_SLOT]; OBJ_SLOTS],
    /// The layout of each slot's blocks (all of a slot's blocks share it: `put` refuses
    /// another).
    layout: [Layout; OBJ_SLOTS],
}

impl ObjectCache {
    pub(super) const fn new() -> ObjectCache {
        ObjectCache {
            len: [0; OBJ_SLOTS],
            obj: [[std::ptr::null_mut(); OBJ_PER_SLOT]; OBJ_SLOTS],
            layout: [Layout::new::<u8>(); OBJ_SLOTS],
        }
    }

    /// Gives every block back to the global allocator.
    pub(super) fn drain(&mut self) {
        for slot in 0..OBJ_SLOTS {
            for &p in &self.obj[slot][..self.len[slot] as usize] {
                // SAFETY: cached object blocks came from std::alloc::alloc with this
                // slot's layout (put's contract) and are owned here.
                unsafe { std::alloc::dealloc(p, self.layout[slot]) };
            }
            self.len[slot] = 0;
        }
    }
}

/// A cached object block of `slot` with `layout` (from `std::alloc::alloc(layout)`,
/// uninitialised), if this thread has one.
#[inline(always)]
fn take(slot: usize, layout: Layout) -> Option<*mut u8> {
    with(|c| {
        let s = &mut c.objects;
        // The layout test makes a slot shared by two types a miss, never a block of the
        // wrong size.
        if s.layout[slot] != layout {
            return None;
        }
        pop(&mut s.len[slot], &s.obj[slot])
    })
}

/// Keeps the freed object block `p` of `slot` for reuse on this thread; false when the
/// caller must free it (also when the slot holds blocks of another layout).
///
/// # Safety
/// `p` came from `std::alloc::alloc(layout)` and the caller gives it up.
#[inline(always)]
unsafe fn put(slot: usize, p: *mut u8, layout: Layout) -> bool {
    if !thread_caching() {
        return false;
    }
    with(|c| {
        let s = &mut c.objects;
        if s.len[slot] > 0 && s.layout[slot] != layout {
            return false;
        }
        if !c.may_keep() {
            return false;
        }
        let s = &mut c.objects;
        s.layout[slot] = layout;
        push(&mut s.len[slot], &mut s.obj[slot], p)
    })
}

impl<const SLOT: usize> BoxAlloc for PerThread<SLOT> {
    #[inline(always)]
    unsafe fn alloc(layout: Layout) -> *mut u8 {
        match take(SLOT, layout) {
            // A block that `free` kept, allocated with this same layout.
            Some(p) => p,
            // SAFETY: a non-zero size (the contract).
            None => unsafe { std::alloc::alloc(layout) },
        }
    }

    #[inline(always)]
    unsafe fn free(p: *mut u8, layout: Layout) {
        // SAFETY: p came from `alloc(layout)` above: `std::alloc::alloc(layout)`, directly
        // or through the cache; given up (the contract).
        unsafe {
            if !put(SLOT, p, layout) {
                std::alloc::dealloc(p, layout);
            }
        }
    }
}

/// Empties the calling thread's object boxes (not tensor data: no bytes to report).
pub(super) fn drain() {
    with(|c| c.objects.drain());
}

//! Object boxes: the heap boxes of the two objects a tensor is made of, its TensorImpl and
//! (for a new tensor) its StorageImpl, and the sizes-and-strides block of a 6- to 8-dim
//! layout, kept per thread for reuse, 16 of each (`thread::OBJ_PER_SLOT`) (about 7 KiB per thread).
//! A view makes one such box (and a dims block past 5 dims) and a small clone two; glibc's
//! malloc + free of one costs about 140 instructions, which here become about 40 (a fifth
//! of a view: benches/c/count.sh). They come from and go back to Rust's global allocator
//! (`std::alloc`; an over-aligned box as a `malloc` with slack, `system::fresh_box`); they
//! hold no tensor data, so the memory statistics (tensor data) do not count them. Returned
//! at thread exit, by `empty_cache` on their thread, and never kept while the cache limit
//! is 0 or a memory checker runs (`policy::thread_caching`). A kept box holds its count
//! word at 0 (`refcount::destroy`), which is how a released C handle to it is recognised.
//!
//! This is an allocation strategy of the reference count ([`BoxAlloc`]): a type chooses it
//! with `type Boxes = TensorBoxes` (or `StorageBoxes`) in its `Intrusive` impl.

use super::policy::thread_caching;
use super::system::{free_box, fresh_box};
use super::thread::{pop, push, with};
use crate::refcount::BoxAlloc;
use std::alloc::Layout;

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

/// A cached object block of `slot` with `layout` (from `fresh_box(layout)`,
/// uninitialised), if this thread has one.
#[inline(always)]
fn take(slot: usize, layout: Layout) -> Option<*mut u8> {
    with(|c| {
        let s = &mut c.objects;
        // The layout test makes a slot shared by two types a miss, never a block of the
        // wrong size.
        if !s.layout[slot].is(layout) {
            return None;
        }
        pop(&mut s.len[slot], &s.obj[slot])
    })
}

/// Keeps the freed object block `p` of `slot` for reuse on this thread; false when the
/// caller must free it (also when the slot holds blocks of another layout).
///
/// # Safety
/// `p` came from `fresh_box(layout)` and the caller gives it up.
#[inline(always)]
unsafe fn put(slot: usize, p: *mut u8, layout: Layout) -> bool {
    if !thread_caching() {
        return false;
    }
    with(|c| {
        if !c.may_keep() {
            return false;
        }
        let s = &mut c.objects;
        if s.len[slot] > 0 && !s.layout[slot].is(layout) {
            return false;
        }
        s.layout[slot].set(layout);
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
            None => unsafe { fresh_box(layout) },
        }
    }

    #[inline(always)]
    unsafe fn free(p: *mut u8, layout: Layout) {
        // SAFETY: p came from `alloc(layout)` above: `fresh_box(layout)`, directly or
        // through the cache; given up (the contract).
        unsafe {
            if !put(SLOT, p, layout) {
                free_box(p, layout);
            }
        }
    }
}

/// Empties the calling thread's object boxes (not tensor data: no bytes to report).
pub(super) fn drain() {
    with(|c| c.objects.drain());
}

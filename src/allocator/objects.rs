//! Object boxes: the heap boxes of the two objects a tensor is made of, its TensorImpl and
//! (for a new tensor) its StorageImpl, and the sizes-and-strides block of a 6- to 8-dim
//! layout, kept per thread for reuse, 16 of each (`thread::OBJ_PER_SLOT`) (about 7 KiB per thread).
//! A view makes one such box (and a dims block past 5 dims) and a small clone two; glibc's
//! malloc + free of one costs about 140 instructions, which here become about 40 (a fifth
//! of a view: benches/c/count.sh). They come from and go back to Rust's global allocator
//! (`std::alloc`; an over-aligned box as a `malloc` with slack, [`fresh_box`]); they hold no tensor data, so the memory statistics (tensor data) do not
//! count them. Returned at thread exit, by `empty_cache` on their thread, and never kept
//! while the cache limit is 0 or a memory checker runs (`policy::thread_caching`). A kept
//! box holds its count word at 0 (`refcount::destroy`), which is how a released C handle
//! to it is recognised.
//!
//! This is an allocation strategy of the reference count ([`BoxAlloc`]): a type chooses it
//! with `type Boxes = TensorBoxes` (or `StorageBoxes`) in its `Intrusive` impl.

use super::policy::thread_caching;
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
        if s.len[slot] > 0 && s.layout[slot] != layout {
            return false;
        }
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

/// The alignment `malloc` gives every block (glibc on 64-bit targets), and Rust's global
/// allocator with it: a box aligned to at most this is a plain `malloc`.
const MALLOC_ALIGN: usize = 16;

/// Whether a box of `layout` is over-aligned the cheap way ([`fresh_box`]): above malloc's
/// alignment, and no memory checker watching (which then sees the exact block).
#[inline]
fn slack_aligned(layout: Layout) -> bool {
    layout.align() > MALLOC_ALIGN && crate::sanitizer::checker().is_none()
}

/// A new object block for `layout` (non-zero size), or NULL. A box aligned past
/// `MALLOC_ALIGN` (the storage's, 64: `StorageImpl::BOX_ALIGN`) is not a
/// `posix_memalign`: glibc's aligned path leaves a free fragment in front of each block that
/// nothing of the library's sizes reuses, 128 bytes of resident memory per block measured
/// over 10^6 of them (BENCHMARKS.md, "A live small tensor"). It is a `malloc` of `align`
/// more bytes instead, aligned inside, with the `malloc` block's address in the word just
/// before the box (the box starts at least `MALLOC_ALIGN` bytes in). Under a memory checker
/// the block is the exact one (`std::alloc::alloc(layout)`), so that the checker sees its
/// bounds.
///
/// # Safety
/// `layout` has a non-zero size.
unsafe fn fresh_box(layout: Layout) -> *mut u8 {
    if !slack_aligned(layout) {
        // SAFETY: a non-zero size (the contract).
        return unsafe { std::alloc::alloc(layout) };
    }
    let Some(outer) = slack_layout(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a non-zero size.
    let raw = unsafe { std::alloc::alloc(outer) };
    if raw.is_null() {
        return raw;
    }
    // In MALLOC_ALIGN..=align: room for the address word in front, the box inside `outer`.
    let lead = layout.align() - (raw as usize & (layout.align() - 1));
    // SAFETY: raw + lead + layout.size() <= raw + outer.size(); the word before the box
    // is in the block and 8-aligned (lead and raw are multiples of MALLOC_ALIGN).
    unsafe {
        let p = raw.add(lead);
        (p as *mut *mut u8).sub(1).write(raw);
        p
    }
}

/// The `malloc` block a slack-aligned box of `layout` lives in.
#[inline]
fn slack_layout(layout: Layout) -> Option<Layout> {
    Layout::from_size_align(layout.size().checked_add(layout.align())?, MALLOC_ALIGN).ok()
}

/// Gives back an object block from [`fresh_box`]`(layout)`.
///
/// # Safety
/// `p` came from `fresh_box(layout)`, holds no live value, and the caller gives it up.
pub(super) unsafe fn free_box(p: *mut u8, layout: Layout) {
    // SAFETY: as fresh_box made it (the same test: the checker is decided once per
    // process): the exact block, or a slack one whose address is the word before `p`.
    unsafe {
        if !slack_aligned(layout) {
            std::alloc::dealloc(p, layout);
            return;
        }
        let raw = (p as *mut *mut u8).sub(1).read();
        let outer = slack_layout(layout).unwrap_or_else(|| unreachable!("fresh_box made it"));
        std::alloc::dealloc(raw, outer);
    }
}

/// Empties the calling thread's object boxes (not tensor data: no bytes to report).
pub(super) fn drain() {
    with(|c| c.objects.drain());
}

//! The inline buffer of a layout's sizes and strides ([`Buf`]): no heap for up to
//! [`MAX_INLINE_DIMS`] dims, one block past them (reused per thread up to
//! [`CACHED_BLOCK_DIMS`] dims).

use crate::error::{Error, Result, Status};
use crate::refcount::BoxAlloc;
use crate::shape::MAX_INLINE_DIMS;
use std::mem::MaybeUninit;

/// Items of the inline buffer: sizes then strides of up to [`MAX_INLINE_DIMS`] dims.
pub(super) const INLINE: usize = 2 * MAX_INLINE_DIMS;
/// Layouts of up to this many dims (past [`MAX_INLINE_DIMS`]) share one heap block size,
/// so that their blocks are kept and reused per thread (`allocator::DimsBoxes`); more dims
/// take a block of their exact size from the global allocator.
const CACHED_BLOCK_DIMS: usize = 8;

/// Sizes then strides, `len` items: inline up to [`MAX_INLINE_DIMS`] dims, else one heap
/// block owned by this value (what `SmallVec` did, with the block's allocation in our
/// hands: items written once, never zero-filled first, and the block of a 6- to 8-dim
/// layout reused per thread instead of a glibc `malloc`/`free` per view).
pub(super) struct Buf {
    /// Items: `2·ndim`. Inline when `len <= INLINE`.
    pub(super) len: usize,
    pub(super) data: BufData,
}

pub(super) union BufData {
    pub(super) inline: MaybeUninit<[i64; INLINE]>,
    pub(super) heap: std::ptr::NonNull<i64>,
}

// SAFETY: a Buf owns its items (inline or its heap block) like a Vec<i64>; nothing is
// shared between values.
unsafe impl Send for Buf {}
// SAFETY: as above; `&Buf` only reads.
unsafe impl Sync for Buf {}

impl Buf {
    /// The heap block's layout for `len > INLINE` items.
    #[inline]
    fn heap_layout(len: usize) -> std::alloc::Layout {
        let items = if len <= 2 * CACHED_BLOCK_DIMS {
            2 * CACHED_BLOCK_DIMS
        } else {
            len
        };
        // len <= 2·MAX_DIMS items (CheckedLayout refuses more, and the view rules add at
        // most one dim to a checked layout): never overflows.
        std::alloc::Layout::array::<i64>(items).expect("dims block layout")
    }

    /// `len` uninitialised items: the caller writes every one of them before reading.
    #[inline(always)]
    fn uninit(len: usize) -> Result<Self> {
        if len <= INLINE {
            return Ok(Buf {
                len,
                data: BufData {
                    inline: MaybeUninit::uninit(),
                },
            });
        }
        Self::uninit_heap(len)
    }

    /// A heap block for `len > INLINE` items (uninitialised).
    // Inlined: out of line it cost 10 instructions per 6- to 8-dim view
    // (benches/c/count.sh); the views of fewer dims do not reach it.
    #[inline(always)]
    pub(super) fn alloc_heap(len: usize) -> Result<std::ptr::NonNull<i64>> {
        let layout = Self::heap_layout(len);
        // SAFETY: a non-zero size (len > INLINE).
        let p = unsafe {
            if len <= 2 * CACHED_BLOCK_DIMS {
                <crate::allocator::DimsBoxes as BoxAlloc>::alloc(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        std::ptr::NonNull::new(p as *mut i64).ok_or_else(layout_oom)
    }

    /// `len > INLINE` uninitialised items in a heap block (the caller writes them all).
    #[inline(always)]
    fn uninit_heap(len: usize) -> Result<Self> {
        let heap = Self::alloc_heap(len)?;
        Ok(Buf {
            len,
            data: BufData { heap },
        })
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut i64 {
        if self.len <= INLINE {
            // SAFETY: inline (len <= INLINE): the `inline` field is the live one.
            unsafe { self.data.inline.as_mut_ptr() as *mut i64 }
        } else {
            // SAFETY: spilled: the `heap` field is the live one.
            unsafe { self.data.heap.as_ptr() }
        }
    }

    #[inline(always)]
    pub(super) fn as_slice(&self) -> &[i64] {
        let p = if self.len <= INLINE {
            // SAFETY: inline: the `inline` field is the live one.
            unsafe { self.data.inline.as_ptr() as *const i64 }
        } else {
            // SAFETY: spilled: the `heap` field is the live one.
            unsafe { self.data.heap.as_ptr() as *const i64 }
        };
        // SAFETY: every constructor leaves items 0..len written (`uninit`'s contract).
        unsafe { std::slice::from_raw_parts(p, self.len) }
    }

    #[inline(always)]
    pub(super) fn as_mut_slice(&mut self) -> &mut [i64] {
        let len = self.len;
        // SAFETY: as as_slice; `&mut self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), len) }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub(super) fn spilled(&self) -> bool {
        self.len > INLINE
    }
}

impl Drop for Buf {
    #[inline]
    fn drop(&mut self) {
        if self.len > INLINE {
            // SAFETY: spilled: `heap` is the live field, a block from `alloc_heap(len)`,
            // given up here. (The block and length by value: the Buf's own address does
            // not escape, which would keep every move of a layout in memory.)
            unsafe { Self::free_heap(self.data.heap, self.len) };
        }
    }
}

impl Buf {
    /// # Safety
    /// `heap` came from `alloc_heap(len)` and the caller gives it up.
    #[inline(never)]
    unsafe fn free_heap(heap: std::ptr::NonNull<i64>, len: usize) {
        let layout = Self::heap_layout(len);
        let p = heap.as_ptr() as *mut u8;
        // SAFETY: the same choice of allocator by len as alloc_heap (the contract).
        unsafe {
            if len <= 2 * CACHED_BLOCK_DIMS {
                <crate::allocator::DimsBoxes as BoxAlloc>::free(p, layout)
            } else {
                std::alloc::dealloc(p, layout)
            }
        }
    }

    /// Fallible clone (the allocation of a spilled copy may fail). An inline buffer is
    /// copied whole, as one fixed-size move (its unwritten items too, as `MaybeUninit`):
    /// no call and no length-dependent copy (a `memcpy` call, about 50 instructions per
    /// small clone).
    #[inline(always)]
    pub(super) fn try_clone(&self) -> Result<Self> {
        if self.len <= INLINE {
            return Ok(Buf {
                len: self.len,
                data: BufData {
                    // SAFETY: inline (len <= INLINE): the `inline` field is the live one; a
                    // `MaybeUninit` array is copied as it is, written items or not.
                    inline: unsafe { self.data.inline },
                },
            });
        }
        self.try_clone_heap()
    }

    /// [`try_clone`](Self::try_clone) of a spilled buffer.
    #[inline(never)]
    fn try_clone_heap(&self) -> Result<Self> {
        let mut b = Buf::uninit(self.len)?;
        let src = self.as_slice();
        // SAFETY: b has room for src.len() = len items (uninit's contract), written here
        // through a raw pointer (no reference to the unwritten items), from another value.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), b.as_mut_ptr(), src.len()) };
        Ok(b)
    }
}

impl Clone for Buf {
    fn clone(&self) -> Self {
        self.try_clone()
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(Self::heap_layout(self.len)))
    }
}

impl PartialEq for Buf {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for Buf {}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cold]
#[inline(never)]
fn layout_oom() -> Error {
    Error::new(Status::OutOfMemory, "failed to allocate sizes and strides")
}

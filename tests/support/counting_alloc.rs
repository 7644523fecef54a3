//! The allocation counter of the allocation-count tests (`tests/alloc_count.rs`,
//! `tests/view_alloc.rs`): a `#[global_allocator]` that counts the allocations this thread
//! makes (a `realloc` counts as one) and hands every request to the system allocator.
//! Include it in a test binary of its own (it replaces that binary's global allocator) with
//! `#[path = "support/counting_alloc.rs"] mod counting_alloc;`. Only the standard library is
//! used.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// Allocations made on this thread so far.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // try_with: allocations made while this thread's locals are torn down go uncounted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every request is forwarded unchanged to `System`, which upholds GlobalAlloc's
// contract; counting touches only a thread-local Cell and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's `layout` contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System (every allocation above does) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: as for dealloc; `new_size` is the caller's, under realloc's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations this thread has made so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// Runs `f`; returns its result and the number of allocations this thread made during it
/// (dropping the result is not part of the count).
pub fn allocations_in<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = allocations();
    let r = f();
    (r, allocations() - before)
}

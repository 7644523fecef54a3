//! An error raised while out of memory does not abort: the error path (the boxed error,
//! its formatted message, the thread-local text tensor_last_error returns) falls back to
//! static text when an allocation fails. A global allocator that fails every allocation
//! of this thread while `FAIL` is set stands in for an exhausted heap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::CStr;
use std::ptr::null_mut;
use tensor::ffi::core::tensor_last_error;
use tensor::ffi::tensor::tensor_arange;
use tensor::ffi::view::{tensor_alias, tensor_transpose};
use tensor::ffi::{tensor_dtype_t, tensor_status_t, tensor_t};

struct MaybeFailing;

thread_local! {
    static FAIL: Cell<bool> = const { Cell::new(false) };
    static REFUSED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: a request is either refused (null: allowed by GlobalAlloc) or goes unchanged to
// `System`, which upholds the contract; the flags are thread-locals.
unsafe impl GlobalAlloc for MaybeFailing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if FAIL.try_with(|f| f.get()).unwrap_or(false) {
            let _ = REFUSED.try_with(|r| r.set(r.get() + 1));
            return null_mut();
        }
        // SAFETY: the caller's `layout` contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: MaybeFailing = MaybeFailing;

/// Runs `f` with every allocation of this thread failing; returns what it returned and
/// how many allocations were refused.
fn out_of_memory<T>(f: impl FnOnce() -> T) -> (T, usize) {
    REFUSED.with(|r| r.set(0));
    FAIL.with(|x| x.set(true));
    let v = f();
    FAIL.with(|x| x.set(false));
    (v, REFUSED.with(|r| r.get()))
}

fn last_error() -> String {
    // SAFETY: tensor_last_error returns a NUL-terminated string, valid until this thread's
    // next call into the library.
    unsafe { CStr::from_ptr(tensor_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn arange6() -> *mut tensor_t {
    let mut t = null_mut();
    assert_eq!(
        tensor_arange(6, tensor_dtype_t(6), &mut t),
        tensor_status_t(0)
    );
    t
}

#[test]
fn errors_while_out_of_memory_return_their_status() {
    // A fresh thread: its last-error buffer was never allocated.
    std::thread::spawn(|| {
        let t = arange6();
        let mut out = null_mut();
        // A refusal found before anything is allocated (the dim, checked by the rule before
        // the view's TensorImpl box is taken; a bad shape for view is found in the box, so
        // with memory short it reports OUT_OF_MEMORY, as c-api.md says).
        let (st, refused) = out_of_memory(|| tensor_transpose(t, 0, 5, &mut out));
        assert_eq!(st, tensor_status_t(3), "INDEX, not an abort");
        assert!(refused > 0, "the error path tried to allocate");
        assert!(out.is_null());
        assert!(
            last_error().contains("out of memory while recording"),
            "{}",
            last_error()
        );
        // Memory back: messages are whole again.
        assert_eq!(tensor_transpose(t, 0, 5, &mut out), tensor_status_t(3));
        assert_eq!(
            last_error(),
            "tensor_transpose: Dimension out of range (expected to be in range of [-1, 0], but got 5)"
        );
        // Now the buffer has room: the function's name and the status's description fit.
        let (st, _) = out_of_memory(|| tensor_transpose(t, 7, 0, &mut out));
        assert_eq!(st, tensor_status_t(3));
        assert_eq!(last_error(), "tensor_transpose: index out of range");
        // An allocation failure itself (the TensorImpl) reports OUT_OF_MEMORY. The refused
        // views gave their boxes back to this thread's cache, which would serve the alias
        // without allocating: emptied first.
        tensor::ffi::memory::tensor_empty_cache();
        let (st, _) = out_of_memory(|| tensor_alias(t, &mut out));
        assert_eq!(st, tensor_status_t(10));
        assert!(out.is_null());
        assert_eq!(last_error(), "tensor_alias: out of memory");
        tensor::ffi::core::tensor_release(t);
    })
    .join()
    .unwrap();
}

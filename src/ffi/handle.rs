//! The one place where C handles and Rust objects are converted (in the manner of
//! rustls-ffi's `Castable`). No other file casts a handle pointer.
//!
//! Each opaque C type names the Rust object behind its pointer:
//!
//! | C handle                  | pointer is                     | Rust owner              |
//! |---------------------------|--------------------------------|-------------------------|
//! | `tensor_t*`               | `RcBox<TensorImpl>`            | [`Tensor`]              |
//! | `storage_t*`              | `RcBox<StorageImpl>`           | [`Storage`]             |
//! | `storage_weak_t*`         | `RcBox<StorageImpl>` (weak)    | `WeakIntrusivePtr`      |
//! | `tensor_safetensors_t*`   | `Box<SafetensorsFile>`         | `Box<SafetensorsFile>`  |
//!
//! The conversions, named as in the refcount vocabulary:
//! * `borrow`   — a reference for the duration of the call (no count change);
//! * `retain`   — a new strong reference (+1) to a borrowed handle;
//! * `adopt`    — take over the reference the caller gives up (`*_release`);
//! * `into_raw` — give up an owned reference to the caller as a handle (+1 for C);
//! * `as_raw`   — the handle of an object Rust keeps owning (a borrowed pointer for C).
//!
//! Every `unsafe fn` here has one contract: a non-NULL pointer is a live handle of its type
//! (the C API's documented precondition). NULL is accepted and mapped to `None`, except by
//! `retain_live`, whose caller has checked it (the view path tests NULL once).
//!
//! A caller who breaks that contract with a handle already released is caught where it can
//! be caught soundly, and the process aborts with the call named on stderr
//! (`refcount::released_handle`, reported by `ffi::guard`): a box the object-block cache
//! keeps (the default) holds the released mark, 0, in its count word, which every borrow,
//! retain and release here reads anyway; under AddressSanitizer a release first looks the
//! handle up in ASan's shadow memory ([`not_freed`]), so that a box really freed is not
//! read, nor counted down a second time (the double release, the worst of these bugs:
//! two live tensors on one block). A box handed back to `free` and then read or retained,
//! or one reused for a new object, is beyond what the library can see (ASan in an
//! instrumented build, and valgrind, see the former).
//!
//! The argument helpers of `ffi/mod.rs` (`tensor_arg`, `tensor_owned`, `storage_arg`, ...)
//! wrap these with the NULL_POINTER error naming the argument.

use super::{storage_t, storage_weak_t, tensor_t};
use crate::refcount::{released_handle, Intrusive, IntrusivePtr, RcBox, WeakIntrusivePtr};
use crate::storage::{Storage, StorageImpl};
use crate::tensor_impl::{Tensor, TensorImpl};
use std::mem::ManuallyDrop;

/// Stops (through `released_handle`) at a non-NULL handle whose block AddressSanitizer
/// says is freed, before anything reads it. Without ASan: one relaxed load and a branch
/// (4 instructions, on the release paths only).
#[inline(always)]
fn not_freed<T>(p: *const T) {
    if crate::sanitizer::asan_freed(p as *const u8) {
        released_handle(p as *const u8);
    }
}

/// A C handle type whose pointer is an intrusively counted `RcBox<Object>`.
pub(crate) trait RcHandle: Sized {
    /// The object behind the handle.
    type Object: Intrusive;
    /// The Rust type that owns one strong reference.
    type Owned;
    fn wrap(p: IntrusivePtr<Self::Object>) -> Self::Owned;
    fn unwrap(o: Self::Owned) -> IntrusivePtr<Self::Object>;
    fn as_intrusive(o: &Self::Owned) -> &IntrusivePtr<Self::Object>;

    /// The handle's box (the one pointer cast of this handle type).
    #[inline(always)]
    fn rc_box(p: *const Self) -> *mut RcBox<Self::Object> {
        p as *mut RcBox<Self::Object>
    }

    /// The box behind a handle, borrowed for the call; `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` is a live handle of this type that outlives `'a`.
    #[inline(always)]
    unsafe fn borrow_box<'a>(p: *const Self) -> Option<&'a RcBox<Self::Object>> {
        if p.is_null() {
            return None;
        }
        // SAFETY: the caller's contract: a live RcBox<Object> (or, the caller's bug, a box
        // the object-block cache keeps, which is still ours and initialised). No ASan
        // lookup here (unlike release): its out-of-line call would make every view save
        // registers (benches/c/count.sh: +10 instructions a view).
        let b = unsafe { &*Self::rc_box(p) };
        if b.no_strong() {
            released_handle(p as *const u8);
        }
        Some(b)
    }

    /// The object behind a handle, borrowed for the call; `None` for NULL.
    ///
    /// # Safety
    /// As [`borrow_box`](Self::borrow_box).
    #[inline(always)]
    unsafe fn borrow<'a>(p: *const Self) -> Option<&'a Self::Object> {
        // SAFETY: forwarded contract.
        unsafe { Self::borrow_box(p) }.map(|b| &b.value)
    }

    /// A new strong reference (+1) to the object behind a borrowed handle; `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` is a live handle of this type (strong count >= 1).
    #[inline(always)]
    unsafe fn retain(p: *const Self) -> Option<Self::Owned> {
        if p.is_null() {
            return None;
        }
        // SAFETY: non-NULL, so live (the caller's contract).
        Some(unsafe { Self::retain_live(p) })
    }

    /// [`retain`](Self::retain) for a handle known to be non-NULL.
    ///
    /// # Safety
    /// `p` is a live handle of this type (strong count >= 1).
    #[inline(always)]
    unsafe fn retain_live(p: *const Self) -> Self::Owned {
        // SAFETY: a live RcBox<Object> with strong count >= 1 (the caller's contract; the
        // increment stops at strong 0, a released handle's box in the cache). No ASan
        // lookup (as in borrow_box): it would cost tensor_from_storage 20 instructions.
        Self::wrap(unsafe { IntrusivePtr::retain_raw(Self::rc_box(p)) })
    }

    /// Takes over the strong reference the caller gives up; `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` came from [`into_raw`](Self::into_raw) (or a retain) and the caller
    /// owns one strong reference through it, which it no longer uses.
    #[inline(always)]
    unsafe fn adopt(p: *mut Self) -> Option<Self::Owned> {
        if p.is_null() {
            return None;
        }
        not_freed(p);
        // SAFETY: the caller hands over one owned strong reference to this box (the
        // release stops at strong 0, a released handle's box in the cache).
        Some(Self::wrap(unsafe {
            IntrusivePtr::from_raw(Self::rc_box(p))
        }))
    }

    /// Gives one owned strong reference to C as a handle.
    #[inline(always)]
    fn into_raw(o: Self::Owned) -> *mut Self {
        Self::unwrap(o).into_raw() as *mut Self
    }

    /// The handle of an object the caller keeps owning (a borrowed pointer for C).
    #[inline(always)]
    fn as_raw(o: &Self::Owned) -> *mut Self {
        Self::as_intrusive(o).as_ptr() as *mut Self
    }
}

impl RcHandle for tensor_t {
    type Object = TensorImpl;
    type Owned = Tensor;
    #[inline(always)]
    fn wrap(p: IntrusivePtr<TensorImpl>) -> Tensor {
        Tensor(p)
    }
    #[inline(always)]
    fn unwrap(o: Tensor) -> IntrusivePtr<TensorImpl> {
        o.0
    }
    #[inline(always)]
    fn as_intrusive(o: &Tensor) -> &IntrusivePtr<TensorImpl> {
        &o.0
    }
}

impl RcHandle for storage_t {
    type Object = StorageImpl;
    type Owned = Storage;
    #[inline(always)]
    fn wrap(p: Storage) -> Storage {
        p
    }
    #[inline(always)]
    fn unwrap(o: Storage) -> Storage {
        o
    }
    #[inline(always)]
    fn as_intrusive(o: &Storage) -> &Storage {
        o
    }
}

/// `storage_weak_t*`: one weak reference to a `RcBox<StorageImpl>`.
impl storage_weak_t {
    fn rc_box(p: *const Self) -> *mut RcBox<StorageImpl> {
        p as *mut RcBox<StorageImpl>
    }

    /// The weak reference behind a handle, borrowed for the call (never dropped here);
    /// `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` is a live weak handle.
    pub(crate) unsafe fn borrow(
        p: *const Self,
    ) -> Option<ManuallyDrop<WeakIntrusivePtr<StorageImpl>>> {
        if p.is_null() {
            return None;
        }
        not_freed(p);
        // SAFETY: a live weak reference (or, the caller's bug, a box the object-block
        // cache keeps, still ours: its count word reads 0, stopped here).
        if unsafe { &*Self::rc_box(p) }.no_reference() {
            released_handle(p as *const u8);
        }
        // SAFETY: a live weak reference; ManuallyDrop keeps its unit with the caller.
        Some(ManuallyDrop::new(unsafe {
            WeakIntrusivePtr::from_raw(Self::rc_box(p))
        }))
    }

    /// Takes over the weak reference the caller gives up; `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` came from [`into_raw`](Self::into_raw) and owns one weak reference.
    pub(crate) unsafe fn adopt(p: *mut Self) -> Option<WeakIntrusivePtr<StorageImpl>> {
        if p.is_null() {
            return None;
        }
        not_freed(p);
        // SAFETY: the caller hands over one owned weak reference (its release stops at
        // weak 0, a released handle's box in the cache).
        Some(unsafe { WeakIntrusivePtr::from_raw(Self::rc_box(p)) })
    }

    /// Gives one owned weak reference to C as a handle.
    pub(crate) fn into_raw(w: WeakIntrusivePtr<StorageImpl>) -> *mut Self {
        w.into_raw() as *mut Self
    }
}

/// A C handle type whose pointer is a `Box<Object>` (single owner, no count).
pub(crate) trait BoxHandle: Sized {
    type Object;

    /// Gives the box to C as a handle.
    fn into_raw(b: Box<Self::Object>) -> *mut Self {
        Box::into_raw(b) as *mut Self
    }

    /// The object behind a handle, borrowed for the call; `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` came from [`into_raw`](Self::into_raw) and was not freed.
    unsafe fn borrow<'a>(p: *const Self) -> Option<&'a Self::Object> {
        // SAFETY: NULL or a live Box<Object> (the caller's contract).
        unsafe { (p as *const Self::Object).as_ref() }
    }

    /// Takes the box back (to free it); `None` for NULL.
    ///
    /// # Safety
    /// A non-NULL `p` came from [`into_raw`](Self::into_raw); the caller never uses it again.
    unsafe fn adopt(p: *mut Self) -> Option<Box<Self::Object>> {
        if p.is_null() {
            return None;
        }
        // SAFETY: the pointer Box::into_raw gave out, given back exactly once.
        Some(unsafe { Box::from_raw(p as *mut Self::Object) })
    }
}

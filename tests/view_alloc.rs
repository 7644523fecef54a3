//! Every view of up to 5 dims costs exactly one heap allocation (the TensorImpl), counted
//! from an empty object-block cache (`tensor_empty_cache`; a cached TensorImpl block makes
//! it none): sizes, strides and the intermediate geometry are inline, and the C entry points
//! add none.
//! Driven through the C API; counted with the allocation counter of
//! `tests/support/counting_alloc.rs` (this binary's global allocator), which counts this
//! thread's allocations.

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations_in;
use std::ptr::null_mut;
use tensor::ffi::core::tensor_release;
use tensor::ffi::memory::tensor_empty_cache;
use tensor::ffi::tensor::tensor_arange;
use tensor::ffi::view::*;
use tensor::ffi::{tensor_status_t, tensor_t, TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_OK};

/// Allocations made by `f`, which must succeed with a new tensor in its out-parameter
/// (released afterwards, outside the count).
fn allocations_of(f: impl FnOnce(*mut *mut tensor_t) -> tensor_status_t) -> u64 {
    let mut out = null_mut();
    tensor_empty_cache();
    let (st, n) = allocations_in(|| f(&mut out));
    assert_eq!(st, TENSOR_OK, "the view succeeds");
    assert!(!out.is_null());
    tensor_release(out);
    n
}

fn arange_f32(n: i64) -> *mut tensor_t {
    let mut t = null_mut();
    assert_eq!(tensor_arange(n, TENSOR_FLOAT32, &mut t), TENSOR_OK);
    t
}

/// `f(select(t, 0, 0))`, the intermediate view released before returning.
fn on_select_0_0(
    t: *const tensor_t,
    o: *mut *mut tensor_t,
    f: impl FnOnce(*const tensor_t, *mut *mut tensor_t) -> tensor_status_t,
) -> tensor_status_t {
    let mut s = null_mut();
    let st = tensor_select(t, 0, 0, &mut s);
    if st != TENSOR_OK {
        return st;
    }
    let st = f(s, o);
    tensor_release(s);
    st
}

#[test]
fn each_view_allocates_once() {
    let flat = arange_f32(120);
    let mut t = null_mut();
    assert_eq!(
        tensor_view(flat, [2i64, 3, 4, 5].as_ptr(), 4, &mut t),
        TENSOR_OK
    );
    let t = t as *const tensor_t;
    // errors may allocate their message; not measured
    let mut bad = null_mut();
    assert_ne!(tensor_view(flat, [].as_ptr(), 0, &mut bad), TENSOR_OK);
    assert!(bad.is_null());
    let one_elem = arange_f32(1);
    let mut one = null_mut();
    assert_eq!(tensor_view(one_elem, [].as_ptr(), 0, &mut one), TENSOR_OK);
    let one = one as *const tensor_t;
    type Case<'a> = (
        &'static str,
        Box<dyn Fn(*mut *mut tensor_t) -> tensor_status_t + 'a>,
    );
    let cases: Vec<Case> = vec![
        (
            "view",
            Box::new(|o| tensor_view(t, [6i64, -1, 5].as_ptr(), 3, o)),
        ),
        (
            "view_dtype",
            Box::new(|o| tensor_view_dtype(t, TENSOR_FLOAT16, o)),
        ),
        (
            "as_strided",
            Box::new(|o| {
                let sizes = [2i64, 2, 2, 2, 2];
                let strides = [1i64, 2, 4, 8, 16];
                tensor_as_strided(t, sizes.as_ptr(), strides.as_ptr(), 5, 3, o)
            }),
        ),
        ("transpose", Box::new(|o| tensor_transpose(t, 0, -1, o))),
        ("transpose_2d", Box::new(|o| tensor_transpose_2d(one, o))),
        (
            "permute",
            Box::new(|o| tensor_permute(t, [3i64, 1, 0, 2].as_ptr(), 4, o)),
        ),
        ("movedim", Box::new(|o| tensor_movedim(t, 1, 3, o))),
        (
            "slice",
            Box::new(|o| tensor_slice(t, 2, -3, i64::MAX, 2, o)),
        ),
        ("narrow", Box::new(|o| tensor_narrow(t, 3, 1, 2, o))),
        ("select", Box::new(|o| tensor_select(t, 1, -1, o))),
        ("squeeze", Box::new(|o| tensor_squeeze(t, o))),
        ("squeeze_dim", Box::new(|o| tensor_squeeze_dim(t, 0, o))),
        ("unsqueeze", Box::new(|o| tensor_unsqueeze(t, 2, o))),
        (
            "expand",
            Box::new(|o| {
                on_select_0_0(t, o, |s, o| {
                    tensor_expand(s, [7i64, 3, 4, 5].as_ptr(), 4, o)
                })
            }),
        ),
        (
            "unflatten",
            Box::new(|o| tensor_unflatten(t, 2, [2i64, -1].as_ptr(), 2, o)),
        ),
        ("diagonal", Box::new(|o| tensor_diagonal(t, 1, 2, 3, o))),
        (
            "unfold",
            Box::new(|o| on_select_0_0(t, o, |s, o| tensor_unfold(s, 2, 2, 1, o))),
        ),
        ("alias", Box::new(|o| tensor_alias(t, o))),
        ("detach", Box::new(|o| tensor_detach(t, o))),
    ];
    for (name, f) in &cases {
        // expand and unfold build their input with one select first
        let expected = if matches!(*name, "expand" | "unfold") {
            2
        } else {
            1
        };
        assert_eq!(allocations_of(f), expected, "{name}");
    }
    tensor_release(one as *mut _);
    tensor_release(one_elem);
    tensor_release(t as *mut _);
    tensor_release(flat);
}

#[test]
fn the_c_entry_points_add_no_allocation() {
    let flat = arange_f32(120);
    let mut raw = null_mut();
    assert_eq!(
        tensor_view(flat, [2i64, 3, 4, 5].as_ptr(), 4, &mut raw),
        TENSOR_OK
    );
    tensor_release(flat);
    let raw = raw as *const tensor_t;
    let dims = [3i64, 1, 0, 2];
    for call in 0..2 {
        let n = allocations_of(|out| {
            if call == 0 {
                tensor_permute(raw, dims.as_ptr(), 4, out)
            } else {
                tensor_slice(raw, 2, 1, i64::MAX, 2, out)
            }
        });
        assert_eq!(n, 1, "call {call}");
    }
    tensor_release(raw as *mut _);
}

/// Past 5 dims the sizes and strides take a heap block; for 6 to 8 dims it is one block
/// size kept in the per-thread object-box cache like the TensorImpl's box, so a view whose
/// blocks were freed on this thread before allocates nothing (before: a glibc block per
/// view for the dims). Compared with a 4-dim view measured the same way, so that a run
/// whose caches are off (a memory checker, `TENSOR_NO_CACHING`) compares like with like.
#[test]
fn views_past_five_dims_reuse_their_dims_block() {
    let flat = arange_f32(256);
    let warm = |f: &dyn Fn(*mut *mut tensor_t) -> tensor_status_t| -> u64 {
        tensor_empty_cache();
        let mut first = null_mut();
        assert_eq!(f(&mut first), TENSOR_OK);
        tensor_release(first); // its blocks go to this thread's cache
        let mut out = null_mut();
        let (st, n) = allocations_in(|| f(&mut out));
        assert_eq!(st, TENSOR_OK);
        tensor_release(out);
        n
    };
    let mut t4 = null_mut();
    assert_eq!(
        tensor_view(flat, [4i64, 4, 4, 4].as_ptr(), 4, &mut t4),
        TENSOR_OK
    );
    let baseline = warm(&|o| tensor_transpose(t4, 0, 1, o));
    for nd in 6..=8i64 {
        let sizes = vec![2i64; nd as usize];
        let src = arange_f32(1 << nd);
        let mut t = null_mut();
        assert_eq!(tensor_view(src, sizes.as_ptr(), nd, &mut t), TENSOR_OK);
        tensor_release(src);
        let n = warm(&|o| tensor_transpose(t, 0, -1, o));
        assert_eq!(
            n, baseline,
            "{nd} dims: as many allocations as a 4-dim view"
        );
        tensor_release(t);
    }
    tensor_release(t4);
    tensor_release(flat);
}

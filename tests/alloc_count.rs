//! Layout property: building a view of a tensor with <= 5 dims makes exactly one heap
//! allocation (the TensorImpl) when the thread's object-block cache is empty
//! (`tensor_empty_cache`), none when a released TensorImpl's block is cached, and
//! retain/release make none. Driven through the C API; counted with the allocation counter
//! of `tests/support/counting_alloc.rs` (this binary's global allocator), which tallies
//! this thread's allocations.

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations_in;
use std::ptr::null_mut;
use tensor::ffi::core::{tensor_release, tensor_retain};
use tensor::ffi::memory::tensor_empty_cache;
use tensor::ffi::tensor::{tensor_ndim, tensor_zeros};
use tensor::ffi::view::{tensor_alias, tensor_view};
use tensor::ffi::{
    tensor_dtype_t, tensor_status_t, tensor_t, TENSOR_FLOAT32, TENSOR_OK, TENSOR_UINT8,
};

fn zeros(sizes: &[i64], dtype: tensor_dtype_t) -> *mut tensor_t {
    let mut t = null_mut();
    let st = tensor_zeros(sizes.as_ptr(), sizes.len() as i64, dtype, &mut t);
    assert_eq!(st, TENSOR_OK);
    t
}

/// Allocations made by `tensor_alias(t)` (a view with `t`'s own sizes, strides and
/// offset) and the release of the view it returns, from an empty object-block cache.
fn alias_allocations(t: *const tensor_t) -> u64 {
    tensor_empty_cache();
    let (st, n) = warm_alias_allocations(t);
    assert_eq!(st, TENSOR_OK);
    n
}

/// As `alias_allocations`, with the cache as it is.
fn warm_alias_allocations(t: *const tensor_t) -> (tensor_status_t, u64) {
    allocations_in(|| {
        let mut v = null_mut();
        let st = tensor_alias(t, &mut v);
        tensor_release(v);
        st
    })
}

#[test]
fn one_allocation_per_view_up_to_five_dims() {
    for nd in 0..=5usize {
        let sizes: Vec<i64> = (0..nd as i64).map(|d| d + 2).collect();
        let t = zeros(&sizes, TENSOR_FLOAT32);
        assert_eq!(tensor_ndim(t), nd as i64);
        assert_eq!(alias_allocations(t), 1, "{nd}-dim view");
        // The view just released left its block in the cache: the next view reuses it.
        assert_eq!(
            warm_alias_allocations(t),
            (TENSOR_OK, 0),
            "{nd}-dim view, warm"
        );
        tensor_empty_cache();
        let (st, n) = allocations_in(|| {
            let mut v = null_mut();
            let st = tensor_view(t, [-1i64].as_ptr(), 1, &mut v);
            tensor_release(v);
            st
        });
        assert_eq!(st, TENSOR_OK);
        assert_eq!(n, 1, "{nd}-dim view(-1)");
        tensor_release(t);
    }
}

#[test]
fn retain_release_do_not_allocate() {
    let t = zeros(&[3, 4], TENSOR_FLOAT32);
    let (r, n) = allocations_in(|| {
        let c = tensor_retain(t);
        tensor_release(c);
        c
    });
    assert_eq!(r, t, "retain returns the same handle");
    assert_eq!(n, 0);
    tensor_release(t);
}

#[test]
fn more_than_five_dims_spill_once() {
    let sizes = [2i64; 6];
    let t = zeros(&sizes, TENSOR_UINT8);
    assert_eq!(tensor_ndim(t), 6);
    assert_eq!(
        alias_allocations(t),
        2,
        "TensorImpl + spilled sizes/strides"
    );
    tensor_release(t);
}

//! Layout property: building a view of a tensor with <= 5 dims makes exactly one heap
//! allocation (the TensorImpl), and retain/release make none. Counted with a global
//! allocator that tallies this thread's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tensor::{DType, Tensor};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(|c| c.get());
    f();
    ALLOCS.with(|c| c.get()) - before
}

#[test]
fn one_allocation_per_view_up_to_five_dims() {
    for nd in 0..=5usize {
        let sizes: Vec<i64> = (0..nd as i64).map(|d| d + 2).collect();
        let t = Tensor::zeros(&sizes, DType::F32).unwrap();
        let strides = t.strides().to_vec();
        let n = allocations_in(|| {
            let v = t.make_view(&sizes, &strides, 0).unwrap();
            drop(v);
        });
        assert_eq!(n, 1, "{nd}-dim view");
        let n = allocations_in(|| {
            let v = t.view(&[-1]).unwrap();
            drop(v);
        });
        assert_eq!(n, 1, "{nd}-dim view(-1)");
    }
}

#[test]
fn retain_release_do_not_allocate() {
    let t = Tensor::zeros(&[3, 4], DType::F32).unwrap();
    let n = allocations_in(|| {
        let c = t.clone();
        drop(c);
    });
    assert_eq!(n, 0);
}

#[test]
fn more_than_five_dims_spill_once() {
    let sizes = [2i64; 6];
    let t = Tensor::zeros(&sizes, DType::U8).unwrap();
    let strides = t.strides().to_vec();
    let n = allocations_in(|| drop(t.make_view(&sizes, &strides, 0).unwrap()));
    assert_eq!(n, 2, "TensorImpl + spilled sizes/strides");
}

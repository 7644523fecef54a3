//! Every view of up to 5 dims costs exactly one heap allocation (the TensorImpl): sizes,
//! strides and the intermediate geometry are inline. Counted with a global allocator that
//! counts this thread's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tensor::dtype::DType;
use tensor::{Result, Tensor};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_of(f: impl FnOnce() -> Result<Tensor>) -> u64 {
    let before = ALLOCATIONS.with(|c| c.get());
    let t = f().expect("the view succeeds");
    let after = ALLOCATIONS.with(|c| c.get());
    drop(t);
    after - before
}

#[test]
fn each_view_allocates_once() {
    let flat = Tensor::arange(120, DType::F32).unwrap();
    let t = flat.view(&[2, 3, 4, 5]).unwrap();
    let s = flat.view(&[]).err(); // errors may allocate their message; not measured
    assert!(s.is_some());
    let one = Tensor::arange(1, DType::F32).unwrap().view(&[]).unwrap();
    type Case<'a> = (&'static str, Box<dyn Fn() -> Result<Tensor> + 'a>);
    let cases: Vec<Case> = vec![
        ("view", Box::new(|| t.view(&[6, -1, 5]))),
        ("view_dtype", Box::new(|| t.view_dtype(DType::F16))),
        (
            "as_strided",
            Box::new(|| t.as_strided(&[2, 2, 2, 2, 2], &[1, 2, 4, 8, 16], 3)),
        ),
        ("transpose", Box::new(|| t.transpose(0, -1))),
        ("transpose_2d", Box::new(|| one.transpose_2d())),
        ("permute", Box::new(|| t.permute(&[3, 1, 0, 2]))),
        ("movedim", Box::new(|| t.movedim(1, 3))),
        ("slice", Box::new(|| t.slice(2, -3, i64::MAX, 2))),
        ("narrow", Box::new(|| t.narrow(3, 1, 2))),
        ("select", Box::new(|| t.select(1, -1))),
        ("squeeze", Box::new(|| t.squeeze())),
        ("squeeze_dim", Box::new(|| t.squeeze_dim(0))),
        ("unsqueeze", Box::new(|| t.unsqueeze(2))),
        ("expand", Box::new(|| t.select(0, 0)?.expand(&[7, 3, 4, 5]))),
        ("unflatten", Box::new(|| t.unflatten(2, &[2, -1]))),
        ("diagonal", Box::new(|| t.diagonal(1, 2, 3))),
        ("unfold", Box::new(|| t.select(0, 0)?.unfold(2, 2, 1))),
        ("alias", Box::new(|| t.alias())),
        ("detach", Box::new(|| t.detach())),
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
}

#[test]
fn the_c_entry_points_add_no_allocation() {
    use tensor::ffi::core::tensor_release;
    use tensor::ffi::tensor::tensor_arange;
    use tensor::ffi::view::{tensor_permute, tensor_slice, tensor_view};
    use tensor::ffi::{tensor_t, TENSOR_FLOAT32, TENSOR_OK};
    let mut flat: *mut tensor_t = std::ptr::null_mut();
    assert_eq!(tensor_arange(120, TENSOR_FLOAT32, &mut flat), TENSOR_OK);
    let mut raw: *mut tensor_t = std::ptr::null_mut();
    let shape = [2i64, 3, 4, 5];
    assert_eq!(tensor_view(flat, shape.as_ptr(), 4, &mut raw), TENSOR_OK);
    tensor_release(flat);
    let dims = [3i64, 1, 0, 2];
    for call in 0..2 {
        let mut out: *mut tensor_t = std::ptr::null_mut();
        let before = ALLOCATIONS.with(|c| c.get());
        let st = if call == 0 {
            tensor_permute(raw, dims.as_ptr(), 4, &mut out)
        } else {
            tensor_slice(raw, 2, 1, i64::MAX, 2, &mut out)
        };
        let after = ALLOCATIONS.with(|c| c.get());
        assert_eq!(st, TENSOR_OK);
        assert_eq!(after - before, 1, "call {call}");
        tensor_release(out);
    }
    tensor_release(raw);
}

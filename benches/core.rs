//! Handle costs through the exported C functions (the same code the .so runs), each
//! reported next to a `malloc(160)`/`free` pair measured in the same run:
//! retain+release, tensor over an existing storage (the core of every view) + release,
//! from_blob + release. Ratios are what BENCHMARKS.md records.
//!
//! The `views` group: each view op of docs/c-api.md, "Views" on a 4-D float32 input
//! (8x16x32x32, contiguous) plus `tensor_release` of the result, next to the same
//! `malloc(160)`/`free` reference measured in that group.

use criterion::measurement::WallTime;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion};
use std::ffi::c_void;
use tensor::ffi::core::{tensor_release, tensor_retain};
use tensor::ffi::tensor::{tensor_empty, tensor_from_blob, tensor_from_storage, tensor_storage};
use tensor::ffi::view::{
    tensor_expand, tensor_permute, tensor_select, tensor_slice, tensor_transpose, tensor_unsqueeze,
    tensor_view,
};
use tensor::ffi::{tensor_device_t, tensor_t, TENSOR_FLOAT32};

fn handles(c: &mut Criterion) {
    let mut g = c.benchmark_group("handles");
    malloc_free_pair(&mut g);

    let sizes = [2i64, 3, 4, 5];
    let mut t: *mut tensor_t = std::ptr::null_mut();
    assert_eq!(tensor_empty(sizes.as_ptr(), 4, TENSOR_FLOAT32, &mut t).0, 0);

    g.bench_function("retain_release", |b| {
        b.iter(|| {
            let r = tensor_retain(black_box(t));
            tensor_release(black_box(r));
        })
    });

    let storage = tensor_storage(t);
    let strides = [60i64, 20, 5, 1];
    g.bench_function("from_storage_release", |b| {
        b.iter(|| {
            let mut v: *mut tensor_t = std::ptr::null_mut();
            tensor_from_storage(
                storage,
                0,
                sizes.as_ptr(),
                strides.as_ptr(),
                4,
                TENSOR_FLOAT32,
                &mut v,
            );
            tensor_release(black_box(v));
        })
    });

    let mut buf = vec![0f32; 120];
    let cpu = tensor_device_t {
        device_type: 1,
        device_id: 0,
    };
    g.bench_function("from_blob_release", |b| {
        b.iter(|| {
            let mut v: *mut tensor_t = std::ptr::null_mut();
            tensor_from_blob(
                buf.as_mut_ptr() as *mut c_void,
                sizes.as_ptr(),
                std::ptr::null(),
                4,
                TENSOR_FLOAT32,
                cpu,
                None,
                std::ptr::null_mut(),
                &mut v,
            );
            tensor_release(black_box(v));
        })
    });
    g.finish();
    tensor_release(t);
}

/// The reference: one `malloc(160)`/`free` pair (PyTorch's TensorImpl is 176 bytes).
fn malloc_free_pair(c: &mut BenchmarkGroup<'_, WallTime>) {
    c.bench_function("malloc160_free", |b| {
        // SAFETY: a malloc'd block (or NULL) freed once.
        b.iter(|| unsafe {
            let p = libc::malloc(black_box(160));
            libc::free(black_box(p));
        })
    });
}

/// Benchmarks `op` (which must produce a view of `t` in `*out` with status 0) + release.
fn view_bench(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    t: *mut tensor_t,
    op: impl Fn(*const tensor_t, *mut *mut tensor_t) -> i32,
) {
    // The op must succeed, or the numbers measure the error path.
    let mut v: *mut tensor_t = std::ptr::null_mut();
    assert_eq!(op(t, &mut v), 0, "{name} failed");
    tensor_release(v);
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut v: *mut tensor_t = std::ptr::null_mut();
            op(black_box(t), &mut v);
            tensor_release(black_box(v));
        })
    });
}

fn views(c: &mut Criterion) {
    let mut g = c.benchmark_group("views");
    malloc_free_pair(&mut g);

    let sizes = [8i64, 16, 32, 32];
    let mut t: *mut tensor_t = std::ptr::null_mut();
    assert_eq!(tensor_empty(sizes.as_ptr(), 4, TENSOR_FLOAT32, &mut t).0, 0);

    let flat = [-1i64];
    view_bench(&mut g, "view_flat", t, |s, o| {
        tensor_view(s, flat.as_ptr(), 1, o).0
    });
    view_bench(&mut g, "transpose_1_3", t, |s, o| {
        tensor_transpose(s, black_box(1), black_box(3), o).0
    });
    view_bench(&mut g, "slice_2_4_20_2", t, |s, o| {
        tensor_slice(
            s,
            black_box(2),
            black_box(4),
            black_box(20),
            black_box(2),
            o,
        )
        .0
    });
    view_bench(&mut g, "select_1_5", t, |s, o| {
        tensor_select(s, black_box(1), black_box(5), o).0
    });
    view_bench(&mut g, "unsqueeze_2", t, |s, o| {
        tensor_unsqueeze(s, black_box(2), o).0
    });
    // Expand needs a size-1 dim: expand a [8,1,32,32] view to [8,16,32,32].
    let one = [8i64, 1, 32, 32];
    let mut base: *mut tensor_t = std::ptr::null_mut();
    assert_eq!(
        tensor_empty(one.as_ptr(), 4, TENSOR_FLOAT32, &mut base).0,
        0
    );
    view_bench(&mut g, "expand_8x16x32x32", base, |s, o| {
        tensor_expand(s, sizes.as_ptr(), 4, o).0
    });
    let perm = [0i64, 2, 3, 1];
    view_bench(&mut g, "permute_0231", t, |s, o| {
        tensor_permute(s, perm.as_ptr(), 4, o).0
    });
    g.finish();
    tensor_release(base);
    tensor_release(t);
}

criterion_group!(benches, handles, views);
criterion_main!(benches);

//! Handle costs through the exported C functions (the same code the .so runs), each
//! reported next to a `malloc(160)`/`free` pair measured in the same run:
//! retain+release, tensor over an existing storage (the core of every view) + release,
//! from_blob + release. Ratios are what BENCHMARKS.md records.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::ffi::c_void;
use tensor::ffi::core::{tensor_release, tensor_retain};
use tensor::ffi::tensor::{tensor_empty, tensor_from_blob, tensor_from_storage, tensor_storage};
use tensor::ffi::{tensor_device_t, tensor_t, TENSOR_FLOAT32};

fn handles(c: &mut Criterion) {
    let mut g = c.benchmark_group("handles");
    g.bench_function("malloc160_free", |b| {
        b.iter(|| unsafe {
            let p = libc::malloc(black_box(160));
            libc::free(black_box(p));
        })
    });

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

criterion_group!(benches, handles);
criterion_main!(benches);

//! Data-movement benchmarks (single thread): every target row of the data-movement issue,
//! each next to `memcpy` of the same bytes into an already-touched buffer, in the same run
//! (ratio = memcpy time / op time). Ops are measured as a user calls them, through the
//! exported C functions (the same code the .so runs): the output allocation and its
//! release are inside the timed region.
//!
//! Each row registers two benchmarks, `<row>/op` and `<row>/memcpy`, that run the *same*
//! alternating loop (memcpy, op, memcpy, op, ...) and time one side each, so both see the
//! same machine conditions (this machine is shared) and their ratio is stable.
//!
//! `cargo bench -p tensor-bench --bench copy`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::ptr::null_mut;
use std::time::{Duration, Instant};
use tensor::ffi::copy::{tensor_clone, tensor_contiguous, tensor_fill_f64_, tensor_to_dtype};
use tensor::ffi::core::tensor_release;
use tensor::ffi::tensor::{tensor_full, tensor_nbytes};
use tensor::ffi::view::tensor_as_strided;
use tensor::ffi::{
    tensor_dtype_t, tensor_memory_format_t, tensor_status_t, tensor_t, TENSOR_BFLOAT16,
    TENSOR_CHANNELS_LAST, TENSOR_CONTIGUOUS_FORMAT, TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_OK,
    TENSOR_PRESERVE_FORMAT,
};

fn ones(sizes: &[i64]) -> *mut tensor_t {
    let mut t = null_mut();
    let st = tensor_full(
        sizes.as_ptr(),
        sizes.len() as i64,
        TENSOR_FLOAT32,
        1.5,
        &mut t,
    );
    assert_eq!(st, TENSOR_OK);
    t
}

/// Runs a call that returns a new tensor in its out-parameter, then releases that tensor
/// (both timed, as a user pays for both).
fn op_release(f: impl FnOnce(*mut *mut tensor_t) -> tensor_status_t) {
    let mut out = null_mut();
    let st = f(&mut out);
    // The op must succeed, or the numbers measure the error path.
    assert_eq!(st, TENSOR_OK);
    tensor_release(black_box(out));
}

fn contiguous(t: *const tensor_t, fmt: tensor_memory_format_t) {
    op_release(|o| tensor_contiguous(t, fmt, o));
}

fn to_dtype(t: *const tensor_t, dtype: tensor_dtype_t) {
    op_release(|o| tensor_to_dtype(t, dtype, o));
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Registers `<name>/op` and `<name>/memcpy` (memcpy of `bytes` between two touched
/// buffers), both timed from one alternating loop.
fn row(g: &mut Group<'_>, name: &str, bytes: usize, mut op: impl FnMut()) {
    let src = vec![1u8; bytes];
    let mut dst = vec![2u8; bytes];
    g.throughput(Throughput::Bytes(bytes as u64));
    for timed_op in [true, false] {
        let id = format!("{name}/{}", if timed_op { "op" } else { "memcpy" });
        g.bench_function(id.as_str(), |b| {
            b.iter_custom(|iters| {
                let (mut t_op, mut t_mc) = (Duration::ZERO, Duration::ZERO);
                for _ in 0..iters {
                    let t0 = Instant::now();
                    dst.copy_from_slice(black_box(&src));
                    black_box(&dst);
                    t_mc += t0.elapsed();
                    let t0 = Instant::now();
                    op();
                    t_op += t0.elapsed();
                }
                if timed_op {
                    t_op
                } else {
                    t_mc
                }
            })
        });
    }
}

fn data_movement(c: &mut Criterion) {
    let mut g = c.benchmark_group("data_movement");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));

    let a = ones(&[4096, 4096]);
    row(&mut g, "clone_4096x4096", tensor_nbytes(a), || {
        op_release(|o| tensor_clone(a, TENSOR_PRESERVE_FORMAT, o));
    });
    let mut t = null_mut();
    let st = tensor_as_strided(
        a,
        [4096i64, 4096].as_ptr(),
        [1i64, 4096].as_ptr(),
        2,
        0,
        &mut t,
    );
    assert_eq!(st, TENSOR_OK);
    row(
        &mut g,
        "contiguous_transposed_4096x4096",
        tensor_nbytes(a),
        || contiguous(t, TENSOR_CONTIGUOUS_FORMAT),
    );

    for sizes in [[32i64, 64, 56, 56], [8, 3, 224, 224]] {
        let x = ones(&sizes);
        let name = format!(
            "channels_last_{}x{}x{}x{}",
            sizes[0], sizes[1], sizes[2], sizes[3]
        );
        row(&mut g, &name, tensor_nbytes(x), || {
            contiguous(x, TENSOR_CHANNELS_LAST)
        });
        tensor_release(x);
    }

    // conversions and fill: against memcpy of the f32 source bytes
    let f = ones(&[16 << 20]);
    row(&mut g, "to_bf16_16M", tensor_nbytes(f), || {
        to_dtype(f, TENSOR_BFLOAT16)
    });
    row(&mut g, "to_f16_16M", tensor_nbytes(f), || {
        to_dtype(f, TENSOR_FLOAT16)
    });
    row(&mut g, "fill_16M", tensor_nbytes(f), || {
        assert_eq!(tensor_fill_f64_(f, black_box(2.0)), TENSOR_OK)
    });
    tensor_release(f);
    tensor_release(t);
    tensor_release(a);
    g.finish();
}

criterion_group!(benches, data_movement);
criterion_main!(benches);

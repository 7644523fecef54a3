//! Data-movement benchmarks (single thread): every target row of the data-movement issue,
//! each next to `memcpy` of the same bytes into an already-touched buffer, in the same run
//! (ratio = memcpy time / op time). Ops are measured as a user calls them: the output
//! allocation and its release are inside the timed closure.
//!
//! `cargo bench --bench copy`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use tensor::{DType, MemoryFormat, Scalar, Tensor};

fn ones(sizes: &[i64]) -> Tensor {
    Tensor::full(sizes, DType::F32, Scalar::Float(1.5)).unwrap()
}

/// memcpy of `n` bytes between two touched buffers, as the baseline of a row.
fn memcpy_baseline(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    row: &str,
    n: usize,
) {
    let src = vec![1u8; n];
    let mut dst = vec![2u8; n];
    c.bench_function(BenchmarkId::new("memcpy", format!("{row}_{n}B")), |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
}

fn data_movement(c: &mut Criterion) {
    let mut g = c.benchmark_group("data_movement");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // clone of a contiguous 4096x4096 f32
    let a = ones(&[4096, 4096]);
    let bytes = a.nbytes();
    g.throughput(Throughput::Bytes(bytes as u64));
    memcpy_baseline(&mut g, "4096x4096", bytes);
    g.bench_function("clone_4096x4096", |b| {
        b.iter(|| black_box(a.clone_tensor(MemoryFormat::Preserve).unwrap()))
    });

    // contiguous() of the transposed 4096x4096 f32
    let t = a.make_view(&[4096, 4096], &[1, 4096], 0).unwrap();
    g.bench_function("contiguous_transposed_4096x4096", |b| {
        b.iter(|| black_box(t.contiguous(MemoryFormat::Contiguous).unwrap()))
    });

    // NCHW -> NHWC
    for sizes in [[32i64, 64, 56, 56], [8, 3, 224, 224]] {
        let x = ones(&sizes);
        g.throughput(Throughput::Bytes(x.nbytes() as u64));
        let shape = format!("{}x{}x{}x{}", sizes[0], sizes[1], sizes[2], sizes[3]);
        memcpy_baseline(&mut g, &shape, x.nbytes());
        let name = format!("channels_last_{shape}");
        g.bench_function(name.as_str(), |b| {
            b.iter(|| black_box(x.contiguous(MemoryFormat::ChannelsLast).unwrap()))
        });
    }

    // f32 -> bf16 / f16 of 16M elements, and fill in place (vs memcpy of the f32 bytes)
    let f = ones(&[16 << 20]);
    g.throughput(Throughput::Bytes(f.nbytes() as u64));
    memcpy_baseline(&mut g, "16M_f32", f.nbytes());
    g.bench_function("to_bf16_16M", |b| {
        b.iter(|| black_box(f.to_dtype(DType::BF16).unwrap()))
    });
    g.bench_function("to_f16_16M", |b| {
        b.iter(|| black_box(f.to_dtype(DType::F16).unwrap()))
    });
    g.bench_function("fill_16M", |b| {
        b.iter(|| f.fill_(Scalar::Float(black_box(2.0))).unwrap())
    });
    g.finish();
}

criterion_group!(benches, data_movement);
criterion_main!(benches);

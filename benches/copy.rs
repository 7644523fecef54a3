//! Data-movement benchmarks (single thread): every target row of the data-movement issue,
//! each next to `memcpy` of the same bytes into an already-touched buffer, in the same run
//! (ratio = memcpy time / op time). Ops are measured as a user calls them: the output
//! allocation and its release are inside the timed region.
//!
//! Each row registers two benchmarks, `<row>/op` and `<row>/memcpy`, that run the *same*
//! alternating loop (memcpy, op, memcpy, op, ...) and time one side each, so both see the
//! same machine conditions (this machine is shared) and their ratio is stable.
//!
//! `cargo bench --bench copy`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::{Duration, Instant};
use tensor::{DType, MemoryFormat, Scalar, Tensor};

fn ones(sizes: &[i64]) -> Tensor {
    Tensor::full(sizes, DType::F32, Scalar::Float(1.5)).unwrap()
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
    row(&mut g, "clone_4096x4096", a.nbytes(), || {
        black_box(a.clone_tensor(MemoryFormat::Preserve).unwrap());
    });
    let t = a.make_view(&[4096, 4096], &[1, 4096], 0).unwrap();
    row(
        &mut g,
        "contiguous_transposed_4096x4096",
        a.nbytes(),
        || {
            black_box(t.contiguous(MemoryFormat::Contiguous).unwrap());
        },
    );

    for sizes in [[32i64, 64, 56, 56], [8, 3, 224, 224]] {
        let x = ones(&sizes);
        let name = format!(
            "channels_last_{}x{}x{}x{}",
            sizes[0], sizes[1], sizes[2], sizes[3]
        );
        row(&mut g, &name, x.nbytes(), || {
            black_box(x.contiguous(MemoryFormat::ChannelsLast).unwrap());
        });
    }

    // conversions and fill: against memcpy of the f32 source bytes
    let f = ones(&[16 << 20]);
    row(&mut g, "to_bf16_16M", f.nbytes(), || {
        black_box(f.to_dtype(DType::BF16).unwrap());
    });
    row(&mut g, "to_f16_16M", f.nbytes(), || {
        black_box(f.to_dtype(DType::F16).unwrap());
    });
    row(&mut g, "fill_16M", f.nbytes(), || {
        f.fill_(Scalar::Float(black_box(2.0))).unwrap()
    });
    g.finish();
}

criterion_group!(benches, data_movement);
criterion_main!(benches);

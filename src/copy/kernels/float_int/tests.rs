use super::base::{cast_loop, from_half, SatCast};
use super::float_to_int;
use crate::dtype::Element;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

fn interesting_f64() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.999,
        -0.999,
        1.0,
        -1.0,
        127.9,
        128.0,
        -128.9,
        -129.0,
        255.5,
        256.0,
        32767.9,
        32768.0,
        -32768.9,
        -32769.0,
        65535.9,
        65536.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
    ];
    for e in [31, 32, 63, 64] {
        let p = 2f64.powi(e);
        v.extend([
            p,
            -p,
            p - 1.0,
            -p - 1.0,
            p - 1024.0,
            -p + 1024.0,
            p + 4096.0,
        ]);
        v.push(f32::from_bits((p as f32).to_bits() - 1) as f64);
        v.push(-(f32::from_bits((p as f32).to_bits() - 1) as f64));
    }
    // The 64-bit kernel's edges: exponents where its shifts change direction (2^52,
    // 2^53) and where it saturates (2^63, 2^64), each with its neighbours; f64 and f32
    // subnormals; NaN payloads (signalling, negative, quiet with bits).
    for e in [52, 53, 62, 63, 64, 65] {
        let p = 2f64.powi(e);
        let up = f64::from_bits(p.to_bits() + 1);
        let down = f64::from_bits(p.to_bits() - 1);
        v.extend([up, down, -up, -down, down + 0.5, p + 0.5, -(p - 0.5)]);
    }
    v.extend([
        4503599627370495.5,
        -4503599627370495.5,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::from_bits(0x000F_FFFF_FFFF_FFFF),
        f32::from_bits(1) as f64,
        f64::from_bits(0x7FF0_0000_0000_0001),
        f64::from_bits(0xFFF0_0000_0000_0001),
        f64::from_bits(0x7FF8_0000_DEAD_BEEF),
        f64::from_bits(0xFFFF_FFFF_FFFF_FFFF),
    ]);
    let mut x = 0x2545F4914F6CDD1Du64;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mag = 2f64.powi((x % 70) as i32);
        v.push((x as i64 as f64 / i64::MAX as f64) * mag);
    }
    v
}

/// Asserts that `out` is `src` item by item by the dtype rule.
fn assert_rule<S: Element + Copy, D: Element + PartialEq + std::fmt::Debug>(src: &[S], out: &[D]) {
    assert_eq!(src.len(), out.len());
    for (i, &x) in src.iter().enumerate() {
        let want = D::from_scalar(x.to_scalar());
        assert_eq!(out[i], want, "{:?} of {:?}", D::DTYPE, x.to_scalar());
    }
}

/// Converts `src` with `float_to_int` into a buffer `skew` items past its start (the
/// output alignments a streaming kernel must handle), `stream` as for a big output.
fn check<S: Element + Copy, D: Element + PartialEq + std::fmt::Debug>(
    src: &[S],
    skew: usize,
    stream: bool,
) {
    // Prefilled with a value most items do not convert to: a skipped item shows.
    let mut buf = vec![D::from_scalar(crate::dtype::Scalar::Int(77)); skew + src.len()];
    let out = &mut buf[skew..];
    let ok = float_to_int::<S, D>(out, src, stream);
    assert!(ok);
    assert_rule(src, out);
}

fn all_ints<S: Element + Copy>(src: &[S], skew: usize, stream: bool) {
    check::<S, u8>(src, skew, stream);
    check::<S, i8>(src, skew, stream);
    check::<S, i16>(src, skew, stream);
    check::<S, u16>(src, skew, stream);
    check::<S, i32>(src, skew, stream);
    check::<S, u32>(src, skew, stream);
    check::<S, i64>(src, skew, stream);
    check::<S, u64>(src, skew, stream);
}

/// Every 16-bit pattern as f16 and as bf16.
fn all_halves() -> (Vec<f16>, Vec<bf16>) {
    (
        (0..=u16::MAX).map(f16::from_bits).collect(),
        (0..=u16::MAX).map(bf16::from_bits).collect(),
    )
}

// Minutes under Miri: `every_pair_on_a_sample_equals_the_dtype_rule` is its Miri-sized
// sample.
#[cfg_attr(miri, ignore)]
#[test]
fn every_float_int_pair_equals_the_dtype_rule() {
    let v = interesting_f64();
    all_ints::<f64>(&v, 0, false);
    let mut f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    // f32 bit patterns `as f32` does not give: NaN payloads, the largest subnormal.
    f.extend([0x7F80_0001, 0xFF80_0001, 0x7FC0_BEEF, 0x007F_FFFF].map(f32::from_bits));
    all_ints::<f32>(&f, 0, false);
    // Sub-runs with tails (the 64-bit kernel converts 4 items per step) and output
    // offsets, with both store kinds (runs over 16 KiB of output stream).
    for (start, skew, end, stream) in [(3, 1, 7, true), (1, 3, 2, false), (0, 2, 3, true)] {
        all_ints::<f64>(&v[start..v.len() - end], skew, stream);
        all_ints::<f32>(&f[start..f.len() - end], skew, stream);
    }
    // Every 16-bit pattern, over more than one chunk; then sub-runs with tails (the
    // direct kernel converts 16 or 32 items per step) and output offsets (streaming
    // stores start after a scalar head up to 32-byte alignment), with both store kinds,
    // of the patterns rotated to start at 0x4A00 (f16 12.0, bf16 2^21): the heads and
    // tails hold numbers, mostly in or past every integer range, not zeros and NaNs.
    let (mut h, mut b) = all_halves();
    all_ints::<f16>(&h, 0, false);
    all_ints::<bf16>(&b, 0, false);
    h.rotate_left(0x4A00);
    b.rotate_left(0x4A00);
    let l = h.len();
    for (start, skew, end, stream) in [
        (0, 0, l, true),
        (3, 1, l - 7, true),
        (1, 5, l - 29, false),
        (17, 3, l, true),
        (0, 9, l - 31, true),
        (5, 2, 40, true),
    ] {
        all_ints::<f16>(&h[start..end], skew, stream);
        all_ints::<bf16>(&b[start..end], skew, stream);
    }
    // not float -> int: not this path (which returns before touching memory)
    assert!(!float_to_int::<i32, u8>(
        &mut [0u8; 3],
        &[1i32, 2, 3],
        false
    ));
    assert!(!float_to_int::<f32, f64>(
        &mut [0f64; 2],
        &[1f32, 2.0],
        false
    ));
}

/// Every pair through the dispatch on a sample of the values above, at two output
/// offsets (runs too short to stream): small enough for Miri, which runs the baseline loops (it reports
/// no AVX2), this CPU's kernels otherwise.
#[test]
fn every_pair_on_a_sample_equals_the_dtype_rule() {
    let v: Vec<f64> = interesting_f64().into_iter().step_by(23).collect();
    let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    let (h, b) = all_halves();
    let h: Vec<f16> = h.into_iter().step_by(331).collect();
    let b: Vec<bf16> = b.into_iter().step_by(331).collect();
    for skew in [0, 3] {
        all_ints::<f64>(&v, skew, false);
        all_ints::<f32>(&f, skew, false);
        all_ints::<f16>(&h, skew, false);
        all_ints::<bf16>(&b, skew, false);
    }
}

#[test]
fn baseline_float_loops_equal_the_dtype_rule() {
    // This CPU runs the 64-bit kernel for f32 / f64 -> i64 / u64; the loop other CPUs
    // run (and, compiled for AVX2, this one for the narrower types) is cast_loop.
    fn base<F, I>(src: &[F])
    where
        F: Element + Copy + SatCast<I>,
        I: Element + Default + PartialEq + std::fmt::Debug,
    {
        let mut out = vec![I::default(); src.len()];
        cast_loop(&mut out, src);
        assert_rule(src, &out);
    }
    let v = interesting_f64();
    let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    base::<f64, i64>(&v);
    base::<f64, u64>(&v);
    base::<f32, i64>(&f);
    base::<f32, u64>(&f);
}

#[test]
fn baseline_half_loops_equal_the_dtype_rule() {
    // This CPU may run the AVX2 + F16C loops above; these are the ones other CPUs run.
    fn base<I: Element + Default + PartialEq + std::fmt::Debug>(h: &[f16], b: &[bf16])
    where
        f32: SatCast<I>,
    {
        let mut out = vec![I::default(); h.len()];
        from_half::<true, I>(&mut out, h.reinterpret_cast());
        assert_rule(h, &out);
        let mut out = vec![I::default(); b.len()];
        from_half::<false, I>(&mut out, b.reinterpret_cast());
        assert_rule(b, &out);
    }
    let (h, b) = all_halves();
    base::<u8>(&h, &b);
    base::<i8>(&h, &b);
    base::<i16>(&h, &b);
    base::<u16>(&h, &b);
    base::<i32>(&h, &b);
    base::<u32>(&h, &b);
    base::<i64>(&h, &b);
    base::<u64>(&h, &b);
}

//! Converting copies `S -> D` through dtype.rs's rule, with fast paths for contiguous
//! aligned runs: f32 <-> f16 / bf16 here, float32 / bfloat16 <-> float8 in `float8.rs`,
//! float -> integer in `float_int/`. Tests check every fast path bit for bit against the
//! per-item rule.

use super::{float_int, same, same_mut, Kernel};
use crate::dtype::Element;
use half::{bf16, f16};
use std::mem::size_of;

/// Converting copy `S -> D` through dtype.rs's rule (`D::from_scalar(s.to_scalar())`),
/// with vectorised slice paths for f32 <-> f16 / bf16 that tests check bit-for-bit against
/// the rule.
pub(crate) struct Convert<S, D> {
    /// The output is far bigger than the caches: contiguous kernels may stream their stores.
    stream: bool,
    _t: std::marker::PhantomData<(S, D)>,
}

impl<S, D> Convert<S, D> {
    /// `stream`: the write step's streaming choice for the whole destination.
    pub fn new(stream: bool) -> Self {
        Convert {
            stream,
            _t: std::marker::PhantomData,
        }
    }
}

#[inline(always)]
fn convert<S: Element, D: Element>(x: S) -> D {
    D::from_scalar(x.to_scalar())
}

/// f32 -> bf16, round to nearest even, NaN kept quiet with its top payload bits: the same
/// bits as `bf16::from_f32` (the dtype.rs rule), written branch-free so it vectorises.
#[inline(always)]
pub(crate) fn f32_to_bf16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    let rounded = x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16;
    let nan = (x >> 16) | 0x0040;
    if x & 0x7FFF_FFFF > 0x7F80_0000 {
        nan as u16
    } else {
        rounded as u16
    }
}

/// Contiguous, aligned runs of the fast pairs: f32 <-> f16 / bf16 here, float ->
/// integer in `float_int/`. Returns false when `S -> D` has no fast path (true for an
/// empty run: nothing to convert).
///
/// # Safety
/// `n` contiguous `S` items at `s` are readable, `n` contiguous `D` items at `d` writable,
/// and the two runs do not overlap (`Kernel::run`'s contract for a contiguous run of a
/// converting copy). `stream`: the streaming choice for the whole output.
unsafe fn fast_contiguous<S: Element, D: Element>(
    d: *mut u8,
    s: *const u8,
    n: usize,
    stream: bool,
) -> bool {
    use half::slice::HalfFloatSliceExt;
    if n == 0 {
        return true;
    }
    let aligned = (d as usize).is_multiple_of(std::mem::align_of::<D>())
        && (s as usize).is_multiple_of(std::mem::align_of::<S>());
    if !aligned {
        return false;
    }
    // SAFETY: the two runs of the contract (n > 0 items: non-null), aligned (checked
    // above), as slices of their own item types (numbers, Bool(u8) and pairs of floats:
    // every bit pattern is valid); they do not overlap, so the mutable one aliases nothing.
    let (src, dst) = unsafe {
        (
            std::slice::from_raw_parts(s as *const S, n),
            std::slice::from_raw_parts_mut(d as *mut D, n),
        )
    };
    if let (Some(s), Some(d)) = (same::<S, f32>(src), same_mut::<D, f16>(dst)) {
        d.convert_from_f32_slice(s);
    } else if let (Some(s), Some(d)) = (same::<S, f16>(src), same_mut::<D, f32>(dst)) {
        s.convert_to_f32_slice(d);
    } else if let (Some(s), Some(d)) = (same::<S, f32>(src), same_mut::<D, bf16>(dst)) {
        for (o, &x) in d.reinterpret_cast_mut().iter_mut().zip(s) {
            *o = f32_to_bf16_bits(x);
        }
    } else if let (Some(s), Some(d)) = (same::<S, bf16>(src), same_mut::<D, f32>(dst)) {
        // Exact: bf16 is the top half of an f32.
        for (o, &x) in d.iter_mut().zip(s.reinterpret_cast()) {
            *o = f32::from_bits((x as u32) << 16);
        }
    } else if !float8_fast::<S, D>(dst, src, stream) {
        return float_int::float_to_int(dst, src, stream);
    }
    true
}

/// The float32 / bfloat16 <-> float8 pairs of [`fast_contiguous`] (`float8.rs`);
/// false for any other pair.
fn float8_fast<S: 'static, D: 'static>(dst: &mut [D], src: &[S], stream: bool) -> bool {
    use super::float8::{decode, encode_bf16, encode_f32};
    use crate::float8::{F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, F8E8M0Fnu, F8E5M2};
    use half::slice::HalfFloatSliceExt;
    macro_rules! each {
        ($($f:ty),*) => {$(
            if let (Some(s), Some(d)) = (same::<S, f32>(src), same_mut::<D, $f>(dst)) {
                encode_f32(d, s, stream);
                return true;
            }
            if let (Some(s), Some(d)) = (same::<S, bf16>(src), same_mut::<D, $f>(dst)) {
                encode_bf16(d, s.reinterpret_cast(), stream);
                return true;
            }
            if let (Some(s), Some(d)) = (same::<S, $f>(src), same_mut::<D, f32>(dst)) {
                decode(d, s, stream);
                return true;
            }
            if let (Some(s), Some(d)) = (same::<S, $f>(src), same_mut::<D, bf16>(dst)) {
                let d: &mut [u16] = d.reinterpret_cast_mut();
                decode(d, s, stream);
                return true;
            }
        )*};
    }
    each!(F8E5M2, F8E4M3Fn, F8E5M2Fnuz, F8E4M3Fnuz, F8E8M0Fnu);
    false
}

impl<S: Element, D: Element> Kernel for Convert<S, D> {
    #[inline]
    unsafe fn run(&mut self, d: *mut u8, s: *const u8, n: usize, ds: isize, ss: isize) -> bool {
        let (szs, szd) = (size_of::<S>() as isize, size_of::<D>() as isize);
        if ds == szd && ss == szs {
            // SAFETY: both runs are n contiguous items (run's contract), not overlapping
            // (the op's guarantee): fast_contiguous's contract.
            if unsafe { fast_contiguous::<S, D>(d, s, n, self.stream) } {
                return true;
            }
            // SAFETY: item i < n is d + i·szd and s + i·szs (run's contract).
            unsafe {
                let (d, s) = (d as *mut D, s as *const S);
                for i in 0..n {
                    d.add(i)
                        .write_unaligned(convert::<S, D>(s.add(i).read_unaligned()));
                }
            }
        } else if ss == 0 {
            // SAFETY: with ss == 0 the source is the one item at s; the writes are the n
            // destination items d + i·ds, i < n (run's contract).
            unsafe {
                let v: D = convert((s as *const S).read_unaligned());
                for i in 0..n {
                    (d.offset(i as isize * ds) as *mut D).write_unaligned(v);
                }
            }
        } else {
            // SAFETY: item i < n is d + i·ds and s + i·ss (run's contract).
            unsafe {
                for i in 0..n {
                    let x = (s.offset(i as isize * ss) as *const S).read_unaligned();
                    (d.offset(i as isize * ds) as *mut D).write_unaligned(convert(x));
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;

    /// Every exponent, sign, NaN/inf, round-half cases and pseudo-random mantissas.
    fn interesting_f32() -> Vec<f32> {
        let mut v: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-40,
            -1e-45,
            65504.0,
            65519.0,
            65520.0,
            6.0e-8,
            3.0e-8,
            2.9e-8,
        ];
        let mut x: u32 = 0x1234_5678;
        for _ in 0..200_000 {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(f32::from_bits(x));
            // halfway patterns for bf16 and f16
            v.push(f32::from_bits((x & 0xFFFF_0000) | 0x8000));
            v.push(f32::from_bits((x & 0xFFFF_E000) | 0x1000));
            v.push(f32::from_bits(0x7F80_0001 | (x & 0x807F_FFFF)));
        }
        v
    }

    fn run_fast<S: Element, D: Element + Default>(src: &[S]) -> Vec<D> {
        let mut out = vec![D::default(); src.len()];
        let mut k = Convert::<S, D>::new(false);
        // SAFETY: out and src are distinct buffers of src.len() contiguous items each.
        unsafe {
            k.run(
                out.as_mut_ptr() as *mut u8,
                src.as_ptr() as *const u8,
                src.len(),
                size_of::<D>() as isize,
                size_of::<S>() as isize,
            );
        }
        out
    }

    #[test]
    fn fast_paths_equal_the_dtype_rule_bit_for_bit() {
        let src = interesting_f32();
        let h: Vec<f16> = run_fast(&src);
        let b: Vec<bf16> = run_fast(&src);
        for (i, &x) in src.iter().enumerate() {
            let gh: f16 = f16::from_scalar(Scalar::Float(x as f64));
            let gb: bf16 = bf16::from_scalar(Scalar::Float(x as f64));
            assert_eq!(
                h[i].to_bits(),
                gh.to_bits(),
                "f16 of {x:e} ({:#x})",
                x.to_bits()
            );
            assert_eq!(
                b[i].to_bits(),
                gb.to_bits(),
                "bf16 of {x:e} ({:#x})",
                x.to_bits()
            );
        }
        // and back: every 16-bit pattern
        let hs: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let bs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let hf: Vec<f32> = run_fast(&hs);
        let bf: Vec<f32> = run_fast(&bs);
        for i in 0..hs.len() {
            let gh: f32 = f32::from_scalar(hs[i].to_scalar());
            let gb: f32 = f32::from_scalar(bs[i].to_scalar());
            assert!(
                hf[i].to_bits() == gh.to_bits() || (hf[i].is_nan() && gh.is_nan()),
                "{i:#x}"
            );
            assert!(
                bf[i].to_bits() == gb.to_bits() || (bf[i].is_nan() && gb.is_nan()),
                "{i:#x}"
            );
        }
    }

    /// The float8 slice paths (`float8.rs`) against the per-item rule of dtype.rs:
    /// f32 and every bf16 pattern in, every code out, bit for bit (NaN codes too, since
    /// both sides encode through float8.rs from the same f32).
    #[test]
    fn float8_fast_paths_equal_the_dtype_rule() {
        use crate::float8::*;
        fn check<F: Float8 + Element + Default + PartialEq + std::fmt::Debug>() {
            let src = interesting_f32();
            let got: Vec<F> = run_fast(&src);
            for (i, &x) in src.iter().enumerate() {
                assert_eq!(got[i], F::from_scalar(Scalar::Float(x as f64)), "{x:e}");
            }
            let bs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
            let got: Vec<F> = run_fast(&bs);
            for (i, &x) in bs.iter().enumerate() {
                assert_eq!(got[i], F::from_scalar(x.to_scalar()), "bf16 {i:#x}");
            }
            let codes: Vec<F> = (0..=255u8).map(F::from_bits).collect();
            let f: Vec<f32> = run_fast(&codes);
            let b: Vec<bf16> = run_fast(&codes);
            for (i, &c) in codes.iter().enumerate() {
                let want: f32 = f32::from_scalar(c.to_scalar());
                let wb: bf16 = bf16::from_scalar(c.to_scalar());
                assert!(f[i] == want || (f[i].is_nan() && want.is_nan()), "{i:#x}");
                assert!(
                    (f[i] == want && f[i].to_bits() == want.to_bits()) || want.is_nan(),
                    "{i:#x}: -0 keeps its sign"
                );
                assert!(
                    b[i].to_bits() == wb.to_bits() || (b[i].is_nan() && wb.is_nan()),
                    "{i:#x}"
                );
            }
        }
        check::<F8E5M2>();
        check::<F8E4M3Fn>();
        check::<F8E5M2Fnuz>();
        check::<F8E4M3Fnuz>();
        check::<F8E8M0Fnu>();
    }

    #[test]
    fn bf16_rounds_f32_to_nearest_even() {
        // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (down).
        assert_eq!(f32_to_bf16_bits(1.0 + 2f32.powi(-8)), 0x3F80);
        // Slightly above halfway: up (the sticky bit is in f32's lowest mantissa bits,
        // which rounding through f64 with truncation would lose).
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3F80_8001)), 0x3F81);
        let g: bf16 = bf16::from_scalar(Scalar::Float(f32::from_bits(0x3F80_8001) as f64));
        assert_eq!(g.to_bits(), 0x3F81);
    }
}

//! Vector math for the kernels' float32 loops on AVX-512F: `exp` and `erf` of 16 lanes.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// `e^x` in each lane, to about 1 ulp (Cephes' `expf`: `x = n ln 2 + r`, `|r| <= ln 2 / 2`,
/// a degree-7 polynomial in `r`, scaled by `2^n` with `vscalefps`, which also gives the
/// subnormal results and 0 below `-104`; `+inf` above `88.8`). NaN lanes stay NaN
/// (`min`/`max` return their second operand when either is NaN: `x` is put second).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub fn exp_ps(x: __m512) -> __m512 {
    let x = _mm512_max_ps(
        _mm512_set1_ps(-104.0),
        _mm512_min_ps(_mm512_set1_ps(88.8), x),
    );
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    // ln 2 in two parts (the first exact in 8 bits): r = x - n ln 2 without cancellation.
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_359_4), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.121_944_4e-4), r);
    let c = |v: f32| _mm512_set1_ps(v);
    let mut p = c(1.987_569_1e-4);
    for k in [
        1.398_2e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ] {
        p = _mm512_fmadd_ps(p, r, c(k));
    }
    let r2 = _mm512_mul_ps(r, r);
    let y = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, c(1.0)));
    _mm512_scalef_ps(y, n)
}

/// `erf(x)` in each lane, to 1e-6 absolute (the formula's 1.5e-7, plus float32's rounding
/// of `1 - ..` near 0: made for GELU's `1 + erf`, not for a relative erf at tiny x):
/// Abramowitz and Stegun 7.1.26, `1 - t (a1 + t (a2 + .. + t a5)) e^(-x^2)` with
/// `t = 1 / (1 + p |x|)`, the sign of x put back; +-1 beyond about 4, NaN lanes NaN.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub fn erf_ps(x: __m512) -> __m512 {
    let c = |v: f32| _mm512_set1_ps(v);
    let ax = _mm512_abs_ps(x);
    let t = _mm512_div_ps(c(1.0), _mm512_fmadd_ps(c(0.327_591_1), ax, c(1.0)));
    let mut p = c(1.061_405_4);
    for k in [-1.453_152_1, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
        p = _mm512_fmadd_ps(p, t, c(k));
    }
    let e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(ax, ax)));
    let y = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, c(1.0));
    // |erf| with x's sign bit
    let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
    _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign))
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulp_of_f64_exp() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let mut xs: Vec<f32> = (-1980..=1690).map(|i| i as f32 * 0.0523).collect();
        xs.extend([0.0, -0.0, 1e-30, -1e-30, 88.7, -87.3, -95.0, -103.5, 88.0]);
        for chunk in xs.chunks(16) {
            let mut buf = [0f32; 16];
            buf[..chunk.len()].copy_from_slice(chunk);
            let mut got = [0f32; 16];
            // SAFETY: AVX-512F is present (checked above); buf and got hold 16 floats.
            unsafe { _mm512_storeu_ps(got.as_mut_ptr(), exp_ps(_mm512_loadu_ps(buf.as_ptr()))) };
            for (x, y) in buf.iter().zip(got) {
                let want = (*x as f64).exp();
                let ulp = if want == 0.0 {
                    f32::from_bits(1) as f64
                } else {
                    let w = want as f32;
                    ((f32::from_bits(w.to_bits() + 1) - w) as f64).max(f32::from_bits(1) as f64)
                };
                assert!(
                    ((y as f64) - want).abs() <= 2.0 * ulp,
                    "exp({x}) = {y}, want {want}"
                );
            }
        }
        let special = [f32::NEG_INFINITY, f32::INFINITY, f32::NAN, -200.0, 200.0];
        let mut buf = [0f32; 16];
        buf[..5].copy_from_slice(&special);
        let mut got = [0f32; 16];
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(got.as_mut_ptr(), exp_ps(_mm512_loadu_ps(buf.as_ptr()))) };
        assert_eq!(got[0], 0.0);
        assert_eq!(got[1], f32::INFINITY);
        assert!(got[2].is_nan());
        assert_eq!(got[3], 0.0);
        assert_eq!(got[4], f32::INFINITY);
    }

    #[test]
    fn erf_is_within_1e6_of_f64_erf() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let xs: Vec<f32> = (-1000..=1000).map(|i| i as f32 * 0.006).collect();
        for chunk in xs.chunks(16) {
            let mut buf = [0f32; 16];
            buf[..chunk.len()].copy_from_slice(chunk);
            let mut got = [0f32; 16];
            // SAFETY: AVX-512F is present (checked above); buf and got hold 16 floats.
            unsafe { _mm512_storeu_ps(got.as_mut_ptr(), erf_ps(_mm512_loadu_ps(buf.as_ptr()))) };
            for (x, y) in buf.iter().zip(got) {
                let want = libm::erf(*x as f64);
                assert!(
                    (y as f64 - want).abs() < 1e-6,
                    "erf({x}) = {y:e}, want {want:e}"
                );
            }
        }
    }
}

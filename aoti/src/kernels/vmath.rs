//! Vector math for the kernels' float32 loops: `Lanes`, the float32 vector of one ISA
//! (AVX-512F: 16 lanes; AVX2 + FMA: 8 lanes), `exp` and `erf` written once over it, and
//! `lanes_fn!`, which compiles a kernel generic over `Lanes` once per ISA and runs the one an
//! `Isa` (this CPU's, detected) names.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// A vector ISA this CPU runs: only `Isa::best` and `Isa::all` make one (after detecting
/// it), so a kernel handed an `Isa` may use its instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isa(Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    /// The ISAs of `lanes_fn!`, widest first.
    #[cfg(target_arch = "x86_64")]
    const KINDS: [Kind; 2] = [Kind::Avx512, Kind::Avx2];
    #[cfg(not(target_arch = "x86_64"))]
    const KINDS: [Kind; 0] = [];

    /// Whether this CPU runs `kind` (std caches the detection).
    fn detected(kind: Kind) -> bool {
        match kind {
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        }
    }

    /// Every vector ISA of `lanes_fn!` this CPU has, widest first: the tests run each
    /// kernel on each.
    #[cfg(test)]
    pub fn all() -> Vec<Isa> {
        Self::KINDS
            .into_iter()
            .filter(|&k| Self::detected(k))
            .map(Isa)
            .collect()
    }

    /// The widest ISA this CPU has, or None (another CPU: the callers' scalar loops run).
    pub fn best() -> Option<Isa> {
        Self::KINDS
            .into_iter()
            .find(|&k| Self::detected(k))
            .map(Isa)
    }

    /// No `Isa` exists on a CPU without the ISAs of `lanes_fn!`.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn unreachable(self) -> ! {
        match self.0 {}
    }

    /// Float32 lanes of one vector.
    pub fn lanes(self) -> usize {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => 16,
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => 8,
        }
    }
}

/// `$vis fn $name(isa: Isa, args) -> R`: `$generic::<L>(args)` (an `unsafe fn` generic over
/// `L: Lanes`, `#[inline(always)]`, whose only unchecked requirement is `L`'s ISA) compiled
/// into one entry point per ISA with that ISA's target features, and the one `isa` names
/// run.
macro_rules! lanes_fn {
    ($(#[$doc:meta])* $vis:vis fn $name:ident$(<$lt:lifetime>)?($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? = $generic:ident) => {
        $(#[$doc])*
        $vis fn $name$(<$lt>)?(isa: $crate::kernels::vmath::Isa, $($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn v512$(<$lt>)?($($a: $t),*) $(-> $r)? {
                    // SAFETY: AVX-512F, the ISA of Avx512, is this function's (the caller's).
                    unsafe { $generic::<$crate::kernels::vmath::Avx512>($($a),*) }
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v2$(<$lt>)?($($a: $t),*) $(-> $r)? {
                    // SAFETY: AVX2 and FMA, the ISA of Avx2, are this function's.
                    unsafe { $generic::<$crate::kernels::vmath::Avx2>($($a),*) }
                }
                if isa.lanes() == 16 {
                    // SAFETY: an Isa of 16 lanes exists only where AVX-512F was detected.
                    return unsafe { v512($($a),*) };
                }
                // SAFETY: an Isa of 8 lanes exists only where AVX2 and FMA were detected.
                unsafe { v2($($a),*) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = ($($a,)*);
                isa.unreachable()
            }
        }
    };
}
pub(super) use lanes_fn;

/// The float32 vector of one ISA: `N` lanes, and the operations the kernels use. Loads and
/// stores of `n <= N` lanes touch only the first `n` elements.
///
/// # Safety
///
/// Every method needs its ISA (`Avx512`: AVX-512F; `Avx2`: AVX2 + FMA) present, and a
/// pointer valid for the elements it names.
#[cfg(target_arch = "x86_64")]
pub trait Lanes {
    type V: Copy;
    const N: usize;
    unsafe fn splat(x: f32) -> Self::V;
    unsafe fn zero() -> Self::V {
        // SAFETY: the ISA (the caller's).
        unsafe { Self::splat(0.0) }
    }
    /// The first `n` lanes from `p`, the rest `fill`.
    unsafe fn load_fill(p: *const f32, n: usize, fill: f32) -> Self::V;
    /// The first `n` lanes from `p`, the rest 0.
    unsafe fn load(p: *const f32, n: usize) -> Self::V {
        // SAFETY: the caller's.
        unsafe { Self::load_fill(p, n, 0.0) }
    }
    /// The first `n` lanes of `v` to `p`.
    unsafe fn store(p: *mut f32, n: usize, v: Self::V);
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, fused.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `c - a * b`, fused.
    unsafe fn fnmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// Per lane `a > b ? a : b`: `b` when either is NaN.
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V;
    /// Per lane `a < b ? a : b`: `b` when either is NaN.
    unsafe fn min(a: Self::V, b: Self::V) -> Self::V;
    /// Each lane rounded to the nearest integer (ties to even).
    unsafe fn round(a: Self::V) -> Self::V;
    /// `y * 2^n` per lane for integral `n` in -150..=128 (subnormal results rounded once,
    /// `inf` past the range); NaN in either gives NaN.
    unsafe fn scale2(y: Self::V, n: Self::V) -> Self::V;
    unsafe fn abs(a: Self::V) -> Self::V;
    /// `|y|` with the sign of `x`.
    unsafe fn copysign(y: Self::V, x: Self::V) -> Self::V;
    /// The sum of the lanes.
    unsafe fn hsum(a: Self::V) -> f32;
    /// The largest lane.
    unsafe fn hmax(a: Self::V) -> f32;
}

/// AVX-512F: 16 lanes, masked loads and stores.
#[cfg(target_arch = "x86_64")]
pub struct Avx512;

#[cfg(target_arch = "x86_64")]
fn mask16(n: usize) -> __mmask16 {
    ((1u32 << n.min(16)) - 1) as u16
}

// SAFETY (every method): AVX-512F is the caller's; the pointers are valid for the lanes
// the mask leaves on (the caller's).
#[cfg(target_arch = "x86_64")]
impl Lanes for Avx512 {
    type V = __m512;
    const N: usize = 16;
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load_fill(p: *const f32, n: usize, fill: f32) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask16(n), p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, n: usize, v: __m512) {
        // SAFETY: see the impl.
        unsafe { _mm512_mask_storeu_ps(p, mask16(n), v) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn fnmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_fnmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn max(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn min(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_min_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn round(a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    unsafe fn scale2(y: __m512, n: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_scalef_ps(y, n) }
    }
    #[inline(always)]
    unsafe fn abs(a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_abs_ps(a) }
    }
    #[inline(always)]
    unsafe fn copysign(y: __m512, x: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe {
            let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
            let mag = _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(i32::MAX));
            _mm512_castsi512_ps(_mm512_or_si512(mag, sign))
        }
    }
    #[inline(always)]
    unsafe fn hsum(a: __m512) -> f32 {
        // SAFETY: see the impl.
        unsafe { _mm512_reduce_add_ps(a) }
    }
    #[inline(always)]
    unsafe fn hmax(a: __m512) -> f32 {
        // SAFETY: see the impl.
        unsafe { _mm512_reduce_max_ps(a) }
    }
}

/// AVX2 + FMA: 8 lanes; a load or store of fewer goes through `vmaskmovps`.
#[cfg(target_arch = "x86_64")]
pub struct Avx2;

/// The lane masks of `Avx2`: elements `8 - n..16 - n` are `n` ones, then zeros.
#[cfg(target_arch = "x86_64")]
static AVX2_MASKS: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

/// The mask of the first `n` (<= 8) lanes. AVX is the caller's.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn mask8(n: usize) -> __m256i {
    // SAFETY: AVX (the caller's); elements 8 - n .. 16 - n of the 16 (n <= 8).
    unsafe { _mm256_loadu_si256(AVX2_MASKS.as_ptr().add(8 - n.min(8)).cast()) }
}

// SAFETY (every method): AVX2 and FMA are the caller's; the pointers are valid for the
// lanes the mask leaves on (the caller's).
#[cfg(target_arch = "x86_64")]
impl Lanes for Avx2 {
    type V = __m256;
    const N: usize = 8;
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load_fill(p: *const f32, n: usize, fill: f32) -> __m256 {
        // SAFETY: see the impl.
        unsafe {
            if n >= 8 {
                _mm256_loadu_ps(p)
            } else {
                let m = mask8(n);
                _mm256_blendv_ps(
                    _mm256_set1_ps(fill),
                    _mm256_maskload_ps(p, m),
                    _mm256_castsi256_ps(m),
                )
            }
        }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32, n: usize) -> __m256 {
        // SAFETY: see the impl (vmaskmovps zeroes the lanes it leaves off).
        unsafe {
            if n >= 8 {
                _mm256_loadu_ps(p)
            } else {
                _mm256_maskload_ps(p, mask8(n))
            }
        }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, n: usize, v: __m256) {
        // SAFETY: see the impl.
        unsafe {
            if n >= 8 {
                _mm256_storeu_ps(p, v)
            } else {
                _mm256_maskstore_ps(p, mask8(n), v)
            }
        }
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn fnmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_fnmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn max(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn min(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_min_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn round(a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    unsafe fn scale2(y: __m256, n: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe {
            // 2^n as 2^h * 2^(n - h), h = n >> 1: both factors normal floats for n in
            // -150..=128 (exponents -75..=64), so y * 2^h is exact for a y near 1 and only
            // the second product rounds (into a subnormal, or to inf). NaN n: garbage
            // factors, but then y is NaN too (exp's n is computed from y's x).
            let ni = _mm256_cvtps_epi32(n);
            let h = _mm256_srai_epi32::<1>(ni);
            let pow = |e: __m256i| {
                _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
                    e,
                    _mm256_set1_epi32(127),
                )))
            };
            _mm256_mul_ps(_mm256_mul_ps(y, pow(h)), pow(_mm256_sub_epi32(ni, h)))
        }
    }
    #[inline(always)]
    unsafe fn abs(a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), a) }
    }
    #[inline(always)]
    unsafe fn copysign(y: __m256, x: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe {
            let s = _mm256_set1_ps(-0.0);
            _mm256_or_ps(_mm256_andnot_ps(s, y), _mm256_and_ps(s, x))
        }
    }
    #[inline(always)]
    unsafe fn hsum(a: __m256) -> f32 {
        // SAFETY: see the impl.
        unsafe {
            let s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<1>(s, s)))
        }
    }
    #[inline(always)]
    unsafe fn hmax(a: __m256) -> f32 {
        // SAFETY: see the impl.
        unsafe {
            let s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
            _mm_cvtss_f32(_mm_max_ss(s, _mm_shuffle_ps::<1>(s, s)))
        }
    }
}

/// `e^x` in each lane, to about 1 ulp (Cephes' `expf`: `x = n ln 2 + r`, `|r| <= ln 2 / 2`,
/// a degree-7 polynomial in `r`, scaled by `2^n` (`Lanes::scale2`, which also gives the
/// subnormal results and 0 below `-104`; `+inf` above `88.8`). NaN lanes stay NaN
/// (`min`/`max` return their second operand when either is NaN: `x` is put second).
///
/// # Safety
///
/// `L`'s ISA is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn exp<L: Lanes>(x: L::V) -> L::V {
    // SAFETY: L's ISA (the caller's), every operation below.
    unsafe {
        let c = |v: f32| L::splat(v);
        let x = L::max(c(-104.0), L::min(c(88.8), x));
        let n = L::round(L::mul(x, c(std::f32::consts::LOG2_E)));
        // ln 2 in two parts (the first exact in 8 bits): r = x - n ln 2 without
        // cancellation.
        let r = L::fnmadd(n, c(0.693_359_4), x);
        let r = L::fnmadd(n, c(-2.121_944_4e-4), r);
        let mut p = c(1.987_569_1e-4);
        for k in [
            1.398_2e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            1.666_666_5e-1,
            0.5,
        ] {
            p = L::fmadd(p, r, c(k));
        }
        let r2 = L::mul(r, r);
        let y = L::fmadd(p, r2, L::add(r, c(1.0)));
        L::scale2(y, n)
    }
}

/// `erf(x)` in each lane, to 1e-6 absolute (the formula's 1.5e-7, plus float32's rounding
/// of `1 - ..` near 0: made for GELU's `1 + erf`, not for a relative erf at tiny x):
/// Abramowitz and Stegun 7.1.26, `1 - t (a1 + t (a2 + .. + t a5)) e^(-x^2)` with
/// `t = 1 / (1 + p |x|)`, the sign of x put back; +-1 beyond about 4, NaN lanes NaN.
///
/// # Safety
///
/// `L`'s ISA is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn erf<L: Lanes>(x: L::V) -> L::V {
    // SAFETY: L's ISA (the caller's), every operation below.
    unsafe {
        let c = |v: f32| L::splat(v);
        let ax = L::abs(x);
        let t = L::div(c(1.0), L::fmadd(c(0.327_591_1), ax, c(1.0)));
        let mut p = c(1.061_405_4);
        for k in [-1.453_152_1, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
            p = L::fmadd(p, t, c(k));
        }
        let e = exp::<L>(L::sub(L::zero(), L::mul(ax, ax)));
        let y = L::fnmadd(L::mul(p, t), e, c(1.0));
        L::copysign(y, x)
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// `f` over `xs` in place, `L::N` lanes at a time (the tail through the `n`-lane
    /// load and store).
    ///
    /// # Safety
    ///
    /// `L`'s ISA is present.
    #[inline(always)]
    unsafe fn map<L: Lanes>(xs: &mut [f32], f: unsafe fn(L::V) -> L::V) {
        for c in xs.chunks_mut(L::N) {
            // SAFETY: L's ISA (the caller's); c holds c.len() <= N floats.
            unsafe { L::store(c.as_mut_ptr(), c.len(), f(L::load(c.as_ptr(), c.len()))) };
        }
    }

    /// # Safety
    ///
    /// `L`'s ISA is present.
    #[inline(always)]
    unsafe fn exp_all<L: Lanes>(xs: &mut [f32]) {
        // SAFETY: the caller's.
        unsafe { map::<L>(xs, exp::<L>) }
    }

    /// # Safety
    ///
    /// `L`'s ISA is present.
    #[inline(always)]
    unsafe fn erf_all<L: Lanes>(xs: &mut [f32]) {
        // SAFETY: the caller's.
        unsafe { map::<L>(xs, erf::<L>) }
    }

    /// # Safety
    ///
    /// `L`'s ISA is present.
    #[inline(always)]
    unsafe fn reduce<L: Lanes>(xs: &[f32]) -> (f32, f32) {
        // SAFETY: the caller's; xs holds at least the lanes loaded.
        unsafe {
            let v = L::load_fill(xs.as_ptr(), xs.len(), f32::NEG_INFINITY);
            let s = L::load(xs.as_ptr(), xs.len());
            (L::hsum(s), L::hmax(v))
        }
    }

    lanes_fn!(fn exp_on(xs: &mut [f32]) = exp_all);
    lanes_fn!(fn erf_on(xs: &mut [f32]) = erf_all);
    lanes_fn!(fn reduce_on(xs: &[f32]) -> (f32, f32) = reduce);

    #[test]
    fn exp_is_within_two_ulp_of_f64_exp() {
        let mut xs: Vec<f32> = (-1980..=1690).map(|i| i as f32 * 0.0523).collect();
        xs.extend([0.0, -0.0, 1e-30, -1e-30, 88.7, -87.3, -95.0, -103.5, 88.0]);
        for isa in Isa::all() {
            let mut got = xs.clone();
            exp_on(isa, &mut got);
            for (x, y) in xs.iter().zip(got) {
                let want = (*x as f64).exp();
                let ulp = if want == 0.0 {
                    f32::from_bits(1) as f64
                } else {
                    let w = want as f32;
                    ((f32::from_bits(w.to_bits() + 1) - w) as f64).max(f32::from_bits(1) as f64)
                };
                assert!(
                    ((y as f64) - want).abs() <= 2.0 * ulp,
                    "{isa:?}: exp({x}) = {y}, want {want}"
                );
            }
            let mut got = [f32::NEG_INFINITY, f32::INFINITY, f32::NAN, -200.0, 200.0];
            exp_on(isa, &mut got);
            assert_eq!(got[0], 0.0, "{isa:?}");
            assert_eq!(got[1], f32::INFINITY, "{isa:?}");
            assert!(got[2].is_nan(), "{isa:?}");
            assert_eq!(got[3], 0.0, "{isa:?}");
            assert_eq!(got[4], f32::INFINITY, "{isa:?}");
        }
    }

    #[test]
    fn erf_is_within_1e6_of_f64_erf() {
        let xs: Vec<f32> = (-1000..=1000).map(|i| i as f32 * 0.006).collect();
        for isa in Isa::all() {
            let mut got = xs.clone();
            got.push(f32::NAN);
            erf_on(isa, &mut got);
            for (x, y) in xs.iter().zip(&got) {
                let want = libm::erf(*x as f64);
                assert!(
                    (*y as f64 - want).abs() < 1e-6,
                    "{isa:?}: erf({x}) = {y:e}, want {want:e}"
                );
            }
            assert!(got[xs.len()].is_nan(), "{isa:?}");
        }
    }

    /// The partial loads leave the lanes past `n` to the fill (0 for `load`), which the
    /// lane sum and max then see: a sum of the first `n` and a max over them.
    #[test]
    fn partial_loads_fill_the_rest_and_reductions_see_every_lane() {
        let xs: Vec<f32> = (0..16).map(|i| -1.5 - i as f32).collect();
        for isa in Isa::all() {
            for n in 1..=isa.lanes() {
                let (sum, max) = reduce_on(isa, &xs[..n]);
                let want: f32 = xs[..n].iter().sum();
                assert_eq!(sum, want, "{isa:?}, {n} lanes");
                assert_eq!(max, -1.5, "{isa:?}, {n} lanes");
            }
        }
    }
}

//! CPU feature detection, in one place for every kernel of this module. The library is
//! built for baseline x86-64; a kernel compiled for more (`#[target_feature]`) runs only
//! where one of these answered yes, and its call says so once: "CPU checked".
//!
//! No cache here: `is_x86_feature_detected!` keeps its own (one relaxed load and a bit
//! test per call). Under Miri (no `cpuid`) every answer is no, so the baseline loops are
//! the ones Miri runs.

/// AVX2: the transposes, `copy_affine_`'s image loop, the f32 / f64 -> integer loop,
/// `copy_yuv_affine_`'s walk (compiled for AVX2 as a whole: `yuv::run_avx2`).
#[inline]
pub(crate) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// AVX2 and F16C: the direct f16 / bf16 -> integer kernels and the -> 64-bit one. (AVX-512
/// target features need Rust 1.89, past the crate's MSRV.)
#[inline]
pub(crate) fn avx2_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

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

/// The size in bytes of the last-level (L3) cache of CPU 0, read once from
/// `/sys/devices/system/cpu/cpu0/cache/index*/` (the `index` whose `level` is 3 and whose
/// `type` is not `Instruction`); `None` where that is not available (not Linux, no sysfs,
/// Miri). `sysconf(_SC_LEVEL3_CACHE_SIZE)` is not used: glibc 2.36 answers 320 MiB on the
/// Zen 4 VM whose sysfs (and `lscpu`) say 32 MiB.
pub(crate) fn l3_bytes() -> Option<usize> {
    static L3: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *L3.get_or_init(read_l3)
}

#[cfg(all(target_os = "linux", not(miri)))]
fn read_l3() -> Option<usize> {
    let base = "/sys/devices/system/cpu/cpu0/cache";
    for i in 0..8 {
        let read = |f: &str| std::fs::read_to_string(format!("{base}/index{i}/{f}")).ok();
        let Some(level) = read("level") else { break };
        if level.trim() != "3" || read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        return parse_cache_size(read("size")?.trim());
    }
    None
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn read_l3() -> Option<usize> {
    None
}

/// A sysfs cache size ("32768K", "1M", "512") in bytes; `None` for anything else or 0.
#[cfg_attr(not(all(target_os = "linux", not(miri))), allow(dead_code))]
pub(crate) fn parse_cache_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1usize << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits
        .parse::<usize>()
        .ok()?
        .checked_mul(unit)
        .filter(|&n| n > 0)
}

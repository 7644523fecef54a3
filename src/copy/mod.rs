//! Operations that move element data in bulk, in four layers, each importing only the
//! layers below it (`src/tests/module_deps.rs` checks it, and that `copy` names no feature
//! module such as `files`: what it asks of a storage, the storage answers):
//!
//! ```text
//! 1. ops        ops.rs, yuv.rs       the ops and their argument rules
//! 2. write      write.rs             the one write step: the checked destination, the
//!                                    snapshot of an overlapping source, the streaming
//!                                    choice, one version bump; fresh outputs
//! 3. engine     engine/              the strided iteration, its dtype dispatch, the split
//!                                    of big copies over threads or the host's executor
//! 4. kernels    kernels/             leaf kernels (casts, float8, float -> int, transposes,
//!                                    affine, YUV) and the CPU checks; import nothing above
//! ```
//!
//! Unsafe code: the kernels and the engine work on raw pointers (see `kernels/mod.rs` for
//! why and for the contract they share), except the float -> integer kernels
//! (`kernels/float_int/`), which get aligned contiguous runs as slices and are safe
//! functions; SIMD code runs after one check in `kernels/cpu.rs`. Every unsafe operation in
//! this module and its submodules states its reason, enforced here (also inside `unsafe fn`
//! bodies).

pub(crate) mod engine;
pub(crate) mod kernels;
mod ops;
mod write;
pub(crate) mod yuv;

#[cfg(test)]
use crate::dtype::Scalar;
#[cfg(test)]
use crate::tensor_impl::TensorImpl;
pub(crate) use engine::parallel;

/// Reads every element of `t` in row-major order through the checked per-element path
/// (the reference the tests compare the engine against).
#[cfg(test)]
pub(crate) fn reference_values(t: &TensorImpl) -> Vec<Scalar> {
    let mut out = Vec::new();
    let n = t.sizes().to_vec();
    if n.contains(&0) {
        return out;
    }
    let mut idx = vec![0usize; n.len()];
    loop {
        let at: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
        out.push(t.get(&at).unwrap());
        if !engine::odometer_step(&mut idx, |d| n[d] as usize, |_, _| {}) {
            return out;
        }
    }
}

#[cfg(test)]
mod tests;

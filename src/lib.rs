//! # libtensor
//!
//! PyTorch's Tensor / Storage / TensorImpl design in Rust, exported as a C ABI
//! (`include/tensor.h`, generated from `src/ffi/`).
//!
//! Three layers, as in c10:
//!
//! ```text
//! tensor_t* / Tensor ──> TensorImpl (sizes+strides inline for <= 5 dims, offset, numel,
//!                          dtype, cached contiguity bits, shared version counter)
//!                          └──> StorageImpl (data pointer + deleter, nbytes, allocator,
//!                                            read-only flag, strong+weak refcount)
//! ```
//!
//! Ownership: a handle returned through an out-parameter is owned (+1) and released once;
//! a pointer returned by an accessor is borrowed. A view is a new TensorImpl over the same
//! StorageImpl; it never copies data. Wrapped memory's deleter runs exactly once, when the
//! storage's last strong reference dies.
//!
//! Module map (`lib_lists_every_module` in `src/tests/` checks that each module is here):
//!
//! - `error`: status codes and the error type; `env`: the environment variables, read once;
//!   `sanitizer`: is a memory checker watching?
//! - `refcount`: intrusive strong/weak counts; `dtype`: element types (`float8`: the 8-bit
//!   float formats); `device`: DLPack device codes; `allocator`: where storage bytes come
//!   from, and the memory statistics.
//! - `storage`: StorageImpl; `snapshot`: the opt-in live-storage report (the slot table of
//!   tracked tensors, the registry, the report).
//! - `shape`: pure shape arithmetic; `layout`: sizes and strides (the buffer, the layouts,
//!   the one validation `CheckedLayout`, the cached flags); `tensor_impl`: TensorImpl and
//!   the Rust `Tensor` handle; `view`: the view rules.
//! - `copy`: every op that moves element data, in four layers that import only downwards
//!   (the ops and their argument rules, the one write step, the strided-iteration engine
//!   with its dtype dispatch and threads, and the leaf kernels; see `copy/mod.rs`); `format`:
//!   repr; `dlpack`: DLPack export and import; `files`: memory-mapped files, shared memory,
//!   .safetensors and .npy.
//! - `ffi`: the C boundary.

#![allow(non_camel_case_types)]
// Every unsafe operation states why it is sound: `// SAFETY:` above each unsafe block and
// unsafe impl, `# Safety` on each unsafe fn, and explicit unsafe blocks inside unsafe fns
// (`unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` are denied in
// Cargo.toml's `[lints]`, for the library and its tests, benches and examples alike).

// The Rust core is crate-private: the product is the C ABI of `ffi` (and the header
// generated from it). Tests of the core live in the crate (`#[cfg(test)]` modules,
// `src/tests/`); tests/, benches/ and fuzz/ drive `ffi`.
#[macro_use]
pub(crate) mod error;
pub(crate) mod allocator;
pub(crate) mod copy;
pub(crate) mod device;
pub(crate) mod dlpack;
pub(crate) mod dtype;
pub(crate) mod env;
pub(crate) mod float8;
pub mod ffi;
pub(crate) mod files;
pub(crate) mod format;
pub(crate) mod layout;
pub(crate) mod refcount;
pub(crate) mod sanitizer;
pub(crate) mod shape;
pub(crate) mod snapshot;
pub(crate) mod storage;
pub(crate) mod tensor_impl;
pub(crate) mod view;

#[cfg(test)]
mod tests;

/// What the fuzz target `fuzz/fuzz_targets/file_headers.rs` drives directly: the file-header
/// parsers. Only in builds with `--cfg fuzzing` (`.ci/fuzz.sh`, cargo-fuzz).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::files::{npy, safetensors, storage_from_bytes};
    pub use crate::tensor_impl::{MemoryFormat, Tensor};
}

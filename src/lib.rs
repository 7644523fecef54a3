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
//! Module map: `refcount` (intrusive strong/weak counts), `dtype`, `device`, `allocator`
//! (+ memory statistics), `snapshot` (opt-in live-storage report), `storage`, `shape` (pure shape arithmetic), `layout` (sizes,
//! strides, cached flags), `tensor_impl` (TensorImpl and the Rust `Tensor` handle),
//! `copy` (the strided-iteration engine and every op that moves element data), `format`
//! (repr), `files` (memory-mapped files, shared memory, .safetensors and .npy), `ffi` (the C
//! boundary).

#![allow(non_camel_case_types)]

#[macro_use]
pub mod error;
pub mod allocator;
pub mod copy;
pub mod device;
pub mod dlpack;
pub mod dtype;
pub mod ffi;
pub mod files;
pub mod format;
pub mod layout;
pub mod refcount;
pub mod shape;
pub mod snapshot;
pub mod storage;
pub mod tensor_impl;
pub mod view;

pub use dtype::{DType, Scalar};
pub use error::{Error, Result, Status};
pub use tensor_impl::{MemoryFormat, Tensor, TensorImpl};

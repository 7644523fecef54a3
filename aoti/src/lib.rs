//! libtensor_aoti: runs CPU models compiled by PyTorch's AOTInductor on libtensor, without
//! libtorch. It exports the `aoti_torch_*` C shim such a model calls (under libtensor_aoti's
//! private prefix, `ltai_*`, which the loader gives the model's imports: see `model`) and a
//! host API (`tensor_aoti_*`, include/tensor_aoti.h) that loads a `.pt2` package and runs it
//! on `tensor_t*` inputs.
//!
//! It links libtensor.so dynamically through libtensor's C API, so that a process has one
//! copy of libtensor's state, and a tensor a model returns is a `tensor_t*`.
//!
//! The modules, each importing only those listed before it:
//!
//! - `reader`: pure readers of a package's bytes (zip entries, metadata JSON, the model
//!   `.so`'s dynamic symbols, the wrapper source's input checks), no FFI: the fuzz target
//!   includes them as they are;
//! - `sys`: libtensor's C API, generated from include/tensor.h by build.rs;
//! - `error`: the error type, the thread-local message, the one panic-catching boundary
//!   helper (`shim` / `host`) and `fn_name!`;
//! - `util`: C arguments to Rust values, `Tensor` / `Owned` handles over libtensor's calls,
//!   element types and allocation;
//! - `shim`: the management part of the shim (handles, accessors, creation, views, copies);
//! - `kernels`: the fallback kernels (`aoti_torch_cpu_*`), one file per job;
//! - `spec`: what each input was compiled for (from `reader::wrapper`), checked per run;
//! - `codefile`: the anonymous file (memfd) a model's code is `dlopen`ed from;
//! - `model`: the host API (load, run, release).

#![allow(clippy::too_many_arguments)]

mod codefile;
mod error;
mod kernels;
mod model;
mod reader;
mod shim;
mod spec;
mod sys;
mod util;

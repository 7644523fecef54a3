//! libtensor_aoti: runs CPU models compiled by PyTorch's AOTInductor on libtensor, without
//! libtorch. It exports the `aoti_torch_*` C shim such a model calls (management in
//! `shim`, fallback kernels in `kernels`; exported under libtensor_aoti's private prefix,
//! `ltai_*`, which the loader gives the model's imports: see `model`) and a host API
//! (`tensor_aoti_*`, include/tensor_aoti.h) that loads a `.pt2` package and runs it on
//! `tensor_t*` inputs.
//!
//! It links libtensor.so dynamically through libtensor's C API (`sys`), so that a process
//! has one copy of libtensor's state, and a tensor a model returns is a `tensor_t*`.

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

//! Tests of the Rust core that span several modules: they lived in `tests/` while the core
//! was a public Rust API, and moved here when it became `pub(crate)` (issue 8). Tests that
//! need a global allocator of their own stay separate binaries in `tests/` and drive the C
//! API.

/// The `.npy` and `.safetensors` parsers on hostile bytes (was `tests/file_parsers.rs`).
mod file_parsers;
/// Random view chains against a reference model (was `tests/view_props.rs`).
mod view_props;
/// The module graph read from the sources, and the rules it keeps.
mod module_deps;
/// Constructors only tests use (`Blob::borrowed`, `Tensor::empty_with_format`,
/// `TensorImpl::make_view_dtype`).
pub(crate) mod constructors;

//! Constructors only tests use, kept out of the production modules: each is
//! an inherent method or function over the modules' crate-visible API.

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::{CheckedLayout, Strides};
use crate::shape;
use crate::storage::Blob;
use crate::tensor_impl::{MemoryFormat, Tensor, TensorImpl};
use std::ffi::c_void;

impl Blob {
    /// CPU memory nothing frees (the caller keeps it alive).
    pub(crate) fn borrowed(data: *mut c_void) -> Blob {
        Blob {
            data,
            device: Device::CPU,
            deleter: None,
            ctx: std::ptr::null_mut(),
        }
    }
}

impl Tensor {
    /// Uninitialised tensor laid out in `fmt` (not Preserve).
    pub(crate) fn empty_with_format(
        sizes: &[i64],
        dtype: DType,
        fmt: MemoryFormat,
    ) -> Result<Tensor> {
        shape::check_sizes(sizes)?;
        Tensor::empty_strided(sizes, &fmt.strides_for(sizes)?, dtype)
    }
}

impl TensorImpl {
    /// Like [`make_view`](Self::make_view) with another dtype (tests build byte-level
    /// aliases with it).
    pub(crate) fn make_view_dtype(
        &self,
        sizes: &[i64],
        strides: &[i64],
        offset: i64,
        dtype: DType,
    ) -> Result<Tensor> {
        self.share(CheckedLayout::new(
            sizes,
            Strides::Elements(strides),
            offset,
            dtype,
        )?)
    }
}

//! View operations: each rule is a pure function over (sizes, strides, offset), then one
//! constructor (`Tensor::make_view`) builds the TensorImpl over the same storage, sharing
//! the version counter. No view touches element data.

use crate::error::{Error, Result, Status};
use crate::shape;
use crate::tensor_impl::Tensor;

impl Tensor {
    /// `view(sizes)` (one `-1` allowed): `Ok(None)` when the strides cannot express the new
    /// shape (reshape then copies; view fails).
    pub fn try_view(&self, sizes: &[i64]) -> Result<Option<Tensor>> {
        let sizes = shape::infer_size(sizes, self.numel())?;
        match shape::compute_stride(self.sizes(), self.strides(), &sizes) {
            Some(strides) => Ok(Some(self.make_view(
                &sizes,
                &strides,
                self.storage_offset(),
            )?)),
            None => Ok(None),
        }
    }

    /// PyTorch's `view`: same data, new shape; works on non-contiguous tensors whenever
    /// `compute_stride` allows. Errors: Shape (numel), NotViewable.
    pub fn view(&self, sizes: &[i64]) -> Result<Tensor> {
        self.try_view(sizes)?.ok_or_else(|| {
            Error::new(
                Status::NotViewable,
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::dtype::DType;
    use crate::error::Status;
    use crate::tensor_impl::Tensor;

    #[test]
    fn view_contiguous_and_not() {
        let t = Tensor::arange(12, DType::F32).unwrap();
        let v = t.view(&[3, -1]).unwrap();
        assert_eq!(v.sizes(), &[3, 4]);
        assert_eq!(v.strides(), &[4, 1]);
        assert!(v.shares_storage(&t));
        let tr = v.make_view(&[4, 3], &[1, 4], 0).unwrap();
        let e = tr.view(&[12]).err().unwrap();
        assert_eq!(e.status, Status::NotViewable);
        assert!(e.message.contains("reshape"));
        let ok = tr.view(&[2, 2, 3]).unwrap();
        assert_eq!(ok.strides(), &[2, 1, 4]);
        assert_eq!(t.view(&[5, 3]).err().unwrap().status, Status::Shape);
    }
}

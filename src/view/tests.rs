//! Unit tests of the pure view rules. Every expected geometry and message below was
//! produced by PyTorch (`torch.zeros(N).as_strided(sizes, strides, offset)` then the op);
//! status codes are ours (docs/c-api.md, "Errors"). Deliberate message differences are noted.

use super::*;
use crate::dtype::{DType, Scalar};
use crate::shape::MAX_INLINE_DIMS;
use crate::tensor_impl::MemoryFormat;

/// The borrowed layout (sizes, strides, offset) a rule reads.
fn l<'a>(sizes: &'a [i64], strides: &'a [i64], offset: i64) -> LayoutRef<'a> {
    LayoutRef::new(sizes, strides, offset)
}

/// `view` built (the rule returns the fill of the layout the view stores).
fn view(src: LayoutRef, sizes: &[i64]) -> Result<Option<Layout>> {
    super::view(src, sizes)?.build()
}

/// `expand` built (as `view`; it always finds its layout).
fn expand(src: LayoutRef, sizes: &[i64]) -> Result<Layout> {
    Ok(super::expand(src, sizes)?
        .build()?
        .expect("expand fills every layout"))
}

/// A rule's result as a layout: a built one, or one described dim by dim (`LazyLayout`),
/// built here.
trait Built {
    fn built(self) -> Layout;
}
impl Built for Layout {
    fn built(self) -> Layout {
        self
    }
}
impl<F: crate::layout::DimSource> Built for LazyLayout<F> {
    fn built(self) -> Layout {
        self.build().unwrap()
    }
}

#[track_caller]
fn check(g: impl Built, sizes: &[i64], strides: &[i64], offset: i64) {
    let g = g.built();
    assert_eq!((g.sizes(), g.strides(), g.offset), (sizes, strides, offset));
}

#[track_caller]
fn check_err<T>(r: Result<T>, status: Status, msg: &str) {
    let Err(e) = r else {
        panic!("PyTorch raises here")
    };
    assert_eq!(e.status, status, "{}", e.message);
    assert!(
        e.message.contains(msg),
        "{:?} does not contain {:?}",
        e.message,
        msg
    );
}

/// Bases used below (sizes, strides, offset): M34 = [3,4],[4,1],0; T43 = its transpose;
/// S = 0-dim at offset 3; CL = channels-last [2,3,4,5]; Z = [2,0,3]; ONE = [1,3,1],[3,1,1],2;
/// G = [3,4],[10,2],5 (gaps); E = expanded [4,3],[0,1]; C5 = channels-last-3d [2,3,4,5,6].
#[test]
#[rustfmt::skip]
fn rules_match_pytorch() {
    check(transpose(l(&[3, 4], &[4, 1], 0), 0, 1).unwrap(), &[4, 3], &[1, 4], 0);
    check(transpose(l(&[3, 4], &[4, 1], 0), -1, -2).unwrap(), &[4, 3], &[1, 4], 0);
    check(transpose(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), 1, -1).unwrap(), &[2, 5, 4, 3], &[60, 3, 15, 1], 0);
    check(transpose(l(&[], &[], 3), 0, -1).unwrap(), &[], &[], 3);
    check(transpose(l(&[2, 0, 3], &[3, 3, 1], 0), 0, 2).unwrap(), &[3, 0, 2], &[1, 3, 3], 0);
    check_err(transpose(l(&[3, 4], &[4, 1], 0), 0, 2), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    check_err(transpose(l(&[], &[], 3), 0, 1), Status::Index, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    check(transpose_2d(l(&[3, 4], &[4, 1], 0)).unwrap(), &[4, 3], &[1, 4], 0);
    check(transpose_2d(l(&[], &[], 3)).unwrap(), &[], &[], 3);
    check_err(transpose_2d(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0)), Status::Shape, "t() expects a tensor with <= 2 dimensions, but self is 4D");
    check(permute(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), &[0, 2, 3, 1]).unwrap(), &[2, 4, 5, 3], &[60, 15, 3, 1], 0);
    check(permute(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), &[-1, 0, -3, 2]).unwrap(), &[5, 2, 3, 4], &[3, 60, 1, 15], 0);
    check(permute(l(&[], &[], 3), &[]).unwrap(), &[], &[], 3);
    check_err(permute(l(&[3, 4], &[4, 1], 0), &[0]), Status::InvalidArgument, "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1");
    check_err(permute(l(&[3, 4], &[4, 1], 0), &[1, -1]), Status::InvalidArgument, "permute(): duplicate dims are not allowed.");
    check_err(permute(l(&[3, 4], &[4, 1], 0), &[0, 2]), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    // 64 dims: the last bit of the mask (a tensor has no more).
    {
        let d = 64usize;
        let n: Vec<i64> = (1..=d as i64).collect();
        let st: Vec<i64> = (0..d as i64).map(|i| 1000 + i).collect();
        let rev: Vec<i64> = (0..d as i64).rev().collect();
        let g = permute(l(&n, &st, 0), &rev).unwrap();
        let (rn, rst): (Vec<i64>, Vec<i64>) = (n.iter().rev().copied().collect(), st.iter().rev().copied().collect());
        check(g, &rn, &rst, 0);
        // The last dim twice (bit 63 when d = 64), then dim 0 twice, once wrapped from -d.
        for (at, dim) in [(1, d as i64 - 1), (0, 0), (0, -(d as i64))] {
            let mut dup = rev.clone();
            dup[at] = dim;
            check_err(permute(l(&n, &st, 0), &dup), Status::InvalidArgument, "permute(): duplicate dims are not allowed.");
        }
    }
    check(movedim(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), 3, 1).unwrap(), &[2, 5, 3, 4], &[60, 3, 1, 15], 0);
    check(movedim(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), 0, -1).unwrap(), &[3, 4, 5, 2], &[1, 15, 3, 60], 0);
    check(movedim(l(&[2, 3, 4, 5, 6], &[360, 1, 90, 18, 3], 0), -4, 0).unwrap(), &[3, 2, 4, 5, 6], &[1, 360, 90, 18, 3], 0);
    check(movedim(l(&[], &[], 3), 0, -1).unwrap(), &[], &[], 3);
    check_err(movedim(l(&[3, 4], &[4, 1], 0), 0, 2), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    check(slice(l(&[3, 4], &[4, 1], 0), 1, -3, -1, 2).unwrap(), &[3, 1], &[4, 2], 1);
    check(slice(l(&[3, 4], &[4, 1], 0), 1, -100, 100, 3).unwrap(), &[3, 2], &[4, 3], 0);
    check(slice(l(&[3, 4], &[4, 1], 0), 1, 3, 1, 1).unwrap(), &[3, 0], &[4, 1], 3);
    check(slice(l(&[3, 4], &[4, 1], 0), 1, 10, 20, 1).unwrap(), &[3, 0], &[4, 1], 4);
    check(slice(l(&[3, 4], &[4, 1], 0), 1, 1, i64::MAX, 1).unwrap(), &[3, 3], &[4, 1], 1);
    check(slice(l(&[3, 4], &[4, 1], 0), -2, i64::MIN, i64::MAX, 2).unwrap(), &[2, 4], &[8, 1], 0);
    check(slice(l(&[3, 4], &[10, 2], 5), 0, 1, 3, 1).unwrap(), &[2, 4], &[10, 2], 15);
    check(slice(l(&[2, 0, 3], &[3, 3, 1], 0), 1, 0, 5, 2).unwrap(), &[2, 0, 3], &[3, 6, 1], 0);
    check(slice(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), 1, 1, 3, 1).unwrap(), &[2, 2, 4, 5], &[60, 1, 15, 3], 1);
    check_err(slice(l(&[3, 4], &[4, 1], 0), 0, 0, 3, 0), Status::InvalidArgument, "slice step must be positive");
    check_err(slice(l(&[3, 4], &[4, 1], 0), 0, 0, 3, -1), Status::InvalidArgument, "slice step must be positive");
    check_err(slice(l(&[], &[], 3), 0, 0, 1, 1), Status::Index, "slice() cannot be applied to a 0-dim tensor.");
    check_err(slice(l(&[3, 4], &[4, 1], 0), 5, 0, 1, 0), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
    check(narrow(l(&[3, 4], &[4, 1], 0), 0, -1, 1).unwrap(), &[1, 4], &[4, 1], 8);
    check(narrow(l(&[3, 4], &[4, 1], 0), 0, 3, 0).unwrap(), &[0, 4], &[4, 1], 12);
    check(narrow(l(&[3, 4], &[10, 2], 5), -1, 1, 2).unwrap(), &[3, 2], &[10, 2], 7);
    check_err(narrow(l(&[3, 4], &[4, 1], 0), 0, 2, 2), Status::Index, "start (2) + length (2) exceeds dimension size (3).");
    check_err(narrow(l(&[3, 4], &[4, 1], 0), 0, -1, 2), Status::Index, "start (2) + length (2) exceeds dimension size (3).");
    check_err(narrow(l(&[3, 4], &[4, 1], 0), 0, 4, 0), Status::Index, "start out of range (expected to be in range of [-3, 3], but got 4)");
    check_err(narrow(l(&[3, 4], &[4, 1], 0), 5, 0, -1), Status::InvalidArgument, "narrow(): length must be non-negative.");
    check_err(narrow(l(&[], &[], 3), 0, 0, 1), Status::Index, "narrow() cannot be applied to a 0-dim tensor.");
    check(select(l(&[3, 4], &[4, 1], 0), 0, 2).unwrap(), &[4], &[1], 8);
    check(select(l(&[3, 4], &[4, 1], 0), -1, -1).unwrap(), &[3], &[4], 3);
    check(select(l(&[3, 4], &[10, 2], 5), 1, 3).unwrap(), &[3], &[10], 11);
    check(select(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), 1, 2).unwrap(), &[2, 4, 5], &[60, 15, 3], 2);
    check_err(select(l(&[3, 4], &[4, 1], 0), 0, 5), Status::Index, "select(): index 5 out of range for tensor of size [3, 4] at dimension 0");
    check_err(select(l(&[3, 4], &[4, 1], 0), -1, 5), Status::Index, "select(): index 5 out of range for tensor of size [3, 4] at dimension 1");
    check_err(select(l(&[2, 0, 3], &[3, 3, 1], 0), 1, 0), Status::Index, "select(): index 0 out of range for tensor of size [2, 0, 3] at dimension 1");
    check_err(select(l(&[], &[], 3), 0, 0), Status::Index, "select() cannot be applied to a 0-dim tensor.");
    check(squeeze(l(&[1, 3, 1], &[3, 1, 1], 2)).unwrap(), &[3], &[1], 2);
    check(squeeze(l(&[], &[], 3)).unwrap(), &[], &[], 3);
    check(squeeze(l(&[2, 0, 3], &[3, 3, 1], 0)).unwrap(), &[2, 0, 3], &[3, 3, 1], 0);
    check(squeeze_dim(l(&[1, 3, 1], &[3, 1, 1], 2), -1).unwrap(), &[1, 3], &[3, 1], 2);
    check(squeeze_dim(l(&[1, 3, 1], &[3, 1, 1], 2), 1).unwrap(), &[1, 3, 1], &[3, 1, 1], 2);
    check(squeeze_dim(l(&[], &[], 3), -1).unwrap(), &[], &[], 3);
    check_err(squeeze_dim(l(&[3, 4], &[4, 1], 0), 2), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    check(unsqueeze(l(&[3, 4], &[4, 1], 0), 0).unwrap(), &[1, 3, 4], &[12, 4, 1], 0);
    check(unsqueeze(l(&[3, 4], &[4, 1], 0), -1).unwrap(), &[3, 4, 1], &[4, 1, 1], 0);
    check(unsqueeze(l(&[3, 4], &[10, 2], 5), 1).unwrap(), &[3, 1, 4], &[10, 8, 2], 5);
    check(unsqueeze(l(&[2, 0, 3], &[3, 3, 1], 0), 1).unwrap(), &[2, 1, 0, 3], &[3, 0, 3, 1], 0);
    check(unsqueeze(l(&[], &[], 3), -1).unwrap(), &[1], &[1], 3);
    check(unsqueeze(l(&[4, 3], &[1, 4], 0), -3).unwrap(), &[1, 4, 3], &[4, 1, 4], 0);
    check_err(unsqueeze(l(&[3, 4], &[4, 1], 0), 3), Status::Index, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    check_err(unsqueeze(l(&[3, 4], &[4, 1], 0), -4), Status::Index, "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
    check(expand(l(&[1, 3, 1], &[3, 1, 1], 2), &[2, 4, 3, 5]).unwrap(), &[2, 4, 3, 5], &[0, 0, 1, 0], 2);
    check(expand(l(&[1, 3, 1], &[3, 1, 1], 2), &[1, -1, 3, -1]).unwrap(), &[1, 1, 3, 1], &[3, 3, 1, 1], 2);
    check(expand(l(&[3, 4], &[10, 2], 5), &[1, 2, 3, 4]).unwrap(), &[1, 2, 3, 4], &[0, 0, 10, 2], 5);
    check(expand(l(&[], &[], 3), &[3, 2]).unwrap(), &[3, 2], &[0, 0], 3);
    check(expand(l(&[], &[], 3), &[1]).unwrap(), &[1], &[0], 3);
    check(expand(l(&[], &[], 3), &[]).unwrap(), &[], &[], 3);
    check(expand(l(&[2, 0, 3], &[3, 3, 1], 0), &[1, 2, 0, 3]).unwrap(), &[1, 2, 0, 3], &[6, 3, 3, 1], 0);
    check(expand(l(&[4, 3], &[0, 1], 0), &[2, 4, 3]).unwrap(), &[2, 4, 3], &[0, 0, 1], 0);
    check_err(expand(l(&[3, 4], &[4, 1], 0), &[4]), Status::Shape, "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)");
    check_err(expand(l(&[3, 4], &[4, 1], 0), &[2, 4]), Status::Shape, "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  Target sizes: [2, 4].  Tensor sizes: [3, 4]");
    check_err(expand(l(&[3, 4], &[4, 1], 0), &[-1, 3, 4]), Status::InvalidArgument, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0");
    check_err(expand(l(&[1, 3, 1], &[3, 1, 1], 2), &[-2, 3, 1]), Status::InvalidArgument, "expanded size of the tensor (-2) is negative");
    check_err(expand(l(&[], &[], 3), &[-1, 3]), Status::InvalidArgument, "expanded size of the tensor (-1) is negative");
    check_err(expand(l(&[3, 4], &[4, 1], 0), &[3, -2]), Status::Shape, "The expanded size of the tensor (-2) must match the existing size (4) at non-singleton dimension 1.  Target sizes: [3, -2].  Tensor sizes: [3, 4]");
    check(unflatten(l(&[3, 4], &[4, 1], 0), 1, &[2, 2]).unwrap(), &[3, 2, 2], &[4, 2, 1], 0);
    check(unflatten(l(&[4, 3], &[1, 4], 0), 0, &[-1, 2]).unwrap(), &[2, 2, 3], &[2, 1, 4], 0);
    check(unflatten(l(&[3, 4], &[10, 2], 5), -1, &[2, 1, 2]).unwrap(), &[3, 2, 1, 2], &[10, 4, 4, 2], 5);
    check(unflatten(l(&[2, 0, 3], &[3, 3, 1], 0), 1, &[0, 5]).unwrap(), &[2, 0, 5, 3], &[15, 15, 3, 1], 0);
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 1, &[3, 2]), Status::Shape, "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input tensor");
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 1, &[]), Status::InvalidArgument, "unflatten: sizes must be non-empty");
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 1, &[-1, -1]), Status::InvalidArgument, "only one dimension can be inferred");
    check_err(unflatten(l(&[2, 0, 3], &[3, 3, 1], 0), 1, &[-1, 0]), Status::Shape, "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any value and is ambiguous");
    check_err(unflatten(l(&[], &[], 3), 0, &[1]), Status::Index, "Dimension specified as 0 but tensor has no dimensions");
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 2, &[1]), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    check(diagonal(l(&[3, 4], &[4, 1], 0), 0, 0, 1).unwrap(), &[3], &[5], 0);
    check(diagonal(l(&[3, 4], &[4, 1], 0), 1, 0, 1).unwrap(), &[3], &[5], 1);
    check(diagonal(l(&[3, 4], &[4, 1], 0), -2, 1, 0).unwrap(), &[2], &[5], 2);
    check(diagonal(l(&[3, 4], &[4, 1], 0), 10, 0, 1).unwrap(), &[0], &[5], 0);
    check(diagonal(l(&[3, 4], &[4, 1], 0), -10, 0, 1).unwrap(), &[0], &[5], 0);
    check(diagonal(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), 1, 3, -3).unwrap(), &[2, 4, 2], &[60, 15, 4], 1);
    check(diagonal(l(&[2, 3, 4, 5], &[60, 1, 15, 3], 0), -1, -1, 0).unwrap(), &[3, 4, 2], &[1, 15, 63], 3);
    check(diagonal(l(&[2, 0, 3], &[3, 3, 1], 0), 0, 0, 2).unwrap(), &[0, 2], &[3, 4], 0);
    check_err(diagonal(l(&[3, 4], &[4, 1], 0), 0, 1, -1), Status::InvalidArgument, "diagonal dimensions cannot be identical 1, -1");
    check_err(diagonal(l(&[3, 4], &[4, 1], 0), 0, 0, 2), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    check_err(diagonal(l(&[], &[], 3), 0, 0, 1), Status::Index, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    check(unfold(l(&[3, 4], &[4, 1], 0), 1, 2, 1).unwrap(), &[3, 3, 2], &[4, 1, 1], 0);
    check(unfold(l(&[3, 4], &[10, 2], 5), 0, 2, 2).unwrap(), &[1, 4, 2], &[20, 2, 10], 5);
    check(unfold(l(&[3, 4], &[4, 1], 0), -1, 0, 3).unwrap(), &[3, 2, 0], &[4, 3, 1], 0);
    check(unfold(l(&[2, 0, 3], &[3, 3, 1], 0), 1, 0, 2).unwrap(), &[2, 1, 3, 0], &[3, 6, 1, 3], 0);
    check(unfold(l(&[], &[], 3), 0, 1, 1).unwrap(), &[1], &[1], 3);
    check(unfold(l(&[], &[], 3), -1, 0, 5).unwrap(), &[0], &[1], 3);
    check_err(unfold(l(&[3, 4], &[4, 1], 0), 1, 5, 1), Status::Shape, "maximum size for tensor at dimension 1 is 4 but size is 5");
    check_err(unfold(l(&[], &[], 3), 0, 2, 1), Status::Shape, "maximum size for tensor at dimension 0 is 1 but size is 2");
    check_err(unfold(l(&[3, 4], &[4, 1], 0), 1, -1, 0), Status::InvalidArgument, "size is -1 but must be >= 0");
    check_err(unfold(l(&[3, 4], &[4, 1], 0), 1, 2, 0), Status::InvalidArgument, "step is 0 but must be > 0");
    check_err(unfold(l(&[3, 4], &[4, 1], 0), -3, 2, 1), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
}

#[test]
#[rustfmt::skip]
fn view_dtype_matches_pytorch() {
    check(view_dtype(l(&[3, 4], &[4, 1], 0), DType::F32, DType::F16).unwrap(), &[3, 8], &[8, 1], 0);
    check(view_dtype(l(&[3, 2], &[4, 1], 2), DType::F32, DType::U8).unwrap(), &[3, 8], &[16, 1], 8);
    check(view_dtype(l(&[0, 3], &[3, 1], 0), DType::F32, DType::U8).unwrap(), &[0, 12], &[12, 1], 0);
    check(view_dtype(l(&[3, 1], &[1, 1], 0), DType::F32, DType::I16).unwrap(), &[3, 2], &[2, 1], 0);
    check_err(view_dtype(l(&[3, 4], &[5, 1], 0), DType::U8, DType::I16), Status::Shape, "self.stride(0) must be divisible by 2 to view Byte as Short (different element sizes), but got 5");
    check_err(view_dtype(l(&[3, 4], &[6, 1], 1), DType::U8, DType::I16), Status::Shape, "self.storage_offset() must be divisible by 2 to view Byte as Short (different element sizes), but got 1");
    check(view_dtype(l(&[4, 8], &[8, 1], 4), DType::U8, DType::I32).unwrap(), &[4, 2], &[2, 1], 1);
    check(view_dtype(l(&[0, 4], &[4, 1], 0), DType::U8, DType::I32).unwrap(), &[0, 1], &[1, 1], 0);
    check_err(view_dtype(l(&[4, 0], &[1, 1], 0), DType::U8, DType::I32), Status::Shape, "self.stride(0) must be divisible by 4 to view Byte as Int (different element sizes), but got 1");
    check_err(view_dtype(l(&[3], &[1], 0), DType::U8, DType::I16), Status::Shape, "self.size(-1) must be divisible by 2 to view Byte as Short (different element sizes), but got 3");
    check_err(view_dtype(l(&[], &[], 0), DType::C128, DType::I64), Status::Shape, "self.dim() cannot be 0 to view ComplexDouble as Long (different element sizes)");
    check(view_dtype(l(&[], &[], 3), DType::F32, DType::I32).unwrap(), &[], &[], 3);
    check(view_dtype(l(&[4, 3], &[1, 4], 0), DType::F32, DType::I32).unwrap(), &[4, 3], &[1, 4], 0);
    check_err(view_dtype(l(&[4, 3], &[1, 4], 0), DType::F32, DType::F16), Status::Shape, "self.stride(-1) must be 1 to view Float as Half (different element sizes), but got 4");
    check_err(view_dtype(l(&[3, 1], &[1, 5], 0), DType::F32, DType::F16), Status::Shape, "self.stride(-1) must be 1 to view Float as Half (different element sizes), but got 5");
    check_err(view_dtype(l(&[2, 2], &[2, 2], 0), DType::F32, DType::I64), Status::Shape, "self.stride(-1) must be 1 to view Float as Long (different element sizes), but got 2");
    check(view_dtype(l(&[2, 8], &[8, 1], 0), DType::I16, DType::C128).unwrap(), &[2, 1], &[1, 1], 0);
    check_err(view_dtype(l(&[2, 2, 3, 4], &[24, 1, 8, 2], 0), DType::F16, DType::F64), Status::Shape, "self.stride(-1) must be 1 to view Half as Double (different element sizes), but got 2");
    check(view_dtype(l(&[2, 3, 4], &[12, 4, 1], 0), DType::Bool, DType::I32).unwrap(), &[2, 3, 1], &[3, 1, 1], 0);
}

#[test]
#[rustfmt::skip]
fn as_strided_matches_pytorch() {
    // storage of 20 float32 = 80 bytes
    check(as_strided(&[2, 3], &[3, 1], 14, 4, 80).unwrap(), &[2, 3], &[3, 1], 14);
    check_err(as_strided(&[2, 3], &[3, 1], 15, 4, 80), Status::OutOfBounds, "setStorage: sizes [2, 3], strides [3, 1], storage offset 15, and itemsize 4 requiring a storage size of 84 are out of bounds for storage of size 80");
    check(as_strided(&[0, 3], &[100, 1], 100, 4, 80).unwrap(), &[0, 3], &[100, 1], 100);
    check(as_strided(&[4, 5], &[0, 1], 0, 4, 80).unwrap(), &[4, 5], &[0, 1], 0);
    check(as_strided(&[], &[], 19, 4, 80).unwrap(), &[], &[], 19);
    check_err(as_strided(&[], &[], 20, 4, 80), Status::OutOfBounds, "requiring a storage size of 84 are out of bounds for storage of size 80");
    check_err(as_strided(&[2], &[1, 2], 0, 4, 80), Status::InvalidArgument, "mismatch in length of strides and shape");
    check_err(as_strided(&[2], &[-1], 0, 4, 80), Status::InvalidArgument, "as_strided: Negative strides are not supported at the moment, got strides: [-1]");
    check_err(as_strided(&[2], &[1], -1, 4, 80), Status::InvalidArgument, "Tensor: invalid storage offset -1");
    check_err(as_strided(&[1 << 62, 4], &[4, 1], 0, 4, 80), Status::Overflow, "Storage size calculation overflowed with sizes=[4611686018427387904, 4] and strides=[4, 1]");
    // PyTorch reports a negative size as an overflow; we say what it is.
    check_err(as_strided(&[-1, 4], &[4, 1], 0, 4, 80), Status::InvalidArgument, "Negative sizes");
    // PyTorch's order: a negative offset is reported before a negative size or the bounds.
    check_err(as_strided(&[-1, 4], &[4, 1], -1, 4, 80), Status::InvalidArgument, "invalid storage offset -1");
    check_err(as_strided(&[4, 4], &[4, 1], -1, 4, 48), Status::InvalidArgument, "invalid storage offset -1");
}

#[test]
#[rustfmt::skip]
fn view_matches_pytorch() {
    let (n, st) = ([2, 3, 4], [12, 4, 1]);
    check(view(l(&n, &st, 0), &[4, -1]).unwrap().unwrap(), &[4, 6], &[6, 1], 0);
    // transpose(1, 2) of [2,3,4]: [2,4,3] strides [12,1,4]
    assert_eq!(view(l(&[2, 4, 3], &[12, 1, 4], 0), &[2, 12]).unwrap(), None);
    check(view(l(&[2, 4, 3], &[12, 1, 4], 0), &[2, 2, 2, 3]).unwrap().unwrap(), &[2, 2, 2, 3], &[12, 2, 1, 4], 0);
    check_err(view(l(&n, &st, 0), &[5, -1]).map(|g| g.unwrap()), Status::Shape, "shape '[5, -1]' is invalid for input of size 24");
    check(view(l(&[], &[], 7), &[1, 1]).unwrap().unwrap(), &[1, 1], &[1, 1], 7);
}

fn arange_f64(n: i64) -> Tensor {
    Tensor::arange(n, DType::F64).unwrap()
}

#[test]
fn views_share_storage_version_and_update_flags() {
    let base = arange_f64(24).view(&[2, 3, 4]).unwrap();
    assert!(base.is_contiguous(MemoryFormat::Contiguous));
    let t = base.transpose(0, 2).unwrap();
    assert_eq!(t.sizes(), &[4, 3, 2]);
    assert_eq!(t.strides(), &[1, 4, 12]);
    assert!(t.shares_storage(&base));
    assert!(!t.is_contiguous(MemoryFormat::Contiguous));
    assert!(t.is_non_overlapping_and_dense());
    // element [3, 1, 1] of the transpose is base[1, 1, 3] = 12 + 4 + 3
    assert_eq!(t.get(&[3, 1, 1]).unwrap().to_f64(), 19.0);
    let e = base.select(0, 1).unwrap().expand(&[5, 3, 4]).unwrap();
    assert!(!e.is_non_overlapping_and_dense());
    assert!(e.has_internal_overlap());
    // writes through a view land in the base and bump the shared counter
    let s = base.slice(2, 1, i64::MAX, 2).unwrap();
    assert_eq!(s.sizes(), &[2, 3, 2]);
    s.set(&[1, 2, 1], Scalar::Float(-1.0)).unwrap();
    assert_eq!(base.get(&[1, 2, 3]).unwrap().to_f64(), -1.0);
    assert_eq!(base.version(), 1);
    assert_eq!(t.version(), 1);
    // channels-last flags after a permute of a contiguous NHWC-ordered tensor
    let nhwc = arange_f64(120).view(&[2, 4, 5, 3]).unwrap();
    let nchw = nhwc.permute(&[0, 3, 1, 2]).unwrap();
    assert!(nchw.is_contiguous(MemoryFormat::ChannelsLast));
    assert!(!nchw.is_contiguous(MemoryFormat::Contiguous));
    assert_eq!(nchw.suggest_memory_format(), MemoryFormat::ChannelsLast);
}

#[test]
fn alias_detach_and_view_dtype_tensors() {
    let base = arange_f64(6);
    let a = base.alias().unwrap();
    assert!(!a.is_same(&base));
    assert!(a.shares_storage(&base));
    assert_eq!(
        (a.sizes(), a.strides(), a.storage_offset()),
        (base.sizes(), base.strides(), base.storage_offset())
    );
    let d = base.detach().unwrap();
    d.set(&[0], Scalar::Float(3.0)).unwrap();
    assert_eq!(base.version(), 1);
    assert_eq!(a.version(), 1);
    // f64 -> i32 halves the element size: [6] becomes [12]
    let v = base.view_dtype(DType::I32).unwrap();
    assert_eq!(v.dtype(), DType::I32);
    assert_eq!(v.sizes(), &[12]);
    assert!(v.shares_storage(&base));
    // 1.0f64 = 0x3FF0_0000_0000_0000: the high i32 (little-endian: index 3) is 0x3FF00000
    assert_eq!(v.get(&[3]).unwrap().to_i64(), 0x3FF0_0000);
    assert_eq!(v.version(), 1);
    // out-of-bounds as_strided is refused against the storage, not the view
    let small = base.slice(0, 0, 2, 1).unwrap();
    assert!(small.as_strided(&[6], &[1], 0).is_ok());
    assert_eq!(
        small.as_strided(&[7], &[1], 0).err().unwrap().status,
        Status::OutOfBounds
    );
}

#[test]
fn layout_is_inline_up_to_max_inline_dims() {
    let g = unsqueeze(l(&[2, 3, 4, 5], &[60, 20, 5, 1], 0), 0)
        .unwrap()
        .built();
    assert_eq!(g.ndim(), MAX_INLINE_DIMS);
    assert!(!g.spilled());
    let g = unfold(l(&[2, 3, 4, 5, 6], &[360, 120, 30, 6, 1], 0), 1, 2, 1).unwrap();
    assert_eq!(g.ndim(), MAX_INLINE_DIMS + 1);
    assert!(g.spilled());
}

/// Divergences the conformance run (conformance/conformance.py) found, fixed, and pinned
/// here with PyTorch's outputs.
#[test]
#[rustfmt::skip]
fn conformance_findings() {
    // view(dtype) growing: PyTorch checks the last size, the offset, the last stride, then
    // the other strides.
    let what = "to view Byte as Short (different element sizes)";
    check_err(view_dtype(l(&[3, 4], &[5, 2], 0), DType::U8, DType::I16), Status::Shape, &format!("self.stride(-1) must be 1 {what}, but got 2"));
    check_err(view_dtype(l(&[3, 4], &[6, 2], 1), DType::U8, DType::I16), Status::Shape, &format!("self.storage_offset() must be divisible by 2 {what}, but got 1"));
    check_err(view_dtype(l(&[3, 3], &[6, 2], 0), DType::U8, DType::I16), Status::Shape, &format!("self.size(-1) must be divisible by 2 {what}, but got 3"));
    check_err(view_dtype(l(&[3, 4], &[5, 1], 1), DType::U8, DType::I16), Status::Shape, &format!("self.storage_offset() must be divisible by 2 {what}, but got 1"));
    check_err(view_dtype(l(&[3, 1], &[4, 2], 0), DType::U8, DType::I16), Status::Shape, &format!("self.size(-1) must be divisible by 2 {what}, but got 1"));
    check_err(view_dtype(l(&[3, 2], &[4, 3], 0), DType::U8, DType::I16), Status::Shape, &format!("self.stride(-1) must be 1 {what}, but got 3"));
    // unflatten, in ATen's order (torch.ops.aten.unflatten; the Python method checks the
    // sizes first): the dim range (0-dim wraps as 1-D), empty sizes, then the missing dim
    // of a 0-dim tensor.
    check_err(unflatten(l(&[], &[], 0), -2, &[]), Status::Index, "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 5, &[]), Status::Index, "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 1, &[]), Status::InvalidArgument, "unflatten: sizes must be non-empty");
    check_err(unflatten(l(&[], &[], 0), -1, &[]), Status::InvalidArgument, "unflatten: sizes must be non-empty");
    check_err(unflatten(l(&[], &[], 0), -4, &[1]), Status::Index, "Dimension out of range (expected to be in range of [-1, 0], but got -4)");
    check_err(unflatten(l(&[], &[], 0), -1, &[1]), Status::Index, "Dimension specified as 0 but tensor has no dimensions");
    // infer_size names the offending index and shape
    check_err(view(l(&[3, 4], &[4, 1], 0), &[3, -2, 4]).map(|g| g.unwrap()), Status::InvalidArgument, "invalid shape dimension -2 at index 1 of shape [3, -2, 4]");
    check_err(unflatten(l(&[3, 4], &[4, 1], 0), 1, &[-2, -1, -1]), Status::InvalidArgument, "invalid shape dimension -2 at index 0 of shape [-2, -1, -1]");
}

/// Strides that overflow int64 (only reachable on tensors with 0 elements, whose strides
/// are unconstrained): PyTorch wraps around and then fails elsewhere (e.g. "Found
/// heap-allocated concrete SymInt ... -9223372036854775808"); we refuse with Overflow.
#[test]
#[rustfmt::skip]
fn overflowing_strides_are_refused() {
    let (n, st) = ([2, 0], [1i64 << 62, 1]);
    check_err(unsqueeze(l(&n, &st, 0), 0), Status::Overflow, "unsqueeze stride");
    check_err(slice(l(&[3, 0], &st, 0), 0, 0, 3, 4), Status::Overflow, "slice stride");
    check_err(diagonal(l(&[2, 2, 0], &[1 << 62, 1 << 62, 1], 0), 0, 0, 1), Status::Overflow, "diagonal stride");
    check_err(unfold(l(&n, &st, 0), 0, 1, 4), Status::Overflow, "unfold stride");
    check_err(expand(l(&n, &st, 0), &[1, 2, 0]), Status::Overflow, "expand stride");
    check_err(view_dtype(l(&[0, 2], &[1 << 62, 1], 0), DType::F32, DType::U8), Status::Overflow, "view(dtype) stride");
    // A huge step on a small stride is fine, as in PyTorch: [3] stride 1, step 2^62.
    check(slice(l(&[3], &[1], 0), 0, 0, 3, 1 << 62).unwrap(), &[1], &[1 << 62], 0);
    // Step INT64_MAX: PyTorch's size formula (len + step - 1) / step overflows, giving an
    // error for len 2..3 ("Storage size calculation overflowed with sizes=[-1]") and a
    // wrong size 0 for len >= 4. We give Python's answer: one element.
    check(slice(l(&[3], &[1], 0), 0, 1, i64::MAX, i64::MAX).unwrap(), &[1], &[i64::MAX], 1);
    check(slice(l(&[8], &[1], 0), 0, 0, i64::MAX, i64::MAX).unwrap(), &[1], &[i64::MAX], 0);
}

/// Layouts without elements may have any offset and strides: the offset arithmetic of
/// select and diagonal is checked (Overflow, in release and debug builds alike).
#[test]
fn offset_arithmetic_on_empty_layouts_is_checked() {
    let off = i64::MAX - 1;
    let e = select(l(&[0, 4], &[1, i64::MAX / 2], off), 1, 3).unwrap_err();
    assert_eq!(e.status, Status::Overflow);
    assert_eq!(
        select(l(&[0, 4], &[1, i64::MAX / 2], off), 1, 0)
            .unwrap()
            .offset,
        off
    );
    let st = [1, 1 << 61, 1 << 61];
    for k in [1, -1] {
        let e = diagonal(l(&[0, 4, 4], &st, off), k, 1, 2).unwrap_err();
        assert_eq!(e.status, Status::Overflow, "offset {k}");
    }
    assert_eq!(
        diagonal(l(&[0, 4, 4], &st, off), 0, 1, 2).unwrap().offset,
        off
    );
    // A shape whose contiguous strides overflow is not "not viewable".
    let e = view(l(&[0], &[1], 0), &[0, 1 << 40, 1 << 40]).unwrap_err();
    assert_eq!(e.status, Status::Overflow);
}

/// Past [`MAX_INLINE_DIMS`] a transpose fills its heap block by a copy of the input's and
/// two writes (`Swap::fill_heap`), not one `dim` call per dim: every pair of dims (equal
/// ones, negative ones) of 6 to 10 dims (the cached block size and past it) gives the
/// input with those two dims swapped.
#[test]
fn transpose_past_the_inline_dims_swaps_exactly_two_dims() {
    for nd in MAX_INLINE_DIMS + 1..=10 {
        let sizes: Vec<i64> = (0..nd as i64).map(|i| i + 2).collect();
        let strides: Vec<i64> = (0..nd as i64).map(|i| 1000 - 7 * i).collect();
        for a in 0..nd {
            for b in 0..nd {
                let (mut n, mut st) = (sizes.clone(), strides.clone());
                n.swap(a, b);
                st.swap(a, b);
                let src = l(&sizes, &strides, 9);
                check(transpose(src, a as i64, b as i64).unwrap(), &n, &st, 9);
                let g = transpose(src, a as i64 - nd as i64, b as i64)
                    .unwrap()
                    .built();
                assert!(g.spilled(), "{nd} dims live in a heap block");
                check(g, &n, &st, 9);
            }
        }
    }
}

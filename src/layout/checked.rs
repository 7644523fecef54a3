//! The one validation of a layout for a dtype: [`CheckedLayout`], whose constructors take
//! the strides in any of the [`Strides`] forms a caller gives.

use super::Layout;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{self, fmt_dims, Dims};

/// The strides a caller gives with its sizes: none (row-major), in elements, or in bytes
/// (OpenCV's `step`, FFmpeg's `linesize`, NumPy's `__array_interface__`: each a multiple of
/// the item size).
#[derive(Clone, Copy, Debug)]
pub enum Strides<'a> {
    Contiguous,
    Elements(&'a [i64]),
    Bytes(&'a [i64]),
}

impl<'a> Strides<'a> {
    /// `None` (a NULL strides pointer from C): contiguous; else in elements.
    pub fn elements_or_contiguous(strides: Option<&'a [i64]>) -> Self {
        strides.map_or(Strides::Contiguous, Strides::Elements)
    }
}

/// A layout that passed the one validation for a dtype: at most `MAX_DIMS` dims, as many
/// strides as sizes, sizes, strides and offset >= 0, numel and the byte extent free of
/// int64 overflow. Its fields are private and its only constructors are [`new`](Self::new)
/// and [`check`](Self::check), so a value of this type proves all that; what is left to
/// check against a storage is the one comparison `nbytes() <= storage.nbytes()`, which
/// `Tensor::new` makes (a storage made for the layout has exactly `nbytes()` bytes).
pub struct CheckedLayout {
    layout: Layout,
    /// The product of the sizes.
    numel: i64,
    /// Bytes of storage the layout reaches at `dtype`'s item size (0 without elements).
    nbytes: i64,
    dtype: DType,
}

impl CheckedLayout {
    /// Validates a layout given as slices (by C, a wrap, a test): see
    /// [`new_then`](Self::new_then).
    pub fn new(sizes: &[i64], strides: Strides, offset: i64, dtype: DType) -> Result<Self> {
        Self::new_then(sizes, strides, offset, dtype, Ok)
    }

    /// Validates a layout given as slices: the sizes first (number of dims, signs), then the
    /// strides as given (`Contiguous`: row-major; `Bytes`: each a multiple of the item
    /// size, converted to elements, checked before the sizes), then
    /// [`check`](Self::check)'s one pass; builds the [`Layout`] it proves and hands the
    /// result to `then`.
    // The continuation: returned in a Result, the checked layout is copied once more on its
    // way into the TensorImpl (benches/c/count.sh: from_storage 656 -> 719 instructions,
    // from_blob 766 -> 793). The view rules' `check` returns a Result: there a continuation
    // measured worse (a closure shared by the view methods is compiled out of line).
    #[inline(always)]
    pub fn new_then<T>(
        sizes: &[i64],
        strides: Strides,
        offset: i64,
        dtype: DType,
        then: impl FnOnce(CheckedLayout) -> Result<T>,
    ) -> Result<T> {
        let owned: Dims;
        let strides: &[i64] = match strides {
            Strides::Contiguous => {
                shape::check_sizes(sizes)?;
                owned = shape::contiguous_strides(sizes)?;
                &owned
            }
            Strides::Elements(st) => {
                shape::check_sizes(sizes)?;
                st
            }
            Strides::Bytes(b) => {
                owned = elements_from_bytes(b, dtype)?;
                shape::check_sizes(sizes)?;
                &owned
            }
        };
        let (numel, nbytes) = shape::validate_layout(sizes, strides, offset, dtype.itemsize())?;
        then(CheckedLayout {
            layout: Layout::new(sizes, strides, offset)?,
            numel,
            nbytes,
            dtype,
        })
    }

    /// Validates `layout` (a view rule's output) for `dtype`: [`shape::validate_layout`],
    /// one pass over the dims.
    // Inlining: check, Tensor::new and the TensorImpl view constructors are
    // #[inline(always)] so that each view method is one function in which the layout its
    // rule wrote is read in place and moved once into the TensorImpl; out of line, it is
    // passed and copied through memory (benches/c/count.sh: 40 to 90 more instructions per
    // view with #[inline]).
    #[inline(always)]
    pub fn check(layout: Layout, dtype: DType) -> Result<Self> {
        let (numel, nbytes) = Self::validate(&layout, dtype)?;
        Ok(CheckedLayout {
            layout,
            numel,
            nbytes,
            dtype,
        })
    }

    /// The one validation of a layout for `dtype` ([`shape::validate_layout`]): its numel
    /// and the bytes of storage it reaches. What [`check`](Self::check) proves, and what a
    /// layout written in place (`TensorImpl::make_view_lazy`) is checked by where it lies.
    #[inline(always)]
    pub fn validate(layout: &Layout, dtype: DType) -> Result<(i64, i64)> {
        let l = layout.as_ref();
        shape::validate_layout(l.sizes, l.strides, l.offset, dtype.itemsize())
    }

    /// The storage-bounds check: the bytes the layout reaches within `storage_nbytes`
    /// ([`LayoutRef::check_fits`](super::LayoutRef::check_fits)'s message on failure).
    #[inline(always)]
    pub fn check_fits(&self, storage_nbytes: usize) -> Result<()> {
        if self.nbytes as u64 <= storage_nbytes as u64 {
            return Ok(());
        }
        Err(self.out_of_bounds(storage_nbytes))
    }

    // Out of line and cold, as LayoutRef's: the hot path does not materialise the
    // borrowed layout for the message (count.sh: 14 instructions per view).
    #[cold]
    #[inline(never)]
    fn out_of_bounds(&self, storage_nbytes: usize) -> Error {
        let itemsize = self.dtype.itemsize();
        (self.layout.as_ref()).out_of_bounds(itemsize, self.nbytes, storage_nbytes)
    }

    #[inline]
    pub fn numel(&self) -> i64 {
        self.numel
    }
    /// Bytes of storage the layout reaches (a wrap's storage size).
    #[inline]
    pub fn nbytes(&self) -> usize {
        // validate_layout checked it non-negative and within i64.
        self.nbytes as usize
    }
    /// A tensor's own layout moved to offset 0, for a new tensor with its dtype: valid
    /// without checking again when `layout` (of `numel` elements at `dtype`) is
    /// non-overlapping and dense, since then it reaches exactly `numel` items from offset 0
    /// (and the tensor's extent already fit in i64). `None` when it does not qualify or
    /// the copy cannot be allocated (callers then take the checking path).
    #[inline(always)] // into the clone's `empty_dense_like`, which writes it in place
    pub fn dense_at_zero(layout: &Layout, numel: i64, dtype: DType, dense: bool) -> Option<Self> {
        if !dense {
            return None;
        }
        let nbytes = numel.checked_mul(dtype.itemsize() as i64)?;
        Some(CheckedLayout {
            layout: Layout {
                dims: layout.dims.try_clone().ok()?,
                offset: 0,
            },
            numel,
            nbytes,
            dtype,
        })
    }

    /// The layout, its numel and dtype, for the TensorImpl that takes them.
    #[inline(always)]
    pub fn into_parts(self) -> (Layout, i64, DType) {
        (self.layout, self.numel, self.dtype)
    }
}

/// Byte strides as element strides: each must be a multiple of `dtype`'s item size.
fn elements_from_bytes(byte_strides: &[i64], dtype: DType) -> Result<Dims> {
    let isz = dtype.itemsize() as i64;
    if let Some((d, &st)) = byte_strides
        .iter()
        .enumerate()
        .find(|(_, &st)| st % isz != 0)
    {
        bail!(
            InvalidArgument,
            "byte stride {st} of dim {d} is not a multiple of the item size {isz} of {} (byte strides {})",
            dtype.name().trim_end_matches('\0'),
            fmt_dims(byte_strides)
        );
    }
    // Fallible beyond MAX_INLINE_DIMS, like every other dims list (no abort on OOM).
    let mut st = shape::dims_from_slice(byte_strides)?;
    st.iter_mut().for_each(|s| *s /= isz);
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;
    use crate::shape::contiguous_strides;

    /// The three ways to give strides name one layout: `Contiguous`, the row-major
    /// strides in elements, and those strides in bytes give the same checked layout (sizes,
    /// strides, numel, bytes reached), and `check` of a built layout agrees with `new`.
    #[test]
    fn checked_layout_stride_forms_agree() {
        for (sizes, dtype) in [
            (&[2i64, 3, 4][..], DType::F32),
            (&[][..], DType::C128),
            (&[5, 0, 7][..], DType::I16),
            (&[1, 1, 9][..], DType::U8),
        ] {
            let st = contiguous_strides(sizes).unwrap();
            let bytes: Vec<i64> = st.iter().map(|s| s * dtype.itemsize() as i64).collect();
            let forms = [
                CheckedLayout::new(sizes, Strides::Contiguous, 0, dtype).unwrap(),
                CheckedLayout::new(sizes, Strides::Elements(&st), 0, dtype).unwrap(),
                CheckedLayout::new(sizes, Strides::Bytes(&bytes), 0, dtype).unwrap(),
                CheckedLayout::check(Layout::new(sizes, &st, 0).unwrap(), dtype).unwrap(),
            ];
            let numel: i64 = sizes.iter().product();
            for c in &forms {
                assert_eq!(c.layout, forms[0].layout, "{sizes:?}");
                assert_eq!(
                    (c.numel(), c.nbytes()),
                    (numel, numel as usize * dtype.itemsize())
                );
            }
        }
    }

    /// The one validation's order: byte strides are checked before the sizes, the sizes
    /// (count, signs) before the strides, then the one pass (signs, overflow); bounds come
    /// last, against a storage size.
    #[test]
    fn checked_layout_refusals() {
        let err = |r: Result<CheckedLayout>| r.err().expect("refused");
        let e = err(CheckedLayout::new(
            &[-1, 2],
            Strides::Bytes(&[6, 4]),
            0,
            DType::F32,
        ));
        assert!(
            e.message.contains("byte stride 6 of dim 0"),
            "{}",
            e.message
        );
        let e = err(CheckedLayout::new(
            &[-1, 2],
            Strides::Elements(&[-2, 1]),
            0,
            DType::F32,
        ));
        assert!(e.message.contains("negative dimension -1"), "{}", e.message);
        let e = err(CheckedLayout::new(
            &[1; 65],
            Strides::Contiguous,
            0,
            DType::U8,
        ));
        assert!(e.message.contains("number of dims 65"), "{}", e.message);
        let e = err(CheckedLayout::new(
            &[2, 2],
            Strides::Elements(&[-2, 1]),
            0,
            DType::F32,
        ));
        assert!(e.message.contains("negative strides"), "{}", e.message);
        let e = err(CheckedLayout::new(
            &[2],
            Strides::Elements(&[1]),
            -1,
            DType::F32,
        ));
        assert!(
            e.message.contains("negative storage offset -1"),
            "{}",
            e.message
        );
        let big = [1i64 << 40, 1 << 40];
        let e = err(CheckedLayout::new(
            &big,
            Strides::Elements(&[0, 0]),
            0,
            DType::F32,
        ));
        assert_eq!(e.status, Status::Overflow);
        let c = CheckedLayout::new(&[4], Strides::Elements(&[2]), 1, DType::F32).unwrap();
        assert_eq!(c.nbytes(), 32);
        assert!(c.check_fits(32).is_ok());
        let e = c.check_fits(31).unwrap_err();
        assert_eq!(e.status, Status::OutOfBounds);
        assert!(
            e.message.contains("requiring a storage size of 32"),
            "{}",
            e.message
        );
    }
}

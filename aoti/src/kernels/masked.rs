//! Ops whose elements are chosen by a mask or by counts, which Inductor leaves to fallbacks
//! (their output sizes or their order of reads depend on the data): `masked_select`,
//! `masked_scatter`, `repeat_interleave_Tensor`.

use super::{
    broadcast, dispatch_all, for_each_position, not_implemented, row_major, AtenTensorHandle,
};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Bool, Element, Owned, Tensor};

/// ATen's masked kernels take every dtype but uint16, uint32, uint64.
fn masked_dtype(t: Tensor, op: &str) -> Result<()> {
    util::require_cpu(t, "self")?;
    let d = t.dtype();
    if matches!(
        d,
        sys::TENSOR_UINT16 | sys::TENSOR_UINT32 | sys::TENSOR_UINT64
    ) {
        return not_implemented(op, d);
    }
    Ok(())
}

/// A bool mask argument (ATen refuses the deprecated uint8 masks here).
fn require_bool_mask(m: Tensor, op: &str) -> Result<()> {
    util::require_cpu(m, "mask")?;
    if m.dtype() != sys::TENSOR_BOOL {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "{op}: expected BoolTensor for mask, got {}",
                util::dtype_name(m.dtype())
            ),
        );
    }
    Ok(())
}

/// The broadcast shape of `a` and `b`, or SHAPE with ATen's message.
fn broadcast2(a: Tensor, b: Tensor) -> Result<Vec<i64>> {
    broadcast(&[a.sizes(), b.sizes()]).ok_or_else(|| crate::error::Error {
        status: sys::TENSOR_ERR_SHAPE,
        msg: format!(
            "the shapes {:?} and {:?} cannot be broadcast together",
            a.sizes(),
            b.sizes()
        ),
    })
}

/// Calls `f(a_offset)` for every position of `shape` in row-major order where the mask
/// (broadcast to `shape`) is true, `a_offset` the offset of that position in `a` (broadcast
/// to `shape` too).
fn for_each_selected(
    shape: &[i64],
    a: Tensor,
    mask: Tensor,
    mut f: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let (ea, em) = (a.expand(shape)?, mask.expand(shape)?);
    let (sa, sm) = (ea.get().strides().to_vec(), em.get().strides().to_vec());
    let mv = em.get().values::<Bool>()?;
    for_each_position(shape, &row_major(shape.len()), [&sa, &sm], |_, [x, m]| {
        if mv[m as usize].0 != 0 {
            f(x as usize)?;
        }
        Ok(())
    })
}

/// `masked_select(self, mask)`: the elements of self (broadcast with mask) where mask is
/// true, in row-major order, as a new contiguous 1-D tensor of self's dtype (every dtype
/// but uint16 / uint32 / uint64, as ATen, which takes those when nothing is selected;
/// complex included). Inductor leaves it as this fallback (its size depends on the data).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_masked_select(
    self_: AtenTensorHandle,
    mask: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (t, m) = (handle(self_, "self")?, handle(mask, "mask")?);
        let r = out(ret0, "ret0")?;
        util::require_cpu(t, "self")?;
        require_bool_mask(m, "masked_select")?;
        let shape = broadcast2(t, m)?;
        let mut none = true;
        for_each_selected(&shape, t, m, |_| {
            none = false;
            Ok(())
        })?;
        if none {
            // ATen returns before its kernel: any dtype.
            *r = util::empty(&[0], t.dtype())?.into_raw();
            return Ok(());
        }
        masked_dtype(t, "masked_select")?;
        dispatch_all!(t.dtype(), T => {
            *r = masked_select::<T>(t, m, &shape)?.into_raw()
        }, _ => return not_implemented("masked_select", t.dtype()));
        Ok(())
    })
}

fn masked_select<T: Element>(t: Tensor, m: Tensor, shape: &[i64]) -> Result<Owned> {
    let src = t.values::<T>()?;
    let mut picked: Vec<T> = Vec::new();
    for_each_selected(shape, t, m, |x| {
        picked.push(src[x]);
        Ok(())
    })?;
    let mut o = util::empty(&[picked.len() as i64], T::DTYPE)?;
    // SAFETY: o was just allocated (empty) and nothing else reaches its storage.
    unsafe { o.values_mut::<T>() }?.copy_from_slice(&picked);
    Ok(o)
}

/// `masked_scatter(self, mask, source)`: self broadcast with mask, copied into a new
/// contiguous tensor, whose positions where mask is true (in row-major order) take
/// source's elements in turn (source's own row-major order). ATen's checks: a bool mask,
/// source of self's dtype, at least as many source elements as true mask positions. Every
/// dtype but uint16 / uint32 / uint64, complex included. Inductor leaves it as this fallback.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_masked_scatter(
    self_: AtenTensorHandle,
    mask: AtenTensorHandle,
    source: AtenTensorHandle,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (t, m) = (handle(self_, "self")?, handle(mask, "mask")?);
        let s = handle(source, "source")?;
        let r = out(ret0, "ret0")?;
        masked_dtype(t, "masked_scatter")?;
        util::require_cpu(s, "source")?;
        if s.dtype() != t.dtype() {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "masked_scatter: expected self and source to have same dtypes but got {} and {}",
                    util::dtype_name(t.dtype()),
                    util::dtype_name(s.dtype())
                ),
            );
        }
        require_bool_mask(m, "masked_scatter_ only supports boolean masks")?;
        let shape = broadcast2(t, m)?;
        let mut o = util::empty(&shape, t.dtype())?;
        if o.get().numel() > 0 {
            o.get().copy_from(t)?;
        }
        let src = super::contiguous(s)?;
        dispatch_all!(t.dtype(), T => masked_scatter::<T>(&mut o, m, src.get(), &shape)?,
            _ => return not_implemented("masked_scatter", t.dtype()));
        *r = o.into_raw();
        Ok(())
    })
}

/// Writes source's elements into the true positions of `o` (contiguous, of `shape`, just
/// allocated by the caller and not yet handed out).
fn masked_scatter<T: Element>(o: &mut Owned, m: Tensor, src: Tensor, shape: &[i64]) -> Result<()> {
    let sv = src.values::<T>()?;
    let mut at = Vec::new();
    for_each_selected(shape, o.get(), m, |x| {
        at.push(x);
        Ok(())
    })?;
    if at.len() > sv.len() {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "Number of elements of source < number of ones in mask ({} < {})",
                sv.len(),
                at.len()
            ),
        );
    }
    // SAFETY: o was just allocated by the caller (masked_scatter's contract): nothing else
    // reaches its storage.
    let ov = unsafe { o.values_mut::<T>() }?;
    for (&x, &v) in at.iter().zip(sv) {
        ov[x] = v;
    }
    Ok(())
}

/// `repeat_interleave(repeats, output_size)`: `[0] * repeats[0] + [1] * repeats[1] + ...`
/// as a new 1-D tensor of repeats' dtype. ATen's checks: a 1-D tensor of an integer dtype,
/// no negative count, `output_size` (when given) equal to the sum (not checked for empty
/// repeats, as ATen). Inductor leaves
/// `torch.repeat_interleave` with tensor repeats as this fallback (with a tensor input it
/// indexes the input with the result itself).
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_repeat_interleave_Tensor(
    repeats: AtenTensorHandle,
    output_size: *mut i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let rp = handle(repeats, "repeats")?;
        let r = out(ret0, "ret0")?;
        util::require_cpu(rp, "repeats")?;
        if rp.ndim() != 1 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!(
                    "repeat_interleave only accept 1D vector as repeat, got sizes {:?}",
                    rp.sizes()
                ),
            );
        }
        let want = super::optional(output_size.cast_const());
        let c = super::contiguous(rp)?;
        crate::dispatch!(rp.dtype(), [u8, i8, i16, i32, i64], T => {
            *r = repeat_interleave::<T>(c.get().values::<T>()?, want)?.into_raw()
        }, _ => return not_implemented("repeat_interleave_cpu", rp.dtype()));
        Ok(())
    })
}

/// An integer element as a count and an index written back into its dtype (C++'s
/// conversions: a too-large index wraps, as ATen's stores do).
trait Count: Element {
    fn count(self) -> i64;
    fn index(i: i64) -> Self;
}

macro_rules! count {
    ($($t:ty),*) => {$(
        impl Count for $t {
            fn count(self) -> i64 {
                self as i64
            }
            fn index(i: i64) -> $t {
                i as $t
            }
        }
    )*};
}
count!(u8, i8, i16, i32, i64);

fn repeat_interleave<T: Count>(counts: &[T], want: Option<i64>) -> Result<Owned> {
    if counts.is_empty() {
        // ATen returns early, whatever output_size says.
        return util::empty(&[0], T::DTYPE);
    }
    let mut total = 0i64;
    for &c in counts {
        let n = c.count();
        if n < 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "repeats can not be negative",
            );
        }
        total = total.checked_add(n).ok_or(crate::error::Error {
            status: sys::TENSOR_ERR_OVERFLOW,
            msg: "the sum of repeats overflows".into(),
        })?;
    }
    if want.is_some_and(|w| w != total) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "allocated size does not match required size (output_size {:?}, sum {total})",
                want.unwrap_or(0)
            ),
        );
    }
    let mut o = util::empty(&[total], T::DTYPE)?;
    // SAFETY: o was just allocated (empty) and nothing else reaches its storage.
    let ov = unsafe { o.values_mut::<T>() }?;
    let mut at = 0usize;
    for (i, &c) in counts.iter().enumerate() {
        let n = c.count() as usize;
        ov[at..at + n].fill(T::index(i as i64));
        at += n;
    }
    Ok(o)
}

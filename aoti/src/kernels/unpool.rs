//! `max_unpool2d`, `max_unpool3d`: the inverse of max pooling, which Inductor leaves to
//! fallbacks when the graph has it (F.max_unpool2d / 3d after max_pool with indices are
//! decomposed by Inductor into its own scatter with the default configs; these are for the
//! packages that keep the op). Zeros everywhere but at each plane's flat `indices`, which
//! take the input's values (the last one written wins on a repeated index, as ATen's serial
//! loops). float16, bfloat16, float32, float64, as ATen's kernels.

use super::{not_implemented, AtenTensorHandle};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

/// The checks both ops share: int64 indices of self's shape, one spatial size per spatial
/// dim, non-empty non-batch dims.
fn check(x: Tensor, ix: Tensor, output_size: &[i64], sp: usize, op: &str) -> Result<()> {
    util::require_cpu(x, "self")?;
    util::require_cpu(ix, "indices")?;
    if ix.dtype() != sys::TENSOR_INT64 {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "elements in indices should be type int64 but got: {}",
                util::dtype_name(ix.dtype())
            ),
        );
    }
    if output_size.len() != sp {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!(
                "There should be exactly {sp} elements in output_size, but got {} elements.",
                output_size.len()
            ),
        );
    }
    let nd = x.ndim() as usize;
    if nd != sp + 1 && nd != sp + 2 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "Input to {op} should be a {}d or {}d Tensor, but got a tensor with {nd} dimensions.",
                sp + 1,
                sp + 2
            ),
        );
    }
    if x.sizes() != ix.sizes() {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "Expected shape of indices to be same as that of the input tensor ({:?}) but got indices tensor with shape: {:?}",
                x.sizes(),
                ix.sizes()
            ),
        );
    }
    if let Some(d) = (1..nd).find(|&d| x.sizes()[d] == 0) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!(
                "{op}(): Expected input to have non-zero size for non-batch dimensions, but got {:?} with dimension {d} being empty.",
                x.sizes()
            ),
        );
    }
    if output_size.iter().any(|&s| s < 0) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("output_size {output_size:?} has a negative size"),
        );
    }
    Ok(())
}

/// The unpooled output: `[.., C, *output_size]` zeros in `fmt`, each plane's positions
/// `indices` set to self's values.
fn unpool(x: Tensor, ix: Tensor, output_size: &[i64], fmt: i32) -> Result<Owned> {
    let sp = output_size.len();
    let nd = x.ndim() as usize;
    let mut osizes = x.sizes()[..nd - sp].to_vec();
    osizes.extend_from_slice(output_size);
    let plane = super::checked_numel(output_size, "output_size")?;
    let o = util::empty_strided(&osizes, &util::format_strides(&osizes, fmt)?, x.dtype())?;
    o.get().fill_i64(0)?;
    if o.get().numel() == 0 {
        return Ok(o);
    }
    let (xc, ic) = (super::contiguous(x)?, super::contiguous(ix)?);
    let idx = ic.get().values::<i64>()?;
    // (o is not empty, so neither are the leading dims nor, by `check`, self's planes)
    let planes: i64 = osizes[..nd - sp].iter().product();
    let per = idx.len() / planes as usize;
    if let Some(&bad) = idx.iter().find(|&&i| !(0..plane as i64).contains(&i)) {
        let dims: Vec<String> = output_size.iter().map(|s| s.to_string()).collect();
        return err(
            sys::TENSOR_ERR_INDEX,
            format!(
                "Found an invalid max index: {bad} (output volumes are of size {})",
                dims.join("x")
            ),
        );
    }
    // Offsets of a plane's flat position `i` in o, through o's strides.
    let ost = o.get().strides().to_vec();
    let spatial = &ost[nd - sp..];
    let lead = &ost[..nd - sp];
    let lead_sizes = &osizes[..nd - sp];
    let flat_offset = |mut i: i64| -> i64 {
        let mut off = 0;
        for d in (0..sp).rev() {
            off += (i % output_size[d]) * spatial[d];
            i /= output_size[d];
        }
        off
    };
    let mut ow = o;
    crate::dispatch!(x.dtype(), [half::f16, half::bf16, f32, f64], T => {
        let xv = xc.get().values::<T>()?;
        // SAFETY: ow was allocated (empty_strided) above and is handed out only after this:
        // nothing else reaches its storage.
        let ov = unsafe { ow.values_mut::<T>() }?;
        scatter_planes(ov, xv, idx, lead, lead_sizes, per, &flat_offset);
    }, _ => return not_implemented("max_unpool", x.dtype()));
    Ok(ow)
}

/// For each plane `p` (row-major over the leading dims `lead_sizes`, strides `lead`) and
/// each of its `per` inputs: `ov[plane offset + flat_offset(idx)] = xv[..]`, in input order.
fn scatter_planes<T: Element>(
    ov: &mut [T],
    xv: &[T],
    idx: &[i64],
    lead: &[i64],
    lead_sizes: &[i64],
    per: usize,
    flat_offset: &impl Fn(i64) -> i64,
) {
    let mut coord = vec![0i64; lead_sizes.len()];
    for p in 0..xv.len() / per.max(1) {
        let base: i64 = coord.iter().zip(lead).map(|(&c, &s)| c * s).sum();
        for k in 0..per {
            let at = p * per + k;
            ov[(base + flat_offset(idx[at])) as usize] = xv[at];
        }
        for d in (0..coord.len()).rev() {
            coord[d] += 1;
            if coord[d] < lead_sizes[d] {
                break;
            }
            coord[d] = 0;
        }
    }
}

/// `max_unpool2d(self, indices, output_size)`: 3-D or 4-D self; the output in self's
/// suggested memory format (channels-last for a channels-last 4-D self), as ATen's.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_max_unpool2d(
    self_: AtenTensorHandle,
    indices: AtenTensorHandle,
    output_size: *const i64,
    output_size_len_: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, ix) = (handle(self_, "self")?, handle(indices, "indices")?);
        let size = util::array(output_size, output_size_len_, "output_size")?;
        let r = out(ret0, "ret0")?;
        check(x, ix, size, 2, "max_unpooling2d_forward_out_cpu")?;
        let fmt = if x.ndim() == 4 {
            x.suggest_memory_format()
        } else {
            sys::TENSOR_CONTIGUOUS_FORMAT
        };
        *r = unpool(x, ix, size, fmt)?.into_raw();
        Ok(())
    })
}

/// `max_unpool3d(self, indices, output_size, stride, padding)`: 4-D or 5-D self; stride and
/// padding are only checked (three values each, positive strides), as ATen does; the output
/// is contiguous, as ATen's.
#[no_mangle]
pub extern "C" fn aoti_torch_cpu_max_unpool3d(
    self_: AtenTensorHandle,
    indices: AtenTensorHandle,
    output_size: *const i64,
    output_size_len_: i64,
    stride: *const i64,
    stride_len_: i64,
    padding: *const i64,
    padding_len_: i64,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, ix) = (handle(self_, "self")?, handle(indices, "indices")?);
        let size = util::array(output_size, output_size_len_, "output_size")?;
        let st = util::array(stride, stride_len_, "stride")?;
        let pad = util::array(padding, padding_len_, "padding")?;
        let r = out(ret0, "ret0")?;
        check(x, ix, size, 3, "max_unpooling3d_forward_out_cpu")?;
        for (v, name) in [(st, "stride"), (pad, "padding")] {
            if v.len() != 3 {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!("There should be exactly three elements (depth, height, width) in {name}, but got: {} elements.", v.len()),
                );
            }
        }
        if st.iter().any(|&s| s <= 0) {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("strides should be greater than zero, but got stride: {st:?}"),
            );
        }
        *r = unpool(x, ix, size, sys::TENSOR_CONTIGUOUS_FORMAT)?.into_raw();
        Ok(())
    })
}

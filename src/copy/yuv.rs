//! `copy_yuv_affine_`'s argument rules (an op of layer 1, see `copy/mod.rs`): the colour
//! code, the planes' dtypes and sizes against `dst`'s, then one write step
//! (`write.rs`) whose walk is the kernel of `kernels/yuv.rs` (the arithmetic is written
//! there).

use super::kernels::yuv::{run, Coef, Job, S16, S8};
use super::write::{Source, Write};
use crate::dtype::DType;
use crate::error::{Error, Result, Status};
use crate::shape::fmt_dims;
use crate::tensor_impl::TensorImpl;
use half::{bf16, f16};

/// The colour codes of `tensor_copy_yuv_affine_` (the header's `TENSOR_YUV_*`).
pub(crate) const BT601: i32 = 1;
pub(crate) const BT709: i32 = 2;
pub(crate) const BT2020: i32 = 3;
pub(crate) const LIMITED: i32 = 0x10;
pub(crate) const FULL: i32 = 0x20;
pub(crate) const BGR: i32 = 0x100;
pub(crate) const MSB: i32 = 0x200;

/// The coefficients of `color` and whether it asks for BGR order, or INVALID_ARGUMENT.
pub(crate) fn coef(color: i32) -> Result<(Coef, bool)> {
    let (kr, kb) = match color & 0xf {
        BT601 => (0.299, 0.114),
        BT709 => (0.2126, 0.0722),
        BT2020 => (0.2627, 0.0593),
        _ => (f64::NAN, f64::NAN),
    };
    let range = color & 0xf0;
    ensure!(
        !kr.is_nan() && (range == LIMITED || range == FULL) && color & !(0x3ff) == 0,
        InvalidArgument,
        "unknown color {color:#x}: expected one of TENSOR_YUV_BT601 / BT709 / BT2020, OR'd with \
         TENSOR_YUV_LIMITED or TENSOR_YUV_FULL, and optionally TENSOR_YUV_BGR and TENSOR_YUV_MSB"
    );
    let (y0, ky, kc) = if range == LIMITED {
        (16.0, 255.0 / 219.0, 255.0 / 224.0)
    } else {
        (0.0, 1.0, 1.0)
    };
    let kg = 1.0 - kr - kb;
    let c = Coef {
        y0,
        ky: ky as f32,
        rv: (2.0 * (1.0 - kr) * kc) as f32,
        gu: (-2.0 * (1.0 - kb) * kb / kg * kc) as f32,
        gv: (-2.0 * (1.0 - kr) * kr / kg * kc) as f32,
        bu: (2.0 * (1.0 - kb) * kc) as f32,
    };
    Ok((c, color & BGR != 0))
}

/// `dst` ← the RGB of the planes `y`, `u`, `v` (`v` None: NV12, `u` interleaved), see
/// the module doc; `param(c)` is dst channel c's (scale, shift) (only `c < n`).
/// Errors: InvalidArgument (color, n), DType, Shape, Index (channel_dim), Device,
/// OutOfBounds, ReadOnly, Overlap, OutOfMemory.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_yuv_affine_(
    dst: &TensorImpl,
    y: &TensorImpl,
    u: &TensorImpl,
    v: Option<&TensorImpl>,
    color: i32,
    channel_dim: i64,
    n: i64,
    param: &dyn Fn(usize) -> (f64, f64),
) -> Result<()> {
    let (k, bgr) = coef(color)?;
    ensure!(
        n == 1 || n == 3,
        InvalidArgument,
        "n (the number of scale and shift values) must be 1 or 3, got {n}"
    );
    let dt = dst.dtype();
    ensure!(
        matches!(dt, DType::F32 | DType::F16 | DType::BF16 | DType::U8),
        DType,
        "dst must be float32, float16, bfloat16 or uint8, got {}",
        dt.name()
    );
    // uint8 planes, or uint16 planes of 10-bit samples (low bits; TENSOR_YUV_MSB: high).
    let wide = y.dtype() == DType::U16;
    let planes = [("y", Some(y)), ("u", Some(u)), ("v", v)];
    for (name, t) in planes {
        if let Some(t) = t {
            ensure!(
                t.dtype() == y.dtype() && matches!(t.dtype(), DType::U8 | DType::U16),
                DType,
                "plane {name} must be uint8 or uint16, as y ({}), got {}",
                y.dtype().name(),
                t.dtype().name()
            );
        }
    }
    ensure!(
        wide || color & MSB == 0,
        InvalidArgument,
        "color {color:#x} has TENSOR_YUV_MSB, which is for uint16 planes; the planes are uint8"
    );
    let m = match (wide, color & MSB != 0) {
        (false, _) => 1.0,
        (true, false) => 0.25,
        (true, true) => 1.0 / 256.0,
    };
    // dst: [3, H, W], [H, W, 3] (any position of the channel dim) or with a leading 1.
    let nd = dst.ndim();
    let sizes = dst.sizes();
    let cd = crate::shape::wrap_dim(channel_dim, nd)?;
    let first = nd.saturating_sub(3);
    ensure!(
        (nd == 3 || (nd == 4 && sizes[0] == 1)) && cd >= first && sizes[cd] == 3,
        Shape,
        "dst must be [3, H, W] or [H, W, 3] (or with a leading batch dim of 1) with 3 channels \
         at channel_dim, got sizes {} and channel_dim {channel_dim}",
        fmt_dims(sizes)
    );
    // The H and W dims of dst, in order.
    let mut sp = [0usize; 2];
    for (slot, i) in sp.iter_mut().zip((first..nd).filter(|&i| i != cd)) {
        *slot = i;
    }
    let (h, w) = (sizes[sp[0]], sizes[sp[1]]);
    let (hc, wc) = (h / 2 + h % 2, w / 2 + w % 2);
    let want = |t: &TensorImpl, name: &str, s: &[i64]| -> Result<()> {
        ensure!(
            t.sizes() == s,
            Shape,
            "plane {name} has sizes {}, expected {} for a {h}x{w} dst",
            fmt_dims(t.sizes()),
            fmt_dims(s)
        );
        Ok(())
    };
    want(y, "y", &[h, w])?;
    match v {
        Some(v) => {
            want(u, "u", &[hc, wc])?;
            want(v, "v", &[hc, wc])?;
        }
        None => want(u, "u (NV12: interleaved U and V, v NULL)", &[hc, wc, 2])?,
    }
    let wr = Write::begin(dst, false)?;
    let d = wr.ptr();
    // The planes as read (a plane that shares memory with dst: its snapshot), alive until
    // the end.
    let (ysrc, usrc) = (wr.source(y)?, wr.source(u)?);
    let vsrc = match v {
        Some(v) => Some(wr.source(v)?),
        None => None,
    };
    // Data pointer and byte strides (the layouts were validated, so each byte offset fits
    // an isize; the sizes were checked: two or three dims).
    let isz = y.itemsize() as i64;
    let bytes = |s: &Source| {
        let st = s.tensor().strides();
        (
            s.ptr(),
            [0, 1, 2].map(|i| st.get(i).map_or(0, |&x| x * isz)),
        )
    };
    let (yp, ys) = bytes(&ysrc);
    let (up, us) = bytes(&usrc);
    let (vp, vs) = match &vsrc {
        Some(v) => bytes(v),
        None => (up.wrapping_offset(us[2] as isize), us),
    };
    if dst.numel() > 0 {
        let mut scratch: Vec<f32> = Vec::new();
        scratch.try_reserve_exact(6 * wc as usize).map_err(|_| {
            Error::from_fmt(
                Status::OutOfMemory,
                format_args!("failed to allocate a chroma row buffer of {wc} columns"),
            )
        })?;
        scratch.resize(6 * wc as usize, 0.0);
        let st = dst.strides();
        let pc = |c: usize| {
            let (a, b) = param(if n == 1 { 0 } else { c });
            (a as f32, b as f32)
        };
        // dst channels of R, G and B.
        let ch = if bgr { [2, 1, 0] } else { [0, 1, 2] };
        let job = Job {
            h: h as usize,
            w: w as usize,
            y: yp,
            y_row: ys[0] as isize,
            y_col: ys[1] as isize,
            u: up,
            u_row: us[0] as isize,
            u_col: us[1] as isize,
            v: vp,
            v_row: vs[0] as isize,
            v_col: vs[1] as isize,
            out: ch.map(|c| c as isize * st[cd] as isize),
            d_row: st[sp[0]] as isize,
            d_col: st[sp[1]] as isize,
            param: ch.map(pc),
            k,
            stream: wr.stream(),
            m,
        };
        // SAFETY: the layouts were validated (data_for_write / data_for_read: device,
        // bounds, writable, no internal overlap of dst); the planes' sizes were checked
        // against dst's H and W (chroma at ceil(H/2) x ceil(W/2), NV12's V one stride
        // after U, inside its last dim of 2), and a plane sharing memory with dst is read
        // from a snapshot; the scratch holds 6·wc floats.
        unsafe {
            match (dt, wide) {
                (DType::F32, false) => run::<f32, S8>(&job, d as *mut f32, &mut scratch),
                (DType::F16, false) => run::<f16, S8>(&job, d as *mut f16, &mut scratch),
                (DType::BF16, false) => run::<bf16, S8>(&job, d as *mut bf16, &mut scratch),
                (_, false) => run::<u8, S8>(&job, d, &mut scratch),
                (DType::F32, true) => run::<f32, S16>(&job, d as *mut f32, &mut scratch),
                (DType::F16, true) => run::<f16, S16>(&job, d as *mut f16, &mut scratch),
                (DType::BF16, true) => run::<bf16, S16>(&job, d as *mut bf16, &mut scratch),
                (_, true) => run::<u8, S16>(&job, d, &mut scratch),
            }
        }
    }
    wr.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_codes_are_checked() {
        for bad in [
            0,
            BT601,
            LIMITED,
            4 | FULL,
            BT709 | LIMITED | FULL,
            BT601 | FULL | 0x400,
        ] {
            assert!(coef(bad).is_err(), "{bad:#x}");
        }
        assert!(coef(BT2020 | FULL | BGR).unwrap().1);
    }
}

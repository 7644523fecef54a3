//! Discrete Fourier transforms: `_fft_r2c` (float32 / float64 to complex64 / complex128,
//! `onesided` keeping `n / 2 + 1` bins of the last transformed dim) and `_fft_c2c` (forward
//! or inverse), over any set of dims, of any length.
//!
//! Each 1-D transform runs in float64 whatever the dtype: mixed-radix Cooley-Tukey
//! (decimation in time) when every prime factor of the length is at most [`MAX_RADIX`],
//! Bluestein's chirp-z transform through a power-of-two one otherwise. A real input is
//! transformed as a complex one.
//!
//! `normalization` as ATen's (fft_norm_mode): 0 none, 1 by `1 / sqrt(n)`, any other value by
//! `1 / n` (the MKL build of torch scales every code but 0 and 1 by 1 / n), `n` the product of
//! the transformed sizes of the input. The output strides are those ATen's MKL path gives
//! (aten/src/ATen/native/mkl/SpectralOps.cpp, `_exec_fft`): the batch dims outermost in
//! decreasing input-stride order, then the transformed dims in decreasing input-stride order
//! (for r2c the last listed dim stays last), contiguous in that order; an input without
//! elements gives a contiguous empty output.

use std::ops::{Add, Mul, Sub};

use super::complex::{as_real, complex_of, value_dtype};
use super::{contiguous, for_each_offset, AtenTensorHandle, F32, F64};
use super::{C128, C64};
use crate::error::{err, fn_name, shim, Error, Result};
use crate::sys;
use crate::util::{self, handle, out, Element, Owned, Tensor};

/// The largest prime factor the mixed-radix transform handles; a length with a larger one
/// goes through Bluestein.
const MAX_RADIX: usize = 31;

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__fft_r2c(
    self_: AtenTensorHandle,
    dim: *const i64,
    dim_len_: i64,
    normalization: i64,
    onesided: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let x = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let dims = util::array(dim, dim_len_, "dim")?;
        let cdtype = complex_of(x, "the real-to-complex FFT")?;
        *r = fft(x, dims, normalization, true, onesided != 0, cdtype)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu__fft_c2c(
    self_: AtenTensorHandle,
    dim: *const i64,
    dim_len_: i64,
    normalization: i64,
    forward: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let x = handle(self_, "self")?;
        let r = out(ret0, "ret0")?;
        let dims = util::array(dim, dim_len_, "dim")?;
        util::require_cpu(x, "self")?;
        if !matches!(x.dtype(), C64 | C128) {
            return err(
                sys::TENSOR_ERR_DTYPE,
                format!(
                    "self is {}: the complex-to-complex FFT takes complex64 or complex128",
                    util::dtype_name(x.dtype())
                ),
            );
        }
        *r = fft(x, dims, normalization, forward != 0, false, x.dtype())?.into_raw();
        Ok(())
    })
}

/// Both ops once their dtypes are known: `x` real (r2c, `onesided` meaningful) or complex,
/// the result of complex dtype `cdtype`.
fn fft(
    x: Tensor,
    dims: &[i64],
    normalization: i64,
    forward: bool,
    onesided: bool,
    cdtype: i32,
) -> Result<Owned> {
    let sizes = x.sizes();
    let nd = sizes.len();
    if dims.is_empty() {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            "dim is empty: at least one dim to transform",
        );
    }
    let mut seen = vec![false; nd];
    for &d in dims {
        if d < 0 || d as usize >= nd || seen[d as usize] {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("dim {dims:?}: each must be a distinct dim in [0, {nd}) of self {sizes:?} (no wrapping, as ATen's)"),
            );
        }
        seen[d as usize] = true;
    }
    let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let last = *dims.last().expect("dims is not empty");
    let real = !matches!(x.dtype(), C64 | C128);
    let mut osizes = sizes.to_vec();
    if real && onesided {
        if sizes[last] == 0 {
            return err(
                sys::TENSOR_ERR_SHAPE,
                format!("dim {last} of self {sizes:?} is empty: no onesided transform of it"),
            );
        }
        osizes[last] = sizes[last] / 2 + 1;
    }
    let numel = super::checked_numel(sizes, "self")?;
    if numel == 0 {
        return util::empty(&osizes, cdtype);
    }
    let order = out_order(x.strides(), osizes.len(), &dims, real);
    let (mut work, wstrides) = load(x, numel)?;
    let mut total = 1usize;
    for &d in &dims {
        let n = sizes[d] as usize;
        total *= n;
        transform_dim(&mut work, n, wstrides[d] as usize, forward)?;
    }
    let scale = match normalization {
        0 => 1.0,
        1 => 1.0 / (total as f64).sqrt(),
        _ => 1.0 / total as f64,
    };
    let o = util::empty_permuted(&osizes, &order, cdtype)?;
    let mut view = as_real(o.get())?;
    if value_dtype(cdtype) == F32 {
        store::<f32>(&mut view, &work, &wstrides, scale)?;
    } else {
        store::<f64>(&mut view, &work, &wstrides, scale)?;
    }
    drop(view);
    Ok(o)
}

/// ATen's output layout (`_exec_fft` of its MKL build) as a dim order, outermost first:
/// the batch dims, then the transformed dims (for r2c the last listed one last), each group
/// ordered by decreasing input stride, laid out densely in that order. Ties (size-1 dims,
/// stride 0) are ordered as libstdc++ orders them there: `std::partition` of 0..ndim (batch
/// dims first), then `std::sort`, an insertion sort up to 16 dims (exact up to there).
fn out_order(in_strides: &[i64], nd: usize, dims: &[usize], real: bool) -> Vec<usize> {
    let by_stride = |v: &mut [usize]| v.sort_by(|&a, &b| in_strides[b].cmp(&in_strides[a]));
    let mut signal = dims.to_vec();
    let sortable = if real { signal.len() - 1 } else { signal.len() };
    by_stride(&mut signal[..sortable]);
    let mut batch = partition(nd, |d| !dims.contains(&d));
    by_stride(&mut batch);
    batch.extend(signal);
    batch
}

/// The elements of 0..n for which `keep` holds, in the order libstdc++'s `std::partition`
/// (bidirectional: swapping from both ends) leaves them.
fn partition(n: usize, keep: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let (mut first, mut last) = (0, n);
    'outer: loop {
        loop {
            if first == last {
                break 'outer;
            }
            if keep(v[first]) {
                first += 1;
            } else {
                break;
            }
        }
        last -= 1;
        loop {
            if first == last {
                break 'outer;
            }
            if keep(v[last]) {
                break;
            }
            last -= 1;
        }
        v.swap(first, last);
        first += 1;
    }
    v.truncate(first);
    v
}

/// A complex value in float64.
#[derive(Clone, Copy, Default, Debug)]
struct Cx {
    re: f64,
    im: f64,
}

impl Cx {
    const ZERO: Cx = Cx { re: 0.0, im: 0.0 };

    fn conj(self) -> Cx {
        Cx {
            re: self.re,
            im: -self.im,
        }
    }

    /// `e^{-i pi num / den}` (num reduced by the caller to keep the angle small).
    fn expi(num: f64, den: f64) -> Cx {
        let a = -std::f64::consts::PI * num / den;
        Cx {
            re: a.cos(),
            im: a.sin(),
        }
    }
}

impl Add for Cx {
    type Output = Cx;
    fn add(self, o: Cx) -> Cx {
        Cx {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
}

impl Sub for Cx {
    type Output = Cx;
    fn sub(self, o: Cx) -> Cx {
        Cx {
            re: self.re - o.re,
            im: self.im - o.im,
        }
    }
}

impl Mul for Cx {
    type Output = Cx;
    fn mul(self, o: Cx) -> Cx {
        Cx {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
}

/// `n` zeros, or OUT_OF_MEMORY (not an abort) when they do not fit.
fn zeros(n: usize) -> Result<Vec<Cx>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error {
        status: sys::TENSOR_ERR_OVERFLOW,
        msg: format!("cannot allocate an FFT buffer of {n} complex values"),
    })?;
    v.resize(n, Cx::ZERO);
    Ok(v)
}

/// `x`'s values (real or complex) as float64 complex, in its logical (contiguous) order.
/// `x`'s elements as complex numbers in row-major order, and the (contiguous) strides that
/// index them.
fn load(x: Tensor, numel: usize) -> Result<(Vec<Cx>, Vec<i64>)> {
    let c = contiguous(x)?;
    let t = c.get();
    let strides = t.strides().to_vec();
    let mut w = zeros(numel)?;
    match t.dtype() {
        F32 => fill_real(&mut w, t.values::<f32>()?),
        F64 => fill_real(&mut w, t.values::<f64>()?),
        cd => {
            let view = as_real(t)?; // contiguous: its values are the pairs in order
            if value_dtype(cd) == F32 {
                fill_complex(&mut w, view.get().values::<f32>()?)
            } else {
                fill_complex(&mut w, view.get().values::<f64>()?)
            }
        }
    }
    Ok((w, strides))
}

fn fill_real<T: Element>(w: &mut [Cx], v: &[T]) {
    for (c, &x) in w.iter_mut().zip(v) {
        c.re = x.to_f64();
    }
}

fn fill_complex<T: Element>(w: &mut [Cx], v: &[T]) {
    for (c, p) in w.iter_mut().zip(v.chunks_exact(2)) {
        *c = Cx {
            re: p[0].to_f64(),
            im: p[1].to_f64(),
        };
    }
}

/// Writes `work * scale` into `view`, the real view of the output just allocated (`empty`
/// in `fft`, then `as_real`: nothing else reaches its storage), each output index read from
/// the same index of the work buffer (contiguous strides `wstrides`, the input's sizes).
fn store<T: Element>(view: &mut Owned, work: &[Cx], wstrides: &[i64], scale: f64) -> Result<()> {
    let vs = view.get().sizes();
    let nd = vs.len() - 1;
    let (sizes, ost) = (vs[..nd].to_vec(), view.get().strides()[..nd].to_vec());
    // SAFETY: view is the only tensor over the output's storage while this runs (the output
    // was allocated by `empty` in `fft`, which hands it out only after this returns).
    let dst = unsafe { view.values_mut::<T>() }?;
    for_each_offset(&sizes, &ost, wstrides, |o, w| {
        let v = work[w];
        dst[o] = T::from_f64(v.re * scale);
        dst[o + 1] = T::from_f64(v.im * scale);
    });
    Ok(())
}

/// The 1-D transform of every line of length `n` at stride `stride` of the contiguous
/// buffer `w` (whose other dims are the lines' index).
fn transform_dim(w: &mut [Cx], n: usize, stride: usize, forward: bool) -> Result<()> {
    if n <= 1 {
        return Ok(());
    }
    let plan = Plan::new(n)?;
    let mut line = zeros(n)?;
    let mut res = zeros(n)?;
    let mut scratch = plan.scratch()?;
    let block = n * stride;
    for start in (0..w.len()).step_by(block) {
        for q in 0..stride {
            let base = start + q;
            for (j, c) in line.iter_mut().enumerate() {
                let v = w[base + j * stride];
                *c = if forward { v } else { v.conj() };
            }
            plan.run(&line, &mut res, &mut scratch);
            for (j, &c) in res.iter().enumerate() {
                w[base + j * stride] = if forward { c } else { c.conj() };
            }
        }
    }
    Ok(())
}

/// Forward DFTs of one length: `X_k = Σ_j x_j e^{-2 pi i jk / n}`, unnormalised.
enum Plan {
    Radix(Radix),
    Bluestein(Bluestein),
}

impl Plan {
    fn new(n: usize) -> Result<Plan> {
        let factors = factorize(n);
        if factors.iter().all(|&p| p <= MAX_RADIX) {
            Ok(Plan::Radix(Radix::new(n, factors)?))
        } else {
            Ok(Plan::Bluestein(Bluestein::new(n)?))
        }
    }

    /// The scratch buffer `run` needs.
    fn scratch(&self) -> Result<Vec<Cx>> {
        match self {
            Plan::Radix(_) => Ok(Vec::new()),
            Plan::Bluestein(b) => zeros(2 * b.inner.n),
        }
    }

    /// `out = DFT(x)`, both of the plan's length.
    fn run(&self, x: &[Cx], out: &mut [Cx], scratch: &mut [Cx]) {
        match self {
            Plan::Radix(r) => r.run(x, out),
            Plan::Bluestein(b) => b.run(x, out, scratch),
        }
    }
}

/// The prime factors of `n` (with multiplicity), smallest first.
fn factorize(mut n: usize) -> Vec<usize> {
    let mut f = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n.is_multiple_of(p) {
            f.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        f.push(n);
    }
    f
}

/// Mixed-radix Cooley-Tukey for a length whose prime factors are at most MAX_RADIX.
struct Radix {
    n: usize,
    factors: Vec<usize>,
    /// `e^{-2 pi i k / n}` for k in 0..n.
    twiddles: Vec<Cx>,
}

impl Radix {
    fn new(n: usize, factors: Vec<usize>) -> Result<Radix> {
        let mut twiddles = zeros(n)?;
        for (k, t) in twiddles.iter_mut().enumerate() {
            *t = Cx::expi(2.0 * k as f64, n as f64);
        }
        Ok(Radix {
            n,
            factors,
            twiddles,
        })
    }

    fn run(&self, x: &[Cx], out: &mut [Cx]) {
        self.rec(x, 0, 1, out, &self.factors);
    }

    /// The DFT of the `out.len()` values `x[off + j * stride]` into `out`, by splitting
    /// into `factors[0]` interleaved sub-transforms and combining them.
    fn rec(&self, x: &[Cx], off: usize, stride: usize, out: &mut [Cx], factors: &[usize]) {
        let n = out.len();
        if n == 1 {
            out[0] = x[off];
            return;
        }
        let p = factors[0];
        let m = n / p;
        for j in 0..p {
            self.rec(
                x,
                off + j * stride,
                stride * p,
                &mut out[j * m..(j + 1) * m],
                &factors[1..],
            );
        }
        let step = self.n / n; // w_n^e is twiddles[e * step]
        let wp = self.n / p; // w_p^e is twiddles[e * wp]
        let mut t = [Cx::ZERO; MAX_RADIX];
        for k in 0..m {
            for (q, tq) in t.iter_mut().enumerate().take(p) {
                *tq = out[q * m + k] * self.twiddles[q * k * step];
            }
            if p == 2 {
                out[k] = t[0] + t[1];
                out[k + m] = t[0] - t[1];
                continue;
            }
            for r in 0..p {
                let mut s = t[0];
                for (q, &tq) in t.iter().enumerate().take(p).skip(1) {
                    s = s + tq * self.twiddles[(q * r % p) * wp];
                }
                out[k + r * m] = s;
            }
        }
    }
}

/// Bluestein's chirp-z transform: a DFT of any length as a convolution, done with a
/// power-of-two DFT of at least `2n - 1` points.
struct Bluestein {
    n: usize,
    inner: Radix,
    /// `e^{-i pi k^2 / n}` for k in 0..n.
    chirp: Vec<Cx>,
    /// The inner DFT of the conjugate chirp, wrapped around (`b_k = b_{m-k}`).
    kernel: Vec<Cx>,
}

impl Bluestein {
    fn new(n: usize) -> Result<Bluestein> {
        let m = (2 * n - 1).next_power_of_two();
        let inner = Radix::new(m, factorize(m))?;
        let mut chirp = zeros(n)?;
        let two_n = 2 * n as u128;
        for (k, c) in chirp.iter_mut().enumerate() {
            let e = (k as u128 * k as u128) % two_n; // k^2 mod 2n keeps the angle exact
            *c = Cx::expi(e as f64, n as f64);
        }
        let mut b = zeros(m)?;
        b[0] = chirp[0].conj();
        for k in 1..n {
            b[k] = chirp[k].conj();
            b[m - k] = chirp[k].conj();
        }
        let mut kernel = zeros(m)?;
        inner.run(&b, &mut kernel);
        Ok(Bluestein {
            n,
            inner,
            chirp,
            kernel,
        })
    }

    /// `scratch` holds 2m values.
    fn run(&self, x: &[Cx], out: &mut [Cx], scratch: &mut [Cx]) {
        let m = self.inner.n;
        let (a, f) = scratch.split_at_mut(m);
        for (k, v) in a.iter_mut().enumerate() {
            *v = if k < self.n {
                x[k] * self.chirp[k]
            } else {
                Cx::ZERO
            };
        }
        self.inner.run(a, f);
        // The inverse DFT of f * kernel as conj(DFT(conj(.))) / m.
        for (v, &kv) in f.iter_mut().zip(&self.kernel) {
            *v = (*v * kv).conj();
        }
        self.inner.run(f, a);
        let inv = 1.0 / m as f64;
        for (k, o) in out.iter_mut().enumerate() {
            let c = a[k].conj();
            *o = Cx {
                re: c.re * inv,
                im: c.im * inv,
            } * self.chirp[k];
        }
    }
}

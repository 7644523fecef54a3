//! `grid_sampler_3d`: `F.grid_sample` of a 5-D input, which Inductor leaves to this fallback
//! (it decomposes the 4-D case itself). ATen's CPU kernel step for step: coordinates
//! unnormalized (`align_corners`), then clipped (border) or reflected and clipped
//! (reflection), in the input's dtype; trilinear weights of the 8 corners accumulated in
//! ATen's order, out-of-bounds corners skipped (zeros padding); nearest rounds half to
//! even; a NaN coordinate is out of bounds (in bfloat16, ATen's build takes index 0).
//! float16, bfloat16, float32, float64; bicubic (mode 2), which ATen does not
//! implement for 5-D input, is refused, as are modes and paddings ATen does not define.

use super::{not_implemented, AtenTensorHandle};
use crate::error::{err, fn_name, shim, Result};
use crate::sys;
use crate::util::{self, handle, out, Owned, Tensor};

/// The float arithmetic of a sample, in the tensor's dtype (float16 / bfloat16: each step
/// in float32, rounded back, as c10's Half / BFloat16 operators).
trait Coord: crate::util::Element {
    /// The index ATen's kernel takes for a NaN coordinate: C++'s `static_cast<int64_t>` as
    /// x86 performs it gives INT64_MIN (out of bounds), but ATen's bfloat16 build gives 0.
    const NAN_INDEX: i64 = i64::MIN;
    fn f(self) -> f64;
    /// `v` rounded to this type.
    fn r(v: f64) -> Self;
}

macro_rules! coord {
    ($($t:ty),*) => {$(
        impl Coord for $t {
            fn f(self) -> f64 {
                crate::util::Element::to_f64(self)
            }
            fn r(v: f64) -> $t {
                crate::util::Element::from_f64(v)
            }
        }
    )*};
}
coord!(f32, f64);

impl Coord for half::f16 {
    fn f(self) -> f64 {
        f64::from(self.to_f32())
    }
    fn r(v: f64) -> Self {
        half::f16::from_f32(v as f32)
    }
}

impl Coord for half::bf16 {
    const NAN_INDEX: i64 = 0;
    fn f(self) -> f64 {
        f64::from(self.to_f32())
    }
    fn r(v: f64) -> Self {
        half::bf16::from_f32(v as f32)
    }
}

/// `a op b` in T (each operand a T value, the result rounded to T; for float32 and float64
/// the f64 computation of one operation rounds as T's own would, float32's because the
/// f64 result of one operation on two float32 values rounds to the correctly rounded
/// float32 one).
fn add<T: Coord>(a: T, b: T) -> T {
    T::r(a.f() + b.f())
}
fn sub<T: Coord>(a: T, b: T) -> T {
    T::r(a.f() - b.f())
}
fn mul<T: Coord>(a: T, b: T) -> T {
    T::r(a.f() * b.f())
}
fn div<T: Coord>(a: T, b: T) -> T {
    T::r(a.f() / b.f())
}
fn num<T: Coord>(v: i64) -> T {
    T::r(v as f64)
}

#[derive(Clone, Copy, PartialEq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// ATen's `grid_sampler_unnormalize`.
fn unnormalize<T: Coord>(c: T, size: i64, align: bool) -> T {
    let one = num::<T>(1);
    if align {
        mul(div(add(c, one), num(2)), num(size - 1))
    } else {
        div(sub(mul(add(c, one), num(size)), one), num(2))
    }
}

/// ATen's `clip_coordinates` (`min(size - 1, max(c, 0))`, NaN through `std::max` /
/// `std::min`'s first-argument rule).
fn clip<T: Coord>(c: T, size: i64) -> T {
    let zero = num::<T>(0);
    let hi = num::<T>(size - 1);
    let m = if c < zero { zero } else { c }; // std::max(c, 0): c unless c < 0
    if m < hi {
        m
    } else {
        hi
    } // std::min(hi, m): m if m < hi, else hi
}

/// ATen's `reflect_coordinates` over `[twice_low / 2, twice_high / 2]`.
fn reflect<T: Coord>(c: T, twice_low: i64, twice_high: i64) -> T {
    if twice_low == twice_high {
        return num(0);
    }
    let min = div(num::<T>(twice_low), num(2));
    let span = div(num::<T>(twice_high - twice_low), num(2));
    let x = T::r(sub(c, min).f().abs());
    let extra = T::r(x.f() % span.f());
    let flips = div(x, span).f().floor();
    // C++ casts the floor to int: NaN and huge values are INT_MIN there (even flips).
    let flips = if flips.is_finite() && flips.abs() < 2e9 {
        flips as i64
    } else {
        0
    };
    if flips % 2 == 0 {
        add(extra, min)
    } else {
        add(sub(span, extra), min)
    }
}

/// ATen's `grid_sampler_compute_source_index`.
fn source_index<T: Coord>(c: T, size: i64, pad: Padding, align: bool) -> T {
    let c = unnormalize(c, size, align);
    match pad {
        Padding::Zeros => c,
        Padding::Border => clip(c, size),
        Padding::Reflection => {
            let r = if align {
                reflect(c, 0, 2 * (size - 1))
            } else {
                reflect(c, -1, 2 * size - 1)
            };
            clip(r, size)
        }
    }
}

/// C++'s `static_cast<int64_t>` of a float as x86 performs it: values out of range become
/// INT64_MIN (always out of bounds here), NaN becomes `T::NAN_INDEX`.
fn to_index<T: Coord>(v: f64) -> i64 {
    if v.is_nan() {
        T::NAN_INDEX
    } else if v > -9.2e18 && v < 9.2e18 {
        v as i64
    } else {
        i64::MIN
    }
}

/// `std::nearbyint` in the default rounding mode: half to even.
fn nearbyint(v: f64) -> f64 {
    v.round_ties_even()
}

fn within(i: [i64; 3], size: [i64; 3]) -> bool {
    (0..3).all(|k| i[k] >= 0 && i[k] < size[k])
}

#[no_mangle]
pub extern "C" fn aoti_torch_cpu_grid_sampler_3d(
    input: AtenTensorHandle,
    grid: AtenTensorHandle,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: i32,
    ret0: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let (x, g) = (handle(input, "input")?, handle(grid, "grid")?);
        let r = out(ret0, "ret0")?;
        *r =
            grid_sampler_3d(x, g, interpolation_mode, padding_mode, align_corners != 0)?.into_raw();
        Ok(())
    })
}

fn grid_sampler_3d(x: Tensor, g: Tensor, mode: i64, pad: i64, align: bool) -> Result<Owned> {
    util::require_cpu(x, "input")?;
    util::require_cpu(g, "grid")?;
    if x.ndim() != 5 || g.ndim() != 5 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("grid_sampler(): expected 5D input and grid with same number of dimensions, but got input with sizes {:?} and grid with sizes {:?}", x.sizes(), g.sizes()),
        );
    }
    let (xs, gs) = (x.sizes(), g.sizes());
    if xs[0] != gs[0] {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("grid_sampler(): expected grid and input to have same batch size, but got input with sizes {xs:?} and grid with sizes {gs:?}"),
        );
    }
    if gs[4] != 3 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("grid_sampler(): expected grid to have size 3 in last dimension, but got grid with sizes {gs:?}"),
        );
    }
    if let Some(d) = (2..5).find(|&d| xs[d] == 0) {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes {xs:?} with dimension {d} being empty"),
        );
    }
    let bilinear =
        match mode {
            0 => true,
            1 => false,
            2 => return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                "grid_sampler(): bicubic interpolation with 5D input is not implemented for cpu",
            ),
            m => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!(
                        "grid_sampler(): interpolation mode {m} is not 0 (bilinear) or 1 (nearest)"
                    ),
                )
            }
        };
    let padding = match pad {
        0 => Padding::Zeros,
        1 => Padding::Border,
        2 => Padding::Reflection,
        p => {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!(
                "grid_sampler(): padding mode {p} is not 0 (zeros), 1 (border) or 2 (reflection)"
            ),
            )
        }
    };
    if g.dtype() != x.dtype() {
        return err(
            sys::TENSOR_ERR_DTYPE,
            format!(
                "expected scalar type {} but found {}",
                util::dtype_name(x.dtype()),
                util::dtype_name(g.dtype())
            ),
        );
    }
    let shape = [xs[0], xs[1], gs[1], gs[2], gs[3]];
    let mut o = util::empty(&shape, x.dtype())?;
    if o.get().numel() == 0 {
        return Ok(o);
    }
    let s = Sampler {
        x,
        g,
        bilinear,
        padding,
        align,
    };
    crate::dispatch!(x.dtype(), [half::f16, half::bf16, f32, f64], T => s.run::<T>(&mut o)?,
        _ => return not_implemented("grid_sampler3d_cpu", x.dtype()));
    Ok(o)
}

struct Sampler<'a> {
    x: Tensor<'a>,
    g: Tensor<'a>,
    bilinear: bool,
    padding: Padding,
    align: bool,
}

impl Sampler<'_> {
    /// Fills `o` (contiguous `[N, C, D', H', W']`, just allocated) with the samples.
    fn run<T: Coord>(&self, o: &mut Owned) -> Result<()> {
        let (x, g) = (self.x, self.g);
        let (xv, gv) = (x.values::<T>()?, g.values::<T>()?);
        let (xst, gst) = (x.strides(), g.strides());
        let xs = x.sizes();
        let (n, c) = (xs[0] as usize, xs[1] as usize);
        let size = [xs[2], xs[3], xs[4]]; // D, H, W
        let [od, oh, ow] = [g.sizes()[1], g.sizes()[2], g.sizes()[3]];
        let plane = (od * oh * ow) as usize;
        // SAFETY: o was just allocated by the caller (run's contract): nothing else reaches
        // its storage.
        let ov = unsafe { o.values_mut::<T>() }?;
        for b in 0..n {
            let mut p = 0usize;
            for d in 0..od {
                for h in 0..oh {
                    for w in 0..ow {
                        let at = b as i64 * gst[0] + d * gst[1] + h * gst[2] + w * gst[3];
                        let coord = |k: i64| gv[(at + k * gst[4]) as usize];
                        let ix = source_index(coord(0), size[2], self.padding, self.align);
                        let iy = source_index(coord(1), size[1], self.padding, self.align);
                        let iz = source_index(coord(2), size[0], self.padding, self.align);
                        let base = |ch: usize| b as i64 * xst[0] + ch as i64 * xst[1];
                        let read = |ch: usize, [z, y, xx]: [i64; 3]| {
                            xv[(base(ch) + z * xst[2] + y * xst[3] + xx * xst[4]) as usize]
                        };
                        let out_at = |ch: usize| (b * c + ch) * plane + p;
                        if self.bilinear {
                            let corners = Corners::new(ix, iy, iz);
                            for ch in 0..c {
                                let mut acc = num::<T>(0);
                                for (pos, wt) in corners.points.iter().zip(&corners.weights) {
                                    if within(*pos, size) {
                                        acc = add(acc, mul(read(ch, *pos), *wt));
                                    }
                                }
                                ov[out_at(ch)] = acc;
                            }
                        } else {
                            let pos = [
                                to_index::<T>(nearbyint(iz.f())),
                                to_index::<T>(nearbyint(iy.f())),
                                to_index::<T>(nearbyint(ix.f())),
                            ];
                            for ch in 0..c {
                                ov[out_at(ch)] = if within(pos, size) {
                                    read(ch, pos)
                                } else {
                                    num(0)
                                };
                            }
                        }
                        p += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The 8 corners around a source point (z, y, x order, ATen's tnw, tne, tsw, tse, bnw,
/// bne, bsw, bse) and their trilinear weights, computed as ATen computes them.
struct Corners<T> {
    points: [[i64; 3]; 8],
    weights: [T; 8],
}

impl<T: Coord> Corners<T> {
    fn new(ix: T, iy: T, iz: T) -> Corners<T> {
        let (x0, y0, z0) = (
            to_index::<T>(ix.f().floor()),
            to_index::<T>(iy.f().floor()),
            to_index::<T>(iz.f().floor()),
        );
        let (x1, y1, z1) = (x0.wrapping_add(1), y0.wrapping_add(1), z0.wrapping_add(1));
        let n = num::<T>;
        // (ix_bse - ix) etc.: an integer corner minus a float, in T.
        let wx0 = sub(n(x1), ix); // toward x0
        let wx1 = sub(ix, n(x0)); // toward x1
        let wy0 = sub(n(y1), iy);
        let wy1 = sub(iy, n(y0));
        let wz0 = sub(n(z1), iz);
        let wz1 = sub(iz, n(z0));
        let w3 = |a: T, b: T, c: T| mul(mul(a, b), c);
        Corners {
            points: [
                [z0, y0, x0],
                [z0, y0, x1],
                [z0, y1, x0],
                [z0, y1, x1],
                [z1, y0, x0],
                [z1, y0, x1],
                [z1, y1, x0],
                [z1, y1, x1],
            ],
            weights: [
                w3(wx0, wy0, wz0),
                w3(wx1, wy0, wz0),
                w3(wx0, wy1, wz0),
                w3(wx1, wy1, wz0),
                w3(wx0, wy0, wz1),
                w3(wx1, wy0, wz1),
                w3(wx0, wy1, wz1),
                w3(wx1, wy1, wz1),
            ],
        }
    }
}

//! PyTorch-like repr, following `torch/_tensor_str.py` with the default print options: 4
//! decimals or scientific notation for floats (chosen, with the column width, from the
//! nonzero finite values), integral floats as `1.`, separate formats for the real and
//! imaginary parts of complex values, `True`/`False`, a `dtype=torch.X` suffix for
//! non-default dtypes (moved to its own line when it would pass 80 columns), rows wrapped
//! at 80 columns, and summarisation (3 edge items per dim, `...`) beyond 1000 elements.

use crate::dtype::{read_scalar, DType, Scalar};
use crate::tensor_impl::TensorImpl;

const THRESHOLD: i64 = 1000;
const EDGE: i64 = 3;
const LINE_WIDTH: usize = 80;
const PREFIX: &str = "tensor(";

fn fmt_sci(v: f64) -> String {
    // "1.2346e+03", as Python's '{:.4e}'.
    let s = format!("{v:.4e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// PyTorch's `_Formatter` for floating values: the mode (integral `1.`, fixed 4 decimals,
/// or scientific) and the width come from the nonzero finite values only; every value,
/// nan/inf/0 included, is padded to that width (never truncated).
#[derive(Clone, Copy)]
struct FloatStyle {
    int_mode: bool,
    sci: bool,
    width: usize,
}

impl FloatStyle {
    fn new(values: impl Iterator<Item = f64>) -> FloatStyle {
        let nz: Vec<f64> = values.filter(|v| v.is_finite() && *v != 0.0).collect();
        let mut st = FloatStyle {
            int_mode: true,
            sci: false,
            width: 1,
        };
        if nz.is_empty() {
            return st;
        }
        st.int_mode = nz.iter().all(|v| v.fract() == 0.0);
        let max = nz.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let min = nz.iter().fold(f64::INFINITY, |m, v| m.min(v.abs()));
        st.sci = max / min > 1000.0 || max > 1e8 || (!st.int_mode && min < 1e-4);
        st.width = nz.iter().map(|&v| st.text(v).len()).fold(1, usize::max);
        st
    }

    /// The value without padding.
    fn text(&self, v: f64) -> String {
        if v.is_nan() {
            return "nan".into();
        }
        if v.is_infinite() {
            return if v > 0.0 { "inf".into() } else { "-inf".into() };
        }
        if self.sci {
            fmt_sci(v)
        } else if self.int_mode {
            format!("{v:.0}.")
        } else {
            format!("{v:.4}")
        }
    }

    fn format(&self, v: f64) -> String {
        format!("{:>w$}", self.text(v), w = self.width)
    }
}

/// How every value of one tensor is written (PyTorch uses one formatter, or two for the
/// real and imaginary parts of complex values).
enum Style {
    /// Integers and bools, as `str(v)`, padded to the longest.
    Plain(usize),
    Float(FloatStyle),
    Complex(FloatStyle, FloatStyle),
}

fn plain_text(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => (if b { "True" } else { "False" }).into(),
        Scalar::Int(i) => i.to_string(),
        Scalar::UInt(u) => u.to_string(),
        other => other.to_f64().to_string(),
    }
}

impl Style {
    fn new(values: &[Scalar], dtype: DType) -> Style {
        if dtype.is_complex() {
            let parts = |v: &Scalar| match *v {
                Scalar::Complex(re, im) => (re, im),
                other => (other.to_f64(), 0.0),
            };
            Style::Complex(
                FloatStyle::new(values.iter().map(|v| parts(v).0)),
                FloatStyle::new(values.iter().map(|v| parts(v).1)),
            )
        } else if dtype.is_floating_point() {
            Style::Float(FloatStyle::new(values.iter().map(|v| v.to_f64())))
        } else {
            Style::Plain(
                values
                    .iter()
                    .map(|&v| plain_text(v).len())
                    .fold(1, usize::max),
            )
        }
    }

    /// Columns one element takes, for wrapping rows (PyTorch's `element_length` - 2).
    fn width(&self) -> usize {
        match self {
            Style::Plain(w) => *w,
            Style::Float(f) => f.width,
            Style::Complex(re, im) => re.width + im.width + 1,
        }
    }

    /// One value, padded.
    fn format(&self, s: Scalar) -> String {
        match (self, s) {
            (Style::Complex(rs, is), Scalar::Complex(re, im)) => {
                let real = rs.format(re);
                let imag = format!("{}j", is.format(im));
                let imag = imag.trim_start();
                if imag.starts_with(['+', '-']) {
                    format!("{real}{imag}")
                } else {
                    format!("{real}+{imag}")
                }
            }
            (Style::Float(f), v) => f.format(v.to_f64()),
            (st, v) => format!("{:>w$}", plain_text(v), w = st.width()),
        }
    }
}

/// Indices shown along a dim of size n (all, or the edges when summarising).
fn shown(n: i64, summarize: bool) -> Vec<Option<i64>> {
    if summarize && n > 2 * EDGE {
        let mut v: Vec<Option<i64>> = (0..EDGE).map(Some).collect();
        v.push(None);
        v.extend((n - EDGE..n).map(Some));
        v
    } else {
        (0..n).map(Some).collect()
    }
}

struct Printer<'a> {
    t: &'a TensorImpl,
    base: *const u8,
    summarize: bool,
}

impl Printer<'_> {
    fn read(&self, off: i64) -> Scalar {
        // SAFETY: `off` is the offset of an element of a layout data_for_read checked.
        unsafe {
            read_scalar(
                self.t.dtype(),
                self.base.add(off as usize * self.t.itemsize()),
            )
        }
    }

    fn collect(&self, dim: usize, off: i64, out: &mut Vec<Scalar>) {
        if dim == self.t.ndim() {
            out.push(self.read(off));
            return;
        }
        for i in shown(self.t.sizes()[dim], self.summarize)
            .into_iter()
            .flatten()
        {
            self.collect(dim + 1, off + i * self.t.strides()[dim], out);
        }
    }

    fn write(&self, dim: usize, off: i64, indent: usize, st: &Style, out: &mut String) {
        let nd = self.t.ndim();
        if dim + 1 == nd {
            // Innermost row, wrapped at LINE_WIDTH as PyTorch's _vector_str does.
            let per_line = (LINE_WIDTH.saturating_sub(indent) / (st.width() + 2)).max(1);
            out.push('[');
            let items = shown(self.t.sizes()[dim], self.summarize);
            for (k, i) in items.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                    if k % per_line == 0 {
                        out.push('\n');
                        out.push_str(&" ".repeat(indent + 1));
                    } else {
                        out.push(' ');
                    }
                }
                match i {
                    Some(i) => {
                        out.push_str(&st.format(self.read(off + i * self.t.strides()[dim])));
                    }
                    // PyTorch pads the ellipsis of a row with one space.
                    None => out.push_str(" ..."),
                }
            }
            out.push(']');
            return;
        }
        out.push('[');
        let items = shown(self.t.sizes()[dim], self.summarize);
        for (k, i) in items.iter().enumerate() {
            if k > 0 {
                out.push(',');
                out.push_str(&"\n".repeat(nd - dim - 1));
                out.push_str(&" ".repeat(indent + 1));
            }
            match i {
                Some(i) => self.write(
                    dim + 1,
                    off + i * self.t.strides()[dim],
                    indent + 1,
                    st,
                    out,
                ),
                None => out.push_str("..."),
            }
        }
        out.push(']');
    }
}

/// `dtype=torch.X` unless the dtype is one PyTorch leaves implicit: float32 (the default),
/// and, for non-empty tensors only, int64, bool and complex64 (their values show the type).
fn dtype_suffix(d: DType, empty: bool) -> Option<String> {
    match d {
        DType::F32 => None,
        DType::I64 | DType::Bool | DType::C64 if !empty => None,
        other => Some(format!("dtype=torch.{}", other.name())),
    }
}

/// PyTorch's `_add_suffixes`: ", suffix" on the last line, or on a new line indented under
/// the prefix when it would pass LINE_WIDTH.
fn add_suffixes(out: &mut String, suffixes: &[String]) {
    // PyTorch's `last_line_len` is the last line's length plus 2.
    let mut last_line = 2 + match out.rfind('\n') {
        Some(i) => out.len() - i - 1,
        None => out.len(),
    };
    for s in suffixes {
        if last_line + s.len() + 2 > LINE_WIDTH {
            out.push_str(",\n");
            out.push_str(&" ".repeat(PREFIX.len()));
            last_line = PREFIX.len() + s.len();
        } else {
            out.push_str(", ");
            last_line += s.len() + 2;
        }
        out.push_str(s);
    }
    out.push(')');
}

/// The repr of `t`, as `print(t)` shows it in PyTorch.
pub fn format_tensor(t: &TensorImpl) -> String {
    let mut suffixes: Vec<String> = Vec::new();
    let body = if t.numel() == 0 {
        if t.ndim() != 1 {
            let dims: Vec<String> = t.sizes().iter().map(|n| n.to_string()).collect();
            let tuple = if dims.len() == 1 {
                format!("({},)", dims[0])
            } else {
                format!("({})", dims.join(", "))
            };
            suffixes.push(format!("size={tuple}"));
        }
        "[]".to_string()
    } else {
        match t.data_for_read() {
            Err(_) => {
                let d = t.device();
                let dims: Vec<String> = t.sizes().iter().map(|n| n.to_string()).collect();
                suffixes.push(format!("size=({})", dims.join(", ")));
                suffixes.push(format!("device=({}, {})", d.device_type, d.device_id));
                "<data not accessible from the host>".to_string()
            }
            Ok(_) => {
                let p = Printer {
                    t,
                    base: t.storage().data_ptr(),
                    summarize: t.numel() > THRESHOLD,
                };
                let mut vals = Vec::new();
                p.collect(0, t.storage_offset(), &mut vals);
                let st = Style::new(&vals, t.dtype());
                if t.ndim() == 0 {
                    st.format(vals[0])
                } else {
                    let mut s = String::new();
                    p.write(0, t.storage_offset(), PREFIX.len(), &st, &mut s);
                    s
                }
            }
        }
    };
    if let Some(s) = dtype_suffix(t.dtype(), t.numel() == 0) {
        suffixes.push(s);
    }
    let mut out = String::from(PREFIX);
    out.push_str(&body);
    add_suffixes(&mut out, &suffixes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor_impl::Tensor;

    #[test]
    fn matches_pytorch_reprs() {
        let t = Tensor::arange(4, DType::F32).unwrap();
        assert_eq!(format_tensor(&t), "tensor([0., 1., 2., 3.])");
        let v = t.make_view(&[2, 2], &[2, 1], 0).unwrap();
        assert_eq!(format_tensor(&v), "tensor([[0., 1.],\n        [2., 3.]])");
        let i = Tensor::arange(3, DType::I32).unwrap();
        assert_eq!(format_tensor(&i), "tensor([0, 1, 2], dtype=torch.int32)");
        let l = Tensor::arange(3, DType::I64).unwrap();
        assert_eq!(format_tensor(&l), "tensor([0, 1, 2])");
        let h = Tensor::full(&[2], DType::F64, Scalar::Float(0.5)).unwrap();
        assert_eq!(
            format_tensor(&h),
            "tensor([0.5000, 0.5000], dtype=torch.float64)"
        );
        let b = Tensor::full(&[2], DType::Bool, Scalar::Int(1)).unwrap();
        assert_eq!(format_tensor(&b), "tensor([True, True])");
        let s = Tensor::full(&[], DType::F32, Scalar::Float(3.0)).unwrap();
        assert_eq!(format_tensor(&s), "tensor(3.)");
        let e = Tensor::empty(&[2, 0], DType::F32).unwrap();
        assert_eq!(format_tensor(&e), "tensor([], size=(2, 0))");
        let e1 = Tensor::empty(&[0], DType::I32).unwrap();
        assert_eq!(format_tensor(&e1), "tensor([], dtype=torch.int32)");
        let w = Tensor::arange(3, DType::F32).unwrap();
        w.set(&[0], Scalar::Float(-1.25)).unwrap();
        assert_eq!(format_tensor(&w), "tensor([-1.2500,  1.0000,  2.0000])");
        let big = Tensor::full(&[2], DType::F32, Scalar::Float(1e10)).unwrap();
        assert_eq!(format_tensor(&big), "tensor([1.0000e+10, 1.0000e+10])");
    }

    fn vec_f64(vals: &[f64], dtype: DType) -> Tensor {
        let t = Tensor::zeros(&[vals.len() as i64], dtype).unwrap();
        for (i, &v) in vals.iter().enumerate() {
            t.set(&[i as i64], Scalar::Float(v)).unwrap();
        }
        t
    }

    // Expected strings are repr() of the same tensors in PyTorch 2.x.
    #[test]
    fn width_comes_from_nonzero_finite_values() {
        let t = vec_f64(&[-0.0, 1.0], DType::F32);
        assert_eq!(format_tensor(&t), "tensor([-0., 1.])");
        let t = vec_f64(&[f64::NAN, 1.0], DType::F32);
        assert_eq!(format_tensor(&t), "tensor([nan, 1.])");
        let t = vec_f64(&[1e9, f64::NAN], DType::F32);
        assert_eq!(format_tensor(&t), "tensor([1.0000e+09,        nan])");
        let t = vec_f64(&[0.0, 1e-5], DType::F32);
        assert_eq!(format_tensor(&t), "tensor([0.0000e+00, 1.0000e-05])");
    }

    #[test]
    fn complex_parts_have_their_own_formats() {
        let t = Tensor::zeros(&[2], DType::C64).unwrap();
        t.set(&[0], Scalar::Complex(1.0, 2.0)).unwrap();
        t.set(&[1], Scalar::Complex(-0.0, -0.5)).unwrap();
        assert_eq!(format_tensor(&t), "tensor([1.+2.0000j, -0.-0.5000j])");
        let t = Tensor::zeros(&[2], DType::C128).unwrap();
        t.set(&[0], Scalar::Complex(1e-5, 1.0)).unwrap();
        t.set(&[1], Scalar::Complex(0.0, 2.0)).unwrap();
        assert_eq!(
            format_tensor(&t),
            "tensor([1.0000e-05+1.j, 0.0000e+00+2.j], dtype=torch.complex128)"
        );
    }

    #[test]
    fn rows_wrap_like_pytorch() {
        let t = Tensor::full(&[2, 20], DType::F32, Scalar::Float(0.5)).unwrap();
        let row = "0.5000, 0.5000, 0.5000, 0.5000, 0.5000, 0.5000, 0.5000, 0.5000, 0.5000";
        let want = format!(
            "tensor([[{row},\n         {row},\n         0.5000, 0.5000],\n        [{row},\n         {row},\n         0.5000, 0.5000]])"
        );
        assert_eq!(format_tensor(&t), want);
    }

    #[test]
    fn suffix_moves_to_a_new_line_when_too_long() {
        let t = Tensor::arange(125, DType::U8).unwrap();
        let v = t.make_view(&[25], &[1], 100).unwrap();
        assert_eq!(
            format_tensor(&v),
            "tensor([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113,\n        114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124],\n       dtype=torch.uint8)"
        );
        let e = Tensor::empty(&[0], DType::I64).unwrap();
        assert_eq!(format_tensor(&e), "tensor([], dtype=torch.int64)");
        let e = Tensor::empty(&[2, 0], DType::C64).unwrap();
        assert_eq!(
            format_tensor(&e),
            "tensor([], size=(2, 0), dtype=torch.complex64)"
        );
    }

    #[test]
    fn summarises_large_tensors() {
        let t = Tensor::arange(2000, DType::I64).unwrap();
        assert_eq!(
            format_tensor(&t),
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
        );
    }
}

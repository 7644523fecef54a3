//! PyTorch-like repr (`torch/_tensor_str.py`'s rules, simplified): 4 decimals or
//! scientific notation for floats, integral floats as `1.`, `True`/`False`, a
//! `dtype=torch.X` suffix for non-default dtypes, rows wrapped at 80 columns, and
//! summarisation (3 edge items per dim, `...`) beyond 1000 elements.

use crate::dtype::{read_scalar, DType, Scalar};
use crate::tensor_impl::TensorImpl;

const THRESHOLD: i64 = 1000;
const EDGE: i64 = 3;
const LINE_WIDTH: usize = 80;
const PREFIX: &str = "tensor(";

/// How one value of the tensor is written, chosen from all the values shown.
struct Style {
    int_mode: bool,
    sci: bool,
    width: usize,
}

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

fn fmt_real(v: f64, st: &Style) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if st.sci {
        fmt_sci(v)
    } else if st.int_mode {
        format!("{v:.0}.")
    } else {
        format!("{v:.4}")
    }
}

fn fmt_value(s: Scalar, dtype: DType, st: &Style) -> String {
    match s {
        Scalar::Bool(b) => (if b { "True" } else { "False" }).into(),
        Scalar::Int(i) => i.to_string(),
        Scalar::UInt(u) => u.to_string(),
        Scalar::Float(f) => fmt_real(f, st),
        Scalar::Complex(re, im) => {
            let _ = dtype;
            let imag = fmt_real(im.abs(), st);
            let sign = if im < 0.0 || (im == 0.0 && im.is_sign_negative()) {
                '-'
            } else {
                '+'
            };
            format!("{}{sign}{imag}j", fmt_real(re, st))
        }
    }
}

fn choose_style(values: &[Scalar], dtype: DType) -> Style {
    let mut st = Style {
        int_mode: true,
        sci: false,
        width: 0,
    };
    if dtype.is_floating_point() || dtype.is_complex() {
        let finite: Vec<f64> = values
            .iter()
            .flat_map(|v| match *v {
                Scalar::Complex(re, im) => vec![re, im],
                other => vec![other.to_f64()],
            })
            .filter(|v| v.is_finite())
            .collect();
        st.int_mode = finite.iter().all(|v| v.fract() == 0.0);
        let abs_nz: Vec<f64> = finite
            .iter()
            .map(|v| v.abs())
            .filter(|&v| v > 0.0)
            .collect();
        if !abs_nz.is_empty() {
            let max = abs_nz.iter().cloned().fold(f64::MIN, f64::max);
            let min = abs_nz.iter().cloned().fold(f64::MAX, f64::min);
            st.sci = if st.int_mode {
                max / min > 1000.0 || max > 1e8
            } else {
                max / min > 1000.0 || max > 1e8 || min < 1e-4
            };
        }
    }
    st.width = values
        .iter()
        .map(|&v| fmt_value(v, dtype, &st).len())
        .max()
        .unwrap_or(0);
    st
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
        let dtype = self.t.dtype();
        if dim + 1 == nd {
            // Innermost row, wrapped at LINE_WIDTH.
            let per_line = ((LINE_WIDTH.saturating_sub(indent + 1)) / (st.width + 2)).max(1);
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
                        let v = fmt_value(self.read(off + i * self.t.strides()[dim]), dtype, st);
                        out.push_str(&format!("{v:>w$}", w = st.width));
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

fn dtype_suffix(d: DType) -> Option<String> {
    match d {
        DType::F32 | DType::I64 | DType::Bool | DType::C64 => None,
        other => Some(format!("dtype=torch.{}", other.name())),
    }
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
                let st = choose_style(&vals, t.dtype());
                if t.ndim() == 0 {
                    fmt_value(vals[0], t.dtype(), &Style { width: 0, ..st })
                } else {
                    let mut s = String::new();
                    p.write(0, t.storage_offset(), PREFIX.len(), &st, &mut s);
                    s
                }
            }
        }
    };
    if let Some(s) = dtype_suffix(t.dtype()) {
        suffixes.push(s);
    }
    let mut out = String::from(PREFIX);
    out.push_str(&body);
    for s in suffixes {
        out.push_str(", ");
        out.push_str(&s);
    }
    out.push(')');
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

    #[test]
    fn summarises_large_tensors() {
        let t = Tensor::arange(2000, DType::I64).unwrap();
        assert_eq!(
            format_tensor(&t),
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
        );
    }
}

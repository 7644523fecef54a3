//! PyTorch-like repr, following `torch/_tensor_str.py` with the default print options: 4
//! decimals or scientific notation for floats (chosen, with the column width, from the
//! nonzero finite values), integral floats as `1.`, separate formats for the real and
//! imaginary parts of complex values, `True`/`False`, a `dtype=torch.X` suffix for
//! non-default dtypes (moved to its own line when it would pass 80 columns), rows wrapped
//! at 80 columns, and summarisation (3 edge items per dim, `...`) beyond 1000 elements.
//!
//! Nothing here allocates: the text streams into a [`Sink`] (the caller's buffer, truncated,
//! while the full length is counted), the formatting styles come from passes over the shown
//! elements, and a value is padded by measuring its text first (formatting it twice). So
//! `tensor_format` cannot run out of memory, whatever the tensor.

use crate::dtype::{read_scalar, DType, Scalar};
use crate::tensor_impl::TensorImpl;
use std::fmt::{self, Write};

const THRESHOLD: i64 = 1000;
const EDGE: i64 = 3;
const LINE_WIDTH: usize = 80;
const PREFIX: &str = "tensor(";

/// Where the text goes: the first `dst.len()` bytes are stored, every byte is counted, and
/// the length of the current (last) line is tracked. Never fails, never allocates.
pub struct Sink<'a> {
    dst: &'a mut [u8],
    len: usize,
    line: usize,
}

impl<'a> Sink<'a> {
    pub fn new(dst: &'a mut [u8]) -> Sink<'a> {
        Sink {
            dst,
            len: 0,
            line: 0,
        }
    }
    /// Bytes of the whole text so far (stored or not).
    pub fn len(&self) -> usize {
        self.len
    }
    fn s(&mut self, text: &str) {
        let b = text.as_bytes();
        if self.len < self.dst.len() {
            let n = b.len().min(self.dst.len() - self.len);
            self.dst[self.len..self.len + n].copy_from_slice(&b[..n]);
        }
        self.len = self.len.saturating_add(b.len());
        self.line = match text.rfind('\n') {
            Some(i) => b.len() - i - 1,
            None => self.line.saturating_add(b.len()),
        };
    }
    fn f(&mut self, args: fmt::Arguments<'_>) {
        // write_str below never fails: neither does this.
        let _ = self.write_fmt(args);
    }
    fn repeat(&mut self, text: &str, n: usize) {
        for _ in 0..n {
            self.s(text);
        }
    }
}

impl Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.s(s);
        Ok(())
    }
}

/// The length of what `f` writes (nothing is stored).
fn measure(f: impl FnOnce(&mut Sink)) -> usize {
    let mut s = Sink::new(&mut []);
    f(&mut s);
    s.len
}

/// The first byte of what `f` writes (0 for nothing).
fn first_byte(f: impl FnOnce(&mut Sink)) -> u8 {
    let mut b = [0u8];
    f(&mut Sink::new(&mut b));
    b[0]
}

/// `text` right-aligned in `width` columns (never truncated).
fn padded(out: &mut Sink, width: usize, text: impl Fn(&mut Sink)) {
    let n = measure(&text);
    out.repeat(" ", width.saturating_sub(n));
    text(out);
}

/// A few bytes of formatted text on the stack (one value's `{:.4e}`).
struct Small {
    b: [u8; 48],
    n: usize,
}

impl Write for Small {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.n.checked_add(s.len()).filter(|&e| e <= self.b.len());
        let end = end.ok_or(fmt::Error)?;
        self.b[self.n..end].copy_from_slice(s.as_bytes());
        self.n = end;
        Ok(())
    }
}

fn fmt_sci(out: &mut Sink, v: f64) {
    // "1.2346e+03", as Python's '{:.4e}'.
    let mut s = Small { b: [0; 48], n: 0 };
    // A finite f64 as {:.4e} takes at most 12 bytes ("-1.7977e-308").
    if write!(s, "{v:.4e}").is_err() {
        return out.f(format_args!("{v:.4e}"));
    }
    let text = std::str::from_utf8(&s.b[..s.n]).unwrap_or_default();
    match text.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            out.f(format_args!("{m}e{sign}{digits:0>2}"))
        }
        None => out.s(text),
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

/// Calls its argument once for each value shown (one pass over the shown elements).
type Values<'a> = &'a dyn Fn(&mut dyn FnMut(f64));

impl FloatStyle {
    fn new(values: Values) -> FloatStyle {
        let mut st = FloatStyle {
            int_mode: true,
            sci: false,
            width: 1,
        };
        let (mut any, mut max, mut min) = (false, 0.0f64, f64::INFINITY);
        let mut int_mode = true;
        values(&mut |v| {
            if v.is_finite() && v != 0.0 {
                any = true;
                int_mode &= v.fract() == 0.0;
                max = max.max(v.abs());
                min = min.min(v.abs());
            }
        });
        if !any {
            return st;
        }
        st.int_mode = int_mode;
        st.sci = max / min > 1000.0 || max > 1e8 || (!st.int_mode && min < 1e-4);
        let mut width = 1;
        values(&mut |v| {
            if v.is_finite() && v != 0.0 {
                width = width.max(measure(|o| st.text(o, v)));
            }
        });
        st.width = width;
        st
    }

    /// The value without padding.
    fn text(&self, out: &mut Sink, v: f64) {
        if v.is_nan() {
            out.s("nan")
        } else if v.is_infinite() {
            out.s(if v > 0.0 { "inf" } else { "-inf" })
        } else if self.sci {
            fmt_sci(out, v)
        } else if self.int_mode {
            out.f(format_args!("{v:.0}."))
        } else {
            out.f(format_args!("{v:.4}"))
        }
    }

    fn format(&self, out: &mut Sink, v: f64) {
        padded(out, self.width, |o| self.text(o, v))
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

fn plain_text(out: &mut Sink, s: Scalar) {
    match s {
        Scalar::Bool(b) => out.s(if b { "True" } else { "False" }),
        Scalar::Int(i) => out.f(format_args!("{i}")),
        Scalar::UInt(u) => out.f(format_args!("{u}")),
        other => out.f(format_args!("{}", other.to_f64())),
    }
}

fn parts(v: Scalar) -> (f64, f64) {
    match v {
        Scalar::Complex(re, im) => (re, im),
        other => (other.to_f64(), 0.0),
    }
}

impl Style {
    fn new(p: &Printer) -> Style {
        let dtype = p.t.dtype();
        if dtype.is_complex() {
            Style::Complex(
                FloatStyle::new(&|f| p.each(&mut |v| f(parts(v).0))),
                FloatStyle::new(&|f| p.each(&mut |v| f(parts(v).1))),
            )
        } else if dtype.is_floating_point() {
            Style::Float(FloatStyle::new(&|f| p.each(&mut |v| f(v.to_f64()))))
        } else {
            let mut width = 1;
            p.each(&mut |v| width = width.max(measure(|o| plain_text(o, v))));
            Style::Plain(width)
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
    fn format(&self, out: &mut Sink, s: Scalar) {
        match (self, s) {
            (Style::Complex(rs, is), Scalar::Complex(re, im)) => {
                // PyTorch: the padded imaginary part with "j", its padding trimmed, joined
                // with "+" unless it starts with a sign.
                rs.format(out, re);
                if !matches!(first_byte(|o| is.text(o, im)), b'+' | b'-') {
                    out.s("+");
                }
                is.text(out, im);
                out.s("j");
            }
            (Style::Float(f), v) => f.format(out, v.to_f64()),
            (st, v) => padded(out, st.width(), |o| plain_text(o, v)),
        }
    }
}

/// Indices shown along a dim of size n: all, or the edges when summarising (`None` is the
/// ellipsis). As a count and the k-th entry (no list is built).
fn shown_len(n: i64, summarize: bool) -> i64 {
    if summarize && n > 2 * EDGE {
        2 * EDGE + 1
    } else {
        n
    }
}

fn shown_at(n: i64, summarize: bool, k: i64) -> Option<i64> {
    if summarize && n > 2 * EDGE {
        match k {
            k if k < EDGE => Some(k),
            k if k == EDGE => None,
            k => Some(n - (2 * EDGE + 1 - k)),
        }
    } else {
        Some(k)
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

    /// Calls `f` with every shown value, in order.
    fn each(&self, f: &mut dyn FnMut(Scalar)) {
        self.visit(0, self.t.storage_offset(), f)
    }

    fn visit(&self, dim: usize, off: i64, f: &mut dyn FnMut(Scalar)) {
        if dim == self.t.ndim() {
            return f(self.read(off));
        }
        let n = self.t.sizes()[dim];
        for k in 0..shown_len(n, self.summarize) {
            if let Some(i) = shown_at(n, self.summarize, k) {
                self.visit(dim + 1, off + i * self.t.strides()[dim], f);
            }
        }
    }

    fn write(&self, dim: usize, off: i64, indent: usize, st: &Style, out: &mut Sink) {
        let nd = self.t.ndim();
        let n = self.t.sizes()[dim];
        let count = shown_len(n, self.summarize);
        if dim + 1 == nd {
            // Innermost row, wrapped at LINE_WIDTH as PyTorch's _vector_str does.
            let per_line = (LINE_WIDTH.saturating_sub(indent) / (st.width() + 2)).max(1) as i64;
            out.s("[");
            for k in 0..count {
                if k > 0 {
                    out.s(",");
                    if k % per_line == 0 {
                        out.s("\n");
                        out.repeat(" ", indent + 1);
                    } else {
                        out.s(" ");
                    }
                }
                match shown_at(n, self.summarize, k) {
                    Some(i) => st.format(out, self.read(off + i * self.t.strides()[dim])),
                    // PyTorch pads the ellipsis of a row with one space.
                    None => out.s(" ..."),
                }
            }
            out.s("]");
            return;
        }
        out.s("[");
        for k in 0..count {
            if k > 0 {
                out.s(",");
                out.repeat("\n", nd - dim - 1);
                out.repeat(" ", indent + 1);
            }
            match shown_at(n, self.summarize, k) {
                Some(i) => self.write(
                    dim + 1,
                    off + i * self.t.strides()[dim],
                    indent + 1,
                    st,
                    out,
                ),
                None => out.s("..."),
            }
        }
        out.s("]");
    }
}

/// One of the `, key=value` suffixes after the values.
enum Suffix<'a> {
    /// `size=(2, 0)`; `one_comma`: a 1-tuple written `(n,)`.
    Size(&'a [i64], bool),
    Device(crate::device::Device),
    DType(DType),
}

impl Suffix<'_> {
    fn write(&self, out: &mut Sink) {
        match self {
            Suffix::Size(dims, one_comma) => {
                out.s("size=(");
                for (k, n) in dims.iter().enumerate() {
                    if k > 0 {
                        out.s(", ");
                    }
                    out.f(format_args!("{n}"));
                }
                if *one_comma && dims.len() == 1 {
                    out.s(",");
                }
                out.s(")");
            }
            Suffix::Device(d) => out.f(format_args!("device=({}, {})", d.device_type, d.device_id)),
            Suffix::DType(d) => out.f(format_args!("dtype=torch.{}", d.name())),
        }
    }
}

/// `dtype=torch.X` unless the dtype is one PyTorch leaves implicit: float32 (the default),
/// and, for non-empty tensors only, int64, bool and complex64 (their values show the type).
fn dtype_suffix(d: DType, empty: bool) -> Option<Suffix<'static>> {
    match d {
        DType::F32 => None,
        DType::I64 | DType::Bool | DType::C64 if !empty => None,
        other => Some(Suffix::DType(other)),
    }
}

/// PyTorch's `_add_suffixes`: ", suffix" on the last line, or on a new line indented under
/// the prefix when it would pass LINE_WIDTH.
fn add_suffixes(out: &mut Sink, suffixes: &[Option<Suffix>]) {
    // PyTorch's `last_line_len` is the last line's length plus 2.
    let mut last_line = 2 + out.line;
    for s in suffixes.iter().flatten() {
        let n = measure(|o| s.write(o));
        if last_line + n + 2 > LINE_WIDTH {
            out.s(",\n");
            out.repeat(" ", PREFIX.len());
            last_line = PREFIX.len() + n;
        } else {
            out.s(", ");
            last_line += n + 2;
        }
        s.write(out);
    }
    out.s(")");
}

/// Writes the repr of `t`, as `print(t)` shows it in PyTorch, into `out`.
pub fn write_tensor(t: &TensorImpl, out: &mut Sink) {
    let empty = t.numel() == 0;
    out.s(PREFIX);
    let mut suffixes: [Option<Suffix>; 3] = [None, None, None];
    if empty {
        if t.ndim() != 1 {
            suffixes[0] = Some(Suffix::Size(t.sizes(), true));
        }
        out.s("[]");
    } else if t.data_for_read().is_err() {
        suffixes[0] = Some(Suffix::Size(t.sizes(), false));
        suffixes[1] = Some(Suffix::Device(t.device()));
        out.s("<data not accessible from the host>");
    } else {
        let p = Printer {
            t,
            base: t.storage().data_ptr(),
            summarize: t.numel() > THRESHOLD,
        };
        let st = Style::new(&p);
        if t.ndim() == 0 {
            st.format(out, p.read(t.storage_offset()));
        } else {
            p.write(0, t.storage_offset(), PREFIX.len(), &st, out);
        }
    }
    suffixes[2] = dtype_suffix(t.dtype(), empty);
    add_suffixes(out, &suffixes);
}

/// Writes the repr of `t` into `dst` (its first `dst.len()` bytes, no NUL); returns the
/// length of the whole text. Never allocates.
pub fn format_into(t: &TensorImpl, dst: &mut [u8]) -> usize {
    let mut out = Sink::new(dst);
    write_tensor(t, &mut out);
    out.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor_impl::Tensor;

    /// The repr of `t` as a `String`.
    fn format_tensor(t: &TensorImpl) -> String {
        let mut v = vec![0u8; format_into(t, &mut [])];
        format_into(t, &mut v);
        String::from_utf8(v).unwrap()
    }

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

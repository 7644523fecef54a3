//! What the generated wrapper source (`<hash>.wrapper.cpp`, shipped beside the model `.so`)
//! says about the model's inputs and constants, read strictly: a line of the parts read
//! here that does not parse makes the whole reading fail (`Err`), so that a run is never
//! checked against half a specification.
//!
//! - `check_input_<i>` (one per input): the dtype, each static size and stride, the bounds
//!   of each dynamic size; the largest dim it reads gives the rank.
//! - `run_impl`, before the first kernel: which input each `argN` is, the size symbols it
//!   binds from the inputs (`int64_t s17 = arg0_1_size[0];`, aliases `int64_t s77 = s17;`)
//!   and one `assert_size_stride(argN, {sizes}, {strides}, "input")` per input, whose
//!   expressions in those symbols state how the inputs' dynamic dims relate.
//! - `constants_info_[i]`: name, dtype, offset, data size, shape, stride, whether folded.
//! - Which inputs the model writes: an input passed to a kernel as a non-const pointer
//!   (`(float*)(arg0_1.data_ptr())`) or as the first argument (the output) of an `_out`,
//!   in-place (`fill__Scalar`, `copy_`) shim call.

use super::{invalid, Result};

/// An integer expression of the wrapper's size arithmetic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Int(i64),
    Sym(String),
    Neg(Box<Expr>),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    /// C++ integer division of non-negative sizes (`/`), floor division otherwise.
    Div(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// The value, with `sym` giving each symbol's; None on overflow, division by zero or
    /// an unbound symbol.
    pub fn eval(&self, sym: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        Some(match self {
            Expr::Int(v) => *v,
            Expr::Sym(s) => sym(s)?,
            Expr::Neg(a) => a.eval(sym)?.checked_neg()?,
            Expr::Add(a, b) => a.eval(sym)?.checked_add(b.eval(sym)?)?,
            Expr::Sub(a, b) => a.eval(sym)?.checked_sub(b.eval(sym)?)?,
            Expr::Mul(a, b) => a.eval(sym)?.checked_mul(b.eval(sym)?)?,
            Expr::Div(a, b) => a.eval(sym)?.checked_div_euclid(b.eval(sym)?)?,
        })
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v) => Some(*v),
            _ => None,
        }
    }
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Sym(s) => write!(f, "{s}"),
            Expr::Neg(a) => write!(f, "-({a})"),
            Expr::Add(a, b) => write!(f, "({a} + {b})"),
            Expr::Sub(a, b) => write!(f, "({a} - {b})"),
            Expr::Mul(a, b) => write!(f, "{a}*{b}"),
            Expr::Div(a, b) => write!(f, "({a} / {b})"),
        }
    }
}

/// Parses a C++ integer expression of the wrapper: literals (`16L`), symbols, `+ - * /`,
/// unary minus, parentheses.
pub fn parse_expr(s: &str) -> Result<Expr> {
    let toks = tokens(s)?;
    let mut i = 0;
    let e = sum(&toks, &mut i, 0)?;
    if i != toks.len() {
        return invalid(format!("cannot read the expression '{s}'"));
    }
    Ok(e)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Id(String),
    Op(char),
}

fn tokens(s: &str) -> Result<Vec<Tok>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let v: i64 = s[st..i]
                .parse()
                .map_err(|_| super::Bad::invalid(format!("integer out of range in '{s}'")))?;
            while i < b.len() && matches!(b[i], b'L' | b'l' | b'U' | b'u') {
                i += 1;
            }
            out.push(Tok::Int(v));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Id(s[st..i].to_string()));
        } else if b"+-*/()".contains(&c) {
            out.push(Tok::Op(c as char));
            i += 1;
        } else {
            return invalid(format!("cannot read the expression '{s}'"));
        }
    }
    Ok(out)
}

fn sum(t: &[Tok], i: &mut usize, depth: usize) -> Result<Expr> {
    let mut a = product(t, i, depth)?;
    while let Some(Tok::Op(op @ ('+' | '-'))) = t.get(*i) {
        *i += 1;
        let b = product(t, i, depth)?;
        a = if *op == '+' {
            Expr::Add(Box::new(a), Box::new(b))
        } else {
            Expr::Sub(Box::new(a), Box::new(b))
        };
    }
    Ok(a)
}

fn product(t: &[Tok], i: &mut usize, depth: usize) -> Result<Expr> {
    let mut a = atom(t, i, depth)?;
    while let Some(Tok::Op(op @ ('*' | '/'))) = t.get(*i) {
        *i += 1;
        let b = atom(t, i, depth)?;
        a = if *op == '*' {
            Expr::Mul(Box::new(a), Box::new(b))
        } else {
            Expr::Div(Box::new(a), Box::new(b))
        };
    }
    Ok(a)
}

fn atom(t: &[Tok], i: &mut usize, depth: usize) -> Result<Expr> {
    if depth > 32 {
        return invalid("expression nested too deeply");
    }
    let tok = t.get(*i).cloned();
    *i += 1;
    match tok {
        Some(Tok::Int(v)) => Ok(Expr::Int(v)),
        Some(Tok::Id(s)) => Ok(Expr::Sym(s)),
        Some(Tok::Op('-')) => Ok(Expr::Neg(Box::new(atom(t, i, depth + 1)?))),
        Some(Tok::Op('(')) => {
            let e = sum(t, i, depth + 1)?;
            if t.get(*i) != Some(&Tok::Op(')')) {
                return invalid("unbalanced parentheses in an expression");
            }
            *i += 1;
            Ok(e)
        }
        _ => invalid("cannot read an expression"),
    }
}

/// A dtype name as the wrapper writes it (`aoti_torch_dtype_float32()`,
/// `cached_torch_dtype_float32`): its `torch.<name>`, when it is a name at all. What it
/// means (its code, its size) is libtensor's to say: the crate asks `util::dtype_code`.
fn dtype_name(text: &str) -> Option<String> {
    let ok = !text.is_empty()
        && text.len() <= 32
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then(|| text.to_string())
}

/// One input as the wrapper checks it.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// The `argN` name the wrapper gives it.
    pub name: String,
    /// The `torch.<name>` it was compiled for.
    pub dtype: Option<String>,
    pub ndim: usize,
    /// Per dim: the size, a literal or an expression in the size symbols.
    pub sizes: Vec<Expr>,
    /// Per dim: the stride `assert_size_stride` expects (checked where the size is > 1).
    pub strides: Vec<Option<Expr>>,
    /// Per dim: the literal stride `check_input` compares (whatever the size).
    pub fixed_strides: Vec<Option<i64>>,
    pub min: Vec<Option<i64>>,
    pub max: Vec<Option<i64>>,
    /// The model writes this input.
    pub mutated: bool,
}

/// A size symbol: bound from an input's size or stride, or defined by an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    Size { input: usize, dim: usize },
    Stride { input: usize, dim: usize },
    Expr(Expr),
}

/// One entry of the model's constants table.
#[derive(Debug, Clone, Default)]
pub struct Constant {
    pub name: String,
    /// Its `torch.<name>`.
    pub dtype: Option<String>,
    pub offset: u64,
    pub data_size: u64,
    pub from_folded: bool,
    pub shape: Vec<i64>,
    pub stride: Vec<i64>,
    /// Its data is a `freezing=True` weight packed by oneDNN (`aoti_torch_layout__mkldnn`),
    /// laid out as `opaque_metadata` (its memory descriptor, `reader::onednn`) says.
    pub mkldnn: bool,
    pub opaque_metadata: Vec<u8>,
}

/// What a wrapper source says.
#[derive(Debug, Clone, Default)]
pub struct Wrapper {
    pub inputs: Vec<Input>,
    /// Symbols in the order the wrapper binds them.
    pub symbols: Vec<(String, Binding)>,
    pub constants: Vec<Constant>,
}

/// The body of the function whose definition starts with `head` (from after it to the
/// line that closes it at column 0).
fn body<'a>(src: &'a str, head: &str) -> Option<&'a str> {
    let start = src.find(head)? + head.len();
    let rest = &src[start..];
    let end = rest.find("\n}").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `NAME_<what>[K]` in `s`: K.
fn index_of(s: &str, prefix: &str) -> Option<usize> {
    s.trim()
        .strip_prefix(prefix)?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn int_lit(s: &str) -> Option<i64> {
    parse_expr(s).ok()?.as_int()
}

fn set<T: Clone + Default>(v: &mut Vec<T>, k: usize, x: T) -> Result<()> {
    if k > 64 {
        return invalid(format!("dim {k} is beyond the 64 dims a tensor may have"));
    }
    if v.len() <= k {
        v.resize(k + 1, T::default());
    }
    v[k] = x;
    Ok(())
}

/// `check_input_<i>`: dtype, static sizes / strides, bounds, rank.
fn check_input(src: &str, i: usize) -> Result<Input> {
    let Some(b) = body(src, &format!("static void check_input_{i}(")) else {
        return invalid(format!("no check_input_{i}"));
    };
    let marker = format!(" = ConstantHandle(input_handles[{i}]);");
    let Some(name) = b
        .lines()
        .find(|l| l.contains(&marker))
        .and_then(|l| l.trim().strip_prefix("ConstantHandle "))
        .and_then(|l| l.split(' ').next())
    else {
        return invalid(format!("check_input_{i} names no input handle"));
    };
    let mut inp = Input {
        name: name.to_string(),
        ..Input::default()
    };
    let size_p = format!("{name}_size[");
    let stride_p = format!("{name}_stride[");
    let dtype_p = format!("int32_t {name}_expected_dtype = aoti_torch_dtype_");
    let mut sizes: Vec<Option<i64>> = Vec::new();
    let mut ndim = 0usize;
    for l in b.lines().map(str::trim) {
        if let Some(rest) = l.strip_prefix(&dtype_p) {
            let Some(name) = rest.strip_suffix("();").and_then(dtype_name) else {
                return invalid(format!("check_input_{i}: unknown dtype in '{l}'"));
            };
            inp.dtype = Some(name);
            continue;
        }
        let Some(cond) = l.strip_prefix("if (").and_then(|c| c.strip_suffix(") {")) else {
            continue;
        };
        if cond.contains("_dtype") || cond.contains("_device_type") {
            continue; // the dtype and device comparisons (values read above, CPU checked apart)
        }
        let parsed = if let Some((a, b)) = cond.split_once(" != ") {
            match (int_lit(a), index_of(b, &size_p), index_of(b, &stride_p)) {
                (Some(x), Some(k), _) => set(&mut sizes, k, Some(x)).map(|_| k),
                (Some(x), None, Some(k)) => set(&mut inp.fixed_strides, k, Some(x)).map(|_| k),
                _ => invalid(""),
            }
        } else if let Some((a, b)) = cond.split_once(" < ") {
            match (index_of(a, &size_p), int_lit(b)) {
                (Some(k), Some(x)) => set(&mut inp.min, k, Some(x)).map(|_| k),
                _ => invalid(""),
            }
        } else if let Some((a, b)) = cond.split_once(" > ") {
            match (index_of(a, &size_p), int_lit(b)) {
                (Some(k), Some(x)) => set(&mut inp.max, k, Some(x)).map(|_| k),
                _ => invalid(""),
            }
        } else {
            invalid("")
        };
        match parsed {
            Ok(k) => ndim = ndim.max(k + 1),
            Err(_) => return invalid(format!("check_input_{i}: cannot read the check '{l}'")),
        }
    }
    inp.ndim = ndim;
    sizes.resize(ndim, None);
    inp.fixed_strides.resize(ndim, None);
    inp.min.resize(ndim, None);
    inp.max.resize(ndim, None);
    // A dynamic dim stands for a symbol until run_impl says which.
    inp.sizes = sizes
        .iter()
        .enumerate()
        .map(|(k, s)| s.map_or(Expr::Sym(format!("?{i}.{k}")), Expr::Int))
        .collect();
    inp.strides = vec![None; ndim];
    Ok(inp)
}

/// Splits `{a, b, }` into its items.
fn braced(s: &str) -> Result<Vec<Expr>> {
    let inner = s
        .trim()
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .ok_or_else(|| super::Bad::invalid(format!("expected a {{...}} list, got '{s}'")))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(parse_expr)
        .collect()
}

/// Splits a call's argument text at top-level commas.
fn args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

fn word_in(hay: &str, word: &str) -> bool {
    hay.match_indices(word).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Whether a shim function writes its first argument: `_out` variants, in-place ops
/// (`fill__Scalar`, `copy_`, `zero_`).
fn writes_first_arg(func: &str) -> bool {
    let op = func
        .strip_prefix("aoti_torch_cpu_")
        .or_else(|| func.strip_prefix("aoti_torch_"))
        .unwrap_or(func);
    let op = op.trim_start_matches('_');
    op.ends_with("_out") || op.ends_with('_') || op.contains("__")
}

/// Reads a wrapper source for a model of `n` inputs.
pub fn parse(src: &str, n: usize) -> Result<Wrapper> {
    let mut w = Wrapper::default();
    for i in 0..n {
        w.inputs.push(check_input(src, i)?);
    }
    if src.contains(&format!("static void check_input_{n}(")) {
        return invalid(format!("the wrapper checks more than {n} inputs"));
    }
    let Some(run) = body(src, "::run_impl(") else {
        return invalid("no run_impl");
    };
    // Inputs by name, the symbols they bind, the size asserts.
    let by_name = |w: &Wrapper, n: &str| w.inputs.iter().position(|x| x.name == n);
    let mut asserted = vec![false; n];
    for l in run.lines().map(str::trim) {
        if let Some(rest) = l.strip_prefix("auto ") {
            // `auto arg0_1 = std::move(inputs[0]);`: the name check_input gave it too.
            if let Some((name, v)) = rest.split_once(" = std::move(inputs[") {
                let idx: Option<usize> = v.strip_suffix("]);").and_then(|x| x.parse().ok());
                match idx {
                    Some(k) if k < n && w.inputs[k].name == name => {}
                    _ => return invalid(format!("run_impl: cannot match '{l}' to an input")),
                }
            }
            continue;
        }
        if let Some(rest) = l.strip_prefix("int64_t ") {
            let Some((sym, rhs)) = rest.strip_suffix(';').and_then(|r| r.split_once(" = ")) else {
                return invalid(format!("run_impl: cannot read '{l}'"));
            };
            let rhs = rhs.trim();
            let mut bound = None;
            for inp in 0..n {
                let nm = &w.inputs[inp].name;
                for (pre, is_size) in [
                    (format!("{nm}_size["), true),
                    (format!("{nm}.sizes()["), true),
                    (format!("{nm}_stride["), false),
                    (format!("{nm}.strides()["), false),
                ] {
                    if let Some(k) = index_of(rhs, &pre) {
                        bound = Some(if is_size {
                            Binding::Size { input: inp, dim: k }
                        } else {
                            Binding::Stride { input: inp, dim: k }
                        });
                    }
                }
            }
            let b = match bound {
                Some(b) => b,
                None => Binding::Expr(
                    parse_expr(rhs)
                        .map_err(|e| super::Bad::invalid(format!("run_impl: '{l}': {}", e.msg)))?,
                ),
            };
            w.symbols.push((sym.trim().to_string(), b));
            continue;
        }
        if let Some(at) = l.find("assert_size_stride(") {
            let call = &l[at + "assert_size_stride(".len()..];
            let call = call.rsplit_once(')').map_or(call, |(a, _)| a);
            let a = args(call);
            let Some(inp) = a.first().and_then(|nm| by_name(&w, nm)) else {
                continue; // a check of an intermediate buffer, not of an input
            };
            if a.len() < 3 {
                return invalid(format!("run_impl: cannot read '{l}'"));
            }
            let sizes = braced(a[1])
                .map_err(|e| super::Bad::invalid(format!("run_impl: '{l}': {}", e.msg)))?;
            let strides = braced(a[2])
                .map_err(|e| super::Bad::invalid(format!("run_impl: '{l}': {}", e.msg)))?;
            let x = &mut w.inputs[inp];
            if sizes.len() != strides.len() || sizes.len() != x.ndim.max(sizes.len()) {
                return invalid(format!("run_impl: '{l}' does not match check_input_{inp}"));
            }
            if x.ndim < sizes.len() {
                // Dims check_input does not read (none of its checks name them).
                x.ndim = sizes.len();
                x.fixed_strides.resize(x.ndim, None);
                x.min.resize(x.ndim, None);
                x.max.resize(x.ndim, None);
            }
            for (k, s) in sizes.iter().enumerate() {
                if let (Some(a), Some(b)) = (s.as_int(), x.sizes.get(k).and_then(Expr::as_int)) {
                    if a != b {
                        return invalid(format!(
                            "run_impl: '{l}' contradicts check_input_{inp} at dim {k}"
                        ));
                    }
                }
            }
            x.sizes = sizes;
            x.strides = strides.into_iter().map(Some).collect();
            asserted[inp] = true;
            continue;
        }
    }
    for (i, x) in w.inputs.iter().enumerate() {
        if !asserted[i] && x.sizes.iter().any(|s| s.as_int().is_none()) {
            return invalid(format!(
                "input {i} has a dynamic size and run_impl asserts no sizes for it: how its dims relate to the other inputs' is unknown"
            ));
        }
    }
    // Every symbol an assert uses is bound before it (in order).
    for (i, x) in w.inputs.iter().enumerate() {
        for e in x.sizes.iter().chain(x.strides.iter().flatten()) {
            if !syms(e)
                .iter()
                .all(|s| w.symbols.iter().any(|(n, _)| n == s))
            {
                return invalid(format!(
                    "input {i}: the size '{e}' uses a symbol run_impl does not bind"
                ));
            }
        }
    }
    // Mutations.
    for l in run.lines().map(str::trim) {
        for i in 0..n {
            let nm = w.inputs[i].name.clone();
            let ptr = format!("*)({nm}.data_ptr())");
            let mut m = l.match_indices(&ptr).any(|(at, _)| {
                let open = l[..at].rfind('(').map_or(0, |o| o + 1);
                !l[open..at].trim_start().starts_with("const")
            });
            if !m {
                for (at, _) in l.match_indices("aoti_torch_") {
                    let rest = &l[at..];
                    let Some(p) = rest.find('(') else { continue };
                    let func = &rest[..p];
                    if !func.chars().all(|c| c.is_alphanumeric() || c == '_') {
                        continue;
                    }
                    let first = args(&rest[p + 1..]).first().copied().unwrap_or("");
                    if writes_first_arg(func) && word_in(first, &nm) {
                        m = true;
                    }
                }
            }
            if m {
                w.inputs[i].mutated = true;
            }
        }
    }
    w.constants = constants(src)?;
    Ok(w)
}

/// The symbols an expression uses.
pub fn syms(e: &Expr) -> Vec<String> {
    match e {
        Expr::Int(_) => vec![],
        Expr::Sym(s) => vec![s.clone()],
        Expr::Neg(a) => syms(a),
        Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) => {
            let mut v = syms(a);
            v.extend(syms(b));
            v
        }
    }
}

/// The `constants_info_[i].field = value;` table.
pub fn constants(src: &str) -> Result<Vec<Constant>> {
    let mut out: Vec<Constant> = Vec::new();
    for l in src.lines().map(str::trim) {
        let Some(rest) = l.strip_prefix("constants_info_[") else {
            continue;
        };
        let Some((idx, rest)) = rest.split_once("].") else {
            continue;
        };
        let Ok(i) = idx.parse::<usize>() else {
            return invalid(format!("constants table: cannot read '{l}'"));
        };
        if i > out.len() || i > 1 << 20 {
            return invalid(format!("constants table: entry {i} out of order"));
        }
        if i == out.len() {
            out.push(Constant::default());
        }
        let Some((field, value)) = rest.strip_suffix(';').and_then(|r| r.split_once(" = ")) else {
            return invalid(format!("constants table: cannot read '{l}'"));
        };
        let c = &mut out[i];
        let bad = || super::Bad::invalid(format!("constants table: cannot read '{l}'"));
        let num = |v: &str| {
            v.trim()
                .trim_end_matches('L')
                .parse::<u64>()
                .map_err(|_| bad())
        };
        let list = |v: &str| -> Result<Vec<i64>> {
            braced(v)?
                .iter()
                .map(|e| e.as_int().ok_or_else(bad))
                .collect()
        };
        match field {
            "name" => c.name = value.trim().trim_matches('"').to_string(),
            "dtype" => {
                c.dtype = value
                    .trim()
                    .strip_prefix("cached_torch_dtype_")
                    .or_else(|| value.trim().strip_prefix("aoti_torch_dtype_"))
                    .map(|d| d.trim_end_matches("()"))
                    .and_then(dtype_name);
                if c.dtype.is_none() {
                    return invalid(format!("constant {i}: unknown dtype in '{l}'"));
                }
            }
            "offset" => c.offset = num(value)?,
            "data_size" => c.data_size = num(value)?,
            "from_folded" => c.from_folded = value.trim() == "true",
            "shape" => c.shape = list(value)?,
            "stride" => c.stride = list(value)?,
            "layout" => c.mkldnn = value.contains("layout__mkldnn"),
            "opaque_metadata" => {
                c.opaque_metadata = list(value)?
                    .into_iter()
                    .map(|v| u8::try_from(v).map_err(|_| bad()))
                    .collect::<Result<_>>()?
            }
            _ => {}
        }
    }
    for (i, c) in out.iter().enumerate() {
        if c.dtype.is_none() || c.shape.len() != c.stride.len() {
            return invalid(format!(
                "constant {i} ({}): the table gives no dtype, or a shape and a stride of different lengths",
                c.name
            ));
        }
    }
    Ok(out)
}

impl Constant {
    /// The bytes the constant's view reads from its data, (offset + extent) * itemsize, for
    /// its dtype's `itemsize` (libtensor's).
    pub fn bytes_needed(&self, item: u64) -> Option<u64> {
        let mut extent: u64 = 1;
        for (&s, &st) in self.shape.iter().zip(&self.stride) {
            if s < 0 || st < 0 {
                return None;
            }
            if s == 0 {
                return Some(0);
            }
            extent = extent.checked_add((s as u64 - 1).checked_mul(st as u64)?)?;
        }
        self.offset.checked_add(extent)?.checked_mul(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        let e = parse_expr("2L*s17 + (s3 - 1L) / 2").unwrap();
        let v = e.eval(&|s| match s {
            "s17" => Some(5),
            "s3" => Some(9),
            _ => None,
        });
        assert_eq!(v, Some(14));
        assert!(
            parse_expr("s1 +").is_err() && parse_expr("(s1").is_err() && parse_expr("a.b").is_err()
        );
        assert_eq!(
            parse_expr("9223372036854775807L*2")
                .unwrap()
                .eval(&|_| None),
            None
        );
    }

    #[test]
    fn first_argument_writers() {
        assert!(writes_first_arg("aoti_torch_cpu_addmm_out"));
        assert!(writes_first_arg("aoti_torch_copy_"));
        assert!(writes_first_arg("aoti_torch_cpu_fill__Scalar"));
        assert!(!writes_first_arg(
            "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu"
        ));
        assert!(!writes_first_arg("aoti_torch_cpu_convolution"));
    }
}

//! NumPy `.npy` files: a small header parser of our own (format versions 1.0, 2.0 and 3.0;
//! C and Fortran order; 0-d and empty arrays) and a writer (version 1.0, or 2.0 when the
//! header needs it).
//!
//! Loading is zero-copy: the tensor is a view over a mapping of the whole file, at the
//! element offset where the data starts. Two cases copy instead (into a fresh tensor), and
//! say so in their doc: big-endian data is converted to native order, and data whose
//! offset is not a multiple of the element size (never the case for files NumPy writes,
//! whose data starts on a 64-byte boundary) is copied to an aligned block. bfloat16 has no
//! NumPy dtype: saving a bfloat16 tensor is refused (DType).
//!
//! The parser works on a byte slice (the whole file), so a fuzzer can drive it.

use super::mmap::MapMode;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::shape;
use crate::storage::Storage;
use crate::tensor_impl::{MemoryFormat, Tensor};
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

/// A parsed `.npy` header, validated against the file's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    pub dtype: DType,
    /// The data is in the other byte order than this machine's.
    pub swap_bytes: bool,
    pub fortran_order: bool,
    pub shape: shape::Dims,
    /// Byte offset of the first element in the file.
    pub data_offset: usize,
    /// Bytes of element data (numel * itemsize).
    pub data_nbytes: usize,
}

/// The dtype of a NumPy `descr` string (`'<f4'`, `'|b1'`, ...) and whether its byte order
/// differs from this machine's.
fn parse_descr(descr: &[u8]) -> Result<(DType, bool)> {
    let (order, code) = match descr.first() {
        Some(&o @ (b'<' | b'>' | b'|' | b'=')) => (o, &descr[1..]),
        _ => (b'=', descr),
    };
    let dtype = match code {
        b"b1" | b"?" => DType::Bool,
        b"u1" | b"B" => DType::U8,
        b"i1" | b"b" => DType::I8,
        b"i2" => DType::I16,
        b"u2" => DType::U16,
        b"i4" => DType::I32,
        b"u4" => DType::U32,
        b"i8" => DType::I64,
        b"u8" => DType::U64,
        b"f2" | b"e" => DType::F16,
        b"f4" => DType::F32,
        b"f8" => DType::F64,
        b"c8" => DType::C64,
        b"c16" => DType::C128,
        _ => bail!(
            DType,
            "unsupported .npy dtype '{}' (libtensor reads bool, int8-64, uint8-64, float16/32/64, complex64/128)",
            descr.escape_ascii()
        ),
    };
    let little_host = cfg!(target_endian = "little");
    let swap = dtype.itemsize() > 1
        && match order {
            b'<' => !little_host,
            b'>' => little_host,
            _ => false,
        };
    Ok((dtype, swap))
}

/// The header dict's values (a string borrowed from the header: parsing allocates only
/// the shape, fallibly).
enum Value<'a> {
    Str(&'a [u8]),
    Bool(bool),
    Tuple(shape::Dims),
}

/// A cursor over the header dict literal (`{'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }`), the subset of Python literals NumPy writes.
struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        ensure!(
            self.eat(c),
            Io,
            ".npy header: expected '{}' at byte {} of the header",
            c as char,
            self.i
        );
        Ok(())
    }

    fn string(&mut self) -> Result<&'a [u8]> {
        let q = self.peek().unwrap_or(0);
        ensure!(
            q == b'\'' || q == b'"',
            Io,
            ".npy header: expected a string at byte {} of the header",
            self.i
        );
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != q {
            ensure!(
                self.s[self.i] != b'\\',
                Io,
                ".npy header: escapes in strings are not supported"
            );
            self.i += 1;
        }
        ensure!(
            self.i < self.s.len(),
            Io,
            ".npy header: unterminated string"
        );
        let text = &self.s[start..self.i];
        self.i += 1;
        Ok(text)
    }

    fn int(&mut self) -> Result<i64> {
        self.ws();
        let start = self.i;
        let mut v: i64 = 0;
        while let Some(&c) = self.s.get(self.i).filter(|c| c.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((c - b'0') as i64))
                .ok_or_else(|| {
                    crate::error::Error::new(
                        crate::error::Status::Overflow,
                        ".npy header: a dimension of the shape overflows int64",
                    )
                })?;
            self.i += 1;
        }
        ensure!(
            self.i > start,
            Io,
            ".npy header: expected a non-negative integer at byte {} of the header",
            self.i
        );
        // Python 2 wrote long integers with an 'L' suffix.
        if self.s.get(self.i) == Some(&b'L') {
            self.i += 1;
        }
        Ok(v)
    }

    fn value(&mut self) -> Result<Value<'a>> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'(') => {
                self.i += 1;
                let mut dims = shape::Dims::new();
                while !self.eat(b')') {
                    ensure!(
                        dims.len() < shape::MAX_DIMS,
                        InvalidArgument,
                        ".npy header: the shape has more than {} dims",
                        shape::MAX_DIMS
                    );
                    let d = self.int()?;
                    shape::reserve(&mut dims, 1)?;
                    dims.push(d);
                    if !self.eat(b',') {
                        self.expect(b')')?;
                        break;
                    }
                }
                Ok(Value::Tuple(dims))
            }
            Some(b'[') => bail!(
                DType,
                ".npy header: structured dtypes (a list descr) are not supported"
            ),
            _ => {
                let rest = &self.s[self.i..];
                if rest.starts_with(b"True") {
                    self.i += 4;
                    Ok(Value::Bool(true))
                } else if rest.starts_with(b"False") {
                    self.i += 5;
                    Ok(Value::Bool(false))
                } else {
                    bail!(
                        Io,
                        ".npy header: unexpected value at byte {} of the header",
                        self.i
                    )
                }
            }
        }
    }
}

/// Parses and validates the `.npy` file in `bytes` (the whole file): magic, version,
/// header length inside the file, the dict with exactly the keys `descr`,
/// `fortran_order` and `shape`, a supported dtype, a shape whose byte size fits, and the
/// data inside the file (trailing bytes are allowed, as NumPy allows them).
/// Errors: Io (not a .npy file, truncated, malformed header), DType (unsupported dtype),
/// Overflow (shape), InvalidArgument (more than 64 dims).
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader> {
    ensure!(
        bytes.len() >= 10 && bytes.starts_with(MAGIC),
        Io,
        "not a .npy file (no \\x93NUMPY magic in its {} bytes)",
        bytes.len()
    );
    let (major, minor) = (bytes[6], bytes[7]);
    let (len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            ensure!(bytes.len() >= 12, Io, ".npy file truncated in its preamble");
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        _ => bail!(Io, "unsupported .npy format version {major}.{minor}"),
    };
    let end = start + len;
    ensure!(
        end <= bytes.len(),
        Io,
        ".npy header length {len} reaches past the end of the file ({} bytes)",
        bytes.len()
    );
    let mut lx = Lexer {
        s: &bytes[start..end],
        i: 0,
    };
    let (mut descr, mut fortran, mut dims) = (None, None, None);
    lx.expect(b'{')?;
    while !lx.eat(b'}') {
        let key = lx.string()?;
        lx.expect(b':')?;
        let v = lx.value()?;
        let slot_taken = match (key, v) {
            (b"descr", Value::Str(s)) => descr.replace(s).is_some(),
            (b"fortran_order", Value::Bool(b)) => fortran.replace(b).is_some(),
            (b"shape", Value::Tuple(t)) => dims.replace(t).is_some(),
            (k, _) => bail!(
                Io,
                ".npy header: unexpected key '{}' or value type",
                k.escape_ascii()
            ),
        };
        ensure!(
            !slot_taken,
            Io,
            ".npy header: key '{}' given twice",
            key.escape_ascii()
        );
        if !lx.eat(b',') {
            lx.expect(b'}')?;
            break;
        }
    }
    ensure!(
        lx.peek().is_none(),
        Io,
        ".npy header: unexpected bytes after the dict"
    );
    let (Some(descr), Some(fortran_order), Some(shape)) = (descr, fortran, dims) else {
        bail!(
            Io,
            ".npy header: missing one of the keys 'descr', 'fortran_order', 'shape'"
        );
    };
    let (dtype, swap_bytes) = parse_descr(descr)?;
    let mut numel: u64 = 1;
    for &d in &shape {
        numel = numel
            .checked_mul(d as u64)
            .ok_or_else(|| overflow(&shape))?;
    }
    let nbytes = numel
        .checked_mul(dtype.itemsize() as u64)
        .filter(|&n| n <= isize::MAX as u64)
        .ok_or_else(|| overflow(&shape))?;
    ensure!(
        nbytes <= (bytes.len() - end) as u64,
        Io,
        ".npy data of shape {} ({} bytes of {}) reaches past the end of the file ({} bytes, data at {end}): truncated",
        shape::fmt_dims(&shape),
        nbytes,
        dtype.name(),
        bytes.len()
    );
    Ok(NpyHeader {
        dtype,
        swap_bytes,
        fortran_order,
        shape,
        data_offset: end,
        data_nbytes: nbytes as usize,
    })
}

fn overflow(dims: &[i64]) -> crate::error::Error {
    crate::error::Error::from_fmt(
        crate::error::Status::Overflow,
        format_args!(
            ".npy shape {} overflows the address space",
            shape::fmt_dims(dims)
        ),
    )
}

/// Strides (elements) of the array: C order, or Fortran order (first dim fastest).
fn strides_of(h: &NpyHeader) -> Result<shape::Dims> {
    if !h.fortran_order {
        return shape::contiguous_strides(&h.shape);
    }
    let mut rev = shape::dims_from_slice(&h.shape)?;
    rev.reverse();
    let mut st = shape::contiguous_strides(&rev)?;
    st.reverse();
    Ok(st)
}

/// The array of a `.npy` file held in `storage` (the whole file): a view over it, or a
/// copy when the bytes must be swapped or are misaligned (see the module doc).
pub fn tensor_from_storage(storage: &Storage) -> Result<Tensor> {
    let bytes = super::storage_bytes(storage, ".npy")?;
    let ptr = storage.data_ptr();
    let h = parse_header(bytes)?;
    let strides = strides_of(&h)?;
    let isz = h.dtype.itemsize();
    let aligned = h.data_offset % isz == 0 && (ptr as usize).is_multiple_of(isz);
    if !h.swap_bytes && aligned {
        return Tensor::from_storage(
            storage,
            (h.data_offset / isz) as i64,
            &h.shape,
            Some(&strides),
            h.dtype,
        );
    }
    // Copy into a fresh block with the same layout (C or Fortran: both dense).
    let t = Tensor::empty_strided(&h.shape, &strides, h.dtype)?;
    if h.data_nbytes > 0 {
        let src = &bytes[h.data_offset..h.data_offset + h.data_nbytes];
        // SAFETY: the fresh dense tensor owns exactly data_nbytes bytes.
        let dst = unsafe { std::slice::from_raw_parts_mut(t.data_ptr(), h.data_nbytes) };
        dst.copy_from_slice(src);
        if h.swap_bytes {
            // Complex numbers swap each of their two parts.
            let part = if h.dtype.is_complex() { isz / 2 } else { isz };
            dst.chunks_exact_mut(part).for_each(|c| c.reverse());
        }
    }
    Ok(t)
}

impl super::OverMapping for Tensor {
    fn copied(&self, storage: &Storage) -> Option<impl std::fmt::Display + '_> {
        (self.storage().data_ptr() != storage.data_ptr()).then_some("big-endian or misaligned data")
    }
}

/// Loads `path` with `mode` (zero-copy over a mapping of the file; see the module doc for
/// the two cases that copy). `Shared` mode refuses files that would need a copy, since
/// writes would not reach the file ([`load_mapped`](super::load_mapped)).
pub fn load(path: &Path, mode: MapMode) -> Result<Tensor> {
    super::load_mapped(path, mode, ".npy", tensor_from_storage)
}

/// The descr NumPy writes for `dtype` (native little-endian order).
fn descr_of(dtype: DType) -> Result<&'static str> {
    let le = |descr: &'static str| -> Result<&'static str> {
        ensure!(
            cfg!(target_endian = "little"),
            DType,
            "saving .npy on a big-endian machine is not supported"
        );
        Ok(descr)
    };
    Ok(match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::BF16 => bail!(
            DType,
            "bfloat16 has no NumPy dtype: convert to float32 (or view as int16) before saving a .npy"
        ),
        DType::I16 => le("<i2")?,
        DType::U16 => le("<u2")?,
        DType::I32 => le("<i4")?,
        DType::U32 => le("<u4")?,
        DType::I64 => le("<i8")?,
        DType::U64 => le("<u8")?,
        DType::F16 => le("<f2")?,
        DType::F32 => le("<f4")?,
        DType::F64 => le("<f8")?,
        DType::C64 => le("<c8")?,
        DType::C128 => le("<c16")?,
        DType::F8E5M2
        | DType::F8E4M3Fn
        | DType::F8E5M2Fnuz
        | DType::F8E4M3Fnuz
        | DType::F8E8M0Fnu
        | DType::F4E2M1FnX2 => bail!(
            DType,
            "{} has no NumPy dtype (.npy cannot name ml_dtypes' types): view as uint8 before saving a .npy",
            dtype.name()
        ),
    })
}

/// The bytes of a `.npy` header (magic, version, length, dict, padding) for a C-order
/// array: version 1.0, or 2.0 when the dict is longer than 65535 bytes; total length a
/// multiple of 64, as NumPy writes it.
pub fn header_bytes(dtype: DType, sizes: &[i64]) -> Result<Vec<u8>> {
    use std::fmt::Write;
    let descr = descr_of(dtype)?;
    // Built fallibly (the shape's text grows with its dims).
    let oom = || {
        crate::error::Error::new(
            crate::error::Status::OutOfMemory,
            "failed to allocate the .npy header",
        )
    };
    let mut dict = crate::error::FallibleString::new();
    (|| {
        write!(
            dict,
            "{{'descr': '{descr}', 'fortran_order': False, 'shape': ("
        )?;
        for (i, d) in sizes.iter().enumerate() {
            write!(dict, "{}{d}", if i > 0 { ", " } else { "" })?;
        }
        let comma = if sizes.len() == 1 { "," } else { "" };
        write!(dict, "{comma}), }}")
    })()
    .map_err(|_| oom())?;
    let dict = dict.0.into_bytes();
    // The dict plus its '\n', padded so that the data starts on a 64-byte boundary.
    let padded = |pre: usize| (pre + dict.len() + 1).div_ceil(64) * 64;
    let v1 = padded(10) - 10 <= u16::MAX as usize;
    let pre = if v1 { 10 } else { 12 };
    let total = padded(pre);
    let mut out = Vec::new();
    out.try_reserve_exact(total).map_err(|_| oom())?;
    out.extend_from_slice(MAGIC);
    let len = total - pre;
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    out.extend_from_slice(&dict);
    out.resize(total - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

/// The element bytes of `t` in C order (a view of `t` when it is already contiguous).
pub(crate) fn contiguous_bytes(t: &Tensor) -> Result<(Tensor, usize)> {
    let c = t.contiguous(MemoryFormat::Contiguous)?;
    c.data_for_read()?;
    let n = c.nbytes();
    Ok((c, n))
}

/// Writes `t` to `path` as a C-order `.npy` file, atomically (see
/// [`write_atomically`](super::write_atomically): a mapping or reader of an older `path`
/// never sees a truncated file; symbolic links are written through; the mode is kept;
/// anything but a regular file at `path` is refused).
pub fn save(path: &Path, t: &Tensor) -> Result<()> {
    ensure!(
        t.device() == Device::CPU || t.device().is_host_accessible(),
        Device,
        "cannot save a tensor on device type {} to a file",
        t.device().device_type
    );
    let header = header_bytes(t.dtype(), t.sizes())?;
    let (c, n) = contiguous_bytes(t)?;
    let data: &[u8] = if n == 0 {
        &[]
    } else {
        // SAFETY: a contiguous host tensor has nbytes() readable bytes at data_ptr().
        unsafe { std::slice::from_raw_parts(c.data_ptr(), n) }
    };
    super::write_atomically(path, &[&header, data])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_replaces_the_file_without_disturbing_its_mappings() {
        let p = std::env::temp_dir().join(format!("libtensor-npy-{}.npy", std::process::id()));
        let a = Tensor::arange(1000, DType::I32).unwrap();
        save(&p, &a).unwrap();
        let mapped = load(&p, MapMode::ReadOnly).unwrap();
        assert!(mapped.equal(&a).unwrap());
        assert!(mapped.storage().is_read_only());
        // Saving over the path while it is mapped: the old view keeps the old bytes.
        let b = Tensor::full(&[3], DType::F64, crate::dtype::Scalar::Float(2.5)).unwrap();
        save(&p, &b).unwrap();
        assert!(mapped.equal(&a).unwrap());
        let again = load(&p, MapMode::Private).unwrap();
        assert!(again.equal(&b).unwrap());
        assert!(!again.storage().is_read_only());
        // No temporary file is left behind.
        let dir = std::fs::read_dir(std::env::temp_dir()).unwrap();
        let stray = format!(".libtensor-npy-{}.npy.tmp", std::process::id());
        assert!(!dir
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with(&stray)));
        std::fs::remove_file(&p).unwrap();
        let e = match save(&p.join("not-a-dir/x.npy"), &b) {
            Err(e) => e,
            Ok(()) => panic!("saving under a file must fail"),
        };
        assert_eq!(e.status, crate::error::Status::Io);
        let bf = Tensor::zeros(&[2], DType::BF16).unwrap();
        let e = match save(&p, &bf) {
            Err(e) => e,
            Ok(()) => panic!("bfloat16 has no .npy dtype"),
        };
        assert_eq!(e.status, crate::error::Status::DType);
    }
}

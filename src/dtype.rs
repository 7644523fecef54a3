//! Element types. Codes equal `c10::ScalarType`'s. Every element conversion in the crate
//! (get/set, fill, copy_ between dtypes, format) goes through [`Element`] and [`Scalar`],
//! so the conversion rules live here once:
//! float → int truncates toward zero and saturates (NaN → 0), as Rust's `as` does;
//! int → int wraps (two's complement, like C++'s static_cast); anything → bool is `!= 0`;
//! complex → real keeps the real part; real → complex has a zero imaginary part.

use half::{bf16, f16};
use std::ffi::CStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    U8 = 0,
    I8 = 1,
    I16 = 2,
    I32 = 3,
    I64 = 4,
    F16 = 5,
    F32 = 6,
    F64 = 7,
    C64 = 9,
    C128 = 10,
    Bool = 11,
    BF16 = 15,
    U16 = 27,
    U32 = 28,
    U64 = 29,
}

impl DType {
    pub const ALL: [DType; 15] = [
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
        DType::Bool,
        DType::BF16,
        DType::U16,
        DType::U32,
        DType::U64,
    ];

    pub fn from_code(code: i32) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| *d as i32 == code)
    }

    pub fn itemsize(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::Bool => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// PyTorch's name without the `torch.` prefix.
    pub fn name(self) -> &'static str {
        // Every name is ASCII (a test checks).
        self.c_name().to_str().unwrap_or_default()
    }

    /// [`name`](Self::name) as a C string (the C side hands out the pointer).
    pub(crate) fn c_name(self) -> &'static CStr {
        match self {
            DType::U8 => c"uint8",
            DType::I8 => c"int8",
            DType::I16 => c"int16",
            DType::I32 => c"int32",
            DType::I64 => c"int64",
            DType::F16 => c"float16",
            DType::F32 => c"float32",
            DType::F64 => c"float64",
            DType::C64 => c"complex64",
            DType::C128 => c"complex128",
            DType::Bool => c"bool",
            DType::BF16 => c"bfloat16",
            DType::U16 => c"uint16",
            DType::U32 => c"uint32",
            DType::U64 => c"uint64",
        }
    }

    /// c10's `ScalarType` name ("Float", "Byte", ...), as PyTorch's error messages print
    /// a dtype.
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
            DType::Bool => "Bool",
            DType::BF16 => "BFloat16",
            DType::U16 => "UInt16",
            DType::U32 => "UInt32",
            DType::U64 => "UInt64",
        }
    }

    pub fn is_floating_point(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64 | DType::BF16)
    }

    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }
}

impl DType {
    /// PyTorch's `promote_types`: the dtype both operands of a mixed-dtype comparison or
    /// arithmetic are converted to. uint16/32/64 promote only with themselves and the
    /// floating types, as in PyTorch (otherwise a DType error, worded as PyTorch's with
    /// c10's ScalarType names).
    pub fn promote(self, other: DType) -> crate::error::Result<DType> {
        use DType::*;
        if self == other {
            return Ok(self);
        }
        let big_unsigned = |d: DType| matches!(d, U16 | U32 | U64);
        let (a, b) = (self, other);
        // Rank inside a category: bool < ints < floats < complex.
        let kind = |d: DType| match d {
            Bool => 0,
            U8 | I8 | I16 | I32 | I64 | U16 | U32 | U64 => 1,
            F16 | BF16 | F32 | F64 => 2,
            C64 | C128 => 3,
        };
        let unsupported = |x: DType, y: DType| {
            crate::error::Error::from_fmt(
                crate::error::Status::DType,
                format_args!(
                    "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {} and {}",
                    x.scalar_type_name(),
                    y.scalar_type_name()
                ),
            )
        };
        let (ka, kb) = (kind(a), kind(b));
        if (big_unsigned(a) && kb != 2) || (big_unsigned(b) && ka != 2) {
            return Err(unsupported(a, b));
        }
        if ka != kb {
            let (lo, hi) = if ka < kb { (a, b) } else { (b, a) };
            return Ok(match hi {
                // A float beats any int or bool; a complex must hold the float's precision.
                C64 if lo == F64 => C128,
                _ => hi,
            });
        }
        Ok(match ka {
            1 => {
                let rank = |d: DType| match d {
                    U8 | I8 => 1,
                    I16 => 2,
                    I32 => 3,
                    _ => 4,
                };
                // u8 with i8 needs i16; otherwise the wider signed type.
                if rank(a) == 1 && rank(b) == 1 {
                    I16
                } else if rank(a) >= rank(b) {
                    a
                } else {
                    b
                }
            }
            2 => match (a, b) {
                (F64, _) | (_, F64) => F64,
                _ => F32, // f16 with bf16, or either with f32
            },
            _ => C128,
        })
    }
}

/// One value of any dtype, the pivot every conversion goes through. Conversions are
/// monomorphised and inlined, so the match on the variant disappears in kernels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Complex(f64, f64),
}

impl Scalar {
    #[inline(always)]
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::UInt(u) => u as f64,
            Scalar::Float(f) => f,
            Scalar::Complex(re, _) => re,
        }
    }

    #[inline(always)]
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::UInt(u) => u as i64,
            Scalar::Float(f) => f as i64,
            Scalar::Complex(re, _) => re as i64,
        }
    }

    #[inline(always)]
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::UInt(u) => u != 0,
            Scalar::Float(f) => f != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
}

/// Storage of a `bool` element: any non-zero byte reads as true, so wrapping foreign memory
/// (where a bool byte may hold 2) is never undefined behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Bool(pub u8);

/// complex64 element (two f32, real first, as `std::complex<float>`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[repr(C)]
pub struct Complex32 {
    pub re: f32,
    pub im: f32,
}

/// complex128 element.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[repr(C)]
pub struct Complex64 {
    pub re: f64,
    pub im: f64,
}

/// A Rust type that is the in-memory representation of one dtype. Every bit pattern of
/// `Self` is valid (so reading foreign memory is sound).
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype `Self` represents.
    // Read only by the test tying `with_dtype!`'s dispatch to the dtypes
    // (`tests::codes_sizes_names`): on one cfg, hence the allow.
    #[allow(dead_code)]
    const DTYPE: DType;
    fn to_scalar(self) -> Scalar;
    fn from_scalar(s: Scalar) -> Self;
}

macro_rules! int_element {
    ($t:ty, $dt:ident, $variant:ident, $wide:ty) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar {
                Scalar::$variant(self as $wide)
            }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => b as $t,
                    Scalar::Int(i) => i as $t,
                    Scalar::UInt(u) => u as $t,
                    Scalar::Float(f) => f as $t,
                    Scalar::Complex(re, _) => re as $t,
                }
            }
        }
    };
}
int_element!(u8, U8, UInt, u64);
int_element!(i8, I8, Int, i64);
int_element!(i16, I16, Int, i64);
int_element!(i32, I32, Int, i64);
int_element!(i64, I64, Int, i64);
int_element!(u16, U16, UInt, u64);
int_element!(u32, U32, UInt, u64);
int_element!(u64, U64, UInt, u64);

macro_rules! float_element {
    ($t:ty, $dt:ident, $to:expr, $from:expr, $from_i:expr, $from_u:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar {
                #[allow(clippy::redundant_closure_call)]
                Scalar::Float(($to)(self))
            }
            #[inline(always)]
            #[allow(clippy::redundant_closure_call)]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => ($from)(b as u8 as f64),
                    Scalar::Int(i) => ($from_i)(i),
                    Scalar::UInt(u) => ($from_u)(u),
                    Scalar::Float(f) => ($from)(f),
                    Scalar::Complex(re, _) => ($from)(re),
                }
            }
        }
    };
}
float_element!(
    f32,
    F32,
    |v: f32| v as f64,
    |v: f64| v as f32,
    |i: i64| i as f32,
    |u: u64| u as f32
);
float_element!(
    f64,
    F64,
    |v: f64| v,
    |v: f64| v,
    |i: i64| i as f64,
    |u: u64| u as f64
);
float_element!(
    f16,
    F16,
    |v: f16| v.to_f64(),
    // Through f32, as c10::Half(double) does: the same result as converting an f32 source
    // directly, so fast f32 -> f16 slice kernels agree with this rule bit for bit.
    |v: f64| f16::from_f32(v as f32),
    |i: i64| f16::from_f32(i as f32),
    |u: u64| f16::from_f32(u as f32)
);
float_element!(
    bf16,
    BF16,
    |v: bf16| v.to_f64(),
    // Through f32 (round to nearest even), as c10::BFloat16(double) does. half's from_f64
    // truncates the low mantissa bits first and can round an f32 source differently.
    |v: f64| bf16::from_f32(v as f32),
    |i: i64| bf16::from_f32(i as f32),
    |u: u64| bf16::from_f32(u as f32)
);

impl Element for Bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self.0 != 0)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        Bool(s.to_bool() as u8)
    }
}

impl Element for Complex32 {
    const DTYPE: DType = DType::C64;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Complex(self.re as f64, self.im as f64)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Complex(re, im) => Complex32 {
                re: re as f32,
                im: im as f32,
            },
            other => Complex32 {
                re: f32::from_scalar(other),
                im: 0.0,
            },
        }
    }
}

impl Element for Complex64 {
    const DTYPE: DType = DType::C128;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Complex(self.re, self.im)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Complex(re, im) => Complex64 { re, im },
            other => Complex64 {
                re: f64::from_scalar(other),
                im: 0.0,
            },
        }
    }
}

/// Runs `$body` with `$T` bound to the element type of `$dt` (one dispatch per call, never
/// per element). Crate-local: called as `crate::dtype::with_dtype!`.
macro_rules! with_dtype {
    ($dt:expr, $T:ident => $body:expr) => {{
        use $crate::dtype::DType as __D;
        match $dt {
            __D::U8 => {
                type $T = u8;
                $body
            }
            __D::I8 => {
                type $T = i8;
                $body
            }
            __D::I16 => {
                type $T = i16;
                $body
            }
            __D::I32 => {
                type $T = i32;
                $body
            }
            __D::I64 => {
                type $T = i64;
                $body
            }
            __D::F16 => {
                type $T = half::f16;
                $body
            }
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            __D::C64 => {
                type $T = $crate::dtype::Complex32;
                $body
            }
            __D::C128 => {
                type $T = $crate::dtype::Complex64;
                $body
            }
            __D::Bool => {
                type $T = $crate::dtype::Bool;
                $body
            }
            __D::BF16 => {
                type $T = half::bf16;
                $body
            }
            __D::U16 => {
                type $T = u16;
                $body
            }
            __D::U32 => {
                type $T = u32;
                $body
            }
            __D::U64 => {
                type $T = u64;
                $body
            }
        }
    }};
}
pub(crate) use with_dtype;

/// Reads one element of `dtype` at `ptr` (unaligned reads allowed).
///
/// # Safety
/// `ptr` must be valid for reading `dtype.itemsize()` bytes.
pub unsafe fn read_scalar(dtype: DType, ptr: *const u8) -> Scalar {
    // SAFETY: T is dtype's element type, so the read covers the itemsize bytes the caller
    // vouches for; read_unaligned needs no alignment.
    with_dtype!(dtype, T => unsafe { (ptr as *const T).read_unaligned() }.to_scalar())
}

/// Writes `value` converted to `dtype` at `ptr`.
///
/// # Safety
/// `ptr` must be valid for writing `dtype.itemsize()` bytes.
pub unsafe fn write_scalar(dtype: DType, ptr: *mut u8, value: Scalar) {
    // SAFETY: as in read_scalar, for writing.
    with_dtype!(dtype, T => unsafe { (ptr as *mut T).write_unaligned(T::from_scalar(value)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_sizes_names() {
        for d in DType::ALL {
            assert_eq!(DType::from_code(d as i32), Some(d));
            assert!(!d.name().is_empty());
            with_dtype!(d, T => assert_eq!(std::mem::size_of::<T>(), d.itemsize()));
            with_dtype!(d, T => assert_eq!(T::DTYPE, d));
        }
        assert_eq!(DType::from_code(8), None);
        assert_eq!(DType::from_code(-1), None);
        assert_eq!(DType::F32.name(), "float32");
        assert_eq!(DType::BF16 as i32, 15);
    }

    #[test]
    fn conversions_follow_the_rules() {
        assert_eq!(i32::from_scalar(Scalar::Float(-2.7)), -2);
        assert_eq!(u8::from_scalar(Scalar::Float(300.0)), 255);
        assert_eq!(i8::from_scalar(Scalar::Float(f64::NAN)), 0);
        assert_eq!(u8::from_scalar(Scalar::Int(257)), 1);
        assert_eq!(Bool::from_scalar(Scalar::Float(0.5)), Bool(1));
        assert_eq!(Bool::from_scalar(Scalar::Complex(0.0, 1.0)), Bool(1));
        assert_eq!(Bool(7).to_scalar(), Scalar::Bool(true));
        assert_eq!(f32::from_scalar(Scalar::Complex(1.5, 2.0)), 1.5);
        assert_eq!(
            Complex32::from_scalar(Scalar::Int(3)),
            Complex32 { re: 3.0, im: 0.0 }
        );
        assert_eq!(f16::from_scalar(Scalar::Float(1.0)), f16::ONE);
        assert_eq!(bf16::from_scalar(Scalar::Int(-2)).to_f32(), -2.0);
        assert_eq!(i64::from_scalar(Scalar::UInt(u64::MAX)), -1);
        assert_eq!(u64::from_scalar(Scalar::Int(i64::MAX)), i64::MAX as u64);
    }

    #[test]
    fn raw_read_write_roundtrip() {
        for d in DType::ALL {
            let mut buf = [0u8; 16];
            // SAFETY: 16 bytes hold one element of every dtype.
            unsafe {
                write_scalar(d, buf.as_mut_ptr(), Scalar::Int(1));
                assert_eq!(read_scalar(d, buf.as_ptr()).to_f64(), 1.0, "{d:?}");
            }
        }
    }
}

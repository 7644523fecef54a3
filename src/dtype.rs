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
    F8E5M2 = 23,
    F8E4M3Fn = 24,
    F8E5M2Fnuz = 25,
    F8E4M3Fnuz = 26,
    F8E8M0Fnu = 44,
    /// Two float4_e2m1fn values per byte (low nibble first), as PyTorch stores them: one
    /// element is one byte, so no view can split a byte. Bit copies only (PyTorch has no
    /// conversions for it): see [`DType::has_values`].
    F4E2M1FnX2 = 45,
}

/// What kind of number a dtype holds (one row of [`DType::info`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// Signed or unsigned integer.
    Int,
    /// float16 / bfloat16 / float32 / float64.
    Float,
    Complex,
    /// An 8-bit float (`crate::float8`): converts like a float, promotes with nothing.
    Float8,
    /// Packed sub-byte floats with no element conversions (float4_e2m1fn_x2).
    Packed,
}

/// Every property of one dtype, in one row of [`DType::info`]'s table.
pub struct Info {
    /// PyTorch's name without the `torch.` prefix.
    pub name: &'static CStr,
    /// c10's `ScalarType` name.
    pub scalar_type: &'static str,
    pub itemsize: u8,
    pub kind: Kind,
}

impl DType {
    pub const ALL: [DType; 21] = [
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
        DType::F8E5M2,
        DType::F8E4M3Fn,
        DType::F8E5M2Fnuz,
        DType::F8E4M3Fnuz,
        DType::F8E8M0Fnu,
        DType::F4E2M1FnX2,
    ];

    /// One past the largest dtype code.
    const CODES: usize = {
        let (mut max, mut i) = (0, 0);
        while i < DType::ALL.len() {
            if DType::ALL[i] as usize > max {
                max = DType::ALL[i] as usize;
            }
            i += 1;
        }
        max + 1
    };

    /// The dtype of each code, and each dtype's item size and kind, indexed by code:
    /// computed at compile time from [`ALL`](Self::ALL) and [`info`](Self::info) (the one
    /// table), so that the hot paths (every handle's dtype check, every layout's byte
    /// arithmetic) index an array instead of searching or matching.
    const BY_CODE: [Option<DType>; DType::CODES] = {
        let mut t = [None; DType::CODES];
        let mut i = 0;
        while i < DType::ALL.len() {
            t[DType::ALL[i] as usize] = Some(DType::ALL[i]);
            i += 1;
        }
        t
    };
    const ITEMSIZE: [u8; DType::CODES] = {
        let mut t = [0; DType::CODES];
        let mut i = 0;
        while i < DType::ALL.len() {
            t[DType::ALL[i] as usize] = DType::ALL[i].info().itemsize;
            i += 1;
        }
        t
    };

    pub fn from_code(code: i32) -> Option<DType> {
        usize::try_from(code)
            .ok()
            .and_then(|c| DType::BY_CODE.get(c).copied().flatten())
    }

    /// The dtype table: every per-dtype property lives in this one match.
    pub const fn info(self) -> Info {
        const fn row(
            name: &'static CStr,
            scalar_type: &'static str,
            itemsize: u8,
            kind: Kind,
        ) -> Info {
            Info {
                name,
                scalar_type,
                itemsize,
                kind,
            }
        }
        use Kind::*;
        match self {
            DType::U8 => row(c"uint8", "Byte", 1, Int),
            DType::I8 => row(c"int8", "Char", 1, Int),
            DType::I16 => row(c"int16", "Short", 2, Int),
            DType::I32 => row(c"int32", "Int", 4, Int),
            DType::I64 => row(c"int64", "Long", 8, Int),
            DType::F16 => row(c"float16", "Half", 2, Float),
            DType::F32 => row(c"float32", "Float", 4, Float),
            DType::F64 => row(c"float64", "Double", 8, Float),
            DType::C64 => row(c"complex64", "ComplexFloat", 8, Complex),
            DType::C128 => row(c"complex128", "ComplexDouble", 16, Complex),
            DType::Bool => row(c"bool", "Bool", 1, Bool),
            DType::BF16 => row(c"bfloat16", "BFloat16", 2, Float),
            DType::U16 => row(c"uint16", "UInt16", 2, Int),
            DType::U32 => row(c"uint32", "UInt32", 4, Int),
            DType::U64 => row(c"uint64", "UInt64", 8, Int),
            DType::F8E5M2 => row(c"float8_e5m2", "Float8_e5m2", 1, Float8),
            DType::F8E4M3Fn => row(c"float8_e4m3fn", "Float8_e4m3fn", 1, Float8),
            DType::F8E5M2Fnuz => row(c"float8_e5m2fnuz", "Float8_e5m2fnuz", 1, Float8),
            DType::F8E4M3Fnuz => row(c"float8_e4m3fnuz", "Float8_e4m3fnuz", 1, Float8),
            DType::F8E8M0Fnu => row(c"float8_e8m0fnu", "Float8_e8m0fnu", 1, Float8),
            DType::F4E2M1FnX2 => row(c"float4_e2m1fn_x2", "Float4_e2m1fn_x2", 1, Packed),
        }
    }

    pub fn itemsize(self) -> usize {
        DType::ITEMSIZE[self as usize] as usize
    }

    /// PyTorch's name without the `torch.` prefix.
    pub fn name(self) -> &'static str {
        // Every name is ASCII (a test checks).
        self.c_name().to_str().unwrap_or_default()
    }

    /// [`name`](Self::name) as a C string (the C side hands out the pointer).
    pub(crate) fn c_name(self) -> &'static CStr {
        self.info().name
    }

    /// c10's `ScalarType` name ("Float", "Byte", ...), as PyTorch's error messages print
    /// a dtype.
    pub fn scalar_type_name(self) -> &'static str {
        self.info().scalar_type
    }

    /// As PyTorch's `is_floating_point` (true for the float8 and float4 types too).
    pub fn is_floating_point(self) -> bool {
        matches!(self.info().kind, Kind::Float | Kind::Float8 | Kind::Packed)
    }

    pub fn is_complex(self) -> bool {
        self.info().kind == Kind::Complex
    }

    /// Whether elements of this dtype have values the library can convert, fill, compare
    /// or print: every dtype but float4_e2m1fn_x2, which PyTorch (and so the library) only
    /// copies bit for bit into its own dtype.
    pub fn has_values(self) -> bool {
        self.info().kind != Kind::Packed
    }

    /// Refuses `op` on a dtype without values ([`has_values`](Self::has_values)), worded
    /// as PyTorch's dispatch error: `"fill_" not implemented for 'Float4_e2m1fn_x2'`.
    pub fn check_has_values(self, op: &str) -> crate::error::Result<()> {
        ensure!(
            self.has_values(),
            DType,
            "\"{op}\" not implemented for '{}'",
            self.scalar_type_name()
        );
        Ok(())
    }

    /// Refuses a copy from `src` to `self` that would have to convert values of a dtype
    /// without any (a same-dtype copy of float4_e2m1fn_x2 moves bytes and is fine).
    pub fn check_convert_from(self, src: DType, op: &str) -> crate::error::Result<()> {
        if self != src {
            src.check_has_values(op)?;
            self.check_has_values(op)?;
        }
        Ok(())
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
        let narrow = |d: DType| matches!(d.info().kind, Kind::Float8 | Kind::Packed);
        ensure!(
            !narrow(a) && !narrow(b),
            DType,
            "Promotion for Float8 Types is not supported, attempted to promote {} and {}",
            a.scalar_type_name(),
            b.scalar_type_name()
        );
        // Rank inside a category: bool < ints < floats < complex.
        let kind = |d: DType| match d.info().kind {
            Kind::Bool => 0,
            Kind::Int => 1,
            Kind::Float | Kind::Float8 | Kind::Packed => 2,
            Kind::Complex => 3,
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

macro_rules! float8_element {
    ($($t:ident => $dt:ident),*) => {$(
        impl Element for crate::float8::$t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar {
                use crate::float8::Float8;
                self.to_f32().to_scalar()
            }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self {
                use crate::float8::Float8;
                // Through f32, as c10's Float8_*(float) constructors: a double or int64 is
                // rounded to float first (the same rule as f16 / bf16 above).
                Self::from_f32(f32::from_scalar(s))
            }
        }
    )*};
}
float8_element!(F8E5M2 => F8E5M2, F8E4M3Fn => F8E4M3Fn, F8E5M2Fnuz => F8E5M2Fnuz,
    F8E4M3Fnuz => F8E4M3Fnuz, F8E8M0Fnu => F8E8M0Fnu);

/// float4_e2m1fn_x2 has no values ([`DType::has_values`]): every op that would convert,
/// fill, compare or print one refuses first. The byte as an unsigned integer is what
/// these would give if reached (what PyTorch's printing shows for it).
impl Element for crate::float8::F4E2M1FnX2 {
    const DTYPE: DType = DType::F4E2M1FnX2;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::UInt(self.0 as u64)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        crate::float8::F4E2M1FnX2(u8::from_scalar(s))
    }
}

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
            __D::F8E5M2 => {
                type $T = $crate::float8::F8E5M2;
                $body
            }
            __D::F8E4M3Fn => {
                type $T = $crate::float8::F8E4M3Fn;
                $body
            }
            __D::F8E5M2Fnuz => {
                type $T = $crate::float8::F8E5M2Fnuz;
                $body
            }
            __D::F8E4M3Fnuz => {
                type $T = $crate::float8::F8E4M3Fnuz;
                $body
            }
            __D::F8E8M0Fnu => {
                type $T = $crate::float8::F8E8M0Fnu;
                $body
            }
            __D::F4E2M1FnX2 => {
                type $T = $crate::float8::F4E2M1FnX2;
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

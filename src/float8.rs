//! The 8-bit float formats (float8_e5m2, float8_e4m3fn, float8_e5m2fnuz, float8_e4m3fnuz,
//! float8_e8m0fnu): decoding to float32 (exact, by a 256-entry table per format) and
//! encoding from float32 with PyTorch 2.15's rounding and overflow rules. Every other
//! source converts to float32 first, as c10's `Float8_*(float)` constructors make C++ do
//! (a float64 or int64 source is rounded to float32, then to the format).
//!
//! Encoding, for the four sign-exponent-mantissa formats: round to nearest, ties to even,
//! on the value (subnormals included: the quantum below the smallest normal is
//! `2^(1 - bias - mantissa_bits)`), then, when the result is beyond the largest finite
//! value (an infinity, or a finite value that rounds past it):
//!
//! | format | bias | largest | overflow and ±inf | NaN | zero |
//! |---|---|---|---|---|---|
//! | e5m2 | 15 | 57344 (0x7B) | ±inf (0x7C) | 0x7F, sign kept | ±0 |
//! | e4m3fn | 7 | 448 (0x7E) | ±448, saturated (0x7E) | 0x7F, sign kept | ±0 |
//! | e5m2fnuz | 16 | 57344 (0x7F) | NaN (0x80) | 0x80 | +0 only (−0 → 0x00) |
//! | e4m3fnuz | 8 | 240 (0x7F) | NaN (0x80) | 0x80 | +0 only (−0 → 0x00) |
//!
//! (e4m3fn saturates in PyTorch 2.15's `fp8e4m3fn_from_fp32_value`, where `ml_dtypes`
//! gives NaN: PyTorch is the reference here.) e8m0fnu (an exponent only, bias 127, no
//! sign, no zero: 0x00 is 2^-127, 0xFF is NaN) takes the float32's biased exponent field,
//! ignores the sign, and adds one when the mantissa's top bit is set and either a lower
//! mantissa bit is set or the exponent field is non-zero; NaN and ±inf give 0xFF (as does
//! rounding up from 0xFE).

/// One sign-exponent-mantissa format.
#[derive(Clone, Copy)]
pub(crate) struct Format {
    pub(crate) man: u32,
    pub(crate) bias: i32,
    /// fnuz: one NaN (0x80), no infinity, no −0, overflow gives NaN.
    pub(crate) fnuz: bool,
    /// Largest finite code (positive).
    pub(crate) max: u32,
    /// Code of a finite value past `max` and of ±inf (sign added unless fnuz).
    pub(crate) overflow: u32,
}

pub(crate) const E5M2: Format = Format {
    man: 2,
    bias: 15,
    fnuz: false,
    max: 0x7B,
    overflow: 0x7C,
};
pub(crate) const E4M3FN: Format = Format {
    man: 3,
    bias: 7,
    fnuz: false,
    max: 0x7E,
    overflow: 0x7E,
};
pub(crate) const E5M2FNUZ: Format = Format {
    man: 2,
    bias: 16,
    fnuz: true,
    max: 0x7F,
    overflow: 0x80,
};
pub(crate) const E4M3FNUZ: Format = Format {
    man: 3,
    bias: 8,
    fnuz: true,
    max: 0x7F,
    overflow: 0x80,
};

/// `v >> s` rounded to nearest, ties to even (`1 <= s <= 31`, `v < 2^31`).
#[inline(always)]
fn shift_rne(v: u32, s: u32) -> u32 {
    (v + ((1 << s) >> 1) - 1 + ((v >> s) & 1)) >> s
}

/// float32 -> `F`'s code, by the rules in the module doc. Written with selects rather
/// than branches, so a loop of it vectorises.
#[inline(always)]
pub(crate) fn encode<const M: u32, const BIAS: i32, const FNUZ: bool>(
    f: f32,
    max: u32,
    overflow: u32,
) -> u8 {
    let bits = f.to_bits();
    let sign = (bits >> 24) & 0x80;
    let abs = bits & 0x7FFF_FFFF;
    let exp = (abs >> 23) as i32; // biased float32 exponent
                                  // Normal result: rebias the exponent in place (float32 exponent field - 127 + BIAS),
                                  // then round away the low 23 - M bits; a carry out of the mantissa bumps the exponent,
                                  // as it should.
    let shift = 23 - M;
    let rebias = ((127 - BIAS) as u32) << 23;
    let normal = shift_rne(abs.wrapping_sub(rebias) & 0x7FFF_FFFF, shift);
    // Subnormal result (target exponent < 1): the 24-bit significand in units of the
    // quantum 2^(1 - BIAS - M): shift right by 23 - M + (1 - target exponent).
    let target = exp - 127 + BIAS;
    let sub_shift = (shift as i32 + 1 - target).clamp(1, 31) as u32;
    let sig = (abs & 0x007F_FFFF) | 0x0080_0000;
    let sub = shift_rne(sig, sub_shift);
    let q = if target >= 1 { normal } else { sub };
    let code = if abs > 0x7F80_0000 {
        if FNUZ {
            0x80
        } else {
            0x7F | sign
        }
    } else if q > max {
        if FNUZ {
            overflow
        } else {
            overflow | sign
        }
    } else if FNUZ && q == 0 {
        0
    } else {
        q | sign
    };
    code as u8
}

/// float32 -> float8_e8m0fnu's code (module doc).
#[inline(always)]
pub(crate) fn encode_e8m0(f: f32) -> u8 {
    let bits = f.to_bits();
    let exp = (bits >> 23) & 0xFF;
    let half = bits & 0x0040_0000 != 0;
    let below = bits & 0x003F_FFFF != 0;
    let up = half && (below || exp > 0);
    if exp == 0xFF {
        0xFF
    } else {
        (exp + up as u32) as u8
    }
}

/// The float32 value of code `x` of a sign-exponent-mantissa format (as bits; NaN is a
/// quiet NaN, with the code's sign unless fnuz).
const fn decode_bits(f: Format, x: u8) -> u32 {
    let x = x as u32;
    let sign = (x & 0x80) << 24;
    let mag = x & 0x7F;
    let m = mag & ((1 << f.man) - 1);
    let e = mag >> f.man;
    let emask = (1 << (7 - f.man)) - 1;
    if f.fnuz && x == 0x80 {
        return 0x7FC0_0000;
    }
    if !f.fnuz {
        // e5m2 has IEEE infinities and NaNs; e4m3fn only NaN at all-ones.
        let nan = if f.man == 2 {
            e == emask && m != 0
        } else {
            mag == 0x7F
        };
        if nan {
            return sign | 0x7FC0_0000;
        }
        if f.man == 2 && e == emask {
            return sign | 0x7F80_0000;
        }
    }
    if mag == 0 {
        return sign;
    }
    if e == 0 {
        // Subnormal m · 2^(1 - bias - man): normalise the significand.
        let mut m = m;
        let mut exp = 1 - f.bias;
        while m & (1 << f.man) == 0 {
            m <<= 1;
            exp -= 1;
        }
        let m = m & ((1 << f.man) - 1);
        return sign | (((exp + 127) as u32) << 23) | (m << (23 - f.man));
    }
    sign | (((e as i32 - f.bias + 127) as u32) << 23) | (m << (23 - f.man))
}

const fn table(f: Format) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = decode_bits(f, i as u8);
        i += 1;
    }
    t
}

const fn table_e8m0() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = match i {
            0 => 0x0040_0000, // 2^-127, a float32 subnormal
            0xFF => 0x7FC0_0000,
            _ => (i as u32) << 23,
        };
        i += 1;
    }
    t
}

/// Decoding tables: float32 bits of every code (bfloat16 is the top half: every float8
/// value is exact in bfloat16 too).
pub(crate) static DECODE_E5M2: [u32; 256] = table(E5M2);
pub(crate) static DECODE_E4M3FN: [u32; 256] = table(E4M3FN);
pub(crate) static DECODE_E5M2FNUZ: [u32; 256] = table(E5M2FNUZ);
pub(crate) static DECODE_E4M3FNUZ: [u32; 256] = table(E4M3FNUZ);
pub(crate) static DECODE_E8M0FNU: [u32; 256] = table_e8m0();

/// The float32 bits of code `x` of a sign-exponent-mantissa format (`M` mantissa bits,
/// bias `BIAS`; `FNUZ`; `IEEE`: e5m2's infinities and NaNs, else e4m3fn's one NaN
/// magnitude), by integer operations and one int -> float conversion, written with
/// selects so a loop of it vectorises (the decoding tables give the same values; a test
/// checks every code). Normal codes move their exponent and mantissa into place; a
/// subnormal code's mantissa is converted to float and scaled by the quantum
/// 2^(1 - BIAS - M), a normal float32 (so no subnormal arithmetic).
#[inline(always)]
pub(crate) fn decode_arith<const M: u32, const BIAS: i32, const FNUZ: bool, const IEEE: bool>(
    x: u8,
) -> u32 {
    let x = x as u32;
    let sign = (x & 0x80) << 24;
    let mag = x & 0x7F;
    let m = mag & ((1 << M) - 1);
    let normal = (mag << (23 - M)) + (((127 - BIAS) as u32) << 23);
    let quantum = f32::from_bits(((127 + 1 - BIAS - M as i32) as u32) << 23);
    let sub = (m as i32 as f32 * quantum).to_bits();
    let value = if mag >> M == 0 { sub } else { normal } | sign;
    let emax = 0x7F >> M;
    if FNUZ {
        if x == 0x80 {
            0x7FC0_0000
        } else {
            value
        }
    } else if IEEE && mag >> M == emax {
        sign | if m == 0 { 0x7F80_0000 } else { 0x7FC0_0000 }
    } else if !IEEE && mag == 0x7F {
        sign | 0x7FC0_0000
    } else {
        value
    }
}

/// [`decode_arith`] for float8_e8m0fnu: 2^(x - 127), 0x00 is 2^-127, 0xFF NaN.
#[inline(always)]
pub(crate) fn decode_arith_e8m0(x: u8) -> u32 {
    match x {
        0 => 0x0040_0000,
        0xFF => 0x7FC0_0000,
        _ => (x as u32) << 23,
    }
}

/// A float8 element type: its code, the decoding table and the encoder. Implementors
/// are `#[repr(transparent)]` over one `u8`, the code (the SIMD kernels of
/// `copy/kernels/float8.rs` read and write slices of them as bytes).
pub(crate) trait Float8: Copy + 'static {
    const TABLE: &'static [u32; 256];
    /// The sign-exponent-mantissa format (None for e8m0fnu).
    const FORMAT: Option<Format>;
    /// The float32 bits of `self` by arithmetic (vectorisable; equal to `TABLE`).
    fn decode(self) -> u32;
    fn bits(self) -> u8;
    fn from_bits(b: u8) -> Self;
    fn encode(f: f32) -> u8;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits(Self::TABLE[self.bits() as usize])
    }
    #[inline(always)]
    fn from_f32(f: f32) -> Self {
        Self::from_bits(Self::encode(f))
    }
}

macro_rules! float8_type {
    ($(#[$doc:meta])* $t:ident, $table:ident, $format:expr, |$f:ident| $enc:expr, |$x:ident| $dec:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        #[repr(transparent)]
        pub struct $t(pub u8);

        impl Float8 for $t {
            const TABLE: &'static [u32; 256] = &$table;
            const FORMAT: Option<Format> = $format;
            #[inline(always)]
            fn bits(self) -> u8 {
                self.0
            }
            #[inline(always)]
            fn from_bits(b: u8) -> Self {
                $t(b)
            }
            #[inline(always)]
            fn encode($f: f32) -> u8 {
                $enc
            }
            #[inline(always)]
            fn decode(self) -> u32 {
                let $x = self.0;
                $dec
            }
        }
    };
}

float8_type!(
    /// float8_e5m2 (bias 15, infinities and NaNs as IEEE).
    F8E5M2, DECODE_E5M2, Some(E5M2), |f| encode::<2, 15, false>(f, E5M2.max, E5M2.overflow),
    |x| decode_arith::<2, 15, false, true>(x)
);
float8_type!(
    /// float8_e4m3fn (bias 7, no infinity, NaN at S.1111.111).
    F8E4M3Fn, DECODE_E4M3FN, Some(E4M3FN), |f| encode::<3, 7, false>(f, E4M3FN.max, E4M3FN.overflow),
    |x| decode_arith::<3, 7, false, false>(x)
);
float8_type!(
    /// float8_e5m2fnuz (bias 16, the one NaN 0x80, no −0).
    F8E5M2Fnuz, DECODE_E5M2FNUZ, Some(E5M2FNUZ), |f| encode::<2, 16, true>(f, E5M2FNUZ.max, E5M2FNUZ.overflow),
    |x| decode_arith::<2, 16, true, false>(x)
);
float8_type!(
    /// float8_e4m3fnuz (bias 8, the one NaN 0x80, no −0).
    F8E4M3Fnuz, DECODE_E4M3FNUZ, Some(E4M3FNUZ), |f| encode::<3, 8, true>(f, E4M3FNUZ.max, E4M3FNUZ.overflow),
    |x| decode_arith::<3, 8, true, false>(x)
);
float8_type!(
    /// float8_e8m0fnu (an unsigned power of two, 2^-127 ..= 2^127, NaN 0xFF).
    F8E8M0Fnu, DECODE_E8M0FNU, None, |f| encode_e8m0(f),
    |x| decode_arith_e8m0(x)
);

/// float4_e2m1fn_x2: two float4_e2m1fn values in one byte, element 0 in the low nibble.
/// PyTorch defines no conversion for it, so neither does the library: only copies into
/// the same dtype (and DLPack, bit views) move its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct F4E2M1FnX2(pub u8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_known_values() {
        let v = |t: &[u32; 256], x: u8| f32::from_bits(t[x as usize]);
        assert_eq!(v(&DECODE_E4M3FN, 0x7E), 448.0);
        assert_eq!(v(&DECODE_E4M3FN, 0x01), 2f32.powi(-9));
        assert_eq!(v(&DECODE_E4M3FN, 0x38), 1.0);
        assert!(v(&DECODE_E4M3FN, 0x7F).is_nan() && v(&DECODE_E4M3FN, 0xFF).is_nan());
        assert_eq!(v(&DECODE_E4M3FN, 0x80).to_bits(), 0x8000_0000);
        assert_eq!(v(&DECODE_E5M2, 0x7B), 57344.0);
        assert_eq!(v(&DECODE_E5M2, 0x7C), f32::INFINITY);
        assert_eq!(v(&DECODE_E5M2, 0xFC), f32::NEG_INFINITY);
        assert!(v(&DECODE_E5M2, 0x7D).is_nan());
        assert_eq!(v(&DECODE_E5M2, 0x01), 2f32.powi(-16));
        assert_eq!(v(&DECODE_E4M3FNUZ, 0x7F), 240.0);
        assert_eq!(v(&DECODE_E4M3FNUZ, 0x01), 2f32.powi(-10));
        assert!(v(&DECODE_E4M3FNUZ, 0x80).is_nan());
        assert_eq!(v(&DECODE_E4M3FNUZ, 0xFF), -240.0);
        assert_eq!(v(&DECODE_E5M2FNUZ, 0x7F), 57344.0);
        assert_eq!(v(&DECODE_E5M2FNUZ, 0x01), 2f32.powi(-17));
        assert_eq!(v(&DECODE_E8M0FNU, 0), 2f32.powi(-127));
        assert_eq!(v(&DECODE_E8M0FNU, 127), 1.0);
        assert_eq!(v(&DECODE_E8M0FNU, 254), 2f32.powi(127));
        assert!(v(&DECODE_E8M0FNU, 255).is_nan());
    }

    /// The arithmetic decoder equals the table, bit for bit, on every code.
    #[test]
    fn arithmetic_decode_equals_the_table() {
        fn check<T: Float8>() {
            for x in 0..=255u8 {
                assert_eq!(T::from_bits(x).decode(), T::TABLE[x as usize], "{x:#x}");
            }
        }
        check::<F8E5M2>();
        check::<F8E4M3Fn>();
        check::<F8E5M2Fnuz>();
        check::<F8E4M3Fnuz>();
        check::<F8E8M0Fnu>();
    }

    /// Every finite code decodes and re-encodes to itself (the one exception: fnuz has
    /// no −0, and e4m3fn / e5m2 NaNs keep only their sign).
    #[test]
    fn every_code_round_trips() {
        fn check<T: Float8>() {
            for x in 0..=255u8 {
                let f = T::from_bits(x).to_f32();
                let back = T::encode(f);
                if f.is_nan() {
                    assert!(T::from_bits(back).to_f32().is_nan(), "{x:#x}");
                } else {
                    assert_eq!(back, x, "{x:#x} -> {f:e}");
                }
            }
        }
        check::<F8E5M2>();
        check::<F8E4M3Fn>();
        check::<F8E5M2Fnuz>();
        check::<F8E4M3Fnuz>();
        check::<F8E8M0Fnu>();
    }

    #[test]
    fn encode_rounding_and_overflow() {
        // Ties to even: 1 + 2^-4 is halfway between 1 (0x38) and 1.125 (0x39) in e4m3fn.
        assert_eq!(F8E4M3Fn::encode(1.0 + 2f32.powi(-4)), 0x38);
        assert_eq!(F8E4M3Fn::encode(1.125 + 2f32.powi(-4)), 0x3A);
        assert_eq!(
            F8E4M3Fn::encode(f32::from_bits((1.0f32 + 2f32.powi(-4)).to_bits() + 1)),
            0x39
        );
        // e4m3fn saturates; NaN keeps its sign.
        assert_eq!(F8E4M3Fn::encode(464.0), 0x7E);
        assert_eq!(F8E4M3Fn::encode(470.0), 0x7E);
        assert_eq!(F8E4M3Fn::encode(1e9), 0x7E);
        assert_eq!(F8E4M3Fn::encode(f32::NEG_INFINITY), 0xFE);
        assert_eq!(F8E4M3Fn::encode(-f32::NAN), 0xFF);
        // Subnormals: the smallest is 2^-9; half of it ties to 0, a bit more rounds up.
        assert_eq!(F8E4M3Fn::encode(2f32.powi(-10)), 0x00);
        assert_eq!(F8E4M3Fn::encode(-2f32.powi(-10) * 1.01), 0x81);
        assert_eq!(F8E4M3Fn::encode(3.0 * 2f32.powi(-10)), 0x02);
        assert_eq!(F8E4M3Fn::encode(-0.0), 0x80);
        assert_eq!(F8E4M3Fn::encode(f32::MIN_POSITIVE / 4.0), 0x00);
        // e5m2 overflows to inf from the halfway point 61440.
        assert_eq!(F8E5M2::encode(61439.0), 0x7B);
        assert_eq!(F8E5M2::encode(61440.0), 0x7C);
        assert_eq!(F8E5M2::encode(-1e30), 0xFC);
        // fnuz: overflow and NaN are 0x80, −0 is +0.
        assert_eq!(F8E4M3Fnuz::encode(248.0), 0x80);
        assert_eq!(F8E4M3Fnuz::encode(247.0), 0x7F);
        assert_eq!(F8E4M3Fnuz::encode(f32::NEG_INFINITY), 0x80);
        assert_eq!(F8E4M3Fnuz::encode(-0.0), 0x00);
        assert_eq!(F8E4M3Fnuz::encode(-2f32.powi(-12)), 0x00);
        assert_eq!(F8E5M2Fnuz::encode(-f32::NAN), 0x80);
        // e8m0fnu: sign ignored, rounds up from a significand of 1.5.
        assert_eq!(F8E8M0Fnu::encode(-4.0), 129);
        assert_eq!(F8E8M0Fnu::encode(1.5), 128);
        assert_eq!(F8E8M0Fnu::encode(1.49), 127);
        assert_eq!(F8E8M0Fnu::encode(0.0), 0);
        assert_eq!(F8E8M0Fnu::encode(f32::INFINITY), 0xFF);
        assert_eq!(F8E8M0Fnu::encode(f32::MAX), 0xFF);
    }
}

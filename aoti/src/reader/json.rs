//! A strict JSON reader (RFC 8259) for the package's small JSON entries: the model's
//! metadata (`{"AOTI_CPU_ISA": "AVX2", ...}`) and the extern-kernel nodes of a model that
//! needs libtorch's proxy executor. Depth and size are bounded.

use super::{invalid, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

const MAX_DEPTH: usize = 64;

impl Json {
    /// Parses one JSON value (surrounded by whitespace only).
    pub fn parse(text: &str) -> Result<Json> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value(0)?;
        p.ws();
        if p.i != p.s.len() {
            return p.fail("trailing characters");
        }
        Ok(v)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn fail<T>(&self, what: &str) -> Result<T> {
        invalid(format!("JSON: {what} at byte {}", self.i))
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        self.ws();
        let Some(&c) = self.s.get(self.i) else {
            return self.fail("unexpected end");
        };
        match c {
            b'{' => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(Json::Object(m));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return self.fail("expected a string key");
                    }
                    let k = self.string()?;
                    self.ws();
                    if !self.eat(":") {
                        return self.fail("expected ':'");
                    }
                    let v = self.value(depth + 1)?;
                    m.push((k, v));
                    self.ws();
                    if self.eat("}") {
                        return Ok(Json::Object(m));
                    }
                    if !self.eat(",") {
                        return self.fail("expected ',' or '}'");
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Ok(Json::Array(a));
                }
                loop {
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat("]") {
                        return Ok(Json::Array(a));
                    }
                    if !self.eat(",") {
                        return self.fail("expected ',' or ']'");
                    }
                }
            }
            b'"' => Ok(Json::String(self.string()?)),
            b't' if self.eat("true") => Ok(Json::Bool(true)),
            b'f' if self.eat("false") => Ok(Json::Bool(false)),
            b'n' if self.eat("null") => Ok(Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.fail("unexpected character"),
        }
    }

    fn number(&mut self) -> Result<Json> {
        let start = self.i;
        self.eat("-");
        let digits = |p: &mut Self| {
            let b = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - b
        };
        if self.eat("0") {
        } else if digits(self) == 0 {
            return self.fail("bad number");
        }
        if self.eat(".") && digits(self) == 0 {
            return self.fail("bad fraction");
        }
        if self.eat("e") || self.eat("E") {
            if !self.eat("+") {
                self.eat("-");
            }
            if digits(self) == 0 {
                return self.fail("bad exponent");
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        match text.parse::<f64>() {
            Ok(v) => Ok(Json::Number(v)),
            Err(_) => self.fail("bad number"),
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok());
        match h.and_then(|h| u32::from_str_radix(h, 16).ok()) {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => self.fail("bad \\u escape"),
        }
    }

    fn string(&mut self) -> Result<String> {
        self.i += 1; // the opening quote
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return self.fail("unterminated string");
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.i += 1;
                    let Some(&e) = self.s.get(self.i) else {
                        return self.fail("unterminated escape");
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut v = self.hex4()?;
                            if (0xd800..0xdc00).contains(&v) && self.eat("\\u") {
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return self.fail("bad surrogate pair");
                                }
                                v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                            }
                            match char::from_u32(v) {
                                Some(ch) => out.push(ch),
                                None => return self.fail("bad code point"),
                            }
                        }
                        _ => return self.fail("bad escape"),
                    }
                }
                0..=0x1f => return self.fail("control character in a string"),
                _ => {
                    // One UTF-8 sequence (the input is a &str, so it is well formed).
                    let len = match c {
                        0xf0..=0xff => 4,
                        0xe0..=0xef => 3,
                        0xc0..=0xdf => 2,
                        _ => 1,
                    };
                    let end = (self.i + len).min(self.s.len());
                    out.push_str(std::str::from_utf8(&self.s[self.i..end]).unwrap_or("\u{fffd}"));
                    self.i = end;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    #[test]
    fn parses_metadata_and_refuses_garbage() {
        let m = Json::parse(
            r#"{"AOTI_CPU_ISA": "AVX2", "n": [1, -2.5e3, true, null], "u": "\u00e9\ud83d\ude00"}"#,
        )
        .unwrap();
        assert_eq!(m.get("AOTI_CPU_ISA").and_then(Json::as_str), Some("AVX2"));
        assert_eq!(m.get("u").and_then(Json::as_str), Some("é😀"));
        for bad in [
            "",
            "{",
            "{\"a\" 1}",
            "[1,]",
            "01",
            "\"\\x\"",
            "{} x",
            "[[[[",
            "\"\u{1}\"",
        ] {
            assert!(Json::parse(bad).is_err(), "{bad}");
        }
        assert!(Json::parse(&"[".repeat(100)).is_err());
    }
}

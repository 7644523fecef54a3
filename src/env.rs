//! The environment variables the library reads (`TENSOR_NO_CACHING`, `TENSOR_CACHE_LIMIT`,
//! `TENSOR_MEMORY_TRACKING`, `TENSOR_COPY_THREADS`), each once, at first use. A value the
//! library cannot use is ignored with one warning on stderr naming the variable, the value
//! and what it accepts; an unset or empty variable says nothing. Switches share one
//! boolean parser ([`flag`]).

/// The value of `name`: `None` when unset or empty (and, with a warning, when not UTF-8).
pub(crate) fn value(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => None,
        Ok(v) => Some(v),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(raw)) => {
            ignored(name, &raw.to_string_lossy(), "UTF-8 text");
            None
        }
    }
}

/// Warns that `name=value` is ignored and says what the variable accepts.
#[cold]
pub(crate) fn ignored(name: &str, value: &str, accepts: &str) {
    eprintln!("libtensor: ignoring {name}={value:?} (expected {accepts})");
}

/// The boolean spellings [`parse_bool`] accepts, for messages and docs.
pub(crate) const BOOL_SPELLINGS: &str = "1/0, true/false, yes/no or on/off";

/// `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off` (ASCII case-insensitive, surrounding
/// whitespace ignored); `None` for anything else.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    let t = text.trim();
    let is = |s: &str| t.eq_ignore_ascii_case(s);
    if is("1") || is("true") || is("yes") || is("on") {
        Some(true)
    } else if is("0") || is("false") || is("no") || is("off") {
        Some(false)
    } else {
        None
    }
}

/// A boolean switch: `None` when unset, empty or not a boolean (then with a warning).
pub(crate) fn flag(name: &str) -> Option<bool> {
    let v = value(name)?;
    let b = parse_bool(&v);
    if b.is_none() {
        ignored(name, &v, &format!("a boolean: {BOOL_SPELLINGS}"));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::parse_bool;

    #[test]
    fn booleans_parse_in_every_usual_spelling() {
        for t in ["1", "true", "TRUE", "Yes", "on", " On\n"] {
            assert_eq!(parse_bool(t), Some(true), "{t:?}");
        }
        for f in ["0", "false", "False", "NO", "off", "\t0 "] {
            assert_eq!(parse_bool(f), Some(false), "{f:?}");
        }
        for bad in ["", "2", "abc", "y", "n", "enable", "truee", "-1", "o n"] {
            assert_eq!(parse_bool(bad), None, "{bad:?}");
        }
    }
}

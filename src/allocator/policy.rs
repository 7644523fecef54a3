//! When the caches keep freed blocks: the cache limit (API, `TENSOR_CACHE_LIMIT`,
//! `TENSOR_NO_CACHING`, read once at first use) and whether the per-thread caches (small
//! blocks, object boxes) are on, which they are not while the limit is 0 or, by default,
//! under a memory checker (`crate::sanitizer`).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;

/// The cache limit when neither the API nor the environment sets one.
pub const DEFAULT_CACHE_LIMIT: usize = 256 << 20;
/// `CACHE_LIMIT` before the environment has been read.
const LIMIT_UNREAD: usize = usize::MAX;
static CACHE_LIMIT: AtomicUsize = AtomicUsize::new(LIMIT_UNREAD);
static CACHE_ENV: Once = Once::new();

/// Environment variable: the cache limit in bytes (a number, optionally followed by K, M
/// or G for KiB, MiB, GiB). Read once, at the first big allocation or cache call.
pub const ENV_CACHE_LIMIT: &str = "TENSOR_CACHE_LIMIT";
/// Environment variable, a boolean (`crate::env::flag`): true turns every cache off (limit
/// 0) and wins over the limit; false keeps the per-thread caches even under a memory
/// checker (see [`thread_caching`]); unset: the default.
pub const ENV_NO_CACHING: &str = "TENSOR_NO_CACHING";

/// Parses a byte count: digits with an optional K/M/G (binary) suffix. `None` when
/// malformed or too big.
pub(crate) fn parse_bytes(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, shift) = match t.as_bytes().last()? {
        b'k' | b'K' => (&t[..t.len() - 1], 10),
        b'm' | b'M' => (&t[..t.len() - 1], 20),
        b'g' | b'G' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    let v = n.checked_mul(1usize << shift)?;
    (v <= isize::MAX as usize).then_some(v)
}

/// The limit `TENSOR_CACHE_LIMIT` asks for (the default when it says nothing valid).
fn limit_from_env() -> usize {
    match crate::env::value(ENV_CACHE_LIMIT) {
        Some(v) => parse_bytes(&v).unwrap_or_else(|| {
            crate::env::ignored(ENV_CACHE_LIMIT, &v, "bytes, e.g. 268435456 or 256M");
            DEFAULT_CACHE_LIMIT
        }),
        None => DEFAULT_CACHE_LIMIT,
    }
}

/// Whether the per-thread caches (small blocks and object boxes) keep freed blocks:
/// [`THREAD_ON`] or [`THREAD_OFF`] once the environment has been read. Off while the cache
/// limit is 0, and off by default under a memory checker (AddressSanitizer, valgrind's
/// memcheck: `crate::sanitizer`), which sees a use after free only of a block that really
/// went back to `free`. One relaxed load on every small free, as the limit was.
static THREAD_CACHING: AtomicU8 = AtomicU8::new(THREAD_UNREAD);
const THREAD_UNREAD: u8 = 0;
const THREAD_ON: u8 = 1;
const THREAD_OFF: u8 = 2;
/// The per-thread caches step aside for a memory checker (decided once, with the
/// environment: `TENSOR_NO_CACHING=0` keeps them).
static THREAD_ASIDE: AtomicBool = AtomicBool::new(false);

/// [`THREAD_CACHING`]'s value for a cache limit.
fn thread_state(limit: usize) -> u8 {
    if limit != 0 && !THREAD_ASIDE.load(Ordering::Relaxed) {
        THREAD_ON
    } else {
        THREAD_OFF
    }
}

/// Do the per-thread caches keep freed blocks? (Reads the environment the first time.)
#[inline]
pub(super) fn thread_caching() -> bool {
    match THREAD_CACHING.load(Ordering::Relaxed) {
        THREAD_ON => true,
        THREAD_OFF => false,
        _ => {
            let _ = cache_limit();
            THREAD_CACHING.load(Ordering::Relaxed) == THREAD_ON
        }
    }
}

/// Does the library step aside for a memory checker (the per-thread caches, and a small
/// storage's inline bytes: `storage::StorageImpl::allocate`)? Decided once, with the
/// environment (a thread that races the first read may see `false`: for a storage's bytes
/// that only means a block of their own, which is always right).
#[inline]
pub(crate) fn aside_for_checker() -> bool {
    let _ = cache_limit();
    THREAD_ASIDE.load(Ordering::Relaxed)
}

/// [`aside_for_checker`] from `TENSOR_NO_CACHING` (`None`: unset) and whether a memory
/// checker runs: only `=0` keeps the caches and the inline bytes under a checker (`=1`
/// turns the caches off by the limit, and the inline bytes by this).
fn steps_aside(no_caching: Option<bool>, checker: bool) -> bool {
    checker && no_caching != Some(false)
}

/// The current cache limit in bytes (reads the environment the first time).
pub fn cache_limit() -> usize {
    let l = CACHE_LIMIT.load(Ordering::Relaxed);
    if l != LIMIT_UNREAD {
        return l;
    }
    CACHE_ENV.call_once(|| {
        let no_caching = crate::env::flag(ENV_NO_CACHING);
        let limit = limit_from_env(); // read (and checked) even when NO_CACHING wins
        let limit = if no_caching == Some(true) { 0 } else { limit };
        let aside = steps_aside(no_caching, crate::sanitizer::checker().is_some());
        THREAD_ASIDE.store(aside, Ordering::Relaxed);
        let _ =
            CACHE_LIMIT.compare_exchange(LIMIT_UNREAD, limit, Ordering::Relaxed, Ordering::Relaxed);
        THREAD_CACHING.store(thread_state(limit), Ordering::Relaxed);
    });
    CACHE_LIMIT.load(Ordering::Relaxed)
}

/// Sets the limit (after the environment was read: `cache_limit`) and the per-thread
/// state that follows from it; returns the previous limit. Called under the big-block
/// cache's lock, so that concurrent calls leave the two agreeing.
pub(super) fn swap_limit(new: usize) -> usize {
    let prev = CACHE_LIMIT.swap(new, Ordering::Relaxed);
    THREAD_CACHING.store(thread_state(new), Ordering::Relaxed);
    prev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse() {
        assert_eq!(parse_bytes("0"), Some(0));
        assert_eq!(parse_bytes(" 4096 "), Some(4096));
        assert_eq!(parse_bytes("256M"), Some(256 << 20));
        assert_eq!(parse_bytes("3k"), Some(3 << 10));
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        for bad in [
            "",
            "M",
            "-1",
            "1.5G",
            "12x",
            "99999999999999999999",
            "9999999999G",
        ] {
            assert_eq!(parse_bytes(bad), None, "{bad:?}");
        }
    }

    /// Under a checker only TENSOR_NO_CACHING=0 keeps what hides blocks from it (the
    /// per-thread caches, a small storage's inline bytes); =1 must not bring them back.
    #[test]
    fn only_no_caching_0_keeps_the_caches_under_a_checker() {
        assert!(steps_aside(None, true));
        assert!(steps_aside(Some(true), true));
        assert!(!steps_aside(Some(false), true));
        for v in [None, Some(true), Some(false)] {
            assert!(!steps_aside(v, false));
        }
    }
}

//! Opt-in multithreaded big copies. The thread count comes from
//! [`set_copy_threads`] (`tensor_set_copy_threads`) or, read once, the environment
//! variable `TENSOR_COPY_THREADS`; the default is 1, and no thread is ever started while
//! it is 1. With n > 1, a copy whose output has at least [`PARALLEL_BYTES`] is cut along
//! its outermost dim of size >= n into n sub-boxes, n - 1 of them copied on threads
//! started for that call and joined before it returns (a failed thread start copies its
//! part inline).

use crate::error::Result;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Outputs at least this big are split when the thread count is > 1.
pub(crate) const PARALLEL_BYTES: usize = 16 << 20;
/// Highest accepted thread count.
pub const MAX_COPY_THREADS: i64 = 256;
/// Environment variable read once (at the first big copy or thread-count call).
pub const ENV_COPY_THREADS: &str = "TENSOR_COPY_THREADS";

/// 0 until the environment has been read.
static THREADS: AtomicUsize = AtomicUsize::new(0);
static ENV: std::sync::Once = std::sync::Once::new();

fn from_env() -> usize {
    match crate::env::value(ENV_COPY_THREADS) {
        Some(v) => match v.trim().parse::<i64>() {
            Ok(n) if (1..=MAX_COPY_THREADS).contains(&n) => n as usize,
            _ => {
                let accepts = format!("a thread count in 1..={MAX_COPY_THREADS}");
                crate::env::ignored(ENV_COPY_THREADS, &v, &accepts);
                1
            }
        },
        None => 1,
    }
}

/// The thread count for big copies (reads the environment the first time).
pub fn copy_threads() -> usize {
    let n = THREADS.load(Ordering::Relaxed);
    if n != 0 {
        return n;
    }
    ENV.call_once(|| {
        let _ = THREADS.compare_exchange(0, from_env(), Ordering::Relaxed, Ordering::Relaxed);
    });
    THREADS.load(Ordering::Relaxed)
}

/// Sets the thread count for big copies; returns the previous one.
pub fn set_copy_threads(n: i64) -> Result<usize> {
    ensure!(
        (1..=MAX_COPY_THREADS).contains(&n),
        InvalidArgument,
        "thread count {n} is outside [1, {MAX_COPY_THREADS}]"
    );
    let _ = copy_threads(); // the environment never overrides this call
    Ok(THREADS.swap(n as usize, Ordering::Relaxed))
}

/// The dim to split an `out_bytes` copy over `sizes` along, and the part count; `None`
/// when the copy stays on the calling thread.
pub(crate) fn split(sizes: &[i64], out_bytes: usize) -> Option<(usize, i64)> {
    if out_bytes < PARALLEL_BYTES {
        return None;
    }
    let n = copy_threads() as i64;
    if n <= 1 {
        return None;
    }
    let d = sizes.iter().position(|&s| s >= n)?;
    Some((d, n))
}

/// Runs `part(start, len)` for the n parts `[start, start + len)` of `0..size`: part 0 on
/// this thread, the others on threads started here and joined before returning. (Plain
/// spawned threads, not `std::thread::scope`: a scope registers the calling thread with
/// std, which leaks a handle on threads that C created.)
pub(crate) fn run_parts(size: i64, n: i64, part: &(dyn Fn(i64, i64) + Sync)) {
    // SAFETY: every thread started here is joined before this function returns (also
    // when `part` panics on this thread: the guard below joins on unwind), so `part`
    // outlives every use of the 'static reference.
    let part_static: &'static (dyn Fn(i64, i64) + Sync) = unsafe { std::mem::transmute(part) };
    struct Joiner(Vec<std::thread::JoinHandle<()>>);
    impl Drop for Joiner {
        fn drop(&mut self) {
            for h in self.0.drain(..) {
                let _ = h.join();
            }
        }
    }
    let mut joiner = Joiner(Vec::new());
    let mut panicked = false;
    for k in 1..n {
        let (a, b) = (size * k / n, size * (k + 1) / n);
        if b <= a {
            continue;
        }
        let started = joiner.0.try_reserve(1).is_ok()
            && match std::thread::Builder::new().spawn(move || part_static(a, b - a)) {
                Ok(h) => {
                    joiner.0.push(h);
                    true
                }
                Err(_) => false,
            };
        if !started {
            part(a, b - a);
        }
    }
    let b = size / n;
    if b > 0 {
        part(0, b);
    }
    for h in joiner.0.drain(..) {
        panicked |= h.join().is_err();
    }
    assert!(!panicked, "a copy thread panicked");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn parts_cover_the_range_once() {
        for (size, n) in [(10i64, 3i64), (7, 7), (1000, 4), (5, 2)] {
            let seen = Mutex::new(vec![0u8; size as usize]);
            run_parts(size, n, &|a, len| {
                let mut s = seen.lock().unwrap();
                for i in a..a + len {
                    s[i as usize] += 1;
                }
            });
            assert!(seen.into_inner().unwrap().iter().all(|&c| c == 1));
        }
    }

    #[test]
    fn thread_count_is_validated() {
        assert!(set_copy_threads(0).is_err());
        assert!(set_copy_threads(MAX_COPY_THREADS + 1).is_err());
        assert_eq!(split(&[1 << 30], 1 << 20), None, "small copies never split");
    }
}

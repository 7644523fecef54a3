//! Multithreaded big copies, opt-in. A copy whose output has at least [`PARALLEL_BYTES`]
//! is cut along its outermost dim of size >= n into n sub-boxes ("parts"), which run
//! either
//!
//! - on the host's thread pool, when the host set an executor ([`set_executor`],
//!   `tensor_set_copy_executor`): the library hands it the n parts and starts no thread of
//!   its own. n is the thread count when the caller set one (API or environment), else the
//!   number of CPUs this process may run on (read once), at most [`MAX_COPY_THREADS`]; or
//! - on threads of its own, when no executor is set and the thread count from
//!   [`set_copy_threads`] (`tensor_set_copy_threads`) or, read once, the environment
//!   variable `TENSOR_COPY_THREADS` is n > 1: n - 1 of the parts run on threads started for
//!   that call and joined before it returns (a failed thread start copies its part
//!   inline). The default is 1, and no thread is ever started while it is 1.
//!
//! A copy takes a lease on the executor it starts with (a count under one mutex, never
//! held while copying), so setting another executor waits for the copies running on the
//! old one and never makes a copy wait for it.

use crate::error::Result;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Outputs at least this big are split when the thread count is > 1.
pub(crate) const PARALLEL_BYTES: usize = 16 << 20;
/// Highest accepted thread count (and most parts handed to an executor).
pub const MAX_COPY_THREADS: i64 = 256;
/// Environment variable read once (at the first big copy or thread-count call).
pub const ENV_COPY_THREADS: &str = "TENSOR_COPY_THREADS";

/// 0 until the environment has been read.
static THREADS: AtomicUsize = AtomicUsize::new(0);
/// The thread count was set, by the API or the environment (not the default 1).
static THREADS_SET: AtomicBool = AtomicBool::new(false);
static ENV: std::sync::Once = std::sync::Once::new();

fn from_env() -> usize {
    match crate::env::value(ENV_COPY_THREADS) {
        Some(v) => match v.trim().parse::<i64>() {
            Ok(n) if (1..=MAX_COPY_THREADS).contains(&n) => {
                THREADS_SET.store(true, Ordering::Relaxed);
                n as usize
            }
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
    THREADS_SET.store(true, Ordering::Relaxed);
    Ok(THREADS.swap(n as usize, Ordering::Relaxed))
}

/// One part of a big copy, as the executor calls it: `task(task_ctx, i)`.
pub type TaskFn = unsafe extern "C" fn(task_ctx: *mut c_void, i: usize);
/// The host's executor: runs `task(task_ctx, i)` for every i in 0..n_tasks, on any
/// threads, and returns when all have returned.
pub type ExecutorFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    n_tasks: usize,
    task: Option<TaskFn>,
    task_ctx: *mut c_void,
);

/// An executor and its context, as the host set them.
#[derive(Clone, Copy)]
struct Executor {
    run: ExecutorFn,
    ctx: *mut c_void,
}

// SAFETY: the host's contract (tensor_set_copy_executor's doc): the executor may be called
// from any thread, with its ctx.
unsafe impl Send for Executor {}

/// The executor and the leases on it: `active` copies run on the current one, `retiring`
/// on the one a pending [`set_executor`] replaced (it waits for them).
struct State {
    current: Option<Executor>,
    generation: u64,
    active: usize,
    retiring: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    current: None,
    generation: 0,
    active: 0,
    retiring: 0,
});
/// Signalled when the last copy on a replaced executor returns.
static RETIRED: Condvar = Condvar::new();
/// Serializes setters (so at most one executor retires at a time).
static SETTER: Mutex<()> = Mutex::new(());

fn state() -> MutexGuard<'static, State> {
    // Nothing panics while holding it; a poisoned lock still holds consistent counts.
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The deepest nesting of executor calls and tasks on one thread that is recorded (a copy
/// nested deeper runs its parts on the calling thread; a task deeper is refused, and its
/// part runs on its copy's thread).
const MAX_FRAMES: usize = 32;

/// One executor call (`lease`, `ticket`: the copy's) or task (neither) running on this
/// thread: the library's frames a setter on this thread would wait for. Dropping it ends
/// it: the lease and the job's registration go with it.
struct Frame {
    /// The stack pointer just above the frame (see [`stack_position`]).
    sp: usize,
    /// Tells this frame from a later one at the same depth.
    serial: u64,
    /// Held for its drop, which gives the executor back.
    _lease: Option<Lease>,
    ticket: usize,
}

impl Drop for Frame {
    fn drop(&mut self) {
        if self.ticket != 0 {
            unregister(self.ticket);
        }
    }
}

/// This thread's frames, outermost first. When the thread exits, the frames left are those
/// an executor abandoned (longjmp): their leases and jobs are given back then.
struct Frames {
    frames: RefCell<[Option<Frame>; MAX_FRAMES]>,
    depth: Cell<usize>,
    serial: Cell<u64>,
}

thread_local! {
    static FRAMES: Frames = const {
        Frames {
            frames: RefCell::new([const { None }; MAX_FRAMES]),
            depth: Cell::new(0),
            serial: Cell::new(0),
        }
    };
}

impl Frames {
    /// Ends the frames from depth `from` up (outermost last), dropping them outside the
    /// borrow.
    fn end_from(&self, from: usize) {
        let mut gone: [Option<Frame>; MAX_FRAMES] = [const { None }; MAX_FRAMES];
        {
            let mut f = self.frames.borrow_mut();
            for k in from..self.depth.get() {
                gone[k] = f[k].take();
            }
        }
        self.depth.set(from.min(self.depth.get()));
        drop(gone);
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        self.end_from(0);
    }
}

/// The current stack pointer (the address of a local where no register can be read: Miri,
/// other targets). Stacks grow down on every target the library builds for, so a frame
/// recorded at a lower address than where a call now runs has ended.
#[inline(always)]
fn stack_position() -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let sp: usize;
        // SAFETY: reads the stack pointer register; touches no memory, flags or stack.
        unsafe {
            std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        let sp: usize;
        // SAFETY: reads the stack pointer register; touches no memory, flags or stack.
        unsafe {
            std::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
    {
        let here = 0u8;
        std::hint::black_box(&here) as *const u8 as usize
    }
}

/// Inside an executor call or one of its tasks on this thread, for the duration: its
/// [`Frame`]. Dropping it ends that frame and any recorded after it (frames deeper in the
/// stack that did not end themselves: an executor that jumped out of a nested copy).
struct Inside {
    depth: usize,
    serial: u64,
}

impl Inside {
    /// Records a frame; `None` when [`MAX_FRAMES`] are recorded (then `lease` is dropped).
    fn enter(lease: Option<Lease>, ticket: usize) -> Option<Inside> {
        let sp = stack_position();
        FRAMES.with(|t| {
            let depth = t.depth.get();
            if depth == MAX_FRAMES {
                return None;
            }
            let serial = t.serial.get().wrapping_add(1);
            t.serial.set(serial);
            t.frames.borrow_mut()[depth] = Some(Frame {
                sp,
                serial,
                _lease: lease,
                ticket,
            });
            t.depth.set(depth + 1);
            Some(Inside { depth, serial })
        })
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        // During thread exit FRAMES may be gone already (it ended every frame itself).
        let _ = FRAMES.try_with(|t| {
            let mine = t.frames.borrow()[self.depth]
                .as_ref()
                .is_some_and(|f| f.serial == self.serial);
            if mine && t.depth.get() > self.depth {
                t.end_from(self.depth);
            }
        });
    }
}

/// Ends this thread's frames that lie below the stack position `sp` (deeper: a call now
/// running at `sp` is outside them, so they were left without returning, by a longjmp out
/// of the executor), giving back their leases and jobs. Returns how many frames remain
/// (the calls `sp` is inside).
fn end_abandoned(sp: usize) -> usize {
    // Under Miri a local's address says nothing of call depth (each is an allocation of its
    // own), and nothing can jump out of a frame: every frame ends by its guard.
    if cfg!(miri) {
        return FRAMES.with(|t| t.depth.get());
    }
    FRAMES.with(|t| {
        let live = {
            let f = t.frames.borrow();
            (0..t.depth.get())
                .find(|&k| f[k].as_ref().is_some_and(|f| f.sp < sp))
                .unwrap_or(t.depth.get())
        };
        t.end_from(live);
        live
    })
}

/// A copy's hold on the executor it started with: [`set_executor`] waits until it drops.
struct Lease {
    executor: Executor,
    generation: u64,
}

impl Lease {
    /// A lease on the current executor, if one is set.
    fn take() -> Option<Lease> {
        let mut st = state();
        let executor = st.current?;
        st.active += 1;
        Some(Lease {
            executor,
            generation: st.generation,
        })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut st = state();
        if st.generation == self.generation {
            st.active -= 1;
        } else {
            st.retiring -= 1;
            if st.retiring == 0 {
                RETIRED.notify_all();
            }
        }
    }
}

/// Sets the executor big copies run their parts on (`None`: threads of the library's own,
/// as [`copy_threads`] says). Returns once every copy running on the previous executor
/// has returned (or, for one that an executor jumped out of, once the library found its
/// frames gone: at a setter on that thread, or when that thread exits), so that the
/// previous `ctx` is never used after. Refused (InvalidArgument) from inside an executor
/// call or task on this thread, which it would wait for.
pub fn set_executor(run: Option<ExecutorFn>, ctx: *mut c_void) -> Result<()> {
    // Frames of this thread deeper than this call have ended without returning (an
    // executor that jumped out of a copy): given back first, so that neither this check
    // nor the wait below counts them.
    ensure!(
        end_abandoned(stack_position()) == 0,
        InvalidArgument,
        "called from inside the copy executor or one of its tasks: it would wait for the copy it is part of"
    );
    let _one = SETTER.lock().unwrap_or_else(PoisonError::into_inner);
    let mut st = state();
    st.current = run.map(|run| Executor { run, ctx });
    st.generation = st.generation.wrapping_add(1);
    st.retiring = std::mem::take(&mut st.active);
    while st.retiring > 0 {
        st = RETIRED.wait(st).unwrap_or_else(PoisonError::into_inner);
    }
    Ok(())
}

/// The number of CPUs this process may run on (read once), at most [`MAX_COPY_THREADS`].
fn cpus() -> usize {
    static CPUS: AtomicUsize = AtomicUsize::new(0);
    let n = CPUS.load(Ordering::Relaxed);
    if n != 0 {
        return n;
    }
    let n = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_COPY_THREADS as usize);
    CPUS.store(n, Ordering::Relaxed);
    n
}

/// How a big copy is split: along `dim`, into `parts` parts, run on the executor it holds
/// a lease on, or on threads of its own.
pub(crate) struct Split {
    pub dim: usize,
    pub parts: i64,
    lease: Option<Lease>,
}

/// How to split an `out_bytes` copy over `sizes`; `None` when the copy stays on the
/// calling thread.
pub(crate) fn split(sizes: &[i64], out_bytes: usize) -> Option<Split> {
    if out_bytes < PARALLEL_BYTES {
        return None;
    }
    let lease = Lease::take();
    let threads = copy_threads(); // first: it reads the environment
    let n = match lease {
        Some(_) if !THREADS_SET.load(Ordering::Relaxed) => cpus(),
        _ => threads,
    } as i64;
    if n <= 1 {
        return None;
    }
    let dim = sizes.iter().position(|&s| s >= n)?;
    Some(Split {
        dim,
        parts: n,
        lease,
    })
}

/// Part `k` of `n` of `0..size`: `[start, start + len)`.
fn part_range(size: i64, n: i64, k: i64) -> (i64, i64) {
    let at = |k: i64| (size as i128 * k as i128 / n as i128) as i64;
    (at(k), at(k + 1) - at(k))
}

/// Runs `part(start, len)` for the parts `[start, start + len)` of `0..size` that `split`
/// planned (`size` is the split dim's size): on the executor, or part 0 on this thread
/// and the others on threads started here and joined before returning.
pub(crate) fn run_parts(size: i64, split: Split, part: &(dyn Fn(i64, i64) + Sync)) {
    match split.lease {
        Some(lease) => run_on_executor(lease, size, split.parts, part),
        None => run_on_threads(size, split.parts, part),
    }
}

/// A part not started, running, done.
const TODO: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;

/// What the executor's tasks work on (found through the ticket they are given).
struct Job<'a> {
    size: i64,
    n: i64,
    part: &'a (dyn Fn(i64, i64) + Sync),
    state: [AtomicU8; MAX_COPY_THREADS as usize],
    panicked: AtomicBool,
}

impl Job<'_> {
    /// Takes part `i` if nobody ran or runs it (and it exists); true when taken.
    fn claim(&self, i: usize) -> bool {
        i < self.n as usize
            && self.state[i]
                .compare_exchange(TODO, RUNNING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Runs part `i`, which this thread claimed.
    fn run_claimed(&self, i: usize) {
        let (start, len) = part_range(self.size, self.n, i as i64);
        let r = catch_unwind(AssertUnwindSafe(|| {
            if len > 0 {
                (self.part)(start, len)
            }
        }));
        if r.is_err() {
            self.panicked.store(true, Ordering::Relaxed);
        }
        self.state[i].store(DONE, Ordering::Release);
    }
}

/// The jobs whose tasks may run now: (ticket, address of the [`Job`]). The executor is
/// given a job's ticket as `task_ctx`, never its address: a task whose ticket is not here
/// (its copy is over: a task the executor called after returning) is refused, and never
/// touches the finished copy's memory. A job is here from just before its executor call
/// until that call is over, and its tasks claim their part under this lock, so a job
/// found here is alive while its task claims.
static JOBS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
/// The next ticket (never 0, never reused while the counter does not wrap).
static NEXT_TICKET: AtomicUsize = AtomicUsize::new(1);

fn jobs() -> MutexGuard<'static, Vec<(usize, usize)>> {
    // Nothing panics while holding it.
    JOBS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `job` for its tasks; its ticket, or `None` when the list cannot grow.
fn register(job: &Job) -> Option<usize> {
    let mut jobs = jobs();
    jobs.try_reserve(1).ok()?;
    let ticket = match NEXT_TICKET.fetch_add(1, Ordering::Relaxed) {
        0 => NEXT_TICKET.fetch_add(1, Ordering::Relaxed),
        t => t,
    };
    jobs.push((ticket, job as *const Job as usize));
    Some(ticket)
}

/// Ends the job of `ticket`: its tasks are refused from now on.
fn unregister(ticket: usize) {
    jobs().retain(|&(t, _)| t != ticket);
}

/// The task the executor runs: part `i` of the job whose ticket is `task_ctx`, if that job
/// still runs. A panic is caught here (it never unwinds into the host's pool) and
/// re-raised on the copying thread.
unsafe extern "C" fn run_task(task_ctx: *mut c_void, i: usize) {
    let Some(_inside) = Inside::enter(None, 0) else {
        return; // too deeply nested to record: the copy's thread runs the part
    };
    let ticket = task_ctx as usize;
    let job = {
        let jobs = jobs();
        jobs.iter()
            .find(|&&(t, _)| t == ticket)
            .and_then(|&(_, addr)| {
                // SAFETY: a registered job is alive until it is unregistered, which waits for
                // this lock (see JOBS).
                let job = unsafe { &*(addr as *const Job) };
                job.claim(i).then_some(job)
            })
    };
    if let Some(job) = job {
        // The job stays alive while a part it has is running: its copy waits for DONE.
        job.run_claimed(i);
    }
}

fn run_on_executor(lease: Lease, size: i64, n: i64, part: &(dyn Fn(i64, i64) + Sync)) {
    let job = Job {
        size,
        n,
        part,
        state: [const { AtomicU8::new(TODO) }; MAX_COPY_THREADS as usize],
        panicked: AtomicBool::new(false),
    };
    let ex = lease.executor;
    if let Some(ticket) = register(&job) {
        // The frame holds the lease and the registration, and gives both back when it ends:
        // here, after the executor returned, or, if the executor jumped out of the copy,
        // when the library finds that out (`end_abandoned`, or this thread's exit).
        match Inside::enter(Some(lease), ticket) {
            // SAFETY: the host's executor, called as its contract says (n parts of a task
            // that runs any part on any thread, at most once each; task_ctx a ticket).
            Some(_inside) => unsafe {
                (ex.run)(ex.ctx, n as usize, Some(run_task), ticket as *mut c_void)
            },
            None => unregister(ticket),
        }
    }
    // A part the executor skipped runs here; one it left running is waited for (its data
    // and the job are still in use).
    for i in 0..n as usize {
        if job.claim(i) {
            job.run_claimed(i);
        } else {
            while job.state[i].load(Ordering::Acquire) != DONE {
                std::thread::yield_now();
            }
        }
    }
    assert!(
        !job.panicked.load(Ordering::Relaxed),
        "a copy task panicked"
    );
}

/// Part 0 on this thread, the others on threads started here and joined before returning.
/// (Plain spawned threads, not `std::thread::scope`: a scope registers the calling thread
/// with std, which leaks a handle on threads that C created.)
fn run_on_threads(size: i64, n: i64, part: &(dyn Fn(i64, i64) + Sync)) {
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
        let (a, len) = part_range(size, n, k);
        if len <= 0 {
            continue;
        }
        let started = joiner.0.try_reserve(1).is_ok()
            && match std::thread::Builder::new().spawn(move || part_static(a, len)) {
                Ok(h) => {
                    joiner.0.push(h);
                    true
                }
                Err(_) => false,
            };
        if !started {
            part(a, len);
        }
    }
    let (_, len) = part_range(size, n, 0);
    if len > 0 {
        part(0, len);
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

    /// Runs every task on the calling thread, last first; counts calls in `*ctx`.
    unsafe extern "C" fn inline_reversed(
        ctx: *mut c_void,
        n: usize,
        task: Option<TaskFn>,
        task_ctx: *mut c_void,
    ) {
        // SAFETY: the tests pass an AtomicUsize.
        unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, Ordering::Relaxed);
        for i in (0..n).rev() {
            // SAFETY: the library's task with its ctx.
            unsafe { task.unwrap()(task_ctx, i) };
        }
    }

    /// A broken executor: runs the even tasks twice, an out-of-range one, and skips the
    /// odd ones.
    unsafe extern "C" fn sloppy(_: *mut c_void, n: usize, task: Option<TaskFn>, c: *mut c_void) {
        for i in (0..n + 3).filter(|i| i % 2 == 0) {
            // SAFETY: the library's task with its ctx.
            unsafe { (task.unwrap()(c, i), task.unwrap()(c, i)) };
        }
    }

    /// A lease on `run` with `ctx` (counted as a copy on the current executor).
    fn executor(run: ExecutorFn, ctx: *mut c_void) -> Lease {
        let mut st = state();
        st.active += 1;
        Lease {
            executor: Executor { run, ctx },
            generation: st.generation,
        }
    }

    #[test]
    fn parts_cover_the_range_once() {
        let calls = AtomicUsize::new(0);
        let ctx = &calls as *const AtomicUsize as *mut c_void;
        for (size, n) in [(10i64, 3i64), (7, 7), (1000, 4), (5, 2), (3, 256)] {
            for way in 0..3 {
                let seen = Mutex::new(vec![0u8; size as usize]);
                let part = |a: i64, len: i64| {
                    let mut s = seen.lock().unwrap();
                    for i in a..a + len {
                        s[i as usize] += 1;
                    }
                };
                match way {
                    0 => run_on_threads(size, n, &part),
                    1 => run_on_executor(executor(inline_reversed, ctx), size, n, &part),
                    _ => run_on_executor(executor(sloppy, ctx), size, n, &part),
                }
                assert!(seen.into_inner().unwrap().iter().all(|&c| c == 1));
            }
        }
        assert_eq!(calls.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn a_panicking_task_never_unwinds_into_the_executor() {
        // An unwind through the extern "C" executor would abort the test process; the
        // executor returns, and the panic reaches the copying thread.
        let calls = AtomicUsize::new(0);
        let ctx = &calls as *const AtomicUsize as *mut c_void;
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_on_executor(executor(inline_reversed, ctx), 8, 4, &|a, _| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(a != 2, "part at 2 fails");
            })
        }));
        let msg = r.err().and_then(|p| p.downcast_ref::<&str>().copied());
        assert_eq!(msg, Some("a copy task panicked"));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(ran.load(Ordering::Relaxed), 4, "the other parts still ran");
    }

    #[test]
    fn a_setter_inside_a_task_is_refused() {
        let calls = AtomicUsize::new(0);
        let ctx = &calls as *const AtomicUsize as *mut c_void;
        let refused = AtomicUsize::new(0);
        run_on_executor(executor(inline_reversed, ctx), 4, 2, &|_, _| {
            let e = set_executor(None, std::ptr::null_mut()).err().unwrap();
            assert_eq!(e.status, crate::error::Status::InvalidArgument);
            refused.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(refused.load(Ordering::Relaxed), 2);
        assert_eq!(FRAMES.with(|t| t.depth.get()), 0);
    }

    /// A task the executor calls after returning is refused: its copy is over (the ticket it
    /// is given is no longer registered), so nothing runs and nothing of the finished copy
    /// (its job was on the stack of `run_on_executor`) is touched.
    #[test]
    fn a_task_after_return_is_refused() {
        static SAVED: Mutex<Option<(TaskFn, usize)>> = Mutex::new(None);
        unsafe extern "C" fn keep(_: *mut c_void, _: usize, task: Option<TaskFn>, c: *mut c_void) {
            *SAVED.lock().unwrap() = Some((task.unwrap(), c as usize));
        }
        let ran = AtomicUsize::new(0);
        run_on_executor(executor(keep, std::ptr::null_mut()), 8, 4, &|_, _| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(
            ran.load(Ordering::Relaxed),
            4,
            "the copying thread ran every part"
        );
        let (task, ctx) = SAVED.lock().unwrap().take().unwrap();
        for i in 0..5 {
            // SAFETY: the library's task, with the task_ctx it was given.
            unsafe { task(ctx as *mut c_void, i) };
        }
        assert_eq!(ran.load(Ordering::Relaxed), 4, "no late task ran a part");
        assert!(
            jobs().iter().all(|&(t, _)| t != ctx),
            "the job is unregistered"
        );
    }

    /// A frame left without returning (what a longjmp out of the executor leaves: here a
    /// forgotten guard, 256 calls deeper than the caller) is given back at this thread's
    /// next setter: the setter is not refused and does not wait for the frame's lease.
    #[test]
    #[cfg_attr(miri, ignore = "stack positions (and longjmp) do not exist under Miri")]
    fn frames_left_without_returning_are_given_back() {
        // Depth from nested calls, not a big local: return addresses stay on the machine
        // stack, where ASan's fake stack (detect_stack_use_after_return) would move an
        // array, and leave the abandoned frame no deeper than the setter's own.
        #[inline(never)]
        fn abandon(lease: Lease, levels: u32) {
            if levels == 0 {
                std::mem::forget(Inside::enter(Some(lease), 0));
            } else {
                abandon(lease, std::hint::black_box(levels - 1));
                std::hint::black_box(levels); // not a tail call
            }
        }
        let calls = AtomicUsize::new(0);
        let ctx = &calls as *const AtomicUsize as *mut c_void;
        abandon(executor(inline_reversed, ctx), 256);
        assert_eq!(FRAMES.with(|t| t.depth.get()), 1);
        // Would be refused (inside) or wait forever (the lease) without the recovery.
        set_executor(None, std::ptr::null_mut()).unwrap();
        assert_eq!(FRAMES.with(|t| t.depth.get()), 0);
    }

    #[test]
    fn thread_count_is_validated() {
        assert!(set_copy_threads(0).is_err());
        assert!(set_copy_threads(MAX_COPY_THREADS + 1).is_err());
        assert!(
            split(&[1 << 30], 1 << 20).is_none(),
            "small copies never split"
        );
    }
}

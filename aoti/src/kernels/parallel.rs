//! Threads for the kernels: the model's own OpenMP pool. Inductor's generated loops run on
//! libgomp's team (the model library links it), so the kernels hand their parts to that same
//! team (`GOMP_parallel`, libgomp's stable entry point that `#pragma omp parallel` compiles
//! to) rather than to a pool of their own: one set of threads in the process, never two
//! pools spinning against each other, and the count follows what the host set for the
//! model's loops (`OMP_NUM_THREADS`, `omp_set_num_threads`; in a libtorch process
//! `torch.set_num_threads`). libgomp is looked up among the libraries already loaded
//! (`RTLD_NOLOAD`: the model's); when the process has none (a model compiled without
//! OpenMP), or when called inside a parallel region, the parts run on the calling thread.

use std::ffi::{c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

type Body = extern "C" fn(*mut c_void);
type ParallelFn = unsafe extern "C" fn(Body, *mut c_void, c_uint, c_uint);
type QueryFn = unsafe extern "C" fn() -> c_int;

/// libgomp's entry points (the ABI gcc compiles OpenMP to).
struct Gomp {
    parallel: ParallelFn,
    max_threads: QueryFn,
    thread_num: QueryFn,
    num_threads: QueryFn,
    in_parallel: QueryFn,
}

static GOMP: OnceLock<Gomp> = OnceLock::new();

/// libgomp, once some library of the process has loaded it.
fn gomp() -> Option<&'static Gomp> {
    if let Some(g) = GOMP.get() {
        return Some(g);
    }
    // SAFETY: the name is a NUL-terminated literal; RTLD_NOLOAD only returns a handle to a
    // library already loaded (taking a reference that is never dropped, so the functions
    // below stay mapped), and runs no initialiser.
    let lib = unsafe {
        libc::dlopen(
            c"libgomp.so.1".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_LOCAL,
        )
    };
    if lib.is_null() {
        return None;
    }
    let sym = |name: &std::ffi::CStr| {
        // SAFETY: lib is a live handle (never closed), name NUL-terminated.
        let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    let (p, m, t, n, i) = (
        sym(c"GOMP_parallel")?,
        sym(c"omp_get_max_threads")?,
        sym(c"omp_get_thread_num")?,
        sym(c"omp_get_num_threads")?,
        sym(c"omp_in_parallel")?,
    );
    // SAFETY: each symbol is libgomp's function of that name, whose C signature (libgomp's
    // public ABI: GOMP_parallel(void (*)(void *), void *, unsigned, unsigned) and the
    // int (void) omp_* queries) is the pointer type it becomes; a function's address
    // converts to such a pointer (POSIX dlsym).
    let g = unsafe {
        Gomp {
            parallel: std::mem::transmute::<*mut c_void, ParallelFn>(p),
            max_threads: std::mem::transmute::<*mut c_void, QueryFn>(m),
            thread_num: std::mem::transmute::<*mut c_void, QueryFn>(t),
            num_threads: std::mem::transmute::<*mut c_void, QueryFn>(n),
            in_parallel: std::mem::transmute::<*mut c_void, QueryFn>(i),
        }
    };
    Some(GOMP.get_or_init(|| g))
}

/// How many threads a kernel called here may use: the OpenMP team size a parallel region
/// started now would get, 1 without libgomp or inside a parallel region.
pub fn threads() -> usize {
    let Some(g) = gomp() else { return 1 };
    // SAFETY: libgomp's queries take nothing and may be called from any thread.
    let (inside, max) = unsafe { ((g.in_parallel)(), (g.max_threads)()) };
    if inside != 0 {
        1
    } else {
        max.max(1) as usize
    }
}

struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    n: usize,
    panicked: AtomicBool,
}

extern "C" fn body(data: *mut c_void) {
    // SAFETY: data is the &Job `run` passed to GOMP_parallel, alive until GOMP_parallel
    // returns, which is after every thread of the team has left this function; Job is Sync.
    let job = unsafe { &*(data as *const Job) };
    let Some(g) = GOMP.get() else { return };
    // SAFETY: libgomp's queries, called from a thread of its team.
    let (t, nt) = unsafe { ((g.thread_num)() as usize, (g.num_threads)().max(1) as usize) };
    for i in (t..job.n).step_by(nt) {
        if catch_unwind(AssertUnwindSafe(|| (job.f)(i))).is_err() {
            job.panicked.store(true, Ordering::Relaxed);
        }
    }
}

/// `f(i)` for every `i` in `0..n`, spread over the model's OpenMP team (at most `n` threads,
/// the calling thread among them), returning when all have returned. A panic in `f` is
/// caught on its thread (never unwinding into libgomp) and raised again here, after the
/// other parts ran.
pub fn run(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let nth = threads().min(n);
    let g = match gomp() {
        Some(g) if nth > 1 => g,
        _ => {
            (0..n).for_each(f);
            return;
        }
    };
    let job = Job {
        f,
        n,
        panicked: AtomicBool::new(false),
    };
    // SAFETY: GOMP_parallel runs `body(&job)` on a team of up to nth threads (the caller
    // included) and returns once all have returned; job outlives the call, and body only
    // reads it (Sync: the panic flag is atomic, f is Sync).
    unsafe {
        (g.parallel)(
            body,
            (&job as *const Job).cast_mut().cast(),
            nth as c_uint,
            0,
        )
    };
    if job.panicked.load(Ordering::Relaxed) {
        panic!("a kernel task panicked on an OpenMP thread");
    }
}

/// `0..len` cut into `parts` contiguous ranges whose starts are multiples of `align` (the
/// last takes the rest; empty ranges when len is small).
pub fn chunk(len: usize, parts: usize, align: usize, i: usize) -> std::ops::Range<usize> {
    let per = len.div_ceil(parts.max(1)).div_ceil(align) * align;
    let start = (i * per).min(len);
    start..((i + 1) * per).min(len)
}

/// A pointer the tasks of one kernel call share, each writing its own disjoint elements.
#[derive(Clone, Copy)]
pub struct Shared<T>(pub *mut T);
// SAFETY: used only to hand a kernel's output to its own tasks, which write disjoint
// elements (each use says which) and finish before the kernel returns.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as for Send.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointer (a method, so that a closure captures the Sync wrapper, not the field).
    pub fn get(&self) -> *mut T {
        self.0
    }
}

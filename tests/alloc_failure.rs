//! Allocation-failure injection: a scripted sequence of C API calls (creation, views with
//! more than five dims, copies, copy_, DLPack both ways, wrapped buffers with deleters,
//! storages, weak references, mapped files, `.npy` loads and saves, a `.safetensors`
//! file's tensors, error paths with messages) is run once per
//! allocation it makes, failing that one allocation:
//!
//! * `rust`: the Nth allocation through the Rust global allocator (a counting
//!   `#[global_allocator]` below, armed on this thread only), once with the library's
//!   caches on and once with them off (cache limit 0: every TensorImpl and StorageImpl box
//!   is then allocated, not reused from the per-thread object-block cache);
//! * `library`: the Nth call of the library's storage allocator (a counting allocator set
//!   with `tensor_set_default_allocator`).
//!
//! For every N: every call returns (nothing aborts: Rust's default handler would abort the
//! process on an infallible allocation that fails), each call answers either what it
//! answers without injection or OUT_OF_MEMORY, every wrapped buffer's deleter runs exactly
//! once (or never, when its wrap failed), and after releasing everything no allocation is
//! left: the Rust heap and the library's counters are back where they started.
//! `ALLOC_FAILURE_VERBOSE=1` names each allocation before failing it, and
//! `ALLOC_FAILURE_TRACE=N` prints a backtrace where the Nth Rust allocation is made (to find
//! a path that aborts or leaks).

use ::tensor::ffi::copy::*;
use ::tensor::ffi::core::*;
use ::tensor::ffi::dlpack::*;
use ::tensor::ffi::files::*;
use ::tensor::ffi::memory::*;
use ::tensor::ffi::storage::*;
use ::tensor::ffi::tensor::*;
use ::tensor::ffi::view::*;
use ::tensor::ffi::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::{c_void, CString};
use std::ptr::null_mut;

// ---- the Rust global allocator: counts this thread's allocations, fails the Nth ---------

struct Injecting;

thread_local! {
    /// Allocations made on this thread while armed.
    static SEEN: Cell<u64> = const { Cell::new(0) };
    /// Fail the allocation whose number (from 1) this is; 0: never.
    static FAIL_AT: Cell<u64> = const { Cell::new(0) };
    static FIRED: Cell<bool> = const { Cell::new(false) };
    /// Live allocations made on this thread (allocations minus frees).
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
    /// (address, allocation number) of this thread's live allocations made while armed, to
    /// name a leak.
    static ARMED_LIVE: [Cell<(usize, u64)>; 256] = const { [const { Cell::new((0, 0)) }; 256] };
}

fn note_alloc(p: *mut u8) {
    if ARMED.try_with(|a| a.get()).unwrap_or(false) {
        let n = SEEN.with(|s| s.get());
        let _ = ARMED_LIVE.try_with(|t| {
            if let Some(c) = t.iter().find(|c| c.get().0 == 0) {
                c.set((p as usize, n));
            }
        });
    }
}

fn note_free(p: *mut u8) {
    let _ = ARMED_LIVE.try_with(|t| {
        if let Some(c) = t.iter().find(|c| c.get().0 == p as usize) {
            c.set((0, 0));
        }
    });
}

/// Numbers of the allocations made while armed that are still live.
fn armed_live() -> Vec<u64> {
    ARMED_LIVE.with(|t| {
        t.iter()
            .map(|c| c.get())
            .filter(|c| c.0 != 0)
            .map(|c| c.1)
            .collect()
    })
}

fn verbose() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var_os("ALLOC_FAILURE_VERBOSE").is_some())
}

fn trace_at() -> u64 {
    static T: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        std::env::var("ALLOC_FAILURE_TRACE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

impl Injecting {
    /// Whether this allocation is the one to fail.
    fn fails(&self) -> bool {
        let armed = ARMED.try_with(|a| a.get()).unwrap_or(false);
        if !armed || IN_HOOK.with(|h| h.get()) {
            return false;
        }
        let n = SEEN.with(|s| {
            s.set(s.get() + 1);
            s.get()
        });
        if n == trace_at() {
            IN_HOOK.with(|h| h.set(true));
            eprintln!(
                "allocation {n}:\n{}",
                std::backtrace::Backtrace::force_capture()
            );
            IN_HOOK.with(|h| h.set(false));
        }
        if n == FAIL_AT.with(|f| f.get()) {
            FIRED.with(|f| f.set(true));
            return true;
        }
        false
    }
}

// SAFETY: every request that is not failed on purpose (null: allowed by GlobalAlloc) goes
// unchanged to `System`, which upholds the contract; the bookkeeping touches only
// thread-locals and never allocates while counting (IN_HOOK).
unsafe impl GlobalAlloc for Injecting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.fails() {
            return null_mut();
        }
        // SAFETY: the caller's `layout` contract is System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let _ = LIVE.try_with(|l| l.set(l.get() + 1));
            note_alloc(p);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.fails() {
            return null_mut();
        }
        // SAFETY: as in alloc.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            let _ = LIVE.try_with(|l| l.set(l.get() + 1));
            note_alloc(p);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.fails() {
            return null_mut();
        }
        // SAFETY: `ptr` came from System (every block this allocator hands out does) with
        // `layout`; `new_size` is the caller's, under realloc's contract.
        let q = unsafe { System.realloc(ptr, layout, new_size) };
        if !q.is_null() {
            note_free(ptr);
            note_alloc(q);
        }
        q
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get() - 1));
        note_free(ptr);
        // SAFETY: `ptr` came from System with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Injecting = Injecting;

/// Runs `f` with injection and counting paused (the test's own bookkeeping).
fn unarmed<R>(f: impl FnOnce() -> R) -> R {
    IN_HOOK.with(|h| h.set(true));
    let r = f();
    IN_HOOK.with(|h| h.set(false));
    r
}

// ---- the library allocator: counts its calls, fails the Nth -----------------------------

thread_local! {
    static LIB_SEEN: Cell<u64> = const { Cell::new(0) };
    static LIB_FAIL_AT: Cell<u64> = const { Cell::new(0) };
    static LIB_FIRED: Cell<bool> = const { Cell::new(false) };
    static LIB_LIVE: Cell<i64> = const { Cell::new(0) };
}

unsafe extern "C" fn lib_allocate(_: *mut c_void, n: usize, align: usize) -> *mut c_void {
    let k = LIB_SEEN.with(|s| {
        s.set(s.get() + 1);
        s.get()
    });
    if k == LIB_FAIL_AT.with(|f| f.get()) {
        LIB_FIRED.with(|f| f.set(true));
        return null_mut();
    }
    let mut p = null_mut();
    // SAFETY: `p` is a valid out-pointer; the alignment the library asks for (64, see
    // tensor_allocator_t) is a power of two and a multiple of the pointer size.
    if unsafe { libc::posix_memalign(&mut p, align, n) } != 0 {
        return null_mut();
    }
    LIB_LIVE.with(|l| l.set(l.get() + 1));
    p
}

unsafe extern "C" fn lib_deallocate(_: *mut c_void, p: *mut c_void, _n: usize) {
    LIB_LIVE.with(|l| l.set(l.get() - 1));
    // SAFETY: the library frees only blocks lib_allocate returned (posix_memalign), once.
    unsafe { libc::free(p) };
}

const LIB_ALLOCATOR: tensor_allocator_t = tensor_allocator_t {
    ctx: null_mut(),
    allocate: Some(lib_allocate),
    deallocate: Some(lib_deallocate),
};

// ---- wrapped buffers ---------------------------------------------------------------------

thread_local! {
    static DELETER_CALLS: Cell<u32> = const { Cell::new(0) };
}

unsafe extern "C" fn counted_free(data: *mut c_void, ctx: *mut c_void) {
    // SAFETY: every wrap passes the address of a Cell<u32> that outlives its storage.
    let calls = unsafe { &*(ctx as *const Cell<u32>) };
    calls.set(calls.get() + 1);
    DELETER_CALLS.with(|c| c.set(c.get() + 1));
    // SAFETY: `data` is the malloc'd buffer of the wrap, freed here only (the deleter runs
    // once: the property under test).
    unsafe { libc::free(data) };
}

// ---- files the script maps, loads and saves ---------------------------------------------

/// Made once, before any injection, in a directory whose path is longer than the 384 bytes
/// std copies on its stack (a longer path goes to a heap `CString` in std's path calls).
struct Fixtures {
    /// A 6-d uint8 `.npy` file (C order).
    npy: CString,
    /// A 6-d float32 `.npy` file in Fortran order.
    fortran: CString,
    /// A `.safetensors` file of two tensors.
    st: CString,
    /// A relative symbolic link to `saved.npy` (saves write through it).
    link: CString,
    missing: CString,
    /// A directory (a save there is refused with IO).
    dir: CString,
    /// `npy`, open for reading.
    fd: i32,
}

fn c_path(p: &std::path::Path) -> CString {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// A `.npy` file's bytes: version 1.0, `dict` padded to a 64-byte boundary, then `data`.
fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let pad = (10 + dict.len() + 1).div_ceil(64) * 64 - 10;
    let mut h = dict.as_bytes().to_vec();
    h.resize(pad - 1, b' ');
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

fn fixtures() -> &'static Fixtures {
    static FX: std::sync::OnceLock<Fixtures> = std::sync::OnceLock::new();
    FX.get_or_init(|| {
        unarmed(|| {
            let dir = std::env::temp_dir()
                .join(format!("libtensor-alloc-failure-{}", std::process::id()))
                .join("d".repeat(200))
                .join("e".repeat(200));
            std::fs::create_dir_all(&dir).unwrap();
            assert!(dir.as_os_str().len() > 400);
            let npy = dir.join("a.npy");
            let data: Vec<u8> = (0..8u8).collect();
            std::fs::write(
                &npy,
                npy_bytes(
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2, 1, 2, 1, 2), }",
                    &data,
                ),
            )
            .unwrap();
            let fortran = dir.join("f.npy");
            let data: Vec<u8> = (0..8).flat_map(|i| (i as f32).to_le_bytes()).collect();
            std::fs::write(
                &fortran,
                npy_bytes(
                    "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 2, 1, 2, 1), }",
                    &data,
                ),
            )
            .unwrap();
            let link = dir.join("link.npy");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("saved.npy", &link).unwrap();
            let st = dir.join("t.safetensors");
            let json = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[2,2],"data_offsets":[8,12]}}"#;
            // The header padded to 8 bytes, as the reference writer pads it: the tensors are
            // aligned views (a misaligned one would be copied with the library allocator).
            let mut header = json.as_bytes().to_vec();
            header.resize(json.len().div_ceil(8) * 8, b' ');
            let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
            bytes.extend_from_slice(&header);
            bytes.extend_from_slice(&[0; 12]);
            std::fs::write(&st, bytes).unwrap();
            let fd = std::os::fd::IntoRawFd::into_raw_fd(std::fs::File::open(&npy).unwrap());
            Fixtures {
                npy: c_path(&npy),
                fortran: c_path(&fortran),
                st: c_path(&st),
                link: c_path(&link),
                missing: c_path(&dir.join("missing.npy")),
                dir: c_path(&dir),
                fd,
            }
        })
    })
}

// ---- the script --------------------------------------------------------------------------

/// Status of each scripted call, in order (`None`: skipped, an input failed earlier).
type Trace = Vec<(&'static str, Option<i32>)>;

struct Script {
    trace: Trace,
    tensors: Vec<*mut tensor_t>,
    /// Deleter-call counters of wrapped buffers whose wrap succeeded.
    #[allow(clippy::vec_box)] // boxed: each counter's address is a deleter's ctx
    wrapped: Vec<Box<Cell<u32>>>,
}

impl Script {
    fn status(&mut self, name: &'static str, s: tensor_status_t) -> bool {
        self.trace.push((name, Some(s.0)));
        s == TENSOR_OK
    }
    fn skip(&mut self, name: &'static str) {
        self.trace.push((name, None));
    }
    /// Runs a call producing a tensor (skipped when `input` is NULL).
    fn make(
        &mut self,
        name: &'static str,
        input: *mut tensor_t,
        f: impl FnOnce(*mut *mut tensor_t) -> tensor_status_t,
    ) -> *mut tensor_t {
        if input.is_null() {
            self.skip(name);
            return null_mut();
        }
        let mut out = null_mut();
        if self.status(name, f(&mut out)) {
            self.tensors.push(out);
            out
        } else {
            null_mut()
        }
    }
    /// A call on existing tensors with no new handle.
    fn on(
        &mut self,
        name: &'static str,
        inputs: &[*mut tensor_t],
        f: impl FnOnce() -> tensor_status_t,
    ) {
        if inputs.iter().any(|t| t.is_null()) {
            self.skip(name);
        } else {
            let s = f();
            self.status(name, s);
        }
    }
    /// Wraps a fresh malloc'd buffer of 8 f32 with a counted deleter.
    fn wrap_blob(&mut self, sizes: &[i64]) -> *mut tensor_t {
        // SAFETY: plain malloc; a NULL result is handled below.
        let data = unsafe { libc::malloc(32) };
        let calls = unarmed(|| Box::new(Cell::new(0u32)));
        let ctx = &*calls as *const Cell<u32> as *mut c_void;
        let mut out = null_mut();
        let s = tensor_from_blob(
            data,
            sizes.as_ptr(),
            std::ptr::null(),
            sizes.len() as i64,
            TENSOR_FLOAT32,
            CPU,
            Some(counted_free),
            ctx,
            &mut out,
        );
        if self.status("tensor_from_blob", s) {
            self.wrapped.push(calls);
            self.tensors.push(out);
            out
        } else {
            assert_eq!(calls.get(), 0, "a failed wrap ran the deleter");
            // SAFETY: the wrap failed, so the buffer is still ours (its deleter never ran).
            unsafe { libc::free(data) };
            null_mut()
        }
    }
}

const CPU: tensor_device_t = tensor_device_t {
    device_type: 1,
    device_id: 0,
};

fn script() -> Script {
    let mut sc = unarmed(|| Script {
        trace: Vec::with_capacity(128),
        tensors: Vec::with_capacity(64),
        wrapped: Vec::with_capacity(16),
    });
    let one = std::ptr::dangling_mut::<tensor_t>(); // "no input needed"
    let s23 = [2i64, 3];
    let a = sc.make("tensor_zeros", one, |o| {
        tensor_zeros(s23.as_ptr(), 2, TENSOR_FLOAT32, o)
    });
    let r = sc.make("tensor_arange", one, |o| tensor_arange(6, TENSOR_INT64, o));
    let s32 = [3i64, 2];
    let v = sc.make("tensor_view", r, |o| tensor_view(r, s32.as_ptr(), 2, o));
    let vt = sc.make("tensor_transpose", v, |o| tensor_transpose(v, 0, 1, o));
    let c = sc.make("tensor_contiguous", vt, |o| {
        tensor_contiguous(vt, TENSOR_CONTIGUOUS_FORMAT, o)
    });
    let _ = sc.make("tensor_clone", a, |o| {
        tensor_clone(a, TENSOR_PRESERVE_FORMAT, o)
    });
    let f64t = sc.make("tensor_to_dtype", vt, |o| {
        tensor_to_dtype(vt, TENSOR_FLOAT64, o)
    });
    sc.on("tensor_copy_", &[a, vt], || tensor_copy_(a, vt));
    let mut eq = false;
    sc.on("tensor_equal", &[a, c], || tensor_equal(a, c, &mut eq));
    sc.on("tensor_fill_f64", &[a], || tensor_fill_f64(a, 2.5));
    let idx = [1i64, 2];
    sc.on("tensor_set_f64", &[a], || {
        tensor_set_f64(a, idx.as_ptr(), 2, 7.0)
    });
    let mut x = 0.0;
    sc.on("tensor_get_f64", &[a], || {
        tensor_get_f64(a, idx.as_ptr(), 2, &mut x)
    });
    // more than five dims: sizes and strides spill to the heap
    let s6 = [1i64, 2, 1, 2, 1, 2];
    let big = sc.make("tensor_empty", one, |o| {
        tensor_empty(s6.as_ptr(), 6, TENSOR_UINT8, o)
    });
    let perm = [5i64, 4, 3, 2, 1, 0];
    let p6 = sc.make("tensor_permute", big, |o| {
        tensor_permute(big, perm.as_ptr(), 6, o)
    });
    let s8 = [8i64];
    let _ = sc.make("tensor_reshape", p6, |o| {
        tensor_reshape(p6, s8.as_ptr(), 1, o)
    });
    let s7 = [1i64, 2, 1, 2, 1, 2, 1];
    let _ = sc.make("tensor_unsqueeze", p6, |o| tensor_unsqueeze(p6, 0, o));
    let _ = sc.make("tensor_expand", big, |o| {
        tensor_expand(big, s7.as_ptr(), 7, o)
    });
    // seven dims that do not merge: the copy engine's index lists spill too
    let s2x7 = [2i64; 7];
    let big7 = sc.make("tensor_zeros", one, |o| {
        tensor_zeros(s2x7.as_ptr(), 7, TENSOR_UINT8, o)
    });
    let perm7 = [6i64, 5, 4, 3, 2, 1, 0];
    let p7 = sc.make("tensor_permute", big7, |o| {
        tensor_permute(big7, perm7.as_ptr(), 7, o)
    });
    let _ = sc.make("tensor_contiguous", p7, |o| {
        tensor_contiguous(p7, TENSOR_CONTIGUOUS_FORMAT, o)
    });
    sc.on("tensor_copy_", &[big7, p7], || tensor_copy_(big7, p7));
    sc.on("tensor_fill_i64", &[p7], || tensor_fill_i64(p7, 3));
    // wrapped memory, expand, repeat, DLPack both ways
    let b = sc.wrap_blob(&[8]);
    let s48 = [4i64, 8];
    let e = sc.make("tensor_expand", b, |o| tensor_expand(b, s48.as_ptr(), 2, o));
    let _ = sc.make("tensor_contiguous", e, |o| {
        tensor_contiguous(e, TENSOR_CONTIGUOUS_FORMAT, o)
    });
    let rep = [2i64, 1];
    let _ = sc.make("tensor_repeat", b, |o| tensor_repeat(b, rep.as_ptr(), 2, o));
    let s24 = [2i64, 4];
    let u = sc.make("tensor_unflatten", b, |o| {
        tensor_unflatten(b, 0, s24.as_ptr(), 2, o)
    });
    let _ = sc.make("tensor_diagonal", u, |o| tensor_diagonal(u, 0, 0, 1, o));
    let _ = sc.make("tensor_unfold", b, |o| tensor_unfold(b, 0, 3, 2, o));
    let mut m: *mut DLManagedTensorVersioned = null_mut();
    sc.on("tensor_to_dlpack", &[b], || tensor_to_dlpack(b, &mut m));
    if m.is_null() {
        sc.skip("tensor_from_dlpack");
    } else {
        let mut d = null_mut();
        if sc.status("tensor_from_dlpack", tensor_from_dlpack(m, &mut d)) {
            sc.tensors.push(d);
        } else {
            // SAFETY: the import failed, so the managed tensor is still ours: its deleter
            // runs once, here.
            unsafe { ((*m).deleter.unwrap())(m) };
        }
    }
    let mut m: *mut DLManagedTensor = null_mut();
    sc.on("tensor_to_dlpack_unversioned", &[c], || {
        tensor_to_dlpack_unversioned(c, &mut m)
    });
    if m.is_null() {
        sc.skip("tensor_from_dlpack_unversioned");
    } else {
        let mut d = null_mut();
        if sc.status(
            "tensor_from_dlpack_unversioned",
            tensor_from_dlpack_unversioned(m, &mut d),
        ) {
            sc.tensors.push(d);
        } else {
            // SAFETY: as above, for the unversioned managed tensor.
            unsafe { ((*m).deleter.unwrap())(m) };
        }
    }
    // storages and weak references
    let mut st = null_mut();
    sc.status("storage_new", storage_new(64, std::ptr::null(), &mut st));
    let st_t = st as *mut tensor_t; // only tested for NULL
    let mut w = null_mut();
    sc.on("storage_weak_new", &[st_t], || storage_weak_new(st, &mut w));
    storage_release(storage_weak_lock(w));
    storage_weak_release(w);
    sc.on("storage_resize", &[st_t], || storage_resize(st, 256));
    let s4 = [4i64];
    let _ = sc.make("tensor_from_storage", st_t, |o| {
        tensor_from_storage(st, 2, s4.as_ptr(), std::ptr::null(), 1, TENSOR_FLOAT64, o)
    });
    storage_release(st);
    // files: mapped storages, `.npy` loads (C and Fortran order, six dims) and saves (through
    // a symbolic link), a `.safetensors` file's tensors, on a path longer than std's stack
    // buffer; errors naming the file and the OS error
    let fx = fixtures();
    for (name, st) in [
        ("storage_from_file", {
            let mut st = null_mut();
            let s = storage_from_file(
                fx.npy.as_ptr(),
                0,
                TENSOR_MAP_TO_END,
                TENSOR_MAP_READ_ONLY,
                &mut st,
            );
            storage_release(st);
            s
        }),
        ("storage_from_fd", {
            let mut st = null_mut();
            let s = storage_from_fd(fx.fd, 3, 100, TENSOR_MAP_PRIVATE, &mut st);
            storage_release(st);
            s
        }),
        ("storage_new_shared", {
            let mut st = null_mut();
            let s = storage_new_shared(4096, &mut st);
            storage_release(st);
            s
        }),
    ] {
        sc.status(name, st);
    }
    let ln = sc.make("tensor_load_npy", one, |o| {
        tensor_load_npy(fx.npy.as_ptr(), TENSOR_MAP_PRIVATE, o)
    });
    let _ = sc.make("tensor_load_npy", one, |o| {
        tensor_load_npy(fx.fortran.as_ptr(), TENSOR_MAP_READ_ONLY, o)
    });
    let _ = sc.make("tensor_load_npy", one, |o| {
        tensor_load_npy(fx.missing.as_ptr(), TENSOR_MAP_READ_ONLY, o)
    });
    sc.on("tensor_save_npy", &[ln], || {
        tensor_save_npy(fx.link.as_ptr(), ln)
    });
    sc.on("tensor_save_npy", &[a], || {
        tensor_save_npy(fx.dir.as_ptr(), a)
    });
    // The loader itself is not swept (the safetensors crate's parser allocates infallibly).
    let mut file = null_mut();
    assert_eq!(
        unarmed(|| tensor_safetensors_load(fx.st.as_ptr(), &mut file)),
        TENSOR_OK
    );
    for i in [1, 9] {
        let _ = sc.make("tensor_safetensors_at", one, |o| {
            tensor_safetensors_at(file, i, o)
        });
    }
    unarmed(|| tensor_safetensors_release(file));
    // per-channel parameters, over seven dims (the lists spill to the heap), overlapping
    let (scale, shift) = ([2.0f64, 3.0], [1.0f64, 0.0]);
    sc.on("tensor_copy_affine_", &[big7, p7], || {
        tensor_copy_affine_(big7, p7, 0, scale.as_ptr(), shift.as_ptr(), 2)
    });
    // error paths: each builds a message naming the function and the values
    let s5 = [5i64];
    let _ = sc.make("tensor_view", a, |o| tensor_view(a, s5.as_ptr(), 1, o));
    let neg = [-3i64];
    let _ = sc.make("tensor_empty", one, |o| {
        tensor_empty(neg.as_ptr(), 1, TENSOR_FLOAT32, o)
    });
    let _ = sc.make("tensor_select", a, |o| tensor_select(a, 0, 9, o));
    let _ = sc.make("tensor_view_dtype", a, |o| {
        tensor_view_dtype(a, tensor_dtype_t(77), o)
    });
    let _ = sc.make("tensor_view_dtype", a, |o| {
        tensor_view_dtype(a, TENSOR_FLOAT64, o)
    });
    let _ = sc.make("tensor_view_dtype", a, |o| {
        tensor_view_dtype(a, TENSOR_INT16, o)
    });
    // tensor_format streams the repr into the caller's buffer: whatever failed before, the
    // text of a tensor that exists is its text (these tensors' values depend on no call
    // that may fail after their creation).
    let mut text = [0u8; 128];
    for (t, want) in [
        (r, "tensor([0, 1, 2, 3, 4, 5])"),
        (vt, "tensor([[0, 2, 4],\n        [1, 3, 5]])"),
        (
            f64t,
            "tensor([[0., 2., 4.],\n        [1., 3., 5.]], dtype=torch.float64)",
        ),
    ] {
        if t.is_null() {
            sc.skip("tensor_format");
            continue;
        }
        let n = tensor_format(t, text.as_mut_ptr() as *mut std::ffi::c_char, text.len());
        sc.trace.push(("tensor_format", Some(n as i32)));
        assert_eq!(
            std::str::from_utf8(&text[..n.min(text.len() - 1)]),
            Ok(want),
            "tensor_format"
        );
    }
    sc
}

fn release(sc: Script) {
    for t in sc.tensors {
        tensor_release(t);
    }
    for w in &sc.wrapped {
        assert_eq!(
            w.get(),
            1,
            "a wrapped buffer's deleter did not run exactly once"
        );
    }
}

fn stats() -> (u64, u64, u64) {
    let mut s = tensor_memory_stats_t {
        struct_size: std::mem::size_of::<tensor_memory_stats_t>(),
        ..Default::default()
    };
    assert_eq!(tensor_memory_stats(&mut s), TENSOR_OK);
    (s.live_storages, s.live_bytes, s.live_external_storages)
}

/// Compares a run under injection with the reference run: each call gives its reference
/// status or OUT_OF_MEMORY.
fn compare(what: &str, reference: &Trace, got: &Trace) {
    assert_eq!(
        reference.len(),
        got.len(),
        "{what}: the script took another path"
    );
    for (i, ((name, want), (_, have))) in reference.iter().zip(got).enumerate() {
        if let (Some(want), Some(have)) = (want, have) {
            assert!(
                have == want || *have == TENSOR_ERR_OUT_OF_MEMORY.0,
                "{what}: call {i} ({name}) returned {have}, expected {want} or OUT_OF_MEMORY"
            );
        }
    }
}

/// Runs the script with the Nth allocation failing, for every N; returns (runs, allocations
/// of one run).
fn sweep(kind: &str, arm: impl Fn(u64), fired: impl Fn() -> bool, disarm: impl Fn()) -> (u64, u64) {
    let reference = script();
    let ref_trace = reference.trace.clone();
    release(reference);
    let base_lib = LIB_LIVE.with(|l| l.get());
    let mut n = 1;
    loop {
        DELETER_CALLS.with(|c| c.set(0));
        if verbose() {
            eprintln!("{kind}: failing allocation {n}");
        }
        let base_live = LIVE.with(|l| l.get());
        arm(n);
        let sc = script();
        disarm();
        let did_fire = fired();
        let trace = sc.trace.clone();
        release(sc);
        compare(&format!("{kind} allocation {n} failed"), &ref_trace, &trace);
        drop(trace);
        assert_eq!(
            LIVE.with(|l| l.get()),
            base_live,
            "{kind} allocation {n} failed: Rust heap allocations leaked ({} live, {base_live} \
             before; allocations still live, by number: {:?}; ALLOC_FAILURE_TRACE=<number> \
             prints where one is made)",
            LIVE.with(|l| l.get()),
            armed_live()
        );
        assert_eq!(
            LIB_LIVE.with(|l| l.get()),
            base_lib,
            "{kind} allocation {n}: storage leaked"
        );
        assert_eq!(
            stats(),
            (0, 0, 0),
            "{kind} allocation {n}: the library's counters"
        );
        if !did_fire {
            return (n, n - 1);
        }
        n += 1;
    }
}

#[test]
fn every_allocation_of_a_call_sequence_may_fail() {
    assert_eq!(tensor_set_default_allocator(&LIB_ALLOCATOR), TENSOR_OK);
    trace_at();
    verbose();
    // Warm-up: thread-locals and the error slot exist before counting starts.
    release(script());
    let rust_sweep = |kind: &str| {
        sweep(
            kind,
            |n| {
                SEEN.with(|s| s.set(0));
                FIRED.with(|f| f.set(false));
                FAIL_AT.with(|f| f.set(n));
                ARMED.with(|a| a.set(true));
            },
            || FIRED.with(|f| f.get()),
            || ARMED.with(|a| a.set(false)),
        )
    };
    let (runs, allocs) = rust_sweep("rust");
    eprintln!("rust global allocator: {allocs} allocations per script, {runs} runs");
    // Again with caching off (limit 0): every TensorImpl and StorageImpl box then comes from
    // the global allocator, so each of those allocations is failed in turn too (with the
    // per-thread object-block cache on, most of them reuse a block and never reach it).
    let limit = tensor_set_cache_limit(0);
    let (runs0, allocs0) = rust_sweep("rust, cache off");
    tensor_set_cache_limit(limit);
    eprintln!("rust global allocator, cache off: {allocs0} allocations per script, {runs0} runs");
    assert!(
        allocs0 > allocs,
        "with the cache off, the object boxes are allocated"
    );
    let (runs2, allocs2) = sweep(
        "library",
        |n| {
            LIB_SEEN.with(|s| s.set(0));
            LIB_FIRED.with(|f| f.set(false));
            LIB_FAIL_AT.with(|f| f.set(n));
        },
        || LIB_FIRED.with(|f| f.get()),
        || LIB_FAIL_AT.with(|f| f.set(0)),
    );
    eprintln!("library allocator: {allocs2} allocations per script, {runs2} runs");
    assert_eq!(tensor_set_default_allocator(std::ptr::null()), TENSOR_OK);
    assert!(allocs > 20 && allocs2 > 5, "the script allocates");
}

/// The repr is written without a single allocation, for every kind of value (floats in
/// each mode, complex, integers, bools, summarised, 0-dim, empty, wrapped rows, a suffix on
/// its own line): so no allocation failure can reach it.
#[test]
fn tensor_format_allocates_nothing() {
    let mut made: Vec<*mut tensor_t> = Vec::new();
    let mut make = |f: &dyn Fn(*mut *mut tensor_t) -> tensor_status_t| {
        let mut t = null_mut();
        assert_eq!(f(&mut t), TENSOR_OK);
        made.push(t);
        t
    };
    let big = make(&|o| tensor_arange(2000, TENSOR_INT64, o));
    let f = make(&|o| tensor_full([2i64, 20].as_ptr(), 2, TENSOR_FLOAT32, 0.5, o));
    let sci = make(&|o| tensor_full([3i64].as_ptr(), 1, TENSOR_FLOAT64, 1e10, o));
    let c = make(&|o| tensor_full([2i64].as_ptr(), 1, tensor_dtype_t(9), -0.5, o));
    let b = make(&|o| tensor_ones([2i64].as_ptr(), 1, tensor_dtype_t(11), o));
    let s = make(&|o| tensor_full(std::ptr::null(), 0, TENSOR_FLOAT32, 3.0, o));
    let e = make(&|o| tensor_empty([2i64, 0].as_ptr(), 2, tensor_dtype_t(9), o));
    let u = make(&|o| tensor_arange(25, tensor_dtype_t(0), o));
    let t = make(&|o| tensor_transpose(f, 0, 1, o));
    assert!(ok_all(&[tensor_set_f64(sci, [0i64].as_ptr(), 1, f64::NAN)]));
    let mut buf = [0u8; 64];
    for &x in &[big, f, sci, c, b, s, e, u, t] {
        let before = unarmed(|| SEEN.with(|n| n.get()));
        SEEN.with(|n| n.set(0));
        FAIL_AT.with(|n| n.set(0));
        ARMED.with(|a| a.set(true));
        let need = tensor_format(x, std::ptr::null_mut(), 0);
        let n = tensor_format(x, buf.as_mut_ptr() as *mut std::ffi::c_char, buf.len());
        ARMED.with(|a| a.set(false));
        let seen = SEEN.with(|n| n.get());
        SEEN.with(|n| n.set(before));
        assert_eq!(n, need);
        assert!(need > 0);
        assert_eq!(seen, 0, "tensor_format allocated {seen} times");
    }
    for t in made {
        tensor_release(t);
    }
}

fn ok_all(s: &[tensor_status_t]) -> bool {
    s.iter().all(|&s| s == TENSOR_OK)
}

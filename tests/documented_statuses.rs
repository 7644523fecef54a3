//! Every exported function returns exactly the statuses its header doc documents.
//!
//! The documented statuses come from `include/tensor.h` itself (the `Errors:` lines, parsed
//! by `tests/support/header_model.rs`); a function returning `tensor_status_t`
//! without one fails the test. Then every exported function is driven with hostile and
//! random arguments, through the C ABI as a C caller would (while keeping the caller's side
//! of the contract: live handles, readable buffers): NULL handles and out-pointers, unknown
//! enum codes, huge / negative sizes, strides, offsets and dims, shrunk storages, read-only
//! storages, tensors without elements at huge offsets, expanded and overlapping views,
//! non-host data, DLPack imports, a failing allocator. Each status returned must be OK or
//! documented, and a failure's message must name the function. Every exported function
//! needs a driver below: a function added to the header without one fails the test.
//!
//! The other way too: every documented status must be produced by some call, or be exempt
//! with the reason written in its driver (`Ctx::exempt`); a status no call can produce
//! leaves the `Errors:` line. Statuses random arguments rarely reach come from each
//! driver's targeted calls (`Ctx::case`: special subjects, crafted files, a failing
//! allocator, an exhausted heap), made once before the random rounds.
//!
//! `TENSOR_HOSTILE_ROUNDS` (default 150) sets the number of rounds; each round builds fresh
//! subjects and calls every function 12 times. One round in 8 runs with a failing storage
//! allocator, one in 8 with an exhausted Rust heap (every allocation inside a library call
//! fails; this binary's global allocator). `TENSOR_HOSTILE_TRACE=1` names each call first.

#[path = "support/header_model.rs"]
mod header_model;

use header_model::{parse_header, Header};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tensor::ffi::copy::*;
use tensor::ffi::core::*;
use tensor::ffi::dlpack::{self as fdl};
use tensor::ffi::dlpack::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};
use tensor::ffi::files::*;
use tensor::ffi::memory::*;
use tensor::ffi::storage::*;
use tensor::ffi::tensor::*;
use tensor::ffi::view::*;
use tensor::ffi::{
    storage_t, storage_weak_t, tensor_allocator_t, tensor_device_t, tensor_dtype_t,
    tensor_memory_format_t, tensor_status_t, tensor_t,
};

fn header() -> Header {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/tensor.h");
    parse_header(&std::fs::read_to_string(path).expect("include/tensor.h"))
}

// ---- randomness -------------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())]
    }
}

/// Layout values a hostile caller tries.
const VALUES: [i64; 18] = [
    i64::MIN,
    -(1 << 62),
    -1000,
    -3,
    -2,
    -1,
    0,
    1,
    2,
    3,
    4,
    7,
    1 << 31,
    1 << 40,
    1 << 62,
    i64::MAX - 1,
    i64::MAX,
    64,
];
/// List lengths: the library must refuse the bad ones before reading.
const LENGTHS: [i64; 14] = [
    i64::MIN,
    -5,
    -1,
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    64,
    65,
    1000,
    i64::MAX,
];
const DTYPES: [i32; 29] = [
    i32::MIN,
    -1,
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    15,
    16,
    27,
    28,
    29,
    30,
    // the float8 dtypes and float4_e2m1fn_x2 (no values), and 46 (c10's BComplex32: unknown)
    23,
    24,
    25,
    26,
    44,
    45,
    46,
    i32::MAX,
];
const FORMATS: [i32; 7] = [-1, 0, 1, 2, 3, 4, 99];
const DOUBLES: [f64; 9] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1.5,
    -7.0,
    1e300,
    -1e300,
];
/// Byte counts: small ones, and ones no allocator grants (never a size that might succeed
/// slowly).
const NBYTES: [usize; 9] = [
    0,
    1,
    7,
    16,
    64,
    4096,
    1 << 62,
    isize::MAX as usize + 1,
    usize::MAX,
];
const DEVICES: [(i32, i32); 7] = [(1, 0), (2, 0), (1, -1), (0, 0), (99, 0), (3, 1), (-1, 0)];

/// A failing allocator (ctx points to an AtomicBool "fail") over the global allocator.
unsafe extern "C" fn test_allocate(ctx: *mut c_void, nbytes: usize, align: usize) -> *mut c_void {
    // SAFETY: ctx is the address of FAIL_ALLOC (allocator_failing), a static.
    if unsafe { &*(ctx as *const AtomicBool) }.load(Ordering::Relaxed) {
        return null_mut();
    }
    match std::alloc::Layout::from_size_align(nbytes.max(1), align) {
        // SAFETY: the layout has a non-zero size.
        Ok(l) => unsafe { std::alloc::alloc(l) as *mut c_void },
        Err(_) => null_mut(),
    }
}
unsafe extern "C" fn test_deallocate(_ctx: *mut c_void, p: *mut c_void, nbytes: usize) {
    if !p.is_null() {
        // SAFETY: the library gives back a block test_allocate returned for `nbytes`, with
        // its alignment (64, the only one it asks for).
        unsafe {
            std::alloc::dealloc(
                p as *mut u8,
                std::alloc::Layout::from_size_align(nbytes.max(1), 64).unwrap(),
            )
        };
    }
}
static FAIL_ALLOC: AtomicBool = AtomicBool::new(false);

/// Deleters of imported managed tensors: each must run exactly once per successful import.
static IMPORT_DELETES: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count_versioned(_m: *mut DLManagedTensorVersioned) {
    IMPORT_DELETES.fetch_add(1, Ordering::SeqCst);
}
unsafe extern "C" fn count_unversioned(_m: *mut DLManagedTensor) {
    IMPORT_DELETES.fetch_add(1, Ordering::SeqCst);
}

// ---- an exhausted heap ---------------------------------------------------------------------

/// The global allocator of this test binary: while a library call runs in a round with an
/// exhausted heap ([`lib`]), every Rust allocation of this thread fails, so every call that
/// allocates (a view's TensorImpl box, an error message, a mapping's bookkeeping) meets
/// OUT_OF_MEMORY. The test's own allocations are never failed.
struct Exhaustible;

thread_local! {
    /// This round's library calls run with an exhausted heap.
    static HEAP_EXHAUSTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// A library call of such a round is running.
    static IN_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn heap_fails() -> bool {
    IN_CALL.try_with(|c| c.get()).unwrap_or(false)
}

// SAFETY: every request that is not failed on purpose (NULL: allowed by GlobalAlloc) goes
// unchanged to `System`, which upholds the contract; the check reads a thread-local only.
unsafe impl std::alloc::GlobalAlloc for Exhaustible {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if heap_fails() {
            return null_mut();
        }
        // SAFETY: the caller's layout contract is System's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if heap_fails() {
            return null_mut();
        }
        // SAFETY: as in alloc.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: std::alloc::Layout, n: usize) -> *mut u8 {
        if heap_fails() {
            return null_mut();
        }
        // SAFETY: `p` came from System with `layout` (every block here does).
        unsafe { std::alloc::System.realloc(p, layout, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as in realloc.
        unsafe { std::alloc::System.dealloc(p, layout) }
    }
}

#[global_allocator]
static GLOBAL: Exhaustible = Exhaustible;

thread_local! {
    /// The function being driven.
    static CURRENT: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
}

/// Functions some of whose calls still make infallible Rust allocations, so that with the
/// heap exhausted they abort the process (Rust's allocation-error handler) instead of
/// returning OUT_OF_MEMORY: they run with a working heap even in those rounds, until fixed.
/// Each with where it allocates.
const ABORTS_ON_EXHAUSTED_HEAP: &[(&str, &str)] = &[
    (
        "tensor_load_safetensors",
        "the safetensors crate's header parser (SafeTensors::read_metadata, serde_json) \
         allocates the header's map, names and shapes infallibly",
    ),
    (
        "tensor_safetensors_load",
        "the alias of tensor_load_safetensors: the safetensors crate's header parser (SafeTensors::read_metadata, serde_json) \
         allocates the header's map, names and shapes infallibly",
    ),
    (
        "tensor_load_safetensors_mode",
        "the safetensors crate's header parser (SafeTensors::read_metadata, serde_json) \
         allocates the header's map, names and shapes infallibly",
    ),
    (
        "tensor_safetensors_load_mode",
        "the alias of tensor_load_safetensors_mode: the safetensors crate's header parser \
         (SafeTensors::read_metadata, serde_json) allocates the header's map, names and shapes \
         infallibly",
    ),
    (
        "tensor_save_safetensors",
        "the safetensors crate's Metadata::new (its name index) and serde_json::to_vec \
         (the header) allocate infallibly",
    ),
    (
        "tensor_save_safetensors_metadata",
        "the safetensors crate's Metadata::new (its name index) and serde_json::to_vec \
         (the header and the metadata) allocate infallibly",
    ),
];

/// Runs one library call: with every Rust allocation failing in a round with an exhausted
/// heap.
fn lib<R>(f: impl FnOnce() -> R) -> R {
    let spared = CURRENT.with(|c| ABORTS_ON_EXHAUSTED_HEAP.iter().any(|a| a.0 == c.get()));
    let armed = HEAP_EXHAUSTED.with(|h| h.get()) && !spared;
    IN_CALL.with(|c| c.set(armed));
    let r = f();
    IN_CALL.with(|c| c.set(false));
    r
}

// ---- the subjects of one round ----------------------------------------------------------

struct Ctx {
    rng: Rng,
    tensors: Vec<*mut tensor_t>,
    storages: Vec<*mut storage_t>,
    /// Host memory the from_blob subjects and hostile DLPack imports point into.
    buf: Vec<u64>,
    list: Vec<i64>,
    imports_ok: usize,
    /// In the targeted passes before the random rounds: which deterministic call a driver
    /// with targeted calls makes (0, 1, ...; it makes its random call past its last one).
    case: Option<usize>,
    /// Documented statuses no call can produce here, by (function, status): the reason,
    /// given by the function's driver (`Ctx::exempt`).
    exempt: BTreeMap<(String, String), &'static str>,
}

fn ok(s: tensor_status_t) -> bool {
    s.0 == 0
}

impl Ctx {
    fn new(seed: u64) -> Ctx {
        Ctx {
            rng: Rng(seed | 1),
            tensors: Vec::new(),
            storages: Vec::new(),
            buf: vec![0x3FF0_0000_0000_0000; 4096],
            list: vec![0; 1024],
            imports_ok: 0,
            case: None,
            exempt: BTreeMap::new(),
        }
    }

    /// Records that `function` documents `status` but no call of this test can produce it.
    fn exempt(&mut self, function: &str, status: &str, reason: &'static str) {
        self.exempt
            .insert((function.to_string(), status.to_string()), reason);
    }

    fn keep(&mut self, s: tensor_status_t, t: *mut tensor_t) {
        assert!(ok(s), "making a subject failed: {}", last_error());
        self.tensors.push(t);
    }

    /// Fresh subjects: every kind of tensor a hostile caller can make.
    fn build(&mut self) {
        let mut t = null_mut();
        let f32_ = tensor_dtype_t(6);
        // contiguous [2, 3] holding 0..6
        let mut base = null_mut();
        assert!(ok(tensor_arange(6, f32_, &mut base)));
        self.keep(tensor_view(base, [2i64, 3].as_ptr(), 2, &mut t), t);
        self.tensors.push(base);
        // transposed
        self.keep(tensor_transpose(self.tensors[0], 0, 1, &mut t), t);
        // expanded [4, 3] (stride 0) of a [1, 3]
        let mut row = null_mut();
        assert!(ok(tensor_zeros(
            [1i64, 3].as_ptr(),
            2,
            tensor_dtype_t(7),
            &mut row
        )));
        self.keep(tensor_expand(row, [4i64, 3].as_ptr(), 2, &mut t), t);
        self.tensors.push(row);
        // overlapping as_strided view [3, 3] strides [1, 1]
        self.keep(
            tensor_as_strided(base, [3i64, 3].as_ptr(), [1i64, 1].as_ptr(), 2, 0, &mut t),
            t,
        );
        // no elements, huge offset and strides, on an empty storage
        let mut empty = null_mut();
        assert!(ok(storage_new(0, null(), &mut empty)));
        for (sizes, strides) in [
            ([0i64, 4, 4], [1i64, 1 << 61, 1 << 61]),
            ([4, 0, 4], [i64::MAX / 4, 1, 1 << 60]),
        ] {
            self.keep(
                tensor_from_storage(
                    empty,
                    i64::MAX - 1,
                    sizes.as_ptr(),
                    strides.as_ptr(),
                    3,
                    f32_,
                    &mut t,
                ),
                t,
            );
        }
        self.storages.push(empty);
        // a tensor whose storage was shrunk below it (and a view that still fits)
        let mut shrunk = null_mut();
        assert!(ok(tensor_arange(16, tensor_dtype_t(7), &mut shrunk)));
        let mut head = null_mut();
        assert!(ok(tensor_narrow(shrunk, 0, 0, 2, &mut head)));
        assert!(ok(storage_resize(tensor_storage(shrunk), 24)));
        self.tensors.push(shrunk);
        self.tensors.push(head);
        // read-only
        let mut ro = null_mut();
        assert!(ok(tensor_ones(
            [3i64, 2].as_ptr(),
            2,
            tensor_dtype_t(3),
            &mut ro
        )));
        assert!(ok(storage_mark_read_only(tensor_storage(ro))));
        self.tensors.push(ro);
        // not host-accessible (a CUDA pointer: never dereferenced)
        self.keep(
            tensor_from_blob(
                0x1000 as *mut c_void,
                [2i64, 2].as_ptr(),
                null(),
                2,
                f32_,
                tensor_device_t {
                    device_type: 2,
                    device_id: 0,
                },
                None,
                null_mut(),
                &mut t,
            ),
            t,
        );
        // host memory wrapped twice (two storages over the same bytes)
        let host = self.buf.as_mut_ptr() as *mut c_void;
        for _ in 0..2 {
            self.keep(
                tensor_from_blob(
                    host,
                    [4i64, 4].as_ptr(),
                    null(),
                    2,
                    tensor_dtype_t(7),
                    tensor_device_t {
                        device_type: 1,
                        device_id: 0,
                    },
                    None,
                    null_mut(),
                    &mut t,
                ),
                t,
            );
        }
        // 0-dim, other dtypes, 6 dims (sizes and strides on the heap), channels-last
        self.keep(tensor_full(null(), 0, tensor_dtype_t(5), 2.5, &mut t), t);
        for code in [11, 9, 27, 1, 15, 24] {
            self.keep(
                tensor_ones([2i64, 2].as_ptr(), 2, tensor_dtype_t(code), &mut t),
                t,
            );
        }
        // float4_e2m1fn_x2: bit copies only
        self.keep(
            tensor_zeros([2i64, 2].as_ptr(), 2, tensor_dtype_t(45), &mut t),
            t,
        );
        self.keep(
            tensor_zeros([1i64, 2, 1, 2, 1, 2].as_ptr(), 6, tensor_dtype_t(4), &mut t),
            t,
        );
        let mut nchw = null_mut();
        assert!(ok(tensor_zeros(
            [2i64, 3, 2, 2].as_ptr(),
            4,
            f32_,
            &mut nchw
        )));
        self.keep(
            tensor_contiguous(nchw, tensor_memory_format_t(2), &mut t),
            t,
        );
        self.tensors.push(nchw);
        // a NaN-holding float tensor and its alias
        let mut nan = null_mut();
        assert!(ok(tensor_full(
            [3i64].as_ptr(),
            1,
            tensor_dtype_t(7),
            f64::NAN,
            &mut nan
        )));
        self.keep(tensor_alias(nan, &mut t), t);
        self.tensors.push(nan);
        // a DLPack round trip of the first subject (its producer storage is then pinned)
        let mut m = null_mut();
        assert!(ok(fdl::tensor_to_dlpack(self.tensors[0], &mut m)));
        self.keep(fdl::tensor_from_dlpack(m, &mut t), t);
        // storages: every subject's, a wrapped one, a read-only one
        for i in 0..self.tensors.len() {
            let s = storage_retain(tensor_storage(self.tensors[i]));
            self.storages.push(s);
        }
        let mut s = null_mut();
        assert!(ok(storage_from_blob(
            self.buf.as_mut_ptr() as *mut c_void,
            64,
            tensor_device_t {
                device_type: 1,
                device_id: 0
            },
            None,
            null_mut(),
            &mut s
        )));
        self.storages.push(s);
    }

    fn release_all(&mut self) {
        for t in self.tensors.drain(..) {
            tensor_release(t);
        }
        for s in self.storages.drain(..) {
            storage_release(s);
        }
    }

    fn t(&mut self) -> *mut tensor_t {
        if self.rng.one_in(12) {
            null_mut()
        } else {
            let i = self.rng.below(self.tensors.len());
            self.tensors[i]
        }
    }
    fn s(&mut self) -> *mut storage_t {
        if self.rng.one_in(12) {
            null_mut()
        } else {
            let i = self.rng.below(self.storages.len());
            self.storages[i]
        }
    }
    /// A dim or index: small, or hostile.
    fn v(&mut self) -> i64 {
        if self.rng.one_in(2) {
            self.rng.below(9) as i64 - 4
        } else {
            self.rng.pick(&VALUES)
        }
    }
    /// A list argument: (pointer, length); the buffer always holds 1024 readable values.
    fn list(&mut self) -> (*const i64, i64) {
        let n = if self.rng.one_in(3) {
            self.rng.pick(&LENGTHS)
        } else {
            self.rng.below(5) as i64
        };
        let upto = n.clamp(0, 1024) as usize;
        for i in 0..upto {
            self.list[i] = if self.rng.one_in(3) {
                self.v()
            } else {
                self.rng.below(5) as i64
            };
        }
        let p = if self.rng.one_in(10) {
            null()
        } else {
            self.list.as_ptr()
        };
        (p, n)
    }
    /// Sizes for calls that allocate: small, or sure to fail (never a slow success).
    fn alloc_list(&mut self) -> (*const i64, i64) {
        let (p, n) = self.list();
        let upto = n.clamp(0, 1024) as usize;
        let mut small = 1i64;
        for i in 0..upto {
            let v = self.list[i];
            if v > 4 && v < (1 << 40) {
                self.list[i] = 4;
            }
            small = small.saturating_mul(self.list[i].clamp(0, 4));
        }
        if small > 1 << 16 {
            // Many dims of 4: keep the product small.
            for x in self.list[..upto].iter_mut() {
                *x = (*x).min(1);
            }
        }
        (p, n)
    }
    fn dtype(&mut self) -> tensor_dtype_t {
        tensor_dtype_t(self.rng.pick(&DTYPES))
    }
    fn fmt(&mut self) -> tensor_memory_format_t {
        tensor_memory_format_t(self.rng.pick(&FORMATS))
    }
    fn device(&mut self) -> tensor_device_t {
        let (device_type, device_id) = self.rng.pick(&DEVICES);
        tensor_device_t {
            device_type,
            device_id,
        }
    }
    fn f(&mut self) -> f64 {
        self.rng.pick(&DOUBLES)
    }
    fn nbytes(&mut self) -> usize {
        self.rng.pick(&NBYTES)
    }
    fn null_out(&mut self) -> bool {
        self.rng.one_in(10)
    }
    /// Index argument for element access: usually in range.
    fn index(&mut self, t: *mut tensor_t) -> (*const i64, i64) {
        if t.is_null() || self.rng.one_in(3) {
            return self.list();
        }
        let nd = tensor_ndim(t);
        let sizes = tensor_sizes(t);
        for d in 0..nd as usize {
            // SAFETY: tensor_sizes has ndim entries.
            let n = unsafe { *sizes.add(d) };
            self.list[d] = if n > 0 {
                (self.rng.next() % n as u64) as i64
            } else {
                0
            };
        }
        (self.list.as_ptr(), nd)
    }
    /// A hostile DLPack tensor over `buf` (or NULL data).
    fn dl_tensor(&mut self, shape: &mut [i64; 8], strides: &mut [i64; 8]) -> DLTensor {
        let ndim = self.rng.pick(&[-1, 0, 1, 2, 3, 65]);
        // Small shapes over the buffer, sometimes huge ones.
        for i in 0..8 {
            shape[i] = if self.rng.one_in(6) {
                self.v()
            } else {
                self.rng.below(4) as i64
            };
            strides[i] = if self.rng.one_in(6) {
                self.v()
            } else {
                self.rng.below(5) as i64
            };
        }
        let dtype = DLDataType {
            code: self.rng.pick(&[0u8, 1, 2, 3, 4, 5, 6, 200]),
            bits: self.rng.pick(&[1u8, 8, 16, 32, 64, 128, 7]),
            lanes: self.rng.pick(&[1u16, 1, 1, 2, 0]),
        };
        let (device_type, device_id) = self.rng.pick(&DEVICES);
        DLTensor {
            data: if self.rng.one_in(8) {
                null_mut()
            } else {
                self.buf.as_mut_ptr() as *mut c_void
            },
            device: DLDevice {
                device_type,
                device_id,
            },
            ndim: if ndim == 65 { 65 } else { ndim },
            dtype,
            shape: if self.rng.one_in(8) {
                null_mut()
            } else {
                shape.as_mut_ptr()
            },
            strides: if self.rng.one_in(3) {
                null_mut()
            } else {
                strides.as_mut_ptr()
            },
            byte_offset: self.rng.pick(&[0u64, 3, 8, 64, u64::MAX, 1 << 63]),
        }
    }
}

// ---- files for the file-API drivers --------------------------------------------------------

/// A directory of files made once per test process: a valid `.npy`, a valid `.safetensors`
/// (tensors "a" and "b"), garbage, and an output path; plus a missing path and a directory.
struct Files {
    npy: std::ffi::CString,
    st: std::ffi::CString,
    garbage: std::ffi::CString,
    missing: std::ffi::CString,
    dir: std::ffi::CString,
    out: std::ffi::CString,
    /// A FIFO: loaders must not wait in open() for a writer, saves must not replace it.
    fifo: std::ffi::CString,
    /// Crafted files for the targeted calls, by what they provoke.
    crafted: BTreeMap<&'static str, std::ffi::CString>,
}

impl Files {
    fn crafted(&self, what: &str) -> *const std::ffi::c_char {
        self.crafted[what].as_ptr()
    }
}

/// A `.npy` file (format 1.0) with this header dict and data.
fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut h = dict.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(h.len() as u16).to_le_bytes());
    v.extend_from_slice(h.as_bytes());
    v.extend_from_slice(data);
    v
}

/// A `.safetensors` file with this JSON header and data.
fn safetensors_bytes(json: &str, data: &[u8]) -> Vec<u8> {
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v.extend_from_slice(data);
    v
}

/// The crafted files: (name, contents).
fn crafted_files() -> Vec<(&'static str, Vec<u8>)> {
    let ones65 = vec!["1"; 65].join(",");
    vec![
        // A NumPy dtype libtensor lacks: DTYPE.
        (
            "npy_datetime",
            npy_bytes(
                "{'descr': '<M8[s]', 'fortran_order': False, 'shape': (1,), }",
                &[0; 8],
            ),
        ),
        // Big-endian data: loaded as a copy (OUT_OF_MEMORY when the allocator fails; DTYPE
        // when mapped shared).
        (
            "npy_big_endian",
            npy_bytes(
                "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
                &[0, 0, 0, 1, 0, 0, 0, 2],
            ),
        ),
        // A shape whose element count overflows: OVERFLOW.
        (
            "npy_huge_shape",
            npy_bytes(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
                &[0; 4],
            ),
        ),
        (
            "st_float4",
            safetensors_bytes(
                // F4 with an odd last dim: no whole float4_e2m1fn_x2 pairs (DTYPE).
                r#"{"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}}"#,
                &[0; 3],
            ),
        ),
        (
            "st_65_dims",
            safetensors_bytes(
                &format!(r#"{{"a":{{"dtype":"F32","shape":[{ones65}],"data_offsets":[0,4]}}}}"#),
                &[0; 4],
            ),
        ),
        (
            "st_overflow",
            safetensors_bytes(
                r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}}"#,
                &[0; 4],
            ),
        ),
        // A metadata value that is not a string: IO.
        (
            "st_meta_int",
            safetensors_bytes(
                r#"{"__metadata__":{"n":1},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
                &[0],
            ),
        ),
        // "b" starts at byte 1 of the data: a float32 copied to an aligned block.
        (
            "st_misaligned",
            safetensors_bytes(
                r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}"#,
                &[0; 5],
            ),
        ),
    ]
}

fn files() -> &'static Files {
    static FILES: std::sync::OnceLock<Files> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("libtensor-statuses-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = |name: &str| {
            std::ffi::CString::new(dir.join(name).to_str().unwrap().to_string()).unwrap()
        };
        let f = Files {
            npy: c("a.npy"),
            st: c("a.safetensors"),
            garbage: c("garbage.bin"),
            missing: c("missing.npy"),
            dir: std::ffi::CString::new(dir.to_str().unwrap().to_string()).unwrap(),
            out: c("out.bin"),
            fifo: c("fifo"),
            crafted: crafted_files()
                .into_iter()
                .map(|(name, bytes)| {
                    std::fs::write(dir.join(name), bytes).unwrap();
                    (name, c(name))
                })
                .collect(),
        };
        let _ = std::fs::remove_file(dir.join("fifo"));
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(f.fifo.as_ptr(), 0o600) }, 0, "mkfifo");
        std::fs::write(dir.join("garbage.bin"), [0x93u8, b'N', b'U', 0xff, 7, 7, 7]).unwrap();
        let mut a: *mut tensor_t = null_mut();
        let mut b: *mut tensor_t = null_mut();
        assert!(ok(tensor_arange(12, tensor_dtype_t(6), &mut a)));
        assert!(ok(tensor_arange(5, tensor_dtype_t(4), &mut b)));
        assert!(ok(tensor_save_npy(f.npy.as_ptr(), a)));
        let names = [c"a".as_ptr(), c"b".as_ptr()];
        let ts = [a as *const tensor_t, b as *const tensor_t];
        let (keys, values) = ([c"format".as_ptr()], [c"pt".as_ptr()]);
        assert!(ok(tensor_save_safetensors_metadata(
            f.st.as_ptr(),
            names.as_ptr(),
            ts.as_ptr(),
            2,
            keys.as_ptr(),
            values.as_ptr(),
            1
        )));
        tensor_release(a);
        tensor_release(b);
        f
    })
}

impl Ctx {
    fn path(&mut self) -> *const std::ffi::c_char {
        let f = files();
        match self.rng.below(7) {
            0 => null(),
            1 => f.npy.as_ptr(),
            2 => f.st.as_ptr(),
            3 => f.garbage.as_ptr(),
            4 => f.missing.as_ptr(),
            5 => f.fifo.as_ptr(),
            _ => f.dir.as_ptr(),
        }
    }
    /// Where a save may write: never over the input files.
    fn save_path(&mut self) -> *const std::ffi::c_char {
        let f = files();
        self.rng.pick(&[
            f.out.as_ptr(),
            f.out.as_ptr(),
            f.dir.as_ptr(),
            f.fifo.as_ptr(),
            c"/nonexistent-libtensor-dir/x".as_ptr(),
            null(),
        ])
    }
    fn map_mode(&mut self) -> tensor_map_mode_t {
        tensor_map_mode_t(self.rng.pick(&[0, 1, 2, 3, -1, i32::MAX]))
    }
    fn file_offset(&mut self) -> u64 {
        self.rng.pick(&[0u64, 1, 8, 4095, 4096, 1 << 40, u64::MAX])
    }
    fn file_len(&mut self) -> u64 {
        self.rng
            .pick(&[0u64, 1, 16, 128, 1 << 40, TENSOR_MAP_TO_END])
    }
    /// A loaded `.safetensors` handle (release it), or NULL.
    fn safetensors(&mut self) -> *mut tensor_safetensors_t {
        if self.rng.one_in(5) {
            return null_mut();
        }
        // Fails (f stays NULL) in the rounds with a failing allocator.
        let mut f: *mut tensor_safetensors_t = null_mut();
        let _ = tensor_load_safetensors(files().st.as_ptr(), &mut f);
        f
    }
}

// ---- copy executors ------------------------------------------------------------------

/// Runs the parts on the calling thread.
unsafe extern "C" fn inline_executor(
    _: *mut c_void,
    n: usize,
    task: tensor_task_fn,
    task_ctx: *mut c_void,
) {
    for k in 0..n {
        // SAFETY: the library's task with its ctx, while the copy waits.
        unsafe { task.expect("a task")(task_ctx, k) };
    }
}

/// The status of tensor_set_copy_executor called from inside [`setter_inside`].
static SETTER_INSIDE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Calls the setter (which must refuse), then runs the parts.
unsafe extern "C" fn setter_inside(
    ctx: *mut c_void,
    n: usize,
    task: tensor_task_fn,
    task_ctx: *mut c_void,
) {
    SETTER_INSIDE.store(
        tensor_set_copy_executor(None, null_mut()).0,
        Ordering::SeqCst,
    );
    // SAFETY: as inline_executor's.
    unsafe { inline_executor(ctx, n, task, task_ctx) };
}

// ---- the special subjects of the targeted calls (each call releases what it makes) -------

fn made(s: tensor_status_t, t: *mut tensor_t) -> *mut tensor_t {
    assert!(ok(s), "making a special subject failed: {}", last_error());
    t
}

/// [2^61, 3] float64 expanded from [1, 3]: its element count fits int64, its bytes do not.
fn huge_expanded() -> *mut tensor_t {
    let (mut row, mut t) = (null_mut(), null_mut());
    made(
        tensor_zeros([1i64, 3].as_ptr(), 2, tensor_dtype_t(7), &mut row),
        row,
    );
    made(tensor_expand(row, [1i64 << 61, 3].as_ptr(), 2, &mut t), t);
    tensor_release(row);
    t
}

/// 64 dims of size 1: the most a tensor has.
fn dims64() -> *mut tensor_t {
    let mut t = null_mut();
    made(
        tensor_ones([1i64; 64].as_ptr(), 64, tensor_dtype_t(6), &mut t),
        t,
    )
}

/// A transposed [2, 3] on a CUDA device (never dereferenced): a copy of it needs the
/// device.
fn cuda_transposed() -> *mut tensor_t {
    let (mut d, mut t) = (null_mut(), null_mut());
    let cuda = tensor_device_t {
        device_type: 2,
        device_id: 0,
    };
    let p = 0x1000 as *mut c_void;
    made(
        tensor_from_blob(
            p,
            [2i64, 3].as_ptr(),
            null(),
            2,
            tensor_dtype_t(6),
            cuda,
            None,
            null_mut(),
            &mut d,
        ),
        d,
    );
    made(tensor_transpose(d, 0, 1, &mut t), t);
    tensor_release(d);
    t
}

/// float64 of `sizes` (16 elements) whose storage was then shrunk to 8 bytes.
fn shrunk(sizes: &[i64]) -> *mut tensor_t {
    let (mut a, mut t) = (null_mut(), null_mut());
    made(tensor_arange(16, tensor_dtype_t(7), &mut a), a);
    made(
        tensor_view(a, sizes.as_ptr(), sizes.len() as i64, &mut t),
        t,
    );
    assert!(ok(storage_resize(tensor_storage(a), 8)));
    tensor_release(a);
    t
}

/// A [0, 2^62] float64 with unit strides: no elements, but viewed as bytes its last size
/// overflows.
fn empty_wide() -> *mut tensor_t {
    let (mut s, mut t) = (null_mut(), null_mut());
    assert!(ok(storage_new(0, null(), &mut s)));
    let st = tensor_from_storage(
        s,
        0,
        [0i64, 1 << 62].as_ptr(),
        [1i64, 1].as_ptr(),
        2,
        tensor_dtype_t(7),
        &mut t,
    );
    storage_release(s);
    made(st, t)
}

/// A float64 tensor of sizes [0].
fn empty_1d() -> *mut tensor_t {
    let mut t = null_mut();
    let st = tensor_empty([0i64].as_ptr(), 1, tensor_dtype_t(7), &mut t);
    made(st, t)
}

/// A float64 tensor of sizes [1].
fn one_element() -> *mut tensor_t {
    let mut t = null_mut();
    let st = tensor_zeros([1i64].as_ptr(), 1, tensor_dtype_t(7), &mut t);
    made(st, t)
}

/// Runs `f` with every Rust allocation of this thread failing (a targeted call).
fn exhausted<R>(f: impl FnOnce() -> R) -> R {
    let limit = tensor_set_cache_limit(0);
    IN_CALL.with(|c| c.set(true));
    let r = f();
    IN_CALL.with(|c| c.set(false));
    tensor_set_cache_limit(limit);
    r
}

/// Runs `f` with the library's default allocator failing (a targeted call).
fn allocator_failing<R>(f: impl FnOnce() -> R) -> R {
    let a = tensor_allocator_t {
        ctx: &FAIL_ALLOC as *const AtomicBool as *mut c_void,
        allocate: Some(test_allocate),
        deallocate: Some(test_deallocate),
    };
    let was = FAIL_ALLOC.swap(true, Ordering::Relaxed);
    assert!(ok(tensor_set_default_allocator(&a)));
    let r = f();
    FAIL_ALLOC.store(was, Ordering::Relaxed);
    assert!(ok(tensor_set_default_allocator(null())));
    r
}

/// Calls `f` on `t` (a special subject) and releases it; `f` makes a tensor in `*out`.
fn on_special(
    t: *mut tensor_t,
    f: impl FnOnce(*mut tensor_t, *mut *mut tensor_t) -> tensor_status_t,
) -> Option<Option<i32>> {
    let mut out = null_mut();
    let s = f(t, &mut out);
    drop_out(out);
    tensor_release(t);
    Some(Some(s.0))
}

/// `t.size(dim)`, or 1 when `dim` is out of range.
fn tensor_size_or(t: *mut tensor_t, dim: i64) -> i64 {
    let mut n = 1;
    let _ = tensor_size(t, dim, &mut n);
    n
}

fn last_error() -> String {
    // SAFETY: a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(tensor_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// What tensor_dlpack_managed_tensor_allocator passed to SetError (fixed buffers: the
/// callback runs inside the call, where allocations may be made to fail).
struct ErrorSink {
    calls: usize,
    kind: [u8; 64],
    message: [u8; 1024],
}

impl ErrorSink {
    fn text(b: &[u8]) -> String {
        let n = b.iter().position(|&x| x == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..n]).into_owned()
    }
    fn kind(&self) -> String {
        Self::text(&self.kind)
    }
}

/// dlpack.h's `SetError`: records into the ErrorSink at `ctx`.
unsafe extern "C" fn record_error(
    ctx: *mut c_void,
    kind: *const std::ffi::c_char,
    message: *const std::ffi::c_char,
) {
    // SAFETY: ctx is the caller's live ErrorSink; kind and message are C strings.
    let e = unsafe { &mut *(ctx as *mut ErrorSink) };
    e.calls += 1;
    for (dst, src) in [(&mut e.kind[..], kind), (&mut e.message[..], message)] {
        // SAFETY: a C string live for the call.
        let b = unsafe { CStr::from_ptr(src) }.to_bytes();
        let n = b.len().min(dst.len() - 1);
        dst[..n].copy_from_slice(&b[..n]);
        dst[n] = 0;
    }
}

/// One allocator call: its return value and what SetError received.
fn allocator_call(
    proto: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
    with_callback: bool,
) -> (i32, ErrorSink) {
    let mut e = ErrorSink {
        calls: 0,
        kind: [0; 64],
        message: [0; 1024],
    };
    let r = fdl::tensor_dlpack_managed_tensor_allocator(
        proto,
        out,
        &mut e as *mut ErrorSink as *mut c_void,
        if with_callback {
            Some(record_error)
        } else {
            None
        },
    );
    (r, e)
}

/// The allocator's contract after a call: 0 with a version {1, 3} managed tensor in `m`
/// (deleted here) and no SetError call, or -1 with `m` untouched and, with a callback, one
/// SetError call whose kind is that of a status its `Errors:` line documents and whose
/// message names it.
fn check_allocation(r: i32, m: *mut DLManagedTensorVersioned, e: &ErrorSink, with_callback: bool) {
    const NAME: &str = "tensor_dlpack_managed_tensor_allocator";
    if r == 0 {
        assert!(
            !m.is_null() && e.calls == 0,
            "{NAME}: success without a tensor"
        );
        // SAFETY: the managed tensor just made; its deleter runs once, here.
        unsafe {
            assert_eq!((*m).version, DLPackVersion { major: 1, minor: 3 });
            ((*m).deleter.unwrap())(m);
        }
        return;
    }
    assert_eq!(r, -1, "{NAME} returned {r}");
    assert!(m.is_null(), "{NAME}: *out written on failure");
    let msg = last_error();
    assert!(
        msg.starts_with(&format!("{NAME}: ")) || msg.starts_with("libtensor: out of memory"),
        "{msg}"
    );
    if !with_callback {
        assert_eq!(e.calls, 0);
        return;
    }
    assert_eq!(e.calls, 1, "{NAME}: SetError calls");
    assert_eq!(
        ErrorSink::text(&e.message),
        msg,
        "{NAME}: SetError's message"
    );
    static KINDS: std::sync::OnceLock<BTreeSet<&'static str>> = std::sync::OnceLock::new();
    let kinds = KINDS.get_or_init(|| {
        header()
            .documented(NAME)
            .unwrap()
            .iter()
            .filter(|s| *s != "OK")
            .map(|s| match s.as_str() {
                "DTYPE" => "TypeError",
                "OVERFLOW" => "OverflowError",
                "OUT_OF_MEMORY" => "MemoryError",
                "NULL_POINTER" | "INVALID_ARGUMENT" | "DEVICE" => "ValueError",
                _ => "RuntimeError",
            })
            .collect()
    });
    assert!(
        kinds.contains(e.kind().as_str()),
        "{NAME}: SetError kind {:?} is no documented status's ({kinds:?}): {msg}",
        e.kind()
    );
}

/// Releases a tensor written to an out-parameter.
fn drop_out(t: *mut tensor_t) {
    if !t.is_null() {
        tensor_release(t);
    }
}

/// `&mut out` or NULL.
fn out_ptr<T>(c: &mut Ctx, slot: &mut T) -> *mut T {
    if c.null_out() {
        null_mut()
    } else {
        slot
    }
}

/// Calls `name` once with hostile arguments. `None`: no driver for that name; `Some(None)`:
/// a function without a status; `Some(Some(s))`: the status it returned.
fn drive(name: &str, c: &mut Ctx) -> Option<Option<i32>> {
    // A call producing a tensor in `*out`.
    macro_rules! make {
        (|$o:ident| $call:expr) => {{
            let mut slot: *mut tensor_t = null_mut();
            let $o = out_ptr(c, &mut slot);
            let s: tensor_status_t = lib(|| $call);
            drop_out(slot);
            Some(Some(s.0))
        }};
    }
    macro_rules! plain {
        ($call:expr) => {{
            let _ = $call;
            Some(None)
        }};
    }
    match name {
        // library-wide
        "tensor_retain" => {
            let t = c.t();
            let r = tensor_retain(t);
            assert_eq!(r, t);
            tensor_release(r);
            Some(None)
        }
        "tensor_release" => {
            let t = c.t();
            tensor_release(tensor_retain(t));
            Some(None)
        }
        "tensor_use_count" => plain!(tensor_use_count(c.t())),
        "tensor_status_string" => {
            let code = c.rng.pick(&[-1, 0, 1, 5, 13, 14, 15, 99, 100, i32::MAX]);
            plain!(tensor_status_string(tensor_status_t(code)))
        }
        "tensor_last_error" => plain!(tensor_last_error()),
        "tensor_dtype_itemsize" => plain!(tensor_dtype_itemsize(c.dtype())),
        "tensor_dtype_name" => plain!(tensor_dtype_name(c.dtype())),
        "tensor_memory_stats" => {
            let mut st = tensor_memory_stats_t::default();
            st.struct_size = c
                .rng
                .pick(&[0usize, 4, 8, 16, std::mem::size_of_val(&st), 4096]);
            // A struct_size larger than the struct: the library may write that much.
            let mut big = [0u64; 512];
            let p = match c.rng.below(3) {
                0 => null_mut(),
                1 if st.struct_size <= std::mem::size_of_val(&st) => &mut st,
                _ => {
                    big[0] = st.struct_size as u64;
                    big.as_mut_ptr() as *mut tensor_memory_stats_t
                }
            };
            Some(Some(lib(|| tensor_memory_stats(p)).0))
        }
        "tensor_empty_cache" => plain!(tensor_empty_cache()),
        // memory controls (global state: each driver restores what it changed)
        "tensor_set_cache_limit" => {
            let v = c.rng.pick(&[0u64, 1, 4096, 1 << 21, 1 << 28, u64::MAX]);
            let prev = tensor_set_cache_limit(v);
            tensor_set_cache_limit(prev);
            Some(None)
        }
        "tensor_set_memory_tracking" | "tensor_memory_tracking_enabled" => {
            let v = c.rng.pick(&[0, 1, -1, i32::MAX]);
            let prev = tensor_set_memory_tracking(v);
            let _ = tensor_memory_tracking_enabled();
            tensor_set_memory_tracking(prev as i32);
            Some(None)
        }
        "tensor_memory_snapshot" => {
            // Targeted: a snapshot of a tracked storage with the heap exhausted
            // (OUT_OF_MEMORY).
            if c.case == Some(0) {
                let on = tensor_set_memory_tracking(1);
                let mut s: *mut storage_t = null_mut();
                assert!(ok(storage_new(64, null(), &mut s)));
                let mut infos: Vec<tensor_storage_info_t> = Vec::with_capacity(4);
                let mut count = 0usize;
                let out = infos.as_mut_ptr();
                let st = exhausted(|| tensor_memory_snapshot(out, 4, &mut count));
                storage_release(s);
                tensor_set_memory_tracking(on as i32);
                return Some(Some(st.0));
            }
            let on = tensor_set_memory_tracking(c.rng.pick(&[0, 1]));
            let mut infos: Vec<tensor_storage_info_t> = Vec::with_capacity(8);
            let cap = c.rng.pick(&[0usize, 1, 8]);
            let out = if c.rng.one_in(4) {
                null_mut()
            } else {
                infos.as_mut_ptr()
            };
            let mut count = 0usize;
            let cp = out_ptr(c, &mut count);
            let st = lib(|| tensor_memory_snapshot(out, cap, cp));
            tensor_set_memory_tracking(on as i32);
            Some(Some(st.0))
        }
        "tensor_set_copy_threads" => {
            let n = c.rng.pick(&[-1i64, 0, 1, 2, 256, 257, i64::MAX]);
            let mut prev = 1i64;
            let pp = if c.rng.one_in(2) {
                null_mut()
            } else {
                &mut prev as *mut i64
            };
            let st = lib(|| tensor_set_copy_threads(n, pp));
            let _ = tensor_set_copy_threads(1, null_mut());
            Some(Some(st.0))
        }
        "tensor_set_copy_executor" => {
            // Targeted: a setter called from inside the executor (INVALID_ARGUMENT): a
            // 16 MiB copy on 2 parts, whose executor calls the setter first.
            if c.case == Some(0) {
                let (mut a, mut b) = (null_mut(), null_mut());
                made(
                    tensor_zeros([1i64 << 21].as_ptr(), 1, tensor_dtype_t(7), &mut a),
                    a,
                );
                let _ = tensor_set_copy_threads(2, null_mut());
                assert!(ok(tensor_set_copy_executor(
                    Some(setter_inside),
                    null_mut()
                )));
                made(tensor_clone(a, tensor_memory_format_t(0), &mut b), b);
                assert!(ok(tensor_set_copy_executor(None, null_mut())));
                let _ = tensor_set_copy_threads(1, null_mut());
                tensor_release(a);
                tensor_release(b);
                return Some(Some(SETTER_INSIDE.load(Ordering::SeqCst)));
            }
            let ex = if c.rng.one_in(2) {
                None
            } else {
                Some(inline_executor as unsafe extern "C" fn(_, _, _, _))
            };
            let st = lib(|| tensor_set_copy_executor(ex, null_mut()));
            let _ = tensor_set_copy_executor(None, null_mut());
            Some(Some(st.0))
        }
        "tensor_copy_threads" => plain!(tensor_copy_threads()),
        "tensor_version_string" => plain!(tensor_version_string()),
        "tensor_abi_version" => plain!(tensor_abi_version()),
        // storages
        "storage_retain" => {
            let s = c.s();
            storage_release(storage_retain(s));
            Some(None)
        }
        "storage_release" => {
            let s = c.s();
            storage_release(storage_retain(s));
            Some(None)
        }
        "storage_use_count" => plain!(storage_use_count(c.s())),
        "storage_weak_count" => plain!(storage_weak_count(c.s())),
        "storage_weak_new"
        | "storage_weak_lock"
        | "storage_weak_expired"
        | "storage_weak_release" => {
            let s = c.s();
            let mut w: *mut storage_weak_t = null_mut();
            let o = out_ptr(c, &mut w);
            let st = lib(|| storage_weak_new(s, o));
            let _ = storage_weak_expired(w);
            storage_release(storage_weak_lock(w));
            storage_weak_release(w);
            if name == "storage_weak_new" {
                Some(Some(st.0))
            } else {
                Some(None)
            }
        }
        "storage_new" => {
            let n = c.nbytes();
            let mut a = tensor_allocator_t {
                ctx: &FAIL_ALLOC as *const AtomicBool as *mut c_void,
                allocate: Some(test_allocate),
                deallocate: Some(test_deallocate),
            };
            if c.rng.one_in(4) {
                a.deallocate = None;
            }
            let ap: *const tensor_allocator_t = if c.rng.one_in(2) { null() } else { &a };
            let mut s: *mut storage_t = null_mut();
            let o = out_ptr(c, &mut s);
            let st = lib(|| storage_new(n, ap, o));
            storage_release(s);
            Some(Some(st.0))
        }
        "storage_from_blob" => {
            let n = c.rng.pick(&[0usize, 8, 64, 1 << 62, usize::MAX]);
            let data = if c.rng.one_in(4) {
                null_mut()
            } else {
                c.buf.as_mut_ptr() as *mut c_void
            };
            let dev = c.device();
            let mut s: *mut storage_t = null_mut();
            let o = out_ptr(c, &mut s);
            let st = lib(|| storage_from_blob(data, n, dev, None, null_mut(), o));
            storage_release(s);
            Some(Some(st.0))
        }
        "storage_data_ptr" => plain!(storage_data_ptr(c.s())),

        // files and shared memory
        "storage_from_file" => {
            // Targeted: a region longer than the address space: OVERFLOW; a valid file
            // with the heap exhausted: OUT_OF_MEMORY (the mapping's bookkeeping).
            if let Some(k @ (0 | 1)) = c.case {
                let mut s: *mut storage_t = null_mut();
                let p = files().npy.as_ptr();
                let st = if k == 0 {
                    storage_from_file(p, 0, 1 << 63, TENSOR_MAP_READ_ONLY, &mut s)
                } else {
                    exhausted(|| {
                        storage_from_file(p, 0, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &mut s)
                    })
                };
                storage_release(s);
                return Some(Some(st.0));
            }
            let (p, off, n, m) = (c.path(), c.file_offset(), c.file_len(), c.map_mode());
            let mut s: *mut storage_t = null_mut();
            let o = out_ptr(c, &mut s);
            let st = lib(|| storage_from_file(p, off, n, m, o));
            storage_release(s);
            Some(Some(st.0))
        }
        "storage_from_fd" => {
            // Targeted: a region longer than the address space: OVERFLOW; a valid
            // descriptor with the heap exhausted: OUT_OF_MEMORY.
            if let Some(k @ (0 | 1)) = c.case {
                let file = std::fs::File::open(files().npy.to_str().unwrap()).unwrap();
                use std::os::fd::AsRawFd;
                let (fd, mut s) = (file.as_raw_fd(), null_mut());
                let st = if k == 0 {
                    storage_from_fd(fd, 0, 1 << 63, TENSOR_MAP_READ_ONLY, &mut s)
                } else {
                    exhausted(|| {
                        storage_from_fd(fd, 0, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &mut s)
                    })
                };
                storage_release(s);
                return Some(Some(st.0));
            }
            let file = std::fs::File::open(files().npy.to_str().unwrap()).unwrap();
            use std::os::fd::AsRawFd;
            let fd = c
                .rng
                .pick(&[-1, i32::MIN, 1 << 20, file.as_raw_fd(), file.as_raw_fd()]);
            let (off, n, m) = (c.file_offset(), c.file_len(), c.map_mode());
            let mut s: *mut storage_t = null_mut();
            let o = out_ptr(c, &mut s);
            let st = lib(|| storage_from_fd(fd, off, n, m, o));
            storage_release(s);
            Some(Some(st.0))
        }
        "storage_new_shared" => {
            c.exempt(
                name,
                "IO",
                "memfd_create, ftruncate or mmap failing otherwise than for memory (EMFILE, \
                 EPERM under a seccomp filter): not provoked, it would starve the whole test \
                 process of descriptors (1 << 50 bytes gives OUT_OF_MEMORY)",
            );
            let n = c.rng.pick(&[0usize, 1, 4096, 1 << 50, usize::MAX]);
            let mut s: *mut storage_t = null_mut();
            let o = out_ptr(c, &mut s);
            let st = lib(|| storage_new_shared(n, o));
            storage_release(s);
            Some(Some(st.0))
        }
        "storage_fd" => {
            let mut shared: *mut storage_t = null_mut();
            let s = if c.rng.one_in(2) {
                let _ = storage_new_shared(64, &mut shared);
                shared
            } else {
                c.s()
            };
            let mut fd = -1;
            let o = out_ptr(c, &mut fd);
            let st = lib(|| storage_fd(s, o));
            storage_release(shared);
            Some(Some(st.0))
        }
        "storage_is_mapped" => plain!(storage_is_mapped(c.s())),
        "tensor_load_npy" => {
            // Targeted: a datetime dtype (DTYPE), a shape overflowing (OVERFLOW), big-endian
            // data, which is copied, with the allocator failing (OUT_OF_MEMORY).
            if let Some(k @ 0..3) = c.case {
                let f = files();
                let mut t = null_mut();
                let st = match k {
                    0 => tensor_load_npy(f.crafted("npy_datetime"), TENSOR_MAP_READ_ONLY, &mut t),
                    1 => tensor_load_npy(f.crafted("npy_huge_shape"), TENSOR_MAP_READ_ONLY, &mut t),
                    _ => allocator_failing(|| {
                        tensor_load_npy(f.crafted("npy_big_endian"), TENSOR_MAP_PRIVATE, &mut t)
                    }),
                };
                drop_out(t);
                return Some(Some(st.0));
            }
            let (p, m) = (c.path(), c.map_mode());
            make!(|o| tensor_load_npy(p, m, o))
        }
        "tensor_save_npy" => {
            // Targeted: a tensor whose bytes overflow the address space (OVERFLOW).
            if c.case == Some(0) {
                let t = huge_expanded();
                let st = tensor_save_npy(files().out.as_ptr(), t);
                tensor_release(t);
                return Some(Some(st.0));
            }
            let p = c.save_path();
            let t = c.t();
            Some(Some(lib(|| tensor_save_npy(p, t)).0))
        }
        "tensor_load_safetensors" | "tensor_safetensors_load" => {
            // The function and its alias, driven alike.
            let load = if name == "tensor_load_safetensors" {
                tensor_load_safetensors
            } else {
                tensor_safetensors_load
            };
            // Targeted: F4 with an odd last dim (DTYPE), 65 dims (INVALID_ARGUMENT), a shape whose element
            // count overflows (OVERFLOW), a misaligned tensor, which is copied, with the
            // allocator failing (OUT_OF_MEMORY).
            if let Some(k @ 0..4) = c.case {
                let what = ["st_float4", "st_65_dims", "st_overflow", "st_misaligned"][k];
                let mut f: *mut tensor_safetensors_t = null_mut();
                let p = files().crafted(what);
                let st = if k == 3 {
                    allocator_failing(|| load(p, &mut f))
                } else {
                    load(p, &mut f)
                };
                tensor_safetensors_release(f);
                return Some(Some(st.0));
            }
            let p = c.path();
            let mut f: *mut tensor_safetensors_t = null_mut();
            let o = out_ptr(c, &mut f);
            let st = lib(|| load(p, o));
            tensor_safetensors_release(f);
            Some(Some(st.0))
        }
        "tensor_load_safetensors_mode" | "tensor_safetensors_load_mode" => {
            // The function and its alias, driven alike.
            let load = if name == "tensor_load_safetensors_mode" {
                tensor_load_safetensors_mode
            } else {
                tensor_safetensors_load_mode
            };
            // Targeted: F4 with an odd last dim (DTYPE), 65 dims (INVALID_ARGUMENT), a shape whose element
            // count overflows (OVERFLOW), a misaligned tensor mapped shared (DTYPE), and
            // copied with the allocator failing (OUT_OF_MEMORY), a non-string metadata
            // value (IO).
            if let Some(k @ 0..6) = c.case {
                let (what, mode) = [
                    ("st_float4", TENSOR_MAP_PRIVATE),
                    ("st_65_dims", TENSOR_MAP_READ_ONLY),
                    ("st_overflow", TENSOR_MAP_SHARED),
                    ("st_misaligned", TENSOR_MAP_SHARED),
                    ("st_misaligned", TENSOR_MAP_PRIVATE),
                    ("st_meta_int", TENSOR_MAP_PRIVATE),
                ][k];
                let mut f: *mut tensor_safetensors_t = null_mut();
                let p = files().crafted(what);
                let st = if k == 4 {
                    allocator_failing(|| load(p, mode, &mut f))
                } else {
                    load(p, mode, &mut f)
                };
                tensor_safetensors_release(f);
                return Some(Some(st.0));
            }
            let (p, m) = (c.path(), c.map_mode());
            let mut f: *mut tensor_safetensors_t = null_mut();
            let o = out_ptr(c, &mut f);
            let st = lib(|| load(p, m, o));
            tensor_safetensors_release(f);
            Some(Some(st.0))
        }
        "tensor_safetensors_metadata_count"
        | "tensor_safetensors_metadata_key"
        | "tensor_safetensors_metadata_value" => {
            let f = c.safetensors();
            let i = c.rng.pick(&[0usize, 1, 2, usize::MAX]);
            let _ = tensor_safetensors_metadata_count(f);
            let k = tensor_safetensors_metadata_key(f, i);
            let v = tensor_safetensors_metadata_value(f, i);
            assert_eq!(k.is_null(), v.is_null(), "a metadata key without its value");
            tensor_safetensors_release(f);
            Some(None)
        }
        "tensor_safetensors_release" => {
            tensor_safetensors_release(c.safetensors());
            Some(None)
        }
        "tensor_safetensors_count" | "tensor_safetensors_name" => {
            let f = c.safetensors();
            let i = c.rng.pick(&[0usize, 1, 2, usize::MAX]);
            let _ = tensor_safetensors_count(f);
            let _ = tensor_safetensors_name(f, i);
            tensor_safetensors_release(f);
            Some(None)
        }
        "tensor_safetensors_at" => {
            let f = c.safetensors();
            let i = c.rng.pick(&[0usize, 1, 2, usize::MAX]);
            let r = make!(|o| tensor_safetensors_at(f, i, o));
            tensor_safetensors_release(f);
            r
        }
        "tensor_safetensors_get" => {
            let f = c.safetensors();
            let name = c
                .rng
                .pick(&[c"a".as_ptr(), c"b".as_ptr(), c"nope".as_ptr(), null()]);
            let r = make!(|o| tensor_safetensors_get(f, name, o));
            tensor_safetensors_release(f);
            r
        }
        "tensor_save_safetensors" => {
            // Targeted: complex128, which the format lacks (DTYPE); tensors whose bytes
            // overflow the address space (OVERFLOW).
            if let Some(k @ 0..2) = c.case {
                let mut t = null_mut();
                if k == 0 {
                    made(
                        tensor_zeros([2i64].as_ptr(), 1, tensor_dtype_t(10), &mut t),
                        t,
                    );
                } else {
                    t = huge_expanded();
                }
                let names = [c"x".as_ptr()];
                let ts = [t as *const tensor_t];
                let st =
                    tensor_save_safetensors(files().out.as_ptr(), names.as_ptr(), ts.as_ptr(), 1);
                tensor_release(t);
                return Some(Some(st.0));
            }
            let p = c.save_path();
            let n = c.rng.below(4);
            let pool = [c"x".as_ptr(), c"y".as_ptr(), c"x".as_ptr(), null()];
            let names: Vec<*const std::ffi::c_char> = (0..n).map(|_| c.rng.pick(&pool)).collect();
            let ts: Vec<*const tensor_t> = (0..n).map(|_| c.t() as *const tensor_t).collect();
            let np = if c.rng.one_in(8) {
                null()
            } else {
                names.as_ptr()
            };
            let tp = if c.rng.one_in(8) { null() } else { ts.as_ptr() };
            Some(Some(lib(|| tensor_save_safetensors(p, np, tp, n)).0))
        }
        "tensor_save_safetensors_metadata" => {
            // Targeted: complex128 (DTYPE); tensors whose bytes overflow the address space
            // (OVERFLOW); a metadata key given twice, a key that is not UTF-8
            // (INVALID_ARGUMENT).
            if let Some(k @ 0..4) = c.case {
                let mut t = null_mut();
                if k == 0 {
                    made(
                        tensor_zeros([2i64].as_ptr(), 1, tensor_dtype_t(10), &mut t),
                        t,
                    );
                } else {
                    t = huge_expanded();
                }
                let names = [c"x".as_ptr()];
                let ts = [t as *const tensor_t];
                let keys = [
                    [c"k".as_ptr(), c"l".as_ptr()],
                    [c"k".as_ptr(), c"l".as_ptr()],
                    [c"k".as_ptr(), c"k".as_ptr()],
                    [c"\xff".as_ptr(), c"l".as_ptr()],
                ][k];
                let values = [c"v".as_ptr(), c"w".as_ptr()];
                let nt = if k < 2 { 1 } else { 0 };
                let st = tensor_save_safetensors_metadata(
                    files().out.as_ptr(),
                    names.as_ptr(),
                    ts.as_ptr(),
                    nt,
                    keys.as_ptr(),
                    values.as_ptr(),
                    2,
                );
                tensor_release(t);
                return Some(Some(st.0));
            }
            let p = c.save_path();
            let n = c.rng.below(3);
            let pool = [c"x".as_ptr(), c"y".as_ptr(), c"x".as_ptr(), null()];
            let names: Vec<*const std::ffi::c_char> = (0..n).map(|_| c.rng.pick(&pool)).collect();
            let ts: Vec<*const tensor_t> = (0..n).map(|_| c.t() as *const tensor_t).collect();
            let m = c.rng.below(4);
            let kpool = [
                c"format".as_ptr(),
                c"a".as_ptr(),
                c"".as_ptr(),
                c"a".as_ptr(),
                null(),
            ];
            let keys: Vec<*const std::ffi::c_char> = (0..m).map(|_| c.rng.pick(&kpool)).collect();
            let vpool = [c"pt".as_ptr(), c"".as_ptr(), c"\xc3".as_ptr(), null()];
            let values: Vec<*const std::ffi::c_char> = (0..m).map(|_| c.rng.pick(&vpool)).collect();
            let nullable = |rng: &mut Rng, p: *const *const std::ffi::c_char| {
                if rng.one_in(8) {
                    null()
                } else {
                    p
                }
            };
            let np = nullable(&mut c.rng, names.as_ptr());
            let kp = nullable(&mut c.rng, keys.as_ptr());
            let vp = nullable(&mut c.rng, values.as_ptr());
            let tp = if c.rng.one_in(8) { null() } else { ts.as_ptr() };
            Some(Some(
                lib(|| tensor_save_safetensors_metadata(p, np, tp, n, kp, vp, m)).0,
            ))
        }
        "storage_nbytes" => plain!(storage_nbytes(c.s())),
        "storage_device" => plain!(storage_device(c.s())),
        "storage_is_resizable" => plain!(storage_is_resizable(c.s())),
        "storage_resize" => {
            let s = c.s();
            let n = c.nbytes();
            Some(Some(lib(|| storage_resize(s, n)).0))
        }
        "storage_is_read_only" => plain!(storage_is_read_only(c.s())),
        "storage_mark_read_only" => {
            // Only on a storage of a fresh tensor (the subjects keep their kinds).
            // Over a local buffer: no allocator involved (one may be failing).
            let mut t = null_mut();
            let mut local = [0f32; 2];
            assert!(ok(tensor_from_blob(
                local.as_mut_ptr() as *mut c_void,
                [2i64].as_ptr(),
                null(),
                1,
                tensor_dtype_t(6),
                tensor_device_t {
                    device_type: 1,
                    device_id: 0
                },
                None,
                null_mut(),
                &mut t
            )));
            let s = if c.rng.one_in(5) {
                null_mut()
            } else {
                tensor_storage(t)
            };
            let st = lib(|| storage_mark_read_only(s));
            tensor_release(t);
            Some(Some(st.0))
        }
        "tensor_set_default_allocator" => {
            let mut a = tensor_allocator_t {
                ctx: &FAIL_ALLOC as *const AtomicBool as *mut c_void,
                allocate: Some(test_allocate),
                deallocate: Some(test_deallocate),
            };
            if c.rng.one_in(4) {
                a.allocate = None;
            }
            let ap: *const tensor_allocator_t = if c.rng.one_in(2) { null() } else { &a };
            Some(Some(lib(|| tensor_set_default_allocator(ap)).0))
        }
        // creation
        "tensor_empty" => {
            let (p, n) = c.alloc_list();
            let d = c.dtype();
            make!(|o| tensor_empty(p, n, d, o))
        }
        "tensor_storage_nbytes_needed" => {
            let (p, n) = c.list();
            let st = c.list.clone();
            let sp = if c.rng.one_in(10) {
                null()
            } else {
                st.as_ptr()
            };
            let off = c.v();
            let d = c.dtype();
            let mut v = 0usize;
            let o = out_ptr(c, &mut v);
            Some(Some(
                lib(|| tensor_storage_nbytes_needed(p, sp, n, off, d, o)).0,
            ))
        }
        "tensor_format_strides" => {
            let (p, n) = c.list();
            let f = c.fmt();
            let mut st = [0i64; 1024];
            let o = out_ptr(c, &mut st).cast::<i64>();
            Some(Some(lib(|| tensor_format_strides(p, n, f, o)).0))
        }
        "tensor_wrap_dim" => {
            let (d, n) = (c.v(), c.v());
            let mut v = 0i64;
            let o = out_ptr(c, &mut v);
            Some(Some(lib(|| tensor_wrap_dim(d, n, o)).0))
        }
        "tensor_empty_strided" => {
            let (p, n) = c.alloc_list();
            let st = c.list.clone();
            let d = c.dtype();
            let sp = if c.rng.one_in(10) {
                null()
            } else {
                st.as_ptr()
            };
            make!(|o| tensor_empty_strided(p, sp, n, d, o))
        }
        "tensor_zeros" => {
            let (p, n) = c.alloc_list();
            let d = c.dtype();
            make!(|o| tensor_zeros(p, n, d, o))
        }
        "tensor_ones" => {
            let (p, n) = c.alloc_list();
            let d = c.dtype();
            make!(|o| tensor_ones(p, n, d, o))
        }
        "tensor_full" => {
            let (p, n) = c.alloc_list();
            let d = c.dtype();
            let v = c.f();
            make!(|o| tensor_full(p, n, d, v, o))
        }
        "tensor_arange" => {
            let n = c
                .rng
                .pick(&[-1i64, 0, 1, 5, 1 << 40, 1 << 62, i64::MAX, i64::MIN]);
            let d = c.dtype();
            make!(|o| tensor_arange(n, d, o))
        }
        "tensor_from_blob" => {
            let (p, n) = c.list();
            let st: Vec<i64> = c.list.clone();
            let sp = if c.rng.one_in(3) { null() } else { st.as_ptr() };
            let d = c.dtype();
            let dev = c.device();
            let data = if c.rng.one_in(6) {
                null_mut()
            } else {
                c.buf.as_mut_ptr() as *mut c_void
            };
            // Never read: the tensor is released at once.
            make!(|o| tensor_from_blob(data, p, sp, n, d, dev, None, null_mut(), o))
        }
        "tensor_from_blob_bytes" => {
            let (p, n) = c.list();
            // Byte strides: element-like values, some scaled by an item size, some odd.
            let mul = c.rng.pick(&[1i64, 2, 4, 8, 3]);
            let st: Vec<i64> = c.list.iter().map(|&v| v.saturating_mul(mul)).collect();
            let sp = if c.rng.one_in(3) { null() } else { st.as_ptr() };
            let d = c.dtype();
            let dev = c.device();
            let skew = c.rng.pick(&[0usize, 0, 1, 2, 4]);
            let data = if c.rng.one_in(6) {
                null_mut()
            } else {
                // SAFETY: stays inside buf; never read (the tensor is released at once).
                unsafe { (c.buf.as_mut_ptr() as *mut u8).add(skew) as *mut c_void }
            };
            make!(|o| tensor_from_blob_bytes(data, p, sp, n, d, dev, None, null_mut(), o))
        }
        "tensor_from_storage" => {
            let s = c.s();
            let off = c.v();
            let (p, n) = c.list();
            let st: Vec<i64> = c.list.clone();
            let sp = if c.rng.one_in(3) { null() } else { st.as_ptr() };
            let d = c.dtype();
            make!(|o| tensor_from_storage(s, off, p, sp, n, d, o))
        }
        // accessors
        "tensor_ndim" => plain!(tensor_ndim(c.t())),
        "tensor_sizes" => plain!(tensor_sizes(c.t())),
        "tensor_strides" => plain!(tensor_strides(c.t())),
        "tensor_size" | "tensor_stride" => {
            let t = c.t();
            let d = c.v();
            let mut v = 0i64;
            let o = out_ptr(c, &mut v);
            let f = if name == "tensor_size" {
                tensor_size
            } else {
                tensor_stride
            };
            Some(Some(lib(|| f(t, d, o)).0))
        }
        "tensor_storage_offset" => plain!(tensor_storage_offset(c.t())),
        "tensor_numel" => plain!(tensor_numel(c.t())),
        "tensor_dtype" => plain!(tensor_dtype(c.t())),
        "tensor_itemsize" => plain!(tensor_itemsize(c.t())),
        "tensor_nbytes" => plain!(tensor_nbytes(c.t())),
        "tensor_device" => plain!(tensor_device(c.t())),
        "tensor_data_ptr" => plain!(tensor_data_ptr(c.t())),
        "tensor_storage" => plain!(tensor_storage(c.t())),
        "tensor_shares_storage" => {
            let (a, b) = (c.t(), c.t());
            plain!(tensor_shares_storage(a, b))
        }
        "tensor_is_contiguous" => {
            let t = c.t();
            let f = c.fmt();
            plain!(tensor_is_contiguous(t, f))
        }
        "tensor_is_non_overlapping_and_dense" => plain!(tensor_is_non_overlapping_and_dense(c.t())),
        "tensor_suggest_memory_format" => plain!(tensor_suggest_memory_format(c.t())),
        "tensor_version" => plain!(tensor_version(c.t())),
        "tensor_bump_version" => {
            // Draws nothing from the round's stream (the drivers after it keep theirs): a
            // NULL, a fresh tensor and a read-only one in turn.
            static TURN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let turn = TURN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 3;
            if turn == 0 {
                return Some(Some(lib(|| tensor_bump_version(null_mut())).0));
            }
            let mut t = null_mut();
            if !ok(tensor_zeros([1i64].as_ptr(), 1, tensor_dtype_t(7), &mut t)) {
                // (the allocator is failing this round: the NULL call's status stands in)
                return Some(Some(lib(|| tensor_bump_version(null_mut())).0));
            }
            if turn == 2 {
                let _ = storage_mark_read_only(tensor_storage(t));
            }
            let s = lib(|| tensor_bump_version(t)).0;
            tensor_release(t);
            Some(Some(s))
        }
        "tensor_element_offset" => {
            let t = c.t();
            let (p, n) = c.index(t);
            let mut v = 0i64;
            let o = out_ptr(c, &mut v);
            Some(Some(lib(|| tensor_element_offset(t, p, n, o)).0))
        }
        "tensor_get_f64" => {
            let t = c.t();
            let (p, n) = c.index(t);
            let mut v = 0f64;
            let o = out_ptr(c, &mut v);
            Some(Some(lib(|| tensor_get_f64(t, p, n, o)).0))
        }
        "tensor_get_i64" => {
            let t = c.t();
            let (p, n) = c.index(t);
            let mut v = 0i64;
            let o = out_ptr(c, &mut v);
            Some(Some(lib(|| tensor_get_i64(t, p, n, o)).0))
        }
        "tensor_set_f64" => {
            let t = c.t();
            let (p, n) = c.index(t);
            let v = c.f();
            Some(Some(lib(|| tensor_set_f64(t, p, n, v)).0))
        }
        "tensor_set_i64" => {
            let t = c.t();
            let (p, n) = c.index(t);
            let v = c.v();
            Some(Some(lib(|| tensor_set_i64(t, p, n, v)).0))
        }
        "tensor_format" => {
            let t = c.t();
            let mut buf = [0u8; 64];
            let (p, cap) = match c.rng.below(3) {
                0 => (null_mut(), 0),
                1 => (buf.as_mut_ptr() as *mut std::ffi::c_char, 1),
                _ => (buf.as_mut_ptr() as *mut std::ffi::c_char, buf.len()),
            };
            plain!(tensor_format(t, p, cap))
        }
        // views
        "tensor_view" => {
            // Targeted: no elements viewed as [0, 2^62, 4], whose strides overflow (OVERFLOW);
            // a view of a tensor its storage was shrunk below (OUT_OF_BOUNDS).
            if c.case == Some(0) {
                return on_special(empty_1d(), |t, o| {
                    tensor_view(t, [0i64, 1 << 62, 4].as_ptr(), 3, o)
                });
            }
            if c.case == Some(1) {
                return on_special(shrunk(&[16]), |t, o| {
                    tensor_view(t, [4i64, 4].as_ptr(), 2, o)
                });
            }
            let t = c.t();
            let (p, n) = c.list();
            make!(|o| tensor_view(t, p, n, o))
        }
        "tensor_view_dtype" => {
            // Targeted: bytes of a [0, 2^62] float64: the last size overflows (OVERFLOW); a
            // valid view with the heap exhausted (OUT_OF_MEMORY).
            match c.case {
                Some(0) => {
                    return on_special(empty_wide(), |t, o| {
                        tensor_view_dtype(t, tensor_dtype_t(0), o)
                    })
                }
                Some(1) => {
                    let t = c.tensors[0];
                    let mut out = null_mut();
                    let st = exhausted(|| tensor_view_dtype(t, tensor_dtype_t(3), &mut out));
                    drop_out(out);
                    return Some(Some(st.0));
                }
                _ => {}
            }
            let t = c.t();
            let d = c.dtype();
            make!(|o| tensor_view_dtype(t, d, o))
        }
        "tensor_as_strided" => {
            let t = c.t();
            let (p, n) = c.list();
            let st: Vec<i64> = c.list.clone();
            let sp = if c.rng.one_in(10) {
                null()
            } else {
                st.as_ptr()
            };
            let off = c.v();
            make!(|o| tensor_as_strided(t, p, sp, n, off, o))
        }
        "tensor_transpose" => {
            let (t, a, b) = (c.t(), c.v(), c.v());
            make!(|o| tensor_transpose(t, a, b, o))
        }
        "tensor_transpose_2d" => {
            let t = c.t();
            make!(|o| tensor_transpose_2d(t, o))
        }
        "tensor_permute" => {
            let t = c.t();
            let (p, n) = if c.rng.one_in(2) && !t.is_null() {
                // A permutation, sometimes with a repeat or a wrapped dim.
                let nd = tensor_ndim(t);
                for i in 0..nd as usize {
                    c.list[i] = i as i64;
                }
                for i in (1..nd as usize).rev() {
                    let j = c.rng.below(i + 1);
                    c.list.swap(i, j);
                }
                if nd > 0 && c.rng.one_in(3) {
                    c.list[0] = c.v();
                }
                (c.list.as_ptr(), nd)
            } else {
                c.list()
            };
            make!(|o| tensor_permute(t, p, n, o))
        }
        "tensor_movedim" => {
            let (t, a, b) = (c.t(), c.v(), c.v());
            make!(|o| tensor_movedim(t, a, b, o))
        }
        "tensor_slice" => {
            // Targeted: a slice of a tensor its storage was shrunk below (OUT_OF_BOUNDS).
            if c.case == Some(0) {
                return on_special(shrunk(&[16]), |t, o| tensor_slice(t, 0, 2, 12, 3, o));
            }
            let (t, d, a, b) = (c.t(), c.v(), c.v(), c.v());
            let step = c.v();
            make!(|o| tensor_slice(t, d, a, b, step, o))
        }
        "tensor_narrow" => {
            let (t, d, a, b) = (c.t(), c.v(), c.v(), c.v());
            make!(|o| tensor_narrow(t, d, a, b, o))
        }
        "tensor_select" => {
            let (t, d, i) = (c.t(), c.v(), c.v());
            make!(|o| tensor_select(t, d, i, o))
        }
        "tensor_squeeze" => {
            let t = c.t();
            make!(|o| tensor_squeeze(t, o))
        }
        "tensor_squeeze_dim" => {
            let (t, d) = (c.t(), c.v());
            make!(|o| tensor_squeeze_dim(t, d, o))
        }
        "tensor_unsqueeze" => {
            // Targeted: one dim more than the 64 a tensor may have (INVALID_ARGUMENT).
            if c.case == Some(0) {
                return on_special(dims64(), |t, o| tensor_unsqueeze(t, 0, o));
            }
            let (t, d) = (c.t(), c.v());
            make!(|o| tensor_unsqueeze(t, d, o))
        }
        "tensor_expand" => {
            // Targeted: one element expanded to [2^62, 4], whose element count overflows
            // (OVERFLOW).
            if c.case == Some(0) {
                return on_special(one_element(), |t, o| {
                    tensor_expand(t, [1i64 << 62, 4].as_ptr(), 2, o)
                });
            }
            let t = c.t();
            let (p, n) = c.list();
            make!(|o| tensor_expand(t, p, n, o))
        }
        "tensor_unflatten" => {
            // Targeted: a view of a tensor its storage was shrunk below (OUT_OF_BOUNDS).
            if c.case == Some(0) {
                return on_special(shrunk(&[16]), |t, o| {
                    tensor_unflatten(t, 0, [4i64, -1].as_ptr(), 2, o)
                });
            }
            // Targeted: no elements split into [0, 2^62, 4], whose strides overflow
            // (OVERFLOW).
            if c.case == Some(1) {
                return on_special(empty_1d(), |t, o| {
                    tensor_unflatten(t, 0, [0i64, 1 << 62, 4].as_ptr(), 3, o)
                });
            }
            let (t, d) = (c.t(), c.v());
            let (p, n) = c.list();
            make!(|o| tensor_unflatten(t, d, p, n, o))
        }
        "tensor_diagonal" => {
            // Targeted: a view of a tensor its storage was shrunk below (OUT_OF_BOUNDS).
            if c.case == Some(0) {
                return on_special(shrunk(&[4, 4]), |t, o| tensor_diagonal(t, 0, 0, 1, o));
            }
            let (t, k, a, b) = (c.t(), c.v(), c.v(), c.v());
            make!(|o| tensor_diagonal(t, k, a, b, o))
        }
        "tensor_unfold" => {
            let (t, d, a, b) = (c.t(), c.v(), c.v(), c.v());
            make!(|o| tensor_unfold(t, d, a, b, o))
        }
        "tensor_alias" => {
            let t = c.t();
            make!(|o| tensor_alias(t, o))
        }
        "tensor_detach" => {
            let t = c.t();
            make!(|o| tensor_detach(t, o))
        }
        // copies
        "tensor_empty_like" => {
            // Targeted: a tensor whose bytes overflow the address space (OVERFLOW).
            if c.case == Some(0) {
                return on_special(huge_expanded(), |t, o| {
                    tensor_empty_like(t, tensor_memory_format_t(1), o)
                });
            }
            let (t, f) = (c.t(), c.fmt());
            make!(|o| tensor_empty_like(t, f, o))
        }
        "tensor_reshape" => {
            // Targeted: a reshape that must copy a tensor whose bytes overflow the address
            // space (OVERFLOW), or a tensor on a device (DEVICE).
            match c.case {
                Some(0) => {
                    return on_special(huge_expanded(), |t, o| {
                        tensor_reshape(t, [-1i64].as_ptr(), 1, o)
                    })
                }
                Some(1) => {
                    return on_special(cuda_transposed(), |t, o| {
                        tensor_reshape(t, [6i64].as_ptr(), 1, o)
                    })
                }
                _ => {}
            }
            let t = c.t();
            let (p, n) = c.alloc_list();
            make!(|o| tensor_reshape(t, p, n, o))
        }
        "tensor_flatten" => {
            // Targeted: as tensor_reshape (OVERFLOW, DEVICE).
            match c.case {
                Some(0) => return on_special(huge_expanded(), |t, o| tensor_flatten(t, 0, -1, o)),
                Some(1) => return on_special(cuda_transposed(), |t, o| tensor_flatten(t, 0, 1, o)),
                _ => {}
            }
            let (t, a, b) = (c.t(), c.v(), c.v());
            make!(|o| tensor_flatten(t, a, b, o))
        }
        "tensor_contiguous" => {
            // Targeted: a copy of a tensor whose bytes overflow the address space (OVERFLOW),
            // of a non-contiguous tensor on a device (DEVICE).
            match c.case {
                Some(0) => {
                    return on_special(huge_expanded(), |t, o| {
                        tensor_contiguous(t, tensor_memory_format_t(0), o)
                    })
                }
                Some(1) => {
                    return on_special(cuda_transposed(), |t, o| {
                        tensor_contiguous(t, tensor_memory_format_t(0), o)
                    })
                }
                _ => {}
            }
            let (t, f) = (c.t(), c.fmt());
            make!(|o| tensor_contiguous(t, f, o))
        }
        "tensor_clone" => {
            // Targeted: a tensor whose bytes overflow the address space (OVERFLOW).
            if c.case == Some(0) {
                return on_special(huge_expanded(), |t, o| {
                    tensor_clone(t, tensor_memory_format_t(1), o)
                });
            }
            let (t, f) = (c.t(), c.fmt());
            make!(|o| tensor_clone(t, f, o))
        }
        "tensor_to_dtype" => {
            // Targeted: a tensor whose bytes overflow the address space (OVERFLOW).
            if c.case == Some(0) {
                return on_special(huge_expanded(), |t, o| {
                    tensor_to_dtype(t, tensor_dtype_t(6), o)
                });
            }
            let (t, d) = (c.t(), c.dtype());
            make!(|o| tensor_to_dtype(t, d, o))
        }
        "tensor_repeat" => {
            let t = c.t();
            let (p, n) = c.alloc_list();
            make!(|o| tensor_repeat(t, p, n, o))
        }
        "tensor_copy_affine_" => {
            let (a, b) = (c.t(), c.t());
            let dim = c.rng.pick(&[0i64, 1, 2, -1, -3, 7, i64::MIN]);
            // The caller's side of the contract: `n` values readable behind each pointer.
            let vals: Vec<f64> = (0..4096).map(|i| (i as f64) * 0.5 - 3.0).collect();
            let size = if a.is_null() {
                1
            } else {
                tensor_size_or(a, dim)
            };
            let n = c.rng.pick(&[1i64, 0, 2, 3, -1, size.min(4096)]);
            let scale = if c.rng.one_in(8) {
                null()
            } else {
                vals.as_ptr()
            };
            let shift = if c.rng.one_in(8) {
                null()
            } else {
                vals.as_ptr()
            };
            Some(Some(
                lib(|| tensor_copy_affine_(a, b, dim, scale, shift, n)).0,
            ))
        }
        "tensor_copy_affine_ex" => {
            let (a, b) = (c.t(), c.t());
            let dim = c.rng.pick(&[0i64, 1, 2, -1, -3, 7, i64::MIN]);
            let vals: Vec<f64> = (0..4096).map(|i| (i as f64) * 0.5 - 3.0).collect();
            let size = if a.is_null() {
                1
            } else {
                tensor_size_or(a, dim)
            };
            let n = c.rng.pick(&[1i64, 0, 2, 3, -1, size.min(4096)]);
            // Mostly in range (0, 1, 2 and the last of src's dim), sometimes not.
            let top = if b.is_null() {
                1
            } else {
                tensor_size_or(b, dim)
            };
            let index: Vec<i64> = (0..4096)
                .map(|i| match (i + c.rng.pick(&[0usize, 1, 2])) % 7 {
                    0 => top - 1,
                    1 => c.rng.pick(&[-1i64, top, i64::MAX, i64::MIN]),
                    k => (k as i64 - 2).min(top - 1),
                })
                .collect();
            // The caller's side of the contract: one index per index of dim.
            let src_index = if size > 4096 || c.rng.one_in(4) {
                null()
            } else {
                index.as_ptr()
            };
            let scale = if c.rng.one_in(8) {
                null()
            } else {
                vals.as_ptr()
            };
            Some(Some(
                lib(|| tensor_copy_affine_ex(a, b, dim, scale, vals.as_ptr(), n, src_index)).0,
            ))
        }
        "tensor_copy_yuv_affine_" => {
            // Targeted: a valid 4x6 I420 frame into [3, 4, 6] float32, then one thing wrong:
            // channel_dim 5 (INDEX), a y of [4, 8] (SHAPE), dst on CUDA (DEVICE), y's
            // storage shrunk (OUT_OF_BOUNDS), the heap exhausted (OUT_OF_MEMORY: the chroma
            // row buffer), an expanded dst (OVERLAP), a read-only dst (READ_ONLY).
            if let Some(k @ 0..7) = c.case {
                let zeros = |sizes: &[i64], dt: i32| {
                    let mut t = null_mut();
                    made(
                        tensor_zeros(
                            sizes.as_ptr(),
                            sizes.len() as i64,
                            tensor_dtype_t(dt),
                            &mut t,
                        ),
                        t,
                    )
                };
                let mut y = zeros(&[4, 6], 0);
                let (u, v) = (zeros(&[2, 3], 0), zeros(&[2, 3], 0));
                let mut d = zeros(&[3, 4, 6], 6);
                let mut cd = 0;
                match k {
                    0 => cd = 5,
                    1 => {
                        tensor_release(y);
                        y = zeros(&[4, 8], 0);
                    }
                    2 => {
                        tensor_release(d);
                        let cuda = tensor_device_t {
                            device_type: 2,
                            device_id: 0,
                        };
                        let p = 0x1000 as *mut c_void;
                        let sizes = [3i64, 4, 6];
                        d = null_mut();
                        let st = tensor_from_blob(
                            p,
                            sizes.as_ptr(),
                            null(),
                            3,
                            tensor_dtype_t(6),
                            cuda,
                            None,
                            null_mut(),
                            &mut d,
                        );
                        d = made(st, d);
                    }
                    3 => assert!(ok(storage_resize(tensor_storage(y), 8))),
                    5 => {
                        let one = zeros(&[3, 1, 6], 6);
                        tensor_release(d);
                        d = null_mut();
                        let st = tensor_expand(one, [3i64, 4, 6].as_ptr(), 3, &mut d);
                        d = made(st, d);
                        tensor_release(one);
                    }
                    6 => assert!(ok(storage_mark_read_only(tensor_storage(d)))),
                    _ => {}
                }
                let vals = [1.0f64, 1.0, 1.0];
                let color = TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED;
                let call = || {
                    tensor_copy_yuv_affine_(d, y, u, v, color, cd, vals.as_ptr(), vals.as_ptr(), 3)
                };
                let st = if k == 4 { exhausted(call) } else { call() };
                for t in [y, u, v, d] {
                    tensor_release(t);
                }
                return Some(Some(st.0));
            }
            let (d, y, u) = (c.t(), c.t(), c.t());
            let v = if c.rng.one_in(2) { null_mut() } else { c.t() };
            let color = c.rng.pick(&[
                TENSOR_YUV_BT601 | TENSOR_YUV_LIMITED,
                TENSOR_YUV_BT709 | TENSOR_YUV_FULL | TENSOR_YUV_BGR,
                TENSOR_YUV_BT2020 | TENSOR_YUV_LIMITED,
                0,
                TENSOR_YUV_BT601,
                -1,
            ]);
            let cd = c.rng.pick(&[0i64, 1, -1, 3, 9]);
            let n = c.rng.pick(&[1i64, 3, 2, 0]);
            let vals = [0.5f64, -1.0, 2.0];
            let scale = if c.rng.one_in(8) {
                null()
            } else {
                vals.as_ptr()
            };
            Some(Some(
                lib(|| tensor_copy_yuv_affine_(d, y, u, v, color, cd, scale, vals.as_ptr(), n)).0,
            ))
        }
        "tensor_copy_" => {
            let (a, b) = (c.t(), c.t());
            Some(Some(lib(|| tensor_copy_(a, b)).0))
        }
        // The functions and their aliases, driven alike.
        "tensor_fill_f64_" | "tensor_fill_f64" => {
            let fill = if name == "tensor_fill_f64_" {
                tensor_fill_f64_
            } else {
                tensor_fill_f64
            };
            let (t, v) = (c.t(), c.f());
            Some(Some(lib(|| fill(t, v)).0))
        }
        "tensor_fill_i64_" | "tensor_fill_i64" => {
            let fill = if name == "tensor_fill_i64_" {
                tensor_fill_i64_
            } else {
                tensor_fill_i64
            };
            let (t, v) = (c.t(), c.v());
            Some(Some(lib(|| fill(t, v)).0))
        }
        "tensor_equal" => {
            let (a, b) = (c.t(), c.t());
            let mut v = false;
            let o = out_ptr(c, &mut v);
            Some(Some(lib(|| tensor_equal(a, b, o)).0))
        }
        // DLPack
        "tensor_to_dlpack" => {
            let t = c.t();
            let mut m: *mut fdl::DLManagedTensorVersioned = null_mut();
            let o = out_ptr(c, &mut m);
            let st = lib(|| fdl::tensor_to_dlpack(t, o));
            if !m.is_null() {
                // SAFETY: our export; its deleter runs once.
                unsafe { ((*m).deleter.unwrap())(m) };
            }
            Some(Some(st.0))
        }
        "tensor_to_dlpack_unversioned" => {
            let t = c.t();
            let mut m: *mut fdl::DLManagedTensor = null_mut();
            let o = out_ptr(c, &mut m);
            let st = lib(|| fdl::tensor_to_dlpack_unversioned(t, o));
            if !m.is_null() {
                // SAFETY: as above.
                unsafe { ((*m).deleter.unwrap())(m) };
            }
            Some(Some(st.0))
        }
        "tensor_from_dlpack" => {
            // Targeted: a valid import with the heap exhausted (OUT_OF_MEMORY).
            if c.case == Some(0) {
                let mut shape = [4i64];
                let mut m = DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: null_mut(),
                    deleter: None,
                    flags: 0,
                    dl_tensor: DLTensor {
                        data: c.buf.as_mut_ptr() as *mut c_void,
                        device: DLDevice {
                            device_type: 1,
                            device_id: 0,
                        },
                        ndim: 1,
                        dtype: DLDataType {
                            code: 2,
                            bits: 64,
                            lanes: 1,
                        },
                        shape: shape.as_mut_ptr(),
                        strides: null_mut(),
                        byte_offset: 0,
                    },
                };
                let mut t: *mut tensor_t = null_mut();
                let st = exhausted(|| fdl::tensor_from_dlpack(&mut m, &mut t));
                drop_out(t);
                return Some(Some(st.0));
            }
            let (mut shape, mut strides) = ([0i64; 8], [0i64; 8]);
            let dl = c.dl_tensor(&mut shape, &mut strides);
            let mut m = DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: c.rng.pick(&[1u32, 1, 0, 2]),
                    minor: c.rng.pick(&[0u32, 1, 9]),
                },
                manager_ctx: null_mut(),
                deleter: if c.rng.one_in(4) {
                    None
                } else {
                    Some(count_versioned)
                },
                flags: c.rng.pick(&[0u64, 1, 2, 3, u64::MAX]),
                dl_tensor: dl,
            };
            let counted = m.deleter.is_some();
            let src = if c.rng.one_in(10) {
                null_mut()
            } else {
                &mut m as *mut DLManagedTensorVersioned
            };
            let mut slot: *mut tensor_t = null_mut();
            let o = out_ptr(c, &mut slot);
            let st = lib(|| fdl::tensor_from_dlpack(src, o));
            if ok(st) && counted {
                c.imports_ok += 1;
            }
            drop_out(slot); // the deleter runs here, while `m` is alive
            Some(Some(st.0))
        }
        "tensor_dlpack_exchange_api" => {
            let api = fdl::tensor_dlpack_exchange_api();
            assert!(!api.is_null() && api == fdl::tensor_dlpack_exchange_api());
            Some(None)
        }
        "tensor_dlpack_managed_tensor_allocator" => {
            // Returns 0 / -1, not a status: allocator_call checks the contract (SetError
            // exactly on failure, with the kind of a documented status).
            let (mut shape, mut strides) = ([0i64; 8], [0i64; 8]);
            let mut dl = c.dl_tensor(&mut shape, &mut strides);
            for x in shape.iter_mut().filter(|x| **x > 4 && **x < 1 << 40) {
                *x = 4;
            }
            // Half the calls with a valid dtype on the host, so that allocations happen.
            if c.rng.one_in(2) {
                dl.dtype = DLDataType {
                    code: 2,
                    bits: 32,
                    lanes: 1,
                };
                dl.device = DLDevice {
                    device_type: 1,
                    device_id: 0,
                };
            }
            let proto = if c.rng.one_in(10) {
                null_mut()
            } else {
                &mut dl as *mut DLTensor as *mut c_void
            };
            let mut m: *mut DLManagedTensorVersioned = null_mut();
            let o = out_ptr(c, &mut m);
            let with_callback = !c.rng.one_in(4);
            // Targeted: a valid prototype with the allocator failing, and with the heap
            // exhausted (OUT_OF_MEMORY, "MemoryError").
            match c.case {
                Some(0) => {
                    let mut four = [4i64];
                    dl = c.dl_tensor(&mut shape, &mut strides);
                    dl.ndim = 1;
                    dl.shape = four.as_mut_ptr();
                    dl.dtype = DLDataType {
                        code: 2,
                        bits: 32,
                        lanes: 1,
                    };
                    dl.device = DLDevice {
                        device_type: 1,
                        device_id: 0,
                    };
                    let p = &mut dl as *mut DLTensor as *mut c_void;
                    let (r, e) = allocator_failing(|| allocator_call(p, &mut m, true));
                    assert_eq!((r, e.kind()), (-1, "MemoryError".to_string()));
                    check_allocation(r, m, &e, true);
                    let (r, e) = exhausted(|| allocator_call(p, &mut m, true));
                    assert_eq!((r, e.kind()), (-1, "MemoryError".to_string()));
                    check_allocation(r, m, &e, true);
                }
                Some(_) => {}
                None => {
                    let (r, e) = lib(|| allocator_call(proto, o, with_callback));
                    check_allocation(
                        r,
                        if o.is_null() { null_mut() } else { m },
                        &e,
                        with_callback,
                    );
                }
            }
            Some(None)
        }
        "tensor_from_dlpack_unversioned" => {
            let (mut shape, mut strides) = ([0i64; 8], [0i64; 8]);
            let dl = c.dl_tensor(&mut shape, &mut strides);
            let mut m = DLManagedTensor {
                dl_tensor: dl,
                manager_ctx: null_mut(),
                deleter: if c.rng.one_in(4) {
                    None
                } else {
                    Some(count_unversioned)
                },
            };
            let counted = m.deleter.is_some();
            let src = if c.rng.one_in(10) {
                null_mut()
            } else {
                &mut m as *mut DLManagedTensor
            };
            let mut slot: *mut tensor_t = null_mut();
            let o = out_ptr(c, &mut slot);
            let st = lib(|| fdl::tensor_from_dlpack_unversioned(src, o));
            if ok(st) && counted {
                c.imports_ok += 1;
            }
            drop_out(slot);
            Some(Some(st.0))
        }
        _ => None,
    }
}

#[test]
fn every_status_returning_function_documents_its_errors() {
    let h = header();
    assert!(
        h.functions.len() >= 90,
        "parsed only {} functions",
        h.functions.len()
    );
    for name in ["NULL_POINTER", "OUT_OF_BOUNDS", "READ_ONLY", "INTERNAL"] {
        assert!(h.statuses.contains_key(name), "status {name} not parsed");
    }
    let undocumented: Vec<&str> = h
        .functions
        .iter()
        .filter(|f| f.returns_status() && f.errors_line.is_none())
        .map(|f| f.name.as_str())
        .collect();
    assert!(
        undocumented.is_empty(),
        "functions returning tensor_status_t without an 'Errors:' line: {undocumented:?}"
    );
    for f in h.functions.iter().filter(|f| f.returns_status()) {
        let d = h.documented(&f.name).unwrap();
        assert!(d.len() > 1, "{}: 'Errors:' names no status", f.name);
    }
    // The styles the header uses.
    let d = h.documented("tensor_zeros").unwrap();
    assert!(
        d.contains("OVERFLOW") && d.contains("NULL_POINTER"),
        "{d:?}"
    );
    let d = h.documented("tensor_set_i64").unwrap();
    assert!(d.contains("READ_ONLY") && d.contains("DEVICE"), "{d:?}");
    assert!(h
        .documented("tensor_squeeze")
        .unwrap()
        .contains("OUT_OF_MEMORY"));
    assert!(!h.documented("tensor_size").unwrap().contains("SHAPE"));
    let f = h.function("tensor_view").unwrap();
    assert_eq!(f.params.len(), 4, "{:?}", f.params);
    assert!(h.function("tensor_memory_stats_t").is_none());
}

/// The `c_api` fuzz target calls every exported function (in fuzz/fuzz_targets/c_api.rs or
/// the fuzz/common.rs it includes), except those its doc comment leaves out by name after
/// "left out:" (with the reason there).
#[test]
fn the_c_api_fuzz_target_calls_every_exported_function() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).expect(p);
    let target = read("fuzz/fuzz_targets/c_api.rs");
    let src = target.clone() + &read("fuzz/common.rs");
    let left_out: Vec<&str> = target
        .lines()
        .filter_map(|l| l.split_once("left out: ").map(|(_, r)| r))
        .flat_map(|r| r.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| w.starts_with("tensor_") || w.starts_with("storage_"))
        .collect();
    let never: Vec<String> = header()
        .functions
        .iter()
        .map(|f| f.name.clone())
        .filter(|n| !left_out.contains(&n.as_str()))
        .filter(|n| {
            !src.match_indices(&format!("{n}("))
                .any(|(i, _)| !src[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        })
        .collect();
    assert!(
        never.is_empty(),
        "exported functions the c_api fuzz target never calls (call them, or name them \
         after \"left out: \" in its doc comment with the reason): {never:?}"
    );
}

#[test]
fn parser_handles_the_header_styles() {
    let text = "#define TENSOR_ERR_NULL_POINTER 1\n#define TENSOR_ERR_SHAPE 4\n\
        #define TENSOR_ERR_IO 14\n\
        /**\n * A doc.\n * Errors: NULL_POINTER, SHAPE (numel\n * mismatch).\n */\n\
        tensor_status_t tensor_a(const struct tensor_t *t,\n    int64_t n);\n\
        /** Plain. Errors: as tensor_a, plus IO. */\ntensor_status_t tensor_b(void);\n\
        /** No errors line. */\ntensor_status_t tensor_c(void);\n\
        /** Accessor. */\nint64_t tensor_d(const struct tensor_t *t);\n\
        /** A struct. Errors: SHAPE. */\ntypedef struct tensor_x_t {\n  /** field */\n  int a;\n} tensor_x_t;\n\
        /** Errors: as tensor_zz. */\ntensor_status_t storage_e(void);\n";
    let h = parse_header(text);
    let names: Vec<&str> = h.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["tensor_a", "tensor_b", "tensor_c", "tensor_d", "storage_e"]
    );
    assert_eq!(h.statuses["IO"], 14);
    assert_eq!(
        h.documented("tensor_b").unwrap(),
        BTreeSet::from(["OK", "NULL_POINTER", "SHAPE", "IO"].map(String::from))
    );
    assert!(h.function("tensor_c").unwrap().errors_line.is_none());
    assert!(!h.function("tensor_d").unwrap().returns_status());
    assert_eq!(h.function("tensor_a").unwrap().params.len(), 2);
    assert!(h.documented("storage_e").is_err());
    assert_eq!(
        h.documented_codes("tensor_a").unwrap(),
        BTreeSet::from([0, 1, 4])
    );
}

/// Passes of targeted calls before the random rounds (see `Ctx::case`).
const TARGETED_CASES: usize = 7;

#[test]
fn hostile_calls_return_exactly_the_documented_statuses() {
    let h = header();
    let rounds: usize = std::env::var("TENSOR_HOSTILE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let mut c = Ctx::new(0x5EED_1234_ABCD_0001);
    // Which functions have drivers (probed on one round of subjects).
    c.build();
    let names: Vec<String> = h.functions.iter().map(|f| f.name.clone()).collect();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| drive(n, &mut c).is_none())
        .collect();
    c.release_all();
    assert!(
        missing.is_empty(),
        "exported functions without a driver in tests/documented_statuses.rs: {missing:?}"
    );
    let documented: BTreeMap<&str, BTreeSet<i32>> = h
        .functions
        .iter()
        .filter(|f| f.returns_status())
        .map(|f| (f.name.as_str(), h.documented_codes(&f.name).unwrap()))
        .collect();
    let mut seen: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    let mut failures: BTreeMap<(String, i32), String> = BTreeMap::new();
    let mut calls = 0u64;
    let deletes_before = IMPORT_DELETES.load(Ordering::SeqCst);
    // TENSOR_HOSTILE_TRACE=1 names each call before making it (to find one that aborts).
    let trace = std::env::var_os("TENSOR_HOSTILE_TRACE").is_some();
    let mut call = |name: &'static str, c: &mut Ctx| {
        calls += 1;
        if trace {
            eprintln!("{name}");
        }
        CURRENT.with(|c| c.set(name));
        let Some(Some(code)) = drive(name, c) else {
            return;
        };
        seen.entry(name).or_default().insert(code);
        let msg = if code != 0 {
            last_error()
        } else {
            String::new()
        };
        if !documented[name].contains(&code) {
            failures
                .entry((name.to_string(), code))
                .or_insert_with(|| msg.clone());
        }
        // With the heap exhausted the message may be the static out-of-memory one.
        let oom_text = msg.starts_with("libtensor: out of memory");
        if code != 0 && !oom_text && !msg.starts_with(&format!("{name}: ")) {
            failures
                .entry((format!("{name} (message does not name it)"), code))
                .or_insert(msg);
        }
    };
    let names: Vec<&'static str> = names.iter().map(|n| &*n.clone().leak()).collect();
    // The targeted passes: each driver's deterministic calls (statuses that random
    // arguments reach rarely or never), on one round of subjects.
    c.build();
    for k in 0..TARGETED_CASES {
        c.case = Some(k);
        for &name in &names {
            call(name, &mut c);
        }
    }
    c.case = None;
    c.release_all();
    for round in 0..rounds {
        // One round in 8 with a failing default allocator, one in 8 with an exhausted heap
        // (and the object cache off, so that every TensorImpl box is allocated).
        let failing = round % 8 == 7;
        let exhausted = round % 8 == 3;
        c.build();
        if failing {
            FAIL_ALLOC.store(true, Ordering::Relaxed);
            let a = tensor_allocator_t {
                ctx: &FAIL_ALLOC as *const AtomicBool as *mut c_void,
                allocate: Some(test_allocate),
                deallocate: Some(test_deallocate),
            };
            assert!(ok(tensor_set_default_allocator(&a)));
        }
        let limit = exhausted.then(|| tensor_set_cache_limit(0));
        HEAP_EXHAUSTED.with(|h| h.set(exhausted));
        for _ in 0..12 {
            for &name in &names {
                call(name, &mut c);
            }
        }
        HEAP_EXHAUSTED.with(|h| h.set(false));
        if let Some(l) = limit {
            tensor_set_cache_limit(l);
        }
        // Storages made by the failing allocator are freed by it after it recovers.
        FAIL_ALLOC.store(false, Ordering::Relaxed);
        assert!(ok(tensor_set_default_allocator(null())));
        c.release_all();
    }
    let deletes = IMPORT_DELETES.load(Ordering::SeqCst) - deletes_before;
    assert_eq!(
        deletes, c.imports_ok,
        "import deleters: {deletes} ran for {} successful imports",
        c.imports_ok
    );
    let report: Vec<String> = failures
        .iter()
        .map(|((f, code), msg)| format!("{f} returned {} ({msg})", h.status_name(*code)))
        .collect();
    let _ = std::fs::remove_dir_all(files().dir.to_str().unwrap());
    println!("{calls} hostile calls over {rounds} rounds");
    for (name, codes) in &seen {
        let names: Vec<String> = codes.iter().map(|&c| h.status_name(c)).collect();
        println!("  {name}: {}", names.join(" "));
    }
    assert!(
        report.is_empty(),
        "undocumented statuses:\n{}",
        report.join("\n")
    );
    // The other way: every documented status was produced, or its driver says why no call
    // can produce it.
    let mut unproduced = Vec::new();
    for (name, codes) in &documented {
        for &code in codes.iter().filter(|&&k| k != 0) {
            let key = (name.to_string(), h.status_name(code));
            let produced = seen.get(name).is_some_and(|s| s.contains(&code));
            match (produced, c.exempt.get(&key)) {
                (false, None) => unproduced.push(format!("{name}: {}", key.1)),
                (true, Some(why)) => unproduced.push(format!(
                    "{name}: {} is exempt ({why}) but was produced: drop the exemption",
                    key.1
                )),
                _ => {}
            }
        }
    }
    for ((name, status), why) in &c.exempt {
        let code = h.statuses.get(status).copied().unwrap_or(-1);
        if !documented
            .get(name.as_str())
            .is_some_and(|d| d.contains(&code))
        {
            unproduced.push(format!("{name}: exempt {status} ({why}) is not documented"));
        }
    }
    assert!(
        unproduced.is_empty(),
        "documented statuses no call produced (add a targeted call to the driver, exempt \
         it there with the reason, or remove it from the Errors: line):\n{}",
        unproduced.join("\n")
    );
}

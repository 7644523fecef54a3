//! Drives random sequences of C API calls, exactly as a C caller makes them (the
//! `extern "C"` functions of `tensor::ffi`, with raw handles), and checks after every call:
//!
//! * the status is one the header documents for that function, never INTERNAL;
//! * every success stays inside its storage: a fresh tensor fits its storage, a view of a
//!   tensor that fits fits too, a DLPack export describes only bytes of the live storage,
//!   get/set/copy_/fill succeed only on tensors that fit;
//! * every wrapped buffer's deleter (tensor_from_blob, storage_from_blob, imported DLPack)
//!   runs at most once, and exactly once after everything is released;
//! * nothing leaks: after the sequence every handle is released and the library's memory
//!   statistics and the counting allocator are back to zero;
//! * tensor_from_blob_bytes refuses byte strides that are not whole elements and
//!   misaligned data, and stores the byte strides as element strides;
//! * the library-wide knobs (copy threads, cache limit, memory tracking) answer what was
//!   set, and a memory snapshot lists no more storages than are live, biggest first;
//! * a shared-memory segment mapped again through its descriptor holds the same bytes;
//!   a world tensor saved as `.npy` / `.safetensors` to a scratch file loads back equal
//!   (every map mode), and what loads from those files joins the world.
//!
//! Every exported function of include/tensor.h is called somewhere here or in
//! fuzz/common.rs (tests/documented_statuses.rs checks that mechanically); none is left
//! out. The file loaders on arbitrary file contents are the `files` target's.
//!
//! Allocation failure is injected through `tensor_set_default_allocator` (an allocator that
//! fails its Nth call) and per storage (`storage_new` with that allocator).
//! The input is a byte string decoded op by op (see `Input`); the seed corpus is in
//! fuzz/corpus/c_api/.
#![no_main]

use ::tensor::ffi::copy::*;
use ::tensor::ffi::core::*;
use ::tensor::ffi::dlpack as dl;
use ::tensor::ffi::dlpack::*;
use ::tensor::ffi::files::*;
use ::tensor::ffi::memory::*;
use ::tensor::ffi::storage::*;
use ::tensor::ffi::tensor::*;
use ::tensor::ffi::view::*;
use ::tensor::ffi::*;
use libfuzzer_sys::fuzz_target;
use std::alloc::{alloc, dealloc, Layout};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

#[path = "../common.rs"]
mod common;
use common::*;

// ---- input decoding ----------------------------------------------------------------------

struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Input<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn pick<T: Copy>(&mut self, table: &[T]) -> T {
        table[self.byte() as usize % table.len()]
    }
    fn size(&mut self) -> i64 {
        self.pick(&[
            0,
            1,
            2,
            3,
            4,
            5,
            2,
            3,
            1,
            7,
            -1,
            -2,
            1 << 40,
            i64::MAX,
            i64::MIN,
            1 << 62,
        ])
    }
    fn stride(&mut self) -> i64 {
        self.pick(&[0, 1, 2, 3, 6, 12, 1, 4, -1, 1 << 40, i64::MAX, 1 << 61])
    }
    fn offset(&mut self) -> i64 {
        self.pick(&[0, 1, 2, 5, 0, 3, -1, 1 << 40, i64::MAX, i64::MIN])
    }
    fn dim(&mut self) -> i64 {
        self.pick(&[0, 1, -1, 2, -2, 0, 1, 3, -3, 4, 64, i64::MIN, i64::MAX])
    }
    fn ndim(&mut self) -> i64 {
        self.pick(&[0, 1, 2, 3, 1, 2, 4, 6, 65, -1])
    }
    fn dtype(&mut self) -> tensor_dtype_t {
        tensor_dtype_t(self.pick(&[
            0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 15, 27, 28, 29, 6, 7, 8, -1,
        ]))
    }
    fn nbytes(&mut self) -> usize {
        self.pick(&[
            0,
            1,
            8,
            16,
            24,
            64,
            100,
            1000,
            4096,
            1 << 40,
            usize::MAX,
            32,
        ])
    }
    fn list(&mut self, n: i64, f: fn(&mut Self) -> i64) -> Vec<i64> {
        (0..n.clamp(0, 8)).map(|_| f(self)).collect()
    }
    fn index<T>(&mut self, v: &[T]) -> Option<usize> {
        let b = self.byte() as usize;
        (!v.is_empty()).then(|| b % v.len())
    }
}

// ---- oracles -----------------------------------------------------------------------------

/// Byte range `[lo, hi)` relative to the storage's start that `t`'s elements occupy (None
/// for no elements).
fn extent(t: *const tensor_t) -> Option<(i128, i128)> {
    let nd = tensor_ndim(t) as usize;
    // SAFETY: live tensor handle: its sizes and strides arrays hold ndim values each.
    let (sizes, strides) = unsafe {
        (
            std::slice::from_raw_parts(tensor_sizes(t), nd),
            std::slice::from_raw_parts(tensor_strides(t), nd),
        )
    };
    if sizes.contains(&0) {
        return None;
    }
    let item = tensor_itemsize(t) as i128;
    let mut lo = tensor_storage_offset(t) as i128;
    let mut hi = lo;
    for (&n, &s) in sizes.iter().zip(strides) {
        let reach = (n as i128 - 1) * s as i128;
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    Some((lo * item, (hi + 1) * item))
}

/// Whether every element of `t` lies inside its storage as the storage is now.
fn fits(t: *const tensor_t) -> bool {
    match extent(t) {
        None => true,
        Some((lo, hi)) => lo >= 0 && hi <= storage_nbytes(tensor_storage(t)) as i128,
    }
}

fn must_fit(function: &str, t: *const tensor_t) {
    if !fits(t) {
        fail(format!(
            "{function} succeeded with a tensor outside its storage: sizes {:?} strides {:?} \
             offset {} itemsize {}, storage {} bytes",
            // SAFETY: t is a live tensor: tensor_sizes/tensor_strides give ndim values each.
            unsafe { std::slice::from_raw_parts(tensor_sizes(t), tensor_ndim(t) as usize) },
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(tensor_strides(t), tensor_ndim(t) as usize) },
            tensor_storage_offset(t),
            tensor_itemsize(t),
            storage_nbytes(tensor_storage(t))
        ));
    }
}

/// A DLPack export describes only bytes of `src`'s storage as it is now.
fn check_export(function: &str, src: *const tensor_t, t: &dl::DLTensor) {
    let nd = t.ndim as usize;
    // SAFETY: a successful export's DLTensor: shape holds ndim values.
    let shape = unsafe { std::slice::from_raw_parts(t.shape, nd) };
    if shape.contains(&0) {
        return;
    }
    // SAFETY: the export's strides are never NULL (the library always fills them) and hold ndim values.
    let strides = unsafe { std::slice::from_raw_parts(t.strides, nd) };
    let item = tensor_itemsize(src) as i128;
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&n, &s) in shape.iter().zip(strides) {
        let reach = (n as i128 - 1) * s as i128;
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    let st = tensor_storage(src);
    let base = storage_data_ptr(st) as i128;
    let first = t.data as i128 + t.byte_offset as i128;
    let (a, b) = (first + lo * item, first + (hi + 1) * item);
    if a < base || b > base + storage_nbytes(st) as i128 {
        fail(format!(
            "{function} exported bytes [{a:#x}, {b:#x}) outside the storage [{base:#x}, +{})",
            storage_nbytes(st)
        ));
    }
}

// ---- wrapped buffers and their deleters -------------------------------------------------

/// One buffer handed to the library with a deleter: the deleter must run exactly once.
struct Blob {
    calls: AtomicU32,
    data: *mut u8,
    len: usize,
    /// The library is handed `data + skew` (a misaligned pointer for from_blob_bytes).
    skew: usize,
}

const BLOB_ALIGN: usize = 64;

fn new_blob(len: usize) -> Box<Blob> {
    new_skewed_blob(len, 0)
}

fn new_skewed_blob(len: usize, skew: usize) -> Box<Blob> {
    let len = len + skew;
    // SAFETY: a non-zero size and a power-of-two alignment.
    let data = unsafe { alloc(Layout::from_size_align(len.max(1), BLOB_ALIGN).unwrap()) };
    assert!(!data.is_null());
    Box::new(Blob {
        calls: AtomicU32::new(0),
        data,
        len,
        skew,
    })
}

unsafe extern "C" fn blob_deleter(data: *mut c_void, ctx: *mut c_void) {
    let b = &*(ctx as *const Blob);
    if b.calls.fetch_add(1, Ordering::SeqCst) != 0 {
        fail(format!("deleter of blob {:p} ran twice", b.data));
    }
    if data as *mut u8 != b.data.wrapping_add(b.skew) {
        fail("deleter called with another pointer than the wrapped one".into());
    }
    dealloc(
        b.data,
        Layout::from_size_align(b.len.max(1), BLOB_ALIGN).unwrap(),
    );
}

// ---- a counting allocator that fails its Nth call ----------------------------------------

static LIVE_BLOCKS: AtomicI64 = AtomicI64::new(0);
/// Calls left before one fails (0: never fails).
static FAIL_IN: AtomicU64 = AtomicU64::new(0);
const ALLOC_ALIGN: usize = 64;
/// Larger requests fail, as a small machine would (keeps the fuzzer's memory bounded).
const ALLOC_LIMIT: usize = 1 << 24;

unsafe extern "C" fn counting_allocate(_ctx: *mut c_void, n: usize, align: usize) -> *mut c_void {
    if align > ALLOC_ALIGN || n > ALLOC_LIMIT {
        return std::ptr::null_mut();
    }
    let k = FAIL_IN.load(Ordering::Relaxed);
    if k != 0 {
        FAIL_IN.store(k - 1, Ordering::Relaxed);
        if k == 1 {
            return std::ptr::null_mut();
        }
    }
    let p = alloc(Layout::from_size_align(n, ALLOC_ALIGN).unwrap());
    if !p.is_null() {
        LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
    }
    p as *mut c_void
}

unsafe extern "C" fn counting_deallocate(_ctx: *mut c_void, p: *mut c_void, n: usize) {
    LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
    dealloc(
        p as *mut u8,
        Layout::from_size_align(n, ALLOC_ALIGN).unwrap(),
    );
}

const COUNTING: tensor_allocator_t = tensor_allocator_t {
    ctx: std::ptr::null_mut(),
    allocate: Some(counting_allocate),
    deallocate: Some(counting_deallocate),
};

// ---- the world: every handle the sequence holds ------------------------------------------

const MAX: usize = 12;
const CPU: tensor_device_t = tensor_device_t {
    device_type: 1,
    device_id: 0,
};

#[derive(Default)]
struct World {
    tensors: Vec<*mut tensor_t>,
    storages: Vec<*mut storage_t>,
    weaks: Vec<*mut storage_weak_t>,
    exports: Vec<*mut dl::DLManagedTensorVersioned>,
    exports_legacy: Vec<*mut dl::DLManagedTensor>,
    blobs: Vec<Box<Blob>>,
}

impl World {
    fn push_tensor(&mut self, function: &str, t: *mut tensor_t) {
        must_fit(function, t);
        self.tensors.push(t);
    }
    fn tensor(&self, i: &mut Input) -> Option<*mut tensor_t> {
        i.index(&self.tensors).map(|k| self.tensors[k])
    }
}

/// Sizes and strides (in elements) and their count, from the input.
fn geometry(i: &mut Input) -> (Vec<i64>, Vec<i64>, i64) {
    let n = i.ndim();
    (i.list(n, Input::size), i.list(n, Input::stride), n)
}

/// A view-producing call: the result of a view of a tensor that fits its storage fits too.
fn view_op(w: &mut World, i: &mut Input) {
    let Some(src) = w.tensor(i) else { return };
    let src_fits = fits(src);
    let mut out: *mut tensor_t = std::ptr::null_mut();
    let which = i.byte() % 19;
    let (d0, d1, d2) = (i.dim(), i.dim(), i.dim());
    let (sizes, strides, n) = geometry(i);
    let off = i.offset();
    let (name, s) = match which {
        0 => ("tensor_view", tensor_view(src, sizes.as_ptr(), n, &mut out)),
        1 => (
            "tensor_view_dtype",
            tensor_view_dtype(src, i.dtype(), &mut out),
        ),
        2 => (
            "tensor_as_strided",
            tensor_as_strided(src, sizes.as_ptr(), strides.as_ptr(), n, off, &mut out),
        ),
        3 => ("tensor_transpose", tensor_transpose(src, d0, d1, &mut out)),
        4 => ("tensor_transpose_2d", tensor_transpose_2d(src, &mut out)),
        5 => {
            let nd = tensor_ndim(src);
            let dims: Vec<i64> = if i.byte() % 4 == 0 {
                sizes.clone()
            } else {
                (0..nd).rev().collect()
            };
            (
                "tensor_permute",
                tensor_permute(src, dims.as_ptr(), dims.len() as i64, &mut out),
            )
        }
        6 => ("tensor_movedim", tensor_movedim(src, d0, d1, &mut out)),
        7 => (
            "tensor_slice",
            tensor_slice(src, d0, off, i.size(), i.stride(), &mut out),
        ),
        8 => (
            "tensor_narrow",
            tensor_narrow(src, d0, off, i.size(), &mut out),
        ),
        9 => ("tensor_select", tensor_select(src, d0, off, &mut out)),
        10 => ("tensor_squeeze", tensor_squeeze(src, &mut out)),
        11 => ("tensor_squeeze_dim", tensor_squeeze_dim(src, d0, &mut out)),
        12 => ("tensor_unsqueeze", tensor_unsqueeze(src, d0, &mut out)),
        13 => (
            "tensor_expand",
            tensor_expand(src, sizes.as_ptr(), n, &mut out),
        ),
        14 => (
            "tensor_unflatten",
            tensor_unflatten(src, d0, sizes.as_ptr(), n, &mut out),
        ),
        15 => (
            "tensor_diagonal",
            tensor_diagonal(src, off, d1, d2, &mut out),
        ),
        16 => (
            "tensor_unfold",
            tensor_unfold(src, d0, i.size(), i.stride(), &mut out),
        ),
        17 => ("tensor_alias", tensor_alias(src, &mut out)),
        _ => ("tensor_detach", tensor_detach(src, &mut out)),
    };
    check_status(name, s);
    if s == TENSOR_OK {
        if src_fits {
            must_fit(name, out);
        }
        w.tensors.push(out);
    }
}

/// Calls that may copy (a new tensor that must fit its storage, or `self` itself).
fn copy_op(w: &mut World, i: &mut Input) {
    let Some(src) = w.tensor(i) else { return };
    let src_fits = fits(src);
    let mut out: *mut tensor_t = std::ptr::null_mut();
    let fmt = tensor_memory_format_t(i.pick(&[0, 1, 2, 3, 0, 1, 7]));
    let (sizes, _, n) = geometry(i);
    if too_slow(tensor_numel(src) as i128)
        || too_slow(product(&sizes).saturating_mul(tensor_numel(src) as i128))
    {
        return;
    }
    let (name, s) = match i.byte() % 8 {
        0 => ("tensor_contiguous", tensor_contiguous(src, fmt, &mut out)),
        1 => ("tensor_clone", tensor_clone(src, fmt, &mut out)),
        2 => ("tensor_to_dtype", tensor_to_dtype(src, i.dtype(), &mut out)),
        3 => (
            "tensor_repeat",
            tensor_repeat(src, sizes.as_ptr(), n, &mut out),
        ),
        4 => (
            "tensor_reshape",
            tensor_reshape(src, sizes.as_ptr(), n, &mut out),
        ),
        5 => (
            "tensor_flatten",
            tensor_flatten(src, i.dim(), i.dim(), &mut out),
        ),
        6 => ("tensor_empty_like", tensor_empty_like(src, fmt, &mut out)),
        _ => {
            let mut text = [0u8; 64];
            tensor_format(src, text.as_mut_ptr() as *mut _, text.len());
            return;
        }
    };
    check_status(name, s);
    if s == TENSOR_OK {
        // A copy reads `src`: it must fit. A view (reshape) of a tensor that fits fits.
        if name != "tensor_reshape" && name != "tensor_flatten" && name != "tensor_empty_like" {
            if out != src && !src_fits {
                fail(format!("{name} copied from a tensor outside its storage"));
            }
        }
        if src_fits || out != src {
            must_fit(name, out);
        }
        w.tensors.push(out);
    }
}

fn same_sizes(a: *const tensor_t, b: *const tensor_t) -> bool {
    let (na, nb) = (tensor_ndim(a) as usize, tensor_ndim(b) as usize);
    na == nb
        // SAFETY: live tensor handles: each sizes array holds its tensor's ndim values.
        && unsafe {
            std::slice::from_raw_parts(tensor_sizes(a), na)
                == std::slice::from_raw_parts(tensor_sizes(b), nb)
        }
}

fn write_op(w: &mut World, i: &mut Input) {
    let (Some(dst), Some(src)) = (w.tensor(i), w.tensor(i)) else {
        return;
    };
    let idx = i.list(tensor_ndim(dst), Input::offset);
    if tensor_numel(dst) > 1 << 16 || tensor_numel(src) > 1 << 16 {
        return; // an expanded view: walking it takes long (fill collapses it; equal does not)
    }
    let (name, s) = match i.byte() % 10 {
        7 => {
            // one scale and shift per index of a dim of dst, or one for all (or a bad count)
            let dim = i.dim();
            let mut size = 0i64;
            let n = if tensor_size(dst, dim, &mut size) == TENSOR_OK && i.byte() % 2 == 0 {
                size
            } else {
                i.pick(&[1, 1, 2, 0, -1])
            };
            if n > 64 {
                return;
            }
            let params: Vec<f64> = (0..64).map(|k| k as f64 * 0.25 - 2.0).collect();
            let pick = i.byte() % 3;
            if pick == 0 {
                let s = tensor_copy_affine_(dst, src, dim, params.as_ptr(), params.as_ptr(), n);
                ("tensor_copy_affine_", s)
            } else if pick == 1 {
                // src as every plane (or NV12: no v): mostly refused, sometimes a frame
                let v = if i.byte() % 2 == 0 { src } else { std::ptr::null_mut() };
                let color = i.pick(&[0x11, 0x22, 0x133, 0x10, 0, -1]);
                let (sp, pp) = (params.as_ptr(), params.as_ptr());
                let s = tensor_copy_yuv_affine_(dst, src, src, v, color, dim, sp, pp, n.min(3));
                ("tensor_copy_yuv_affine_", s)
            } else {
                // a channel map: one index per index of dim (64 readable), some out of range
                let index: Vec<i64> = (0..64).map(|_| i.pick(&[0, 1, 2, 3, -1])).collect();
                let map = if (0..=64).contains(&size) && i.byte() % 4 != 0 {
                    index.as_ptr()
                } else {
                    std::ptr::null()
                };
                let (sp, pp) = (params.as_ptr(), params.as_ptr());
                let s = tensor_copy_affine_ex(dst, src, dim, sp, pp, n, map);
                ("tensor_copy_affine_ex", s)
            }
        }
        8 => {
            let mut v = 0i64;
            let s = tensor_get_i64(dst, idx.as_ptr(), idx.len() as i64, &mut v);
            ("tensor_get_i64", s)
        }
        9 => (
            "tensor_set_f64",
            tensor_set_f64(dst, idx.as_ptr(), idx.len() as i64, -0.5),
        ),
        0 => ("tensor_copy_", tensor_copy_(dst, src)),
        // the fill functions or their 0.x aliases (the same function under another name)
        1 if i.byte() % 2 == 0 => ("tensor_fill_f64_", tensor_fill_f64_(dst, 1.5)),
        1 => ("tensor_fill_f64", tensor_fill_f64(dst, 1.5)),
        2 if i.byte() % 2 == 0 => ("tensor_fill_i64_", tensor_fill_i64_(dst, -3)),
        2 => ("tensor_fill_i64", tensor_fill_i64(dst, -3)),
        3 => {
            let mut eq = false;
            ("tensor_equal", tensor_equal(dst, src, &mut eq))
        }
        4 => {
            let mut v = 0.0;
            let s = tensor_get_f64(dst, idx.as_ptr(), idx.len() as i64, &mut v);
            ("tensor_get_f64", s)
        }
        5 => (
            "tensor_set_i64",
            tensor_set_i64(dst, idx.as_ptr(), idx.len() as i64, 7),
        ),
        _ => {
            let mut o = 0;
            let s = tensor_element_offset(dst, idx.as_ptr(), idx.len() as i64, &mut o);
            check_status("tensor_element_offset", s);
            return;
        }
    };
    check_status(name, s);
    if s == TENSOR_OK {
        match name {
            // equal answers false for different sizes without reading (as torch.equal)
            "tensor_equal" if !same_sizes(dst, src) => {}
            "tensor_copy_" | "tensor_equal" | "tensor_copy_affine_" | "tensor_copy_affine_ex"
            | "tensor_copy_yuv_affine_" => {
                if !fits(dst) || !fits(src) {
                    fail(format!("{name} succeeded on a tensor outside its storage"));
                }
            }
            "tensor_fill_f64_" | "tensor_fill_i64_" | "tensor_fill_f64" | "tensor_fill_i64" => {
                if !fits(dst) {
                    fail(format!("{name} succeeded on a tensor outside its storage"));
                }
            }
            _ => {
                // the element itself is inside the storage
                let nd = tensor_ndim(dst) as usize;
                // SAFETY: dst is a live tensor: its strides array holds nd values.
                let st = unsafe { std::slice::from_raw_parts(tensor_strides(dst), nd) };
                let e = tensor_storage_offset(dst) as i128
                    + idx
                        .iter()
                        .zip(st)
                        .map(|(&a, &b)| a as i128 * b as i128)
                        .sum::<i128>();
                let item = tensor_itemsize(dst) as i128;
                let n = storage_nbytes(tensor_storage(dst)) as i128;
                // SAFETY: dst is a live tensor: its sizes array holds nd values.
                let sizes = unsafe { std::slice::from_raw_parts(tensor_sizes(dst), nd) };
                let wrapped = idx.iter().zip(sizes).any(|(&a, _)| a < 0);
                if !wrapped && (e < 0 || (e + 1) * item > n) {
                    fail(format!(
                        "{name} succeeded on an element outside the storage"
                    ));
                }
            }
        }
    }
}

/// Bytes a from_blob buffer needs for this layout: `Some(16)` when the layout is invalid
/// (the call must then fail without touching it), `None` when it is too big to allocate
/// here (the call is skipped: the library cannot know a caller's buffer is short).
fn blob_bytes(sizes: &[i64], strides: Option<&[i64]>, dt: tensor_dtype_t) -> Option<usize> {
    let item = tensor_dtype_itemsize(dt) as i128;
    if item == 0
        || sizes.iter().any(|&n| n < 0)
        || strides.is_some_and(|st| st.iter().any(|&s| s < 0))
    {
        return Some(16);
    }
    if sizes.contains(&0) {
        return Some(0);
    }
    let mut reach = 0i128;
    let mut contiguous = 1i128;
    for d in (0..sizes.len()).rev() {
        let st = strides.map_or(contiguous, |st| st[d] as i128);
        reach = reach.checked_add((sizes[d] as i128 - 1).checked_mul(st)?)?;
        contiguous = contiguous.checked_mul(sizes[d] as i128)?;
    }
    let n = reach.checked_add(1)?.checked_mul(item)?;
    (n <= 1 << 16).then_some(n as usize)
}

/// Elements that would really be allocated and walked: between 2^12 and 2^36 an operation
/// is skipped (it would succeed slowly; smaller is quick, larger fails quickly with
/// OUT_OF_MEMORY or OVERFLOW). Keeps executions fast.
fn too_slow(numel: i128) -> bool {
    numel > 1 << 12 && numel < 1 << 36
}

fn product(v: &[i64]) -> i128 {
    v.iter()
        .fold(1i128, |a, &n| a.saturating_mul((n as i128).max(0)))
}

fn create_op(w: &mut World, i: &mut Input) {
    let (sizes, strides, n) = geometry(i);
    let dt = i.dtype();
    let mut out: *mut tensor_t = std::ptr::null_mut();
    let reach = blob_bytes(&sizes, Some(&strides), dt).map_or(1 << 40, |b| b as i128);
    if too_slow(product(&sizes)) || too_slow(reach) {
        return;
    }
    let (name, s) = match i.byte() % 9 {
        7 => return from_blob_bytes(w, i, &sizes, &strides, dt),
        0 => (
            "tensor_empty",
            tensor_empty(sizes.as_ptr(), n, dt, &mut out),
        ),
        1 => (
            "tensor_zeros",
            tensor_zeros(sizes.as_ptr(), n, dt, &mut out),
        ),
        2 => ("tensor_ones", tensor_ones(sizes.as_ptr(), n, dt, &mut out)),
        3 => (
            "tensor_full",
            tensor_full(sizes.as_ptr(), n, dt, -2.5, &mut out),
        ),
        4 => ("tensor_arange", tensor_arange(i.size(), dt, &mut out)),
        5 => (
            "tensor_empty_strided",
            tensor_empty_strided(sizes.as_ptr(), strides.as_ptr(), n, dt, &mut out),
        ),
        6 => {
            // tensor_from_blob over a buffer as big as the layout says (the caller's side of
            // the contract), with a counted deleter.
            let strides_p = if i.byte() % 2 == 0 {
                std::ptr::null()
            } else {
                strides.as_ptr()
            };
            let Some(len) = blob_bytes(&sizes, (!strides_p.is_null()).then_some(&strides[..]), dt)
            else {
                return;
            };
            let b = new_blob(len);
            let ctx = &*b as *const Blob as *mut c_void;
            let s = tensor_from_blob(
                b.data as *mut c_void,
                sizes.as_ptr(),
                strides_p,
                n,
                dt,
                CPU,
                Some(blob_deleter),
                ctx,
                &mut out,
            );
            check_status("tensor_from_blob", s);
            if s == TENSOR_OK {
                w.push_tensor("tensor_from_blob", out);
                w.blobs.push(b);
            } else {
                if b.calls.load(Ordering::SeqCst) != 0 {
                    fail("tensor_from_blob failed but ran the deleter".into());
                }
                // SAFETY: the failed call did not take the blob (checked just above): its deleter runs once, here.
                unsafe { blob_deleter(b.data as *mut c_void, ctx) };
            }
            return;
        }
        _ => {
            let Some(k) = i.index(&w.storages) else {
                return;
            };
            let off = i.offset();
            let s = tensor_from_storage(
                w.storages[k],
                off,
                sizes.as_ptr(),
                strides.as_ptr(),
                n,
                dt,
                &mut out,
            );
            ("tensor_from_storage", s)
        }
    };
    check_status(name, s);
    if s == TENSOR_OK {
        w.push_tensor(name, out);
    }
}

/// tensor_from_blob_bytes over a buffer as big as the layout says, with byte strides that
/// are the element strides scaled by the item size (sometimes off by one byte) and data
/// sometimes misaligned: it succeeds exactly when neither is off, and a success fits.
fn from_blob_bytes(
    w: &mut World,
    i: &mut Input,
    sizes: &[i64],
    strides: &[i64],
    dt: tensor_dtype_t,
) {
    let item = tensor_dtype_itemsize(dt) as i64;
    let contiguous = i.byte() % 3 == 0;
    let Some(len) = blob_bytes(sizes, (!contiguous).then_some(strides), dt) else {
        return;
    };
    // (never for one-byte items: an odd stride is then a whole one, which the buffer, sized
    // for the element strides, would not hold)
    let odd_stride = !contiguous && item > 1 && i.byte() % 5 == 0;
    let byte_strides: Vec<i64> = strides
        .iter()
        .map(|&s| s.saturating_mul(item).saturating_add(odd_stride as i64))
        .collect();
    let skew = if i.byte() % 5 == 0 { 1 } else { 0 };
    let b = new_skewed_blob(len, skew);
    let data = b.data.wrapping_add(skew) as *mut c_void;
    let ctx = &*b as *const Blob as *mut c_void;
    let mut out: *mut tensor_t = std::ptr::null_mut();
    let s = tensor_from_blob_bytes(
        data,
        sizes.as_ptr(),
        if contiguous {
            std::ptr::null()
        } else {
            byte_strides.as_ptr()
        },
        sizes.len() as i64,
        dt,
        CPU,
        Some(blob_deleter),
        ctx,
        &mut out,
    );
    check_status("tensor_from_blob_bytes", s);
    if s == TENSOR_OK {
        // An odd byte stride, or a pointer one byte off, is refused unless the item is one
        // byte (every address is then aligned).
        let odd = !contiguous && byte_strides.iter().any(|&s| s % item.max(1) != 0);
        if item > 1 && (skew == 1 || odd) {
            fail(format!(
                "tensor_from_blob_bytes accepted byte strides {byte_strides:?} at {data:p} for \
                 dtype {} (item size {item})",
                dt.0
            ));
        }
        // The strides it stores are the byte strides in elements: the element strides.
        let nd = tensor_ndim(out) as usize;
        if !contiguous {
            // SAFETY: a live tensor: its strides array holds ndim values.
            let got = unsafe { std::slice::from_raw_parts(tensor_strides(out), nd) };
            if got != strides {
                fail(format!(
                    "tensor_from_blob_bytes: byte strides {byte_strides:?} became {got:?}, not {strides:?}"
                ));
            }
        }
        w.push_tensor("tensor_from_blob_bytes", out);
        w.blobs.push(b);
    } else {
        if b.calls.load(Ordering::SeqCst) != 0 {
            fail("tensor_from_blob_bytes failed but ran the deleter".into());
        }
        // SAFETY: the failed call did not take the blob: its deleter runs once, here.
        unsafe { blob_deleter(data, ctx) };
    }
}

fn storage_op(w: &mut World, i: &mut Input) {
    let mut out: *mut storage_t = std::ptr::null_mut();
    match i.byte() % 7 {
        0 => {
            let a = if i.byte() % 2 == 0 {
                std::ptr::null()
            } else {
                &COUNTING as *const _
            };
            let s = storage_new(i.nbytes(), a, &mut out);
            check_status("storage_new", s);
            if s == TENSOR_OK {
                w.storages.push(out);
            }
        }
        1 => {
            let len = i.pick(&[0usize, 8, 64, 100]);
            let b = new_blob(len);
            let ctx = &*b as *const Blob as *mut c_void;
            let s = storage_from_blob(
                b.data as *mut c_void,
                len,
                CPU,
                Some(blob_deleter),
                ctx,
                &mut out,
            );
            check_status("storage_from_blob", s);
            if s == TENSOR_OK {
                w.storages.push(out);
                w.blobs.push(b);
            } else {
                // SAFETY: the failed call did not take the blob: its deleter runs once, here.
                unsafe { blob_deleter(b.data as *mut c_void, ctx) };
            }
        }
        2 | 3 => {
            // resize: a tensor's storage or a storage handle
            let st = if i.byte() % 2 == 0 {
                match w.tensor(i) {
                    Some(t) => tensor_storage(t),
                    None => return,
                }
            } else {
                match i.index(&w.storages) {
                    Some(k) => w.storages[k],
                    None => return,
                }
            };
            let s = storage_resize(st, i.nbytes());
            check_status("storage_resize", s);
        }
        4 => {
            let Some(t) = w.tensor(i) else { return };
            check_status(
                "storage_mark_read_only",
                storage_mark_read_only(tensor_storage(t)),
            );
        }
        5 => {
            // weak references: new, lock, expire
            if let Some(k) = i.index(&w.storages) {
                let mut wk: *mut storage_weak_t = std::ptr::null_mut();
                let s = storage_weak_new(w.storages[k], &mut wk);
                check_status("storage_weak_new", s);
                if s == TENSOR_OK {
                    w.weaks.push(wk);
                }
            }
            if let Some(k) = i.index(&w.weaks) {
                let l = storage_weak_lock(w.weaks[k]);
                if !l.is_null() {
                    w.storages.push(l);
                }
            }
        }
        _ => {
            // a tensor's storage as a new handle
            if let Some(t) = w.tensor(i) {
                w.storages.push(storage_retain(tensor_storage(t)));
            }
        }
    }
}

fn dlpack_op(w: &mut World, i: &mut Input) {
    match i.byte() % 7 {
        0 => {
            let Some(t) = w.tensor(i) else { return };
            let mut m: *mut DLManagedTensorVersioned = std::ptr::null_mut();
            let s = tensor_to_dlpack(t, &mut m);
            check_status("tensor_to_dlpack", s);
            if s == TENSOR_OK {
                // SAFETY: m is the managed tensor the successful export just wrote.
                check_export("tensor_to_dlpack", t, unsafe { &(*m).dl_tensor });
                w.exports.push(m);
            }
        }
        1 => {
            let Some(t) = w.tensor(i) else { return };
            let mut m: *mut DLManagedTensor = std::ptr::null_mut();
            let s = tensor_to_dlpack_unversioned(t, &mut m);
            check_status("tensor_to_dlpack_unversioned", s);
            if s == TENSOR_OK {
                // SAFETY: m is the managed tensor the successful export just wrote.
                check_export("tensor_to_dlpack_unversioned", t, unsafe {
                    &(*m).dl_tensor
                });
                w.exports_legacy.push(m);
            }
        }
        2 => {
            // round trip: the import takes the export over on success
            let Some(k) = i.index(&w.exports) else { return };
            let mut out: *mut tensor_t = std::ptr::null_mut();
            let s = tensor_from_dlpack(w.exports[k] as *mut DLManagedTensorVersioned, &mut out);
            check_status("tensor_from_dlpack", s);
            if s == TENSOR_OK {
                w.exports.swap_remove(k);
                w.push_tensor("tensor_from_dlpack", out);
            }
        }
        3 => {
            let Some(k) = i.index(&w.exports_legacy) else {
                return;
            };
            let mut out: *mut tensor_t = std::ptr::null_mut();
            let s = tensor_from_dlpack_unversioned(
                w.exports_legacy[k] as *mut DLManagedTensor,
                &mut out,
            );
            check_status("tensor_from_dlpack_unversioned", s);
            if s == TENSOR_OK {
                w.exports_legacy.swap_remove(k);
                w.push_tensor("tensor_from_dlpack_unversioned", out);
            }
        }
        4 => {
            // the consumer is done with an export
            if let Some(k) = i.index(&w.exports) {
                let m = w.exports.swap_remove(k);
                // SAFETY: m is a live export this world still owns (just removed from the list): its deleter runs once.
                unsafe { ((*m).deleter.unwrap())(m) };
            }
        }
        5 => {
            if let Some(k) = i.index(&w.exports_legacy) {
                let m = w.exports_legacy.swap_remove(k);
                // SAFETY: m is a live export this world still owns (just removed from the list): its deleter runs once.
                unsafe { ((*m).deleter.unwrap())(m) };
            }
        }
        _ => allocate_op(w, i),
    }
}

/// What the DLPack allocator passed to SetError.
struct SetErrorLog {
    calls: usize,
    kind_ok: bool,
}

/// dlpack.h's `SetError`: counts the calls and checks the kind is a Python exception name.
unsafe extern "C" fn log_set_error(
    ctx: *mut c_void,
    kind: *const std::ffi::c_char,
    message: *const std::ffi::c_char,
) {
    // SAFETY: ctx is the caller's live SetErrorLog; kind and message are C strings.
    let (log, kind, message) = unsafe {
        (
            &mut *(ctx as *mut SetErrorLog),
            std::ffi::CStr::from_ptr(kind).to_bytes(),
            std::ffi::CStr::from_ptr(message).to_bytes(),
        )
    };
    log.calls += 1;
    log.kind_ok = kind.ends_with(b"Error") && !message.is_empty();
}

/// tensor_dlpack_managed_tensor_allocator (through tensor_dlpack_exchange_api's table) on
/// a prototype decoded from the input: 0 with a version {1, 3} host tensor of the
/// prototype's shape (kept as an export, so imports and deleters reach it), or -1 with
/// `*out` untouched and SetError called exactly once.
fn allocate_op(w: &mut World, i: &mut Input) {
    // SAFETY: the library's static table.
    let api = unsafe { &*tensor_dlpack_exchange_api() };
    if api.header.version != (DLPackVersion { major: 1, minor: 3 }) {
        fail("tensor_dlpack_exchange_api: version is not 1.3".to_string());
    }
    let ndim = i.ndim();
    let mut shape = i.list(ndim, Input::size);
    let mut strides = i.list(ndim, Input::stride);
    if too_slow(product(&shape)) {
        return;
    }
    let (code, bits, lanes) = i.pick(&[
        (2u8, 32u8, 1u16),
        (0, 64, 1),
        (6, 8, 1),
        (10, 8, 1),
        (17, 4, 2),
        (17, 4, 1),
        (2, 32, 4),
        (99, 8, 1),
    ]);
    let device_type = i.pick(&[1, 1, 1, 2, 18, 0]);
    let mut proto = dl::DLTensor {
        data: std::ptr::null_mut(),
        device: dl::DLDevice {
            device_type,
            device_id: 0,
        },
        ndim: ndim as i32,
        dtype: dl::DLDataType { code, bits, lanes },
        shape: if i.byte() % 8 == 0 {
            std::ptr::null_mut()
        } else {
            shape.as_mut_ptr()
        },
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // ndim 65 with 8 sizes: refused before the shape is read.
    let p = &mut proto as *mut dl::DLTensor as *mut c_void;
    let mut log = SetErrorLog {
        calls: 0,
        kind_ok: false,
    };
    let mut m: *mut DLManagedTensorVersioned = std::ptr::null_mut();
    let with_callback = i.byte() % 4 != 0;
    let r = tensor_dlpack_managed_tensor_allocator(
        p,
        &mut m,
        &mut log as *mut SetErrorLog as *mut c_void,
        if with_callback {
            Some(log_set_error)
        } else {
            None
        },
    );
    match r {
        0 => {
            if m.is_null() || log.calls != 0 {
                fail("tensor_dlpack_managed_tensor_allocator: 0 without a tensor".to_string());
            }
            // SAFETY: the managed tensor just made.
            let dl_t = unsafe { &(*m).dl_tensor };
            let nd = dl_t.ndim as usize;
            // SAFETY: a successful export's shape holds ndim values.
            let got = unsafe { std::slice::from_raw_parts(dl_t.shape, nd) };
            if got != &shape[..nd] || dl_t.device.device_type != 1 {
                fail(format!(
                    "tensor_dlpack_managed_tensor_allocator: shape {got:?} for {shape:?}"
                ));
            }
            w.exports.push(m);
        }
        -1 => {
            if !m.is_null() || log.calls != usize::from(with_callback) || (with_callback && !log.kind_ok) {
                fail(format!(
                    "tensor_dlpack_managed_tensor_allocator: -1 with {} SetError calls: {}",
                    log.calls,
                    last_error()
                ));
            }
        }
        r => fail(format!("tensor_dlpack_managed_tensor_allocator returned {r}")),
    }
}

/// Accessors: their answers agree with each other and with the storage.
fn inspect_op(w: &mut World, i: &mut Input) {
    let Some(t) = w.tensor(i) else { return };
    let d = i.dim();
    let nd = tensor_ndim(t);
    let (mut size, mut stride) = (0i64, 0i64);
    let s1 = tensor_size(t, d, &mut size);
    check_status("tensor_size", s1);
    let s2 = tensor_stride(t, d, &mut stride);
    check_status("tensor_stride", s2);
    if s1 == TENSOR_OK {
        let k = if d < 0 { d + nd } else { d };
        if s2 != TENSOR_OK
            || k < 0
            || k >= nd
            // SAFETY: 0 <= k < ndim of a live tensor: inside its sizes array.
            || size != unsafe { *tensor_sizes(t).add(k as usize) }
        {
            fail(format!(
                "tensor_size({d}) of a {nd}-dim tensor answered {size}"
            ));
        }
    }
    // The shape helpers answer for this tensor's own layout what it has: its wrapped dim,
    // the bytes it reaches (within its storage when it fits), its format's strides.
    let mut w_dim = -1i64;
    let sw = tensor_wrap_dim(d, nd, &mut w_dim);
    check_status("tensor_wrap_dim", sw);
    if (sw == TENSOR_OK) != (s1 == TENSOR_OK || nd == 0 && (d == 0 || d == -1)) {
        fail(format!("tensor_wrap_dim({d}, {nd}) and tensor_size disagree"));
    }
    let mut reach = 0usize;
    let sn = tensor_storage_nbytes_needed(
        tensor_sizes(t),
        tensor_strides(t),
        nd,
        tensor_storage_offset(t),
        tensor_dtype(t),
        &mut reach,
    );
    check_status("tensor_storage_nbytes_needed", sn);
    if sn == TENSOR_OK && fits(t) && reach > storage_nbytes(tensor_storage(t)) {
        fail(format!("a tensor that fits reaches {reach} bytes, past its storage"));
    }
    let fmt = tensor_memory_format_t(i.pick(&[0, 1, 2, 3, 9]));
    let mut fst = [0i64; 64];
    let sf = tensor_format_strides(tensor_sizes(t), nd, fmt, fst.as_mut_ptr());
    check_status("tensor_format_strides", sf);
    if sf == TENSOR_OK && tensor_is_contiguous(t, fmt) && tensor_numel(t) > 1 {
        // SAFETY: a live tensor's strides array has ndim entries.
        let own = unsafe { std::slice::from_raw_parts(tensor_strides(t), nd as usize) };
        // SAFETY: a live tensor's sizes array has ndim entries.
        let sizes = unsafe { std::slice::from_raw_parts(tensor_sizes(t), nd as usize) };
        let differ = (0..nd as usize).any(|k| sizes[k] > 1 && own[k] != fst[k]);
        if differ {
            fail(format!("tensor_format_strides({fmt:?}) {:?} differ from a contiguous tensor's {own:?}", &fst[..nd as usize]));
        }
    }
    let numel = tensor_numel(t);
    // documented: SIZE_MAX when an expanded view has more element bytes than that
    let bytes = (numel as i128 * tensor_itemsize(t) as i128).min(usize::MAX as i128);
    if tensor_nbytes(t) as i128 != bytes {
        fail("tensor_nbytes != numel * itemsize".into());
    }
    let p = tensor_data_ptr(t);
    if numel > 0 && fits(t) {
        let st = tensor_storage(t);
        let want = storage_data_ptr(st) as i128
            + tensor_storage_offset(t) as i128 * tensor_itemsize(t) as i128;
        if p as i128 != want {
            fail("tensor_data_ptr is not the storage's data plus the offset".into());
        }
    }
    let _ = tensor_is_contiguous(t, tensor_memory_format_t(i.pick(&[0, 1, 2, 3, 9])));
    let _ = tensor_is_non_overlapping_and_dense(t);
    let _ = tensor_suggest_memory_format(t);
    let v = tensor_version(t);
    let s = tensor_bump_version(t);
    check_status("tensor_bump_version", s);
    let read_only = storage_is_read_only(tensor_storage(t));
    if (s == TENSOR_OK) == read_only || tensor_version(t) != v + u64::from(s == TENSOR_OK) {
        fail(format!(
            "tensor_bump_version: {}, read-only {read_only}, version {v} -> {}",
            status_name(s),
            tensor_version(t)
        ));
    }
    let _ = storage_is_resizable(tensor_storage(t));
    if let Some(u) = w.tensor(i) {
        if tensor_shares_storage(t, u) != (tensor_storage(t) == tensor_storage(u)) {
            fail("tensor_shares_storage disagrees with tensor_storage".into());
        }
    }
    if i.byte() % 8 == 0 {
        let _ = tensor_empty_cache();
        let mut st = tensor_memory_stats_t {
            struct_size: i.pick(&[
                0usize,
                4,
                8,
                16,
                std::mem::size_of::<tensor_memory_stats_t>(),
            ]),
            ..Default::default()
        };
        check_status("tensor_memory_stats", tensor_memory_stats(&mut st));
    }
    // kinds and counts: they agree with each other
    let st = tensor_storage(t);
    let (dev, sdev) = (tensor_device(t), storage_device(st));
    if (dev.device_type, dev.device_id) != (sdev.device_type, sdev.device_id) {
        fail("tensor_device is not its storage's device".into());
    }
    // (NULL only for a code that is no dtype)
    if tensor_dtype_name(tensor_dtype(t)).is_null() {
        fail("tensor_dtype_name of a tensor's dtype is NULL".into());
    }
    let _ = tensor_dtype_name(i.dtype());
    if tensor_use_count(t) == 0 || storage_use_count(st) == 0 {
        fail("a live tensor or storage has a use count of 0".into());
    }
    if storage_is_mapped(st) && storage_is_resizable(st) {
        fail("a mapped storage is resizable".into());
    }
    let _ = (storage_weak_count(st), storage_is_read_only(st));
    for &wk in &w.weaks {
        let _ = storage_weak_expired(wk);
    }
}

/// A copy executor running the parts on the calling thread, last first.
unsafe extern "C" fn inline_executor(
    _: *mut std::ffi::c_void,
    n: usize,
    task: tensor_task_fn,
    task_ctx: *mut std::ffi::c_void,
) {
    for k in (0..n).rev() {
        // SAFETY: the library's task with its ctx, while the copy waits.
        unsafe { task.expect("a task")(task_ctx, k) };
    }
}

/// The library-wide knobs: each answers what was set. `run` puts them back.
fn global_op(w: &mut World, i: &mut Input) {
    match i.byte() % 4 {
        3 => {
            // big copies on an executor (inline), or on the library's threads again
            let ex = if i.byte() % 2 == 0 {
                Some(inline_executor as unsafe extern "C" fn(_, _, _, _))
            } else {
                None
            };
            must_succeed(
                "tensor_set_copy_executor",
                tensor_set_copy_executor(ex, std::ptr::null_mut()),
            );
        }
        0 => {
            let n = i.pick(&[1i64, 2, 4, 0, -1, 257]);
            let before = tensor_copy_threads();
            let mut prev = 0i64;
            let s = tensor_set_copy_threads(n, &mut prev);
            check_status("tensor_set_copy_threads", s);
            let now = tensor_copy_threads();
            if (s == TENSOR_OK && (now != n || prev != before)) || (s != TENSOR_OK && now != before)
            {
                fail(format!(
                    "tensor_copy_threads is {now} after setting {n} ({})",
                    status_name(s)
                ));
            }
        }
        1 => {
            let _ = tensor_set_cache_limit(i.pick(&[0u64, 4096, 1 << 20, u64::MAX]));
        }
        _ => {
            let on = i.byte() % 2 == 0;
            let _ = tensor_set_memory_tracking(on as i32);
            if tensor_memory_tracking_enabled() != on {
                fail("tensor_memory_tracking_enabled disagrees with what was set".into());
            }
            let cap = i.pick(&[0usize, 1, 4, 16]);
            let mut infos: Vec<tensor_storage_info_t> = Vec::with_capacity(16);
            let mut count = usize::MAX;
            let s = tensor_memory_snapshot(infos.as_mut_ptr(), cap, &mut count);
            check_status("tensor_memory_snapshot", s);
            if s == TENSOR_OK {
                let mut st = tensor_memory_stats_t {
                    struct_size: std::mem::size_of::<tensor_memory_stats_t>(),
                    ..Default::default()
                };
                must_succeed("tensor_memory_stats", tensor_memory_stats(&mut st));
                if (!on && count != 0) || count as u64 > st.live_storages {
                    fail(format!(
                        "tensor_memory_snapshot lists {count} storages (tracking {on}, {} live)",
                        st.live_storages
                    ));
                }
                // SAFETY: the snapshot wrote min(cap, count) entries.
                unsafe { infos.set_len(cap.min(count)) };
                if infos.windows(2).any(|p| p[0].nbytes < p[1].nbytes) {
                    fail("tensor_memory_snapshot is not biggest first".into());
                }
            }
        }
    }
    let _ = (w, tensor_abi_version(), tensor_version_string());
}

/// Shared memory, mappings and files: a shared segment and a second mapping of it through
/// its descriptor; `.npy` / `.safetensors` round trips of world tensors through a scratch
/// file; that file mapped and loaded back into the world.
fn file_op(w: &mut World, i: &mut Input) {
    let mode = tensor_map_mode_t(i.pick(&[0, 1, 2, 0, 3]));
    match i.byte() % 6 {
        0 => {
            let n = i.pick(&[1usize, 64, 4096, 0, usize::MAX]);
            let mut s: *mut storage_t = std::ptr::null_mut();
            let st = storage_new_shared(n, &mut s);
            check_status("storage_new_shared", st);
            if st == TENSOR_OK {
                if storage_nbytes(s) != n {
                    fail(format!(
                        "storage_new_shared({n}) has {} bytes",
                        storage_nbytes(s)
                    ));
                }
                w.storages.push(s);
            }
        }
        1 => {
            let Some(k) = i.index(&w.storages) else {
                return;
            };
            let src = w.storages[k];
            let mut fd = -1;
            let st = storage_fd(src, &mut fd);
            check_status("storage_fd", st);
            if st != TENSOR_OK {
                return;
            }
            let (off, len) = (
                i.pick(&[0u64, 1, 8, 4096]),
                i.pick(&[TENSOR_MAP_TO_END, 1, 8, 0]),
            );
            let mut s: *mut storage_t = std::ptr::null_mut();
            let st = storage_from_fd(fd, off, len, mode, &mut s);
            check_status("storage_from_fd", st);
            // SAFETY: fd is the storage's own descriptor, open while src lives.
            let fd_size = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
                .try_clone_to_owned()
                .map(std::fs::File::from)
                .and_then(|f| f.metadata())
                .map(|m| m.len())
                .expect("fstat of a storage's descriptor");
            // src maps the whole segment (not a region of it): compare bytes at `off`
            if st == TENSOR_OK && fd_size == storage_nbytes(src) as u64 {
                // The same pages: the same bytes at that offset.
                let n = storage_nbytes(s);
                if off as usize + n > storage_nbytes(src) {
                    fail(format!(
                        "storage_from_fd mapped {n} bytes at {off} of a smaller segment"
                    ));
                }
                // SAFETY: both are host mappings of at least these many bytes.
                let (a, b) = unsafe {
                    (
                        std::slice::from_raw_parts(
                            (storage_data_ptr(src) as *const u8).add(off as usize),
                            n,
                        ),
                        std::slice::from_raw_parts(storage_data_ptr(s) as *const u8, n),
                    )
                };
                if a != b {
                    fail("storage_from_fd: the mapping holds other bytes than the segment".into());
                }
            }
            if st == TENSOR_OK {
                w.storages.push(s);
            }
        }
        2 => {
            let Some(t) = w.tensor(i) else { return };
            if too_slow(tensor_numel(t) as i128) {
                return;
            }
            npy_round_trip(t, &scratch("c_api.npy"), true);
        }
        3 => {
            let mut names = Vec::new();
            let mut ts = Vec::new();
            for k in 0..i.byte() % 4 {
                let Some(t) = w.tensor(i) else { break };
                if too_slow(tensor_numel(t) as i128) {
                    return;
                }
                names.push(std::ffi::CString::new(format!("t{k}")).unwrap());
                ts.push(t as *const tensor_t);
            }
            // Up to 3 metadata pairs, distinct keys (one may be empty).
            let meta: Vec<(std::ffi::CString, std::ffi::CString)> = (0..i.byte() % 4)
                .map(|k| {
                    let key = ["", "format", "k\u{e9}"][k as usize % 3];
                    let value = format!("v{}", i.byte());
                    (
                        std::ffi::CString::new(key).unwrap(),
                        std::ffi::CString::new(value).unwrap(),
                    )
                })
                .collect();
            safetensors_round_trip(&names, &ts, &meta, &scratch("c_api.safetensors"), true);
        }
        4 => {
            let path = scratch(if i.byte() % 2 == 0 {
                "c_api.npy"
            } else {
                "c_api.safetensors"
            });
            let (off, len) = (
                i.pick(&[0u64, 1, 128, 4096]),
                i.pick(&[TENSOR_MAP_TO_END, 1, 64, 1 << 40]),
            );
            let mut s: *mut storage_t = std::ptr::null_mut();
            let st = storage_from_file(path.as_ptr(), off, len, mode, &mut s);
            check_status("storage_from_file", st);
            if st == TENSOR_OK {
                w.storages.push(s);
            }
        }
        _ => {
            // loaded tensors join the world (mapped read-only, private or shared)
            let mut t: *mut tensor_t = std::ptr::null_mut();
            let st = tensor_load_npy(scratch("c_api.npy").as_ptr(), mode, &mut t);
            check_status("tensor_load_npy", st);
            if st == TENSOR_OK {
                w.push_tensor("tensor_load_npy", t);
            }
            let mut f: *mut tensor_safetensors_t = std::ptr::null_mut();
            let path = scratch("c_api.safetensors");
            // the loader, its 0.x alias, or the loader with a map mode (or its alias)
            let (load, st) = match i.byte() % 4 {
                0 => (
                    "tensor_load_safetensors",
                    tensor_load_safetensors(path.as_ptr(), &mut f),
                ),
                1 => (
                    "tensor_safetensors_load",
                    tensor_safetensors_load(path.as_ptr(), &mut f),
                ),
                2 => (
                    "tensor_load_safetensors_mode",
                    tensor_load_safetensors_mode(path.as_ptr(), mode, &mut f),
                ),
                _ => (
                    "tensor_safetensors_load_mode",
                    tensor_safetensors_load_mode(path.as_ptr(), mode, &mut f),
                ),
            };
            check_status(load, st);
            if st != TENSOR_OK {
                return;
            }
            let _ = safetensors_metadata(f);
            let n = tensor_safetensors_count(f);
            let k = i.byte() as usize % (n + 1); // n: one past the end
            let s = tensor_safetensors_at(f, k, &mut t);
            check_status("tensor_safetensors_at", s);
            if (s == TENSOR_OK) != (k < n) {
                fail(format!(
                    "tensor_safetensors_at({k}) of {n}: {}",
                    status_name(s)
                ));
            }
            if s == TENSOR_OK {
                w.push_tensor("tensor_safetensors_at", t);
                let name = tensor_safetensors_name(f, k);
                let s = tensor_safetensors_get(f, name, &mut t);
                must_succeed("tensor_safetensors_get", s);
                w.push_tensor("tensor_safetensors_get", t);
            }
            tensor_safetensors_release(f);
        }
    }
}

fn handle_op(w: &mut World, i: &mut Input) {
    match i.byte() % 7 {
        6 => global_op(w, i),
        5 => inspect_op(w, i),
        0 => {
            if let Some(k) = i.index(&w.tensors) {
                tensor_release(w.tensors.swap_remove(k));
            }
        }
        1 => {
            if let Some(k) = i.index(&w.storages) {
                storage_release(w.storages.swap_remove(k));
            }
        }
        2 => {
            if let Some(k) = i.index(&w.weaks) {
                storage_weak_release(w.weaks.swap_remove(k));
            }
        }
        3 => {
            if let Some(t) = w.tensor(i) {
                let r = tensor_retain(t);
                if r != t {
                    fail("tensor_retain returned another pointer".into());
                }
                w.tensors.push(r);
            }
        }
        _ => {
            // the default allocator: built-in, counting, or failing its Nth call
            match i.byte() % 3 {
                0 => check_status(
                    "tensor_set_default_allocator",
                    tensor_set_default_allocator(std::ptr::null()),
                ),
                1 => check_status(
                    "tensor_set_default_allocator",
                    tensor_set_default_allocator(&COUNTING),
                ),
                _ => {
                    FAIL_IN.store(1 + i.byte() as u64 % 4, Ordering::Relaxed);
                    check_status(
                        "tensor_set_default_allocator",
                        tensor_set_default_allocator(&COUNTING),
                    );
                }
            }
        }
    }
}

fn release_all(w: &mut World) {
    for m in w.exports.drain(..) {
        // SAFETY: each export this world still owns: its deleter runs once.
        unsafe { ((*m).deleter.unwrap())(m) };
    }
    for m in w.exports_legacy.drain(..) {
        // SAFETY: each export this world still owns: its deleter runs once.
        unsafe { ((*m).deleter.unwrap())(m) };
    }
    for t in w.tensors.drain(..) {
        tensor_release(t);
    }
    for s in w.storages.drain(..) {
        storage_release(s);
    }
    for x in w.weaks.drain(..) {
        storage_weak_release(x);
    }
}

/// The cache limit before the first input (what `run` restores).
fn initial_cache_limit() -> u64 {
    static L: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *L.get_or_init(|| {
        let l = tensor_set_cache_limit(0);
        tensor_set_cache_limit(l);
        l
    })
}

fn run(data: &[u8]) {
    initial_cache_limit();
    let mut i = Input { data, pos: 0 };
    let mut w = World::default();
    FAIL_IN.store(0, Ordering::Relaxed);
    let mut steps = 0;
    while !i.done() && steps < 64 {
        steps += 1;
        match i.byte() % 8 {
            0 | 1 => create_op(&mut w, &mut i),
            2 | 3 => view_op(&mut w, &mut i),
            4 => copy_op(&mut w, &mut i),
            5 => write_op(&mut w, &mut i),
            6 => match i.byte() % 3 {
                0 => storage_op(&mut w, &mut i),
                1 => dlpack_op(&mut w, &mut i),
                _ => file_op(&mut w, &mut i),
            },
            _ => handle_op(&mut w, &mut i),
        }
        // keep the world small
        while w.tensors.len() > MAX {
            tensor_release(w.tensors.remove(0));
        }
        while w.storages.len() > MAX / 2 {
            storage_release(w.storages.remove(0));
        }
    }
    release_all(&mut w);
    // the knobs global_op may have turned, back as they were
    let _ = tensor_set_copy_threads(1, std::ptr::null_mut());
    let _ = tensor_set_copy_executor(None, std::ptr::null_mut());
    let _ = tensor_set_cache_limit(initial_cache_limit());
    let _ = tensor_set_memory_tracking(0);
    FAIL_IN.store(0, Ordering::Relaxed);
    check_status(
        "tensor_set_default_allocator",
        tensor_set_default_allocator(std::ptr::null()),
    );
    for b in &w.blobs {
        let n = b.calls.load(Ordering::SeqCst);
        if n != 1 {
            fail(format!(
                "a wrapped buffer's deleter ran {n} times after everything was released"
            ));
        }
    }
    let mut st = tensor_memory_stats_t {
        struct_size: std::mem::size_of::<tensor_memory_stats_t>(),
        ..Default::default()
    };
    check_status("tensor_memory_stats", tensor_memory_stats(&mut st));
    let live = LIVE_BLOCKS.load(Ordering::Relaxed);
    if st.live_storages != 0 || st.live_bytes != 0 || st.live_external_storages != 0 || live != 0 {
        fail(format!(
            "leak after releasing everything: {} storages ({} external), {} bytes, {live} blocks \
             of the counting allocator",
            st.live_storages, st.live_external_storages, st.live_bytes
        ));
    }
}

fuzz_target!(|data: &[u8]| run(data));

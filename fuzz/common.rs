//! Shared by the fuzz targets (each includes it with `#[path = "../common.rs"] mod common;`):
//! the documented-status oracle, the abort-on-violation helper, byte equality of two
//! tensors, and the `.npy` / `.safetensors` save-and-reload round trips.
#![allow(dead_code)] // each target uses part of it

use ::tensor::ffi::copy::*;
use ::tensor::ffi::core::*;
use ::tensor::ffi::files::*;
use ::tensor::ffi::tensor::*;
use ::tensor::ffi::*;
use std::ffi::{CStr, CString};
use std::ptr::null_mut;

// The header model of the tests (tests/support/header_model.rs).
#[path = "../tests/support/header_model.rs"]
mod header_model;

/// The documented statuses of every function, parsed once from include/tensor.h.
pub fn documented(function: &str) -> &'static std::collections::BTreeSet<i32> {
    type Table = std::collections::HashMap<String, std::collections::BTreeSet<i32>>;
    static T: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    let t = T.get_or_init(|| {
        let h = header_model::parse_header(include_str!("../include/tensor.h"));
        h.functions
            .iter()
            .filter(|f| f.returns_status())
            .map(|f| {
                let codes = h.documented_codes(&f.name).unwrap_or_else(|e| fail(e));
                (f.name.clone(), codes)
            })
            .collect()
    });
    t.get(function).unwrap_or_else(|| {
        fail(format!(
            "{function} is not a status-returning function of the header"
        ))
    })
}

pub fn fail(what: String) -> ! {
    eprintln!("ORACLE VIOLATION: {what}");
    std::process::abort()
}

/// The status of `function` is one the header documents for it (never INTERNAL).
pub fn check_status(function: &str, s: tensor_status_t) {
    if s == TENSOR_OK {
        return;
    }
    if s == TENSOR_ERR_INTERNAL {
        fail(format!("{function} returned INTERNAL: {}", last_error()));
    }
    if !documented(function).contains(&s.0) {
        fail(format!(
            "{function} returned status {} ({}), which its documentation does not list: {}",
            s.0,
            status_name(s),
            last_error()
        ));
    }
}

/// [`check_status`], and the status must be OK.
pub fn must_succeed(function: &str, s: tensor_status_t) {
    check_status(function, s);
    if s != TENSOR_OK {
        fail(format!(
            "{function} failed with {}: {}",
            status_name(s),
            last_error()
        ));
    }
}

pub fn last_error() -> String {
    // SAFETY: tensor_last_error returns a NUL-terminated string.
    unsafe { CStr::from_ptr(tensor_last_error()) }
        .to_string_lossy()
        .into_owned()
}

pub fn status_name(s: tensor_status_t) -> String {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(tensor_status_string(s)) }
        .to_string_lossy()
        .into_owned()
}

/// A path in this process's scratch directory (made on first use).
pub fn scratch(name: &str) -> CString {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("libtensor-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        d
    });
    CString::new(dir.join(name).to_str().expect("UTF-8 temp path")).unwrap()
}

fn sizes_of(t: *const tensor_t) -> &'static [i64] {
    // SAFETY: a live tensor: its sizes array holds ndim values (read before any release).
    unsafe { std::slice::from_raw_parts(tensor_sizes(t), tensor_ndim(t) as usize) }
}

/// The element bytes of `t` in C order, or `None` when they cannot be read (a status the
/// caller accepts: out of memory, data outside the storage, not on the host).
fn c_order_bytes(t: *const tensor_t) -> Option<Vec<u8>> {
    let mut c: *mut tensor_t = null_mut();
    let s = tensor_contiguous(t, TENSOR_CONTIGUOUS_FORMAT, &mut c);
    check_status("tensor_contiguous", s);
    if s != TENSOR_OK {
        return None;
    }
    let n = tensor_nbytes(c);
    let p = tensor_data_ptr(c) as *const u8;
    let v = if n == 0 {
        Vec::new()
    } else {
        // SAFETY: a contiguous host tensor that fits: nbytes readable bytes at data_ptr.
        unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
    };
    tensor_release(c);
    Some(v)
}

/// Same dtype, sizes and element bytes (bitwise: NaNs compare equal); `None` when either
/// cannot be read.
pub fn same_tensor(a: *const tensor_t, b: *const tensor_t) -> Option<bool> {
    if tensor_dtype(a) != tensor_dtype(b) || sizes_of(a) != sizes_of(b) {
        return Some(false);
    }
    Some(c_order_bytes(a)? == c_order_bytes(b)?)
}

/// Whether the product of `t`'s sizes, zeros counted as ones, fits int64. A tensor without
/// elements may have sizes for which it does not (e.g. [0, 2^62, 2^62]: its C-order strides
/// overflow); both savers write it, but neither loader makes that shape again (OVERFLOW):
/// a known gap, so the round trips skip such tensors.
pub fn sizes_fit(t: *const tensor_t) -> bool {
    sizes_of(t)
        .iter()
        .try_fold(1i64, |a, &n| a.checked_mul(n.max(1)))
        .is_some()
}

/// Whether the library can save `t` as `.npy` at all (NumPy has no bfloat16).
fn npy_has_dtype(t: *const tensor_t) -> bool {
    tensor_dtype(t) != TENSOR_BFLOAT16
}

/// Saves `t` to `path` as `.npy` and loads it back in every map mode: when the save
/// succeeds, each load succeeds (or runs out of memory) and equals `t`. `may_fail`: the
/// save may fail with a documented status (the tensor may be outside its storage, on a
/// device, or memory may run out); otherwise it must succeed for every dtype NumPy has.
pub fn npy_round_trip(t: *const tensor_t, path: &CStr, may_fail: bool) {
    if !sizes_fit(t) {
        return;
    }
    let s = tensor_save_npy(path.as_ptr(), t);
    check_status("tensor_save_npy", s);
    if s != TENSOR_OK {
        if !may_fail && npy_has_dtype(t) {
            fail(format!("tensor_save_npy failed: {}", last_error()));
        }
        return;
    }
    for mode in [TENSOR_MAP_READ_ONLY, TENSOR_MAP_PRIVATE, TENSOR_MAP_SHARED] {
        let mut u: *mut tensor_t = null_mut();
        let s = tensor_load_npy(path.as_ptr(), mode, &mut u);
        check_status("tensor_load_npy", s);
        if s == TENSOR_ERR_OUT_OF_MEMORY {
            continue;
        }
        if s != TENSOR_OK {
            fail(format!(
                "tensor_load_npy (mode {}) of a file tensor_save_npy wrote failed: {}",
                mode.0,
                last_error()
            ));
        }
        if same_tensor(t, u) == Some(false) {
            fail(format!(
                "tensor_load_npy (mode {}) read back another tensor than was saved",
                mode.0
            ));
        }
        tensor_release(u);
    }
}

/// The metadata pairs of a loaded `.safetensors` file, in its order (sorted by key).
pub fn safetensors_metadata(f: *const tensor_safetensors_t) -> Vec<(CString, CString)> {
    let n = tensor_safetensors_metadata_count(f);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (k, v) = (
            tensor_safetensors_metadata_key(f, i),
            tensor_safetensors_metadata_value(f, i),
        );
        if k.is_null() || v.is_null() {
            fail(format!("metadata pair {i} of {n} is NULL"));
        }
        // SAFETY: NUL-terminated strings borrowed until f is released.
        let (k, v) = unsafe { (CStr::from_ptr(k).to_owned(), CStr::from_ptr(v).to_owned()) };
        out.push((k, v));
    }
    if !tensor_safetensors_metadata_key(f, n).is_null()
        || !tensor_safetensors_metadata_value(f, n).is_null()
    {
        fail(format!(
            "metadata pair {n} of {n} (one past the end) is not NULL"
        ));
    }
    if out.windows(2).any(|w| w[0].0 >= w[1].0) {
        fail(format!("metadata keys not sorted and distinct: {out:?}"));
    }
    out
}

/// Saves `tensors` named `names` to `path` as `.safetensors` with the `meta` pairs (distinct
/// UTF-8 keys; none: with tensor_save_safetensors), loads the file and checks that every
/// tensor comes back under its name, equal, and the pairs come back sorted by key.
/// `may_fail` as in [`npy_round_trip`].
pub fn safetensors_round_trip(
    names: &[CString],
    tensors: &[*const tensor_t],
    meta: &[(CString, CString)],
    path: &CStr,
    may_fail: bool,
) {
    if !tensors.iter().all(|&t| sizes_fit(t)) {
        return;
    }
    let ptrs: Vec<*const std::ffi::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let keys: Vec<*const std::ffi::c_char> = meta.iter().map(|m| m.0.as_ptr()).collect();
    let values: Vec<*const std::ffi::c_char> = meta.iter().map(|m| m.1.as_ptr()).collect();
    let (s, save) = if meta.is_empty() {
        (
            tensor_save_safetensors(path.as_ptr(), ptrs.as_ptr(), tensors.as_ptr(), names.len()),
            "tensor_save_safetensors",
        )
    } else {
        (
            tensor_save_safetensors_metadata(
                path.as_ptr(),
                ptrs.as_ptr(),
                tensors.as_ptr(),
                names.len(),
                keys.as_ptr(),
                values.as_ptr(),
                meta.len(),
            ),
            "tensor_save_safetensors_metadata",
        )
    };
    check_status(save, s);
    if s != TENSOR_OK {
        if !may_fail {
            fail(format!("{save} failed: {}", last_error()));
        }
        return;
    }
    let mut f: *mut tensor_safetensors_t = null_mut();
    let s = tensor_load_safetensors(path.as_ptr(), &mut f);
    check_status("tensor_load_safetensors", s);
    if s == TENSOR_ERR_OUT_OF_MEMORY {
        return;
    }
    if s != TENSOR_OK {
        fail(format!(
            "tensor_load_safetensors of a file {save} wrote failed: {}",
            last_error()
        ));
    }
    if tensor_safetensors_count(f) != names.len() {
        fail(format!(
            "saved {} tensors, loaded {}",
            names.len(),
            tensor_safetensors_count(f)
        ));
    }
    for (name, &t) in names.iter().zip(tensors) {
        let mut u: *mut tensor_t = null_mut();
        must_succeed(
            "tensor_safetensors_get",
            tensor_safetensors_get(f, name.as_ptr(), &mut u),
        );
        if same_tensor(t, u) == Some(false) {
            fail(format!(
                "tensor {name:?} read back from .safetensors differs from the one saved"
            ));
        }
        tensor_release(u);
    }
    let mut want = meta.to_vec();
    want.sort();
    let got = safetensors_metadata(f);
    if got != want {
        fail(format!("saved the metadata {want:?}, loaded {got:?}"));
    }
    tensor_safetensors_release(f);
}

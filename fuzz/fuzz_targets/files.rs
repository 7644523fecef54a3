//! The file entry points on arbitrary file contents, through the C API and a real path:
//! the input is written to a scratch file, then
//!
//! * `storage_from_file` maps it in every mode, whole and in parts: a mapping succeeds
//!   exactly when the region is inside the file and not empty, and holds the file's bytes;
//! * `tensor_load_npy` loads it in every mode: every load that succeeds fits its storage,
//!   all modes load the same tensor, and saving it (`tensor_save_npy`) and loading that
//!   file back gives it again;
//! * `tensor_load_safetensors` loads it: every tensor is reachable by index and by name
//!   (`tensor_safetensors_at` / `_name` / `_get` agree; one past the end is INDEX), the
//!   metadata pairs are sorted by key with NULL one past the end, and saving them all
//!   with the metadata (`tensor_save_safetensors_metadata`, a Hugging-Face-style re-save)
//!   and loading that file back gives them again, by name, with the same pairs;
//! * `tensor_load_safetensors_mode` loads it in every mode alike (the same names, tensors
//!   and metadata; only SHARED may refuse, with DTYPE, a file with a misaligned tensor),
//!   read-only mappings exactly in READ_ONLY mode.
//!
//! Every status must be one the header documents; nothing may leak (the library's live
//! storage count is back to zero after each input). Seeds: fuzz/corpus/files/ (made by
//! fuzz/make_file_seeds.py).
#![no_main]

#[path = "../common.rs"]
mod common;

use ::tensor::ffi::core::*;
use ::tensor::ffi::files::*;
use ::tensor::ffi::memory::*;
use ::tensor::ffi::storage::*;
use ::tensor::ffi::tensor::*;
use ::tensor::ffi::*;
use common::*;
use libfuzzer_sys::fuzz_target;
use std::ffi::{CStr, CString};
use std::ptr::null_mut;

/// Every element of `t` lies inside its storage.
fn fits(t: *const tensor_t) -> bool {
    let nd = tensor_ndim(t) as usize;
    // SAFETY: live tensor: sizes and strides hold ndim values each.
    let (sizes, strides) = unsafe {
        (
            std::slice::from_raw_parts(tensor_sizes(t), nd),
            std::slice::from_raw_parts(tensor_strides(t), nd),
        )
    };
    if sizes.contains(&0) {
        return true;
    }
    let (mut lo, mut hi) = (tensor_storage_offset(t) as i128, 0i128);
    hi += lo;
    for (&n, &s) in sizes.iter().zip(strides) {
        let reach = (n as i128 - 1) * s as i128;
        if reach < 0 {
            lo += reach
        } else {
            hi += reach
        }
    }
    let item = tensor_itemsize(t) as i128;
    lo >= 0 && (hi + 1) * item <= storage_nbytes(tensor_storage(t)) as i128
}

const MODES: [tensor_map_mode_t; 3] = [TENSOR_MAP_READ_ONLY, TENSOR_MAP_PRIVATE, TENSOR_MAP_SHARED];

fn map_regions(path: &CStr, data: &[u8]) {
    let len = data.len() as u64;
    let regions = [
        (0, TENSOR_MAP_TO_END),
        (len / 2, TENSOR_MAP_TO_END),
        (1, len.saturating_sub(2)),
        (len.saturating_sub(1), 1),
        (len, 1),
        (0, len + 1),
        (4097.min(len), 3),
    ];
    for mode in MODES {
        for (off, n) in regions {
            let mut s: *mut storage_t = null_mut();
            let st = storage_from_file(path.as_ptr(), off, n, mode, &mut s);
            check_status("storage_from_file", st);
            let want = if n == TENSOR_MAP_TO_END {
                len.checked_sub(off)
            } else {
                Some(n)
            };
            let inside = want.is_some_and(|w| w > 0 && off + w <= len);
            if (st == TENSOR_OK) != inside {
                fail(format!(
                    "storage_from_file(offset {off}, nbytes {n}, mode {}) of a {len}-byte file: {} ({})",
                    mode.0,
                    status_name(st),
                    last_error()
                ));
            }
            if st != TENSOR_OK {
                continue;
            }
            let w = want.unwrap() as usize;
            if storage_nbytes(s) != w || !storage_is_mapped(s) || storage_is_resizable(s) {
                fail(format!(
                    "storage_from_file: a mapping of {w} bytes reports otherwise"
                ));
            }
            // SAFETY: a mapping of w bytes at storage_data_ptr.
            let bytes = unsafe { std::slice::from_raw_parts(storage_data_ptr(s) as *const u8, w) };
            if bytes != &data[off as usize..off as usize + w] {
                fail("storage_from_file: the mapping does not hold the file's bytes".into());
            }
            storage_release(s);
        }
    }
}

fn load_npy(path: &CStr) {
    let mut first: *mut tensor_t = null_mut();
    for mode in MODES {
        let mut t: *mut tensor_t = null_mut();
        let st = tensor_load_npy(path.as_ptr(), mode, &mut t);
        check_status("tensor_load_npy", st);
        if st != TENSOR_OK {
            // Only SHARED refuses what the others load (big-endian or misaligned data).
            if !first.is_null() && !(mode == TENSOR_MAP_SHARED && st == TENSOR_ERR_DTYPE) {
                fail(format!(
                    "tensor_load_npy loads in one mode, fails in mode {}: {}",
                    mode.0,
                    last_error()
                ));
            }
            continue;
        }
        if !fits(t) {
            fail("tensor_load_npy made a tensor outside its storage".into());
        }
        if first.is_null() {
            first = t;
            continue;
        }
        if same_tensor(first, t) != Some(true) {
            fail(format!(
                "tensor_load_npy mode {} loads another tensor than mode 0",
                mode.0
            ));
        }
        tensor_release(t);
    }
    if !first.is_null() {
        npy_round_trip(first, &scratch("out.npy"), false);
        tensor_release(first);
    }
}

/// Loads `path` in `mode` (READ_ONLY through `tensor_load_safetensors`): the handle (NULL
/// after a documented failure) and the status.
fn load_st(path: &CStr, mode: tensor_map_mode_t) -> (*mut tensor_safetensors_t, tensor_status_t) {
    let mut f: *mut tensor_safetensors_t = null_mut();
    let (name, st) = if mode == TENSOR_MAP_READ_ONLY {
        (
            "tensor_load_safetensors",
            tensor_load_safetensors(path.as_ptr(), &mut f),
        )
    } else {
        (
            "tensor_load_safetensors_mode",
            tensor_load_safetensors_mode(path.as_ptr(), mode, &mut f),
        )
    };
    check_status(name, st);
    if (st == TENSOR_OK) == f.is_null() {
        fail(format!(
            "{name}: status {} with handle {f:?}",
            status_name(st)
        ));
    }
    (f, st)
}

fn load_safetensors(path: &CStr) {
    let (f, _) = load_st(path, TENSOR_MAP_READ_ONLY);
    if f.is_null() {
        return;
    }
    let n = tensor_safetensors_count(f);
    let mut names = Vec::with_capacity(n);
    let mut tensors = Vec::with_capacity(n);
    for i in 0..n {
        let p = tensor_safetensors_name(f, i);
        if p.is_null() {
            fail(format!("tensor_safetensors_name({i}) of {n} is NULL"));
        }
        // SAFETY: a NUL-terminated name borrowed until f is released.
        let name = unsafe { CStr::from_ptr(p) }.to_owned();
        let (mut a, mut b): (*mut tensor_t, *mut tensor_t) = (null_mut(), null_mut());
        must_succeed("tensor_safetensors_at", tensor_safetensors_at(f, i, &mut a));
        must_succeed(
            "tensor_safetensors_get",
            tensor_safetensors_get(f, name.as_ptr(), &mut b),
        );
        if !fits(a) || same_tensor(a, b) != Some(true) || tensor_data_ptr(a) != tensor_data_ptr(b) {
            fail(format!(
                "tensor_safetensors_at({i}) and _get({name:?}) disagree"
            ));
        }
        tensor_release(b);
        names.push(name);
        tensors.push(a as *const tensor_t);
    }
    let meta = safetensors_metadata(f);
    let mut t: *mut tensor_t = null_mut();
    let st = tensor_safetensors_at(f, n, &mut t);
    check_status("tensor_safetensors_at", st);
    if st != TENSOR_ERR_INDEX || !tensor_safetensors_name(f, n).is_null() {
        fail(format!(
            "tensor_safetensors_at/_name one past the end ({n}): {}",
            status_name(st)
        ));
    }
    let missing = CString::new("\u{1}not a name").unwrap();
    if !names.contains(&missing) {
        let st = tensor_safetensors_get(f, missing.as_ptr(), &mut t);
        check_status("tensor_safetensors_get", st);
        if st != TENSOR_ERR_INDEX {
            fail(format!(
                "tensor_safetensors_get of a missing name: {}",
                status_name(st)
            ));
        }
    }
    // The tensors outlive the handle (they keep the mapping).
    tensor_safetensors_release(f);
    // The other modes load the same file alike.
    for mode in [TENSOR_MAP_PRIVATE, TENSOR_MAP_SHARED] {
        let (g, st) = load_st(path, mode);
        if g.is_null() {
            // Only SHARED refuses what READ_ONLY loads (a misaligned tensor: a copy).
            if !(mode == TENSOR_MAP_SHARED && st == TENSOR_ERR_DTYPE) {
                fail(format!(
                    "tensor_load_safetensors_mode {} fails on a file READ_ONLY loads: {}",
                    mode.0,
                    last_error()
                ));
            }
            continue;
        }
        if tensor_safetensors_count(g) != n || safetensors_metadata(g) != meta {
            fail(format!(
                "mode {} loads another count or metadata than READ_ONLY",
                mode.0
            ));
        }
        for (i, &a) in tensors.iter().enumerate() {
            let mut u: *mut tensor_t = null_mut();
            must_succeed("tensor_safetensors_at", tensor_safetensors_at(g, i, &mut u));
            let s = tensor_storage(u);
            // A view of the mapping is writable in these modes (a copy always is).
            if same_tensor(a, u) != Some(true)
                || !fits(u)
                || (storage_is_mapped(s) && storage_is_read_only(s))
            {
                fail(format!(
                    "tensor {i} loaded in mode {} differs from READ_ONLY's or is read-only",
                    mode.0
                ));
            }
            tensor_release(u);
        }
        tensor_safetensors_release(g);
    }
    for &a in &tensors {
        let s = tensor_storage(a);
        if storage_is_mapped(s) && !storage_is_read_only(s) {
            fail("a READ_ONLY safetensors tensor over a writable mapping".into());
        }
    }
    safetensors_round_trip(&names, &tensors, &meta, &scratch("out.safetensors"), false);
    for t in tensors {
        tensor_release(t as *mut tensor_t);
    }
}

fuzz_target!(|data: &[u8]| {
    let path = scratch("in.bin");
    std::fs::write(path.to_str().unwrap(), data).expect("writing the scratch file");
    map_regions(&path, data);
    load_npy(&path);
    load_safetensors(&path);
    let mut st = tensor_memory_stats_t {
        struct_size: std::mem::size_of::<tensor_memory_stats_t>(),
        ..Default::default()
    };
    must_succeed("tensor_memory_stats", tensor_memory_stats(&mut st));
    if st.live_storages != 0 || st.live_bytes != 0 {
        fail(format!(
            "leak: {} storages ({} bytes) live after an input",
            st.live_storages, st.live_bytes
        ));
    }
});

//! The management part of the AOTInductor C shim (`torch/csrc/inductor/aoti_torch/c/shim.h`)
//! on libtensor: an `AtenTensorHandle` is a `tensor_t*` (a handle to one refcounted
//! TensorImpl; another handle to the same impl is another reference).
//!
//! Semantics that differ from libtensor's and are translated here: device codes are c10's
//! (CPU 0, CUDA 1) where libtensor's are DLPack's (CPU 1, CUDA 2); `create_tensor_from_blob`
//! takes the storage base and an element offset into it (c10's `for_blob`);
//! `_reinterpret_tensor`'s offset is added to self's. Dtype and memory-format codes are
//! equal. What needs CUDA, oneDNN layouts, autograd, the dispatcher or IValues returns
//! `AOTI_TORCH_FAILURE` with a message naming the function.

use std::cell::Cell;
use std::ffi::{c_char, c_void};

use crate::error::{err, fn_name, shim, shim_value, Result};
use crate::sys::{self, tensor_t};
use crate::util::{self, handle, make, out, Handle, Owned, Tensor};

type AtenTensorHandle = *mut tensor_t;

// ------------------------------------------------------------------------------------------
// Constants: device types (c10::DeviceType), dtypes (c10::ScalarType), layouts, formats.

macro_rules! constants {
    ($($name:ident = $value:expr;)*) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name() -> i32 {
                $value
            }
        )*
    };
}

constants! {
    aoti_torch_device_type_cpu = 0;
    aoti_torch_device_type_cuda = 1;
    aoti_torch_device_type_meta = 14;
    aoti_torch_device_type_xpu = 12;
    aoti_torch_device_type_mps = 13;
    aoti_torch_device_type_privateuse1 = 20;
    aoti_torch_dtype_uint8 = sys::TENSOR_UINT8;
    aoti_torch_dtype_int8 = sys::TENSOR_INT8;
    aoti_torch_dtype_int16 = sys::TENSOR_INT16;
    aoti_torch_dtype_int32 = sys::TENSOR_INT32;
    aoti_torch_dtype_int64 = sys::TENSOR_INT64;
    aoti_torch_dtype_float16 = sys::TENSOR_FLOAT16;
    aoti_torch_dtype_float32 = sys::TENSOR_FLOAT32;
    aoti_torch_dtype_float64 = sys::TENSOR_FLOAT64;
    aoti_torch_dtype_complex32 = 8; // c10's code; libtensor has no complex32
    aoti_torch_dtype_complex64 = sys::TENSOR_COMPLEX64;
    aoti_torch_dtype_complex128 = sys::TENSOR_COMPLEX128;
    aoti_torch_dtype_bool = sys::TENSOR_BOOL;
    aoti_torch_dtype_bfloat16 = sys::TENSOR_BFLOAT16;
    aoti_torch_dtype_float8_e5m2 = sys::TENSOR_FLOAT8_E5M2;
    aoti_torch_dtype_float8_e4m3fn = sys::TENSOR_FLOAT8_E4M3FN;
    aoti_torch_dtype_float8_e5m2fnuz = sys::TENSOR_FLOAT8_E5M2FNUZ;
    aoti_torch_dtype_float8_e4m3fnuz = sys::TENSOR_FLOAT8_E4M3FNUZ;
    aoti_torch_dtype_uint16 = sys::TENSOR_UINT16;
    aoti_torch_dtype_uint32 = sys::TENSOR_UINT32;
    aoti_torch_dtype_uint64 = sys::TENSOR_UINT64;
    aoti_torch_dtype_float8_e8m0fnu = sys::TENSOR_FLOAT8_E8M0FNU;
    aoti_torch_dtype_float4_e2m1fn_x2 = sys::TENSOR_FLOAT4_E2M1FN_X2;
    aoti_torch_layout_strided = 0;
    aoti_torch_layout_sparse_coo = 1;
    aoti_torch_layout_sparse_csr = 2;
    aoti_torch_layout__mkldnn = 3;
    aoti_torch_layout_sparse_csc = 4;
    aoti_torch_layout_sparse_bsr = 5;
    aoti_torch_layout_sparse_bsc = 6;
    aoti_torch_layout_jagged = 7;
    aoti_torch_memory_format_contiguous_format = sys::TENSOR_CONTIGUOUS_FORMAT;
    aoti_torch_memory_format_channels_last = sys::TENSOR_CHANNELS_LAST;
    aoti_torch_memory_format_channels_last_3d = sys::TENSOR_CHANNELS_LAST_3D;
    aoti_torch_memory_format_preserve_format = sys::TENSOR_PRESERVE_FORMAT;
}

/// Element size of a c10 dtype code, as libtorch's (0 for a code we do not know). The codes
/// libtensor knows are its own (equal to c10's); complex32 (8) is c10's alone.
#[no_mangle]
pub extern "C" fn aoti_torch_dtype_element_size(dtype: i32) -> usize {
    shim_value(fn_name!(), 0, || match dtype {
        8 => 4, // complex32
        d => util::itemsize(d),
    })
}

/// `AOTI_TORCH_ABI_VERSION` of the shim.h this shim follows (torch 2.x: 1).
#[no_mangle]
pub extern "C" fn aoti_torch_abi_version() -> u64 {
    1
}

/// c10 device type (CPU 0) to libtensor's DLPack device; only CPU is supported.
fn device_from_c10(device_type: i32, device_index: i32) -> Result<sys::tensor_device_t> {
    if device_type != 0 {
        return err(
            sys::TENSOR_ERR_DEVICE,
            format!("device type {device_type} (c10 code) is not supported: libtensor_aoti runs CPU models only (device type 0)"),
        );
    }
    if device_index != 0 && device_index != -1 {
        return err(
            sys::TENSOR_ERR_DEVICE,
            format!("CPU device index {device_index} is invalid (0 or -1)"),
        );
    }
    Ok(sys::tensor_device_t {
        device_type: util::DL_CPU,
        device_id: 0,
    })
}

/// libtensor's DLPack device type to c10's (CPU-resident kinds are CPU in c10).
fn device_to_c10(dl: i32) -> i32 {
    use util::*;
    match dl {
        DL_CPU | DL_CUDA_HOST | DL_ROCM_HOST => 0, // host memory (pinned is host)
        DL_CUDA | DL_CUDA_MANAGED => 1,
        DL_ROCM => 1,    // ROCm shows as CUDA in torch
        DL_ONEAPI => 12, // XPU
        DL_METAL => 13,  // MPS
        _ => -1,
    }
}

// ------------------------------------------------------------------------------------------
// Grad mode: a thread-local flag, on by default (c10::GradMode). Nothing here records
// autograd history, so the flag only answers what the model set.

thread_local! {
    static GRAD_MODE: Cell<bool> = const { Cell::new(true) };
}

#[no_mangle]
pub extern "C" fn aoti_torch_grad_mode_is_enabled() -> bool {
    GRAD_MODE.with(|g| g.get())
}

#[no_mangle]
pub extern "C" fn aoti_torch_grad_mode_set_enabled(enabled: bool) {
    GRAD_MODE.with(|g| g.set(enabled))
}

// ------------------------------------------------------------------------------------------
// Handles.

#[no_mangle]
pub extern "C" fn aoti_torch_delete_tensor_object(tensor: AtenTensorHandle) -> i32 {
    shim(fn_name!(), || {
        let t = handle(tensor, "tensor")?;
        // SAFETY: the caller gives up the reference this live handle holds (shim.h: delete
        // releases the handle); nothing here uses t afterwards.
        unsafe { sys::tensor_release(t.raw()) };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_new_tensor_handle(
    orig_handle: AtenTensorHandle,
    new_handle: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(orig_handle, "orig_handle")?;
        let o = out(new_handle, "new_handle")?;
        *o = t.retain().into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_assign_tensors_out(
    src: AtenTensorHandle,
    ret_dst: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(src, "src")?;
        let o = out(ret_dst, "ret_dst")?;
        *o = t.retain().into_raw();
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// Accessors.

macro_rules! accessor {
    ($name:ident, $ty:ty, |$t:ident| $body:expr) => {
        #[no_mangle]
        pub extern "C" fn $name(tensor: AtenTensorHandle, ret: *mut $ty) -> i32 {
            shim(stringify!($name), || {
                let $t = handle(tensor, "tensor")?;
                let r = out(ret, "ret")?;
                *r = $body;
                Ok(())
            })
        }
    };
}

// c10's data_ptr(): NULL for a tensor without elements, else storage data + offset.
accessor!(aoti_torch_get_data_ptr, *mut c_void, |t| t.data_ptr());
accessor!(aoti_torch_get_storage_size, i64, |t| {
    t.storage_nbytes() as i64
});
accessor!(aoti_torch_get_storage_numel, i64, |t| {
    let item = util::itemsize(t.dtype()).max(1);
    (t.storage_nbytes() / item) as i64
});
accessor!(aoti_torch_get_dim, i64, |t| t.ndim());
accessor!(aoti_torch_get_numel, i64, |t| t.numel());
// libtensor's own arrays (borrowed, valid while the tensor lives), as libtorch's.
accessor!(aoti_torch_get_sizes, *mut i64, |t| {
    t.sizes_ptr() as *mut i64
});
accessor!(aoti_torch_get_strides, *mut i64, |t| {
    t.strides_ptr() as *mut i64
});
accessor!(aoti_torch_get_dtype, i32, |t| t.dtype());
accessor!(aoti_torch_get_device_type, i32, |t| {
    device_to_c10(t.device().device_type)
});
accessor!(aoti_torch_get_device_index, i32, |t| {
    let d = t.device();
    // c10's CPU device has index -1 unless set; a CPU tensor reports -1 in libtorch too.
    if device_to_c10(d.device_type) == 0 {
        -1
    } else {
        d.device_id
    }
});
accessor!(aoti_torch_get_layout, i32, |_t| 0);
accessor!(aoti_torch_get_storage_offset, i64, |t| t.storage_offset());
accessor!(aoti_torch_is_contiguous, bool, |t| {
    t.is_contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)
});
accessor!(aoti_torch_is_defined, bool, |_t| true);

#[no_mangle]
pub extern "C" fn aoti_torch_get_size(tensor: AtenTensorHandle, d: i64, ret_size: *mut i64) -> i32 {
    shim(fn_name!(), || {
        let t = handle(tensor, "tensor")?;
        let r = out(ret_size, "ret_size")?;
        *r = t.size(d)?;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_get_stride(
    tensor: AtenTensorHandle,
    d: i64,
    ret_stride: *mut i64,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(tensor, "tensor")?;
        let r = out(ret_stride, "ret_stride")?;
        *r = t.stride(d)?;
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// Creation and views.

#[no_mangle]
pub extern "C" fn aoti_torch_empty_strided(
    ndim: i64,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    dtype: i32,
    device_type: i32,
    device_index: i32,
    ret_new_tensor: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let sizes = util::array(sizes_ptr, ndim, "sizes_ptr")?;
        let strides = util::array(strides_ptr, ndim, "strides_ptr")?;
        let r = out(ret_new_tensor, "ret_new_tensor")?;
        device_from_c10(device_type, device_index)?;
        *r = util::empty_strided(sizes, strides, dtype)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_empty_strided_pinned() -> i32 {
    unsupported(fn_name!(), "pinned memory needs CUDA")
}

thread_local! {
    /// While `watching` runs: an address range and whether a blob tensor was made over any
    /// byte of it.
    static WATCH: std::cell::Cell<Option<(usize, usize, bool)>> =
        const { std::cell::Cell::new(None) };
}

/// Runs `f` on this thread and tells whether, meanwhile, a tensor was made over any byte of
/// `range` (addresses) as a blob (`create_tensor_from_blob`, `_v2`): the model's loader asks
/// so of the weights in its `.so` while the model's runtime creates its constants.
pub fn watching<R>(range: std::ops::Range<usize>, f: impl FnOnce() -> R) -> (R, bool) {
    let before = WATCH.with(|w| w.replace(Some((range.start, range.end, false))));
    let r = f();
    let seen = WATCH
        .with(|w| w.replace(before))
        .is_some_and(|(_, _, hit)| hit);
    (r, seen)
}

/// c10's `for_blob(data).storage_offset(off)`: `data` is the storage base, element 0 is at
/// `storage_offset`; the storage is the bytes the layout reaches from the base. Not owned:
/// the caller (the model's constants, or its workspace) keeps `data` alive.
fn from_blob(
    data: *mut c_void,
    ndim: i64,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    storage_offset: i64,
    dtype: i32,
    device_type: i32,
    device_index: i32,
) -> Result<Handle> {
    let sizes = util::array(sizes_ptr, ndim, "sizes_ptr")?;
    let strides = util::array(strides_ptr, ndim, "strides_ptr")?;
    let device = device_from_c10(device_type, device_index)?;
    if storage_offset < 0 {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("storage_offset {storage_offset} is negative"),
        );
    }
    // c10's TensorMaker: the bytes the layout reaches from element 0, plus the offset's
    // (so a tensor without elements still holds its offset).
    let nbytes = util::nbytes_needed(sizes, strides, 0, dtype)?
        .checked_add((storage_offset as usize).saturating_mul(util::itemsize(dtype)))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or(crate::error::Error {
            status: sys::TENSOR_ERR_OVERFLOW,
            msg: format!("storage_offset {storage_offset} with sizes {sizes:?} strides {strides:?} overflows"),
        })?;
    WATCH.with(|w| {
        if let Some((a, b, _)) = w.get() {
            let p = data as usize;
            if p < b && p.saturating_add(nbytes.max(1)) > a {
                w.set(Some((a, b, true)));
            }
        }
    });
    let mut s: *mut sys::storage_t = std::ptr::null_mut();
    // SAFETY: libtensor only records `data` (no deleter: the caller keeps it alive, shim.h's
    // contract for a blob, which covers the bytes the layout reaches, nbytes); s is a
    // writable out-parameter.
    crate::error::check(unsafe {
        sys::storage_from_blob(data, nbytes, device, None, std::ptr::null_mut(), &mut s)
    })?;
    // SAFETY: s is the live storage just made (its one reference, ours); sizes and strides
    // are util::array's ndim entries each; o is make's out-parameter.
    let t = make(|o| unsafe {
        sys::tensor_from_storage(
            s,
            storage_offset,
            sizes.as_ptr(),
            strides.as_ptr(),
            ndim,
            dtype,
            o,
        )
    });
    // SAFETY: s holds our one reference (the tensor, if made, holds its own); released once.
    unsafe { sys::storage_release(s) };
    Ok(t?.into_raw())
}

#[no_mangle]
pub extern "C" fn aoti_torch_create_tensor_from_blob(
    data: *mut c_void,
    ndim: i64,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    storage_offset: i64,
    dtype: i32,
    device_type: i32,
    device_index: i32,
    ret: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let r = out(ret, "ret")?;
        *r = from_blob(
            data,
            ndim,
            sizes_ptr,
            strides_ptr,
            storage_offset,
            dtype,
            device_type,
            device_index,
        )?;
        Ok(())
    })
}

/// An uninitialised tensor over memory of its own from Rust's allocator (glibc `malloc`: no
/// huge-page advice), freed by its deleter: for the unpacked weights. libtensor's allocator
/// advises blocks from 2 MiB as huge pages, and faulting those in once at load (THP's
/// synchronous compaction) made a BERT-base package's load take 6 s instead of 3 s.
fn weight_tensor(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Owned> {
    let nbytes = util::nbytes_needed(sizes, strides, 0, dtype)?.max(1);
    let Ok(layout) = std::alloc::Layout::from_size_align(nbytes, 64) else {
        return err(
            sys::TENSOR_ERR_OVERFLOW,
            format!("a weight of {nbytes} bytes"),
        );
    };
    // SAFETY: layout has a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return err(
            sys::TENSOR_ERR_OUT_OF_MEMORY,
            format!("a weight of {nbytes} bytes"),
        );
    }
    unsafe extern "C" fn release(data: *mut c_void, ctx: *mut c_void) {
        // SAFETY: data is weight_tensor's allocation of ctx bytes, 64-aligned (a valid
        // layout: it was made from the same pair); libtensor runs this once.
        unsafe {
            std::alloc::dealloc(
                data.cast(),
                std::alloc::Layout::from_size_align_unchecked(ctx as usize, 64),
            )
        };
    }
    let device = device_from_c10(0, 0)?;
    // SAFETY: p holds nbytes, what the layout reaches (nbytes_needed); sizes and strides
    // have the same length (nbytes_needed checked it); o is make's out-parameter.
    let t = make(|o| unsafe {
        sys::tensor_from_blob(
            p.cast(),
            sizes.as_ptr(),
            strides.as_ptr(),
            sizes.len() as i64,
            dtype,
            device,
            Some(release),
            nbytes as *mut c_void,
            o,
        )
    });
    if t.is_err() {
        // SAFETY: on failure libtensor did not take p (its contract): freed here, once.
        unsafe { std::alloc::dealloc(p, layout) };
    }
    t
}

/// A `freezing=True` weight (`aoti_torch_layout__mkldnn`): the elements of the oneDNN layout
/// `meta` describes (`reader::onednn`) at `data`, copied into a new dense tensor of `sizes`,
/// the constant's shape, channels-last when 4-D (the weight layout the channels-last
/// convolution reads in place), else contiguous; a plain layout (no inner blocks) with those
/// strides, or any plain one of another rank (a linear's weight), is not copied: the tensor
/// is a view of `data`, as for any blob. ATen keeps the blob as a oneDNN tensor for
/// oneDNN's kernels; ours read dense tensors, so the unpacking is done once, here, when the
/// model loads its constants. `data` must hold the layout's span, which the loader checks
/// against each packed constant's data size before the model runs.
fn unpack_onednn(data: *mut c_void, sizes: &[i64], dtype: i32, meta: &[u8]) -> Result<Handle> {
    let bad = |m: String| err(sys::TENSOR_ERR_INVALID_ARGUMENT, m);
    let l = util::onednn_layout(meta, dtype)?;
    let dense = if sizes.len() == 4 {
        util::format_strides(sizes, sys::TENSOR_CHANNELS_LAST)?
    } else {
        util::contiguous_strides(sizes)?
    };
    if let Some((strides, off)) = l
        .strided_for(sizes)
        .filter(|(st, _)| sizes.len() != 4 || *st == dense)
    {
        // A plain layout the kernels read as it is: used where it is, as a strided blob.
        return from_blob(
            data,
            sizes.len() as i64,
            sizes.as_ptr(),
            strides.as_ptr(),
            off,
            dtype,
            0,
            0,
        );
    }
    let terms = match l.terms_for(sizes) {
        Ok(t) => t,
        Err(b) => return bad(b.msg),
    };
    let strides = dense;
    let mut t = weight_tensor(sizes, &strides, dtype)?;
    if t.get().numel() == 0 {
        return Ok(t.into_raw());
    }
    if data.is_null() {
        return bad("data is NULL for a oneDNN tensor with elements".into());
    }
    /// Visits the dims in the order of the tensor's strides (largest first), so that the
    /// innermost loop runs along its unit-stride dim.
    fn gather<T: util::Element>(
        t: &mut Owned,
        src: *const T,
        terms: &[Vec<u64>],
        strides: &[i64],
    ) -> Result<()> {
        // SAFETY: t was just allocated here; nothing else reaches its storage.
        let dst = unsafe { t.values_mut::<T>() }?;
        let mut order: Vec<usize> = (0..terms.len()).collect();
        order.sort_by_key(|&d| std::cmp::Reverse(strides[d]));
        let inner = order.pop().expect("a tensor with elements has a dim");
        let mut idx = vec![0usize; terms.len()];
        loop {
            let (mut s, mut o) = (0u64, 0usize);
            for &d in &order {
                s += terms[d][idx[d]];
                o += idx[d] * strides[d] as usize;
            }
            let ls = strides[inner] as usize;
            for (i, &v) in terms[inner].iter().enumerate() {
                // SAFETY: s + v is an element offset of the layout, below its span, which
                // `data` holds (unpack_onednn's contract); read unaligned: the blob need
                // not be aligned for T.
                dst[o + i * ls] = unsafe { src.add((s + v) as usize).read_unaligned() };
            }
            // The next index over the outer dims, the last of `order` fastest.
            let mut k = order.len();
            loop {
                if k == 0 {
                    return Ok(());
                }
                k -= 1;
                let d = order[k];
                idx[d] += 1;
                if idx[d] < terms[d].len() {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    match dtype {
        sys::TENSOR_FLOAT32 => gather::<f32>(&mut t, data.cast(), &terms, &strides)?,
        sys::TENSOR_BFLOAT16 => gather::<half::bf16>(&mut t, data.cast(), &terms, &strides)?,
        _ => gather::<half::f16>(&mut t, data.cast(), &terms, &strides)?,
    }
    Ok(t.into_raw())
}

#[no_mangle]
pub extern "C" fn aoti_torch_create_tensor_from_blob_v2(
    data: *mut c_void,
    ndim: i64,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    storage_offset: i64,
    dtype: i32,
    device_type: i32,
    device_index: i32,
    ret: *mut AtenTensorHandle,
    layout: i32,
    opaque_metadata: *const u8,
    opaque_metadata_size: i64,
) -> i32 {
    shim(fn_name!(), || {
        let r = out(ret, "ret")?;
        if layout == aoti_torch_layout__mkldnn() {
            device_from_c10(device_type, device_index)?;
            let meta = util::list(opaque_metadata, opaque_metadata_size, "opaque_metadata")?;
            let sizes = util::array(sizes_ptr, ndim, "sizes_ptr")?;
            *r = unpack_onednn(data, sizes, dtype, meta)?;
            return Ok(());
        }
        if layout != aoti_torch_layout_strided() {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("layout {layout} is not supported (strided, 0, and oneDNN's, 3, are)"),
            );
        }
        if opaque_metadata_size != 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("opaque_metadata ({opaque_metadata_size} bytes at {opaque_metadata:p}) is only meaningful for oneDNN tensors"),
            );
        }
        *r = from_blob(
            data,
            ndim,
            sizes_ptr,
            strides_ptr,
            storage_offset,
            dtype,
            device_type,
            device_index,
        )?;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch__reinterpret_tensor(
    self_: AtenTensorHandle,
    ndim: i64,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    offset_increment: i64,
    ret_new_tensor: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let sizes = util::array(sizes_ptr, ndim, "sizes_ptr")?;
        let strides = util::array(strides_ptr, ndim, "strides_ptr")?;
        let r = out(ret_new_tensor, "ret_new_tensor")?;
        let base = t.storage_offset();
        let offset = base
            .checked_add(offset_increment)
            .ok_or(crate::error::Error {
                status: sys::TENSOR_ERR_OVERFLOW,
                msg: format!(
                    "self's offset {base} + offset_increment {offset_increment} overflows"
                ),
            })?;
        *r = t.as_strided(sizes, strides, offset)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_as_strided(
    self_: AtenTensorHandle,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    ret: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let ndim = t.ndim();
        let sizes = util::array(sizes_ptr, ndim, "sizes_ptr")?;
        let strides = util::array(strides_ptr, ndim, "strides_ptr")?;
        let r = out(ret, "ret")?;
        *r = t.as_strided(sizes, strides, t.storage_offset())?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch__alloc_from_pool(
    self_: AtenTensorHandle,
    offset_bytes: i64,
    dtype: i32,
    ndim: i64,
    sizes_ptr: *const i64,
    strides_ptr: *const i64,
    ret_new_tensor: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let sizes = util::array(sizes_ptr, ndim, "sizes_ptr")?;
        let strides = util::array(strides_ptr, ndim, "strides_ptr")?;
        let r = out(ret_new_tensor, "ret_new_tensor")?;
        let item = util::itemsize(dtype) as i64;
        let base = t.storage_offset() * util::itemsize(t.dtype()) as i64;
        let bytes = base.checked_add(offset_bytes).unwrap_or(-1);
        if item == 0 || bytes < 0 || bytes % item != 0 {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("offset_bytes {offset_bytes} (self at byte {base}) is not a non-negative multiple of {}'s size {item}", util::dtype_name(dtype)),
            );
        }
        *r = t
            .over_storage(bytes / item, sizes, strides, dtype)?
            .into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_clone(self_: AtenTensorHandle, ret: *mut AtenTensorHandle) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret, "ret")?;
        *r = t.clone_as(sys::TENSOR_PRESERVE_FORMAT)?.into_raw();
        Ok(())
    })
}

/// Inductor's `clone_preserve_strides`: the storage range `self` reaches, copied, with
/// `self`'s exact sizes and strides over the copy (even when they are not dense).
#[no_mangle]
pub extern "C" fn aoti_torch_clone_preserve_strides(
    self_: AtenTensorHandle,
    ret: *mut AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        let r = out(ret, "ret")?;
        let (sizes, strides) = (t.sizes(), t.strides());
        let ext = util::extent(sizes, strides, t.dtype())?;
        let flat = t.as_strided(&[ext], &[1], t.storage_offset())?;
        let copy = flat.get().clone_as(sys::TENSOR_CONTIGUOUS_FORMAT)?;
        *r = copy.get().as_strided(sizes, strides, 0)?.into_raw();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_copy_(
    self_: AtenTensorHandle,
    src: AtenTensorHandle,
    non_blocking: i32,
) -> i32 {
    shim(fn_name!(), || {
        let _ = non_blocking; // CPU copies are synchronous
        let d = handle(self_, "self")?;
        let s = handle(src, "src")?;
        d.copy_from(s)
    })
}

/// Deprecated argument order: copies `src` into `dst`.
#[no_mangle]
pub extern "C" fn aoti_torch_tensor_copy_(src: AtenTensorHandle, dst: AtenTensorHandle) -> i32 {
    shim(fn_name!(), || {
        let s = handle(src, "src")?;
        let d = handle(dst, "dst")?;
        d.copy_from(s)
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_zero_(self_: AtenTensorHandle) -> i32 {
    shim(fn_name!(), || {
        let t = handle(self_, "self")?;
        t.fill_i64(0)
    })
}

// ------------------------------------------------------------------------------------------
// item_* and scalar_to_tensor_*.

/// A scalar type of the shim whose every bit pattern (of its size) is a valid value, so
/// that an element's bytes can be read as one (not `bool`: its item reads a byte).
trait Plain: Copy {}
impl Plain for u8 {}
impl Plain for i8 {}
impl Plain for u16 {}
impl Plain for i16 {}
impl Plain for u32 {}
impl Plain for i32 {}
impl Plain for u64 {}
impl Plain for i64 {}
impl Plain for f32 {}
impl Plain for f64 {}
impl Plain for Complex32 {}

/// The one element of `t` as its raw bytes when its dtype is `want`, else converted.
fn item<T: Plain>(t: Tensor, want: i32, conv: impl FnOnce(Tensor) -> Result<T>) -> Result<T> {
    let n = t.numel();
    if n != 1 {
        return err(
            sys::TENSOR_ERR_SHAPE,
            format!("a tensor with {n} elements cannot be converted to a scalar"),
        );
    }
    util::require_cpu(t, "tensor")?;
    if t.dtype() == want && util::itemsize(want) == std::mem::size_of::<T>() {
        let p = t.data_ptr().cast::<T>();
        // SAFETY: t is live (Tensor's invariant), on the CPU (require_cpu) and has one
        // element (n == 1, so p is non-NULL) of dtype `want`, whose size is T's (checked
        // above): p points to size_of::<T>() readable bytes inside its storage, which are a
        // valid T (Plain); read_unaligned needs no alignment.
        return Ok(unsafe { p.read_unaligned() });
    }
    conv(t)
}

fn get_f64(t: Tensor) -> Result<f64> {
    t.first_f64()
}

fn get_i64(t: Tensor) -> Result<i64> {
    t.first_i64()
}

macro_rules! items {
    ($($name:ident: $ty:ty = $code:expr, |$t:ident| $conv:expr;)*) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name(tensor: AtenTensorHandle, ret_value: *mut $ty) -> i32 {
                shim(stringify!($name), || {
                    let t = handle(tensor, "tensor")?;
                    let r = out(ret_value, "ret_value")?;
                    *r = item(t, $code, |$t| $conv)?;
                    Ok(())
                })
            }
        )*
    };
}

items! {
    aoti_torch_item_float16: u16 = sys::TENSOR_FLOAT16, |t| Ok(half::f16::from_f64(get_f64(t)?).to_bits());
    aoti_torch_item_bfloat16: u16 = sys::TENSOR_BFLOAT16, |t| Ok(half::bf16::from_f64(get_f64(t)?).to_bits());
    aoti_torch_item_float32: f32 = sys::TENSOR_FLOAT32, |t| Ok(get_f64(t)? as f32);
    aoti_torch_item_float64: f64 = sys::TENSOR_FLOAT64, |t| get_f64(t);
    aoti_torch_item_uint8: u8 = sys::TENSOR_UINT8, |t| Ok(get_i64(t)? as u8);
    aoti_torch_item_uint16: u16 = sys::TENSOR_UINT16, |t| Ok(get_i64(t)? as u16);
    aoti_torch_item_uint32: u32 = sys::TENSOR_UINT32, |t| Ok(get_i64(t)? as u32);
    aoti_torch_item_uint64: u64 = sys::TENSOR_UINT64, |t| Ok(get_i64(t)? as u64);
    aoti_torch_item_int8: i8 = sys::TENSOR_INT8, |t| Ok(get_i64(t)? as i8);
    aoti_torch_item_int16: i16 = sys::TENSOR_INT16, |t| Ok(get_i64(t)? as i16);
    aoti_torch_item_int32: i32 = sys::TENSOR_INT32, |t| Ok(get_i64(t)? as i32);
    aoti_torch_item_int64: i64 = sys::TENSOR_INT64, |t| get_i64(t);
    aoti_torch_item_complex64: Complex32 = sys::TENSOR_COMPLEX64, |t| Ok(Complex32 { re: get_f64(t)? as f32, im: 0.0 });
}

/// A bool tensor's item: its byte read as is (any nonzero byte is true, as a byte read
/// as `u8`), converted from another dtype.
#[no_mangle]
pub extern "C" fn aoti_torch_item_bool(tensor: AtenTensorHandle, ret_value: *mut bool) -> i32 {
    shim(fn_name!(), || {
        let t = handle(tensor, "tensor")?;
        let r = out(ret_value, "ret_value")?;
        *r = item::<u8>(t, sys::TENSOR_BOOL, |t| Ok((get_f64(t)? != 0.0) as u8))? != 0;
        Ok(())
    })
}

/// `c10::complex<float>` (passed by value as two floats).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Complex32 {
    re: f32,
    im: f32,
}

/// `c10::complex<double>`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Complex64 {
    re: f64,
    im: f64,
}

fn scalar<T: Copy>(value: T, dtype: i32, ret: *mut AtenTensorHandle) -> Result<()> {
    let r = out(ret, "ret_new_tensor")?;
    let t = util::empty_strided(&[], &[], dtype)?;
    let p = t.get().data_ptr().cast::<T>();
    if util::itemsize(dtype) != std::mem::size_of::<T>() || p.is_null() {
        return err(
            sys::TENSOR_ERR_INTERNAL,
            format!(
                "{} does not hold a {}-byte value",
                util::dtype_name(dtype),
                std::mem::size_of::<T>()
            ),
        );
    }
    // SAFETY: t is the 0-dim tensor just allocated (one element of dtype, whose size is
    // T's: checked above), so p (non-NULL) points to size_of::<T>() writable bytes nothing
    // else uses; write_unaligned needs no alignment.
    unsafe { p.write_unaligned(value) };
    *r = t.into_raw();
    Ok(())
}

macro_rules! scalars {
    ($($name:ident: $ty:ty = $code:expr;)*) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name(value: $ty, ret_new_tensor: *mut AtenTensorHandle) -> i32 {
                shim(stringify!($name), || scalar(value, $code, ret_new_tensor))
            }
        )*
    };
}

scalars! {
    aoti_torch_scalar_to_tensor_float32: f32 = sys::TENSOR_FLOAT32;
    aoti_torch_scalar_to_tensor_float64: f64 = sys::TENSOR_FLOAT64;
    aoti_torch_scalar_to_tensor_uint8: u8 = sys::TENSOR_UINT8;
    aoti_torch_scalar_to_tensor_uint16: u16 = sys::TENSOR_UINT16;
    aoti_torch_scalar_to_tensor_uint32: u32 = sys::TENSOR_UINT32;
    aoti_torch_scalar_to_tensor_uint64: u64 = sys::TENSOR_UINT64;
    aoti_torch_scalar_to_tensor_int8: i8 = sys::TENSOR_INT8;
    aoti_torch_scalar_to_tensor_int16: i16 = sys::TENSOR_INT16;
    aoti_torch_scalar_to_tensor_int32: i32 = sys::TENSOR_INT32;
    aoti_torch_scalar_to_tensor_int64: i64 = sys::TENSOR_INT64;
    aoti_torch_scalar_to_tensor_bool: bool = sys::TENSOR_BOOL;
    aoti_torch_scalar_to_tensor_complex64: Complex32 = sys::TENSOR_COMPLEX64;
    aoti_torch_scalar_to_tensor_complex128: Complex64 = sys::TENSOR_COMPLEX128;
}

// ------------------------------------------------------------------------------------------
// Diagnostics.

fn cstr(p: *const c_char) -> String {
    crate::error::c_string(p).unwrap_or_else(|| "(null)".into())
}

fn describe(t: Tensor) -> String {
    format!(
        "{} sizes {:?} strides {:?} offset {}",
        util::dtype_name(t.dtype()),
        t.sizes(),
        t.strides(),
        t.storage_offset()
    )
}

#[no_mangle]
pub extern "C" fn aoti_torch_print_tensor_handle(self_: AtenTensorHandle, msg: *const c_char) {
    shim_value(fn_name!(), (), || match handle(self_, "self") {
        Ok(t) => eprintln!("{}: {}", cstr(msg), describe(t)),
        Err(_) => eprintln!("{}: (null tensor)", cstr(msg)),
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_warn(
    func: *const c_char,
    file: *const c_char,
    line: u32,
    msg: *const c_char,
) {
    shim_value(fn_name!(), (), || {
        eprintln!(
            "libtensor_aoti: warning in {} ({}:{line}): {}",
            cstr(func),
            cstr(file),
            cstr(msg)
        );
    })
}

#[no_mangle]
pub extern "C" fn aoti_torch_check_inf_and_nan(
    tensor_name: *const c_char,
    tensor: AtenTensorHandle,
) -> i32 {
    shim(fn_name!(), || {
        let t = handle(tensor, "tensor")?;
        let name = cstr(tensor_name);
        if !matches!(
            t.dtype(),
            sys::TENSOR_FLOAT16 | sys::TENSOR_FLOAT32 | sys::TENSOR_FLOAT64 | sys::TENSOR_BFLOAT16
        ) {
            return Ok(());
        }
        let f = t.to_dtype(sys::TENSOR_FLOAT64)?;
        let c = f.get().contiguous(sys::TENSOR_CONTIGUOUS_FORMAT)?;
        // A contiguous float64 tensor: its values, in order.
        let v = c.get().values::<f64>()?;
        if v.iter().any(|x| x.is_nan()) {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("found NaN in {name}"),
            );
        }
        if v.iter().any(|x| x.is_infinite()) {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("found Inf in {name}"),
            );
        }
        Ok(())
    })
}

// ------------------------------------------------------------------------------------------
// What needs more than libtensor: the shim's error code and a message naming the function.

pub fn unsupported(name: &str, why: &str) -> i32 {
    shim(name, || {
        err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("not supported by libtensor_aoti ({why})"),
        )
    })
}

macro_rules! unsupported {
    ($($name:ident: $why:expr;)*) => {
        $(
            /// Not supported: returns AOTI_TORCH_FAILURE and logs why. (Its arguments are
            /// not read, so the C signature does not matter to the callee.)
            #[no_mangle]
            pub extern "C" fn $name() -> i32 {
                unsupported(stringify!($name), $why)
            }
        )*
    };
}

unsupported! {
    aoti_torch_new_uninitialized_tensor: "an undefined tensor has no libtensor handle";
    aoti_torch_assign_tensors: "rebinding a handle to another tensor: a tensor_t* is the tensor itself";
    aoti_torch_int64_to_ivalue: "IValues belong to the TorchScript runtime";
    aoti_torch_strlist_to_ivalue: "IValues belong to the TorchScript runtime";
    aoti_torch_str_to_ivalue: "IValues belong to the TorchScript runtime";
    aoti_torch_tensor_to_ivalue: "IValues belong to the TorchScript runtime";
    aoti_torch_delete_c10_value_object: "IValues belong to the TorchScript runtime";
    aoti_record_function_start: "no profiler";
    aoti_record_function_end: "no profiler";
    aoti_torch_library_init_impl: "no operator registry";
    aoti_torch_library_init_def: "no operator registry";
    aoti_torch_library_init_fragment: "no operator registry";
    aoti_torch_library_impl: "no operator registry";
    aoti_torch_library_def: "no operator registry";
    aoti_torch_delete_library_object: "no operator registry";
    aoti_torch_call_dispatcher: "no ATen dispatcher";
    aoti_torch_proxy_executor_call_function: "no proxy executor (custom ops run through libtorch)";
    aoti_torch_create_device_guard: "device guards are for accelerators";
    aoti_torch_delete_device_guard: "device guards are for accelerators";
    aoti_torch_device_guard_set_index: "device guards are for accelerators";
    aoti_torch_delete_stream: "streams are for accelerators";
    aoti_torch_stream_id: "streams are for accelerators";
    aoti_torch_get_current_stream: "streams are for accelerators";
    aoti_torch_get_current_device_index: "device indices are for accelerators";
    aoti_torch_create_cuda_guard: "no CUDA";
    aoti_torch_delete_cuda_guard: "no CUDA";
    aoti_torch_cuda_guard_set_index: "no CUDA";
    aoti_torch_create_cuda_stream_guard: "no CUDA";
    aoti_torch_delete_cuda_stream_guard: "no CUDA";
    aoti_torch_get_current_cuda_stream: "no CUDA";
    aoti_torch_cuda_caching_allocator_raw_alloc: "no CUDA";
    aoti_torch_cuda_caching_allocator_raw_delete: "no CUDA";
    aoti_torch_cpu_wrapped_fbgemm_pack_gemm_matrix_fp16: "needs fbgemm";
    aoti_torch_cpu__wrapped_linear_prepack: "needs fbgemm";
    aoti_torch_cpu_wrapped_fbgemm_linear_fp16_weight: "needs fbgemm";
    aoti_torch_cpu__wrapped_quantized_linear_prepacked: "needs fbgemm";
    aoti_torch_save_tensor_handle: "no tensor serialisation of libtorch's format";
}

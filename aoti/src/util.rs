//! The one place where libtensor_aoti turns C pointers into Rust values and calls libtensor
//! on a tensor handle.
//!
//! Every exported function (`aoti_torch_*`, `tensor_aoti_*`) receives raw pointers, and the
//! C contract of its header (shim.h, include/tensor_aoti.h) is what makes reading them
//! sound: a non-NULL tensor handle is live for the duration of the call, a non-NULL
//! out-pointer is writable, a non-NULL array has the stated number of entries. `handle`,
//! `out`, `array` and `optional_handle` check for NULL (and lengths) and then rely on that
//! contract: they are for an exported function's own arguments only.
//!
//! After that check a handle is a [`Tensor`], whose invariant (live for `'a`) makes every
//! libtensor accessor a safe method here; a tensor this crate makes is an [`Owned`] (one
//! strong reference, released on drop) that lends `Tensor`s tied to itself.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{check, err, Result};
use crate::sys::{self, tensor_t};

/// A raw handle as the C ABI passes it (`AtenTensorHandle`, `tensor_t*`).
pub type Handle = *mut tensor_t;

/// A libtensor tensor handle that is non-NULL and live for `'a`: an exported function's
/// handle argument (made by [`handle`], live for the call by the C contract) or one an
/// [`Owned`] holds (made by [`Owned::get`], live while it is borrowed).
#[derive(Clone, Copy)]
pub struct Tensor<'a> {
    raw: NonNull<tensor_t>,
    _live: PhantomData<&'a tensor_t>,
}

/// A non-NULL handle argument as a [`Tensor`], or NULL_POINTER naming the argument. Only
/// for a handle the C caller passed: the header's contract makes a non-NULL one live for
/// the call, which is `Tensor`'s invariant.
pub fn handle<'a>(h: Handle, what: &str) -> Result<Tensor<'a>> {
    match NonNull::new(h) {
        Some(raw) => Ok(Tensor {
            raw,
            _live: PhantomData,
        }),
        None => err(sys::TENSOR_ERR_NULL_POINTER, format!("{what} is NULL")),
    }
}

/// An optional tensor argument passed as `AtenTensorHandle*` (c_shim_cpu.h's convention
/// for `Tensor?`): None when the pointer or the handle it points to is NULL.
pub fn optional_handle<'a>(p: *const Handle, what: &str) -> Option<Tensor<'a>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-NULL `AtenTensorHandle*` argument points to one readable handle (the C
    // contract of c_shim_cpu.h); p was checked non-NULL above.
    let h = unsafe { p.read() };
    handle(h, what).ok()
}

/// A non-NULL out-pointer argument as a reference, or NULL_POINTER naming it.
pub fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    if p.is_null() {
        err(sys::TENSOR_ERR_NULL_POINTER, format!("{what} is NULL"))
    } else {
        // SAFETY: p is non-NULL (checked above) and, by the C contract, points to a writable,
        // aligned `T` that nothing else uses during the call.
        Ok(unsafe { &mut *p })
    }
}

/// `n` entries of a C array argument (ndim-like `n` in [0, 64]; NULL only when `n == 0`):
/// an int list, or a list of (optional) tensor handles.
pub fn array<'a, T>(p: *const T, n: i64, what: &str) -> Result<&'a [T]> {
    array_up_to(p, n, 64, what)
}

/// The longest tensor list [`list`] takes (`cat`'s inputs, ...).
pub const MAX_LIST: i64 = 1 << 20;

/// `n` entries of a C list argument that is not ndim-like (`cat`'s tensors): `n` in
/// [0, MAX_LIST]; NULL only when `n == 0`.
pub fn list<'a, T>(p: *const T, n: i64, what: &str) -> Result<&'a [T]> {
    array_up_to(p, n, MAX_LIST, what)
}

fn array_up_to<'a, T>(p: *const T, n: i64, max: i64, what: &str) -> Result<&'a [T]> {
    if !(0..=max).contains(&n) {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("{what}: length {n} is outside [0, {max}]"),
        );
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return err(
            sys::TENSOR_ERR_NULL_POINTER,
            format!("{what} is NULL with length {n}"),
        );
    }
    // SAFETY: p is non-NULL and n in [1, max] (checked above, max <= MAX_LIST, so the
    // byte length fits an isize); the C contract gives a non-NULL array argument n
    // readable entries for the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// PyTorch's `maybe_wrap_dim`: a possibly negative `dim` of a tensor with `ndim` dims, in
/// `[0, ndim)`. A 0-dim tensor takes dim 0 or -1 as if it had one dim when `wrap_scalar`
/// (ATen's default), else any dim is an error. Errors are INDEX with ATen's message.
pub fn wrap_dim(dim: i64, ndim: usize, wrap_scalar: bool) -> Result<usize> {
    if ndim == 0 && !wrap_scalar {
        return err(
            sys::TENSOR_ERR_INDEX,
            format!("Dimension specified as {dim} but tensor has no dimensions"),
        );
    }
    let mut v = 0i64;
    // SAFETY: v is a writable int64; the call takes plain values.
    check(unsafe { sys::tensor_wrap_dim(dim, ndim as i64, &mut v) })?;
    Ok(v as usize)
}

/// Item size of a libtensor dtype code (0 for an unknown code).
pub fn itemsize(dtype: i32) -> usize {
    // SAFETY: tensor_dtype_itemsize takes any code (0 for an unknown one); no pointers.
    unsafe { sys::tensor_dtype_itemsize(dtype) }
}

pub fn dtype_name(d: i32) -> String {
    // SAFETY: tensor_dtype_name takes any code; it returns NULL or a static C string.
    crate::error::c_string(unsafe { sys::tensor_dtype_name(d) })
        .unwrap_or_else(|| format!("dtype {d}"))
}

/// The libtensor dtype code of a `torch.<name>` (`"float32"`), as libtensor names its dtypes
/// (`tensor_dtype_name`, equal to torch's); None for a name libtensor has no dtype of.
pub fn dtype_code(name: &str) -> Option<i32> {
    static NAMES: std::sync::OnceLock<Vec<(String, i32)>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        // c10's ScalarType is an int8: every code is below 128.
        (0..i8::MAX as i32)
            .filter(|&c| itemsize(c) > 0)
            .map(|c| (dtype_name(c), c))
            .collect()
    });
    names.iter().find(|(n, _)| n == name).map(|&(_, c)| c)
}

/// An element type whose values a kernel reads and writes through typed slices: its
/// libtensor dtype code, every bit pattern of its size is a valid value, and conversions
/// through float64 as C++'s `static_cast` (float to integer truncates toward zero; out of
/// range saturates, where C++ leaves it undefined).
pub trait Element: Copy + Default + PartialOrd + Send + Sync + 'static {
    const DTYPE: i32;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

macro_rules! element {
    ($($t:ty = $code:ident;)*) => {
        $(
            impl Element for $t {
                const DTYPE: i32 = sys::$code;
                fn to_f64(self) -> f64 {
                    self as f64
                }
                fn from_f64(v: f64) -> Self {
                    v as $t
                }
            }
        )*
    };
}

element! {
    u8 = TENSOR_UINT8;
    i8 = TENSOR_INT8;
    i16 = TENSOR_INT16;
    i32 = TENSOR_INT32;
    i64 = TENSOR_INT64;
    u16 = TENSOR_UINT16;
    u32 = TENSOR_UINT32;
    u64 = TENSOR_UINT64;
    f32 = TENSOR_FLOAT32;
    f64 = TENSOR_FLOAT64;
}

impl Element for half::f16 {
    const DTYPE: i32 = sys::TENSOR_FLOAT16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> Self {
        half::f16::from_f64(v)
    }
}

impl Element for half::bf16 {
    const DTYPE: i32 = sys::TENSOR_BFLOAT16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> Self {
        half::bf16::from_f64(v)
    }
}

/// A bool element as its byte (a Rust `bool` may only be 0 or 1; a tensor's byte may be
/// any value, and any nonzero byte is true).
#[repr(transparent)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Bool(pub u8);

impl PartialEq for Bool {
    fn eq(&self, other: &Self) -> bool {
        (self.0 != 0) == (other.0 != 0)
    }
}

impl PartialOrd for Bool {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self.0 != 0).partial_cmp(&(other.0 != 0))
    }
}

impl Element for Bool {
    const DTYPE: i32 = sys::TENSOR_BOOL;
    fn to_f64(self) -> f64 {
        (self.0 != 0) as u8 as f64
    }
    fn from_f64(v: f64) -> Self {
        Bool((v != 0.0) as u8)
    }
}

/// Runs `$body` with `$T` the element type of dtype code `$dtype` (every real dtype: the
/// integers, bool, float16, bfloat16, float32, float64); `$other` for any other code.
/// With a list of element types first (`dispatch!(d, [u8, f32], T => ..., _ => ...)`),
/// only those: the dtypes an ATen kernel dispatches over.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, [$($t:ty),+ $(,)?], $T:ident => $body:expr, _ => $other:expr) => {{
        let code = $dtype;
        $(
            if code == <$t as $crate::util::Element>::DTYPE {
                type $T = $t;
                $body
            } else
        )+
        {
            $other
        }
    }};
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {
        match $dtype {
            $crate::sys::TENSOR_UINT8 => {
                type $T = u8;
                $body
            }
            $crate::sys::TENSOR_INT8 => {
                type $T = i8;
                $body
            }
            $crate::sys::TENSOR_INT16 => {
                type $T = i16;
                $body
            }
            $crate::sys::TENSOR_INT32 => {
                type $T = i32;
                $body
            }
            $crate::sys::TENSOR_INT64 => {
                type $T = i64;
                $body
            }
            $crate::sys::TENSOR_UINT16 => {
                type $T = u16;
                $body
            }
            $crate::sys::TENSOR_UINT32 => {
                type $T = u32;
                $body
            }
            $crate::sys::TENSOR_UINT64 => {
                type $T = u64;
                $body
            }
            $crate::sys::TENSOR_BOOL => {
                type $T = $crate::util::Bool;
                $body
            }
            $crate::sys::TENSOR_FLOAT16 => {
                type $T = half::f16;
                $body
            }
            $crate::sys::TENSOR_BFLOAT16 => {
                type $T = half::bf16;
                $body
            }
            $crate::sys::TENSOR_FLOAT32 => {
                type $T = f32;
                $body
            }
            $crate::sys::TENSOR_FLOAT64 => {
                type $T = f64;
                $body
            }
            _ => $other,
        }
    };
}

impl<'a> Tensor<'a> {
    /// The raw handle (borrowed: for libtensor calls and for C out-parameters that borrow).
    pub fn raw(self) -> *mut tensor_t {
        self.raw.as_ptr()
    }

    pub fn ndim(self) -> i64 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_ndim(self.raw()) }
    }

    /// libtensor's sizes array itself (`ndim` entries, valid while the tensor lives).
    pub fn sizes_ptr(self) -> *const i64 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_sizes(self.raw()) }
    }

    /// libtensor's strides array itself (`ndim` entries, valid while the tensor lives).
    pub fn strides_ptr(self) -> *const i64 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_strides(self.raw()) }
    }

    /// The sizes, borrowed from the tensor (libtensor's array, valid while it lives: 'a).
    pub fn sizes(self) -> &'a [i64] {
        let n = self.ndim() as usize;
        if n == 0 {
            return &[];
        }
        // SAFETY: self is live for 'a (Tensor's invariant); tensor_sizes returns its ndim
        // (n >= 1) entries, valid while it lives, and nothing here resizes a tensor.
        unsafe { std::slice::from_raw_parts(self.sizes_ptr(), n) }
    }

    /// The strides in elements, borrowed as `sizes`.
    pub fn strides(self) -> &'a [i64] {
        let n = self.ndim() as usize;
        if n == 0 {
            return &[];
        }
        // SAFETY: self is live for 'a (Tensor's invariant); tensor_strides returns its ndim
        // (n >= 1) entries, valid while it lives, and nothing here restrides a tensor.
        unsafe { std::slice::from_raw_parts(self.strides_ptr(), n) }
    }

    /// Size of dim `d` (negative wraps; libtensor's one dim wrapping), or INDEX.
    pub fn size(self, d: i64) -> Result<i64> {
        let mut v = 0;
        // SAFETY: self is a live handle (Tensor's invariant); v is a writable i64.
        check(unsafe { sys::tensor_size(self.raw(), d, &mut v) })?;
        Ok(v)
    }

    /// Stride of dim `d` (negative wraps), or INDEX.
    pub fn stride(self, d: i64) -> Result<i64> {
        let mut v = 0;
        // SAFETY: self is a live handle (Tensor's invariant); v is a writable i64.
        check(unsafe { sys::tensor_stride(self.raw(), d, &mut v) })?;
        Ok(v)
    }

    pub fn dtype(self) -> i32 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_dtype(self.raw()) }
    }

    pub fn numel(self) -> i64 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_numel(self.raw()) }
    }

    pub fn storage_offset(self) -> i64 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_storage_offset(self.raw()) }
    }

    /// c10's data_ptr(): NULL for a tensor without elements, else storage data + offset.
    pub fn data_ptr(self) -> *mut c_void {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_data_ptr(self.raw()) }
    }

    pub fn is_contiguous(self, fmt: i32) -> bool {
        // SAFETY: self is a live handle (Tensor's invariant); any format code is accepted.
        unsafe { sys::tensor_is_contiguous(self.raw(), fmt) }
    }

    pub fn is_non_overlapping_and_dense(self) -> bool {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_is_non_overlapping_and_dense(self.raw()) }
    }

    pub fn suggest_memory_format(self) -> i32 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_suggest_memory_format(self.raw()) }
    }

    pub fn use_count(self) -> u64 {
        // SAFETY: self is a live handle (Tensor's invariant).
        unsafe { sys::tensor_use_count(self.raw()) }
    }

    /// Size in bytes of the tensor's storage.
    pub fn storage_nbytes(self) -> usize {
        // SAFETY: self is live (Tensor's invariant), so tensor_storage returns its live
        // storage (borrowed, held by the tensor for this call).
        unsafe { sys::storage_nbytes(sys::tensor_storage(self.raw())) }
    }

    /// The DLPack device of the tensor's storage.
    pub fn device(self) -> sys::tensor_device_t {
        // SAFETY: self is live (Tensor's invariant), so tensor_storage returns its live
        // storage (borrowed, held by the tensor for this call).
        unsafe { sys::storage_device(sys::tensor_storage(self.raw())) }
    }

    /// A new strong reference to the same tensor.
    pub fn retain(self) -> Owned {
        // SAFETY: self is a live handle (Tensor's invariant); tensor_retain returns it with
        // one more strong reference, which the Owned takes over.
        let h = unsafe { sys::tensor_retain(self.raw()) };
        Owned(NonNull::new(h).expect("tensor_retain of a live handle returned NULL"))
    }

    /// A new TensorImpl over the same storage, sizes, strides and offset.
    pub fn alias(self) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_alias(self.raw(), o) })
    }

    /// `self.view(sizes)` (PyTorch's view strides; an error where a view is impossible).
    pub fn view(self, sizes: &[i64]) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); sizes has sizes.len() entries;
        // o is make's out-parameter.
        make(|o| unsafe { sys::tensor_view(self.raw(), sizes.as_ptr(), sizes.len() as i64, o) })
    }

    /// `self.expand(sizes)` (new leading dims and expanded size-1 dims get stride 0).
    pub fn expand(self, sizes: &[i64]) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); sizes has sizes.len() entries;
        // o is make's out-parameter.
        make(|o| unsafe { sys::tensor_expand(self.raw(), sizes.as_ptr(), sizes.len() as i64, o) })
    }

    pub fn empty_like(self, fmt: i32) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_empty_like(self.raw(), fmt, o) })
    }

    pub fn clone_as(self, fmt: i32) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_clone(self.raw(), fmt, o) })
    }

    pub fn contiguous(self, fmt: i32) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_contiguous(self.raw(), fmt, o) })
    }

    pub fn to_dtype(self, dtype: i32) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_to_dtype(self.raw(), dtype, o) })
    }

    /// `self.narrow(dim, start, length)` (a view; negative `dim` / `start` wrap).
    pub fn narrow(self, dim: i64, start: i64, length: i64) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_narrow(self.raw(), dim, start, length, o) })
    }

    /// `self[..., start:end:step, ...]` along `dim` (a view; Python's clamping; `i64::MAX`
    /// as `end` is "to the end").
    pub fn slice(self, dim: i64, start: i64, end: i64, step: i64) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_slice(self.raw(), dim, start, end, step, o) })
    }

    /// `self.select(dim, index)` (a view without `dim`).
    pub fn select(self, dim: i64, index: i64) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_select(self.raw(), dim, index, o) })
    }

    /// `self.permute(dims)` (a view).
    pub fn permute(self, dims: &[i64]) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); dims has dims.len() entries;
        // o is make's out-parameter.
        make(|o| unsafe { sys::tensor_permute(self.raw(), dims.as_ptr(), dims.len() as i64, o) })
    }

    /// `self.squeeze(dim)` (a view; an alias when that dim's size is not 1).
    pub fn squeeze_dim(self, dim: i64) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_squeeze_dim(self.raw(), dim, o) })
    }

    /// `self.unsqueeze(dim)` (a view).
    pub fn unsqueeze(self, dim: i64) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_unsqueeze(self.raw(), dim, o) })
    }

    /// `self.reshape(sizes)`: a view when one is possible, else a contiguous copy.
    pub fn reshape(self, sizes: &[i64]) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); sizes has sizes.len() entries;
        // o is make's out-parameter.
        make(|o| unsafe { sys::tensor_reshape(self.raw(), sizes.as_ptr(), sizes.len() as i64, o) })
    }

    /// `self.view(dtype)` (the same bytes as another dtype; c10's rules).
    pub fn view_dtype(self, dtype: i32) -> Result<Owned> {
        // SAFETY: self is a live handle (Tensor's invariant); o is make's out-parameter.
        make(|o| unsafe { sys::tensor_view_dtype(self.raw(), dtype, o) })
    }

    /// `self.fill_(value)` (converted to the dtype, as libtensor converts).
    pub fn fill_f64(self, value: f64) -> Result<()> {
        // SAFETY: self is a live handle (Tensor's invariant).
        check(unsafe { sys::tensor_fill_f64_(self.raw(), value) })
    }

    /// Whether self and `other` view the same storage.
    pub fn shares_storage(self, other: Tensor) -> bool {
        // SAFETY: self and other are live handles (Tensor's invariant).
        unsafe { sys::tensor_shares_storage(self.raw(), other.raw()) }
    }

    /// A view of self's storage with these sizes, strides and (absolute) storage offset;
    /// libtensor checks it against the storage.
    pub fn as_strided(self, sizes: &[i64], strides: &[i64], offset: i64) -> Result<Owned> {
        let n = same_len(sizes, strides)?;
        // SAFETY: self is a live handle (Tensor's invariant); sizes and strides have n
        // entries each (same_len); o is make's out-parameter.
        make(|o| unsafe {
            sys::tensor_as_strided(self.raw(), sizes.as_ptr(), strides.as_ptr(), n, offset, o)
        })
    }

    /// A tensor of `dtype` over self's storage at element `offset` (of `dtype`); libtensor
    /// checks the layout against the storage.
    pub fn over_storage(
        self,
        offset: i64,
        sizes: &[i64],
        strides: &[i64],
        dtype: i32,
    ) -> Result<Owned> {
        let n = same_len(sizes, strides)?;
        // SAFETY: self is live (Tensor's invariant), so tensor_storage returns its live
        // storage, which tensor_from_storage retains for the new tensor; sizes and strides
        // have n entries each (same_len); o is make's out-parameter.
        make(|o| unsafe {
            sys::tensor_from_storage(
                sys::tensor_storage(self.raw()),
                offset,
                sizes.as_ptr(),
                strides.as_ptr(),
                n,
                dtype,
                o,
            )
        })
    }

    /// `self.copy_(src)` (broadcasting, converting).
    pub fn copy_from(self, src: Tensor) -> Result<()> {
        // SAFETY: self and src are live handles (Tensor's invariant).
        check(unsafe { sys::tensor_copy_(self.raw(), src.raw()) })
    }

    pub fn fill_i64(self, value: i64) -> Result<()> {
        // SAFETY: self is a live handle (Tensor's invariant).
        check(unsafe { sys::tensor_fill_i64(self.raw(), value) })
    }

    /// The element at index 0 in every dim, as float64 (libtensor converts).
    pub fn first_f64(self) -> Result<f64> {
        let idx = [0i64; 64];
        let mut v = 0.0;
        // SAFETY: self is a live handle (Tensor's invariant); idx has 64 entries, at least
        // the ndim libtensor reads (a libtensor tensor has at most 64 dims); v is writable.
        check(unsafe { sys::tensor_get_f64(self.raw(), idx.as_ptr(), self.ndim(), &mut v) })?;
        Ok(v)
    }

    /// The element at index 0 in every dim, as int64 (libtensor converts).
    pub fn first_i64(self) -> Result<i64> {
        let idx = [0i64; 64];
        let mut v = 0;
        // SAFETY: self is a live handle (Tensor's invariant); idx has 64 entries, at least
        // the ndim libtensor reads (a libtensor tensor has at most 64 dims); v is writable.
        check(unsafe { sys::tensor_get_i64(self.raw(), idx.as_ptr(), self.ndim(), &mut v) })?;
        Ok(v)
    }

    /// The elements self's layout reaches from its data pointer, as a slice of `T` (`T`
    /// must be its dtype's element type): a dense tensor's values in memory order.
    pub fn values<T: Element>(self) -> Result<&'a [T]> {
        let (p, len) = self.typed_extent::<T>()?;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: typed_extent checked that the len elements from p lie inside self's
        // storage (live for 'a: Tensor's invariant), are `T`s (dtype) and are aligned; a
        // kernel does not write to a tensor it reads through this slice.
        Ok(unsafe { std::slice::from_raw_parts(p, len) })
    }

    /// Data pointer and length (elements of `T`) of what the layout reaches, after checking
    /// dtype, alignment and the storage bounds.
    fn typed_extent<T: Element>(self) -> Result<(*mut T, usize)> {
        if self.dtype() != T::DTYPE || itemsize(T::DTYPE) != std::mem::size_of::<T>() {
            return err(
                sys::TENSOR_ERR_INTERNAL,
                format!(
                    "a {} tensor read as {}",
                    dtype_name(self.dtype()),
                    dtype_name(T::DTYPE)
                ),
            );
        }
        let len = extent(self.sizes(), self.strides(), self.dtype())?;
        let p = self.data_ptr().cast::<T>();
        if len == 0 {
            return Ok((p, 0));
        }
        let end = self
            .storage_offset()
            .checked_add(len)
            .and_then(|e| e.checked_mul(std::mem::size_of::<T>() as i64));
        if p.is_null()
            || !p.is_aligned()
            || end.is_none_or(|e| e as u64 > self.storage_nbytes() as u64)
        {
            return err(
                sys::TENSOR_ERR_INTERNAL,
                format!(
                    "tensor data at {p:p} ({len} elements from offset {}) is not an aligned range of its {}-byte storage",
                    self.storage_offset(),
                    self.storage_nbytes()
                ),
            );
        }
        Ok((p, len as usize))
    }
}

fn same_len(sizes: &[i64], strides: &[i64]) -> Result<i64> {
    if sizes.len() != strides.len() {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("sizes {sizes:?} and strides {strides:?} differ in length"),
        );
    }
    Ok(sizes.len() as i64)
}

/// A libtensor handle owned by Rust code: one strong reference, released on drop unless
/// `into_raw`.
pub struct Owned(NonNull<tensor_t>);

impl Owned {
    /// The tensor, borrowed for as long as self is.
    pub fn get(&self) -> Tensor<'_> {
        Tensor {
            raw: self.0,
            _live: PhantomData,
        }
    }

    /// Gives the reference up (to a C out-parameter).
    pub fn into_raw(self) -> Handle {
        let h = self.0.as_ptr();
        std::mem::forget(self);
        h
    }

    /// Takes over the reference a handle holds (None for NULL).
    ///
    /// # Safety
    ///
    /// `h` is NULL or a live handle holding one strong reference that the caller gives up
    /// (does not release or use as owned afterwards).
    pub unsafe fn adopt(h: Handle) -> Option<Owned> {
        NonNull::new(h).map(Owned)
    }

    /// The elements as a mutable slice of `T` (see [`Tensor::values`]).
    ///
    /// # Safety
    ///
    /// No other reference reaches this memory while the slice lives: true of a tensor this
    /// crate has just allocated (`empty_strided`), whose storage nothing else holds.
    pub unsafe fn values_mut<T: Element>(&mut self) -> Result<&mut [T]> {
        let (p, len) = self.get().typed_extent::<T>()?;
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: typed_extent checked that the len elements from p lie inside the storage
        // (live while self is), are `T`s and are aligned; the caller guarantees no other
        // reference reaches them, and `&mut self` keeps a second slice from self away.
        Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: self holds one strong reference to a live tensor (made by libtensor or
        // retained), given up exactly once here (into_raw forgets self instead).
        unsafe { sys::tensor_release(self.0.as_ptr()) }
    }
}

/// Runs a libtensor constructor with an out-parameter: the tensor it made, owned.
pub fn make(f: impl FnOnce(*mut Handle) -> sys::tensor_status_t) -> Result<Owned> {
    let mut h: Handle = std::ptr::null_mut();
    check(f(&mut h))?;
    match NonNull::new(h) {
        Some(p) => Ok(Owned(p)),
        None => err(
            sys::TENSOR_ERR_INTERNAL,
            "libtensor returned success without a tensor",
        ),
    }
}

/// An uninitialised tensor with these sizes and strides (libtensor allocates it: 64-byte
/// aligned, not shared).
pub fn empty_strided(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Owned> {
    let n = same_len(sizes, strides)?;
    // SAFETY: sizes and strides have n entries each (same_len); o is make's out-parameter.
    make(|o| unsafe { sys::tensor_empty_strided(sizes.as_ptr(), strides.as_ptr(), n, dtype, o) })
}

/// DLPack device types (`DLDeviceType`, the codes of libtensor's `tensor_device_t`).
pub const DL_CPU: i32 = 1;
pub const DL_CUDA: i32 = 2;
pub const DL_CUDA_HOST: i32 = 3;
pub const DL_METAL: i32 = 8;
pub const DL_ROCM: i32 = 10;
pub const DL_ROCM_HOST: i32 = 11;
pub const DL_CUDA_MANAGED: i32 = 13;
pub const DL_ONEAPI: i32 = 14;

/// An uninitialised contiguous tensor.
pub fn empty(sizes: &[i64], dtype: i32) -> Result<Owned> {
    let n = sizes.len() as i64;
    // SAFETY: sizes has n entries; o is make's out-parameter.
    make(|o| unsafe { sys::tensor_empty(sizes.as_ptr(), n, dtype, o) })
}

/// The host device of a tensor's storage, or DEVICE naming the function.
pub fn require_cpu(t: Tensor, what: &str) -> Result<()> {
    let d = t.device();
    if matches!(
        d.device_type,
        DL_CPU | DL_CUDA_HOST | DL_ROCM_HOST | DL_CUDA_MANAGED
    ) {
        Ok(())
    } else {
        err(
            sys::TENSOR_ERR_DEVICE,
            format!(
                "{what} is on DLPack device {}:{}; only CPU tensors are supported",
                d.device_type, d.device_id
            ),
        )
    }
}

/// Bytes of storage a layout at element offset `offset` reaches (libtensor's
/// `tensor_storage_nbytes_needed`, c10's computeStorageNbytes).
pub fn nbytes_needed(sizes: &[i64], strides: &[i64], offset: i64, dtype: i32) -> Result<usize> {
    let n = same_len(sizes, strides)?;
    let mut v = 0usize;
    // SAFETY: sizes and strides have n entries each (same_len); v is a writable size_t.
    check(unsafe {
        sys::tensor_storage_nbytes_needed(
            sizes.as_ptr(),
            strides.as_ptr(),
            n,
            offset,
            dtype,
            &mut v,
        )
    })?;
    Ok(v)
}

/// Elements a layout reaches from its first element (0 with a size-0 dim).
pub fn extent(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<i64> {
    let item = itemsize(dtype).max(1);
    Ok((nbytes_needed(sizes, strides, 0, dtype)? / item) as i64)
}

/// The strides of a dense tensor of `sizes` in memory format `fmt` (libtensor's
/// `tensor_format_strides`: c10's contiguous and channels-last rules).
pub fn format_strides(sizes: &[i64], fmt: i32) -> Result<Vec<i64>> {
    let mut st = vec![0i64; sizes.len()];
    // SAFETY: sizes has len entries, st len writable ones.
    check(unsafe {
        sys::tensor_format_strides(sizes.as_ptr(), sizes.len() as i64, fmt, st.as_mut_ptr())
    })?;
    Ok(st)
}

/// Row-major strides of `sizes` (size-0 and size-1 dims count as 1), from libtensor.
pub fn contiguous_strides(sizes: &[i64]) -> Result<Vec<i64>> {
    format_strides(sizes, sys::TENSOR_CONTIGUOUS_FORMAT)
}

/// An uninitialised dense tensor of `sizes` whose dims are laid out in `order`, outermost
/// first (ATen's `empty_permuted`): contiguous is `0, 1, ..., n-1`; channels-last
/// `0, 2, ..., n-1, 1`. Strides come from libtensor (a contiguous tensor of the permuted
/// sizes, permuted back).
pub fn empty_permuted(sizes: &[i64], order: &[usize], dtype: i32) -> Result<Owned> {
    if order.len() != sizes.len() {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("dim order {order:?} does not fit sizes {sizes:?}"),
        );
    }
    let permuted: Vec<i64> = order
        .iter()
        .map(|&d| sizes.get(d).copied().unwrap_or(-1))
        .collect();
    let mut back = vec![0i64; order.len()];
    for (i, &d) in order.iter().enumerate() {
        if let Some(b) = back.get_mut(d) {
            *b = i as i64;
        }
    }
    let n = permuted.len() as i64;
    let dense = empty(&permuted, dtype)?;
    // SAFETY: dense is a live tensor (owned above); back has its ndim entries (libtensor
    // refuses a repeated or missing dim); o is make's out-parameter.
    make(|o| unsafe { sys::tensor_permute(dense.get().raw(), back.as_ptr(), n, o) })
}

/// A oneDNN layout read from its serialized memory descriptor (`reader::onednn`) that holds
/// `dtype`, or INVALID_ARGUMENT naming the field or the two dtypes.
pub fn onednn_layout(blob: &[u8], dtype: i32) -> Result<crate::reader::onednn::Layout> {
    let l = crate::reader::onednn::Layout::parse(blob)
        .or_else(|b| err(sys::TENSOR_ERR_INVALID_ARGUMENT, b.msg))?;
    if l.dtype != dtype {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!(
                "the oneDNN layout holds {}, the tensor is {}",
                dtype_name(l.dtype),
                dtype_name(dtype)
            ),
        );
    }
    Ok(l)
}

//! Views: new metadata over the same storage, no data copied
//!
//! Metadata only: no byte of data is copied or touched. Each function
//! returns in `*out` a new owned (+1) tensor handle sharing `self`'s storage and version
//! counter; `*out` is left untouched on failure. Every function can also fail with
//! NULL_POINTER (`self`, `out`, or a non-empty list argument is NULL) and OUT_OF_MEMORY.
//! Dims may be negative (wrapped as in PyTorch).

use super::*;

/// `self.view(sizes)`: the same elements with a new shape (one size may be -1), whenever
/// the strides can express it (non-contiguous inputs included). Errors: NULL_POINTER,
/// OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`), SHAPE (element count
/// differs, or -1 ambiguous on 0 elements), INVALID_ARGUMENT (two -1, a size < -1, ndim
/// outside [0, 64]), NOT_VIEWABLE (the strides cannot express the shape: use
/// tensor_reshape), OVERFLOW (the strides of the new shape overflow int64).
#[no_mangle]
pub extern "C" fn tensor_view(
    self_: *const tensor_t,
    sizes: *const i64,
    ndim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.view(int_list(sizes, ndim, "sizes")?)
    })
}

/// `self.view(dtype)`: the same bytes as another element type. With a different itemsize
/// the last dim is rescaled (and the other strides and the offset with it). Errors:
/// NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`),
/// INVALID_ARGUMENT (unknown dtype code), SHAPE (0-dim with a different itemsize, last
/// stride != 1, last size / offset / a stride not divisible by the size ratio), OVERFLOW
/// (the rescaled sizes, strides or offset overflow int64).
#[no_mangle]
pub extern "C" fn tensor_view_dtype(
    self_: *const tensor_t,
    dtype: tensor_dtype_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.view_dtype(dtype_arg(dtype)?)
    })
}

/// `self.as_strided(sizes, strides, storage_offset)`: any layout over `self`'s storage,
/// bounds-checked against the storage's current size; `strides` and `storage_offset` are
/// in elements (not bytes). Errors: NULL_POINTER, OUT_OF_MEMORY, INVALID_ARGUMENT (negative
/// size, stride or offset; ndim outside [0, 64]), OVERFLOW, OUT_OF_BOUNDS (the layout
/// reaches past the storage).
#[no_mangle]
pub extern "C" fn tensor_as_strided(
    self_: *const tensor_t,
    sizes: *const i64,
    strides: *const i64,
    ndim: i64,
    storage_offset: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.as_strided(
            int_list(sizes, ndim, "sizes")?,
            int_list(strides, ndim, "strides")?,
            storage_offset,
        )
    })
}

/// `self.transpose(dim0, dim1)`: dims `dim0` and `dim1` swapped (equal dims: an alias).
/// Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below
/// `self`), INDEX (a dim out of range).
#[no_mangle]
pub extern "C" fn tensor_transpose(
    self_: *const tensor_t,
    dim0: i64,
    dim1: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.transpose(dim0, dim1)
    })
}

/// `self.t()`: the transpose of a tensor with <= 2 dims (0-D and 1-D: an alias). Errors:
/// NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`), SHAPE
/// (more than 2 dims).
#[no_mangle]
pub extern "C" fn tensor_transpose_2d(
    self_: *const tensor_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.transpose_2d()
    })
}

/// `self.permute(dims)`: dim `i` of the result is dim `dims[i]` of `self`; `ndim` must
/// equal self's number of dims. Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the
/// storage was shrunk below `self`), INVALID_ARGUMENT (wrong count, repeated dim), INDEX (a
/// dim out of range).
#[no_mangle]
pub extern "C" fn tensor_permute(
    self_: *const tensor_t,
    dims: *const i64,
    ndim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.permute(int_list(dims, ndim, "dims")?)
    })
}

/// `self.movedim(source, destination)`: dim `source` moved to position `destination`, the
/// others keeping their order. Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the
/// storage was shrunk below `self`), INDEX (a dim out of range).
#[no_mangle]
pub extern "C" fn tensor_movedim(
    self_: *const tensor_t,
    source: i64,
    destination: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.movedim(source, destination)
    })
}

/// `self[..., start:end:step, ...]` along `dim`, with Python's rules: negative start/end
/// count from the end, both are clamped to the dim (an empty range gives size 0), and
/// INT64_MAX as `end` means "to the end". Errors: NULL_POINTER, OUT_OF_MEMORY,
/// OUT_OF_BOUNDS (the storage was shrunk below `self`), INDEX (0-dim tensor, dim out of
/// range), INVALID_ARGUMENT (step <= 0), OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_slice(
    self_: *const tensor_t,
    dim: i64,
    start: i64,
    end: i64,
    step: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.slice(dim, start, end, step)
    })
}

/// `self.narrow(dim, start, length)`: elements `start .. start+length` of `dim`; `start`
/// may be negative (counts from the end) or equal to the size. Errors: NULL_POINTER,
/// OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`), INDEX (0-dim tensor,
/// dim or start out of range, start + length past the end), INVALID_ARGUMENT (length < 0),
/// OVERFLOW (the new storage offset, on a tensor without elements).
#[no_mangle]
pub extern "C" fn tensor_narrow(
    self_: *const tensor_t,
    dim: i64,
    start: i64,
    length: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.narrow(dim, start, length)
    })
}

/// `self.select(dim, index)`: the slice at `index` of `dim`, with `dim` removed; `index`
/// may be negative. Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was
/// shrunk below `self`), INDEX (0-dim tensor, dim or index out of range), OVERFLOW (the new
/// storage offset, on a tensor without elements).
#[no_mangle]
pub extern "C" fn tensor_select(
    self_: *const tensor_t,
    dim: i64,
    index: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.select(dim, index)
    })
}

/// `self.squeeze()`: every size-1 dim removed. Errors: NULL_POINTER, OUT_OF_MEMORY,
/// OUT_OF_BOUNDS (the storage was shrunk below `self`).
#[no_mangle]
pub extern "C" fn tensor_squeeze(
    self_: *const tensor_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || tensor_arg(self_, "self")?.squeeze())
}

/// `self.squeeze(dim)`: `dim` removed if its size is 1, else an alias. Errors:
/// NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`), INDEX
/// (dim out of range).
#[no_mangle]
pub extern "C" fn tensor_squeeze_dim(
    self_: *const tensor_t,
    dim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.squeeze_dim(dim)
    })
}

/// `self.unsqueeze(dim)`: a size-1 dim inserted at `dim` (in [-ndim-1, ndim]). Errors:
/// NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`), INDEX
/// (dim out of range), INVALID_ARGUMENT (would exceed 64 dims), OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_unsqueeze(
    self_: *const tensor_t,
    dim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.unsqueeze(dim)
    })
}

/// `self.expand(sizes)`: size-1 dims repeated with stride 0, new leading dims added; -1
/// keeps an existing size. The result's elements alias each other (writes into it fail with
/// OVERLAP). Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk
/// below `self`), SHAPE (fewer sizes than dims, a non-1 size that differs),
/// INVALID_ARGUMENT (-1 in a new leading dim, a negative size, ndim outside [0, 64]),
/// OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_expand(
    self_: *const tensor_t,
    sizes: *const i64,
    ndim: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.expand(int_list(sizes, ndim, "sizes")?)
    })
}

/// `self.unflatten(dim, sizes)`: `dim` split into `n` dims of `sizes` (one may be -1).
/// Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below
/// `self`), INDEX (0-dim tensor, dim out of range), INVALID_ARGUMENT (n == 0, two -1, a
/// size < -1), SHAPE (the sizes do not multiply to the dim's size), OVERFLOW (the strides
/// of the new shape overflow int64). Splitting one dim is always expressible as a view.
#[no_mangle]
pub extern "C" fn tensor_unflatten(
    self_: *const tensor_t,
    dim: i64,
    sizes: *const i64,
    n: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.unflatten(dim, int_list(sizes, n, "sizes")?)
    })
}

/// `self.diagonal(offset, dim1, dim2)`: the diagonal of the (dim1, dim2) planes, `offset`
/// above (> 0) or below (< 0) the main one, as a new last dim (size 0 when out of range);
/// dim1 and dim2 are removed. Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the
/// storage was shrunk below `self`), INDEX (a dim out of range), INVALID_ARGUMENT (dim1 and
/// dim2 are the same dim), OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_diagonal(
    self_: *const tensor_t,
    offset: i64,
    dim1: i64,
    dim2: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.diagonal(offset, dim1, dim2)
    })
}

/// `self.unfold(dim, size, step)`: all windows of `size` elements along `dim`, `step`
/// apart: `dim` becomes the window count, and a last dim of `size` walks one window.
/// Errors: NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below
/// `self`), INDEX (dim out of range), SHAPE (size larger than the dim), INVALID_ARGUMENT
/// (size < 0, step <= 0, would exceed 64 dims), OVERFLOW.
#[no_mangle]
pub extern "C" fn tensor_unfold(
    self_: *const tensor_t,
    dim: i64,
    size: i64,
    step: i64,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || {
        tensor_arg(self_, "self")?.unfold(dim, size, step)
    })
}

/// `aten::alias(self)`: a new handle (a new TensorImpl, not `self` retained) with the same
/// storage, sizes, strides, offset, dtype and version counter. Errors: NULL_POINTER,
/// OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`).
#[no_mangle]
pub extern "C" fn tensor_alias(self_: *const tensor_t, out: *mut *mut tensor_t) -> tensor_status_t {
    call_tensor(fn_name!(), out, || tensor_arg(self_, "self")?.alias())
}

/// `self.detach()`: like PyTorch's (there is no autograd here), a new TensorImpl sharing
/// the storage and the version counter, with the same geometry. Errors:
/// NULL_POINTER, OUT_OF_MEMORY, OUT_OF_BOUNDS (the storage was shrunk below `self`).
#[no_mangle]
pub extern "C" fn tensor_detach(
    self_: *const tensor_t,
    out: *mut *mut tensor_t,
) -> tensor_status_t {
    call_tensor(fn_name!(), out, || tensor_arg(self_, "self")?.detach())
}

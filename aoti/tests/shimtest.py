"""The shared harness of the shim tests (ops_*.py): loads libtensor_aoti.so
(RTLD_LOCAL: our symbols through this handle), libtensor.so.0 and the wheel's
libtorch_cpu.so, wraps torch tensors as libtensor handles over the same memory (`wrap`),
copies a libtensor tensor back to torch with its strides (`to_torch`), compares (`close`)
and counts checks (`check`, `summary`).

Usage from a test: `from shimtest import *` with LIBDIR as sys.argv[1].
"""

import ctypes as C
import os
import random
import sys

import torch

LIB = sys.argv[1]
aoti = C.CDLL(os.path.join(LIB, "libtensor_aoti.so"))  # RTLD_LOCAL: our symbols via this handle
lt = C.CDLL(os.path.join(LIB, "libtensor.so.0"))
torch_lib = C.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))

H = C.c_void_p
I64P = C.POINTER(C.c_int64)
for lib in (aoti, torch_lib):
    lib.aoti_torch_create_tensor_from_blob.argtypes = [
        C.c_void_p, C.c_int64, I64P, I64P, C.c_int64, C.c_int32, C.c_int32, C.c_int32, C.POINTER(H)]
    lib.aoti_torch__reinterpret_tensor.argtypes = [H, C.c_int64, I64P, I64P, C.c_int64, C.POINTER(H)]
    lib.aoti_torch_as_strided.argtypes = [H, I64P, I64P, C.POINTER(H)]
    for f in ("clone", "clone_preserve_strides"):
        getattr(lib, "aoti_torch_" + f).argtypes = [H, C.POINTER(H)]
    for f in ("get_dim", "get_storage_offset", "get_storage_size", "get_numel"):
        getattr(lib, "aoti_torch_" + f).argtypes = [H, I64P]
    for f in ("get_sizes", "get_strides"):
        getattr(lib, "aoti_torch_" + f).argtypes = [H, C.POINTER(I64P)]
    lib.aoti_torch_get_data_ptr.argtypes = [H, C.POINTER(C.c_void_p)]
    lib.aoti_torch_get_dtype.argtypes = [H, C.POINTER(C.c_int32)]
    lib.aoti_torch_get_device_type.argtypes = [H, C.POINTER(C.c_int32)]
    lib.aoti_torch_delete_tensor_object.argtypes = [H]
    lib.aoti_torch_item_float32.argtypes = [H, C.POINTER(C.c_float)]
    lib.aoti_torch_item_int64.argtypes = [H, I64P]
    lib.aoti_torch_scalar_to_tensor_int64.argtypes = [C.c_int64, C.POINTER(H)]
    lib.aoti_torch_scalar_to_tensor_float64.argtypes = [C.c_double, C.POINTER(H)]
    lib.aoti_torch_item_float64.argtypes = [H, C.POINTER(C.c_double)]
    lib.aoti_torch_empty_strided.argtypes = [
        C.c_int64, I64P, I64P, C.c_int32, C.c_int32, C.c_int32, C.POINTER(H)]
    lib.aoti_torch_dtype_element_size.argtypes = [C.c_int32]
    lib.aoti_torch_dtype_element_size.restype = C.c_size_t

class Device(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


lt.tensor_from_blob.argtypes = [C.c_void_p, I64P, I64P, C.c_int64, C.c_int32,
                                Device, C.c_void_p, C.c_void_p, C.POINTER(H)]
lt.tensor_ndim.argtypes = [H]
lt.tensor_ndim.restype = C.c_int64
lt.tensor_sizes.argtypes = [H]
lt.tensor_sizes.restype = I64P
lt.tensor_strides.argtypes = [H]
lt.tensor_strides.restype = I64P
lt.tensor_release.argtypes = [H]
lt.tensor_contiguous.argtypes = [H, C.c_int32, C.POINTER(H)]
lt.tensor_data_ptr.argtypes = [H]
lt.tensor_data_ptr.restype = C.c_void_p
lt.tensor_dtype.argtypes = [H]

passed = failed = 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", msg)


def arr(v):
    return (C.c_int64 * max(len(v), 1))(*v)


DT = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
      torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.complex64: 9,
      torch.complex128: 10, torch.bool: 11, torch.bfloat16: 15,
      torch.uint16: 27, torch.uint32: 28, torch.uint64: 29}
TD = {v: k for k, v in DT.items()}


def wrap(t):
    """A libtensor handle over torch tensor t's memory (same sizes and strides)."""
    h = H()
    dev = Device(1, 0)
    s = lt.tensor_from_blob(C.c_void_p(t.data_ptr()), arr(t.shape), arr(t.stride()), t.dim(),
                            DT[t.dtype], dev, None, None, C.byref(h))
    assert s == 0, s
    return h


def meta(h):
    n = lt.tensor_ndim(h)
    return [lt.tensor_sizes(h)[i] for i in range(n)], [lt.tensor_strides(h)[i] for i in range(n)]


def to_torch(h):
    """A torch copy of a libtensor tensor, with the same strides (a copy of the memory its
    layout reaches, viewed with its sizes and strides: overlapping layouts too)."""
    sizes, strides = meta(h)
    dtype = TD[lt.tensor_dtype(h)]
    item = torch.empty(0, dtype=dtype).element_size()
    n = 0 if 0 in sizes else 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    if n == 0:
        return torch.empty_strided(sizes, strides, dtype=dtype)
    buf = (C.c_char * (n * item)).from_address(lt.tensor_data_ptr(h))
    flat = torch.frombuffer(bytearray(buf), dtype=dtype)
    return torch.as_strided(flat, sizes, strides)


def close(a, b, tol):
    a, b = a.double(), b.double()
    if a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    return bool(((a - b).abs() <= tol * (1 + b.abs())).all())


def nonnull(t):
    """t, or for an empty t the same layout over a 1-element buffer (a non-NULL pointer)."""
    if t.numel() > 0:
        return t
    return torch.zeros(1, dtype=t.dtype).as_strided(t.shape, t.stride())


def same(got, want, tol):
    """Same dtype, sizes and strides; for floats NaN where `want` has NaN and the other
    values equal or within `tol` (relative to 1 + |want|); other dtypes equal."""
    if got.dtype != want.dtype or got.shape != want.shape or got.stride() != want.stride():
        return False
    if want.numel() == 0:
        return True
    if not want.is_floating_point():
        return bool((got == want).all())
    a, b = got.double(), want.double()
    nan = b.isnan()
    if not bool((a.isnan() == nan).all()):
        return False
    a, b = a[~nan], b[~nan]
    return bool(((a == b) | ((a - b).abs() <= tol * (1 + b.abs()))).all())


def summary(name):
    """Prints "<name>: N passed, N failed" and exits non-zero on a failure."""
    print(f"{name}: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


"""The shared harness of the shim tests (kernels.py, ops_*.py): loads libtensor_aoti.so
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


class _Shim:
    """libtensor_aoti's shim by the names models import: `aoti.aoti_torch_x` is the exported
    `ltai_torch_x` (libtensor_aoti exports no `aoti_*` name; its loader renames a model's
    imports the same way). Other attributes are the library's own."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        if name.startswith("aoti_"):
            name = "ltai_" + name[len("aoti_"):]
        return getattr(self._lib, name)


aoti = _Shim(C.CDLL(os.path.join(LIB, "libtensor_aoti.so")))  # RTLD_LOCAL: through this handle
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
      torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11, torch.bfloat16: 15,
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
    """A torch copy of a libtensor tensor, with the same strides."""
    sizes, strides = meta(h)
    c = H()
    assert lt.tensor_contiguous(h, 0, C.byref(c)) == 0
    dtype = TD[lt.tensor_dtype(h)]
    n = 1
    for s in sizes:
        n *= s
    item = torch.empty(0, dtype=dtype).element_size()
    buf = (C.c_char * max(n * item, 1)).from_address(lt.tensor_data_ptr(c)) if n else None
    flat = torch.frombuffer(bytearray(buf), dtype=dtype) if n else torch.empty(0, dtype=dtype)
    lt.tensor_release(c)
    out = torch.empty_strided(sizes, strides, dtype=dtype)
    out.copy_(flat.reshape(sizes))
    return out


def close(a, b, tol):
    a, b = a.double(), b.double()
    if a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    return bool(((a - b).abs() <= tol * (1 + b.abs())).all())


def summary(name):
    """Prints "<name>: N passed, N failed" and exits non-zero on a failure."""
    print(f"{name}: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


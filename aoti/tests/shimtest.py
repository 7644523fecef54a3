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


HP = C.POINTER(H)
I32P = C.POINTER(C.c_int32)

# Every real dtype, and the ones ATen's sorting / indexing kernels mostly take.
REAL = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
        torch.uint32, torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64]


def values(shape, dtype, g, nan=0.1):
    """Random values of `dtype` with many ties (small integers, halves), some NaN for floats."""
    gen = torch.Generator().manual_seed(g.randint(0, 2**31))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        t = torch.randint(-4, 5, shape, generator=gen).double() * 0.5
        if g.random() < 0.5:
            t = t + torch.randn(shape, generator=gen, dtype=torch.float64)
        if nan and g.random() < 0.5:
            t[torch.rand(shape, generator=gen) < nan] = float("nan")
        return t.to(dtype)
    lo = 0 if dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64) else -5
    return torch.randint(lo, 6, shape, generator=gen).to(dtype)


def relayout(t, g):
    """`t`'s values in a random layout: contiguous, permuted-dense, sliced (stride 2 in a dim),
    channels-last (4-D), or expanded along a dim (its values then repeat along it)."""
    r = g.random()
    if t.dim() >= 2 and r < 0.25:
        perm = list(range(t.dim()))
        g.shuffle(perm)
        inv = [perm.index(i) for i in range(t.dim())]
        return t.permute(perm).contiguous().permute(inv)
    if t.dim() >= 1 and r < 0.45:
        d = g.randrange(t.dim())
        big = list(t.shape)
        big[d] *= 2
        b = torch.zeros(big, dtype=t.dtype)
        idx = [slice(None)] * t.dim()
        idx[d] = slice(None, None, 2)
        b[tuple(idx)] = t
        return b[tuple(idx)]
    if t.dim() == 4 and r < 0.6:
        return t.contiguous(memory_format=torch.channels_last)
    if t.dim() >= 1 and r < 0.7 and t.numel():
        d = g.randrange(t.dim())
        return t.narrow(d, 0, 1).expand(t.shape) if t.shape[d] else t
    return t


def rand(shape, dtype, g):
    """values() of any dtype (complex: two real draws), in a random layout (relayout)."""
    if dtype.is_complex:
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        t = torch.complex(values(shape, part, g), values(shape, part, g))
    else:
        t = values(shape, dtype, g)
    return relayout(t, g)


def call(fn, *args):
    """fn(*args, &ret) of a shim function with one output: (status, [ret])."""
    return call_n(fn, 1, *args)


def call_n(fn, nout, *args):
    """fn(*args, &ret0, ..., &ret<nout-1>): (status, [rets])."""
    rets = [H() for _ in range(nout)]
    rc = fn(*args, *[C.byref(r) for r in rets])
    return rc, rets


def same(got, want, tol=0.0):
    """'' when `got` has `want`'s dtype, sizes, strides and values (NaN where it has NaN; for
    floats and complex within `tol` relative when tol > 0), else what differs."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} vs ATen {want.dtype}"
    if got.shape != want.shape:
        return f"sizes {list(got.shape)} vs ATen {list(want.shape)}"
    if got.stride() != want.stride():
        return f"strides {got.stride()} vs ATen {want.stride()}"
    if got.dtype.is_complex:  # as (real, imaginary) pairs, NaN where ATen has NaN
        dense = torch.contiguous_format
        return same(torch.view_as_real(got.clone(memory_format=dense)),
                    torch.view_as_real(want.clone(memory_format=dense)), tol)
    if got.dtype.is_floating_point:
        a, b = got.double(), want.double()
        if not torch.equal(torch.isnan(a), torch.isnan(b)):
            return f"NaN at other places: {got} vs ATen {want}"
        a, b = a.nan_to_num(0.0), b.nan_to_num(0.0)
        bad = (a - b).abs() > tol * (1 + b.abs()) if tol else a != b
        if bad.any():
            return f"values differ at {bad.nonzero()[:4].tolist()}: {a[bad][:4].tolist()} vs ATen {b[bad][:4].tolist()}"
        return ""
    if not torch.equal(got, want):
        return f"values differ: {got} vs ATen {want}"
    return ""


def against(name, ours, theirs, tol=0.0):
    """Runs ATen's `theirs()` (a tensor or a tuple of them) and our `ours()` (rc, [handles]):
    an ATen error must be rc 1; else rc 0 and each result `same` as ATen's. Releases ours."""
    try:
        want = theirs()
        want = want if isinstance(want, (tuple, list)) else (want,)
        why = None
    except Exception as e:  # ATen refuses: so must we
        want, why = None, str(e).split("\n")[0][:120]
    rc, hs = ours()
    if want is None:
        check(rc == 1, f"{name}: ATen raises ({why}) but rc {rc}")
        if rc == 0:
            for h in hs:
                lt.tensor_release(h)
        return
    if rc != 0:
        check(False, f"{name}: rc {rc} where ATen succeeds")
        return
    for k, (h, w) in enumerate(zip(hs, want)):
        got = to_torch(h)
        lt.tensor_release(h)
        diff = same(got, w, tol)
        check(not diff, f"{name} result {k}: {diff}")


def summary(name):
    """Prints "<name>: N passed, N failed" and exits non-zero on a failure."""
    print(f"{name}: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


"""DLPack interchange between libtensor and PyTorch (docs/c-api.md, "Interop"), both ways.

    /work/venv/bin/python tests/dlpack_torch.py --lib target/debug/libtensor.so

libtensor -> torch: our managed tensor is wrapped in a PyCapsule ("dltensor_versioned" or
"dltensor") by an object exposing __dlpack__ / __dlpack_device__, and imported with
torch.from_dlpack. torch -> libtensor: torch's capsule pointer goes to tensor_from_dlpack*,
and the capsule is renamed "used_dltensor[_versioned]" as the protocol requires (so torch
no longer owns it). Checks values, strides, zero-copy sharing, dtypes, the read-only flag,
that each side's deleter runs (reference counts drop back), and that a refused import
leaves the capsule to its producer. Prints "dlpack_torch: N passed, M failed".
"""

import argparse
import ctypes as C
import gc
import sys

import torch

# ---- DLPack 1.x layouts (public ABI) --------------------------------------------------


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [
        ("data", C.c_void_p),
        ("device", DLDevice),
        ("ndim", C.c_int32),
        ("dtype", DLDataType),
        ("shape", C.POINTER(C.c_int64)),
        ("strides", C.POINTER(C.c_int64)),
        ("byte_offset", C.c_uint64),
    ]


class DLPackVersion(C.Structure):
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]


class DLManagedTensorVersioned(C.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", C.c_void_p),
        ("deleter", C.c_void_p),
        ("flags", C.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(C.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", C.c_void_p),
        ("deleter", C.c_void_p),
    ]


# ---- libtensor ------------------------------------------------------------------------

# Our dtype codes (c10::ScalarType) and the torch dtype each must become.
DTYPES = {
    0: torch.uint8,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    7: torch.float64,
    9: torch.complex64,
    10: torch.complex128,
    11: torch.bool,
    15: torch.bfloat16,
    27: torch.uint16,
    28: torch.uint32,
    29: torch.uint64,
    23: torch.float8_e5m2,
    24: torch.float8_e4m3fn,
    25: torch.float8_e5m2fnuz,
    26: torch.float8_e4m3fnuz,
    44: torch.float8_e8m0fnu,
}
F4X2 = 45  # float4_e2m1fn_x2: no arange / values; round-tripped as bytes below
F32, F64 = 6, 7
ERR_DTYPE, ERR_READ_ONLY = 6, 13

api = C.pythonapi
api.PyCapsule_New.restype = C.py_object
api.PyCapsule_New.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]
api.PyCapsule_GetPointer.restype = C.c_void_p
api.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
api.PyCapsule_SetName.restype = C.c_int
api.PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
api.PyCapsule_GetName.restype = C.c_char_p
api.PyCapsule_GetName.argtypes = [C.py_object]


def load(path):
    lib = C.CDLL(path)
    P, I64, PP = C.c_void_p, C.c_int64, C.POINTER(C.c_void_p)
    sig = {
        "tensor_arange": ([I64, C.c_int32, PP], C.c_int32),
        "tensor_zeros": ([C.POINTER(I64), I64, C.c_int32, PP], C.c_int32),
        "tensor_as_strided": (
            [P, C.POINTER(I64), C.POINTER(I64), I64, I64, PP],
            C.c_int32,
        ),
        "tensor_release": ([P], None),
        "tensor_use_count": ([P], C.c_uint64),
        "tensor_ndim": ([P], I64),
        "tensor_sizes": ([P], C.POINTER(I64)),
        "tensor_strides": ([P], C.POINTER(I64)),
        "tensor_storage_offset": ([P], I64),
        "tensor_dtype": ([P], C.c_int32),
        "tensor_data_ptr": ([P], P),
        "tensor_storage": ([P], P),
        "storage_mark_read_only": ([P], C.c_int32),
        "storage_is_read_only": ([P], C.c_bool),
        "tensor_get_f64": ([P, C.POINTER(I64), I64, C.POINTER(C.c_double)], C.c_int32),
        "tensor_set_f64": ([P, C.POINTER(I64), I64, C.c_double], C.c_int32),
        "tensor_to_dlpack": ([P, PP], C.c_int32),
        "tensor_to_dlpack_unversioned": ([P, PP], C.c_int32),
        "tensor_from_dlpack": ([P, PP], C.c_int32),
        "tensor_from_dlpack_unversioned": ([P, PP], C.c_int32),
        "tensor_last_error": ([], C.c_char_p),
        "tensor_to_dtype": ([P, C.c_int32, PP], C.c_int32),
        "tensor_view_dtype": ([P, C.c_int32, PP], C.c_int32),
        "tensor_copy_": ([P, P], C.c_int32),
        "tensor_nbytes": ([P], C.c_size_t),
        "tensor_dlpack_exchange_api": ([], P),
        "tensor_memory_stats": ([P], C.c_int32),
    }
    for name, (args, res) in sig.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, res
    return lib


def ints(xs):
    return (C.c_int64 * len(xs))(*xs)


class Lib:
    def __init__(self, path):
        self.c = load(path)

    def ok(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: status {status}: {self.c.tensor_last_error().decode()}")

    def arange(self, n, dtype):
        out = C.c_void_p()
        self.ok(self.c.tensor_arange(n, dtype, C.byref(out)), "tensor_arange")
        return out.value

    def as_strided(self, t, sizes, strides, offset):
        out = C.c_void_p()
        st = self.c.tensor_as_strided(
            t, ints(sizes), ints(strides), len(sizes), offset, C.byref(out)
        )
        self.ok(st, "tensor_as_strided")
        return out.value

    def geometry(self, t):
        n = self.c.tensor_ndim(t)
        sz, st = self.c.tensor_sizes(t), self.c.tensor_strides(t)
        return [sz[i] for i in range(n)], [st[i] for i in range(n)]

    def get(self, t, index):
        v = C.c_double()
        self.ok(self.c.tensor_get_f64(t, ints(index), len(index), C.byref(v)), "get")
        return v.value

    def set(self, t, index, value):
        return self.c.tensor_set_f64(t, ints(index), len(index), value)


class Exported:
    """A producer object for torch.from_dlpack around one of our tensors."""

    def __init__(self, lib, t, versioned_ok=True):
        self.lib, self.t, self.versioned_ok = lib, t, versioned_ok
        self.capsule_names = []

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        out = C.c_void_p()
        if self.versioned_ok and max_version is not None and max_version[0] >= 1:
            self.lib.ok(self.lib.c.tensor_to_dlpack(self.t, C.byref(out)), "tensor_to_dlpack")
            name = b"dltensor_versioned"
        else:
            st = self.lib.c.tensor_to_dlpack_unversioned(self.t, C.byref(out))
            self.lib.ok(st, "tensor_to_dlpack_unversioned")
            name = b"dltensor"
        self.capsule_names.append(name)
        # No capsule destructor: the consumer renames and owns it (the test checks that).
        return api.PyCapsule_New(out.value, name, None)


def storage_uses(x):
    return torch._C._storage_Use_Count(x.untyped_storage()._cdata)


# ---- tests ----------------------------------------------------------------------------

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


def ours_to_torch(L, versioned):
    base = L.arange(40, F32)
    # t[i][j] = 3 + i + 5 j: a transposed, offset view of 0..39
    t = L.as_strided(base, [5, 4], [1, 5], 3)
    L.c.tensor_release(base)
    uses = L.c.tensor_use_count(t)
    prod = Exported(L, t, versioned_ok=versioned)
    x = torch.from_dlpack(prod)
    tag = "versioned" if versioned else "unversioned"
    check(
        prod.capsule_names == ([b"dltensor_versioned"] if versioned else [b"dltensor"]),
        f"{tag}: torch asked for {prod.capsule_names}",
    )
    check(L.c.tensor_use_count(t) == uses + 1, f"{tag}: export holds one reference")
    check(list(x.shape) == [5, 4] and list(x.stride()) == [1, 5], f"{tag}: {x.shape} {x.stride()}")
    check(x.dtype == torch.float32, f"{tag}: dtype {x.dtype}")
    check(x.data_ptr() == L.c.tensor_data_ptr(t), f"{tag}: zero-copy data pointer")
    want = torch.arange(40, dtype=torch.float32).as_strided((5, 4), (1, 5), 3)
    check(torch.equal(x, want), f"{tag}: values {x}")
    x[4, 3] = -7.0
    check(L.get(t, [4, 3]) == -7.0, f"{tag}: write through torch seen by libtensor")
    del x
    gc.collect()
    check(L.c.tensor_use_count(t) == uses, f"{tag}: torch called our deleter")
    L.c.tensor_release(t)


def ours_dtypes_to_torch(L):
    for code, tdt in DTYPES.items():
        t = L.arange(5, code)
        x = torch.from_dlpack(Exported(L, t))
        check(x.dtype == tdt, f"export dtype {code}: torch sees {x.dtype}, want {tdt}")
        want = torch.arange(5).to(tdt)
        if tdt.is_floating_point and tdt.itemsize == 1:
            # torch.equal has no float8 kernel: compare the bytes.
            x, want = x.view(torch.uint8), want.view(torch.uint8)
        check(torch.equal(x, want), f"export dtype {code}: values {x}")
        del x
        check(L.c.tensor_use_count(t) == 1, f"export dtype {code}: deleter ran")
        L.c.tensor_release(t)


def ours_read_only_to_torch(L):
    t = L.arange(4, F32)
    L.ok(L.c.storage_mark_read_only(L.c.tensor_storage(t)), "mark_read_only")
    out = C.c_void_p()
    L.ok(L.c.tensor_to_dlpack(t, C.byref(out)), "tensor_to_dlpack")
    m = DLManagedTensorVersioned.from_address(out.value)
    check(m.flags & 1 == 1, "read-only export sets DLPACK_FLAG_BITMASK_READ_ONLY")
    C.CFUNCTYPE(None, C.c_void_p)(m.deleter)(out.value)
    check(L.c.tensor_use_count(t) == 1, "calling the deleter from Python releases")
    st = L.c.tensor_to_dlpack_unversioned(t, C.byref(out))
    check(st == ERR_READ_ONLY, f"unversioned export of read-only refused ({st})")
    L.c.tensor_release(t)


# PyCapsule_SetName keeps the pointer: the names must outlive the capsules.
USED_NAME = {b"dltensor": b"used_dltensor", b"dltensor_versioned": b"used_dltensor_versioned"}


def import_capsule(L, cap, versioned):
    name = b"dltensor_versioned" if versioned else b"dltensor"
    ptr = api.PyCapsule_GetPointer(cap, name)
    out = C.c_void_p()
    fn = L.c.tensor_from_dlpack if versioned else L.c.tensor_from_dlpack_unversioned
    st = fn(ptr, C.byref(out))
    if st == 0:
        api.PyCapsule_SetName(cap, USED_NAME[name])
    return st, out.value


def torch_to_ours(L, versioned):
    tag = "torch->ours " + ("versioned" if versioned else "unversioned")
    base = torch.arange(42, dtype=torch.float64).reshape(6, 7)
    x = base[1:, 1::2].t()  # offset 8, sizes [3, 5], strides [2, 7]
    uses = storage_uses(base)
    cap = x.__dlpack__(max_version=(1, 0)) if versioned else x.__dlpack__()
    st, t = import_capsule(L, cap, versioned)
    check(st == 0, f"{tag}: status {st}")
    check(api.PyCapsule_GetName(cap).startswith(b"used_"), f"{tag}: capsule consumed")
    del cap
    sizes, strides = L.geometry(t)
    check(sizes == list(x.shape) and strides == list(x.stride()), f"{tag}: {sizes} {strides}")
    check(L.c.tensor_data_ptr(t) == x.data_ptr(), f"{tag}: zero-copy data pointer")
    check(L.c.tensor_dtype(t) == F64, f"{tag}: dtype")
    check(
        all(L.get(t, [i, j]) == x[i, j].item() for i in range(3) for j in range(5)),
        f"{tag}: values",
    )
    check(L.set(t, [2, 4], 99.0) == 0, f"{tag}: writable")
    check(x[2, 4].item() == 99.0, f"{tag}: write through libtensor seen by torch")
    del x  # its TensorImpl (or the one torch's DLPack context holds) keeps a reference
    gc.collect()
    check(storage_uses(base) == uses, f"{tag}: import keeps torch's tensor alive")
    L.c.tensor_release(t)
    gc.collect()
    check(storage_uses(base) == uses - 1, f"{tag}: releasing ran torch's deleter")


def torch_dtypes_to_ours(L):
    for code, tdt in DTYPES.items():
        x = torch.arange(6).to(tdt).reshape(2, 3)
        st, t = import_capsule(L, x.__dlpack__(max_version=(1, 0)), True)
        check(st == 0, f"import torch {tdt}: status {st}")
        if st == 0:
            check(L.c.tensor_dtype(t) == code, f"import torch {tdt}: our dtype")
            check(L.c.tensor_data_ptr(t) == x.data_ptr(), f"import torch {tdt}: zero-copy")
            L.c.tensor_release(t)


def torch_read_only_and_refusal(L):
    x = torch.arange(4, dtype=torch.float32)
    st, t = import_capsule(L, x.__dlpack__(max_version=(1, 0), read_only=True), True)
    check(st == 0, f"read-only import: status {st}")
    check(L.c.storage_is_read_only(L.c.tensor_storage(t)), "read-only flag honoured")
    check(L.set(t, [0], 5.0) == ERR_READ_ONLY, "write refused")
    check(x[0].item() == 0.0, "torch data untouched")
    L.c.tensor_release(t)

    # A dtype we cannot represent (complex32): refused, and the capsule stays torch's.
    base = torch.zeros(3, dtype=torch.complex32)
    y = base[:]
    uses = storage_uses(base)
    cap = y.__dlpack__(max_version=(1, 0))
    del y
    st, _ = import_capsule(L, cap, True)
    check(st == ERR_DTYPE, f"complex32 refused with DTYPE ({st})")
    msg = L.c.tensor_last_error().decode()
    check("unsupported DLPack dtype (code 5, bits 32" in msg, f"message names the type: {msg}")
    check(api.PyCapsule_GetName(cap) == b"dltensor_versioned", "refused capsule not consumed")
    gc.collect()
    check(storage_uses(base) == uses, "the refused capsule still holds torch's tensor")
    del cap  # torch's capsule destructor calls its deleter (a double call would crash)
    gc.collect()
    check(storage_uses(base) == uses - 1, "torch freed its own refused capsule")


def float4_both_ways(L):
    """float4_e2m1fn_x2 (bit copies only): torch -> ours -> torch keeps shape, strides and
    every byte, zero-copy, as DLPack's kDLFloat4_e2m1fn with bits 4, lanes 2 (packed)."""
    f4 = torch.float4_e2m1fn_x2
    raw = torch.arange(256, dtype=torch.uint8).reshape(16, 16)
    x = raw.view(f4).t()  # a strided view
    st, t = import_capsule(L, x.__dlpack__(max_version=(1, 3)), True)
    check(st == 0, f"import float4_e2m1fn_x2: status {st}")
    if st != 0:
        return
    check(L.c.tensor_dtype(t) == F4X2, "import float4_e2m1fn_x2: our dtype 45")
    check(L.geometry(t) == ([16, 16], [1, 16]), f"import float4: {L.geometry(t)}")
    check(L.c.tensor_data_ptr(t) == x.data_ptr(), "import float4: zero-copy")
    out = C.c_void_p()
    L.ok(L.c.tensor_to_dlpack(t, C.byref(out)), "tensor_to_dlpack float4")
    m = DLManagedTensorVersioned.from_address(out.value)
    dt = m.dl_tensor.dtype
    check((dt.code, dt.bits, dt.lanes) == (17, 4, 2), f"float4 export type {dt.code} {dt.bits} {dt.lanes}")
    check(m.flags & 4 == 0, "float4 export is packed (no IS_SUBBYTE_TYPE_PADDED)")
    check((m.version.major, m.version.minor) == (1, 3), "export version 1.3")
    C.CFUNCTYPE(None, C.c_void_p)(m.deleter)(out.value)
    y = torch.from_dlpack(Exported(L, t))
    check(y.dtype == f4 and y.shape == x.shape and y.stride() == x.stride(), f"float4 back: {y.dtype}")
    check(y.data_ptr() == x.data_ptr(), "float4 back: zero-copy")
    check(torch.equal(y.view(torch.uint8), x.view(torch.uint8)), "float4 back: bytes")
    # A contiguous copy in our library keeps every byte (a transpose of bytes).
    c = C.c_void_p()
    empty = C.c_void_p()
    L.ok(L.c.tensor_zeros(ints([16, 16]), 2, F4X2, C.byref(empty)), "zeros float4")
    L.ok(L.c.tensor_copy_(empty, t), "copy_ float4 -> float4")
    z = torch.from_dlpack(Exported(L, empty.value))
    check(torch.equal(z.view(torch.uint8), x.contiguous().view(torch.uint8)), "float4 copy_ bytes")
    st = L.c.tensor_to_dtype(t, F32, C.byref(c))
    check(st == ERR_DTYPE, f"float4 -> float32 refused ({st}), as torch refuses it")
    del y, z
    gc.collect()
    L.c.tensor_release(empty.value)
    L.c.tensor_release(t)


def empty_both_ways(L):
    out = C.c_void_p()
    L.ok(L.c.tensor_zeros(ints([0, 3]), 2, F32, C.byref(out)), "tensor_zeros")
    x = torch.from_dlpack(Exported(L, out.value))  # our export has data = NULL
    check(list(x.shape) == [0, 3] and x.dtype == torch.float32, f"empty export: {x.shape}")
    del x
    check(L.c.tensor_use_count(out.value) == 1, "empty export: deleter ran")
    L.c.tensor_release(out.value)
    st, t = import_capsule(L, torch.empty(0, 3).__dlpack__(max_version=(1, 0)), True)
    check(st == 0 and L.geometry(t) == ([0, 3], [3, 1]), f"empty import: {st}")
    if st == 0:
        L.c.tensor_release(t)


# ---- DLPack 1.3's C exchange API --------------------------------------------------------

SET_ERROR = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p, C.c_char_p)
ALLOCATOR = C.CFUNCTYPE(C.c_int, C.POINTER(DLTensor), C.POINTER(C.c_void_p), C.c_void_p, SET_ERROR)
DELETER = C.CFUNCTYPE(None, C.c_void_p)


class DLPackExchangeAPIHeader(C.Structure):
    _fields_ = [("version", DLPackVersion), ("prev_api", C.c_void_p)]


class DLPackExchangeAPI(C.Structure):
    _fields_ = [
        ("header", DLPackExchangeAPIHeader),
        ("managed_tensor_allocator", ALLOCATOR),
        ("managed_tensor_from_py_object_no_sync", C.c_void_p),
        ("managed_tensor_to_py_object_no_sync", C.c_void_p),
        ("dltensor_from_py_object_no_sync", C.c_void_p),
        ("current_work_stream", C.c_void_p),
    ]


class MemoryStats(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("live_storages", C.c_uint64), ("live_bytes", C.c_uint64)] + [
        (f"rest{i}", C.c_uint64) for i in range(16)
    ]


def live_bytes(L):
    st = MemoryStats()
    st.struct_size = C.sizeof(st)
    L.ok(L.c.tensor_memory_stats(C.byref(st)), "tensor_memory_stats")
    return st.live_bytes


class Allocated:
    """A producer for torch.from_dlpack around a managed tensor the allocator made."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return api.PyCapsule_New(self.ptr, b"dltensor_versioned", None)


def allocate(table, proto, errors):
    @SET_ERROR
    def record(_ctx, kind, message):
        errors.append((kind.decode(), message.decode()))

    out = C.c_void_p()
    r = table.managed_tensor_allocator(C.byref(proto), C.byref(out), None, record)
    return r, out.value


def prototype(code, bits, lanes, shape, device_type=1):
    n = len(shape)
    garbage = ints([7] * n) if n else None  # strides: dlpack.h says they are not read
    return DLTensor(None, DLDevice(device_type, 0), n, DLDataType(code, bits, lanes),
                    ints(shape) if n else None, garbage, 0)


def geometry_of(m):
    d = m.dl_tensor
    return ((m.version.major, m.version.minor), m.flags, (d.device.device_type, d.device.device_id),
            (d.dtype.code, d.dtype.bits, d.dtype.lanes), [d.shape[i] for i in range(d.ndim)],
            [d.strides[i] for i in range(d.ndim)], d.byte_offset)


def exchange_api(L):
    """tensor_dlpack_exchange_api's table, read through the same ctypes layout as torch's
    own table (torch.Tensor.__dlpack_c_exchange_api__): the allocator gives what torch's
    gives for the same prototype, and torch.from_dlpack consumes it zero-copy."""
    ours = DLPackExchangeAPI.from_address(L.c.tensor_dlpack_exchange_api())
    cap = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
    check(cap is not None, "torch 2.15 publishes its DLPack exchange table")
    theirs = None
    if cap is not None:
        theirs = DLPackExchangeAPI.from_address(api.PyCapsule_GetPointer(cap, b"dlpack_exchange_api"))
    hv = (ours.header.version.major, ours.header.version.minor)
    check(hv == (1, 3) and not ours.header.prev_api, f"exchange api: version {hv}")
    check(not ours.managed_tensor_from_py_object_no_sync and not ours.managed_tensor_to_py_object_no_sync
          and not ours.dltensor_from_py_object_no_sync, "exchange api: the Python-object entries are NULL")
    check(bool(ours.current_work_stream), "exchange api: current_work_stream")
    if theirs is not None:
        tv = (theirs.header.version.major, theirs.header.version.minor)
        check(tv == hv and bool(theirs.managed_tensor_from_py_object_no_sync),
              f"torch's table read through the same layout: version {tv}")
    cases = [((2, 32, 1), torch.float32, [3, 4]), ((0, 64, 1), torch.int64, [2, 0, 5]),
             ((2, 64, 1), torch.float64, []), ((4, 16, 1), torch.bfloat16, [5]),
             ((6, 8, 1), torch.bool, [2, 3]), ((10, 8, 1), torch.float8_e4m3fn, [4, 4])]
    cases.append(((17, 4, 2), torch.float4_e2m1fn_x2, [4, 3]))
    for (code, bits, lanes), tdt, shape in cases:
        tag = f"allocator {tdt} {shape}"
        before = live_bytes(L)
        errors = []
        r, ptr = allocate(ours, prototype(code, bits, lanes, shape), errors)
        check(r == 0 and ptr and not errors, f"{tag}: {r} {errors} {L.c.tensor_last_error()}")
        if r != 0:
            continue
        mine = geometry_of(DLManagedTensorVersioned.from_address(ptr))
        if theirs is not None:
            theirs_errors = []
            r2, p2 = allocate(theirs, prototype(code, bits, lanes, shape), theirs_errors)
            check(r2 == 0 and p2 and not theirs_errors, f"{tag}: torch's allocator: {r2} {theirs_errors}")
            if r2 == 0:
                m2 = DLManagedTensorVersioned.from_address(p2)
                check(geometry_of(m2) == mine, f"{tag}: ours {mine}, torch's {geometry_of(m2)}")
                DELETER(m2.deleter)(p2)
        x = torch.from_dlpack(Allocated(ptr))
        check(x.dtype == tdt and list(x.shape) == shape and x.is_contiguous(), f"{tag}: torch sees {x.dtype} {x.shape}")
        nbytes = x.numel() * x.element_size()
        check(live_bytes(L) >= before + nbytes, f"{tag}: the block is libtensor's ({live_bytes(L) - before} bytes)")
        if nbytes:
            check(x.data_ptr() == DLManagedTensorVersioned.from_address(ptr).dl_tensor.data, f"{tag}: zero-copy")
            x.reshape(-1).view(torch.uint8).fill_(0x35)
            check(C.string_at(x.data_ptr(), nbytes) == b"\x35" * nbytes, f"{tag}: torch's writes in libtensor's block")
        del x
        gc.collect()
        check(live_bytes(L) == before, f"{tag}: torch called the deleter ({live_bytes(L) - before} bytes live)")
    # Errors: -1 and one SetError call with a Python exception name, nothing allocated.
    for proto, kind, needle in [
        (prototype(99, 8, 1, [2]), "TypeError", "99"),
        (prototype(2, 32, 1, [2, -3]), "ValueError", "-3"),
        (prototype(2, 32, 1, [2], device_type=2), "ValueError", "device_type 2"),
        (prototype(2, 32, 1, [1 << 62, 8]), "OverflowError", "overflow"),
        (prototype(2, 32, 1, [1 << 60]), "MemoryError", "allocate"),
    ]:
        errors = []
        r, ptr = allocate(ours, proto, errors)
        ok = r == -1 and not ptr and len(errors) == 1 and errors[0][0] == kind and needle in errors[0][1]
        check(ok and errors[0][1].startswith("tensor_dlpack_managed_tensor_allocator: "),
              f"allocator error {kind}: {r} {errors}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="target/debug/libtensor.so")
    L = Lib(ap.parse_args().lib)
    ours_to_torch(L, versioned=True)
    ours_to_torch(L, versioned=False)
    ours_dtypes_to_torch(L)
    ours_read_only_to_torch(L)
    torch_to_ours(L, versioned=True)
    torch_to_ours(L, versioned=False)
    torch_dtypes_to_ours(L)
    torch_read_only_and_refusal(L)
    float4_both_ways(L)
    empty_both_ways(L)
    exchange_api(L)
    print(f"dlpack_torch: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

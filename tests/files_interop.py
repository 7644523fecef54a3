"""Files between libtensor and NumPy / safetensors / PyTorch (issue 11), both ways.

    $VENV/bin/python tests/files_interop.py --lib target/debug/libtensor.so

NumPy -> libtensor: arrays written by np.save and np.lib.format.open_memmap (every dtype
both have; C and Fortran order; 0-d and empty; format versions 1.0, 2.0, 3.0; big-endian,
which libtensor converts) load value-for-value with tensor_load_npy, as views over the
file mapping. libtensor -> NumPy: tensor_save_npy files (contiguous and transposed
sources) read back with np.load, also with mmap_mode="r".
safetensors -> libtensor: files from safetensors.numpy.save_file and
safetensors.torch.save_file (bfloat16 and float8 included) load with
tensor_safetensors_load; float8 is refused by name. libtensor -> safetensors:
tensor_save_safetensors files read back by safetensors.torch.load_file and
safetensors.numpy.load_file. Metadata and map modes: a file with __metadata__ written by
safetensors.torch.save_file reads back pair for pair through
tensor_safetensors_metadata_key / _value; tensor_save_safetensors_metadata files read
back with safe_open(...).metadata(); a Hugging-Face-style re-save (load, save with the
loaded metadata) keeps the pairs, through us and through the Python package; a
non-string value is refused by both; a TENSOR_MAP_PRIVATE write is invisible to the
package, a TENSOR_MAP_SHARED one is what it reads next. Prints "files_interop: N passed, M failed".
"""

import argparse
import ctypes as C
import os
import sys
import tempfile

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import load_file as np_load_st
from safetensors.numpy import save_file as np_save_st
from safetensors.torch import load_file as torch_load_st
from safetensors.torch import save_file as torch_save_st

# Our dtype codes (c10::ScalarType) -> NumPy dtype (bfloat16: raw uint16 bits).
NP = {
    0: np.uint8,
    1: np.int8,
    2: np.int16,
    3: np.int32,
    4: np.int64,
    5: np.float16,
    6: np.float32,
    7: np.float64,
    9: np.complex64,
    10: np.complex128,
    11: np.bool_,
    15: np.uint16,
    27: np.uint16,
    28: np.uint32,
    29: np.uint64,
}
BF16 = 15
TORCH = {
    0: torch.uint8,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    7: torch.float64,
    9: torch.complex64,
    11: torch.bool,
    15: torch.bfloat16,
    27: torch.uint16,
    28: torch.uint32,
    29: torch.uint64,
}
OK, ERR_DTYPE, ERR_READ_ONLY, ERR_IO = 0, 6, 13, 14
MAP_READ_ONLY, MAP_SHARED, MAP_PRIVATE = 0, 1, 2

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


class Device(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


def load(path):
    lib = C.CDLL(path)
    P, I64, PP = C.c_void_p, C.c_int64, C.POINTER(C.c_void_p)
    sig = {
        "tensor_release": ([P], None),
        "tensor_ndim": ([P], I64),
        "tensor_sizes": ([P], C.POINTER(I64)),
        "tensor_strides": ([P], C.POINTER(I64)),
        "tensor_dtype": ([P], C.c_int32),
        "tensor_numel": ([P], I64),
        "tensor_data_ptr": ([P], P),
        "tensor_storage": ([P], P),
        "storage_data_ptr": ([P], P),
        "storage_nbytes": ([P], C.c_size_t),
        "storage_is_mapped": ([P], C.c_bool),
        "storage_is_read_only": ([P], C.c_bool),
        "tensor_from_blob": (
            [P, C.POINTER(I64), C.POINTER(I64), I64, C.c_int32, Device, P, P, PP],
            C.c_int32,
        ),
        "tensor_transpose": ([P, I64, I64, PP], C.c_int32),
        "tensor_set_f64": ([P, C.POINTER(I64), I64, C.c_double], C.c_int32),
        "tensor_load_npy": ([C.c_char_p, C.c_int32, PP], C.c_int32),
        "tensor_save_npy": ([C.c_char_p, P], C.c_int32),
        "tensor_safetensors_load": ([C.c_char_p, PP], C.c_int32),
        "tensor_safetensors_release": ([P], None),
        "tensor_safetensors_count": ([P], C.c_size_t),
        "tensor_safetensors_name": ([P, C.c_size_t], C.c_char_p),
        "tensor_safetensors_at": ([P, C.c_size_t, PP], C.c_int32),
        "tensor_save_safetensors": (
            [C.c_char_p, C.POINTER(C.c_char_p), C.POINTER(C.c_void_p), C.c_size_t],
            C.c_int32,
        ),
        "tensor_load_safetensors_mode": ([C.c_char_p, C.c_int32, PP], C.c_int32),
        "tensor_safetensors_get": ([P, C.c_char_p, PP], C.c_int32),
        "tensor_safetensors_metadata_count": ([P], C.c_size_t),
        "tensor_safetensors_metadata_key": ([P, C.c_size_t], C.c_char_p),
        "tensor_safetensors_metadata_value": ([P, C.c_size_t], C.c_char_p),
        "tensor_save_safetensors_metadata": (
            [
                C.c_char_p,
                C.POINTER(C.c_char_p),
                C.POINTER(C.c_void_p),
                C.c_size_t,
                C.POINTER(C.c_char_p),
                C.POINTER(C.c_char_p),
                C.c_size_t,
            ],
            C.c_int32,
        ),
        "tensor_last_error": ([], C.c_char_p),
    }
    for name, (args, res) in sig.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, res
    return lib


def to_numpy(L, t):
    """A copy of tensor t's elements, read through its own sizes / strides / pointer."""
    nd = L.tensor_ndim(t)
    sizes = [L.tensor_sizes(t)[i] for i in range(nd)]
    strides = [L.tensor_strides(t)[i] for i in range(nd)]
    dt = np.dtype(NP[L.tensor_dtype(t)])
    if L.tensor_numel(t) == 0:
        return np.empty(sizes, dt)
    extent = 1 + sum((n - 1) * s for n, s in zip(sizes, strides))
    buf = (C.c_char * (extent * dt.itemsize)).from_address(L.tensor_data_ptr(t))
    arr = np.ndarray(sizes, dt, buf, 0, [s * dt.itemsize for s in strides])
    return arr.copy()


def from_numpy(L, arr, code):
    """A libtensor tensor over arr's memory (arr must outlive it)."""
    sizes = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (C.c_int64 * max(arr.ndim, 1))(*[s // arr.itemsize for s in arr.strides])
    out = C.c_void_p()
    dev = Device(1, 0)
    st = L.tensor_from_blob(arr.ctypes.data or 8, sizes, strides, arr.ndim, code, dev, None, None, C.byref(out))
    assert st == OK, L.tensor_last_error()
    return out


def in_mapping(L, t):
    s = L.tensor_storage(t)
    base, n, p = L.storage_data_ptr(s), L.storage_nbytes(s), L.tensor_data_ptr(t)
    return L.storage_is_mapped(s) and base <= p <= base + n


def sample(code, shape, rng):
    dt = NP[code]
    n = int(np.prod(shape)) if shape else 1
    if dt == np.bool_:
        a = rng.integers(0, 2, n).astype(np.bool_)
    elif np.issubdtype(dt, np.complexfloating):
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    elif np.issubdtype(dt, np.floating):
        a = (rng.standard_normal(n) * 100).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return a.reshape(shape)


def load_npy(L, path, mode=MAP_READ_ONLY):
    out = C.c_void_p()
    st = L.tensor_load_npy(path.encode(), mode, C.byref(out))
    return st, out


def test_numpy_to_us(L, d, rng):
    codes = [c for c in NP if c != BF16]
    for code in codes:
        for shape, fortran in [((3, 4), False), ((2, 3, 4), True), ((), False), ((0, 5), False), ((7,), False)]:
            a = sample(code, shape, rng)
            if fortran:
                a = np.asfortranarray(a)
            p = os.path.join(d, "np.npy")
            np.save(p, a)
            st, t = load_npy(L, p)
            what = f"np.save {a.dtype} {shape} fortran={fortran}"
            check(st == OK, f"{what}: load ({L.tensor_last_error()})")
            if st != OK:
                continue
            got = to_numpy(L, t)
            check(got.dtype == a.dtype and got.shape == a.shape, f"{what}: dtype/shape {got.dtype} {got.shape}")
            check(np.array_equal(got, a), f"{what}: values")
            if a.size:
                check(in_mapping(L, t), f"{what}: a view over the file mapping")
            check(L.storage_is_read_only(L.tensor_storage(t)), f"{what}: read-only")
            L.tensor_release(t)
    # open_memmap, format versions 2.0 and 3.0, Fortran order.
    for version in [(1, 0), (2, 0), (3, 0)]:
        p = os.path.join(d, "mm.npy")
        m = np.lib.format.open_memmap(p, mode="w+", dtype=np.float32, shape=(5, 6), fortran_order=True, version=version)
        m[:] = np.arange(30, dtype=np.float32).reshape(5, 6)
        m.flush()
        del m
        st, t = load_npy(L, p)
        check(st == OK, f"open_memmap v{version}: load")
        if st == OK:
            check(np.array_equal(to_numpy(L, t), np.arange(30, dtype=np.float32).reshape(5, 6)), f"open_memmap v{version}: values")
            L.tensor_release(t)
    # Shared mode: a write reaches the file numpy reads.
    p = os.path.join(d, "rw.npy")
    np.save(p, np.zeros((2, 2), np.int32))
    st, t = load_npy(L, p, MAP_SHARED)
    check(st == OK, "shared load")
    if st == OK:
        check(L.tensor_set_f64(t, (C.c_int64 * 2)(1, 0), 2, 9.0) == OK, "shared write")
        L.tensor_release(t)
        check(np.load(p)[1, 0] == 9, "shared write reached the file")
    # Big-endian: converted (a copy in native order).
    for dt in [">f4", ">i8", ">c16", ">u2"]:
        a = sample({">f4": 6, ">i8": 4, ">c16": 10, ">u2": 27}[dt], (4, 3), rng).astype(dt)
        p = os.path.join(d, "be.npy")
        np.save(p, a)
        st, t = load_npy(L, p)
        check(st == OK, f"big-endian {dt}: converted")
        if st == OK:
            check(np.array_equal(to_numpy(L, t), a.astype(a.dtype.newbyteorder("="))), f"big-endian {dt}: values")
            check(not L.storage_is_mapped(L.tensor_storage(t)), f"big-endian {dt}: a copy")
            L.tensor_release(t)
        st, t = load_npy(L, p, MAP_SHARED)
        check(st == ERR_DTYPE, f"big-endian {dt}: shared mode refused")
    # Unsupported NumPy dtypes: a DTYPE status.
    for a in [np.array(["ab"]), np.zeros(2, np.float128) if hasattr(np, "float128") else np.array(["x"]), np.zeros(2, "M8[ns]"), np.zeros(2, [("a", "<f4")])]:
        p = os.path.join(d, "bad.npy")
        np.save(p, a)
        st, t = load_npy(L, p)
        check(st == ERR_DTYPE, f"unsupported {a.dtype}: DTYPE ({st})")


def test_us_to_numpy(L, d, rng):
    for code in [c for c in NP if c != BF16]:
        a = sample(code, (3, 5), rng)
        t = from_numpy(L, a, code)
        tt = C.c_void_p()
        check(L.tensor_transpose(t, 0, 1, C.byref(tt)) == OK, "transpose")
        for src, want, tag in [(t, a, "contiguous"), (tt, a.T, "transposed")]:
            p = os.path.join(d, "us.npy")
            check(L.tensor_save_npy(p.encode(), src) == OK, f"save {a.dtype} {tag}")
            back = np.load(p)
            check(back.dtype == a.dtype and np.array_equal(back, want), f"np.load {a.dtype} {tag}")
            mm = np.load(p, mmap_mode="r")
            check(np.array_equal(mm, want), f"np.load mmap {a.dtype} {tag}")
            del mm
        L.tensor_release(tt)
        L.tensor_release(t)
    z = np.array(3.25, np.float64)
    t = from_numpy(L, z, 7)
    p = os.path.join(d, "zero_d.npy")
    check(L.tensor_save_npy(p.encode(), t) == OK, "save 0-d")
    check(np.load(p).shape == () and np.load(p) == 3.25, "0-d read back")
    L.tensor_release(t)
    e = np.zeros((0, 4), np.int16)
    t = from_numpy(L, e, 2)
    check(L.tensor_save_npy(p.encode(), t) == OK and np.load(p).shape == (0, 4), "empty read back")
    L.tensor_release(t)
    b = np.zeros(3, np.uint16)
    t = from_numpy(L, b, BF16)
    check(L.tensor_save_npy(p.encode(), t) == ERR_DTYPE, "bfloat16 .npy refused")
    L.tensor_release(t)


def load_st(L, path):
    f = C.c_void_p()
    st = L.tensor_safetensors_load(path.encode(), C.byref(f))
    if st != OK:
        return st, {}
    out = {}
    for i in range(L.tensor_safetensors_count(f)):
        t = C.c_void_p()
        assert L.tensor_safetensors_at(f, i, C.byref(t)) == OK
        out[L.tensor_safetensors_name(f, i).decode()] = t
    L.tensor_safetensors_release(f)
    return st, out


def test_safetensors_to_us(L, d, rng):
    # safetensors.numpy: every dtype it has.
    arrays = {}
    for code in [c for c in NP if c not in (BF16, 10)]:
        arrays[f"n{code}"] = sample(code, (2, 3, 2), rng)
    arrays["scalar"] = np.array(1.5, np.float32)
    arrays["empty"] = np.zeros((0, 3), np.int32)
    p = os.path.join(d, "np.safetensors")
    np_save_st(arrays, p)
    st, ts = load_st(L, p)
    check(st == OK, f"safetensors.numpy file: load ({L.tensor_last_error()})")
    check(set(ts) == set(arrays), "safetensors.numpy: names")
    for k, t in ts.items():
        got = to_numpy(L, t)
        check(got.dtype == arrays[k].dtype and np.array_equal(got, arrays[k]), f"safetensors.numpy {k}: values")
        if arrays[k].size:
            check(in_mapping(L, t), f"safetensors.numpy {k}: a view over the mapping")
        L.tensor_release(t)
    # safetensors.torch: bfloat16 and the unsigned types too.
    tensors = {}
    for code, tdt in TORCH.items():
        base = torch.from_numpy(sample(6, (4, 5), rng))
        tensors[f"t{code}"] = (base * 10).to(tdt) if tdt not in (torch.uint16, torch.uint32, torch.uint64) else torch.from_numpy(sample(code, (4, 5), rng))
    p = os.path.join(d, "torch.safetensors")
    torch_save_st(tensors, p)
    st, ts = load_st(L, p)
    check(st == OK, f"safetensors.torch file: load ({L.tensor_last_error()})")
    for k, t in ts.items():
        want = tensors[k]
        got = to_numpy(L, t)
        if want.dtype == torch.bfloat16:
            ok = np.array_equal(got, want.view(torch.int16).numpy().view(np.uint16))
        else:
            ok = np.array_equal(got, want.numpy())
        check(ok and L.tensor_dtype(t) == int(k[1:]), f"safetensors.torch {k}: values")
        L.tensor_release(t)
    # float8: every kind torch saves loads with c10's dtype code and the same bytes (float4:
    # test_safetensors_float4).
    f8 = {"e5m2": (torch.float8_e5m2, 23), "e4m3fn": (torch.float8_e4m3fn, 24),
          "e5m2fnuz": (torch.float8_e5m2fnuz, 25), "e4m3fnuz": (torch.float8_e4m3fnuz, 26),
          "e8m0fnu": (torch.float8_e8m0fnu, 44)}
    vals = torch.linspace(-3, 3, 12).reshape(3, 4)
    saved = {k: (vals.abs() if k == "e8m0fnu" else vals).to(tdt) for k, (tdt, _) in f8.items()}
    p = os.path.join(d, "f8.safetensors")
    torch_save_st(saved, p)
    st, ts = load_st(L, p)
    check(st == OK, f"float8 file: load ({L.tensor_last_error()})")
    for k, t in ts.items():
        want = saved[k].view(torch.uint8).numpy().tobytes()
        got = C.string_at(L.tensor_data_ptr(t), L.tensor_numel(t))
        check(L.tensor_dtype(t) == f8[k][1] and got == want, f"float8 {k}: dtype code and bytes")
        L.tensor_release(t)
    # Truncated file: IO.
    with open(os.path.join(d, "torch.safetensors"), "rb") as f:
        data = f.read()
    p = os.path.join(d, "trunc.safetensors")
    with open(p, "wb") as f:
        f.write(data[:-1])
    st, _ = load_st(L, p)
    check(st == ERR_IO, f"truncated: IO ({st})")


def test_us_to_safetensors(L, d, rng):
    arrays, handles = {}, []
    for code in [c for c in NP if c != 10]:
        a = sample(code, (3, 2), rng)
        arrays[f"x{code}"] = (code, a)
        handles.append(from_numpy(L, a, code))
    a = sample(6, (4, 3), rng)
    t = from_numpy(L, a, 6)
    tt = C.c_void_p()
    L.tensor_transpose(t, 0, 1, C.byref(tt))
    arrays["xT"] = (6, a.T)
    handles.append(tt)
    names = (C.c_char_p * len(arrays))(*[k.encode() for k in arrays])
    ptrs = (C.c_void_p * len(handles))(*[h.value for h in handles])
    p = os.path.join(d, "us.safetensors")
    st = L.tensor_save_safetensors(p.encode(), names, ptrs, len(handles))
    check(st == OK, f"tensor_save_safetensors ({L.tensor_last_error()})")
    back = torch_load_st(p)
    check(set(back) == set(arrays), "safetensors.torch reads our names")
    for k, (code, want) in arrays.items():
        got = back[k]
        if code == BF16:
            ok = got.dtype == torch.bfloat16 and np.array_equal(got.view(torch.int16).numpy().view(np.uint16), want)
        else:
            ok = got.dtype == TORCH[code] and np.array_equal(got.numpy(), want)
        check(ok, f"safetensors.torch reads {k}")
    # safetensors.numpy reads a file without bfloat16.
    keep = [k for k in arrays if arrays[k][0] != BF16]
    names2 = (C.c_char_p * len(keep))(*[k.encode() for k in keep])
    idx = list(arrays)
    ptrs2 = (C.c_void_p * len(keep))(*[handles[idx.index(k)].value for k in keep])
    st = L.tensor_save_safetensors(p.encode(), names2, ptrs2, len(keep))
    check(st == OK, "save without bfloat16")
    back = np_load_st(p)
    for k in keep:
        check(np.array_equal(back[k], arrays[k][1]) and back[k].dtype == arrays[k][1].dtype, f"safetensors.numpy reads {k}")
    for h in handles:
        L.tensor_release(h)
    L.tensor_release(t)


def test_safetensors_float4(L, d, rng):
    """float4_e2m1fn_x2 [.., n] is F4 [.., 2n] with the same bytes, as safetensors.torch
    writes and reads it; both ways, and an odd F4 last dim refused by name."""
    raw = rng.integers(0, 256, (3, 4), dtype=np.uint8)
    want = torch.from_numpy(raw.copy()).view(torch.float4_e2m1fn_x2)
    p = os.path.join(d, "f4.safetensors")
    torch_save_st({"w": want}, p)
    with open(p, "rb") as f:
        data = f.read()
    check(b'"dtype":"F4","shape":[3,8]' in data, "safetensors.torch writes float4 [3, 4] as F4 [3, 8]")
    st, ts = load_st(L, p)
    check(st == OK, f"float4 file: load ({L.tensor_last_error()})")
    if st == OK:
        t = ts["w"]
        nd = L.tensor_ndim(t)
        sizes = [L.tensor_sizes(t)[i] for i in range(nd)]
        got = C.string_at(L.tensor_data_ptr(t), L.tensor_numel(t))
        check(L.tensor_dtype(t) == 45 and sizes == [3, 4], f"float4: dtype {L.tensor_dtype(t)}, sizes {sizes}")
        check(got == raw.tobytes(), "float4: the same bytes")
        q = os.path.join(d, "f4_us.safetensors")
        names = (C.c_char_p * 1)(b"w")
        ptrs = (C.c_void_p * 1)(t.value)
        st = L.tensor_save_safetensors(q.encode(), names, ptrs, 1)
        check(st == OK, f"float4: tensor_save_safetensors ({L.tensor_last_error()})")
        back = torch_load_st(q)["w"]
        check(back.dtype == torch.float4_e2m1fn_x2 and tuple(back.shape) == (3, 4), f"safetensors.torch reads our float4 ({back.dtype}, {tuple(back.shape)})")
        check(np.array_equal(back.view(torch.uint8).numpy(), raw), "safetensors.torch reads our float4's bytes")
        L.tensor_release(t)
    # F4 [2, 3] (3 bytes): no whole pairs; safetensors.torch refuses it too.
    hdr = b'{"w":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}}'
    p = os.path.join(d, "f4_odd.safetensors")
    with open(p, "wb") as f:
        f.write(len(hdr).to_bytes(8, "little") + hdr + bytes(3))
    st, _ = load_st(L, p)
    check(st == ERR_DTYPE and b"even last dim" in L.tensor_last_error(), f"odd F4 last dim refused ({st})")
    try:
        torch_load_st(p)
        check(False, "safetensors.torch refuses an odd F4 last dim")
    except Exception:
        check(True, "safetensors.torch refuses an odd F4 last dim")


def load_st_meta(L, path, mode=MAP_READ_ONLY):
    """(status, {name: tensor handle}, {key: value}) of a file loaded with `mode`."""
    f = C.c_void_p()
    st = L.tensor_load_safetensors_mode(path.encode(), mode, C.byref(f))
    if st != OK:
        return st, {}, {}
    ts = {}
    for i in range(L.tensor_safetensors_count(f)):
        t = C.c_void_p()
        assert L.tensor_safetensors_at(f, i, C.byref(t)) == OK
        ts[L.tensor_safetensors_name(f, i).decode()] = t
    meta = {}
    keys = []
    for i in range(L.tensor_safetensors_metadata_count(f)):
        k = L.tensor_safetensors_metadata_key(f, i).decode()
        keys.append(k)
        meta[k] = L.tensor_safetensors_metadata_value(f, i).decode()
    check(keys == sorted(keys, key=lambda k: k.encode()), f"metadata keys sorted bytewise: {keys}")
    check(L.tensor_safetensors_metadata_key(f, len(keys)) is None, "metadata key one past the end: NULL")
    L.tensor_safetensors_release(f)
    return st, ts, meta


def save_st_meta(L, path, ts, meta):
    """tensor_save_safetensors_metadata of {name: handle} and {key: value}."""
    names = (C.c_char_p * max(len(ts), 1))(*[k.encode() for k in ts])
    ptrs = (C.c_void_p * max(len(ts), 1))(*[t.value for t in ts.values()])
    keys = (C.c_char_p * max(len(meta), 1))(*[k.encode() for k in meta])
    values = (C.c_char_p * max(len(meta), 1))(*[v.encode() for v in meta.values()])
    return L.tensor_save_safetensors_metadata(path.encode(), names, ptrs, len(ts), keys, values, len(meta))


def test_safetensors_metadata(L, d, rng):
    meta = {
        "format": "pt",
        "author": "libtensor tests",
        "unicode \u00fc\u4e2d": "value \u00e7\u00f8d\u00e9 \U0001f600",
        "json-ish": '{"nested": [1, 2]}',
        "": "empty key",
    }
    tensors = {
        "w": torch.from_numpy(sample(6, (8, 4), rng)),
        "b": torch.arange(4, dtype=torch.int64),
        "h": torch.from_numpy(sample(6, (3,), rng)).to(torch.bfloat16),
    }
    # Python writes, we read.
    p = os.path.join(d, "meta_py.safetensors")
    torch_save_st(tensors, p, metadata=meta)
    st, ts, got = load_st_meta(L, p)
    check(st == OK, f"safetensors.torch file with metadata: load ({L.tensor_last_error()})")
    check(got == meta, f"metadata read back: {got}")
    # We re-save it Hugging-Face style (the loaded tensors, the loaded metadata).
    q = os.path.join(d, "meta_resaved.safetensors")
    st = save_st_meta(L, q, ts, got)
    check(st == OK, f"tensor_save_safetensors_metadata ({L.tensor_last_error()})")
    with safe_open(q, "pt") as f:
        check(f.metadata() == meta, f"safe_open reads our metadata: {f.metadata()}")
        check(set(f.keys()) == set(tensors), "safe_open reads our names")
        for k in tensors:
            check(torch.equal(f.get_tensor(k), tensors[k]), f"re-saved tensor {k}")
    for t in ts.values():
        L.tensor_release(t)
    # The package re-saves our file the same way; we read its metadata again.
    r = os.path.join(d, "meta_resaved_py.safetensors")
    with safe_open(q, "pt") as f:
        torch_save_st({k: f.get_tensor(k) for k in f.keys()}, r, metadata=f.metadata())
    st, ts, got = load_st_meta(L, r)
    check(st == OK and got == meta, f"metadata through a Python re-save of our file: {got}")
    for t in ts.values():
        L.tensor_release(t)
    # No metadata: none read, none written.
    st = save_st_meta(L, q, {}, {})
    check(st == OK, "save with no tensors and no metadata")
    with safe_open(q, "pt") as f:
        check(f.metadata() is None and list(f.keys()) == [], "no metadata written")
    # A non-string value (Python's writer refuses to make one; a crafted header): the package
    # and we both refuse the file.
    hdr = b'{"__metadata__":{"n":1},"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    hdr += b" " * (-len(hdr) % 8)
    bad = os.path.join(d, "meta_int.safetensors")
    with open(bad, "wb") as f:
        f.write(len(hdr).to_bytes(8, "little") + hdr + b"\0")
    try:
        safe_open(bad, "pt").metadata()
        py_refused = False
    except Exception:
        py_refused = True
    st, _, _ = load_st_meta(L, bad)
    check(py_refused and st == ERR_IO, f"a non-string metadata value refused by both ({py_refused}, {st})")


def test_safetensors_map_modes(L, d, rng):
    w = torch.from_numpy(sample(6, (16, 16), rng))
    p = os.path.join(d, "modes.safetensors")
    torch_save_st({"w": w}, p, metadata={"format": "pt"})
    idx = (C.c_int64 * 2)(3, 5)
    # READ_ONLY: writes refused.
    st, ts, _ = load_st_meta(L, p, MAP_READ_ONLY)
    check(st == OK and L.storage_is_read_only(L.tensor_storage(ts["w"])), "read-only load")
    check(L.tensor_set_f64(ts["w"], idx, 2, 42.0) == ERR_READ_ONLY, "read-only: a write refused")
    L.tensor_release(ts["w"])
    # PRIVATE: writable, the file untouched.
    st, ts, meta = load_st_meta(L, p, MAP_PRIVATE)
    check(st == OK and meta == {"format": "pt"}, f"private load ({L.tensor_last_error()})")
    check(in_mapping(L, ts["w"]) and not L.storage_is_read_only(L.tensor_storage(ts["w"])), "private: a writable view of the mapping")
    check(L.tensor_set_f64(ts["w"], idx, 2, 42.0) == OK, "private: a write")
    check(to_numpy(L, ts["w"])[3, 5] == 42.0, "private: the write is seen here")
    check(torch.equal(torch_load_st(p)["w"], w), "private: the file is untouched")
    L.tensor_release(ts["w"])
    # SHARED: the write reaches the file.
    st, ts, _ = load_st_meta(L, p, MAP_SHARED)
    check(st == OK, f"shared load ({L.tensor_last_error()})")
    check(L.tensor_set_f64(ts["w"], idx, 2, 42.0) == OK, "shared: a write")
    L.tensor_release(ts["w"])
    want = w.clone()
    want[3, 5] = 42.0
    check(torch.equal(torch_load_st(p)["w"], want), "shared: the package reads the write")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    L = load(args.lib)
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as d:
        test_numpy_to_us(L, d, rng)
        test_us_to_numpy(L, d, rng)
        test_safetensors_to_us(L, d, rng)
        test_us_to_safetensors(L, d, rng)
        test_safetensors_float4(L, d, rng)
        test_safetensors_metadata(L, d, rng)
        test_safetensors_map_modes(L, d, rng)
    print(f"files_interop: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()

"""Tests aoti_torch_cpu__fft_r2c and aoti_torch_cpu__fft_c2c against ATen's
torch.ops.aten._fft_r2c / _fft_c2c (and so torch.fft) in the same process: random shapes and
dim lists (lengths with small prime factors, with large ones through Bluestein, primes),
every normalization code, onesided and two-sided, forward and inverse, strided inputs
(transposed, sliced, expanded, channels-last); values, output dtypes, sizes and strides;
zero sizes; and the error cases. Then the complex companions Inductor leaves as fallbacks
beside them: view_as_real, view_as_complex (views: same memory) and abs of a complex tensor.

Usage: python ops_fft.py LIBDIR. Prints "ops_fft: N passed, N failed".
"""

import math
import random

import torch

import shimtest
from shimtest import C, H, I64P, aoti, arr, check, lt, to_torch, wrap

HP = C.POINTER(H)
for name in ("_fft_r2c", "_fft_c2c"):
    getattr(aoti, "aoti_torch_cpu_" + name).argtypes = [H, I64P, C.c_int64, C.c_int64, C.c_int32, HP]

# Relative to the largest |value| of the result.
TOL = {torch.complex64: 2e-6, torch.complex128: 1e-12}


def ours(op, x, dims, norm, flag):
    hx, r = wrap(x), H()
    rc = getattr(aoti, "aoti_torch_cpu_" + op)(hx, arr(dims), len(dims), norm, int(flag), C.byref(r))
    got = None
    if rc == 0:
        got = to_torch(r)
        lt.tensor_release(r)
    lt.tensor_release(hx)
    return rc, got


def compare(what, op, x, dims, norm, flag):
    want = getattr(torch.ops.aten, op)(x, dims, norm, bool(flag))
    rc, got = ours(op, x, dims, norm, flag)
    ok = rc == 0 and got.dtype == want.dtype and got.shape == want.shape
    ok = ok and (got.stride() == want.stride() or want.numel() == 0)
    detail = f"rc {rc}"
    if rc == 0:
        detail += f" {got.dtype} {tuple(got.shape)} {got.stride()} vs ATen {want.dtype} {tuple(want.shape)} {want.stride()}"
    if ok and want.numel():
        scale = max(want.abs().max().item(), 1e-30)
        e = (got - want).abs().max().item() / scale
        ok = e <= TOL[want.dtype]
        detail += f" error {e:.3g}"
    check(ok, f"{what} {op} {list(x.shape)} {x.stride()} {x.dtype} dims {dims} norm {norm} flag {flag}: {detail}")


LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 17, 31, 37, 41, 45, 60, 64, 97, 100]
g = random.Random(11)
torch.manual_seed(11)


def layout(t):
    r = g.random()
    if r < 0.3 and t.dim() >= 2:
        return t.transpose(0, -1).contiguous().transpose(0, -1)
    if r < 0.45 and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if r < 0.6:
        big = torch.randn([s + 2 for s in t.shape], dtype=t.dtype)
        return big[tuple(slice(1, 1 + s) for s in t.shape)]
    if r < 0.7 and t.dim() >= 2:
        return t[:1].expand(t.shape)
    return t


for trial in range(160):
    nd = g.randint(1, 4)
    budget = 600
    shape = []
    for _ in range(nd):
        s = g.choice(LENGTHS)
        while s > 1 and s * math.prod(shape) > budget:
            s = g.choice(LENGTHS[:8])
        shape.append(s)
    nt = g.randint(1, nd)
    dims = g.sample(range(nd), nt)
    norm = g.choice([0, 1, 2])
    real_dt = g.choice([torch.float32, torch.float64])
    x = layout(torch.randn(shape, dtype=real_dt))
    if trial % 2 == 0:
        compare("random", "_fft_r2c", x, dims, norm, g.random() < 0.6)
    else:
        cx = layout(torch.randn(shape, dtype=torch.complex64 if real_dt == torch.float32 else torch.complex128))
        compare("random", "_fft_c2c", cx, dims, norm, g.random() < 0.5)

# Long 1-D transforms: powers of two, smooth lengths, primes and large prime factors.
for n in (1000, 1009, 1024, 2 * 3 * 5 * 7 * 11, 4093, 3 * 1031, 29 * 31, 8192):
    for dt in (torch.float32, torch.float64):
        compare(f"length {n}", "_fft_r2c", torch.randn(n, dtype=dt), [0], 0, True)
        cdt = torch.complex64 if dt == torch.float32 else torch.complex128
        compare(f"length {n}", "_fft_c2c", torch.randn(2, n, dtype=cdt), [1], 2, False)

# Normalization codes past 2 scale by 1 / n in the MKL build of torch, as here.
x = torch.randn(4, 6)
for norm in (3, -1):
    compare("norm code", "_fft_r2c", x, [1], norm, True)
    compare("norm code", "_fft_c2c", x.to(torch.complex64), [0, 1], norm, True)

# Zero sizes: an empty output, contiguous (ATen's strides for these).
for shape, dims in (((3, 0), [1]), ((3, 0), [0]), ((0, 5), [1]), ((0, 5), [0, 1]), ((2, 0, 3), [2]),
                    ((2, 0, 3), [0, 2]), ((0,), [0])):
    for op, flag in (("_fft_r2c", True), ("_fft_r2c", False), ("_fft_c2c", True)):
        xs = torch.randn(shape) if op == "_fft_r2c" else torch.randn(shape, dtype=torch.complex64)
        try:
            want = getattr(torch.ops.aten, op)(xs, dims, 0, flag)
        except RuntimeError:
            want = None
        rc, got = ours(op, xs, dims, 0, flag)
        if want is None:  # ATen refuses a onesided transform of an empty last dim
            check(rc == 1, f"zero size {op} {shape} {dims} {flag}: rc {rc}, ATen refuses")
        else:
            check(rc == 0 and got.shape == want.shape and got.stride() == want.stride() and got.dtype == want.dtype,
                  f"zero size {op} {shape} {dims} {flag}: rc {rc} {None if got is None else (tuple(got.shape), got.stride())} vs {tuple(want.shape)} {want.stride()}")

x = torch.randn(3, 4)
for what, op, t, dims in (
    ("float16", "_fft_r2c", x.half(), [1]),
    ("bfloat16", "_fft_r2c", x.bfloat16(), [1]),
    ("int64", "_fft_r2c", x.long(), [1]),
    ("complex input", "_fft_r2c", x.to(torch.complex64), [1]),
    ("real input", "_fft_c2c", x, [1]),
    ("no dims", "_fft_r2c", x, []),
    ("dim out of range", "_fft_r2c", x, [2]),
    ("negative dim", "_fft_c2c", x.to(torch.complex64), [-1]),
    ("0-d", "_fft_r2c", torch.tensor(1.0), []),
):
    try:
        getattr(torch.ops.aten, op)(t, dims, 0, True)
        aten_fails = False
    except (RuntimeError, TypeError):
        aten_fails = True
    rc, _ = ours(op, t, dims, 0, True)
    check(aten_fails and rc == 1, f"{what}: rc {rc}, ATen fails {aten_fails}")
# A repeated dim: refused (ATen's MKL path copies the dim list into a permutation of ndim
# entries, writing past it; on a 3-D input an internal assert catches it, on 2-D not).
for t, dims in ((torch.randn(3, 4, 5), [1, 1]), (torch.randn(3, 4), [1, 1])):
    rc, _ = ours("_fft_r2c", t, dims, 0, True)
    check(rc == 1, f"repeated dim {dims} of {list(t.shape)}: rc {rc}")
check(aoti.aoti_torch_cpu__fft_r2c(None, arr([0]), 1, 0, 1, C.byref(H())) == 1, "NULL self must fail")
hx = wrap(x)
check(aoti.aoti_torch_cpu__fft_c2c(hx, None, 1, 0, 1, C.byref(H())) == 1, "NULL dim must fail")
check(aoti.aoti_torch_cpu__fft_r2c(hx, arr([0]), 1, 0, 1, None) == 1, "NULL ret0 must fail")
lt.tensor_release(hx)

# ---- view_as_real, view_as_complex, abs --------------------------------------------------
for name in ("view_as_real", "view_as_complex", "abs"):
    getattr(aoti, "aoti_torch_cpu_" + name).argtypes = [H, HP]


def wrap_with_offset(t):
    """A handle over t's storage with t's storage offset (the shim's from_blob convention)."""
    h = H()
    assert aoti.aoti_torch_create_tensor_from_blob(
        C.c_void_p(t.untyped_storage().data_ptr()), t.dim(), arr(t.shape), arr(t.stride()),
        t.storage_offset(), shimtest.DT[t.dtype], 0, 0, C.byref(h)) == 0
    return h


def unary(name, t):
    """(rc, result as torch, whether the result's data pointer is t's)."""
    ht, r = wrap_with_offset(t), H()
    rc = getattr(aoti, "aoti_torch_cpu_" + name)(ht, C.byref(r))
    got, shared = None, None
    if rc == 0:
        got = to_torch(r)
        shared = lt.tensor_data_ptr(r) == t.data_ptr() if t.numel() else True
        lt.tensor_release(r)
    lt.tensor_release(ht)
    return rc, got, shared


def complex_layouts(shape, dtype):
    t = torch.randn(shape, dtype=dtype)
    yield t
    if t.dim() >= 2:
        yield t.transpose(0, -1)
        yield torch.randn([s + 1 for s in shape], dtype=dtype)[tuple(slice(1, None) for _ in shape)]
        yield t[:1].expand(shape)
    if t.dim() == 4:
        yield t.contiguous(memory_format=torch.channels_last)


for shape in ((), (5,), (3, 4), (2, 0, 3), (2, 3, 4, 5)):
    for dtype in (torch.complex64, torch.complex128):
        for t in complex_layouts(shape, dtype):
            what = f"{dtype} {list(t.shape)} {t.stride()} offset {t.storage_offset()}"
            want = torch.view_as_real(t)
            rc, got, shared = unary("view_as_real", t)
            check(rc == 0 and shared and got.dtype == want.dtype and got.shape == want.shape
                  and got.stride() == want.stride() and torch.equal(got, want), f"view_as_real {what}: rc {rc}")
            want = torch.abs(t)
            rc, got, _ = unary("abs", t)
            ok = rc == 0 and got.dtype == want.dtype and got.shape == want.shape
            ok = ok and (got.stride() == want.stride() or want.numel() == 0)
            ok = ok and torch.allclose(got, want, rtol=2e-7 if dtype == torch.complex64 else 1e-15, atol=0)
            check(ok, f"abs {what}: rc {rc}" + (f" {got.stride()} vs {want.stride()}" if got is not None else ""))
        for t in complex_layouts(shape + (2,), torch.float32 if dtype == torch.complex64 else torch.float64):
            what = f"{t.dtype} {list(t.shape)} {t.stride()} offset {t.storage_offset()}"
            try:
                want = torch.view_as_complex(t)
            except RuntimeError:
                want = None
            rc, got, shared = unary("view_as_complex", t)
            if want is None:
                check(rc == 1, f"view_as_complex {what}: rc {rc}, ATen refuses")
            else:
                check(rc == 0 and shared and got.dtype == want.dtype and got.shape == want.shape
                      and got.stride() == want.stride() and torch.equal(got, want), f"view_as_complex {what}: rc {rc}")
# abs at the extremes: no overflow or underflow of the squares.
t = torch.tensor([complex(3e38, 3e38), complex(1e-40, 1e-40), complex(float("nan"), 1), complex(float("inf"), float("nan")), 0j],
                 dtype=torch.complex64)
rc, got, _ = unary("abs", t)
check(rc == 0 and torch.allclose(got, torch.abs(t), rtol=2e-7, atol=0, equal_nan=True), f"abs extremes: {got}")
for name, t in (("view_as_real", torch.randn(3)), ("abs", torch.randn(3)),
                ("view_as_complex", torch.randn(3, 4)), ("view_as_complex", torch.tensor(1.0)),
                ("view_as_complex", torch.randn(2, 4)[:, 1:3]), ("view_as_complex", torch.randn(4, 2).T.contiguous().T),
                ("view_as_complex", torch.randn(3, 2).half())):
    rc, _, _ = unary(name, t)
    check(rc == 1, f"{name} of {t.dtype} {list(t.shape)} {t.stride()}: rc {rc}, expected 1")

shimtest.summary("ops_fft")

"""Tests aoti_torch_cpu__weight_int8pack_mm and aoti_torch_cpu__int_mm_out against ATen's
torch.ops.aten._weight_int8pack_mm / _int_mm.out in the same process: random sizes
(including 0), every activation dtype, strided activations, output dtypes, sizes and
strides, int32 wraparound, and the error cases.

(ATen's int8pack kernel reads `scales` as if contiguous whatever its strides: a strided
`scales` is compared with ATen on its contiguous copy. Its vectorised bfloat16 kernel makes
aligned 16-element loads of A's rows and crashes unless K is a multiple of 16 and the rows
are 32-byte aligned: other bfloat16 cases are compared with the same sum in float64 torch
ops, `A @ (B * scales)^T` with `B * scales` in float32 as ATen's, rounded to bfloat16.)

Usage: python ops_int8mm.py LIBDIR. Prints "ops_int8mm: N passed, N failed".
"""

import random

import torch

import shimtest
from shimtest import C, H, aoti, check, lt, to_torch, wrap

HP = C.POINTER(H)
aoti.aoti_torch_cpu__weight_int8pack_mm.argtypes = [H, H, H, HP]
aoti.aoti_torch_cpu__int_mm_out.argtypes = [H, H, H]

g = random.Random(3)
torch.manual_seed(3)


def w8(a, b, s):
    """(rc, result) of our _weight_int8pack_mm."""
    ha, hb, hs, r = wrap(a), wrap(b), wrap(s), H()
    rc = aoti.aoti_torch_cpu__weight_int8pack_mm(ha, hb, hs, C.byref(r))
    got = None
    if rc == 0:
        got = to_torch(r)
        lt.tensor_release(r)
    for h in (ha, hb, hs):
        lt.tensor_release(h)
    return rc, got


# Relative to the largest |value| of the row: the sums run in another order than ATen's, so
# a 16-bit result may round to the neighbouring value.
TOL = {torch.float32: 1e-5, torch.bfloat16: 8e-3, torch.float16: 1e-3}
for trial in range(120):
    dtype = [torch.float32, torch.bfloat16, torch.float16][trial % 3]
    m, k, n = g.randint(0 if trial % 17 == 0 else 1, 9), g.randint(1, 70), g.randint(1, 40)
    if trial % 23 == 0:
        k = 0
    if trial % 29 == 0:
        n = 0
    layout = g.randint(0, 2)
    if dtype == torch.bfloat16 and g.random() < 0.5:
        k = 16 * g.randint(1, 4)  # ATen's vectorised bfloat16 kernel runs
    if layout == 0:
        a = torch.randn(m, k).to(dtype)
    elif layout == 1:  # rows of a wider tensor
        a = torch.randn(m, k + 5).to(dtype)[:, 2:2 + k]
    else:  # one row broadcast (stride 0)
        a = torch.randn(1, k).to(dtype).expand(m, k)
    b = torch.randint(-128, 128, (n, k), dtype=torch.int8)
    s = (torch.rand(n) * 0.1 + 0.01).to(dtype)
    strided_s = g.random() < 0.2
    if strided_s:
        s = (torch.rand(2 * n) * 0.1 + 0.01).to(dtype)[::2]
    aligned = k % 16 == 0 and (a.stride(0) * 2) % 32 == 0 and a.data_ptr() % 32 == 0
    if dtype == torch.bfloat16 and not aligned:
        w = (b.float() * s.float()[:, None]).double()
        want = (a.double() @ w.T).to(dtype)
    else:
        want = torch.ops.aten._weight_int8pack_mm(a, b, s.contiguous())
    rc, got = w8(a, b, s)
    what = f"_weight_int8pack_mm {dtype} A {list(a.shape)} {a.stride()} N {n} scales {s.stride()}"
    ok = rc == 0 and got.dtype == want.dtype and got.shape == want.shape
    ok = ok and got.stride() == want.stride()
    if ok and want.numel():
        scale = want.double().abs().amax(dim=1, keepdim=True).clamp(min=1e-30)
        e = ((got.double() - want.double()).abs() / scale).max().item()
        ok = e <= TOL[dtype]
        what += f" max error {e:.3g}"
    check(ok, f"{what}: rc {rc}" + (f" {got.dtype} {tuple(got.shape)} {got.stride()} vs "
                                    f"{want.dtype} {tuple(want.shape)} {want.stride()}"
                                    if got is not None else ""))

a, b, s = torch.randn(3, 8), torch.randint(-128, 128, (5, 8), dtype=torch.int8), torch.rand(5)
for what, args in (
    ("float64 A", (a.double(), b, s.double())),
    ("3-D A", (a[None], b, s)),
    ("A not contiguous on K", (torch.randn(8, 3).T, b, s)),
    ("uint8 B", (a, b.to(torch.uint8), s)),
    ("1-D B", (a, b[0], s[:1])),
    ("B transposed", (a, torch.randint(-128, 128, (8, 5), dtype=torch.int8).T, s)),
    ("K mismatch", (a, b[:, :4].contiguous(), s)),
    ("2-D scales", (a, b, s[None])),
    ("scales of the wrong size", (a, b, s[:3])),
    ("float32 scales for bfloat16 A", (a.bfloat16(), b, s)),
    ("bfloat16 scales for float32 A", (a, b, s.bfloat16())),
):
    try:
        torch.ops.aten._weight_int8pack_mm(*args)
        aten_fails = False
    except (RuntimeError, IndexError):
        aten_fails = True
    rc, _ = w8(*args)
    check(aten_fails and rc == 1, f"_weight_int8pack_mm {what}: rc {rc}, ATen fails {aten_fails}")
ha, hb, hs = wrap(a), wrap(b), wrap(s)
check(aoti.aoti_torch_cpu__weight_int8pack_mm(ha, hb, hs, None) == 1, "NULL ret0 must fail")
check(aoti.aoti_torch_cpu__weight_int8pack_mm(None, hb, hs, C.byref(H())) == 1,
      "NULL self must fail")
for h in (ha, hb, hs):
    lt.tensor_release(h)


def int_mm(out, a, b):
    ho, ha, hb = wrap(out), wrap(a), wrap(b)
    rc = aoti.aoti_torch_cpu__int_mm_out(ho, ha, hb)
    for h in (ho, ha, hb):
        lt.tensor_release(h)
    return rc


def ints(shape, dtype, transposed):
    lo, hi = (0, 256) if dtype == torch.uint8 else (-128, 128)
    if transposed:
        return torch.randint(lo, hi, shape[::-1], dtype=dtype).T
    return torch.randint(lo, hi, shape, dtype=dtype)


for trial in range(80):
    m, k, n = (g.randint(0 if trial % 13 == 0 else 1, 40) for _ in range(3))
    adt = torch.uint8 if trial % 3 == 0 else torch.int8
    a = ints((m, k), adt, g.random() < 0.3)
    b = ints((k, n), torch.int8, g.random() < 0.3)
    if g.random() < 0.2 and k > 2:
        a, b = a[:, 1:], b[1:]  # offsets and row strides past the sizes
    want = torch.empty(a.shape[0], b.shape[1], dtype=torch.int32)
    torch.ops.aten._int_mm.out(a, b, out=want)
    out = torch.full_like(want, 12345)
    rc = int_mm(out, a, b)
    check(rc == 0 and torch.equal(out, want),
          f"_int_mm_out {adt} {list(a.shape)} {a.stride()} x {list(b.shape)} {b.stride()}: rc {rc}")

# Sums past int32 wrap around, as ATen's.
a, b = torch.full((2, 140000), -128, dtype=torch.int8), torch.full((140000, 3), -128, dtype=torch.int8)
want = torch.empty(2, 3, dtype=torch.int32)
torch.ops.aten._int_mm.out(a, b, out=want)
out = torch.zeros(2, 3, dtype=torch.int32)
check(int_mm(out, a, b) == 0 and torch.equal(out, want) and want[0, 0].item() == (128 * 128 * 140000 + 2**31) % 2**32 - 2**31,
      f"_int_mm_out wraparound: ours {out[0, 0].item()} ATen {want[0, 0].item()}")

a, b = ints((4, 6), torch.int8, False), ints((6, 5), torch.int8, False)
for what, args in (
    ("out transposed", (torch.empty(5, 4, dtype=torch.int32).T, a, b)),
    ("out of the wrong size", (torch.empty(4, 6, dtype=torch.int32), a, b)),
    ("out 1-D", (torch.empty(20, dtype=torch.int32), a, b)),
    ("int64 out", (torch.empty(4, 5, dtype=torch.int64), a, b)),
    ("uint8 mat2", (torch.empty(4, 5, dtype=torch.int32), a, b.to(torch.uint8))),
    ("int32 self", (torch.empty(4, 5, dtype=torch.int32), a.int(), b)),
    ("3-D self", (torch.empty(4, 5, dtype=torch.int32), a[None], b)),
    ("K mismatch", (torch.empty(4, 5, dtype=torch.int32), a, b[:5])),
):
    try:
        torch.ops.aten._int_mm.out(*args[1:], out=args[0])
        aten_fails = False
    except (RuntimeError, IndexError):
        aten_fails = True
    rc = int_mm(*args)
    check(aten_fails and rc == 1, f"_int_mm_out {what}: rc {rc}, ATen fails {aten_fails}")
check(aoti.aoti_torch_cpu__int_mm_out(None, None, None) == 1, "NULL out must fail")

shimtest.summary("ops_int8mm")

"""cumsum, cumprod, logcumsumexp, cummax, cummin of libtensor_aoti against ATen's
(torch.ops.aten.*) in the same process: values bit for bit (ATen's accumulation types),
dtypes (the int64 promotion, `dtype=`), sizes and strides, over random shapes (0-size,
0-dim), layouts (permuted, sliced, channels-last, expanded), every real dtype (ATen's
refusals must be refusals here), NaN and ties, and bad dims.

Usage: python ops_scan.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, DT, H, HP, I32P, REAL, against, aoti, call_n, relayout, values

A = torch.ops.aten
aoti.aoti_torch_cpu_cumsum.argtypes = [H, C.c_int64, I32P, HP]
aoti.aoti_torch_cpu_cumprod.argtypes = [H, C.c_int64, I32P, HP]
aoti.aoti_torch_cpu_logcumsumexp.argtypes = [H, C.c_int64, HP]
aoti.aoti_torch_cpu_cummax.argtypes = [H, C.c_int64, HP, HP]
aoti.aoti_torch_cpu_cummin.argtypes = [H, C.c_int64, HP, HP]


g = random.Random(7)
for trial in range(400):
    dtype = REAL[trial % len(REAL)]
    nd = g.choice([0, 1, 1, 2, 2, 3, 4])
    shape = [g.choice([0, 1, 2, 3, 5, 8, 17]) if g.random() < 0.9 else 0 for _ in range(nd)]
    if g.random() < 0.8:
        shape = [max(s, 1) for s in shape]
    x = relayout(values(shape, dtype, g), g)
    dim = g.randrange(-max(nd, 1), max(nd, 1))
    if g.random() < 0.03:
        dim = max(nd, 1) + 1  # out of range
    hx = shimtest.wrap(x)
    what = f"{dtype} {list(x.shape)} strides {x.stride()} dim {dim}"
    for op in ("cumsum", "cumprod"):
        fn = getattr(aoti, "aoti_torch_cpu_" + op)
        against(f"{op} {what}", lambda: call_n(fn, 1, hx, dim, None), lambda: getattr(A, op)(x, dim))
        out_dtype = g.choice([torch.int64, torch.int32, torch.int8, torch.uint8, torch.float32,
                              torch.float64, torch.float16, torch.bfloat16, torch.bool, torch.uint16])
        code = C.c_int32(DT[out_dtype])
        # A float that does not fit the integer dtype converts as C++ leaves undefined
        # (x86 wraps, libtensor saturates): only representable values here.
        xs = x
        if x.dtype.is_floating_point and not out_dtype.is_floating_point:
            xs = x.nan_to_num(0.0).abs().clamp(max=100)
        hs = shimtest.wrap(xs)
        against(f"{op} {what} dtype={out_dtype}", lambda: call_n(fn, 1, hs, dim, C.byref(code)),
                lambda: getattr(A, op)(xs, dim, dtype=out_dtype))
        shimtest.lt.tensor_release(hs)
    against(f"logcumsumexp {what}", lambda: call_n(aoti.aoti_torch_cpu_logcumsumexp, 1, hx, dim),
            lambda: A.logcumsumexp(x, dim))
    for op in ("cummax", "cummin"):
        fn = getattr(aoti, "aoti_torch_cpu_" + op)
        against(f"{op} {what}", lambda: call_n(fn, 2, hx, dim), lambda: getattr(A, op)(x, dim))
    shimtest.lt.tensor_release(hx)

# Long scans: float32 accumulates in float64, float16 / bfloat16 in float32 (ATen's CPU
# accumulation types), and infinities in logcumsumexp.
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
    x = (torch.rand(3, 3000) * 0.01 + 1).to(dtype)
    x[1, 100] = float("inf")
    x[2, 50] = float("-inf")
    x[2, 60] = float("nan")
    hx = shimtest.wrap(x)
    for op in ("cumsum", "cumprod", "logcumsumexp"):
        fn = getattr(aoti, "aoti_torch_cpu_" + op)
        args = (hx, 1) if op == "logcumsumexp" else (hx, 1, None)
        against(f"{op} long {dtype}", lambda: call_n(fn, 1, *args), lambda: getattr(A, op)(x, 1))
    shimtest.lt.tensor_release(hx)
x = torch.full((2, 5), float("-inf"))
x[1, 2:] = float("inf")
hx = shimtest.wrap(x)
against("logcumsumexp infinities", lambda: call_n(aoti.aoti_torch_cpu_logcumsumexp, 1, hx, 1),
        lambda: A.logcumsumexp(x, 1))
shimtest.lt.tensor_release(hx)

# NULL arguments: a status, no crash.
shimtest.check(aoti.aoti_torch_cpu_cumsum(None, 0, None, C.byref(H())) == 1, "cumsum(NULL) must fail")
x = torch.ones(3)
hx = shimtest.wrap(x)
shimtest.check(aoti.aoti_torch_cpu_cummax(hx, 0, None, None) == 1, "cummax with NULL outputs must fail")
shimtest.lt.tensor_release(hx)

shimtest.summary("ops_scan")

"""add_Tensor, add_Scalar, mul_Tensor, mul_Scalar, angle, polar, gcd of libtensor_aoti against
ATen's (torch.ops.aten.*, the Scalars as Python floats: the shim passes doubles) in the same
process: result dtype (type promotion over dims / 0-dim / wrapped numbers, complex
included), broadcast sizes, TensorIterator's output strides, values (exact for integers,
bool, float16 / bfloat16 products, gcd; within a small tolerance where ATen's vectorized and
scalar loops round differently: float16 / bfloat16 add, complex products and angles), over
random shapes (0-size, 0-dim), layouts, every dtype and mixed pairs, NaN, and the error
cases (integer add with a float alpha, shapes that do not broadcast, ATen's dtype refusals).
The libtorch shim itself is asked once that its double alpha refuses integer adds.

Usage: python ops_arith.py LIBDIR
"""

import math
import random

import torch

import shimtest
from shimtest import C, DT, H, HP, REAL, against, aoti, arr, call, check, lt, rand, relayout, torch_lib, wrap

A = torch.ops.aten
aoti.aoti_torch_cpu_add_Tensor.argtypes = [H, H, C.c_double, HP]
aoti.aoti_torch_cpu_add_Scalar.argtypes = [H, C.c_double, C.c_double, HP]
aoti.aoti_torch_cpu_mul_Tensor.argtypes = [H, H, HP]
aoti.aoti_torch_cpu_mul_Scalar.argtypes = [H, C.c_double, HP]
aoti.aoti_torch_cpu_angle.argtypes = [H, HP]
aoti.aoti_torch_cpu_polar.argtypes = [H, H, HP]
aoti.aoti_torch_cpu_gcd.argtypes = [H, H, HP]
torch_lib.aoti_torch_cpu_add_Tensor.argtypes = [H, H, C.c_double, HP]

ALL = REAL + [torch.complex64, torch.complex128]
# add of float16 / bfloat16: ATen's scalar tail rounds alpha * other before adding.
ADD_TOL = {torch.float32: 1e-6, torch.float64: 1e-14, torch.float16: 2e-3, torch.bfloat16: 2e-2,
           torch.complex64: 1e-6, torch.complex128: 1e-14}
CPLX_TOL = {torch.complex64: 1e-6, torch.complex128: 1e-14}


def result_type(a, b):
    try:
        return torch.result_type(a, b)
    except RuntimeError:  # c10 refuses the promotion: the ops must fail too
        return None


def pair_shapes(g):
    """Two broadcastable shapes (sometimes not), either possibly 0-dim."""
    nd = g.choice([0, 1, 2, 3, 4])
    full = [g.choice([0, 1, 2, 3, 5]) if g.random() < 0.1 else g.choice([1, 2, 3, 5]) for _ in range(nd)]
    a = list(full)
    b = [s if g.random() < 0.6 else 1 for s in full][g.randint(0, nd):] if nd else []
    if g.random() < 0.5:
        a, b = b, a
    if g.random() < 0.04 and b:
        b[-1] += 1  # not broadcastable (unless it was 1)
    return a, b


g = random.Random(31)
for trial in range(1500):
    da = ALL[trial % len(ALL)]
    db = da if g.random() < 0.6 else g.choice(ALL)
    sa, sb = pair_shapes(g)
    x, y = rand(sa, da, g), rand(sb, db, g)
    if len(sa) == 4 and g.random() < 0.3:
        x = x.contiguous(memory_format=torch.channels_last)
        if len(sb) == 4:
            y = y.contiguous(memory_format=torch.channels_last)
    hx, hy = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(y))
    what = f"{da} {list(x.shape)} {x.stride()} with {db} {list(y.shape)} {y.stride()}"
    alpha = g.choice([1.0, 2.0, 0.3, -1.7])
    res = result_type(x, y)
    against(f"add_Tensor {what} alpha {alpha}", lambda: call(aoti.aoti_torch_cpu_add_Tensor, hx, hy, alpha),
            lambda: A.add.Tensor(x, y, alpha=alpha), ADD_TOL.get(res, 0.0))
    against(f"mul_Tensor {what}", lambda: call(aoti.aoti_torch_cpu_mul_Tensor, hx, hy),
            lambda: A.mul.Tensor(x, y), CPLX_TOL.get(res, 0.0))
    s = g.choice([0.0, 1.0, -2.0, 0.1, 3.3, -2.7, 1e3, float("nan"), float("inf")])
    res = result_type(x, s)
    against(f"add_Scalar {what[:60]} other {s} alpha {alpha}",
            lambda: call(aoti.aoti_torch_cpu_add_Scalar, hx, s, alpha),
            lambda: A.add.Scalar(x, s, alpha=alpha), ADD_TOL.get(res, 0.0))
    against(f"mul_Scalar {what[:60]} other {s}", lambda: call(aoti.aoti_torch_cpu_mul_Scalar, hx, s),
            lambda: A.mul.Scalar(x, s), CPLX_TOL.get(res, 0.0))
    against(f"angle {what[:60]}", lambda: call(aoti.aoti_torch_cpu_angle, hx), lambda: A.angle(x),
            CPLX_TOL.get(da, 0.0) * 10)
    if g.random() < 0.5:
        pa = da if g.random() < 0.8 else g.choice(ALL)
        m, th = rand(sa, pa, g), rand(sb, pa, g)
        if pa.is_floating_point:
            m = m.abs()
        hm, ht = wrap(shimtest.nonnull(m)), wrap(shimtest.nonnull(th))
        name = f"polar {pa} {list(m.shape)} {list(th.shape)}"
        if pa == torch.float16:  # ATen's result is complex32, which libtensor does not have
            rc, hs = call(aoti.aoti_torch_cpu_polar, hm, ht)
            check(rc == 1, f"{name}: float16 (complex32) is refused, rc {rc}")
        else:
            against(name, lambda: call(aoti.aoti_torch_cpu_polar, hm, ht), lambda: A.polar(m, th),
                    1e-6 if pa == torch.float32 else 1e-14)
        lt.tensor_release(hm)
        lt.tensor_release(ht)
    lt.tensor_release(hx)
    lt.tensor_release(hy)

# gcd: every integer dtype (and the refused ones), signs, zeros, the most negative values.
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
for trial in range(300):
    da = (INTS + [torch.bool, torch.uint16, torch.float32])[trial % 8] if trial % 5 else g.choice(INTS)
    db = da if g.random() < 0.7 else g.choice(INTS)
    sa, sb = pair_shapes(g)

    def ints(shape, dtype):
        if not shape and g.random() < 0.5:
            shape = []
        info = torch.iinfo(dtype) if dtype in INTS else None
        lo, hi = (info.min, info.max) if info else (0, 2)
        pick = [lo, hi, 0, 1, -1 if lo < 0 else 2, 12, 18, 30]
        n = math.prod(shape)
        vals = [g.choice(pick) if g.random() < 0.4 else g.randint(max(lo, -100), min(hi, 100)) for _ in range(n)]
        t = torch.tensor(vals, dtype=torch.int64).reshape(shape) if n else torch.zeros(shape, dtype=torch.int64)
        return relayout(t.to(dtype), g)

    x, y = ints(sa, da), ints(sb, db)
    hx, hy = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(y))
    against(f"gcd {da} {list(x.shape)} with {db} {list(y.shape)}", lambda: call(aoti.aoti_torch_cpu_gcd, hx, hy),
            lambda: A.gcd(x, y))
    lt.tensor_release(hx)
    lt.tensor_release(hy)


# Long runs: ATen's vectorized paths (more than a vector of elements, several threads).
for dt in (torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.int32, torch.int8):
    x, y = rand([4097], dt, g), rand([4097], dt, g)
    hx, hy = wrap(x), wrap(y)
    res = dt
    against(f"long add {dt}", lambda: call(aoti.aoti_torch_cpu_add_Tensor, hx, hy, 0.3),
            lambda: A.add.Tensor(x, y, alpha=0.3), ADD_TOL.get(res, 0.0))
    against(f"long mul {dt}", lambda: call(aoti.aoti_torch_cpu_mul_Tensor, hx, hy),
            lambda: A.mul.Tensor(x, y), CPLX_TOL.get(res, 0.0))
    against(f"long mul_Scalar {dt}", lambda: call(aoti.aoti_torch_cpu_mul_Scalar, hx, 0.1),
            lambda: A.mul.Scalar(x, 0.1), CPLX_TOL.get(res, 0.0))
    lt.tensor_release(hx)
    lt.tensor_release(hy)

# The libtorch shim passes alpha as a double Scalar: an integer add is its error too.
x = torch.arange(6, dtype=torch.int64)
ht = H()
assert torch_lib.aoti_torch_create_tensor_from_blob(C.c_void_p(x.data_ptr()), 1, arr([6]), arr([1]), 0,
                                                    DT[torch.int64], 0, 0, C.byref(ht)) == 0
r = H()
check(torch_lib.aoti_torch_cpu_add_Tensor(ht, ht, 1.0, C.byref(r)) == 1,
      "libtorch's shim refuses an integer add with its double alpha")
torch_lib.aoti_torch_delete_tensor_object(ht)
hx = wrap(x)
check(call(aoti.aoti_torch_cpu_add_Tensor, hx, hx, 1.0)[0] == 1, "so does ours")
check(call(aoti.aoti_torch_cpu_mul_Tensor, hx, None)[0] == 1, "mul_Tensor with a NULL other must fail")
lt.tensor_release(hx)

shimtest.summary("ops_arith")

"""The products beyond ops_core's: shim.h's _mm_plus_mm_out, _addmm_activation (gelu and
relu epilogues), addmv, addbmm of libtensor_aoti against ATen's (torch.ops.aten.*; for
_mm_plus_mm_out the libtorch shim's own body, mm_out then addmm_) in the same process:
values within a per-dtype tolerance, output dtype, sizes and strides, over random shapes
(0-size m, n, k and batch), transposed and sliced operands, every float dtype, self shapes
that broadcast (0-dim, [1], [n], [m, 1], ...), beta == 0 ignoring a NaN self, and the error
cases (mismatched sizes, a self that does not broadcast, wrong ranks, mixed dtypes). The
integer dtypes, which ATen's CPU kernels take, are refused here (status 1).

Usage: python ops_matmul.py LIBDIR
"""

import random
import warnings

import torch

import shimtest
from shimtest import C, H, HP, against, aoti, call, check, lt, same, wrap

A = torch.ops.aten
warnings.simplefilter("ignore")  # ATen's addmv resizes its own result on an empty mat
aoti.aoti_torch__mm_plus_mm_out.argtypes = [H, H, H, H, H]
aoti.aoti_torch_cpu__addmm_activation.argtypes = [H, H, H, C.c_double, C.c_double, C.c_int32, HP]
aoti.aoti_torch_cpu_addmv.argtypes = [H, H, H, C.c_double, C.c_double, HP]
aoti.aoti_torch_cpu_addbmm.argtypes = [H, H, H, C.c_double, C.c_double, HP]

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.float16: 1e-2, torch.bfloat16: 3e-2}


def rand(shape, dtype, g):
    """Random values in a random layout: transposed last two dims, or sliced every other."""
    gen = torch.Generator().manual_seed(g.randint(0, 2**31))
    if not dtype.is_floating_point:
        base = lambda s: torch.randint(-3, 4, s, generator=gen).to(dtype)  # noqa: E731
    else:
        base = lambda s: torch.randn(s, generator=gen, dtype=torch.float64).to(dtype)  # noqa: E731
    r = g.random()
    if len(shape) >= 2 and r < 0.35:
        s = list(shape)
        s[-1], s[-2] = s[-2], s[-1]
        return base(s).transpose(-1, -2)
    if len(shape) >= 1 and r < 0.55:
        s = list(shape)
        s[-1] *= 2
        return base(s)[..., ::2]
    return base(list(shape))


class Handles:
    """Wraps tensors (None stays None) and releases the handles at the end of a `with`."""

    def __init__(self, *ts):
        self.hs = [None if t is None else wrap(t) for t in ts]

    def __enter__(self):
        return self.hs

    def __exit__(self, *exc):
        for h in self.hs:
            if h is not None:
                lt.tensor_release(h)


def refused(name, fn, *args):
    """An integer dtype: ATen computes it, libtensor_aoti refuses it (status 1)."""
    rc, hs = call(fn, *args)
    check(rc == 1, f"{name}: integer dtypes are refused, got rc {rc}")
    if rc == 0:
        lt.tensor_release(hs[0])


g = random.Random(5)
SIZES = [0, 1, 2, 3, 5, 8, 17, 33]
for trial in range(400):
    dtype = (FLOATS + [torch.int32, torch.int64])[trial % 6] if trial % 7 else FLOATS[trial % 4]
    m, n, k = (g.choice(SIZES) for _ in range(3))
    if g.random() < 0.8:
        m, n, k = max(m, 1), max(n, 1), max(k, 1)
    beta, alpha = g.choice([(1.0, 1.0), (0.5, 2.0), (0.0, 1.0), (-1.5, 0.25)])
    tol = TOL.get(dtype, 0.0)
    a, w = rand([m, k], dtype, g), rand([k, n], dtype, g)
    sshape = g.choice([[n], [1, n], [m, n], [m, 1], [], [1]])
    s = rand(sshape, dtype, g)
    if dtype.is_floating_point and beta == 0.0 and s.numel():
        s = s.clone()
        s[(0,) * s.dim()] = float("nan")  # beta == 0: self is ignored, NaN included
    bad = g.random() < 0.05
    if bad:  # k mismatch, or a self that does not broadcast
        if g.random() < 0.5:
            w = rand([k + 1, n], dtype, g)
        else:
            s = rand([m + 1, n + 2], dtype, g)
    what = f"{dtype} m {m} n {n} k {k} self {list(s.shape)} beta {beta} alpha {alpha} strides {a.stride()} {w.stride()}"
    with Handles(s, a, w) as (hs, ha, hw):
        for gelu in (1, 0):
            fn = aoti.aoti_torch_cpu__addmm_activation
            if not dtype.is_floating_point:
                refused(f"_addmm_activation {what}", fn, hs, ha, hw, beta, alpha, gelu)
                continue
            against(f"_addmm_activation gelu {gelu} {what}", lambda: call(fn, hs, ha, hw, beta, alpha, gelu),
                    lambda: A._addmm_activation(s, a, w, beta=beta, alpha=alpha, use_gelu=bool(gelu)), tol)

    # addmv: mat [m, k] @ vec [k] (vec strided or expanded)
    v = rand([k], dtype, g) if g.random() < 0.8 else rand([1], dtype, g).expand(k)
    s1 = rand(g.choice([[m], [1], []]) if not bad else [m + 1], dtype, g)
    with Handles(s1, a, v) as (hs, ha, hv):
        fn = aoti.aoti_torch_cpu_addmv
        name = f"addmv {dtype} m {m} k {k} self {list(s1.shape)} vec {v.stride()} beta {beta}"
        if not dtype.is_floating_point:
            refused(name, fn, hs, ha, hv, beta, alpha)
        else:
            against(name, lambda: call(fn, hs, ha, hv, beta, alpha),
                    lambda: A.addmv(s1, a, v, beta=beta, alpha=alpha), tol)

    # addbmm: sum over b of batch1[b] @ batch2[b]
    nb = g.choice([0, 1, 2, 5])
    b1, b2 = rand([nb, m, k], dtype, g), rand([nb, k if not bad else k + 1, n], dtype, g)
    s2 = rand(g.choice([[n], [m, n], [1, 1], [m, 1]]), dtype, g)
    with Handles(s2, b1, b2) as (hs, h1, h2):
        fn = aoti.aoti_torch_cpu_addbmm
        name = f"addbmm {dtype} b {nb} m {m} n {n} k {k} self {list(s2.shape)} beta {beta} alpha {alpha}"
        if not dtype.is_floating_point:
            refused(name, fn, hs, h1, h2, beta, alpha)
        else:
            against(name, lambda: call(fn, hs, h1, h2, beta, alpha),
                    lambda: A.addbmm(s2, b1, b2, beta=beta, alpha=alpha), tol * max(1, nb))

    # _mm_plus_mm_out: out (any layout) = a @ w + c @ d, as libtorch's shim: mm_out, addmm_.
    if dtype.is_floating_point and not bad:
        k2 = g.choice([1, 3, 8, 0])
        c, d = rand([m, k2], dtype, g), rand([k2, n], dtype, g)
        o = rand([m, n], dtype, g)
        want = torch.mm(a, w)
        want.addmm_(c, d)
        with Handles(o, a, w, c, d) as (ho, ha, hw, hc, hd):
            rc = aoti.aoti_torch__mm_plus_mm_out(ho, ha, hw, hc, hd)
        dense = lambda t: t.clone(memory_format=torch.contiguous_format)  # noqa: E731
        diff = same(dense(o), dense(want), tol) if rc == 0 else f"rc {rc}"
        check(not diff, f"_mm_plus_mm_out {dtype} m {m} n {n} k {k} k2 {k2} out {o.stride()}: {diff}")

# Errors: wrong ranks, mixed dtypes, NULL arguments.
x, y, z = torch.randn(3, 4), torch.randn(4, 5), torch.randn(5)
with Handles(x, y, z, x.double(), torch.randn(2, 3, 4)) as (hx, hy, hz, hxd, h3):
    for name, rc in [
        ("_addmm_activation 1-D mat1", call(aoti.aoti_torch_cpu__addmm_activation, hz, hz, hy, 1.0, 1.0, 1)[0]),
        ("_addmm_activation mixed dtypes", call(aoti.aoti_torch_cpu__addmm_activation, hz, hxd, hy, 1.0, 1.0, 1)[0]),
        ("addmv 2-D vec", call(aoti.aoti_torch_cpu_addmv, hz, hx, hy, 1.0, 1.0)[0]),
        ("addbmm 2-D batch1", call(aoti.aoti_torch_cpu_addbmm, hz, hx, h3, 1.0, 1.0)[0]),
        ("addmv NULL vec", call(aoti.aoti_torch_cpu_addmv, hz, hx, None, 1.0, 1.0)[0]),
        ("_mm_plus_mm_out wrong out", aoti.aoti_torch__mm_plus_mm_out(hx, hx, hy, hx, hy)),
        ("_mm_plus_mm_out NULL d", aoti.aoti_torch__mm_plus_mm_out(hx, hx, hy, hx, None)),
    ]:
        check(rc == 1, f"{name}: rc {rc}, expected 1")

shimtest.summary("ops_matmul")

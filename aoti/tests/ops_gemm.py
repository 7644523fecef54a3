"""Tests libtensor_aoti's float32 matrix products (mm_out, addmm_out, bmm_out: kernels/
sgemm.rs's dot tiles, row tiles over B in place and over packed panels, and the `gemm`
crate for the other layouts) against ATen's product in float64, in one process, over the
shapes that reach every tile size, tail and block boundary of each path, the layouts a
model passes (weights transposed or not, the output transposed or strided, A
column-major), alpha / beta (beta 0 ignoring a NaN bias, as ATen does), k = 0, and on one
and two OpenMP threads (the products split by columns or rows).

A float32 result passes when each element is within the rounding bound of a float32 dot
product, 4 * (k + 2) * eps * (|beta * bias| + |alpha| * (|A| @ |B|)) (plus 1e-30) of the
float64 one: an element read from the wrong place or dropped is off by far more.

Usage: python ops_gemm.py LIBDIR. Prints "ops_gemm: N passed, N failed".
"""

import random

import torch

import shimtest
from shimtest import C, H, aoti, check, lt, wrap

aoti.aoti_torch_cpu_mm_out.argtypes = [H, H, H]
aoti.aoti_torch_cpu_bmm_out.argtypes = [H, H, H]
aoti.aoti_torch_cpu_addmm_out.argtypes = [H, H, H, H, C.c_double, C.c_double]

EPS = torch.finfo(torch.float32).eps


def within(got, a, w, k, bias=None, beta=0.0, alpha=1.0):
    """Whether got = beta * bias + alpha * a @ w within float32's rounding bound (float64
    reference from ATen)."""
    mm = torch.bmm if a.dim() == 3 else torch.mm
    want = alpha * mm(a.double(), w.double())
    scale = abs(alpha) * mm(a.double().abs(), w.double().abs())
    if bias is not None and beta != 0.0:
        want = want + beta * bias.double()
        scale = scale + abs(beta) * bias.double().abs()
    bound = 4 * (k + 2) * EPS * scale + 1e-30
    err = (got.double() - want).abs()
    return bool((err <= bound).all()), float(err.max()) if err.numel() else 0.0


def lhs(m, k, g, colmajor=False):
    """A [m, k]: row-major, or column-major (the transpose of a [k, m] tensor)."""
    return torch.randn(k, m).t() if colmajor else torch.randn(m, k)


def rhs(k, n, layout):
    """B [k, n]: "nt" the transpose of a row-major [n, k] weight (a linear layer's), "nn"
    row-major [k, n] (GPT-2's Conv1D)."""
    return torch.randn(n, k).t() if layout == "nt" else torch.randn(k, n)


def output(m, n, how):
    """The out tensor: row-major, column-major, or every other column of a wider buffer."""
    if how == "t":
        return torch.full((n, m), float("nan")).t()
    if how == "strided":
        return torch.full((m, 2 * n), float("nan"))[:, ::2]
    return torch.full((m, n), float("nan"))


def check_mm(m, k, n, layout, out_how="row", colmajor=False, g=None):
    a, w, out = lhs(m, k, g, colmajor), rhs(k, n, layout), output(m, n, out_how)
    ha, hw, ho = wrap(a), wrap(w), wrap(out)
    rc = aoti.aoti_torch_cpu_mm_out(ho, ha, hw)
    ok, err = within(out, a, w, k) if rc == 0 else (False, None)
    check(ok, f"mm_out {m}x{k} @ {k}x{n} {layout} out {out_how} a colmajor {colmajor}: rc {rc}, "
          f"err {err}")
    for h in (ha, hw, ho):
        lt.tensor_release(h)


def check_addmm(m, k, n, layout, beta, alpha, bias_shape, out_how="row"):
    a, w, out = lhs(m, k, None), rhs(k, n, layout), output(m, n, out_how)
    bias = torch.randn(bias_shape)
    if beta == 0.0:
        bias.fill_(float("nan"))  # ATen ignores self when beta == 0
    ha, hw, ho, hb = wrap(a), wrap(w), wrap(out), wrap(bias)
    rc = aoti.aoti_torch_cpu_addmm_out(ho, hb, ha, hw, beta, alpha)
    ok, err = (within(out, a, w, k, bias.expand(m, n), beta, alpha) if rc == 0
               else (False, None))
    check(ok, f"addmm_out {m}x{k} @ {k}x{n} {layout} bias {bias_shape} beta {beta} alpha "
          f"{alpha} out {out_how}: rc {rc}, err {err}")
    for h in (ha, hw, ho, hb):
        lt.tensor_release(h)


def check_bmm(bt, m, k, n, layout):
    a = torch.randn(bt, m, k)
    w = torch.randn(bt, n, k).transpose(1, 2) if layout == "nt" else torch.randn(bt, k, n)
    out = torch.full((bt, m, n), float("nan"))
    ha, hw, ho = wrap(a), wrap(w), wrap(out)
    rc = aoti.aoti_torch_cpu_bmm_out(ho, ha, hw)
    ok, err = within(out, a, w, k) if rc == 0 else (False, None)
    check(ok, f"bmm_out {bt}x{m}x{k} @ {k}x{n} {layout}: rc {rc}, err {err}")
    for h in (ha, hw, ho):
        lt.tensor_release(h)


g = random.Random(7)
for threads in (1, 2):
    torch.set_num_threads(threads)
    # Dot tiles (NT, m < 256): every tile size (m % 4, n % 6), the k tail (k % 16), more
    # than one block of k (768), of rows (128) and of columns (768).
    for m in (1, 2, 3, 4, 5, 7, 16, 130):
        for n in (1, 5, 6, 7, 13):
            check_mm(m, g.choice([1, 15, 16, 17, 40]), n, "nt")
    for (m, k, n) in [(3, 1000, 7), (16, 1600, 40), (130, 769, 13), (5, 64, 800),
                      (130, 1537, 770), (1, 768, 3072)]:
        check_mm(m, k, n, "nt")
    # Row tiles over B in place (NN): m % 8, the vectors of a tile's columns (n % 48: one,
    # two or three, masked), blocks of k (128), of rows (128), of columns (480).
    for m in (1, 3, 8, 9, 16):
        for n in (1, 15, 16, 17, 33, 47, 48, 49, 100):
            check_mm(m, g.choice([1, 7, 128, 129]), n, "nn")
    for (m, k, n) in [(130, 300, 500), (16, 768, 2304), (2, 257, 961), (137, 64, 40)]:
        check_mm(m, k, n, "nn")
    # Packed row tiles (NT with m >= 256; A column-major with m >= 256).
    for (m, k, n) in [(256, 1, 1), (300, 20, 17), (517, 129, 48), (260, 300, 64),
                      (600, 130, 500), (3136, 27, 32)]:
        check_mm(m, k, n, "nt")
        check_mm(m, k, n, "nn", colmajor=True)
    # Packed row tiles at a ResNet's channel counts (64 .. 640 columns: a last panel of one or
    # two vectors), the 128-row blocks' tails, blocks of k (128) and of columns (480).
    for (m, k, n) in [(301, 129, 64), (257, 576, 128), (263, 40, 640), (300, 7, 320)]:
        check_mm(m, k, n, "nt")
    check_addmm(301, 150, 128, "nt", 0.5, 2.0, [128])
    # Outputs transposed (the product swapped) or strided (neither stride 1).
    for (m, k, n) in [(5, 33, 7), (300, 40, 20), (9, 130, 50)]:
        for layout in ("nt", "nn"):
            for how in ("t", "strided"):
                check_mm(m, k, n, layout, how)
    # Small layouts the kernels leave to the gemm crate: A column-major with few rows.
    check_mm(20, 30, 40, "nn", colmajor=True)
    check_mm(20, 30, 40, "nt", colmajor=True)
    # k = 0: zeros, or beta * bias.
    check_mm(4, 0, 6, "nt")
    check_addmm(4, 0, 6, "nt", 0.5, 2.0, [6])
    # addmm: alpha / beta, bias broadcast, each path.
    for (m, k, n, layout) in [(16, 768, 2304, "nt"), (16, 768, 2304, "nn"),
                              (300, 100, 70, "nt"), (7, 50, 9, "nt")]:
        for (beta, alpha) in [(1.0, 1.0), (0.5, 2.0), (0.0, 1.0)]:
            check_addmm(m, k, n, layout, beta, alpha, g.choice([[n], [m, n], [m, 1]]))
    check_addmm(300, 100, 70, "nt", 0.5, 2.0, [70], out_how="t")
    # bmm: attention's q @ k.t() (NT) and attn @ v (NN).
    check_bmm(12, 128, 64, 128, "nt")
    check_bmm(12, 128, 128, 64, "nn")
    check_bmm(3, 17, 33, 5, "nt")

shimtest.summary("ops_gemm")

"""scatter_src_out, scatter_value_out, scatter_reduce_two_out (and shim.h's scatter_out,
scatter_reduce_out) of libtensor_aoti against ATen's (torch.ops.aten.*) in the same
process: values exactly (reductions fold in ATen's order; float16 / bfloat16 in float32),
into an `out` of any layout (and out == self, as Inductor calls it), over random shapes
(0-size, 0-dim), layouts, every real dtype (ATen's refusals must be refusals here), all
five reductions with and without self, repeated indices, NaN, int32 indices, and the error
cases (out-of-range or negative indices, shape and dtype mismatches, overlap with out).

Usage: python ops_scatter.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, H, REAL, aoti, check, relayout, same, values, wrap

A = torch.ops.aten
aoti.aoti_torch_cpu_scatter_src_out.argtypes = [H, H, C.c_int64, H, H]
aoti.aoti_torch_cpu_scatter_value_out.argtypes = [H, H, C.c_int64, H, C.c_double]
aoti.aoti_torch_cpu_scatter_reduce_two_out.argtypes = [H, H, C.c_int64, H, H, C.c_char_p, C.c_int32]
aoti.aoti_torch_scatter_out.argtypes = [H, H, C.c_int64, H, H]
aoti.aoti_torch_scatter_reduce_out.argtypes = [H, H, C.c_int64, H, H, C.c_char_p, C.c_int32]


def out_run(name, fn, theirs, self_, out_like, *args):
    """Runs ATen's functional op and ours into `out` (a fresh tensor of self's sizes in a
    random layout, or self itself); compares `out` with ATen's result."""
    try:
        want, why = theirs(), None
    except Exception as e:
        want, why = None, str(e).split("\n")[0][:100]
    inplace = out_like is None
    out = self_.clone() if inplace else out_like
    hs = wrap(out)
    hself = hs if inplace else wrap(self_)
    hargs = [wrap(a) if isinstance(a, torch.Tensor) else a for a in args]
    rc = fn(hs, hself, *hargs)
    if want is None:
        check(rc == 1, f"{name}: ATen raises ({why}) but rc {rc}")
    else:
        diff = "" if rc == 0 else f"rc {rc}"
        if not diff:
            # out keeps its own layout: compare values, dtype and sizes.
            diff = same(out.clone(memory_format=torch.contiguous_format),
                        want.clone(memory_format=torch.contiguous_format))
        check(not diff, f"{name}: {diff}")
    for h in [hs] + ([] if inplace else [hself]) + [h for h in hargs if isinstance(h, H)]:
        shimtest.lt.tensor_release(h)


g = random.Random(9)
for trial in range(700):
    dtype = REAL[trial % len(REAL)]
    nd = g.choice([0, 1, 1, 2, 2, 3, 4])
    shape = [g.choice([1, 2, 3, 5, 8]) for _ in range(nd)]
    if g.random() < 0.05 and nd:
        shape[g.randrange(nd)] = 0
    x = relayout(values(shape, dtype, g), g)
    dim = g.randrange(-max(nd, 1), max(nd, 1))
    d = dim % max(nd, 1)
    # index no larger than self (except along dim) and than src
    ishape = [g.randint(0 if g.random() < 0.05 else 1, max(s, 1)) if i != d else g.randint(1, 9)
              for i, s in enumerate(shape)] if nd else g.choice([[], [1]])
    top = shape[d] if nd else 1
    index = torch.randint(0, max(top, 1), ishape) if top else torch.zeros(ishape, dtype=torch.int64)
    r = g.random()
    if r < 0.03:
        index = index - 1 - top  # negative: an error
    elif r < 0.06:
        index = index + top  # out of range
    if g.random() < 0.2:
        index = index.to(torch.int32)
    index = relayout(index, g)
    sshape = [s + g.choice([0, 0, 1]) for s in ishape]
    sdt = dtype if g.random() < 0.95 else g.choice(REAL)
    src = relayout(values(sshape, sdt, g), g)
    out = None if g.random() < 0.5 else relayout(torch.empty(list(x.shape), dtype=dtype), g)
    if out is not None and out.stride() and 0 in out.stride() and out.numel() > 1:
        out = None
    what = f"{dtype} {list(x.shape)} {x.stride()} dim {dim} index {index.dtype} {list(index.shape)} src {sdt} {sshape} out {'self' if out is None else out.stride()}"
    o = lambda: None if out is None else out.clone()  # noqa: E731
    out_run(f"scatter_src {what}", aoti.aoti_torch_cpu_scatter_src_out,
            lambda: A.scatter.src(x, dim, index, src), x, o(), dim, index, src)
    out_run(f"scatter_out {what}", aoti.aoti_torch_scatter_out,
            lambda: A.scatter.src(x, dim, index, src), x, o(), dim, index, src)
    val = g.choice([2.0, -1.0, 0.5, 7.0])
    out_run(f"scatter_value {val} {what}", aoti.aoti_torch_cpu_scatter_value_out,
            lambda: A.scatter.value(x, dim, index, val), x, o(), dim, index, val)
    for red in ("sum", "prod", "mean", "amax", "amin", "max", "min", "add"):
        for inc in (1, 0):
            out_run(f"scatter_reduce {red} include_self {inc} {what}", aoti.aoti_torch_cpu_scatter_reduce_two_out,
                    lambda: A.scatter_reduce.two(x, dim, index, src, red, include_self=bool(inc)),
                    x, o(), dim, index, src, red.encode(), inc)
    out_run(f"scatter_reduce_out {what}", aoti.aoti_torch_scatter_reduce_out,
            lambda: A.scatter_reduce.two(x, dim, index, src, "sum", include_self=True),
            x, o(), dim, index, src, b"sum", 1)

# Long folds: float32 sums in index order, float16 / bfloat16 in float32, integer means.
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int8):
    x = values([4, 6], dtype, g, nan=0.0)
    index = torch.randint(0, 4, (3000, 6))
    src = (torch.rand(3000, 6) * 3).to(dtype) if dtype.is_floating_point else torch.randint(-3, 4, (3000, 6)).to(dtype)
    for red in ("sum", "mean", "prod", "amax"):
        for inc in (1, 0):
            out_run(f"long {dtype} {red} include_self {inc}", aoti.aoti_torch_cpu_scatter_reduce_two_out,
                    lambda: A.scatter_reduce.two(x, 0, index, src, red, include_self=bool(inc)),
                    x, None, 0, index, src, red.encode(), inc)
    # ATen's expanded-index path (dim 0, an index expanded along the rest, 16+ columns).
    ie = torch.randint(0, 4, (500, 1)).expand(500, 32)
    se = (torch.rand(500, 32) * 3).to(dtype) if dtype.is_floating_point else torch.randint(-3, 4, (500, 32)).to(dtype)
    xe = values([4, 32], dtype, g, nan=0.0)
    for red in ("sum", "mean", "amax", "amin", "prod"):
        for inc in (1, 0):
            out_run(f"expanded {dtype} {red} include_self {inc}", aoti.aoti_torch_cpu_scatter_reduce_two_out,
                    lambda: A.scatter_reduce.two(xe, 0, ie, se, red, include_self=bool(inc)),
                    xe, None, 0, ie, se, red.encode(), inc)

# out overlapping src: refused, as ATen refuses it.
x = torch.zeros(4, 4)
i = torch.zeros(2, 4, dtype=torch.int64)
hx, hi = wrap(x), wrap(i)
hsrc = wrap(x[:2])
check(aoti.aoti_torch_cpu_scatter_src_out(hx, hx, 0, hi, hsrc) == 1, "scatter with src inside out must fail")
check(aoti.aoti_torch_cpu_scatter_reduce_two_out(hx, hx, 0, hi, hsrc, None, 1) == 1, "NULL reduce must fail")
for h in (hx, hi, hsrc):
    shimtest.lt.tensor_release(h)

shimtest.summary("ops_scatter")

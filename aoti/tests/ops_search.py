"""searchsorted (Tensor and Scalar), bucketize of libtensor_aoti against ATen's
(torch.ops.aten.*) in the same process: positions exactly, int32 / int64 results, sizes and
strides, over 1-D and batched boundaries, right / side, sorter, dtype promotion between
boundaries and values (every real dtype: ATen's refusals must be refusals here), NaN,
unsorted boundaries (ATen's binary search gives defined positions there too), 0-size and
0-dim inputs, layouts, and the error cases.

Usage: python ops_search.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, H, HP, REAL, against, aoti, call, relayout, values

A = torch.ops.aten
CP = C.POINTER(C.c_char_p)
aoti.aoti_torch_cpu_searchsorted_Tensor.argtypes = [H, H, C.c_int32, C.c_int32, CP, HP, HP]
aoti.aoti_torch_cpu_searchsorted_Scalar.argtypes = [H, C.c_double, C.c_int32, C.c_int32, CP, HP, HP]
aoti.aoti_torch_cpu_bucketize_Tensor.argtypes = [H, H, C.c_int32, C.c_int32, HP]


def sorted_bd(shape, dtype, g):
    b = values(shape, dtype, g, nan=0.0)
    if b.numel() and dtype != torch.bool and g.random() < 0.9:
        b = b.sort(-1).values if dtype not in (torch.uint16, torch.uint32, torch.uint64) else b
    if dtype.is_floating_point and b.numel() and g.random() < 0.2:
        b[..., -1] = float("nan")  # NaN sorts last
    return b


g = random.Random(5)
dtypes = [torch.int64, torch.float32, torch.float64, torch.int32, torch.float16, torch.bfloat16,
          torch.uint8, torch.int8, torch.int16]
for trial in range(600):
    bdt = dtypes[trial % len(dtypes)] if g.random() < 0.9 else g.choice(REAL)
    vdt = bdt if g.random() < 0.6 else g.choice(REAL)
    batched = g.random() < 0.4
    lead = [g.choice([1, 2, 3]) for _ in range(g.choice([1, 2]))] if batched else []
    width = g.choice([0, 1, 2, 5, 9, 33])
    bd = relayout(sorted_bd(lead + [width], bdt, g), g)
    if batched:
        vshape = lead + [g.choice([0, 1, 3, 4])]
    else:
        vshape = [g.choice([0, 1, 3, 4]) for _ in range(g.choice([0, 1, 2, 3]))]
    if g.random() < 0.05:
        vshape = [9] + vshape  # batched boundaries with other leading dims: an error
    v = relayout(values(vshape, vdt, g), g)
    sorter = None
    if g.random() < 0.3:
        sorter = torch.argsort(torch.rand(bd.shape), dim=-1) if bd.numel() else torch.zeros(bd.shape, dtype=torch.int64)
        bd = torch.gather(bd.contiguous(), -1, torch.argsort(sorter, dim=-1)) if bd.numel() and bdt != torch.bool else bd
        if g.random() < 0.1:
            sorter = sorter + width  # out of range
    side = g.choice([None, "left", "right", "middle"]) if g.random() < 0.5 else None
    right = g.random() < 0.4
    i32 = g.random() < 0.3
    hb, hv = shimtest.wrap(bd), shimtest.wrap(v)
    hs = H(shimtest.wrap(sorter).value) if sorter is not None else None
    sp = C.c_char_p(side.encode()) if side else None
    what = f"bd {bdt} {list(bd.shape)} {bd.stride()} v {vdt} {list(v.shape)} side {side} right {right} i32 {i32} sorter {sorter is not None}"
    against(f"searchsorted {what}",
            lambda: call(aoti.aoti_torch_cpu_searchsorted_Tensor, hb, hv, int(i32), int(right),
                         C.byref(sp) if sp else None, C.byref(hs) if hs else None),
            lambda: A.searchsorted(bd, v, out_int32=i32, right=right, side=side, sorter=sorter))
    x = g.choice([0.5, -1.0, 3.0, float("nan"), 1e10, 2.0])
    against(f"searchsorted.Scalar {x} {what}",
            lambda: call(aoti.aoti_torch_cpu_searchsorted_Scalar, hb, x, int(i32), int(right),
                         C.byref(sp) if sp else None, C.byref(hs) if hs else None),
            lambda: A.searchsorted.Scalar(bd, x, out_int32=i32, right=right, side=side, sorter=sorter))
    against(f"bucketize {what}",
            lambda: call(aoti.aoti_torch_cpu_bucketize_Tensor, hv, hb, int(i32), int(right)),
            lambda: A.bucketize(v, bd, out_int32=i32, right=right))
    for h_ in (hb, hv) + ((hs,) if hs else ()):
        shimtest.lt.tensor_release(h_)

# The sampling head's search: cumulative probabilities, a uniform draw per row.
p = torch.softmax(torch.randn(4, 1000), -1).sort(-1, descending=True).values.cumsum(-1)
u = torch.rand(4, 1)
hp, hu = shimtest.wrap(p), shimtest.wrap(u)
against("searchsorted top-p", lambda: call(aoti.aoti_torch_cpu_searchsorted_Tensor, hp, hu, 0, 0, None, None),
        lambda: A.searchsorted(p, u))
shimtest.lt.tensor_release(hp)
shimtest.lt.tensor_release(hu)

shimtest.check(aoti.aoti_torch_cpu_bucketize_Tensor(None, None, 0, 0, C.byref(H())) == 1, "bucketize(NULL) must fail")
shimtest.summary("ops_search")

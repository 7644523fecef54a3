"""sort, sort_stable, topk, kthvalue, mode, median, nanmedian of libtensor_aoti against ATen's
(torch.ops.aten.*) in the same process: values and indices exactly, ties included (ATen's
CPU kernels leave ties where libstdc++'s std::sort / nth_element / partial_sort and its own
quickselect put them), NaN placement, output dtypes, sizes and strides, over random shapes
(0-size, 0-dim), layouts (permuted, sliced, channels-last, expanded), every real dtype (ATen's
refusals must be refusals here), lanes long enough for every algorithm's paths, and bad
arguments.

Usage: python ops_sort.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, H, HP, I32P, REAL, against, aoti, call_n, relayout, values

A = torch.ops.aten
aoti.aoti_torch_cpu_sort.argtypes = [H, C.c_int64, C.c_int32, HP, HP]
aoti.aoti_torch_cpu_sort_stable.argtypes = [H, I32P, C.c_int64, C.c_int32, HP, HP]
aoti.aoti_torch_cpu_topk.argtypes = [H, C.c_int64, C.c_int64, C.c_int32, C.c_int32, HP, HP]
aoti.aoti_torch_cpu_kthvalue.argtypes = [H, C.c_int64, C.c_int64, C.c_int32, HP, HP]
aoti.aoti_torch_cpu_mode.argtypes = [H, C.c_int64, C.c_int32, HP, HP]
aoti.aoti_torch_cpu_median.argtypes = [H, HP]
aoti.aoti_torch_cpu_nanmedian.argtypes = [H, HP]


def cases(g, n, sizes=(0, 1, 2, 3, 5, 8, 17, 40)):
    for trial in range(n):
        dtype = REAL[trial % len(REAL)]
        nd = g.choice([0, 1, 1, 2, 2, 3, 4])
        shape = [g.choice(sizes) for _ in range(nd)]
        if g.random() < 0.85:
            shape = [max(s, 1) for s in shape]
        x = relayout(values(shape, dtype, g), g)
        dim = g.randrange(-max(nd, 1), max(nd, 1))
        if g.random() < 0.03:
            dim = max(nd, 1) + 1
        yield dtype, x, dim


g = random.Random(11)
for dtype, x, dim in cases(g, 500):
    hx = shimtest.wrap(x)
    what = f"{dtype} {list(x.shape)} strides {x.stride()} dim {dim}"
    for desc in (0, 1):
        against(f"sort {what} desc {desc}", lambda: call_n(aoti.aoti_torch_cpu_sort, 2, hx, dim, desc),
                lambda: A.sort(x, dim, bool(desc)))
        for stable in (None, 0, 1):
            s = None if stable is None else C.c_int32(stable)
            against(f"sort_stable {what} desc {desc} stable {stable}",
                    lambda: call_n(aoti.aoti_torch_cpu_sort_stable, 2, hx, C.byref(s) if s is not None else None, dim, desc),
                    lambda: A.sort.stable(x, stable=None if stable is None else bool(stable), dim=dim, descending=bool(desc)))
    size = x.shape[dim] if x.dim() and -x.dim() <= dim < x.dim() else 1
    for k in {0, 1, size // 2, size, size + 1, -1}:
        for largest, srt in ((1, 1), (0, 1), (1, 0), (0, 0)):
            against(f"topk {what} k {k} largest {largest} sorted {srt}",
                    lambda: call_n(aoti.aoti_torch_cpu_topk, 2, hx, k, dim, largest, srt),
                    lambda: A.topk(x, k, dim, bool(largest), bool(srt)))
        for keep in (0, 1):
            against(f"kthvalue {what} k {k} keepdim {keep}",
                    lambda: call_n(aoti.aoti_torch_cpu_kthvalue, 2, hx, k, dim, keep),
                    lambda: A.kthvalue(x, k, dim, bool(keep)))
    for keep in (0, 1):
        against(f"mode {what} keepdim {keep}", lambda: call_n(aoti.aoti_torch_cpu_mode, 2, hx, dim, keep),
                lambda: A.mode(x, dim, bool(keep)))
    against(f"median {what}", lambda: call_n(aoti.aoti_torch_cpu_median, 1, hx), lambda: A.median(x))
    against(f"nanmedian {what}", lambda: call_n(aoti.aoti_torch_cpu_nanmedian, 1, hx), lambda: A.nanmedian(x))
    shimtest.lt.tensor_release(hx)

# Long lanes: introsort's heap sort fallback and recursion, topk's partial_sort path
# (64·k <= n) and its nth_element + sort path, quickselect's partitions, with many ties.
for dtype in (torch.float32, torch.int64, torch.float16, torch.bfloat16, torch.int8, torch.float64):
    for n, spread in ((300, 3), (1000, 50), (5000, 1000), (2500, 2)):
        x = values([3, n], torch.int64, g).to(dtype)
        x = (torch.randint(0, spread, (3, n)) - spread // 2).to(dtype)
        if dtype.is_floating_point:
            x[0, ::7] = float("nan")
            x[1] = x[1] + torch.randn(n).to(dtype) * (spread > 100)
        x[2] = 1  # all equal
        hx = shimtest.wrap(x)
        what = f"{dtype} [3, {n}] spread {spread}"
        for desc in (0, 1):
            against(f"sort {what} desc {desc}", lambda: call_n(aoti.aoti_torch_cpu_sort, 2, hx, 1, desc),
                    lambda: A.sort(x, 1, bool(desc)))
        for k in (1, 2, 7, 40, 64, n // 3, n - 1):
            for largest, srt in ((1, 1), (0, 1), (1, 0), (0, 0)):
                against(f"topk {what} k {k} largest {largest} sorted {srt}",
                        lambda: call_n(aoti.aoti_torch_cpu_topk, 2, hx, k, 1, largest, srt),
                        lambda: A.topk(x, k, 1, bool(largest), bool(srt)))
            against(f"kthvalue {what} k {k}", lambda: call_n(aoti.aoti_torch_cpu_kthvalue, 2, hx, k, 1, 0),
                    lambda: A.kthvalue(x, k, 1, False))
        against(f"mode {what}", lambda: call_n(aoti.aoti_torch_cpu_mode, 2, hx, 1, 0), lambda: A.mode(x, 1, False))
        against(f"median {what}", lambda: call_n(aoti.aoti_torch_cpu_median, 1, hx), lambda: A.median(x))
        against(f"nanmedian {what}", lambda: call_n(aoti.aoti_torch_cpu_nanmedian, 1, hx), lambda: A.nanmedian(x))
        shimtest.lt.tensor_release(hx)

# A sampling head's shapes: logits [batch, vocab] with -inf masking (ties at -inf).
for vocab in (100, 50257):
    x = torch.randn(4, vocab)
    x[:, vocab // 2:] = float("-inf")
    hx = shimtest.wrap(x)
    for k in (1, 50, vocab // 2 + 10):
        against(f"topk logits {vocab} k {k}", lambda: call_n(aoti.aoti_torch_cpu_topk, 2, hx, k, -1, 1, 1),
                lambda: A.topk(x, k, -1))
    one = C.c_int32(1)
    against(f"sort_stable logits {vocab}", lambda: call_n(aoti.aoti_torch_cpu_sort_stable, 2, hx, C.byref(one), -1, 1),
            lambda: A.sort.stable(x, stable=True, dim=-1, descending=True))
    shimtest.lt.tensor_release(hx)

shimtest.check(aoti.aoti_torch_cpu_sort(None, 0, 0, C.byref(H()), C.byref(H())) == 1, "sort(NULL) must fail")
x = torch.ones(3)
hx = shimtest.wrap(x)
shimtest.check(aoti.aoti_torch_cpu_topk(hx, 1, 0, 1, 1, None, C.byref(H())) == 1, "topk with a NULL output must fail")
shimtest.lt.tensor_release(hx)

# nanmedian of all-NaN and mostly-NaN tensors.
for x in (torch.full((5,), float("nan")), torch.tensor([float("nan"), 2.0, float("nan"), 1.0]),
          torch.tensor([float("nan")], dtype=torch.float16), torch.tensor([3.0, float("nan")]).double()):
    hx = shimtest.wrap(x)
    against(f"nanmedian {x.tolist()}", lambda: call_n(aoti.aoti_torch_cpu_nanmedian, 1, hx), lambda: A.nanmedian(x))
    shimtest.lt.tensor_release(hx)

shimtest.summary("ops_sort")

"""masked_select, masked_scatter, repeat_interleave_Tensor of libtensor_aoti against ATen's
(torch.ops.aten.*) in the same process: values exactly, output dtype, sizes and strides, over
random shapes (0-size, 0-dim), broadcasting of self and mask, layouts (permuted, sliced,
channels-last, expanded), every dtype (complex included), and the error cases (uint8 masks,
shapes that do not broadcast, too few source elements, mismatched dtypes, negative repeats,
a wrong output_size: status 1).

Usage: python ops_masked.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, H, HP, I64P, REAL, against, aoti, call, lt, rand, relayout, wrap

A = torch.ops.aten
aoti.aoti_torch_cpu_masked_select.argtypes = [H, H, HP]
aoti.aoti_torch_cpu_masked_scatter.argtypes = [H, H, H, HP]
aoti.aoti_torch_cpu_repeat_interleave_Tensor.argtypes = [H, I64P, HP]

ALL = REAL + [torch.complex64, torch.complex128]


g = random.Random(41)
for trial in range(1200):
    dtype = ALL[trial % len(ALL)]
    nd = g.choice([0, 1, 2, 3, 4])
    full = [g.choice([0, 1, 2, 3, 5]) if g.random() < 0.1 else g.choice([1, 2, 3, 5]) for _ in range(nd)]
    xs = [s if g.random() < 0.8 else 1 for s in full][g.randint(0, nd) if g.random() < 0.3 else 0:]
    ms = [s if g.random() < 0.8 else 1 for s in full][g.randint(0, nd) if g.random() < 0.3 else 0:]
    if g.random() < 0.04 and ms:
        ms[-1] += 1  # not broadcastable (unless it was 1)
    x = rand(xs, dtype, g)
    m = relayout(torch.rand(ms) < g.random(), g)
    if g.random() < 0.03:
        m = m.to(torch.uint8)  # refused
    hx, hm = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(m))
    what = f"{dtype} self {list(x.shape)} {x.stride()} mask {m.dtype} {list(m.shape)} {m.stride()}"
    against(f"masked_select {what}", lambda: call(aoti.aoti_torch_cpu_masked_select, hx, hm),
            lambda: A.masked_select(x, m))
    try:
        need = int(torch.broadcast_to(m, torch.broadcast_shapes(x.shape, m.shape)).sum())
    except RuntimeError:
        need = 3
    n = need + g.choice([0, 0, 2, -1 if need else 0])
    sdt = dtype if g.random() < 0.95 else g.choice(ALL)
    src = rand([n], sdt, g) if g.random() < 0.7 else rand([n, 1], sdt, g).expand(n, 2).t()
    hs = wrap(shimtest.nonnull(src))
    against(f"masked_scatter {what} source {sdt} {list(src.shape)} {src.stride()}",
            lambda: call(aoti.aoti_torch_cpu_masked_scatter, hx, hm, hs), lambda: A.masked_scatter(x, m, src))
    for h in (hx, hm, hs):
        lt.tensor_release(h)

# repeat_interleave: integer dtypes (the others refused), zero and large counts, strided
# repeats, output_size right or wrong, wrapping indices in int8.
for trial in range(300):
    dt = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.float32,
          torch.uint16][trial % 8]
    n = g.choice([0, 1, 3, 10, 200])
    r = torch.randint(0, 4, (n,))
    if g.random() < 0.05 and n:
        r[g.randrange(n)] = -1
    r = relayout(r.to(dt), g)
    if g.random() < 0.05:
        r = r.reshape(1, -1)  # 2-D: refused
    size = int(r.sum()) if not dt.is_floating_point and dt != torch.bool and r.dim() == 1 else 0
    out_size = None if g.random() < 0.5 else size + g.choice([0, 0, 1])
    hr = wrap(shimtest.nonnull(r))
    cs = C.c_int64(out_size or 0)
    against(f"repeat_interleave {dt} {list(r.shape)} {r.stride()} output_size {out_size}",
            lambda: call(aoti.aoti_torch_cpu_repeat_interleave_Tensor, hr, None if out_size is None else C.byref(cs)),
            lambda: A.repeat_interleave.Tensor(r, output_size=out_size))
    lt.tensor_release(hr)

shimtest.summary("ops_masked")

"""index_reduce and segment_reduce of libtensor_aoti against ATen's (torch.ops.aten.*) in the
same process: values exactly (ATen's fold order and per-step rounding), output dtype, sizes
and strides, over random shapes (0-size, 0-dim), dims, layouts, every dtype ATen's kernels
take (the others refused), every reduction with and without self / initial, repeated
indices, NaN, empty segments, lengths and offsets (int64 / int32, batched), and the error
cases (out-of-range or negative indices, mismatched shapes and dtypes, bad reduce names,
lengths that do not sum to the dim: status 1). Where ATen's index_reduce takes bool, the
wider unsigned or complex dtypes (include_self on 2+ dims) libtensor_aoti refuses them.

Usage: python ops_reduce_misc.py LIBDIR
"""

import random
import warnings

import torch

import shimtest
from shimtest import C, H, HP, REAL, against, aoti, call, check, lt, rand, relayout, wrap

A = torch.ops.aten
warnings.simplefilter("ignore")  # index_reduce is in beta
aoti.aoti_torch_cpu_index_reduce.argtypes = [H, C.c_int64, H, H, C.c_char_p, C.c_int32, HP]
aoti.aoti_torch_cpu_segment_reduce.argtypes = [H, C.c_char_p, HP, HP, HP, C.c_int64, C.c_int32,
                                               C.POINTER(C.c_double), HP]

ALL = REAL + [torch.complex64, torch.complex128]
TAKEN = {torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
         torch.float32, torch.float64}


def aten_index_reduce(x, dim, idx, src, red, inc):
    """ATen's index_reduce; where its float16 / bfloat16 prod of one-element slices trips its
    own internal assert (a mul kernel that drops an operand of a reused iterator), ATen's
    result on the tensors widened by a trailing dim of 2 (each element folds on its own, so
    the first column is the answer)."""
    try:
        return A.index_reduce(x, dim, idx, src, red, include_self=inc)
    except RuntimeError as e:
        if "INTERNAL ASSERT" not in str(e):
            raise
    d = dim % x.dim()
    wide = lambda t: t.unsqueeze(-1).expand(*t.shape, 2).contiguous()  # noqa: E731
    res = A.index_reduce(wide(x), d, idx, wide(src), red, include_self=inc)[..., 0]
    return res.clone(memory_format=torch.contiguous_format)


g = random.Random(51)
for trial in range(1500):
    dtype = ALL[trial % len(ALL)]
    nd = g.choice([0, 1, 1, 2, 3, 4])
    shape = [g.choice([1, 2, 3, 5]) for _ in range(nd)]
    if g.random() < 0.05 and nd:
        shape[g.randrange(nd)] = 0
    x = rand(shape, dtype, g)
    dim = g.randrange(-max(nd, 1), max(nd, 1))
    d = dim % max(nd, 1)
    size = shape[d] if nd else 1
    n = g.choice([0, 1, 2, 4, 7])
    idx = torch.randint(0, max(size, 1), (n,)) if size else torch.zeros(n, dtype=torch.int64)
    r = g.random()
    if r < 0.03 and n:
        idx[0] = size  # out of range
    elif r < 0.06 and n:
        idx[0] = -1  # negative
    if g.random() < 0.3:
        idx = idx.to(torch.int32)
    if g.random() < 0.2:
        idx = relayout(idx, g)
    sshape = list(shape)
    if nd:
        sshape[d] = n
    if g.random() < 0.04 and nd > 1:
        sshape[(d + 1) % nd] += 1  # mismatched
    sdt = dtype if g.random() < 0.95 else g.choice(ALL)
    src = rand(sshape if nd else ([] if n == 1 else [n]), sdt, g)
    hx, hi, hs = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(idx)), wrap(shimtest.nonnull(src))
    what = f"{dtype} {list(x.shape)} {x.stride()} dim {dim} index {idx.dtype} {idx.tolist()} source {sdt} {list(src.shape)}"
    for red in ("prod", "mean", "amax", "amin", "sum"):
        for inc in (1, 0):
            name = f"index_reduce {red} include_self {inc} {what}"
            fn = lambda: call(aoti.aoti_torch_cpu_index_reduce, hx, dim, hi, hs, red.encode(), inc)  # noqa: E731
            if dtype not in TAKEN:
                rc, hs_ = fn()
                check(rc == 1, f"{name}: {dtype} is refused, rc {rc}")
                continue
            against(name, fn, lambda: aten_index_reduce(x, dim, idx, src, red, bool(inc)))
    for h in (hx, hi, hs):
        lt.tensor_release(h)

# segment_reduce: lengths / offsets along the last dim of the lengths, leading dims batched.
for trial in range(1200):
    dtype = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32][trial % 5]
    nd = g.choice([1, 1, 2, 3])
    axis = g.randrange(nd)
    shape = [g.choice([1, 2, 3]) for _ in range(nd)]
    segs = g.choice([1, 2, 3, 5])
    lens = []
    for _ in range(int(torch.tensor(shape[:axis]).prod()) if axis else 1):
        row = [g.choice([0, 1, 2, 3]) for _ in range(segs)]
        lens.append(row)
    total = sum(lens[0])
    lens = [row[:-1] + [row[-1] + total - sum(row)] if total - sum(row) + row[-1] >= 0 else row for row in lens]
    shape[axis] = total
    x = rand(shape, dtype, g)
    L = torch.tensor(lens, dtype=torch.int64).reshape(shape[:axis] + [segs])
    r = g.random()
    if r < 0.04:
        L.view(-1)[0] += 1  # does not sum (unless unsafe)
    elif r < 0.06 and segs > 1:
        L.view(-1)[0] -= 3  # negative
    if g.random() < 0.3:
        L = L.to(torch.int32)
    offs = torch.cat([torch.zeros(L.shape[:-1] + (1,), dtype=L.dtype), L.cumsum(-1).to(L.dtype)], -1)
    use = g.choice(["lengths", "offsets", "both"])
    unsafe = int(g.random() < 0.2)
    init = None if g.random() < 0.6 else g.choice([0.0, 2.5, -1.0, 1e30])
    ax = axis - nd if g.random() < 0.3 else axis
    if g.random() < 0.03:
        ax = (axis + 1) % nd if nd > 1 else axis  # not the last dim of lengths
    hx, hl, ho = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(L)), wrap(shimtest.nonnull(offs))
    ci = C.c_double(init or 0.0)
    # Runs past the dim: ATen reads out of bounds there (with unsafe lengths or offsets,
    # which win over lengths); libtensor_aoti refuses them.
    past = bool((offs[..., 1:] > shape[axis]).any()) if use != "lengths" or unsafe else False
    for red in ("sum", "mean", "max", "min", "prod", "amax", "foo"):
        kw = {"lengths": L} if use == "lengths" else {"offsets": offs} if use == "offsets" else {"lengths": L, "offsets": offs}
        pl = C.byref(hl) if "lengths" in kw else None
        po = C.byref(ho) if "offsets" in kw else None
        if past:
            rc, _ = call(aoti.aoti_torch_cpu_segment_reduce, hx, red.encode(), pl, None, po, ax, unsafe,
                         None if init is None else C.byref(ci))
            check(rc == 1, f"segment_reduce {red} {use} {L.tolist()} past the dim: rc {rc}")
            continue
        against(f"segment_reduce {red} {dtype} {list(x.shape)} axis {ax} {use} {L.tolist()} unsafe {unsafe} initial {init}",
                lambda: call(aoti.aoti_torch_cpu_segment_reduce, hx, red.encode(), pl, None, po, ax, unsafe,
                             None if init is None else C.byref(ci)),
                lambda: A.segment_reduce(x, red, axis=ax, unsafe=bool(unsafe), initial=init, **kw))
    for h in (hx, hl, ho):
        lt.tensor_release(h)

# indices only, nothing, and a segment past the end with unsafe: refused.
x, L = torch.randn(4, 2), torch.tensor([2, 3])
hx, hl = wrap(x), wrap(L)
check(call(aoti.aoti_torch_cpu_segment_reduce, hx, b"sum", None, C.byref(hl), None, 0, 0, None)[0] == 1,
      "segment_reduce with indices must fail")
check(call(aoti.aoti_torch_cpu_segment_reduce, hx, b"sum", None, None, None, 0, 0, None)[0] == 1,
      "segment_reduce without lengths or offsets must fail")
check(call(aoti.aoti_torch_cpu_segment_reduce, hx, b"sum", C.byref(hl), None, None, 0, 1, None)[0] == 1,
      "segment_reduce reading past the dim (unsafe) must fail")
lt.tensor_release(hx)
lt.tensor_release(hl)

shimtest.summary("ops_reduce_misc")

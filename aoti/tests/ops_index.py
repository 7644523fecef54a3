"""nonzero, nonzero_static, index.Tensor, index_put (and shim.h's index_put_out) of
libtensor_aoti against ATen's (torch.ops.aten.*) in the same process: values exactly, output
dtypes, sizes and strides (index's output takes the strides TensorIterator gives it), over
random shapes (0-size, 0-dim), layouts, every real dtype, int64 / int32 indices (negative
ones wrap), bool / uint8 masks, broadcast index shapes, adjacent and non-adjacent indexed
dims, repeated indices (accumulate adds in ATen's order; without it the value ATen's loop
leaves), and the error cases (out-of-range indices, shape mismatches, dtype mismatches).

Usage: python ops_index.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, H, HP, REAL, against, aoti, call, relayout, values

A = torch.ops.aten
HPP = C.POINTER(HP)
aoti.aoti_torch_cpu_nonzero.argtypes = [H, HP]
aoti.aoti_torch_cpu_nonzero_static.argtypes = [H, C.c_int64, C.c_int64, HP]
aoti.aoti_torch_cpu_index_Tensor.argtypes = [H, HPP, C.c_int64, HP]
aoti.aoti_torch_cpu_index_put.argtypes = [H, HPP, C.c_int64, H, C.c_int32, HP]
aoti.aoti_torch_index_put_out.argtypes = [H, H, HP, C.c_uint32, H, C.c_bool]


g = random.Random(3)
# ---- nonzero ---------------------------------------------------------------------------------
for trial in range(200):
    dtype = REAL[trial % len(REAL)]
    shape = [g.choice([0, 1, 2, 3, 6]) for _ in range(g.choice([0, 1, 2, 3, 4]))]
    x = relayout(values(shape, dtype, g), g)
    hx = shimtest.wrap(x)
    what = f"{dtype} {list(x.shape)} {x.stride()}"
    against(f"nonzero {what}", lambda: call(aoti.aoti_torch_cpu_nonzero, hx), lambda: A.nonzero(x))
    for size, fill in ((0, -1), (3, -1), (50, 7), (-1, 0)):
        against(f"nonzero_static {what} size {size}",
                lambda: call(aoti.aoti_torch_cpu_nonzero_static, hx, size, fill),
                lambda: A.nonzero_static(x, size=size, fill_value=fill))
    shimtest.lt.tensor_release(hx)
x = torch.tensor([[-0.0, 0.0, float("nan")], [1.0, -0.0, 2.0]])
hx = shimtest.wrap(x)
against("nonzero -0.0 and NaN", lambda: call(aoti.aoti_torch_cpu_nonzero, hx), lambda: A.nonzero(x))
shimtest.lt.tensor_release(hx)


# ---- index / index_put -------------------------------------------------------------------------
def make_indices(x, g):
    """A random index list for x: None, int64 / int32 tensors (broadcastable together,
    sometimes out of range), bool / uint8 masks of x's dims."""
    n = g.randint(1, max(1, x.dim()))
    ishape = [g.choice([1, 2, 3, 4]) for _ in range(g.choice([0, 1, 1, 2]))]
    out, d = [], 0
    while d < x.dim() and len(out) < n:
        r = g.random()
        if r < 0.3:
            out.append(None)
            d += 1
        elif r < 0.45 and d < x.dim():
            k = g.randint(0, min(2, x.dim() - d))
            m = torch.rand(list(x.shape[d:d + k])) < 0.5
            if g.random() < 0.1:
                m = m.to(torch.uint8)
            out.append(m)
            d += k
        else:
            size = x.shape[d]
            s = list(ishape)
            for i in range(len(s)):
                if g.random() < 0.3:
                    s[i] = 1
            if s and g.random() < 0.2:
                s = s[1:]
            hi = max(size, 1)
            t = torch.randint(-hi, hi, s) if size else torch.zeros(s, dtype=torch.int64)
            if g.random() < 0.05:
                t = t + 2 * hi  # out of range
            if g.random() < 0.3:
                t = t.to(torch.int32)
            out.append(relayout(t, g))
            d += 1
    return out


def handle_list(lst):
    """c_shim_cpu.h's `const AtenTensorHandle**`: a pointer per entry, NULL for None."""
    hs = [shimtest.wrap(t) if t is not None else None for t in lst]
    ptrs = [C.pointer(H(h.value)) if h is not None else None for h in hs]
    arr = (HP * max(len(ptrs), 1))(*ptrs)
    return hs, ptrs, arr


for trial in range(900):
    dtype = REAL[trial % len(REAL)]
    nd = g.choice([1, 1, 2, 2, 3, 4])
    shape = [g.choice([0, 1, 2, 3, 5]) if g.random() < 0.1 else g.choice([1, 2, 3, 5]) for _ in range(nd)]
    x = relayout(values(shape, dtype, g), g)
    idx = make_indices(x, g)
    if g.random() < 0.03:
        idx = idx + [None] * (x.dim() + 1 - len(idx))  # too many
    hx = shimtest.wrap(x)
    hs, ptrs, arr = handle_list(idx)
    desc = [None if t is None else (str(t.dtype), list(t.shape)) for t in idx]
    what = f"{dtype} {list(x.shape)} {x.stride()} indices {desc}"
    against(f"index {what}", lambda: call(aoti.aoti_torch_cpu_index_Tensor, hx, arr, len(idx)),
            lambda: A.index.Tensor(x, idx))
    try:
        rshape = A.index.Tensor(x, idx).shape
    except Exception:
        rshape = [2]
    vshape = list(rshape)
    r = g.random()
    if r < 0.3:
        vshape = [1 if g.random() < 0.5 else s for s in vshape]
    elif r < 0.4:
        vshape = []
    elif r < 0.45:
        vshape = vshape + [3]  # not broadcastable
    vdt = dtype if g.random() < 0.9 else g.choice(REAL)
    v = relayout(values(vshape, vdt, g, nan=0.0), g)
    hv = shimtest.wrap(v)
    for acc in (0, 1):
        against(f"index_put {what} values {vdt} {vshape} acc {acc}",
                lambda: call(aoti.aoti_torch_cpu_index_put, hx, arr, len(idx), hv, acc),
                lambda: A.index_put(x, idx, v, bool(acc)))
    # shim.h's index_put_out, out == self as Inductor emits it.
    y = x.clone()
    hy = shimtest.wrap(y)
    harr = (H * max(len(idx), 1))(*[h for h in hs])
    try:
        want = A.index_put(x, idx, v, True)
    except Exception:
        want = None
    rc = aoti.aoti_torch_index_put_out(hy, hy, harr, len(idx), hv, True)
    if want is None:
        shimtest.check(rc == 1, f"index_put_out {what}: ATen raises, rc {rc}")
    else:
        diff = shimtest.same(y, want)
        shimtest.check(rc == 0 and not diff, f"index_put_out {what}: rc {rc} {diff}")
    for h_ in [hx, hv, hy] + [h for h in hs if h is not None]:
        shimtest.lt.tensor_release(h_)

# Repeated indices, long enough for order to matter in float32 sums.
x = torch.zeros(3, 4)
i = torch.randint(0, 3, (5000,))
v = torch.rand(5000, 4) * 1000
hx, hv = shimtest.wrap(x), shimtest.wrap(v)
hs, ptrs, arr = handle_list([i])
# (Without accumulate, ATen writes repeated indices from several threads past 3000
# elements: which value stays is not defined there.)
against("index_put repeated acc 1", lambda: call(aoti.aoti_torch_cpu_index_put, hx, arr, 1, hv, 1),
        lambda: A.index_put(x, [i], v, True))
for h_ in [hx, hv] + hs:
    shimtest.lt.tensor_release(h_)

shimtest.check(aoti.aoti_torch_cpu_nonzero(None, C.byref(H())) == 1, "nonzero(NULL) must fail")
shimtest.summary("ops_index")

"""Tests libtensor_aoti's embedding bags (kernels/embedding.rs) against ATen's, in one
process: _embedding_bag and _embedding_bag_forward_only over random weights (every float
dtype; contiguous, transposed, sliced, expanded rows), indices and offsets (int32, int64,
promoted pairs; empty bags, empty indices, decreasing offsets, include_last_offset with a
last offset short of the end), modes sum / mean / max (NaN and ties), per_sample_weights,
padding_idx. Where ATen raises, ours must return 1; else all four outputs with ATen's
dtype, sizes, strides and values (exact for the index outputs and max; per-dtype tolerance
for sums and means).

Usage: python ops_embedding.py LIBDIR. Prints "ops_embedding: N passed, N failed".
"""

import random

import torch

import shimtest
from shimtest import C, H, check, lt, nonnull, same, to_torch, wrap

A = torch.ops.aten
aoti = shimtest.aoti
HP = C.POINTER(H)
for n in ("_embedding_bag", "_embedding_bag_forward_only"):
    getattr(aoti, "aoti_torch_cpu_" + n).argtypes = [
        H, H, H, C.c_int32, C.c_int64, C.c_int32, HP, C.c_int32, C.c_int64, HP, HP, HP, HP]

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5, torch.float64: 1e-12}
g = random.Random(11)
counts = {"refused": 0, "ran": 0}


def weight(v, d, dtype):
    r = g.random()
    if r < 0.3:
        w = torch.randint(-2, 3, (v, d)).to(dtype)  # ties
    else:
        w = torch.randn(v, d).to(dtype)
    if g.random() < 0.2 and w.numel():
        w.view(-1)[g.randrange(w.numel())] = float("nan")
    r = g.random()
    if r < 0.2:
        return w.t().contiguous().t()  # rows of stride != 1
    if r < 0.3:
        big = torch.zeros(2 * v, d, dtype=dtype)
        big[::2] = w
        return big[::2]
    if r < 0.35 and v:
        return w[:1].expand(v, d)
    return w


def offsets_for(n, include_last):
    nb = g.randint(1, 5)
    offs = [0] + sorted(g.randint(0, n) for _ in range(nb - 1))
    if g.random() < 0.08 and len(offs) > 2:
        offs[1], offs[2] = offs[2], offs[1]  # decreasing
    if include_last:
        offs.append(n if g.random() < 0.7 else g.randint(offs[-1] if offs[-1] <= n else 0, n))
    return offs


def call(fn_name, w, ind, off, mode, psw, last, pad):
    hw, hi, ho = wrap(nonnull(w)), wrap(nonnull(ind)), wrap(nonnull(off))
    hp = H(wrap(nonnull(psw)).value) if psw is not None else None
    rets = [H() for _ in range(4)]
    rc = getattr(aoti, "aoti_torch_cpu_" + fn_name)(
        hw, hi, ho, 0, mode, 0, C.byref(hp) if hp is not None else None, int(last), pad,
        *[C.byref(r) for r in rets])
    for h in (hw, hi, ho) + ((hp,) if hp is not None else ()):
        lt.tensor_release(h)
    got = None
    if rc == 0:
        got = [to_torch(r) for r in rets]
        for r in rets:
            aoti.aoti_torch_delete_tensor_object(r)
    return rc, got


for trial in range(700):
    dtype = g.choice(FLOATS)
    v = g.randint(0 if g.random() < 0.05 else 1, 12)
    d = g.randint(0 if g.random() < 0.05 else 1, 5)
    w = weight(v, d, dtype)
    n = g.randint(0 if g.random() < 0.1 else 1, 14)
    ind = torch.randint(0, max(v, 1), (n,))
    if g.random() < 0.05 and n:
        ind[g.randrange(n)] = g.choice([-1, v, v + 3])  # out of range
    last = g.random() < 0.3
    off = torch.tensor(offsets_for(n, last), dtype=torch.int64)
    itype = g.choice([torch.int64, torch.int32])
    otype = itype if g.random() < 0.85 else g.choice([torch.int64, torch.int32, torch.int16, torch.uint8])
    ind, off = ind.to(itype), off.to(otype)
    if g.random() < 0.1 and n > 1:
        ind = torch.stack([ind, ind]).t()[:, 0]  # strided indices
    mode = g.choice([0, 0, 1, 2])
    psw = None
    if g.random() < 0.35:
        psw = torch.rand(n).to(dtype) if g.random() < 0.8 else torch.rand(2 * n).to(dtype)[::2]
        if g.random() < 0.1:
            psw = torch.rand(n + 1).to(dtype)  # wrong size
        if g.random() < 0.1:
            psw = psw.to(torch.float64 if dtype != torch.float64 else torch.float32)  # wrong dtype
    pad = g.choice([-1, -1, -1, g.randint(0, max(v - 1, 0)), v + 2, -5])
    fn_name = g.choice(["_embedding_bag", "_embedding_bag_forward_only"])
    desc = (f"{fn_name} {dtype} weight {list(w.shape)} {w.stride()} indices {ind.tolist()} {ind.dtype} "
            f"offsets {off.tolist()} {off.dtype} mode {mode} last {last} pad {pad} "
            f"psw {None if psw is None else (list(psw.shape), psw.stride(), psw.dtype)}")
    fast = (mode != 2 and w.stride(1) == 1 and pad < 0 and (psw is None or psw.stride(0) == 1)
            and dtype != torch.float64)
    if fast and any(b < a for a, b in zip(off.tolist(), off.tolist()[1:])):
        # ATen's fast path (fbgemm) on decreasing offsets: an error, or rows it never
        # writes (uninitialised memory). Ours refuses.
        rc, got = call(fn_name, w, ind, off, mode, psw, last, pad)
        check(rc == 1, f"{desc}: decreasing offsets on the fast path: rc {rc}")
        continue
    try:
        want = getattr(A, fn_name)(w, ind, off, False, mode, False, psw, last, pad)
    except Exception as e:
        want = None
        why = str(e).split("\n")[0][:100]
    rc, got = call(fn_name, w, ind, off, mode, psw, last, pad)
    if want is None:
        counts["refused"] += 1
        check(rc == 1, f"{desc}: ATen refuses ({why}) but rc {rc}")
        continue
    counts["ran"] += 1
    if rc != 0:
        check(False, f"{desc}: rc {rc}")
        continue
    for i, (a, b) in enumerate(zip(got, want)):
        tol = TOL[dtype] if i == 0 and mode != 2 else 0
        check(not same(a, b, tol),
              f"{desc}: output {i}: ours {a.dtype} {list(a.shape)} {a.stride()} {a.tolist() if a.numel() < 30 else ''}"
              f" ATen {b.dtype} {list(b.shape)} {b.stride()} {b.tolist() if b.numel() < 30 else ''}")

# No offsets but some indices: ATen writes outside its outputs (or crashes, for max); ours
# gives the outputs' visible part (no bags, offset2bag -1) without touching memory.
for mode in (0, 1, 2):
    w = torch.randn(5, 3).double()
    rc, got = call("_embedding_bag_forward_only", w, torch.tensor([1, 2]), torch.tensor([], dtype=torch.int64), mode, None, False, -1)
    ok = rc == 0 and list(got[0].shape) == [0, 3] and got[1].tolist() == [-1, -1] and got[2].numel() == 0
    check(ok, f"no offsets, mode {mode}: rc {rc}, {got}")

# Argument errors: status 1, no crash.
w, ind, off = torch.randn(5, 3), torch.tensor([1, 2, 3]), torch.tensor([0, 2])
for desc, args in [
    ("mode 3", (w, ind, off, 3, None, False, -1)),
    ("1-D weight", (w[:, 0], ind, off, 0, None, False, -1)),
    ("int64 weight", (w.long(), ind, off, 0, None, False, -1)),
    ("float indices", (w, ind.float(), off, 0, None, False, -1)),
    ("int16 indices and offsets", (w, ind.short(), off.short(), 0, None, False, -1)),
    ("2-D offsets", (w, ind, off.view(1, 2), 0, None, False, -1)),
    ("0-dim indices", (w, ind[0], off[:1], 0, None, False, -1)),
    ("0-dim weight", (w[0, 0], ind, off, 0, None, False, -1)),
    ("offsets[0] 1", (w, ind, torch.tensor([1, 2]), 1, None, False, -1)),
    ("offsets past indices", (w, ind, torch.tensor([0, 4]), 1, None, False, -1)),
    ("psw with max", (w, ind, off, 2, torch.rand(3), False, -1)),
    ("psw 2-D", (w, ind, off, 0, torch.rand(3, 1), False, -1)),
    ("include_last without offsets", (w, ind, off[:0], 0, None, True, -1)),
    ("index 5 of 5", (w, torch.tensor([1, 5]), off, 2, None, False, -1)),
]:
    rc, got = call("_embedding_bag_forward_only", *args)
    check(rc == 1, f"{desc}: rc {rc}")
hw, hi, ho = wrap(w), wrap(ind), wrap(off)
r = [H() for _ in range(4)]
check(aoti.aoti_torch_cpu__embedding_bag(None, hi, ho, 0, 0, 0, None, 0, -1, *[C.byref(x) for x in r]) == 1, "NULL weight")
check(aoti.aoti_torch_cpu__embedding_bag(hw, hi, ho, 0, 0, 0, None, 0, -1, C.byref(r[0]), None, C.byref(r[2]), C.byref(r[3])) == 1, "NULL ret1")
for h in (hw, hi, ho):
    lt.tensor_release(h)

print(f"ops_embedding: {counts['ran']} random cases compared, {counts['refused']} refused by both")
shimtest.summary("ops_embedding")

"""The data-movement rows of benches/c/bench_copy.c, measured the same way with PyTorch
(single thread) and NumPy, for comparison: each op as a user calls it (output allocated,
previous output freed), next to memcpy of the same bytes into an already-touched buffer
(np.copyto), alternately, best of 21; ratio = t(memcpy) / t(op).

    /work/venv/bin/python benches/py/torch_copy.py
"""
import time

import numpy as np
import torch

torch.set_num_threads(1)
REPS = 21


def pair(op, nbytes):
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.full(nbytes, 2, dtype=np.uint8)
    out = op()
    del out
    t_op, t_mc = [], []
    for _ in range(REPS):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        t_mc.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = op()
        del out
        t_op.append(time.perf_counter() - t0)
    return min(t_op) * 1e3, min(t_mc) * 1e3


def row(name, op, nbytes):
    ms, mc = pair(op, nbytes)
    print(f"| {name:<44} | {ms:8.2f} | {mc:9.2f} | {mc / ms:5.2f}x |")


print(f"| {'op (PyTorch ' + torch.__version__ + ', 1 thread)':<44} | {'ms':>8} | {'memcpy ms':>9} | {'ratio':>6} |")
print("|----------------------------------------------|---------:|----------:|-------:|")
a = torch.full((4096, 4096), 1.5)
row("clone, contiguous 4096x4096", lambda: a.clone(), a.nbytes)
t = a.t()
row("contiguous(), transposed 4096x4096", lambda: t.contiguous(), a.nbytes)
for s in [(32, 64, 56, 56), (8, 3, 224, 224)]:
    x = torch.full(s, 1.5)
    row(f"contiguous(channels_last), {'x'.join(map(str, s))}",
        lambda: x.contiguous(memory_format=torch.channels_last), x.nbytes)
f = torch.full((16 << 20,), 1.5)
row("to(bfloat16), 16M", lambda: f.to(torch.bfloat16), f.nbytes)
row("to(float16), 16M", lambda: f.to(torch.float16), f.nbytes)
row("fill_ in place, 16M", lambda: f.fill_(2.0), f.nbytes)
n = np.full((4096, 4096), 1.5, dtype=np.float32)
row("NumPy: copy, contiguous 4096x4096", lambda: n.copy(), n.nbytes)
row("NumPy: ascontiguousarray(transposed)", lambda: np.ascontiguousarray(n.T), n.nbytes)

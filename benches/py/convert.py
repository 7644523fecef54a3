"""The float -> integer rows of benches/c/bench_convert.c, measured the same way with
PyTorch (single thread, `Tensor.to`) and NumPy (`astype`): each call allocates its result,
next to memcpy of the larger side's bytes into an already-touched buffer (np.copyto),
alternately, best of 7; ratio = t(memcpy) / t(op).

    ~/.cache/libtensor-ci-venv/bin/python benches/py/convert.py
"""
import time

import numpy as np
import torch

torch.set_num_threads(1)
REPS = 7
N = 16 << 20
SRCS = [("float32", np.float32, torch.float32), ("float64", np.float64, torch.float64),
        ("float16", np.float16, torch.float16), ("bfloat16", None, torch.bfloat16)]
DSTS = [("uint8", np.uint8, torch.uint8), ("int8", np.int8, torch.int8),
        ("int16", np.int16, torch.int16), ("uint16", np.uint16, torch.uint16),
        ("int32", np.int32, torch.int32), ("uint32", np.uint32, torch.uint32),
        ("int64", np.int64, torch.int64), ("uint64", np.uint64, torch.uint64)]


def best_pair(op, nbytes, src, dst):
    t_op, t_mc = [], []
    for _ in range(REPS):
        t0 = time.perf_counter()
        np.copyto(dst[:nbytes], src[:nbytes])
        t_mc.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = op()
        del out
        t_op.append(time.perf_counter() - t0)
    return min(t_op) * 1e3, min(t_mc) * 1e3


def main():
    src = np.ones(N * 8, dtype=np.uint8)
    dst = np.full(N * 8, 2, dtype=np.uint8)
    base = np.arange(N, dtype=np.float32)
    print("| pair (16M) | torch ms | torch ratio | numpy ms | numpy ratio |")
    print("|---|---:|---:|---:|---:|")
    import warnings
    warnings.simplefilter("ignore")
    for sname, snp, sth in SRCS:
        tx = torch.from_numpy(base).to(sth)
        nx = base.astype(snp) if snp is not None else None
        for dname, dnp, dth in DSTS:
            nbytes = N * max(tx.element_size(), torch.empty(0, dtype=dth).element_size())
            try:
                t_ms, mc = best_pair(lambda: tx.to(dth), nbytes, src, dst)
                t_cell = f"{t_ms:.2f} | {mc / t_ms:.2f}x"
            except (RuntimeError, TypeError):
                t_cell = "n/a | n/a"
            if nx is not None:
                n_ms, mc2 = best_pair(lambda: nx.astype(dnp), nbytes, src, dst)
                n_cell = f"{n_ms:.2f} | {mc2 / n_ms:.2f}x"
            else:
                n_cell = "n/a | n/a"
            print(f"| {sname}->{dname} | {t_cell} | {n_cell} |")


if __name__ == "__main__":
    main()

"""Benchmark: each test model through libtensor_aoti (a C process, bench_run.c) and through
libtorch (torch._inductor.aoti_load_package in a Python process), single-threaded
(OMP_NUM_THREADS=1, torch.set_num_threads(1)), same .pt2, same inputs, median of N runs
after warm-up; load time and peak RSS of each process. The libtorch side runs the same
link_libtorch=False package: libtorch_cpu is loaded RTLD_GLOBAL first so that the model
binds to libtorch's shim.

Usage: python bench.py LIBDIR MODELDIR [N]   (LIBDIR: libtensor.so.0, libtensor_aoti.so and
the compiled bench_run; MODELDIR: made by tests/make_models.py)
"""

import os
import subprocess
import sys

LIB, MODELS = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 200
ENV = dict(os.environ, OMP_NUM_THREADS="1", TENSOR_AOTI_QUIET="1")

TORCH_SIDE = r"""
import ctypes, os, sys, time
t_start = time.perf_counter()
import torch, numpy as np
ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"), mode=ctypes.RTLD_GLOBAL)
torch.set_num_threads(1)
pt2, n, cl = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
xs = [torch.from_numpy(np.load(p)) for p in sys.argv[4:]]
if cl:
    xs = [x.contiguous(memory_format=torch.channels_last) for x in xs]
t0 = time.perf_counter()
m = torch._inductor.aoti_load_package(pt2)
load = time.perf_counter() - t0
times = []
with torch.no_grad():
    for k in range(n + 3):
        t0 = time.perf_counter()
        m(*xs)
        if k >= 3:
            times.append(time.perf_counter() - t0)
times.sort()
rss = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(f"{load * 1e3:.3f} {times[n // 2] * 1e6:.3f} {rss}")
"""


def main():
    rows = []
    for line in open(os.path.join(MODELS, "manifest.txt")):
        name, nin, _nout, _runs, layout = line.split()
        pt2 = os.path.join(MODELS, f"{name}.pt2")
        ins = [os.path.join(MODELS, f"{name}.in{i}.npy") for i in range(int(nin))]
        cl = "1" if layout == "cl" else "0"
        ours = subprocess.run([os.path.join(LIB, "bench_run"), pt2, str(N), cl] + ins,
                              env=ENV, capture_output=True, text=True, check=True).stdout.split()
        theirs = subprocess.run([sys.executable, "-c", TORCH_SIDE, pt2, str(N), cl] + ins,
                                env=ENV, capture_output=True, text=True, check=True).stdout.split()
        o, t = [float(x) for x in ours], [float(x) for x in theirs]
        rows.append((name, o, t))
    print("| model | run µs libtensor_aoti | run µs libtorch | run ratio | load ms ours / libtorch | peak RSS MB ours / libtorch |")
    print("|---|---|---|---|---|---|")
    for name, o, t in rows:
        print(f"| {name} | {o[1]:.1f} | {t[1]:.1f} | {o[1] / t[1]:.2f}x | {o[0]:.1f} / {t[0]:.1f} | {o[2] / 1024:.1f} / {t[2] / 1024:.1f} |")


if __name__ == "__main__":
    main()

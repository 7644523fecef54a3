"""The convolution floor of the AOTI benchmark (BENCHMARKS.md): every distinct convolution of
the benchmark's CNNs (torchvision's resnet18, mobilenet_v2, efficientnet_b0 at 1 x 3 x 224 x
224), run as a `freezing=False` package runs it, through libtensor_aoti's
aoti_torch_cpu_convolution (exported as ltai_torch_cpu_convolution) and through ATen's
convolution (what libtorch runs for that package: oneDNN or its own kernels), in one process,
interleaved rounds, on OMP_NUM_THREADS threads (and torch.set_num_threads): the input
channels-last (Inductor's layout for CPU convolutions), the weight channels-last too (resnet18's
package copies its weights so in its own loop before the convolutions; for 1 x 1 and depthwise
weights the two layouts are one), no bias (batch norm follows as the model's own loop). Prints, per model, the rows by our time (the dearest
first) and the sum over the model's convolutions (each counted as often as the model has it).

Usage: OMP_NUM_THREADS=1 python conv_floor.py LIBDIR [ROUNDS] [--models=a,b] [--top=N]
"""

import collections
import ctypes as C
import os
import statistics
import sys
import time

import torch
import torchvision

import ltai
from ltai import H, I64P

args = [a for a in sys.argv[1:] if not a.startswith("--")]
opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
LIB = args[0]
ROUNDS = int(args[1]) if len(args) > 1 else 9
MODELS = opts.get("models", "resnet18,mobilenet_v2,efficientnet_b0").split(",")
TOP = int(opts.get("top", "12"))
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
aoti, lt, wrap = ltai.load(LIB)
aoti.ltai_torch_cpu_convolution.argtypes = [
    H, H, C.POINTER(H), I64P, C.c_int64, I64P, C.c_int64, I64P, C.c_int64, C.c_int32, I64P,
    C.c_int64, C.c_int64, C.POINTER(H)]


def arr(v):
    return (C.c_int64 * len(v))(*v)


def convs(name):
    """(input shape, weight shape, stride, padding, dilation, groups) -> how many the model has."""
    m = getattr(torchvision.models, name)().eval()
    seen = collections.Counter()

    def hook(mod, inp, _out):
        seen[(tuple(inp[0].shape), tuple(mod.weight.shape), mod.stride, mod.padding,
              mod.dilation, mod.groups)] += 1

    for mod in m.modules():
        if isinstance(mod, torch.nn.Conv2d):
            mod.register_forward_hook(hook)
    with torch.no_grad():
        m(torch.randn(1, 3, 224, 224))
    return seen


def main():
    for model in MODELS:
        rows = []
        for (xs, ws, st, pad, dil, grp), count in convs(model).items():
            x = torch.randn(xs).contiguous(memory_format=torch.channels_last)
            w = torch.randn(ws).contiguous(memory_format=torch.channels_last)
            hx, hw = wrap(x), wrap(w)
            macs = x.shape[0] * ws[0] * ws[1] * ws[2] * ws[3]
            want = torch.ops.aten.convolution(x, w, None, st, pad, dil, False, [0, 0], grp)
            macs *= want.shape[2] * want.shape[3]
            reps = max(1, int(2e7 / macs))

            def ours():
                for _ in range(reps):
                    ret = H()
                    rc = aoti.ltai_torch_cpu_convolution(hx, hw, None, arr(st), 2, arr(pad), 2,
                                                         arr(dil), 2, 0, arr([0, 0]), 2, grp,
                                                         C.byref(ret))
                    assert rc == 0
                    lt.tensor_release(ret)

            def theirs():
                for _ in range(reps):
                    torch.ops.aten.convolution(x, w, None, st, pad, dil, False, [0, 0], grp)

            times = {"ours": [], "aten": []}
            for r in range(ROUNDS + 1):
                for side, fn in ((("ours", ours), ("aten", theirs)) if r % 2 else
                                 (("aten", theirs), ("ours", ours))):
                    t0 = time.perf_counter()
                    fn()
                    if r:
                        times[side].append((time.perf_counter() - t0) / reps)
            med = {s: statistics.median(v) for s, v in times.items()}
            desc = (f"{'depthwise ' if grp == ws[0] and ws[1] == 1 else ''}{ws[2]}x{ws[3]} "
                    f"s{st[0]} {ws[1] * grp}->{ws[0]} at {xs[2]}x{xs[3]}")
            rows.append((med["ours"] * count, med["aten"] * count, count, desc, macs))
            lt.tensor_release(hx)
            lt.tensor_release(hw)
        rows.sort(reverse=True)
        tot_o, tot_a = sum(r[0] for r in rows), sum(r[1] for r in rows)
        print(f"\n{model}: convolutions {tot_o * 1e3:.2f} ms ours, {tot_a * 1e3:.2f} ms ATen "
              f"({tot_o / tot_a:.2f}x), {len(rows)} distinct")
        print("| convolution | count | ours ms | ATen ms | ours / ATen | ours GFLOP/s |")
        print("|---|---|---|---|---|---|")
        for o, a, count, desc, macs in rows[:TOP]:
            print(f"| {desc} | {count} | {o * 1e3:.3f} | {a * 1e3:.3f} | {o / a:.2f}x | "
                  f"{2 * macs * count / o / 1e9:.1f} |", flush=True)


if __name__ == "__main__":
    main()

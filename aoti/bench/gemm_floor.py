"""The GEMM floor of the AOTI benchmark (BENCHMARKS.md): GFLOP/s of libtensor_aoti's matrix
product (aoti_torch_cpu_addmm_out, exported as ltai_torch_cpu_addmm_out, the fallback a model's linear layers call) against
libtorch's (torch.addmm: MKL / oneDNN) and, when Debian's OpenBLAS is installed, OpenBLAS's
cblas_sgemm, on the linear-layer shapes of the benchmark's transformers, small batches
(M = 1..16) and the im2col GEMMs of resnet18's convolutions, in one process, interleaved
rounds, on OMP_NUM_THREADS threads (and torch.set_num_threads; all three libraries take
their threads from the process's one libgomp).

Every product is out = bias + a @ w with a [m, k] row-major and w the [k, n] operand as
the model passes it: "nt", the transpose of a row-major [n, k] weight (nn.Linear in a
freezing=False package, a channels-last im2col convolution), or "nn", row-major [k, n]
(transformers' Conv1D, GPT-2); OpenBLAS's row is the same product with the bias added by
the GEMM's beta (the bias rows copied first, inside the timed loop).

--cold: each product's weight is one of copies filling 1 GiB, used in turn (read from
memory, as in a model's run, where each weight is used once per run); otherwise the same
weight every time (in cache). GEMM_SHAPES=word,word: only the shapes whose name holds one.
Debian's OpenBLAS does not recognise every CPU (0.3.21 takes this host's Sapphire Rapids for
a Prescott): OPENBLAS_CORETYPE=SKYLAKEX gives it its AVX-512 kernels.

Usage: OMP_NUM_THREADS=1 python gemm_floor.py LIBDIR [ROUNDS] [--cold] [--blas=PATH]
"""

import ctypes as C
import os
import statistics
import sys
import time

import torch

import ltai
from ltai import H

args = [a for a in sys.argv[1:] if not a.startswith("--")]
COLD = "--cold" in sys.argv[1:]
COLD_BYTES = 1 << 30
LIB = args[0]
ROUNDS = int(args[1]) if len(args) > 1 else 15
BLAS = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--blas=")),
            "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0")
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
aoti, lt, wrap = ltai.load(LIB)
aoti.ltai_torch_cpu_addmm_out.argtypes = [H, H, H, H, C.c_double, C.c_double]
blas = None
if os.path.exists(BLAS):
    blas = C.CDLL(BLAS)
    blas.cblas_sgemm.argtypes = [C.c_int, C.c_int, C.c_int, C.c_int, C.c_int, C.c_int, C.c_float,
                                 C.c_void_p, C.c_int, C.c_void_p, C.c_int, C.c_float,
                                 C.c_void_p, C.c_int]
    blas.openblas_get_config.restype = C.c_char_p


# (name, m, k, n, layout): BERT-base at sequence 128 (QKV, attention output, FFN up, FFN
# down: nn.Linear, the weight [n, k] passed transposed, "nt"), the GPT-2-small step over 16
# tokens (fused QKV, attention output, FFN up / down: transformers' Conv1D, the weight
# [k, n] as stored, "nn"; the logits of the last position: a Linear), linear layers at
# batch 1..8 (both layouts), 1 x 1 convolutions of mobilenet_v2 / efficientnet_b0 (positions x
# cin by cin x cout, channels-last) and resnet18's 3 x 3 convolutions as channels-last im2col
# GEMMs (positions x (3 * 3 * cin) by (3 * 3 * cin) x cout, the weight transposed).
SHAPES = [("bert qkv/out", 128, 768, 768, "nt"), ("bert ffn up", 128, 768, 3072, "nt"),
          ("bert ffn down", 128, 3072, 768, "nt"), ("gpt2 qkv", 16, 768, 2304, "nn"),
          ("gpt2 out", 16, 768, 768, "nn"), ("gpt2 ffn up", 16, 768, 3072, "nn"),
          ("gpt2 ffn down", 16, 3072, 768, "nn"), ("gpt2 lm head", 16, 768, 50257, "nt")]
SHAPES += [(f"linear m={m}", m, 768, 3072, lay) for lay in ("nt", "nn") for m in (1, 2, 4, 8)]
SHAPES += [("mobilenet_v2 1x1 14x14", 196, 96, 576, "nt"),
           ("mobilenet_v2 1x1 7x7", 49, 160, 960, "nt"),
           ("efficientnet_b0 1x1 7x7", 49, 1152, 192, "nt")]
SHAPES += [("resnet18 conv1 7x7", 12544, 147, 64, "nt"),
           ("resnet18 layer1 3x3", 3136, 576, 64, "nt"),
           ("resnet18 layer2 3x3", 784, 1152, 128, "nt"),
           ("resnet18 layer3 3x3", 196, 2304, 256, "nt"),
           ("resnet18 layer4 3x3", 49, 4608, 512, "nt")]


def main():
    only = os.environ.get("GEMM_SHAPES")
    shapes = [s for s in SHAPES if not only or any(w in s[0] for w in only.split(","))]
    cols = ["ours"] + (["OpenBLAS"] if blas else []) + ["libtorch"]
    if blas:
        print(f"OpenBLAS: {blas.openblas_get_config().decode()}\n")
    print("| shape (m x k x n) | " + " | ".join(f"{c} GFLOP/s" for c in cols)
          + " | ours / libtorch" + (" | OpenBLAS / libtorch" if blas else "") + " |")
    print("|---" * (len(cols) + 2 + bool(blas)) + "|")
    for name, m, k, n, lay in shapes:
        # w is B = the [k, n] right operand: a transposed [n, k] weight ("nt") or as stored.
        # Cold: as many copies as fill COLD_BYTES, used in turn, so that each product reads
        # its weight from memory as a model's run does (each weight used once per run).
        copies = max(1, COLD_BYTES // (4 * k * n)) if COLD else 1
        a, bias = torch.randn(m, k), torch.randn(n)
        ws = [torch.randn(n, k).t() if lay == "nt" else torch.randn(k, n) for _ in range(copies)]
        out, ref, ob = torch.empty(m, n), torch.empty(m, n), torch.empty(m, n)
        ha, ho, hb = wrap(a), wrap(out), wrap(bias)
        hws = [wrap(w) for w in ws]
        reps = max(copies, int(1e8 / (m * k * n)))
        times = {c: [] for c in cols}

        def run_ours():
            for i in range(reps):
                assert aoti.ltai_torch_cpu_addmm_out(ho, hb, ha, hws[i % copies], 1.0, 1.0) == 0

        def run_blas():
            for i in range(reps):
                ob.copy_(bias.expand(m, n))
                blas.cblas_sgemm(101, 111, 112 if lay == "nt" else 111, m, n, k, 1.0,
                                 a.data_ptr(), k, ws[i % copies].data_ptr(),
                                 k if lay == "nt" else n, 1.0, ob.data_ptr(), n)

        def run_torch():
            for i in range(reps):
                torch.addmm(bias, a, ws[i % copies], out=ref)

        fns = {"ours": run_ours, "OpenBLAS": run_blas, "libtorch": run_torch}
        for r in range(ROUNDS + 1):
            order = cols[r % len(cols):] + cols[:r % len(cols)]
            for c in order:
                t0 = time.perf_counter()
                fns[c]()
                if r:  # the first round warms up
                    times[c].append((time.perf_counter() - t0) / reps)
        assert torch.allclose(out, ref, rtol=1e-4, atol=1e-3), (name, (out - ref).abs().max())
        if blas:
            assert torch.allclose(ob, ref, rtol=1e-4, atol=1e-3), (name, (ob - ref).abs().max())
        gf = 2 * m * k * n / 1e9
        g = {c: gf / statistics.median(times[c]) for c in cols}
        row = f"| {name} ({m} x {k} x {n}, {lay}) | " + " | ".join(f"{g[c]:.1f}" for c in cols)
        row += f" | {g['ours'] / g['libtorch']:.2f}x"
        if blas:
            row += f" | {g['OpenBLAS'] / g['libtorch']:.2f}x"
        print(row + " |", flush=True)
        for h in [ha, ho, hb] + hws:
            lt.tensor_release(h)


if __name__ == "__main__":
    main()

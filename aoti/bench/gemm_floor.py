"""The GEMM floor of the AOTI benchmark (BENCHMARKS.md): GFLOP/s of libtensor_aoti's matrix
product (aoti_torch_cpu_addmm_out, the fallback a model's linear layers call: the `gemm`
crate) against libtorch's (torch.addmm: MKL / oneDNN) on the linear-layer shapes of the
benchmark's transformers, in one process, interleaved rounds, one thread (OMP_NUM_THREADS
and torch.set_num_threads; both libraries take their threads from the process's OpenMP).

Usage: OMP_NUM_THREADS=1 python gemm_floor.py LIBDIR [ROUNDS]
"""

import ctypes as C
import os
import statistics
import sys
import time

import torch

LIB = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
aoti = C.CDLL(os.path.join(LIB, "libtensor_aoti.so"))
lt = C.CDLL(os.path.join(LIB, "libtensor.so.0"))
H = C.c_void_p
I64P = C.POINTER(C.c_int64)
aoti.aoti_torch_create_tensor_from_blob.argtypes = [
    C.c_void_p, C.c_int64, I64P, I64P, C.c_int64, C.c_int32, C.c_int32, C.c_int32, C.POINTER(H)]
aoti.aoti_torch_cpu_addmm_out.argtypes = [H, H, H, H, C.c_double, C.c_double]
lt.tensor_release.argtypes = [H]


def wrap(t):
    n = t.dim()
    sizes, strides = (C.c_int64 * n)(*t.shape), (C.c_int64 * n)(*t.stride())
    h = H()
    rc = aoti.aoti_torch_create_tensor_from_blob(t.data_ptr(), n, sizes, strides, 0, 6, 0, 0,
                                                 C.byref(h))
    assert rc == 0
    return h


# (name, m, k, n): BERT-base at sequence 128 (QKV, attention output, FFN up, FFN down) and
# the GPT-2-small step over 16 tokens (fused QKV, FFN up, the logits of the last position).
SHAPES = [("bert qkv/out", 128, 768, 768), ("bert ffn up", 128, 768, 3072),
          ("bert ffn down", 128, 3072, 768), ("gpt2 qkv", 16, 768, 2304),
          ("gpt2 ffn up", 16, 768, 3072), ("gpt2 lm head", 1, 768, 50257)]


def main():
    print("| shape (m x k x n) | ours GFLOP/s | libtorch GFLOP/s | ours / libtorch |")
    print("|---|---|---|---|")
    for name, m, k, n in SHAPES:
        a, w, bias = torch.randn(m, k), torch.randn(n, k).t(), torch.randn(n)
        out, ref = torch.empty(m, n), torch.empty(m, n)
        ha, hw, ho, hb = wrap(a), wrap(w), wrap(out), wrap(bias)
        reps = max(1, int(2e8 / (m * k * n)))
        ours, theirs = [], []
        for r in range(ROUNDS + 1):
            t0 = time.perf_counter()
            for _ in range(reps):
                assert aoti.aoti_torch_cpu_addmm_out(ho, hb, ha, hw, 1.0, 1.0) == 0
            t1 = time.perf_counter()
            for _ in range(reps):
                torch.addmm(bias, a, w, out=ref)
            t2 = time.perf_counter()
            if r:  # the first round warms up
                ours.append((t1 - t0) / reps)
                theirs.append((t2 - t1) / reps)
        assert torch.allclose(out, ref, rtol=1e-4, atol=1e-3)
        gf = 2 * m * k * n / 1e9
        o, t = gf / statistics.median(ours), gf / statistics.median(theirs)
        print(f"| {name} ({m} x {k} x {n}) | {o:.1f} | {t:.1f} | {o / t:.2f}x |")
        for h in (ha, hw, ho, hb):
            lt.tensor_release(h)


if __name__ == "__main__":
    main()

"""One-pass preprocessing against the PyTorch chain, in the same run (single thread).

A 1080x1920x3 uint8 HWC frame to a float32 CHW tensor normalized by ImageNet mean/std:
  - ours: one tensor_copy_affine_ call of the real libtensor.so (ctypes) from a permuted
    view of the frame into an output allocated once (both wrap torch's memory, zero copy);
  - torch: x.permute(2, 0, 1).float().div(255).sub(mean).div(std) as users write it;
  - memcpy of the output bytes (np.copyto into an already-touched buffer).
Alternating, median of 21; ratio = t(reference) / t(ours), > 1 means ours is faster.

    cargo build --release && ~/.cache/libtensor-ci-venv/bin/python benches/py/torch_pipe.py
"""
import ctypes
import os
import statistics
import time

import numpy as np
import torch

torch.set_num_threads(1)
REPS = 21
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
lib = ctypes.CDLL(os.environ.get("LIBTENSOR", os.path.join(ROOT, "target/release/libtensor.so")))
P, I64 = ctypes.c_void_p, ctypes.c_int64


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


lib.tensor_from_blob.argtypes = [P, P, P, I64, ctypes.c_int32, Device, P, P, ctypes.POINTER(P)]
lib.tensor_permute.argtypes = [P, P, I64, ctypes.POINTER(P)]
lib.tensor_copy_affine_.argtypes = [P, P, I64, P, P, I64]
lib.tensor_release.argtypes = [P]
lib.tensor_last_error.restype = ctypes.c_char_p


def check(st):
    if st != 0:
        raise RuntimeError(lib.tensor_last_error().decode())


def wrap(t, dtype_code):
    """A libtensor handle over a contiguous torch tensor's memory (torch keeps it alive)."""
    sizes = (I64 * t.dim())(*t.shape)
    out = P()
    check(lib.tensor_from_blob(t.data_ptr(), sizes, None, t.dim(), dtype_code, Device(1, 0), None, None,
                               ctypes.byref(out)))
    return out


H, W = 1080, 1920
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
g = torch.Generator().manual_seed(0)
x = torch.randint(0, 256, (H, W, 3), dtype=torch.uint8, generator=g)
out = torch.empty(3, H, W, dtype=torch.float32)
h_img, h_out = wrap(x, 0), wrap(out, 6)
perm = (I64 * 3)(2, 0, 1)
h_chw = P()
check(lib.tensor_permute(h_img, perm, 3, ctypes.byref(h_chw)))
scale = (ctypes.c_double * 3)(*[1 / (255 * s) for s in std])
shift = (ctypes.c_double * 3)(*[-m / s for m, s in zip(mean, std)])
tm = torch.tensor(mean).view(3, 1, 1)
ts = torch.tensor(std).view(3, 1, 1)


def ours():
    check(lib.tensor_copy_affine_(h_out, h_chw, 0, scale, shift, 3))


def chain():
    return x.permute(2, 0, 1).float().div(255).sub(tm).div(ts)


src = np.ones(out.nbytes, dtype=np.uint8)
dst = np.full(out.nbytes, 2, dtype=np.uint8)
ours()
ref = chain()
diff = (out - ref).abs().max().item()
t_o, t_c, t_m = [], [], []
for _ in range(REPS):
    t0 = time.perf_counter()
    ours()
    t1 = time.perf_counter()
    r = chain()
    del r
    t2 = time.perf_counter()
    np.copyto(dst, src)
    t3 = time.perf_counter()
    t_o.append(t1 - t0)
    t_c.append(t2 - t1)
    t_m.append(t3 - t2)
o, c, m = (statistics.median(v) * 1e3 for v in (t_o, t_c, t_m))
print(f"uint8 {H}x{W}x3 HWC -> float32 CHW normalized, median of {REPS} (torch {torch.__version__}, 1 thread)")
print(f"  max |ours - torch chain| = {diff:.3g}")
print(f"  copy_affine_ (ctypes)     {o:8.3f} ms")
print(f"  torch chain               {c:8.3f} ms   ratio = {c / o:.2f}x  (target >= 2x)")
print(f"  memcpy of output bytes    {m:8.3f} ms   ratio = {m / o:.2f}x  (target >= 1.0x)")
for h in (h_chw, h_out, h_img):
    lib.tensor_release(h)

"""tensor_format against PyTorch: random tensors (every dtype, 0-4 dims, transposed views,
summarised sizes, nan/inf/-0, tiny/huge values, complex) are wrapped zero-copy with
tensor_from_blob and their text must equal repr() of the same torch tensor.

    python tests/torch_repr.py --lib target/debug/libtensor.so [--cases 3000] [--seed 0]

Needs torch. Exit code 1 on any mismatch (the first few are printed)."""
import argparse
import ctypes
import random
import sys

import torch

CODES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
         torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.complex64: 9,
         torch.complex128: 10, torch.bool: 11, torch.bfloat16: 15, torch.uint16: 27,
         torch.uint32: 28, torch.uint64: 29}
UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


def load(path):
    lib = ctypes.CDLL(path)
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.tensor_from_blob.argtypes = [ctypes.c_void_p, i64p, i64p, ctypes.c_int64, ctypes.c_int32,
                                     Device, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.c_void_p)]
    lib.tensor_format.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.tensor_format.restype = ctypes.c_size_t
    lib.tensor_release.argtypes = [ctypes.c_void_p]
    lib.tensor_last_error.restype = ctypes.c_char_p
    return lib


def ours(lib, t):
    n = t.dim()
    sizes = (ctypes.c_int64 * max(n, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(n, 1))(*t.stride())
    h = ctypes.c_void_p()
    st = lib.tensor_from_blob(t.data_ptr(), sizes, strides, n, CODES[t.dtype], Device(1, 0),
                              None, None, ctypes.byref(h))
    if st != 0:
        raise RuntimeError(lib.tensor_last_error().decode())
    need = lib.tensor_format(h, None, 0)
    buf = ctypes.create_string_buffer(need + 1)
    lib.tensor_format(h, buf, need + 1)
    lib.tensor_release(h)
    return buf.value.decode()


def random_tensor(rng):
    dt = rng.choice(list(CODES))
    shape = [rng.choice([1, 2, 3, 5, 12, 25]) for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4]))]
    if rng.random() < 0.05:  # past the 1000-element summarisation threshold
        shape = [rng.choice([1001, 2000, 40])] + ([rng.choice([30, 60])] if rng.random() < 0.5 else [])
    n = 1
    for s in shape:
        n *= s
    kind = rng.choice(["int", "small", "mixed", "huge", "tiny", "special", "zeros", "neg"])
    if dt == torch.bool:
        t = torch.tensor([rng.random() < 0.5 for _ in range(n)]).reshape(shape)
    elif not (dt.is_floating_point or dt.is_complex):
        lo, hi = (0, 255) if dt in UNSIGNED else (-100, 100)
        if kind == "huge" and dt in (torch.int32, torch.int64):
            lo, hi = -2**31, 2**31 - 1
        t = torch.tensor([rng.randint(lo, hi) for _ in range(n)], dtype=torch.int64).reshape(shape).to(dt)
    else:
        def one():
            if kind == "int":
                return float(rng.randint(-50, 50))
            if kind == "small":
                return rng.uniform(-3, 3)
            if kind == "huge":
                return rng.uniform(-1, 1) * 1e9
            if kind == "tiny":
                return rng.uniform(-1, 1) * 1e-6
            if kind == "special":
                return rng.choice([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, 2.5])
            if kind == "zeros":
                return rng.choice([0.0, -0.0])
            if kind == "neg":
                return -rng.uniform(0, 1000)
            return rng.choice([rng.uniform(-1, 1) * 10 ** rng.randint(-6, 9), float(rng.randint(-5, 5))])
        if dt.is_complex:
            t = torch.tensor([complex(one(), one()) for _ in range(n)], dtype=dt).reshape(shape)
        else:
            t = torch.tensor([one() for _ in range(n)], dtype=torch.float64).reshape(shape).to(dt)
    if t.dim() >= 2 and rng.random() < 0.3:
        t = t.transpose(0, 1)  # a strided view
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    lib = load(args.lib)
    rng = random.Random(args.seed)
    bad = 0
    for _ in range(args.cases):
        t = random_tensor(rng)
        want, got = repr(t), ours(lib, t)
        if want != got:
            bad += 1
            if bad <= 5:
                print(f"MISMATCH {t.dtype} {tuple(t.shape)} strides {t.stride()}\n"
                      f"torch:     {want}\nlibtensor: {got}\n")
    print(f"torch_repr: {args.cases - bad}/{args.cases} reprs equal PyTorch's (seed {args.seed})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

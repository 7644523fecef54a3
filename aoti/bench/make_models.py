"""Compiles the benchmark models (aoti/tests/zoo.py at size "bench": zoo.BENCH_MODELS) into
OUT_DIR, each twice with the documented recipe (aoti/python/tensor_aoti_compile.py,
vectorized for this CPU, link_libtorch=False): `<name>.pt2` with freezing=False (the package
both libtensor_aoti and libtorch run) and `<name>.frozen.pt2` with freezing=True
(oneDNN-packed weights, batch norms folded; libtorch runs it with oneDNN, libtensor_aoti with
its own kernels). Saves the inputs (`<name>.in<i>.npy`) and eager PyTorch's
outputs (`<name>.out<i>.npy`). A package already in OUT_DIR is kept.

Usage: python make_models.py OUT_DIR [name ...]
"""

import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import tensor_aoti_compile  # noqa: E402
import zoo  # noqa: E402


def save(out, stem, tensors):
    for i, t in enumerate(tensors):
        np.save(os.path.join(out, f"{stem}{i}.npy"), t.detach().contiguous().numpy())


def main():
    out, wanted = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    for name, (mod, args, dyn, _runs, opts) in zoo.models("bench").items():
        if wanted and name not in wanted:
            continue
        with torch.inference_mode():
            outs = mod(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        save(out, f"{name}.in", args)
        save(out, f"{name}.out", outs)
        for suffix, freezing in (("", False), (".frozen", True)):
            path = os.path.join(out, f"{name}{suffix}.pt2")
            if os.path.exists(path):
                continue
            t0 = time.time()
            tmp = path[:-4] + ".tmp.pt2"
            tensor_aoti_compile.compile(mod, args, tmp, dynamic_shapes=dyn,
                                        freezing=freezing, **opts)
            os.replace(tmp, path)
            print(f"compiled {name}{suffix} in {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()

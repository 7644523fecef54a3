"""Compiles the AOTInductor test models (torch._inductor.aoti_compile_and_package, CPU,
link_libtorch=False, freezing=False) into OUT_DIR, with their inputs and eager outputs as
.npy. One process for every model: compiling is the expensive part of the AOTI tests.

Usage: python make_models.py OUT_DIR [name ...]
Writes OUT_DIR/<name>.pt2, <name>.in<i>.npy, <name>.out<i>.npy and, for a model run at
other shapes than traced, <name>.run<k>.in<i>.npy / .out<i>.npy; OUT_DIR/manifest.txt lists
"name n_inputs n_outputs n_runs layout" per line (layout "cl": the inputs are channels-last;
the .npy files are always C order). A model that writes an input (in-place) saves its inputs
before the eager run and the written input after it as <name>.mutated<i>.npy.

Packages the loader must refuse (ops it lacks, freezing=True, libtorch's proxy executor,
link_libtorch=True) are compiled too: OUT_DIR/refuse.txt lists "name|text|text..." per
line, the texts the refusal message must contain (their inputs and eager outputs are saved
too: tests/coexist.cpp runs refuse_libtorch with libtorch).
"""

import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Pointwise(nn.Module):
    def forward(self, x, y):
        z = torch.sin(x) * torch.exp(y * 0.5) + torch.tanh(x - y)
        return z.sum(dim=1), torch.relu(z).amax(dim=0)


class Parallel(nn.Module):
    def forward(self, x):
        z = torch.sigmoid(x) * torch.cos(x) + x * x
        return z, z.mean(dim=1)


class Mlp(nn.Module):
    def __init__(self, d_in=32, d_hidden=64, d_out=16):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Mutate(nn.Module):
    """Writes its first input (x += y) and returns a function of it."""

    def forward(self, x, y):
        x.add_(y)
        return x * 2


class TopK(nn.Module):
    def forward(self, x):
        return torch.topk(x, 3, dim=1).values


class ConvLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).mean(dim=(2, 3)))


class Nms(nn.Module):
    def forward(self, boxes, scores):
        import torchvision

        return torchvision.ops.nms(boxes, scores, 0.5)


class Multinomial(nn.Module):
    def forward(self, p):
        return torch.multinomial(p, 2)


def refused():
    """name -> (module, example inputs, options, texts the load's refusal must contain)."""
    g = torch.Generator().manual_seed(1)
    boxes = torch.rand(10, 4, generator=g)
    boxes[:, 2:] += boxes[:, :2]
    return {
        "refuse_topk": (TopK(), (torch.randn(4, 16, generator=g),), {},
                        ["aoti_torch_cpu_topk (aten.topk)"]),
        "refuse_freezing": (ConvLinear().eval(), (torch.randn(1, 3, 8, 8, generator=g),),
                            {"freezing": True},
                            ["freezing=True", "mkldnn._convolution_pointwise"]),
        "refuse_nms": (Nms(), (boxes, torch.rand(10, generator=g)), {},
                       ["proxy executor", "torchvision::nms"]),
        "refuse_multinomial": (Multinomial(), (torch.rand(2, 5, generator=g),), {},
                               ["proxy executor", "aten::multinomial"]),
        "refuse_libtorch": (Mlp(), (torch.randn(8, 32, generator=g),),
                            {"aot_inductor.link_libtorch": True},
                            ["libtorch", "link_libtorch"]),
    }


def example_model():
    """examples_c/aoti_model.py's classifier (compiled here too, so CI compiles once)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples_c"))
    import aoti_model

    return aoti_model.Classifier().eval(), (torch.linspace(-1, 1, 8).reshape(1, 8),)


def models():
    """name -> (module, example inputs, dynamic_shapes, extra runs (list of inputs), options)."""
    g = torch.Generator().manual_seed(0)

    def r(*s, cl=False):
        t = torch.randn(*s, generator=g)
        return t.contiguous(memory_format=torch.channels_last) if cl else t

    batch = torch.export.Dim("batch", min=1, max=64)
    gemm = {"max_autotune": True, "max_autotune_gemm_backends": "CPP"}
    return {
        "pointwise": (Pointwise(), (r(4, 16), r(4, 16)), None, [], {}),
        "dynamic": (
            Pointwise(),
            (r(4, 16), r(4, 16)),
            {"x": {0: batch}, "y": {0: batch}},
            [(r(7, 16), r(7, 16)), (r(33, 16), r(33, 16))],
            {},
        ),
        "parallel": (Parallel(), (r(256, 1024),), None, [], {}),
        "mlp": (Mlp(), (r(8, 32),), None, [], {}),
        "mlp_gemm": (Mlp(), (r(8, 32),), None, [], gemm),
        "convnet": (ConvNet().eval(), (r(2, 3, 16, 16, cl=True),), None, [], {}),
        "block": (Block().eval(), (r(2, 8, 32),), None, [], {}),
        "example": (*example_model(), None, [], {}),
        # Weights appended to the .so and mmap'ed by the model from its own file.
        "mmap_self": (Mlp(), (r(8, 32),), None, [], {"aot_inductor.force_mmap_weights": True}),
        "mutate": (Mutate(), (r(4, 16), r(4, 16)), None, [], {}),
    }


# Vectorized kernels for AVX2 (x86-64-v3), whatever the build host: they call SLEEF's
# 256-bit functions (Sleef_*f8_*) and run under valgrind, which has no AVX-512. (Inductor's
# own ISA probe fails without libtorch's SLEEF, so it is told the ISA works.)
# TENSOR_AOTI_MARCH=native keeps Inductor's defaults instead.
ISA = (
    {}
    if os.environ.get("TENSOR_AOTI_MARCH") == "native"
    else {"cpp.vec_isa_ok": True, "cpp.simdlen": 256, "cpp.march": "x86-64-v3"}
)


def save(out, stem, tensors):
    for i, t in enumerate(tensors):
        np.save(os.path.join(out, f"{stem}{i}.npy"), t.detach().contiguous().numpy())


def main():
    out = sys.argv[1]
    wanted = sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    manifest = []
    for name, (mod, args, dyn, runs, opts) in models().items():
        if wanted and name not in wanted:
            continue
        t0 = time.time()
        with torch.no_grad():
            ep = torch.export.export(mod, args, dynamic_shapes=dyn)
            options = {"aot_inductor.link_libtorch": False, "freezing": False}
            options.update(ISA)
            options.update(opts)
            path = torch._inductor.aoti_compile_and_package(
                ep, package_path=os.path.join(out, f"{name}.pt2"), inductor_configs=options
            )
            save(out, f"{name}.in", args)
            before = [a.clone() for a in args]
            outs = mod(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            save(out, f"{name}.out", outs)
            for i, (a, b) in enumerate(zip(args, before)):
                if not torch.equal(a, b):
                    np.save(os.path.join(out, f"{name}.mutated{i}.npy"), a.contiguous().numpy())
            for k, run_args in enumerate(runs):
                o = mod(*run_args)
                o = o if isinstance(o, tuple) else (o,)
                save(out, f"{name}.run{k}.in", run_args)
                save(out, f"{name}.run{k}.out", o)
        cl = all(a.dim() == 4 and a.is_contiguous(memory_format=torch.channels_last) for a in args)
        manifest.append(f"{name} {len(args)} {len(outs)} {len(runs)} {'cl' if cl else '-'}")
        print(f"compiled {name} -> {path} in {time.time() - t0:.1f}s", flush=True)
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    lines = []
    for name, (mod, args, opts, texts) in refused().items():
        if wanted and name not in wanted:
            continue
        t0 = time.time()
        with torch.no_grad():
            ep = torch.export.export(mod, args)
            options = {"aot_inductor.link_libtorch": False, "freezing": False}
            options.update(ISA)
            options.update(opts)
            torch._inductor.aoti_compile_and_package(
                ep, package_path=os.path.join(out, f"{name}.pt2"), inductor_configs=options
            )
            save(out, f"{name}.in", args)
            o = mod(*args)
            save(out, f"{name}.out", o if isinstance(o, tuple) else (o,))
        lines.append("|".join([name] + texts))
        print(f"compiled {name} (to be refused) in {time.time() - t0:.1f}s", flush=True)
    with open(os.path.join(out, "refuse.txt"), "w") as f:
        f.write("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main()

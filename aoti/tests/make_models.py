"""Compiles the AOTInductor test models (the documented recipe: aoti/python/
tensor_aoti_compile.py, link_libtorch=False, freezing=False, vectorized) into OUT_DIR, with
their inputs and eager outputs as .npy. One process for every model: compiling is the
expensive part of the AOTI tests.

Usage: python make_models.py OUT_DIR [--zoo ZOO_DIR] [name ...]
(--zoo: zoo.py's models too, into ZOO_DIR, in the same process)
       python make_models.py --cache BASE   (all of them, cached in BASE by cache_key())
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

import fcntl
import hashlib
import os
import shutil
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


class Pooling(nn.Module):
    """2-d pooling Inductor leaves to fallback kernels (windows of more than 25 positions,
    on a channels-last conv output): adaptive average and max pooling to sizes that do not
    divide the input, a 7x7 average pool (stride 2, ceil_mode, count_include_pad=False);
    and a dilated ceil-mode max pool, which Inductor lowers itself."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = F.relu(self.conv(x))
        a = F.adaptive_avg_pool2d(y, (3, 4))
        m = F.adaptive_max_pool2d(y, (3, 2))
        p = F.avg_pool2d(y, 7, stride=2, padding=3, ceil_mode=True, count_include_pad=False)
        d = F.max_pool2d(y, 3, stride=2, dilation=2, ceil_mode=True)
        return a, m, p, d


class Pooling3d(nn.Module):
    """3-d pooling, all fallback kernels: avg_pool3d with a 27-position window, adaptive
    average and max pooling to sizes that do not divide the input."""

    def forward(self, x):
        a = F.avg_pool3d(x, 3, stride=2, padding=1, divisor_override=5)
        b = F.adaptive_avg_pool3d(x, (3, 5, 2))
        c = F.adaptive_max_pool3d(torch.relu(x), (3, 2, 5))
        return a, b, c


class Bags(nn.Module):
    """nn.EmbeddingBag (fallback _embedding_bag_forward_only): sum with per-sample weights,
    mean with a padding_idx, max with include_last_offset."""

    def __init__(self):
        super().__init__()
        self.sum = nn.EmbeddingBag(20, 8, mode="sum")
        self.mean = nn.EmbeddingBag(20, 8, mode="mean", padding_idx=3)
        self.max = nn.EmbeddingBag(20, 8, mode="max", include_last_offset=True)

    def forward(self, indices, offsets, weights, offsets_last):
        return (
            self.sum(indices, offsets, per_sample_weights=weights),
            self.mean(indices, offsets),
            self.max(indices, offsets_last),
        )


class Lstm(nn.Module):
    """Two LSTMs, which Inductor lowers to the mkldnn_rnn_layer fallback (one call per layer
    and direction): 2 layers, bidirectional, batch-first, from given states; and 1 layer
    without biases, time-major, from zero states. (Sizes are multiples of 8: the masked
    AVX2 loads of Inductor's fully unrolled batch-first transpose otherwise exhaust
    valgrind's translation storage.)"""

    def __init__(self):
        super().__init__()
        self.a = nn.LSTM(8, 8, num_layers=2, bidirectional=True, batch_first=True)
        self.b = nn.LSTM(8, 16, bias=False)

    def forward(self, x, h0, c0):
        y, (h, c) = self.a(x, (h0, c0))
        z, (hb, cb) = self.b(x.transpose(0, 1))
        return y, h, c, z, hb, cb


class Spectral(nn.Module):
    """FFTs (Inductor's _fft_r2c / _fft_c2c fallbacks, and the abs / view_as_real ones of
    their complex results): a 37-point rfft (prime: Bluestein), a 2-D fft, an inverse."""

    def forward(self, x):
        s = torch.fft.rfft(x, dim=-1, norm="ortho")
        f = torch.fft.fft2(x.to(torch.complex64))
        return s.abs(), torch.view_as_real(f), torch.fft.ifft(f, dim=0).real


class Sampler(nn.Module):
    """A top-k / top-p sampling head and the post-processing around it: the ops Inductor
    leaves to fallbacks (topk, sort, cumsum, searchsorted, argsort, scatter_reduce, nonzero,
    boolean index / index_put, cummax, logcumsumexp, cumprod, bucketize, mode, kthvalue,
    median)."""

    def forward(self, logits, u, idx, src):
        v, i = torch.topk(logits, 8, dim=-1)
        p = torch.softmax(v, dim=-1)
        sp, si = torch.sort(p, dim=-1, descending=True, stable=True)
        pos = torch.searchsorted(torch.cumsum(sp, dim=-1), u).clamp(max=7)
        token = torch.gather(i, -1, torch.gather(si, -1, pos))
        order = torch.argsort(logits, dim=-1)
        hist = torch.zeros(4, 10).scatter_add(1, idx, src)
        peak = torch.zeros(4, 10).scatter_reduce(1, idx, src, "amax", include_self=False)
        prod = torch.ones(4, 10).scatter_reduce(1, idx, src, "prod")
        big = torch.nonzero(logits > 1.0)
        sel = logits[logits > 1.5]
        bumped = logits.index_put((logits[:, 0] > 0,), torch.arange(16.0), accumulate=True)
        cmax, cidx = torch.cummax(logits, 1)
        scans = cmax + torch.logcumsumexp(logits, 1) + torch.cumprod(logits * 0.5, 1)
        mv, mi = torch.mode(idx, 1)
        kv, ki = torch.kthvalue(logits, 3, 1)
        buckets = torch.bucketize(logits, torch.tensor([-1.0, 0.0, 1.0]))
        return (token, order, hist, peak + prod, big, sel, bumped, scans, cidx, mv + 100 * mi,
                kv + torch.median(logits), ki, buckets)


class Mutate(nn.Module):
    """Writes its first input (x += y) and returns a function of it."""

    def forward(self, x, y):
        x.add_(y)
        return x * 2


class CholeskyInverse(nn.Module):
    """A fallback op libtensor_aoti does not implement (linear algebra)."""

    def forward(self, x):
        return torch.cholesky_inverse(x)


class Frozen(nn.Module):
    """What freezing=True packs into oneDNN's layout and fuses: convolutions (batch norms
    folded in) with relu / relu6 / silu after them, a residual add in place, a depthwise
    convolution, a linear with its bias."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(2)

        def bn(c):
            b = nn.BatchNorm2d(c)
            b.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            b.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            return b

        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), bn(8), nn.ReLU())
        self.dw = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), bn(8), nn.ReLU6())
        self.pw = nn.Sequential(nn.Conv2d(8, 8, 1), bn(8))
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y = self.stem(x)
        y = F.relu(self.pw(self.dw(y)) + y)
        y = F.silu(self.conv(y))
        return self.fc(y.mean(dim=(2, 3)))


class Upsample(nn.Module):
    """A transposed convolution: freezing=True packs it for a oneDNN kernel libtensor_aoti
    does not have (mkldnn__convolution_transpose_pointwise)."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(3, 4, 2, stride=2)

    def forward(self, x):
        return self.up(x)


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
        "refuse_missing": (CholeskyInverse(), (torch.eye(4) * 2,), {},
                           ["aoti_torch_cpu_cholesky_inverse (aten.cholesky_inverse)"]),
        "refuse_freezing": (Upsample().eval(), (torch.randn(1, 3, 8, 8, generator=g),),
                            {"freezing": True},
                            ["freezing=True", "mkldnn__convolution_transpose_pointwise"]),
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
        "pooling": (Pooling().eval(), (r(1, 3, 20, 20, cl=True),), None, [], {}),
        "pooling3d": (Pooling3d(), (r(1, 2, 8, 9, 7),), None, [], {}),
        "embedding_bag": (
            Bags().eval(),
            (
                torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 3, 8]),
                torch.tensor([0, 3, 3, 7]),
                torch.rand(12, generator=g),
                torch.tensor([0, 5, 5, 9, 12]),
            ),
            None,
            [],
            {},
        ),
        "lstm": (Lstm().eval(), (r(3, 5, 8), r(4, 3, 8), r(4, 3, 8)), None, [], {}),
        "spectral": (Spectral(), (r(3, 37),), None, [], {}),
        "example": (*example_model(), None, [], {}),
        "sampler": (
            Sampler(),
            (r(4, 16), torch.rand(4, 1, generator=g), torch.randint(0, 10, (4, 3), generator=g),
             torch.rand(4, 3, generator=g)),
            None,
            [],
            {},
        ),
        # Weights appended to the .so and mmap'ed by the model from its own file.
        "mmap_self": (Mlp(), (r(8, 32),), None, [], {"aot_inductor.force_mmap_weights": True}),
        "mutate": (Mutate(), (r(4, 16), r(4, 16)), None, [], {}),
        # freezing=True: oneDNN-packed weights, unpacked at load (aoti/src/reader/onednn.rs)
        "frozen": (Frozen().eval(), (r(2, 3, 16, 16),), None, [], {"freezing": True}),
    }


# The documented recipe (aoti/python/tensor_aoti_compile.py): vectorized for AVX2
# (x86-64-v3) whatever the build host, so the kernels run under valgrind, which has no
# AVX-512. TENSOR_AOTI_MARCH=native compiles for this host's best ISA instead.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tensor_aoti_compile  # noqa: E402

ISA = "auto" if os.environ.get("TENSOR_AOTI_MARCH") == "native" else "avx2"


def save(out, stem, tensors):
    for i, t in enumerate(tensors):
        np.save(os.path.join(out, f"{stem}{i}.npy"), t.detach().contiguous().numpy())


def cache_key():
    """What determines the compiled models: the torch version, the ISA choice and the bytes
    of the scripts that build and compile them."""
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256(f"{torch.__version__} {ISA}".encode())
    for f in ("make_models.py", "zoo.py", "../python/tensor_aoti_compile.py",
              "../../examples_c/aoti_model.py"):
        with open(os.path.join(here, f), "rb") as fh:
            h.update(fh.read())
    return f"torch-{torch.__version__}-{h.hexdigest()[:16]}"


def cached(base):
    """The test models and the zoo compiled into BASE/<cache_key()>/ (the zoo in its zoo/),
    compiled there first unless complete: into a fresh directory renamed into place when
    done, under a lock (CI may compile them in the background while a test waits). Prints
    "models: DIR". Keys unused for a day are removed."""
    os.makedirs(base, exist_ok=True)
    done = os.path.join(base, cache_key())
    with open(os.path.join(base, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(done, "zoo", "manifest.txt")):
            os.utime(done)
            print(f"reusing the compiled models of {done}")
        else:
            fresh = os.path.join(base, f"incomplete-{os.getpid()}")
            shutil.rmtree(fresh, ignore_errors=True)
            t0 = time.time()
            torch.manual_seed(0)
            compile_all(fresh, models(), [])
            compile_refused(fresh, [])
            compile_all(os.path.join(fresh, "zoo"), zoo_models(), [])
            shutil.rmtree(done, ignore_errors=True)
            os.rename(fresh, done)
            print(f"compiled the test models and the zoo in {time.time() - t0:.0f} s")
        for e in os.listdir(base):
            p = os.path.join(base, e)
            if e.startswith(("torch-", "incomplete-")) and p != done and \
                    time.time() - os.path.getmtime(p) > 24 * 3600:
                shutil.rmtree(p, ignore_errors=True)
    print(f"models: {done}")


def zoo_models():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import zoo

    return zoo.models()


def main():
    args = sys.argv[1:]
    if args[:1] == ["--cache"]:
        return cached(args[1])
    zoo_dir = None
    if "--zoo" in args:
        i = args.index("--zoo")
        zoo_dir = args[i + 1]
        del args[i:i + 2]
    out, wanted = args[0], args[1:]
    torch.manual_seed(0)
    compile_all(out, models(), wanted)
    compile_refused(out, wanted)
    if zoo_dir:
        compile_all(zoo_dir, zoo_models(), wanted)


def compile_all(out, table, wanted):
    """Compiles the models of `table` (all, or those named in `wanted`) into `out`."""
    os.makedirs(out, exist_ok=True)
    manifest = []
    for name, (mod, args, dyn, runs, opts) in table.items():
        if wanted and name not in wanted:
            continue
        t0 = time.time()
        with torch.no_grad():
            path = tensor_aoti_compile.compile(mod, args, os.path.join(out, f"{name}.pt2"),
                                               dynamic_shapes=dyn, isa=ISA, **opts)
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


def compile_refused(out, wanted):
    """The packages libtensor_aoti must refuse at load (refused()), into `out`, with
    refuse.txt: "name|text|text..." per line, the texts the refusal must contain."""
    lines = []
    for name, (mod, args, opts, texts) in refused().items():
        if wanted and name not in wanted:
            continue
        t0 = time.time()
        with torch.no_grad():
            tensor_aoti_compile.compile(mod, args, os.path.join(out, f"{name}.pt2"), isa=ISA,
                                        **opts)
            save(out, f"{name}.in", args)
            o = mod(*args)
            save(out, f"{name}.out", o if isinstance(o, tuple) else (o,))
        lines.append("|".join([name] + texts))
        print(f"compiled {name} (to be refused) in {time.time() - t0:.1f}s", flush=True)
    with open(os.path.join(out, "refuse.txt"), "w") as f:
        f.write("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main()

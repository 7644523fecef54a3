"""Tests aoti_torch_cpu_mkldnn_rnn_layer against ATen's torch.ops.aten.mkldnn_rnn_layer in
the same process: random sizes, both directions, with and without biases, the batch_first
flag (which ATen does not read), float32 / bfloat16 / float16 (cx and the biases also in
float32 beside a low-precision input, as oneDNN allows), the stride-0 state views a compiled
model passes, non-contiguous inputs; output dtypes, sizes and strides; and the error cases.

Where ATen's kernel has no defined result, the reference is the op's meaning: with T = 0
ATen leaves hy / cy uninitialised (here they are hx / cx), with B = 0 it dies of SIGFPE (the
sizes are then checked against its meta function), and for a non-contiguous input it reads
the memory as if it were contiguous (compared with ATen on the contiguous input).

Usage: python ops_rnn.py LIBDIR. Prints "ops_rnn: N passed, N failed".
"""

import random

import torch

import shimtest
from shimtest import C, H, I64P, aoti, arr, check, lt, to_torch, wrap

HP = C.POINTER(H)
aoti.aoti_torch_cpu_mkldnn_rnn_layer.argtypes = (
    [H] * 7 + [C.c_int32, I64P, C.c_int64, C.c_int64, C.c_int64, C.c_int64]
    + [C.c_int32] * 4 + [HP] * 4)

TOL = {torch.float32: 1e-5, torch.bfloat16: 1.6e-2, torch.float16: 2e-3}  # 2 ulp for the 16-bit types


def ours(args, reverse, mode, hidden, has_biases, batch_first, batch_sizes=(), num_layers=1,
         bidirectional=False, train=False):
    """(rc, [output, hy, cy, workspace] as torch tensors or None)."""
    hs = [wrap(a) if a is not None else None for a in args]
    rets = [H() for _ in range(4)]
    rc = aoti.aoti_torch_cpu_mkldnn_rnn_layer(
        *hs, int(reverse), arr(list(batch_sizes)), len(batch_sizes), mode, hidden, num_layers,
        int(has_biases), int(bidirectional), int(batch_first), int(train),
        *[C.byref(r) for r in rets])
    outs = None
    if rc == 0:
        outs = [to_torch(r) for r in rets]
        for r in rets:
            lt.tensor_release(r)
    for h in hs:
        if h is not None:
            lt.tensor_release(h)
    return rc, outs


def aten(args, reverse, hidden, has_biases, batch_first, device="cpu"):
    a = [t.to(device) for t in args]
    with torch.no_grad():
        return torch.ops.aten.mkldnn_rnn_layer(*a, reverse, [], 2, hidden, 1, has_biases,
                                               False, batch_first, False)


def reference(x, w0, w1, bias, hx, cx, reverse):
    """The LSTM recurrence in float64 torch ops (for the sizes ATen's kernel dies on)."""
    x, w0, w1, bias = x.double(), w0.double(), w1.double(), bias.double()
    h, c = hx.double().reshape(x.shape[1], w1.shape[1]), cx.double().reshape(x.shape[1], w1.shape[1])
    ys = [None] * x.shape[0]
    for t in (reversed(range(x.shape[0])) if reverse else range(x.shape[0])):
        i, f, gg, o = (x[t] @ w0.T + h @ w1.T + bias).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * gg.tanh()
        h = o.sigmoid() * c.tanh()
        ys[t] = h
    y = torch.stack(ys) if ys else torch.empty(0, x.shape[1], w1.shape[1], dtype=torch.float64)
    return y, h.reshape(hx.shape), c.reshape(cx.shape)


def err(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def same_meta(got, want):
    return (got is not None and want is not None and tuple(got.shape) == tuple(want.shape)
            and got.dtype == want.dtype and got.stride() == want.stride())


g = random.Random(7)
torch.manual_seed(7)


def state(b, h, dtype, kind):
    """hx / cx as a model passes them: [1, B, H] dense, or a stride-0 view of [B, H]."""
    if kind == 0:
        return torch.randn(1, b, h).to(dtype)
    return torch.randn(b, h).to(dtype).unsqueeze(0).expand(1, b, h).as_strided((1, b, h), (0, h, 1))


NO_ATEN = set()
for trial in range(90):
    dtype = [torch.float32, torch.bfloat16, torch.float16][trial % 3]
    T, B, I, Hs = g.randint(1, 7), g.randint(1, 5), g.randint(1, 9), g.randint(1, 9)
    reverse, has_biases, batch_first = g.random() < 0.5, g.random() < 0.6, g.random() < 0.3
    x = torch.randn(T, B, I).to(dtype)
    if g.random() < 0.25:  # a non-contiguous input: compared with ATen on its contiguous copy
        x = torch.randn(B, T, I).to(dtype).transpose(0, 1)
    w0, w1 = torch.randn(4 * Hs, I).to(dtype) * 0.5, torch.randn(4 * Hs, Hs).to(dtype) * 0.5
    wide = dtype if (dtype == torch.float32 or g.random() < 0.5) else torch.float32
    if has_biases:
        w2, w3 = torch.randn(4 * Hs).to(wide), torch.randn(4 * Hs).to(dtype)
    else:  # what torch/_decomp passes without biases: zeros of the weights' sizes
        w2, w3 = torch.zeros(4 * Hs, I), torch.zeros(4 * Hs, Hs)
    hx = state(B, Hs, dtype, g.randint(0, 1))
    cx = state(B, Hs, wide if g.random() < 0.5 else dtype, g.randint(0, 1))
    args = [x, w0, w1, w2, w3, hx, cx]
    try:
        want = aten([x.contiguous()] + args[1:], reverse, Hs, has_biases, batch_first)
    except RuntimeError as e:
        # oneDNN has no 16-bit LSTM on CPUs without AVX-512 BF16 / FP16 (an AVX2 host):
        # the values against the float64 recurrence, the outputs' layouts not checked.
        if dtype == torch.float32:
            raise
        if dtype not in NO_ATEN:
            NO_ATEN.add(dtype)
            print(f"ops_rnn: NOTICE: {dtype} against the float64 recurrence, ATen refuses it "
                  f"here: {str(e).splitlines()[0][:90]}")
        bias = w2 + w3 if has_biases else torch.zeros(4 * Hs)
        want = None
        ref = reference(x, w0, w1, bias, hx, cx, reverse)
    rc, got = ours(args, reverse, 2, Hs, has_biases, batch_first)
    what = (f"{dtype} T{T} B{B} I{I} H{Hs} reverse {reverse} biases {has_biases} "
            f"batch_first {batch_first} x {x.stride()} cx {cx.dtype} bias {w2.dtype}")
    check(rc == 0, f"{what}: rc {rc}")
    if rc != 0:
        continue
    if want is None:
        for name, o, w in zip(("output", "hy", "cy"), got[:3], ref):
            check(tuple(o.shape) == tuple(w.shape), f"{what}: {name} {tuple(o.shape)} "
                  f"vs {tuple(w.shape)}")
            e = err(o, w) if tuple(o.shape) == tuple(w.shape) else float("inf")
            check(e <= 2 * TOL[dtype] * (1 + w.abs().max().item()),
                  f"{what}: {name} max error {e:.3g} against float64 (tolerance 2 x {TOL[dtype]})")
        continue
    for name, o, w in zip(("output", "hy", "cy"), got[:3], want[:3]):
        check(same_meta(o, w), f"{what}: {name} {tuple(o.shape)} {o.dtype} {o.stride()} "
              f"vs ATen {tuple(w.shape)} {w.dtype} {w.stride()}")
        e = err(o, w)
        check(e <= TOL[dtype] * (1 + w.double().abs().max().item()),
              f"{what}: {name} max error {e:.3g} (tolerance {TOL[dtype]})")
    check(got[3].dtype == torch.uint8 and tuple(got[3].shape) == (0,),
          f"{what}: workspace {got[3].dtype} {tuple(got[3].shape)}")

# batch_first, num_layers, bidirectional and train do not change ATen's result: nor ours.
x, w0, w1 = torch.randn(4, 3, 5), torch.randn(24, 5), torch.randn(24, 6)
b2, b3, hx, cx = torch.randn(24), torch.randn(24), torch.randn(1, 3, 6), torch.randn(1, 3, 6)
args = [x, w0, w1, b2, b3, hx, cx]
_, base = ours(args, False, 2, 6, True, False)
for kw in (dict(batch_first=True), dict(num_layers=3), dict(bidirectional=True), dict(train=True)):
    flags = dict(batch_first=False) | kw
    rc, o = ours(args, False, 2, 6, True, **flags)
    check(rc == 0 and all(torch.equal(a, b) for a, b in zip(o[:3], base[:3])),
          f"flags {kw} change the result")
# A 2-D state ([B, H]): ATen keeps its sizes in hy / cy.
want = aten([x, w0, w1, b2, b3, hx[0], cx[0]], False, 6, True, False)
rc, o = ours([x, w0, w1, b2, b3, hx[0], cx[0]], False, 2, 6, True, False)
check(rc == 0 and all(same_meta(a, b) and err(a, b) < 1e-5 for a, b in zip(o[:3], want[:3])),
      "2-D hx / cx")

# Zero sizes. T = 0: an empty output, hy / cy the initial states (ATen leaves them
# uninitialised). ATen's kernel dies of SIGFPE when B, H or I is 0: its meta function gives
# the sizes, the recurrence in torch ops the values (I = 0: the gates are the biases).
for T, B, I, Hs in ((0, 3, 4, 5), (4, 0, 3, 5), (3, 2, 4, 0), (3, 2, 0, 4)):
    args = [torch.randn(T, B, I), torch.randn(4 * Hs, I), torch.randn(4 * Hs, Hs),
            torch.randn(4 * Hs), torch.randn(4 * Hs), torch.randn(1, B, Hs), torch.randn(1, B, Hs)]
    rc, o = ours(args, True, 2, Hs, True, False)
    meta = aten(args, True, Hs, True, False, device="meta")
    ok = rc == 0 and all(tuple(a.shape) == tuple(m.shape) and a.dtype == m.dtype
                         for a, m in zip(o[:3], meta[:3]))
    if ok and T == 0:
        ok = torch.equal(o[1], args[5]) and torch.equal(o[2], args[6])
    if ok:
        want = reference(*args[:3], args[3] + args[4], *args[5:], True)
        ok = all(err(a, b) < 1e-5 for a, b in zip(o[:3], want))
    check(ok, f"zero size T{T} B{B} I{I} H{Hs}: rc {rc}")

# Errors: a status, no crash, no read past a short tensor.
x, w0, w1 = torch.randn(4, 3, 5), torch.randn(24, 5), torch.randn(24, 6)
b2, b3, hx, cx = torch.randn(24), torch.randn(24), torch.randn(1, 3, 6), torch.randn(1, 3, 6)
good = [x, w0, w1, b2, b3, hx, cx]


def refused(what, args=None, mode=2, hidden=6, has_biases=True, batch_sizes=()):
    rc, _ = ours(args or good, False, mode, hidden, has_biases, False, batch_sizes)
    check(rc == 1, f"{what}: rc {rc}, expected 1")


def swap(i, t):
    a = list(good)
    a[i] = t
    return a


for mode in (0, 1, 3):  # ATen: "could not create a primitive descriptor"
    refused(f"mode {mode}", mode=mode)
refused("packed input (batch_sizes)", batch_sizes=(3, 3, 3, 3))
refused("float64 (ATen: unsupported data type)", [t.double() for t in good])
refused("int64", [t.long() for t in good])
refused("float32 input, bfloat16 cx", swap(6, cx.bfloat16()))
refused("float32 input, bfloat16 bias", swap(3, b2.bfloat16()))
refused("bfloat16 input, float32 weights", [x.bfloat16(), w0, w1, b2, b3, hx.bfloat16(), cx])
refused("bfloat16 input, float32 hx", [t.bfloat16() for t in good[:5]] + [hx, cx])
refused("2-D input", swap(0, x[0]))
refused("weight0 columns", swap(1, w0[:, :4]))
refused("weight0 rows", swap(1, w0[:20]))
refused("weight1 sizes", swap(2, torch.randn(24, 5)))
refused("hidden_size disagreeing with the weights", hidden=5)
refused("negative hidden_size", hidden=-1)
refused("short bias", swap(3, b2[:20]))
refused("hx of another batch", swap(5, torch.randn(1, 4, 6)))
refused("hx of another hidden size", swap(5, torch.randn(1, 3, 7)))
refused("cx of two layers", swap(6, torch.randn(2, 3, 6)))
rets = [H() for _ in range(4)]
hs = [wrap(t) for t in good]
check(aoti.aoti_torch_cpu_mkldnn_rnn_layer(
    None, *hs[1:], 0, None, 0, 2, 6, 1, 1, 0, 0, 0, *[C.byref(r) for r in rets]) == 1,
    "NULL input must fail")
check(aoti.aoti_torch_cpu_mkldnn_rnn_layer(
    *hs, 0, None, 0, 2, 6, 1, 1, 0, 0, 0, C.byref(rets[0]), None, C.byref(rets[2]),
    C.byref(rets[3])) == 1, "NULL ret1 must fail")
for h in hs:
    lt.tensor_release(h)

shimtest.summary("ops_rnn")

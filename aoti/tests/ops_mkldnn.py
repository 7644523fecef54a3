"""Tests what a freezing=True package calls on its oneDNN-packed weights against ATen in the
same process: `aoti_torch_create_tensor_from_blob_v2` with layout 3 over the bytes and the
serialized memory descriptor of weights ATen's oneDNN reorders pack (convolution weights of
several shapes, groups, depthwise, float32 / bfloat16; linear weights, blocked and plain),
which must give back the dense weight exactly; then `mkldnn__convolution_pointwise`
(+ `_binary`, in-place `_binary_`), `_linear_pointwise` (+ `_binary`) and `_mkl_linear`
over those weights, against torch.ops.mkldnn / torch.ops.mkl on the same packed weights:
values, sizes and strides, every unary and binary post-op; and the refusals (a truncated
or unknown descriptor, a descriptor of another shape or dtype, unknown post-ops, alpha != 1,
the in-place form with an op other than add).

Usage: python ops_mkldnn.py LIBDIR. Prints "ops_mkldnn: N passed, N failed".
"""

import ctypes as C
import random

import torch

import shimtest
from shimtest import H, HP, I64P, aoti, arr, check, lt, to_torch, wrap

U8P = C.POINTER(C.c_uint8)
DP = C.POINTER(C.c_double)
DPP = C.POINTER(DP)
SP = C.c_char_p
SPP = C.POINTER(SP)
aoti.aoti_torch_create_tensor_from_blob_v2.argtypes = [
    C.c_void_p, C.c_int64, I64P, I64P, C.c_int64, C.c_int32, C.c_int32, C.c_int32, HP,
    C.c_int32, U8P, C.c_int64]
aoti.aoti_torch_cpu_mkldnn__convolution_pointwise.argtypes = (
    [H, H, HP] + [I64P, C.c_int64] * 3 + [C.c_int64, SP, DPP, C.c_int64, SPP, HP])
for f in ("mkldnn__convolution_pointwise_binary", "mkldnn__convolution_pointwise_binary_"):
    getattr(aoti, "aoti_torch_cpu_" + f).argtypes = (
        [H, H, H, HP] + [I64P, C.c_int64] * 3 + [C.c_int64, SP, DP, SPP, DPP, C.c_int64, SPP, HP])
aoti.aoti_torch_cpu__linear_pointwise.argtypes = [H, H, HP, SP, DPP, C.c_int64, SPP, HP]
aoti.aoti_torch_cpu__linear_pointwise_binary.argtypes = [H, H, H, HP, SP, HP]
aoti.aoti_torch_cpu__mkl_linear.argtypes = [H, H, H, HP, C.c_int64, HP]

g = random.Random(0)
TOL = {torch.float32: 2e-5, torch.bfloat16: 2e-2}


def bf16_packs():
    """Whether this CPU's oneDNN packs (and runs) bfloat16 convolution weights: it needs
    avx_ne_convert or AVX-512 BW / VL / DQ (an AVX2-only CPU has no bfloat16 reference)."""
    try:
        torch.ops.mkldnn._reorder_convolution_weight(
            torch.randn(8, 8, 3, 3).to(torch.bfloat16), [1, 1], [1, 1], [1, 1], 1,
            [1, 8, 9, 9])
        return True
    except RuntimeError as e:
        print(f"ops_mkldnn: NOTICE: bfloat16 cases run as float32 ({e})".splitlines()[0])
        return False


BF16 = torch.bfloat16 if bf16_packs() else torch.float32


def md_bytes(m):
    return bytes(torch.ops.mkldnn._get_mkldnn_serialized_md(m).tolist())


def packed(m, shape, dtype, md=None):
    """(rc, handle) of our tensor over oneDNN tensor m's bytes, as a model's constant."""
    md = md_bytes(m) if md is None else md
    buf = (C.c_uint8 * len(md)).from_buffer_copy(md)
    h = H()
    rc = aoti.aoti_torch_create_tensor_from_blob_v2(
        C.c_void_p(torch.ops.mkldnn.data_ptr(m)), len(shape), arr(shape),
        arr([1] + [0] * (len(shape) - 1)), 0, shimtest.DT[dtype], 0, 0, C.byref(h), 3, buf,
        len(md))
    return rc, h


def conv_weight(cout, cin_g, k, groups, dtype, x_shape, padding, stride, dilation):
    w = torch.randn(cout, cin_g, *k).to(dtype)
    m = torch.ops.mkldnn._reorder_convolution_weight(w, padding, stride, dilation, groups,
                                                     list(x_shape))
    return w, m


def unpack_case(name, w, m):
    rc, h = packed(m, list(w.shape), w.dtype)
    check(rc == 0, f"{name}: rc {rc}")
    if rc != 0:
        return
    got = to_torch(h)
    want_strides = (w.contiguous(memory_format=torch.channels_last).stride() if w.dim() == 4
                    else w.contiguous().stride())
    check(torch.equal(got, w), f"{name}: values differ from the dense weight")
    if w.dim() == 4:  # a convolution weight: channels-last, copied or (plain) in place
        # (a size-1 dim's stride is free: torch keeps an ambiguous weight's own strides)
        same = all(a == b for a, b, n in zip(got.stride(), want_strides, w.shape) if n > 1)
        check(same, f"{name}: strides {got.stride()}, want {want_strides}")
    lt.tensor_release(h)


# ---- unpacking -------------------------------------------------------------------------
for cout, cin, k, groups, dtype in [(64, 3, (7, 7), 1, torch.float32),
                                    (24, 8, (3, 3), 1, torch.float32),
                                    (512, 512, (3, 3), 1, torch.float32),
                                    (96, 24, (1, 1), 1, torch.float32),
                                    (32, 32, (3, 3), 32, torch.float32),
                                    (30, 12, (5, 3), 3, torch.float32),
                                    (48, 16, (3, 3), 1, BF16)]:
    x_shape = (1, cin, 17, 19)
    w, m = conv_weight(cout, cin // groups, k, groups, dtype, x_shape, [1, 1], [1, 1], [1, 1])
    unpack_case(f"conv weight {list(w.shape)} groups {groups} {dtype}", w, m)
for out_f, in_f, batch in [(1000, 512, 1), (768, 768, 128), (3072, 768, 128), (10, 7, 3)]:
    w = torch.randn(out_f, in_f)
    m = torch.ops.mkldnn._reorder_linear_weight(w, batch)
    unpack_case(f"linear weight {out_f} x {in_f} (batch {batch})", w, m)

# Refusals: each leaves no tensor behind.
w, m = conv_weight(24, 8, (3, 3), 1, torch.float32, (1, 8, 9, 9), [1, 1], [1, 1], [1, 1])
md = md_bytes(m)
for name, shape, dtype, bad in [
        ("truncated descriptor", [24, 8, 3, 3], torch.float32, md[:300]),
        ("descriptor version 2", [24, 8, 3, 3], torch.float32, b"\x02" + md[1:]),
        ("shape other than the descriptor's", [24, 8, 3, 2], torch.float32, md),
        ("dtype other than the descriptor's", [24, 8, 3, 3], torch.bfloat16, md),
        ("format kind any", [24, 8, 3, 3], torch.float32, md[:312] + b"\x01" + md[313:])]:
    rc, h = packed(m, shape, dtype, md=bad)
    check(rc != 0, f"{name}: accepted")
check(aoti.aoti_torch_create_tensor_from_blob_v2(
    None, 4, arr([1, 1, 1, 1]), arr([1, 1, 1, 1]), 0, 6, 0, 0, C.byref(H()), 7, None, 0) != 0,
    "layout 7 accepted")


# ---- the kernels -----------------------------------------------------------------------
def doubles(vals):
    ps = [C.pointer(C.c_double(v)) if v is not None else None for v in vals]
    a = (DP * max(len(ps), 1))(*ps)
    return a, len(vals), ps


def sptr(s):
    return C.pointer(SP(s.encode())) if s is not None else None


UNARY = [("none", [], None), ("relu", [], None), ("sigmoid", [], None), ("tanh", [], None),
         ("hardswish", [], None), ("swish", [], None), ("leaky_relu", [0.13], None),
         ("hardtanh", [0.0, 6.0], None), ("gelu", [], "none"), ("gelu", [], "tanh"),
         ("hardsigmoid", [], None)]
BINARY = ["add", "sub", "mul", "div"]
AFTER_BINARY = [(None, [], None), ("relu", [], None)]  # what ATen fuses after a binary op


def compare(name, rc, h, want, tol):
    check(rc == 0, f"{name}: rc {rc}")
    if rc != 0:
        return
    got = to_torch(h)
    lt.tensor_release(h)
    check(got.shape == want.shape and got.stride() == want.stride(),
          f"{name}: sizes / strides {list(got.shape)} {got.stride()}, ATen's "
          f"{list(want.shape)} {want.stride()}")
    d = (got.double() - want.double()).abs().max().item() if got.shape == want.shape else 1e9
    check(d <= tol * (1 + want.double().abs().max().item()), f"{name}: max diff {d}")


def conv_case(n, cin, cout, hw, k, stride, padding, dilation, groups, bias, dtype, cl):
    x = torch.randn(n, cin, *hw).to(dtype)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    w, m = conv_weight(cout, cin // groups, k, groups, dtype, x.shape, padding, stride, dilation)
    b = torch.randn(cout).to(dtype) if bias else None
    un, scal, alg = g.choice(UNARY)
    want = torch.ops.mkldnn._convolution_pointwise(x, m, b, padding, stride, dilation, groups,
                                                   un, scal, alg)
    rc, wh = packed(m, list(w.shape), dtype)
    check(rc == 0, "packing the weight")
    xh = wrap(x)
    bh = wrap(b) if b is not None else None
    sa, sn, _keep = doubles(scal)
    tag = (f"conv {list(x.shape)} {'cl' if cl else 'nchw'} w {list(w.shape)} s{stride} "
           f"p{padding} d{dilation} g{groups} {un}/{alg} {dtype}")
    h = H()
    rc = aoti.aoti_torch_cpu_mkldnn__convolution_pointwise(
        xh, wh, C.byref(bh) if bh else None, arr(padding), 2, arr(stride), 2, arr(dilation), 2,
        groups, un.encode(), sa, sn, sptr(alg), C.byref(h))
    compare(tag, rc, h, want, TOL[dtype])
    # .binary and in-place .binary on the same convolution
    other = torch.randn(want.shape).to(dtype).contiguous(memory_format=torch.channels_last)
    bop = g.choice(BINARY)
    un2, scal2, alg2 = g.choice(AFTER_BINARY)
    want2 = torch.ops.mkldnn._convolution_pointwise.binary(
        x, other, m, b, padding, stride, dilation, groups, bop, None, un2, scal2, alg2)
    oh = wrap(other)
    sa2, sn2, _keep2 = doubles(scal2)
    h = H()
    rc = aoti.aoti_torch_cpu_mkldnn__convolution_pointwise_binary(
        xh, oh, wh, C.byref(bh) if bh else None, arr(padding), 2, arr(stride), 2, arr(dilation),
        2, groups, bop.encode(), None, sptr(un2), sa2, sn2, sptr(alg2), C.byref(h))
    compare(f"{tag} binary {bop} then {un2}", rc, h, want2, TOL[dtype])
    mine, theirs = other.clone(), other.clone()
    torch.ops.mkldnn._convolution_pointwise_.binary(
        theirs, x, m, b, padding, stride, dilation, groups, "add", 1.0, un2, scal2, alg2)
    mh = wrap(mine)
    h = H()
    rc = aoti.aoti_torch_cpu_mkldnn__convolution_pointwise_binary_(
        mh, xh, wh, C.byref(bh) if bh else None, arr(padding), 2, arr(stride), 2, arr(dilation),
        2, groups, b"add", C.pointer(C.c_double(1.0)), sptr(un2), sa2, sn2, sptr(alg2),
        C.byref(h))
    if rc == 0:
        same_buffer = lt.tensor_data_ptr(h) == mine.data_ptr()
        check(same_buffer, f"{tag} in-place: the result is not other")
    compare(f"{tag} in place add then {un2}", rc, h, theirs, TOL[dtype])
    check(torch.allclose(mine.double(), theirs.double(), atol=TOL[dtype] * 10, rtol=TOL[dtype] * 10),
          f"{tag} in place: other not written")
    # Refusals on this convolution.
    for bad_un, bad_bin, alpha, inplace in [("nope", "add", None, False),
                                            ("sigmoid", "add", None, False),
                                            ("none", "add", None, True),
                                            ("relu", "pow", None, False),
                                            ("relu", "add", 2.0, False),
                                            ("relu", "mul", None, True)]:
        h = H()
        f = (aoti.aoti_torch_cpu_mkldnn__convolution_pointwise_binary_ if inplace
             else aoti.aoti_torch_cpu_mkldnn__convolution_pointwise_binary)
        first, second = (mh, xh) if inplace else (xh, oh)
        rc = f(first, second, wh, None, arr(padding), 2, arr(stride), 2, arr(dilation), 2, groups,
               bad_bin.encode(), C.pointer(C.c_double(alpha)) if alpha is not None else None,
               sptr(bad_un), sa2, 0, None, C.byref(h))
        check(rc != 0, f"{tag}: unary {bad_un} binary {bad_bin} alpha {alpha} "
              f"{'in place ' if inplace else ''}accepted")
    for t in [xh, wh, oh, mh] + ([bh] if bh else []):
        lt.tensor_release(t)


for _ in range(24):
    groups = g.choice([1, 1, 2, "dw"])
    cin = g.choice([3, 8, 16]) if groups == 1 else 8
    if groups == "dw":
        groups, cout = cin, cin
    else:
        cout = g.choice([8, 24]) if groups == 1 else 12
    k = g.choice([(1, 1), (3, 3), (5, 3), (7, 7)])
    dil = g.choice([1, 1, 2])
    hw = (g.randint(dil * (k[0] - 1) + 1, 14), g.randint(dil * (k[1] - 1) + 1, 14))
    conv_case(g.choice([1, 2]), cin, cout, hw, k, [g.choice([1, 2])] * 2,
              [g.randint(0, 2), g.randint(0, 1)], [dil] * 2, groups,
              g.random() < 0.8, g.choice([torch.float32, torch.float32, BF16]),
              g.random() < 0.7)


def linear_case(lead, in_f, out_f, bias):
    x = torch.randn(*lead, in_f)
    w = torch.randn(out_f, in_f)
    b = torch.randn(out_f) if bias else None
    batch = 1
    for s in lead:
        batch *= s
    m = torch.ops.mkldnn._reorder_linear_weight(w, batch)
    rc, wh = packed(m, [out_f, in_f], torch.float32)
    xh = wrap(x)
    bh = wrap(b) if b is not None else None
    un, scal, alg = g.choice(UNARY)
    want = torch.ops.mkldnn._linear_pointwise(x, m, b, un, scal, alg)
    sa, sn, _keep = doubles(scal)
    h = H()
    rc = aoti.aoti_torch_cpu__linear_pointwise(xh, wh, C.byref(bh) if bh else None, un.encode(),
                                               sa, sn, sptr(alg), C.byref(h))
    tag = f"linear {lead} x {in_f} -> {out_f} bias {bias} {un}/{alg}"
    compare(tag, rc, h, want, 2e-5)
    other = torch.randn(want.shape)
    oh = wrap(other)
    bop = g.choice(BINARY)
    want = torch.ops.mkldnn._linear_pointwise.binary(x, other, m, b, bop)
    h = H()
    rc = aoti.aoti_torch_cpu__linear_pointwise_binary(xh, oh, wh, C.byref(bh) if bh else None,
                                                      bop.encode(), C.byref(h))
    compare(f"{tag} binary {bop}", rc, h, want, 2e-5)
    pk = torch.ops.mkl._mkl_reorder_linear_weight(w, batch)
    want = torch.ops.mkl._mkl_linear(x, pk, w, b, batch)
    dummy = torch.zeros(1)  # MKL's packed weight is opaque (no storage): ours reads origin_W
    ph, owh = wrap(dummy), wrap(w)
    h = H()
    rc = aoti.aoti_torch_cpu__mkl_linear(xh, ph, owh, C.byref(bh) if bh else None, batch,
                                         C.byref(h))
    compare(f"_mkl_linear {lead} x {in_f} -> {out_f}", rc, h, want, 2e-5)
    for t in [xh, wh, oh, ph, owh] + ([bh] if bh else []):
        lt.tensor_release(t)


for _ in range(12):
    linear_case(g.choice([(1,), (5,), (2, 7), (128,)]), g.choice([7, 64, 100]),
                g.choice([1, 10, 96]), g.random() < 0.8)

shimtest.summary("ops_mkldnn")

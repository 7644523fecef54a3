"""Tests libtensor_aoti's shim against libtorch's through ctypes, in one process:
- every constant getter equals libtorch's (dtype, device, layout, memory format codes);
- management calls (create_tensor_from_blob with a storage offset, _reinterpret_tensor,
  as_strided, clone, clone_preserve_strides, item, scalar_to_tensor, error returns) give
  the metadata libtorch's shim gives for the same arguments;
- each kernel (mm_out, addmm_out, bmm_out, baddbmm_out, convolution,
  _scaled_dot_product_flash_attention_for_cpu) matches ATen's values AND output strides
  over random shapes and memory formats.

Usage: python ops_core.py LIBDIR (holding libtensor_aoti.so and libtensor.so.0).
Prints "ops_core: N passed, N failed"; exits non-zero on a failure.
"""

import random
import sys

import torch

import shimtest
from shimtest import C, H, I64P, aoti, arr, check, close, lt, to_torch, torch_lib, wrap

# ---- constants ----------------------------------------------------------------------------
names = sorted({
    "aoti_torch_device_type_" + d for d in ("cpu", "cuda", "meta", "xpu", "mps", "privateuse1")
} | {
    "aoti_torch_dtype_" + d for d in (
        "float8_e5m2 float8_e4m3fn float8_e5m2fnuz float8_e4m3fnuz bfloat16 float16 float32 "
        "float64 uint8 uint16 uint32 uint64 int8 int16 int32 int64 bool complex32 complex64 "
        "complex128 float8_e8m0fnu float4_e2m1fn_x2").split()
} | {
    "aoti_torch_layout_" + d for d in "strided sparse_coo sparse_csr sparse_csc sparse_bsr sparse_bsc _mkldnn jagged".split()
} | {
    "aoti_torch_memory_format_" + d for d in "contiguous_format channels_last channels_last_3d preserve_format".split()
})
for n in names:
    try:
        theirs = getattr(torch_lib, n)()
    except AttributeError:
        continue
    check(getattr(aoti, n)() == theirs, f"{n}: ours {getattr(aoti, n)()} libtorch {theirs}")
for code in list(range(0, 12)) + [15, 23, 24, 25, 26, 27, 28, 29]:
    check(aoti.aoti_torch_dtype_element_size(code) == torch_lib.aoti_torch_dtype_element_size(code),
          f"dtype_element_size({code})")

# ---- management, against libtorch's shim --------------------------------------------------


def both(fn, *args):
    """Calls fn(lib, *args) on both shims; returns (ours, theirs)."""
    return fn(aoti, *args), fn(torch_lib, *args)


def info(lib, h):
    d, off, ss, n = C.c_int64(), C.c_int64(), C.c_int64(), C.c_int64()
    sp, tp = I64P(), I64P()
    ptr, dt, dev = C.c_void_p(), C.c_int32(), C.c_int32()
    assert lib.aoti_torch_get_dim(h, C.byref(d)) == 0
    lib.aoti_torch_get_storage_offset(h, C.byref(off))
    lib.aoti_torch_get_storage_size(h, C.byref(ss))
    lib.aoti_torch_get_numel(h, C.byref(n))
    lib.aoti_torch_get_sizes(h, C.byref(sp))
    lib.aoti_torch_get_strides(h, C.byref(tp))
    lib.aoti_torch_get_data_ptr(h, C.byref(ptr))
    lib.aoti_torch_get_dtype(h, C.byref(dt))
    lib.aoti_torch_get_device_type(h, C.byref(dev))
    return dict(dim=d.value, offset=off.value, storage=ss.value, numel=n.value,
                sizes=[sp[i] for i in range(d.value)], strides=[tp[i] for i in range(d.value)],
                ptr=ptr.value, dtype=dt.value, device=dev.value)


def extent(sizes, strides):
    if any(x == 0 for x in sizes):
        return 0
    return 1 + sum((x - 1) * y for x, y in zip(sizes, strides))


rng = random.Random(0)
buf = torch.arange(4096, dtype=torch.float32)
for trial in range(40):
    nd = rng.randint(0, 4)
    sizes = [rng.randint(0 if trial % 9 == 0 else 1, 5) for _ in range(nd)]
    strides = [rng.randint(0, 30) for _ in range(nd)]
    off = rng.randint(0, 40)
    inc = rng.randint(0, 10)

    def make(lib):
        h = H()
        rc = lib.aoti_torch_create_tensor_from_blob(C.c_void_p(buf.data_ptr()), nd, arr(sizes),
                                                   arr(strides), off, 6, 0, 0, C.byref(h))
        assert rc == 0, rc
        r, a, c, p = H(), H(), H(), H()
        # A layout within the storage (libtorch does not check; we refuse one past it).
        rs, rt, ri = sizes[::-1], strides[::-1], inc
        if off + ri + extent(rs, rt) > off + extent(sizes, strides):
            rs, rt, ri = sizes, strides, 0
        assert lib.aoti_torch__reinterpret_tensor(h, nd, arr(rs), arr(rt), ri, C.byref(r)) == 0
        assert lib.aoti_torch_as_strided(h, arr(rs), arr(rt), C.byref(a)) == 0
        assert lib.aoti_torch_clone(h, C.byref(c)) == 0
        assert lib.aoti_torch_clone_preserve_strides(h, C.byref(p)) == 0
        res = [info(lib, x) for x in (h, r, a)]
        cl = [info(lib, x) for x in (c, p)]
        for x in (h, r, a, c, p):
            lib.aoti_torch_delete_tensor_object(x)
        for x in cl:
            x.pop("ptr")
            x.pop("storage")  # the allocators round differently; the layout must agree
        return res, cl

    (ours, ours_c), (theirs, theirs_c) = both(make)
    for what, o, t in zip(("from_blob", "_reinterpret_tensor", "as_strided"), ours, theirs):
        check(o == t, f"{what} sizes {sizes} strides {strides} offset {off}: ours {o} libtorch {t}")
    for what, o, t in zip(("clone", "clone_preserve_strides"), ours_c, theirs_c):
        check(o == t, f"{what} sizes {sizes} strides {strides}: ours {o} libtorch {t}")


# A layout past the storage: refused (libtorch would make it and read past the end).
h, r = H(), H()
assert aoti.aoti_torch_create_tensor_from_blob(C.c_void_p(buf.data_ptr()), 1, arr([4]), arr([1]), 2, 6, 0, 0, C.byref(h)) == 0
check(aoti.aoti_torch__reinterpret_tensor(h, 1, arr([4]), arr([1]), 1, C.byref(r)) == 1,
      "_reinterpret_tensor past the storage must fail")
aoti.aoti_torch_delete_tensor_object(h)


def items(lib):
    h = H()
    f, i, d = C.c_float(), C.c_int64(), C.c_double()
    assert lib.aoti_torch_scalar_to_tensor_int64(-(2**62) - 3, C.byref(h)) == 0
    r1 = lib.aoti_torch_item_int64(h, C.byref(i))
    r2 = lib.aoti_torch_item_float32(h, C.byref(f))
    inf = info(lib, h)
    inf.pop("ptr")
    inf.pop("storage")
    lib.aoti_torch_delete_tensor_object(h)
    assert lib.aoti_torch_scalar_to_tensor_float64(2.5, C.byref(h)) == 0
    r3 = lib.aoti_torch_item_float64(h, C.byref(d))
    lib.aoti_torch_delete_tensor_object(h)
    return (r1, i.value, r2, f.value, r3, d.value, inf)


o, t = both(items)
check(o == t, f"scalar_to_tensor / item: ours {o} libtorch {t}")

# Failures: the shim's error code, never a crash.
h = H()
check(aoti.aoti_torch_empty_strided(2, arr([2, 2]), arr([2, 1]), 6, 1, 0, C.byref(h)) == 1,
      "empty_strided on CUDA must fail")
check(aoti.aoti_torch_empty_strided(2, None, arr([2, 1]), 6, 0, 0, C.byref(h)) == 1,
      "empty_strided with NULL sizes must fail")
check(aoti.aoti_torch_create_tensor_from_blob(None, 1, arr([4]), arr([1]), 0, 6, 0, 0, C.byref(h)) == 1,
      "from_blob of NULL data must fail")
check(aoti.aoti_torch_get_dim(None, C.byref(C.c_int64())) == 1, "get_dim(NULL) must fail")
check(aoti.aoti_torch_new_uninitialized_tensor(C.byref(h)) == 1, "unsupported call must fail")

# ---- kernels -------------------------------------------------------------------------------
HP = C.POINTER(H)
aoti.aoti_torch_cpu_mm_out.argtypes = [H, H, H]
aoti.aoti_torch_cpu_bmm_out.argtypes = [H, H, H]
aoti.aoti_torch_cpu_addmm_out.argtypes = [H, H, H, H, C.c_double, C.c_double]
aoti.aoti_torch_cpu_baddbmm_out.argtypes = [H, H, H, H, C.c_double, C.c_double]
aoti.aoti_torch_cpu_convolution.argtypes = [
    H, H, HP, I64P, C.c_int64, I64P, C.c_int64, I64P, C.c_int64, C.c_int32, I64P, C.c_int64,
    C.c_int64, HP]
aoti.aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu.argtypes = [
    H, H, H, C.c_double, C.c_int32, HP, C.POINTER(C.c_double), HP, HP]


def maybe_t(shape, dtype, g):
    """A random tensor of `shape`, sometimes a transposed (column-major) layout."""
    if len(shape) >= 2 and g.random() < 0.5:
        s = list(shape)
        s[-1], s[-2] = s[-2], s[-1]
        return torch.randn(s, dtype=dtype).transpose(-1, -2)
    return torch.randn(shape, dtype=dtype)


TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.float16: 1e-2, torch.bfloat16: 3e-2}
g = random.Random(1)
for trial in range(60):
    dtype = [torch.float32, torch.float64, torch.float16, torch.bfloat16][trial % 4]
    m, n, k, b = (g.randint(1, 33) for _ in range(4))
    batched = trial % 2 == 1
    pre = [b] if batched else []
    a = maybe_t(pre + [m, k], dtype, g)
    w = maybe_t(pre + [k, n], dtype, g)
    out = maybe_t(pre + [m, n], dtype, g)
    out_strides = out.stride()
    bias_shape = g.choice([[n], [1, n], [m, n], [m, 1]]) if not batched else g.choice([[n], [b, m, n], [1, 1, n]])
    bias = torch.randn(bias_shape, dtype=dtype)
    beta, alpha = g.choice([(1.0, 1.0), (0.5, 2.0), (0.0, 1.0)])
    ha, hw, ho, hb = wrap(a), wrap(w), wrap(out), wrap(bias)
    name = "bmm_out" if batched else "mm_out"
    rc = getattr(aoti, "aoti_torch_cpu_" + name)(ho, ha, hw)
    want = torch.bmm(a, w) if batched else torch.mm(a, w)
    check(rc == 0 and close(out, want, TOL[dtype]) and out.stride() == out_strides,
          f"{name} {dtype} {a.shape}x{w.shape} strides {a.stride()} {w.stride()}: rc {rc}, err {(out.double() - want.double()).abs().max()}")
    name = "baddbmm_out" if batched else "addmm_out"
    rc = getattr(aoti, "aoti_torch_cpu_" + name)(ho, hb, ha, hw, beta, alpha)
    want = (torch.baddbmm if batched else torch.addmm)(bias, a, w, beta=beta, alpha=alpha)
    check(rc == 0 and close(out, want, TOL[dtype]) and out.stride() == out_strides,
          f"{name} {dtype} {a.shape}x{w.shape} bias {bias_shape} beta {beta} alpha {alpha}: rc {rc}")
    for h_ in (ha, hw, ho, hb):
        lt.tensor_release(h_)
# mismatched shapes: an error, not a read past the end
a, w, out = torch.randn(3, 4), torch.randn(5, 6), torch.empty(3, 6)
ha, hw, ho = wrap(a), wrap(w), wrap(out)
check(aoti.aoti_torch_cpu_mm_out(ho, ha, hw) == 1, "mm_out with k 4 != 5 must fail")
for h_ in (ha, hw, ho):
    lt.tensor_release(h_)


def fmt_tensor(shape, g, sp):
    t = torch.randn(shape)
    r = g.random()
    if sp == 2 and r < 0.5:
        t = t.contiguous(memory_format=torch.channels_last)
    elif sp == 3 and r < 0.5:
        t = t.contiguous(memory_format=torch.channels_last_3d)
    elif r < 0.6:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)  # neither format
    return t


def check_conv(x, w, b, stride, pad, dil, groups):
    """Our convolution of (x, w, b) against ATen's: values and output strides."""
    sp = x.dim() - 2
    want = torch.ops.aten.convolution(x, w, b, stride, pad, dil, False, [0] * sp, groups)
    hx, hw = wrap(x), wrap(w)
    hb = H(wrap(b).value) if b is not None else None
    ret = H()
    rc = aoti.aoti_torch_cpu_convolution(hx, hw, C.byref(hb) if hb is not None else None,
                                         arr(stride), sp, arr(pad), sp, arr(dil), sp, 0, arr([0] * sp),
                                         sp, groups, C.byref(ret))
    ok = rc == 0
    if ok:
        got = to_torch(ret)
        ok = close(got, want, 1e-4) and list(got.stride()) == list(want.stride())
        detail = f"strides ours {got.stride()} ATen {want.stride()}"
        lt.tensor_release(ret)
    else:
        detail = f"rc {rc}"
    check(ok, f"convolution x {list(x.shape)} {x.stride()} w {list(w.shape)} {w.stride()} stride {stride} pad {pad} dil {dil} groups {groups}: {detail}")
    for h_ in (hx, hw) + ((hb,) if hb is not None else ()):
        lt.tensor_release(h_)


for trial in range(60):
    sp = [1, 2, 2, 3][trial % 4]
    groups = g.choice([1, 1, 2])
    cin = groups * g.randint(1, 3)
    cout = groups * g.randint(1, 3)
    ksz = [g.randint(1, 3) for _ in range(sp)]
    stride = [g.randint(1, 2) for _ in range(sp)]
    pad = [g.randint(0, 1) for _ in range(sp)]
    dil = [g.randint(1, 2) for _ in range(sp)]
    spatial = [g.randint(max(4, d * (k - 1) + 1), 9) for k, d in zip(ksz, dil)]
    batch = g.randint(1, 3)
    x = fmt_tensor([batch, cin] + spatial, g, sp)
    w = fmt_tensor([cout, cin // groups] + ksz, g, sp)
    b = torch.randn(cout) if g.random() < 0.6 else None
    check_conv(x, w, b, stride, pad, dil, groups)


# The shapes of real models, big enough to be split over the OpenMP threads (two): depthwise
# 3 x 3 / 5 x 5 at stride 1 and 2 (the direct kernel, MobileNet / EfficientNet), with a
# channel multiplier; pointwise 1 x 1 (the GEMM on the input), NCHW and channels-last;
# a 7 x 7 stride-2 stem and a 3 x 3 (im2col).
torch.set_num_threads(2)
for (cin, cout, hw, k, s_, p_, d_, groups, cl) in [
        (32, 32, 28, 3, 1, 1, 1, 32, False), (24, 24, 29, 3, 2, 1, 1, 24, False),
        (40, 40, 15, 5, 2, 2, 1, 40, True), (16, 32, 20, 3, 1, 2, 2, 16, False),
        (64, 96, 14, 1, 1, 0, 1, 1, False), (64, 96, 14, 1, 1, 0, 1, 1, True),
        (48, 48, 14, 1, 1, 0, 1, 2, False), (3, 64, 56, 7, 2, 3, 1, 1, False),
        (32, 48, 16, 3, 1, 1, 1, 1, True), (32, 32, 28, 3, 1, 1, 1, 32, True),
        (16, 32, 20, 3, 1, 2, 2, 16, True), (8, 12, 10, 3, 2, 1, 1, 2, True)]:
    x = torch.randn(2, cin, hw, hw)
    w = torch.randn(cout, cin // groups, k, k)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    check_conv(x, w, torch.randn(cout), [s_, s_], [p_, p_], [d_, d_], groups)
    check_conv(x, w, None, [s_, s_], [p_, p_], [d_, d_], groups)

# Channels-last depthwise convolutions of random geometry (the direct float32 kernel's
# register tiles, edges, channel tails and rows with no interior pixel), float64 too.
for trial in range(40):
    c, k = g.randint(1, 70), g.choice([1, 3, 5, 7])
    s_, d_ = g.randint(1, 3), g.choice([1, 1, 2])
    p_ = g.randint(0, k // 2 + 1)
    hw = g.randint(max(1, d_ * (k - 1) + 1 - 2 * p_), 40)
    dt = torch.float64 if trial % 8 == 7 else torch.float32
    x = torch.randn(g.randint(1, 2), c, hw, g.randint(max(1, d_ * (k - 1) + 1 - 2 * p_), 40),
                    dtype=dt).contiguous(memory_format=torch.channels_last)
    w = torch.randn(c, 1, k, k, dtype=dt)
    check_conv(x, w, torch.randn(c, dtype=dt) if trial % 3 else None, [s_, s_], [p_, p_], [d_, d_], c)

# Linear layers of a transformer (the weight transposed, as Inductor passes it), split over
# the threads by columns (n >= m) and by rows (m > n).
for (m, k, n) in [(16, 768, 2304), (128, 768, 768), (1, 768, 3072), (512, 64, 48)]:
    a, w, bias = torch.randn(m, k), torch.randn(n, k).t(), torch.randn(n)
    out = torch.empty(m, n)
    ha, hw, ho, hb = wrap(a), wrap(w), wrap(out), wrap(bias)
    rc = aoti.aoti_torch_cpu_addmm_out(ho, hb, ha, hw, 1.0, 1.0)
    want = torch.addmm(bias, a, w)
    check(rc == 0 and close(out, want, 1e-4), f"addmm_out {m}x{k} @ {k}x{n}: rc {rc}")
    for h_ in (ha, hw, ho, hb):
        lt.tensor_release(h_)

# Small shapes (trials 0-29), then model-sized ones (30-59): heads of 64, sequences past a
# block of query rows and a vector's tail, float64 / float16 / bfloat16 too, bool and
# broadcast masks ([L, S], [B, 1, 1, S] padding, [B, H, L, S]), rows masked out entirely,
# causal with L != S.
for trial in range(60):
    big = trial >= 30
    if big:
        bsz, heads, L, S, E = (g.randint(1, 2), g.randint(1, 3), g.randint(1, 150), g.randint(1, 150), g.choice([32, 64, 80]))
    else:
        bsz, heads, L, S, E = (g.randint(1, 4), g.randint(1, 4), g.randint(1, 9), g.randint(1, 9), g.choice([4, 8, 16]))
    dtype = [torch.float32, torch.float32, torch.float64, torch.float16, torch.bfloat16][trial % 5] if big else torch.float32
    causal = trial % 3 == 0
    if causal and not (big and trial % 2 == 0):
        S = L

    def qkv(n):  # sometimes the (B, L, H, E).transpose(1, 2) layout a model produces
        if g.random() < 0.5:
            return torch.randn(bsz, n, heads, E, dtype=dtype).transpose(1, 2)
        return torch.randn(bsz, heads, n, E, dtype=dtype)

    q, k, v = qkv(L), qkv(S), qkv(S)
    mask = None
    if not causal and trial % 3 == 1:
        kind = g.choice(["float", "padding", "-inf"]) if big else "float"
        if kind == "float":
            mask = torch.randn(L, S, dtype=dtype)
        elif kind == "padding":  # a padding mask: 0 kept, the dtype's min for padding
            keep = torch.arange(S)[None, :] < torch.randint(1, S + 1, (bsz, 1))
            mask = torch.zeros(bsz, 1, 1, S, dtype=dtype).masked_fill(~keep[:, None, None, :], torch.finfo(dtype).min)
        else:  # -inf where masked, with some query rows masked out entirely
            drop = torch.rand(bsz, heads, L, S) < 0.3
            drop[:, :, ::7, :] = True
            mask = torch.zeros(bsz, heads, L, S, dtype=dtype).masked_fill(drop, float("-inf"))
    scale = 0.3 if trial % 4 == 2 else None
    want_o, want_l = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, causal, attn_mask=mask, scale=scale)
    hq, hk, hv = wrap(q), wrap(k), wrap(v)
    hm = H(wrap(mask).value) if mask is not None else None
    sc = C.c_double(scale) if scale is not None else None
    r0, r1 = H(), H()
    rc = aoti.aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
        hq, hk, hv, 0.0, int(causal), C.byref(hm) if hm is not None else None,
        C.byref(sc) if sc is not None else None, C.byref(r0), C.byref(r1))
    ok = rc == 0
    if ok:
        go, gl = to_torch(r0), to_torch(r1)
        tol = {torch.float16: 2e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-4)
        ok = (close(go, want_o, tol) and close(gl.float(), want_l.float(), tol)
              and go.stride() == want_o.stride() and gl.stride() == want_l.stride())
        detail = f"out strides {go.stride()} vs {want_o.stride()}, lse {gl.stride()} vs {want_l.stride()}"
        lt.tensor_release(r0)
        lt.tensor_release(r1)
    else:
        detail = f"rc {rc}"
    check(ok, f"sdpa {dtype} q {list(q.shape)} k {list(k.shape)} causal {causal} mask {None if mask is None else (mask.dtype, list(mask.shape))}: {detail}")
    for h_ in (hq, hk, hv) + ((hm,) if hm is not None else ()):
        lt.tensor_release(h_)

shimtest.summary("ops_core")

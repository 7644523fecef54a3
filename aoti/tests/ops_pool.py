"""Tests libtensor_aoti's pooling kernels (kernels/pool.rs) against ATen's, in one process:
max_pool2d_with_indices, max_pool3d_with_indices, adaptive_max_pool2d, adaptive_max_pool3d,
_adaptive_avg_pool2d, _adaptive_avg_pool3d, avg_pool2d, avg_pool3d. Over random shapes
(unbatched, empty batch), input layouts (contiguous, channels-last, transposed, sliced,
expanded, permuted), every dtype ATen's CPU kernel takes, NaN and ties, random parameters
(kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, output
sizes): where ATen raises, ours must return 1; else the same dtype, sizes, strides, values
(exact for max pooling and indices; per-dtype tolerance for averages).

Usage: python ops_pool.py LIBDIR. Prints "ops_pool: N passed, N failed".
"""

import random

import torch

import shimtest
from shimtest import C, H, I64P, aoti, arr, check, lt, nonnull, same, to_torch, wrap

A = torch.ops.aten
HP = C.POINTER(H)
I64 = C.c_int64
I32 = C.c_int32
for n in ("max_pool2d_with_indices", "max_pool3d_with_indices"):
    getattr(aoti, "aoti_torch_cpu_" + n).argtypes = [
        H, I64P, I64, I64P, I64, I64P, I64, I64P, I64, I32, HP, HP]
for n in ("avg_pool2d", "avg_pool3d"):
    getattr(aoti, "aoti_torch_cpu_" + n).argtypes = [
        H, I64P, I64, I64P, I64, I64P, I64, I32, I32, C.POINTER(C.c_int64), HP]
for n in ("adaptive_max_pool2d", "adaptive_max_pool3d"):
    getattr(aoti, "aoti_torch_cpu_" + n).argtypes = [H, I64P, I64, HP, HP]
for n in ("_adaptive_avg_pool2d", "_adaptive_avg_pool3d"):
    getattr(aoti, "aoti_torch_cpu_" + n).argtypes = [H, I64P, I64, HP]

INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5, torch.float64: 1e-12}
g = random.Random(7)
exact = {"n": 0, "of": 0}


def matches(got, want, tol):
    """shimtest.same, counting the float averages that are bit-exact with ATen's."""
    if tol and want.numel() and got.shape == want.shape and want.is_floating_point():
        exact["of"] += 1
        exact["n"] += int(bool((got.double().nan_to_num(7) == want.double().nan_to_num(7)).all()))
    return not same(got, want, tol)


def values(shape, dtype):
    """Random values of dtype: ties (few distinct values) or NaN now and then."""
    if dtype in INTS:
        info = torch.iinfo(dtype)
        lo, hi = (max(info.min, -2**40), min(info.max, 2**40) + 1) if g.random() < 0.5 else (-3 if info.min < 0 else 0, 4)
        return torch.randint(lo, hi, shape, dtype=torch.int64).to(dtype)
    if g.random() < 0.3:
        t = torch.randint(-2, 3, shape).to(dtype)  # ties
    else:
        t = torch.randn(shape).to(dtype)
    if g.random() < 0.3 and t.numel() > 0:
        flat = t.view(-1)
        for _ in range(g.randint(1, 3)):
            flat[g.randrange(flat.numel())] = float("nan")
    return t


def layout(t, sp):
    """t's values in a random layout: contiguous, channels-last(-3d), transposed spatial
    dims, sliced, expanded channel, channels and batch swapped."""
    r = g.random()
    nd = t.dim()
    if r < 0.3 and nd == sp + 2:
        fmt = torch.channels_last if sp == 2 else torch.channels_last_3d
        return t.contiguous(memory_format=fmt)
    if r < 0.45:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if r < 0.55:
        big = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        big[..., ::2] = t
        return big[..., ::2]
    if r < 0.62:
        c = nd - sp - 1
        return t.narrow(c, 0, 1).expand(t.shape)
    if r < 0.7 and nd == sp + 2:
        return t.transpose(0, 1).contiguous().transpose(0, 1)
    if r < 0.78:  # spatial dims innermost-first: a channels-last-like 4-D for the 3-d ops
        perm = list(range(nd))
        c = nd - sp - 1
        order = perm[:c] + perm[c + 1:] + [c]
        inv = [order.index(i) for i in range(nd)]
        return t.permute(order).contiguous().permute(inv)
    return t


def shape(sp, g, lo=1, hi=8):
    spatial = [g.randint(lo, hi) for _ in range(sp)]
    c = g.randint(1, 4)
    r = g.random()
    if r < 0.2:
        return [c] + spatial  # unbatched
    if r < 0.25:
        return [0, c] + spatial  # empty batch
    return [g.randint(1, 3), c] + spatial


def run(name, x, args, nret, desc, aten, tol):
    """Calls aoti_torch_cpu_<name>(handle of x, *args, rets...) and compares with aten(x)."""
    try:
        want = aten(x)
        want = want if isinstance(want, tuple) else (want,)
    except Exception as e:  # ATen refuses: so must we
        want = None
        why = str(e).split("\n")[0][:100]
    hx = wrap(nonnull(x))
    rets = [H() for _ in range(nret)]
    rc = getattr(aoti, "aoti_torch_cpu_" + name)(hx, *args, *[C.byref(r) for r in rets])
    lt.tensor_release(hx)
    what = f"{name} {x.dtype} {list(x.shape)} strides {x.stride()} {desc}"
    if want is None:
        check(rc == 1, f"{what}: ATen refuses ({why}) but rc {rc}")
        return
    if rc != 0:
        check(False, f"{what}: rc {rc}")
        return
    got = [to_torch(r) for r in rets]
    for r in rets:
        aoti.aoti_torch_delete_tensor_object(r)
    for i, (a, b) in enumerate(zip(got, want)):
        t = 0 if (i == 1 or tol is None) else tol
        detail = f"output {i}: ours {a.dtype} {list(a.shape)} {a.stride()}, ATen {b.dtype} {list(b.shape)} {b.stride()}"
        if a.shape == b.shape and a.numel() and a.dtype == b.dtype:
            diff = (a.double() - b.double()).abs().nan_to_num(0)
            detail += f", max diff {float(diff.max()):.3g}"
        check(matches(a, b, t), f"{what}: {detail}")


def plist(v, g):
    """A parameter list: one value for all dims when they agree (sometimes), else per dim."""
    if len(set(v)) == 1 and g.random() < 0.4:
        return v[:1]
    return v


# ---- max pooling --------------------------------------------------------------------------
for trial in range(500):
    sp = 2 if trial % 3 else 3
    dtype = g.choice(INTS + FLOATS)
    sh = shape(sp, g)
    x = layout(values(sh, dtype), sp)
    k = [g.randint(1, 4) for _ in range(sp)]
    st = [] if g.random() < 0.3 else [g.randint(1, 3) for _ in range(sp)]
    pad = [g.randint(0, kk // 2 + (1 if g.random() < 0.05 else 0)) for kk in k]
    dil = [g.randint(1, 3) if g.random() < 0.4 else 1 for _ in range(sp)]
    ceil = g.random() < 0.4
    k, st, pad, dil = plist(k, g), plist(st, g), plist(pad, g), plist(dil, g)
    name = f"max_pool{sp}d_with_indices"
    fn = getattr(A, name)
    run(name, x, [arr(k), len(k), arr(st), len(st), arr(pad), len(pad), arr(dil), len(dil), int(ceil)],
        2, f"k {k} s {st} p {pad} d {dil} ceil {ceil}",
        lambda t: fn(t, k, st, pad, dil, ceil), 0)

# ---- average pooling ----------------------------------------------------------------------
for trial in range(400):
    sp = 2 if trial % 3 else 3
    dtype = g.choice([torch.int64] + FLOATS + ([torch.float32, torch.float64] if sp == 2 else []))
    x = layout(values(shape(sp, g), dtype), sp)
    k = [g.randint(1, 4) for _ in range(sp)]
    st = [] if g.random() < 0.3 else [g.randint(1, 3) for _ in range(sp)]
    pad = [g.randint(0, kk // 2 + (1 if g.random() < 0.05 else 0)) for kk in k]
    ceil = g.random() < 0.4
    cip = g.random() < 0.5
    div = None if g.random() < 0.6 else g.choice([1, 2, 3, 7, -2, 0])
    k, st, pad = plist(k, g), plist(st, g), plist(pad, g)
    name = f"avg_pool{sp}d"
    fn = getattr(A, name)
    d = C.c_int64(div) if div is not None else None
    run(name, x, [arr(k), len(k), arr(st), len(st), arr(pad), len(pad), int(ceil), int(cip),
                  C.byref(d) if d is not None else None],
        1, f"k {k} s {st} p {pad} ceil {ceil} count_include_pad {cip} divisor {div}",
        lambda t: fn(t, k, st, pad, ceil, cip, div), TOL.get(dtype, 0))

# ---- adaptive pooling ---------------------------------------------------------------------
for trial in range(400):
    sp = 2 if trial % 2 else 3
    dtype = g.choice(FLOATS)
    x = layout(values(shape(sp, g, hi=11), dtype), sp)
    osz = [g.randint(0 if g.random() < 0.05 else 1, x.shape[-sp + i] + 2) for i in range(sp)]
    if trial % 4 < 2:
        name = f"adaptive_max_pool{sp}d"
        fn = getattr(A, name)
        run(name, x, [arr(osz), sp], 2, f"output_size {osz}", lambda t: fn(t, osz), 0)
    else:
        name = f"_adaptive_avg_pool{sp}d"
        fn = getattr(A, name)
        run(name, x, [arr(osz), sp], 1, f"output_size {osz}", lambda t: fn(t, osz), TOL[dtype])

# ---- the layouts the 3-d ops give a 4-D input that is channels-last-3d unsqueezed ---------
for sp_name, f in (("max_pool3d_with_indices", lambda t: A.max_pool3d_with_indices(t, [2], [2])),):
    t = torch.randn(3, 4, 5, 6).permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)
    run(sp_name, t, [arr([2]), 1, arr([2]), 1, arr([0]), 1, arr([1]), 1, 0], 2, "DHWC", f, 0)

# ---- errors -------------------------------------------------------------------------------
x4 = torch.randn(2, 3, 6, 6)
x5 = torch.randn(2, 3, 4, 6, 6)
bad = [
    ("max_pool2d_with_indices", x4, [arr([2]), 1, arr([0]), 1, arr([0]), 1, arr([1]), 1, 0], 2, "stride 0"),
    ("max_pool2d_with_indices", x4, [arr([2, 2, 2]), 3, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "kernel of 3"),
    ("max_pool2d_with_indices", x4, [arr([2]), 1, arr([]), 0, arr([]), 0, arr([1]), 1, 0], 2, "no padding"),
    ("max_pool2d_with_indices", x4, [arr([7]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "kernel > input"),
    ("max_pool2d_with_indices", x4, [arr([2]), 1, arr([]), 0, arr([-1]), 1, arr([1]), 1, 0], 2, "padding -1"),
    ("max_pool2d_with_indices", x4, [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([0]), 1, 0], 2, "dilation 0"),
    ("max_pool2d_with_indices", x4, [arr([2**40]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "kernel 2**40"),
    ("max_pool2d_with_indices", x4[0, 0], [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "2-D input"),
    ("max_pool2d_with_indices", x4[:, :0], [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "0 channels"),
    ("max_pool2d_with_indices", x4 > 0, [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "bool"),
    ("max_pool2d_with_indices", x4.to(torch.uint16), [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "uint16"),
    ("max_pool2d_with_indices", torch.randint(0, 9, (1, 2, 12, 12), dtype=torch.int8).contiguous(memory_format=torch.channels_last),
     [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "channels-last int8 of 144 positions"),
    ("max_pool3d_with_indices", x5[0, 0], [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "3-D input"),
    ("max_pool3d_with_indices", torch.randint(0, 9, (1, 2, 4, 6, 6), dtype=torch.uint8).contiguous(memory_format=torch.channels_last_3d),
     [arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "channels-last-3d uint8 of 144 positions"),
    ("avg_pool2d", x4.int(), [arr([2]), 1, arr([]), 0, arr([0]), 1, 0, 1, None], 1, "int32"),
    ("avg_pool3d", x5.half(), [arr([2]), 1, arr([]), 0, arr([0]), 1, 0, 1, None], 1, "float16"),
    ("avg_pool3d", x5, [arr([5]), 1, arr([1]), 1, arr([2]), 1, 0, 1, None], 1, "kernel > input with padding"),
    ("adaptive_max_pool2d", x4, [arr([2, 2, 2]), 3], 2, "output_size of 3"),
    ("adaptive_max_pool2d", x4, [arr([-1, 2]), 2], 2, "output_size -1"),
    ("adaptive_max_pool2d", x4.long(), [arr([2, 2]), 2], 2, "int64"),
    ("_adaptive_avg_pool2d", x4[:, :, :0], [arr([2, 2]), 2], 1, "empty height"),
    ("_adaptive_avg_pool3d", x5[0, 0, 0], [arr([2, 2, 2]), 3], 1, "2-D input"),
    ("max_pool2d_with_indices", torch.tensor(1.0), [arr([1]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0], 2, "0-dim input"),
    ("avg_pool2d", torch.tensor(1.0), [arr([1]), 1, arr([]), 0, arr([0]), 1, 0, 1, None], 1, "0-dim input"),
    ("adaptive_max_pool3d", torch.tensor(1.0), [arr([1, 1, 1]), 3], 2, "0-dim input"),
    ("_adaptive_avg_pool2d", torch.tensor(1.0), [arr([1, 1]), 2], 1, "0-dim input"),
]
for name, x, args, nret, desc in bad:
    hx = wrap(nonnull(x))
    rets = [H() for _ in range(nret)]
    rc = getattr(aoti, "aoti_torch_cpu_" + name)(hx, *args, *[C.byref(r) for r in rets])
    check(rc == 1, f"{name} {desc}: rc {rc}, want 1")
    if rc == 0:
        for r in rets:
            aoti.aoti_torch_delete_tensor_object(r)
    lt.tensor_release(hx)
# ... and ATen refuses each of them too (the ones it can be asked).
for name, x, args, nret, desc, fn in [
    ("avg_pool3d", x5, None, 1, "kernel > input with padding", lambda: A.avg_pool3d(x5, [5], [1], [2])),
    ("max_pool2d_with_indices", None, None, 2, "channels-last int8 of 144 positions",
     lambda: A.max_pool2d_with_indices(torch.zeros(1, 2, 12, 12, dtype=torch.int8).contiguous(memory_format=torch.channels_last), [2])),
    ("adaptive_max_pool2d", None, None, 2, "int64", lambda: A.adaptive_max_pool2d(x4.long(), [2, 2])),
]:
    try:
        fn()
        check(False, f"ATen accepts {name} {desc}")
    except Exception:
        check(True, "")
# NULL handles and out-pointers.
hx = wrap(x4)
r0, r1 = H(), H()
check(aoti.aoti_torch_cpu_max_pool2d_with_indices(None, arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0, C.byref(r0), C.byref(r1)) == 1, "NULL self")
check(aoti.aoti_torch_cpu_max_pool2d_with_indices(hx, arr([2]), 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0, None, C.byref(r1)) == 1, "NULL ret0")
check(aoti.aoti_torch_cpu_max_pool2d_with_indices(hx, None, 1, arr([]), 0, arr([0]), 1, arr([1]), 1, 0, C.byref(r0), C.byref(r1)) == 1, "NULL kernel_size")
check(aoti.aoti_torch_cpu_adaptive_max_pool2d(hx, arr([2, 2]), 2, C.byref(r0), None) == 1, "NULL ret1")
check(aoti.aoti_torch_cpu__adaptive_avg_pool2d(hx, arr([2, 2]), -1, C.byref(r0)) == 1, "output_size length -1")
lt.tensor_release(hx)

print(f"ops_pool: averages bit-exact with ATen in {exact['n']} of {exact['of']} float cases")
shimtest.summary("ops_pool")

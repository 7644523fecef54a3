"""cat, narrow, permute, reshape, squeeze_dim, slice_Tensor, view_dtype, pad, fill__Scalar,
resize_, resize_as_, set__source_Tensor of libtensor_aoti against ATen's (torch.ops.aten.*)
in the same process: dtype, sizes, strides and values exactly; where ATen returns a view,
ours views the same memory (the same data pointer: the handles wrap torch's own memory),
and where ATen copies, ours is a new allocation; over random shapes (0-size, 0-dim),
layouts (permuted, sliced, channels-last, expanded), every dtype (complex included), every
pad mode and pad (negative ones too), out-of-range and special fill values, and the error
cases (bad dims, steps, sizes, dtypes: status 1). resize_ / resize_as_ / set_ succeed where
ATen changes nothing and are refused (status 1) where ATen would change a TensorImpl's
metadata, which libtensor's C API cannot.

Usage: python ops_shape.py LIBDIR
"""

import random

import torch

import shimtest
from shimtest import C, DT, H, HP, I32P, I64P, REAL, aoti, arr, check, lt, relayout, same, to_torch, values, wrap

A = torch.ops.aten
aoti.aoti_torch_cpu_cat.argtypes = [C.POINTER(H), C.c_int64, C.c_int64, HP]
aoti.aoti_torch_cpu_narrow.argtypes = [H, C.c_int64, C.c_int64, C.c_int64, HP]
aoti.aoti_torch_cpu_permute.argtypes = [H, I64P, C.c_int64, HP]
aoti.aoti_torch_cpu_reshape.argtypes = [H, I64P, C.c_int64, HP]
aoti.aoti_torch_cpu_squeeze_dim.argtypes = [H, C.c_int64, HP]
aoti.aoti_torch_cpu_slice_Tensor.argtypes = [H, C.c_int64, I64P, I64P, C.c_int64, HP]
aoti.aoti_torch_cpu_view_dtype.argtypes = [H, C.c_int32, HP]
aoti.aoti_torch_cpu_pad.argtypes = [H, I64P, C.c_int64, C.c_char_p, C.POINTER(C.c_double), HP]
aoti.aoti_torch_cpu_fill__Scalar.argtypes = [H, C.c_double]
aoti.aoti_torch_cpu_resize_.argtypes = [H, I64P, C.c_int64, I32P]
aoti.aoti_torch_cpu_resize_as_.argtypes = [H, H, I32P]
aoti.aoti_torch_cpu_set__source_Tensor.argtypes = [H, H]

ALL = REAL + [torch.complex64, torch.complex128]
FMT = {f: getattr(aoti, "aoti_torch_memory_format_" + n)() for f, n in (
    (torch.contiguous_format, "contiguous_format"), (torch.channels_last, "channels_last"),
    (torch.channels_last_3d, "channels_last_3d"), (torch.preserve_format, "preserve_format"))}


def rand(shape, dtype, g):
    """values() of any dtype (complex: two real draws), in a random layout."""
    if dtype.is_complex:
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        t = torch.complex(values(shape, part, g, nan=0), values(shape, part, g, nan=0))
    else:
        t = values(shape, dtype, g)
    return relayout(t, g)


def call(fn, *args):
    r = H()
    rc = fn(*args, C.byref(r))
    return rc, r


def ptr(h):
    return lt.tensor_data_ptr(h) or 0


def result(name, rc, h, want, base=None):
    """Compares our (rc, handle) with ATen's `want` (an exception: rc must be 1). With `base`
    (the input), a view of it in ATen must be a view here (same data pointer), a copy a copy."""
    if isinstance(want, Exception):
        check(rc == 1, f"{name}: ATen raises ({str(want).splitlines()[0][:100]}) but rc {rc}")
        if rc == 0:
            lt.tensor_release(h)
        return
    if rc != 0:
        check(False, f"{name}: rc {rc} where ATen succeeds")
        return
    got = to_torch(h)
    diff = same(got, want)
    if not diff and base is not None and want.numel() > 0:
        lo, hi = base.data_ptr(), base.data_ptr() + base.untyped_storage().nbytes()
        aten_view = lo <= want.data_ptr() < hi
        if aten_view and ptr(h) != want.data_ptr():
            diff = f"ATen returns a view at {want.data_ptr():#x}, ours is at {ptr(h):#x}"
        if not aten_view and lo <= ptr(h) < hi:
            diff = "ATen copies, ours is a view of the input"
    lt.tensor_release(h)
    check(not diff, f"{name}: {diff}")


def aten(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 -- ATen refuses: so must we
        return e


g = random.Random(21)

# ---- cat ----------------------------------------------------------------------------------
for trial in range(600):
    nd = g.choice([1, 1, 2, 3, 4, 4])
    dim = g.randrange(-nd, nd)
    base = [g.choice([0, 1, 2, 3, 5]) for _ in range(nd)]
    dtype = ALL[trial % len(ALL)]
    ts = []
    for _ in range(g.choice([1, 2, 3, 5])):
        s = list(base)
        s[dim] = g.choice([0, 1, 2, 4])
        if g.random() < 0.05 and nd > 1:
            s[(dim + 1) % nd] += 1  # sizes that do not match: an error
        d = dtype if g.random() < 0.8 else g.choice(ALL)
        t = rand(s, d, g)
        if nd == 4 and g.random() < 0.4:
            t = t.contiguous(memory_format=torch.channels_last)
        ts.append(t)
    if g.random() < 0.15:
        ts.insert(g.randrange(len(ts) + 1), torch.empty(0, dtype=g.choice(ALL)))  # legacy skip
    if g.random() < 0.03:
        ts.append(torch.tensor(1.0))  # 0-dim: an error
    if g.random() < 0.05:
        ts = [torch.empty(0, dtype=dtype) for _ in range(g.randint(1, 3))]
        dim = g.choice([0, 3, -1])
    hs = [wrap(shimtest.nonnull(t)) for t in ts]
    lst = (H * len(hs))(*hs)
    rc, h = call(aoti.aoti_torch_cpu_cat, lst, len(hs), dim)
    result(f"cat {[(str(t.dtype)[6:], list(t.shape), t.stride()) for t in ts]} dim {dim}", rc, h,
           aten(lambda: A.cat(ts, dim)))
    for x in hs:
        lt.tensor_release(x)
check(call(aoti.aoti_torch_cpu_cat, None, 0, 0)[0] == 1, "cat of no tensors must fail")
x = torch.randn(2, 3)
hx = wrap(x)
many = [hx] * 200
rc, h = call(aoti.aoti_torch_cpu_cat, (H * 200)(*many), 200, 0)
result("cat of 200 tensors", rc, h, A.cat([x] * 200, 0))
rc, h = call(aoti.aoti_torch_cpu_cat, (H * 2)(hx, None), 2, 0)
check(rc == 1, "cat with a NULL tensor must fail")
lt.tensor_release(hx)

# ---- views: narrow, permute, reshape, squeeze_dim, slice_Tensor, view_dtype ---------------


def shapes(g, n):
    for trial in range(n):
        nd = g.choice([0, 1, 2, 2, 3, 4])
        s = [g.choice([0, 1, 1, 2, 3, 4, 6]) for _ in range(nd)]
        if g.random() < 0.85:
            s = [max(v, 1) for v in s]
        yield trial, s


for trial, s in shapes(g, 700):
    dtype = ALL[trial % len(ALL)]
    x = rand(s, dtype, g)
    nd = x.dim()
    hx = wrap(shimtest.nonnull(x))
    what = f"{dtype} {list(x.shape)} {x.stride()}"
    # narrow
    dim = g.randrange(-max(nd, 1) - 1, max(nd, 1) + 1)
    size = x.shape[dim] if nd and -nd <= dim < nd else 1
    start = g.randint(-size - 1, size + 1)
    length = g.randint(-1, size + 1)
    rc, h = call(aoti.aoti_torch_cpu_narrow, hx, dim, start, length)
    result(f"narrow {what} dim {dim} start {start} length {length}", rc, h,
           aten(lambda: A.narrow(x, dim, start, length)), x)
    # permute
    perm = list(range(nd))
    g.shuffle(perm)
    perm = [p - nd if g.random() < 0.3 else p for p in perm]
    if g.random() < 0.05 and nd:
        perm[0] = perm[-1]  # repeated
    if g.random() < 0.03:
        perm = perm + [0]  # too many
    rc, h = call(aoti.aoti_torch_cpu_permute, hx, arr(perm), len(perm))
    result(f"permute {what} {perm}", rc, h, aten(lambda: A.permute(x, perm)), x)
    # reshape: a random factorization of numel, sometimes with -1, sometimes wrong
    n = x.numel()
    target = []
    rest = n
    for _ in range(g.randint(0, 3)):
        f = g.choice([d for d in range(1, 7) if rest % d == 0] if rest else [0, 1, 2])
        target.append(f)
        rest = rest // f if f else rest
    target.append(rest)
    g.shuffle(target)
    if g.random() < 0.3 and target:
        target[g.randrange(len(target))] = -1
    if g.random() < 0.05:
        target = target + [2]
    rc, h = call(aoti.aoti_torch_cpu_reshape, hx, arr(target), len(target))
    result(f"reshape {what} to {target}", rc, h, aten(lambda: A.reshape(x, target)), x)
    # squeeze_dim
    dim = g.randrange(-max(nd, 1) - 1, max(nd, 1) + 1)
    rc, h = call(aoti.aoti_torch_cpu_squeeze_dim, hx, dim)
    result(f"squeeze_dim {what} dim {dim}", rc, h, aten(lambda: A.squeeze.dim(x, dim)), x)
    # slice_Tensor: start / end None or anywhere, steps 1..3 (0 and -1 are errors)
    dim = g.randrange(-max(nd, 1), max(nd, 1) + (1 if g.random() < 0.05 else 0))
    size = x.shape[dim] if nd and -nd <= dim < nd else 1
    st = None if g.random() < 0.3 else g.randint(-size - 3, size + 3)
    en = None if g.random() < 0.3 else g.randint(-size - 3, size + 3)
    step = g.choice([1, 1, 2, 3, 0, -1] if g.random() < 0.1 else [1, 1, 2, 3])
    cs, ce = C.c_int64(st or 0), C.c_int64(en or 0)
    rc, h = call(aoti.aoti_torch_cpu_slice_Tensor, hx, dim, None if st is None else C.byref(cs),
                 None if en is None else C.byref(ce), step)
    result(f"slice {what} dim {dim} {st}:{en}:{step}", rc, h, aten(lambda: A.slice(x, dim, st, en, step)), x)
    # view_dtype
    to = g.choice(ALL)
    rc, h = call(aoti.aoti_torch_cpu_view_dtype, hx, DT[to])
    result(f"view_dtype {what} to {to}", rc, h, aten(lambda: A.view.dtype(x, to)), x)
    lt.tensor_release(hx)

# ---- pad ----------------------------------------------------------------------------------
MODES = ["constant", "reflect", "replicate", "circular"]
for trial in range(900):
    mode = MODES[trial % 4]
    k = g.choice([1, 2, 3]) if g.random() < 0.9 else g.choice([0, 4])
    nd = k + g.choice([1, 2]) if g.random() < 0.85 else g.randint(0, 5)
    s = [g.choice([1, 2, 3, 4, 5]) for _ in range(nd)]
    if g.random() < 0.08 and nd:
        s[g.randrange(nd)] = 0
    dtype = ALL[trial % len(ALL)]
    x = rand(s, dtype, g)
    if nd == 4 and g.random() < 0.3:
        x = x.contiguous(memory_format=torch.channels_last)
    if nd == 5 and g.random() < 0.3:
        x = x.contiguous(memory_format=torch.channels_last_3d)
    pad = [g.randint(-2, 4) for _ in range(2 * k)]
    if g.random() < 0.03:
        pad = pad + [1]  # odd length
    value = None if g.random() < 0.5 else g.choice([0.0, 1.5, -2.0, 300.0])
    hx = wrap(shimtest.nonnull(x))
    cv = C.c_double(value or 0.0)
    rc, h = call(aoti.aoti_torch_cpu_pad, hx, arr(pad), len(pad), mode.encode(),
                 None if value is None else C.byref(cv))
    what = f"pad {mode} {dtype} {list(x.shape)} {x.stride()} pad {pad} value {value}"
    want = aten(lambda: A.pad(x, pad, mode, value))
    kept = [(x.shape[-1 - i] + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0), pad[2 * i], pad[2 * i + 1])
            for i in range(len(pad) // 2)] if x.dim() >= len(pad) // 2 else []
    if mode == "circular" and not isinstance(want, Exception) and any(n < l or n < r for n, l, r in kept):
        # ATen wraps from its own uninitialised output here: only the layout is defined.
        got = to_torch(h) if rc == 0 else None
        if rc == 0:
            lt.tensor_release(h)
        check(got is not None and (got.shape, got.stride(), got.dtype) == (want.shape, want.stride(), want.dtype),
              f"{what}: rc {rc}, layout {None if got is None else (got.shape, got.stride())} vs ATen {(want.shape, want.stride())}")
    else:
        result(what, rc, h, want, x)
    lt.tensor_release(hx)
x = torch.randn(2, 3, 4)
hx = wrap(x)
check(call(aoti.aoti_torch_cpu_pad, hx, arr([1, 1]), 2, b"wrap", None)[0] == 1, "pad mode 'wrap' must fail")
check(call(aoti.aoti_torch_cpu_pad, hx, arr([1, 1]), 2, None, None)[0] == 1, "pad with a NULL mode must fail")
lt.tensor_release(hx)

# ---- fill__Scalar --------------------------------------------------------------------------
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -128.7, 127.0, 128.0, 255.0, 256.0, -0.5, 65504.0, 65519.0,
           65520.0, 1e10, -1e10, 3.4e38, 3.5e38, 2.0**63, -(2.0**63), 2.0**64, float("nan"),
           float("inf"), -float("inf"), 1e-40, 0.1]
for trial in range(400):
    dtype = ALL[trial % len(ALL)]
    s = [g.choice([0, 1, 2, 3]) for _ in range(g.randint(0, 3))]
    x = rand(s, dtype, g)
    v = g.choice(SPECIAL) if g.random() < 0.7 else g.uniform(-300, 300)
    mine, theirs = x.clone(), x.clone()
    want = aten(lambda: theirs.fill_(v))
    hm = wrap(shimtest.nonnull(mine))
    rc = aoti.aoti_torch_cpu_fill__Scalar(hm, v)
    lt.tensor_release(hm)
    if isinstance(want, Exception):
        check(rc == 1, f"fill_ {dtype} {v}: ATen raises ({want}) but rc {rc}")
    else:
        diff = same(mine, theirs) if rc == 0 else f"rc {rc}"
        check(not diff, f"fill_ {dtype} {list(x.shape)} {x.stride()} value {v}: {diff}")

# ---- resize_, resize_as_, set_ --------------------------------------------------------------
for trial in range(300):
    s = [g.choice([0, 1, 2, 3]) for _ in range(g.randint(0, 5))]
    x = relayout(torch.randn(s), g)
    if len(s) == 4 and g.random() < 0.4:
        x = x.contiguous(memory_format=torch.channels_last)
    r = g.random()
    target = list(x.shape) if r < 0.6 else [g.choice([0, 1, 2, 3]) for _ in range(g.randint(0, 5))]
    if g.random() < 0.05 and target:
        target[0] = -1
    fmt = g.choice([None, None, torch.contiguous_format, torch.channels_last, torch.channels_last_3d,
                    torch.preserve_format])
    before = (x.shape, x.stride(), x.data_ptr())
    y = torch.empty_strided(x.shape, x.stride())
    want = aten(lambda: A.resize_(y, target, memory_format=fmt))
    unchanged = not isinstance(want, Exception) and (y.shape, y.stride()) == before[:2]
    hx = wrap(shimtest.nonnull(x))
    cf = C.c_int32(FMT[fmt] if fmt is not None else 0)
    rc = aoti.aoti_torch_cpu_resize_(hx, arr(target), len(target), None if fmt is None else C.byref(cf))
    what = f"resize_ {list(x.shape)} {x.stride()} to {target} format {fmt}"
    if unchanged:
        ok = rc == 0 and shimtest.meta(hx) == (list(x.shape), list(x.stride()))
        check(ok, f"{what}: ATen changes nothing, rc {rc}")
    else:
        check(rc == 1, f"{what}: ATen {'raises' if isinstance(want, Exception) else 'changes the layout'}, rc {rc}")
    # resize_as_ to a template
    tpl = relayout(torch.randn(target if min(target, default=0) >= 0 and g.random() < 0.5 else list(x.shape)), g)
    y = torch.empty_strided(x.shape, x.stride())
    want = aten(lambda: A.resize_as_(y, tpl, memory_format=fmt))
    unchanged = not isinstance(want, Exception) and (y.shape, y.stride()) == before[:2]
    ht = wrap(shimtest.nonnull(tpl))
    rc = aoti.aoti_torch_cpu_resize_as_(hx, ht, None if fmt is None else C.byref(cf))
    what = f"resize_as_ {list(x.shape)} {x.stride()} to {list(tpl.shape)} {tpl.stride()} format {fmt}"
    if unchanged:
        check(rc == 0, f"{what}: ATen changes nothing, rc {rc}")
    else:
        check(rc == 1, f"{what}: ATen {'raises' if isinstance(want, Exception) else 'changes the layout'}, rc {rc}")
    # set_ to itself or to an alias of the same storage and layout (nothing changes); to
    # another layout of the same storage, another storage or another dtype (refused / fails)
    alias, moved = H(), H()
    assert aoti.aoti_torch_as_strided(hx, arr(x.shape), arr(x.stride()), C.byref(alias)) == 0
    for src, name in ((hx, "itself"), (alias, "an alias")):
        rc = aoti.aoti_torch_cpu_set__source_Tensor(hx, src)
        check(rc == 0, f"set_ {list(x.shape)} to {name}: rc {rc}")
    other = torch.randn(3)
    ho, hd = wrap(other), wrap(x.double().contiguous() if x.numel() else torch.zeros(1, dtype=torch.float64))
    check(aoti.aoti_torch_cpu_set__source_Tensor(hx, ho) == 1, "set_ to another storage must be refused")
    check(aoti.aoti_torch_cpu_set__source_Tensor(hx, hd) == 1, "set_ to another dtype must fail")
    if x.numel() > 1:
        assert aoti.aoti_torch_as_strided(hx, arr([1]), arr([1]), C.byref(moved)) == 0
        check(aoti.aoti_torch_cpu_set__source_Tensor(hx, moved) == 1, "set_ to another layout must be refused")
        lt.tensor_release(moved)
    for h in [alias, ht, ho, hd, hx]:
        lt.tensor_release(h)

shimtest.summary("ops_shape")

#!/usr/bin/env python3
"""Differential conformance test: libtensor (through its C ABI, with stdlib ctypes) against
PyTorch itself.

Random bases (every dtype; contiguous, channels-last, channels-last-3d, permuted, gapped,
offset, expanded, size-0 and 0-dim layouts) are built identically on both sides over the
*same bytes*; then random chains of ops with random -- often invalid -- arguments are
applied to both: the views and the data-movement ops of docs/c-api.md's Copies (reshape, flatten,
contiguous, clone, empty_like, to_dtype, repeat, copy_, fill_f64 / fill_i64, equal). After
every op the two must agree on error-or-not. On an error, a torch IndexError must be
TENSOR_ERR_INDEX and torch's message must map to the status docs/c-api.md's Errors gives it
(STATUS_OF_MESSAGE). On success they must agree on sizes, strides, storage offset, dtype,
the contiguity flags (contiguous / channels_last / channels_last_3d,
non-overlapping-and-dense), suggest_memory_format, and the values of (a sample of) the
elements; after a copy or an in-place write, on every byte of the storage (NaN payloads
aside); whether a result shares its input's storage (reshape / flatten are views exactly
when torch's are) and whether contiguous / to_dtype return the input itself; in-place ops
bump the version counter as torch's do; equal returns torch.equal's answer. The second
operand of copy_ (and equal) is a fresh random tensor of any dtype whose shape mostly
broadcasts, or a tensor over the destination's own storage (overlapping it: libtensor must
give the snapshot result, compared with torch copying from src.clone()), or dst itself.
Documented divergences (each op's `known` hook and known_divergence) are counted and
listed, never compared. Any other divergence prints the op chain that led to it and makes
the run fail.

tensor_copy_affine_ (one-pass `dst[..., c, ...] = src[..., c, ...] * scale[c] + shift[c]`),
which torch has no single op for, is checked apart (`affine_cases`): random dst and src
bases (every dtype and layout above; src mostly broadcasting), random dim, n and
scale/shift; its status must be the one its documentation gives (INDEX, INVALID_ARGUMENT,
DTYPE, OVERLAP, SHAPE in that order), a failure must leave dst and its version alone, and
a success must bump the version once, leave every storage byte outside dst's elements
alone and give, element for element, PyTorch's result: float32 arithmetic
`src.float() * scale + shift` (float32 tensors; then `.to(dst dtype)` for float16 /
bfloat16), float64 arithmetic for float64 and integer outputs (integers: truncated, then
saturated to the dtype's range, as copy_), within one float32 rounding (float32 outputs:
|ours - torch| <= 2^-23 * (|src * scale| + |shift| + |torch|); one rounding of the output
type for float16 / bfloat16 / float64). Plus the image case against the torch chain users
write: a uint8 HWC frame permuted to CHW, `x.permute(2, 0, 1).float().div(255).sub(mean)
.div(std)`, same tolerance.

Usage: conformance.py [--lib target/debug/libtensor.so] [--steps 3000] [--seed 0]
                      [--max-chain 6] [--affine-cases 600] [--messages]   (--messages also lists ops whose
                      error messages differ in wording)

Structure: `Lib` holds every ctypes binding; `OPS` is the op table -- each `Op` has an
argument generator, the torch call and the libtensor call, plus optional hooks (known
divergences, extra checks) -- so more ops can be added by appending entries.
"""

import argparse
import ctypes as C
import math
import random
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import torch
from torch._prims_common import suggest_memory_format

INT64_MAX = 2**63 - 1

# ---- the C ABI ---------------------------------------------------------------------------

OK, NULL_POINTER, INVALID_ARGUMENT, INDEX, SHAPE, NOT_VIEWABLE = 0, 1, 2, 3, 4, 5
DTYPE_ERR, DEVICE, OUT_OF_BOUNDS, OVERFLOW, OUT_OF_MEMORY, OVERLAP = 6, 7, 8, 9, 10, 11
STATUS_NAMES = {0: "OK", 1: "NULL_POINTER", 2: "INVALID_ARGUMENT", 3: "INDEX", 4: "SHAPE",
                5: "NOT_VIEWABLE", 6: "DTYPE", 7: "DEVICE", 8: "OUT_OF_BOUNDS", 9: "OVERFLOW",
                10: "OUT_OF_MEMORY", 11: "OVERLAP", 99: "INTERNAL"}
# torch dtype <-> tensor_dtype_t code (c10::ScalarType)
DTYPES = [
    (torch.uint8, 0), (torch.int8, 1), (torch.int16, 2), (torch.int32, 3), (torch.int64, 4),
    (torch.float16, 5), (torch.float32, 6), (torch.float64, 7), (torch.complex64, 9),
    (torch.complex128, 10), (torch.bool, 11), (torch.bfloat16, 15), (torch.uint16, 27),
    (torch.uint32, 28), (torch.uint64, 29),
]
CODE_OF = {d: c for d, c in DTYPES}
DTYPE_OF = {c: d for d, c in DTYPES}
CONTIGUOUS_FORMAT, CHANNELS_LAST, CHANNELS_LAST_3D = 0, 2, 3
SUGGEST_CODE = {torch.contiguous_format: CONTIGUOUS_FORMAT, torch.channels_last: CHANNELS_LAST,
                torch.channels_last_3d: CHANNELS_LAST_3D}


class Lib:
    """Every ctypes binding of libtensor used here, in one place."""

    def __init__(self, path):
        L = C.CDLL(path)
        P, I64, I32, PI64 = C.c_void_p, C.c_int64, C.c_int32, C.POINTER(C.c_int64)
        PP = C.POINTER(C.c_void_p)

        def fn(name, res, *args):
            f = getattr(L, name)
            f.restype, f.argtypes = res, list(args)
            setattr(self, name[len("tensor_"):] if name.startswith("tensor_") else name, f)

        fn("tensor_arange", I32, I64, I32, PP)
        fn("tensor_release", None, P)
        fn("tensor_storage", P, P)
        fn("tensor_from_storage", I32, P, I64, PI64, PI64, I64, I32, PP)
        fn("tensor_ndim", I64, P)
        fn("tensor_sizes", PI64, P)
        fn("tensor_strides", PI64, P)
        fn("tensor_storage_offset", I64, P)
        fn("tensor_numel", I64, P)
        fn("tensor_dtype", I32, P)
        fn("tensor_data_ptr", P, P)
        fn("tensor_nbytes", C.c_size_t, P)
        fn("tensor_is_contiguous", C.c_bool, P, I32)
        fn("tensor_is_non_overlapping_and_dense", C.c_bool, P)
        fn("tensor_suggest_memory_format", I32, P)
        fn("tensor_shares_storage", C.c_bool, P, P)
        fn("tensor_version", C.c_uint64, P)
        fn("tensor_get_f64", I32, P, PI64, I64, C.POINTER(C.c_double))
        fn("tensor_last_error", C.c_char_p)
        # views
        fn("tensor_view", I32, P, PI64, I64, PP)
        fn("tensor_view_dtype", I32, P, I32, PP)
        fn("tensor_as_strided", I32, P, PI64, PI64, I64, I64, PP)
        fn("tensor_transpose", I32, P, I64, I64, PP)
        fn("tensor_transpose_2d", I32, P, PP)
        fn("tensor_permute", I32, P, PI64, I64, PP)
        fn("tensor_movedim", I32, P, I64, I64, PP)
        fn("tensor_slice", I32, P, I64, I64, I64, I64, PP)
        fn("tensor_narrow", I32, P, I64, I64, I64, PP)
        fn("tensor_select", I32, P, I64, I64, PP)
        fn("tensor_squeeze", I32, P, PP)
        fn("tensor_squeeze_dim", I32, P, I64, PP)
        fn("tensor_unsqueeze", I32, P, I64, PP)
        fn("tensor_expand", I32, P, PI64, I64, PP)
        fn("tensor_unflatten", I32, P, I64, PI64, I64, PP)
        fn("tensor_diagonal", I32, P, I64, I64, I64, PP)
        fn("tensor_unfold", I32, P, I64, I64, I64, PP)
        fn("tensor_alias", I32, P, PP)
        fn("tensor_detach", I32, P, PP)
        # copies (empty_like included)
        fn("tensor_empty_like", I32, P, I32, PP)
        fn("tensor_reshape", I32, P, PI64, I64, PP)
        fn("tensor_flatten", I32, P, I64, I64, PP)
        fn("tensor_contiguous", I32, P, I32, PP)
        fn("tensor_clone", I32, P, I32, PP)
        fn("tensor_to_dtype", I32, P, I32, PP)
        fn("tensor_repeat", I32, P, PI64, I64, PP)
        fn("tensor_copy_", I32, P, P)
        fn("tensor_fill_f64", I32, P, C.c_double)
        fn("tensor_fill_i64", I32, P, I64)
        fn("tensor_equal", I32, P, P, C.POINTER(C.c_bool))
        PD = C.POINTER(C.c_double)
        fn("tensor_copy_affine_", I32, P, P, I64, PD, PD, I64)
        fn("tensor_empty", I32, PI64, I64, I32, PP)
        fn("storage_data_ptr", P, P)
        fn("storage_nbytes", C.c_size_t, P)

    @staticmethod
    def ints(values):
        return (C.c_int64 * max(len(values), 1))(*values)

    def call(self, f, *args):
        """Calls a function whose last parameter is `tensor_t** out`: (status, handle)."""
        out = C.c_void_p()
        st = f(*args, C.byref(out))
        return st, (out.value if st == OK else None)

    def error(self):
        return self.last_error().decode("utf-8", "replace")

    def geometry(self, t):
        n = self.ndim(t)
        sz, st = self.sizes(t), self.strides(t)
        return [sz[i] for i in range(n)], [st[i] for i in range(n)], self.storage_offset(t)

    def get(self, t, idx):
        v = C.c_double()
        st = self.get_f64(t, self.ints(idx), len(idx), C.byref(v))
        if st != OK:
            raise RuntimeError(f"tensor_get_f64{tuple(idx)} failed: {self.error()}")
        return v.value


# ---- random arguments ----------------------------------------------------------------------

def rdim(rng, nd, bad=0.1):
    """A dim, sometimes out of range."""
    n = max(nd, 1)
    if rng.random() < bad:
        return rng.choice([n, n + 1, -n - 1, -n - 3])
    return rng.randint(-n, n - 1)


def factorizations(numel, rng):
    """A random shape with `numel` elements (split of the row-major order)."""
    shape, rest = [], numel
    while rest > 1 and len(shape) < 4:
        divs = [d for d in range(2, rest + 1) if rest % d == 0]
        f = rng.choice(divs)
        shape.append(f)
        rest //= f
    if rest != 1 or numel == 0:
        shape.append(rest)
    if rng.random() < 0.3:
        shape.insert(rng.randint(0, len(shape)), 1)
    rng.shuffle(shape)
    return shape


def gen_view(rng, t):
    numel = t.numel()
    if rng.random() < 0.75:
        s = factorizations(numel, rng)
        if s and rng.random() < 0.5:
            s[rng.randrange(len(s))] = -1
        return (s,)
    return ([rng.choice([-2, -1, -1, 0, 1, 2, 3, 4, 6]) for _ in range(rng.randint(0, 3))],)


def gen_view_dtype(rng, t):
    return (rng.choice(DTYPES)[0],)


def gen_as_strided(rng, t):
    n_elems = t.untyped_storage().nbytes() // t.element_size()
    nd = rng.randint(0, 4)
    sizes = [rng.choice([0, 1, 1, 2, 2, 3, 4]) for _ in range(nd)]
    strides = [rng.choice([0, 1, 1, 2, 3, 4, 6, 12]) for _ in range(nd)]
    off = rng.randint(0, max(n_elems, 1))
    r = rng.random()
    if r < 0.05 and nd:
        sizes[rng.randrange(nd)] = -1
    elif r < 0.1 and nd:
        strides[rng.randrange(nd)] = -1
    elif r < 0.13:
        off = -1
    return (sizes, strides, off)


def gen_dims2(rng, t):
    return (rdim(rng, t.dim()), rdim(rng, t.dim()))


def gen_none(rng, t):
    return ()


def gen_permute(rng, t):
    nd = t.dim()
    dims = list(range(nd))
    rng.shuffle(dims)
    dims = [d - nd if rng.random() < 0.3 else d for d in dims]
    r = rng.random()
    if r < 0.05:
        dims = dims[:-1]
    elif r < 0.1 and nd >= 2:
        dims[0] = dims[1]
    elif r < 0.15 and nd:
        dims[0] = nd + 1
    return (dims,)


def gen_slice(rng, t):
    nd = t.dim()
    d = rdim(rng, nd, 0.05)
    n = t.shape[d] if -nd <= d < nd and nd else 3
    pick = lambda: rng.choice([rng.randint(-n - 3, n + 3), INT64_MAX, -INT64_MAX - 1, 0])
    step = rng.choice([1, 1, 1, 2, 3, 5]) if rng.random() > 0.1 else rng.choice([0, -1])
    return (d, pick(), pick(), step)


def gen_narrow(rng, t):
    nd = t.dim()
    d = rdim(rng, nd, 0.05)
    n = t.shape[d] if -nd <= d < nd and nd else 3
    start = rng.randint(-n - 1, n + 1)
    length = rng.randint(-1, n + 1)
    return (d, start, length)


def gen_select(rng, t):
    nd = t.dim()
    d = rdim(rng, nd, 0.05)
    n = t.shape[d] if -nd <= d < nd and nd else 3
    return (d, rng.randint(-n - 1, n))


def gen_dim(rng, t):
    return (rdim(rng, t.dim()),)


def gen_unsqueeze(rng, t):
    return (rdim(rng, t.dim() + 1),)


def gen_expand(rng, t):
    sizes = []
    for n in t.shape:
        r = rng.random()
        if r < 0.25:
            sizes.append(-1)
        elif n == 1:
            sizes.append(rng.choice([0, 1, 2, 3]))
        elif r < 0.9:
            sizes.append(n)
        else:
            sizes.append(rng.choice([n + 1, 0, 1, -2]))
    lead = [rng.choice([1, 2, 3]) for _ in range(rng.choice([0, 0, 1, 2]))]
    if lead and rng.random() < 0.1:
        lead[0] = -1
    sizes = lead + sizes
    if rng.random() < 0.05 and sizes:
        sizes = sizes[1:]
    return (sizes,)


def gen_unflatten(rng, t):
    nd = t.dim()
    d = rdim(rng, nd, 0.05)
    n = t.shape[d] if -nd <= d < nd and nd else 4
    r = rng.random()
    if r < 0.8:
        s = factorizations(n, rng)
        if s and rng.random() < 0.4:
            s[rng.randrange(len(s))] = -1
    elif r < 0.85:
        s = []
    else:
        s = [rng.choice([-2, -1, 0, 1, 2, 3]) for _ in range(rng.randint(1, 3))]
    return (d, s)


def gen_diagonal(rng, t):
    return (rng.randint(-4, 4), rdim(rng, t.dim()), rdim(rng, t.dim()))


def gen_unfold(rng, t):
    nd = t.dim()
    d = rdim(rng, nd, 0.05)
    n = (t.shape[d] if nd else 1) if -max(nd, 1) <= d < max(nd, 1) else 3
    size = rng.randint(-1, n + 1) if rng.random() < 0.15 else rng.randint(0, n)
    step = rng.choice([1, 1, 2, 3]) if rng.random() > 0.1 else rng.choice([0, -1])
    return (d, size, step)


# ---- data-movement arguments (Copies) ----------------------------------------------------

FORMATS = [torch.contiguous_format, torch.preserve_format, torch.channels_last,
           torch.channels_last_3d]
FORMAT_CODE = {torch.contiguous_format: 0, torch.preserve_format: 1, torch.channels_last: 2,
               torch.channels_last_3d: 3}
# [lo, hi) of every integer dtype: a float converts to it identically on both sides only
# when its truncation lies in this range (see out_of_range)
INT_RANGE = {torch.uint8: (0, 2**8), torch.int8: (-2**7, 2**7), torch.int16: (-2**15, 2**15),
             torch.int32: (-2**31, 2**31), torch.int64: (-2**63, 2**63),
             torch.uint16: (0, 2**16), torch.uint32: (0, 2**32), torch.uint64: (0, 2**64)}
FILL_F64 = [0.0, -0.0, 1.0, 2.75, -2.75, 7.0, 100.5, -129.0, 255.9, 65504.0, 1e6, -1e6, 3e38,
            1e300, math.nan, math.inf, -math.inf]
FILL_I64 = [0, 1, -1, 5, 127, 128, 255, 256, -129, 2048, 2049, 65535, 65536, -32769, 2**31,
            2**40 + 1, 2**53 + 1, INT64_MAX, -INT64_MAX - 1]

KNOWN = {}  # reason -> count: the documented divergences met during the run


def note(reason):
    KNOWN[reason] = KNOWN.get(reason, 0) + 1
    return reason


def gen_flatten(rng, t):
    nd = t.dim()
    a, b = rdim(rng, nd, 0.05), rdim(rng, nd, 0.05)
    n = max(nd, 1)
    if -n <= a < n and -n <= b < n and a % n > b % n and rng.random() < 0.8:
        a, b = b, a
    return (a, b)


def gen_fmt(rng, t):
    r = rng.random()
    if t.dim() == 4 and r < 0.4:
        return (torch.channels_last,)
    if t.dim() == 5 and r < 0.4:
        return (torch.channels_last_3d,)
    return (rng.choice(FORMATS),)


def gen_contiguous_fmt(rng, t):
    # preserve is a known divergence: ask for it rarely
    fmt = gen_fmt(rng, t)
    if fmt[0] == torch.preserve_format and rng.random() < 0.8:
        return (torch.contiguous_format,)
    return fmt


def gen_repeat(rng, t):
    nd = t.dim()
    reps = [rng.choice([0, 1, 1, 1, 2, 2, 3]) for _ in range(nd + rng.choice([0, 0, 0, 1, 2]))]
    r = rng.random()
    if r < 0.05 and nd:
        reps = reps[:nd - 1]  # too few
    elif r < 0.1 and reps:
        reps[rng.randrange(len(reps))] = rng.choice([-1, -2])
    if t.numel() * math.prod(max(x, 1) for x in reps) > 4096:  # keep the output small
        reps = [min(x, 1) for x in reps]
    return (reps,)


def gen_fill_f64(rng, t):  # values that fit every dtype half of the time
    return (rng.choice(FILL_F64[:6] if rng.random() < 0.5 else FILL_F64),)


def gen_fill_i64(rng, t):
    return (rng.choice(FILL_I64[:4] if rng.random() < 0.5 else FILL_I64),)


class Other:
    """A second operand (copy_'s src, equal's b), the same tensor on both sides."""

    def __init__(self, h, t, desc):
        self.h, self.t, self.desc = h, t, desc

    def __repr__(self):
        return f"<{self.desc}>"


@dataclass
class Env:
    """What generators of a second operand need: the library, the current handle, and the
    list of handles to release when the chain ends."""
    L: "Lib"
    h: int
    owned: list


def torch_shares(a, b):
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


def same_data(a, b):
    """torch's copy_ early exit: the same elements in the same dtype (nothing to do)."""
    return (torch_shares(a, b) and a.storage_offset() == b.storage_offset()
            and a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype)


def contiguous_strides(sizes):
    st, acc = [0] * len(sizes), 1
    for d in range(len(sizes) - 1, -1, -1):
        st[d] = acc
        acc *= max(sizes[d], 1)
    return st


def broadcastable_shape(rng, shape):
    """Mostly a shape that broadcasts to `shape`; sometimes one that does not."""
    s = list(shape)
    r = rng.random()
    if r < 0.4:
        return s
    if r < 0.8:
        if s and rng.random() < 0.5:
            s = s[rng.randint(0, len(s)):]
        return [1 if rng.random() < 0.3 else n for n in s]
    if r < 0.9:
        return [rng.choice([2, 3])] + s  # dst never broadcasts
    return [rng.choice([0, 1, 2, 3, 4]) for _ in range(rng.randint(0, 4))]


def fresh_other(rng, env, sizes):
    flat, base, t, desc = build_base(env.L, rng, sizes)
    env.owned += [flat, base]
    return Other(base, t, desc)


def shifted_other(rng, t, env, sizes):
    """A tensor over the current tensor's own storage, at a random offset (it may overlap
    the current tensor's elements), or None when it does not fit."""
    n_elems = t.untyped_storage().nbytes() // t.element_size()
    strides = contiguous_strides(sizes)
    if len(sizes) >= 2 and rng.random() < 0.3:
        strides[0], strides[-1] = strides[-1], strides[0]
    extent = 1 + sum((n - 1) * s for n, s in zip(sizes, strides)) if all(sizes) else 0
    if extent > n_elems:
        return None
    off = rng.randint(0, n_elems - extent)
    L = env.L
    st, h = L.call(L.as_strided, env.h, I(sizes), I(strides), len(sizes), off)
    if st != OK:
        raise Divergence(f"as_strided({sizes}, {strides}, {off}) for copy_'s src: {L.error()}")
    env.owned.append(h)
    src = t.as_strided(sizes, strides, off)
    desc = f"src over dst's storage: sizes {sizes} strides {strides} offset {off}"
    same_size = [d for d, _ in DTYPES if d != t.dtype
                 and torch.empty((), dtype=d).element_size() == t.element_size()]
    if same_size and rng.random() < 0.3:  # the same bytes read as another dtype: converts
        d = rng.choice(same_size)
        st, h = L.call(L.view_dtype, h, CODE_OF[d])
        if st != OK:
            raise Divergence(f"view_dtype({d}) for copy_'s src: {L.error()}")
        env.owned.append(h)
        src, desc = src.view(d), f"{desc} viewed as {d}"
        if out_of_range(src, t.dtype):
            return None
    return Other(h, src, desc)


def gen_copy(rng, t, env):
    r = rng.random()
    if r < 0.04:
        return (Other(env.h, t, "dst itself"),)
    if r < 0.08:
        st, h = env.L.call(env.L.alias, env.h)
        env.owned.append(h)
        return (Other(h, torch.ops.aten.alias(t), "alias of dst"),)
    sizes = broadcastable_shape(rng, t.shape)
    if r < 0.35:
        o = shifted_other(rng, t, env, sizes)
        if o is not None:
            return (o,)
    return (fresh_other(rng, env, sizes),)


def gen_equal(rng, t, env):
    L, r = env.L, rng.random()
    if r < 0.15:
        return (Other(env.h, t, "itself"),)
    if r < 0.5:
        d = rng.choice(DTYPES)[0]
        if not out_of_range(t, d):
            st, h = L.call(L.to_dtype, env.h, CODE_OF[d])
            if st != OK:
                raise Divergence(f"to_dtype({d}) for equal's b: {L.error()}")
            env.owned.append(h)
            return (Other(h, t.to(d), f"to({d})"),)
    sizes = list(t.shape) if rng.random() < 0.7 else broadcastable_shape(rng, t.shape)
    return (fresh_other(rng, env, sizes),)


def out_of_range(src, dtype):
    """Whether converting `src` to `dtype` is a float -> int conversion of a value outside
    the target's range (or NaN / inf): defined in libtensor (saturating, as Rust's `as`;
    docs/shape-rules.md "Copies"), undefined behaviour in torch (wraps on x86)."""
    if dtype not in INT_RANGE or not (src.is_floating_point() or src.is_complex()):
        return False
    if src.numel() == 0:
        return False
    v = (src.real if src.is_complex() else src).double()
    if not bool(v.isfinite().all()):
        return True
    lo, hi = INT_RANGE[dtype]
    tv = v.trunc()
    return bool((tv < float(lo)).any() or (tv >= float(hi)).any())


SATURATE = ("float -> int conversion of an out-of-range value, NaN or inf: libtensor saturates "
            "(Rust `as`, docs/shape-rules.md 'Copies'), torch is undefined behaviour; not applied")


def known_to_dtype(L, h, t, d):
    return note(f"to_dtype: {SATURATE}") if out_of_range(t, d) else None


def known_copy(L, h, t, o):
    if out_of_range(o.t, t.dtype):
        return note(f"copy_: {SATURATE}")
    if aliasing(t) and not self_aliasing(t):
        # elements written more than once get whichever value is written last: torch's
        # order (TensorIterator's dim reordering) is not part of its contract, nor ours
        return note("copy_: dst's elements alias each other with no stride-0 dim (e.g. "
                    "unfold with step < size): torch cannot tell (has_internal_overlap TOO_HARD) "
                    "and writes in an unspecified order; not applied")
    return None


def aliasing(t):
    """Whether two elements of `t` share memory (exact: enumerates the offsets)."""
    if t.numel() < 2 or torch.ops.aten.is_non_overlapping_and_dense(t):
        return False
    extent = t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    offsets = torch.arange(extent).as_strided(t.shape, t.stride(), t.storage_offset())
    return offsets.unique().numel() != t.numel()


def self_aliasing(t):
    """torch's has_internal_overlap == YES (a tensor with no elements is dense: never)."""
    return (not torch.ops.aten.is_non_overlapping_and_dense(t)
            and any(n > 1 and s == 0 for n, s in zip(t.shape, t.stride())))


def known_fill(lib_fn):
    def known(L, h, t, v):
        try:  # a probe (torch's 1-element fast path skips some range checks: mirror it)
            torch.empty(1 if t.numel() == 1 else 2, dtype=t.dtype).fill_(v)
        except RuntimeError as e:
            if "cannot be converted to type" in str(e):
                return note("fill_: torch refuses a value its checked Scalar conversion finds out "
                            "of the dtype's range; libtensor converts it by its conversion rules "
                            "(saturating / wrapping / inf, docs/shape-rules.md 'Copies'); not applied")
            raise
        return None
    return known


def torch_copy(t, o):
    src = o.t
    if torch_shares(t, src) and not same_data(t, src):
        # torch refuses a src that partially overlaps dst (or, when it cannot tell, gives an
        # order-dependent result); libtensor copies from a snapshot of src (docs/shape-rules.md):
        # compare with torch copying from a clone.
        note("copy_: src shares dst's storage: torch refuses a partial overlap (or is "
             "order-dependent); libtensor copies from a snapshot; compared with "
             "dst.copy_(src.clone())")
        src = src.clone()
    return t.copy_(src)


def lib_equal(L, h, o):
    out = C.c_bool()
    status = L.equal(h, o.h, C.byref(out))
    return status, (bool(out.value) if status == OK else None)


def check_shares(L, h, t, h2, t2, args):
    ours, theirs = bool(L.shares_storage(h2, h)), torch_shares(t2, t)
    if ours != theirs:
        raise Divergence(f"shares the input's storage: libtensor {ours}, torch {theirs}")


def check_same_handle(L, h, t, h2, t2, args):
    check_shares(L, h, t, h2, t2, args)
    if (h2 == h) != (t2 is t):
        raise Divergence(f"returns the input itself: libtensor {h2 == h}, torch {t2 is t}")


def sync_uninitialised(L, h, t, h2, t2, args):
    """empty_like's elements are garbage on both sides: make torch's bytes libtensor's so the
    rest of the chain compares values."""
    check_shares(L, h, t, h2, t2, args)
    s = L.storage(h2)
    n = L.storage_nbytes(s)
    if n != t2.untyped_storage().nbytes():
        raise Divergence(f"storage nbytes: libtensor {n}, torch {t2.untyped_storage().nbytes()}")
    if n:
        C.memmove(t2.untyped_storage().data_ptr(), L.storage_data_ptr(s), n)


# ---- the op table ---------------------------------------------------------------------------

@dataclass
class Op:
    name: str
    gen: Callable          # (rng, torch tensor) -> args tuple; (rng, t, Env) with `env`
    torch: Callable        # (torch tensor, *args) -> torch tensor (or bool for "bool" ops)
    lib: Callable          # (Lib, handle, *args) -> (status, handle or bool)
    view: bool = True      # the result always shares the input's storage and version counter
    kind: str = "tensor"   # "tensor": a new handle; "inplace": writes the input; "bool"
    env: bool = False      # gen takes an Env (it builds a second operand)
    known: Callable = None  # (Lib, handle, t, *args) -> reason: a documented divergence, skip
    check: Callable = None  # (Lib, h, t, h2, t2, args): more checks on a new result
    values: bool = True    # compare element values of the result


I = Lib.ints
FMT = FORMAT_CODE
OPS = [
    Op("view", gen_view, lambda t, s: t.view(s),
       lambda L, h, s: L.call(L.view, h, I(s), len(s))),
    Op("view_dtype", gen_view_dtype, lambda t, d: t.view(d),
       lambda L, h, d: L.call(L.view_dtype, h, CODE_OF[d])),
    Op("as_strided", gen_as_strided, lambda t, n, s, o: t.as_strided(n, s, o),
       lambda L, h, n, s, o: L.call(L.as_strided, h, I(n), I(s), len(n), o)),
    Op("transpose", gen_dims2, lambda t, a, b: t.transpose(a, b),
       lambda L, h, a, b: L.call(L.transpose, h, a, b)),
    Op("t", gen_none, lambda t: t.t(), lambda L, h: L.call(L.transpose_2d, h)),
    Op("permute", gen_permute, lambda t, d: t.permute(d),
       lambda L, h, d: L.call(L.permute, h, I(d), len(d))),
    Op("movedim", gen_dims2, lambda t, a, b: t.movedim(a, b),
       lambda L, h, a, b: L.call(L.movedim, h, a, b)),
    Op("slice", gen_slice, lambda t, d, a, b, s: torch.ops.aten.slice(t, d, a, b, s),
       lambda L, h, d, a, b, s: L.call(L.slice, h, d, a, b, s)),
    Op("narrow", gen_narrow, lambda t, d, a, n: t.narrow(d, a, n),
       lambda L, h, d, a, n: L.call(L.narrow, h, d, a, n)),
    Op("select", gen_select, lambda t, d, i: t.select(d, i),
       lambda L, h, d, i: L.call(L.select, h, d, i)),
    Op("squeeze", gen_none, lambda t: t.squeeze(), lambda L, h: L.call(L.squeeze, h)),
    Op("squeeze_dim", gen_dim, lambda t, d: t.squeeze(d),
       lambda L, h, d: L.call(L.squeeze_dim, h, d)),
    Op("unsqueeze", gen_unsqueeze, lambda t, d: t.unsqueeze(d),
       lambda L, h, d: L.call(L.unsqueeze, h, d)),
    Op("expand", gen_expand, lambda t, s: t.expand(s),
       lambda L, h, s: L.call(L.expand, h, I(s), len(s))),
    Op("unflatten", gen_unflatten, lambda t, d, s: torch.ops.aten.unflatten(t, d, s),
       lambda L, h, d, s: L.call(L.unflatten, h, d, I(s), len(s))),
    Op("diagonal", gen_diagonal, lambda t, o, a, b: t.diagonal(o, a, b),
       lambda L, h, o, a, b: L.call(L.diagonal, h, o, a, b)),
    Op("unfold", gen_unfold, lambda t, d, n, s: t.unfold(d, n, s),
       lambda L, h, d, n, s: L.call(L.unfold, h, d, n, s)),
    Op("alias", gen_none, lambda t: torch.ops.aten.alias(t), lambda L, h: L.call(L.alias, h)),
    Op("detach", gen_none, lambda t: t.detach(), lambda L, h: L.call(L.detach, h)),
    # copies: results that are views exactly when torch's are, copies, in-place writes
    Op("reshape", gen_view, lambda t, s: t.reshape(s),
       lambda L, h, s: L.call(L.reshape, h, I(s), len(s)), view=False, check=check_shares),
    # flatten(s == e): torch returns self, libtensor a new alias (lead's decision): only
    # storage sharing is compared, not handle identity
    Op("flatten", gen_flatten, lambda t, a, b: t.flatten(a, b),
       lambda L, h, a, b: L.call(L.flatten, h, a, b), view=False, check=check_shares),
    Op("contiguous", gen_contiguous_fmt, lambda t, f: t.contiguous(memory_format=f),
       lambda L, h, f: L.call(L.contiguous, h, FMT[f]), view=False, check=check_same_handle),
    Op("clone", gen_fmt, lambda t, f: t.clone(memory_format=f),
       lambda L, h, f: L.call(L.clone, h, FMT[f]), view=False, check=check_shares),
    Op("empty_like", gen_fmt, lambda t, f: torch.empty_like(t, memory_format=f),
       lambda L, h, f: L.call(L.empty_like, h, FMT[f]), view=False, check=sync_uninitialised,
       values=False),
    Op("to_dtype", gen_view_dtype, lambda t, d: t.to(d),
       lambda L, h, d: L.call(L.to_dtype, h, CODE_OF[d]), view=False, known=known_to_dtype,
       check=check_same_handle),
    Op("repeat", gen_repeat, lambda t, r: t.repeat(r),
       lambda L, h, r: L.call(L.repeat, h, I(r), len(r)), view=False, check=check_shares),
    Op("copy_", gen_copy, torch_copy, lambda L, h, o: (L.copy_(h, o.h), None), kind="inplace",
       env=True, known=known_copy),
    Op("fill_f64", gen_fill_f64, lambda t, v: t.fill_(float(v)),
       lambda L, h, v: (L.fill_f64(h, v), None), kind="inplace", known=known_fill("fill_f64")),
    Op("fill_i64", gen_fill_i64, lambda t, v: t.fill_(int(v)),
       lambda L, h, v: (L.fill_i64(h, v), None), kind="inplace", known=known_fill("fill_i64")),
    Op("equal", gen_equal, lambda t, o: torch.equal(t, o.t), lib_equal, kind="bool", env=True),
]


# ---- the status each torch refusal must map to (docs/c-api.md, Errors) ------------------------

# (substring of torch's message, allowed libtensor statuses); the first match decides.
STATUS_OF_MESSAGE = [
    ("Dimension out of range", {INDEX}),
    ("cannot be applied to a 0-dim tensor", {INDEX}),
    ("select(): index", {INDEX}),
    ("start out of range", {INDEX}),
    ("exceeds dimension size", {INDEX}),
    ("Dimension specified as", {INDEX}),
    ("slice step must be positive", {INVALID_ARGUMENT}),
    ("length must be non-negative", {INVALID_ARGUMENT}),
    ("duplicate dims are not allowed", {INVALID_ARGUMENT}),
    ("does not match the length of the desired ordering", {INVALID_ARGUMENT}),
    ("t() expects a tensor with <= 2 dimensions", {SHAPE}),
    ("must match the existing size", {SHAPE}),
    ("isn't allowed in a leading, non-existing dimension", {INVALID_ARGUMENT}),
    ("the number of sizes provided", {SHAPE}),
    ("numel: integer multiplication overflow", {INVALID_ARGUMENT}),  # expand to a size < -1
    ("sizes must be non-empty", {INVALID_ARGUMENT}),
    ("don't multiply up to the size of dim", {SHAPE}),
    ("only one dimension can be inferred", {INVALID_ARGUMENT}),
    ("invalid shape dimension", {INVALID_ARGUMENT}),
    ("is ambiguous", {SHAPE}),
    ("is invalid for input of size", {SHAPE}),
    ("view size is not compatible with input tensor's size and stride", {NOT_VIEWABLE}),
    ("diagonal dimensions cannot be identical", {INVALID_ARGUMENT}),
    ("maximum size for tensor at dimension", {SHAPE}),
    ("but must be >= 0", {INVALID_ARGUMENT}),
    ("but must be > 0", {INVALID_ARGUMENT}),
    ("(different element sizes)", {SHAPE}),
    ("Negative strides are not supported", {INVALID_ARGUMENT}),
    ("invalid storage offset", {INVALID_ARGUMENT}),
    # torch reports a negative size as an overflow or even as out of bounds
    ("Storage size calculation overflowed", {OVERFLOW, INVALID_ARGUMENT}),
    ("setStorage:", {OUT_OF_BOUNDS, INVALID_ARGUMENT}),
    # copies
    ("start_dim cannot come after end_dim", {INVALID_ARGUMENT}),
    ("required rank 4 tensor to use channels_last format", {INVALID_ARGUMENT}),
    ("required rank 5 tensor to use channels_last_3d format", {INVALID_ARGUMENT}),
    ("Number of dimensions of repeat dims can not be smaller", {INVALID_ARGUMENT}),
    ("Trying to create tensor with negative dimension", {INVALID_ARGUMENT}),
    ("more than one element of the written-to tensor refers to a single memory location",
     {OVERLAP}),
    ("doesn't match the broadcast shape", {SHAPE}),
    ("must match the size of tensor", {SHAPE}),
    ("Promotion for uint16, uint32, uint64 types is not supported", {DTYPE_ERR}),
    ("preserve memory format is unsupported", {INVALID_ARGUMENT}),
]


def expected_statuses(message):
    for pattern, statuses in STATUS_OF_MESSAGE:
        if pattern in message:
            return statuses
    return None


# ---- bases --------------------------------------------------------------------------------

def random_base(rng, sizes=None):
    """(dtype, sizes, strides, offset, storage elements, description); random sizes unless
    given."""
    dtype = rng.choice(DTYPES)[0]
    if sizes is None and rng.random() < 0.08:
        # a few bigger ones reach the engine's blocked / vectorised paths (ragged edges)
        sizes = [rng.randint(5, 40) for _ in range(rng.choice([1, 2, 2, 3]))]
        while math.prod(sizes) > 6000:
            sizes[rng.randrange(len(sizes))] //= 2
    elif sizes is None:
        nd = rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5])
        sizes = [rng.choice([0] + [1, 2, 3, 4] * 5) for _ in range(nd)]
    nd = len(sizes)
    kind = rng.choice(["contiguous", "channels_last", "permuted", "gapped", "expanded"])
    if kind == "channels_last" and nd == 4:
        order = [1, 3, 2, 0]
    elif kind == "channels_last" and nd == 5:
        order = [1, 4, 3, 2, 0]
    elif kind in ("permuted", "gapped", "expanded"):
        order = list(range(nd))
        rng.shuffle(order)
    else:
        kind, order = "contiguous", list(range(nd - 1, -1, -1))
    strides, acc = [0] * nd, 1
    for d in order:  # innermost first
        gap = rng.choice([1, 2, 3]) if kind == "gapped" else 1
        strides[d] = acc * gap
        acc = strides[d] * max(sizes[d], 1)
    if kind == "expanded":
        for d in range(nd):
            if rng.random() < 0.4:
                strides[d] = 0
    offset = rng.choice([0, 0, 1, 3])
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides)) if all(sizes) else offset
    n_elems = extent + rng.choice([0, 0, 2])
    return dtype, sizes, strides, offset, max(n_elems, 1), kind


def build_base(L, rng, sizes=None):
    """A random base built identically on both sides over the same bytes (an arange):
    (libtensor storage-owning flat tensor, libtensor base, torch base, description)."""
    dtype, sizes, strides, offset, n_elems, kind = random_base(rng, sizes)
    itemsize = torch.empty((), dtype=dtype).element_size()
    st, flat = L.call(L.arange, n_elems, CODE_OF[dtype])
    assert st == OK, L.error()
    st, base = L.call(L.from_storage, L.storage(flat), offset, I(sizes), I(strides),
                      len(sizes), CODE_OF[dtype])
    assert st == OK, L.error()
    raw = bytearray(C.string_at(L.data_ptr(flat), n_elems * itemsize))
    t = torch.frombuffer(raw, dtype=dtype).as_strided(sizes, strides, offset)
    desc = (f"{kind} {dtype} sizes {sizes} strides {strides} offset {offset} "
            f"(storage of {n_elems})")
    return flat, base, t, desc


def known_divergence(name, t2, terr, status, args):
    """Deliberate, documented differences from torch met after running both sides; each
    returns its reason. (Those decided before running are the ops' `known` hooks.)"""
    if (isinstance(t2, torch.Tensor) and any(n < 0 for n in t2.shape)
            and status == INVALID_ARGUMENT):
        # torch.as_strided accepts a negative size when another size is 0 (its storage-size
        # check short-cuts on the 0), building a tensor of shape e.g. [-1, 0]; libtensor
        # refuses every negative size.
        return f"{name}: torch builds a tensor with a negative size; libtensor refuses it"
    if (name == "contiguous" and args[0] == torch.preserve_format and terr is None
            and status == INVALID_ARGUMENT):
        # the lead's decision: contiguous(PRESERVE) is meaningless (contiguous in which
        # format?); torch accepts it and returns the tensor unchanged or a preserve-clone
        return ("contiguous(preserve): torch accepts it; libtensor refuses it deliberately "
                "(INVALID_ARGUMENT, docs/shape-rules.md 'Copies')")
    return None


class Divergence(Exception):
    pass


def same_value(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def torch_value(t, idx):
    v = t[tuple(idx)].item()
    if isinstance(v, complex):
        v = v.real
    return float(v)


def compare(L, h, t, base_h, rng, values=True):
    """Raises Divergence when the libtensor handle `h` differs from the torch tensor `t`
    (and, with `base_h`, when `h` does not share base_h's storage and version counter)."""
    sizes, strides, off = L.geometry(h)
    if sizes != list(t.shape) or strides != list(t.stride()) or off != t.storage_offset():
        raise Divergence(f"geometry: libtensor sizes {sizes} strides {strides} offset {off}; "
                         f"torch sizes {list(t.shape)} strides {list(t.stride())} "
                         f"offset {t.storage_offset()}")
    if DTYPE_OF.get(L.dtype(h)) != t.dtype:
        raise Divergence(f"dtype: libtensor code {L.dtype(h)}, torch {t.dtype}")
    flags = [
        ("is_contiguous", L.is_contiguous(h, CONTIGUOUS_FORMAT), t.is_contiguous()),
        ("is_contiguous(channels_last)", L.is_contiguous(h, CHANNELS_LAST),
         t.is_contiguous(memory_format=torch.channels_last)),
        ("is_contiguous(channels_last_3d)", L.is_contiguous(h, CHANNELS_LAST_3D),
         t.is_contiguous(memory_format=torch.channels_last_3d)),
        ("is_non_overlapping_and_dense", L.is_non_overlapping_and_dense(h),
         bool(torch.ops.aten.is_non_overlapping_and_dense(t))),
    ]
    for name, ours, theirs in flags:
        if ours != theirs:
            raise Divergence(f"{name}: libtensor {ours}, torch {theirs}")
    # torch's suggest_memory_format is not bound in Python; torch._prims_common has a port of
    # it over the same strides-like rules (c10's is_channels_last_strides_2d / _3d).
    ours = L.suggest_memory_format(h)
    theirs = SUGGEST_CODE[suggest_memory_format(t)]
    if ours != theirs:
        raise Divergence(f"suggest_memory_format: libtensor {ours}, torch {theirs}")
    if base_h is not None and (not L.shares_storage(h, base_h)
                               or L.version(h) != L.version(base_h)):
        raise Divergence("the view does not share its base's storage and version counter")
    numel = t.numel()
    if numel and values:
        picks = range(numel) if numel <= 24 else [rng.randrange(numel) for _ in range(24)]
        for k in picks:
            idx, q = [], k
            for n in reversed(t.shape):
                idx.append(q % n)
                q //= n
            idx.reverse()
            ours, theirs = L.get(h, idx), torch_value(t, idx)
            if not same_value(ours, theirs):
                raise Divergence(f"value at {idx}: libtensor {ours!r}, torch {theirs!r}")


def storage_bytes(ptr, n):
    return C.string_at(ptr, n) if n else b""


# the float dtype of each float / complex dtype's components, and a same-size int to compare bits
COMPONENT = {torch.complex64: torch.float32, torch.complex128: torch.float64}
BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def compare_storage(L, h, t):
    """Raises Divergence unless the whole storage under `h` holds the same bytes as the one
    under `t` (after a copy or an in-place write: this covers every element, and the bytes
    a write must leave alone). NaNs may differ in payload (lead's decision): where both
    sides hold a NaN of t's dtype the bytes may differ, and torch's are then made
    libtensor's so later steps keep comparing bytes."""
    s = L.storage(h)
    ours = storage_bytes(L.storage_data_ptr(s), L.storage_nbytes(s))
    ts = t.untyped_storage()
    theirs = storage_bytes(ts.data_ptr(), ts.nbytes())
    if len(ours) != len(theirs):
        raise Divergence(f"storage nbytes: libtensor {len(ours)}, torch {len(theirs)}")
    if ours == theirs:
        return
    comp = COMPONENT.get(t.dtype, t.dtype)
    isz = torch.empty((), dtype=comp).element_size()
    k = len(ours) // isz * isz
    if (comp.is_floating_point and isz in BITS and ours[k:] == theirs[k:]
            and not torch_differ_except_nan(ours[:k], theirs[:k], comp, isz)):
        note("NaN payloads differ (lead's decision: compare NaN as NaN); torch's bytes then "
             "made libtensor's")
        C.memmove(ts.data_ptr(), ours, len(ours))
        return
    first = next(i for i in range(len(ours)) if ours[i] != theirs[i])
    e = first // t.element_size()
    raise Divergence(f"storage bytes differ from byte {first} (storage element {e} as "
                     f"{t.dtype}: libtensor {ours[e * t.element_size():][:t.element_size()].hex()}"
                     f", torch {theirs[e * t.element_size():][:t.element_size()].hex()})")


def torch_differ_except_nan(a, b, dtype, isz):
    x, y = torch.frombuffer(bytearray(a), dtype=dtype), torch.frombuffer(bytearray(b), dtype=dtype)
    differ = x.view(BITS[isz]) != y.view(BITS[isz])
    return bool((differ & ~(x.isnan() & y.isnan())).any())


def fmt_args(args):
    named = (torch.dtype, torch.memory_format)
    return ", ".join("torch." + str(a).split(".")[-1] if isinstance(a, named)
                     else repr(a) if isinstance(a, (Other, float))
                     else ("INT64_MAX" if a == INT64_MAX else
                           "INT64_MIN" if a == -INT64_MAX - 1 else repr(a)) for a in args)


# ---- tensor_copy_affine_ ------------------------------------------------------------------

AFFINE_SCALES = [1.0, -1.0, 0.5, 2.0, 0.0, 3.7, -0.01, 1 / 255, 1 / (255 * 0.229)]
AFFINE_SHIFTS = [0.0, 0.5, -2.1179039301310043, 10.0, -1000.5, 127.3, -0.485 / 0.229]
# one rounding of each float output type (its machine epsilon)
EPS = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7,
       torch.float64: 2.0**-52}


def affine_reference(src, dst_dtype, dim_pos, nd, scale, shift):
    """PyTorch's result for copy_affine_ and its tolerance (both shaped like dst)."""
    shape = [1] * nd
    if len(scale) > 1:
        shape[dim_pos] = len(scale)
    if dst_dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = src.to(torch.float32)
        sc = torch.tensor(scale, dtype=torch.float32).view(shape)
        sh = torch.tensor(shift, dtype=torch.float32).view(shape)
        prod = x * sc
        ref32 = prod + sh
        ref = ref32.to(dst_dtype).to(torch.float64)
        tol = EPS[torch.float32] * (prod.abs() + sh.abs() + ref32.abs()).to(torch.float64)
        if dst_dtype != torch.float32:
            tol = tol + EPS[dst_dtype] * ref.abs() + 1e-7  # + one rounding to the output type
        return ref, tol
    x = src.to(torch.float64)
    v = x * torch.tensor(scale, dtype=torch.float64).view(shape) \
        + torch.tensor(shift, dtype=torch.float64).view(shape)
    if dst_dtype == torch.float64:
        return v, EPS[torch.float64] * (v.abs() + 1)
    if dst_dtype == torch.bool:
        return (v != 0).to(torch.float64), torch.zeros_like(v)
    lo, hi = INT_RANGE[dst_dtype]
    r = torch.where(v.isnan(), torch.zeros_like(v), v.trunc()).clamp(min=float(lo))
    if hi <= 2**53:
        r = r.clamp(max=float(hi - 1))
    return r, torch.zeros_like(v)


def lib_storage_tensor(L, flat, t):
    """libtensor's current bytes under the torch tensor t's layout (a torch tensor)."""
    s = L.storage(flat)
    raw = bytearray(storage_bytes(L.storage_data_ptr(s), L.storage_nbytes(s)))
    whole = torch.frombuffer(raw, dtype=t.dtype) if raw else torch.empty(0, dtype=t.dtype)
    return whole, whole.as_strided(t.shape, t.stride(), t.storage_offset())


def affine_case(L, rng):
    """One random tensor_copy_affine_ call checked against PyTorch; raises Divergence."""
    dflat, dh, dt, ddesc = build_base(L, rng)
    owned = [dflat, dh]
    try:
        nd = dt.dim()
        sizes = broadcastable_shape(rng, dt.shape)
        sflat, sh_, st_, sdesc = build_base(L, rng, sizes)
        owned += [sflat, sh_]
        dim = rng.randint(-max(nd, 1) - 1, max(nd, 1)) if rng.random() < 0.1 else \
            rng.randint(-max(nd, 1), max(nd, 1) - 1)
        dim_ok = -max(nd, 1) <= dim <= max(nd, 1) - 1
        dpos = (dim % max(nd, 1)) if dim_ok else 0
        size = dt.shape[dpos] if nd else 1
        r = rng.random()
        n = 1 if r < 0.3 else size if r < 0.9 else rng.choice([0, 2, 3, size + 1])
        cnt = max(n, 0)
        scale = [rng.choice(AFFINE_SCALES) for _ in range(cnt)]
        shift = [rng.choice(AFFINE_SHIFTS) for _ in range(cnt)]
        ctx = (f"dst {ddesc}; src {sdesc}; dim {dim}, n {n}, scale {scale}, shift {shift}")
        complex_ = dt.is_complex() or st_.is_complex()
        try:
            broadcasts = list(torch.broadcast_shapes(st_.shape, dt.shape)) == list(dt.shape)
        except RuntimeError:
            broadcasts = False
        want = (INDEX if not dim_ok else
                INVALID_ARGUMENT if not (n == 1 or n == size) else
                DTYPE_ERR if complex_ else
                OVERLAP if self_aliasing(dt) else
                SHAPE if not broadcasts else OK)
        before = storage_bytes(L.storage_data_ptr(L.storage(dflat)), L.storage_nbytes(L.storage(dflat)))
        v0 = L.version(dh)
        D = C.c_double * max(cnt, 1)
        status = L.copy_affine_(dh, sh_, dim, D(*scale), D(*shift), n)
        if status != want:
            raise Divergence(f"copy_affine_ status {STATUS_NAMES.get(status, status)} "
                             f"({L.error() if status else 'ok'}), expected {STATUS_NAMES[want]}: {ctx}")
        after = storage_bytes(L.storage_data_ptr(L.storage(dflat)), L.storage_nbytes(L.storage(dflat)))
        if status != OK:
            if after != before or L.version(dh) != v0:
                raise Divergence(f"a refused copy_affine_ wrote dst or bumped its version: {ctx}")
            return STATUS_NAMES[status]
        if L.version(dh) != v0 + 1:
            raise Divergence(f"copy_affine_ bumped the version {L.version(dh) - v0} times: {ctx}")
        whole, ours = lib_storage_tensor(L, dflat, dt)
        # every byte outside dst's elements unchanged
        orig = torch.frombuffer(bytearray(before), dtype=dt.dtype) if before else torch.empty(0, dtype=dt.dtype)
        orig.as_strided(dt.shape, dt.stride(), dt.storage_offset()).copy_(ours)
        if orig.numel() and not torch.equal(orig.view(torch.uint8), whole.view(torch.uint8)):
            raise Divergence(f"copy_affine_ wrote outside dst's elements: {ctx}")
        ref, tol = affine_reference(st_, dt.dtype, dpos, nd, scale or [0.0], shift or [0.0])
        got = ours.to(torch.float64)
        bad = (got - ref).abs() > tol
        bad &= ~(got.isnan() & ref.isnan())
        if bool(bad.any()):
            i = bad.nonzero()[0].tolist()
            raise Divergence(f"copy_affine_ value at {i}: libtensor {got[tuple(i)].item()!r}, "
                             f"torch {ref[tuple(i)].item()!r} (tolerance {tol[tuple(i)].item():.3g}): {ctx}")
        return f"OK {dt.dtype} <- {st_.dtype}".replace("torch.", "")
    finally:
        for h in owned:
            L.release(h)


def affine_image_case(L, rng):
    """The preprocessing case: uint8 HWC -> permute -> float32 CHW, ImageNet mean/std,
    against the torch chain users write."""
    H, W = rng.randint(1, 40), rng.randint(1, 40)
    x = torch.randint(0, 256, (H, W, 3), dtype=torch.uint8)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    st, img = L.call(L.empty, I([H, W, 3]), 3, CODE_OF[torch.uint8])
    assert st == OK, L.error()
    C.memmove(L.data_ptr(img), bytes(x.numpy().tobytes()), H * W * 3)
    owned = [img]
    try:
        st, chw = L.call(L.permute, img, I([2, 0, 1]), 3)
        owned.append(chw)
        st, out = L.call(L.empty, I([3, H, W]), 3, CODE_OF[torch.float32])
        owned.append(out)
        scale = [1 / (255 * s) for s in std]
        shift = [-m / s for m, s in zip(mean, std)]
        D = C.c_double * 3
        st = L.copy_affine_(out, chw, 0, D(*scale), D(*shift), 3)
        if st != OK:
            raise Divergence(f"copy_affine_ (image {H}x{W}) failed: {L.error()}")
        ours = torch.frombuffer(bytearray(C.string_at(L.data_ptr(out), 3 * H * W * 4)),
                                dtype=torch.float32).view(3, H, W).double()
        chain = x.permute(2, 0, 1).float().div(255).sub(torch.tensor(mean).view(3, 1, 1)) \
            .div(torch.tensor(std).view(3, 1, 1)).double()
        xs = x.permute(2, 0, 1).double() * torch.tensor(scale, dtype=torch.float64).view(3, 1, 1)
        tol = EPS[torch.float32] * (xs.abs() + torch.tensor(shift, dtype=torch.float64).abs().view(3, 1, 1)
                                    + chain.abs())
        bad = (ours - chain).abs() > tol
        if bool(bad.any()):
            i = bad.nonzero()[0].tolist()
            raise Divergence(f"copy_affine_ image {H}x{W} at {i}: libtensor {ours[tuple(i)].item()!r}, "
                             f"torch chain {chain[tuple(i)].item()!r}")
        return "OK image"
    finally:
        for h in owned:
            L.release(h)


def affine_cases(L, rng, count):
    passed = failed = 0
    outcomes = {}
    for k in range(count):
        try:
            what = (affine_image_case if k % 10 == 0 else affine_case)(L, rng)
            key = what if not what.startswith("OK ") or what == "OK image" else "OK"
            outcomes[key] = outcomes.get(key, 0) + 1
            passed += 1
        except Divergence as d:
            failed += 1
            print("DIVERGENCE:", d, file=sys.stderr)
    print("copy_affine_ outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    return passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default="target/debug/libtensor.so")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-chain", type=int, default=6)
    ap.add_argument("--affine-cases", type=int, default=600,
                    help="random tensor_copy_affine_ cases checked against PyTorch")
    ap.add_argument("--messages", action="store_true",
                    help="list the distinct error messages whose wording differs from torch's")
    opts = ap.parse_args()
    warnings.filterwarnings("ignore")  # "Casting complex values to real discards ..."
    L = Lib(opts.lib)
    rng = random.Random(opts.seed)
    torch.manual_seed(opts.seed)
    passed = failed = steps = 0
    op_counts = {op.name: [0, 0] for op in OPS}  # [ok, error] per op
    wording = {}
    unmapped = set()
    while steps < opts.steps:
        flat, base, t, desc = build_base(L, rng)
        chain = [f"base {desc}"]
        h = L.call(L.alias, base)[1]
        shares_with = base
        env = Env(L, h, [])
        try:
            compare(L, h, t, shares_with, rng)
            for _ in range(rng.randint(1, opts.max_chain)):
                if steps >= opts.steps:
                    break
                steps += 1
                op = rng.choice(OPS)
                env.h = h
                args = op.gen(rng, t, env) if op.env else op.gen(rng, t)
                chain.append(f"{op.name}({fmt_args(args)})")
                if op.known and op.known(L, h, t, *args):
                    passed += 1
                    continue
                versions = (L.version(h), t._version)
                try:
                    t2, terr = op.torch(t, *args), None
                except (RuntimeError, IndexError, ValueError, TypeError) as e:
                    t2, terr = None, e
                status, h2 = op.lib(L, h, *args)
                reason = known_divergence(op.name, t2, terr, status, args)
                if reason:
                    note(reason)
                    if op.kind == "inplace" and (terr is None or status == OK):
                        break  # one side has written: the two no longer hold the same bytes
                    passed += 1
                    continue
                if (terr is None) != (status == OK):
                    ours = STATUS_NAMES.get(status, status)
                    detail = L.error() if status != OK else "succeeded"
                    theirs = f"{type(terr).__name__}: {str(terr).splitlines()[0]}" if terr else "succeeded"
                    if h2 and op.kind == "tensor":
                        L.release(h2)
                    raise Divergence(f"error-or-not: libtensor {ours} ({detail}); torch {theirs}")
                if terr is not None:
                    op_counts[op.name][1] += 1
                    if op.kind == "inplace" and (L.version(h), t._version) != versions:
                        raise Divergence(f"a failed in-place op bumped the version: "
                                         f"{versions} -> {(L.version(h), t._version)}")
                    if isinstance(terr, IndexError) and status != INDEX:
                        raise Divergence(f"torch raises IndexError ({terr}) but libtensor "
                                         f"returns {STATUS_NAMES.get(status)} ({L.error()})")
                    lines = str(terr).splitlines()
                    tmsg = lines[1] if "unexpected error" in lines[0] and len(lines) > 1 else lines[0]
                    allowed = expected_statuses(tmsg)
                    if allowed is None:
                        unmapped.add(tmsg)
                    elif status not in allowed:
                        raise Divergence(
                            f"status: torch refuses with {tmsg!r}, which maps to "
                            f"{sorted(STATUS_NAMES[a] for a in allowed)}, but libtensor returns "
                            f"{STATUS_NAMES.get(status, status)} ({L.error()})")
                    ours = L.error().split(": ", 1)[-1]
                    if tmsg not in ours:
                        wording.setdefault((op.name, tmsg), ours)
                    passed += 1
                    continue
                op_counts[op.name][0] += 1
                if op.kind == "bool":
                    if h2 != t2:
                        raise Divergence(f"result: libtensor {h2}, torch {t2}")
                    passed += 1
                    continue
                if op.kind == "inplace":
                    after = (L.version(h), t._version)
                    if not after[0] - versions[0] == after[1] - versions[1] == 1:
                        raise Divergence(f"version counter: libtensor {versions[0]} -> {after[0]}, "
                                         f"torch {versions[1]} -> {after[1]}")
                else:
                    old_h, old_t = h, t
                    h, t = h2, t2
                    try:
                        if op.check:
                            op.check(L, old_h, old_t, h, t, args)
                        if not op.view and shares_with is not None:
                            # a copy: later results need not share the base
                            shares_with = shares_with if L.shares_storage(h, shares_with) else None
                    finally:
                        L.release(old_h)
                compare(L, h, t, shares_with, rng, op.values)
                if not op.view:
                    compare_storage(L, h, t)
                passed += 1
        except Divergence as d:
            failed += 1
            print("DIVERGENCE:", d, file=sys.stderr)
            print("  chain: " + "\n      -> ".join(chain), file=sys.stderr)
        finally:
            L.release(h)
            for o in env.owned:
                L.release(o)
            L.release(base)
            L.release(flat)
    a_passed, a_failed = affine_cases(L, rng, opts.affine_cases)
    print(f"copy_affine_: {a_passed} cases agree with PyTorch, {a_failed} differ")
    passed, failed = passed + a_passed, failed + a_failed
    if opts.messages:
        for (name, tmsg), ours in sorted(wording.items()):
            print(f"wording {name}: torch {tmsg!r}\n{' ' * (10 + len(name))}ours  {ours!r}")
    summary = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in op_counts.items())
    print(f"ops (ok/error): {summary}")
    for reason, count in KNOWN.items():
        print(f"known divergence ({count}x): {reason}")
    for message in sorted(unmapped):
        print(f"torch message with no status mapping (add it to STATUS_OF_MESSAGE): {message!r}")
    print(f"error messages worded differently from torch's: {len(wording)} (see --messages)")
    print(f"conformance: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

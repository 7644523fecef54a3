"""float8 conversions of libtensor against PyTorch's, exhaustively where it is cheap.

    /path/to/python tests/float8_torch.py --lib target/debug/libtensor.so

For each of float8_e5m2, float8_e4m3fn, float8_e5m2fnuz, float8_e4m3fnuz, float8_e8m0fnu:
* decode: all 256 codes -> float32 (and -> bfloat16, float16, float64, int32, bool) equal
  torch's `.to()`, bit for bit with NaN positions equal;
* encode: float32 edge values (largest finite, the overflow boundary and ties around it,
  every subnormal and the ties between them, +-0, +-inf, NaN with both signs) plus every
  float32 whose low 16 bits are one of 0, 1, 0x7FFF, 0x8000, 0xFFFF (all 2^16 high
  halves: every exponent, and the ties and near-ties of every float8 mantissa), and the
  same for float64 / bfloat16 / float16 / int32 sources, equal torch's `.to(float8)`;
* float8 -> float8 for every pair of formats, all 256 codes;
* tensor_format of float8 and float4_e2m1fn_x2 tensors equals torch's repr().
Tensors go to libtensor and back through DLPack (so their bytes are compared exactly);
libtensor converts with tensor_to_dtype on contiguous (fast paths) and strided (per-item
rule) layouts. Prints "float8_torch: N passed, M failed".
"""

import argparse
import ctypes as C
import sys

import torch

from dlpack_torch import DTYPES, Exported, Lib, import_capsule

FLOAT8 = {code: dt for code, dt in DTYPES.items() if dt.is_floating_point and dt.itemsize == 1}
CODE = {dt: code for code, dt in DTYPES.items()}

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


def bits(x):
    """A tensor's bytes as integers of its item width (for exact comparison)."""
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if x.dtype == torch.bool:
        return x.to(torch.uint8)
    return x.contiguous().view(view[x.element_size()])


def same(a, b):
    """Equal bytes, except that any NaN equals any NaN (payloads and signs differ between
    implementations and mean nothing)."""
    if a.dtype.is_floating_point and a.element_size() > 1:
        na, nb = torch.isnan(a), torch.isnan(b)
        if not torch.equal(na, nb):
            return False
        a, b = a[~na], b[~nb]
    return torch.equal(bits(a), bits(b))


def first_diff(a, b, src):
    ba, bb = bits(a).flatten(), bits(b).flatten()
    for i in range(ba.numel()):
        if ba[i] != bb[i]:
            return f"at {i}: source {src.flatten()[i].item()!r} -> ours {ba[i].item():#x}, torch {bb[i].item():#x}"
    return "NaN positions differ"


def ours_to(L, x, code, strided):
    """x converted to our dtype `code` by libtensor, as a torch tensor (via DLPack)."""
    if strided:
        # A transposed view of a 2-d arrangement: the engine's per-item path.
        # (An odd count drops its last item: the view must be strided whatever the list.)
        n = x.numel() - x.numel() % 2
        x = x[:n].reshape(n // 2, 2).t()
        check(not x.is_contiguous(), f"a strided {x.dtype} source")
    st, t = import_capsule(L, x.__dlpack__(max_version=(1, 3)), True)
    L.ok(st, f"import {x.dtype}")
    out = C.c_void_p()
    L.ok(L.c.tensor_to_dtype(t, code, C.byref(out)), f"tensor_to_dtype {x.dtype} -> {code}")
    L.c.tensor_release(t)
    y = torch.from_dlpack(Exported(L, out.value))
    L.c.tensor_release(out.value)  # y's DLPack reference keeps it alive
    return x, y


def compare(L, x, dt, what):
    for strided in (False, True):
        xs, ours = ours_to(L, x, CODE[dt], strided)
        want = xs.to(dt)
        if not dt.is_floating_point and dt != torch.bool:
            # Out-of-range float -> int is undefined in C++ (torch gives INT_MIN on x86);
            # libtensor saturates, NaN -> 0 (dtype.rs): compare the in-range values only.
            v = xs.to(torch.float64)
            keep = torch.isfinite(v) & (v.abs() < 2.0 ** 31)
            ours, want = ours[keep], want[keep]
        ok = same(ours, want)
        check(ok, f"{what} -> {dt} ({'strided' if strided else 'contiguous'}): {'' if ok else first_diff(ours, want, xs)}")


def f32_edges():
    """Every float32 with low 16 bits in {0, 1, 0x7FFF, 0x8000, 0xFFFF}, and named edges."""
    hi = torch.arange(1 << 16, dtype=torch.int64) << 16
    parts = [hi | low for low in (0, 1, 0x7FFF, 0x8000, 0xFFFF)]
    u = torch.cat(parts)
    u = torch.where(u >= 1 << 31, u - (1 << 32), u).to(torch.int32)
    x = u.view(torch.float32)
    named = []
    for dt in FLOAT8.values():
        codes = torch.arange(256, dtype=torch.uint8).view(dt).to(torch.float32)
        fin = codes[torch.isfinite(codes)].unique()
        mids = (fin[1:] + fin[:-1]) / 2  # every tie (exact in float32)
        big = fin.abs().max()
        named += [fin, mids, torch.nextafter(mids, torch.tensor(float("inf"))),
                  torch.nextafter(mids, torch.tensor(float("-inf"))),
                  torch.tensor([big, -big, big * 1.0625, big * 1.125, big * 1.5, big * 2, -big * 1.0625])]
    named.append(torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), -float("nan"),
                               3.4028235e38, -3.4028235e38, 1e-45, -1e-45, 1.1754944e-38]))
    return torch.cat([x] + [n.to(torch.float32) for n in named])


def repr_matches(L):
    L.c.tensor_format.argtypes = [C.c_void_p, C.c_char_p, C.c_size_t]
    L.c.tensor_format.restype = C.c_size_t
    buf = C.create_string_buffer(1 << 16)
    values = torch.tensor([1.5, -2.25, float("nan"), 0.0, 1e6, 3e-3, -0.0, 240.0])
    for dt in list(FLOAT8.values()) + [torch.float4_e2m1fn_x2]:
        every = torch.arange(256, dtype=torch.uint8).view(dt)
        some = every[:8] if dt == torch.float4_e2m1fn_x2 else values.to(dt)
        for x in (some, every[::7], every.reshape(16, 16)):
            st, t = import_capsule(L, x.__dlpack__(max_version=(1, 3)), True)
            L.ok(st, f"import {dt}")
            L.c.tensor_format(t, buf, len(buf))
            ours = buf.value.decode()
            check(ours == repr(x), f"tensor_format {dt}:\n{ours}\n!=\n{x!r}")
            L.c.tensor_release(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="target/debug/libtensor.so")
    L = Lib(ap.parse_args().lib)
    codes = torch.arange(256, dtype=torch.uint8)
    x32 = f32_edges()
    x64 = torch.cat([x32.to(torch.float64),
                     # doubles a hair off float8 ties: float32 rounding first (as c10) matters
                     x32.to(torch.float64) * (1 + 2.0 ** -40), x32.to(torch.float64) * (1 - 2.0 ** -40)])
    xbf = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    xh = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(torch.float16)
    xi = torch.cat([torch.arange(-70000, 70000, 7, dtype=torch.int32),
                    torch.tensor([2**31 - 1, -2**31], dtype=torch.int32)])
    for code, dt in FLOAT8.items():
        f8 = codes.view(dt)
        for target in (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32, torch.bool):
            compare(L, f8, target, f"all 256 {dt}")
        compare(L, x32, dt, f"{x32.numel()} float32 edges")
        compare(L, x64, dt, "float64 edges")
        compare(L, xbf, dt, "all 65536 bfloat16")
        compare(L, xh, dt, "all 65536 float16")
        compare(L, xi, dt, "int32")
        for other in FLOAT8.values():
            if other != dt:
                compare(L, f8, other, f"all 256 {dt}")
    repr_matches(L)
    print(f"float8_torch: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""max_unpool2d, max_unpool3d and grid_sampler_3d of libtensor_aoti against ATen's
(torch.ops.aten.*) in the same process: output dtype, sizes and strides, values (unpool
exactly, repeated indices included, on one ATen thread; grid sampling within a per-dtype tolerance where
ATen's compiled loop may fuse a multiply-add, exactly for nearest), over random shapes,
batch and non-batch inputs, layouts (channels-last, permuted, sliced), every float dtype
(the others refused), every padding mode with and without align_corners, grid points far
outside and NaN, and the error cases (bad ranks, shapes, index ranges, modes: status 1).
Bicubic, which ATen does not implement for 5-D input (it returns uninitialised memory), is
refused.

Usage: python ops_spatial.py LIBDIR
"""

import random

import torch
import torch.nn.functional as F

import shimtest
from shimtest import C, H, HP, I64P, against, aoti, arr, call, check, lt, relayout, wrap

A = torch.ops.aten
aoti.aoti_torch_cpu_max_unpool2d.argtypes = [H, H, I64P, C.c_int64, HP]
aoti.aoti_torch_cpu_max_unpool3d.argtypes = [H, H, I64P, C.c_int64, I64P, C.c_int64, I64P, C.c_int64, HP]
aoti.aoti_torch_cpu_grid_sampler_3d.argtypes = [H, H, C.c_int64, C.c_int64, C.c_int32, HP]

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
OTHERS = [torch.int32, torch.int64, torch.bool, torch.uint8]


g = random.Random(61)
# ATen's unpool kernels split the elements between threads, so which of two equal indices
# wins depends on timing; on one thread the later one does, as here.
threads = torch.get_num_threads()
torch.set_num_threads(1)
for trial in range(500):
    sp = 2 if trial % 2 == 0 else 3
    dtype = FLOATS[trial % 4] if g.random() < 0.9 else g.choice(OTHERS)
    batch = g.random() < 0.7
    k = g.choice([1, 2, 3])
    insz = [g.randint(1, 3) for _ in range(sp)]
    outsz = [i * k + g.randint(0, 1) for i in insz]
    nc = [g.randint(0, 2) if batch else None, g.randint(1, 3)]
    lead = [x for x in nc if x is not None]
    x = torch.randn(lead + insz).to(dtype)
    plane = 1
    for s in outsz:
        plane *= s
    idx = torch.randint(0, plane, lead + insz)
    r = g.random()
    if r < 0.04 and idx.numel():
        idx.view(-1)[0] = plane  # out of range
    elif r < 0.06:
        idx = idx.int()  # refused
    elif r < 0.08:
        outsz = outsz[:-1]  # too few output sizes
    if x.dim() == 4 and g.random() < 0.4:
        x, idx = x.contiguous(memory_format=torch.channels_last), idx.contiguous(memory_format=torch.channels_last)
    elif x.dim() == 5 and g.random() < 0.4:
        x, idx = x.contiguous(memory_format=torch.channels_last_3d), idx.contiguous(memory_format=torch.channels_last_3d)
    else:
        x, idx = relayout(x, g), relayout(idx, g)
    hx, hi = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(idx))
    what = f"{dtype} {list(x.shape)} {x.stride()} output_size {outsz}"
    if sp == 2:
        against(f"max_unpool2d {what}", lambda: call(aoti.aoti_torch_cpu_max_unpool2d, hx, hi, arr(outsz), len(outsz)),
                lambda: A.max_unpool2d(x, idx, outsz))
    else:
        st = [k] * 3 if g.random() < 0.95 else [0, k, k]
        pad = [0, 0, 0]
        against(f"max_unpool3d {what} stride {st}",
                lambda: call(aoti.aoti_torch_cpu_max_unpool3d, hx, hi, arr(outsz), len(outsz), arr(st), 3, arr(pad), 3),
                lambda: A.max_unpool3d(x, idx, outsz, st, pad))
    lt.tensor_release(hx)
    lt.tensor_release(hi)

# The pooling round trip a model does: max_pool with indices, then unpool.
for sp, pool in ((2, F.max_pool2d), (3, F.max_pool3d)):
    x = torch.randn([2, 3] + [6] * sp)
    v, i = pool(x, 2, return_indices=True)
    hv, hi = wrap(v), wrap(i)
    if sp == 2:
        against("unpool2d round trip", lambda: call(aoti.aoti_torch_cpu_max_unpool2d, hv, hi, arr([6, 6]), 2),
                lambda: A.max_unpool2d(v, i, [6, 6]))
    else:
        against("unpool3d round trip",
                lambda: call(aoti.aoti_torch_cpu_max_unpool3d, hv, hi, arr([6] * 3), 3, arr([2] * 3), 3, arr([0] * 3), 3),
                lambda: A.max_unpool3d(v, i, [6] * 3, [2] * 3, [0] * 3))
    lt.tensor_release(hv)
    lt.tensor_release(hi)

torch.set_num_threads(threads)

TOL = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 2e-2, torch.bfloat16: 5e-2}
for trial in range(600):
    dtype = FLOATS[trial % 4] if g.random() < 0.93 else g.choice(OTHERS)
    n, c = g.randint(1, 2), g.randint(0 if g.random() < 0.05 else 1, 3)
    d, h, w = (g.randint(1, 4) for _ in range(3))
    x = relayout(torch.randn(n, c, d, h, w), g).to(dtype)
    od, oh, ow = (g.randint(1, 3) for _ in range(3))
    grid = torch.rand(n, od, oh, ow, 3, dtype=torch.float64) * g.choice([2.2, 3.0, 8.0]) - g.choice([1.1, 1.5, 4.0])
    if g.random() < 0.2:
        grid = torch.randint(-4, 5, grid.shape).double() / 4  # on the grid lines: ties
    if g.random() < 0.05 and grid.numel():
        grid.view(-1)[0] = float("nan")
    grid = relayout(grid.to(dtype if dtype.is_floating_point else torch.float32), g)
    if g.random() < 0.03:
        grid = grid.double() if dtype != torch.float64 else grid.float()  # mismatched dtype
    if g.random() < 0.03:
        grid = grid[..., :2]  # wrong last dim
    mode = g.choice([0, 0, 1, 1]) if g.random() < 0.95 else g.choice([2, 3])
    padm = g.choice([0, 1, 2]) if g.random() < 0.97 else 3
    align = g.choice([0, 1])
    hx, hg = wrap(shimtest.nonnull(x)), wrap(shimtest.nonnull(grid))
    what = f"{dtype} x {list(x.shape)} {x.stride()} grid {grid.dtype} {list(grid.shape)} mode {mode} padding {padm} align {align}"
    fn = lambda: call(aoti.aoti_torch_cpu_grid_sampler_3d, hx, hg, mode, padm, align)  # noqa: E731
    if mode >= 2 or padm >= 3:  # not defined by ATen (bicubic in 5-D, unknown codes): refused
        rc, hs = fn()
        check(rc == 1, f"grid_sampler_3d {what}: refused, rc {rc}")
        if rc == 0:
            lt.tensor_release(hs[0])
    else:
        tol = 0.0 if mode == 1 else TOL.get(dtype, 0.0)
        against(f"grid_sampler_3d {what}", fn, lambda: A.grid_sampler_3d(x, grid, mode, padm, bool(align)), tol)
    lt.tensor_release(hx)
    lt.tensor_release(hg)

# NaN coordinates, one axis at a time, every mode: out of bounds (zeros / NaN weights) as in
# ATen, whose bfloat16 build takes a NaN coordinate as index 0.
x = torch.arange(12, dtype=torch.float32).reshape(1, 1, 2, 3, 2) + 1
for dt in FLOATS:
    for axis in range(3):
        pt = [0.1, -0.3, 0.2]
        pt[axis] = float("nan")
        grid = torch.tensor(pt).reshape(1, 1, 1, 1, 3).to(dt)
        xd = x.to(dt)
        hx, hg = wrap(xd), wrap(grid)
        for mode in (0, 1):
            for padm in (0, 1, 2):
                for align in (0, 1):
                    against(f"grid_sampler_3d NaN {dt} axis {axis} mode {mode} padding {padm} align {align}",
                            lambda: call(aoti.aoti_torch_cpu_grid_sampler_3d, hx, hg, mode, padm, align),
                            lambda: A.grid_sampler_3d(xd, grid, mode, padm, bool(align)), TOL[dt])
        lt.tensor_release(hx)
        lt.tensor_release(hg)

shimtest.summary("ops_spatial")

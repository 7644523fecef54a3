"""Compiles a PyTorch model into a `.pt2` package that libtensor_aoti runs, vectorized.

    import sys; sys.path.insert(0, "<libtensor>/aoti/python")  # or PYTHONPATH
    import tensor_aoti_compile as tac

    tac.compile(model, (x,), "model.pt2")                 # export + AOTInductor, best ISA here
    tac.compile(model, (x,), "model.pt2", isa="avx2")      # runs on any AVX2 CPU (and valgrind)
    torch._inductor.aoti_compile_and_package(ep, package_path="model.pt2",
                                             inductor_configs=tac.inductor_configs())

Why it exists: Inductor decides whether to emit vector code by compiling a probe that calls
SLEEF (`Sleef_expf16_u10`, ...) and dlopen'ing it with torch's libraries on the path. The
CPU wheels of torch 2.x do not export SLEEF, so on such installs the probe fails, the
package's metadata says `"AOTI_CPU_ISA": "INVALID_VEC_ISA"` and every generated loop is
scalar, without a warning. libtensor_aoti provides SLEEF itself (it links Debian's
libsleef3), so the probe's question has a different answer for the process that runs the
model: this module answers it (`cpp.vec_isa_ok`) after checking that the CPU has the ISA and
that libsleef provides its functions, and picks the vector width (`cpp.simdlen`) and the
`-march` of the generated code (`cpp.march`).

`isa`:
- "auto" (default): AVX-512 when this CPU and libsleef have it, else AVX2, else none;
  `-march=native` (the package runs on CPUs of this machine's class, as Inductor's default).
- "avx512": 512-bit vectors, `-march=x86-64-v4` (any AVX-512 CPU).
- "avx2": 256-bit vectors, `-march=x86-64-v3` (any AVX2/FMA CPU; also what valgrind runs).
- "none": scalar code (Inductor's own probe decides nothing).
Errors (ValueError) when the ISA asked for is missing on this CPU or in libsleef.
"""

import ctypes
import ctypes.util
import functools
import os

__all__ = ["compile", "inductor_configs", "host_isa", "ISAS"]

# isa -> (vector bits, the -march of the generated code, a SLEEF function of that width,
#         the /proc/cpuinfo flags it needs)
ISAS = {
    "avx512": (512, "x86-64-v4", "Sleef_expf16_u10", ("avx512f", "avx512bw", "avx512dq", "avx512vl")),
    "avx2": (256, "x86-64-v3", "Sleef_expf8_u10", ("avx2", "fma")),
}

# What libtensor_aoti needs of every package it runs: no libtorch in the model's NEEDED
# entries. freezing=True packages run too, but their oneDNN-packed weights are unpacked at
# load (time and memory) for the same kernels: plain weights are the better default.
BASE = {"aot_inductor.link_libtorch": False, "freezing": False}


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@functools.cache
def _sleef():
    """Debian's libsleef (libsleef3), as libtensor_aoti links it; None if absent."""
    for name in ("libsleef.so.3", ctypes.util.find_library("sleef")):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    return None


def _missing(isa):
    """Why `isa` cannot be used here, or None."""
    _, _, probe, flags = ISAS[isa]
    lacking = [f for f in flags if f not in _cpu_flags()]
    if lacking:
        return f"this CPU lacks {', '.join(lacking)}"
    lib = _sleef()
    if lib is None:
        return "libsleef.so.3 is not installed (Debian: apt-get install libsleef3)"
    if not hasattr(lib, probe):
        return f"libsleef has no {probe}"
    return None


def host_isa():
    """The widest ISA this CPU and libsleef support ("avx512", "avx2"), or "none"."""
    for isa in ISAS:
        if _missing(isa) is None:
            return isa
    return "none"


def inductor_configs(isa="auto", **overrides):
    """The `inductor_configs` for `aoti_compile_and_package` that make a package libtensor_aoti
    runs, vectorized for `isa` (see the module doc); `overrides` are added last (e.g.
    `max_autotune=True`; names with dots as keyword arguments: `**{"cpp.threads": 1}`)."""
    configs = dict(BASE)
    if isa == "auto":
        chosen = host_isa()
        march = None  # Inductor's default, -march=native
    else:
        if isa not in ISAS and isa != "none":
            raise ValueError(f"isa must be one of auto, {', '.join(ISAS)}, none; got {isa!r}")
        chosen = isa
        march = ISAS[isa][1] if isa in ISAS else None
    if chosen == "none":
        configs["cpp.vec_isa_ok"] = False
    else:
        why = _missing(chosen)
        if why:
            raise ValueError(f"isa {chosen!r} cannot be used: {why}")
        configs["cpp.vec_isa_ok"] = True
        configs["cpp.simdlen"] = ISAS[chosen][0]
        if march:
            configs["cpp.march"] = march
    configs.update(overrides)
    return configs


def _forget_isa_probe():
    # Inductor caches the ISA list it probed (functools.cache): a probe made before these
    # configs were set would otherwise stay.
    from torch._inductor import cpu_vec_isa

    cpu_vec_isa.valid_vec_isa_list.cache_clear()


def compile(model, example_inputs, package_path, *, dynamic_shapes=None, isa="auto",
            strict=False, **configs):
    """`torch.export.export(model, example_inputs, dynamic_shapes=...)` then
    `aoti_compile_and_package` with `inductor_configs(isa, **configs)`, under
    `torch.no_grad()`. Returns the package's path. `model` may also be an ExportedProgram."""
    import torch

    opts = inductor_configs(isa, **configs)
    with torch.no_grad():
        if isinstance(model, torch.export.ExportedProgram):
            ep = model
        else:
            ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes,
                                     strict=strict)
        _forget_isa_probe()
        try:
            return torch._inductor.aoti_compile_and_package(
                ep, package_path=os.fspath(package_path), inductor_configs=opts)
        finally:
            _forget_isa_probe()

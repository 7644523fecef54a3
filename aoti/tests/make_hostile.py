"""Builds broken and hostile .pt2 packages from the test models (pointwise.pt2, mlp.pt2,
frozen.pt2 in MODELS), for the loader to refuse with a status and a message naming the entry (never a
crash, a hang, an out-of-memory or a file written anywhere).

Usage: python make_hostile.py MODELS OUT_DIR
Writes OUT_DIR/<case>.pt2 and OUT_DIR/hostile.txt, "case@status|text|text..." per line
(status: tensor.h's code; each text must be in the message), and the packages that load
but whose inputs cannot be checked (unchecked_*.pt2) or can (checked_*.pt2), and one whose
metadata says INVALID_VEC_ISA (novec.pt2).
"""

import os
import re
import struct
import sys
import warnings
import zipfile

IO, INVALID = 14, 2
models, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
cases = []


def entries(name):
    z = zipfile.ZipFile(os.path.join(models, name))
    return [(i, z.read(i)) for i in z.infolist()]


def find(ents, suffix):
    return next(i for i, (info, _) in enumerate(ents) if info.filename.endswith(suffix))


def write(case, ents, status=None, texts=(), compress=None):
    path = os.path.join(out, case + ".pt2")
    with zipfile.ZipFile(path, "w") as z:
        for info, data in ents:
            info = copy_info(info)
            if compress and info.filename.endswith(compress):
                info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    if status is not None:
        cases.append("|".join([f"{case}@{status}", *texts]))
    return path


def copy_info(info, name=None):
    c = zipfile.ZipInfo(name or info.filename, info.date_time)
    c.compress_type = info.compress_type
    c.external_attr = info.external_attr
    c.create_system = info.create_system
    return c


pw = entries("pointwise.pt2")
so, cpp, meta = find(pw, ".wrapper.so"), find(pw, ".wrapper.cpp"), find(pw, "wrapper_metadata.json")
so_name = pw[so][0].filename
meta_name = pw[meta][0].filename


def with_entry(ents, name, data, **attrs):
    info = zipfile.ZipInfo(name)
    for k, v in attrs.items():
        setattr(info, k, v)
    return ents + [(info, data)]


write("traversal", with_entry(pw, "pointwise/../../evil.so", b"x"), INVALID, ["'pointwise/../../evil.so'", "leaves the package"])
write("absolute", with_entry(pw, "/tmp/evil.so", b"x"), INVALID, ["'/tmp/evil.so'", "absolute"])
write("symlink", with_entry(pw, "pointwise/data/link", b"/etc/passwd", create_system=3,
                            external_attr=(0o120777 << 16)), INVALID, ["'pointwise/data/link'", "symbolic link"])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
    write("duplicate", pw + [(pw[so][0], b"\x7fELF not the model")], INVALID, [so_name, "appears twice"])

# Missing and malformed metadata; a GPU-only package.
write("no_metadata", [e for i, e in enumerate(pw) if i != meta], INVALID, [meta_name, "no metadata"])
write("bad_metadata", [(info, b"{\"AOTI_DEVICE_KEY\": " if i == meta else d) for i, (info, d) in enumerate(pw)],
      INVALID, [meta_name, "JSON"])
write("cuda_only", [(info, b'{"AOTI_DEVICE_KEY": "cuda"}' if i == meta else d) for i, (info, d) in enumerate(pw)],
      INVALID, ["no CPU model", "(cuda)"])

# The model .so: deflated, not an ELF, truncated (a valid zip holding half of it).
write("deflated_so", pw, INVALID, [so_name, "compressed"], compress=".wrapper.so")
write("not_elf", [(info, b"\x7fELF" + b"\0" * 60 if i == so else d) for i, (info, d) in enumerate(pw)],
      INVALID, ["not a 64-bit", "'"])
# (cut inside the code segment: the second half of the file is debug information)
write("truncated_so", [(info, d[:0x20000] if i == so else d) for i, (info, d) in enumerate(pw)],
      INVALID, ["truncated", "segment"])

# Imports nothing provides (the names edited in the .so's bytes, same length): all in one
# refusal, each named.
def edit_so(case, ents, idx, edits, texts):
    data = ents[idx][1]
    for old, new in edits:
        assert old in data, old
        data = data.replace(old, new)
    write(case, [(info, data if i == idx else d) for i, (info, d) in enumerate(ents)], INVALID, texts)


edit_so("missing_imports", pw, so, [(b"Sleef_expf8_u10\0", b"Sleef_expf8_u99\0"),
                                    (b"Sleef_sinf8_u35\0", b"Sleef_sinf8_u99\0")],
        ["none of it was run", "Sleef_expf8_u99 (SLEEF", "Sleef_sinf8_u99"])

# The archive itself: cut short; a flipped byte in the stored .so (CRC); a text entry whose
# declared size is far above its real one (a zip bomb's lie), and one far above the limit.
good = open(os.path.join(models, "pointwise.pt2"), "rb").read()
with open(os.path.join(out, "cut.pt2"), "wb") as f:
    f.write(good[: len(good) // 2])
cases.append(f"cut@{IO}|end of central directory")
with zipfile.ZipFile(os.path.join(models, "pointwise.pt2")) as z:
    info = z.getinfo(so_name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
flipped = bytearray(good)
flipped[start + 5000] ^= 0xFF
with open(os.path.join(out, "crc.pt2"), "wb") as f:
    f.write(bytes(flipped))
cases.append(f"crc@{IO}|{so_name}")


def lie_about_size(case, entry, declared, status, texts):
    """Rewrites `entry`'s uncompressed size in its local and central headers."""
    data = bytearray(good)
    with zipfile.ZipFile(os.path.join(models, "pointwise.pt2")) as z:
        info = z.getinfo(entry)
    struct.pack_into("<I", data, info.header_offset + 22, declared)
    name = entry.encode()
    i = 0
    while True:
        i = data.find(b"PK\x01\x02", i)
        if i < 0:
            break
        n = struct.unpack_from("<H", data, i + 28)[0]
        if bytes(data[i + 46 : i + 46 + n]) == name:
            struct.pack_into("<I", data, i + 24, declared)
        i += 4
    with open(os.path.join(out, case + ".pt2"), "wb") as f:
        f.write(bytes(data))
    cases.append("|".join([f"{case}@{status}", *texts]))


lie_about_size("bomb_text", meta_name, 0xF0000000, INVALID, [meta_name, "declares"])
lie_about_size("short_text", meta_name, 100000, IO, [meta_name, "declares 100000 bytes"])
lie_about_size("bomb_so", so_name, 0xF0000000, INVALID, [so_name, "declares"])

# The constants table (mlp: fc1_weight [64, 32] float32, 8192 bytes) against the weights.
mlp = entries("mlp.pt2")
mcpp = find(mlp, ".wrapper.cpp")


def edit_cpp(case, old, new, status, texts):
    src = mlp[mcpp][1].decode()
    assert old in src, old
    ents = [(info, src.replace(old, new, 1).encode() if i == mcpp else d) for i, (info, d) in enumerate(mlp)]
    write(case, ents, status, texts)


edit_cpp("const_shape", "constants_info_[0].shape = {64, 32};", "constants_info_[0].shape = {640, 32};",
         INVALID, ["constant 0 (fc1_weight)", "need 81920 bytes"])
edit_cpp("const_dtype", "constants_info_[0].dtype = cached_torch_dtype_float32;",
         "constants_info_[0].dtype = cached_torch_dtype_float64;", INVALID, ["constant 0 (fc1_weight)", "16384"])
edit_cpp("const_unknown_dtype", "constants_info_[0].dtype = cached_torch_dtype_float32;",
         "constants_info_[0].dtype = cached_torch_dtype_quux;", INVALID, ["constant 0", "unknown dtype"])
edit_cpp("short_weights", "constants_info_[0].data_size = 8192;", "constants_info_[0].data_size = 819200;",
         INVALID, ["constants table holds", "carries"])

# A freezing=True package's packed constant (frozen: constant 1, the stem's oneDNN-packed
# convolution weight [8, 3, 3, 3]) whose descriptor lies about its data.
fz = entries("frozen.pt2")
fcpp = find(fz, ".wrapper.cpp")


def edit_frozen(case, pattern, new, texts):
    src = fz[fcpp][1].decode()
    edited, n = re.subn(pattern, new, src, count=1)
    assert n == 1, pattern
    write(case, [(info, edited.encode() if i == fcpp else d) for i, (info, d) in enumerate(fz)],
          INVALID, texts)


edit_frozen("packed_short", r"constants_info_\[1\]\.data_size = \d+;",
            "constants_info_[1].data_size = 64;", ["constant 1", "oneDNN layout", "its data has 64"])
edit_frozen("packed_shape", r"constants_info_\[1\]\.shape = \{8, 3, 3, 3\};",
            "constants_info_[1].shape = {8, 3, 3, 2};", ["constant 1", "do not match the constant's shape"])
edit_frozen("packed_version", r"constants_info_\[1\]\.opaque_metadata = \{1L,",
            "constants_info_[1].opaque_metadata = {7L,", ["constant 1", "descriptor version 7"])

edit_so("missing_shim_and_symbol", mlp, find(mlp, ".wrapper.so"),
        [(b"aoti_torch_cpu_addmm_out\0", b"aoti_torch_cpu_addmm_oux\0"), (b"memcpy\0", b"memcpz\0")],
        ["aoti_torch_cpu_addmm_oux (aten.addmm_oux)", "memcpz"])

# Loadable, with or without input checks (pointwise's inputs: [4, 16] x 2).
write("unchecked_no_cpp", [e for i, e in enumerate(pw) if i != cpp])
src = pw[cpp][1].decode()
write("unchecked_bad_checks", [(info, src.replace("if (16 != ", "if (16 !== ", 1).encode() if i == cpp else d)
                               for i, (info, d) in enumerate(pw)])
write("checked_deflated_cpp", pw, compress=".wrapper.cpp")
write("novec", [(info, d.replace(b'"AVX2"', b'"INVALID_VEC_ISA"') if i == meta else d) for i, (info, d) in enumerate(pw)])

with open(os.path.join(out, "hostile.txt"), "w") as f:
    f.write("".join(c + "\n" for c in cases))
print(f"make_hostile: {len(cases)} refused packages, 4 loadable ones in {out}")

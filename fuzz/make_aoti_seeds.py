"""Writes the seed corpus of the `aoti_package` fuzz target (fuzz/corpus/aoti_package/): tiny
hand-built ELF64 shared objects (an aoti_ import, a shared string tail, a truncated one),
.pt2-shaped zips, wrapper-source excerpts as Inductor writes them, and JSON metadata. Each
fits the 512 bytes .ci/fuzz.sh lets an input have. Run from the repository root:

    python3 fuzz/make_aoti_seeds.py
"""

import io
import os
import struct
import warnings
import zipfile

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "aoti_package")


def elf(names, shared_tail=False, needed=None):
    """A shared object whose dynamic symbols are `names` ((name, defined) pairs), one
    relocation per symbol, everything in one PT_LOAD at address = offset."""
    strtab = b"\0"
    offs = []
    for n, _ in names:
        if shared_tail and strtab.endswith(b"\0") and len(offs) > 0 and names[0][0].endswith(n):
            offs.append(len(strtab) - 1 - len(n.encode()))
            continue
        offs.append(len(strtab))
        strtab += n.encode() + b"\0"
    need_off = None
    if needed:
        need_off = len(strtab)
        strtab += needed.encode() + b"\0"
    nsyms = len(names) + 1
    ph_off, n_ph = 64, 2
    str_off = ph_off + 56 * n_ph
    sym_off = (str_off + len(strtab) + 7) & ~7
    hash_off = sym_off + 24 * nsyms
    rela_off = hash_off + 4 * (2 + 1 + nsyms)
    rela_off = (rela_off + 7) & ~7
    dyn_off = rela_off + 24 * len(names)
    tags = [(5, str_off), (10, len(strtab)), (6, sym_off), (11, 24), (4, hash_off),
            (7, rela_off), (8, 24 * len(names)), (9, 24)]
    if need_off is not None:
        tags.insert(0, (1, need_off))
    dyn = b"".join(struct.pack("<QQ", t, v) for t, v in tags + [(0, 0)])
    end = dyn_off + len(dyn)
    hdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    hdr += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, ph_off, 0, 0, 64, 56, n_ph, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, end, end, 0x1000)
    ph += struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dyn), len(dyn), 8)
    syms = b"\0" * 24
    for (n, defined), o in zip(names, offs):
        syms += struct.pack("<IBBHQQ", o, 0x12, 0, 1 if defined else 0, 0x40 if defined else 0, 0)
    hashtab = struct.pack("<II", 1, nsyms) + struct.pack("<I", 0) + b"\0" * (4 * nsyms)
    rela = b"".join(struct.pack("<QQq", 0x100 + 8 * i, ((i + 1) << 32) | 7, 0) for i in range(len(names)))
    b = bytearray(end)
    for off, part in [(0, hdr), (ph_off, ph), (str_off, strtab), (sym_off, syms), (hash_off, hashtab),
                      (rela_off, rela), (dyn_off, dyn)]:
        b[off:off + len(part)] = part
    return bytes(b)


def pt2(entries, deflate=()):
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name), data,
                       compress_type=zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)
    return f.getvalue()


CHECK = """static void check_input_0(
ConstantHandle a = ConstantHandle(input_handles[0]);
int32_t a_expected_dtype = aoti_torch_dtype_float32();
if (a_size[0] < 2) {
if (a_size[0] > 64) {
if (16 != a_size[1]) {
if (16 != a_stride[0]) {
}
::run_impl(
auto a = std::move(inputs[0]);
int64_t s1 = a_size[0];
int64_t s2 = 2L*s1 + 1;
assert_size_stride(a, {s1, 16L}, {16L, 1L}, "input"); }
k((float*)(a.data_ptr()));
aoti_torch_copy_(a, b);
}
"""

CONSTANTS = """    constants_info_[0].name = "w";
    constants_info_[0].dtype = cached_torch_dtype_float32;
    constants_info_[0].offset = 0;
    constants_info_[0].data_size = 8192;
    constants_info_[0].from_folded = false;
    constants_info_[0].shape = {64, 32};
    constants_info_[0].stride = {32, 1};
"""

META = b'{"AOTI_DEVICE_KEY": "cpu", "AOTI_CPU_ISA": "AVX2"}'
SO = "p/data/aotinductor/m/a.wrapper.so"
META_SHORT = b'{"AOTI_DEVICE_KEY": "cpu"}'


def main():
    os.makedirs(OUT, exist_ok=True)
    warnings.simplefilter("ignore")  # zipfile warns about the duplicate-name seed
    seeds = {
        "elf_import": elf([("aoti_torch_cpu_topk", False), ("f", True)]),
        "elf_needed": elf([("aoti_torch_x", False)], needed="libm.so.6"),
        "elf_shared_tail": elf([("aoti_torch_cpu_mm", False), ("mm", False)], shared_tail=True),
        "elf_defined_aoti": elf([("aoti_torch_y", True)]),
        "elf_truncated": elf([("aoti_torch_cpu_topk", False)])[:200],
        "pt2_minimal": pt2([(SO, b"\x7fELF"), (SO[:-3] + "_metadata.json", META)]),
        "pt2_cuda": pt2([(SO, b"x"), (SO[:-3] + "_metadata.json", b'{"AOTI_DEVICE_KEY": "cuda"}')]),
        "pt2_deflated": pt2([(SO, b"\x7fELF"), (SO[:-3] + "_metadata.json", META_SHORT), (SO[:-3] + ".cpp", b"x" * 40)],
                            deflate=(SO[:-3] + ".cpp",)),
        "pt2_traversal": pt2([("p/../x", b""), (SO, b"")]),
        "pt2_duplicate": pt2([(SO, b"a"), (SO, b"b")]),
        "wrapper_checks": CHECK.encode(),
        "wrapper_constants": CONSTANTS.encode(),
        "json_meta": META,
        "json_extern": b'{"nodes": [{"name": "buf0", "node": {"target": "torchvision::nms"}}]}',
        "json_deep": b"[" * 40 + b"]" * 40,
        "expr": b"(2L*s17 + s3) / 2 - -1",
    }
    for name, data in seeds.items():
        assert len(data) <= 512, (name, len(data))
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()

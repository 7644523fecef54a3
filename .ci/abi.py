#!/usr/bin/env python3
"""ABI guard for libtensor.so: a deterministic text dump of the exported ABI, compared with
the committed baseline (.ci/abi_baseline.txt).

The dump holds, one fact per line, sorted:
  soname      the SONAME of the built library (readelf -d)
  symbol      every defined dynamic symbol (nm -D --defined-only) named tensor_* / storage_*
  function    each exported function's prototype, from include/tensor.h (whitespace-normalised)
  typedef     each typedef of the header (scalar typedefs and function-pointer types)
  define      each #define NAME VALUE of the header
  struct      sizeof / alignof of each public struct, and each field's offset, size and
              declaration, measured by compiling a C program against the header

Compatibility (baseline -> build):
  * added symbols, functions, typedefs, defines, structs: compatible (reported);
  * a removed or changed symbol, prototype, typedef, define value or struct layout:
    incompatible, UNLESS the SONAME major changed in the same change;
  * a struct whose first field is `size_t struct_size` (versioned by its size, e.g.
    tensor_memory_stats_t) may grow by appended fields: its old fields must keep their
    offsets, sizes and declarations.

Usage:
  python3 .ci/abi.py check  [--lib target/debug/libtensor.so]   compare with the baseline
  python3 .ci/abi.py update [--lib target/debug/libtensor.so]   rewrite the baseline
  python3 .ci/abi.py dump   [--lib ...]                         print the dump
The library must be built first (cargo build).

This reads include/tensor.h itself rather than the tests' model of the header
(tests/support/header_model.rs, which the Rust tests, the fuzz targets and build.rs share):
the guard is the C compiler's view of the ABI (declarations with comments stripped and
parameter names dropped, struct layouts measured by compiling a program against the header),
and it runs in CI's boundary stage (and on a fresh clone) right after `cargo build`, before
any test crate exists that could write a description of the header for it. The model reads
what the ABI has no part in: doc comments, `Errors:` lines and sections.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "include", "tensor.h")
BASELINE = os.path.join(ROOT, ".ci", "abi_baseline.txt")
EXPORTED = re.compile(r"^(tensor_|storage_)")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def norm(s):
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s*([(),;*])\s*", r"\1", s)
    return s


def parse_header(path):
    raw = open(path).read()
    text = strip_comments(raw)
    defines = {}
    for m in re.finditer(r"^\s*#define\s+(\w+)\s+(.+?)\s*$", text, flags=re.M):
        defines[m.group(1)] = m.group(2)
    # Drop preprocessor lines and the extern "C" wrapper.
    body = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    body = body.replace('extern "C" {', " ")
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", body, flags=re.S):
        fields = [norm(f) for f in m.group(2).split(";") if f.strip()]
        structs[m.group(1)] = fields
    body_wo_structs = re.sub(r"typedef\s+struct\s+\w+\s*\{.*?\}\s*\w+\s*;", " ", body, flags=re.S)
    typedefs = {}
    functions = {}
    for decl in body_wo_structs.split(";"):
        d = norm(decl.replace("}", " "))
        if not d:
            continue
        if d.startswith("typedef "):
            m = re.search(r"\(\*(\w+)\)", d) or re.search(r"(\w+)$", d)
            typedefs[m.group(1)] = d
            continue
        m = re.search(r"(\w+)\((.*)\)$", d)
        if m and EXPORTED.match(m.group(1)):
            functions[m.group(1)] = d[: m.start(2)] + ",".join(map(param_type, m.group(2).split(","))) + ")"
    return defines, structs, typedefs, functions


def param_type(p):
    """A parameter without its name (renaming a parameter does not change the ABI)."""
    t = re.sub(r"\s*\b\w+$", "", p)
    return t if t and not t.endswith(("struct", "const")) else p


def field_name(decl):
    m = re.search(r"\(\*(\w+)\)", decl)
    if m:
        return m.group(1)
    return re.search(r"(\w+)(\[[^\]]*\])?$", decl).group(1)


def struct_layouts(structs):
    """Compiles a C program that prints sizeof/alignof/offsetof for every struct field."""
    lines = [
        "#include <stdalign.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        '#include "tensor.h"',
        "int main(void) {",
    ]
    for s, fields in sorted(structs.items()):
        lines.append(
            f'  printf("struct {s} size=%zu align=%zu\\n", sizeof(struct {s}), alignof(struct {s}));'
        )
        for i, f in enumerate(fields):
            n = field_name(f)
            lines.append(
                f'  printf("struct {s} field %02d offset=%zu size=%zu : %s\\n", {i}, '
                f'offsetof(struct {s}, {n}), sizeof(((struct {s} *)0)->{n}), "{f}");'
            )
    lines += ["  return 0;", "}"]
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "layout.c")
        exe = os.path.join(d, "layout")
        open(src, "w").write("\n".join(lines) + "\n")
        subprocess.run(
            [cc, "-std=c11", "-I", os.path.join(ROOT, "include"), src, "-o", exe], check=True
        )
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    m = re.search(r"\(SONAME\).*\[(.*)\]", out)
    return m.group(1) if m else "(none)"


def symbols(lib):
    out = subprocess.run(
        ["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True
    ).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and EXPORTED.match(parts[2]):
            syms.append(f"symbol {parts[2]} {parts[1]}")
    return syms


def dump(lib):
    defines, structs, typedefs, functions = parse_header(HEADER)
    out = [f"soname {soname(lib)}"]
    out += symbols(lib)
    out += [f"function {n} : {d}" for n, d in functions.items()]
    out += [f"typedef {n} : {d}" for n, d in typedefs.items()]
    out += [f"define {n} {v}" for n, v in defines.items() if n != "LIBTENSOR_TENSOR_H"]
    out += struct_layouts(structs)
    declared = set(functions)
    exported = {l.split()[1] for l in out if l.startswith("symbol ")}
    for f in sorted(declared - exported):
        sys.exit(f"abi: {f} is declared in include/tensor.h but not exported by {lib}")
    return sorted(set(out))


def key(line):
    """The identity of a fact (what must still exist), without its value."""
    kind = line.split()[0]
    if kind == "soname":
        return "soname"
    if kind == "struct":
        m = re.match(r"struct (\w+) field (\d+)", line)
        if m:
            return f"struct {m.group(1)} field {m.group(2)}"
        return "struct " + line.split()[1]
    return " ".join(line.split()[:2])


def soname_major(s):
    m = re.search(r"\.so\.(\d+)", s)
    return m.group(1) if m else s


def versioned_structs(lines):
    """Structs whose field 00 is `size_t struct_size`."""
    return {
        re.match(r"struct (\w+)", l).group(1)
        for l in lines
        if re.match(r"struct \w+ field 00 .*: size_t struct_size$", l)
    }


def compare(old, new):
    old_by = {key(l): l for l in old}
    new_by = {key(l): l for l in new}
    versioned = versioned_structs(old) & versioned_structs(new)
    broken, added = [], []
    for k, l in old_by.items():
        if k == "soname":
            continue
        if k.startswith("define TENSOR_VERSION_") and k in new_by:
            # The header's version (bumped by every release) is not part of the ABI.
            if new_by[k] != l:
                added.append(f"version: {new_by[k]}")
            continue
        if k not in new_by:
            broken.append(f"removed: {l}")
        elif new_by[k] != l:
            if k == "define TENSOR_ABI_VERSION" and int(new_by[k].split()[2]) > int(l.split()[2]):
                added.append(f"bumped: {new_by[k]}")
                continue
            name = k.split()[1] if k.startswith("struct ") else None
            if name in versioned and " field " not in k:
                # a versioned struct may grow: its size and alignment may only increase
                o = dict(re.findall(r"(\w+)=(\d+)", l))
                n = dict(re.findall(r"(\w+)=(\d+)", new_by[k]))
                if int(n["size"]) >= int(o["size"]) and n["align"] == o["align"]:
                    added.append(f"grown (versioned by struct_size): {new_by[k]}")
                    continue
            broken.append(f"changed: {l}\n      now: {new_by[k]}")
    for k, l in new_by.items():
        if k not in old_by:
            added.append(f"added: {l}")
    return broken, added


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("mode", choices=["check", "update", "dump"])
    ap.add_argument("--lib", default=os.path.join(ROOT, "target", "debug", "libtensor.so"))
    ap.add_argument("--baseline", default=BASELINE)
    a = ap.parse_args()
    if not os.path.exists(a.lib):
        sys.exit(f"abi: {a.lib} not found: run 'cargo build' first")
    cur = dump(a.lib)
    if a.mode == "dump":
        print("\n".join(cur))
        return
    if a.mode == "update":
        with open(a.baseline, "w") as f:
            f.write("# libtensor ABI baseline: regenerate with `python3 .ci/abi.py update` after\n")
            f.write("# `cargo build` (see .ci/abi.py for what is compatible).\n")
            f.write("\n".join(cur) + "\n")
        print(f"abi: wrote {len(cur)} facts to {os.path.relpath(a.baseline, ROOT)}")
        return
    base = [l for l in open(a.baseline).read().splitlines() if l and not l.startswith("#")]
    broken, added = compare(base, cur)
    n_fn = sum(1 for l in cur if l.startswith("function "))
    n_sym = sum(1 for l in cur if l.startswith("symbol "))
    print(f"abi: {len(cur)} facts ({n_sym} symbols, {n_fn} prototypes) vs baseline {len(base)}")
    for l in added:
        print(f"  compatible {l}")
    if added:
        print("  (compatible additions: refresh the baseline with `python3 .ci/abi.py update`)")
    if not broken:
        print("abi: compatible with the baseline")
        return
    for l in broken:
        print(f"  INCOMPATIBLE {l}")
    old_so = next((l for l in base if l.startswith("soname ")), "soname ?").split()[1]
    new_so = next(l for l in cur if l.startswith("soname ")).split()[1]
    if soname_major(old_so) != soname_major(new_so):
        print(f"abi: incompatible changes accepted: SONAME major bumped ({old_so} -> {new_so}); "
              "refresh the baseline with `python3 .ci/abi.py update`")
        return
    print(f"abi: {len(broken)} incompatible change(s) with SONAME {new_so} unchanged: restore "
          "the ABI, or bump the SONAME major (the major version in Cargo.toml) and run "
          "`python3 .ci/abi.py update`", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()

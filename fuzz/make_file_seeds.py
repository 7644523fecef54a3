"""Writes the seed corpora of the `files` fuzz target (fuzz/corpus/files/: small valid and
malformed .npy and .safetensors files) and the malformed seeds of `file_headers`
(fuzz/corpus/file_headers/). Valid files come from NumPy and safetensors themselves;
malformed ones are edited bytes. Run from the repository root with a Python that has
numpy and safetensors (e.g. the CI venv):

    /root/.cache/libtensor-ci-venv/bin/python fuzz/make_file_seeds.py
"""

import io
import json
import os
import struct

import numpy as np
from safetensors.numpy import save as st_save

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def npy_raw(header, data=b""):
    """A .npy file (format 1.0) with this header dict text, padded as NumPy pads."""
    h = header
    while (10 + len(h) + 1) % 64:
        h += " "
    h += "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data


def st_raw(header, data=b""):
    j = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(j)) + j + data


valid = {
    "f32_2x3.npy": npy(np.arange(6, dtype="<f4").reshape(2, 3)),
    "i16_fortran.npy": npy(np.asfortranarray(np.arange(6, dtype="<i2").reshape(2, 3))),
    "u8_0d.npy": npy(np.array(7, dtype="u1")),
    "f64_empty.npy": npy(np.zeros((0, 3), dtype="<f8")),
    "i32_big_endian.npy": npy(np.arange(3, dtype=">i4")),
    "c64.npy": npy(np.array([1 + 2j, -0.5j], dtype="<c8")),
    "f16_v2.npy": npy(np.arange(4, dtype="<f2"), version=(2, 0)),
    "bool.npy": npy(np.array([True, False, True])),
    "two.safetensors": st_save({"a": np.arange(6, dtype="<f4").reshape(2, 3), "b": np.arange(3, dtype="<i8")}),
    "f16_empty.safetensors": st_save({"h": np.zeros((2,), dtype="<f2"), "e": np.zeros((0, 4), dtype="<f4")}),
    "u8_scalar.safetensors": st_save({"s": np.array(5, dtype="u1")}, metadata={"k": "v"}),
    "misaligned.safetensors": st_raw(
        {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
         "b": {"dtype": "F32", "shape": [1], "data_offsets": [1, 5]}},
        b"\x01\x00\x00\x80\x3f",
    ),
}

f32 = valid["f32_2x3.npy"]
two = valid["two.safetensors"]
malformed = {
    "bad_magic.npy": b"\x93NUMPX" + f32[6:],
    "truncated_data.npy": f32[:-5],
    "header_past_end.npy": f32[:8] + struct.pack("<H", 4000) + f32[10:40],
    "shape_overflow.npy": npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", b"\0" * 4),
    "datetime.npy": npy_raw("{'descr': '<M8[s]', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8),
    "structured.npy": npy_raw("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", b"\0" * 4),
    "dims65.npy": npy_raw("{'descr': '|u1', 'fortran_order': False, 'shape': (" + "1," * 65 + "), }", b"\0"),
    "bad_dict.npy": npy_raw("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", b"\0" * 8),
    "header_len_past_end.safetensors": struct.pack("<Q", 1 << 40) + two[8:40],
    "invalid_json.safetensors": st_raw(b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]', b"\0" * 4),
    "overlapping.safetensors": st_raw(
        {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
         "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}},
        b"\0" * 6,
    ),
    "shape_mismatch.safetensors": st_raw({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
    "float8.safetensors": st_raw({"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 2),
    "dims65.safetensors": st_raw({"a": {"dtype": "U8", "shape": [1] * 65, "data_offsets": [0, 1]}}, b"\0"),
    "shape_overflow.safetensors": st_raw(
        {"a": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 1 << 32], "data_offsets": [0, 4]}}, b"\0" * 4
    ),
    "truncated.safetensors": two[:-3],
}


def write(dirname, files):
    d = os.path.join(HERE, "corpus", dirname)
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        assert len(data) <= 512, (name, len(data))  # .ci/fuzz.sh runs with -max_len=512
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


write("files", {**valid, **malformed})
write("file_headers", malformed)
print(f"{len(valid)} valid and {len(malformed)} malformed seeds")

"""What the AOTI benchmark's Python scripts (gemm_floor.py, conv_floor.py) share:
libtensor_aoti and libtensor loaded from LIBDIR, and `wrap`, a torch tensor as a libtensor
handle over the same memory (float32, CPU, no deleter: the tensor must outlive it)."""

import ctypes as C
import os

H = C.c_void_p
I64P = C.POINTER(C.c_int64)


def load(lib):
    """(aoti, lt, wrap) for the libraries in `lib`."""
    aoti = C.CDLL(os.path.join(lib, "libtensor_aoti.so"))
    lt = C.CDLL(os.path.join(lib, "libtensor.so.0"))
    aoti.ltai_torch_create_tensor_from_blob.argtypes = [
        C.c_void_p, C.c_int64, I64P, I64P, C.c_int64, C.c_int32, C.c_int32, C.c_int32,
        C.POINTER(H)]
    lt.tensor_release.argtypes = [H]

    def wrap(t):
        n = t.dim()
        sizes, strides = (C.c_int64 * n)(*t.shape), (C.c_int64 * n)(*t.stride())
        h = H()
        rc = aoti.ltai_torch_create_tensor_from_blob(t.data_ptr(), n, sizes, strides, 0, 6, 0,
                                                     0, C.byref(h))
        assert rc == 0
        return h

    return aoti, lt, wrap

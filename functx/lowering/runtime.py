"""Loading compiled programs and calling them: one ctypes call per jitted call."""

from __future__ import annotations

import ctypes
import functools
import glob
import os

import numpy as np

from functx.array import Array


@functools.lru_cache(maxsize=1)
def gemm_pointers() -> tuple[int, int]:
    """Addresses of an ILP64 ``cblas_sgemm``/``cblas_dgemm`` from NumPy's own BLAS (0 if none)."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*blas*.so*"))
    libs += glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs", "*blas*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for s, d in (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_"),
                     ("cblas_sgemm64_", "cblas_dgemm64_")):
            if hasattr(lib, s) and hasattr(lib, d):
                return (ctypes.cast(getattr(lib, s), ctypes.c_void_p).value,
                        ctypes.cast(getattr(lib, d), ctypes.c_void_p).value)
    return 0, 0


class Executable:
    """A compiled program: call it with the flat input arrays, get the flat outputs."""

    def __init__(self, so_path, n_in, consts, out_specs, out_map, source, kernels_text):
        self.lib = ctypes.CDLL(so_path)
        self.lib.fx_set_gemm.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.fx_set_gemm(*gemm_pointers())
        self.fn = self.lib.fx_run
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.fn.restype = ctypes.c_int
        self.n_in = n_in
        self.consts = [np.ascontiguousarray(c) for c in consts]
        self.out_specs = out_specs  # [(shape, dtype)] for each output buffer
        self.out_map = out_map  # per program output: ("buf", k, aval) | ("in", i, aval)
        self.source = source
        self.kernels_text = kernels_text
        self.n_args = n_in + len(self.consts) + len(out_specs)
        self._const_ptrs = [c.ctypes.data for c in self.consts]

    def __call__(self, leaves):
        ins = []
        for x in leaves:
            v = x._value if type(x) is Array else np.asarray(x)
            if not v.flags.c_contiguous:
                v = np.ascontiguousarray(v)
            ins.append(v)
        outs = [np.empty(shape, dtype) for shape, dtype in self.out_specs]
        ptrs = (ctypes.c_void_p * self.n_args)(
            *[v.ctypes.data for v in ins], *self._const_ptrs, *[o.ctypes.data for o in outs])
        rc = self.fn(ptrs)
        if rc != 0:
            raise MemoryError("functx.jit: the compiled program could not allocate its buffers")
        result = []
        for kind, k, aval in self.out_map:
            if kind == "buf":
                result.append(Array._new(outs[k], aval))
            else:
                v = leaves[k]
                result.append(v if type(v) is Array else Array._new(np.array(v), aval))
        return result


__all__ = ["Executable", "gemm_pointers"]

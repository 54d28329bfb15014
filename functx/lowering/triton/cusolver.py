"""cuSOLVER's batched symmetric eigensolver on a program's own CUDA tensors, through ctypes.

``torch.linalg.eigh`` of a batch of matrices larger than 32x32 runs one Jacobi solve per matrix
(52 ms for 64 64x64 float32 matrices on an H100, where JAX took 0.39 ms), and of one float32
matrix of 32 to 512 rows a Jacobi solve too (14.9 ms at 512, JAX 4.9). JAX calls cuSOLVER's
batched eigensolver (``cusolverDnXsyevBatched``, CUDA 12.6.2 and later); torch does not call
it for these shapes, so this module does, through ctypes, from the ``libcusolver`` that torch
loads for its own linear algebra (found in ``/proc/self/maps``; ``available()`` says why not,
where not).

The calls only queue work on the current stream (workspaces from torch's caching allocator,
``info`` left on the device), so a program with such a step keeps its CUDA graph. cuSOLVER
works on column-major matrices: a row-major symmetric matrix read by columns is itself with
the triangles swapped, and the eigenvectors come back by rows (a transposing copy puts them in
columns). A matrix whose ``info`` is not zero gives NaNs, as JAX's eigh does. The results are
JAX's bit for bit (the same call; H100, 17:24 UTC): eigenvalues ascending as cuSOLVER gives them,
so equal ones may come an ulp out of order, as in JAX.

H100, float32, ms, this call / JAX / torch.linalg.eigh or the Jacobi kernel
(benchmarks/gpu_libsteps.py --explore, 17:24 UTC): 64 16x16 0.105 / 0.094 / Jacobi 0.056
(Jacobi kept there: ``linalg.EIGH_JACOBI_MAX_N``); 64 32x32 0.173 / 0.132 / Jacobi 0.322;
64 64x64 0.359 / 0.465 / Jacobi 1.679; 1024 64x64 2.290 / 2.280; one 64x64 0.517 / 0.784 /
torch 1.222; 16 128x128 0.702 / 0.852 / torch 27.0; one 512x512 4.744 / 4.872 / torch (float64)
5.365.

Batches of matrices up to 32 rows (``SYEVJ_MAX_N``) go to the batched Jacobi solver
``syevjBatched`` instead, as JAX and torch choose there (its eigenvalues are JAX's bit for bit;
H100, 19:36 UTC, float32, ms, syevjBatched / JAX / XsyevBatched: 64 32x32 0.131 / 0.137 / 0.169,
64 24x24 0.112 / 0.112 / 0.151, 1024 32x32 0.514 / 0.509 / 0.612).
"""

from __future__ import annotations

import ctypes
import os
import threading

_R32F, _R64F = 0, 1  # cudaDataType: CUDA_R_32F, CUDA_R_64F
_VECTORS = 1  # cusolverEigMode_t: CUSOLVER_EIG_MODE_VECTOR
_LOWER, _UPPER = 0, 1  # cublasFillMode_t (of the column-major matrix)

_lock = threading.Lock()
_lib = None  # the ctypes library once found; False where it cannot be
_why = ""  # why not, where not
#: CUDA device index -> (cusolverDnHandle_t, cusolverDnParams_t, syevjInfo_t)
_handles: dict = {}
#: (routine, n, batch, dtype, device) -> (device bytes, host bytes, the host workspace, kept for
#: the graphs that replay a call)
_sizes: dict = {}

_P, _I, _I64, _SZ = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
_PSZ = ctypes.POINTER(_SZ)
# argument types: the eigensolvers' common head (handle, params, jobz, uplo, n, A's type, A,
# lda, W's type, W, compute type), then each one's own tail
_HEAD = [_P, _P, _I, _I, _I64, _I, _P, _I64, _I, _P, _I]
_SIGNATURES = {
    "cusolverDnCreate": [ctypes.POINTER(_P)],
    "cusolverDnCreateParams": [ctypes.POINTER(_P)],
    "cusolverDnSetStream": [_P, _P],
    "cusolverDnXsyevBatched_bufferSize": _HEAD + [_PSZ, _PSZ, _I64],
    "cusolverDnXsyevBatched": _HEAD + [_P, _SZ, _P, _SZ, _P, _I64],
    "cusolverDnCreateSyevjInfo": [ctypes.POINTER(_P)],
}
# the batched Jacobi solvers (n <= 32), by dtype: (handle, jobz, uplo, n, A, lda, W, ...)
_JHEAD = [_P, _I, _I, _I, _P, _I, _P]
for _t in "SD":
    _SIGNATURES[f"cusolverDn{_t}syevjBatched_bufferSize"] = _JHEAD + [ctypes.POINTER(_I), _P, _I]
    _SIGNATURES[f"cusolverDn{_t}syevjBatched"] = _JHEAD + [_P, _I, _P, _P, _I]
#: the largest matrices cuSOLVER's batched Jacobi solver takes
SYEVJ_MAX_N = 32


def _candidates():
    """Paths of the libcusolver this process has loaded, then the plain library names."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if line.count("/") else ""
                if os.path.basename(path).startswith("libcusolver.so") and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found + ["libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"]


def _load():
    global _lib, _why
    import torch

    if not torch.cuda.is_available():
        _why = "no CUDA device"
        return False
    try:  # (torch loads its linear-algebra library, and with it libcusolver, on first use)
        torch.linalg.cholesky_ex(torch.ones(1, 1, device="cuda"))
    except Exception as e:  # noqa: BLE001 - then the library names below
        _why = f"torch.linalg on CUDA failed: {e}"
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
            for fn, argtypes in _SIGNATURES.items():
                getattr(lib, fn).argtypes = argtypes
                getattr(lib, fn).restype = ctypes.c_int
            return lib
        except (OSError, AttributeError) as e:  # (missing, or a cuSOLVER before 12.6.2)
            _why = f"{name}: {e}"
    return False


def available() -> bool:
    """Whether cuSOLVER's eigensolvers can be called (a CUDA device and a libcusolver with
    ``cusolverDnXsyevBatched``); ``reason()`` says why not."""
    global _lib
    with _lock:
        if _lib is None:
            _lib = _load()
    return bool(_lib)


def reason() -> str:
    return "" if available() else _why


def _check(status, fn):
    if status != 0:
        raise RuntimeError(f"cuSOLVER: {fn} returned status {status}")


def _handle(device):
    with _lock:
        if device not in _handles:
            import torch

            h, p, j = _P(), _P(), _P()
            with torch.cuda.device(device):
                for fn, out in (("Create", h), ("CreateParams", p), ("CreateSyevjInfo", j)):
                    _check(getattr(_lib, "cusolverDn" + fn)(ctypes.byref(out)), fn)
            _handles[device] = (h, p, j)
        return _handles[device]


def eigh(x, v_out, w_out, n: int, lower: bool, jacobi: bool = False) -> None:
    """Eigenvalues (ascending, into ``w_out``) and eigenvectors (columns, into ``v_out``) of the
    symmetric row-major ``n x n`` matrices in the flat CUDA tensor ``x`` (float32 or float64),
    reading its lower triangle if ``lower``, else its upper one: one
    ``cusolverDnXsyevBatched`` call for all of them (one matrix too: ``cusolverDnXsyevd``
    returned CUSOLVER_STATUS_EXECUTION_FAILED on the H100 at 17:24 UTC, where the batched call of
    one 512x512 matrix took 4.74 ms against JAX's 4.87), or with ``jacobi`` (``n <=
    SYEVJ_MAX_N``) one ``cusolverDn<t>syevjBatched`` call with its default tolerance and sweeps
    (JAX's and torch's choice for batches of such matrices)."""
    import torch

    b = x.numel() // (n * n)
    dt = _R32F if x.dtype == torch.float32 else _R64F
    dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
    h, p, j = _handle(dev)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    _check(_lib.cusolverDnSetStream(h, _P(stream)), "cusolverDnSetStream")
    a = x.reshape(b, n, n).clone()  # (overwritten with the eigenvectors, by rows)
    w = w_out.reshape(b, n)
    info = torch.empty(b, dtype=torch.int32, device=x.device)
    uplo = _UPPER if lower else _LOWER  # (the row-major lower triangle read by columns)
    if jacobi:
        name = f"cusolverDn{'S' if dt == _R32F else 'D'}syevjBatched"
        head = (h, _VECTORS, uplo, n, a.data_ptr(), n, w.data_ptr())
        key = (name, n, b, dt, dev)
        if key not in _sizes:
            lwork = _I()
            _check(getattr(_lib, name + "_bufferSize")(*head, ctypes.byref(lwork), j, b),
                   name + "_bufferSize")  # fmt: skip
            _sizes[key] = (lwork.value * x.element_size(), 0, None)
        lwork = _sizes[key][0] // x.element_size()
        work = torch.empty(max(lwork, 1), dtype=x.dtype, device=x.device)
        _check(getattr(_lib, name)(*head, work.data_ptr(), lwork, info.data_ptr(), j, b), name)
    else:
        name = "cusolverDnXsyevBatched"
        key = (name, n, b, dt, dev)
        head = (h, p, _VECTORS, uplo, n, dt, a.data_ptr(), n, dt, w.data_ptr(), dt)
        if key not in _sizes:
            d, hb = _SZ(), _SZ()
            _check(_lib.cusolverDnXsyevBatched_bufferSize(*head, ctypes.byref(d),
                                                          ctypes.byref(hb), b),
                   name + "_bufferSize")  # fmt: skip
            _sizes[key] = (d.value, hb.value, (ctypes.c_byte * max(hb.value, 1))())
        dbytes, hbytes, host = _sizes[key]
        work = torch.empty(max(dbytes, 1), dtype=torch.uint8, device=x.device)
        _check(_lib.cusolverDnXsyevBatched(*head, work.data_ptr(), dbytes, host, hbytes,
                                           info.data_ptr(), b), name)  # fmt: skip
    # the eigenvectors into columns and a failed solve's NaNs (as JAX gives) in one pass
    bad = (info != 0)[:, None]
    torch.where(bad[..., None], a.new_full((), float("nan")), a.mT, out=v_out.reshape(b, n, n))
    w.masked_fill_(bad, float("nan"))


def workspace_bytes() -> dict:
    """The workspaces asked for so far: ``{(routine, n, batch, dtype, device): (device bytes,
    host bytes)}`` (a routine that wants host memory may not replay in a CUDA graph)."""
    return {k: v[:2] for k, v in _sizes.items()}


__all__ = ["available", "reason", "eigh", "workspace_bytes"]

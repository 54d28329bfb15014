"""``jax.experimental.sparse``'s BCSR, CSR and COO products and ``sparse.linalg`` under ``jit``
on the CPU: functx against JAX, each library in its own process per round (rounds alternate the
order), every result checked against NumPy float64 first; medians of wall and CPU
(``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/sparse_bcsr.py [--rounds 5] [--reps 20]
"""

from __future__ import annotations

import numpy as np
import sidebyside

N, NSE, K = 4096, 65536, 16  # 4096x4096, 65536 random positions (65409 distinct), 16 columns
SN = 512  # spsolve: a 512x512 system, 4096 random positions and the diagonal (4565 entries)
EN, EK, EM = 1024, 4, 40  # lobpcg: the 4 largest eigenpairs of a 1024x1024 matrix, 40 steps
CASES = ("bcsr spmv", "bcsr spmm", "csr matvec", "coo matmat", "spsolve", "lobpcg")


def _csr(rng, n, nse, diagonal=0.0):
    """Sorted CSR buffers (data, indices, indptr) of a random n x n matrix, and its dense form."""
    idx = np.unique(rng.integers(0, n, size=(nse, 2)), axis=0)  # sorted, unique
    dense = np.zeros((n, n))
    dense[idx[:, 0], idx[:, 1]] = rng.standard_normal(len(idx))
    dense += diagonal * np.eye(n)
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    bufs = (dense[rows, cols].astype(np.float32), cols.astype(np.int32), indptr.astype(np.int32))
    return bufs, dense


def _inputs():
    rng = np.random.default_rng(0)
    csr, dense = _csr(rng, N, NSE)
    x = rng.standard_normal((N, K)).astype(np.float32)
    sys_bufs, sys_dense = _csr(rng, SN, 8 * SN, diagonal=8.0)
    b = rng.standard_normal(SN).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((EN, EN)))
    w = np.concatenate([[40.0, 30.0, 20.0, 10.0], rng.uniform(-1, 1, EN - EK)])
    sym = ((q * w) @ q.T).astype(np.float32)
    x0 = rng.standard_normal((EN, EK)).astype(np.float32)
    return csr, dense, x, sys_bufs, sys_dense, b, sym, x0


def worker(lib, reps):
    if lib == "functx":
        import functx as jx
        from functx.experimental import sparse
    else:
        import jax as jx
        from jax.experimental import sparse
    csr, dense, x, sys_bufs, sys_dense, b, sym, x0 = _inputs()
    m = sparse.BCSR(csr, shape=(N, N))
    c = sparse.CSR(csr, shape=(N, N))
    rows = np.repeat(np.arange(N, dtype=np.int32), np.diff(csr[2]))
    coo = sparse.COO((csr[0], rows, csr[1]), shape=(N, N), rows_sorted=True)
    solve = jx.jit(sparse.linalg.spsolve)
    eig = jx.jit(lambda a, x: sparse.linalg.lobpcg_standard(a, x, m=EM)[0])
    calls = {
        "bcsr spmv": (jx.jit(lambda m, v: m @ v), (m, x[:, 0]), dense @ x[:, 0]),
        "bcsr spmm": (jx.jit(lambda m, y: m @ y), (m, x), dense @ x),
        "csr matvec": (jx.jit(sparse.csr_matvec), (c, x[:, 0]), dense @ x[:, 0]),
        "coo matmat": (jx.jit(sparse.coo_matmat), (coo, x), dense @ x),
        "spsolve": (solve, (*sys_bufs, b), np.linalg.solve(sys_dense, b)),
        "lobpcg": (eig, (sym, x0), np.linalg.eigvalsh(sym.astype(np.float64))[::-1][:EK]),
    }
    out = {}
    for name in CASES:
        f, args, want = calls[name]
        got = np.asarray(f(*args))
        err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
        assert err < 1e-4, (lib, name, err)
        out[name] = sidebyside.timed(lambda f=f, a=args: f(*a), jx.block_until_ready, reps)
    return out


if __name__ == "__main__":
    sidebyside.main(__file__, worker, CASES)

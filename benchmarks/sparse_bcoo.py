"""``jax.experimental.sparse`` BCOO products under ``jit`` on the CPU: functx against JAX, each
library in its own process per round (rounds alternate the order), every result checked against
NumPy float64 first; medians of wall and CPU (``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/sparse_bcoo.py [--rounds 5] [--reps 20]
"""

from __future__ import annotations

import numpy as np
import sidebyside

N, NSE, K = 4096, 65536, 16  # a 4096x4096 matrix with 65536 stored entries, 16 right-hand sides
BATCH, BN, BNSE = 8, 1024, 8192  # a batch of 8 1024x1024 matrices (n_batch=1), 8192 entries each
CASES = ("spmv", "spmm", "grad spmm (data, X)", "batched spmm", "todense")


def _inputs():
    rng = np.random.default_rng(0)
    idx = rng.integers(0, N, size=(NSE, 2)).astype(np.int32)
    data = rng.standard_normal(NSE).astype(np.float32)
    x = rng.standard_normal((N, K)).astype(np.float32)
    bidx = rng.integers(0, BN, size=(BATCH, BNSE, 2)).astype(np.int32)
    bdata = rng.standard_normal((BATCH, BNSE)).astype(np.float32)
    bx = rng.standard_normal((BATCH, BN, K)).astype(np.float32)
    return idx, data, x, bidx, bdata, bx


def _references(idx, data, x, bidx, bdata, bx):
    def spmm(i, d, y, n):
        out = np.zeros((n, y.shape[-1]))
        np.add.at(out, i[:, 0], d[:, None].astype(np.float64) * y[i[:, 1]])
        return out

    dense = np.zeros((N, N))
    np.add.at(dense, (idx[:, 0], idx[:, 1]), data)
    ones = np.ones((N, K))
    grad_data = (x[idx[:, 1]].astype(np.float64)).sum(1)  # d/d data_i of sum(A @ X)
    grad_x = np.zeros((N, K))
    np.add.at(grad_x, idx[:, 1], data[:, None].astype(np.float64) * ones[idx[:, 0]])
    batched = np.stack([spmm(bidx[b], bdata[b], bx[b], BN) for b in range(BATCH)])
    return {
        "spmv": spmm(idx, data, x[:, :1], N)[:, 0],
        "spmm": spmm(idx, data, x, N),
        "grad spmm (data, X)": (grad_data, grad_x),
        "batched spmm": batched,
        "todense": dense,
    }


def worker(lib, reps):
    if lib == "functx":
        import functx as jx
        from functx.experimental import sparse
    else:
        import jax as jx
        from jax.experimental import sparse
    idx, data, x, bidx, bdata, bx = _inputs()
    m = sparse.BCOO((data, idx), shape=(N, N))
    bm = sparse.BCOO((bdata, bidx), shape=(BATCH, BN, BN))
    loss = jx.grad(lambda d, y: (sparse.BCOO((d, idx), shape=(N, N)) @ y).sum(), (0, 1))
    calls = {
        "spmv": (jx.jit(lambda m, v: m @ v), (m, x[:, 0])),
        "spmm": (jx.jit(lambda m, y: m @ y), (m, x)),
        "grad spmm (data, X)": (jx.jit(loss), (data, x)),
        "batched spmm": (jx.jit(lambda m, y: m @ y), (bm, bx)),
        "todense": (jx.jit(lambda m: m.todense()), (m,)),
    }
    refs, out = _references(idx, data, x, bidx, bdata, bx), {}
    for name in CASES:
        f, args = calls[name]
        got, want = jx.tree_util.tree_leaves(f(*args)), jx.tree_util.tree_leaves(refs[name])
        for g, w in zip(got, want):
            err = np.abs(np.asarray(g) - w).max() / max(1.0, np.abs(w).max())
            assert err < 1e-4, (lib, name, err)
        out[name] = sidebyside.timed(lambda f=f, a=args: f(*a), jx.block_until_ready, reps)
    return out


if __name__ == "__main__":
    sidebyside.main(__file__, worker, CASES)

"""``jax.experimental.sparse``'s BCOO shape operations, sparse product and ``sparsify`` under
``jit`` on the CPU: functx against JAX, each library in its own process per round (rounds
alternate the order), every result checked against NumPy float64 first; medians of wall and CPU
(``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/sparse_ops.py [--rounds 5] [--reps 20]
"""

from __future__ import annotations

import numpy as np
import sidebyside

N, NSE, K = 2048, 32768, 16  # a 2048x2048 matrix with 32768 stored entries (sorted, unique)
B, S, BNSE = 8, 256, 512  # a batch of 8 256x256 matrices (n_batch=1), 512 entries each
SN, SNSE = 256, 1024  # multiply_sparse pairs every two entries: a 256x256 matrix, 1024 entries
CASES = (
    "slice rows",
    "reshape",
    "update_layout (batch -> sparse)",
    "multiply_sparse",
    "sparsify sin(A) @ X",
    "sparse grad",
)


def _coo(rng, n, nse, batch=()):
    """Sorted unique (data, indices) of ``batch`` n x n matrices with ``nse`` entries each."""
    count = int(np.prod(batch))
    flat = np.sort([rng.choice(n * n, nse, replace=False) for _ in range(count)], axis=-1)
    idx = np.stack([flat // n, flat % n], -1).astype(np.int32).reshape(*batch, nse, 2)
    return rng.standard_normal((*batch, nse)).astype(np.float32), idx


def _dense(data, idx, shape):
    out = np.zeros(shape)
    for b in np.ndindex(*shape[:-2]):
        out[b][idx[b][:, 0], idx[b][:, 1]] = data[b]
    return out


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, K)).astype(np.float32)
    return _coo(rng, N, NSE), _coo(rng, S, BNSE, (B,)), _coo(rng, SN, SNSE), x


def _references(big, batched, small, x):
    dense, sm = _dense(*big, (N, N)), _dense(*small, (SN, SN))
    idx = big[1]
    return {
        "slice rows": dense[N // 4 : N // 2],
        "reshape": dense.reshape(N // 2, 2 * N),
        "update_layout (batch -> sparse)": _dense(*batched, (B, S, S)),
        "multiply_sparse": sm * sm,
        "sparsify sin(A) @ X": np.sin(dense) @ x,
        "sparse grad": (np.cos(dense) * (x.sum(1)[None, :]))[idx[:, 0], idx[:, 1]],
    }


def worker(lib, reps):
    if lib == "functx":
        import functx as jx
        import functx.numpy as jnp
        from functx.experimental import sparse
    else:
        import jax as jx
        import jax.numpy as jnp
        from jax.experimental import sparse
    big, batched, small, x = _inputs()
    flags = {"indices_sorted": True, "unique_indices": True}
    m = sparse.BCOO(big, shape=(N, N), **flags)
    bm = sparse.BCOO(batched, shape=(B, S, S), **flags)
    sm = sparse.BCOO(small, shape=(SN, SN), **flags)
    calls = {
        "slice rows": (
            lambda m: sparse.bcoo_slice(m, start_indices=(N // 4, 0), limit_indices=(N // 2, N)),
            lambda out: out.todense(),
        ),
        "reshape": (lambda m: m.reshape(N // 2, 2 * N), lambda out: out.todense()),
        "update_layout (batch -> sparse)": (
            lambda m: sparse.bcoo_update_layout(m, n_batch=0),
            lambda out: out.todense(),
        ),
        "multiply_sparse": (lambda m: sparse.bcoo_multiply_sparse(m, m), lambda out: out.todense()),
        "sparsify sin(A) @ X": (sparse.sparsify(lambda m: jnp.sin(m) @ x), lambda out: out),
        "sparse grad": (
            sparse.grad(sparse.sparsify(lambda m: jnp.sum(jnp.sin(m) @ x))),
            lambda out: out.data,
        ),
    }
    operand = {"update_layout (batch -> sparse)": bm, "multiply_sparse": sm}
    refs, out = _references(big, batched, small, x), {}
    for name in CASES:
        (op, read), a = calls[name], operand.get(name, m)
        f = jx.jit(op)
        got = np.asarray(jx.jit(lambda a, op=op, read=read: read(op(a)))(a), np.float64)
        err = np.abs(got - refs[name]).max() / max(1.0, np.abs(refs[name]).max())
        assert err < 1e-4, (lib, name, err)
        out[name] = sidebyside.timed(lambda f=f, a=a: f(a), jx.block_until_ready, reps)
    return out


if __name__ == "__main__":
    sidebyside.main(__file__, worker, CASES)

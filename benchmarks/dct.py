"""``scipy.fft``'s DCT under ``jit`` on the CPU: functx against JAX, each library in its own process
per round (rounds alternate the order), values checked against SciPy first; medians of wall and
CPU (``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/dct.py [--rounds 5]
"""

from __future__ import annotations

import numpy as np
import sidebyside

CASES = {  # name: (shape, what)
    "dct ortho (256, 1024)": ((256, 1024), "dct"),
    "idct (256, 1024)": ((256, 1024), "idct"),
    "dctn (256, 256)": ((256, 256), "dctn"),
    "grad of sum(dctn^2) (256, 256)": ((256, 256), "grad"),
}


def _functions(lib):
    if lib == "functx":
        import functx as jx
        import functx.numpy as jnp
        import functx.scipy.fft as sfft
    else:
        import jax as jx
        import jax.numpy as jnp
        import jax.scipy.fft as sfft
    return jx, {
        "dct": lambda x: sfft.dct(x, norm="ortho"),
        "idct": sfft.idct,
        "dctn": sfft.dctn,
        "grad": jx.grad(lambda x: jnp.sum(sfft.dctn(x) ** 2)),
    }


def _reference(what, x):
    import scipy.fft

    x = x.astype(np.float64)
    if what == "dct":
        return scipy.fft.dct(x, norm="ortho")
    if what == "idct":
        return scipy.fft.idct(x)
    if what == "dctn":
        return scipy.fft.dctn(x)
    # d/dx sum((M x M^T)^2) = 2 M^T (M x M^T) M, M the DCT matrix of a square x
    m = scipy.fft.dct(np.eye(x.shape[0]), axis=0)
    return 2 * m.T @ (m @ x @ m.T) @ m


def worker(lib, reps):
    jx, fns = _functions(lib)
    out = {}
    rng = np.random.default_rng(0)
    for name, (shape, what) in CASES.items():
        x = rng.standard_normal(shape).astype(np.float32)
        f = jx.jit(fns[what])
        got = np.asarray(f(x))
        want = _reference(what, x)
        err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
        assert err < 1e-4, (lib, name, err)
        out[name] = sidebyside.timed(lambda f=f, x=x: f(x), jx.block_until_ready, reps)
    return out


if __name__ == "__main__":
    sidebyside.main(__file__, worker, list(CASES))

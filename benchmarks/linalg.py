"""Dense linear algebra on the CPU: functx (jit, C++ with LAPACK library steps) vs JAX (jit) vs
NumPy/SciPy, in one process. Issue 19's cases: cholesky + solve and eigh of a 512x512 matrix and
of a batch of 64x64 matrices, float64 and float32.

Run: ``python benchmarks/linalg.py [batch]`` (batch defaults to 64). Prints milliseconds per call
(median of repeats after a warm-up). The library step costs a Python call (about 10-20 us) and
one copy of each operand and result, against an O(n^3) LAPACK call. On a machine whose cores are
shared with other work, set ``OPENBLAS_NUM_THREADS=1``: OpenBLAS's spinning threads otherwise
make NumPy's (and so functx's) LAPACK calls 100x slower (a 256x256 Cholesky: 0.44 s against
1.3 ms on the 2-core test machine).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.linalg as sl

import functx
import functx.numpy as fnp
import functx.scipy.linalg as fsl

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
except ImportError:  # pragma: no cover
    jax = None


def ms(fn, *args, repeat=15):
    fn(*args)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        if jax is not None:
            jax.block_until_ready(out)
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


def spd(shape, dt, rng):
    a = rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dt)


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    functx.config.update("jax_enable_x64", True)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    rows = []
    for dt in (np.float64, np.float32):
        for shape in ((512, 512), (batch, 64, 64)):
            a = spd(shape, dt, rng)
            b = rng.standard_normal((*shape[:-1], 8)).astype(dt)

            def fx_cs(a, b):
                return fsl.cho_solve(fsl.cho_factor(a), b)

            def fx_eigh(a):
                return fnp.linalg.eigh(a)

            def np_cs(a, b):
                if a.ndim == 2:
                    return sl.cho_solve(sl.cho_factor(a), b)
                return np.linalg.solve(np.linalg.cholesky(a), b)  # (NumPy: no batched cho_solve)

            name = f"{np.dtype(dt).name} {'x'.join(map(str, shape))}"
            row = {
                "case": name,
                "functx cholesky+solve": ms(functx.jit(fx_cs), a, b),
                "numpy/scipy cholesky+solve": ms(np_cs, a, b),
                "functx eigh": ms(functx.jit(fx_eigh), a),
                "numpy eigh": ms(np.linalg.eigh, a),
            }
            if jax is not None:
                row["jax cholesky+solve"] = ms(
                    jax.jit(lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b)), a, b
                )
                row["jax eigh"] = ms(jax.jit(jnp.linalg.eigh), a)
            rows.append(row)
    keys = [k for k in rows[0] if k != "case"]
    print(f"{'case':<20}" + "".join(f"{k:>28}" for k in keys))
    for r in rows:
        print(f"{r['case']:<20}" + "".join(f"{r[k]:>25.3f} ms" for k in keys))


if __name__ == "__main__":
    main()

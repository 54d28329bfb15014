"""Eager dispatch overhead: one small op on 10-element arrays, functx vs bare NumPy (and JAX).

Run: ``python benchmarks/eager_overhead.py``. Prints microseconds per call (best of 5 repeats).
"""

from __future__ import annotations

import os
import timeit

import numpy as np

import functx
import functx.numpy as fnp
from functx import lax, primitives as P


def per_call_us(fn, number=20000, repeat=5):
    fn()  # warm up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
    x = np.linspace(0.0, 1.0, 10, dtype=np.float32)
    y = np.linspace(1.0, 2.0, 10, dtype=np.float32)
    a, b = fnp.asarray(x), fnp.asarray(y)
    rows = [
        ("np.add(x, y)", lambda: np.add(x, y)),
        ("np.sin(x)", lambda: np.sin(x)),
        ("functx.numpy.add(a, b)", lambda: fnp.add(a, b)),
        ("a + b", lambda: a + b),
        ("a + 1.0 (weak scalar)", lambda: a + 1.0),
        ("functx.lax.add(a, b)", lambda: lax.add(a, b)),
        ("functx.numpy.sin(a)", lambda: fnp.sin(a)),
        ("add_p.bind(a, b)", lambda: P.add_p.bind(a, b)),
        ("add_p.impl(x, y)", lambda: P.add_p.impl(x, y)),
        ("add_p.abstract_eval(avals)", lambda: P.add_p.abstract_eval(a.aval, b.aval)),
        ("functx.numpy.add(ndarray, ndarray)", lambda: fnp.add(x, y)),
    ]
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax.numpy as jnp

        ja, jb = jnp.asarray(x), jnp.asarray(y)
        rows += [
            ("jax.numpy.add(a, b)", lambda: jnp.add(ja, jb).block_until_ready()),
            ("jax.numpy.sin(a)", lambda: jnp.sin(ja).block_until_ready()),
        ]
    except ImportError:
        pass
    base = per_call_us(rows[0][1])
    print(f"functx {functx.__version__}, NumPy {np.__version__}; 10-element float32 arrays")
    print(f"{'call':40s} {'us/call':>9s} {'x np.add':>9s}")
    for name, fn in rows:
        t = per_call_us(fn, number=2000 if "jax" in name else 20000)
        print(f"{name:40s} {t:9.2f} {t / base:9.1f}")


if __name__ == "__main__":
    main()

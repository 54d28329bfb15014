"""Mutable array references (``functx.ref``) on the CPU, functx against JAX: what a ``Ref``
costs per operation. Each library runs in its own process per round (rounds alternate the
order); every case's result is checked first against NumPy; medians of wall and CPU
(``time.process_time``: all threads) milliseconds per call of 100 operations.

    PYTHONPATH=. python benchmarks/refs.py [--rounds 5]
"""

from __future__ import annotations

import numpy as np
import sidebyside

OPS = 100
CASES = (
    ("eager r[i] += 1.0, x100", "eager"),
    ("jit(step)(ref, y) with r[...] += y, x100 calls", "jit_arg"),
    ("jit: fori_loop of 100 r[i] += 1.0 (ref made inside)", "loop"),
)


def worker(lib, reps):
    if lib == "functx":
        import functx as jx
    else:
        import jax as jx
    jnp = jx.numpy
    y = jnp.ones(64, jnp.float32)

    @jx.jit
    def step(acc, v):
        acc[...] += v

    @jx.jit
    def loop(x):
        r = jx.new_ref(x)

        def body(i, c):
            r[i % 64] += 1.0
            return c

        jx.lax.fori_loop(0, OPS, body, 0)
        return jx.freeze(r)

    def eager():
        r = jx.new_ref(jnp.zeros(64, jnp.float32))
        for i in range(OPS):
            r[i % 64] += 1.0
        return r[...]

    def jit_arg():
        r = jx.new_ref(jnp.zeros(64, jnp.float32))
        for _ in range(OPS):
            step(r, y)
        return r[...]

    runs = {"eager": eager, "jit_arg": jit_arg, "loop": lambda: loop(jnp.zeros(64, jnp.float32))}
    want = {
        "eager": np.bincount(np.arange(OPS) % 64, minlength=64),
        "jit_arg": np.full(64, OPS),
        "loop": np.bincount(np.arange(OPS) % 64, minlength=64),
    }
    out = {}
    for name, what in CASES:
        np.testing.assert_array_equal(np.asarray(runs[what]()), want[what])
        out[name] = sidebyside.timed(runs[what], jx.block_until_ready, reps)
    return out


if __name__ == "__main__":
    sidebyside.main(__file__, worker, [name for name, _ in CASES])

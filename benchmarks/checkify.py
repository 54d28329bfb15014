"""``checkify`` under ``jit`` on the CPU: what the checks cost, functx against JAX. Each library
runs in its own process per round (rounds alternate the order); every program's value and
error message are checked first (against NumPy float64, and a planted failure must be
reported); medians of wall and CPU (``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/checkify.py [--rounds 5]
"""

from __future__ import annotations

import numpy as np
import sidebyside

N = 1_000_000
CASES = (  # name: what
    ("chain (10^6), no checkify", "plain"),
    ("chain (10^6), float_checks", "float"),
    ("chain (10^6), user check + float_checks", "user"),
    ("scan of 1000 steps with a user check", "scan"),
)


def _programs(lib):
    if lib == "functx":
        import functx as jx
        import functx.numpy as jnp
        from functx.experimental import checkify as ck
    else:
        import jax as jx
        import jax.numpy as jnp
        from jax.experimental import checkify as ck

    def chain(x):
        return jnp.sum(jnp.log(x) * jnp.sin(x) + jnp.sqrt(x))

    def user(x):
        ck.check(jnp.min(x) > 0, "x has a non-positive element: min {}", jnp.min(x))
        return chain(x)

    def scan(x):
        def step(c, y):
            ck.check(y > 0, "step {} has y={}", c, y)
            return c + 1, jnp.sqrt(y) * 2

        return jx.lax.scan(step, 0, x)[1].sum()

    def checked(f, errors):
        g = jx.jit(ck.checkify(f, errors=errors))
        return lambda x: g(x)

    return (
        jx,
        jnp,
        {
            "plain": lambda: jx.jit(chain),
            "float": lambda: checked(chain, ck.float_checks),
            "user": lambda: checked(user, ck.float_checks | ck.user_checks),
            "scan": lambda: checked(scan, ck.user_checks),
        },
    )


def _inputs(what, rng):
    n = 1000 if what == "scan" else N
    return rng.uniform(0.5, 2.0, n).astype(np.float32)


def _reference(what, x):
    x = x.astype(np.float64)
    if what == "scan":
        return np.sum(np.sqrt(x) * 2)
    return np.sum(np.log(x) * np.sin(x) + np.sqrt(x))


def worker(lib, reps):
    jx, jnp, progs = _programs(lib)
    out = {}
    rng = np.random.default_rng(0)
    for name, what in CASES:
        f = progs[what]()
        x = _inputs(what, rng)
        res = f(jnp.asarray(x))
        err, val = (None, res) if what == "plain" else res
        want = _reference(what, x)
        assert abs(float(val) - want) <= 1e-4 * abs(want), (lib, name, float(val), want)
        if err is not None:
            assert err.get() is None, (lib, name, err.get())
            bad = x.copy()
            bad[len(bad) // 2] = -1.0
            msg = f(jnp.asarray(bad))[0].get()
            assert msg is not None and ("nan" in msg or "non-positive" in msg or "y=-1.0" in msg)
        xs = jnp.asarray(x)
        out[name] = sidebyside.timed(lambda f=f, xs=xs: f(xs), jx.block_until_ready, reps)
    return out


if __name__ == "__main__":
    sidebyside.main(__file__, worker, [name for name, _ in CASES])

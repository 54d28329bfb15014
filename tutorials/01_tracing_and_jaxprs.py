# %% [markdown]
# # Tracing a function into a Jaxpr
#
# functx stages a Python function into a *Jaxpr*: a flat list of equations over a small set of
# primitives, with the shape and dtype of every value. Every transform (grad, vmap, jit) reads and
# writes Jaxprs, so being able to read one is the first skill. This tutorial traces a layer-norm +
# GELU block, reads its Jaxpr, checks the eager result against NumPy in float64 (and against JAX
# where it is installed), and times the eager path against plain NumPy.
#
# Run it as a script (`python tutorials/01_tracing_and_jaxprs.py`) or open it as a notebook with
# jupytext; the tests execute it.

# %%
import collections
import time

import numpy as np

import functx
from functx import nn


def block(x, scale, bias):
    """Layer norm over the last axis, then an affine map and tanh-approximated GELU."""
    y = nn.standardize(x, axis=-1)
    return nn.gelu(y * scale + bias, approximate=True)


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 32)).astype(np.float32)
scale = rng.standard_normal(32).astype(np.float32)
bias = rng.standard_normal(32).astype(np.float32)

# %% [markdown]
# ## 1. Trace
# `make_jaxpr(f)(*args)` calls `f` on tracers (stand-ins that carry only shape and dtype) and
# returns the recorded program. Python control flow runs at trace time, so only array operations
# remain.

# %%
closed = functx.make_jaxpr(block)(x, scale, bias)
print(closed)
functx.typecheck_jaxpr(closed)

# %% [markdown]
# ## 2. Read it
# Each equation is one primitive applied to variables or literals. `standardize` and `gelu` are
# composites: they add no primitive of their own. Each equation also remembers the user's line that
# produced it, which is what error messages point at.

# %%
counts = collections.Counter(eqn.prim.name for eqn in closed.eqns)
print(f"{len(closed.eqns)} equations over {len(counts)} primitives:", dict(counts))
first = closed.eqns[0]
print("first equation comes from:", first.source_info)

# %% [markdown]
# ## 3. Check it
# Outside a trace the same primitives run on NumPy: that is the eager path. We compare it with the
# same math in NumPy float64, and with JAX when it is installed.

# %%


def block_ref(x, scale, bias):
    x, scale, bias = (np.asarray(a, np.float64) for a in (x, scale, bias))
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    z = (x - mean) / np.sqrt(var + 1e-5) * scale + bias
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))


got = np.asarray(block(x, scale, bias))
want = block_ref(x, scale, bias)
np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
print(f"eager vs NumPy float64: max abs error {np.max(np.abs(got - want)):.1e}")

try:
    import jax
    import jax.numpy as jjnp

    with jax.default_device(jax.devices("cpu")[0]):
        y = jax.nn.standardize(jjnp.asarray(x), axis=-1)
        ref_jax = np.asarray(jax.nn.gelu(y * scale + bias, approximate=True))
    np.testing.assert_allclose(got, ref_jax, rtol=1e-4, atol=1e-5)
    print(f"eager vs JAX {jax.__version__}: max abs error {np.max(np.abs(got - ref_jax)):.1e}")
except ImportError:
    print("JAX is not installed; skipped the comparison with it")

# %% [markdown]
# ## 4. Time it
# The eager path dispatches one NumPy call per primitive, so it costs about what the NumPy code
# costs plus a small overhead per operation; `jit` (coming) removes both by fusing the whole block
# into one kernel. The figures are for information only.


# %%
def best_of(f, repeat=20):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


t_functx = best_of(lambda: block(x, scale, bias))
t_numpy = best_of(lambda: block_ref(x, scale, bias))
print(
    f"eager functx {t_functx * 1e6:.0f} us, NumPy float64 {t_numpy * 1e6:.0f} us, "
    f"ratio {t_functx / t_numpy:.1f}x"
)

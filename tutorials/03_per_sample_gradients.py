# %% [markdown]
# # Per-sample gradients with vmap(grad(loss))
#
# One line gives the gradient of the loss of *each example* with respect to the parameters:
# `functx.vmap(functx.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)`. Both transforms rewrite
# the Jaxpr, so the batched gradient is one Jaxpr with no per-example loop, and the weights are not
# copied per example. We check it against JAX and against an explicit loop, then compile it
# with `functx.jit` and time it against `jax.jit` of the same program.
#
# Run it as a script (`python tutorials/03_per_sample_gradients.py`) or as a notebook through
# jupytext; the docs build executes it.

# %%
import os
import platform
import time

import numpy as np

import functx
import functx.numpy as jnp
from functx import nn


def init_mlp(rng, sizes):
    return {
        f"layer{i}": {
            "w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            "b": np.zeros(n, np.float32),
        }
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def mlp(params, x):
    n = len(params)
    for i in range(n):
        layer = params[f"layer{i}"]
        x = x @ layer["w"] + layer["b"]
        if i < n - 1:
            x = jnp.tanh(x)
    return x


def loss(params, x, y):
    """Cross-entropy of one example (x: features, y: integer label)."""
    logits = mlp(params, x)
    return -jnp.sum(nn.one_hot(y, logits.shape[-1]) * nn.log_softmax(logits))


rng = np.random.default_rng(0)
params = init_mlp(rng, [8, 16, 16, 4])
xs = rng.standard_normal((32, 8)).astype(np.float32)
ys = rng.integers(0, 4, 32).astype(np.int32)

per_sample_grads = functx.vmap(functx.grad(loss), in_axes=(None, 0, 0))
grads = per_sample_grads(params, xs, ys)
print({k: {n: v.shape for n, v in layer.items()} for k, layer in grads.items()})

# %% [markdown]
# The batched gradient Jaxpr: the weights `w` enter unbatched (no broadcast of a weight matrix to
# the batch size), and every `dot_general` handles the whole batch at once.

# %%
jaxpr = functx.make_jaxpr(per_sample_grads)(params, xs, ys)
print(jaxpr)
prims = [e.prim.name for e in jaxpr.eqns]
print("equations:", len(prims), " dot_general:", prims.count("dot_general"))
assert "scan" not in prims and "while" not in prims  # no per-sample loop
for e in jaxpr.eqns:  # no materialised batch copy of a weight matrix
    if e.prim.name == "broadcast_in_dim":
        assert e.outvars[0].aval.shape[1:] not in [(8, 16), (16, 16), (16, 4)], e

# %% [markdown]
# ## Check against an explicit loop and against JAX

# %%
loop = [functx.grad(loss)(params, xs[i], ys[i]) for i in range(len(xs))]
for name in params:
    for p in ("w", "b"):
        stacked = np.stack([np.asarray(g[name][p]) for g in loop])
        np.testing.assert_allclose(np.asarray(grads[name][p]), stacked, rtol=1e-5, atol=1e-6)
print("matches the per-example loop")

try:  # JAX is the reference; both libraries run on the CPU in this tutorial
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jjnp

    def jloss(params, x, y):
        h = x
        n = len(params)
        for i in range(n):
            layer = params[f"layer{i}"]
            h = h @ layer["w"] + layer["b"]
            if i < n - 1:
                h = jjnp.tanh(h)
        return -jjnp.sum(jax.nn.one_hot(y, h.shape[-1]) * jax.nn.log_softmax(h))

    jax_psg = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
    jgrads = jax_psg(params, xs, ys)
    for name in params:
        for p in ("w", "b"):
            np.testing.assert_allclose(
                np.asarray(grads[name][p]), np.asarray(jgrads[name][p]), rtol=2e-5, atol=2e-6
            )
    print("matches jax.jit(jax.vmap(jax.grad(loss)))")
except ImportError:
    jax = None
    print("JAX is not installed: skipped the comparison with JAX")

# %% [markdown]
# ## A linear model
#
# For least squares, the per-example gradient has a closed form: `(x . w - y) * x`.


# %%
def lsq(w, x, y):
    return 0.5 * (jnp.dot(x, w) - y) ** 2


w = rng.standard_normal(8).astype(np.float32)
yl = rng.standard_normal(32).astype(np.float32)
g = functx.vmap(functx.grad(lsq), in_axes=(None, 0, 0))(w, xs, yl)
np.testing.assert_allclose(np.asarray(g), (xs @ w - yl)[:, None] * xs, rtol=1e-4, atol=1e-5)
print("linear model: per-example gradients match the closed form")
print(functx.make_jaxpr(functx.vmap(functx.grad(lsq), in_axes=(None, 0, 0)))(w, xs, yl))

# %% [markdown]
# ## Compile it: `jit(vmap(grad(loss)))`
# `functx.jit` compiles the batched gradient Jaxpr printed above into fused C++ kernels: the
# matrix products become `dot` kernels, the per-example weight gradients (outer products: a
# contraction over a dimension of size 1) become `pointwise` kernels of shape
# (batch, fan_in, fan_out), and the elementwise work between them (tanh, its derivative, the
# softmax) is fused into the kernels that read it. The first call
# traces and compiles (the code is then cached on disk); later calls with the same shapes and
# dtypes run the compiled program. `lower(...)` shows what was generated without running it:
# here, the list of kernels (tutorial 05 goes through the rest of the text).

# %%
psg_jit = functx.jit(per_sample_grads)
t0 = time.perf_counter()
grads_jit = psg_jit(params, xs, ys)
print(f"first call (trace + compile + run): {time.perf_counter() - t0:.1f} s")
for name in params:
    for p in ("w", "b"):
        np.testing.assert_allclose(grads_jit[name][p], grads[name][p], rtol=1e-4, atol=1e-5)
print("compiled per-example gradients match the eager ones")
text = psg_jit.lower(params, xs, ys).as_text()
print(text[text.index("# kernels") : text.index("# C++")].strip())

# %% [markdown]
# ## Time it against JAX
# The same program compiled by both libraries (`jax.jit(jax.vmap(jax.grad(loss)))` with the
# JAX version of the loss above), and, as a baseline, the compiled gradient of ONE example called
# in a Python loop over the batch, which is what `vmap` saves. Each figure is the median of 20
# calls after a warm-up call, measured in this run on the machine named below. At these small
# sizes (chosen so the tutorial runs in seconds) the figures are illustrative: they move with
# the machine's load, and the ratio changes with the model and batch size.


# %%
def machine():
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(s.split(":", 1)[1].strip() for s in fh if s.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{model}, {os.cpu_count()} CPUs, {platform.system()}, load average {load:.1f}"


def median_time(fn, calls=20):
    block = jax.block_until_ready if jax is not None else (lambda out: out)
    block(fn())  # warm-up (and compile)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        block(fn())  # (JAX dispatches asynchronously: wait for the result)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


grad_one = functx.jit(functx.grad(loss))
print("machine:", machine())
print(f"batch {len(xs)}, MLP 8-16-16-4, float32; median of 20 calls")
t_fx = median_time(lambda: psg_jit(params, xs, ys))
t_loop = median_time(lambda: [grad_one(params, xs[i], ys[i]) for i in range(len(xs))], calls=5)
print(f"functx.jit(vmap(grad))          {t_fx * 1e6:8.1f} us")
print(f"functx.jit(grad) in a loop       {t_loop * 1e6:8.1f} us   ({t_loop / t_fx:.0f}x the vmap)")
if jax is not None:
    for name in params:
        for p in ("w", "b"):
            np.testing.assert_allclose(grads_jit[name][p], jgrads[name][p], rtol=1e-4, atol=1e-5)
    print("compiled per-example gradients match jax.jit's")
    t_jax = median_time(lambda: jax_psg(params, xs, ys))
    print(f"jax.jit(vmap(grad))             {t_jax * 1e6:8.1f} us")
    print(f"functx takes {t_fx / t_jax:.2f}x JAX's time")
print("03 tutorial: all checks passed")

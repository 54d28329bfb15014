# %% [markdown]
# # Tracing a function into a Jaxpr
#
# functx stages a Python function into a *Jaxpr*: a flat list of equations over a small set of
# primitives, with the shape and dtype of every value. Every transform (grad, vmap, jit) reads and
# writes Jaxprs, so being able to read one is the first skill. This tutorial traces a layer-norm +
# GELU block, reads its Jaxpr, checks the eager result against NumPy in float64 (and against JAX
# where it is installed), then compiles it with `functx.jit`, looks at the generated kernel and
# times eager, compiled and plain NumPy.
#
# Run it as a script (`python tutorials/01_tracing_and_jaxprs.py`) or as a notebook through
# jupytext; the docs build executes it. The next tutorials build on it: 02
# differentiates (`grad`), 03 batches and compiles gradients (`jit(vmap(grad(...)))`), 04
# compiles a scan and its gradient and reads the kernel, 05 shows how to inspect and debug
# compiled code, 06 runs on a GPU, 07 ports a JAX program.

# %%
import collections
import os
import platform
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
# ## 4. Compile it
# `functx.jit(block)` returns a function that, on its first call with given shapes and dtypes,
# traces `block` to the Jaxpr above, lowers it to a loop IR, groups the operations into kernels
# and compiles them to C++ (with gcc; OpenMP and SIMD on the CPU, Triton kernels on a GPU).
# Later calls with the same shapes and dtypes run the compiled program directly. The results
# agree with the eager ones to float32 rounding.

# %%
block_jit = functx.jit(block)
t = time.perf_counter()
got_jit = block_jit(x, scale, bias)
print(f"first call (trace + compile + run): {time.perf_counter() - t:.2f} s")
print(type(got_jit).__name__, got_jit.shape, got_jit.dtype)
np.testing.assert_allclose(got_jit, got, rtol=1e-5, atol=1e-6)
print(f"jit vs eager: max abs difference {np.max(np.abs(np.asarray(got_jit) - got)):.1e}")

# %% [markdown]
# ## 5. What was generated
# `block_jit.lower(x, scale, bias).as_text()` shows every stage: the final Jaxpr, the loop IR
# (each node and the kernel it belongs to), the list of kernels, and the C++ source. Here the
# whole block becomes a single kernel: a reduction over each row that accumulates the sum and
# the sum of squares in one pass (`a3`, `a8`), then, in the same row loop, normalises, applies
# the affine map and GELU and writes the output: no intermediate array goes to memory. Below are
# the kernel list and the C++ of that kernel; tutorial 05 goes through the whole text.

# %%
text = block_jit.lower(x, scale, bias).as_text()
print(text[text.index("# kernels") : text.index("# C++")].strip())
cpp = text[text.index("# C++") :].splitlines()
start = next(i for i, line in enumerate(cpp) if line.strip().startswith("// kernel 0:"))
end = next(
    i
    for i in range(start + 1, len(cpp))
    if cpp[i].strip().startswith(("// kernel ", "if (fx_k", "fx_free", "return ")) or cpp[i] == "}"
)
kernel_0 = "\n".join(cpp[start:end])
print(kernel_0)
assert "omp simd" in kernel_0  # a vectorised loop

# %% [markdown]
# ## 6. Time it
# The eager path dispatches one NumPy call per primitive, so it costs about what the NumPy code
# costs plus a small overhead per operation; the compiled block runs as fused loops with no
# Python in between. Each figure is the median of 50 calls after a warm-up call, in this run, on
# the machine printed below. At this small size the figures are illustrative: they move with the
# machine's load and with the size of the arrays.


# %%
def median_time(f, calls=50):
    f()  # warm-up
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}")
t_eager = median_time(lambda: block(x, scale, bias))
t_jit = median_time(lambda: block_jit(x, scale, bias))
t_numpy = median_time(lambda: block_ref(x, scale, bias))
print(f"eager functx {t_eager * 1e6:8.1f} us")
print(f"functx.jit   {t_jit * 1e6:8.1f} us")
print(f"NumPy        {t_numpy * 1e6:8.1f} us  (float64)")

# %% [markdown]
# ## 7. Putting it together
# Transforms compose: here is the per-example gradient of a loss built on `block`, batched with
# `vmap`, differentiated with `grad` and compiled with `jit`, in one line, and the kernels it
# compiled to. Here that is a single kernel: one loop over the examples (the rows of `x`) that
# computes the two row sums the layer norm needs, then, in the same loop, writes both gradients
# (two "maps"): the gradients with respect to `scale` and `bias` need no further reduction.
# Tutorials 02 and 03 take these transforms one at a time, 04 and 05 read such programs kernel by
# kernel.


# %%
def loss(scale, bias, x_row):
    return functx.numpy.sum(block(x_row, scale, bias) ** 2)


per_example = functx.jit(functx.vmap(functx.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0)))
d_scale, d_bias = per_example(scale, bias, x)
print("per-example gradients:", d_scale.shape, d_bias.shape)
one = functx.grad(loss, argnums=(0, 1))(scale, bias, x[3])
np.testing.assert_allclose(d_scale[3], one[0], rtol=1e-4, atol=1e-5)
np.testing.assert_allclose(d_bias[3], one[1], rtol=1e-4, atol=1e-5)
print("row 3 matches the eager gradient of that example alone")
lowered = per_example.lower(scale, bias, x).as_text()
print(lowered[lowered.index("# kernels") : lowered.index("# C++")].strip())
print("01 tutorial: all checks passed")

# %% [markdown]
# # Porting a JAX program
#
# functx follows JAX's API: names, signatures, type promotion, dtypes, pytrees, random bits and
# error classes. A JAX program ports by changing its imports:
#
# ```python
# import functx as jax            # was: import jax
# import functx.numpy as jnp      # was: import jax.numpy as jnp
# ```
#
# This tutorial runs one small JAX training program under both libraries and compares the
# results, then goes through what to check when porting: x64 mode, random keys, the "sharp bits"
# JAX users know (immutable arrays, out-of-bounds indices, side effects under `jit`, Python
# control flow on traced values), and where the differences from JAX are listed.
#
# Run it as a script (`python tutorials/07_porting_from_jax.py`) or as a notebook through
# jupytext; the docs build executes it. It needs JAX installed (the test extra has
# it), since it compares with it.

# %%
import os
import platform
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # both libraries on the CPU here

import jax  # noqa: E402
import jax.numpy  # noqa: E402

import functx  # noqa: E402
import functx.numpy  # noqa: E402

LIBS = {"jax": (jax, jax.numpy), "functx": (functx, functx.numpy)}

# %% [markdown]
# ## 1. The import swap
# The program below is plain JAX: an MLP, a loss, `jit(value_and_grad(...))`, an SGD step over
# a pytree of parameters with `tree_util.tree_map`, parameters drawn with `random`. It is
# written once, as a function of the two modules `jax` and `jnp`, and run with JAX's and with
# functx's.


# %%
def train(jax, jnp, steps=20):
    """A JAX program: fit a small MLP to a sine with full-batch SGD; returns the losses, the
    final parameters, and the jitted step with its data (timed below)."""
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {
        "w1": jax.random.normal(k1, (1, 16)) * 0.5,
        "b1": jnp.zeros(16),
        "w2": jax.random.normal(k2, (16, 1)) * 0.25,
        "b2": jnp.zeros(1),
    }
    xs = jax.random.uniform(k3, (64, 1), minval=-2.0, maxval=2.0)
    ys = jnp.sin(xs)

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    @jax.jit
    def step(p, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.2 * b, p, g), value

    losses = []
    for _ in range(steps):
        params, value = step(params, xs, ys)
        losses.append(float(value))
    return losses, params, (step, xs, ys)


results = {name: train(*mods) for name, mods in LIBS.items()}
(jax_losses, jax_params, _), (fx_losses, fx_params, _) = results["jax"], results["functx"]
print("loss, first and last step:")
for name, (losses, _, _) in results.items():
    print(f"  {name:6s} {losses[0]:.6f} -> {losses[-1]:.6f}")
np.testing.assert_allclose(fx_losses, jax_losses, rtol=1e-5)
for k in jax_params:
    np.testing.assert_allclose(fx_params[k], jax_params[k], rtol=1e-4, atol=1e-6)
    assert fx_params[k].dtype == jax_params[k].dtype
print("same losses and parameters (float32 rounding), same dtypes")

# %% [markdown]
# Both ran the training step compiled (`jax.jit` there, `functx.jit` here). The time of one
# step, the median of 50 calls after a warm-up, in this run on the machine named below; at this
# toy size (64 examples, 16 hidden units) it is mostly the cost of a call, so the figures are
# illustrative only.


# %%
def median_time(fn, calls=50):
    jax.block_until_ready(fn())  # warm-up (JAX dispatches asynchronously: wait for results)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}")
step_times = {}
for name, (_, params, (step, xs, ys)) in results.items():
    step_times[name] = median_time(lambda: step(params, xs, ys))
    print(f"  {name:6s} one jitted SGD step: {step_times[name] * 1e6:7.1f} us")
print(f"functx takes {step_times['functx'] / step_times['jax']:.2f}x JAX's time")

# %% [markdown]
# The parameters above start from the same random numbers: `functx.random` produces JAX's bits
# (threefry), key for key, so a ported program draws the same data and initialisation.

# %% [markdown]
# ## 2. x64 mode
# As in JAX, arrays are 32-bit by default: `jnp.arange(3)` is int32, `jnp.array(1.0)` is
# float32, and float64 NumPy inputs are converted to float32 (JAX warns; functx converts
# silently). `config.update("jax_enable_x64", True)` switches both libraries to 64-bit defaults;
# Python scalars stay *weakly typed* in both modes (`x + 1.0` keeps `x`'s dtype).


# %%
def dtypes_of(jnp):
    f16 = jnp.ones(2, jnp.float16)
    return {
        "arange(3)": jnp.arange(3).dtype,
        "array(1.0)": jnp.array(1.0).dtype,
        "asarray(np.float64)": jnp.asarray(np.ones(2)).dtype,
        "f16 + 1.0": (f16 + 1.0).dtype,
        "f16 + int32": (f16 + jnp.int32(1)).dtype,
    }


for x64 in (False, True):
    for lib in (jax, functx):
        lib.config.update("jax_enable_x64", x64)
    ours, theirs = dtypes_of(functx.numpy), dtypes_of(jax.numpy)
    print(f"jax_enable_x64={x64}:", {k: str(v) for k, v in ours.items()})
    assert {k: str(v) for k, v in ours.items()} == {k: str(v) for k, v in theirs.items()}
for lib in (jax, functx):
    lib.config.update("jax_enable_x64", False)
print("dtypes agree with JAX in both modes")

# %% [markdown]
# ## 3. Random keys
# Both key styles work as in JAX: the raw `uint32[2]` keys of `random.PRNGKey` and the typed keys
# of `random.key`. `split`, `fold_in` and the samplers give JAX's values.

# %%
for name, (lib, _) in LIBS.items():
    key = lib.random.key(42)
    k_a, k_b = lib.random.split(key)
    draws = (
        lib.random.normal(k_a, (3,)),
        lib.random.randint(k_b, (3,), 0, 10),
        lib.random.bernoulli(lib.random.fold_in(key, 7), 0.5, (4,)),
    )
    print(f"{name:6s}", key.dtype, *(np.asarray(d) for d in draws))
    if name == "jax":
        jax_draws = draws
    else:
        for ours, theirs in zip(draws, jax_draws):
            np.testing.assert_array_equal(ours, theirs)
print("the same bits")

# %% [markdown]
# ## 4. The sharp bits
# JAX's well-known sharp bits hold in functx too, with the same exception classes: a ported
# program fails, or not, in the same places.
#
# **Arrays are immutable.** `x[0] = 1` raises a `TypeError`; write `x.at[0].set(1)`, which
# returns a new array (under `jit` it is done in place when it can be).

# %%
for name, (_, jnp) in LIBS.items():
    x = jnp.arange(4)
    try:
        x[0] = 10
    except TypeError as e:
        print(f"{name:6s} TypeError: {str(e).splitlines()[0][:90]}")
    print(f"{name:6s} x.at[0].set(10) -> {x.at[0].set(10)}, x stays {x}")

# %% [markdown]
# **Out-of-bounds indices do not raise.** A gather clamps the index into range and a scatter
# drops updates that fall outside (`.at[i].get(mode=...)` and `mode="fill"` choose otherwise).

# %%
for name, (_, jnp) in LIBS.items():
    x = jnp.arange(4)
    print(f"{name:6s} x[10] = {x[10]}, x.at[10].set(99) = {x.at[10].set(99)}")
    print(f"{name:6s} x.at[10].get(mode='fill', fill_value=-1) = ", end="")
    print(x.at[10].get(mode="fill", fill_value=-1))

# %% [markdown]
# **Side effects run at trace time.** Under `jit`, Python code runs once, when the function is
# traced; a `print` sees tracers, and later calls with the same shapes do not run it.
# `debug.print` prints values at run time (tutorial 05).

# %%
for name, (lib, jnp) in LIBS.items():
    seen = []

    @lib.jit
    def f(x):
        seen.append(type(x).__name__)  # runs when traced
        lib.debug.print("value {v}", v=x.sum())  # runs on every call
        return x * 2

    f(jnp.ones(3))
    f(jnp.ones(3))
    print(f"{name:6s} Python body ran {len(seen)} time(s) for 2 calls")
    assert len(seen) == 1

# %% [markdown]
# **Python control flow on traced values fails under `jit`** with JAX's error class
# (`TracerBoolConversionError`, a `ConcretizationTypeError`); use `lax.cond`, `jnp.where`,
# `lax.while_loop`, or make the argument static.

# %%
for name, (lib, jnp) in LIBS.items():

    def relu(x):
        return x if x > 0 else 0.0

    try:
        lib.jit(relu)(1.0)
    except lib.errors.ConcretizationTypeError as e:
        print(f"{name:6s} {type(e).__name__}")
    print(f"{name:6s} with jnp.where: {lib.jit(lambda x: jnp.where(x > 0, x, 0.0))(-1.0)}")
    print(f"{name:6s} static: {lib.jit(relu, static_argnums=0)(2.0)}")

# %% [markdown]
# ## 5. Where functx differs
# The deliberate differences (for example: new arrays go to the CPU even when a GPU is present;
# `donate_argnums` is checked but no buffer is reused; functx's own error messages) are listed,
# with the JAX names functx does not have yet, on the **"Differences from JAX"** page of the
# docs site (`docs/differences.md` in the repository). The site's coverage table lists, for each
# JAX namespace, which names functx has. A JAX name functx lacks raises an `AttributeError` that
# says so and points to that page, rather than Python's bare message:

# %%
missing = next(
    (n for n in sorted(dir(jax.numpy)) if not n.startswith("_") and not hasattr(functx.numpy, n)),
    None,
)
if missing is None:
    print("functx.numpy has every public name of jax.numpy")
else:
    try:
        getattr(functx.numpy, missing)
    except AttributeError as e:
        print(f"{type(e).__name__}: {e}")
        assert "differences" in str(e)
print("07 tutorial: all checks passed")

# %% [markdown]
# # Inspecting and debugging compiled code
#
# `functx.jit` turns a function into a compiled program in four stages: trace to a Jaxpr,
# simplify it, lower it to a *loop IR* and group that into kernels, then generate C++ (on the
# CPU) or Triton (on a GPU) and compile it. Each stage prints. This tutorial shows how to read
# them, and the tools for when something goes wrong or is slow:
#
# 1. `jit(f).lower(*args).as_text()`: the final Jaxpr, the loop IR, the kernels, the source;
# 2. compile logs (`FUNCTX_LOG_COMPILES=1`): when and why a function compiles again;
# 3. the disk cache (`FUNCTX_CACHE_DIR`): what is kept between runs;
# 4. `functx.debug.print` inside compiled code, `functx.disable_jit()`, and the errors a traced
#    value raises.
#
# Run it as a script (`python tutorials/05_inspecting_compiled_code.py`) or as a notebook through
# jupytext; the docs build executes it.

# %%
import contextlib
import io
import os
import shutil
import tempfile
import time

import numpy as np

# Compiled code goes to FUNCTX_CACHE_DIR (default ~/.cache/functx). For section 3 this tutorial
# starts from an empty cache: a fresh private directory, set before anything compiles.
os.environ["FUNCTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="functx-tutorial-05-")

import functx  # noqa: E402
import functx.numpy as jnp  # noqa: E402
from functx import lax  # noqa: E402


def centred_tanh(x):
    """tanh(x) / 3, minus its mean."""
    y = jnp.tanh(x) / 3.0
    return y - y.mean()


x = np.linspace(-1.0, 2.0, 8, dtype=np.float32)

# %% [markdown]
# ## 1. `lower(...).as_text()`, stage by stage
# `lower` traces and compiles for the given arguments without running anything; `as_text()`
# returns one text with four sections, each starting with a `# ` header. We split it into them.

# %%
text = functx.jit(centred_tanh).lower(x).as_text()
sections = {}
for part in ("\n" + text).split("\n# ")[1:]:
    header, _, body = part.partition("\n")
    sections[header] = body.strip()
print(list(sections))

# %% [markdown]
# **The final Jaxpr.** It is what `make_jaxpr` gives, simplified the way XLA simplifies before
# compiling where that changes the bits of the result: the division of the array by the
# constant 3 has become a multiplication by its reciprocal (`mul b 0.33333334`), as `jax.jit`
# computes it, so compiled quotients equal JAX's compiled ones to the bit (the division of the
# scalar sum by 8 in the mean stays a division).

# %%
print("make_jaxpr:\n", functx.make_jaxpr(centred_tanh)(x), sep="")
print("final Jaxpr (as_text):\n", sections["Jaxpr"], sep="")
assert "div b 3.0" in str(functx.make_jaxpr(centred_tanh)(x)) and "mul b 0.333" in sections["Jaxpr"]

# %% [markdown]
# **The loop IR.** One line per node: `t3:f32[8] = pointwise(t2) [i0] -> tanh(t2[i0])` reads
# "t3, a float32 array of 8, is computed element by element over the index `i0` from t2".
# Reshapes, broadcasts and slices are not nodes that move data: they are index expressions
# inside the nodes that read them. A `reduce` node carries its operation and axes. The comment
# `# kernel k` says which kernel computes the node; a node with no comment is fused: it is
# computed inside the kernel(s) that read it and never written to an array of its own. The lines
# after `outputs:` describe each kernel's shape and its parts.

# %%
print(sections["loop IR"])

# %% [markdown]
# **The kernels**, one line each, and **the C++ source**: a prelude of helpers (the same for
# every program), then one function, `fx_run`, that allocates the temporaries and runs the
# kernels in order. (In a large program some kernels move into functions `fx_k<k>` of other
# translation units, which the compiler builds in parallel; `fx_run` calls them.) Each kernel
# starts with a `// kernel k:` comment, which is how to find it.

# %%
print(sections["kernels"])
cpp = sections["C++"]
print(f"C++ source: {len(cpp.splitlines())} lines")
lines = cpp.splitlines()
for k in range(sections["kernels"].count("kernel ")):
    start = next(i for i, s in enumerate(lines) if s.strip().startswith(f"// kernel {k}:"))
    stop = next(
        i
        for i in range(start + 1, len(lines))
        if lines[i].strip().startswith(("// kernel ", "if (fx_k", "fx_free", "return "))
        or lines[i] == "}"
    )
    print("\n".join(lines[start:stop]))

# %% [markdown]
# A loop in the program (`lax.fori_loop`, `lax.scan`, `lax.while_loop`) stays a loop: one `loop`
# node whose body is the scan's Jaxpr, compiled into a C++ `for` over the iterations.


# %%
def damped(x, n):
    def body(i, acc):
        return acc * 0.5 + jnp.tanh(x)

    return lax.fori_loop(0, n, body, jnp.zeros_like(x))


loop_text = functx.jit(damped, static_argnums=1).lower(x, 3).as_text()
loop_ir = loop_text.split("# loop IR\n", 1)[1].split("\n\n# kernels", 1)[0]
print(loop_ir)
assert " = loop(" in loop_ir

# %% [markdown]
# ## 2. Compile logs: when and why a function compiles
# A jitted function compiles once per *signature*: the shapes and dtypes of its array arguments,
# the values of its static arguments, the pytree structure, the device. With the environment
# variable `FUNCTX_LOG_COMPILES=1` functx prints one line on stderr per compilation saying which
# of these changed, and how long the C++ compiler took. (functx reads the variable at each
# compilation, so setting it from Python works; here we also capture stderr to print it below.)
# A function that compiles on every call of a training loop shows up at once.


# %%
@contextlib.contextmanager
def compile_log():
    os.environ["FUNCTX_LOG_COMPILES"] = "1"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            yield err
    finally:
        del os.environ["FUNCTX_LOG_COMPILES"]
        print(err.getvalue().rstrip() or "(no compilation)")


f = functx.jit(damped, static_argnums=1)
with compile_log():
    t0 = time.perf_counter()
    f(x, 5)  # first call: compiles
    t_first = time.perf_counter() - t0
print("---")
with compile_log() as log:
    f(x + 1.0, 5)  # same signature, new values: no compilation
assert log.getvalue() == ""
print("---")
with compile_log():
    f(x, 6)  # a static argument changed
print("---")
with compile_log():
    f(np.ones(5, np.float32), 6)  # a shape changed
print("---")
with compile_log() as log:
    f(np.ones(5, np.float16), 6)  # a dtype changed
assert "changed from f32[5] to f16[5]" in log.getvalue()

# %% [markdown]
# ## 3. The disk cache
# Compiled programs are kept in `FUNCTX_CACHE_DIR` (default `~/.cache/functx`): the generated
# source, the shared library built from it (keyed by a hash of the source and the compiler
# flags) and a record of the program. Another process, or this one after
# `functx.clear_caches()` (which empties the in-memory caches, as `jax.clear_caches` does),
# loads the compiled program from there instead of running the compiler: the log says "loaded
# the compiled program from the cache". (Section 1's `lower` had already compiled `damped` for
# `n=3`, which is why section 2 starts at `n=5`.) The first compilation in a new cache directory
# also builds a precompiled header of the prelude, so it is the slowest.

# %%
cache_dir = os.environ["FUNCTX_CACHE_DIR"]
files = [os.path.join(d, n) for d, _, names in os.walk(cache_dir) for n in names]
kinds = sorted({os.path.splitext(n)[1] or n for n in files})
print(f"{len(files)} files in the cache directory, of kinds {kinds}")
functx.clear_caches()
with compile_log() as log:
    t0 = time.perf_counter()
    f(x, 5)
    t_disk = time.perf_counter() - t0
assert "loaded the compiled program from the cache" in log.getvalue()
print(f"first call {t_first * 1e3:.0f} ms (compiled); after clear_caches {t_disk * 1e3:.0f} ms")

# %% [markdown]
# ## 4. Debugging
# **`functx.debug.print`** prints values from inside compiled code, when the program runs (not
# when it is traced: a plain `print` of a traced value shows only its shape and dtype). It takes
# a format string and the values, as `jax.debug.print` does, and works inside loops, `vmap` and
# `grad`.


# %%
def damped_verbose(x, n):
    def body(i, acc):
        functx.debug.print("step {i}: acc[0] = {a:.4f}", i=i, a=acc[0])
        return acc * 0.5 + jnp.tanh(x)

    print("tracing: x is", x)  # runs once, at trace time
    return lax.fori_loop(0, n, body, jnp.zeros_like(x))


g = functx.jit(damped_verbose, static_argnums=1)
print(np.asarray(g(x, 3)))
print(np.asarray(g(x, 3)))  # no trace this time, but the debug prints run again

# %% [markdown]
# **`functx.disable_jit()`** runs jitted functions eagerly, line by line, so a Python debugger
# or a plain `print` sees concrete values; the results are the same.

# %%
with functx.disable_jit():
    eager = g(x, 3)
np.testing.assert_allclose(eager, g(x, 3), rtol=1e-6)
print("disable_jit gives the same result")

# %% [markdown]
# **Errors from traced values.** Under `jit` the arguments are tracers: Python control flow on
# their *values* cannot run at trace time. functx raises JAX's error class, naming your line and
# what to use instead (`lax.cond`, `jnp.where`, `lax.while_loop`, or a static argument).


# %%
def relu_by_if(v):
    return v if v.sum() > 0 else -v


try:
    functx.jit(relu_by_if)(x)
except functx.errors.TracerBoolConversionError as e:
    print(type(e).__name__ + ":", e)
print(functx.jit(lambda v: jnp.where(v.sum() > 0, v, -v))(x)[:3], "(with jnp.where)")

# %% [markdown]
# Finally, the temporary cache directory of section 3 is removed (the programs already loaded
# stay usable).

# %%
shutil.rmtree(cache_dir, ignore_errors=True)
print("05 tutorial: all checks passed")

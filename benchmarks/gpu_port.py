"""The GPU check of what issue 18 added to the Triton backend, then two timings, in one process.

Run from the repository root on a CUDA machine (JAX with CUDA installed beside functx):

    python benchmarks/gpu_port.py            # checks, then timings
    python benchmarks/gpu_port.py --checks   # checks only

Checks (functx on GPU arrays, i.e. ``functx.jit`` compiled to Triton, against functx's eager
path on the CPU and against ``jax.jit`` on the same GPU):

* ``functx.random`` inside ``jit``: the threefry primitive, ``bits``/``uniform``/``randint``/
  ``bernoulli`` (the same bits as JAX), ``normal`` (to a few ulp), keys split in a
  ``fori_loop`` carry;
* host steps between launches: ``debug.print`` (its text, in order), ``pure_callback``;
* ``checkpoint`` with a policy under ``grad``;
* complex numbers: an LRU-style complex ``associative_scan`` and complex arithmetic, reductions
  and products;
* issue 19's first pieces: an rfft convolution with its gradient, cholesky solves with their
  gradient, sort/argsort/top_k.

Timings (median of 5 loops ended by one synchronisation, as ``benchmarks/gpu.py`` does): a
training step of an MLP with dropout whose key is split inside the step (a real program with
``random`` in ``jit``), and ``random.normal`` of 2^24 values. Each prints functx's and JAX's
times and their ratio.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.numpy as fnp  # noqa: E402
import functx.random as frandom  # noqa: E402
import functx.scipy.linalg  # noqa: E402, F401  (functx.scipy.linalg below)

RESULTS: list[tuple[str, str, str]] = []


def say(*a):
    print(*a, flush=True)


def gpu(x):
    return functx.device_put(x, functx.devices("gpu")[0])


def host(x):
    return np.asarray(torch.from_dlpack(x).cpu()) if not isinstance(x, np.ndarray) else x


def check(name):
    def wrap(fn):
        try:
            detail = fn()
            RESULTS.append((name, "PASS", detail or ""))
        except Exception as e:  # report every check, even after a failure
            traceback.print_exc()
            RESULTS.append((name, "FAIL", f"{type(e).__name__}: {str(e)[:200]}"))
        say(f"{RESULTS[-1][1]:5} {name}: {RESULTS[-1][2]}")
        return fn

    return wrap


def ulps(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


def samplers(key):
    k1, k2, k3, k4, k5 = frandom.split(key, 5)
    return (
        frandom.bits(k1, (4096,)),
        frandom.uniform(k2, (4096,)),
        frandom.randint(k3, (4096,), -50, 1000),
        frandom.bernoulli(k4, 0.3, (4096,)),
        frandom.normal(k5, (4096,)),
    )


def jax_samplers(key):
    import jax

    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    return (
        jax.random.bits(k1, (4096,)),
        jax.random.uniform(k2, (4096,)),
        jax.random.randint(k3, (4096,), -50, 1000),
        jax.random.bernoulli(k4, 0.3, (4096,)),
        jax.random.normal(k5, (4096,)),
    )


def run_checks():
    import jax

    key = frandom.PRNGKey(42)

    @check("random in jit: bits/uniform/randint/bernoulli exact, normal to ulps (vs eager, JAX)")
    def _():
        got = [host(v) for v in functx.jit(samplers)(gpu(key))]
        eager = [np.asarray(v) for v in samplers(key)]
        ref = [np.asarray(v) for v in jax.jit(jax_samplers)(jax.random.PRNGKey(42))]
        for i, name in enumerate(["bits", "uniform", "randint", "bernoulli"]):
            assert np.array_equal(got[i], eager[i]), f"{name}: GPU != eager"
            assert np.array_equal(got[i], ref[i]), f"{name}: GPU != JAX"
        u_eager, u_jax = ulps(got[4], eager[4]), ulps(got[4], ref[4])
        assert u_eager <= 8 and u_jax <= 8, (u_eager, u_jax)
        return f"normal: {u_eager} ulp from eager, {u_jax} ulp from JAX"

    @check("keys split in a fori_loop carry on the GPU (vs eager)")
    def _():
        def body(i, c):
            k, acc = c
            k, sub = frandom.split(k)
            return k, acc + frandom.uniform(sub, (256,))

        f = functx.jit(lambda k: flax.fori_loop(0, 16, body, (k, fnp.zeros(256)))[1])
        got, want = host(f(gpu(key))), np.asarray(f(key))
        np.testing.assert_allclose(got, want, rtol=1e-6)

    @check("debug.print between Triton launches: text and order")
    def _():
        def f(x):
            functx.debug.print("first {}", x.sum())
            y = fnp.sin(x) * 2
            functx.debug.print("second {}", y.max())
            return y

        x = np.arange(8, dtype=np.float32)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            out = functx.jit(f)(gpu(x))
            torch.cuda.synchronize()
        lines = buf.getvalue().strip().splitlines()
        assert [ln.split()[0] for ln in lines] == ["first", "second"], lines
        printed = [np.float32(ln.split()[1]) for ln in lines]
        # the printed values are the program's own: the sum exactly, the max of the GPU's sin
        assert printed[0] == x.sum() and printed[1] == host(out).max(), (lines, host(out).max())
        np.testing.assert_allclose(host(out), np.sin(x) * 2, rtol=1e-6)

    @check("pure_callback inside a GPU program")
    def _():
        def f(x):
            spec = functx.ShapeDtypeStruct(x.shape, x.dtype)
            y = functx.pure_callback(lambda a: np.cos(np.asarray(a)), spec, x * 2)
            return y + 1

        x = np.linspace(0, 1, 64, dtype=np.float32)
        np.testing.assert_allclose(host(functx.jit(f)(gpu(x))), np.cos(x * 2) + 1, rtol=1e-6)

    @check("grad through checkpoint(policy=dots_saveable) on the GPU (vs eager)")
    def _():
        pol = functx.checkpoint_policies.dots_saveable

        def loss(w, x):
            h = functx.checkpoint(lambda w, x: fnp.tanh(x @ w), policy=pol)(w, x)
            return (h**2).sum()

        rng = np.random.default_rng(0)
        w = rng.standard_normal((64, 64), dtype=np.float32) / 8
        x = rng.standard_normal((32, 64), dtype=np.float32)
        g = functx.jit(functx.grad(loss))
        with functx.default_matmul_precision("highest"):
            got, want = host(g(gpu(w), gpu(x))), np.asarray(functx.grad(loss)(w, x))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    @check("complex: LRU-style associative_scan, exp/abs/sum, complex matmul (vs eager, JAX)")
    def _():
        rng = np.random.default_rng(1)
        lam = (0.9 * np.exp(1j * rng.uniform(0, 3, (16,)))).astype(np.complex64)
        u = (rng.standard_normal((128, 16)) + 1j * rng.standard_normal((128, 16))).astype(
            np.complex64
        )
        m = (rng.standard_normal((16, 16)) + 1j * rng.standard_normal((16, 16))).astype(
            np.complex64
        )

        def comb(a, b):
            return a[0] * b[0], a[1] * b[0] + b[1]

        def f(np_, lax_, lam, u, m):
            a = np_.broadcast_to(lam, u.shape)
            _, h = lax_.associative_scan(comb, (a, u))
            y = (h @ m).real + np_.abs(np_.exp(h * 0.1)).sum()
            return y

        fx = functx.jit(lambda *a: f(fnp, flax, *a))
        with functx.default_matmul_precision("highest"):
            got = host(fx(gpu(lam), gpu(u), gpu(m)))
            want = np.asarray(fx(lam, u, m))
        with jax.default_matmul_precision("highest"):
            ref = np.asarray(jax.jit(lambda *a: f(jax.numpy, jax.lax, *a))(lam, u, m))
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)


def run_checks_19():
    """Issue 19's first pieces on the GPU: FFT, linear algebra and sorting inside jit."""
    import jax

    rng = np.random.default_rng(2)

    @check("jnp.fft: rfft convolution and its gradient in a GPU program (vs eager, JAX)")
    def _():
        x = rng.standard_normal((4, 1024)).astype(np.float32)
        k = rng.standard_normal((1024,)).astype(np.float32)

        def conv(np_, x, k):
            n = 2 * x.shape[-1]
            y = np_.fft.irfft(np_.fft.rfft(x, n) * np_.fft.rfft(k, n), n)[..., : x.shape[-1]]
            return (y**2).sum()

        f = functx.jit(functx.value_and_grad(lambda x, k: conv(fnp, x, k)))
        (v, g), (v0, g0) = f(gpu(x), gpu(k)), f(x, k)
        jv, jg = jax.jit(jax.value_and_grad(lambda x, k: conv(jax.numpy, x, k)))(x, k)
        np.testing.assert_allclose(float(host(v)), float(v0), rtol=1e-4)
        np.testing.assert_allclose(host(g), np.asarray(g0), rtol=1e-3, atol=1e-2)
        np.testing.assert_allclose(host(g), np.asarray(jg), rtol=1e-3, atol=1e-2)

    @check("lax.linalg: cholesky + triangular solves + grad in a GPU program (vs eager)")
    def _():
        a = rng.standard_normal((8, 32, 32))
        a = (a @ a.transpose(0, 2, 1) + 32 * np.eye(32)).astype(np.float32)
        b = rng.standard_normal((8, 32, 4)).astype(np.float32)

        def loss(a, b):
            c = functx.scipy.linalg.cho_factor(a)
            return (functx.scipy.linalg.cho_solve(c, b) ** 2).sum()

        f = functx.jit(functx.value_and_grad(loss))
        with functx.default_matmul_precision("highest"):
            (v, g), (v0, g0) = f(gpu(a), gpu(b)), f(a, b)
        np.testing.assert_allclose(float(host(v)), float(v0), rtol=1e-4)
        np.testing.assert_allclose(host(g), np.asarray(g0), rtol=1e-3, atol=1e-5)

    @check("sorting: sort/argsort/top_k in a GPU program (vs eager, JAX)")
    def _():
        x = rng.standard_normal((64, 256)).astype(np.float32)
        x[0, :4] = [np.nan, -0.0, 0.0, np.inf]

        def f(np_, lax_, x):
            return np_.sort(x, axis=-1), np_.argsort(x, axis=0), lax_.top_k(x, 5)

        got = functx.jit(lambda x: f(fnp, flax, x))(gpu(x))
        want = functx.jit(lambda x: f(fnp, flax, x))(x)
        ref = jax.jit(lambda x: f(jax.numpy, jax.lax, x))(x)
        for a, b, c in zip(leaves(got), leaves(want), jax.tree_util.tree_leaves(ref)):
            np.testing.assert_array_equal(host(a), np.asarray(b))
            np.testing.assert_array_equal(host(a), np.asarray(c))


def leaves(tree):
    return functx.tree_util.tree_leaves(tree)


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


def sync_fx(out):
    torch.cuda.synchronize()


def sync_jax(out):
    import jax

    jax.block_until_ready(out)


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


def run_timings():
    import jax

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
    fstep = functx.jit(dropout_mlp(fnp, frandom, functx.nn, functx.grad))
    jstep = jax.jit(dropout_mlp(jax.numpy, jax.random, jax.nn, jax.grad))
    fp = {k: gpu(v) for k, v in p.items()}
    jp = {k: jax.device_put(v) for k, v in p.items()}
    fa = (fp, gpu(frandom.PRNGKey(0)), gpu(x), gpu(y))
    ja = (jp, jax.random.PRNGKey(0), jax.device_put(x), jax.device_put(y))
    # correctness first: same key, same masks (bernoulli is bit-exact), parameters to tolerance
    with functx.default_matmul_precision("highest"), jax.default_matmul_precision("highest"):
        fo, jo = fstep(*fa), jstep(*ja)
        for k in p:
            np.testing.assert_allclose(host(fo[0][k]), np.asarray(jo[0][k]), rtol=1e-4, atol=1e-5)
    say("dropout MLP step: functx and JAX give the same parameters (highest precision)")
    rows = []
    tf = timeit(lambda: fstep(*fa), sync_fx)
    tj = timeit(lambda: jstep(*ja), sync_jax)
    rows.append(("dropout MLP train step 784-1024-1024-10, batch 1024", tf, tj))
    fn = functx.jit(lambda k: frandom.normal(k, (1 << 24,)))
    jn = jax.jit(lambda k: jax.random.normal(k, (1 << 24,)))
    tf = timeit(lambda: fn(fa[1]), sync_fx)
    tj = timeit(lambda: jn(ja[1]), sync_jax)
    rows.append(("random.normal 2^24 float32", tf, tj))
    say("\n| workload | functx ms | JAX ms | functx/JAX |\n|---|---|---|---|")
    for name, a, b in rows:
        say(f"| {name} | {a * 1e3:.3f} | {b * 1e3:.3f} | {a / b:.2f} |")


def main():
    say(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    run_checks()
    run_checks_19()
    say("\n| check | result | detail |\n|---|---|---|")
    for name, res, detail in RESULTS:
        say(f"| {name} | {res} | {detail} |")
    if "--checks" not in sys.argv:
        try:
            run_timings()
        except Exception:
            traceback.print_exc()
    sys.exit(1 if any(r == "FAIL" for _, r, _ in RESULTS) else 0)


if __name__ == "__main__":
    main()

"""Per-sample gradients of a tanh MLP (cross-entropy), batch 128, 256-256-256-10, float32.

Runs functx (eager ``vmap(grad)``, and ``jit(vmap(grad))`` when functx has ``jit``), a hand-written
NumPy backward pass, and JAX's ``jit(vmap(grad))`` in one process; prints the median time per call
and the ratio to JAX. ``--quick`` uses fewer repetitions.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import functx
import functx.numpy as fnp
from functx import nn as fnn

SIZES = [256, 256, 256, 10]
BATCH = 128


def init(rng):
    return [
        {
            "w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            "b": np.zeros(n, np.float32),
        }
        for m, n in zip(SIZES[:-1], SIZES[1:])
    ]


def make_loss(np_mod, nn_mod):
    def loss(params, x, y):
        h = x
        for i, layer in enumerate(params):
            h = h @ layer["w"] + layer["b"]
            if i < len(params) - 1:
                h = np_mod.tanh(h)
        return -np_mod.sum(nn_mod.one_hot(y, SIZES[-1]) * nn_mod.log_softmax(h))

    return loss


def numpy_per_sample(params, xs, ys):
    """Forward and backward by hand, batched over examples."""
    acts, h = [xs], xs
    for i, layer in enumerate(params):
        h = h @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            h = np.tanh(h)
        acts.append(h)
    logits = acts[-1]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    delta = p
    delta[np.arange(len(ys)), ys] -= 1
    grads = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        grads[i] = {"w": acts[i][:, :, None] * delta[:, None, :], "b": delta}
        if i:
            delta = (delta @ params[i]["w"].T) * (1 - acts[i] ** 2)
    return grads


def _torch_inputs(xs, ys):
    import torch

    return torch.from_numpy(xs), torch.from_numpy(ys.astype(np.int64))


def torch_per_sample(params):
    """``torch.compile(torch.func.vmap(torch.func.grad(loss)))``: per-sample gradients the
    PyTorch way (the parameters as a tuple of (w, b) pairs)."""
    import torch
    import torch.nn.functional as F

    tparams = tuple((torch.from_numpy(p["w"]), torch.from_numpy(p["b"])) for p in params)
    classes = torch.arange(SIZES[-1])

    def loss(ps, x, y):
        h = x
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            if i < len(ps) - 1:
                h = torch.tanh(h)
        one_hot = (classes == y).to(h.dtype)  # F.one_hot has no vmap rule
        return -(one_hot * F.log_softmax(h, -1)).sum()

    per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
    compiled = torch.compile(per_sample)
    return lambda x, y: compiled(tparams, x, y)


def timeit(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = 3 if args.quick else 10
    rng = np.random.default_rng(0)
    params = init(rng)
    xs = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    ys = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)

    results = {}
    ref = numpy_per_sample(params, xs, ys)
    f_loss = make_loss(fnp, fnn)
    f_psg = functx.vmap(functx.grad(f_loss), in_axes=(None, 0, 0))
    got = f_psg(params, xs, ys)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g["w"]), r["w"], rtol=1e-3, atol=1e-4)
    results["functx eager vmap(grad)"] = timeit(lambda: f_psg(params, xs, ys), reps)
    if hasattr(functx, "jit"):
        f_jit = functx.jit(f_psg)
        for g, r in zip(f_jit(params, xs, ys), ref):
            np.testing.assert_allclose(np.asarray(g["w"]), r["w"], rtol=1e-3, atol=1e-4)
        results["functx jit(vmap(grad))"] = timeit(
            lambda: functx.block_until_ready(f_jit(params, xs, ys)), reps
        )
    results["numpy by hand"] = timeit(lambda: numpy_per_sample(params, xs, ys), reps)
    try:
        import jax
        import jax.numpy as jnp

        j_psg = jax.jit(jax.vmap(jax.grad(make_loss(jnp, jax.nn)), in_axes=(None, 0, 0)))
        for g, r in zip(j_psg(params, xs, ys), ref):
            np.testing.assert_allclose(np.asarray(g["w"]), r["w"], rtol=1e-3, atol=1e-4)
        results["jax jit(vmap(grad))"] = timeit(
            lambda: jax.block_until_ready(j_psg(params, xs, ys)), reps
        )
    except ImportError:
        pass
    try:
        torch_fn = torch_per_sample(params)
        tx, ty = _torch_inputs(xs, ys)
        for g, r in zip(torch_fn(tx, ty), ref):
            np.testing.assert_allclose(g[0].numpy(), r["w"], rtol=1e-3, atol=1e-4)
        results["torch.compile(torch.func)"] = timeit(lambda: torch_fn(tx, ty), reps)
    except ImportError:
        pass
    base = results.get("jax jit(vmap(grad))")
    print(f"per-sample gradients, MLP {SIZES}, batch {BATCH}, float32")
    print(f"{'implementation':28s} {'ms/call':>10s} {'x JAX time':>11s}")
    for k, v in results.items():
        ratio = f"{v / base:10.2f}x" if base else "         -"
        print(f"{k:28s} {v * 1e3:10.3f} {ratio}")


if __name__ == "__main__":
    main()

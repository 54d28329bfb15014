"""Sort and top_k of the rows of a float32 matrix: functx (jit) vs JAX (jit) vs NumPy/torch.

Run: ``python benchmarks/sort_topk.py [rows cols] [--gpu]``. On the CPU functx runs its C++ sort
kernel (``functx/lowering/cpp/sort.py``); with ``--gpu`` its Triton kernel
(``functx/lowering/triton/sort.py``) on functx GPU arrays, against ``torch.sort``/``torch.topk``.
Prints milliseconds per call (best of 3 after a warm-up) and checks functx's results against the
reference.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import functx


def best_ms(fn, repeat=3):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows, cols = (int(args[0]), int(args[1])) if args else (4096, 4096)
    gpu = "--gpu" in sys.argv
    k = 16
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    sort = lambda v: functx.lax.sort(v)  # noqa: E731
    topk = lambda v: functx.lax.top_k(v, k)  # noqa: E731
    out = []
    if gpu:
        import torch

        dev = functx.devices("gpu")[0]
        xg = functx.device_put(x, dev)
        fs, ft = functx.jit(sort, backend="triton"), functx.jit(topk, backend="triton")
        cuda = torch.cuda.is_available()  # (not under TRITON_INTERPRET=1 on a CPU machine)
        tx = torch.from_numpy(x).to("cuda" if cuda else "cpu")

        def sync(r):
            if cuda:
                torch.cuda.synchronize()
            return r

        out.append(("functx sort (Triton)", best_ms(lambda: sync(fs(xg)))))
        out.append(("torch.sort", best_ms(lambda: sync(torch.sort(tx, dim=-1, stable=True)))))
        out.append(("functx top_k (Triton)", best_ms(lambda: sync(ft(xg)))))
        out.append(("torch.topk", best_ms(lambda: sync(torch.topk(tx, k)))))
        got = np.asarray(functx.device_get(fs(xg))) if hasattr(functx, "device_get") else None
        if got is not None:
            assert np.array_equal(got, np.sort(x, axis=-1))
    else:
        fs, ft = functx.jit(sort), functx.jit(topk)
        out.append(("functx sort (C++)", best_ms(lambda: np.asarray(fs(x)))))
        out.append(("numpy.sort", best_ms(lambda: np.sort(x, axis=-1, kind="stable"))))
        out.append(("functx top_k (C++)", best_ms(lambda: np.asarray(ft(x)[0]))))
        assert np.array_equal(np.asarray(fs(x)), np.sort(x, axis=-1))
        try:
            import jax

            js, jt = jax.jit(lambda v: jax.lax.sort(v)), jax.jit(lambda v: jax.lax.top_k(v, k))
            out.append(("jax sort", best_ms(lambda: js(x).block_until_ready())))
            out.append(("jax top_k", best_ms(lambda: jt(x)[0].block_until_ready())))
            assert np.array_equal(np.asarray(ft(x)[1]), np.asarray(jt(x)[1]))
        except ImportError:
            pass
    for name, ms in out:
        print(f"{name:24s} {ms:9.2f} ms   ({rows}x{cols} float32, k={k})")


if __name__ == "__main__":
    main()

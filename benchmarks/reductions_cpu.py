"""CPU reduction kernels under functx.jit, an A/B of two functx trees (issue 16: cascaded sums).

Prints one JSON line: the functx file it imported and, per workload, the median of 7 loops of 10
calls (ms). Run it alternately against two trees, each in its own process, e.g.

    FUNCTX_CACHE_DIR=$(mktemp -d) python benchmarks/reductions_cpu.py
    (cd ../base && PYTHONPATH=. python ../main/benchmarks/reductions_cpu.py)

(benchmarks/RESULTS.md, "CPU, issue 16", has a run.)
"""

import json
import statistics
import time

import numpy as np

import functx
import functx.nn as fnn
import functx.numpy as fnp

rng = np.random.default_rng(0)


def ln(x):
    m = fnp.mean(x, -1, keepdims=True)
    v = fnp.var(x, -1, keepdims=True)
    return (x - m) / fnp.sqrt(v + 1e-5)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


W = {
    "layer_norm 4096x1024": (ln, f32(4096, 1024)),
    "softmax 1024x1024": (lambda x: fnn.softmax(x, axis=-1), f32(1024, 1024)),
    "logsumexp 64x16384": (lambda x: fnn.logsumexp(x, axis=-1), f32(64, 16384)),
    "sum 2^25": (fnp.sum, f32(2**25)),
    "row sums 1024x16384": (lambda x: fnp.sum(x, axis=1), f32(1024, 16384)),
    "var rows 1024x16384": (lambda x: fnp.var(x, axis=1), f32(1024, 16384)),
    "dot 2^22": (lambda x: fnp.sum(x * x), f32(2**22)),
}


def main():
    out = {}
    for name, (f, x) in W.items():
        jf = functx.jit(f)
        xa = fnp.asarray(x)
        for _ in range(3):
            jf(xa)
        ts = []
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(10):
                jf(xa)
            ts.append((time.perf_counter() - t) / 10)
        out[name] = statistics.median(ts) * 1e3
    print(json.dumps({"file": functx.__file__, **out}))


if __name__ == "__main__":
    main()

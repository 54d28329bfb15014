"""C++ column reductions with few output blocks split their reduced rows into a fixed number of
chunks run in parallel (functx/lowering/cpp/reduce.py ``_column_chunks``), and the scheduler
stores a cotangent read by a reduction and by a product once (functx/lowering/schedule.py
``_stored_for_reuse``): results against NumPy and eager, and the kernels they give."""

from __future__ import annotations

import numpy as np

import functx
import functx.numpy as fnp
from functx.lowering import schedule
from functx.lowering.cpp import reduce as cpp_reduce
from functx.lowering.lower import lower_jaxpr
from functx.transforms import passes


def test_few_columns_many_rows_in_chunks():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 16)).astype(np.float32)
    i = rng.integers(-1000, 1000, (4096, 16)).astype(np.int32)
    x[5, 3], x[4000, 7] = np.nan, -np.inf

    def f(x, i):
        return x.sum(0), x.max(0), x.min(0), i.sum(0), (i > 0).any(0), (i > -999).all(0)

    jitted = functx.jit(f)
    text = jitted.lower(x, i).as_text()
    assert f"reduced elements in {cpp_reduce._COLUMN_CHUNKS} chunks" in text
    got = jitted(x, i)
    want64 = np.nansum(np.where(np.isinf(x), 0, x).astype(np.float64), 0)
    s = np.asarray(got[0])
    finite = np.isfinite(want64) & ~np.isnan(x).any(0) & ~np.isinf(x).any(0)
    np.testing.assert_allclose(s[finite], want64[finite], rtol=1e-6, atol=1e-4)
    assert np.isnan(s[3]) and s[7] == -np.inf
    for a, b in zip(got[1:], (x.max(0), x.min(0), i.sum(0), (i > 0).any(0), (i > -999).all(0))):
        np.testing.assert_array_equal(np.asarray(a), b)
    # the chunks are whole float blocks: the same bits whichever order the threads finish in
    np.testing.assert_array_equal(np.asarray(jitted(x, i)[0]), s)


def test_a_cotangent_read_by_a_reduction_and_a_product_is_stored_once():
    rng = np.random.default_rng(1)
    h = rng.standard_normal((64, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    a, b, c, d = (rng.standard_normal((64, 8)).astype(np.float32) for _ in range(4))

    def f(h, w, a, b, c, d):
        # a bias gradient (sum over the batch) and a weight gradient (a product) of one
        # cotangent, an expression of several buffers
        g = fnp.where(h > 0, a * b + c * d, 0.0)
        return g.sum(0), g.T @ (h @ w)

    g = lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(h, w, a, b, c, d)))
    kernels = schedule.schedule(g)
    schedule.verify(g, kernels)
    assert [k.kind for k in kernels][:2] == ["pointwise", "reduce"], schedule.describe(kernels)
    jitted = functx.jit(f)
    cpp = jitted.lower(h, w, a, b, c, d).as_text().split("# C++")[1]
    red = cpp[cpp.index("// kernel 1: reduce") : cpp.index("// kernel 2")]
    # the reduction reads the stored cotangent, not the inputs it is computed from
    assert "in2[" not in red and "in4[" not in red, red
    want = f(*(fnp.asarray(v) for v in (h, w, a, b, c, d)))
    for x, y in zip(jitted(h, w, a, b, c, d), want):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-5)

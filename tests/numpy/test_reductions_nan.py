"""NaN in long max/min reductions: functx propagates it as NumPy does, where JAX 0.10.2 on the
CPU drops it in long reductions (docs/differences.md, "NaN in large max/min reductions")."""

from __future__ import annotations

import numpy as np
import pytest

import functx
import functx.numpy as fnp


@pytest.mark.parametrize("n", [100, 10_000])
@pytest.mark.parametrize("op", ["max", "min"])
def test_a_nan_survives_a_long_reduction(n, op):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x[n // 3], x[n // 2] = np.nan, (np.inf if op == "max" else -np.inf)
    f = getattr(fnp, op)
    assert np.isnan(np.asarray(f(x)))
    assert np.isnan(np.asarray(functx.jit(f)(x)))


def test_rows_and_columns_of_a_large_array():
    x = np.random.default_rng(1).standard_normal((3000, 300)).astype(np.float32)
    x[5, 7], x[6, 7] = np.nan, np.inf
    for axis in (0, 1):
        got = np.asarray(functx.jit(lambda a, axis=axis: fnp.max(a, axis=axis))(x))
        np.testing.assert_array_equal(got, np.max(x, axis=axis))

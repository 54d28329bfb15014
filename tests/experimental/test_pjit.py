"""functx.experimental.pjit: jit's values, JAX's checks of the shardings (one device)."""

from __future__ import annotations

import numpy as np
import pytest

import functx
from functx.experimental.pjit import pjit
from functx.sharding import NamedSharding, PartitionSpec as P

X = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def double(a):
    return a * 2.0


def test_pjit_values_and_checks():
    mesh = functx.make_mesh((1,), ("x",))
    f = pjit(double, in_shardings=(NamedSharding(mesh, P("x")),), out_shardings=None)
    np.testing.assert_array_equal(np.asarray(f(X)), 2 * X)
    with functx.set_mesh(mesh):
        g = pjit(double, in_shardings=P("x"), out_shardings=P(None, "x"))
        np.testing.assert_array_equal(np.asarray(g(X)), 2 * X)
        with pytest.raises(ValueError):
            pjit(double, in_shardings=P("y"))(X)
        with pytest.raises(ValueError):  # not a tree prefix of the arguments
            pjit(double, in_shardings=[P(), P()])(X)
    with pytest.raises(ValueError):  # a PartitionSpec with no mesh in context
        pjit(double, out_shardings=P("x"))(X)
    h = pjit(lambda a, n: double(a), static_argnums=1, device=functx.devices()[0])
    np.testing.assert_array_equal(np.asarray(h(X, 3)), 2 * X)
    assert "mul" in h.lower(X, 3).as_text()

"""``functx.stages`` against ``jax.stages``: the same names, and the objects ``jit(f)``,
``.trace``, ``.lower``, ``.compile`` and ``args_info`` return are instances of them, as in JAX."""

from __future__ import annotations

import numpy as np
import pytest

import functx
from functx import stages

jax = pytest.importorskip("jax")

X = np.arange(3, dtype=np.float32)


def _stages(m, st):
    f = m.jit(lambda x, y: (x * y).sum())
    traced = f.trace(X, 2.0)
    lowered = traced.lower()
    compiled = lowered.compile()
    arg = lowered.args_info[0][0]
    return {
        "Wrapped": (f, st.Wrapped),
        "Traced": (traced, st.Traced),
        "Lowered": (lowered, st.Lowered),
        "Compiled": (compiled, st.Compiled),
        "ArgInfo": (arg, st.ArgInfo),
        "plain function": (lambda x: x, st.Wrapped),
        "lowered as traced": (lowered, st.Traced),
    }, compiled(X, 3.0)


def test_names_as_jax():
    assert stages.__all__ == sorted(n for n in dir(jax.stages) if not n.startswith("_"))
    assert stages.CompilerOptions == jax.stages.CompilerOptions


def test_isinstance_as_jax():
    ours, got = _stages(functx, stages)
    theirs, want = _stages(jax, jax.stages)
    for name, (obj, cls) in ours.items():
        assert isinstance(obj, cls) == isinstance(*theirs[name]), name
    np.testing.assert_allclose(got, want)


def test_stage_classes_are_what_jit_returns():
    f = functx.jit(lambda x: x + 1)
    assert type(f.trace(X)) is stages.Traced and type(f.lower(X)) is stages.Lowered
    assert type(f.lower(X).compile()) is stages.Compiled

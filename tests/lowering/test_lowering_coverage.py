"""Every primitive of ``functx.primitives.registry`` either lowers to C++ or makes ``jit`` raise
``UnsupportedError`` naming the primitive and the user's line.

``PROVOKERS`` maps each primitive without a lowering to a program that stages it under ``jit``;
a new primitive with neither a lowering nor a provoker fails ``test_every_primitive`` (add one of
the two). That the lowered primitives compute the right values is checked by the backend suite
(``test_backend_suite.py``, whose ``test_suite_covers_every_lowering`` checks it runs them all).
"""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import functx
import functx.lax as lax
import functx.numpy as fnp
from functx import primitives as P
from functx.errors import UnsupportedError
from functx.lowering import lower as loops

X = np.linspace(-1, 1, 4).astype(np.float32)
THIS_FILE = os.path.abspath(__file__)


@functx.custom_vjp
def _vjp_only(x):
    return fnp.sin(x)


_vjp_only.defvjp(lambda x: (fnp.sin(x), x), lambda r, g: (g * fnp.cos(r),))


def _custom_lin(x):
    # forward mode through a custom_vjp function stages custom_lin (JAX rejects it too)
    return functx.jvp(_vjp_only, (x,), (x,))  # PROVOKER LINE


PROVOKERS = {"custom_lin": _custom_lin}


def _line_of(fn, marker):
    src, start = inspect.getsourcelines(fn)
    for k, line in enumerate(src):
        if marker in line:
            return start + k
    raise AssertionError(marker)


def _assert_names_prim_and_line(err: Exception, prim: str, line: int):
    msg = str(err)
    assert f"'{prim}'" in msg or f" {prim} " in msg, msg
    assert f"{THIS_FILE}:{line}" in msg, msg


@pytest.mark.parametrize("name", sorted(P.registry))
def test_every_primitive(name):
    prim = P.registry[name]
    if prim in loops.lowerings:
        return
    assert name in PROVOKERS, (
        f"primitive {name!r} has no lowering in functx.lowering.loops and "
        f"no provoker here: add one of the two"
    )
    fn = PROVOKERS[name]
    with pytest.raises(UnsupportedError) as info:
        functx.jit(fn)(X)
    _assert_names_prim_and_line(info.value, name, _line_of(fn, "PROVOKER LINE"))


def test_provokers_are_current():
    """A provoker for a primitive that now lowers should become a backend-suite case."""
    stale = [n for n in PROVOKERS if P.registry[n] in loops.lowerings]
    assert not stale, f"these primitives lower now: test their values in the backend suite: {stale}"


def test_missing_lowering_names_primitive_and_user_line(monkeypatch):
    """The mechanism, on a primitive that does lower: without its rule, jit names it and the
    line of the user's function that used it, also inside a control-flow body."""
    monkeypatch.delitem(loops.lowerings, P.registry["sin"])

    def top(x):
        y = x * 2.0
        return fnp.sin(y)  # USE OF SIN

    with pytest.raises(UnsupportedError) as info:
        functx.jit(top)(X)
    _assert_names_prim_and_line(info.value, "sin", _line_of(top, "USE OF SIN"))

    def in_scan(x):
        def body(c, v):
            return c + fnp.sin(v), c  # SIN IN BODY

        return lax.scan(body, np.float32(0), x)

    with pytest.raises(UnsupportedError) as info:
        functx.jit(in_scan)(X)
    _assert_names_prim_and_line(info.value, "sin", _line_of(in_scan, "SIN IN BODY"))


def test_unsupported_error_is_a_not_implemented_error():
    with pytest.raises(NotImplementedError):
        functx.jit(_custom_lin)(X)

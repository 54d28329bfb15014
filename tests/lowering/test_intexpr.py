"""The lowering's integer index expressions (``functx/lowering/intexpr.py``) against SymPy.

SymPy is the reference here only: random expressions (sums, products, floor division,
remainder, max/min of non-negative symbols) built both ways evaluate equal at random
non-negative points; the argument order of sums, products and max/min is SymPy's (the
generated code prints in that order); the simplifications hold (``(4*i + j) // 4`` with the
scheduler's bounds is ``i``); and no jit path imports SymPy.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from functx.lowering import intexpr as ie
from functx.lowering.intexpr import FloorDiv, Guard, IMax, IMin, Int, ModI, Sym, ix

REPO = str(pathlib.Path(__file__).resolve().parents[2])
NAMES = ("i0", "i1", "i2", "r0")
SYMS = [Sym(n) for n in NAMES]
SP = {n: sympy.Symbol(n, integer=True, nonnegative=True) for n in NAMES}


class SFloorDiv(sympy.Function):
    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return a
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        if a == 0:
            return sympy.Integer(0)
        return None


class SModI(sympy.Function):
    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) % int(b))
        return None


SFloorDiv.__name__, SModI.__name__ = "FloorDiv", "ModI"


def to_sympy(e):
    """The SymPy expression of an ``IntExpr`` (FloorDiv and ModI as SymPy functions of the same
    class names, so that SymPy orders them as it ordered the lowering's own)."""
    e = ix(e)
    if e.is_Integer:
        return sympy.Integer(e.value)
    if e.is_Symbol:
        return SP[e.name]
    args = [to_sympy(a) for a in e.args]
    if e.is_Add:
        return sympy.Add(*args)
    if e.is_Mul:
        return sympy.Mul(*args)
    if e.is_Pow:
        return args[0] ** args[1]
    return {FloorDiv: SFloorDiv, ModI: SModI, Guard: lambda v, c: c, IMax: sympy.Max}.get(
        type(e), sympy.Min
    )(*args)


def _value(e, point):
    return int(e.xreplace({s: Int(v) for s, v in zip(SYMS, point)}))


def _sympy_value(e, point):
    return int(e.xreplace({SP[n]: v for n, v in zip(NAMES, point)}))


@st.composite
def exprs(draw, depth=3):
    """An index expression built from the four symbols and small integers by sums, products,
    floor division and remainder by positive constants, max and min."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([*SYMS, Int(draw(st.integers(-4, 9)))]))
    op = draw(st.sampled_from(["add", "sub", "mul", "cmul", "div", "mod", "max", "min"]))
    a = draw(exprs(depth - 1))
    if op in ("div", "mod", "cmul"):
        c = draw(st.integers(1, 8))
        return {"div": FloorDiv, "mod": ModI, "cmul": lambda x, k: x * k}[op](a, c)
    b = draw(exprs(depth - 1))
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "max": lambda: IMax(a, b),
        "min": lambda: IMin(a, b),
    }[op]()


points = st.lists(st.integers(0, 40), min_size=4, max_size=4)


def _nonneg_divisions(e):
    """Floor division and remainder are of non-negative integers only (as in the lowering)."""
    return all(
        ie.index_bounds(x.args[0])[0] >= 0
        for x in ie.preorder(e)
        if isinstance(x, (FloorDiv, ModI))
    )


@settings(max_examples=30, deadline=None)
@given(exprs(), st.lists(points, min_size=3, max_size=3))
def test_random_expressions_evaluate_as_sympy(e, pts):
    s = to_sympy(e)
    for p in pts:
        if _nonneg_divisions(e) or not e.has(FloorDiv, ModI):
            assert _value(e, p) == _sympy_value(s, p), (e, s, p)
        lo, hi = ie.index_bounds(e)
        if _nonneg_divisions(e):
            assert lo <= _value(e, p) <= hi, (e, p)


@settings(max_examples=30, deadline=None)
@given(exprs(depth=2), exprs(depth=2))
def test_sums_and_products_keep_sympys_argument_order(a, b):
    # the printers write ``args`` in order: SymPy's canonical order, term for term
    for e in (a + b, a * b, a - 3 * b + 2):
        s = to_sympy(e)
        if e.is_Add or e.is_Mul:
            assert [to_sympy(x) for x in e.args] == list(s.args), (e, s)
        else:
            assert to_sympy(e) == s


@settings(max_examples=30, deadline=None)
@given(st.lists(exprs(depth=2), min_size=2, max_size=3), st.booleans())
def test_random_max_min_keep_sympys_argument_order(args, is_max):
    e = (IMax if is_max else IMin)(*args)
    if isinstance(e, (IMax, IMin)):
        got = [to_sympy(a) for a in e.args]
        assert got == sorted(got, key=sympy.default_sort_key), e


@settings(max_examples=30, deadline=None)
@given(exprs())
def test_text_is_sympys(e):
    # (``loopir.pp_index`` prints sums and products so; SymPy's own Max/Min would simplify more)
    if not e.has(FloorDiv, ModI, Guard, IMax, IMin):
        assert str(e) == str(to_sympy(e))


@pytest.mark.parametrize(
    "make",
    [
        lambda i, j, k: IMax(0, i - 1),
        lambda i, j, k: IMin(j + 3, 2 * i),
        lambda i, j, k: IMax(i - 2, j - 5, FloorDiv(k, 2) - 1),
        lambda i, j, k: IMin(4 * i + j - 7, ModI(k, 5) + 2 * j),
        lambda i, j, k: IMax(FloorDiv(i, 3), ModI(j, 4), k - 9),
        lambda i, j, k: IMin(i * j - 1, k + 3),
    ],
)
def test_max_min_keep_sympys_argument_order(make):
    e = make(*SYMS[:3])
    assert isinstance(e, (IMax, IMin))
    want = sorted((to_sympy(a) for a in e.args), key=sympy.default_sort_key)
    assert [to_sympy(a) for a in e.args] == want


def test_canonical_forms():
    i, j, k, _ = SYMS
    assert i - i == 0 and isinstance(i - i, Int) and (2 * i + j) - j == 2 * i
    assert 3 * (i + 2) == 3 * i + 6 and hash(3 * (i + 2)) == hash(6 + 3 * i)
    assert (i + j) * (i - j) == i * i - j * j and (i * i).is_Pow
    assert FloorDiv(i, 1) == i and ModI(i, 1) == 0 and FloorDiv(0, k) == 0
    assert FloorDiv(17, 5) == 3 and ModI(17, 5) == 2 and Guard(3, 4) == 4
    assert Int(5) == 5 and hash(Int(5)) == hash(5) and {Int(5): 1}[5] == 1
    assert (4 * i + j).subs({i: 2}) == j + 8 and (4 * i + j).xreplace({j: i}) == 5 * i
    assert ie.linear_coeff(3 * i + FloorDiv(j, 2), i) == 3
    assert ie.linear_coeff(i * j + i, i) is None and ie.linear_coeff(ModI(i, 3), i) is None
    assert str(16 * i + j) == "16*i0 + i1" and str(i - 1) == "i0 - 1"
    assert str(IMax(0, i - 1)) == "Max(0, i0 - 1)" and str(-2 * j) == "-2*i1"
    with pytest.raises(TypeError):
        ix(1.5)


def test_the_schedulers_simplification_with_loop_bounds():
    # what ``schedule.in_order`` relies on: with 0 <= j < 4, j // 4 is 0 and j % 4 is j; nested
    # divisions merge; a remainder and its quotient merge back into the dividend. (Building a
    # node splits no multiples off a division, as SymPy's FloorDiv did not: the generated code
    # stays the same.)
    from functx.lowering.schedule import _simplify

    i, j = SYMS[:2]
    ext = {i: 10, j: 4}
    assert _simplify(FloorDiv(j, 4), ext) == 0 and _simplify(ModI(j, 4), ext) == j
    assert _simplify(FloorDiv(FloorDiv(4 * i + j, 2), 2), ext) == FloorDiv(4 * i + j, 4)
    merged = _simplify(ModI(4 * i + j, 16) + 16 * FloorDiv(4 * i + j, 16), ext)
    assert merged == 4 * i + j


def test_evaluate_on_arrays_matches_python():
    i, j = SYMS[:2]
    e = IMax(0, 3 * i - j) + ModI(i + 2 * j, 5) + FloorDiv(i * j, 3)
    g = np.indices((6, 7))
    got = ie.evaluate(e, {"i0": g[0], "i1": g[1]})
    want = [[_value(e, (a, b, 0, 0)) for b in range(7)] for a in range(6)]
    np.testing.assert_array_equal(got, want)


_NO_SYMPY = r"""
import sys
import numpy as np
import functx, functx.numpy as jnp, functx.lax as lax
x = jnp.ones((8, 8))
functx.jit(lambda x: (x.T @ x).sum())(x)
functx.jit(functx.grad(lambda x: jnp.tanh(x @ x).sum()))(x)
functx.jit(functx.vmap(lambda r: jnp.cumsum(r) * r[::-1]))(x)
functx.jit(lambda x: lax.scan(lambda c, r: (c + r, c * r), x[0], x)[1])(x)
img = jnp.ones((1, 1, 6, 6))
functx.jit(lambda a, w: lax.conv(a, w, (1, 1), "SAME").sum())(img, jnp.ones((2, 1, 3, 3)))
functx.jit(lambda x: jnp.pad(x, 2)[1:, ::2].max(0))(x)
from functx.lowering import lower, schedule
from functx.lowering.triton import program as tp
f = lambda x: jnp.exp(jnp.pad(x, 1)).sum(1)[1:-1] @ x[:, :2]
closed = functx.make_jaxpr(f)(np.ones((8, 8), np.float32))
g = lower.lower_jaxpr(closed)
src = tp.TritonProgram(g, schedule.schedule(g)).source()
assert "@triton.jit" in src
print("sympy" in sys.modules)
"""


@pytest.mark.slow
def test_no_jit_path_imports_sympy(tmp_path):
    # jit, grad, vmap, scan, a convolution, pad and strided slices compiled (C++), and a Triton
    # module rendered: none imports SymPy
    env = dict(os.environ, FUNCTX_CACHE_DIR=str(tmp_path), PYTHONPATH=REPO)
    proc = subprocess.run(
        [sys.executable, "-c", _NO_SYMPY],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"
